"""Rules for ``scipy.integrate``: ``quad``, ``quad_vec``, ``trapezoid``,
``cumulative_trapezoid`` and ``simpson``.

- ``quad(func, a, b, args)`` and ``quad_vec(func, a, b, args=...)`` return ``(value, abserr)``.
  The value's derivative (Leibniz): ``f(b)`` in ``b``, ``-f(a)`` in ``a`` (none at an infinite
  limit), and ``∫ ∂f/∂θ dt`` in every parameter ``θ``: the float values in ``args`` and the
  values ``func`` captures (closures, attributes of callable objects; they come back as the
  function's own tangent, as for ``np.vectorize``). That integral is computed by SciPy too:
  one ``quad_vec`` over the interval of the vector-Jacobian product ``t -> J(t)^T dy`` (every
  parameter component at once), each point of it by ``rrule_via_ad(config, func, t, *args)``;
  the forward rule integrates ``t -> J(t) dθ`` (``frule_via_ad``) with the same function. The
  integrals are asked for with the call's ``epsabs``/``epsrel`` (and ``points``). ``abserr``
  gets no tangent. Refused: ``weight=``, ``full_output=``, ``complex_func=``.
- ``trapezoid``: NumPy's ``np.trapezoid`` formulas (rules/numpy/signal.py), registered for SciPy's.
  ``cumulative_trapezoid``: the same formulas, fed with the cotangent of each interval's area
  (the reversed cumulative sum of ``dy``); ``initial`` may be None or 0 (SciPy's own rule).
- ``simpson(y, x, dx=, axis=)``: SciPy's composite rule for uneven spacing (with the
  Cartwright correction of the last interval for an even number of samples, the only method
  since SciPy 1.11). The value is ``sum(W(h) * y)`` with weights ``W`` of the spacings ``h``;
  ``y``'s cotangent is ``W dy``, ``x``'s (and ``dx``'s, where SciPy takes it by position)
  comes from the closed-form ``∂value/∂h``.

Every formula is written in NumPy operations with rules, so each is differentiable again.

>>> import chainrules as cr, scipy.integrate
>>> round(cr.grad(lambda c: scipy.integrate.quad(lambda t: c * t ** 2, 0.0, 1.0)[0])(2.0), 12)
0.333333333333
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import scipy.integrate as _integrate

from ...._compat import signature
from ....core.broadcast import unbroadcast
from ....core.config import frule_via_ad, rrule_via_ad
from ....core.dtypes import tangent_dtype
from ....core.naming import is_function
from ....core.projection import ProjectTo
from ....core.registry import frule, positional_form, rrule
from ....core.structure import leaves, tangent_at, tangent_from_paths
from ....core.tangents import AbstractZero, NoTangent, ZeroTangent
from ....core.thunks import Thunk, unthunk
from ...define import (Call, _output_cotangents, _output_tangent, define,
                      normalize_axis_tuple, per_argument, unsupported)
from ...numpy.signal import (_dx_from_intervals, _trapezoid_dx, _trapezoid_parts, _trapezoid_x,
                     _trapezoid_y, _x_from_intervals, _y_from_intervals)

__all__ = ["simpson_by_position"]

# The functions the rules are registered for, bound at import: while a trace is active the
# module's names are replaced (ad/dispatch/routing.py), and the rules call through the module so that
# an outer trace records the integrals they compute (second derivatives).
QUAD, QUAD_VEC = _integrate.quad, _integrate.quad_vec


# --- quad, quad_vec ------------------------------------------------------------------------------

def _is_float_leaf(value: Any) -> bool:
    if issubclass(type(value), (float, complex)):
        return True
    dtype = getattr(value, "dtype", None)
    return issubclass(type(dtype), np.dtype) and dtype.kind in "fc" and not is_function(value)


class _Parameters:
    """The float leaves of ``(func, args)``: what the integral's value depends on besides
    the limits. Flattens their cotangents into one vector and back."""

    def __init__(self, func: Callable, args: tuple):
        self.root = (func, args)
        found = list(leaves(self.root, _is_float_leaf))
        self.paths = [path for path, _ in found]
        self.shapes = [np.shape(value) for _, value in found]
        self.dtypes = [tangent_dtype(np.result_type(value)) for _, value in found]
        self.projectors = [ProjectTo(value) for _, value in found]
        # What cannot be perturbed gets NoTangent, what can a zero tangent when it is zero.
        self.none = tuple(ZeroTangent() if any(path[0] == part for path in self.paths)
                          else NoTangent() for part in (0, 1))

    def __bool__(self) -> bool:
        return bool(self.paths)

    def flatten(self, function_tangent: Any, args_tangent: Any) -> Any:
        """One vector of the leaves' tangents (zeros where a tangent is zero)."""
        tangent = (function_tangent, args_tangent)
        parts = []
        for path, shape, dtype in zip(self.paths, self.shapes, self.dtypes):
            part = unthunk(tangent_at(tangent, path))
            parts.append(np.zeros(math.prod(shape), dtype) if isinstance(part, AbstractZero)
                         else np.reshape(part, (-1,)))
        return np.concatenate(parts)

    def unflatten(self, vector: Any) -> tuple:
        """``(function's tangent, args' tangent)`` from a vector made by `flatten`."""
        values, offset = {}, 0
        for path, shape, project in zip(self.paths, self.shapes, self.projectors):
            size = math.prod(shape)
            values[path] = project(np.reshape(vector[offset:offset + size], shape))
            offset += size
        tangent = tangent_from_paths(self.root, values)
        return tuple(self.none[part] if isinstance(t := tangent_at(tangent, (part,)),
                                                   AbstractZero) else t for part in (0, 1))


