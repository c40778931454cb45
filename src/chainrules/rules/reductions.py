"""Rules for reductions: sums, means, products, extrema, moments, norms, cumulative ops, sort.

Each rule is a pair of formulas on a `Call` (see `_array_rules`): ``back(call, dy)``, the
cotangent of the array argument, and ``forward(call, dx)``, the output tangent. ``call.axes``
lines the output back up with the input (``axis`` as int, tuple, None or negative, and
``keepdims``). Holomorphic reductions take ``conj`` of their partials in reverse mode;
real-valued ones (moments, norms) are written with their gradient ``g = dL/dRe + i dL/dIm``,
giving ``back = g * Re(dy)`` and ``forward = sum(Re(conj(g) * dx))``.

Ties: ``max``/``min`` (and ``ptp``, and the inf-norms) split the cotangent evenly between the
elements that attain the extremum.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.projection import NO_TANGENT_PROJECTOR, ProjectTo
from ..core.registry import frule, rrule
from ..core.tangents import AbstractZero, NoTangent, ZeroTangent
from ..core.thunks import Thunk, unthunk
from ._array_rules import (Call, Parameters, dense_tangent, diagonal_embed, has_tangent,
                           normalize_axis_tuple, project_onto, register, spread, unsupported)

_REDUCTION_REFUSES = ("out", "where", "initial")


# --- sum, mean -----------------------------------------------------------------------------------

def _sum_back(call: Call, dy: Any) -> Any:
    return spread(call, dy)


def _mean_back(call: Call, dy: Any) -> Any:
    return spread(call, dy, divide_by=call.axes.count)


register(np.sum, _sum_back, refuse_options=_REDUCTION_REFUSES)
register(np.mean, _mean_back, refuse_options=_REDUCTION_REFUSES)


# --- products ------------------------------------------------------------------------------------

def _products_of_others(a: np.ndarray, axes: tuple) -> np.ndarray:
    """For each element, the product of the other elements of its slice along ``axes``.

    Built from exclusive cumulative products from the left and from the right, without any
    division, so it is exact with one zero in a slice (the zero's partial is the product of
    the rest) and with several (every partial is zero).
    """
    if not axes or a.size == 0:
        return np.ones_like(a)
    last = tuple(range(a.ndim - len(axes), a.ndim))
    moved = np.moveaxis(a, axes, last)
    flat = moved.reshape(moved.shape[:a.ndim - len(axes)] + (-1,))
    ones = np.ones(flat.shape[:-1] + (1,), a.dtype)
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return np.moveaxis((left * right).reshape(moved.shape), last, axes)


def _prod_back(call: Call, dy: Any) -> Any:
    return np.conj(_products_of_others(call.a, call.axes.axes)) * call.axes.keep(dy)


def _prod_forward(call: Call, dx: Any) -> Any:
    return call.axes.reduce(_products_of_others(call.a, call.axes.axes) * dx)


register(np.prod, _prod_back, _prod_forward, refuse_options=_REDUCTION_REFUSES)


# --- extrema: the cotangent goes to the elements that attain the extremum, split evenly ---------

def _extremum_weights(call: Call, extremum: Any) -> np.ndarray:
    """1/k at each of the k elements of a slice equal to its ``extremum`` (NaN matches NaN, as
    ``max`` propagates it), 0 elsewhere."""
    a, axes = call.a, call.axes
    kept = axes.keep(extremum)
    with np.errstate(invalid="ignore"):
        hits = (a == kept) | (np.isnan(a) & np.isnan(kept))
    return hits / np.sum(hits, axis=axes.axes, keepdims=True)


def _extremum_rule(f: Any) -> None:
    def back(call: Call, dy: Any) -> Any:
        return _extremum_weights(call, call.y) * call.axes.keep(dy)

    def forward(call: Call, dx: Any) -> Any:
        return call.axes.reduce(_extremum_weights(call, call.y) * dx)

    register(f, back, forward, refuse_options=_REDUCTION_REFUSES)


for _f in (np.max, np.min, np.amax, np.amin, np.nanmax, np.nanmin):
    _extremum_rule(_f)


def _ptp_weights(call: Call) -> np.ndarray:
    axis = call.axes.axes
    return (_extremum_weights(call, np.max(call.a, axis=axis))
            - _extremum_weights(call, np.min(call.a, axis=axis)))


register(np.ptp, lambda call, dy: _ptp_weights(call) * call.axes.keep(dy),
         lambda call, dx: call.axes.reduce(_ptp_weights(call) * dx))


# --- real-valued reductions, by their gradient g: back = g Re(dy), forward = sum Re(conj(g) dx) --

def _real_valued_rule(f: Any, gradient: Any, **options: Any) -> None:
    def back(call: Call, dy: Any) -> Any:
        return gradient(call) * call.axes.keep(np.real(dy))

    def forward(call: Call, dx: Any) -> Any:
        return call.axes.reduce(np.real(np.conj(gradient(call)) * dx))

    register(f, back, forward, **options)


def _ddof(options: dict) -> float:
    """``ddof``, or its array-API name ``correction``."""
    if options.get("correction") is not None:
        return options["correction"]
    return options.get("ddof") or 0


def _variance_gradient(call: Call, ignore_nan: bool) -> np.ndarray:
    """The gradient of the variance: ``2 (x - mean) / (N - ddof)`` (0 at ignored NaNs)."""
    a, axes = call.a, call.axes.axes
    ddof = _ddof(call.options)
    if ignore_nan:
        present = ~np.isnan(a)
        count = np.sum(present, axis=axes, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.sum(np.where(present, a, 0), axis=axes, keepdims=True) / count
            return np.where(present, 2 * (a - mean) / (count - ddof), 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 2 * (a - np.mean(a, axis=axes, keepdims=True)) / (call.axes.count - ddof)


def _std_gradient(call: Call, ignore_nan: bool) -> np.ndarray:
    """d sqrt(var) = d var / (2 std); 0 where std is 0 (constant data: a kink, like |x| at 0)."""
    std = call.axes.keep(call.y)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(std == 0, 0, _variance_gradient(call, ignore_nan) / (2 * std))


_MOMENT_REFUSES = ("out", "where", "mean")
_real_valued_rule(np.var, lambda call: _variance_gradient(call, False),
                  refuse_options=_MOMENT_REFUSES)
_real_valued_rule(np.nanvar, lambda call: _variance_gradient(call, True),
                  refuse_options=_MOMENT_REFUSES)
_real_valued_rule(np.std, lambda call: _std_gradient(call, False),
                  refuse_options=_MOMENT_REFUSES)
_real_valued_rule(np.nanstd, lambda call: _std_gradient(call, True),
                  refuse_options=_MOMENT_REFUSES)


# --- NaN-ignoring sums, means and products: NaNs get a zero cotangent ---------------------------

def _present(call: Call) -> np.ndarray:
    return ~np.isnan(call.a)


def _nanmean_count(call: Call) -> np.ndarray:
    return np.sum(_present(call), axis=call.axes.axes, keepdims=True)


register(np.nansum, lambda call, dy: np.where(_present(call), call.axes.keep(dy), 0),
         lambda call, dx: call.axes.reduce(np.where(_present(call), dx, 0)),
         refuse_options=_REDUCTION_REFUSES)
register(np.nanmean,
         lambda call, dy: np.where(_present(call), call.axes.keep(dy) / _nanmean_count(call), 0),
         lambda call, dx: call.axes.reduce(
             np.where(_present(call), dx / _nanmean_count(call), 0)),
         refuse_options=_REDUCTION_REFUSES)


def _nanprod_others(call: Call) -> np.ndarray:
    present = _present(call)
    others = _products_of_others(np.where(present, call.a, 1), call.axes.axes)
    return np.where(present, others, 0)


register(np.nanprod, lambda call, dy: np.conj(_nanprod_others(call)) * call.axes.keep(dy),
         lambda call, dx: call.axes.reduce(_nanprod_others(call) * dx),
         refuse_options=_REDUCTION_REFUSES)


# --- weighted average: differentiable in the data and in the weights ---------------------------
# y = sum(a * W) / S over the axes, W the weights lined up against a, S = sum(W):
#   da = conj(W / S) dy,   dW = conj((a - y) / S) dy,   dy = sum(W da + (a - y) dW) / S.

_AVERAGE = Parameters(np.average)


class _Average:
    """One call of np.average, with the pieces of its derivative."""

    def __init__(self, a: Any, args: tuple, kwargs: dict):
        options = _AVERAGE.bind((a,) + args, kwargs)
        if options.get("returned"):
            raise unsupported("numpy.average", "returned", True,
                              "returned=False; sum the weights with np.sum")
        self.y = np.average(a, *args, **kwargs)
        self.call = call = Call(np.average, (a,) + args, kwargs, options, self.y)
        self.weights = options.get("weights")
        # Only weights passed positionally get a cotangent (keyword arguments get none).
        self.weights_position = 3 if len(args) >= 2 and self.weights is not None else None
        self.lined_up = self.line_up(1.0 if self.weights is None else self.weights)
        self.total = call.axes.reduce(np.broadcast_to(self.lined_up, call.a.shape))
        self.total = call.axes.keep(self.total)
        self.centered = call.a - call.axes.keep(self.y)

    def line_up(self, weights: Any) -> np.ndarray:
        """Weights (or their tangent) lined up against ``a``, as np.average lines them up."""
        weights, shape, axes = np.asarray(weights), self.call.a.shape, self.call.axes.axes
        if weights.shape in ((), shape):
            return weights
        return np.transpose(weights, np.argsort(axes)).reshape(
            tuple(n if i in axes else 1 for i, n in enumerate(shape)))

    def to_weights(self, g: np.ndarray) -> np.ndarray:
        """The adjoint of `line_up`: ``g`` (shaped like a) summed back onto the weights."""
        axes = self.call.axes.axes
        if np.shape(self.weights) == g.shape:
            return g
        summed = np.sum(g, axis=tuple(i for i in range(g.ndim) if i not in axes))
        return np.transpose(summed, np.argsort(np.argsort(axes)))


@rrule.register(np.average, replace=True)
def _average_rrule(a: Any, *args: Any, **kwargs: Any):
    average = _Average(a, args, kwargs)
    position = average.weights_position
    project_a = project_onto(a)
    project_w = project_onto(average.weights) if position else NO_TANGENT_PROJECTOR
    zero = [NoTangent()] * (len(args) + 2)
    for index, project in ((1, project_a), (position, project_w)):
        if has_tangent(project):
            zero[index] = ZeroTangent()

    def pullback(dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return tuple(zero)
        kept = average.call.axes.keep(dy) / np.conj(average.total)
        cotangents = list(zero)
        if has_tangent(project_a):
            cotangents[1] = Thunk(lambda: project_a(np.broadcast_to(
                np.conj(average.lined_up) * kept, average.call.a.shape)))
        if has_tangent(project_w):
            cotangents[position] = Thunk(lambda: project_w(
                average.to_weights(np.conj(average.centered) * kept)))
        return tuple(cotangents)

    return average.y, pullback


@frule.register(np.average, replace=True)
def _average_frule(tangents: tuple, a: Any, *args: Any, **kwargs: Any):
    average = _Average(a, args, kwargs)
    da = unthunk(tangents[1])
    dw = unthunk(tangents[average.weights_position]) if average.weights_position \
        else ZeroTangent()
    if isinstance(da, AbstractZero) and isinstance(dw, AbstractZero):
        return average.y, ZeroTangent()
    dy = average.lined_up * dense_tangent(a, da)
    if not isinstance(dw, AbstractZero):
        dy = dy + average.centered * average.line_up(dense_tangent(average.weights, dw))
    return average.y, ProjectTo(average.y)(average.call.axes.reduce(dy / average.total))


# --- cumulative sums and products (axis=None runs over the flattened array) --------------------

def _along(call: Call) -> tuple[np.ndarray, int]:
    """The array and the axis the cumulative op runs along (flattened for axis=None)."""
    axis = call.options.get("axis")
    if axis is None:
        return call.a.ravel(), 0
    return call.a, normalize_axis_tuple(axis, call.a.ndim)[0]


def _reverse_cumsum(g: np.ndarray, axis: int) -> np.ndarray:
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


def _cumsum_back(call: Call, dy: Any) -> Any:
    _, axis = _along(call)
    return np.reshape(_reverse_cumsum(np.asarray(dy), axis), call.a.shape)


register(np.cumsum, _cumsum_back)


class _CumprodParts:
    """y_i = prod_{k<=i} x_k along the last axis, split at the first zero z of each slice.

    Before z, dy_i/dx_j = y_i / x_j (x_j != 0). At z, dy_i/dx_z = head * tail_i with head =
    prod_{k<z} x_k and tail_i = prod_{z<k<=i} x_k (i >= z). After z every partial is 0.
    No division by zero, so one or several zeros are handled exactly.
    """

    def __init__(self, a: np.ndarray, y: np.ndarray):
        n = a.shape[-1]
        zero = a == 0
        first = np.where(zero.any(-1), zero.argmax(-1), n)[..., None]
        position = np.arange(n)
        self.before, self.at, self.from_zero = position < first, position == first, \
            position >= first
        self.a, self.y = a, y
        self.safe = np.where(self.before, a, 1)
        self.head = np.prod(self.safe, axis=-1, keepdims=True)
        self.tail = np.cumprod(np.where(position > first, a, 1), axis=-1)

    def back(self, g: np.ndarray) -> np.ndarray:
        before = _reverse_cumsum(np.conj(self.y) * g, -1) / np.conj(self.safe)
        at = np.conj(self.head) * np.sum(np.where(self.from_zero, np.conj(self.tail) * g, 0),
                                         axis=-1, keepdims=True)
        return np.where(self.before, before, np.where(self.at, at, 0))

    def forward(self, d: np.ndarray) -> np.ndarray:
        before = self.y * np.cumsum(np.where(self.before, d / self.safe, 0), axis=-1)
        d_at = np.sum(np.where(self.at, d, 0), axis=-1, keepdims=True)
        return np.where(self.before, before,
                        np.where(self.from_zero, self.head * self.tail * d_at, 0))


def _cumprod_apply(call: Call, value: Any, direction: str) -> np.ndarray:
    a, axis = _along(call)
    y = np.reshape(call.y, a.shape)
    parts = _CumprodParts(np.moveaxis(a, axis, -1), np.moveaxis(y, axis, -1))
    value = np.moveaxis(np.reshape(value, a.shape), axis, -1)
    result = np.moveaxis(getattr(parts, direction)(value), -1, axis)
    return result.reshape(call.a.shape if direction == "back" else np.shape(call.y))


register(np.cumprod, lambda call, dy: _cumprod_apply(call, dy, "back"),
         lambda call, dx: _cumprod_apply(call, dx, "forward"))


# --- trace, diff, sort ---------------------------------------------------------------------------

def _trace_back(call: Call, dy: Any) -> np.ndarray:
    offset = call.options.get("offset") or 0
    axis1, axis2 = normalize_axis_tuple((call.options.get("axis1", 0),
                                         call.options.get("axis2", 1)), call.a.ndim)
    length = np.diagonal(call.a, offset, axis1, axis2).shape[-1]
    values = np.broadcast_to(np.asarray(dy)[..., None], np.shape(dy) + (length,))
    return diagonal_embed(values, call.a.shape, offset, axis1, axis2, np.result_type(dy))


register(np.trace, _trace_back)


def _diff_back(call: Call, dy: Any) -> np.ndarray:
    """Each difference ``y_i = x_{i+1} - x_i`` sends ``g_{i-1} - g_i`` back to ``x_i``;
    prepend/append (constants) widen the input, and their part of the cotangent is dropped."""
    options = call.options
    axis = normalize_axis_tuple(options.get("axis", -1), call.a.ndim)[0]
    g = np.asarray(dy)
    pad = [(0, 0)] * g.ndim
    pad[axis] = (1, 1)
    for _ in range(options.get("n", 1)):
        g = -np.diff(np.pad(g, pad), axis=axis)
    before = 0 if options.get("prepend") is None else _edge_length(options["prepend"], axis)
    return np.take(g, np.arange(before, before + call.a.shape[axis]), axis=axis)


def _edge_length(edge: Any, axis: int) -> int:
    return 1 if np.ndim(edge) == 0 else np.shape(edge)[axis]


def _diff_forward(call: Call, dx: Any) -> Any:
    edges = {key: np.zeros(np.shape(call.options[key])) for key in ("prepend", "append")
             if call.options.get(key) is not None}
    options = {key: value for key, value in call.kwargs.items() if key not in edges}
    return np.diff(dx, *call.args[1:3], **options, **edges)


register(np.diff, _diff_back, _diff_forward)


def _sort_order(call: Call) -> tuple[np.ndarray, int]:
    a, axis = (call.a.ravel(), 0) if call.options.get("axis", -1) is None else \
        (call.a, normalize_axis_tuple(call.options.get("axis", -1), call.a.ndim)[0])
    return np.argsort(a, axis=axis, kind="stable"), axis


def _sort_back(call: Call, dy: Any) -> np.ndarray:
    order, axis = _sort_order(call)
    dx = np.zeros(order.shape, np.result_type(dy))
    np.put_along_axis(dx, order, dy, axis)
    return dx.reshape(call.a.shape)


def _sort_forward(call: Call, dx: Any) -> np.ndarray:
    order, axis = _sort_order(call)
    return np.take_along_axis(np.reshape(dx, order.shape), order, axis)


register(np.sort, _sort_back, _sort_forward, refuse_options=("order",))


# --- np.linalg.norm: real-valued, by its gradient ------------------------------------------------

def _unit(x: np.ndarray) -> np.ndarray:
    """x / |x| (the sign, for real x), 0 where x is 0: the gradient of |x|."""
    size = np.abs(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(size == 0, 0, x / np.where(size == 0, 1, size))


def _share(values: np.ndarray, extremum: Any, axis: Any) -> np.ndarray:
    """1/k where ``values`` attain ``extremum`` (k times in their slice), else 0: ties split."""
    hits = values == extremum
    return hits / np.sum(hits, axis=axis, keepdims=True)


def _vector_norm_gradient(x: np.ndarray, y: np.ndarray, order: Any, axes: tuple) -> np.ndarray:
    size = np.abs(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        if order is None or order == 2:
            return np.where(y == 0, 0, x / np.where(y == 0, 1, y))
        if order in (np.inf, -np.inf):
            return _share(size, y, axes) * _unit(x)
        if order == 0:  # counts nonzeros: piecewise constant
            return np.zeros_like(x)
        if order == 1:
            return _unit(x)
        return np.where((size == 0) | (y == 0), 0, _unit(x) * (size / y) ** (order - 1))


def _matrix_norm_gradient(x: np.ndarray, y: np.ndarray, order: Any) -> np.ndarray:
    """The gradient for matrices in the last two axes (rows, columns)."""
    if order in (None, "fro"):
        return _vector_norm_gradient(x, y, None, (-2, -1))
    if order in ("nuc", 2, -2):
        u, s, vh = np.linalg.svd(x, full_matrices=False)
        if order == "nuc":
            return u @ vh
        weights = _share(s, (np.max if order == 2 else np.min)(s, -1, keepdims=True), -1)
        return (u * weights[..., None, :]) @ vh
    pick = np.max if order in (1, np.inf) else np.min
    if order in (1, -1):  # largest (smallest) column sum of |x|
        sums = np.sum(np.abs(x), axis=-2)
        return _unit(x) * _share(sums, pick(sums, -1, keepdims=True), -1)[..., None, :]
    sums = np.sum(np.abs(x), axis=-1)  # inf, -inf: row sums
    return _unit(x) * _share(sums, pick(sums, -1, keepdims=True), -1)[..., :, None]


def _norm_gradient(call: Call) -> np.ndarray:
    x, order, axis = call.a, call.options.get("ord"), call.options.get("axis")
    y = call.axes.keep(call.y)
    if axis is None and (order is None or x.ndim == 1):
        return _vector_norm_gradient(x, y, order, call.axes.axes)
    axes = call.axes.axes if axis is None else normalize_axis_tuple(axis, x.ndim)
    if len(axes) == 1:
        return _vector_norm_gradient(x, y, order, axes)
    moved = (-2, -1)
    gradient = _matrix_norm_gradient(np.moveaxis(x, axes, moved),
                                     np.moveaxis(y, axes, moved), order)
    return np.moveaxis(gradient, moved, axes)


_real_valued_rule(np.linalg.norm, _norm_gradient)
