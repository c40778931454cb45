"""``scipy.linalg`` functions computed from functions that have rules, for engines to trace:
``solve_continuous_lyapunov`` (``solve_sylvester(a, a^H, q)``), ``solve_discrete_lyapunov``
(SciPy's own two methods: the Kronecker system below n = 10, the bilinear transformation to a
continuous equation above), ``expm_frechet`` (the upper right block of the exponential of
``[[A, E], [0, A]]``), ``companion``, ``solve_toeplitz`` and ``matmul_toeplitz`` (through
``toeplitz``, ``solve`` and ``@``: the O(n^2) Levinson recursion and FFT product SciPy runs are
compiled code, which cannot take traced values).

They hold no rules: while a trace runs, SciPy's function with traced arguments runs the
version here (``TRACED_PATHS`` in `chainrules.ad.dispatch.routes`), whose operations are
recorded by their own rules, at any order. Each takes SciPy's arguments and gives SciPy's
values (to rounding).

>>> import numpy as np
>>> x = solve_continuous_lyapunov(np.array([[-2.0, 0.0], [0.0, -1.0]]), np.eye(2))
>>> np.round(x, 6)
array([[-0.25,  0.  ],
       [ 0.  , -0.5 ]])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla

__all__ = ["solve_continuous_lyapunov", "solve_discrete_lyapunov", "expm_frechet", "companion",
           "solve_toeplitz", "matmul_toeplitz"]


def _H(a: Any) -> Any:
    return np.conj(np.swapaxes(a, -1, -2))


def solve_continuous_lyapunov(a: Any, q: Any) -> Any:
    """``X`` with ``a X + X a^H = q``."""
    return sla.solve_sylvester(a, _H(a), q)


def solve_discrete_lyapunov(a: Any, q: Any, method: str | None = None) -> Any:
    """``X`` with ``a X a^H - X + q = 0``."""
    n = np.shape(a)[0]
    if method is None:
        method = "direct" if n < 10 else "bilinear"
    if method == "direct":
        system = np.eye(n * n) - np.kron(a, np.conj(a))
        return np.reshape(np.linalg.solve(system, np.ravel(q)), np.shape(q))
    if method == "bilinear":
        eye = np.eye(n)
        inverse = np.linalg.inv(_H(a) + eye)
        b = (_H(a) - eye) @ inverse
        c = 2 * np.linalg.inv(a + eye) @ q @ inverse
        return solve_continuous_lyapunov(_H(b), -c)
    raise ValueError(f"Unknown solver {method}")


def expm_frechet(A: Any, E: Any, method: str | None = None, compute_expm: bool = True,
                 check_finite: bool = True) -> Any:
    """The Frechet derivative of ``expm`` at ``A`` along ``E`` (and ``expm(A)``)."""
    n = np.shape(A)[0]
    zeros = np.zeros((n, n), dtype=np.result_type(np.asarray(A).dtype, np.asarray(E).dtype))
    block = np.concatenate([np.concatenate([A, E], axis=1), np.concatenate([zeros, A], axis=1)])
    exponential = sla.expm(block)
    derivative = exponential[:n, n:]
    return (exponential[:n, :n], derivative) if compute_expm else derivative


def companion(a: Any) -> Any:
    """The companion matrix of the polynomial with coefficients ``a`` (batched on the leading
    axes): first row ``-a[1:] / a[0]``, ones below the diagonal."""
    a = np.asarray(a)
    n = np.shape(a)[-1]
    if n < 2:
        raise ValueError("The length of `a` must be at least 2.")
    if np.any(np.asarray(np.reshape(a, (-1, n))[:, 0] == 0)):
        raise ValueError("The first coefficient in `a` must not be zero.")
    first = -a[..., 1:] / a[..., :1]
    batch = np.shape(a)[:-1]
    below = np.broadcast_to(np.eye(n - 2, n - 1, dtype=first.dtype), batch + (n - 2, n - 1))
    return np.concatenate([first[..., None, :], below], axis=-2)


def _toeplitz_of(c_or_cr: Any) -> Any:
    if isinstance(c_or_cr, tuple):
        c, r = c_or_cr
        return sla.toeplitz(c, r)
    return sla.toeplitz(c_or_cr)


def solve_toeplitz(c_or_cr: Any, b: Any, check_finite: bool = True) -> Any:
    """``x`` with ``toeplitz(c, r) x = b``."""
    return np.linalg.solve(_toeplitz_of(c_or_cr), b)


def matmul_toeplitz(c_or_cr: Any, x: Any, check_finite: bool = False,
                    workers: Any = None) -> Any:
    """``toeplitz(c, r) @ x``."""
    return _toeplitz_of(c_or_cr) @ x
