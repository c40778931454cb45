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


HEAT_STEPS, HEAT_R = 40, 0.4   # explicit steps of the heat equation, and dt / dx**2 (stable)


def heat(u0):
    """An explicit heat-equation solver whose double loop writes one grid value at a time."""
    n = len(u0)
    u = np.zeros((HEAT_STEPS + 1, n), dtype=u0.dtype)
    u[0] = u0
    for k in range(HEAT_STEPS):
        for i in range(1, n - 1):
            u[k + 1, i] = u[k, i] + HEAT_R * (u[k, i + 1] - 2.0 * u[k, i] + u[k, i - 1])
    return np.sum(u[-1] ** 2)


PENDULUM_TOLERANCE = 1e-10   # rtol and atol of every library's ODE solver


def pendulum(p, *, t_end):
    """The angle at ``t_end`` of a damped pendulum (damping p[0], stiffness p[1]), solved by
    ``scipy.integrate.solve_ivp`` (RK45)."""
    import scipy.integrate

    def rhs(t, y):
        return [y[1], -p[0] * y[1] - p[1] * np.sin(y[0])]

    solution = scipy.integrate.solve_ivp(rhs, (0.0, float(t_end)), [1.0, 0.0],
                                         rtol=PENDULUM_TOLERANCE, atol=PENDULUM_TOLERANCE,
                                         t_eval=[float(t_end)])
    return solution.y[0, -1]


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


def heat_inputs(n: int) -> tuple[np.ndarray]:
    return (np.sin(np.linspace(0.0, np.pi, n)) + 0.1 * _rng(n).standard_normal(n),)


def pendulum_inputs(t_end: int) -> tuple[np.ndarray]:
    return (np.array([0.3, 2.0]),)


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


def heat_gradient(u0):
    """The scheme is linear, u[-1] = A**steps u0 with A tridiagonal: the gradient is 2 M^T M u0."""
    n = len(u0)
    A = np.zeros((n, n))
    for i in range(1, n - 1):
        A[i, i - 1], A[i, i], A[i, i + 1] = HEAT_R, 1.0 - 2.0 * HEAT_R, HEAT_R
    M = np.linalg.matrix_power(A, HEAT_STEPS)
    return (2.0 * M.T @ (M @ u0),)


