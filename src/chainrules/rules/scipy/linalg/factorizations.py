"""Rules for ``scipy.linalg``: ``solve``, ``inv``, ``det``, ``cholesky``, ``eigh``, ``svd``,
``svdvals``, ``qr``, ``eig``, ``eigvals``, ``lstsq`` (NumPy's formulas, SciPy's options),
``block_diag``,
``lu_factor``, ``lu_solve``, ``lu``, ``cho_factor``, ``solve_sylvester``,
``sqrtm``, ``logm``, ``solve_banded`` and ``schur`` (beside ``solve_triangular``, ``expm`` and
``cho_solve`` in `chainrules.rules.scipy`). ``lu_solve`` and ``cho_solve`` are differentiable
in their factor too, so ``lu_solve(lu_factor(a), b)`` has the gradient of ``solve(a, b)``.
The factorizations take square matrices (no stacks); ``cho_factor``'s other triangle holds
``a``'s own entries, which LAPACK leaves there (derivative: the identity).

Written with `define`; every formula uses functions that have rules themselves (NumPy's
linear algebra, and these SciPy functions, which the engine routes while a trace runs), so
the rules can be differentiated again. A matrix that SciPy reads in one triangle
(``assume_a='sym'``/``'her'``/``'pos'``, ``cholesky``, ``eigh``) gets its cotangent on that
triangle, as NumPy's ``cholesky`` and ``eigh`` rules do. Options that overwrite inputs or
compute something else (``overwrite_a=True``, ``eigh``'s ``type=2``/``3``, banded or
triangular ``assume_a``) are refused with an error naming the function and the option.
``eigh`` solves the generalized problem (``b``, differentiable too) and returns ranges
(``subset_by_index``, ``subset_by_value``).

Costs of the pullbacks in flops, against the forward (the table of NumPy's in
`chainrules.rules.numpy.linalg` holds for ``solve``, ``inv``, ``det``, ``eigh``, ``pinv``):
``cholesky`` 3.3n^3 against n^3/3 (triangular inverse and products, no general inverse);
``lu``/``lu_factor`` two products and two triangular solves, 4n^3 against 2n^3/3;
``lu_solve`` and ``cho_solve`` one solve with the factors, as the forward, and a rank-k update
of the factor (never a dense n x n product for k < n/2); ``solve_triangular`` one triangular
solve and an n x n outer product, which is its output (n^2 k and n^2, against n^2 k);
``expm`` one Frechet derivative (about three times ``expm``).

``eigh``'s eigenvectors have a free sign (phase): their tangent fixes it as NumPy's ``eigh``
rule does, so only gauge-invariant functions of them have gradients that mean anything.

>>> import numpy as np, scipy.linalg
>>> from chainrules import rrule
>>> y, pullback = rrule(scipy.linalg.det, np.array([[2.0, 1.0], [0.0, 3.0]]))
>>> pullback(1.0)[1]
array([[ 3.,  0.],
       [-1.,  2.]])
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np
import scipy.linalg as sla

from ....core.broadcast import unbroadcast
from ....core.registry import frule, rrule
from ....core.tangents import AbstractZero, NoTangent, Tangent, ZeroTangent
from ....core.projection import ProjectTo
from ....core.thunks import Thunk, unthunk
from ...define import dense_tangent, define, unsupported
from ...numpy.linalg import H, _adjugate, _diag, _from_triangle, _to_triangle, _trace
from ...numpy.linalg import cholesky_gradient, cholesky_tangent, triangular_solve
from ...numpy.linalg import _inverse_gaps, _pinv_gradient, _pinv_tangent
from ...numpy.linalg import _eig_gradient, _eig_tangent, _svd_gradient, _svd_tangent
from ...numpy.linalg import qr_gradient, qr_tangent
from ...numpy.linalg import _lstsq_da, _lstsq_db, _lstsq_pushforward

__all__: list = []


def _refuse_overwrite(name: str, call: Any, *options: str) -> None:
    for option in options:
        if call[option]:
            raise ValueError(
                f"scipy.linalg.{name}: {option}=True is not supported in differentiated code; "
                f"it may overwrite the input in place while other differentiated operations "
                f"still read it. Leave {option}=False (the default).")


def _through_scipy(f: Any) -> Any:
    """``f``, reached through ``scipy.linalg`` at each call: while a trace runs,
    chainrules.ad.dispatch.routing routes it there, and so records the call when its arguments hold
    an outer trace's values (a rule's arguments when it is differentiated again)."""
    name = f.__name__

    def through_scipy(*args: Any, **kwargs: Any) -> Any:
        return getattr(sla, name)(*args, **kwargs)

    through_scipy.__name__ = through_scipy.__qualname__ = name
    return through_scipy


def _as_matrix(v: Any, vector: bool) -> Any:
    return v[..., None] if vector else v


def _scalar_as_matrix(v: Any) -> Any:
    """A 0-d ``a`` as SciPy reads it (solve, cholesky, cho_factor: a 1 x 1 matrix)."""
    return np.reshape(v, (1, 1)) if np.ndim(v) == 0 else v


def _in_shape_of_a(formula: Callable) -> Callable:
    """``formula``'s cotangent of ``a`` in ``a``'s own shape (1 x 1 back to 0-d)."""
    def in_shape(call: Any, *rest: Any) -> Any:
        da = formula(call, *rest)
        return da if np.ndim(call["a"]) else np.reshape(da, ())

    return in_shape


# --- solve: x = M^-1 b, M = op(A), A the matrix SciPy reads from a ---------------------------

_GENERAL = (None, "gen", "general")
_SYMMETRIC = ("sym", "symmetric")
_HERMITIAN = ("her", "hermitian", "pos", "positive definite")


def _solve_check(call: Any) -> None:
    _refuse_overwrite("solve", call, "overwrite_a", "overwrite_b")
    if call["assume_a"] not in _GENERAL + _SYMMETRIC + _HERMITIAN:
        raise unsupported("scipy.linalg.solve", "assume_a", call["assume_a"],
                          "None, 'gen', 'sym', 'her', 'pos' and their long names")


def _read(a: Any, kind: Any, lower: bool) -> Any:
    """The matrix SciPy solves with, built from ``a`` (its triangle for sym/her/pos)."""
    if kind in _SYMMETRIC:
        strict = np.tril(a, -1) if lower else np.triu(a, 1)
        return (np.tril(a) if lower else np.triu(a)) + np.swapaxes(strict, -1, -2)
    if kind in _HERMITIAN:
        return _from_triangle(a, lower)
    return a


def _read_adjoint(g: Any, kind: Any, lower: bool) -> Any:
    """The adjoint of `_read`: a cotangent of the matrix onto the entries of ``a`` read."""
    if kind in _SYMMETRIC:
        t = np.swapaxes(g, -1, -2)
        return (np.tril(g) + np.tril(t, -1)) if lower else (np.triu(g) + np.triu(t, 1))
    if kind in _HERMITIAN:
        return _to_triangle(g, lower)
    return g


def _solve_matrix(call: Any) -> Any:
    m = _read(_scalar_as_matrix(call["a"]), call["assume_a"], bool(call["lower"]))
    return np.swapaxes(m, -1, -2) if call["transposed"] else m


def _solve_vector(call: Any) -> bool:
    return np.ndim(call["b"]) <= 1  # a 0-d b is a vector of one, as SciPy reads it


def _solve_shared(call: Any, dy: Any) -> Any:
    """``M^-H dy`` as a stack of matrices, shared by both cotangents."""
    return np.linalg.solve(H(call.memo(_solve_matrix)), _as_matrix(dy, _solve_vector(call)))


def _solve_da(call: Any, g: Any) -> Any:
    dm = -g @ H(_as_matrix(call.y, _solve_vector(call)))
    if call["transposed"]:
        dm = np.swapaxes(dm, -1, -2)
    return unbroadcast(_read_adjoint(dm, call["assume_a"], bool(call["lower"])),
                       np.shape(call["a"]))


def _solve_db(call: Any, g: Any) -> Any:
    return unbroadcast(g[..., 0] if _solve_vector(call) else g, np.shape(call["b"]))


def _solve_pushforward(call: Any, da: Any, db: Any) -> Any:
    vector = _solve_vector(call)
    x = _as_matrix(call.y, vector)
    rhs = _as_matrix(np.reshape(dense_tangent(call["b"], db), np.shape(call.y)[:1] if
                                np.ndim(call["b"]) == 0 else np.shape(call["b"])), vector)
    if not isinstance(da, AbstractZero):
        dm = _read(_scalar_as_matrix(da), call["assume_a"], bool(call["lower"]))
        if call["transposed"]:
            dm = np.swapaxes(dm, -1, -2)
        rhs = rhs - dm @ x
    dx = np.linalg.solve(call.memo(_solve_matrix),
                         np.broadcast_to(rhs, np.broadcast_shapes(np.shape(rhs), x.shape)))
    return dx[..., 0] if vector else dx


define(sla.solve, _solve_da, _solve_db, prepare=_solve_shared, pushforward=_solve_pushforward,
       check=_solve_check, refused=(), calls=_through_scipy(sla.solve))


# --- inv, det ------------------------------------------------------------------------------------

def _inv_check(call: Any) -> None:
    _refuse_overwrite("inv", call, "overwrite_a")
    if call["assume_a"] not in _GENERAL:
        raise unsupported("scipy.linalg.inv", "assume_a", call["assume_a"], "None, 'gen'")


define(sla.inv, lambda call, dy: -H(call.y) @ dy @ H(call.y),
       pushforward=lambda call, da: -call.y @ da @ call.y, check=_inv_check, refused=(),
       calls=_through_scipy(sla.inv))


def _pinv_check(call: Any) -> None:
    if call["return_rank"]:
        raise unsupported("scipy.linalg.pinv", "return_rank", True, "False (np.linalg."
                          "matrix_rank gives the rank)")


# The pseudo-inverse at constant rank (numpy.linalg.pinv's formula): a cutoff (atol, rtol) that
# changes the rank near the point is a kink, as in NumPy's.
define(sla.pinv, lambda call, dy: _pinv_gradient(call.a, call.y, dy),
       pushforward=lambda call, da: _pinv_tangent(call.a, call.y, da), check=_pinv_check,
       refused=(), calls=_through_scipy(sla.pinv))


def _adjugate_of(call: Any) -> Any:
    return _adjugate(call.a, call.y)


define(sla.det, lambda call, dy: np.expand_dims(dy, (-2, -1)) * H(call.memo(_adjugate_of)),
       pushforward=lambda call, da: _trace(call.memo(_adjugate_of) @ da),
       check=lambda call: _refuse_overwrite("det", call, "overwrite_a"), refused=(),
       calls=_through_scipy(sla.det))


# --- cholesky: a = L L^H (lower) or U^H U, from the triangle of a that SciPy reads ----------------

def _cholesky_gradient(factor: Any, d_factor: Any, lower: bool) -> Any:
    """The cotangent of the triangle of ``a`` read, from that of its factor (L or U = L^H)."""
    L, dL = (factor, d_factor) if lower else (H(factor), H(d_factor))
    return _to_triangle(cholesky_gradient(L, dL), lower)


def _cholesky_tangent(factor: Any, da: Any, lower: bool) -> Any:
    """The tangent of the factor (L or U = L^H) from that of the triangle of ``a`` read."""
    L = factor if lower else H(factor)
    dL = cholesky_tangent(L, _from_triangle(da, lower))
    return dL if lower else H(dL)


define(sla.cholesky, _in_shape_of_a(lambda call, dy: _cholesky_gradient(call.y, dy,
                                                                          bool(call["lower"]))),
       pushforward=lambda call, da: _cholesky_tangent(call.y, _scalar_as_matrix(da),
                                                      bool(call["lower"])),
       check=lambda call: _refuse_overwrite("cholesky", call, "overwrite_a"), refused=(),
       calls=_through_scipy(sla.cholesky))


# --- eigh: a v = w b v (b = I by default), every eigenpair or a range of them -------------------
#
# With V^H b V = I and K = V^H da V - (V^H db V) diag(w):  dw = Re diag(K), dV = V C with
# C_ij = K_ij / (w_j - w_i) off the diagonal and C_ii = -(V^H db V)_ii / 2 (the normalisation;
# the phase fixed as NumPy's eigh rule fixes it). The pullback is its adjoint: with
# M = diag(dw) + F * (V^H dV), da = V M V^H and db = -V (M diag(w) + diag(Re diag V^H dV)/2) V^H,
# each on the triangle SciPy reads. A range (subset_by_index, subset_by_value) needs every
# eigenpair (dV mixes in all the others): the full problem is solved again, its columns in the
# range replaced by SciPy's own (whose signs the cotangent refers to).

def _eigh_check(call: Any) -> None:
    _refuse_overwrite("eigh", call, "overwrite_a", "overwrite_b")
    if call["type"] != 1:
        raise unsupported("scipy.linalg.eigh", "type", call["type"],
                          "1 (a v = w b v; for b a v = w v or a b v = w v, solve "
                          "cholesky-transformed standard problems)")
    if call["eigvals"] is not None:  # SciPy 1.11's deprecated name of subset_by_index
        raise unsupported("scipy.linalg.eigh", "eigvals", call["eigvals"],
                          "None (write subset_by_index)")


def _eigh_range(call: Any, w_all: Any) -> tuple:
    """The eigenvalues' positions ``lo:hi`` in the full, ascending spectrum."""
    n = np.shape(call.a)[-1]
    count = np.shape(call.y if call["eigvals_only"] else call.y[0])[-1]
    if call["subset_by_index"] is not None:
        lo = int(call["subset_by_index"][0])
    elif call["subset_by_value"] is not None:  # (low, high]: those above low come first
        if np.ndim(w_all) > 1:
            raise NotImplementedError(
                "scipy.linalg.eigh: subset_by_value of a stack of matrices is not supported "
                "in differentiated code (their ranges differ); use subset_by_index.")
        lo = int(np.sum(w_all <= call["subset_by_value"][0]))
    else:
        return 0, n
    return lo, lo + count


