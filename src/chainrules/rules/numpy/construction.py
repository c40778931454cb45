"""Rules for functions that build, extend, cut or resample arrays: ``append``, ``insert``,
``delete``, ``rollaxis``, ``row_stack``, ``cross``, ``gradient``, ``ediff1d``, ``nan_to_num``,
``real_if_close``, ``linspace``/``logspace``/``geomspace`` (traced endpoints), ``full``/
``full_like`` (a traced fill value), the function ``np.astype``, ``partition`` and ``vander``.

One table line per function (see `chainrules.rules.define`). Functions that only route elements (``append``,
``insert``, ``delete``) share one mechanism: the function applied to *labels* (each element's
flat position, -1 for the other arguments) says where every element went, and the cotangent
gathers ``dy`` back from there (a scatter-add: ``insert`` may copy a value to several places):

    define(np.delete, _routed(0), pushforward=linear)

Decisions a NumPy user may want to know:

- ``np.gradient``: differentiable in ``f`` and in scalar spacings; coordinate arrays are
  constants (a traced one raises NotImplementedError when its cotangent is asked for).
- ``np.nan_to_num``: the replaced values (``nan=``, ``posinf=``, ``neginf=``) are
  differentiable; ``copy=False`` (writes into the input) is refused.
- ``np.real_if_close``: where NumPy drops the imaginary parts (all within ``tol``), they get no
  gradient, as the output does not depend on them there.
- ``np.partition``: the value is computed as ``take_along_axis(a, argpartition(a))``, so value
  and gradient use one permutation; ``np.argpartition`` is non-differentiable.
- ``np.put_along_axis`` writes into its first argument: in differentiated code it raises a
  clear error (`chainrules.core.registry.writes_in_place`) rather than a wrong gradient.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...core.broadcast import unbroadcast
from ...core.dtypes import as_array, is_plain
from ...core.registry import non_differentiable, writes_in_place
from ...core.sparse import scatter_sum
from ...core.tangents import AbstractZero, NoTangent, ZeroTangent
from ..define import Call, define, dense_tangent, linear, normalize_axis_tuple, unsupported
from .shape import _at_least, _promoted_join_back, _reshape_back, _reshape_forward, \
    moved_by_strides

__all__: list[str] = []


# --- routing functions: append, insert, delete ---------------------------------------------------

def _with_routed(call: Call, routed: tuple, replace: Any) -> Any:
    """``f`` called with each ``routed`` argument ``x`` at position ``p`` (passed by position
    or keyword) replaced by ``replace(p, x)``, the other arguments kept."""
    args, kwargs = list(call.args), dict(call.kwargs)
    names = {position: name for name, position in call.rule.positions.items()}
    for p in routed:
        if p < len(args):
            args[p] = None if args[p] is None else replace(p, args[p])
        elif kwargs.get(names.get(p)) is not None:
            kwargs[names[p]] = replace(p, kwargs[names[p]])
    return call.rule.f(*args, **kwargs)


def _labels_in(call: Call, position: int, routed: tuple) -> np.ndarray:
    """The function applied with argument ``position`` replaced by its elements' flat positions
    and the other ``routed`` arguments by -1: where each element of that argument went."""
    def label(p: int, x: Any) -> np.ndarray:
        shape = np.shape(x)
        return np.arange(math.prod(shape)).reshape(shape) if p == position \
            else np.full(shape, -1)

    return np.asarray(_with_routed(call, routed, label))


def _routed(position: int, routed: tuple = (0,)) -> Any:
    """The cotangent of argument ``position`` of a function that copies its elements into the
    output (the others of ``routed`` too): ``dy`` gathered back, summed over copies."""
    def cotangent(call: Call, dy: Any) -> Any:
        labels = np.ravel(_labels_in(call, position, routed))
        taken = np.flatnonzero(labels >= 0)
        dy = as_array(dy)
        shape = np.shape(call.args[position])
        flat = scatter_sum((math.prod(shape),), dy.dtype, (labels[taken],),
                           np.ravel(dy)[taken])
        return np.reshape(flat, shape)

    return cotangent


def _routed_pushforward(*routed: int) -> Any:
    """The pushforward of a routing function, linear in its ``routed`` arguments together: the
    function of their tangents (zeros for one without: a constant, passed by keyword or not
    differentiated), its other arguments (indices, axes) kept."""
    def pushforward(call: Call, *dargs: Any) -> Any:
        def tangent(p: int, x: Any) -> Any:
            if x is None:  # an optional argument not given (ediff1d's to_begin=None)
                return None
            d = dargs[p] if p < len(dargs) and p < len(call.args) else NoTangent()
            return dense_tangent(x, ZeroTangent() if isinstance(d, AbstractZero) else d)

        return _with_routed(call, routed, tangent)

    return pushforward


# --- rollaxis: a moveaxis -------------------------------------------------------------------------

def _rollaxis_destination(call: Call) -> tuple[int, int]:
    """``(axis, destination)``: np.rollaxis(a, axis, start) is np.moveaxis(a, axis, destination)."""
    ndim = call.a.ndim
    axis = normalize_axis_tuple(call["axis"], ndim)[0]
    start = call["start"]
    start = start + ndim if start < 0 else start  # NumPy has checked its range
    return axis, start - 1 if axis < start else start


# --- cross: bilinear; <dc, a x b> = <conj(b) x dc, a> = <dc x conj(a), b> -------------------------

def _vector_axes(call: Call) -> tuple[int, int, int]:
    axis = call["axis"]
    if axis is not None:
        return axis, axis, axis
    return call["axisa"], call["axisb"], call["axisc"]


def _as_3d(x: Any, axis: int) -> Any:
    """``x`` with its vector axis last, zero-padded from 2 to 3 components."""
    x = np.moveaxis(as_array(x), axis, -1)
    if np.shape(x)[-1] == 2:
        x = np.concatenate([x, np.zeros(np.shape(x)[:-1] + (1,), np.result_type(x))], axis=-1)
    return x


def _cross(x: Any, y: Any) -> Any:
    """np.cross, of complex vectors by real and imaginary parts: NumPy 1.26's complex
    multiplication rounds differently with the memory alignment of its operands, and a
    cotangent must be the same number each time it is computed."""
    if not (np.iscomplexobj(x) or np.iscomplexobj(y)):
        return np.cross(x, y)
    xr, xi, yr, yi = np.real(x), np.imag(x), np.real(y), np.imag(y)
    return (np.cross(xr, yr) - np.cross(xi, yi)) + 1j * (np.cross(xr, yi) + np.cross(xi, yr))


def _cross_cotangent(of_b: bool) -> Any:
    def cotangent(call: Call, dy: Any) -> Any:
        a, b = call.args[:2]
        axis_a, axis_b, axis_c = _vector_axes(call)
        dy = as_array(dy)
        if np.shape(a)[axis_a] == 2 and np.shape(b)[axis_b] == 2:  # a scalar: the z component
            zeros = np.zeros(np.shape(dy) + (2,), np.result_type(dy))
            dc = np.concatenate([zeros, np.expand_dims(dy, -1)], axis=-1)
        else:
            dc = np.moveaxis(dy, axis_c, -1)
        other = np.conj(_as_3d(a if of_b else b, axis_a if of_b else axis_b))
        d = _cross(dc, other) if of_b else _cross(other, dc)
        x, axis = (b, axis_b) if of_b else (a, axis_a)
        shape = list(np.shape(x))
        axis %= len(shape)
        moved = tuple(shape[:axis] + shape[axis + 1:] + shape[axis:axis + 1])
        return np.moveaxis(unbroadcast(d[..., :shape[axis]], moved), -1, axis)

    return cotangent


# --- gradient: a banded linear map along each axis ----------------------------------------------

def _gradient_axes(call: Call) -> tuple:
    axis = call["axis"]
    ndim = np.ndim(call.args[0])
    return tuple(range(ndim)) if axis is None else normalize_axis_tuple(axis, ndim)


def _spacing(call: Call, k: int) -> Any:
    """The spacing argument that serves the ``k``-th differentiated axis (1.0 if none)."""
    spacings = call.args[1:]
    if not spacings:
        return 1.0
    return spacings[0] if len(spacings) == 1 else spacings[k]


def _spacing_position(call: Call, k: int) -> int | None:
    count = len(call.args) - 1
    return None if count == 0 else 1 if count == 1 else 1 + k


def _stencil(call: Call, k: int, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``[(sources_r, weights_r)]`` for r = 0, 1, 2: output i of the gradient along an axis of
    length ``n`` is ``sum_r weights_r[i] * f[sources_r[i]]``. Each output reads 3 neighbours
    (or 2) in a window that starts at ``clip(i - 1, 0, n - 3)``, one of each residue mod 3, so
    the gradient of the comb ``(j % 3 == r)`` is the weight of that neighbour. A scalar
    spacing h divides the unit-spacing weights (it may be traced, at order 2)."""
    spacing = _spacing(call, k)
    coordinates = (np.asarray(spacing),) if np.ndim(spacing) else ()
    positions = np.arange(n)
    start = np.clip(positions - 1, 0, max(n - 3, 0))
    stencil = []
    for r in range(3):
        comb = (positions % 3 == r).astype(np.float64)
        weights = np.gradient(comb, *coordinates, edge_order=call["edge_order"])
        if not coordinates:
            weights = weights / spacing
        sources = np.minimum(start + (r - start) % 3, n - 1)
        stencil.append((sources, weights))
    return stencil


