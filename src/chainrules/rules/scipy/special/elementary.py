"""Rules for ``scipy.special``'s elementary functions: the log-gamma family (``gammaln``,
``digamma``, ``polygamma``), ``erf``, ``erfc``, ``expit``, ``logit``, ``xlogy``, and the
reductions ``logsumexp``, ``softmax``, ``log_softmax`` (registered when SciPy is installed).

- Elementwise functions (ufuncs): one `scalar_rule` line each, the derivative as a function of
  ``(y, *args)``, as in `chainrules.rules.numpy.elementwise`.
- ``logsumexp``, ``softmax``, ``log_softmax``: reductions along ``axis``; holomorphic on complex
  input, so their cotangents take ``conj`` of the derivative, as every holomorphic rule does.

``logsumexp(..., return_sign=True)`` returns ``log|s|`` and the sign (the phase, for complex
``s``) of the sum ``s``: differentiable where ``s != 0``, the sign of a real sum constant.

>>> import numpy as np, scipy.special
>>> from chainrules import rrule
>>> y, pullback = rrule(scipy.special.logsumexp, np.array([0.0, np.log(3.0)]))
>>> pullback(1.0)[1]
array([0.25, 0.75])
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import scipy.special as sps

from ...._compat import normalize_axis_tuple
from ....core.broadcast import unbroadcast
from ....core.projection import ProjectTo
from ....core.registry import frule, recorded_whole, rrule
from ....core.scalar_rule import scalar_rule
from ....core.tangents import AbstractZero, Tangent, ZeroTangent
from ....core.thunks import Thunk, unthunk
from ..arguments import bind_arguments, conj, no_tangents, tangent_of

# The functions themselves, taken at import: the rules are registered for (and bind their
# arguments by the signatures of) these. Rules *call* them through their modules
# (``sps.logsumexp(...)``): while a trace runs, the engine puts routing wrappers
# there, which call the original on plain arrays and record the call on traced ones, as a
# rule's arguments are when it runs inside an outer trace (second derivatives).
logsumexp, softmax, log_softmax = sps.logsumexp, sps.softmax, sps.log_softmax

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


def _reduced_axes(axis: Any, ndim: int) -> tuple:
    return tuple(range(ndim)) if axis is None else normalize_axis_tuple(axis, ndim)


def _keep(value: Any, axes: tuple, keepdims: bool) -> Any:
    """A reduction's output with its reduced axes put back (size 1), to broadcast against
    the input."""
    return np.asarray(value) if keepdims else np.expand_dims(value, axes)


# --- logsumexp, softmax, log_softmax ------------------------------------------------------------

_LOGSUMEXP = "scipy.special.logsumexp"


def _logsumexp_call(args: tuple, kwargs: dict) -> dict:
    return bind_arguments(logsumexp, _LOGSUMEXP, args, kwargs)


def _softmax_weights(a: Any, y: Any, axes: tuple, keepdims: bool) -> np.ndarray:
    """``exp(a - logsumexp)``: softmax along ``axes``; 0 in slices whose sum is 0 (y = -inf)."""
    kept = _keep(y, axes, keepdims)
    with np.errstate(invalid="ignore", over="ignore"):
        weights = np.exp(a - kept)
    empty = np.isinf(np.real(kept)) & (np.real(kept) < 0)  # traceable, unlike np.isneginf
    if np.any(empty):
        weights = np.where(empty, 0, weights)
    return weights


class _Logsumexp:
    """SciPy's ``logsumexp`` at a call: ``s = sum(b exp(a))`` along ``axes``, its output ``y``
    (``log s``, or ``log|s|`` with ``return_sign=True``, then with the phase ``sign``).

    The derivatives, with ``w = exp(a - y) / sign`` (the weights of ``ds / s``): ``da`` is
    ``conj(b w) g`` and ``db`` is ``conj(w) g``, for ``g = dy`` (holomorphic ``log s``), and
    ``g = dy - i Im(conj(dsign) sign)`` for ``log|s|`` and the phase of a complex ``s``
    (``d log|s| = Re(ds/s)``, ``dsign = i sign Im(ds/s)``); a real ``s``'s sign is constant."""

    def __init__(self, args: tuple, kwargs: dict):
        call = _logsumexp_call(args, kwargs)
        self.output = sps.logsumexp(*args, **kwargs)
        self.a = np.asarray(call["a"])
        self.b = None if call["b"] is None else np.asarray(call["b"])
        ndim = self.a.ndim if self.b is None else max(self.a.ndim, self.b.ndim)
        self.axes, self.keepdims = _reduced_axes(call["axis"], ndim), call["keepdims"]
        self.signed = bool(call["return_sign"])
        self.y, self.sign = self.output if self.signed else (self.output, None)
        # log|s| of a complex s (SciPy 1.11 returned the complex log and a sign of 1 instead)
        self.phase = self.signed and np.iscomplexobj(self.sign) and not np.iscomplexobj(self.y)
        self.count = len(args)
        self.project_a = ProjectTo(call["a"])
        self.project_b = None if call["b"] is None else ProjectTo(call["b"])

    def weights(self) -> Any:
        """``exp(a - y) / sign``, put back over the reduced axes (0 where ``s = 0``)."""
        weights = _softmax_weights(self.a, self.y, self.axes, self.keepdims)
        if not self.signed:
            return weights
        sign = _keep(self.sign, self.axes, self.keepdims)
        return weights / np.where(sign == 0, 1, sign)

    def gradient_seed(self, dy: Any) -> Any:
        """``g``, from the output's cotangent: ``dy``, or ``(dy, dsign)``."""
        if not self.signed:
            return dy
        d_y, d_sign = unthunk(dy[0]), unthunk(dy[1])
        d_y = 0 * np.real(self.y) if isinstance(d_y, AbstractZero) else ProjectTo(self.y)(d_y)
        if self.phase and not isinstance(d_sign, AbstractZero):
            return d_y - 1j * np.imag(np.conj(d_sign) * self.sign)
        return d_y

    def pullback(self, dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero) or (self.signed and all(
                isinstance(unthunk(part), AbstractZero) for part in (dy[0], dy[1]))):
            zeros = {0: ZeroTangent()} if self.b is None else {0: ZeroTangent(), 2: ZeroTangent()}
            return tuple(no_tangents(self.count, zeros))
        kept = _keep(self.gradient_seed(dy), self.axes, self.keepdims)
        weighted = Thunk(lambda: conj(self.weights()) * kept)
        a, b = self.a, self.b
        if b is None:
            return tuple(no_tangents(self.count, {0: self.project_a(
                unbroadcast(unthunk(weighted), np.shape(a)))}))
        da = Thunk(lambda: self.project_a(unbroadcast(conj(b) * unthunk(weighted), np.shape(a))))
        db = Thunk(lambda: self.project_b(unbroadcast(unthunk(weighted), np.shape(b))))
        return tuple(no_tangents(self.count, {0: da, 2: db}))

    def pushforward(self, da: Any, db: Any) -> Any:
        """The output's tangent: ``tau = sum(w (b da + db))`` is ``ds / s``; ``dy = tau``
        (``Re tau`` for ``log|s|``), ``dsign = i sign Im tau`` for a complex phase."""
        weights = self.weights()
        change = 0
        if not isinstance(da, AbstractZero):
            change = change + (weights if self.b is None else weights * self.b) * da
        if self.b is not None and not isinstance(db, AbstractZero):
            change = change + weights * db
        tau = np.sum(np.broadcast_to(change, weights.shape), axis=self.axes,
                     keepdims=self.keepdims)
        if not self.signed:
            return ProjectTo(self.y)(tau)
        d_sign = 1j * self.sign * np.imag(tau) if self.phase else ZeroTangent()
        return Tangent(tuple, {0: ProjectTo(self.y)(tau), 1: d_sign})