def _eigenpairs(call: Any) -> tuple:
    """``(w, V, lo, hi)``: every eigenpair, those of the output at ``lo:hi``."""
    subset = call["subset_by_index"] is not None or call["subset_by_value"] is not None
    if not subset and not call["eigvals_only"]:
        w, V = call.y
        return w, V, 0, np.shape(w)[-1]
    w_all, V_all = sla.eigh(call.a, call["b"], lower=call["lower"])
    lo, hi = _eigh_range(call, w_all)
    if not subset:
        return call.y, V_all, lo, hi
    if call["eigvals_only"]:
        w, V = call.y, V_all[..., lo:hi]
    else:
        w, V = call.y
    return (np.concatenate([w_all[..., :lo], w, w_all[..., hi:]], axis=-1),
            np.concatenate([V_all[..., :lo], V, V_all[..., hi:]], axis=-1), lo, hi)


def _eigh_inner(call: Any, dy: Any) -> tuple:
    """``(M, G)`` of the pullback: M = diag(dw) + F * G with G = V^H dV, every eigenpair's
    cotangent (zero outside the output's range)."""
    w, V, lo, hi = call.memo(_eigenpairs)
    dw, dV = (dy, ZeroTangent()) if call["eigvals_only"] else dy
    widths = [(0, 0)] * (np.ndim(w) - 1) + [(lo, np.shape(w)[-1] - hi)]
    dw = np.pad(dense_tangent(call.y if call["eigvals_only"] else call.y[0], dw), widths)
    inner = _diag(dw).astype(np.result_type(V, w))
    if isinstance(dV, AbstractZero):
        return inner, None
    G = H(V) @ np.pad(dV, widths[:-1] + [(0, 0), widths[-1]])
    return inner + _inverse_gaps(w) * G, G