def _outputs(call: Call, dy: Any) -> list:
    """The gradient's outputs (or their cotangents) as a list, one per differentiated axis."""
    return list(dy) if isinstance(call.y, (list, tuple)) else [dy]


def _gradient_f(call: Call, dy: Any) -> Any:
    f = call.args[0]
    total: Any = ZeroTangent()
    for k, (axis, d) in enumerate(zip(_gradient_axes(call), _outputs(call, dy))):
        if isinstance(d, AbstractZero):
            continue
        moved = np.moveaxis(as_array(d), axis, 0)
        n = moved.shape[0]
        column = (n,) + (1,) * (moved.ndim - 1)
        stencil = _stencil(call, k, n)
        part = scatter_sum(moved.shape, np.result_type(moved), tuple(s for s, _ in stencil),
                           *(np.reshape(w, column) * moved for _, w in stencil))
        part = np.moveaxis(part, 0, axis)
        total = part if isinstance(total, AbstractZero) else total + part
    return total if isinstance(total, AbstractZero) else np.reshape(total, np.shape(f))


def _coordinates_refused(call: Call) -> NotImplementedError:
    return NotImplementedError(
        f"{call.name}: differentiating with respect to coordinate arrays (varargs that are "
        f"arrays) is not supported; pass them as constants, or use a scalar spacing.")


