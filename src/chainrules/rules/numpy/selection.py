"""Selection rules: functions that pick elements (``take``, ``diagonal``, ``where``, ``clip``...)
and functions whose outputs have no tangent (``argmax``, ``nonzero``, ``isclose``...).

A function that reads ``x[index]`` for an index NumPy understands has the cotangent
``SparseCotangent(index, dy, ...)``: the index and the projected ``dy``, never a dense array of
x's size, so reading a few elements in a loop stays linear. Each such rule is one function
that says which index it reads (``np.take(x, i, axis=1)`` reads ``x[:, i]``). Functions that
choose between arguments elementwise (``where``, ``select``, ``clip``, ``choose`` with
broadcast choices) give each argument ``dy`` where it was chosen, summed over broadcast axes.
``unique`` (and ``unique_values``, ``unique_counts``, ``unique_inverse``, ``unique_all``) and
the set operations ``intersect1d``, ``union1d``, ``setdiff1d``, ``setxor1d`` output values of
their inputs: each value's cotangent goes to its first occurrence in the inputs laid end to
end (a convention: a value both inputs hold goes to the first input).
The table at the end has one `define` line per function (see `chainrules.rules.define`):

    define(np.take, _reads(_take_index, "a"))    # np.take(a, indices, ...) reads a[index]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...core.broadcast import unbroadcast
from ...core.dtypes import tangent_dtype
from ...core.registry import EXPANSIONS, Expansion, non_differentiable, rrule
from ...core.scalar_rule import STAND_IN_SIZE
from ...core.sparse import SparseCotangent
from ...core.tangents import AbstractZero, ZeroTangent
from ..define import define, linear

# --- which elements each function reads --------------------------------------------------------


def _at_axis(shape: tuple, axis: Any, positions: Any) -> tuple:
    """The index of ``positions`` along ``axis`` (``None``: of the flattened array)."""
    if axis is None:
        return np.unravel_index(positions, shape)
    return (slice(None),) * (axis % len(shape)) + (positions,)


def _wrapped(indices: Any, size: int, mode: str) -> np.ndarray:
    """Indices made non-negative and in range, as ``mode`` ('raise', 'wrap', 'clip') reads them."""
    indices = np.asarray(indices)
    if mode == "wrap":
        return np.mod(indices, size)
    if mode == "clip":
        return np.clip(indices, 0, size - 1)
    return np.where(indices < 0, indices + size, indices)


def _take_index(call) -> tuple:
    shape, axis = np.shape(call["a"]), call["axis"]
    size = math.prod(shape) if axis is None else shape[axis]
    return _at_axis(shape, axis, _wrapped(call["indices"], size, call["mode"]))


def _take_along_axis_index(call) -> tuple:
    shape, axis, indices = np.shape(call["arr"]), call["axis"], call["indices"]
    if axis is None:
        return np.unravel_index(_wrapped(indices, math.prod(shape), "raise"), shape)
    axis %= len(shape)
    return tuple(_wrapped(indices, n, "raise") if i == axis else
                 np.arange(n).reshape([-1 if j == i else 1 for j in range(len(shape))])
                 for i, n in enumerate(shape))


def _window_index(call) -> tuple:
    """Where each element of ``sliding_window_view(x, window_shape, axis)`` reads ``x``: the
    same windows of ``x``'s own positions (views: memory of the size of ``x``)."""
    shape = np.shape(call["x"])
    return tuple(np.lib.stride_tricks.sliding_window_view(
        np.broadcast_to(positions, shape), call["window_shape"], call["axis"])
        for positions in np.indices(shape, sparse=True))


def _read_only_windows(x, window_shape, axis=None, *, subok=False, writeable=False):
    """``sliding_window_view`` with ``writeable=True`` computed read-only: libraries ask for it
    without writing (SciPy's spectrogram and stft); a write through a window, which would change
    ``x`` and every window that overlaps it, is then refused by the engine, loudly."""
    return np.lib.stride_tricks.sliding_window_view(x, window_shape, axis, subok=subok)