def _eigh_da(call: Any, dy: Any) -> Any:
    _, V, _, _ = call.memo(_eigenpairs)
    inner, _ = _eigh_inner(call, dy)
    return _to_triangle(V @ inner @ H(V), bool(call["lower"]))


def _eigh_db(call: Any, dy: Any) -> Any:
    w, V, _, _ = call.memo(_eigenpairs)
    inner, G = _eigh_inner(call, dy)
    inner = inner * w[..., None, :]
    if G is not None:
        inner = inner + _diag(np.real(np.diagonal(G, axis1=-2, axis2=-1))) / 2
    return _to_triangle(-(V @ inner @ H(V)), bool(call["lower"]))


def _eigh_pushforward(call: Any, da: Any, db: Any, *options: Any) -> Any:
    w, V, lo, hi = call.memo(_eigenpairs)
    lower = bool(call["lower"])
    K = H(V) @ _from_triangle(da, lower) @ V if not isinstance(da, AbstractZero) else 0.0
    if not isinstance(db, AbstractZero):
        Kb = H(V) @ _from_triangle(db, lower) @ V
        K = K - Kb * w[..., None, :]
    K = K if np.ndim(K) else np.zeros(np.shape(V), np.result_type(V))
    dw = np.real(np.diagonal(K, axis1=-2, axis2=-1))[..., lo:hi]
    if call["eigvals_only"]:
        return dw
    C = (_inverse_gaps(w) * K)[..., lo:hi]
    if not isinstance(db, AbstractZero):
        C = C - _diag(np.real(np.diagonal(Kb, axis1=-2, axis2=-1)))[..., lo:hi] / 2
    return dw, V @ C


define(sla.eigh, _eigh_da, _eigh_db, pushforward=_eigh_pushforward, check=_eigh_check,
       refused=(), calls=_through_scipy(sla.eigh))


