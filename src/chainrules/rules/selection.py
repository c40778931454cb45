"""Selection rules: functions that pick elements (``take``, ``diagonal``, ``where``, ``clip``...)
and functions whose outputs have no tangent (``argmax``, ``nonzero``, ``isclose``...).

A function that reads ``x[index]`` for an index NumPy understands has the cotangent
``SparseCotangent(index, dy, ...)``: the index and the projected ``dy``, never a dense array of
x's size, so reading a few elements in a loop stays linear. Each such rule is one function
that says which index it reads (``np.take(x, i, axis=1)`` reads ``x[:, i]``). Functions that
choose between arguments elementwise (``where``, ``select``, ``clip``, ``choose`` with
broadcast choices) give each argument ``dy`` where it was chosen, summed over broadcast axes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core.broadcast import unbroadcast
from ..core.dtypes import tangent_dtype
from ..core.registry import non_differentiable
from ..core.sparse import SparseCotangent
from ..core.tangents import AbstractZero, ZeroTangent
from ._define import define

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


def _take_index(a, indices, axis=None, out=None, mode="raise") -> tuple:
    shape = np.shape(a)
    size = math.prod(shape) if axis is None else shape[axis]
    return _at_axis(shape, axis, _wrapped(indices, size, mode))


def _take_along_axis_index(arr, indices, axis=-1) -> tuple:
    shape = np.shape(arr)
    if axis is None:
        return np.unravel_index(_wrapped(indices, math.prod(shape), "raise"), shape)
    axis %= len(shape)
    return tuple(_wrapped(indices, n, "raise") if i == axis else
                 np.arange(n).reshape([-1 if j == i else 1 for j in range(len(shape))])
                 for i, n in enumerate(shape))


def _compress_index(condition, a, axis=None, out=None) -> tuple:
    return _at_axis(np.shape(a), axis, np.flatnonzero(condition))


def _extract_index(condition, arr) -> tuple:
    return np.unravel_index(np.flatnonzero(condition), np.shape(arr))


def _diagonal_index(a, offset=0, axis1=0, axis2=1) -> tuple:
    shape = np.shape(a)
    axis1, axis2 = axis1 % len(shape), axis2 % len(shape)
    first_row, first_column = max(-offset, 0), max(offset, 0)
    steps = np.arange(max(0, min(shape[axis1] - first_row, shape[axis2] - first_column)))
    index: list = [slice(None)] * len(shape)
    index[axis1], index[axis2] = steps + first_row, steps + first_column
    return tuple(index)


def _diagonal_values(dy, a, offset=0, axis1=0, axis2=1):
    """dy (diagonal last) in the axis order of ``a[_diagonal_index(...)]``: NumPy puts the two
    index arrays' axis where they stand if they are neighbours, else first."""
    axis1, axis2 = axis1 % np.ndim(a), axis2 % np.ndim(a)
    return np.moveaxis(dy, -1, min(axis1, axis2) if abs(axis1 - axis2) == 1 else 0)


def _reads(index_of, array_position: int, values=lambda dy, *args, **kwargs: dy):
    """The cotangent formula of a function that reads ``x[index_of(*args)]``, ``x`` being its
    argument at ``array_position``."""
    def cotangent(dy, y, *args, **kwargs):
        x, dy = args[array_position], values(dy, *args, **kwargs)
        if isinstance(dy, AbstractZero):
            return dy
        return SparseCotangent(index_of(*args, **kwargs), dy, np.shape(x),
                               tangent_dtype(np.result_type(x)))
    return cotangent


# --- choosing between arguments ----------------------------------------------------------------


def _where_x(dy, y, condition, x, other):
    return unbroadcast(np.where(condition, dy, 0), np.shape(x))


def _where_other(dy, y, condition, x, other):
    return unbroadcast(np.where(condition, 0, dy), np.shape(other))


def _where_pushforward(dargs, y, condition, x=None, other=None):
    _, dx, d_other = dargs
    return np.broadcast_to(np.where(condition, _value(dx), _value(d_other)), np.shape(y))


def _select_masks(condlist, shape) -> tuple[list, np.ndarray]:
    """Where each choice is taken (the first true condition wins), and where the default is."""
    taken = np.zeros(shape, bool)
    masks = []
    for condition in condlist:
        masks.append(np.asarray(condition) & ~taken)
        taken = taken | condition
    return masks, ~taken


def _select_choices(dy, y, condlist, choicelist, default=0):
    masks, _ = _select_masks(condlist, np.shape(y))
    parts = [unbroadcast(np.where(mask, dy, 0), np.shape(choice))
             for mask, choice in zip(masks, choicelist)]
    return np.stack(parts) if isinstance(choicelist, np.ndarray) else parts


def _select_default(dy, y, condlist, choicelist, default=0):
    return unbroadcast(np.where(_select_masks(condlist, np.shape(y))[1], dy, 0),
                       np.shape(default))


def _select_pushforward(dargs, y, condlist, choicelist, default=0):
    _, d_choices, d_default = _padded(dargs, 3)
    if isinstance(d_choices, AbstractZero):
        d_choices = [np.zeros(np.shape(choice)) for choice in choicelist]
    return np.broadcast_to(np.select(condlist, d_choices, _value(d_default)), np.shape(y))


