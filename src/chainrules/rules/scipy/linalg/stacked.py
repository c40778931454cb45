"""Rules for ``scipy.linalg``'s ``solve_triangular``, ``expm`` and ``cho_solve``, for stacks of
matrices as SciPy takes them (``a`` of shape ``(..., n, n)``; ``b`` a vector ``(n,)`` or a
stack of matrices ``(..., n, k)``), registered when SciPy is installed. A matrix that SciPy
reads only in one triangle gets its cotangent on that triangle.

Options SciPy accepts but a gradient cannot follow (``overwrite_b=True``) are refused with an
error that names the function and the option.

>>> import numpy as np, scipy.linalg
>>> from chainrules import rrule
>>> a = np.array([[2.0, 0.0], [1.0, 4.0]])
>>> x, pullback = rrule(scipy.linalg.solve_triangular, a, np.array([2.0, 5.0]), lower=True)
>>> x
array([1., 1.])
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import scipy.linalg as sla

from ....core.broadcast import unbroadcast
from ....core.projection import ProjectTo
from ....core.registry import frule, rrule
from ....core.tangents import AbstractZero, Tangent, ZeroTangent
from ....core.thunks import Thunk, unthunk
from ..arguments import bind_arguments, conj, no_tangents, refuse_overwrite_b, tangent_of

# The functions themselves, taken at import: the rules are registered for (and bind their
# arguments by the signatures of) these; rules call them through their module.
solve_triangular, expm, cho_solve = sla.solve_triangular, sla.expm, sla.cho_solve


# --- matrices -----------------------------------------------------------------------------------

class _Projected:
    """A pullback that first projects ``dy`` onto the output's tangent space (a real output
    gets the real part of a complex ``dy``), so the linear algebra stays in its dtype."""

    __slots__ = ("project", "pullback")

    def __init__(self, project: ProjectTo, pullback: Callable):
        self.project, self.pullback = project, pullback

    def __call__(self, dy: Any) -> tuple:
        dy = unthunk(dy)
        return self.pullback(dy if isinstance(dy, AbstractZero) else self.project(dy))


def _H(m: np.ndarray) -> np.ndarray:
    """The conjugate transpose of (a stack of) matrices."""
    return conj(np.swapaxes(m, -1, -2))


def _as_matrix(v: Any, vector: bool) -> np.ndarray:
    """A right-hand side (or solution) as a stack of matrices: a vector ``(..., n)`` becomes
    ``(..., n, 1)``."""
    v = np.asarray(v)
    return v[..., None] if vector else v


def _from_matrix(m: np.ndarray, vector: bool) -> np.ndarray:
    return m[..., 0] if vector else m


def _triangle(m: Any, lower: bool, strict: bool = False) -> np.ndarray:
    """The lower or upper triangle of (a stack of) matrices (without the diagonal if strict)."""
    if lower:
        return np.tril(m, -1 if strict else 0)
    return np.triu(m, 1 if strict else 0)


# solve_triangular: x = M^-1 b with M = op(T), T the triangle of a that LAPACK reads.

_SOLVE_TRIANGULAR = "scipy.linalg.solve_triangular"
_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}


def _solve_triangular_call(args: tuple, kwargs: dict) -> dict:
    call = bind_arguments(solve_triangular, _SOLVE_TRIANGULAR, args, kwargs)
    refuse_overwrite_b(_SOLVE_TRIANGULAR, call)
    trans = call["trans"]
    if not issubclass(type(trans), (int, str, np.integer)) or trans not in _TRANS:
        raise ValueError(f"{_SOLVE_TRIANGULAR}: trans must be 0, 1, 2, 'N', 'T' or 'C'; got "
                         f"{trans!r}")
    call["trans"] = _TRANS[trans]
    return call


def _op(m: np.ndarray, trans: int) -> np.ndarray:
    """op(m) for LAPACK's trans: m, its transpose, or its conjugate transpose."""
    if trans == 0:
        return m
    return np.swapaxes(m, -1, -2) if trans == 1 else _H(m)


