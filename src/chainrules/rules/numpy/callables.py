"""Rules for NumPy functions that take a user callable: vectorize, apply_along_axis,
apply_over_axes, piecewise.

Each calls back into whichever AD system runs it (``rrule_via_ad(config, f, ...)``) once per
element, row or piece. The callable's own tangent (the tangent of what a closure captures, or
of a callable object's attributes) is summed over the calls with `accumulate` into a sum this
rule owns: the first call's tangent is copied into an owned buffer, every later one is added in
place, so ``np.vectorize(lambda i: x[i] ** 2)(np.arange(n))`` costs O(n), not O(n**2)
(ChainRules' ``sum(f, xs)`` defect). Argument cotangents are gathered the same way.

The frules push each call forward with ``frule_via_ad``, which derives a pushforward from
reverse mode when the callable has no frule of its own.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from ...core.accumulate import accumulate
from ...core.broadcast import unbroadcast
from ...core.config import RuleConfig, frule_via_ad, rrule_via_ad
from ...core.naming import function_name, is_function
from ...core.dtypes import tangent_dtype
from ...core.projection import ProjectTo
from ...core.registry import frule, recorded_whole, rrule
from ...core.sparse import SparseCotangent, scatter_sum
from ...core.tangents import AbstractZero, NoTangent, Tangent, ZeroTangent
from ...core.thunks import unthunk

__all__ = ["vectorized_call"]


@recorded_whole  # the engine records `np.vectorize(f)(...)` as this function
def vectorized_call(pyfunc: Callable, *args: Any, otypes: Any = None, excluded: Any = None,
                    signature: Any = None, **kwargs: Any) -> Any:
    """``np.vectorize(pyfunc, otypes=..., ...)(*args)``: the function the engine records
    when a vectorized function is called on (or closes over) traced values.

    >>> vectorized_call(lambda a, b: a * b, np.arange(3.0), 2.0)
    array([0., 2., 4.])
    """
    vectorized = np.vectorize(pyfunc, otypes=otypes, excluded=excluded, signature=signature)
    return vectorized(*args, **kwargs)


class _Buffers:
    """Owned cotangent sums for the arguments of a higher-order rule (None: no tangent)."""

    def __init__(self, arrays: list):
        self.buffers = [np.zeros(a.shape, dtype) if (dtype := tangent_dtype(a.dtype)) else None
                        for a in arrays]

    def add(self, position: int, index: Any, cotangent: Any) -> None:
        buffer = self.buffers[position]
        if buffer is None or isinstance(cotangent, AbstractZero):
            return
        sparse = SparseCotangent(index, unthunk(cotangent), buffer.shape, buffer.dtype)
        self.buffers[position] = accumulate(buffer, sparse, owned=True)


def _broadcast(args: tuple) -> list:
    """The arguments broadcast against each other (np.broadcast_to, which has a rule: they may
    be traced when this rule runs inside an outer trace)."""
    shape = np.broadcast_shapes(*[np.shape(a) for a in args])
    return [np.broadcast_to(np.asarray(a), shape) for a in args]


def _scatter(shape: tuple, dtype: Any, parts: list) -> Any:
    """The array of ``shape`` that holds each part's values where its mask (disjoint from the
    others) is true, 0 elsewhere. On plain values: written into a new array; otherwise (traced
    values, when this rule runs inside an outer trace) gathered from the concatenated parts,
    with no writes, so that it can be differentiated."""
    if all(issubclass(type(values), (np.ndarray, np.generic, int, float, complex))
           for _, values in parts):
        out = np.zeros(shape, dtype)
        for mask, values in parts:
            out[mask] = values
        return out
    positions = [np.flatnonzero(mask) for mask, _ in parts]
    covered = np.zeros(shape, bool)
    for mask, _ in parts:
        covered = covered | mask
    positions.append(np.flatnonzero(~covered))
    flat = np.concatenate([np.reshape(np.broadcast_to(values, np.shape(p)), (-1,))
                           for (_, values), p in zip(parts, positions)]
                          + [np.zeros(len(positions[-1]), dtype)])
    return np.reshape(flat[np.argsort(np.concatenate(positions))], shape)


def _refuse_vectorize_options(pyfunc: Callable, excluded: Any, kwargs: dict) -> None:
    if excluded or kwargs:
        raise NotImplementedError(
            f"np.vectorize({function_name(pyfunc)}) with excluded= or keyword arguments is not "
            f"differentiable yet; pass every vectorized argument positionally.")


def _loop(pyfunc: Callable, args: tuple, signature: Any) -> tuple:
    """``(loop shape, arguments)``: the arguments broadcast over their loop dimensions (all
    of them without a ``signature``; those before each argument's core dimensions with one,
    as ``np.vectorize`` reads ``"(n),(n)->()"``), so that ``a[index]`` is one call's slice."""
    if signature is None:
        arrays = _broadcast(args)
        return (arrays[0].shape if arrays else ()), arrays
    inputs, _, outputs = str(signature).replace(" ", "").partition("->")
    core = [len([d for d in group.split(",") if d])
            for group in re.findall(r"\(([^()]*)\)", inputs)]
    if len(re.findall(r"\(([^()]*)\)", outputs)) != 1:
        raise NotImplementedError(
            f"np.vectorize({function_name(pyfunc)}, signature={signature!r}): several "
            f"outputs are not differentiable yet; return one array (stack the outputs).")
    if len(core) != len(args):
        raise TypeError(f"wrong number of positional arguments: expected {len(core)}, got "
                        f"{len(args)}")
    loops = [np.shape(a)[:np.ndim(a) - count] for a, count in zip(args, core)]
    shape = np.broadcast_shapes(*loops)
    return shape, [np.broadcast_to(np.asarray(a), shape + np.shape(a)[np.ndim(a) - count:])
                   for a, count in zip(args, core)]