# --- svd, svdvals, qr, eig, eigvals: NumPy's formulas, SciPy's options ----------------------------

def _keeping_inputs(f: Any) -> Any:
    """`_through_scipy` with SciPy's ``overwrite_a``/``overwrite_b`` turned off: a permission
    to reuse the inputs' memory (SciPy's own functions pass it for their temporaries, as
    ``subspace_angles`` does to ``svdvals``), which an engine's recorded values must not give."""
    through = _through_scipy(f)
    parameters = inspect.signature(f).parameters

    def keeping_inputs(*args: Any, **kwargs: Any) -> Any:
        bound = inspect.signature(f).bind(*args, **kwargs)
        for name in ("overwrite_a", "overwrite_b"):
            if name in parameters and bound.arguments.get(name):
                bound.arguments[name] = False
        return through(*bound.args, **bound.kwargs)

    keeping_inputs.__name__ = keeping_inputs.__qualname__ = f.__name__
    return keeping_inputs


def _singular_triplets(call: Any) -> tuple:
    """``(U, s, Vh)`` (reduced) of ``a`` when the call returned the singular values only."""
    return tuple(_through_scipy(sla.svd)(call.x, full_matrices=False))


def _svd_da(call: Any, dy: Any) -> Any:
    if call.rule.f.__name__ == "svdvals" or not call["compute_uv"]:
        U, S, Vh = call.memo(_singular_triplets)
        return _svd_gradient(U, S, Vh, ZeroTangent(), dy, ZeroTangent())
    return _svd_gradient(*call.y, *dy)


def _svd_pushforward(call: Any, da: Any) -> Any:
    values_only = call.rule.f.__name__ == "svdvals" or not call["compute_uv"]
    U, S, Vh = call.memo(_singular_triplets) if values_only else call.y
    if values_only:
        k = S.shape[-1]
        dP = H(U[..., :k]) @ da @ H(Vh[..., :k, :])
        return np.real(np.diagonal(dP, axis1=-2, axis2=-1))
    return tuple(_svd_tangent(U, S, Vh, da))


define(sla.svd, _svd_da, pushforward=_svd_pushforward, refused=(),
       calls=_keeping_inputs(sla.svd))
define(sla.svdvals, _svd_da, pushforward=_svd_pushforward, refused=(),
       calls=_keeping_inputs(sla.svdvals))


def _qr_check(call: Any) -> None:
    mode, (m, n) = call["mode"], np.shape(call.x)[-2:]
    if call["pivoting"]:
        raise NotImplementedError(
            "scipy.linalg.qr: pivoting=True is not supported in differentiated code (the "
            "pivots jump as the matrix moves); call qr(a) without pivoting.")
    if mode not in ("economic", "r", "full") or (mode == "full" and m > n):
        raise NotImplementedError(
            f"scipy.linalg.qr: mode={mode!r} is not supported in differentiated code for a "
            f"matrix of shape {np.shape(call.x)}" + (
                " (Q's last m - n columns are any orthonormal completion: no derivative)"
                if mode == "full" else "") + "; use mode='economic' (or 'r').")


def _reduced_qr(call: Any) -> tuple:
    """``(Q, R)``, reduced, and the cotangent of each from the call's (mode 'r': R alone, as
    a 1-tuple, its rows past min(m, n) zeros)."""
    if call["mode"] == "r":
        return tuple(np.linalg.qr(call.x))
    return tuple(call.y)


def _qr_da(call: Any, dy: Any) -> Any:
    Q, R = call.memo(_reduced_qr)
    if call["mode"] == "r":
        dR = dense_tangent(call.y[0], dy[0])[..., :R.shape[-2], :]
        return qr_gradient(call.x, Q, R, ZeroTangent(), dR)
    return qr_gradient(call.x, Q, R, *dy)


def _qr_pushforward(call: Any, da: Any) -> Any:
    Q, R = call.memo(_reduced_qr)
    dQ, dR = qr_tangent(call.x, Q, R, da)
    if call["mode"] == "r":
        rows = call.y[0].shape[-2] - R.shape[-2]  # R's zero rows, for a tall a
        return (np.concatenate([dR, np.zeros(dR.shape[:-2] + (rows, dR.shape[-1]), dR.dtype)],
                               axis=-2) if rows else dR,)
    return dQ, dR


define(sla.qr, _qr_da, pushforward=_qr_pushforward, check=_qr_check, refused=(),
       calls=_keeping_inputs(sla.qr))


def _eig_check(call: Any) -> None:
    name = call.rule.f.__name__
    if call["b"] is not None:
        raise NotImplementedError(
            f"scipy.linalg.{name}: b= (the generalized problem) is not supported in "
            f"differentiated code; solve it as {name}(scipy.linalg.solve(b, a)).")
    for option in ("left", "homogeneous_eigvals"):
        if call[option]:
            raise NotImplementedError(
                f"scipy.linalg.{name}: {option}=True is not supported in differentiated code; "
                f"call {name}(a) (right eigenvectors, plain eigenvalues).")


def _eigenvalues_only(call: Any) -> bool:
    return call.rule.f.__name__ == "eigvals" or not call["right"]


def _right_vectors(call: Any) -> Any:
    """The right eigenvectors LAPACK pairs with the eigenvalues the call returned."""
    return _through_scipy(sla.eig)(call.x)[1]


def _sla_eig_da(call: Any, dy: Any) -> Any:
    if _eigenvalues_only(call):
        return _eig_gradient(call.y, call.memo(_right_vectors), dy, ZeroTangent())
    return _eig_gradient(*call.y, *dy)


def _sla_eig_pushforward(call: Any, da: Any) -> Any:
    if _eigenvalues_only(call):
        V = call.memo(_right_vectors)
        return np.diagonal(np.linalg.solve(V, da @ V), axis1=-2, axis2=-1)
    return tuple(_eig_tangent(*call.y, da))


define(sla.eig, _sla_eig_da, pushforward=_sla_eig_pushforward, check=_eig_check, refused=(),
       calls=_keeping_inputs(sla.eig))