def _compress_index(call) -> tuple:
    return _at_axis(np.shape(call["a"]), call["axis"], np.flatnonzero(call["condition"]))


def _extract_index(call) -> tuple:
    return np.unravel_index(np.flatnonzero(call["condition"]), np.shape(call["arr"]))


def _diagonal_index(call) -> tuple:
    shape, offset = np.shape(call["a"]), call["offset"]
    axis1, axis2 = call["axis1"] % len(shape), call["axis2"] % len(shape)
    first_row, first_column = max(-offset, 0), max(offset, 0)
    steps = np.arange(max(0, min(shape[axis1] - first_row, shape[axis2] - first_column)))
    index: list = [slice(None)] * len(shape)
    index[axis1], index[axis2] = steps + first_row, steps + first_column
    return tuple(index)


def _diagonal_values(call, dy):
    """dy (diagonal last) in the axis order of ``a[_diagonal_index(call)]``: NumPy puts the two
    index arrays' axis where they stand if they are neighbours, else first."""
    ndim = np.ndim(call["a"])
    axis1, axis2 = call["axis1"] % ndim, call["axis2"] % ndim
    return np.moveaxis(dy, -1, min(axis1, axis2) if abs(axis1 - axis2) == 1 else 0)


def _reads(index_of, array: str, values=lambda call, dy: dy):
    """The cotangent formula of a function that reads ``x[index_of(call)]``, ``x`` being its
    parameter named ``array``."""
    def cotangent(call, dy):
        x, dy = call[array], values(call, dy)
        if isinstance(dy, AbstractZero):
            return dy
        return SparseCotangent(index_of(call), dy, np.shape(x), tangent_dtype(np.result_type(x)))
    return cotangent


# --- choosing between arguments ----------------------------------------------------------------


def _where_x(call, dy):
    condition, x, _ = call.args
    return unbroadcast(np.where(condition, dy, 0), np.shape(x))


def _where_other(call, dy):
    condition, _, other = call.args
    return unbroadcast(np.where(condition, 0, dy), np.shape(other))


def _select_masks(call) -> tuple[list, np.ndarray]:
    """Where each choice is taken (the first true condition wins), and where the default is."""
    taken = np.zeros(np.shape(call.y), bool)
    masks = []
    for condition in call["condlist"]:
        masks.append(np.asarray(condition) & ~taken)
        taken = taken | condition
    return masks, ~taken


def _select_choices(call, dy):
    choices = call["choicelist"]
    parts = [unbroadcast(np.where(mask, dy, 0), np.shape(choice))
             for mask, choice in zip(call.memo(_select_masks)[0], choices)]
    return parts if isinstance(choices, (list, tuple)) else np.stack(parts)


def _select_default(call, dy):
    return unbroadcast(np.where(call.memo(_select_masks)[1], dy, 0), np.shape(call["default"]))


def _choose_choices(call, dy):
    a, choices = call.args[:2]
    chosen = np.broadcast_to(_wrapped(a, len(choices), call["mode"]), np.shape(call.y))
    in_one_array = not isinstance(choices, (list, tuple))  # plain or traced (order 2)
    if in_one_array and np.shape(choices)[1:] == np.shape(call.y):
        # choose reads choices[chosen, i0, i1, ...]: a sparse cotangent of that index.
        index = (chosen,) + np.indices(np.shape(call.y), sparse=True)
        return SparseCotangent(index, dy, choices.shape, tangent_dtype(choices.dtype))
    parts = [unbroadcast(np.where(chosen == i, dy, 0), np.shape(choice))
             for i, choice in enumerate(choices)]
    return np.stack(parts) if in_one_array else parts


