"""Rules for sampled signals: ``convolve``, ``correlate``, ``interp``, ``trapezoid`` and
``unwrap`` (the identity's derivative in ``p``: the multiples ``k`` of the period it adds are
piecewise constant; ``k`` in a traced ``period=``, recorded as `unwrap_by_position`).

Every pullback and pushforward is written in NumPy operations that have rules themselves
(``correlate``, ``pad``, indexing, ``where``), so each is differentiable again (order 2).

- ``convolve(a, v)`` and ``correlate(a, v)``, every mode: the ``'same'`` and ``'valid'``
  outputs are a window of the ``'full'`` one, so the cotangent is padded to the full length
  and pulled back through the full product: ``da = correlate(dy_full, w, 'valid')`` for
  ``y_full = convolve(a, w)`` (``w = conj(v[::-1])`` for ``correlate``).
- ``interp(x, xp, fp, left, right)``: differentiable in all five. Inside ``[xp[0], xp[-1]]``
  the output is ``fp[j] + t (fp[j+1] - fp[j])`` with ``t = (x - xp[j]) / (xp[j+1] - xp[j])``;
  at a breakpoint ``x == xp[j]`` the derivative in ``x`` is the slope of the segment to its
  right (of the last segment at ``xp[-1]``). Outside, the output is ``left`` (``fp[0]`` by
  default) or ``right``. ``fp``'s and ``xp``'s cotangents are sparse (two entries per
  ``x``). ``period=`` is refused by the rule; an engine traces `interp`, NumPy's reduction
  of a periodic problem to this one. ``xp`` must be increasing, as NumPy requires.
- ``trapezoid(y, x, dx, axis)`` (and ``trapz`` where the installed NumPy has it): bilinear in
  ``y`` and the sample spacing (``x`` or ``dx``).

>>> import chainrules as cr
>>> cr.grad(lambda fp: np.interp(0.25, [0.0, 1.0], fp))(np.array([2.0, 6.0]))
array([0.75, 0.25])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.broadcast import unbroadcast
from ...core.dtypes import tangent_dtype
from ...core.registry import positional_form
from ...core.sparse import SparseCotangent
from ...core.tangents import AbstractZero
from ..define import Call, define, normalize_axis_tuple, per_argument, unsupported

__all__ = ["interp"]


def _nonzero(d: Any) -> bool:
    return not isinstance(d, AbstractZero)


def _as_array(value: Any) -> Any:
    """A list tangent (a list of arrays) stacked; anything else unchanged."""
    return np.stack(value) if isinstance(value, list) else value


# --- convolve, correlate -------------------------------------------------------------------------

_CORRELATE = np.correlate  # bound at import: a trace may wrap the namespace's name
_MODES = {"f": "full", "s": "same", "v": "valid", 0: "valid", 1: "same", 2: "full"}


def _mode(call: Call) -> str:
    mode = call["mode"]
    key = mode.lower()[:1] if isinstance(mode, str) else mode
    if key not in _MODES:
        raise unsupported(call.name, "mode", mode, "'full', 'same', 'valid'")
    return _MODES[key]


def _window_start(call: Call, n: int, m: int) -> int:
    """Where the call's output starts in the full-mode output (lengths ``n``, ``m``)."""
    mode = _mode(call)
    if mode == "full":
        return 0
    if mode == "valid":
        return min(n, m) - 1
    if call.rule.f is _CORRELATE and m > n:  # NumPy correlates the longer one, reversed
        return n // 2
    return (min(n, m) - 1) // 2


def _full_cotangent(call: Call, dy: Any) -> Any:
    """``dy`` padded with zeros to the length of the full-mode output."""
    n, m = np.shape(call.args[0])[0], np.shape(call.args[1])[0]
    start = _window_start(call, n, m)
    length = np.shape(dy)[0]
    return np.pad(dy, (start, n + m - 1 - start - length))


def _convolve_a(call: Call, dy: Any) -> Any:
    return np.correlate(_full_cotangent(call, dy), call.args[1], "valid")


def _convolve_v(call: Call, dy: Any) -> Any:
    return np.correlate(_full_cotangent(call, dy), call.args[0], "valid")


def _correlate_a(call: Call, dy: Any) -> Any:
    w = np.conj(np.flip(np.asarray(call.args[1])))
    return np.correlate(_full_cotangent(call, dy), w, "valid")


def _correlate_v(call: Call, dy: Any) -> Any:
    return np.conj(np.flip(np.correlate(_full_cotangent(call, dy), call.args[0], "valid")))


# Both are linear in each argument separately (correlate conjugate-linear in v, whose tangent
# is correlate(a, dv)): the default pushforward sum_i f(..., dargs[i], ...) is exact.
define(np.convolve, _convolve_a, _convolve_v, check=_mode)
define(np.correlate, _correlate_a, _correlate_v, check=_mode)


# --- interp --------------------------------------------------------------------------------------

def _interp_check(call: Call) -> None:
    if call["period"] is not None:
        raise unsupported(call.name, "period", call["period"],
                          "period=None; extend xp and fp over the periods you need")