define(sla.eigvals, _sla_eig_da, pushforward=_sla_eig_pushforward, check=_eig_check,
       refused=(), calls=_keeping_inputs(sla.eigvals))


define(sla.lstsq, _lstsq_da, _lstsq_db, pushforward=_lstsq_pushforward, refused=(),
       calls=_keeping_inputs(sla.lstsq))


# --- block_diag ---------------------------------------------------------------------------------

def _blocks(call: Any) -> list:
    """``(rows, columns)`` slices of each argument's block (SciPy reads 0-d and 1-d arguments
    as one row)."""
    slices, row, column = [], 0, 0
    for arg in call.args:
        shape = np.shape(arg)
        rows, columns = (1, shape[0] if shape else 1) if len(shape) < 2 else shape
        slices.append((slice(row, row + rows), slice(column, column + columns)))
        row, column = row + rows, column + columns
    return slices


def _block_diag_cotangent(call: Any, dy: Any, position: int) -> Any:
    rows, columns = call.memo(_blocks)[position]
    return np.reshape(dy[rows, columns], np.shape(call.args[position]))


def _block_diag_pushforward(call: Any, *dargs: Any) -> Any:
    return sla.block_diag(*[np.zeros(np.shape(arg), call.y.dtype)
                            if isinstance(d, AbstractZero) else dense_tangent(arg, d)
                            for arg, d in zip(call.args, dargs)])


define(sla.block_diag, every=_block_diag_cotangent, pushforward=_block_diag_pushforward,
       refused=(), calls=_through_scipy(sla.block_diag))


# --- lu_solve: x = op(A)^-1 b, A = P L U from lu_factor -----------------------------------------

_LU_SOLVE = "scipy.linalg.lu_solve"
_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}
_LU_SOLVE_SIGNATURE = inspect.signature(sla.lu_solve)


def _lu_solve_call(args: tuple, kwargs: dict) -> tuple:
    bound = _LU_SOLVE_SIGNATURE.bind(*args, **kwargs)
    bound.apply_defaults()
    call = bound.arguments
    if call["overwrite_b"]:
        raise ValueError(f"{_LU_SOLVE}: overwrite_b=True is not supported in differentiated "
                         f"code; it may overwrite b in place while other differentiated "
                         f"operations still read it. Leave overwrite_b=False (the default).")
    pair = call["lu_and_piv"]
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise TypeError(f"{_LU_SOLVE}: the first argument must be the pair (lu, piv) that "
                        f"scipy.linalg.lu_factor returns; got {type(pair).__name__}")
    if call["trans"] not in _TRANS:
        raise ValueError(f"{_LU_SOLVE}: trans must be 0, 1, 2; got {call['trans']!r}")
    return call, _TRANS[call["trans"]]


def _permutation(piv: Any, n: int) -> np.ndarray:
    """``perm`` with ``A[perm] = L @ U``, from LAPACK's row swaps ``piv``."""
    perm = np.arange(n)
    for i, p in enumerate(np.asarray(piv)):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


def _lu_parts(lu: Any) -> tuple:
    n = np.shape(lu)[-1]
    return np.tril(lu, -1) + np.eye(n, dtype=np.result_type(lu)), np.triu(lu)


def _op(m: Any, trans: int) -> Any:
    if trans == 0:
        return m
    return np.swapaxes(m, -1, -2) if trans == 1 else H(m)


def _lu_adjoint_solve(pair: tuple, dy: Any, trans: int) -> Any:
    """``op(A)^-H dy``, through ``lu_solve`` (routed: traceable)."""
    if trans == 1:   # (A^T)^-H = conj(A)^-1
        return np.conj(sla.lu_solve(pair, np.conj(dy), trans=0))
    return sla.lu_solve(pair, dy, trans=2 - trans)


@rrule.register(sla.lu_solve)
def _lu_solve_rule(*args: Any, **kwargs: Any):
    """``db = op(A)^-H dy``; ``dlu`` from ``dA = -op^-1(db x^H)`` through ``A = P L U``:
    ``P^T dA = dL U + L dU``, so ``dlu = tril(P^T G U^H, -1) + triu(L^H P^T G)``."""
    call, trans = _lu_solve_call(args, kwargs)
    x = sla.lu_solve(*args, **kwargs)
    pair, b = call["lu_and_piv"], call["b"]
    lu, piv = pair
    vector = np.ndim(b) == 1
    project_lu, project_b, project_x = ProjectTo(lu), ProjectTo(b), ProjectTo(x)

    def lu_solve_pullback(dy: Any) -> tuple:
        dy = unthunk(dy)
        tangents: list = [NoTangent()] * (len(args) + 1)
        if isinstance(dy, AbstractZero):
            return tuple(tangents[:1] + [ZeroTangent()] * min(len(args), 2) + tangents[3:])
        dy = project_x(dy)
        db = Thunk(lambda: _lu_adjoint_solve(pair, dy, trans))

        def lu_cotangent() -> Any:
            g = _op(-_as_matrix(unthunk(db), vector) @ H(_as_matrix(x, vector)), trans)
            L, U = _lu_parts(lu)
            pg = g[_permutation(piv, np.shape(lu)[-1])]   # P^T G
            return project_lu(np.tril(pg @ H(U), -1) + np.triu(H(L) @ pg))

        if args:
            tangents[1] = Tangent(type(pair), {0: Thunk(lu_cotangent)})
        if len(args) > 1:
            tangents[2] = Thunk(lambda: project_b(unthunk(db)))
        return tuple(tangents)

    return x, lu_solve_pullback