def _clip_sources(call) -> tuple[np.ndarray, np.ndarray]:
    """Where clip's output is its lower bound, and where it is its upper bound.

    clip(a) = minimum(maximum(a, lower), upper): at a tie the output is ``a`` (the gradient
    flows to ``a``), and where lower > upper it is ``upper``.
    """
    a = call.args[0]
    lower = call["min"] if call["a_min"] is None else call["a_min"]
    upper = call["max"] if call["a_max"] is None else call["a_max"]
    nowhere = np.zeros(np.shape(a), bool)
    raised = a if lower is None else np.maximum(a, lower)
    from_upper = nowhere if upper is None else raised > upper
    from_lower = nowhere if lower is None else np.less(a, lower)
    return from_lower & ~from_upper, from_upper


def _clip_a(call, dy):
    from_lower, from_upper = call.memo(_clip_sources)
    return unbroadcast(np.where(from_lower | from_upper, 0, dy), np.shape(call.args[0]))


def _clip_lower(call, dy):
    return unbroadcast(np.where(call.memo(_clip_sources)[0], dy, 0), np.shape(call.args[1]))


def _clip_upper(call, dy):
    return unbroadcast(np.where(call.memo(_clip_sources)[1], dy, 0), np.shape(call.args[2]))


def _clip_pushforward(call, da, d_lower, d_upper):
    from_lower, from_upper = call.memo(_clip_sources)
    dy = np.where(from_upper, _value(d_upper), np.where(from_lower, _value(d_lower), _value(da)))
    return np.broadcast_to(dy, np.shape(call.y))


def _value(d: Any) -> Any:
    """A tangent as a value for ``np.where``: 0 for a zero tangent."""
    return 0 if isinstance(d, AbstractZero) else d


# --- unique: its values are elements of the input (the first occurrence of each) ------------


def _unique_first(call) -> tuple:
    """The index of the first occurrence of each unique value (or slice along ``axis``)."""
    options = {key: value for key, value in call.kwargs.items() if key in ("equal_nan", "sorted")}
    first = np.unique(call.x, return_index=True, axis=call["axis"], **options)[1]
    return _at_axis(np.shape(call.x), call["axis"], first)


def _unique_values(call, dy):
    return dy[0] if isinstance(dy, list) else dy


def _unique_pushforward(call, da):
    values = np.asarray(da)[_unique_first(call)]
    return (values,) + (ZeroTangent(),) * (len(call.y) - 1) if isinstance(call.y, tuple) \
        else values


# --- set operations: each output value is an element of the inputs ------------------------------
# Which element, when several hold the value (an intersection's are in both inputs), is a
# convention: the first occurrence in the inputs laid end to end, as np.unique's rule gives it
# (intersect1d's and union1d's values go to the first input where it holds them).


def _set_formulas(inputs: int) -> tuple:
    """The cotangent formulas and the pushforward of a set operation of ``inputs`` arrays."""
    def first_positions(call) -> np.ndarray:
        """For each output value, its first position in the inputs flattened and laid end
        to end (the k-th NaN of the output: the k-th NaN of the inputs)."""
        pool = np.concatenate([np.ravel(x) for x in call.args[:inputs]])
        values = np.ravel(call.y[0] if isinstance(call.y, tuple) else call.y)
        unique, first = np.unique(pool, return_index=True)
        positions = first[np.minimum(np.searchsorted(unique, values), np.shape(unique)[0] - 1)]
        missing = np.isnan(values) if values.dtype.kind in "fc" else np.zeros(values.shape, bool)
        if missing.any():
            positions[missing] = np.flatnonzero(np.isnan(pool))[:int(np.sum(missing))]
        return positions

    def cotangent_of(position: int):
        def cotangent(call, dy):
            dy = dy[0] if isinstance(dy, list) else dy
            if isinstance(dy, AbstractZero):
                return dy
            x = call.args[position]
            positions = call.memo(first_positions) - sum(
                np.size(call.args[i]) for i in range(position))
            mine = (positions >= 0) & (positions < np.size(x))
            return SparseCotangent(np.unravel_index(positions[mine], np.shape(x)),
                                   np.ravel(dy)[mine], np.shape(x),
                                   tangent_dtype(np.result_type(x)))
        return cotangent

    def pushforward(call, *dargs):
        pool = np.concatenate([np.ravel(_value(d) + np.zeros(np.shape(x))) for x, d in zip(
            call.args, dargs[:inputs])])
        values = call.y[0] if isinstance(call.y, tuple) else call.y
        tangent = np.reshape(pool[call.memo(first_positions)], np.shape(values))
        return (tangent,) + (ZeroTangent(),) * (len(call.y) - 1) \
            if isinstance(call.y, tuple) else tangent

    return [cotangent_of(position) for position in range(inputs)], pushforward


