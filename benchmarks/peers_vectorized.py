"""The vectorized workloads of benchmarks/vectorized.py in PyTorch (eager) and JAX (eager and
jit): value and gradient calls on the same inputs, for the peers that are installed."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


def _torch_losses(torch) -> dict:
    def glm(w, X, y):
        z = X @ w
        return torch.mean(torch.logaddexp(torch.zeros_like(z), z) - y * z)

    def mlp(params, X, Y):
        h = torch.tanh(X @ params["W1"] + params["b1"])
        return -torch.sum(torch.log_softmax(h @ params["W2"] + params["b2"], dim=1) * Y) / len(X)

    def gp(log_params, X, y):
        ell, sf, sn = torch.exp(log_params)
        d2 = torch.sum((X[:, None, :] - X[None, :, :]) ** 2, dim=-1)
        K = sf ** 2 * torch.exp(-0.5 * d2 / ell ** 2) + sn ** 2 * torch.eye(len(X),
                                                                           dtype=X.dtype)
        L = torch.linalg.cholesky(K)
        alpha = torch.cholesky_solve(y[:, None], L)[:, 0]
        return 0.5 * y @ alpha + torch.sum(torch.log(torch.diagonal(L)))

    def chain(x):
        for _ in range(5):
            x = torch.tanh(x * 1.0001 + 0.01)
            x = torch.exp(-x) + x
        return torch.sum(x)

    def attention(params, X):
        Q, K, V = X @ params["Wq"], X @ params["Wk"], X @ params["Wv"]
        weights = torch.softmax(Q @ K.T / Q.shape[1] ** 0.5, dim=1)
        return torch.sum((weights @ V) ** 2)

    return {"glm": glm, "mlp": mlp, "gp": gp, "chain": chain, "attention": attention}


def _jax_losses(jnp, jax) -> dict:
    def glm(w, X, y):
        z = X @ w
        return jnp.mean(jnp.logaddexp(0.0, z) - y * z)

    def mlp(params, X, Y):
        h = jnp.tanh(X @ params["W1"] + params["b1"])
        return -jnp.sum(jax.nn.log_softmax(h @ params["W2"] + params["b2"], axis=1) * Y) / len(X)

    def gp(log_params, X, y):
        ell, sf, sn = jnp.exp(log_params)
        d2 = jnp.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
        K = sf ** 2 * jnp.exp(-0.5 * d2 / ell ** 2) + sn ** 2 * jnp.eye(len(X))
        L = jnp.linalg.cholesky(K)
        alpha = jax.scipy.linalg.cho_solve((L, True), y)
        return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(L)))

    def chain(x):
        for _ in range(5):
            x = jnp.tanh(x * 1.0001 + 0.01)
            x = jnp.exp(-x) + x
        return jnp.sum(x)

    def attention(params, X):
        Q, K, V = X @ params["Wq"], X @ params["Wk"], X @ params["Wv"]
        weights = jax.nn.softmax(Q @ K.T / Q.shape[1] ** 0.5, axis=1)
        return jnp.sum((weights @ V) ** 2)

    return {"glm": glm, "mlp": mlp, "gp": gp, "chain": chain, "attention": attention}


def _tree(value: Any, convert: Callable) -> Any:
    if isinstance(value, dict):
        return {k: convert(v) for k, v in value.items()}
    return convert(value)


def peer_calls(name: str, inputs: tuple) -> dict:
    """``{peer: call}``: each call computes the value and the gradient with respect to the
    first input (a NumPy array or a dict of them), as chainrules' does."""
    calls = {}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        calls["torch"] = _torch_call(torch, name, inputs)
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        jax = None
    if jax is not None:
        calls.update(_jax_calls(jax, jnp, name, inputs))
    return calls


def _torch_call(torch, name: str, inputs: tuple) -> Callable:
    loss = _torch_losses(torch)[name]
    first = _tree(inputs[0], lambda v: torch.tensor(v, requires_grad=True))
    rest = [torch.tensor(v) for v in inputs[1:]]
    leaves = list(first.values()) if isinstance(first, dict) else [first]

    def call():
        value = loss(first, *rest)
        return value, torch.autograd.grad(value, leaves)

    return call


def _jax_calls(jax, jnp, name: str, inputs: tuple) -> dict:
    jax.config.update("jax_enable_x64", True)
    loss = _jax_losses(jnp, jax)[name]
    first = _tree(inputs[0], jnp.asarray)
    rest = [jnp.asarray(v) for v in inputs[1:]]
    eager = jax.value_and_grad(loss)
    jitted = jax.jit(jax.value_and_grad(loss))
    return {"jax": lambda: jax.block_until_ready(eager(first, *rest)),
            "jax jit": lambda: jax.block_until_ready(jitted(first, *rest))}
