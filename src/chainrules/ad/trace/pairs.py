"""Cotangents that are values of a forward trace (forward over reverse: ``hvp``, ``jvp`` of
``grad``), summed as pairs of buffers: the backward pass (`chainrules.ad.transforms.reverse`)
owns the sum of two such cotangents, and adds later ones into its value and its tangent in
place, by the one `accumulate`, as it does at order 1.

A sparse cotangent whose values are such a value (``x[i]``'s, in a scalar loop under ``hvp``)
is a pair too: of two plain sparse cotangents, its value's and its tangent's. So an index loop
sums into two owned buffers in place, O(1) per element, as at order 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.accumulate import accumulate, owned_sum
from ...core.sparse import SparseCotangent
from ...core.tangents import AbstractZero
from .traced import Traced

__all__ = ["owned_pair_sum", "add_pair_in_place", "is_array_pair", "dense_pair"]

# Plain values that a pair holds as its value and its tangent.
_EMPTY = np.empty  # NumPy's own (a trace puts the engine's in NumPy's namespace)
_new_object = object.__new__
_PAIR_VALUES = frozenset({float, complex, np.float64, np.float32, np.complex128, np.complex64,
                          np.ndarray})


def owned_pair_sum(a: Any, b: Any) -> Any:
    """``a + b`` for two cotangents that are values of one forward trace (forward over
    reverse) holding plain values and tangents of one shape and dtype (or sparse cotangents
    of such values, `_sparse_parts`), as a new value whose
    primal and tangent are fresh buffers: an accumulator the backward pass owns, into which
    `add_pair_in_place` adds later contributions. ``None`` when they are not such a pair (the
    caller takes `owned_sum`).

    >>> from chainrules.ad.transforms.api import ENGINE_CONFIG
    >>> from chainrules.ad.transforms.forward import ForwardTrace
    >>> trace = ForwardTrace(ENGINE_CONFIG)
    >>> a, b = Traced(np.ones(2), trace, np.ones(2)), Traced(np.ones(2), trace, np.zeros(2))
    >>> total = owned_pair_sum(a, b)
    >>> total.primal, total.node, total.primal is a.primal
    (array([2., 2.]), array([1., 1.]), False)
    """
    first, second = _parts(a), _parts(b)
    if first is None or second is None or first[0] is not second[0] or \
            first[3] != second[3]:
        return None
    return Traced(owned_sum(first[1], second[1]), first[0], owned_sum(first[2], second[2]))


def add_pair_in_place(total: Any, t: Any) -> bool:
    """Add ``t`` into ``total``, an accumulator made by `owned_pair_sum`, in place (its primal
    and its tangent, by `accumulate`); False, changing nothing, when ``t`` is not a value of
    the same trace of ``total``'s shape and dtype.

    >>> from chainrules.ad.transforms.api import ENGINE_CONFIG
    >>> from chainrules.ad.transforms.forward import ForwardTrace
    >>> trace = ForwardTrace(ENGINE_CONFIG)
    >>> total = owned_pair_sum(Traced(np.ones(2), trace, np.ones(2)),
    ...                        Traced(np.ones(2), trace, np.ones(2)))
    >>> add_pair_in_place(total, Traced(np.ones(2), trace, np.ones(2))), total.node
    (True, array([3., 3.]))
    """
    if type(t) is SparseCotangent:
        parts = _sparse_parts(t)
        if parts is None or parts[0] is not total.tape or parts[3] != _space(total.primal):
            return False
        value, tangent = parts[1], parts[2]
    else:
        if not (_is_pair(t) and t.tape is total.tape and _same_space(total.primal, t.primal)):
            return False
        value, tangent = t.primal, t.node
    total.primal = accumulate(total.primal, value, owned=True)
    total.node = accumulate(total.node, tangent, owned=True)
    return True


def dense_pair(index: Any, values: Any, shape: tuple, dtype: np.dtype) -> Any:
    """The cotangent of ``x[index]`` for an ``x`` of ``shape`` and ``dtype``, whose values are
    a pair (``np.sum(x)``'s, ``index`` ``...``, or ``x[:, j]``'s, under ``hvp``), as a pair of
    two new dense buffers, its value's and its tangent's (as a plain one is
    `SparseCotangent.dense`); ``None`` for any other (a zero tangent, traced values of
    another kind).

    >>> from chainrules.ad.transforms.api import ENGINE_CONFIG
    >>> from chainrules.ad.transforms.forward import ForwardTrace
    >>> trace = ForwardTrace(ENGINE_CONFIG)
    >>> pair = Traced(np.float64(2.0), trace, np.float64(3.0))
    >>> dense = dense_pair(1, pair, (3,), np.dtype(np.float64))
    >>> dense.primal, dense.node
    (array([0., 2., 0.]), array([0., 3., 0.]))
    >>> dense_pair(..., pair, (2,), np.dtype(np.float64)).node
    array([3., 3.])
    """
    if index is Ellipsis and _is_pair(values) and type(values.node) is type(values.primal):
        # a total sum's: each buffer filled with one number (no sparse cotangent made)
        value, tangent = _EMPTY(shape, dtype), _EMPTY(shape, dtype)
        value[...], tangent[...] = values.primal, values.node
        pair = _new_object(Traced)
        pair.primal, pair.tape, pair.node = value, values.tape, tangent
        return pair
    parts = _sparse_parts(SparseCotangent(index, values, shape, dtype))
    if parts is None or type(parts[2]) is not SparseCotangent:
        return None
    return Traced(parts[1].dense(), parts[0], parts[2].dense())


def is_array_pair(value: Any) -> bool:
    """Whether ``value`` is a value of a running forward trace (one direction) whose primal
    and tangent are arrays of one shape and dtype: a pair of buffers, such as the backward pass
    makes by `owned_pair_sum` (or a write's pullback leaves, written in place).

    >>> from chainrules.ad.transforms.api import ENGINE_CONFIG
    >>> from chainrules.ad.transforms.forward import ForwardTrace
    >>> trace = ForwardTrace(ENGINE_CONFIG)
    >>> is_array_pair(Traced(np.ones(2), trace, np.ones(2))), is_array_pair(np.ones(2))
    (True, False)
    """
    return _is_pair(value) and type(value.primal) is np.ndarray and \
        type(value.node) is np.ndarray


def _parts(value: Any) -> tuple | None:
    """``(trace, value, tangent, space)`` of a pair (`_is_pair`) or of a sparse cotangent of
    one (`_sparse_parts`); ``None`` for anything else."""
    if type(value) is SparseCotangent:
        return _sparse_parts(value)
    if not _is_pair(value):
        return None
    return value.tape, value.primal, value.node, _space(value.primal)


def _sparse_parts(value: SparseCotangent) -> tuple | None:
    """`_parts` of a sparse cotangent whose values are a pair: its value and tangent as two
    plain sparse cotangents (a zero tangent as it is), in the space of the dense array."""
    pair = value.values
    if value.like is not None or not _is_pair(pair):
        return None
    index, shape, dtype = value.index, value.shape, value.dtype
    tangent = pair.node
    if not issubclass(type(tangent), AbstractZero):
        tangent = SparseCotangent(index, tangent, shape, dtype)
    return (pair.tape, SparseCotangent(index, pair.primal, shape, dtype), tangent,
            (np.ndarray, dtype, shape))


def _is_pair(value: Any) -> bool:
    """Whether ``value`` is a value of a running forward trace (one direction) whose primal
    and tangent are plain numbers or arrays of the primal's shape and dtype, or a zero."""
    if type(value) is not Traced or not getattr(value.tape, "one_direction", False) \
            or value.tape.finished:
        return False
    primal, tangent = value.primal, value.node
    if type(primal) not in _PAIR_VALUES:
        return False
    if issubclass(type(tangent), AbstractZero):
        return True
    return type(tangent) is type(primal) and (type(primal) is not np.ndarray or (
        tangent.dtype is primal.dtype and tangent.shape == primal.shape))


def _same_space(first: Any, second: Any) -> bool:
    """Whether two pairs' values have one kind, dtype and shape (so their sum keeps them)."""
    if type(first) is not type(second):
        return False
    return type(first) is not np.ndarray or (first.dtype is second.dtype
                                             and first.shape == second.shape)


def _space(primal: Any) -> tuple:
    """The kind, dtype and shape of a pair's value (two pairs of one space sum in it)."""
    if type(primal) is np.ndarray:
        return np.ndarray, primal.dtype, primal.shape
    return type(primal), None, ()
