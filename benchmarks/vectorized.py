"""Vectorized workloads: value and gradient against the same written by hand in NumPy.

    python benchmarks/vectorized.py            # chainrules against the hand-written floor
    python benchmarks/vectorized.py --peers    # and PyTorch, JAX (eager and jit)
    python benchmarks/vectorized.py --quick    # small sizes (the test suite's smoke run)

Five workloads of the kind most code is (a few NumPy and SciPy calls on big arrays): a
logistic regression (GLM) on a (200000, 50) design matrix, a 784-256-10 MLP whose parameters
are a dict, on a batch of 1024, a Gaussian-process marginal likelihood at n=600 (SciPy's
``cholesky`` and ``cho_solve``), a chain of twenty elementwise operations on 2,000,000
numbers, and a softmax attention block (256 x 64). Each has a hand-written value and gradient
(the floor); every gradient is checked against it. Time: best of the repeats, in one process,
interleaved. Memory: the tracemalloc peak of one call (NumPy reports its buffers to
tracemalloc), over the floor's.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from typing import Any, Callable

import numpy as np
import scipy.linalg as sla

import chainrules as cr

# --- the workloads: value as a user writes it, and value and gradient written by hand ---------


def glm_loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def glm_hand(w, X, y):
    z = X @ w
    value = np.mean(np.logaddexp(0.0, z) - y * z)
    return value, X.T @ ((1.0 / (1.0 + np.exp(-z)) - y) / len(y))


def mlp_loss(params, X, Y):
    h = np.tanh(X @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.sum(log_probs * Y) / len(X)


def mlp_hand(params, X, Y):
    pre = X @ params["W1"] + params["b1"]
    h = np.tanh(pre)
    logits = h @ params["W2"] + params["b2"]
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    exp = np.exp(shifted)
    total = np.sum(exp, axis=1, keepdims=True)
    value = -np.sum((shifted - np.log(total)) * Y) / len(X)
    d_logits = (exp / total * np.sum(Y, axis=1, keepdims=True) - Y) / len(X)
    d_h = d_logits @ params["W2"].T
    d_pre = d_h * (1.0 - h * h)
    return value, {"W1": X.T @ d_pre, "b1": d_pre.sum(0), "W2": h.T @ d_logits,
                   "b2": d_logits.sum(0)}


def _kernel(log_params, X):
    ell, sf, sn = np.exp(log_params)
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    base = np.exp(-0.5 * d2 / ell ** 2)
    return sf ** 2 * base + sn ** 2 * np.eye(len(X)), d2, base


def gp_loss(log_params, X, y):
    K = _kernel(log_params, X)[0]
    L = sla.cholesky(K, lower=True)
    alpha = sla.cho_solve((L, True), y)
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L)))


def gp_hand(log_params, X, y):
    ell, sf, sn = np.exp(log_params)
    K, d2, base = _kernel(log_params, X)
    L = sla.cholesky(K, lower=True)
    alpha = sla.cho_solve((L, True), y)
    value = 0.5 * y @ alpha + np.sum(np.log(np.diag(L)))
    W = sla.cho_solve((L, True), np.eye(len(X))) - np.outer(alpha, alpha)  # dvalue/dK * 2
    dK_dlog = (sf ** 2 * base * d2 / ell ** 2, 2 * sf ** 2 * base,
               2 * sn ** 2 * np.eye(len(X)))
    return value, np.array([0.5 * np.sum(W * d) for d in dK_dlog])


def chain_loss(x):
    for _ in range(5):
        x = np.tanh(x * 1.0001 + 0.01)
        x = np.exp(-x) + x
    return np.sum(x)


def chain_hand(x):
    slopes = []
    for _ in range(5):
        t = np.tanh(x * 1.0001 + 0.01)
        e = np.exp(-t)
        slopes.append((1.0 - t * t) * 1.0001 * (1.0 - e))
        x = e + t
    g = np.ones_like(x)
    for slope in reversed(slopes):
        g *= slope
    return np.sum(x), g


def attention_loss(params, X):
    Q, K, V = X @ params["Wq"], X @ params["Wk"], X @ params["Wv"]
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    scores = scores - np.max(scores, axis=1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / np.sum(weights, axis=1, keepdims=True)
    return np.sum((weights @ V) ** 2)


def attention_hand(params, X):
    Q, K, V = X @ params["Wq"], X @ params["Wk"], X @ params["Wv"]
    scale = 1.0 / np.sqrt(Q.shape[1])
    scores = Q @ K.T * scale
    scores = scores - np.max(scores, axis=1, keepdims=True)
    weights = np.exp(scores)
    weights /= np.sum(weights, axis=1, keepdims=True)
    out = weights @ V
    d_out = 2.0 * out
    d_weights = d_out @ V.T
    d_V = weights.T @ d_out
    d_scores = weights * (d_weights - np.sum(d_weights * weights, axis=1, keepdims=True))
    d_Q = d_scores @ K * scale
    d_K = d_scores.T @ Q * scale
    return np.sum(out ** 2), {"Wq": X.T @ d_Q, "Wk": X.T @ d_K, "Wv": X.T @ d_V}


def _inputs(name: str, quick: bool) -> tuple:
    rng = np.random.default_rng(0)
    if name == "glm":
        n, d = (2000, 20) if quick else (200_000, 50)
        X = rng.standard_normal((n, d))
        return (0.1 * rng.standard_normal(d), X, (rng.random(n) < 0.5).astype(float))
    if name == "mlp":
        n, d, hidden, classes = (64, 30, 16, 5) if quick else (1024, 784, 256, 10)
        params = {"W1": 0.05 * rng.standard_normal((d, hidden)), "b1": np.zeros(hidden),
                  "W2": 0.05 * rng.standard_normal((hidden, classes)), "b2": np.zeros(classes)}
        return params, rng.standard_normal((n, d)), np.eye(classes)[rng.integers(0, classes, n)]
    if name == "gp":
        n = 60 if quick else 600
        X = rng.standard_normal((n, 3))
        return np.log(np.array([1.2, 0.8, 0.3])), X, np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)
    if name == "chain":
        return (rng.standard_normal(20_000 if quick else 2_000_000),)
    if name == "attention":
        n, d = (32, 16) if quick else (256, 64)
        params = {k: rng.standard_normal((d, d)) / np.sqrt(d) for k in ("Wq", "Wk", "Wv")}
        return params, rng.standard_normal((n, d))
    raise KeyError(name)


WORKLOADS: dict[str, tuple[Callable, Callable]] = {
    "glm": (glm_loss, glm_hand), "mlp": (mlp_loss, mlp_hand), "gp": (gp_loss, gp_hand),
    "chain": (chain_loss, chain_hand), "attention": (attention_loss, attention_hand)}


# --- measuring ---------------------------------------------------------------------------------


def _best_time(call: Callable, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def _peak_bytes(call: Callable) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return all(_close(a[k], b[k]) for k in a)
    return bool(np.allclose(np.asarray(a), np.asarray(b), rtol=1e-7, atol=1e-10))


def _peer_calls(name: str, inputs: tuple) -> dict:
    """Value-and-gradient calls of the peers that are installed (PyTorch, JAX eager and jit)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from peers_vectorized import peer_calls  # benchmarks/peers_vectorized.py

    return peer_calls(name, inputs)


