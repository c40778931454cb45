"""Rules for reductions: sums, means, products, extrema, moments, norms (``np.linalg.norm``,
``matrix_norm``, ``cond``), cumulative ops (``cumprod``, ``nancumprod``, ``cumulative_prod``),
sort, segment sums (``np.add.reduceat``, as `add_reduceat`).

Each rule is a pair of formulas on a `Call` (see `chainrules.rules.define`): ``back(call, dy)``, the cotangent
of the array argument, and ``forward(call, dx)``, the output tangent (none for the linear ones:
the reduction of the tangent). ``call.axes`` lines the output back up with the input (``axis``
as int, tuple, None or negative, and ``keepdims``):

    define(np.sum, _spread, refused=("out", "where"), keeps_values=False)

Holomorphic reductions are given by their partials (``_by_partials``: ``back = conj(p) dy``,
``forward = sum(p dx)``); real-valued ones (moments, norms) by their gradient
``g = dL/dRe + i dL/dIm`` (``back = g dy``, ``dy`` being real, ``forward = sum(Re(conj(g) dx))``).

Ties: ``max``/``min`` (and ``ptp``, the inf-norms and the 2-norm of a matrix with a repeated
largest singular value) split the cotangent evenly between the elements that attain the
extremum. Zeros: ``prod`` and ``cumprod`` are exact with one or several zeros in a slice.
NaN-ignoring reductions give ignored NaNs a zero cotangent. Positional float arguments that
the output depends on smoothly are differentiated too: ``weights`` of ``average``,
``prepend``/``append`` of ``diff`` and a finite ``ord`` of a vector ``norm``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.broadcast import unbroadcast
from ...core.dtypes import as_array, cast_to, is_plain
from ...core.registry import (EXPANSIONS, INDEX_READ, NUMBER_FORMS, Expansion, NumberForm,
                              recorded_whole, rrule)
from ...core.scalar_rule import STAND_IN_SIZE
from ...core.sparse import scatter_sum
from ...core.tangents import NoTangent, ZeroTangent
from ...core.thunks import InplaceableThunk, Thunk
from ..define import Call, define, normalize_axis_tuple, per_argument, unsupported
from .shape import diagonal_embed

_REDUCTION_REFUSES = ("out", "where")  # (initial= is a constant: summed, multiplied, compared)


def _by_partials(f: Any, partials: Any) -> None:
    """Register the reduction ``f`` whose derivative by each element is ``partials(call)``
    (holomorphic): ``back = conj(partials) dy``, ``forward = sum(partials dx)``."""
    define(f, lambda call, dy: np.conj(partials(call)) * call.axes.keep(dy),
           pushforward=lambda call, dx: call.axes.reduce(partials(call) * dx),
           refused=_REDUCTION_REFUSES)


# --- sum, mean -----------------------------------------------------------------------------------

def _spread(call: Call, dy: Any, divide_by: Any = 1) -> Any:
    """``dy / divide_by`` broadcast back over the reduced axes, in the array's tangent dtype.

    For an array argument it is an `InplaceableThunk`: ``add`` does ``buffer += dy`` (broadcast)
    and ``val`` is the broadcast copy, both from the same projected ``dy``. It reads only the
    argument's shape, dtype and axes (``keeps_values=False``).
    """
    shape, dtype = call.shape, call.dtype
    kept = call.axes.keep(cast_to(as_array(dy), dtype))
    if divide_by != 1:
        with np.errstate(divide="ignore", invalid="ignore"):  # empty slices: NumPy warns
            kept = kept / divide_by
    if not is_plain(kept):
        like = call.duck_array
        if like is not None:  # a Dask array: spread in its chunks, not one chunk of its size
            return np.ones_like(like, dtype=dtype) * kept
        return np.broadcast_to(kept, shape)  # order 2: a traced value, by recorded operations
    if not call.is_array:
        return np.full(shape, kept, dtype=kept.dtype)

    def add(buffer: np.ndarray) -> np.ndarray:
        buffer += kept
        return buffer

    # np.full: the broadcast copy at a fifth of np.array(np.broadcast_to(...))'s cost
    return InplaceableThunk(add, Thunk(lambda: np.full(shape, kept, dtype=kept.dtype)),
                            shape=shape, dtype=dtype)


define(np.sum, _spread, refused=_REDUCTION_REFUSES, keeps_values=False)
_sum_rule = rrule.lookup(np.sum)[0]
_add_reduce = np.add.reduce  # np.sum(x) of an ndarray, without fromnumeric's Python layer
# np.sum(x) of a small float array, to a number: its cotangent is dy at every position, an
# index read of x[...] (an engine records it as one: `NumberForm`); any other cotangent goes
# to the rule's pullback, made for an array of x's shape and dtype (it reads nothing else).
NUMBER_FORMS[np.sum] = NumberForm(
    _sum_rule, lambda x: _add_reduce(x, None), INDEX_READ, False,
    lambda payload: _sum_rule(np.broadcast_to(payload[3].type(0), payload[2]))[1])
define(np.mean, lambda call, dy: _spread(call, dy, divide_by=call.axes.count),
       refused=_REDUCTION_REFUSES, keeps_values=False)


def _mean_expands(x: Any, *options: Any) -> bool:
    """Whether ``np.mean(x)`` is ``np.sum(x) / x.size`` bit for bit and both are recorded
    inline: a small float64 array (NumPy 1's float32 divided by an int gives float64)."""
    return not options and type(x) is np.ndarray and x.dtype == np.float64 and \
        0 < x.size < STAND_IN_SIZE


# np.mean(x) in a loop: a total sum (an index read of x[...]) and a division of numbers, each
# recorded inline, instead of the rule's pullback object (a cotangent (1/n) dy, within an
# ulp of the rule's dy / n)
EXPANSIONS[np.mean] = Expansion(rrule.lookup(np.mean)[0], _mean_expands,
                                lambda values, x: np.sum(x) / x.size)


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


def _times_initial(call: Call, partials: Any) -> Any:
    """Partials of a product that ``initial=`` (a constant factor) multiplies."""
    initial = call["initial"]
    return partials if initial is None else partials * initial


_by_partials(np.prod, lambda call: _times_initial(call, _products_of_others(call.a,
                                                                          call.axes.axes)))


# --- extrema: the cotangent goes to the elements that attain the extremum, split evenly ---------

def _extremum_weights(call: Call, extremum: Any) -> np.ndarray:
    """1/k at each of the k elements of a slice equal to its ``extremum`` (NaN matches NaN, as
    ``max`` propagates it), 0 elsewhere."""
    a, axes = call.a, call.axes
    kept = axes.keep(extremum)
    with np.errstate(invalid="ignore"):
        hits = (a == kept) | (np.isnan(a) & np.isnan(kept))
    # (none where initial= is the extremum: a constant, no element's cotangent)
    return hits / np.maximum(np.sum(hits, axis=axes.axes, keepdims=True), 1)


def _ptp_weights(call: Call) -> np.ndarray:
    axis = call.axes.axes
    return (_extremum_weights(call, np.max(call.a, axis=axis))
            - _extremum_weights(call, np.min(call.a, axis=axis)))


for _f in (np.max, np.min, np.amax, np.amin, np.nanmax, np.nanmin):
    _by_partials(_f, lambda call: _extremum_weights(call, call.y))


def _extremum_expansion(f: Any, reduce: Any, position: Any) -> None:
    """``f(x)`` (``np.max(x)``) of a small float array whose extremum ``reduce(x)`` one
    element attains (not NaN) expanded as that element's index read, ``x[position(x)]``:
    the same value, and the rule's cotangent (all of ``dy`` at it); ties, NaNs and options
    take the rule, which splits ``dy`` among the ties."""
    def applies(x: Any, *options: Any) -> bool:
        if options or type(x) is not np.ndarray or x.dtype.kind != "f" or \
                not 0 < x.size < STAND_IN_SIZE:
            return False
        extremum = reduce(x)
        return extremum == extremum and _count_nonzero(x == extremum) == 1

    def expand(values: tuple, x: Any) -> Any:
        at = int(position(values[0]))
        return x[at] if len(x.shape) == 1 else x[tuple(int(k) for k in
                                                       np.unravel_index(at, x.shape))]

    EXPANSIONS[f] = Expansion(rrule.lookup(f)[0], applies, expand)


_count_nonzero = np.count_nonzero
for _f, _reduce, _position in ((np.max, np.maximum.reduce, np.argmax),
                               (np.amax, np.maximum.reduce, np.argmax),
                               (np.min, np.minimum.reduce, np.argmin),
                               (np.amin, np.minimum.reduce, np.argmin),
                               (np.nanmax, np.fmax.reduce, np.nanargmax),
                               (np.nanmin, np.fmin.reduce, np.nanargmin)):
    _extremum_expansion(_f, lambda x, reduce=_reduce: reduce(x, None), _position)
_by_partials(np.ptp, _ptp_weights)


# --- real-valued reductions, by their gradient g: back = g dy, forward = sum Re(conj(g) dx) ----

def _real_valued(gradient: Any) -> tuple:
    """The cotangent and tangent formulas of a real-valued reduction with this gradient."""
    def back(call: Call, dy: Any) -> Any:
        return gradient(call) * call.axes.keep(dy)

    def forward(call: Call, dx: Any) -> Any:
        return call.axes.reduce(np.real(np.conj(gradient(call)) * dx))

    return back, forward


def _ddof(call: Call) -> float:
    """``ddof``, or its array-API name ``correction``."""
    return call["ddof"] if call["correction"] is None else call["correction"]


def _variance_gradient(call: Call, ignore_nan: bool) -> np.ndarray:
    """The gradient of the variance: ``2 (x - mean) / (N - ddof)`` (0 at ignored NaNs)."""
    a, axes = call.a, call.axes.axes
    ddof = _ddof(call)
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


def _moment_rule(f: Any, gradient: Any, ignore_nan: bool) -> None:
    back, forward = _real_valued(lambda call: gradient(call, ignore_nan))
    define(f, back, pushforward=forward, refused=("out", "where", "mean"))


_moment_rule(np.var, _variance_gradient, ignore_nan=False)
_moment_rule(np.nanvar, _variance_gradient, ignore_nan=True)
_moment_rule(np.std, _std_gradient, ignore_nan=False)


def _variance(values: tuple, x: Any) -> Any:
    """``np.var(x)`` as NumPy computes it (``_methods._var``), by calls an engine records
    one by one: the mean, the deviations, their squares' sum over the count."""
    deviations = x - np.sum(x) / x.size
    return np.sum(deviations * deviations) / x.size


# np.var(x) under hvp only: at order 1 the rule records the call more cheaply (one record);
# under hvp its pullback is traced (2.8 gradients in a loop over 16-element columns), where the
# expansion's five calls take the forms of numbers and small arrays. (np.std is not expanded:
# its derivative at zero variance is the rule's choice, 0, where sqrt's would be infinite.)
EXPANSIONS[np.var] = Expansion(rrule.lookup(np.var)[0], _mean_expands, _variance,
                               first_order=False)
_moment_rule(np.nanstd, _std_gradient, ignore_nan=True)


# --- NaN-ignoring sums, means and products: NaNs get a zero cotangent ---------------------------

def _present(call: Call) -> np.ndarray:
    return ~np.isnan(call.a)


def _nanmean_count(call: Call) -> np.ndarray:
    return np.sum(_present(call), axis=call.axes.axes, keepdims=True)


define(np.nansum, lambda call, dy: np.where(_present(call), call.axes.keep(dy), 0),
       pushforward=lambda call, dx: call.axes.reduce(np.where(_present(call), dx, 0)),
       refused=_REDUCTION_REFUSES)
define(np.nanmean,
       lambda call, dy: np.where(_present(call), call.axes.keep(dy) / _nanmean_count(call), 0),
       pushforward=lambda call, dx: call.axes.reduce(
           np.where(_present(call), dx / _nanmean_count(call), 0)),
       refused=_REDUCTION_REFUSES)


def _nanprod_others(call: Call) -> np.ndarray:
    present = _present(call)
    others = _products_of_others(np.where(present, call.a, 1), call.axes.axes)
    return np.where(present, others, 0)


_by_partials(np.nanprod, lambda call: _times_initial(call, _nanprod_others(call)))


# --- weighted average: differentiable in the data and in the weights ---------------------------
# y = sum(a * W) / S over the axes, W the weights lined up against a, S = sum(W):
#   da = conj(W / S) dy,   dW = conj((a - y) / S) dy,   dy = sum(W da + (a - y) dW) / S.

def _line_up(call: Call, weights: Any) -> np.ndarray:
    """Weights (or their tangent) lined up against ``a``, as np.average lines them up."""
    weights, shape, axes = np.asarray(weights), call.a.shape, call.axes.axes
    if weights.shape in ((), shape):
        return weights
    return np.transpose(weights, np.argsort(axes)).reshape(
        tuple(n if i in axes else 1 for i, n in enumerate(shape)))


def _onto_weights(call: Call, g: np.ndarray) -> np.ndarray:
    """The adjoint of `_line_up`: ``g`` (shaped like a) summed back onto the weights."""
    axes = call.axes.axes
    if np.shape(call["weights"]) == g.shape:
        return g
    summed = np.sum(g, axis=tuple(i for i in range(g.ndim) if i not in axes))
    return np.transpose(summed, np.argsort(np.argsort(axes)))


def _average_parts(call: Call) -> tuple:
    """W (lined up), S (lined up) and a - y."""
    weights = call["weights"]
    lined_up = _line_up(call, 1.0 if weights is None else weights)
    total = call.axes.keep(call.axes.reduce(np.broadcast_to(lined_up, call.a.shape)))
    return lined_up, total, call.a - call.axes.keep(call.y)


def _average_check(call: Call) -> None:
    if call["returned"]:
        raise unsupported(call.name, "returned", True,
                          "returned=False; sum the weights with np.sum")


def _average_back(call: Call, dy: Any) -> np.ndarray:
    lined_up, total, _ = call.memo(_average_parts)
    return np.broadcast_to(np.conj(lined_up / total) * call.axes.keep(dy), call.a.shape)


def _average_forward(call: Call, da: Any) -> Any:
    lined_up, total, _ = call.memo(_average_parts)
    return call.axes.reduce(lined_up * da / total)


def _average_weights_back(call: Call, dy: Any) -> np.ndarray:
    _, total, centered = call.memo(_average_parts)
    return _onto_weights(call, np.conj(centered / total) * call.axes.keep(dy))


def _average_weights_forward(call: Call, dw: Any) -> Any:
    _, total, centered = call.memo(_average_parts)
    return call.axes.reduce(centered * _line_up(call, dw) / total)


define(np.average, _average_back, None, _average_weights_back,
       pushforward=per_argument(_average_forward, None, _average_weights_forward),
       check=_average_check)


# --- cumulative sums and products (axis=None runs over the flattened array) --------------------

def _along(call: Call) -> tuple[np.ndarray, int]:
    """The array and the axis the cumulative op runs along (flattened for axis=None)."""
    axis = call["axis"]
    if axis is None:
        return call.a.ravel(), 0
    return call.a, normalize_axis_tuple(axis, call.a.ndim)[0]


def _reverse_cumsum(g: np.ndarray, axis: int) -> np.ndarray:
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


def _cumsum_back(call: Call, dy: Any) -> Any:
    _, axis = _along(call)
    return np.reshape(_reverse_cumsum(as_array(dy), axis), call.a.shape)


define(np.cumsum, _cumsum_back)


class _CumprodParts:
    """y_i = prod_{k<=i} x_k along the last axis, split at the first zero z of each slice.

    Before z, dy_i/dx_j = y_i / x_j (x_j != 0 there). At z, dy_i/dx_z = head * tail_i with
    head = prod_{k<z} x_k and tail_i = prod_{z<k<=i} x_k (i >= z). After z every partial is
    0. Only nonzero x are divided by, so one or several zeros are handled exactly.
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


def _cumprod_apply(call: Call, value: Any, direction: str, a: Any = None, y: Any = None
                   ) -> np.ndarray:
    """``_CumprodParts``' ``back`` (of a cotangent) or ``forward`` (of a tangent) for the call
    (its argument ``a`` and output ``y``, if given, in place of the call's)."""
    axis = call["axis"]
    a = call.a if a is None else a
    shape = np.shape(a) if direction == "back" else np.shape(call.y if y is None else y)
    if axis is None:
        a, axis = np.ravel(a), 0
    else:
        axis = normalize_axis_tuple(axis, np.ndim(a))[0]
    if np.size(a) == 0:
        return np.zeros(shape, np.result_type(value))
    y = np.reshape(call.y if y is None else y, np.shape(a))
    if not is_plain(a) and bool(np.any(np.moveaxis(a, axis, -1)[..., :-1] == 0)):
        # Behind an exact zero the partials are 0 as constants: right at order 1, but their
        # derivative with respect to the zero is not (it is the product of the others).
        raise NotImplementedError(
            f"{call.name}: second derivatives are not implemented where a slice has an exact "
            f"zero before its last element (differentiate {call.name} once, or move the point "
            f"off the zero).")
    parts = _CumprodParts(np.moveaxis(a, axis, -1), np.moveaxis(y, axis, -1))
    value = np.moveaxis(np.reshape(value, np.shape(a)), axis, -1)
    return np.reshape(np.moveaxis(getattr(parts, direction)(value), -1, axis), shape)


def _without_nans(call: Call) -> Any:
    return np.where(np.isnan(call.a), 1, call.a)


def _nancumprod_apply(call: Call, value: Any, direction: str) -> np.ndarray:
    """cumprod's formulas with NaNs as ones (constants: no gradient)."""
    if direction == "forward":
        value = np.where(np.isnan(call.a), 0, value)
    result = _cumprod_apply(call, value, direction, a=call.memo(_without_nans))
    return np.where(np.isnan(call.a), 0, result) if direction == "back" else result


def _initial_cut(call: Call, value: Any) -> Any:
    """``value`` without the leading one of ``include_initial=True`` along the axis."""
    if not call["include_initial"]:
        return value
    axis = 0 if call["axis"] is None else normalize_axis_tuple(call["axis"], call.a.ndim)[0]
    return np.take(value, np.arange(1, np.shape(value)[axis]), axis=axis)


def _cumulative_prod_forward(call: Call, dx: Any) -> Any:
    tangent = _cumprod_apply(call, dx, "forward", y=_initial_cut(call, call.y))
    if not call["include_initial"]:
        return tangent
    axis = 0 if call["axis"] is None else normalize_axis_tuple(call["axis"], call.a.ndim)[0]
    shape = list(np.shape(tangent))
    shape[axis] = 1
    return np.concatenate([np.zeros(shape, np.result_type(tangent)), tangent], axis=axis)


define(np.cumprod, lambda call, dy: _cumprod_apply(call, dy, "back"),
       pushforward=lambda call, dx: _cumprod_apply(call, dx, "forward"))
define(np.nancumprod, lambda call, dy: _nancumprod_apply(call, dy, "back"),
       pushforward=lambda call, dx: _nancumprod_apply(call, dx, "forward"))
if hasattr(np, "cumulative_prod"):  # NumPy 2.1
    define(np.cumulative_prod, lambda call, dy: _cumprod_apply(
        call, _initial_cut(call, dy), "back", y=_initial_cut(call, call.y)),
        pushforward=_cumulative_prod_forward)


# --- trace, diff, sort ---------------------------------------------------------------------------

def _trace_back(call: Call, dy: Any) -> np.ndarray:
    offset = call["offset"]
    axis1, axis2 = normalize_axis_tuple((call["axis1"], call["axis2"]), call.a.ndim)
    length = np.diagonal(call.a, offset, axis1, axis2).shape[-1]
    values = np.broadcast_to(np.expand_dims(as_array(dy), -1), np.shape(dy) + (length,))
    return diagonal_embed(values, call.a.shape, offset, axis1, axis2, np.result_type(dy))


define(np.trace, _trace_back)


def _diff_adjoint(call: Call) -> Any:
    """The adjoint of the n differences, as a function of ``dy``, on the input widened by
    prepend and append: each difference ``y_i = x_{i+1} - x_i`` sends ``g_{i-1} - g_i`` to
    ``x_i``. Returns (adjoint, axis, the widened input's slices for prepend, a, append)."""
    axis = normalize_axis_tuple(call["axis"], call.a.ndim)[0]
    sizes = [0 if call[edge] is None else 1 if np.ndim(call[edge]) == 0 else
             np.shape(call[edge])[axis] for edge in ("prepend", "append")]
    ends = np.cumsum([sizes[0], call.a.shape[axis], sizes[1]])
    slices = (slice(0, ends[0]), slice(ends[0], ends[1]), slice(ends[1], ends[2]))

    def adjoint(dy: Any) -> np.ndarray:
        g = as_array(dy)
        for _ in range(call["n"]):
            # g between two zeros along the axis (np.concatenate: np.pad's Python layer costs
            # five times as much on a small array)
            edge = list(np.shape(g))
            edge[axis] = 1
            zeros = np.zeros(edge, np.result_type(g))
            g = -np.diff(np.concatenate([zeros, g, zeros], axis=axis), axis=axis)
        return g

    return adjoint, axis, slices


def _diff_part_back(part: int, name: str) -> Any:
    """The pullback onto one part of the widened input (0 prepend, 1 a, 2 append)."""
    def back(call: Call, dy: Any) -> np.ndarray:
        adjoint, axis, slices = call.memo(_diff_adjoint)
        piece = adjoint(dy)[(slice(None),) * axis + (slices[part],)]
        return piece if name == "a" else unbroadcast(piece, np.shape(call[name]))

    return back


def _diff_part_forward(name: str) -> Any:
    """The pushforward of one part: np.diff with that part's tangent, zeros for the others."""
    def forward(call: Call, d: Any) -> Any:
        parts = {key: np.zeros(np.shape(call[key]), np.result_type(d))
                 for key in ("a", "prepend", "append") if call[key] is not None}
        parts[name] = d
        edges = {key: parts[key] for key in ("prepend", "append") if key in parts}
        return np.diff(parts["a"], call["n"], call["axis"], **edges)

    return forward


define(np.diff, _diff_part_back(1, "a"), None, None, _diff_part_back(0, "prepend"),
       _diff_part_back(2, "append"),
       pushforward=per_argument(_diff_part_forward("a"), None, None,
                                _diff_part_forward("prepend"), _diff_part_forward("append")))


def _sort_order(call: Call) -> tuple[np.ndarray, int]:
    a, axis = (call.a.ravel(), 0) if call["axis"] is None else \
        (call.a, normalize_axis_tuple(call["axis"], call.a.ndim)[0])
    return np.argsort(a, axis=axis, kind="stable"), axis


def _sort_back(call: Call, dy: Any) -> np.ndarray:
    order, axis = _sort_order(call)
    inverse = np.empty_like(order)  # the inverse permutation: a gather, traceable at order 2
    np.put_along_axis(inverse, order, np.broadcast_to(
        np.arange(order.shape[axis]).reshape((-1,) + (1,) * (order.ndim - axis - 1)),
        order.shape), axis)
    return np.reshape(np.take_along_axis(np.reshape(dy, order.shape), inverse, axis),
                      call.a.shape)


def _sort_forward(call: Call, dx: Any) -> np.ndarray:
    order, axis = _sort_order(call)
    return np.take_along_axis(np.reshape(dx, order.shape), order, axis)


define(np.sort, _sort_back, pushforward=_sort_forward, refused=("order",))


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


def _norm_axes(call: Call) -> tuple:
    """The axes np.linalg.norm reduces: one axis (or all, flattened) for a vector norm, two
    (rows, columns, in the caller's order) for a matrix norm."""
    x, order, axis = call.a, call["ord"], call["axis"]
    if axis is None and (order is None or x.ndim == 1):
        return call.axes.axes
    return call.axes.axes if axis is None else normalize_axis_tuple(axis, x.ndim)


def _norm_gradient(call: Call) -> np.ndarray:
    x, order, axes = call.a, call["ord"], _norm_axes(call)
    y = call.axes.keep(call.y)
    if len(axes) != 2 or (order is None and call["axis"] is None):
        return _vector_norm_gradient(x, y, order, axes)
    moved = (-2, -1)
    gradient = _matrix_norm_gradient(np.moveaxis(x, axes, moved),
                                     np.moveaxis(y, axes, moved), order)
    return np.moveaxis(gradient, moved, axes)


def _order_derivative(call: Call) -> Any:
    """d norm / d ord: for a vector p-norm y = S^(1/p), S = sum |x|^p,
    dy/dp = y (sum |x|^p log|x| / (p S) - log(S) / p^2); 0 as p -> inf. Matrix norms and
    ord=0 take only discrete orders: no tangent."""
    order = call["ord"]
    if order in (np.inf, -np.inf):
        return ZeroTangent()
    axes = _norm_axes(call)
    if order == 0 or len(axes) == 2:
        return NoTangent()
    size = np.abs(call.a)
    y = call.axes.keep(call.y)
    with np.errstate(divide="ignore", invalid="ignore"):
        powers = np.where(size == 0, 0, size ** order)
        total = np.sum(powers, axis=axes, keepdims=True)
        weighted = np.sum(np.where(size == 0, 0, powers * np.log(size)), axis=axes,
                          keepdims=True)
        derivative = y * (weighted / (order * total) - np.log(total) / order ** 2)
    return np.where(y == 0, 0, derivative)


def _order_back(call: Call, dy: Any) -> Any:
    derivative = call.memo(_order_derivative)
    if isinstance(derivative, (NoTangent, ZeroTangent)):  # a traced ord (order 2) is no array
        return derivative
    return np.sum(derivative * call.axes.keep(dy))


def _order_forward(call: Call, d: Any) -> Any:
    derivative = call.memo(_order_derivative)
    if isinstance(derivative, (NoTangent, ZeroTangent)):
        return ZeroTangent()
    return np.reshape(derivative, np.shape(call.y)) * d


_norm_back, _norm_forward = _real_valued(_norm_gradient)
define(np.linalg.norm, _norm_back, _order_back,
       pushforward=per_argument(_norm_forward, _order_forward))


def _norm_expands(x: Any, *options: Any) -> bool:
    """Whether ``np.linalg.norm(x)`` is ``np.sqrt(np.dot(x, x))`` bit for bit (NumPy's own
    computation for a real vector) with a derivative: a small float vector, no options, a
    nonzero, finite square (at 0 the rule's gradient is 0 where sqrt's would make 0 * inf;
    an overflow is the rule's to report, once)."""
    if options or type(x) is not np.ndarray or x.ndim != 1 or x.dtype.kind != "f" or \
            not 0 < x.size < STAND_IN_SIZE:
        return False
    with np.errstate(all="ignore"):
        square = _DOT(x, x)
    return 0 < square < np.inf


_DOT = np.dot
# under hvp only: at order 1 the rule costs as much (234k instructions per step in a loop
# against the expansion's 242k), under hvp the rule's pullback is traced (6 gradients)
EXPANSIONS[np.linalg.norm] = Expansion(rrule.lookup(np.linalg.norm)[0], _norm_expands,
                                       lambda values, x: np.sqrt(np.dot(x, x)),
                                       first_order=False)


# --- matrix_norm and cond: matrix norms of the last two axes -----------------------------------

def _matrix_order(order: Any) -> Any:
    return None if order == "fro" else order


def _kept_matrix(value: Any, keepdims: bool) -> Any:
    """A value per matrix, with the matrix axes kept (size 1) for broadcasting."""
    return value if keepdims else np.expand_dims(value, (-2, -1))


def _matrix_norm_of_call(call: Call) -> np.ndarray:
    return _matrix_norm_gradient(call.a, _kept_matrix(call.y, call["keepdims"]),
                                 _matrix_order(call["ord"]))


def _matrix_norm_back(call: Call, dy: Any) -> Any:
    return call.memo(_matrix_norm_of_call) * _kept_matrix(dy, call["keepdims"])


def _matrix_norm_forward(call: Call, dx: Any) -> Any:
    return np.sum(np.real(np.conj(call.memo(_matrix_norm_of_call)) * dx), axis=(-2, -1),
                  keepdims=bool(call["keepdims"]))


def _norm_and_gradient(x: Any, order: Any) -> tuple:
    """The matrix norm of order ``order`` of each matrix in ``x`` (axes kept) and its
    gradient."""
    norm = np.linalg.norm(x, order, axis=(-2, -1), keepdims=True)
    return norm, _matrix_norm_gradient(x, norm, order)


def _cond_gradient(call: Call) -> np.ndarray:
    """The gradient of ``cond(x, p)``: of ``|x|_2 / |x|_-2`` (the inverse for p = -2), else
    of ``|x|_p |x^-1|_p``, whose second factor has the gradient ``-x^-H G x^-H`` for the
    gradient ``G`` of the norm at ``x^-1``."""
    x, order = call.a, call["p"]
    if order in (None, 2, -2):
        top, top_gradient = _norm_and_gradient(x, 2)
        bottom, bottom_gradient = _norm_and_gradient(x, -2)
        if order == -2:
            top, top_gradient, bottom, bottom_gradient = \
                bottom, bottom_gradient, top, top_gradient
        return top_gradient / bottom - (top / bottom ** 2) * bottom_gradient
    inverse = np.linalg.inv(x)
    inverse_H = np.conj(np.swapaxes(inverse, -1, -2))
    norm, gradient = _norm_and_gradient(x, order)
    inverse_norm, inverse_gradient = _norm_and_gradient(inverse, order)
    return gradient * inverse_norm - norm * (inverse_H @ inverse_gradient @ inverse_H)


def _cond_back(call: Call, dy: Any) -> Any:
    # real-valued, though NumPy 1.26 returns it as complex for complex x and p not 2 or -2
    return call.memo(_cond_gradient) * np.expand_dims(np.real(dy), (-2, -1))


def _cond_forward(call: Call, dx: Any, *order: Any) -> Any:
    return np.sum(np.real(np.conj(call.memo(_cond_gradient)) * dx), axis=(-2, -1))


if hasattr(np.linalg, "matrix_norm"):  # NumPy 2.0
    define(np.linalg.matrix_norm, _matrix_norm_back, pushforward=_matrix_norm_forward)
define(np.linalg.cond, _cond_back, None, pushforward=_cond_forward)


# --- segment sums: np.add.reduceat -----------------------------------------------------------------

@recorded_whole  # the engine records `np.add.reduceat(t, indices)` as this function
def add_reduceat(array: Any, indices: Any, axis: int = 0, dtype: Any = None) -> Any:
    """``np.add.reduceat(array, indices, axis)``, as a function an engine can map the ufunc
    method to: ``out[i]`` sums ``array[indices[i]:indices[i + 1]]`` along ``axis`` (the last
    to the end), or is ``array[indices[i]]`` where ``indices[i + 1] <= indices[i]``.

    >>> add_reduceat(np.arange(6.0), [0, 2, 5])
    array([1., 9., 5.])
    """
    return np.add.reduceat(np.asarray(array), indices, axis=axis, dtype=dtype)


def _segments(call: Call) -> tuple:
    """``(positions, segment)``: each position along the axis that an output sums (with
    repeats where segments overlap) and the output it goes to."""
    axis = normalize_axis_tuple(call["axis"], len(call.shape))[0]
    starts = np.ravel(np.asarray(call["indices"])).astype(np.intp)
    stops = np.append(starts[1:], call.shape[axis])
    lengths = np.where(starts < stops, stops - starts, 1)
    segment = np.repeat(np.arange(starts.size), lengths)
    offsets = np.cumsum(lengths) - lengths
    return starts[segment] + np.arange(segment.size) - offsets[segment], segment, axis


def _add_reduceat_back(call: Call, dy: Any) -> Any:
    """Each output's cotangent goes to every position it summed."""
    positions, segment, axis = call.memo(_segments)
    before = (slice(None),) * axis
    return scatter_sum(call.shape, call.dtype, (before + (positions,),),
                       np.take(dy, segment, axis=axis))


define(add_reduceat, _add_reduceat_back, None)