_OF_ONE, _OF_TWO = _set_formulas(1), _set_formulas(2)


# --- the table: function, then the cotangent of each positional argument ---------------------

define(np.take, _reads(_take_index, "a"))
define(np.take_along_axis, _reads(_take_along_axis_index, "arr"))
define(np.lib.stride_tricks.sliding_window_view, _reads(_window_index, "x"), refused=(),
       calls=_read_only_windows)
define(np.compress, None, _reads(_compress_index, "a"))
define(np.extract, None, _reads(_extract_index, "arr"))
define(np.diagonal, _reads(_diagonal_index, "a", _diagonal_values))
define(np.choose, None, _choose_choices)
define(np.where, None, _where_x, _where_other, pushforward=linear)
define(np.select, None, _select_choices, _select_default, pushforward=linear)
define(np.clip, _clip_a, _clip_lower, _clip_upper, pushforward=_clip_pushforward)


def _clip_expands(a: Any, lower: Any = None, upper: Any = None, *options: Any) -> bool:
    """Whether ``np.clip(a, lower, upper)`` of a small float array between constant numbers
    is ``np.minimum(np.maximum(a, lower), upper)`` with the rule's derivative: no element at
    a bound (at a tie the rule gives ``a`` the cotangent, maximum's rule splits it) and none
    NaN (the rule gives a NaN the cotangent, maximum's partials do not)."""
    if options or type(a) is not np.ndarray or a.dtype.kind != "f" or \
            not 0 < a.size < STAND_IN_SIZE or lower is None and upper is None:
        return False
    for bound in (lower, upper):
        if bound is not None and (type(bound) is not float and type(bound) is not int or
                                  _COUNT_NONZERO(a == bound)):
            return False
    return not _COUNT_NONZERO(a != a)  # (NaN; quiet under any error state)


def _clipped(values: tuple, a: Any, lower: Any = None, upper: Any = None) -> Any:
    raised = a if lower is None else np.maximum(a, lower)
    return raised if upper is None else np.minimum(raised, upper)


_COUNT_NONZERO = np.count_nonzero
# np.clip(u, -1.0, 1.0) in a loop under hvp: two elementwise records (`np.maximum`,
# `np.minimum` with a constant), each by its number form, instead of the rule's pullback
# traced (612k -> 409k instructions per step); at order 1 the rule costs less (265k
# instructions per step against the expansion's 283k)
EXPANSIONS[np.clip] = Expansion(rrule.lookup(np.clip)[0], _clip_expands, _clipped,
                                first_order=False)
define(np.unique, _reads(_unique_first, "ar", _unique_values), pushforward=_unique_pushforward)
for _f in (getattr(np, name, None) for name in ("unique_values", "unique_counts",
                                                 "unique_inverse", "unique_all")):  # NumPy 2.0
    if _f is not None:
        define(_f, *_OF_ONE[0], pushforward=_OF_ONE[1])
for _f in (np.intersect1d, np.union1d, np.setdiff1d, np.setxor1d):
    define(_f, *_OF_TWO[0], pushforward=_OF_TWO[1])

non_differentiable(
    np.argmax, np.argmin, np.argsort, np.searchsorted, np.nonzero, np.flatnonzero, np.shape,
    np.ndim, np.size, np.zeros_like, np.ones_like, np.empty_like, np.isclose, np.allclose,
    np.array_equal, np.count_nonzero, np.iscomplexobj, np.isrealobj, np.result_type,
)
