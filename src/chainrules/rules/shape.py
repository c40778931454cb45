"""Rules for functions that move, copy, join and split array elements without arithmetic.

Every function here is linear in its array argument, so its pushforward is the function
itself applied to the tangent (`_array_rules.LINEAR`); the pullback is the adjoint, written
below as a short formula of ``dy``: reshape back, transpose back, split where it joined, sum
where it copied. Joining functions (``concatenate``, ``stack``, ``hstack``...) are all one
mechanism: "reshape each element, then concatenate along an axis", whose adjoint splits
``dy`` and reshapes each piece back. A sequence argument gets ``Tangent(type(seq), {i: d_i})``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.broadcast import unbroadcast
from ..core.projection import ProjectTo
from ..core.registry import frule, rrule
from ..core.tangents import AbstractZero, NoTangent, ZeroTangent
from ..core.thunks import unthunk
from ._array_rules import (Call, dense_tangent, diagonal_embed, has_tangent,
                           normalize_axis_tuple, parts_of, project_onto, register, unsupported)

__all__ = ["astype"]


def _reshape_back(call: Call, dy: Any) -> Any:
    """The pullback of every function that only reshapes (adds or drops unit axes, copies)."""
    return np.reshape(dy, np.shape(call.x))


def _memory_order(name: str, x: np.ndarray, order: str) -> str:
    """The C/F order that ``order`` ('C', 'F', 'A' or 'K') reads ``x`` in."""
    if order in ("C", "F", None):
        return order or "C"
    fortran = x.flags.f_contiguous and not x.flags.c_contiguous
    if order == "A" or x.ndim <= 1 or x.flags.c_contiguous or fortran:
        return "F" if fortran else "C"
    raise NotImplementedError(
        f"{name}: order='K' on an array that is neither C- nor Fortran-contiguous is not "
        f"supported in differentiated code; use order='C' or 'F'.")


# --- reshape, ravel, transpose ---------------------------------------------------------------

def _order(call: Call) -> str:
    return _memory_order(f"numpy.{call.f.__name__}", call.a, call.options.get("order"))


def _check_order(name: str, options: dict) -> None:
    if options.get("order") in ("A", "K"):
        _memory_order(name, np.asarray(options["a"]), options["order"])


register(np.reshape, lambda call, dy: np.reshape(dy, call.a.shape, order=_order(call)),
         lambda call, dx: np.reshape(dx, np.shape(call.y), order=_order(call)),
         check=_check_order)
register(np.ravel, lambda call, dy: np.reshape(dy, call.a.shape, order=_order(call)),
         lambda call, dx: np.ravel(dx, order=_order(call)), check=_check_order)


def _transpose_back(call: Call, dy: Any) -> Any:
    axes = call.options.get("axes")
    if axes is None:
        return np.transpose(dy)
    return np.transpose(dy, np.argsort(normalize_axis_tuple(axes, call.a.ndim)))


register(np.transpose, _transpose_back)


# --- joining: "reshape each element, concatenate along an axis" ----------------------------------

def _join_back(call: Call, dy: Any, shapes: list[tuple], axis: int) -> list:
    """Split ``dy`` along ``axis`` into pieces of the (reshaped) elements' ``shapes``, and
    reshape each piece back to its element's own shape."""
    ends = np.cumsum([shape[axis] for shape in shapes])[:-1]
    pieces = np.split(dy, ends, axis=axis)
    pieces = [np.reshape(piece, np.shape(x)) for piece, x in zip(pieces, call.x)]
    return np.stack(pieces) if isinstance(call.x, np.ndarray) else pieces  # rows of an array


def _concatenate_back(call: Call, dy: Any) -> list:
    axis = call.options.get("axis")
    if axis is None:
        return _join_back(call, dy, [(np.size(x),) for x in call.x], 0)
    shapes = [np.shape(x) for x in call.x]
    return _join_back(call, dy, shapes, normalize_axis_tuple(axis, len(shapes[0]))[0])


