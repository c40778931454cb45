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

from ...core.broadcast import shape_of, unbroadcast
from ...core.dtypes import is_plain, shared_shape
from ...core.projection import ProjectionError, ProjectTo
from ...core.registry import INDEX_READ, NUMBER_FORMS, NumberForm, dual_form, frule, rrule
from ...core.duck_arrays import is_duck_array, library_name
from ...core.sparse import SparseCotangent, scatter_sum, selection_shape
from ...core.tangents import (AbstractZero, NoTangent, Tangent, ZeroTangent, field_value,
                             structural_fields)
from ...core.thunks import unthunk

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
        for part in index:
            if isinstance(part, list):
                return tuple(np.asarray(part) if isinstance(part, list) else part
                             for part in index)
    return index


_NO_INDEX_TANGENTS = (NoTangent(), ZeroTangent(), NoTangent())
_SCALARS = frozenset({float, complex, np.float64, np.float32, np.float16, np.complex128,
                      np.complex64})


@rrule.register(operator.getitem)
def _getitem_rule(x: Any, index: Any):
    if type(x) is np.ndarray or issubclass(type(x), np.ndarray):
        if type(index) is not int:
            index = normalize_index(index)
        y = x[index]
        dtype = x.dtype
        if dtype.kind not in "fc":
            return y, _no_index_tangents
        y_shape = shared_shape(y.shape) if type(y) is np.ndarray else () \
            if type(y) in _SCALARS else shared_shape(np.shape(y))
        return y, GetitemPullback(index, shared_shape(x.shape), y_shape, dtype)
    if isinstance(x, (list, tuple, dict)):
        return _container_getitem_rule(x, index)
    if _is_traced_array(x):  # order 2: the primal is a value of an outer trace
        return _traced_getitem(x, index)
    if issubclass(type(x), np.generic):  # a NumPy number: x[()], x[None], x[...]
        return _number_getitem(x, index)
    return None