class _SolveTriangularPullback:
    """``db = M^-H dy``; ``da = op^-1(-db x^H)`` on the triangle that ``a`` is read in."""

    __slots__ = ("a", "x", "call", "count", "project_a", "project_b", "b_shape", "vector")

    def __init__(self, a, x, call, count, project_a, project_b, b_shape, vector):
        self.a, self.x, self.call, self.count = a, x, call, count
        self.project_a, self.project_b = project_a, project_b
        self.b_shape, self.vector = b_shape, vector

    def _solve_adjoint(self, dy: np.ndarray) -> np.ndarray:
        """``M^-H dy`` as a stack of matrices (``M^H`` is ``a^H``, ``conj(a)`` or ``a``)."""
        call, a = self.call, self.a
        options = dict(lower=call["lower"], unit_diagonal=call["unit_diagonal"],
                       check_finite=call["check_finite"])
        dy = _as_matrix(dy, self.vector)
        if call["trans"] == 1:  # M^H = conj(a): conj(a^-1 conj(dy))
            return conj(sla.solve_triangular(a, conj(dy), trans=0, **options))
        return sla.solve_triangular(a, dy, trans=2 - call["trans"], **options)

    def __call__(self, dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return tuple(no_tangents(self.count, {0: ZeroTangent(), 1: ZeroTangent()}))
        db = Thunk(lambda: self._solve_adjoint(dy))
        call, a = self.call, self.a

        def a_cotangent() -> Any:
            dm = -unthunk(db) @ _H(_as_matrix(self.x, self.vector))   # dL/dM
            da = _op(dm, call["trans"])       # M = op(a): op is its own inverse here
            da = _triangle(da, call["lower"], strict=call["unit_diagonal"])
            return self.project_a(unbroadcast(da, a.shape))

        def b_cotangent() -> Any:
            return self.project_b(unbroadcast(_from_matrix(unthunk(db), self.vector),
                                              self.b_shape))

        return tuple(no_tangents(self.count, {0: Thunk(a_cotangent), 1: Thunk(b_cotangent)}))


@rrule.register(solve_triangular)
def _solve_triangular_rule(*args: Any, **kwargs: Any):
    call = _solve_triangular_call(args, kwargs)
    x = sla.solve_triangular(*args, **kwargs)
    a, b = call["a"], call["b"]
    project_x = ProjectTo(x)
    return x, _Projected(project_x, _SolveTriangularPullback(
        np.asarray(a), x, call, len(args), ProjectTo(a), ProjectTo(b), np.shape(b),
        np.ndim(b) == 1))


@frule.register(solve_triangular)
def _solve_triangular_frule(tangents: tuple, *args: Any, **kwargs: Any):
    call = _solve_triangular_call(args, kwargs)
    x = sla.solve_triangular(*args, **kwargs)
    da = tangent_of(tangents, args, 0)
    db = tangent_of(tangents, args, 1)
    if isinstance(da, AbstractZero) and isinstance(db, AbstractZero):
        return x, ZeroTangent()
    vector = np.ndim(call["b"]) == 1
    rhs = 0 if isinstance(db, AbstractZero) else _as_matrix(db, vector)
    if not isinstance(da, AbstractZero):   # dx = M^-1 (db - dM x), dM = op(triangle(da))
        dm = _op(_triangle(np.asarray(da), call["lower"], strict=call["unit_diagonal"]),
                 call["trans"])
        rhs = rhs - dm @ _as_matrix(x, vector)
    dx = sla.solve_triangular(call["a"], np.broadcast_to(rhs, np.shape(_as_matrix(x, vector))),
                              trans=call["trans"], lower=call["lower"],
                              unit_diagonal=call["unit_diagonal"],
                              check_finite=call["check_finite"])
    return x, ProjectTo(x)(_from_matrix(dx, vector))


# expm: the Frechet derivative L(A, E) is the pushforward; its adjoint is L(A^H, .).

_EXPM = "scipy.linalg.expm"


def _expm_matrix(args: tuple, kwargs: dict) -> np.ndarray:
    a = np.asarray(bind_arguments(expm, _EXPM, args, kwargs)["A"])
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{_EXPM}: differentiating needs a square matrix or a stack of them "
                         f"(shape (..., n, n)); got shape {a.shape}. For a scalar, use np.exp.")
    return a