def _core_shape(results: list) -> tuple:
    """The shape of one call's output (the core dimensions of a ``signature``)."""
    return np.shape(results[0]) if results else ()


def _no_cotangents(count: int) -> tuple:
    return (NoTangent(),) * count


@rrule.register(vectorized_call, config=True)
def _vectorize_rule(config: RuleConfig, pyfunc: Callable, *args: Any, otypes: Any = None,
                    excluded: Any = None, signature: Any = None, **kwargs: Any):
    _refuse_vectorize_options(pyfunc, excluded, kwargs)
    shape, arrays = _loop(pyfunc, args, signature)
    results, pullbacks = [], []
    for index in np.ndindex(shape):
        y_i, pullback_i = rrule_via_ad(config, pyfunc, *[a[index] for a in arrays])
        results.append(y_i)
        pullbacks.append(pullback_i)
    dtype = np.dtype(otypes[0]) if otypes else None
    y = np.array(results, dtype=dtype).reshape(shape + _core_shape(results))
    projectors = [ProjectTo(a) for a in args]

    def vectorize_pullback(dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero) or y.dtype.kind not in "fc":
            return _no_cotangents(2 + len(args))
        function_tangent: Any = ZeroTangent()
        buffers = _Buffers(arrays)
        dy = np.broadcast_to(dy, y.shape)
        for index, pullback_i in zip(np.ndindex(shape), pullbacks):
            cotangents = pullback_i(dy[index])
            function_tangent = accumulate(function_tangent, cotangents[0], owned=True)
            for position in range(len(arrays)):
                buffers.add(position, index, cotangents[position + 1])
        argument_cotangents = [
            NoTangent() if buffer is None else project(unbroadcast(unthunk(buffer), np.shape(arg)))
            for buffer, project, arg in zip(buffers.buffers, projectors, args)]  # (a SparseSum
        # of traced slices at order 2 is made dense first)
        return (NoTangent(), function_tangent, *argument_cotangents)

    return y, vectorize_pullback