_NOT_GIVEN = object()  # quad's args, when not passed by position


def _args_tuple(args: Any) -> tuple:
    return args if isinstance(args, tuple) else (args,)  # as quad takes them


# The options after the positional (func, a, b[, args]), by position.
_OPTION_NAMES = {"quad": list(signature(QUAD).parameters)[4:],
                 "quad_vec": list(signature(QUAD_VEC).parameters)[3:]}
_REFUSED = {"full_output": "call it without full_output= (the value and abserr come back)",
            "weight": "write the weight into the integrand",
            "complex_func": "integrate the real and imaginary parts in two calls"}


def _options(name: str, rest: tuple, options: dict) -> dict:
    """quad's options by name (positional ones after ``args`` too); refused ones raise."""
    options = {**dict(zip(_OPTION_NAMES[name], rest)), **options}
    for option, how in _REFUSED.items():
        value = options.get(option)
        if value is not None and value is not False and not (
                option != "weight" and value == 0):
            raise NotImplementedError(
                f"scipy.integrate.{name}: {option}={value!r} is not supported in "
                f"differentiated code; {how}.")
    return options


def _gradient_options(options: dict) -> dict:
    """The accuracy options the derivative's integrals are computed with."""
    kept = {key: options[key] for key in ("epsabs", "epsrel", "points", "norm")
            if options.get(key) is not None}
    if "epsabs" not in kept:
        kept["epsabs"] = 1.49e-8  # quad's default; quad_vec's (1e-200) is for its own norm
    return kept


def _is_infinite(limit: Any) -> bool:
    return bool(np.isinf(limit))


def _integral(name: str, func: Callable, a: Any, b: Any, args: tuple, options: dict) -> tuple:
    if name == "quad":
        return _integrate.quad(func, a, b, args, **options)
    return _integrate.quad_vec(func, a, b, args=args, **options)


def _inner(value: Any, weight: Any) -> Any:
    """``Re <value, weight>``-compatible contraction ``sum(conj(value) * weight)``."""
    return np.sum(np.conj(value) * weight)


