"""Rules for SciPy's ``scipy.special`` and ``scipy.linalg`` (registered when SciPy is installed).

- Elementwise special functions (ufuncs): one `scalar_rule` line each, the derivative as a
  function of ``(y, *args)``, as in `elementwise`.
- ``logsumexp``, ``softmax``, ``log_softmax``: reductions along ``axis``; holomorphic on complex
  input, so their cotangents take ``conj`` of the derivative, as every holomorphic rule does.
- ``solve_triangular``, ``expm``, ``cho_solve``: for stacks of matrices as SciPy takes them
  (``a`` of shape ``(..., n, n)``; ``b`` a vector ``(n,)`` or a stack of matrices
  ``(..., n, k)``). A matrix that SciPy reads only in one triangle gets its cotangent on that
  triangle.

Options SciPy accepts but a gradient cannot follow (``return_sign=True``, ``overwrite_b=True``)
are refused with an error that names the function and the option.

>>> import numpy as np, scipy.special
>>> from chainrules import rrule
>>> y, pullback = rrule(scipy.special.logsumexp, np.array([0.0, np.log(3.0)]))
>>> pullback(1.0)[1]
array([0.25, 0.75])
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np
import scipy.linalg as sla
import scipy.special as sps

from .._compat import normalize_axis_tuple
from ..core.broadcast import unbroadcast
from ..core.projection import ProjectTo
from ..core.registry import frule, recorded_whole, rrule
from ..core.scalar_rule import scalar_rule
from ..core.tangents import AbstractZero, NoTangent, Tangent, ZeroTangent
from ..core.thunks import Thunk, unthunk

# The functions themselves, taken at import: the rules are registered for (and bind their
# arguments by the signatures of) these. Rules *call* them through their modules
# (``sps.logsumexp(...)``): while a trace runs, chainrules.ad.intercept puts routing wrappers
# there, which call the original on plain arrays and record the call on traced ones, as a
# rule's arguments are when it runs inside an outer trace (second derivatives).
logsumexp, softmax, log_softmax = sps.logsumexp, sps.softmax, sps.log_softmax
solve_triangular, expm, cho_solve = sla.solve_triangular, sla.expm, sla.cho_solve

_SQRT_PI = float(np.sqrt(np.pi))
# The ufunc behind sps.zeta(s, q) (a Python function): it dispatches on traced values, so the
# derivatives of digamma and polygamma, written with it, can be differentiated again.
_hurwitz_zeta = sps._ufuncs._zeta


# --- elementwise special functions: the table ---------------------------------------------------

def _trigamma(x: Any) -> Any:
    """polygamma(1, x), the derivative of digamma; for complex x (SciPy's polygamma is real
    only) by reflection, recurrence and the asymptotic series."""
    if not np.iscomplexobj(x):
        return _hurwitz_zeta(2, x)   # what sps.polygamma(1, x) computes
    z = x if np.asarray(x).dtype == np.complex128 else np.asarray(x).astype(np.complex128)
    reflect = z.real < 0.5  # psi1(z) = pi^2 / sin^2(pi z) - psi1(1 - z)
    w = np.where(reflect, 1 - z, z)
    total = 0
    for _ in range(10):  # psi1(w) = 1/w^2 + psi1(w + 1): move to |w| >= 10.5
        total = total + 1 / (w * w)
        w = w + 1
    # psi1(w) ~ 1/w + 1/(2w^2) + sum_k B_2k / w^(2k+1)
    inverse_square = 1 / (w * w)
    series = 0.0
    for bernoulli in (7 / 6, -691 / 2730, 5 / 66, -1 / 30, 1 / 42, -1 / 30, 1 / 6):
        series = (series + bernoulli) * inverse_square
    total = total + 1 / w + inverse_square / 2 + series / w
    with np.errstate(over="ignore", invalid="ignore"):
        reflected = (np.pi / np.sin(np.pi * z)) ** 2 - total
    return np.where(reflect, reflected, total)


@recorded_whole
def _polygamma(n: Any, x: Any) -> Any:
    """polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1, digamma(x) for n = 0 (as
    SciPy computes it), written with ufuncs that have rules: differentiable to any order.
    ``sps.polygamma`` converts its arguments with ``np.asarray``, so its rules call this."""
    n = np.asarray(n)
    terms = (-1.0) ** (n + 1) * sps.gamma(n + 1.0) * _hurwitz_zeta(np.maximum(n, 1) + 1, x)
    if np.all(n >= 1):
        return terms
    return np.where(n == 0, sps.digamma(x), terms)


def _xlogy_y(y, x, t):
    """d xlogy(x, t)/dt = x / t, and 0 where x == 0 (where xlogy is 0 for every t)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.asarray(x) == 0, 0 * np.asarray(t), np.divide(x, t))


