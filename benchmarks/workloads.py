"""The benchmark workloads: their inputs, closed-form gradients, and one gradient function per library.

Each workload is a function a user writes in ordinary NumPy code (``scalar_loop``,
``column_loop``, ...).  For every library there is one function ``<kernel>_<library>(*inputs)``
that returns a zero-argument callable: one call computes the forward pass and the gradient with
respect to every input, exactly as a user of that library would write it, and returns the
gradients (in the library's own array type; ``to_numpy`` converts them afterwards, outside the
timed region).  Setup that a user does once (imports, converting inputs to tensors, ``jax.jit``
compilation) happens before the callable is returned.

The pseudo-libraries ``numpy`` (the plain forward pass, no gradient) and ``numpy_manual`` (a
hand-written forward and backward pass) are the baselines.  A library that cannot express a
workload has an entry in ``NOT_EXPRESSIBLE`` saying why.

    >>> x, = WORKLOADS["scalar_loop_f64"].make_inputs(3)
    >>> float(scalar_loop(x)) == float(np.sum(x ** 2))
    True
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

HIDDEN = 32  # hidden size of the RNN workload
SEED = 20260101


# ----------------------------------------------------------------------------------------------
# The workloads as users write them, in plain NumPy
# ----------------------------------------------------------------------------------------------

def scalar_loop(x):
    """Python's builtin sum over scalar reads ``x[i]``: n getitems, n squares, n additions."""
    return sum(x[i] ** 2 for i in range(len(x)))


def column_loop(X):
    """A loop over the m columns of a (100, m) array."""
    return sum(np.sum(np.sin(X[:, j]) * X[:, j]) for j in range(X.shape[1]))


def rnn(W, U):
    """A tanh RNN with hidden size 32 over the T columns of U; loss = sum of the last state."""
    h = np.zeros(W.shape[0], dtype=W.dtype)
    for t in range(U.shape[1]):
        h = np.tanh(W @ h + U[:, t])
    return np.sum(h)


def vectorize(x):
    """``np.vectorize`` over a closure that reads one element of ``x`` per call."""
    return np.vectorize(lambda i: x[i] ** 2)(np.arange(len(x))).sum()


def vectorized(X):
    """One vectorized expression on a large array: the per-operation overhead is negligible."""
    return np.sum(np.sin(X) * X)


# ----------------------------------------------------------------------------------------------
# Inputs and closed-form gradients
# ----------------------------------------------------------------------------------------------

def _rng(n: int) -> np.random.Generator:
    return np.random.default_rng([SEED, n])


def vector_inputs(n: int, dtype=np.float64) -> tuple[np.ndarray]:
    return (_rng(n).uniform(-1.0, 1.0, size=n).astype(dtype),)


def column_inputs(m: int) -> tuple[np.ndarray]:
    return (_rng(m).uniform(-1.0, 1.0, size=(100, m)),)


def rnn_inputs(T: int) -> tuple[np.ndarray, np.ndarray]:
    rng = _rng(T)
    W = rng.normal(scale=0.9 / np.sqrt(HIDDEN), size=(HIDDEN, HIDDEN))
    U = rng.normal(scale=0.5, size=(HIDDEN, T))
    return W, U


