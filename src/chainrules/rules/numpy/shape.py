"""Rules for functions that move, copy, join and split array elements without arithmetic.

Every function here is linear in its array argument, so its pushforward is the function itself
applied to the tangent (`define.multilinear`, the default); each rule is one formula, the
adjoint, written as a short function of ``dy``: reshape back, transpose back, split where it
joined, sum where it copied. Joining functions (``concatenate``, ``stack``, ``hstack``...) are
all one mechanism: "reshape each element, then concatenate along an axis", whose adjoint splits
``dy`` and reshapes each piece back. A sequence argument gets ``Tangent(type(seq), {i: d_i})``.
``resize`` repeats the flattened input cyclically (its adjoint sums the copies);
``trim_zeros`` keeps a window that depends on where the input's zeros are, so its pushforward
takes that same window of the tangent (trimming the tangent would cut at its own zeros).

    define(np.transpose, _transpose_back)     # the table reads: function, cotangent formula
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...core.broadcast import unbroadcast
from ...core.dtypes import as_array, is_plain
from ...core.registry import VIEW_FORMS, ViewForm, recorded_whole, rrule
from ...core.sparse import scatter_sum, through_reshape, through_view
from ...core.tangents import AbstractZero
from ..define import Call, define, linear, normalize_axis_tuple, unsupported

__all__ = ["astype"]


def _reshape_back(call: Call, dy: Any) -> Any:
    """The pullback of every function that only reshapes (adds or drops unit axes, copies):
    it reads only the argument's shape (``keeps_values=False``)."""
    return np.reshape(dy, call.shape)


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

def moved_by_strides(call: Call, dy: Any) -> Any:
    """The ``sparse`` formula (`define`) of a function that moves its argument's elements
    by strides (transpose, flip): an index read of its output, ``x.T[t]``, keeps a sparse
    cotangent."""
    return through_view(dy, call.shape, call.apply)


def _moved_in_order(call: Call, dy: Any) -> Any:
    """The ``sparse`` formula of a reshape in C order (in F order: dense, as before)."""
    return through_reshape(dy, call.shape) if _order(call) == "C" else None


def _order(call: Call) -> str:
    return _memory_order(call.name, call.a, call["order"])


def _check_order(call: Call) -> None:
    if call["order"] in ("A", "K"):
        _order(call)


def _reshape_in_order(call: Call, dy: Any) -> Any:
    order = _order(call)  # passed only when not "C": Dask's reshape has no order
    return np.reshape(dy, call.a.shape) if order == "C" else \
        np.reshape(dy, call.a.shape, order=order)


define(np.reshape, _reshape_in_order, pushforward=linear, check=_check_order,
       sparse=_moved_in_order)
define(np.ravel, _reshape_in_order, pushforward=linear, check=_check_order,
       sparse=_moved_in_order)


def _transpose_back(call: Call, dy: Any) -> Any:
    axes = call["axes"]
    if axes is None:
        return np.transpose(dy)
    return np.transpose(dy, np.argsort(normalize_axis_tuple(axes, call.a.ndim)))


define(np.transpose, _transpose_back, sparse=moved_by_strides)


def _view_form(function: Any, applies: Any, back: Any) -> None:
    """Register ``function``'s `ViewForm` (an engine records ``x.T``, ``x.reshape(4, 4)`` of a
    small real array as its shape): ``back`` is the rule's formula; any other cotangent goes
    to the rule's pullback, made for an array of the argument's shape and dtype (it reads
    nothing else)."""
    rule = rrule.lookup(function)[0]
    VIEW_FORMS[function] = ViewForm(
        rule, applies, back,
        lambda payload: rule(np.broadcast_to(payload[2].type(0), payload[1]), *payload[3])[1])


_view_form(np.transpose, lambda x, axes=None: axes is None, lambda dy, shape: dy.T)
_view_form(np.reshape, lambda x, shape, order="C": order == "C",
           lambda dy, shape: dy.reshape(shape))
_view_form(np.ravel, lambda x, order="C": order == "C", lambda dy, shape: dy.reshape(shape))