@rrule.register(np.apply_along_axis, config=True)
def _apply_along_axis_rule(config: RuleConfig, func1d: Callable, axis: int, arr: Any,
                           *args: Any, **kwargs: Any):
    arr = np.asarray(arr)
    axis = axis % arr.ndim
    moved = np.moveaxis(arr, axis, -1)
    outer = moved.shape[:-1]
    results, pullbacks = [], []
    for index in np.ndindex(outer):
        y_i, pullback_i = rrule_via_ad(config, func1d, moved[index], *args, **kwargs)
        results.append(np.asarray(y_i))
        pullbacks.append(pullback_i)
    stacked = np.stack(results).reshape(outer + results[0].shape)
    # np.apply_along_axis puts the output's dimensions where `axis` was.
    out_ndim = results[0].ndim
    y = np.moveaxis(stacked, tuple(range(len(outer), len(outer) + out_ndim)),
                    tuple(range(axis, axis + out_ndim))) if out_ndim else stacked
    project_arr = ProjectTo(arr)
    project_args = [ProjectTo(a) for a in args]

    def apply_along_axis_pullback(dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero) or y.dtype.kind not in "fc":
            return _no_cotangents(4 + len(args))
        dy = np.asarray(dy)
        if out_ndim:
            dy = np.moveaxis(dy, tuple(range(axis, axis + out_ndim)),
                             tuple(range(len(outer), len(outer) + out_ndim)))
        function_tangent: Any = ZeroTangent()
        arr_buffer = _Buffers([moved])
        arg_sums: list = [ZeroTangent()] * len(args)
        for index, pullback_i in zip(np.ndindex(outer), pullbacks):
            cotangents = pullback_i(dy[index])
            function_tangent = accumulate(function_tangent, cotangents[0], owned=True)
            arr_buffer.add(0, index + (slice(None),), cotangents[1])
            for position in range(len(args)):
                arg_sums[position] = accumulate(arg_sums[position], cotangents[2 + position],
                                                owned=True)
        buffer = arr_buffer.buffers[0]
        arr_cotangent = NoTangent() if buffer is None else project_arr(
            np.moveaxis(unthunk(buffer), -1, axis))  # traced slices (order 2): a SparseSum
        return (NoTangent(), function_tangent, NoTangent(), arr_cotangent,
                *[project(s) for project, s in zip(project_args, arg_sums)])

    return y, apply_along_axis_pullback


def _over_axes(func: Callable, a: Any, axes: Any, step: Callable) -> tuple:
    """np.apply_over_axes' loop, each call of ``func`` made by ``step(value, axis)`` (which
    returns the result and what to keep of the call): ``(result, [(kept, axis, expanded)])``."""
    value = np.asarray(a)
    count = value.ndim
    steps = []
    for axis in (axes,) if np.ndim(axes) == 0 else axes:
        axis = axis + count if axis < 0 else axis
        result, kept = step(value, axis)
        expanded = np.ndim(result) != np.ndim(value)
        if expanded:
            result = np.expand_dims(result, axis)
            if np.ndim(result) != np.ndim(value):
                raise ValueError("function is not returning an array of the correct shape")
        value = result
        steps.append((kept, axis, expanded))
    return value, steps


@rrule.register(np.apply_over_axes, config=True)
def _apply_over_axes_rule(config: RuleConfig, func: Callable, a: Any, axes: Any):
    y, steps = _over_axes(func, a, axes, lambda value, axis: rrule_via_ad(
        config, func, value, axis))
    project_a = ProjectTo(a)

    def apply_over_axes_pullback(dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero) or np.result_type(y).kind not in "fc":
            return _no_cotangents(4)
        function_tangent: Any = ZeroTangent()
        for pullback, axis, expanded in reversed(steps):
            cotangents = pullback(np.squeeze(dy, axis) if expanded else dy)
            function_tangent = accumulate(function_tangent, cotangents[0], owned=True)
            dy = unthunk(cotangents[1])
            if isinstance(dy, AbstractZero):
                return NoTangent(), function_tangent, ZeroTangent(), NoTangent()
        return NoTangent(), function_tangent, project_a(dy), NoTangent()

    return y, apply_over_axes_pullback


@frule.register(np.apply_over_axes, config=True)
def _apply_over_axes_frule(config: RuleConfig, tangents: tuple, func: Callable, a: Any,
                           axes: Any):
    function_tangent, a_tangent, _ = _tangents_of(tangents, 3)
    carried = [a_tangent]

    def step(value: Any, axis: int) -> tuple:
        result, tangent = frule_via_ad(config, (function_tangent, carried[0], NoTangent()),
                                       func, value, axis)
        tangent = unthunk(tangent)
        carried[0] = tangent if isinstance(tangent, AbstractZero) or np.ndim(
            result) == np.ndim(value) else np.expand_dims(tangent, axis)
        return result, None

    y, _ = _over_axes(func, a, axes, step)
    tangent = carried[0]
    if np.result_type(y).kind not in "fc":
        return y, NoTangent()
    return y, tangent if isinstance(tangent, AbstractZero) else ProjectTo(y)(tangent)