@frule.register(sla.lu_solve)
def _lu_solve_frule(tangents: tuple, *args: Any, **kwargs: Any):
    call, trans = _lu_solve_call(args, kwargs)
    x = sla.lu_solve(*args, **kwargs)
    pair, b = call["lu_and_piv"], call["b"]
    lu, piv = pair
    vector = np.ndim(b) == 1
    dpair = unthunk(tangents[1]) if args else ZeroTangent()
    dlu = dpair if isinstance(dpair, AbstractZero) else unthunk(dpair[0])
    db = unthunk(tangents[2]) if len(args) > 1 else ZeroTangent()
    if isinstance(dlu, AbstractZero) and isinstance(db, AbstractZero):
        return x, ZeroTangent()
    rhs = 0 if isinstance(db, AbstractZero) else _as_matrix(np.asarray(db), vector)
    if not isinstance(dlu, AbstractZero):   # dx = op(A)^-1 (db - op(dA) x)
        L, U = _lu_parts(lu)
        dlu = np.asarray(dlu)
        inverse = np.argsort(_permutation(piv, np.shape(lu)[-1]))
        da = (np.tril(dlu, -1) @ U + L @ np.triu(dlu))[inverse]
        rhs = rhs - _op(da, trans) @ _as_matrix(x, vector)
    dx = sla.lu_solve(pair, np.broadcast_to(rhs, np.shape(_as_matrix(x, vector))), trans=trans)
    return x, ProjectTo(x)(dx[..., 0] if vector else dx)



# --- cho_factor: (c, lower), c the Cholesky factor on one triangle and a's own entries on the
# other (LAPACK leaves them there: their derivative is the identity) ------------------------------

def _cho_factor_parts(call: Any) -> tuple:
    lower = bool(call["lower"])
    c = call.y[0]
    return (np.tril(c) if lower else np.triu(c)), lower


def _cho_factor_da(call: Any, dy: Any) -> Any:
    factor, lower = call.memo(_cho_factor_parts)
    dc = dy[0]
    if isinstance(dc, AbstractZero):
        return np.zeros(np.shape(factor), factor.dtype)
    other = np.triu(dc, 1) if lower else np.tril(dc, -1)
    on = np.tril(dc) if lower else np.triu(dc)
    return _cholesky_gradient(factor, on, lower) + other


def _cho_factor_pushforward(call: Any, da: Any) -> tuple:
    factor, lower = call.memo(_cho_factor_parts)
    da = _scalar_as_matrix(da)
    dc = _cholesky_tangent(factor, da, lower) + (np.triu(da, 1) if lower else np.tril(da, -1))
    return dc, NoTangent()


define(sla.cho_factor, _in_shape_of_a(_cho_factor_da), pushforward=_cho_factor_pushforward,
       check=lambda call: _refuse_overwrite("cho_factor", call, "overwrite_a"), refused=(),
       calls=_through_scipy(sla.cho_factor))


# --- lu_factor, lu: A[perm] = L U (square matrices) --------------------------------------------
# With X = L^-1 dA[perm] U^-1: dL = L tril(X, -1), dU = triu(X) U; the adjoint:
# dA[perm] = L^-H (tril(L^H dL, -1) + triu(dU U^H)) U^-H.

def _square(name: str, a: Any) -> None:
    shape = np.shape(a)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise NotImplementedError(f"scipy.linalg.{name}: differentiating needs a square matrix "
                                  f"(shape (n, n)); got shape {shape}.")


def _lu_gradient(L: Any, U: Any, perm: np.ndarray, dL: Any, dU: Any) -> Any:
    inner = 0
    if not isinstance(dL, AbstractZero):
        inner = inner + np.tril(H(L) @ dL, -1)
    if not isinstance(dU, AbstractZero):
        inner = inner + np.triu(dU @ H(U))
    inner = inner + np.zeros(np.shape(L), np.result_type(L, U))
    # L^-H inner U^-H by two triangular solves (2n^3 flops; the factorization: 2n^3/3)
    right = H(triangular_solve(U, H(inner), lower=False))                 # inner U^-H
    permuted = triangular_solve(L, right, lower=True, adjoint=True)       # L^-H ...
    return permuted[np.argsort(perm)]


def _lu_tangent(L: Any, U: Any, perm: np.ndarray, da: Any) -> tuple:
    x = triangular_solve(L, da[perm], lower=True)                          # L^-1 P da
    x = H(triangular_solve(U, H(x), lower=False, adjoint=True))            # ... U^-1
    return L @ np.tril(x, -1), np.triu(x) @ U


def _lu_factor_check(call: Any) -> None:
    _refuse_overwrite("lu_factor", call, "overwrite_a")
    _square("lu_factor", call["a"])


def _lu_factor_parts(call: Any) -> tuple:
    lu, piv = call.y
    L, U = _lu_parts(lu)
    return L, U, _permutation(piv, np.shape(lu)[-1])


def _lu_factor_da(call: Any, dy: Any) -> Any:
    L, U, perm = call.memo(_lu_factor_parts)
    dlu = dy[0]
    if isinstance(dlu, AbstractZero):
        return np.zeros(np.shape(L), L.dtype)
    return _lu_gradient(L, U, perm, np.tril(dlu, -1), np.triu(dlu))


def _lu_factor_pushforward(call: Any, da: Any) -> tuple:
    L, U, perm = call.memo(_lu_factor_parts)
    dL, dU = _lu_tangent(L, U, perm, da)
    return dL + dU, NoTangent()


define(sla.lu_factor, _lu_factor_da, pushforward=_lu_factor_pushforward, check=_lu_factor_check,
       refused=(), calls=_through_scipy(sla.lu_factor))


def _lu_check(call: Any) -> None:
    _refuse_overwrite("lu", call, "overwrite_a")
    _square("lu", call["a"])
    if call["permute_l"] or call["p_indices"]:
        option = "permute_l" if call["permute_l"] else "p_indices"
        raise unsupported("scipy.linalg.lu", option, True, f"{option}=False: the output "
                          f"(P, L, U)")


def _lu_perm(call: Any) -> np.ndarray:
    P = call.y[0]   # a = P L U: row i of P L U is row perm^-1 ...; A[perm] = L U
    return np.argmax(np.asarray(P), axis=0)


def _lu_da(call: Any, dy: Any) -> Any:
    _, L, U = call.y
    return _lu_gradient(L, U, call.memo(_lu_perm), dy[1], dy[2])