def pendulum_gradient(p, *, t_end):
    """Forward sensitivities, written out by hand: the state and its derivatives with respect to
    damping and stiffness, solved together with DOP853 far tighter than the workload."""
    import scipy.integrate
    a, b = p

    def rhs(t, z):
        y0, y1, s0a, s1a, s0b, s1b = z
        j10, j11 = -b * np.cos(y0), -a    # the Jacobian's second row (the first is [0, 1])
        return [y1, -a * y1 - b * np.sin(y0),
                s1a, j10 * s0a + j11 * s1a - y1,
                s1b, j10 * s0b + j11 * s1b - np.sin(y0)]

    z = scipy.integrate.solve_ivp(rhs, (0.0, float(t_end)), [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                                  method="DOP853", rtol=1e-13, atol=1e-14).y[:, -1]
    return (np.array([z[2], z[4]]),)


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
    # Keyword arguments of the kernel that are not inputs (not differentiated), per size.
    options: Callable[[int], dict] = lambda size: {}
    tolerance: float | None = None   # of the gradient checks; None: by dtype (run.TOLERANCE)

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
    Workload("heat", "heat",
             f"heat equation, {HEAT_STEPS} explicit steps writing `u[k + 1, i]` one value at a "
             "time, n grid points", "n",
             (5, 10, 25, 50, 100, 200), (6, 10), (50,), heat_inputs, heat_gradient),
    Workload("pendulum", "pendulum",
             "damped pendulum's angle at t_end through an ODE solver (rtol = atol = 1e-10), "
             "gradient w.r.t. (damping, stiffness)", "t_end",
             (5, 10, 20, 40), (1, 2), (10,), pendulum_inputs, pendulum_gradient,
             options=lambda t_end: {"t_end": t_end}, tolerance=1e-6),
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
    ("heat", "numpy_manual"): "hand-written baseline only for the vectorized workload",
    ("pendulum", "numpy_manual"): "hand-written baseline only for the vectorized workload",
    ("heat", "autograd"): "autograd's ArrayBox has no item assignment: `u[k + 1, i] = ...` "
                          "raises TypeError (the loop must be rewritten around lists)",
    ("pendulum", "mygrad"): "MyGrad has no ODE solver, and scipy's solve_ivp turns a Tensor "
                            "into a plain array: the graph is lost, no gradient",
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


# ----------------------------------------------------------------------------------------------
# Heat equation: torch and MyGrad write into tensors in place; JAX writes functionally
# (autograd cannot write: see NOT_EXPRESSIBLE)
# ----------------------------------------------------------------------------------------------

def heat_chainrules(u0):
    return chainrules_grad(heat, u0)


def heat_numpy(u0):
    return numpy_forward(heat, u0)


def _heat_in_place(zeros, total):
    def f(u0):
        n = len(u0)
        u = zeros((HEAT_STEPS + 1, n), dtype=u0.dtype)
        u[0] = u0
        for k in range(HEAT_STEPS):
            for i in range(1, n - 1):
                u[k + 1, i] = u[k, i] + HEAT_R * (u[k, i + 1] - 2.0 * u[k, i] + u[k, i - 1])
        return total(u[-1] ** 2)
    return f


def heat_torch(u0):
    import torch
    return torch_grad(_heat_in_place(torch.zeros, torch.sum), u0)


def heat_mygrad(u0):
    import mygrad as mg
    return mygrad_grad(_heat_in_place(mg.zeros, mg.sum), u0)


def _heat_jnp(u0):
    import jax.numpy as jnp
    n = len(u0)
    u = jnp.zeros((HEAT_STEPS + 1, n), dtype=u0.dtype).at[0].set(u0)
    for k in range(HEAT_STEPS):
        for i in range(1, n - 1):
            u = u.at[k + 1, i].set(u[k, i] + HEAT_R * (u[k, i + 1] - 2.0 * u[k, i]
                                                       + u[k, i - 1]))
    return jnp.sum(u[-1] ** 2)


def heat_jax(u0):
    return jax_grad(_heat_jnp, u0)


def heat_jax_jit(u0):
    return jax_jit_grad(_heat_jnp, u0)


# ----------------------------------------------------------------------------------------------
# Pendulum: chainrules differentiates scipy's solve_ivp; each peer uses its own ODE solver with
# an adjoint gradient (torchdiffeq's odeint_adjoint and JAX's odeint are Dormand-Prince 5(4),
# like RK45; autograd's odeint wraps scipy's LSODA)
# ----------------------------------------------------------------------------------------------

def pendulum_chainrules(p, *, t_end):
    return chainrules_grad(lambda p: pendulum(p, t_end=t_end), p)


def pendulum_numpy(p, *, t_end):
    return numpy_forward(lambda p: pendulum(p, t_end=t_end), p)


def pendulum_torch(p, *, t_end):
    import torch
    import torchdiffeq

    def f(p):
        def rhs(t, y):
            return torch.stack([y[1], -p[0] * y[1] - p[1] * torch.sin(y[0])])
        y0 = torch.tensor([1.0, 0.0], dtype=p.dtype)
        times = torch.tensor([0.0, float(t_end)], dtype=p.dtype)
        return torchdiffeq.odeint_adjoint(rhs, y0, times, rtol=PENDULUM_TOLERANCE,
                                          atol=PENDULUM_TOLERANCE, method="dopri5",
                                          adjoint_params=(p,))[-1, 0]
    return torch_grad(f, p)


def pendulum_autograd(p, *, t_end):
    import autograd.numpy as anp
    from autograd.builtins import tuple as traced_tuple   # the parameters' boxes stay traced
    from autograd.scipy.integrate import odeint

    def rhs(y, t, p):
        return anp.array([y[1], -p[0] * y[1] - p[1] * anp.sin(y[0])])

    def f(p):
        return odeint(rhs, anp.array([1.0, 0.0]), anp.array([0.0, float(t_end)]),
                      traced_tuple((p,)),
                      rtol=PENDULUM_TOLERANCE, atol=PENDULUM_TOLERANCE)[-1, 0]
    return autograd_grad(f, p)


def _pendulum_jnp(t_end):
    import jax.numpy as jnp
    from jax.experimental.ode import odeint

    def rhs(y, t, p):
        return jnp.stack([y[1], -p[0] * y[1] - p[1] * jnp.sin(y[0])])

    def f(p):
        return odeint(rhs, jnp.array([1.0, 0.0]), jnp.array([0.0, float(t_end)]), p,
                      rtol=PENDULUM_TOLERANCE, atol=PENDULUM_TOLERANCE)[-1, 0]
    return f


def pendulum_jax(p, *, t_end):
    return jax_grad(_pendulum_jnp(t_end), p)


def pendulum_jax_jit(p, *, t_end):
    return jax_jit_grad(_pendulum_jnp(t_end), p)