# --- joining: "reshape each element, concatenate along an axis" ----------------------------------

def _join_back(call: Call, dy: Any, shapes: list[tuple], axis: int) -> list:
    """Split ``dy`` along ``axis`` into pieces of the (reshaped) elements' ``shapes``, and
    reshape each piece back to its element's own shape."""
    bounds = np.cumsum([0] + [shape[axis] for shape in shapes]).tolist()
    before = (slice(None),) * axis
    pieces = [dy[before + (slice(start, stop),)] for start, stop in zip(bounds[:-1], bounds[1:])]
    pieces = [np.reshape(piece, np.shape(x)) for piece, x in zip(pieces, call.x)]
    # an array (plain, or traced at order 2) gets an array: the cotangents of its rows
    return pieces if isinstance(call.x, (list, tuple)) else np.stack(pieces)


def _concatenate_back(call: Call, dy: Any) -> list:
    axis = call["axis"]
    if axis is None:
        return _join_back(call, dy, [(np.size(x),) for x in call.x], 0)
    shapes = [np.shape(x) for x in call.x]
    return _join_back(call, dy, shapes, normalize_axis_tuple(axis, len(shapes[0]))[0])


def _stack_back(call: Call, dy: Any) -> list:
    axis = normalize_axis_tuple(call["axis"], np.ndim(dy))[0]
    shapes = [np.shape(x)[:axis] + (1,) + np.shape(x)[axis:] for x in call.x]
    return _join_back(call, dy, shapes, axis)


define(np.concatenate, _concatenate_back)
define(np.stack, _stack_back)


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


def _block_depth(blocks: Any) -> int:
    """How deep ``np.block``'s lists nest (NumPy requires every branch to be as deep)."""
    depth = 0
    while isinstance(blocks, list):
        blocks, depth = blocks[0], depth + 1
    return depth


def _block_shape(blocks: Any, ndim: int, axis: int) -> tuple:
    """The shape of the block ``blocks`` (a list whose elements join along ``axis``, or an
    array promoted to ``ndim`` dimensions)."""
    if not isinstance(blocks, list):
        return (1,) * (ndim - np.ndim(blocks)) + np.shape(blocks)
    shapes = [_block_shape(element, ndim, axis + 1) for element in blocks]
    return shapes[0][:axis] + (sum(shape[axis] for shape in shapes),) + shapes[0][axis + 1:]


def _block_back(call: Call, dy: Any) -> Any:
    """``np.block``: each list joins its elements along an axis, the innermost along the last;
    ``dy`` is split where each list joined, and each piece reshaped back to its array."""
    depth = _block_depth(call.x)
    ndim = np.ndim(dy)

    def split(blocks: Any, piece: Any, axis: int) -> Any:
        if not isinstance(blocks, list):
            return np.reshape(piece, np.shape(blocks))
        sizes = [_block_shape(element, ndim, axis + 1)[axis] for element in blocks]
        bounds = np.cumsum([0] + sizes).tolist()
        before = (slice(None),) * axis
        return [split(element, piece[before + (slice(start, stop),)], axis + 1)
                for element, start, stop in zip(blocks, bounds[:-1], bounds[1:])]

    return split(call.x, dy, ndim - depth)


define(np.block, _block_back, pushforward=linear)
define(np.hstack, _promoted_join_back(_at_least(1), _hstack_axis))
define(np.vstack, _promoted_join_back(_at_least(2), lambda shapes: 0))
define(np.dstack, _promoted_join_back(_at_least(3), lambda shapes: 2))
define(np.column_stack, _promoted_join_back(_column, lambda shapes: 1))


# --- splitting: the output is a list; ``dy`` lists its pieces' cotangents (some may be zero) ----

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
    def back(call: Call, dy: list) -> np.ndarray:
        axis = axis_of(call)
        bounds = _split_bounds(call.shape[axis], call["indices_or_sections"])
        kept = [((slice(None),) * axis + (bound,), piece) for bound, piece in zip(bounds, dy)
                if not isinstance(piece, AbstractZero)]
        return scatter_sum(call.shape, call.dtype, tuple(index for index, _ in kept),
                           *(piece for _, piece in kept))

    define(f, back)


