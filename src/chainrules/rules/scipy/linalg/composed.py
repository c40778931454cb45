"""``scipy.linalg`` functions computed from functions that have rules, for engines to trace:
``solve_continuous_lyapunov`` (``solve_sylvester(a, a^H, q)``), ``solve_discrete_lyapunov``
(SciPy's own two methods: the Kronecker system below n = 10, the bilinear transformation to a
continuous equation above), ``expm_frechet`` (the upper right block of the exponential of
``[[A, E], [0, A]]``), ``companion``, ``solve_toeplitz`` and ``matmul_toeplitz`` (through
``toeplitz``, ``solve`` and ``@``: the O(n^2) Levinson recursion and FFT product SciPy runs are
compiled code, which cannot take traced values), ``fractional_matrix_power`` (``expm(t logm(A))``),
``funm`` (from the eigendecomposition), ``signm`` (``(A^2)^(-1/2) A``), ``solveh_banded``
(``solve_banded`` of the mirrored band), ``rq`` (``qr`` of the flipped transpose), ``norm``
(NumPy's: SciPy calls BLAS's ``nrm2`` for a vector), ``matrix_balance`` (``T^-1 A T`` with
LAPACK's permutation and powers of two, constant where they do not change),
``solve_continuous_are`` and ``solve_discrete_are`` (two Newton steps on the Riccati equation
from SciPy's solution, `riccati_solution`: each is a Lyapunov equation, and the derivative of
Newton's map in ``X`` vanishes at the solution, so the first step has the solution's first
derivatives and the second its first and second ones).

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

from ....core.registry import non_differentiable, recorded_whole

__all__ = ["solve_continuous_lyapunov", "solve_discrete_lyapunov", "expm_frechet", "companion",
           "solve_toeplitz", "matmul_toeplitz", "fractional_matrix_power", "funm", "signm",
           "solveh_banded", "rq", "rq_phases", "matrix_balance", "balancing",
           "riccati_solution", "solve_continuous_are", "solve_discrete_are", "norm"]


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


def fractional_matrix_power(A: Any, t: float) -> Any:
    """``A ** t``: ``matrix_power`` for an integer ``t``, else the principal power
    ``expm(t logm(A))`` (SciPy's Schur-Pade algorithm computes the same function; ``t`` is a
    constant)."""
    exponent = float(t)
    if exponent.is_integer():
        return np.linalg.matrix_power(A, int(exponent))
    return sla.expm(exponent * sla.logm(A))


def funm(A: Any, func: Any, disp: bool = True) -> Any:
    """``func`` of the matrix ``A``, from its eigendecomposition: ``V func(w) V^-1`` (SciPy's
    Schur-Parlett algorithm computes the same function, which needs distinct eigenvalues too),
    real for a real ``A`` where the imaginary part is rounding (as SciPy's)."""
    if not disp:
        raise ValueError("scipy.linalg.funm(..., disp=False) of traced values: the error "
                         "estimate is not computed here; call it with disp=True.")
    A = np.asarray(A)
    w, v = np.linalg.eig(A)
    value = _H(np.linalg.solve(_H(v), _H(v * func(w)[..., None, :])))
    return _maybe_real(A, value)


def signm(A: Any, disp: Any = True) -> Any:
    """The matrix sign function ``(A^2)^(-1/2) A`` (for ``A`` without eigenvalues on the
    imaginary axis), real for a real ``A`` as SciPy's."""
    if disp is False:
        raise ValueError("scipy.linalg.signm(..., disp=False) of traced values: the error "
                         "estimate is not computed here; call it with disp=True.")
    A = np.asarray(A)
    return _maybe_real(A, np.linalg.solve(sla.sqrtm(A @ A), A))


def _maybe_real(A: Any, value: Any) -> Any:
    """``value``'s real part where ``A`` is real and ``value``'s imaginary part is rounding
    (SciPy's tolerance: 1e3 float32 epsilons, 1e6 float64 ones)."""
    if np.iscomplexobj(A) or not np.iscomplexobj(value):
        return value
    tolerance = (1e3 if value.dtype == np.complex64 else 1e6) * np.finfo(value.dtype).eps
    return np.real(value) if np.all(np.abs(np.imag(value)) <= tolerance) else value


def solveh_banded(ab: Any, b: Any, overwrite_ab: bool = False, overwrite_b: bool = False,
                  lower: bool = False, check_finite: bool = True) -> Any:
    """``x`` with ``A x = b``, ``A`` Hermitian stored by its upper (or ``lower``) diagonals:
    ``solve_banded`` of the full band, the other half mirrored (conjugated). SciPy's
    Cholesky solve also checks that ``A`` is positive definite; this one solves any
    nonsingular ``A``."""
    if overwrite_ab or overwrite_b:
        raise ValueError("scipy.linalg.solveh_banded(..., overwrite_ab/overwrite_b=True) of "
                         "traced values: the arrays cannot be overwritten; pass False.")
    ab = np.asarray(ab)
    width, n = np.shape(ab)
    bands = width - 1
    stored = [ab[bands - d] for d in range(width)] if not lower else [ab[d] for d in
                                                                       range(width)]
    # stored[d]: the d-th diagonal, upper form at columns d.. (A[j - d, j]), lower form at
    # columns ..n - d (A[j + d, j]); the band matrix's rows: u - d above, u + d below
    if np.iscomplexobj(ab):  # LAPACK reads the real part of a Hermitian diagonal
        stored[0] = np.real(stored[0]) + 0j
    above, below = [], []
    for d, diagonal in enumerate(stored):
        zeros = np.zeros(d, dtype=ab.dtype)
        if lower:
            below.append(diagonal)
            above.append(np.concatenate([zeros, np.conj(diagonal[:n - d])]))
        else:
            above.append(diagonal)
            below.append(np.concatenate([np.conj(diagonal[d:]), zeros]))
    band = np.stack(above[:0:-1] + [above[0]] + below[1:])
    return sla.solve_banded((bands, bands), band, b)


def _rq_from_qr(a: Any, mode: str) -> tuple:
    """``(R, Q)`` with ``a = R Q`` from the QR factors of the flipped transpose: ``(J a)^T =
    Q' R'`` gives ``a = (J R'^T J)(J Q'^T)`` (``J`` reverses the order of the rows); ``Q`` is
    None for ``mode='r'``."""
    flipped = np.swapaxes(np.flip(a, axis=0), 0, 1)
    if mode == "r":
        (r,) = sla.qr(flipped, mode="r")
        return np.flip(np.swapaxes(r, 0, 1), axis=(0, 1)), None
    q, r = sla.qr(flipped, mode="economic" if mode == "economic" else "full")
    return np.flip(np.swapaxes(r, 0, 1), axis=(0, 1)), np.flip(np.swapaxes(q, 0, 1), axis=0)


def rq_phases(a: Any, mode: str = "full") -> np.ndarray:
    """The phases (signs, for real ``a``) of SciPy's ``R`` over those of `_rq_from_qr`'s, per
    column of ``R``: LAPACK's RQ fixes its own. Not differentiable: an engine computes it on
    plain values (the phases are constant where the diagonal has no zero).

    >>> rq_phases(np.array([[2.0, 1.0], [0.0, 3.0]]))
    array([-1., -1.])
    """
    expected = sla.rq(a, mode=mode)
    expected = expected if mode == "r" else expected[0]
    r = _rq_from_qr(a, mode)[0]
    count = min(r.shape)
    rows = np.arange(r.shape[0] - count, r.shape[0])
    columns = np.arange(r.shape[1] - count, r.shape[1])
    phases = np.ones(r.shape[1], dtype=np.result_type(r.dtype, np.float64))
    ours, theirs = r[rows, columns], expected[rows, columns]
    usable = (ours != 0) & (theirs != 0)
    ratio = np.ones(count, dtype=phases.dtype)
    ratio[usable] = (theirs[usable] / np.abs(theirs[usable])) / (ours[usable] /
                                                                  np.abs(ours[usable]))
    phases[columns] = ratio
    return phases


non_differentiable(recorded_whole(rq_phases))


def rq(a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full",
       check_finite: bool = True) -> Any:
    """``scipy.linalg.rq``: the QR factors of the flipped transpose, flipped back, with
    LAPACK's phases (`rq_phases`): ``R D`` and ``D^-1 Q``. Its derivative is the QR rule's
    (``mode='full'`` of a wide ``a`` leaves rows of ``Q`` free: refused there, as QR's)."""
    if mode not in ("full", "r", "economic"):
        raise ValueError(f"scipy.linalg.rq(..., mode={mode!r}) of traced values: 'full', "
                         f"'economic' and 'r' are followed.")
    a = np.asarray(a)
    if mode == "full" and np.shape(a)[0] < np.shape(a)[1]:
        raise NotImplementedError(
            f"scipy.linalg.rq(..., mode='full') of a traced matrix of shape {np.shape(a)}: "
            f"the first n - m rows of Q are not unique, so Q has no derivative; use "
            f"mode='economic' (or mode='r').")
    phases = rq_phases(a, mode)
    r, q = _rq_from_qr(a, mode)
    r = r * phases
    return r if mode == "r" else (r, np.conj(phases)[:, None] * q)



def balancing(A: Any, permute: bool = True, scale: bool = True) -> tuple:
    """``(rows, factors)`` of LAPACK's balancing of ``A`` (``T`` has ``factors[j]`` at
    ``(rows[j], j)``, for each matrix of a stack), and SciPy's ``T`` or ``(scale, perm)``. Not
    differentiable: an engine computes it on plain values (a permutation and powers of two,
    which stay the same where the matrix moves a little).

    >>> rows, factors, _, _ = balancing(np.array([[1.0, 100.0], [0.01, 2.0]]))
    >>> rows, factors
    (array([0, 1]), array([32. ,  0.5]))
    """
    _, transform = sla.matrix_balance(A, permute=permute, scale=scale)
    _, separated = sla.matrix_balance(A, permute=permute, scale=scale, separate=True)
    rows = np.argmax(np.abs(transform), axis=-2)
    factors = np.take_along_axis(transform, rows[..., None, :], axis=-2)[..., 0, :]
    return rows, factors, transform, separated


non_differentiable(recorded_whole(balancing))


def matrix_balance(A: Any, permute: bool = True, scale: bool = True, separate: bool = False,
                   overwrite_a: bool = False) -> tuple:
    """``scipy.linalg.matrix_balance``: ``B = T^-1 A T`` (``B[j, k] = A[r_j, r_k] d_k /
    d_j`` for ``T``'s entries ``d_j`` at ``(r_j, j)``): the same values as LAPACK's (powers
    of two scale exactly); ``T`` (or ``(scale, perm)``) constant."""
    if overwrite_a:
        raise ValueError("scipy.linalg.matrix_balance(..., overwrite_a=True) of a traced "
                         "matrix: it cannot be overwritten; pass False.")
    rows, factors, transform, separated = balancing(A, permute, scale)
    A = np.asarray(A)
    permuted = np.take_along_axis(np.take_along_axis(A, rows[..., :, None], axis=-2),
                                  rows[..., None, :], axis=-1)
    balanced = permuted * (factors[..., None, :] / factors[..., :, None])
    return balanced, (separated if separate else transform)


def riccati_solution(kind: str, a: Any, b: Any, q: Any, r: Any, e: Any = None, s: Any = None,
                     balanced: bool = True) -> np.ndarray:
    """SciPy's solution of the ``kind`` ('continuous' or 'discrete') algebraic Riccati
    equation, checked: a Newton step from it must move it by at most 1e-6 (relative), else
    it raises (it is no solution to differentiate). Not differentiable: an engine computes it
    on plain values (SciPy's checks and errors; the derivatives come from Newton steps from
    it).

    >>> riccati_solution("continuous", np.array([[-1.0]]), np.array([[1.0]]),
    ...                  np.array([[1.0]]), np.array([[1.0]]))
    array([[0.41421356]])
    """
    solver = sla.solve_continuous_are if kind == "continuous" else sla.solve_discrete_are
    solution = solver(a, b, q, r, e=e, s=s, balanced=balanced)
    step = _riccati_newton(kind, solution, a, b, q, r, e, s) - solution
    moved = np.max(np.abs(step)) / max(1.0, np.max(np.abs(solution)))
    if moved > 1e-6:
        raise ValueError(
            f"scipy.linalg.solve_{kind}_are of traced values: SciPy's solution does not "
            f"satisfy the equation (a Newton step moves it by {moved:.3g}, relative), so it "
            f"has no derivative to follow. SciPy's balancing is inaccurate for some "
            f"descriptor matrices e: try balanced=False.")
    return solution


non_differentiable(recorded_whole(riccati_solution))


def _riccati_terms(x: Any, a: Any, b: Any, q: Any, r: Any, s: Any, gain_weight: Any) -> tuple:
    """``(A - B K, M)`` at ``x`` for the gain ``K = W^-1 (B^H X A_e + S^H)`` (``W``:
    ``gain_weight``) and ``M = Q + K^H R K - S K - K^H S^H``, the pieces of a Newton step."""
    gain = np.linalg.solve(gain_weight, _H(b) @ x + (0 if s is None else _H(s)))
    closed_loop = a - b @ gain
    m = q + _H(gain) @ r @ gain
    if s is not None:
        m = m - s @ gain - _H(gain) @ _H(s)
    return closed_loop, m


def _riccati_newton(kind: str, x: Any, a: Any, b: Any, q: Any, r: Any, e: Any,
                    s: Any) -> Any:
    """One Newton step on the Riccati equation from ``x``: a Lyapunov equation in the
    closed-loop matrix (with ``E^-1`` applied for a descriptor ``e``)."""
    if kind == "continuous":
        closed_loop, m = _riccati_terms(x, a, b, q, r, s, r) if e is None else \
            _riccati_terms(x @ e, a, b, q, r, s, r)
    else:
        closed_loop, m = _riccati_terms(x @ a, a, b, q, r, s, r + _H(b) @ x @ b)
    if e is not None:
        inverse = np.linalg.inv(e)
        closed_loop, m = closed_loop @ inverse, _H(inverse) @ m @ inverse
    if kind == "continuous":
        return sla.solve_sylvester(_H(closed_loop), closed_loop, -m)
    return sla.solve_discrete_lyapunov(_H(closed_loop), m)


def _riccati(kind: str, a: Any, b: Any, q: Any, r: Any, e: Any, s: Any,
             balanced: bool) -> Any:
    start = riccati_solution(kind, a, b, q, r, e, s, balanced)
    first = _riccati_newton(kind, start, a, b, q, r, e, s)
    return _riccati_newton(kind, first, a, b, q, r, e, s)


def solve_continuous_are(a: Any, b: Any, q: Any, r: Any, e: Any = None, s: Any = None,
                         balanced: bool = True) -> Any:
    """``X`` with ``A^H X E + E^H X A - (E^H X B + S) R^-1 (B^H X E + S^H) + Q = 0``."""
    return _riccati("continuous", a, b, q, r, e, s, balanced)


def solve_discrete_are(a: Any, b: Any, q: Any, r: Any, e: Any = None, s: Any = None,
                       balanced: bool = True) -> Any:
    """``X`` with ``A^H X A - E^H X E - (A^H X B + S) (R + B^H X B)^-1 (B^H X A + S^H) + Q
    = 0``."""
    return _riccati("discrete", a, b, q, r, e, s, balanced)


def norm(a: Any, ord: Any = None, axis: Any = None, keepdims: bool = False,  # noqa: A002
         check_finite: bool = True) -> Any:
    """``scipy.linalg.norm``: ``np.linalg.norm`` (SciPy computes a vector's 2-norm with BLAS's
    ``nrm2``, the same function)."""
    return np.linalg.norm(a, ord=ord, axis=axis, keepdims=keepdims)