def _stack_back(call: Call, dy: Any) -> list:
    axis = normalize_axis_tuple(call.options.get("axis"), np.ndim(dy))[0]
    shapes = [np.shape(x)[:axis] + (1,) + np.shape(x)[axis:] for x in call.x]
    return _join_back(call, dy, shapes, axis)


register(np.concatenate, _concatenate_back)
register(np.stack, _stack_back)


def _promoted_join_back(promote: Any, axis_of: Any) -> Any:
    """The pullback of a join that reshapes each element with ``promote(shape)`` and then
    concatenates along ``axis_of(promoted shapes)``."""
    def back(call: Call, dy: Any) -> list:
        shapes = [promote(np.shape(x)) for x in call.x]
        return _join_back(call, dy, shapes, axis_of(shapes))

    return back


def _at_least(ndim: int) -> Any:
    """The shape np.atleast_{ndim}d gives an array of ``shape``."""
    def promote(shape: tuple) -> tuple:
        if len(shape) >= ndim:
            return shape
        if ndim == 3 and len(shape) == 2:
            return shape + (1,)
        if ndim == 3:
            return (1,) + (shape or (1,)) + (1,)
        return (1,) * (ndim - len(shape)) + shape

    return promote


def _column(shape: tuple) -> tuple:
    """The shape np.column_stack gives an element: 1-d arrays become columns."""
    return shape if len(shape) >= 2 else (int(np.prod(shape)), 1)


def _hstack_axis(shapes: list[tuple]) -> int:
    return 0 if len(shapes[0]) == 1 else 1


register(np.hstack, _promoted_join_back(_at_least(1), _hstack_axis), refuse_options=())
register(np.vstack, _promoted_join_back(_at_least(2), lambda shapes: 0), refuse_options=())
register(np.dstack, _promoted_join_back(_at_least(3), lambda shapes: 2), refuse_options=())
register(np.column_stack, _promoted_join_back(_column, lambda shapes: 1), refuse_options=())


# --- splitting: the output is a list; its cotangent may have zero entries ------------------------

def _split_bounds(length: int, sections: Any) -> list[slice]:
    """The slices np.split/np.array_split cut an axis of ``length`` into."""
    if np.ndim(sections) == 0:
        each, extra = divmod(length, int(sections))
        sizes = [each + 1] * extra + [each] * (int(sections) - extra)
        bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    else:
        bounds = [0, *np.asarray(sections).tolist(), length]
    return [slice(start, stop) for start, stop in zip(bounds[:-1], bounds[1:])]


def _split_rule(f: Any, axis_of: Any) -> None:
    def back(call: Call, dy: Any) -> Any:
        a = call.a
        axis = axis_of(call)
        bounds = _split_bounds(a.shape[axis], call.options["indices_or_sections"])
        dx = None
        for bound, piece in zip(bounds, parts_of(dy, len(bounds))):
            if isinstance(piece, AbstractZero):
                continue
            if dx is None:
                dx = np.zeros(a.shape, np.result_type(call.dtype, piece))
            index = (slice(None),) * axis + (bound,)
            dx[index] += piece
        return ZeroTangent() if dx is None else dx

    register(f, back)


_split_rule(np.split, lambda call: normalize_axis_tuple(call.options["axis"], call.a.ndim)[0])
_split_rule(np.array_split,
            lambda call: normalize_axis_tuple(call.options["axis"], call.a.ndim)[0])
_split_rule(np.hsplit, lambda call: 1 if call.a.ndim > 1 else 0)
_split_rule(np.vsplit, lambda call: 0)
_split_rule(np.dsplit, lambda call: 2)


# --- moving axes and elements around -------------------------------------------------------------

register(np.swapaxes, lambda call, dy: call.apply(dy))
register(np.moveaxis, lambda call, dy: np.moveaxis(dy, call.options["destination"],
                                                   call.options["source"]))