def _number_getitem(x: np.generic, index: Any):
    """``x[index]`` of a NumPy number: every element of the result is ``x``, so its cotangent
    is the sum of the output's."""
    y = x[index]
    if x.dtype.kind not in "fc":
        return y, _no_index_tangents
    project = ProjectTo(x)

    def number_getitem_pullback(dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return _NO_INDEX_TANGENTS
        return _NO_TANGENT, project(np.sum(dy)), _NO_TANGENT

    return y, number_getitem_pullback


def _is_traced_array(x: Any) -> bool:
    """An engine's traced array or number (it has a dtype and takes part in NEP 18)."""
    return not is_plain(x) and hasattr(type(x), "__array_function__") and hasattr(x, "dtype")


def _traced_getitem(x: Any, index: Any):
    index = normalize_index(index)
    if is_duck_array(x) and any(is_duck_array(part) for part in (
            index if isinstance(index, tuple) else (index,))):
        raise TypeError(
            f"x[index] of a {library_name(x)} with an index that is itself a "
            f"{library_name(x)} (a mask such as x[x > 0], whose size is known only once it "
            f"is computed): its gradient cannot be built lazily. Keep the shape with "
            f"np.where(mask, value, 0.0), or index with a NumPy array.")
    y = x[index]  # recorded by the outer trace
    if x.dtype.kind not in "fc":
        return y, _no_index_tangents
    return y, GetitemPullback(index, shared_shape(tuple(x.shape)),
                               shared_shape(tuple(shape_of(y))), x.dtype,
                               x if is_duck_array(x) else None)


def _no_index_tangents(dy: Any) -> tuple:
    return _NO_TANGENTS


_NO_TANGENT = NoTangent()
_NO_TANGENTS = (_NO_TANGENT, _NO_TANGENT, _NO_TANGENT)


class GetitemPullback:
    """``dy -> SparseCotangent(index, dy)``: O(size of the index), never O(size of x)."""

    __slots__ = ("index", "shape", "y_shape", "dtype", "like")

    def __init__(self, index: Any, shape: tuple, y_shape: tuple, dtype: np.dtype,
                 like: Any = None):
        self.index, self.shape, self.y_shape, self.dtype = index, shape, y_shape, dtype
        self.like = like  # a Dask array x: its cotangent is a Dask array of x's chunks

    def __call__(self, dy: Any) -> tuple:
        if type(dy) not in _SCALARS or self.y_shape:  # a number for x[i] needs no checks
            dy = unthunk(dy)
            if issubclass(type(dy), AbstractZero):
                return _NO_INDEX_TANGENTS
            if getattr(dy, "shape", ()) != self.y_shape:
                raise ProjectionError(
                    f"getitem pullback: the output x[index] has shape {self.y_shape}, but the "
                    f"cotangent given for it has shape {np.shape(dy)}.")
        return _NO_TANGENT, SparseCotangent(self.index, dy, self.shape, self.dtype,
                                             self.like), _NO_TANGENT


def _index_read_pullback(payload: tuple) -> GetitemPullback:
    """The pullback of ``x[i]`` (a float array; an index of one element, or of slices and
    integers) from the payload ``(form, i, shape of x, dtype of x)`` an engine recorded by
    the `NumberForm` below."""
    index, shape = payload[1], payload[2]
    one = type(index) is int and len(shape) == 1 or type(index) is tuple and \
        len(index) == len(shape) and all(type(p) is int for p in index)
    y_shape = () if one else selection_shape(shape, index)
    return GetitemPullback(index, shape, y_shape, payload[3])


NUMBER_FORMS[operator.getitem] = NumberForm(_getitem_rule, operator.getitem, INDEX_READ, False,
                                            _index_read_pullback)


def _container_keys(x: Any, index: Any) -> tuple[list, bool]:
    """The structural keys (as in ``Tangent`` and ``structural_fields``) that ``x[index]``
    reads, and whether ``index`` is a slice. Namedtuples are keyed by field name, other
    sequences by non-negative position, dicts by key."""
    if isinstance(x, dict):
        return [index], False
    if isinstance(index, slice):
        positions = list(range(len(x))[index])
    else:
        position = operator.index(index)
        positions = [position + len(x) if position < 0 else position]
    names = getattr(type(x), "_fields", None) if isinstance(x, tuple) else None
    return ([names[p] for p in positions] if names else positions), isinstance(index, slice)


def _container_getitem_rule(x: Any, index: Any):
    y = x[index]
    primal_type = type(x)
    keys, sliced = _container_keys(x, index)

    def getitem_pullback(dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return _NO_INDEX_TANGENTS
        if sliced:
            parts = dy.backing if isinstance(dy, Tangent) else structural_fields(dy)
            backing = {keys[k]: ProjectTo(field_value(x, keys[k]))(v) for k, v in parts.items()}
        else:
            backing = {keys[0]: ProjectTo(y)(dy)}
        backing = {k: v for k, v in backing.items() if not isinstance(v, AbstractZero)}
        return NoTangent(), Tangent(primal_type, backing), NoTangent()

    return y, getitem_pullback


@frule.register(operator.getitem)
def _getitem_frule(tangents: tuple, x: Any, index: Any):
    _, dx, _ = tangents
    dx = unthunk(dx)
    return _getitem_push((x, index), (None if isinstance(dx, AbstractZero) else dx, None), {})


def _getitem_push(args: tuple, tangents: tuple, kwargs: dict) -> tuple:
    """The getitem frule on a plain tangent (``None`` for a zero); forward mode calls it
    directly in index loops."""
    x, index = args
    dx = tangents[0]
    if type(x) is np.ndarray and type(index) is int and type(dx) is np.ndarray:
        y = x[index]  # the hot path: x[i] in a loop
        dy = dx[index]
        return y, dy if type(dy) is type(y) and type(y) in _SCALARS else ProjectTo(y)(dy)
    index = normalize_index(index) if issubclass(type(x), np.ndarray) else index
    y = x[index]
    if dx is None:
        return y, ZeroTangent()
    if issubclass(type(x), (np.ndarray, np.generic)):
        dy = np.asarray(dx)[index]
        if type(dy) is np.ndarray and type(y) is np.ndarray and dy.dtype is y.dtype and \
                dy.shape == y.shape:
            return y, dy  # in y's tangent space already (x[1:] of a float array)
        return y, ProjectTo(y)(dy)
    if isinstance(x, (list, tuple, dict)):
        fields = dx.backing if isinstance(dx, Tangent) else structural_fields(dx)
        keys, sliced = _container_keys(x, index)
        if not sliced:
            return y, ProjectTo(y)(fields.get(keys[0], ZeroTangent()))
        backing = {k: fields[key] for k, key in enumerate(keys) if key in fields}
        return y, ProjectTo(y)(Tangent(type(y), backing)) if backing else ZeroTangent()
    return y, dx[index]


_getitem_frule.push = _getitem_push  # type: ignore[attr-defined]


def _getitem_dual(args: tuple, tangents: tuple, kwargs: dict):
    """getitem's dual form (`chainrules.core.registry.dual_form`): linear in x, its pullback
    reads only the index, so the same pullback serves the cotangent and its tangent."""
    x, index = args
    dx = tangents[0]
    if kwargs or dx is None or type(x) is not np.ndarray:
        return None
    if type(index) is int and x.ndim == 1 and type(dx) is np.ndarray:  # x[i] in a loop
        y, dy = x[index], dx[index]
        if type(y) in _SCALARS and type(dy) is type(y):
            return y, dy, GetitemPullback(index, shared_shape(x.shape), (), x.dtype), None
    y, pullback = _getitem_rule(x, index)
    if type(pullback) is GetitemPullback and type(dx) is np.ndarray and \
            dx.dtype is x.dtype and dx.shape == x.shape:
        dy = dx[pullback.index]  # the index the rule normalized; x's dtype: y's tangent space
        if type(dy) is type(y):
            return y, dy, pullback, None
    return y, _getitem_push(args, tangents, kwargs)[1], pullback, None


dual_form(operator.getitem, _getitem_rule, _getitem_dual)


# --- scatter_sum: the dense value of sparse cotangents (order 2); its pullback gathers --------

@rrule.register(scatter_sum)
def _scatter_sum_rule(shape: tuple, dtype: Any, indices: tuple, *values: Any):
    y = scatter_sum(shape, dtype, indices, *values)
    value_shapes = tuple(np.shape(value) for value in values)
    projectors = tuple(ProjectTo(value) for value in values)

    def scatter_sum_pullback(dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (NoTangent(),) * 4 + (ZeroTangent(),) * len(values)
        gathered = tuple(project(unbroadcast(dy[index], value_shape)) for index, value_shape,
                         project in zip(indices, value_shapes, projectors))
        return (NoTangent(), NoTangent(), NoTangent(), NoTangent()) + gathered

    return y, scatter_sum_pullback


@frule.register(scatter_sum)
def _scatter_sum_frule(tangents: tuple, shape: tuple, dtype: Any, indices: tuple,
                       *values: Any):
    y = scatter_sum(shape, dtype, indices, *values)
    kept = [(index, d) for index, d in zip(indices, map(unthunk, tangents[4:]))
            if not isinstance(d, AbstractZero)]
    if not kept:
        return y, ZeroTangent()
    kept_indices, kept_tangents = zip(*kept)
    return y, scatter_sum(shape, np.result_type(y), kept_indices, *kept_tangents)