def _log(t):
    """log(t) without NumPy's warning at 0 (d xlogy(x, t)/dx = log(t) is -inf there)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(t)


scalar_rule(sps.gammaln, lambda y, x: sps.digamma(x))     # log|Gamma(x)|' = digamma(x)
scalar_rule(sps.digamma, lambda y, x: _trigamma(x))
scalar_rule(_polygamma, None, lambda y, n, x: _polygamma(n + 1, x))
rrule.register(sps.polygamma)(rrule.lookup(_polygamma)[0])
frule.register(sps.polygamma)(frule.lookup(_polygamma)[0])
# _hurwitz_zeta (d/dq; d/ds refused by name): its rule is in scipy_special_gamma
scalar_rule(sps.erf, lambda y, x: 2 / _SQRT_PI * np.exp(-x * x))
scalar_rule(sps.erfc, lambda y, x: -2 / _SQRT_PI * np.exp(-x * x))
scalar_rule(sps.expit, lambda y, x: y * (1 - y))
scalar_rule(sps.logit, lambda y, x: 1 / (x * (1 - x)))
scalar_rule(sps.xlogy, lambda y, x, t: _log(t), _xlogy_y)


# --- arguments ----------------------------------------------------------------------------------

def _bind(f: Callable, name: str, args: tuple, kwargs: dict) -> dict:
    """Every parameter of ``f`` by name (defaults filled in), as SciPy reads the call."""
    try:
        bound = _SIGNATURES[f].bind(*args, **kwargs)
    except TypeError as error:
        raise TypeError(f"{name}: {error}") from None
    bound.apply_defaults()
    return bound.arguments


def _refuse(name: str, option: str, value: Any, fix: str) -> None:
    raise ValueError(f"{name}: {option}={value!r} is not supported in differentiated code; {fix}")


def _refuse_overwrite_b(name: str, call: dict) -> None:
    if call["overwrite_b"]:
        _refuse(name, "overwrite_b", True, "it may overwrite b in place while other "
                "differentiated operations still read it. Leave overwrite_b=False (the default).")


def _no_tangents(count: int, differentiable: dict) -> list:
    """``[NoTangent() for f, then one per positional argument]``, with ``differentiable``
    (position -> cotangent) filled in."""
    tangents: list = [NoTangent()] * (count + 1)
    for position, tangent in differentiable.items():
        if position < count:
            tangents[position + 1] = tangent
    return tangents


def _reduced_axes(axis: Any, ndim: int) -> tuple:
    return tuple(range(ndim)) if axis is None else normalize_axis_tuple(axis, ndim)


def _keep(value: Any, axes: tuple, keepdims: bool) -> Any:
    """A reduction's output with its reduced axes put back (size 1), to broadcast against
    the input."""
    return np.asarray(value) if keepdims else np.expand_dims(value, axes)


def _conj(x: Any) -> Any:
    return np.conj(x) if np.iscomplexobj(x) else x


# --- logsumexp, softmax, log_softmax ------------------------------------------------------------

_LOGSUMEXP = "scipy.special.logsumexp"


def _logsumexp_call(args: tuple, kwargs: dict) -> dict:
    call = _bind(logsumexp, _LOGSUMEXP, args, kwargs)
    if call["return_sign"]:
        _refuse(_LOGSUMEXP, "return_sign", call["return_sign"],
                "the sign output is not differentiable. Call it with return_sign=False (the "
                "default), with weights b whose weighted sums are positive.")
    return call


def _softmax_weights(a: Any, y: Any, axes: tuple, keepdims: bool) -> np.ndarray:
    """``exp(a - logsumexp)``: softmax along ``axes``; 0 in slices whose sum is 0 (y = -inf)."""
    kept = _keep(y, axes, keepdims)
    with np.errstate(invalid="ignore", over="ignore"):
        weights = np.exp(a - kept)
    empty = np.isinf(np.real(kept)) & (np.real(kept) < 0)  # traceable, unlike np.isneginf
    if np.any(empty):
        weights = np.where(empty, 0, weights)
    return weights


class _LogsumexpPullback:
    """``da = conj(b softmax) dy``, ``db = conj(softmax) dy`` (dy put back over the axes)."""

    __slots__ = ("a", "b", "y", "axes", "keepdims", "count", "project_a", "project_b")

    def __init__(self, a, b, y, axes, keepdims, count, project_a, project_b):
        self.a, self.b, self.y, self.axes, self.keepdims = a, b, y, axes, keepdims
        self.count, self.project_a, self.project_b = count, project_a, project_b

    def __call__(self, dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            zeros = {0: ZeroTangent()} if self.b is None else {0: ZeroTangent(), 2: ZeroTangent()}
            return tuple(_no_tangents(self.count, zeros))
        kept_dy = _keep(dy, self.axes, self.keepdims)
        weights = Thunk(lambda: _conj(_softmax_weights(self.a, self.y, self.axes,
                                                       self.keepdims)) * kept_dy)
        a, b = self.a, self.b
        if b is None:
            return tuple(_no_tangents(self.count, {0: self.project_a(
                unbroadcast(unthunk(weights), np.shape(a)))}))
        da = Thunk(lambda: self.project_a(unbroadcast(_conj(b) * unthunk(weights), np.shape(a))))
        db = Thunk(lambda: self.project_b(unbroadcast(unthunk(weights), np.shape(b))))
        return tuple(_no_tangents(self.count, {0: da, 2: db}))


@rrule.register(logsumexp)
def _logsumexp_rule(*args: Any, **kwargs: Any):
    call = _logsumexp_call(args, kwargs)
    y = sps.logsumexp(*args, **kwargs)
    a, b = np.asarray(call["a"]), call["b"]
    b = None if b is None else np.asarray(b)
    ndim = a.ndim if b is None else max(a.ndim, b.ndim)
    project_b = None if b is None else ProjectTo(call["b"])
    return y, _LogsumexpPullback(a, b, y, _reduced_axes(call["axis"], ndim), call["keepdims"],
                                 len(args), ProjectTo(call["a"]), project_b)


@frule.register(logsumexp)
def _logsumexp_frule(tangents: tuple, *args: Any, **kwargs: Any):
    call = _logsumexp_call(args, kwargs)
    y = sps.logsumexp(*args, **kwargs)
    a, b = np.asarray(call["a"]), call["b"]
    da = _tangent_of(tangents, args, 0)
    db = _tangent_of(tangents, args, 2)
    if isinstance(da, AbstractZero) and (b is None or isinstance(db, AbstractZero)):
        return y, ZeroTangent()
    axes = _reduced_axes(call["axis"], max(a.ndim, np.ndim(b)))
    weights = _softmax_weights(a, y, axes, call["keepdims"])
    change = 0
    if not isinstance(da, AbstractZero):
        change = change + (weights if b is None else weights * b) * da
    if b is not None and not isinstance(db, AbstractZero):
        change = change + weights * db
    dy = np.sum(np.broadcast_to(change, weights.shape), axis=axes, keepdims=call["keepdims"])
    return y, ProjectTo(y)(dy)


def _tangent_of(tangents: tuple, args: tuple, position: int) -> Any:
    """The input tangent of the argument at ``position`` if it was passed positionally
    (arguments passed by keyword get no tangent, as they get no cotangent)."""
    if position < len(args):
        return unthunk(tangents[position + 1])
    return ZeroTangent()


def _normalized(f: Callable, name: str, pullback_of: Callable, pushforward_of: Callable) -> None:
    """Register the rrule and frule of softmax or log_softmax, which normalize ``x`` over
    ``axis``: the cotangent is ``pullback_of(y, dy, axes)``, the tangent
    ``pushforward_of(y, dx, axes)``, both projected."""
    def output_and_axes(args: tuple, kwargs: dict) -> tuple:
        call = _bind(f, name, args, kwargs)
        return getattr(sps, f.__name__)(*args, **kwargs), _reduced_axes(call["axis"], np.ndim(call["x"]))

    def reverse(*args: Any, **kwargs: Any):
        y, axes = output_and_axes(args, kwargs)
        project = ProjectTo(args[0] if args else kwargs["x"])

        def pullback(dy: Any) -> tuple:
            dy = unthunk(dy)
            dx = ZeroTangent() if isinstance(dy, AbstractZero) else \
                project(pullback_of(y, dy, axes))
            return tuple(_no_tangents(len(args), {0: dx}))

        pullback.__qualname__ = pullback.__name__ = f"{f.__name__}_pullback"
        return y, pullback

    def forward(tangents: tuple, *args: Any, **kwargs: Any):
        y, axes = output_and_axes(args, kwargs)
        dx = _tangent_of(tangents, args, 0)
        if isinstance(dx, AbstractZero):
            return y, ZeroTangent()
        return y, ProjectTo(y)(pushforward_of(y, dx, axes))

    rrule.register(f)(reverse)
    frule.register(f)(forward)


def _softmax_pushforward(s: Any, dx: Any, axes: tuple) -> Any:
    """J dx for J = diag(s) - s s^T."""
    return s * (dx - np.sum(s * dx, axis=axes, keepdims=True))


def _log_softmax_pullback(y: Any, dy: Any, axes: tuple) -> Any:
    """J^H dy = dy - conj(s) sum(dy) for J = I - 1 s^T (s = exp(y))."""
    dy = np.broadcast_to(dy, np.shape(y))
    return dy - _conj(np.exp(y)) * np.sum(dy, axis=axes, keepdims=True)


def _log_softmax_pushforward(y: Any, dx: Any, axes: tuple) -> Any:
    """J dx = dx - sum(s dx) for J = I - 1 s^T (s = exp(y))."""
    change = dx - np.sum(np.exp(y) * dx, axis=axes, keepdims=True)
    return np.broadcast_to(change, np.shape(y))


# softmax's J is symmetric: its cotangent conj(J) dy is J's product with conj(s).
_normalized(softmax, "scipy.special.softmax",
            lambda s, dy, axes: _softmax_pushforward(_conj(s), dy, axes), _softmax_pushforward)
_normalized(log_softmax, "scipy.special.log_softmax", _log_softmax_pullback,
            _log_softmax_pushforward)


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
    return _conj(np.swapaxes(m, -1, -2))


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
    call = _bind(solve_triangular, _SOLVE_TRIANGULAR, args, kwargs)
    _refuse_overwrite_b(_SOLVE_TRIANGULAR, call)
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
            return _conj(sla.solve_triangular(a, _conj(dy), trans=0, **options))
        return sla.solve_triangular(a, dy, trans=2 - call["trans"], **options)

    def __call__(self, dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return tuple(_no_tangents(self.count, {0: ZeroTangent(), 1: ZeroTangent()}))
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

        return tuple(_no_tangents(self.count, {0: Thunk(a_cotangent), 1: Thunk(b_cotangent)}))


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
    da = _tangent_of(tangents, args, 0)
    db = _tangent_of(tangents, args, 1)
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
    a = np.asarray(_bind(expm, _EXPM, args, kwargs)["A"])
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
            return tuple(_no_tangents(len(args), {0: ZeroTangent()}))
        return tuple(_no_tangents(len(args), {0: project_a(_frechet(_H(a), dy))}))

    return y, _Projected(ProjectTo(y), expm_pullback)


@frule.register(expm)
def _expm_frule(tangents: tuple, *args: Any, **kwargs: Any):
    a = _expm_matrix(args, kwargs)
    y = sla.expm(*args, **kwargs)
    da = _tangent_of(tangents, args, 0)
    if isinstance(da, AbstractZero):
        return y, ZeroTangent()
    return y, ProjectTo(y)(_frechet(a, np.asarray(da)))


# cho_solve: x = A^-1 b with A = C C^H (lower) or C^H C (upper), C the triangle of c.

_CHO_SOLVE = "scipy.linalg.cho_solve"


def _cho_solve_call(args: tuple, kwargs: dict) -> dict:
    call = _bind(cho_solve, _CHO_SOLVE, args, kwargs)
    _refuse_overwrite_b(_CHO_SOLVE, call)
    c_and_lower = call["c_and_lower"]
    if not isinstance(c_and_lower, (tuple, list)) or len(c_and_lower) != 2:
        raise TypeError(f"{_CHO_SOLVE}: the first argument must be the pair (c, lower) that "
                        f"scipy.linalg.cho_factor returns; got {type(c_and_lower).__name__}")
    return call


def _factor_cotangent(c: np.ndarray, lower: bool, g: np.ndarray) -> np.ndarray:
    """dL/dC on C's triangle, from g = dL/dA for A = C C^H (lower) or C^H C (upper)."""
    s = g + _H(g)
    return _triangle(s @ c if lower else c @ s, lower)