def _gradient_cotangent(call: Call, dy: Any, position: int) -> Any:
    if position == 0:
        return _gradient_f(call, dy)
    if np.ndim(call.args[position]):
        raise _coordinates_refused(call)
    # y_k = D f / h_k for the axes k that this spacing serves: dy_k/dh = -y_k / h
    h = call.args[position]
    total: Any = 0.0
    ys, dys = _outputs(call, call.y), _outputs(call, dy)
    for k in range(len(ys)):
        if _spacing_position(call, k) == position and not isinstance(dys[k], AbstractZero):
            total = total - np.sum(np.conj(ys[k]) * dys[k]) / np.conj(h)
    return total


def _gradient_pushforward(call: Call, df: Any, *dspacings: Any) -> Any:
    ys = _outputs(call, call.y)
    if isinstance(df, AbstractZero):
        dys: list = [ZeroTangent()] * len(ys)
    else:
        dys = _outputs(call, call.apply(df, 0))
    for position, dh in enumerate(dspacings, start=1):
        if isinstance(dh, AbstractZero):
            continue
        h = call.args[position]
        if np.ndim(h):
            raise _coordinates_refused(call)
        for k in range(len(ys)):
            if _spacing_position(call, k) == position:
                term = -ys[k] / h * dh
                dys[k] = term if isinstance(dys[k], AbstractZero) else dys[k] + term
    return dys if isinstance(call.y, (list, tuple)) else dys[0]