def _chosen(a, choices, y, mode="raise") -> np.ndarray:
    return np.broadcast_to(_wrapped(a, len(choices), mode), np.shape(y))


def _choose_choices(dy, y, a, choices, out=None, mode="raise"):
    chosen = _chosen(a, choices, y, mode)
    if isinstance(choices, np.ndarray) and choices.shape[1:] == np.shape(y):
        # choose reads choices[chosen, i0, i1, ...]: a sparse cotangent of that index.
        index = (chosen,) + np.indices(np.shape(y), sparse=True)
        return SparseCotangent(index, dy, choices.shape, tangent_dtype(choices.dtype))
    parts = [unbroadcast(np.where(chosen == i, dy, 0), np.shape(choice))
             for i, choice in enumerate(choices)]
    return np.stack(parts) if isinstance(choices, np.ndarray) else parts


_NO_VALUE = np._NoValue  # clip's "argument not given"


def _clip_sources(a, a_min=_NO_VALUE, a_max=_NO_VALUE, out=None, *, min=_NO_VALUE,
                  max=_NO_VALUE, **kwargs):
    """Where clip's output is its lower bound, and where it is its upper bound.

    clip(a) = minimum(maximum(a, lower), upper): at a tie the output is ``a`` (the gradient
    flows to ``a``), and where lower > upper it is ``upper``.
    """
    lower = min if a_min is _NO_VALUE else a_min
    upper = max if a_max is _NO_VALUE else a_max
    nowhere = np.zeros(np.shape(a), bool)
    raised = a if lower is None or lower is _NO_VALUE else np.maximum(a, lower)
    from_upper = nowhere if upper is None or upper is _NO_VALUE else raised > upper
    from_lower = nowhere if lower is None or lower is _NO_VALUE else np.less(a, lower)
    return from_lower & ~from_upper, from_upper


def _clip_a(dy, y, a, *args, **kwargs):
    from_lower, from_upper = _clip_sources(a, *args, **kwargs)
    return unbroadcast(np.where(from_lower | from_upper, 0, dy), np.shape(a))


def _clip_lower(dy, y, a, a_min, *args, **kwargs):
    from_lower = _clip_sources(a, a_min, *args, **kwargs)[0]
    return unbroadcast(np.where(from_lower, dy, 0), np.shape(a_min))


def _clip_upper(dy, y, a, a_min, a_max, *args, **kwargs):
    from_upper = _clip_sources(a, a_min, a_max, *args, **kwargs)[1]
    return unbroadcast(np.where(from_upper, dy, 0), np.shape(a_max))


def _clip_pushforward(dargs, y, a, *args, **kwargs):
    da, d_lower, d_upper = _padded(dargs, 3)
    from_lower, from_upper = _clip_sources(a, *args, **kwargs)
    dy = np.where(from_upper, _value(d_upper), np.where(from_lower, _value(d_lower), _value(da)))
    return np.broadcast_to(dy, np.shape(y))


def _padded(dargs: tuple, count: int) -> list:
    """The tangents of ``count`` positional arguments (zero for those not passed)."""
    return list(dargs) + [ZeroTangent()] * (count - len(dargs))


def _value(d: Any) -> Any:
    """A tangent as a value for ``np.where``: 0 for a zero tangent."""
    return 0 if isinstance(d, AbstractZero) else d


# --- unique: its values are elements of the input (the first occurrence of each) ------------


def _unique_first(ar, return_index=False, return_inverse=False, return_counts=False,
                  axis=None, **kwargs):
    """The index of the first occurrence of each unique value (or slice along ``axis``)."""
    first = np.unique(ar, return_index=True, axis=axis, **kwargs)[1]
    return _at_axis(np.shape(ar), axis, first)


def _unique_values(dy, *args, **kwargs):
    return dy[0] if isinstance(dy, list) else dy


def _unique_pushforward(dargs, y, ar, *args, **kwargs):
    values = np.asarray(dargs[0])[_unique_first(ar, *args, **kwargs)]
    return (values,) + (ZeroTangent(),) * (len(y) - 1) if isinstance(y, tuple) else values


# --- the table: function, then the cotangent of each positional argument ---------------------

define(np.take, _reads(_take_index, 0))
define(np.take_along_axis, _reads(_take_along_axis_index, 0))
define(np.compress, None, _reads(_compress_index, 1))
define(np.extract, None, _reads(_extract_index, 1))
define(np.diagonal, _reads(_diagonal_index, 0, _diagonal_values))
define(np.choose, None, _choose_choices)
define(np.where, None, _where_x, _where_other, pushforward=_where_pushforward)
define(np.select, None, _select_choices, _select_default, pushforward=_select_pushforward)
define(np.clip, _clip_a, _clip_lower, _clip_upper, pushforward=_clip_pushforward)
define(np.full_like, None, lambda dy, y, a, fill_value, *args, **kwargs: unbroadcast(
    dy, np.shape(fill_value)))
define(np.unique, _reads(_unique_first, 0, _unique_values), pushforward=_unique_pushforward)

non_differentiable(
    np.argmax, np.argmin, np.argsort, np.searchsorted, np.nonzero, np.flatnonzero, np.shape,
    np.ndim, np.size, np.zeros_like, np.ones_like, np.empty_like, np.isclose, np.allclose,
    np.array_equal, np.count_nonzero, np.iscomplexobj, np.isrealobj, np.result_type,
)
