"""Rules for indexing: ``x[index]`` on arrays (every index kind) and on Python containers.

The cotangent of ``x[index]`` for an array ``x`` is a `SparseCotangent`: the projected ``dy``
and the index, never a dense array of x's size. Its in-place add and its dense value are built
from the same projected values, so they agree by construction (ChainRules' getindex defect,
where ``add!`` used the raw ``dy`` and ``val`` the projected one, cannot happen).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..core.dtypes import tangent_dtype
from ..core.projection import ProjectionError, ProjectTo
from ..core.registry import frule, rrule
from ..core.sparse import SparseCotangent
from ..core.tangents import AbstractZero, NoTangent, Tangent, ZeroTangent, structural_fields
from ..core.thunks import unthunk

__all__ = ["normalize_index"]


def normalize_index(index: Any) -> Any:
    """``index`` with lists turned into arrays, as NumPy reads them.

    >>> normalize_index([0, 0, 2])
    array([0, 0, 2])
    >>> normalize_index((slice(None), [True, False]))
    (slice(None, None, None), array([ True, False]))
    """
    if isinstance(index, list):
        return np.asarray(index)
    if isinstance(index, tuple):
        return tuple(np.asarray(part) if isinstance(part, list) else part for part in index)
    return index


_NO_INDEX_TANGENTS = (NoTangent(), ZeroTangent(), NoTangent())


@rrule.register(operator.getitem)
def _getitem_rule(x: Any, index: Any):
    if isinstance(x, np.ndarray):
        return _array_getitem_rule(x, index)
    if isinstance(x, (list, tuple, dict)):
        return _container_getitem_rule(x, index)
    return None


def _array_getitem_rule(x: np.ndarray, index: Any):
    index = normalize_index(index)
    y = x[index]
    dtype = x.dtype if x.dtype.kind in "fc" else None
    if dtype is None:
        return y, lambda dy: (NoTangent(), NoTangent(), NoTangent())
    return y, _GetitemPullback(index, x.shape, np.shape(y), dtype)


class _GetitemPullback:
    """``dy -> SparseCotangent(index, dy)``: O(size of the index), never O(size of x)."""

    __slots__ = ("index", "shape", "y_shape", "dtype")

    def __init__(self, index: Any, shape: tuple, y_shape: tuple, dtype: np.dtype):
        self.index, self.shape, self.y_shape, self.dtype = index, shape, y_shape, dtype

    def __call__(self, dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return _NO_INDEX_TANGENTS
        if np.shape(dy) != self.y_shape:
            raise ProjectionError(
                f"getitem pullback: the output x[index] has shape {self.y_shape}, but the "
                f"cotangent given for it has shape {np.shape(dy)}.")
        return NoTangent(), SparseCotangent(self.index, dy, self.shape, self.dtype), NoTangent()


def _container_getitem_rule(x: Any, index: Any):
    y = x[index]
    primal_type = type(x)

    def getitem_pullback(dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return _NO_INDEX_TANGENTS
        if isinstance(index, slice):
            positions = range(len(x))[index]
            parts = structural_fields(dy) if not isinstance(dy, Tangent) else dy.backing
            backing = {positions[k]: ProjectTo(x[positions[k]])(v) for k, v in parts.items()}
        else:
            key = index
            if isinstance(x, (list, tuple)) and key < 0:
                key += len(x)
            backing = {key: ProjectTo(y)(dy)}
        return NoTangent(), Tangent(primal_type, backing), NoTangent()

    return y, getitem_pullback


@frule.register(operator.getitem)
def _getitem_frule(tangents: tuple, x: Any, index: Any):
    _, dx, _ = tangents
    index = normalize_index(index) if isinstance(x, np.ndarray) else index
    y = x[index]
    dx = unthunk(dx)
    if isinstance(dx, AbstractZero):
        return y, ZeroTangent()
    if isinstance(x, np.ndarray):
        return y, ProjectTo(y)(np.asarray(dx)[index])
    return y, dx[index]