def _lu_pushforward(call: Any, da: Any) -> tuple:
    _, L, U = call.y
    dL, dU = _lu_tangent(L, U, call.memo(_lu_perm), da)
    return NoTangent(), dL, dU


define(sla.lu, _lu_da, pushforward=_lu_pushforward, check=_lu_check, refused=(),
       calls=_through_scipy(sla.lu))


# --- solve_sylvester: A X + X B = Q ---------------------------------------------------------------

def _sylvester_shared(call: Any, dy: Any) -> Any:
    """G with A^H G + G B^H = dy: the cotangent of Q, shared."""
    return sla.solve_sylvester(H(call["a"]), H(call["b"]), dy)


define(sla.solve_sylvester, lambda call, g: -g @ H(call.y), lambda call, g: -H(call.y) @ g,
       lambda call, g: g, prepare=_sylvester_shared,
       pushforward=lambda call, da, db, dq: sla.solve_sylvester(
           call["a"], call["b"], dense_tangent(call["q"], dq)
           - (0 if isinstance(da, AbstractZero) else da @ call.y)
           - (0 if isinstance(db, AbstractZero) else call.y @ db)),
       refused=(), calls=_through_scipy(sla.solve_sylvester))


# --- sqrtm: S S = A, so S dS + dS S = dA ----------------------------------------------------------

def _sqrtm_check(call: Any) -> None:
    _square("sqrtm", call.args[0] if call.args else call["A"])


define(sla.sqrtm, lambda call, dy: sla.solve_sylvester(H(call.y), H(call.y), dy),
       pushforward=lambda call, da: sla.solve_sylvester(call.y, call.y, da),
       check=_sqrtm_check, refused=(), calls=_through_scipy(sla.sqrtm))


# --- logm: its Frechet derivative from the block identity
# logm([[A, E], [0, A]]) = [[logm(A), L(A, E)], [0, logm(A)]]; the adjoint is L(A^H, .). -------

def _logm_frechet(a: Any, e: Any) -> Any:
    n = np.shape(a)[-1]
    e = np.broadcast_to(e, np.shape(a))
    dtype = np.result_type(a.dtype, e.dtype, np.float64)
    block = np.concatenate([np.concatenate([a, e], axis=-1),
                            np.concatenate([np.zeros(np.shape(a), dtype), a], axis=-1)], axis=-2)
    return sla.logm(block)[..., :n, n:]


def _logm_check(call: Any) -> None:
    _square("logm", call.args[0] if call.args else call["A"])


define(sla.logm, lambda call, dy: _logm_frechet(H(call.a), dy),
       pushforward=lambda call, da: _logm_frechet(call.a, da), check=_logm_check, refused=(),
       calls=_through_scipy(sla.logm))


# --- solve_banded: A x = b, A stored by diagonals: A[i, j] = ab[u + i - j, j] ---------------------

def _banded_check(call: Any) -> None:
    _refuse_overwrite("solve_banded", call, "overwrite_ab", "overwrite_b")


def _band_rows(call: Any) -> tuple:
    """For each stored entry ``ab[r, j]``, its row ``i = r - u + j`` in A (clipped) and
    whether it lies inside A."""
    l, u = call["l_and_u"]
    rows, n = np.shape(call["ab"])
    i = np.arange(rows)[:, None] - u + np.arange(n)[None, :]
    return np.clip(i, 0, n - 1), (i >= 0) & (i < n), int(l), int(u)


def _banded_transpose(ab: Any, l: int, u: int) -> Any:
    """The banded storage of A^H: ``abH[l + i - j, j] = conj(A[j, i])``."""
    rows, n = np.shape(ab)
    r = np.arange(rows)[:, None]
    column = r - l + np.arange(n)[None, :]
    inside = (column >= 0) & (column < n)
    taken = ab[(l + u - r) * np.ones((1, n), dtype=int), np.clip(column, 0, n - 1)]
    stored = np.where(inside, taken, 0)
    return np.conj(stored) if np.iscomplexobj(ab) else stored


def _banded_shared(call: Any, dy: Any) -> Any:
    l, u = call["l_and_u"]
    return sla.solve_banded((int(u), int(l)), _banded_transpose(call["ab"], int(l), int(u)), dy)


def _banded_dab(call: Any, g: Any) -> Any:
    i, inside, _, _ = call.memo(_band_rows)
    vector = np.ndim(call["b"]) == 1
    gm, xm = _as_matrix(g, vector), _as_matrix(call.y, vector)
    n = np.shape(call["ab"])[1]
    entries = -np.sum(gm[i] * np.conj(xm)[np.arange(n)[None, :]], axis=-1)
    return np.where(inside, entries, 0)


def _banded_pushforward(call: Any, dl_and_u: Any, dab: Any, db: Any) -> Any:
    rhs = np.asarray(dense_tangent(call["b"], db))
    if not isinstance(dab, AbstractZero):
        _, _, l, u = call.memo(_band_rows)
        rows, n = np.shape(call["ab"])
        r = u + np.arange(n)[:, None] - np.arange(n)[None, :]   # dA[i, j] = dab[r, j]
        inside = (r >= 0) & (r < rows)
        da = np.where(inside, dab[np.clip(r, 0, rows - 1), np.arange(n)[None, :]], 0)
        vector = np.ndim(call["b"]) == 1
        product = da @ _as_matrix(call.y, vector)
        rhs = rhs - (product[..., 0] if vector else product)
    return sla.solve_banded(call["l_and_u"], call["ab"], np.broadcast_to(rhs, np.shape(call.y)))


define(sla.solve_banded, None, _banded_dab, lambda call, g: g, prepare=_banded_shared,
       pushforward=_banded_pushforward, check=_banded_check, refused=(),
       calls=_through_scipy(sla.solve_banded))