# --- ediff1d: (to_begin, diff(ravel(ary)), to_end) ------------------------------------------------

def _count(x: Any) -> int:
    return 0 if x is None else int(np.size(x))


def _ediff1d_ary(call: Call, dy: Any) -> Any:
    begin = _count(call["to_begin"])
    n = int(np.size(call.args[0]))
    d = as_array(dy)[begin:begin + max(n - 1, 0)]
    return np.reshape(-np.diff(d, prepend=0.0, append=0.0), np.shape(call.args[0])) if n \
        else np.zeros(np.shape(call.args[0]))


def _ediff1d_end(call: Call, dy: Any) -> Any:
    end = _count(call["to_end"])
    dy = as_array(dy)
    return np.reshape(dy[np.shape(dy)[0] - end:], np.shape(call["to_end"]))


def _ediff1d_begin(call: Call, dy: Any) -> Any:
    return np.reshape(as_array(dy)[:_count(call["to_begin"])], np.shape(call["to_begin"]))


# --- nan_to_num: finite values pass, the others become the replacement values ------------------

def _nan_to_num_check(call: Call) -> None:
    if call["copy"] is False:
        raise unsupported(call.name, "copy", False, "True: copy=False writes into the input")


def _replaced(call: Call) -> dict:
    """Where each kind of value is replaced, per real and imaginary part."""
    x = call.a
    parts = (np.real(x), np.imag(x)) if np.iscomplexobj(x) else (x,)
    return {"finite": [np.isfinite(p) for p in parts], "nan": [np.isnan(p) for p in parts],
            "posinf": [np.isinf(p) & (p > 0) for p in parts],
            "neginf": [np.isinf(p) & (p < 0) for p in parts]}


def _masked(call: Call, kind: str, d: Any) -> Any:
    """``d`` kept where ``kind`` holds (real and imaginary parts separately), zero elsewhere."""
    masks = call.memo(_replaced)[kind]
    if len(masks) == 1:
        return np.where(masks[0], np.real(d) if not np.iscomplexobj(call.a) else d, 0)
    return np.where(masks[0], np.real(d), 0) + 1j * np.where(masks[1], np.imag(d), 0)


def _nan_to_num_x(call: Call, dy: Any) -> Any:
    return _masked(call, "finite", dy)


def _replacement(kind: str) -> Any:
    def cotangent(call: Call, dy: Any) -> Any:
        masks = call.memo(_replaced)[kind]
        parts = (np.real(dy), np.imag(dy)) if len(masks) == 2 else (np.real(dy),)
        return sum(np.sum(np.where(mask, part, 0)) for mask, part in zip(masks, parts))

    return cotangent


def _nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
                neginf: Any = None) -> Any:
    """np.nan_to_num, traceable in the replacement values (NumPy writes them with np.copyto):
    a traced one is added where its kind of value was replaced by 0."""
    values = {"nan": nan, "posinf": posinf, "neginf": neginf}
    traced = {kind: v for kind, v in values.items() if v is not None and not is_plain(v)}
    if not traced:
        return np.nan_to_num(x, copy, nan, posinf, neginf)
    plain = {kind: 0.0 if kind in traced else v for kind, v in values.items()}
    y = np.nan_to_num(x, copy, **plain)
    parts = (np.real(x), np.imag(x)) if np.iscomplexobj(x) else (x,)
    for kind, value in traced.items():
        for part, unit in zip(parts, (1, 1j)):
            mask = np.isnan(part) if kind == "nan" else np.isinf(part) & (
                (part > 0) if kind == "posinf" else (part < 0))
            y = y + unit * np.where(mask, value, 0)
    from .shape import astype

    return astype(y, np.result_type(x))