@rrule.register(logsumexp)
def _logsumexp_rule(*args: Any, **kwargs: Any):
    call = _Logsumexp(args, kwargs)
    return call.output, call.pullback


@frule.register(logsumexp)
def _logsumexp_frule(tangents: tuple, *args: Any, **kwargs: Any):
    call = _Logsumexp(args, kwargs)
    da = tangent_of(tangents, args, 0)
    db = tangent_of(tangents, args, 2)
    if isinstance(da, AbstractZero) and (call.b is None or isinstance(db, AbstractZero)):
        return call.output, ZeroTangent()
    return call.output, call.pushforward(da, db)


def _normalized(f: Callable, name: str, pullback_of: Callable, pushforward_of: Callable) -> None:
    """Register the rrule and frule of softmax or log_softmax, which normalize ``x`` over
    ``axis``: the cotangent is ``pullback_of(y, dy, axes)``, the tangent
    ``pushforward_of(y, dx, axes)``, both projected."""
    def output_and_axes(args: tuple, kwargs: dict) -> tuple:
        call = bind_arguments(f, name, args, kwargs)
        return getattr(sps, f.__name__)(*args, **kwargs), _reduced_axes(call["axis"], np.ndim(call["x"]))

    def reverse(*args: Any, **kwargs: Any):
        y, axes = output_and_axes(args, kwargs)
        project = ProjectTo(args[0] if args else kwargs["x"])

        def pullback(dy: Any) -> tuple:
            dy = unthunk(dy)
            dx = ZeroTangent() if isinstance(dy, AbstractZero) else \
                project(pullback_of(y, dy, axes))
            return tuple(no_tangents(len(args), {0: dx}))

        pullback.__qualname__ = pullback.__name__ = f"{f.__name__}_pullback"
        return y, pullback

    def forward(tangents: tuple, *args: Any, **kwargs: Any):
        y, axes = output_and_axes(args, kwargs)
        dx = tangent_of(tangents, args, 0)
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
    return dy - conj(np.exp(y)) * np.sum(dy, axis=axes, keepdims=True)


def _log_softmax_pushforward(y: Any, dx: Any, axes: tuple) -> Any:
    """J dx = dx - sum(s dx) for J = I - 1 s^T (s = exp(y))."""
    change = dx - np.sum(np.exp(y) * dx, axis=axes, keepdims=True)
    return np.broadcast_to(change, np.shape(y))


# softmax's J is symmetric: its cotangent conj(J) dy is J's product with conj(s).
_normalized(softmax, "scipy.special.softmax",
            lambda s, dy, axes: _softmax_pushforward(conj(s), dy, axes), _softmax_pushforward)
_normalized(log_softmax, "scipy.special.log_softmax", _log_softmax_pullback,
            _log_softmax_pushforward)