def measure(name: str, quick: bool = False, peers: bool = False, repeats: int = 5) -> dict:
    loss, hand = WORKLOADS[name]
    inputs = _inputs(name, quick)
    calls = {"hand": lambda: hand(*inputs),
             "chainrules": lambda: cr.value_and_grad(loss)(*inputs)}
    if peers:
        calls.update(_peer_calls(name, inputs))
    expected = hand(*inputs)
    value, gradient = calls["chainrules"]()
    result = {"ok": _close(value, expected[0]) and _close(gradient, expected[1])}
    for call in calls.values():  # warm up
        call()
    times = {key: float("inf") for key in calls}
    for _ in range(repeats):  # interleaved: load changes hit every library alike
        for key, call in calls.items():
            times[key] = min(times[key], _best_time(call, 1))
    result["time"] = {key: times[key] / times["hand"] for key in calls}
    result["hand_seconds"] = times["hand"]
    result["memory"] = {key: _peak_bytes(calls[key]) / _peak_bytes(calls["hand"])
                        for key in ("hand", "chainrules")}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--peers", action="store_true")
    parser.add_argument("--repeats", type=int, default=7)
    options = parser.parse_args()
    print("value and gradient, over the hand-written NumPy floor (time: best of "
          f"{options.repeats}; memory: tracemalloc peak)")
    rows = []
    for name in WORKLOADS:
        result = measure(name, options.quick, options.peers, options.repeats)
        rows.append((name, result))
        peers = "  ".join(f"{key} {ratio:.2f}x" for key, ratio in result["time"].items()
                          if key not in ("hand", "chainrules"))
        print(f"{name:>10}: time {result['time']['chainrules']:.2f}x "
              f"(floor {result['hand_seconds'] * 1e3:.1f} ms)  memory "
              f"{result['memory']['chainrules']:.2f}x  {peers}  "
              f"{'ok' if result['ok'] else 'WRONG GRADIENT'}")


if __name__ == "__main__":
    main()