def _frechet(a: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The Frechet derivative of expm at ``a`` in direction ``e``.

    On plain arrays: SciPy's ``expm_frechet``, stacks one by one. On traced ones (a pullback
    differentiated again), from the block identity
    ``expm([[a, e], [0, a]]) = [[expm(a), L(a, e)], [0, expm(a)]]``, which is made of
    operations that have rules (expm itself among them), so it can be differentiated again.
    """
    e = np.broadcast_to(e, np.shape(a))
    if type(a) is np.ndarray and type(e) is np.ndarray:
        if a.ndim == 2:
            return sla.expm_frechet(a, e, compute_expm=False)
        result = np.empty(a.shape, np.result_type(a, e, np.float64))
        for index in np.ndindex(a.shape[:-2]):
            result[index] = sla.expm_frechet(a[index], e[index], compute_expm=False)
        return result
    n = np.shape(a)[-1]
    dtype = np.result_type(a.dtype, e.dtype, np.float64)
    block = np.concatenate([np.concatenate([a, e], axis=-1),
                            np.concatenate([np.zeros(np.shape(a), dtype), a], axis=-1)], axis=-2)
    return sla.expm(block)[..., :n, n:]


@rrule.register(expm)
def _expm_rule(*args: Any, **kwargs: Any):
    a = _expm_matrix(args, kwargs)
    y = sla.expm(*args, **kwargs)
    project_a = ProjectTo(args[0] if args else kwargs["A"])

    def expm_pullback(dy: Any) -> tuple:
        if isinstance(dy, AbstractZero):
            return tuple(no_tangents(len(args), {0: ZeroTangent()}))
        return tuple(no_tangents(len(args), {0: project_a(_frechet(_H(a), dy))}))

    return y, _Projected(ProjectTo(y), expm_pullback)


@frule.register(expm)
def _expm_frule(tangents: tuple, *args: Any, **kwargs: Any):
    a = _expm_matrix(args, kwargs)
    y = sla.expm(*args, **kwargs)
    da = tangent_of(tangents, args, 0)
    if isinstance(da, AbstractZero):
        return y, ZeroTangent()
    return y, ProjectTo(y)(_frechet(a, np.asarray(da)))


# cho_solve: x = A^-1 b with A = C C^H (lower) or C^H C (upper), C the triangle of c.

_CHO_SOLVE = "scipy.linalg.cho_solve"


def _cho_solve_call(args: tuple, kwargs: dict) -> dict:
    call = bind_arguments(cho_solve, _CHO_SOLVE, args, kwargs)
    refuse_overwrite_b(_CHO_SOLVE, call)
    c_and_lower = call["c_and_lower"]
    if not isinstance(c_and_lower, (tuple, list)) or len(c_and_lower) != 2:
        raise TypeError(f"{_CHO_SOLVE}: the first argument must be the pair (c, lower) that "
                        f"scipy.linalg.cho_factor returns; got {type(c_and_lower).__name__}")
    return call


def _factor_cotangent(c: np.ndarray, lower: bool, g: np.ndarray) -> np.ndarray:
    """dL/dC on C's triangle, from g = dL/dA for A = C C^H (lower) or C^H C (upper)."""
    s = g + _H(g)
    return _triangle(s @ c if lower else c @ s, lower)


def _factor_cotangent_of_outer(c: np.ndarray, lower: bool, u: np.ndarray,
                               v: np.ndarray) -> np.ndarray:
    """`_factor_cotangent` for ``g = -u v^H`` (u, v: n x k), kept low-rank:
    ``(g + g^H) C = -(u (C^H v)^H + v (C^H u)^H)`` (lower; ``C (g + g^H)`` likewise for
    upper), 4nk(n + n) flops instead of the dense product's 2n^3 when 2k < n."""
    if 2 * u.shape[-1] >= u.shape[-2]:
        return _factor_cotangent(c, lower, -u @ _H(v))
    if lower:
        product = u @ _H(_H(c) @ v) + v @ _H(_H(c) @ u)
    else:
        product = (c @ u) @ _H(v) + (c @ v) @ _H(u)
    return _triangle(-product, lower)