# --- schur: A = Z T Z^H, T (quasi-)upper triangular -----------------------------------------------
# With K = Z^H dA Z and Omega = Z^H dZ (skew-Hermitian): dT = K - (Omega T - T Omega). Below T's
# block diagonal dT is 0, which fixes Omega there (W) by one small Sylvester equation per
# diagonal block of T (T is block upper triangular: `_below_blocks`); Omega = W - W^H. Omega on the block diagonal is a gauge (the phase of each
# Schur vector, the rotation inside a 2x2 block of the real form): chosen 0, so only
# gauge-invariant functions of (T, Z) have gradients that mean anything, except for real
# output with real eigenvalues, where the form is unique up to signs.

def _schur_check(call: Any) -> None:
    _refuse_overwrite("schur", call, "overwrite_a")
    if call["sort"] is not None:
        raise NotImplementedError(
            "scipy.linalg.schur: sort= is not supported in differentiated code (the order of "
            "the eigenvalues, and sdim, jump where the sorting condition changes). Call "
            "schur(a) and reorder the eigenvalues of T outside the derivative, or use "
            "gauge-invariant functions of the unsorted decomposition.")
    _square("schur", call["a"])


def _schur_state(call: Any) -> tuple:
    """``(T, Z, blocks, below)``: T's diagonal blocks as ``(start, stop)`` and the mask of the
    entries below them. Refuses repeated eigenvalues (no derivative)."""
    T, Z = call.y
    n = np.shape(T)[-1]
    eigenvalues = np.linalg.eigvals(call.a)
    gaps = np.abs(eigenvalues[:, None] - eigenvalues[None, :]) + np.diag(np.full(n, np.inf))
    if n > 1 and bool(np.any(gaps <= 1e-7 * np.maximum(1.0, np.max(np.abs(eigenvalues))))):
        raise ValueError(
            "scipy.linalg.schur: the matrix has repeated eigenvalues (closer than 1e-7 of the "
            "largest); its Schur factors have no derivative there (the invariant subspaces "
            "are not determined).")
    starts = [0] + [i + 1 for i, zero in enumerate(np.diagonal(T, -1) == 0) if zero]
    blocks = list(zip(starts, starts[1:] + [n]))
    block = np.zeros(n, dtype=int)
    for number, (start, stop) in enumerate(blocks):
        block[start:stop] = number
    return T, Z, blocks, block[:, None] > block[None, :]


def _sylvester_block(a: Any, b: Any, r: Any) -> Any:
    """X with ``X a - b X = r``, ``a`` 1x1 or 2x2 (a diagonal block of T)."""
    m = np.shape(b)[-1]
    eye = np.eye(m)
    if np.shape(a)[0] == 1:
        return np.linalg.solve(a[0, 0] * eye - b, r)
    # columns: a11 x1 + a21 x2 - b x1 = r1, a12 x1 + a22 x2 - b x2 = r2
    system = np.concatenate([np.concatenate([a[0, 0] * eye - b, a[1, 0] * eye], axis=1),
                             np.concatenate([a[0, 1] * eye, a[1, 1] * eye - b], axis=1)])
    x = np.linalg.solve(system, np.concatenate([r[:, :1], r[:, 1:]], axis=0))
    return np.concatenate([x[:m], x[m:]], axis=1)


def _below_blocks(T: Any, blocks: list, c: Any, adjoint: bool) -> Any:
    """W, zero on and above T's block diagonal, with ``(W T - T W) = c`` below it; with
    ``adjoint``, V with ``(V T^H - T^H V) = c`` there (the adjoint map, for the pullback).
    One Sylvester solve per diagonal block, column block by column block: left to right
    (right to left for the adjoint), each reading the columns solved before it."""
    n = np.shape(T)[-1]
    dtype = np.result_type(T, c)
    solved: list = []   # column blocks, each (n, width), in solving order
    for start, stop in (reversed(blocks) if adjoint else blocks):
        width = stop - start
        if stop == n:
            solved.append(np.zeros((n, width), dtype))   # no entries below this block
            continue
        rhs = c[stop:, start:stop]
        if solved and not adjoint and start > 0:
            rhs = rhs - np.concatenate(solved, axis=1)[stop:] @ T[:start, start:stop]
        if solved and adjoint:
            later = np.concatenate(solved[::-1], axis=1)[stop:]   # columns stop: of V
            rhs = rhs - later @ H(T[start:stop, stop:])
        if adjoint:
            x = _sylvester_block(H(T[start:stop, start:stop]), H(T[stop:, stop:]), rhs)
        else:
            x = _sylvester_block(T[start:stop, start:stop], T[stop:, stop:], rhs)
        solved.append(np.concatenate([np.zeros((stop, width), dtype), x], axis=0))
    return np.concatenate(solved[::-1] if adjoint else solved, axis=1)


def _schur_pushforward(call: Any, da: Any) -> tuple:
    T, Z, blocks, below = call.memo(_schur_state)
    k = H(Z) @ da @ Z
    omega = _below_blocks(T, blocks, k, adjoint=False)
    omega = omega - H(omega)
    return np.where(below, 0, k - (omega @ T - T @ omega)), Z @ omega


def _schur_da(call: Any, dy: Any) -> Any:
    T, Z, blocks, below = call.memo(_schur_state)
    dT, dZ = dy
    k_bar: Any = np.zeros(np.shape(T), np.result_type(T, Z))
    omega_bar: Any = 0
    if not isinstance(dZ, AbstractZero):
        omega_bar = H(Z) @ dZ
    if not isinstance(dT, AbstractZero):
        k_bar = np.where(below, 0, dT)
        omega_bar = omega_bar + H(T) @ k_bar - k_bar @ H(T)
    if len(blocks) > 1:
        w_bar = np.where(below, omega_bar - H(omega_bar), 0)
        k_bar = k_bar + _below_blocks(T, blocks, w_bar, adjoint=True)
    return Z @ k_bar @ H(Z)


define(sla.schur, _schur_da, pushforward=_schur_pushforward, check=_schur_check, refused=(),
       calls=_through_scipy(sla.schur))