def _nan_to_num_pushforward(call: Call, dx: Any, dcopy: Any, dnan: Any, dposinf: Any,
                            dneginf: Any) -> Any:
    dy = np.zeros(np.shape(call.y), np.result_type(call.y)) if isinstance(dx, AbstractZero) \
        else _masked(call, "finite", dx)
    for kind, d in (("nan", dnan), ("posinf", dposinf), ("neginf", dneginf)):
        if not isinstance(d, AbstractZero):
            masks = call.memo(_replaced)[kind]
            dy = dy + np.where(masks[0], d, 0)
            if len(masks) == 2:
                dy = dy + 1j * np.where(masks[1], d, 0)
    return dy


# --- linspace, logspace, geomspace: y = start + (stop - start) t along a new axis ---------------

def _fractions(call: Call) -> tuple[np.ndarray, int, Any]:
    """``(t, axis, step factor)``: t = (0, 1/div, ...) shaped to broadcast against the output,
    the output's new axis, and d step / d (stop - start) = 1/div (0 when there is no step)."""
    num, endpoint = int(call["num"]), call["endpoint"]
    shape = np.broadcast_shapes(np.shape(call.args[0]), np.shape(call.args[1]))
    axis = normalize_axis_tuple(call["axis"], len(shape) + 1)[0]
    t = np.linspace(0.0, 1.0, num, endpoint=endpoint)
    t = np.moveaxis(np.reshape(t, (num,) + (1,) * len(shape)), 0, axis)
    div = num - 1 if endpoint else num
    return t, axis, 1.0 / div if div > 0 else 0.0


def _linspace_back(call: Call, g: Any, of_stop: bool) -> Any:
    """The adjoint of start, stop -> start + (stop - start) t, applied to ``g``."""
    t, axis, _ = call.memo(_fractions)
    weights = t if of_stop else 1.0 - t
    return unbroadcast(np.sum(weights * g, axis=axis), np.shape(call.args[1 if of_stop else 0]))


def _linspace_end(of_stop: bool) -> Any:
    def cotangent(call: Call, dy: Any) -> Any:
        values, d_step = (dy[0], dy[1]) if isinstance(call.y, tuple) else (dy, ZeroTangent())
        total: Any = 0.0
        if not isinstance(values, AbstractZero):
            total = _linspace_back(call, values, of_stop)
        if not isinstance(d_step, AbstractZero):
            factor = call.memo(_fractions)[2]
            total = total + unbroadcast((factor if of_stop else -factor) * as_array(d_step),
                                        np.shape(call.args[1 if of_stop else 0]))
        return total

    return cotangent


def _linspace_of(call: Call, start: Any, stop: Any) -> Any:
    """np.linspace with the call's options, at other endpoints (the exponent of logspace)."""
    return np.linspace(start, stop, call["num"], call["endpoint"], axis=call["axis"])


def _logspace_base(call: Call) -> Any:
    """The base as logspace broadcasts it (an array base gets the new axis)."""
    base = call["base"]
    return np.expand_dims(base, call.memo(_fractions)[1]) if np.ndim(base) else base


def _logspace_end(of_stop: bool) -> Any:
    def cotangent(call: Call, dy: Any) -> Any:
        g = np.conj(call.y * np.log(_logspace_base(call))) * dy
        return _linspace_back(call, g, of_stop)

    return cotangent


def _logspace_base_cotangent(call: Call, dy: Any) -> Any:
    base = _logspace_base(call)
    exponent = _linspace_of(call, call.args[0], call.args[1])
    g = np.conj(exponent * call.y / base) * dy
    return np.reshape(unbroadcast(g, np.shape(base)), np.shape(call["base"]))