_split_rule(np.split, lambda call: normalize_axis_tuple(call["axis"], call.a.ndim)[0])
_split_rule(np.array_split, lambda call: normalize_axis_tuple(call["axis"], call.a.ndim)[0])
_split_rule(np.hsplit, lambda call: 1 if call.a.ndim > 1 else 0)
_split_rule(np.vsplit, lambda call: 0)
_split_rule(np.dsplit, lambda call: 2)


# --- moving axes and elements around -------------------------------------------------------------

define(np.swapaxes, lambda call, dy: call.apply(dy), sparse=moved_by_strides)
define(np.moveaxis, lambda call, dy: np.moveaxis(dy, call["destination"], call["source"]),
       sparse=moved_by_strides)
define(np.expand_dims, _reshape_back, keeps_values=False,
       sparse=lambda call, dy: through_reshape(dy, call.shape))
define(np.squeeze, _reshape_back, keeps_values=False,
       sparse=lambda call, dy: through_reshape(dy, call.shape))
define(np.broadcast_to, lambda call, dy: unbroadcast(as_array(dy), call.shape),
       keeps_values=False)
for _f in (np.flip, np.fliplr, np.flipud):
    define(_f, lambda call, dy: call.apply(dy), sparse=moved_by_strides)


def _triangle_back(call: Call, dy: Any) -> Any:
    """The same triangle of ``dy``; a 1-D ``x`` was the rows of an (n, n) matrix: summed."""
    triangle = call.apply(dy)
    return unbroadcast(triangle, call.a.shape) if call.a.ndim < 2 else triangle


define(np.triu, _triangle_back)
define(np.tril, _triangle_back)
define(np.roll, lambda call, dy: np.roll(dy, np.negative(call["shift"]), call["axis"]))
define(np.rot90, lambda call, dy: np.rot90(dy, -call["k"], call["axes"]))


def _tile_back(call: Call, dy: Any) -> np.ndarray:
    """Sum the tiles: dy reshaped to (reps_0, n_0, reps_1, n_1, ...), summed over the reps."""
    reps = tuple(np.atleast_1d(call["reps"]).tolist())
    ndim = max(call.a.ndim, len(reps))
    shape = (1,) * (ndim - call.a.ndim) + call.a.shape
    reps = (1,) * (ndim - len(reps)) + reps
    tiles = np.reshape(dy, [size for pair in zip(reps, shape) for size in pair])
    return np.sum(tiles, axis=tuple(range(0, 2 * ndim, 2))).reshape(call.a.shape)


define(np.tile, _tile_back)


def _repeat_back(call: Call, dy: Any) -> np.ndarray:
    """Sum each element's copies (np.add.reduceat over the start of each group of copies)."""
    axis = call["axis"]
    a = call.a.ravel() if axis is None else call.a
    axis = 0 if axis is None else normalize_axis_tuple(axis, a.ndim)[0]
    repeats = np.broadcast_to(call["repeats"], (a.shape[axis],))
    dy = as_array(dy)
    if not is_plain(dy):  # order 2: one recorded scatter of every copy onto its source
        sources = np.repeat(np.arange(a.shape[axis]), repeats)
        dx = scatter_sum(a.shape, dy.dtype, ((slice(None),) * axis + (sources,),), dy)
        return np.reshape(dx, call.a.shape)
    dx = np.zeros(a.shape, dy.dtype)
    kept = repeats > 0
    if dy.shape[axis] > 0:
        starts = (np.cumsum(repeats) - repeats)[kept]
        index = (slice(None),) * axis + (kept,)
        dx[index] = np.add.reduceat(dy, starts, axis=axis)
    return dx.reshape(call.a.shape)


define(np.repeat, _repeat_back)


# --- padding: each supported mode maps every output position to one input position ---------------