def _interp_parts(call: Call) -> tuple:
    """The segment of each ``x`` and the pieces of the formulas: ``(j, inside, below, above,
    t, slope)``; ``j`` and the masks are constants, ``t`` and ``slope`` are computed from the
    arguments (traced ones at order 2)."""
    x, xp, fp = call.args[0], np.asarray(call.args[1]), np.asarray(call.args[2])
    count = np.shape(xp)[0]
    below, above = np.less(x, xp[0]), np.greater(x, xp[-1])
    inside = ~(below | above)
    if count == 1:
        j = np.zeros(np.shape(x), np.intp)
        zero = np.zeros(np.shape(x))
        return j, j, inside, below, above, zero, zero
    j = np.clip(np.searchsorted(xp, x, "right") - 1, 0, count - 2)
    lo, hi = xp[j], xp[j + 1]
    width = np.where(inside, hi - lo, 1)
    t = np.where(inside, (x - lo) / width, 0)
    slope = np.where(inside, (fp[j + 1] - fp[j]) / width, 0)
    return j, j + 1, inside, below, above, t, slope


def _sparse(call: Call, position: int, parts: list) -> Any:
    """The cotangent of the 1-D argument ``position``: each ``(index, values)`` of ``parts``
    added at ``index``."""
    argument = call.args[position]
    index = np.concatenate([np.ravel(i) for i, _ in parts])
    values = np.concatenate([np.reshape(v, (-1,)) for _, v in parts])
    dtype = tangent_dtype(np.asarray(argument).dtype) or np.float64
    cotangent = SparseCotangent((index,), values, np.shape(argument), dtype)
    return cotangent if issubclass(type(argument), np.ndarray) else cotangent.unthunk()


def _interp_x(call: Call, dy: Any) -> Any:
    _, _, _, _, _, _, slope = call.memo(_interp_parts)
    return np.conj(slope) * dy


def _interp_xp(call: Call, dy: Any) -> Any:
    lo, hi, inside, _, _, t, slope = call.memo(_interp_parts)
    return _sparse(call, 1, [(lo, np.conj(slope * (t - 1)) * dy),
                             (hi, np.conj(-slope * t) * dy)])


def _interp_fp(call: Call, dy: Any) -> Any:
    lo, hi, inside, below, above, t, _ = call.memo(_interp_parts)
    last = np.shape(call.args[1])[0] - 1
    parts = [(lo, np.where(inside, 1 - t, 0) * dy), (hi, t * dy)]
    if call["left"] is None:
        parts.append((np.zeros(1, np.intp), np.sum(np.where(below, dy, 0))))
    if call["right"] is None:
        parts.append((np.full(1, last, np.intp), np.sum(np.where(above, dy, 0))))
    return _sparse(call, 2, parts)


def _interp_left(call: Call, dy: Any) -> Any:
    return np.sum(np.where(call.memo(_interp_parts)[3], dy, 0))


def _interp_right(call: Call, dy: Any) -> Any:
    return np.sum(np.where(call.memo(_interp_parts)[4], dy, 0))


def _interp_pushforward(call: Call, dx: Any, dxp: Any, dfp: Any, dleft: Any,
                        dright: Any) -> Any:
    lo, hi, inside, below, above, t, slope = call.memo(_interp_parts)
    total: Any = 0
    if _nonzero(dx):
        total = total + slope * dx
    if _nonzero(dxp):
        dxp = _as_array(dxp)
        total = total + slope * ((t - 1) * dxp[lo] - t * dxp[hi])
    if _nonzero(dfp):
        dfp = _as_array(dfp)
        total = total + np.where(inside, (1 - t) * dfp[lo] + t * dfp[hi], 0)
        if call["left"] is None:
            total = total + np.where(below, dfp[0], 0)
        if call["right"] is None:
            total = total + np.where(above, dfp[-1], 0)
    for mask, d in ((below, dleft), (above, dright)):
        if _nonzero(d) and d is not None:
            total = total + np.where(mask, d, 0)
    return total + np.zeros(np.shape(call.y))


define(np.interp, _interp_x, _interp_xp, _interp_fp, _interp_left, _interp_right,
       pushforward=_interp_pushforward, check=_interp_check)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
    """``np.interp`` with ``period``, as NumPy computes it: ``x`` and ``xp`` reduced modulo the
    period, ``xp`` sorted and extended by one point at each end, then the rule's interpolation,
    so an engine traces it. Without ``period``, ``NotImplemented``: an engine records the call
    (``np.interp``'s rule).

    >>> float(interp(7.5, [0.0, 1.0, 2.0], [0.0, 1.0, 4.0], period=3.0))
    2.5
    """
    if period is None:
        return NotImplemented
    if period == 0:
        raise ValueError("period must be a non-zero value")
    period = abs(period)
    xp, fp = np.asarray(xp), np.asarray(fp)
    if np.ndim(xp) != 1 or np.ndim(fp) != 1:
        raise ValueError("Data points must be 1-D sequences")
    if np.shape(xp)[0] != np.shape(fp)[0]:
        raise ValueError("fp and xp are not of the same length")
    xp = np.mod(xp, period)
    order = np.argsort(xp)
    xp, fp = xp[order], fp[order]
    xp = np.concatenate((xp[-1:] - period, xp, xp[:1] + period))
    fp = np.concatenate((fp[-1:], fp, fp[:1]))
    return np.interp(np.mod(x, period), xp, fp)