def _logspace_pushforward(call: Call, dstart: Any, dstop: Any, dnum: Any, dendpoint: Any,
                          dbase: Any) -> Any:
    dy: Any = 0.0
    if not (isinstance(dstart, AbstractZero) and isinstance(dstop, AbstractZero)):
        d_exponent = _linspace_of(call, dense_tangent(call.args[0], dstart),
                                  dense_tangent(call.args[1], dstop))
        dy = call.y * np.log(_logspace_base(call)) * d_exponent
    if not isinstance(dbase, AbstractZero):
        base = _logspace_base(call)
        exponent = _linspace_of(call, call.args[0], call.args[1])
        dbase = np.expand_dims(dbase, call.memo(_fractions)[1]) if np.ndim(dbase) else dbase
        dy = dy + exponent * call.y / base * dbase
    return np.broadcast_to(dy, np.shape(call.y))


def _geomspace_end(of_stop: bool) -> Any:
    # log y = (1 - t) log start + t log stop
    def cotangent(call: Call, dy: Any) -> Any:
        end = call.args[1 if of_stop else 0]
        return _linspace_back(call, np.conj(call.y) * dy, of_stop) / np.conj(end)

    return cotangent


def _geomspace_pushforward(call: Call, dstart: Any, dstop: Any) -> Any:
    start, stop = call.args[:2]
    relative = _linspace_of(call, dense_tangent(start, dstart) / np.asarray(start),
                            dense_tangent(stop, dstop) / np.asarray(stop))
    return call.y * relative


# --- full, full_like: a new array holding the fill value -----------------------------------------

def _filled(template: np.ndarray, fill_value: Any) -> Any:
    """``template`` (a new array: shape, dtype, memory layout) holding ``fill_value``, by
    differentiable operations when the value is traced (NumPy's np.copyto would refuse it)."""
    if is_plain(fill_value):
        np.copyto(template, fill_value, casting="unsafe")
        return template
    from .shape import astype

    return astype(np.broadcast_to(fill_value, template.shape), template.dtype)


def _full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C", **kwargs: Any) -> Any:
    """np.full, traceable in ``fill_value`` (it has its parameters)."""
    if dtype is None:
        dtype = np.result_type(fill_value) if is_plain(fill_value) else fill_value.dtype
    return _filled(np.empty(shape, dtype, order, **kwargs), fill_value)


def _full_like(a: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True,
               shape: Any = None, **kwargs: Any) -> Any:
    """np.full_like, traceable in ``fill_value``."""
    return _filled(np.empty_like(a, dtype, order, subok, shape, **kwargs), fill_value)


def _fill_cotangent(call: Call, dy: Any) -> Any:
    return unbroadcast(as_array(dy), np.shape(call["fill_value"]))


def _fill_pushforward(call: Call, *dargs: Any) -> Any:
    d_fill = dargs[1]
    return np.broadcast_to(as_array(d_fill), np.shape(call.y))


# --- partition: a permutation of each slice -------------------------------------------------------

def _partition_order(a: Any, kth: Any, axis: Any) -> tuple[np.ndarray, int]:
    if axis is None:
        a, axis = np.ravel(a), 0
    return np.argpartition(a, kth, axis=axis), axis


def _partition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect",
               order: Any = None) -> Any:
    """np.partition computed as ``take_along_axis(a, argpartition(a))``: the value and its
    cotangent use one permutation (NumPy's two functions need not pick the same one)."""
    if axis is None:
        a, axis = np.ravel(a), 0
    return np.take_along_axis(a, np.argpartition(a, kth, axis=axis, kind=kind), axis)


def _partition_back(call: Call, dy: Any) -> Any:
    order, axis = _partition_order(call.a, call["kth"], call["axis"])
    inverse = np.argsort(order, axis=axis)
    return np.reshape(np.take_along_axis(as_array(dy), inverse, axis), call.shape)