def _integral_rrule(name: str, config: Any, func: Callable, a: Any, b: Any, args: Any,
                    rest: tuple, options: dict, args_slot: bool = False) -> tuple:
    """``args_slot``: quad's ``args`` was passed by position, so it gets a cotangent (by
    keyword it gets none: an engine passes one holding traced values by position)."""
    options = _options(name, rest, options)
    single = args_slot and not isinstance(args, tuple)  # quad(f, a, b, c) means args=(c,)
    args = () if args is _NOT_GIVEN else _args_tuple(args)
    y = _integral(name, func, a, b, args, options)
    # quad_vec's args= is keyword-only: a constant (traced values there are refused).
    has_args = name == "quad"
    parameters = _Parameters(func, args if has_args else ())
    trailing = (NoTangent(),) * len(rest)
    project_a, project_b = ProjectTo(a), ProjectTo(b)
    infinite_a, infinite_b = _is_infinite(a), _is_infinite(b)
    accuracy = _gradient_options(options)

    def integral_pullback(dy: Any) -> tuple:
        weight = _output_cotangents(dy, y)[0]
        if isinstance(weight, AbstractZero):
            dfunc, dargs = parameters.none
            return (NoTangent(), dfunc, ZeroTangent(), ZeroTangent()) + (dargs,) * args_slot \
                + trailing
        # lazy: the integrand at a limit is computed only for a limit an engine differentiates
        # (a support's end, where a density may divide by zero, is often a constant)
        da = ZeroTangent() if infinite_a else \
            Thunk(lambda: project_a(-_inner(func(a, *args), weight)))
        db = ZeroTangent() if infinite_b else \
            Thunk(lambda: project_b(_inner(func(b, *args), weight)))
        dfunc, dargs = parameters.none
        if parameters:
            def vjp(t: float) -> Any:
                _, pullback = rrule_via_ad(config, func, t, *args)
                cotangents = pullback(weight)
                return parameters.flatten(cotangents[0], tuple(cotangents[2:]) if has_args
                                          else ZeroTangent())

            total = _integrate.quad_vec(vjp, a, b, **accuracy)[0]
            dfunc, dargs = parameters.unflatten(total)
            if single and not isinstance(dargs, AbstractZero):
                dargs = tangent_at(dargs, (0,))
        return (NoTangent(), dfunc, da, db) + (dargs,) * args_slot + trailing

    return y, integral_pullback


def _nonzero_tangent(*tangents: Any) -> bool:
    return any(not isinstance(unthunk(t), AbstractZero) for t in tangents)


def _integral_frule(name: str, config: Any, tangents: tuple, func: Callable, a: Any, b: Any,
                    args: Any, rest: tuple, options: dict) -> tuple:
    options = _options(name, rest, options)
    given = [unthunk(t) for t in tangents[1:5 if name == "quad" else 4]]
    dfunc, da, db, dargs = given + [ZeroTangent()] * (4 - len(given))
    if args is not _NOT_GIVEN and not isinstance(args, tuple):  # quad(f, a, b, c): args=(c,)
        dargs = dargs if isinstance(dargs, AbstractZero) else (dargs,)
    args = () if args is _NOT_GIVEN else _args_tuple(args)
    y = _integral(name, func, a, b, args, options)
    dvalue: Any = 0.0
    nonzero = False
    if not isinstance(db, AbstractZero) and not _is_infinite(b):
        dvalue, nonzero = dvalue + func(b, *args) * db, True
    if not isinstance(da, AbstractZero) and not _is_infinite(a):
        dvalue, nonzero = dvalue - func(a, *args) * da, True
    if name == "quad":
        # J(t) dθ = Re <∇θ f(t), dθ> for the real scalar f: one pullback per point, in
        # traceable operations (differentiable again, under any config).
        parameters = _Parameters(func, args)
        direction = parameters.flatten(dfunc, dargs) if parameters else None
        if direction is not None and _nonzero_tangent(dfunc, dargs):
            def jvp(t: float) -> Any:
                _, pullback = rrule_via_ad(config, func, t, *args)
                cotangents = pullback(1.0)
                gradient = parameters.flatten(cotangents[0], tuple(cotangents[2:]))
                return np.real(np.sum(np.conj(gradient) * direction))

            accuracy = {k: v for k, v in _gradient_options(options).items() if k != "norm"}
            dvalue, nonzero = dvalue + _integrate.quad(jvp, a, b, **accuracy)[0], True
    elif not isinstance(dfunc, AbstractZero):  # quad_vec: its args= is a constant
        def jvp(t: float) -> Any:
            return frule_via_ad(config, (dfunc, ZeroTangent(), *[ZeroTangent()] * len(args)),
                                func, t, *args)[1]

        dvalue, nonzero = dvalue + _integrate.quad_vec(
            jvp, a, b, **_gradient_options(options))[0], True
    if not nonzero:
        return y, ZeroTangent()
    return y, _output_tangent(y, (dvalue, ZeroTangent()))