@rrule.register(np.piecewise, config=True)
def _piecewise_rule(config: RuleConfig, x: Any, condlist: Any, funclist: Any, *args: Any,
                    **kwargs: Any):
    x = np.asarray(x)
    conditions = [np.asarray(c, dtype=bool) for c in (
        [condlist] if np.asarray(condlist).dtype == bool and np.ndim(condlist) == x.ndim
        else condlist)]
    if len(funclist) == len(conditions) + 1:
        conditions.append(~np.any(conditions, axis=0))
    if len(funclist) != len(conditions):
        raise ValueError(f"np.piecewise: {len(conditions)} conditions and {len(funclist)} "
                         f"functions; expected as many functions, or one more (the default)")
    # Later conditions win where several hold, as in np.piecewise.
    taken = np.zeros(x.shape, bool)
    masks = []
    for condition in reversed(conditions):
        masks.append(condition & ~taken)
        taken |= condition
    masks.reverse()
    pieces, parts = [], []
    for position, (mask, function) in enumerate(zip(masks, funclist)):
        if is_function(function):
            y_k, pullback_k = rrule_via_ad(config, function, x[mask], *args, **kwargs)
            parts.append((mask, y_k))
            pieces.append((position, mask, pullback_k))
        else:
            parts.append((mask, function))
    y = _scatter(x.shape, np.result_type(x, float), parts)
    y = y.astype(np.result_type(x, y)) if x.dtype.kind in "fc" else y
    project_x = ProjectTo(x)
    project_args = [ProjectTo(a) for a in args]

    def piecewise_pullback(dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return _no_cotangents(4 + len(args))
        dy = np.asarray(dy)
        x_dtype = tangent_dtype(x.dtype)
        x_parts = []
        function_tangents: dict = {}
        arg_sums: list = [ZeroTangent()] * len(args)
        for position, mask, pullback_k in pieces:
            cotangents = pullback_k(dy[mask])
            if not isinstance(cotangents[0], AbstractZero):
                function_tangents[position] = cotangents[0]
            if not isinstance(cotangents[1], AbstractZero):
                x_parts.append((mask, unthunk(cotangents[1])))
            for j in range(len(args)):
                arg_sums[j] = accumulate(arg_sums[j], cotangents[2 + j], owned=True)
        funclist_tangent = Tangent(type(funclist), function_tangents) if function_tangents \
            else NoTangent()
        x_cotangent = NoTangent() if x_dtype is None else project_x(
            _scatter(x.shape, x_dtype, x_parts))
        return (NoTangent(), x_cotangent, NoTangent(), funclist_tangent,
                *[project(s) for project, s in zip(project_args, arg_sums)])

    piecewise_pullback.masks = masks  # the pieces, for the frule
    return y, piecewise_pullback


# --- forward mode: the same calls, each pushed forward by frule_via_ad ------------------------

def _tangents_of(tangents: tuple, count: int) -> list:
    """The input tangents after the function's own, unthunked, padded with zeros."""
    given = [unthunk(t) for t in tangents[1:]]
    return given + [ZeroTangent()] * (count - len(given))


def _part(tangent: Any, index: Any) -> Any:
    """``tangent[index]`` for an array tangent; a zero stays a zero."""
    if isinstance(tangent, AbstractZero):
        return tangent
    return np.asarray(tangent)[index]


def _dense_output_tangent(y: np.ndarray, parts: list, positions: list) -> Any:
    kept = [(position, unthunk(part)) for position, part in zip(positions, parts)
            if not isinstance(unthunk(part), AbstractZero)]
    if not kept:
        return ZeroTangent()
    # scatter_sum, not writes into a buffer: traced parts (order 2) are recorded.
    return ProjectTo(y)(scatter_sum(y.shape, y.dtype, tuple(p for p, _ in kept),
                                    *(part for _, part in kept)))


@frule.register(vectorized_call, config=True)
def _vectorize_frule(config: RuleConfig, tangents: tuple, pyfunc: Callable, *args: Any,
                     otypes: Any = None, excluded: Any = None, signature: Any = None,
                     **kwargs: Any):
    _refuse_vectorize_options(pyfunc, excluded, kwargs)
    function_tangent, *argument_tangents = _tangents_of(tangents, 1 + len(args))
    shape, arrays = _loop(pyfunc, args, signature)
    argument_tangents = [t if isinstance(t, AbstractZero) else np.broadcast_to(t, a.shape)
                         for t, a in zip(argument_tangents, arrays)]
    results, parts, positions = [], [], []
    for index in np.ndindex(shape):
        y_i, dy_i = frule_via_ad(config, (function_tangent,) + tuple(
            _part(t, index) for t in argument_tangents), pyfunc, *[a[index] for a in arrays])
        results.append(y_i)
        parts.append(dy_i)
        positions.append(index)
    y = np.array(results, dtype=np.dtype(otypes[0]) if otypes else None).reshape(
        shape + _core_shape(results))
    if y.dtype.kind not in "fc":
        return y, NoTangent()
    return y, _dense_output_tangent(y, parts, positions)


@frule.register(np.apply_along_axis, config=True)
def _apply_along_axis_frule(config: RuleConfig, tangents: tuple, func1d: Callable, axis: int,
                            arr: Any, *args: Any, **kwargs: Any):
    function_tangent, _, arr_tangent, *arg_tangents = _tangents_of(tangents, 3 + len(args))
    arr = np.asarray(arr)
    axis = axis % arr.ndim
    moved = np.moveaxis(arr, axis, -1)
    moved_tangent = arr_tangent if isinstance(arr_tangent, AbstractZero) else \
        np.moveaxis(np.asarray(arr_tangent), axis, -1)
    outer = moved.shape[:-1]
    results, parts = [], []
    for index in np.ndindex(outer):
        y_i, dy_i = frule_via_ad(config, (function_tangent, _part(moved_tangent, index),
                                          *arg_tangents), func1d, moved[index], *args, **kwargs)
        results.append(np.asarray(y_i))
        parts.append(dy_i)
    out_ndim = results[0].ndim
    stacked = np.stack(results).reshape(outer + results[0].shape)
    if stacked.dtype.kind not in "fc" or all(isinstance(p, AbstractZero) for p in parts):
        tangent = NoTangent() if stacked.dtype.kind not in "fc" else ZeroTangent()
    else:
        tangent = np.stack([np.zeros(r.shape, stacked.dtype) if isinstance(p, AbstractZero)
                            else np.asarray(unthunk(p), stacked.dtype)
                            for r, p in zip(results, parts)]).reshape(stacked.shape)

    def to_output(value):
        return np.moveaxis(value, tuple(range(len(outer), len(outer) + out_ndim)),
                           tuple(range(axis, axis + out_ndim))) if out_ndim else value
    y = to_output(stacked)
    return y, tangent if isinstance(tangent, AbstractZero) else ProjectTo(y)(to_output(tangent))


@frule.register(np.piecewise, config=True)
def _piecewise_frule(config: RuleConfig, tangents: tuple, x: Any, condlist: Any,
                     funclist: Any, *args: Any, **kwargs: Any):
    x_tangent, _, funclist_tangent, *arg_tangents = _tangents_of(tangents, 3 + len(args))
    y, pullback = _piecewise_rule(config, x, condlist, funclist, *args, **kwargs)
    masks = pullback.masks
    parts, positions = [], []
    for position, (mask, function) in enumerate(zip(masks, funclist)):
        if is_function(function):
            function_tangent = funclist_tangent if isinstance(funclist_tangent, AbstractZero) \
                else funclist_tangent[position]
            _, d_k = frule_via_ad(config, (function_tangent, _part(x_tangent, mask),
                                           *arg_tangents), function, np.asarray(x)[mask],
                                  *args, **kwargs)
            parts.append(d_k)
            positions.append(mask)
    if y.dtype.kind not in "fc":
        return y, NoTangent()
    return y, _dense_output_tangent(y, parts, positions)