def _factor_tangent(c: np.ndarray, lower: bool, dc: np.ndarray) -> np.ndarray:
    """dA for A = C C^H (lower) or C^H C (upper)."""
    product = dc @ _H(c) if lower else _H(dc) @ c
    return product + _H(product)


class _ChoSolvePullback:
    """``db = A^-1 dy``; ``dA = -db x^H`` carried to the factor's triangle."""

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
            return tuple(_no_tangents(self.count, {0: ZeroTangent(), 1: ZeroTangent()}))
        db = Thunk(lambda: sla.cho_solve((self.c, self.lower), _as_matrix(dy, self.vector),
                                         check_finite=self.call["check_finite"]))

        def c_cotangent() -> Any:
            g = -unthunk(db) @ _H(_as_matrix(self.x, self.vector))
            dc = _factor_cotangent(_triangle(self.c, self.lower), self.lower, g)
            return self.project_c(unbroadcast(dc, self.c.shape))

        def b_cotangent() -> Any:
            return self.project_b(unbroadcast(_from_matrix(unthunk(db), self.vector),
                                              self.b_shape))

        pair = Tangent(self.pair_type, {0: Thunk(c_cotangent)})
        return tuple(_no_tangents(self.count, {0: pair, 1: Thunk(b_cotangent)}))


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
    db = _tangent_of(tangents, args, 1)
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


_SIGNATURES = {f: inspect.signature(f) for f in (
    logsumexp, softmax, log_softmax, solve_triangular, expm, cho_solve)}