def large_array_inputs(n: int) -> tuple[np.ndarray]:
    return (_rng(n).uniform(-1.0, 1.0, size=(n // 1000, 1000)),)


def square_gradient(x):
    """d/dx sum(x_i**2) = 2x."""
    return (2 * x,)


def sin_times_x_gradient(X):
    """d/dX sum(sin(X) * X) = cos(X) X + sin(X)."""
    return (np.cos(X) * X + np.sin(X),)


def rnn_gradient(W, U):
    """Backpropagation through time, written out by hand."""
    hs = [np.zeros(W.shape[0], dtype=W.dtype)]
    for t in range(U.shape[1]):
        hs.append(np.tanh(W @ hs[-1] + U[:, t]))
    dW, dU = np.zeros_like(W), np.zeros_like(U)
    dh = np.ones_like(hs[-1])
    for t in reversed(range(U.shape[1])):
        da = dh * (1 - hs[t + 1] ** 2)
        dU[:, t] = da
        dW += np.outer(da, hs[t])
        dh = W.T @ da
    return dW, dU


# ----------------------------------------------------------------------------------------------
# The workload table
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Workload:
    """One benchmark workload: which kernel, at which sizes, with which inputs and gradient."""
    name: str
    kernel: str                      # prefix of the per-library functions below
    title: str
    size_name: str                   # "n", "m" or "T"
    sizes: tuple[int, ...]
    quick_sizes: tuple[int, ...]
    reference_sizes: tuple[int, ...]  # the sizes shown in the summary table
    make_inputs: Callable[[int], tuple[np.ndarray, ...]]
    closed_form: Callable[..., tuple[np.ndarray, ...]]
    min_time: float = 0.0   # seconds of calls per point at least (more calls for noisy points)

    @property
    def forward(self) -> Callable:
        return globals()[self.kernel]


WORKLOADS: dict[str, Workload] = {w.name: w for w in [
    Workload("scalar_loop_f64", "scalar_loop",
             "scalar loop `sum(x[i]**2 for i in range(n))`, float64", "n",
             (1_000, 3_000, 10_000, 30_000, 100_000), (30, 100), (10_000,),
             lambda n: vector_inputs(n, np.float64), square_gradient),
    Workload("scalar_loop_f32", "scalar_loop",
             "scalar loop `sum(x[i]**2 for i in range(n))`, float32", "n",
             (1_000, 10_000, 100_000), (30, 100), (10_000,),
             lambda n: vector_inputs(n, np.float32), square_gradient),
    Workload("column_loop", "column_loop",
             "column loop `sum(np.sum(np.sin(X[:, j]) * X[:, j]) for j in range(m))`, X (100, m)",
             "m", (250, 500, 1_000, 2_000, 4_000), (5, 10), (1_000,),
             column_inputs, sin_times_x_gradient),
    Workload("rnn", "rnn",
             "RNN `h = np.tanh(W @ h + U[:, t])`, hidden 32, gradient w.r.t. (W, U)", "T",
             (100, 300, 1_000, 3_000, 5_000), (5, 10), (1_000,),
             rnn_inputs, rnn_gradient),
    Workload("vectorize", "vectorize",
             "`np.vectorize(lambda i: x[i]**2)(np.arange(n)).sum()` over a closure", "n",
             (1_000, 3_000, 10_000, 30_000, 100_000), (30, 100), (10_000,),
             lambda n: vector_inputs(n, np.float64), square_gradient),
    Workload("vectorized", "vectorized",
             "vectorized `np.sum(np.sin(X) * X)`, X (n/1000, 1000)", "n",
             (100_000, 1_000_000, 10_000_000), (1_000, 2_000), (1_000_000, 10_000_000),
             large_array_inputs, sin_times_x_gradient, min_time=5.0),
]}

LIBRARIES = ("chainrules", "numpy", "numpy_manual", "torch", "autograd", "mygrad", "jax", "jax_jit")
PEERS = ("torch", "autograd", "mygrad", "jax", "jax_jit")
BASELINES = ("numpy", "numpy_manual")
# Libraries whose array memory tracemalloc sees (NumPy registers its buffers with tracemalloc).
TRACEMALLOC_VISIBLE = ("chainrules", "numpy", "numpy_manual", "autograd", "mygrad")
# The Python module whose presence makes a library available.
IMPORT_NAME = {"chainrules": "chainrules", "numpy": "numpy", "numpy_manual": "numpy",
               "torch": "torch", "autograd": "autograd", "mygrad": "mygrad", "jax": "jax",
               "jax_jit": "jax"}

_ASARRAY_REFUSED = ("np.vectorize calls np.asarray on the closure's result to find its dtype")
NOT_EXPRESSIBLE: dict[tuple[str, str], str] = {
    ("vectorize", "torch"): _ASARRAY_REFUSED + ", which torch refuses for a tensor that "
                            "requires grad (RuntimeError)",
    ("vectorize", "mygrad"): _ASARRAY_REFUSED + ", which turns the mygrad Tensor into a plain "
                             "float: the graph is lost, no gradient",
    ("vectorize", "jax"): _ASARRAY_REFUSED + ", which raises TracerArrayConversionError "
                          "(jnp.vectorize is a different, vmapped program)",
    ("vectorize", "jax_jit"): _ASARRAY_REFUSED + ", which raises TracerArrayConversionError",
    ("scalar_loop", "numpy_manual"): "hand-written baseline only for the vectorized workload",
    ("column_loop", "numpy_manual"): "hand-written baseline only for the vectorized workload",
    ("rnn", "numpy_manual"): "hand-written baseline only for the vectorized workload",
    ("vectorize", "numpy_manual"): "hand-written baseline only for the vectorized workload",
}


def implementation(workload: Workload, library: str) -> Callable:
    """The function ``<kernel>_<library>``; KeyError with the reason if there is none."""
    reason = NOT_EXPRESSIBLE.get((workload.kernel, library))
    if reason is not None:
        raise KeyError(reason)
    return globals()[f"{workload.kernel}_{library}"]


# ----------------------------------------------------------------------------------------------
# One gradient call per library: the adapters
# ----------------------------------------------------------------------------------------------
# Each adapter takes the function written in that library's dialect and the NumPy inputs, does
# the one-time setup, and returns (call, compile_seconds).  call() = forward + gradient with
# respect to every input.

def chainrules_grad(f, *arrays):
    import chainrules
    argnums = 0 if len(arrays) == 1 else tuple(range(len(arrays)))
    gradient = chainrules.grad(f, argnums=argnums)
    return (lambda: gradient(*arrays)), None


def autograd_grad(f, *arrays):
    import autograd
    argnums = 0 if len(arrays) == 1 else tuple(range(len(arrays)))
    gradient = autograd.grad(f, argnum=argnums)
    return (lambda: gradient(*arrays)), None


def torch_grad(f, *arrays):
    import torch
    torch.set_num_threads(1)
    tensors = [torch.from_numpy(a) for a in arrays]

    def call():
        leaves = [t.detach().requires_grad_() for t in tensors]
        return torch.autograd.grad(f(*leaves), leaves)
    return call, None


def mygrad_grad(f, *arrays):
    import mygrad as mg

    def call():
        leaves = [mg.Tensor(a, copy=False) for a in arrays]
        f(*leaves).backward()
        return tuple(leaf.grad for leaf in leaves)
    return call, None


def _jax_arrays(arrays):
    import jax
    jax.config.update("jax_enable_x64", True)   # keep float64 float64
    import jax.numpy as jnp
    return [jnp.asarray(a) for a in arrays]


def jax_grad(f, *arrays):
    import jax
    jarrays = _jax_arrays(arrays)
    gradient = jax.grad(f, argnums=tuple(range(len(arrays))))
    return (lambda: jax.block_until_ready(gradient(*jarrays))), None


def jax_jit_grad(f, *arrays):
    import jax
    jarrays = _jax_arrays(arrays)
    start = time.perf_counter()
    compiled = jax.jit(jax.grad(f, argnums=tuple(range(len(arrays))))).lower(*jarrays).compile()
    compile_seconds = time.perf_counter() - start
    return (lambda: jax.block_until_ready(compiled(*jarrays))), compile_seconds


def numpy_forward(f, *arrays):
    """The baseline: the plain NumPy forward pass (no gradient)."""
    return (lambda: f(*arrays)), None


def to_numpy(gradients) -> tuple[np.ndarray, ...]:
    """Gradients of any library as a tuple of NumPy arrays."""
    if not isinstance(gradients, (tuple, list)):
        gradients = (gradients,)
    out = []
    for g in gradients:
        if hasattr(g, "detach"):   # torch
            g = g.detach().numpy()
        out.append(np.asarray(g))
    return tuple(out)


# ----------------------------------------------------------------------------------------------
# Scalar loop
# ----------------------------------------------------------------------------------------------

def scalar_loop_chainrules(x):
    return chainrules_grad(scalar_loop, x)


def scalar_loop_numpy(x):
    return numpy_forward(scalar_loop, x)


def scalar_loop_torch(x):
    return torch_grad(scalar_loop, x)   # the same source works on tensors


def scalar_loop_autograd(x):
    return autograd_grad(scalar_loop, x)


def scalar_loop_mygrad(x):
    return mygrad_grad(scalar_loop, x)


def scalar_loop_jax(x):
    return jax_grad(scalar_loop, x)


def scalar_loop_jax_jit(x):
    return jax_jit_grad(scalar_loop, x)


# ----------------------------------------------------------------------------------------------
# Column loop
# ----------------------------------------------------------------------------------------------

def column_loop_chainrules(X):
    return chainrules_grad(column_loop, X)


def column_loop_numpy(X):
    return numpy_forward(column_loop, X)


def column_loop_torch(X):
    import torch

    def f(X):
        return sum(torch.sum(torch.sin(X[:, j]) * X[:, j]) for j in range(X.shape[1]))
    return torch_grad(f, X)


def column_loop_autograd(X):
    import autograd.numpy as anp

    def f(X):
        return sum(anp.sum(anp.sin(X[:, j]) * X[:, j]) for j in range(X.shape[1]))
    return autograd_grad(f, X)


def column_loop_mygrad(X):
    import mygrad as mg

    def f(X):
        return sum(mg.sum(mg.sin(X[:, j]) * X[:, j]) for j in range(X.shape[1]))
    return mygrad_grad(f, X)


def _column_loop_jnp(X):
    import jax.numpy as jnp
    return sum(jnp.sum(jnp.sin(X[:, j]) * X[:, j]) for j in range(X.shape[1]))


def column_loop_jax(X):
    return jax_grad(_column_loop_jnp, X)


def column_loop_jax_jit(X):
    return jax_jit_grad(_column_loop_jnp, X)


# ----------------------------------------------------------------------------------------------
# RNN
# ----------------------------------------------------------------------------------------------

def rnn_chainrules(W, U):
    return chainrules_grad(rnn, W, U)


def rnn_numpy(W, U):
    return numpy_forward(rnn, W, U)


def rnn_torch(W, U):
    import torch

    def f(W, U):
        h = torch.zeros(W.shape[0], dtype=W.dtype)
        for t in range(U.shape[1]):
            h = torch.tanh(W @ h + U[:, t])
        return torch.sum(h)
    return torch_grad(f, W, U)


def rnn_autograd(W, U):
    import autograd.numpy as anp

    def f(W, U):
        h = anp.zeros(W.shape[0])
        for t in range(U.shape[1]):
            h = anp.tanh(anp.dot(W, h) + U[:, t])
        return anp.sum(h)
    return autograd_grad(f, W, U)


def rnn_mygrad(W, U):
    import mygrad as mg

    def f(W, U):
        h = np.zeros(W.shape[0])
        for t in range(U.shape[1]):
            h = mg.tanh(W @ h + U[:, t])
        return mg.sum(h)
    return mygrad_grad(f, W, U)


def _rnn_jnp(W, U):
    import jax.numpy as jnp
    h = jnp.zeros(W.shape[0], dtype=W.dtype)
    for t in range(U.shape[1]):
        h = jnp.tanh(W @ h + U[:, t])
    return jnp.sum(h)


def rnn_jax(W, U):
    return jax_grad(_rnn_jnp, W, U)


def rnn_jax_jit(W, U):
    return jax_jit_grad(_rnn_jnp, W, U)


# ----------------------------------------------------------------------------------------------
# np.vectorize over a closure (torch, mygrad and JAX cannot express it: see NOT_EXPRESSIBLE)
# ----------------------------------------------------------------------------------------------

def vectorize_chainrules(x):
    return chainrules_grad(vectorize, x)


def vectorize_numpy(x):
    return numpy_forward(vectorize, x)


def vectorize_autograd(x):
    return autograd_grad(vectorize, x)   # np.vectorize builds an object array of ArrayBoxes


# ----------------------------------------------------------------------------------------------
# Vectorized baseline
# ----------------------------------------------------------------------------------------------

def vectorized_chainrules(X):
    return chainrules_grad(vectorized, X)


def vectorized_numpy(X):
    return numpy_forward(vectorized, X)


def vectorized_numpy_manual(X):
    """Hand-written forward (np.sin(X) * X) and backward (np.cos(X) * X + np.sin(X))."""
    def call():
        np.sum(np.sin(X) * X)                 # forward: the loss
        return (np.cos(X) * X + np.sin(X),)   # backward: its gradient
    return call, None


def vectorized_torch(X):
    import torch
    return torch_grad(lambda X: torch.sum(torch.sin(X) * X), X)


def vectorized_autograd(X):
    import autograd.numpy as anp
    return autograd_grad(lambda X: anp.sum(anp.sin(X) * X), X)


def vectorized_mygrad(X):
    import mygrad as mg
    return mygrad_grad(lambda X: mg.sum(mg.sin(X) * X), X)


def _vectorized_jnp(X):
    import jax.numpy as jnp
    return jnp.sum(jnp.sin(X) * X)


def vectorized_jax(X):
    return jax_grad(_vectorized_jnp, X)


def vectorized_jax_jit(X):
    return jax_jit_grad(_vectorized_jnp, X)
