"""The sparse index cotangent: the cotangent of ``x[index]`` without a dense array of len(x).

``SparseCotangent(index, values, shape, dtype)`` stands for the array that is zero everywhere
except at ``index``, where it holds ``values`` (summed where an integer index repeats). Adding
it into a dense buffer costs O(size of the index), never O(size of the buffer); building its
dense value costs O(size of the buffer) once.

Exactness: the dense value and the in-place add agree bit for bit with ``buffer + dense``. For a
repeated integer index the values of each repeated position are summed first, in index order,
exactly as the dense value is built, and then added once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .dtypes import cast_to, is_plain
from .registry import recorded_whole
from .tangents import _UNSET, AbstractThunk, unthunk

__all__ = ["SparseCotangent", "SparseSum", "scatter_sum", "scatter_like", "flat_positions",
           "selection_shape",
           "has_integer_array", "through_view", "through_reshape"]

# _TRACED: the values are traced (order 2 and above): never written into a buffer, only
# gathered into one `scatter_sum` (see SparseSum).
_BASIC, _NO_REPEATS, _GROUPED, _TRACED = 0, 1, 2, 3

_axis_positions = np.arange(0, dtype=np.intp)
_NUMBERS = frozenset({float, complex, np.float64, np.float32, np.float16, np.complex128,
                      np.complex64})
_INT = {int}
# NumPy's own, bound at import: a backward pass run under a forward trace (hvp) calls this
# while NumPy's namespace holds the trace's creation functions, which would register each
# buffer as an array the differentiated function created
_ZEROS = np.zeros
# NumPy's own: while a trace runs, np.zeros is the engine's stand-in for user code's arrays
_zeros = np.zeros
_ARRAY = np.asarray
_ADD_AT = np.add.at
_PLAIN_KINDS = _NUMBERS | {np.ndarray, int}


def _positions(length: int) -> np.ndarray:
    """``arange(length)``, as a view of one cached, growing buffer (amortized O(1))."""
    global _axis_positions
    if len(_axis_positions) < length:
        _axis_positions = np.arange(max(length, 2 * len(_axis_positions)), dtype=np.intp)
    return _axis_positions[:length]


def flat_positions(shape: tuple, index: Any) -> np.ndarray:
    """The flat position in an array of ``shape`` of every element that ``index`` selects.

    Costs O(size of the selection * ndim): each axis's coordinate is read through ``index``
    from a zero-stride view (`_coordinates`), so nothing of the array's full size is
    allocated.
    """
    flat = None
    stride = 1
    coordinates = _coordinates(shape)
    for axis in reversed(range(len(shape))):
        coordinate = coordinates[axis][index]
        flat = coordinate * stride if flat is None else flat + coordinate * stride
        stride *= shape[axis]
    return flat if type(flat) is np.ndarray else _ARRAY(flat)


_ONE_BYTE = np.zeros(1, np.int8)


def selection_shape(shape: tuple, index: Any) -> tuple:
    """The shape of ``x[index]`` for an array ``x`` of ``shape``: read from a view of zero
    strides (nothing of x's size is allocated) made by the ndarray constructor, not by
    NumPy's Python functions (``np.broadcast_to``), which a forward trace (hvp) routes.

    >>> selection_shape((4, 5), (np.array([0, 2, 0]), slice(1, 4)))
    (3, 3)
    """
    return np.ndarray(shape, np.int8, _ONE_BYTE, 0, (0,) * len(shape))[index].shape


def has_integer_array(index: Any) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    for part in parts:
        if issubclass(type(part), np.ndarray) and part.dtype.kind in "iu" and part.ndim > 0:
            return True
    return False


class SparseCotangent(AbstractThunk):
    """The cotangent of ``x[index]``: ``values`` at ``index`` in a zero array of x's shape.

    ``values`` are projected onto ``dtype`` (x's tangent dtype) when it is built, so the
    in-place add and the dense value always agree. Index kinds: ints, slices, Ellipsis,
    ``None``, integer arrays (with repeats), boolean masks, and tuples mixing them (lists
    must be converted to arrays first, as NumPy would).

    ``copy.copy`` returns the cotangent itself; ``copy.deepcopy`` and ``pickle`` give a new
    sparse cotangent with copies of the index and values (nothing dense is built).

    >>> import numpy as np
    >>> t = SparseCotangent(np.array([0, 0, 2]), np.array([1.0, 2.0, 3.0]), (4,), np.float64)
    >>> t.unthunk()
    array([3., 0., 3., 0.])
    >>> buffer = np.ones(4)
    >>> t.add_into(buffer)
    array([4., 1., 4., 1.])
    """

    __slots__ = ("index", "values", "shape", "dtype", "like", "_kind", "_groups")

    def __init__(self, index: Any, values: Any, shape: tuple, dtype: Any, like: Any = None):
        if not issubclass(type(dtype), np.dtype):
            dtype = np.dtype(dtype)
        self.dtype = dtype
        self.index = index
        self.shape = shape
        self.like = like  # another library's array (Dask's): the dense value is of its kind
        self._value = _UNSET
        # x[i] is known to be basic without looking; _groups is set only for _GROUPED.
        self._kind = _BASIC if type(index) is int else None
        if type(values) is not dtype.type:
            if is_plain(values):
                values = cast_to(values, dtype)
            else:
                if getattr(values, "dtype", None) is not dtype:
                    values = cast_to(values, dtype)
                self._kind = _TRACED
        if like is not None:
            self._kind = _TRACED  # summed functionally, into the library's own arrays
        self.values = values

    def _classify(self) -> int:
        kind = self._kind
        if kind is None:
            if not has_integer_array(self.index):
                kind = _BASIC  # ints, slices, masks: every selected position is distinct
            else:
                selection = flat_positions(self.shape, self.index)
                flat = selection.ravel()
                unique, inverse = np.unique(flat, return_inverse=True)
                if len(unique) == flat.size:
                    kind = _NO_REPEATS
                else:
                    sums = np.zeros(len(unique), self.dtype)
                    values = np.broadcast_to(self.values, selection.shape)
                    np.add.at(sums, inverse.ravel(), values.ravel())
                    self._groups = (np.unravel_index(unique, self.shape), sums)
                    kind = _GROUPED
            self._kind = kind
        return kind

    def add_into(self, buffer: np.ndarray) -> np.ndarray:
        """Add this cotangent into ``buffer`` in place and return ``buffer``.

        ``buffer`` must have this cotangent's shape and a dtype that can hold the sum (the
        caller, normally `accumulate`, checks that). Costs O(size of the index).
        """
        if self._kind != _BASIC and self._classify() == _GROUPED:
            positions, sums = self._groups
            buffer[positions] += sums
        elif self._kind == _TRACED:
            raise TypeError("a SparseCotangent of traced values cannot be added in place; "
                            "accumulate() sums it functionally (SparseSum)")
        else:
            buffer[self.index] += self.values
        return buffer

    def dense(self) -> np.ndarray:
        """A new dense array with this cotangent's value."""
        if self._kind == _TRACED:
            if self.like is not None:
                return scatter_like(self.like, self.dtype, (self.index,), (self.values,))
            return scatter_sum(self.shape, self.dtype, (self.index,), self.values)
        out = _ZEROS(self.shape, self.dtype)
        kind = self._kind
        if kind is None and has_integer_array(self.index):
            # repeats summed into the zeros in index order, as `_classify` sums a group: the
            # same value, without sorting the positions to find the groups
            _ADD_AT(out, self.index, self.values)
        elif kind == _GROUPED:
            positions, sums = self._groups
            out[positions] = sums
        else:
            out[self.index] = self.values
        return out

    @property
    def is_traced(self) -> bool:
        """Whether the values are traced (a pullback running under an outer trace)."""
        return self._kind == _TRACED

    def _compute(self):
        return self.dense()

    def with_dtype(self, dtype: Any) -> "SparseCotangent":
        """The same cotangent with its values cast (projected) to ``dtype``."""
        if np.dtype(dtype) == self.dtype:
            return self
        return SparseCotangent(self.index, self.values, self.shape, dtype, self.like)

    def __reduce__(self):
        # Copies and pickles stay sparse: the index, values, shape and dtype, never the memo.
        return (SparseCotangent, (self.index, self.values, self.shape, self.dtype, self.like))

    def __repr__(self) -> str:
        return (f"SparseCotangent(index={self.index!r}, values={self.values!r}, "
                f"shape={self.shape}, dtype={self.dtype})")


def through_view(cotangent: SparseCotangent, shape: tuple,
                 view: Any) -> SparseCotangent | None:
    """The cotangent of ``x``, still sparse, for the sparse ``cotangent`` of ``view(x)``, a
    view whose elements are distinct elements of ``x`` moved by strides (a transpose, a flip,
    axes swapped or moved); ``shape`` is x's. ``x.T[t]`` in a loop stays O(len(x[t])) per
    step backward, not O(len(x)).

    Each axis's coordinates, a zero-stride array of x's shape (nothing of its size is
    allocated), go through ``view`` and are read at the cotangent's index: the positions in
    ``x`` of the elements it selects, O(size of the selection * ndim). ``None`` where
    ``view`` copies instead, or for an array of one element (the caller then computes the
    cotangent densely).

    >>> t = SparseCotangent(1, np.array([1.0, 2.0]), (3, 2), np.float64)  # (x.T)[1]
    >>> through_view(t, (2, 3), np.transpose).unthunk()
    array([[0., 1., 0.],
           [0., 2., 0.]])
    """
    if cotangent.is_traced or cotangent.like is not None or not shape or not cotangent.shape:
        return None  # (of one element, dense costs as little)
    index = []
    for coordinates in _coordinates(shape):
        moved = view(coordinates)
        if type(moved) is not np.ndarray or moved.shape != cotangent.shape or \
                not np.may_share_memory(moved, coordinates):
            return None  # a copy: not a view of x's elements
        index.append(moved[cotangent.index])
    return _moved(cotangent, tuple(index), shape)


_coordinates_of: dict = {}  # shape -> its axes' coordinates (`_coordinates`)


def _coordinates(shape: tuple) -> tuple:
    """For each axis, an array of ``shape`` holding each element's coordinate along that
    axis: zero strides on the other axes (nothing of the array's size is allocated), read
    only; kept per shape, since a loop meets the same shape at every step."""
    found = _coordinates_of.get(shape)
    if found is None:
        found = []
        for axis, length in enumerate(shape):
            coordinate = _positions(length)  # (the buffer flat_positions reads too)
            strides = [0] * len(shape)
            strides[axis] = coordinate.itemsize
            # (the constructor, not as_strided: under hvp a backward pass calls this while
            # NumPy's namespace holds the trace's creation functions, which as_strided calls)
            coordinates = np.ndarray(shape, coordinate.dtype, coordinate, 0, strides)
            coordinates.setflags(write=False)
            found.append(coordinates)
        if len(_coordinates_of) >= 64:
            _coordinates_of.clear()
        found = _coordinates_of[shape] = tuple(found)
    return found


def through_reshape(cotangent: SparseCotangent, shape: tuple) -> SparseCotangent | None:
    """The cotangent of ``x``, still sparse, for the sparse ``cotangent`` of ``x`` reshaped
    in C order (``reshape``, ``ravel``, ``squeeze``, ``expand_dims``); ``shape`` is x's. An
    element keeps its flat position, so the index maps in O(size of the selection * ndim).
    ``None`` for a cotangent kept lazy in another way (traced values, Dask's arrays) and for
    an array of one element.

    >>> t = SparseCotangent(slice(0, 2), np.array([1.0, 2.0]), (4,), np.float64)
    >>> through_reshape(t, (2, 2)).unthunk()
    array([[1., 2.],
           [0., 0.]])
    """
    if cotangent.is_traced or cotangent.like is not None or not shape or not cotangent.shape:
        return None  # (of one element, dense costs as little)
    flat = flat_positions(cotangent.shape, cotangent.index)
    return _moved(cotangent, np.unravel_index(flat, shape), shape)


def _moved(cotangent: SparseCotangent, index: tuple, shape: tuple) -> SparseCotangent:
    """``cotangent``'s values at ``index`` of an array of ``shape``: the positions it selects,
    moved one to one, so repeats only where its own index repeats them."""
    moved = SparseCotangent(index, cotangent.values, shape, cotangent.dtype)
    if cotangent._classify() != _GROUPED:
        moved._kind = _NO_REPEATS  # (one to one: no np.unique needed to know it)
    return moved


@recorded_whole
def scatter_sum(shape: tuple, dtype: Any, indices: tuple, *values: Any) -> Any:
    """A zero array of ``shape`` and ``dtype`` plus each ``values[k]`` at ``indices[k]``
    (repeated positions summed): the dense value of a sum of sparse cotangents, in one pass.

    It is a NumPy-style function: called on traced values, it hands itself to their type's
    ``__array_function__`` (NEP 18), so an engine records it as one operation (its rule, in
    ``chainrules.rules.numpy.indexing``, gathers: the pullback of a scatter is ``dy[index]``).

    >>> scatter_sum((3,), np.float64, (0, np.array([2, 2])), 1.0, np.array([1.0, 2.0]))
    array([1., 0., 3.])
    """
    if not set(map(type, values)) <= _PLAIN_KINDS:  # a value that may be traced
        for value in values:
            if not is_plain(value):
                dispatch = getattr(type(value), "__array_function__", None)
                if dispatch is not None:
                    return dispatch(value, scatter_sum, (type(value),),
                                    (shape, dtype, indices) + values, {})
    out = _zeros(shape, dtype)
    if len(shape) == 1 and len(indices) > 8 and set(map(type, indices)) == _INT \
            and set(map(type, values)) <= _NUMBERS:
        # x[i] read in a loop: the numbers added in index order, as the loop below does
        # (fromiter: NumPy's own conversion, which engines do not stand in for)
        np.add.at(out, np.fromiter(indices, np.intp, len(indices)),
                  np.fromiter(values, out.dtype, len(values)))
        return out
    for index, value in zip(indices, values):
        if has_integer_array(index):
            np.add.at(out, index, value)
        else:
            out[index] += value
    return out


def scatter_like(like: Any, dtype: Any, indices: tuple, values: tuple) -> Any:
    """`scatter_sum` in the library of ``like`` (a Dask array), with its chunks: zeros like
    ``like`` plus each ``values[k]`` at ``indices[k]``, built by the library's own indexing and
    writes (which Dask does lazily). A position an integer index repeats is added once per
    round, each round a write without repeats.

    >>> scatter_like(np.zeros(3), np.float64, (np.array([2, 2]),), (np.array([1.0, 2.0]),))
    array([0., 0., 3.])
    """
    out = np.zeros_like(like, dtype=dtype)
    for index, value in zip(indices, values):
        index, value = _without_new_axes(like.ndim, index, value)
        for part, part_value in _without_repeats(like.shape, index, value):
            try:
                out[part] = out[part] + part_value
            except (NotImplementedError, ValueError, TypeError, IndexError) as error:
                raise TypeError(
                    f"the cotangent of x[index] for a {type(like).__module__.split('.')[0]} "
                    f"array x cannot be written back at this index ({error}); index such "
                    f"arrays with ints, slices or one integer array, or compute x first "
                    f"(x.compute()).") from error
    return out


def _without_new_axes(ndim: int, index: Any, value: Any) -> tuple:
    """``index`` without its ``None`` entries, and ``value`` (shaped as ``x[index]``) without
    the axes they made: the same positions, in a form every library can write to."""
    parts = index if isinstance(index, tuple) else (index,)
    if not any(part is None for part in parts):
        return index, value
    if any(part is Ellipsis for part in parts):  # spelled out: the axes it stands for
        at = parts.index(Ellipsis)
        taken = sum(1 for part in parts if part is not None and part is not Ellipsis)
        parts = parts[:at] + (slice(None),) * (ndim - taken) + parts[at + 1:]
    axis, new_axes, kept = 0, [], []
    for part in parts:
        if part is None:
            new_axes.append(axis)
            axis += 1
            continue
        kept.append(part)
        if not issubclass(type(part), (int, np.integer)):
            axis += 1
    return tuple(kept), np.reshape(value, tuple(
        length for k, length in enumerate(np.shape(value)) if k not in new_axes))


def _without_repeats(shape: tuple, index: Any, value: Any) -> list:
    """``(index, value)`` as parts whose positions do not repeat: the index itself, or, for
    an integer array index (one axis) with repeats, one part per occurrence count."""
    if not has_integer_array(index):
        return [(index, value)]
    positions = flat_positions(shape, index).ravel()
    unique, inverse, counts = np.unique(positions, return_inverse=True, return_counts=True)
    if len(unique) == positions.size:
        return [(index, value)]
    parts = isinstance(index, tuple) and [p for p in index if has_integer_array(p)]
    if (parts and len(parts) > 1) or np.ndim(index if not isinstance(index, tuple)
                                             else parts[0]) != 1:
        raise TypeError("the cotangent of x[index] with repeated positions of a "
                        "multidimensional integer index cannot be written back lazily; index "
                        "with one 1-d integer array, or compute x first (x.compute()).")
    array = index if not isinstance(index, tuple) else parts[0]
    axis = 0 if not isinstance(index, tuple) else next(
        k for k, p in enumerate(index) if has_integer_array(p))
    occurrence = np.zeros(len(array), np.intp)
    seen: dict = {}
    for k, position in enumerate(np.asarray(array).tolist()):
        occurrence[k] = seen.get(position, 0)
        seen[position] = occurrence[k] + 1
    result = []
    for round_number in range(int(counts.max())):
        chosen = np.flatnonzero(occurrence == round_number)
        part = (array[chosen] if not isinstance(index, tuple) else
                index[:axis] + (array[chosen],) + index[axis + 1:])
        taken = np.take(value, chosen, axis=axis)
        result.append((part, taken))
    return result


class SparseSum(AbstractThunk):
    """An owned accumulator of traced cotangents: ``dense + sum of sparse pieces``, kept lazy.

    At order 2 and above an index loop's pullbacks give one traced `SparseCotangent` per
    ``x[i]``. Adding them one by one into a traced dense array would build a new array of
    len(x) per element (quadratic); this keeps the pieces and builds the value once, with one
    `scatter_sum` (whose pullback gathers), so the nested gradient stays linear. Dense
    contributions are summed functionally (``dense + t``). Built by `accumulate`.

    >>> import numpy as np
    >>> total = SparseSum((3,), np.float64)
    >>> total.add(SparseCotangent(0, 1.0, (3,), np.float64)) is total
    True
    >>> total.add(np.ones(3)).unthunk()
    array([2., 1., 1.])
    """

    __slots__ = ("shape", "dtype", "dense", "indices", "pieces", "like")

    def __init__(self, shape: tuple, dtype: Any, dense: Any = None):
        self.shape, self.dtype, self.dense = shape, np.dtype(dtype), dense
        self.like = None  # as in SparseCotangent
        self.indices: list = []
        self.pieces: list = []
        self._value = _UNSET
        if dense is not None:
            self.dtype = np.result_type(self.dtype, getattr(dense, "dtype", type(dense)))

    def add(self, t: Any) -> "SparseSum":
        """Add ``t`` (this accumulator is owned: it changes, and is returned)."""
        if self._value is not _UNSET:  # already read: start again from its value
            self.dense, self._value = self._value, _UNSET
            self.indices, self.pieces = [], []
        if type(t) is SparseCotangent:
            if t.like is not None:
                self.like = t.like
            self.indices.append(t.index)
            self.pieces.append(t.values)
            if t.dtype is not self.dtype:
                self.dtype = np.promote_types(self.dtype, t.dtype)
            return self
        t = unthunk(t)
        self.dtype = np.result_type(self.dtype, getattr(t, "dtype", type(t)))
        self.dense = t if self.dense is None else self.dense + t
        return self

    def _compute(self):
        if not self.pieces:
            return self.dense
        if self.like is not None:
            scattered = scatter_like(self.like, self.dtype, tuple(self.indices),
                                     tuple(self.pieces))
        else:
            scattered = scatter_sum(self.shape, self.dtype, tuple(self.indices), *self.pieces)
        return scattered if self.dense is None else self.dense + scattered

    def _release(self):
        self.dense, self.indices, self.pieces = None, [], []

    def __repr__(self) -> str:
        return f"SparseSum(shape={self.shape}, dtype={self.dtype}, pieces={len(self.pieces)})"