_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def _pad_check(call: Call) -> None:
    if call["mode"] not in _PAD_MODES:
        raise unsupported(call.name, "mode", call["mode"], ", ".join(map(repr, _PAD_MODES)))
    if call["reflect_type"] not in (None, "even"):
        raise unsupported(call.name, "reflect_type", call["reflect_type"], "'even'")


def _pad_back(call: Call, dy: Any) -> np.ndarray:
    """Axis by axis (padding is separable): each output position came from one input position
    (``np.pad`` of the positions themselves says which), so its cotangent goes back there."""
    a, mode = call.a, call["mode"]
    widths = np.broadcast_to(np.asarray(call["pad_width"]), (a.ndim, 2))
    g = as_array(dy)
    for axis, (before, after) in enumerate(widths.tolist()):
        if mode == "constant":
            g = np.take(g, np.arange(before, before + a.shape[axis]), axis=axis)
            continue
        origin = np.pad(np.arange(a.shape[axis]), (before, after), mode=mode)
        moved = np.moveaxis(g, axis, 0)
        summed = scatter_sum((a.shape[axis],) + moved.shape[1:], g.dtype, (origin,), moved)
        g = np.moveaxis(summed, 0, axis)
    return g


def _pad_forward(call: Call, dx: Any) -> np.ndarray:
    if call["mode"] == "constant":  # the constants have no tangent
        return np.pad(dx, call["pad_width"], mode="constant")
    return call.apply(dx)


define(np.pad, _pad_back, pushforward=_pad_forward, check=_pad_check)


# --- resize and trim_zeros: a cyclic repeat and a data-dependent window ---------------------------