def _factor_tangent(c: np.ndarray, lower: bool, dc: np.ndarray) -> np.ndarray:
    """dA for A = C C^H (lower) or C^H C (upper)."""
    product = dc @ _H(c) if lower else _H(dc) @ c
    return product + _H(product)


class _ChoSolvePullback:
    """``db = A^-1 dy``; ``dA = -db x^H`` carried to the factor's triangle.

    Cost, for ``b`` with k columns (n x n factor): ``db`` is one cho_solve (2n^2 k flops, as the
    forward); the factor's cotangent is four products of n x k blocks (8n^2 k) when 2k < n,
    never the dense n x n product of the rank-k ``dA`` (2n^3)."""

    __slots__ = ("c", "lower", "x", "call", "count", "project_c", "pair_type", "project_b",
                 "b_shape", "vector")

    def __init__(self, c, lower, x, call, count, project_c, pair_type, project_b, b_shape,
                 vector):
        self.c, self.lower, self.x, self.call, self.count = c, lower, x, call, count
        self.project_c, self.pair_type, self.project_b = project_c, pair_type, project_b
        self.b_shape, self.vector = b_shape, vector

    def __call__(self, dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return tuple(no_tangents(self.count, {0: ZeroTangent(), 1: ZeroTangent()}))
        db = Thunk(lambda: sla.cho_solve((self.c, self.lower), _as_matrix(dy, self.vector),
                                         check_finite=self.call["check_finite"]))

        def c_cotangent() -> Any:
            # dA = -db x^H: rank k (the columns of b), never formed densely when k is small
            dc = _factor_cotangent_of_outer(_triangle(self.c, self.lower), self.lower,
                                            unthunk(db), _as_matrix(self.x, self.vector))
            return self.project_c(unbroadcast(dc, self.c.shape))

        def b_cotangent() -> Any:
            return self.project_b(unbroadcast(_from_matrix(unthunk(db), self.vector),
                                              self.b_shape))

        pair = Tangent(self.pair_type, {0: Thunk(c_cotangent)})
        return tuple(no_tangents(self.count, {0: pair, 1: Thunk(b_cotangent)}))


@rrule.register(cho_solve)
def _cho_solve_rule(*args: Any, **kwargs: Any):
    call = _cho_solve_call(args, kwargs)
    x = sla.cho_solve(*args, **kwargs)
    c, lower = call["c_and_lower"]
    b = call["b"]
    return x, _Projected(ProjectTo(x), _ChoSolvePullback(
        np.asarray(c), bool(lower), x, call, len(args), ProjectTo(c),
        type(call["c_and_lower"]), ProjectTo(b), np.shape(b), np.ndim(b) == 1))


def _pair_tangent(t: Any) -> Any:
    """The tangent of ``c`` inside the tangent of the pair ``(c, lower)``."""
    t = unthunk(t)
    if isinstance(t, AbstractZero):
        return t
    if isinstance(t, Tangent):
        return unthunk(t[0])
    return unthunk(t[0])   # a plain tuple or list of tangents


@frule.register(cho_solve)
def _cho_solve_frule(tangents: tuple, *args: Any, **kwargs: Any):
    call = _cho_solve_call(args, kwargs)
    x = sla.cho_solve(*args, **kwargs)
    c, lower = call["c_and_lower"]
    dc = _pair_tangent(tangents[1]) if args else ZeroTangent()
    db = tangent_of(tangents, args, 1)
    if isinstance(dc, AbstractZero) and isinstance(db, AbstractZero):
        return x, ZeroTangent()
    vector = np.ndim(call["b"]) == 1
    rhs = 0 if isinstance(db, AbstractZero) else _as_matrix(db, vector)
    if not isinstance(dc, AbstractZero):   # dx = A^-1 (db - dA x)
        da = _factor_tangent(_triangle(np.asarray(c), lower),
                             bool(lower), _triangle(np.asarray(dc), lower))
        rhs = rhs - da @ _as_matrix(x, vector)
    dx = sla.cho_solve((c, lower), np.broadcast_to(rhs, np.shape(_as_matrix(x, vector))),
                       check_finite=call["check_finite"])
    return x, ProjectTo(x)(_from_matrix(dx, vector))