@rrule.register(QUAD, config=True)
def _quad_rrule(config: Any, func: Callable, a: Any, b: Any, *rest: Any, **options: Any) -> tuple:
    # args by position or by keyword (quad(f, a, b, args=(c,))): told apart here, where
    # Python's binding would not
    args = rest[0] if rest else options.pop("args", _NOT_GIVEN)
    return _integral_rrule("quad", config, func, a, b, args, rest[1:], options,
                           args_slot=bool(rest))


@frule.register(QUAD, config=True)
def _quad_frule(config: Any, tangents: tuple, func: Callable, a: Any, b: Any,
                args: Any = _NOT_GIVEN,
                *rest: Any, **options: Any) -> tuple:
    return _integral_frule("quad", config, tangents, func, a, b, args, rest, options)


@rrule.register(QUAD_VEC, config=True)
def _quad_vec_rrule(config: Any, func: Callable, a: Any, b: Any, *rest: Any, args: Any = (),
                    **options: Any) -> tuple:
    return _integral_rrule("quad_vec", config, func, a, b, args, rest, options)


@frule.register(QUAD_VEC, config=True)
def _quad_vec_frule(config: Any, tangents: tuple, func: Callable, a: Any, b: Any, *rest: Any,
                    args: Any = (), **options: Any) -> tuple:
    return _integral_frule("quad_vec", config, tangents, func, a, b, args, rest, options)



# --- trapezoid, cumulative_trapezoid -------------------------------------------------------------