def _partition_forward(call: Call, da: Any) -> Any:
    order, axis = _partition_order(call.a, call["kth"], call["axis"])
    da = np.ravel(da) if call["axis"] is None else da
    return np.take_along_axis(da, order, axis)


# --- vander: columns x ** p -----------------------------------------------------------------------

def _vander_derivative(call: Call) -> Any:
    """d y / d x, column by column: p x ** (p - 1), and exactly 0 for p == 0."""
    x = call.args[0]
    n = np.shape(call.y)[1]
    powers = np.arange(n) if call["increasing"] else np.arange(n - 1, -1, -1)
    return powers * np.power(np.expand_dims(x, -1), np.maximum(powers - 1, 0))


def _vander_back(call: Call, dy: Any) -> Any:
    return np.sum(np.conj(_vander_derivative(call)) * dy, axis=-1)


def _vander_forward(call: Call, dx: Any) -> Any:
    return _vander_derivative(call) * np.expand_dims(dx, -1)


# --- the table ------------------------------------------------------------------------------------

define(np.append, _routed(0, (0, 1)), _routed(1, (0, 1)), pushforward=_routed_pushforward(0, 1))
define(np.insert, _routed(0, (0, 2)), None, _routed(2, (0, 2)),
       pushforward=_routed_pushforward(0, 2))
define(np.delete, _routed(0), pushforward=_routed_pushforward(0))
define(np.rollaxis, lambda call, dy: np.moveaxis(dy, *reversed(_rollaxis_destination(call))),
       sparse=moved_by_strides)
if getattr(np, "row_stack", np.vstack) is not np.vstack:  # NumPy 2.x: deprecated, separate
    define(np.row_stack, _promoted_join_back(_at_least(2), lambda shapes: 0))
define(np.cross, _cross_cotangent(of_b=False), _cross_cotangent(of_b=True))
if hasattr(np.linalg, "cross"):  # NumPy 2.0: np.cross along axis= (3-vectors)
    define(np.linalg.cross, _cross_cotangent(of_b=False), _cross_cotangent(of_b=True))
define(np.gradient, every=_gradient_cotangent, pushforward=_gradient_pushforward)
define(np.ediff1d, _ediff1d_ary, _ediff1d_end, _ediff1d_begin,
       pushforward=_routed_pushforward(0, 1, 2))
define(np.nan_to_num, _nan_to_num_x, None, _replacement("nan"), _replacement("posinf"),
       _replacement("neginf"), pushforward=_nan_to_num_pushforward, check=_nan_to_num_check,
       calls=_nan_to_num)
define(np.real_if_close, lambda call, dy: dy, pushforward=lambda call, da: da)
define(np.linspace, _linspace_end(of_stop=False), _linspace_end(of_stop=True),
       pushforward=linear)
define(np.logspace, _logspace_end(of_stop=False), _logspace_end(of_stop=True), None, None,
       _logspace_base_cotangent, pushforward=_logspace_pushforward)
define(np.geomspace, _geomspace_end(of_stop=False), _geomspace_end(of_stop=True),
       pushforward=_geomspace_pushforward)
define(np.full, None, _fill_cotangent, pushforward=_fill_pushforward, calls=_full)
define(np.full_like, None, _fill_cotangent, pushforward=_fill_pushforward, calls=_full_like)
if hasattr(np, "astype"):  # the function form (NumPy 2.1)
    define(np.astype, _reshape_back, pushforward=_reshape_forward, keeps_values=False)
define(np.partition, _partition_back, pushforward=_partition_forward, refused=("out", "order"),
       calls=_partition)
define(np.vander, _vander_back, pushforward=_vander_forward)

non_differentiable(np.argpartition)
writes_in_place(np.put_along_axis, "build the result as a new array instead: e.g. "
                "np.where(mask, new_values, arr), with new_values of arr's shape (gathered with "
                "np.take_along_axis), or collect the pieces in a list and np.stack them")