register(np.expand_dims, _reshape_back)
register(np.squeeze, _reshape_back)
register(np.broadcast_to, lambda call, dy: unbroadcast(np.asarray(dy), call.a.shape),
         refuse_options=())
register(np.flip, lambda call, dy: call.apply(dy), refuse_options=())
register(np.fliplr, lambda call, dy: call.apply(dy), refuse_options=())
register(np.flipud, lambda call, dy: call.apply(dy), refuse_options=())
register(np.roll, lambda call, dy: np.roll(dy, np.negative(call.options["shift"]),
                                           call.options.get("axis")), refuse_options=())
register(np.rot90, lambda call, dy: np.rot90(dy, -call.options.get("k", 1),
                                             call.options.get("axes", (0, 1))),
         refuse_options=())
register(np.triu, lambda call, dy: call.apply(dy), refuse_options=())
register(np.tril, lambda call, dy: call.apply(dy), refuse_options=())


def _tile_back(call: Call, dy: Any) -> np.ndarray:
    """Sum the tiles: dy reshaped to (reps_0, n_0, reps_1, n_1, ...), summed over the reps."""
    reps = tuple(np.atleast_1d(call.options["reps"]).tolist())
    ndim = max(call.a.ndim, len(reps))
    shape = (1,) * (ndim - call.a.ndim) + call.a.shape
    reps = (1,) * (ndim - len(reps)) + reps
    tiles = np.reshape(dy, [size for pair in zip(reps, shape) for size in pair])
    return np.sum(tiles, axis=tuple(range(0, 2 * ndim, 2))).reshape(call.a.shape)


register(np.tile, _tile_back)


def _repeat_back(call: Call, dy: Any) -> np.ndarray:
    """Sum each element's copies (np.add.reduceat over the start of each group of copies)."""
    axis = call.options.get("axis")
    a = call.a.ravel() if axis is None else call.a
    axis = 0 if axis is None else normalize_axis_tuple(axis, a.ndim)[0]
    repeats = np.broadcast_to(call.options["repeats"], (a.shape[axis],))
    dy = np.asarray(dy)
    dx = np.zeros(a.shape, dy.dtype)
    kept = repeats > 0
    if dy.shape[axis] > 0:
        starts = (np.cumsum(repeats) - repeats)[kept]
        index = (slice(None),) * axis + (kept,)
        dx[index] = np.add.reduceat(dy, starts, axis=axis)
    return dx.reshape(call.a.shape)


register(np.repeat, _repeat_back)


# --- padding: each supported mode maps every output position to one input position ---------------

_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def _pad_check(name: str, options: dict) -> None:
    mode = options.get("mode")
    if mode not in _PAD_MODES:
        raise unsupported(name, "mode", mode, ", ".join(map(repr, _PAD_MODES)))
    if options.get("reflect_type", "even") != "even":
        raise unsupported(name, "reflect_type", options["reflect_type"], "'even'")


def _pad_back(call: Call, dy: Any) -> np.ndarray:
    """Axis by axis (padding is separable): each output position came from one input position
    (``np.pad`` of the positions themselves says which), so its cotangent goes back there."""
    a, mode = call.a, call.options["mode"]
    widths = np.broadcast_to(np.asarray(call.options["pad_width"]), (a.ndim, 2))
    g = np.asarray(dy)
    for axis, (before, after) in enumerate(widths.tolist()):
        if mode == "constant":
            g = np.take(g, np.arange(before, before + a.shape[axis]), axis=axis)
            continue
        origin = np.pad(np.arange(a.shape[axis]), (before, after), mode=mode)
        moved = np.moveaxis(g, axis, 0)
        summed = np.zeros((a.shape[axis],) + moved.shape[1:], g.dtype)
        np.add.at(summed, origin, moved)
        g = np.moveaxis(summed, 0, axis)
    return g


def _pad_forward(call: Call, dx: Any) -> np.ndarray:
    mode = call.options["mode"]
    if mode == "constant":  # the constants have no tangent
        return np.pad(dx, call.options["pad_width"], mode="constant")
    return call.apply(dx)