def _resize_back(call: Call, dy: Any) -> Any:
    """Each copy of the flattened input that ``resize`` laid out sends its cotangent back."""
    size = math.prod(call.shape)
    flat = np.ravel(dy)
    if size == 0 or np.shape(flat)[0] == 0:
        return np.zeros(call.shape, call.dtype)
    copies = -(-np.shape(flat)[0] // size)
    padded = np.concatenate([flat, np.zeros(copies * size - np.shape(flat)[0], np.result_type(
        flat))])
    return np.reshape(np.sum(np.reshape(padded, (copies, size)), axis=0), call.shape)


def _trim_window(call: Call) -> tuple:
    """``(before, after)`` per axis: how many elements ``trim_zeros`` cut at each end (its
    output is the window between). The front cut, where it trims, ends at the first nonzero
    element; the window's length is the output's."""
    a, trim = call.a, str(call["trim"]).lower()
    axis = call["axis"]
    axes = range(a.ndim) if axis is None else normalize_axis_tuple(axis, a.ndim)
    nonzero = np.argwhere(a)
    window = []
    for position, length in enumerate(np.shape(call.y)):
        before = int(np.min(nonzero[:, position])) if (
            "f" in trim and position in axes and nonzero.size) else 0
        window.append((before, a.shape[position] - before - length))
    return tuple(window)


define(np.resize, _resize_back, None, pushforward=linear)
define(np.trim_zeros, lambda call, dy: np.pad(dy, call.memo(_trim_window)),
       pushforward=lambda call, dx, *rest: dx[tuple(
           slice(before, length - after) for (before, after), length in zip(
               call.memo(_trim_window), call.shape))])


# --- diagonals -----------------------------------------------------------------------------------

def diagonal_embed(values: Any, shape: tuple, offset: int, axis1: int, axis2: int,
                   dtype: Any) -> np.ndarray:
    """The adjoint of ``np.diagonal(x, offset, axis1, axis2)``: zeros of ``shape`` with
    ``values`` (shaped like that diagonal) on the diagonal.

    >>> diagonal_embed([1.0, 2.0], (2, 3), 1, 0, 1, np.float64)
    array([[0., 1., 0.],
           [0., 0., 2.]])
    """
    values = as_array(values)
    steps = np.arange(values.shape[-1] if values.ndim else 0)
    moved = tuple(n for i, n in enumerate(shape) if i not in (axis1, axis2)) + (
        shape[axis1], shape[axis2])
    index = (Ellipsis, steps + max(-offset, 0), steps + max(offset, 0))
    if is_plain(values):  # a diagonal's positions never repeat: a write, not np.add.at
        out = np.zeros(moved, np.result_type(dtype, values.dtype))
        out[index] = values
    else:  # traced (order 2): recorded as one scatter, whose pullback gathers
        out = scatter_sum(moved, np.dtype(dtype), (index,), values)
    return np.moveaxis(out, (-2, -1), (axis1, axis2))


def _diag_back(call: Call, dy: Any) -> np.ndarray:
    k = call["k"]
    if call.a.ndim == 1:  # built a matrix: read its diagonal
        return np.diagonal(dy, k).copy()
    return diagonal_embed(dy, call.a.shape, k, 0, 1, np.result_type(dy))


define(np.diag, _diag_back)
define(np.diagflat, lambda call, dy: np.diagonal(dy, call["k"]).reshape(call.a.shape))


# --- functions of several arrays, each one differentiable (atleast_nd, meshgrid) ----------------
# Output i comes from argument i alone (one array for one argument, else a tuple or list).

def _own_output(formula: Any) -> Any:
    """The cotangent formula of argument i, ``formula(call, dy_i, i)``, from the cotangent of
    output i."""
    def cotangent(call: Call, dy: Any, i: int) -> Any:
        dy_i = dy[i] if isinstance(call.y, (list, tuple)) else dy
        return dy_i if isinstance(dy_i, AbstractZero) else formula(call, dy_i, i)

    return cotangent


for _f in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    define(_f, every=_own_output(lambda call, dy, i: np.reshape(dy, np.shape(call.args[i]))),
           pushforward=linear)


def _meshgrid_back(call: Call, dy: Any, i: int) -> np.ndarray:
    """Output ``i`` repeats input ``i`` along every axis but its own: sum over those."""
    axis = i
    if call["indexing"] == "xy" and len(call.args) >= 2 and i < 2:
        axis = 1 - i  # 'xy' indexing swaps the first two axes
    dy = np.asarray(dy)
    summed = np.sum(dy, axis=tuple(j for j in range(dy.ndim) if j != axis))
    return np.reshape(summed, np.shape(call.args[i]))


define(np.meshgrid, every=_own_output(_meshgrid_back), pushforward=linear)


# --- copies and conversions ----------------------------------------------------------------------

def _reshape_forward(call: Call, dx: Any) -> Any:
    return np.reshape(dx, np.shape(call.y))


def _through_numpy(f: Any) -> Any:
    """``f``, reached through NumPy's namespace at each call. ``np.array`` and friends do not
    dispatch on their argument; while a trace runs, chainrules.ad.dispatch.routing replaces them
    there, and so records the call when its argument holds an outer trace's values (the
    argument of a rule differentiated again)."""
    name = f.__name__

    def through_numpy(*args: Any, **kwargs: Any) -> Any:
        return getattr(np, name)(*args, **kwargs)

    return through_numpy


for _f in (np.array, np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray):
    define(_f, _reshape_back, pushforward=_reshape_forward, keeps_values=False,
           calls=_through_numpy(_f))
define(np.copy, _reshape_back, pushforward=_reshape_forward, keeps_values=False)
# The conversions that libraries call first: the finite check and the requirements apply to
# the values (the primal), the cotangent goes back as np.asarray's.
for _f in (np.asarray_chkfinite, np.require):
    define(_f, _reshape_back, pushforward=_reshape_forward, keeps_values=False)


@recorded_whole  # the engine records `t.astype(dtype)` as this function
def astype(x: Any, dtype: Any, **kwargs: Any) -> Any:
    """``x.astype(dtype)``, as a function an engine can map the method call to.

    Its cotangent is cast back to x's dtype: the real part for a real ``x``, float32 for a
    float32 ``x``; an integer result has no tangent.

    >>> astype(np.array([1.5, 2.0]), np.complex128)
    array([1.5+0.j, 2. +0.j])
    """
    return np.asarray(x).astype(dtype, **kwargs)


define(astype, _reshape_back, pushforward=_reshape_forward, keeps_values=False)