def _through_module(name: str) -> Callable:
    """``scipy.integrate.<name>`` looked up at each call: inside an outer trace (a rule
    differentiated again) the routed name, which records the call there."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(_integrate, name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


define(_integrate.trapezoid, _trapezoid_y, _trapezoid_x, _trapezoid_dx,
       calls=_through_module("trapezoid"))


def _cumulative_check(call: Call) -> None:
    initial = call["initial"]
    if initial is not None and not (np.ndim(initial) == 0 and initial == 0):
        raise unsupported(call.name, "initial", initial, "None, 0")


def _per_interval_cumulative(call: Call, dy: Any) -> Any:
    """The cotangent of each interval's area: the sum of ``dy`` over the outputs that
    include it (a reversed cumulative sum along the axis)."""
    axis = call.memo(_trapezoid_parts)[0]
    if call["initial"] is not None:  # the first output is the constant 0
        dy = np.delete(dy, 0, axis=axis)
    return np.flip(np.cumsum(np.flip(dy, axis), axis=axis), axis)


define(_integrate.cumulative_trapezoid,
       lambda call, dy: _y_from_intervals(call, _per_interval_cumulative(call, dy)),
       lambda call, dy: _x_from_intervals(call, _per_interval_cumulative(call, dy)),
       lambda call, dy: _dx_from_intervals(call, _per_interval_cumulative(call, dy)),
       check=_cumulative_check, calls=_through_module("cumulative_trapezoid"))


# --- simpson -------------------------------------------------------------------------------------
# Along the last axis (the integration axis moved there), with spacings h (..., N-1): each pair
# of intervals (h0, h1) over samples y0, y1, y2 adds
#     c = (h0 + h1) / 6 * (y0 (2 - h1/h0) + y1 (h0 + h1)**2 / (h0 h1) + y2 (2 - h0/h1)),
# and for an even N the last interval adds alpha y[-1] + beta y[-2] - eta y[-3] (Cartwright),
# with h0, h1 the last two spacings, after pairs over the first N - 1 samples. N == 2: the
# trapezoid. The value is linear in y: sum(W * y); G below is its derivative in h.

def _last(value: Any, start: int, stop: int | None = None, step: int = 1) -> Any:
    return value[..., start:stop:step]


def _pairs(h: Any, y: Any, count: int) -> tuple:
    """``(h0, h1, y0, y1, y2)`` of the pairs of intervals over the first ``count`` samples."""
    return (_last(h, 0, count - 1, 2), _last(h, 1, count - 1, 2), _last(y, 0, count - 2, 2),
            _last(y, 1, count - 1, 2), _last(y, 2, count, 2))


def _interleave(first: Any, second: Any) -> Any:
    """``[first[0], second[0], first[1], second[1], ...]`` along the last axis."""
    first, second = np.broadcast_arrays(first, second)
    pairs = np.stack([first, second], axis=-1)
    return np.reshape(pairs, np.shape(first)[:-1] + (2 * np.shape(first)[-1],))


def _pad_last(value: Any, before: int, after: int) -> Any:
    widths = [(0, 0)] * (np.ndim(value) - 1) + [(before, after)]
    return np.pad(value, widths)


def _correction_terms(h: Any) -> tuple:
    h0, h1 = h[..., -2], h[..., -1]
    s = h0 + h1
    alpha = (2 * h1 ** 2 + 3 * h0 * h1) / (6 * s)
    beta = (h1 ** 2 + 3 * h0 * h1) / (6 * h0)
    eta = h1 ** 3 / (6 * h0 * s)
    return h0, h1, s, alpha, beta, eta


def _simpson_weights(h: Any, n: int) -> Any:
    """``W`` (..., n): the value is ``sum(W * y, -1)``."""
    if n == 2:
        half = h[..., :1] / 2
        return np.concatenate([half, half], axis=-1)
    count = n if n % 2 else n - 1
    h0, h1 = _last(h, 0, count - 1, 2), _last(h, 1, count - 1, 2)
    s = h0 + h1
    left, middle, right = s / 6 * (2 - h1 / h0), s ** 3 / (6 * h0 * h1), s / 6 * (2 - h0 / h1)
    ends = _pad_last(left, 0, 1) + _pad_last(right, 1, 0)
    weights = np.concatenate([_interleave(ends[..., :-1], middle), ends[..., -1:]], axis=-1)
    if n % 2:
        return weights
    _, _, _, alpha, beta, eta = _correction_terms(h)
    last_three = np.stack(np.broadcast_arrays(-eta, beta, alpha), axis=-1)
    return _pad_last(weights, 0, 1) + _pad_last(last_three, n - 3, 0)


def _simpson_slopes(h: Any, y: Any, n: int) -> Any:
    """``G`` (..., n - 1): the value's derivative in each spacing."""
    if n == 2:
        return (y[..., :1] + y[..., 1:]) / 2
    count = n if n % 2 else n - 1
    h0, h1, y0, y1, y2 = _pairs(h, y, count)
    s = h0 + h1
    by_h0 = ((y0 + y2) / 3 + y0 * h1 ** 2 / (6 * h0 ** 2)
             + y1 * s ** 2 * (2 * h0 - h1) / (6 * h0 ** 2 * h1) - y2 * (2 * h0 + h1) / (6 * h1))
    by_h1 = ((y0 + y2) / 3 + y2 * h0 ** 2 / (6 * h1 ** 2)
             + y1 * s ** 2 * (2 * h1 - h0) / (6 * h1 ** 2 * h0) - y0 * (2 * h1 + h0) / (6 * h0))
    slopes = _interleave(by_h0, by_h1)
    if n % 2:
        return slopes
    h0, h1, s, _, _, _ = _correction_terms(h)
    ya, yb, yc = y[..., -1], y[..., -2], y[..., -3]  # alpha's, beta's and eta's samples
    last_h0 = (ya * h1 ** 2 / (6 * s ** 2) - yb * h1 ** 2 / (6 * h0 ** 2)
               + yc * h1 ** 3 * (2 * h0 + h1) / (6 * h0 ** 2 * s ** 2))
    last_h1 = (ya * (2 * h1 ** 2 + 4 * h0 * h1 + 3 * h0 ** 2) / (6 * s ** 2)
               + yb * (h1 / (3 * h0) + 0.5) - yc * h1 ** 2 * (3 * h0 + 2 * h1) / (6 * h0 * s ** 2))
    last_two = np.stack(np.broadcast_arrays(last_h0, last_h1), axis=-1)
    return _pad_last(slopes, 0, 1) + _pad_last(last_two, n - 3, 0)