register(np.pad, _pad_back, _pad_forward, refuse_options=(), check=_pad_check)


# --- diagonals -----------------------------------------------------------------------------------

def _diag_back(call: Call, dy: Any) -> np.ndarray:
    k = call.options.get("k", 0)
    if call.a.ndim == 1:  # built a matrix: read its diagonal
        return np.diagonal(dy, k).copy()
    return diagonal_embed(dy, call.a.shape, k, 0, 1, np.result_type(dy))


register(np.diag, _diag_back)
register(np.diagflat, lambda call, dy: np.diagonal(dy, call.options.get("k", 0)).reshape(
    call.a.shape))


# --- functions of several arrays, each one differentiable (atleast_nd, meshgrid) ----------------

def _each_argument_rule(f: Any, back: Any) -> None:
    """Register the rules of ``f(*arrays)``, linear in each array; ``back(i, args, kwargs,
    dy_i)`` is the cotangent of array ``i`` from the cotangent of output ``i`` (the output is
    one array for one argument, else a tuple or list)."""
    def reverse(*args: Any, **kwargs: Any):
        y = f(*args, **kwargs)
        projects = [project_onto(arg) for arg in args]
        zero = (NoTangent(),) + tuple(ZeroTangent() if has_tangent(p) else NoTangent()
                                      for p in projects)
        several = isinstance(y, (list, tuple))

        def pullback(dy: Any) -> tuple:
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return zero
            parts = parts_of(dy, len(args)) if several else [dy]
            return (NoTangent(),) + tuple(
                project(back(i, args, kwargs, part)) if has_tangent(project)
                and not isinstance(part, AbstractZero) else zero[i + 1]
                for i, (project, part) in enumerate(zip(projects, parts)))

        return y, pullback

    def forward(tangents: tuple, *args: Any, **kwargs: Any):
        y = f(*args, **kwargs)
        dxs = [unthunk(t) for t in tangents[1:len(args) + 1]]
        if all(isinstance(dx, AbstractZero) for dx in dxs):
            return y, ZeroTangent()
        dy = f(*(dense_tangent(arg, dx) for arg, dx in zip(args, dxs)), **kwargs)
        return y, ProjectTo(y)(dy)

    rrule.register(f, replace=True)(reverse)
    frule.register(f, replace=True)(forward)


for _f in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    _each_argument_rule(_f, lambda i, args, kwargs, dy: np.reshape(dy, np.shape(args[i])))


def _meshgrid_back(i: int, args: tuple, kwargs: dict, dy: Any) -> np.ndarray:
    """Output ``i`` repeats input ``i`` along every axis but its own: sum over those."""
    axis = i
    if kwargs.get("indexing", "xy") == "xy" and len(args) >= 2 and i < 2:
        axis = 1 - i  # 'xy' indexing swaps the first two axes
    dy = np.asarray(dy)
    summed = np.sum(dy, axis=tuple(j for j in range(dy.ndim) if j != axis))
    return np.reshape(summed, np.shape(args[i]))


_each_argument_rule(np.meshgrid, _meshgrid_back)


# --- copies and conversions ----------------------------------------------------------------------

def _reshape_forward(call: Call, dx: Any) -> Any:
    return np.reshape(dx, np.shape(call.y))


for _f in (np.array, np.asarray, np.copy):
    register(_f, _reshape_back, _reshape_forward, refuse_options=())


def astype(x: Any, dtype: Any, **kwargs: Any) -> Any:
    """``x.astype(dtype)``, as a function an engine can map the method call to.

    Its cotangent is cast back to x's dtype: the real part for a real ``x``, float32 for a
    float32 ``x``; an integer result has no tangent.

    >>> astype(np.array([1.5, 2.0]), np.complex128)
    array([1.5+0.j, 2. +0.j])
    """
    return np.asarray(x).astype(dtype, **kwargs)


register(astype, _reshape_back, _reshape_forward, refuse_options=())