# --- trapezoid -----------------------------------------------------------------------------------

def _trapezoid_parts(call: Call) -> tuple:
    """``(axis, spacing, averages)``: the integral is ``sum(spacing * averages, axis)``."""
    y = np.asarray(call.args[0])
    axis = normalize_axis_tuple(call["axis"], np.ndim(y))[0]
    later, earlier = [slice(None)] * np.ndim(y), [slice(None)] * np.ndim(y)
    later[axis], earlier[axis] = slice(1, None), slice(None, -1)
    averages = (y[tuple(later)] + y[tuple(earlier)]) / 2
    x = call["x"]
    if x is None:
        spacing = call["dx"]
    elif np.ndim(x) == 1:
        shape = [1] * np.ndim(y)
        shape[axis] = np.shape(x)[0] - 1
        spacing = np.reshape(np.diff(x), shape)
    else:
        spacing = np.diff(x, axis=axis)
    return axis, spacing, averages


def _padded(value: Any, axis: int, before: int, after: int) -> Any:
    widths = [(0, 0)] * np.ndim(value)
    widths[axis] = (before, after)
    return np.pad(value, widths)


def _y_from_intervals(call: Call, per_interval: Any) -> Any:
    """``y``'s cotangent from the cotangents of the intervals' areas ``spacing * average``
    (shared with ``scipy.integrate.cumulative_trapezoid``)."""
    axis, spacing, averages = call.memo(_trapezoid_parts)
    half = np.broadcast_to(np.conj(spacing) * per_interval / 2, np.shape(averages))
    return _padded(half, axis, 1, 0) + _padded(half, axis, 0, 1)


def _x_from_intervals(call: Call, per_interval: Any) -> Any:
    """``x``'s cotangent from the cotangents of the intervals' areas."""
    axis, _, averages = call.memo(_trapezoid_parts)
    by_spacing = np.conj(averages) * per_interval
    x = call["x"]
    if np.ndim(x) == 1:
        by_spacing = np.sum(by_spacing, axis=tuple(i for i in range(np.ndim(by_spacing))
                                                   if i != axis))
        axis = 0
    else:
        shape = list(np.shape(x))
        shape[axis] -= 1
        by_spacing = unbroadcast(by_spacing, tuple(shape))
    return _padded(by_spacing, axis, 1, 0) - _padded(by_spacing, axis, 0, 1)


def _dx_from_intervals(call: Call, per_interval: Any) -> Any:
    """``dx``'s cotangent from the cotangents of the intervals' areas."""
    if call["x"] is not None:  # dx is ignored
        return np.zeros(np.shape(call.args[2]))
    averages = call.memo(_trapezoid_parts)[2]
    return np.sum(np.conj(averages) * per_interval)


def _per_interval(call: Call, dy: Any) -> Any:
    """The cotangent of each interval's area: ``dy`` along the integration axis."""
    return np.expand_dims(dy, call.memo(_trapezoid_parts)[0])


def _trapezoid_y(call: Call, dy: Any) -> Any:
    return _y_from_intervals(call, _per_interval(call, dy))


def _trapezoid_x(call: Call, dy: Any) -> Any:
    return _x_from_intervals(call, _per_interval(call, dy))


def _trapezoid_dx(call: Call, dy: Any) -> Any:
    return _dx_from_intervals(call, _per_interval(call, dy))


# Bilinear in y and the spacing (x or dx): the default pushforward is exact.
for _f in (getattr(np, "trapezoid", None), getattr(np, "trapz", None)):
    if _f is not None:
        define(_f, _trapezoid_y, _trapezoid_x, _trapezoid_dx)


# --- unwrap: p plus piecewise-constant multiples k of the period ---------------------------------

def unwrap_by_position(p: Any, discont: Any = None, axis: int = -1,
                       period: Any = 2 * np.pi) -> Any:
    """``np.unwrap`` taking its keyword-only ``period`` by position: what the engine records
    when ``period`` holds a traced value (`chainrules.core.registry.positional_form`).

    >>> unwrap_by_position(np.array([0.0, 5.0]), None, -1, 4.0)
    array([0., 1.])
    """
    return np.unwrap(p, discont, axis, period=period)


def _periods(call: Call) -> Any:
    """``k``: how many periods unwrap added to each element. It changes only where a jump
    crosses ``discont``, so p's derivative is the identity and the period's is ``k``."""
    return np.round((np.asarray(call.y) - call.a) / call["period"])


positional_form(np.unwrap, unwrap_by_position)
define(np.unwrap, lambda call, dy: dy, None, pushforward=lambda call, dp, *rest: dp)
define(unwrap_by_position, lambda call, dy: dy, None, None,
       lambda call, dy: np.sum(call.memo(_periods) * dy),
       pushforward=per_argument(lambda call, dp: dp, None, None,
                                lambda call, dperiod: call.memo(_periods) * dperiod))