def _simpson_parts(call: Call) -> tuple:
    """``(axis, n, y, x, h)``: the integration axis, the sample count, ``y`` and ``x`` (None,
    or broadcastable against ``y``) with that axis moved last, and the spacings."""
    y = np.asarray(call.args[0])
    axis = normalize_axis_tuple(call["axis"], np.ndim(y))[0]
    n = np.shape(y)[axis]
    y = np.moveaxis(y, axis, -1)
    x = call["x"]
    if x is None:
        return axis, n, y, None, call["dx"] * np.ones(max(n - 1, 0))
    x = np.asarray(x) if np.ndim(x) == 1 else np.moveaxis(np.asarray(x), axis, -1)
    return axis, n, y, x, np.diff(x, axis=-1)


def _simpson_check(call: Call) -> None:
    even = call.kwargs.get("even")
    if even is not None and even != "simpson":  # SciPy 1.11 to 1.13
        raise unsupported(call.name, "even", even, "'simpson' (the default)")
    if np.shape(call.args[0])[normalize_axis_tuple(call["axis"], np.ndim(call.args[0]))[0]] < 2:
        raise ValueError(f"{call.name}: differentiated code needs at least 2 samples along "
                         f"the integration axis")


def _simpson_y(call: Call, dy: Any) -> Any:
    axis, n, y, _, h = call.memo(_simpson_parts)
    weights = _simpson_weights(h, n)
    return np.moveaxis(np.broadcast_to(weights * np.expand_dims(dy, -1), np.shape(y)), -1, axis)


def _simpson_x(call: Call, dy: Any) -> Any:
    axis, n, y, x, h = call.memo(_simpson_parts)
    by_h = np.conj(_simpson_slopes(h, y, n)) * np.expand_dims(dy, -1)
    by_x = _pad_last(by_h, 1, 0) - _pad_last(by_h, 0, 1)
    if np.ndim(x) == 1:
        return np.reshape(np.sum(by_x, axis=tuple(range(np.ndim(by_x) - 1))), (n,))
    return np.moveaxis(unbroadcast(by_x, np.shape(x)), -1, axis)


def _simpson_dx(call: Call, dy: Any) -> Any:
    axis, n, y, x, h = call.memo(_simpson_parts)
    if x is not None:  # dx is ignored
        return np.zeros(np.shape(call["dx"]))
    return np.sum(np.conj(np.sum(_simpson_slopes(h, y, n), axis=-1)) * dy)


def _simpson_forward_dx(call: Call, ddx: Any) -> Any:
    axis, n, y, x, h = call.memo(_simpson_parts)
    if x is not None:
        return np.zeros(np.shape(call.y))
    return np.sum(_simpson_slopes(h, y, n), axis=-1) * ddx


def _simpson_forward_y(call: Call, dy_in: Any) -> Any:
    axis, n, _, _, h = call.memo(_simpson_parts)
    return np.sum(_simpson_weights(h, n) * np.moveaxis(dy_in, axis, -1), axis=-1)


def _simpson_forward_x(call: Call, dx_in: Any) -> Any:
    axis, n, y, x, h = call.memo(_simpson_parts)
    dx_in = dx_in if np.ndim(x) == 1 else np.moveaxis(dx_in, axis, -1)
    return np.sum(_simpson_slopes(h, y, n) * np.diff(dx_in, axis=-1), axis=-1)


def simpson_by_position(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1,
                        **options: Any) -> Any:
    """``scipy.integrate.simpson`` taking ``x`` and ``dx`` by position: what the engine records
    when SciPy takes them by keyword only (``x`` on SciPy 1.14, ``dx`` from 1.14) and they hold
    traced values (`chainrules.core.registry.positional_form`).

    >>> float(simpson_by_position(np.array([0.0, 1.0, 4.0]), np.array([0.0, 1.0, 2.0])))
    2.6666666666666665
    """
    return _integrate.simpson(y, x=x, dx=dx, axis=axis, **options)


positional_form(_integrate.simpson, simpson_by_position)  # first: it is recorded whole
for _simpson, _calls in ((_integrate.simpson, _through_module("simpson")),
                         (simpson_by_position, simpson_by_position)):
    define(_simpson, _simpson_y, _simpson_x, _simpson_dx, check=_simpson_check,
           pushforward=per_argument(_simpson_forward_y, _simpson_forward_x,
                                    _simpson_forward_dx), calls=_calls)
