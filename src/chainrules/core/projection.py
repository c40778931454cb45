"""ProjectTo: map a cotangent onto the tangent space of a primal.

``ProjectTo(x)`` is built from the primal (in the forward pass) and applied to a cotangent
(in the backward pass). It never reduces broadcast dimensions (that is the rule's job) and never
guesses: a cotangent of the wrong shape is an error that names both shapes.

Policy, for every primal kind:
- float and complex numbers and arrays keep their dtype (float32 stays float32); a complex
  cotangent for a real primal keeps its real part;
- integers, bools, strings, None, types, functions without captured variables: `NoTangent`;
- 0-d arrays and scalars are interchangeable as cotangents;
- containers, dataclasses, objects and closures are projected field by field into a `Tangent`;
- lazy cotangents stay lazy, and in-place addable ones stay in-place addable.
"""

from __future__ import annotations

import numbers
import types
from typing import Any

import numpy as np

from .dtypes import cast_to, tangent_dtype
from .duck_arrays import is_duck_array_type, like
from .sparse import SparseCotangent
from .structure import register_leaf_type
from .tangents import (AbstractZero, NoTangent, Tangent, ZeroTangent, field_value,
                       structural_fields)
from .thunks import AbstractThunk, InplaceableThunk, Thunk
from .vector_spaces import VECTOR_SPACES

__all__ = ["ProjectTo", "ProjectionError", "register_constant_type"]


class ProjectionError(ValueError):
    """A cotangent that does not fit the primal's tangent space (wrong shape or kind)."""


class ProjectTo:
    """The projector onto the tangent space of ``x``: ``ProjectTo(x)(cotangent)``.

    >>> import numpy as np
    >>> ProjectTo(np.float32(1.0))(0.1)
    np.float32(0.1)
    >>> ProjectTo(np.zeros(2))(np.array([1 + 2j, 3j]))
    array([1., 0.])
    >>> ProjectTo(3)(1.5)
    NoTangent()
    >>> ProjectTo({"w": np.ones(2), "n": 3})({"w": np.ones(2), "n": 1.0})
    Tangent[dict](w=array([1., 1.]))
    """

    __slots__ = ()

    def __new__(cls, x: Any):
        # Subclasses are built by `_new`; ``ProjectTo(x)`` picks the subclass for ``x``.
        return _projector_for(x)

    @classmethod
    def _new(cls, **attributes):
        projector = object.__new__(cls)
        for name, value in attributes.items():
            setattr(projector, name, value)
        return projector

    def __call__(self, cotangent: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class _ProjectToNothing(ProjectTo):
    """Primals that cannot be perturbed: every cotangent becomes `NoTangent`."""

    __slots__ = ()

    def __call__(self, cotangent):
        return NoTangent()

    def __repr__(self):
        return "ProjectTo(NoTangent)"


_NOTHING = _ProjectToNothing._new()
NO_TANGENT_PROJECTOR = _NOTHING  # the projector of every primal that cannot be perturbed

# How a projected dense value is returned, by the primal's kind.
_ARRAY, _NUMPY_SCALAR, _PY_FLOAT, _PY_COMPLEX = range(4)


class _ProjectToNumeric(ProjectTo):
    """Float and complex numbers and arrays: same shape, same dtype, real stays real."""

    __slots__ = ("shape", "dtype", "kind")

    def __call__(self, cotangent):
        kind = self.kind
        # Fast paths: already in the space.
        if kind == _ARRAY:
            if type(cotangent) is np.ndarray and cotangent.dtype == self.dtype \
                    and cotangent.shape == self.shape:
                return cotangent
        elif type(cotangent) is self.dtype.type and kind == _NUMPY_SCALAR:
            return cotangent
        if type(cotangent) in _ARRAY_LIKE_TYPES:
            return self._project_array_like(cotangent)
        if isinstance(cotangent, AbstractZero):
            return cotangent
        if isinstance(cotangent, AbstractThunk):
            return self._project_lazy(cotangent)
        if _is_array_like(cotangent):
            return self._project_array_like(cotangent)
        if isinstance(cotangent, Tangent) or not _is_numeric(cotangent):
            raise ProjectionError(
                f"ProjectTo: expected a cotangent of shape {self.shape} and dtype {self.dtype}, "
                f"got a {type(cotangent).__name__}. A rule returned a cotangent of the wrong "
                f"kind for an array or number argument.")
        shape = np.shape(cotangent)
        if shape != self.shape:
            raise ProjectionError(
                f"ProjectTo: expected a cotangent of shape {self.shape}, got shape {shape}. "
                f"Rules must reduce broadcast dimensions (sum them out) before projecting.")
        value = cast_to(cotangent, self.dtype)
        if kind == _ARRAY:
            return value if type(value) is np.ndarray else np.asarray(value)
        if kind == _NUMPY_SCALAR:
            return value[()] if issubclass(type(value), np.ndarray) else value
        if kind == _PY_FLOAT:
            return float(value)
        return complex(value)

    def _project_array_like(self, cotangent):
        # An engine's traced value (higher-order AD): project it with its own operations.
        shape = tuple(cotangent.shape)
        if shape != self.shape:
            raise ProjectionError(
                f"ProjectTo: expected a cotangent of shape {self.shape}, got shape {shape}.")
        if cotangent.dtype.kind == "c" and self.dtype.kind != "c":
            cotangent = cotangent.real
        if cotangent.dtype != self.dtype:
            cotangent = cotangent.astype(self.dtype)
        return cotangent

    def _project_lazy(self, cotangent):
        if isinstance(cotangent, SparseCotangent):
            if cotangent.shape != self.shape:
                raise ProjectionError(
                    f"ProjectTo: expected a cotangent of shape {self.shape}, got a sparse "
                    f"cotangent of shape {cotangent.shape}.")
            if self.kind == _ARRAY:
                return cotangent.with_dtype(self.dtype)
        if isinstance(cotangent, InplaceableThunk) and self.kind == _ARRAY:
            if cotangent.dtype == self.dtype and cotangent.shape == self.shape:
                return cotangent
            return self._inplaceable(cotangent)
        if cotangent.is_computed:
            return self(cotangent.unthunk())
        return Thunk(lambda: self(cotangent.unthunk()))

    def _inplaceable(self, cotangent: InplaceableThunk) -> InplaceableThunk:
        # The original ``add`` works in the unprojected space, so it cannot be reused; the
        # projected value is added instead, which keeps add and value equal by construction.
        value = Thunk(lambda: self(cotangent.unthunk()))

        def add(buffer):
            buffer += value.unthunk()
            return buffer

        return InplaceableThunk(add, value, shape=self.shape, dtype=self.dtype)

    def __repr__(self):
        return f"ProjectTo(shape={self.shape}, dtype={self.dtype})"


class _ProjectToDuckArray(_ProjectToNumeric):
    """Another library's array (Dask's, CuPy's): as an array of its shape and dtype, in its
    library, with its chunks (`chainrules.core.duck_arrays.like`)."""

    __slots__ = ("primal",)

    def __call__(self, cotangent):
        if isinstance(cotangent, AbstractZero):
            return cotangent
        if isinstance(cotangent, AbstractThunk):
            cotangent = cotangent.unthunk()  # lazy already: the library's graph
        return like(_ProjectToNumeric.__call__(self, cotangent), self.primal)

    def __repr__(self):
        return f"ProjectTo({type(self.primal).__name__}, shape={self.shape}, dtype={self.dtype})"


def _is_array_like(value) -> bool:
    """Values that are neither NumPy's nor Python's but say their shape and dtype (the traced
    values of an AD engine)."""
    kind = type(value)
    if kind in _ARRAY_LIKE_TYPES:
        return True
    found = hasattr(value, "shape") and hasattr(value, "dtype") and not issubclass(
        type(value), (np.ndarray, np.generic, AbstractThunk, Tangent))
    if found and hasattr(kind, "shape") and hasattr(kind, "dtype"):
        _ARRAY_LIKE_TYPES.add(kind)  # every value of the type says them (class attributes)
    return found


# Array-like types (`_is_array_like`) whose class defines shape and dtype: one lookup each
# time their values are projected, which second derivatives do in every pullback.
_ARRAY_LIKE_TYPES: set = set()


def _is_numeric(value) -> bool:
    return issubclass(type(value), (np.ndarray, np.generic, numbers.Number)) and \
        not issubclass(type(value), (np.str_, np.bytes_, np.void))


class _ProjectToObjectArray(ProjectTo):
    """Object arrays: each element projected by its own projector."""

    __slots__ = ("array",)

    def __call__(self, cotangent):
        if isinstance(cotangent, AbstractZero):
            return cotangent
        from .thunks import unthunk

        cotangent = np.asarray(unthunk(cotangent), dtype=object)
        if cotangent.shape != self.array.shape:
            raise ProjectionError(
                f"ProjectTo: expected a cotangent of shape {self.array.shape}, got shape "
                f"{cotangent.shape}.")
        out = np.empty(self.array.shape, dtype=object)
        for position, element in np.ndenumerate(self.array):
            out[position] = ProjectTo(element)(cotangent[position])
        return out


def _is_array(x: Any) -> bool:
    """An ndarray, or an engine's traced array (it takes part in NEP 18 and has a shape)."""
    return issubclass(type(x), np.ndarray) or (
        hasattr(type(x), "__array_function__") and hasattr(x, "ndim"))


class _ProjectToStructure(ProjectTo):
    """Containers, dataclasses, objects, closures: a `Tangent`, projected field by field."""

    __slots__ = ("primal",)

    def __call__(self, cotangent):
        from .thunks import unthunk

        if isinstance(cotangent, AbstractZero):
            return cotangent
        if isinstance(cotangent, AbstractThunk) and not cotangent.is_computed:
            return Thunk(lambda: self(cotangent.unthunk()))  # stays lazy, like arrays' thunks
        cotangent = unthunk(cotangent)
        primal = self.primal
        primal_type = type(primal)
        if isinstance(cotangent, (tuple, list, dict)) and not isinstance(cotangent, Tangent):
            cotangent = Tangent(primal_type, structural_fields(cotangent))
        elif isinstance(primal, (list, tuple)) and _is_array(cotangent) \
                and cotangent.ndim and len(cotangent) == len(primal):
            # A sequence of numbers or arrays used as an array (np.array([a, b])): its
            # cotangent may come stacked (an engine's traced array at order 2); element i is
            # cotangent[i].
            cotangent = Tangent(primal_type, dict(enumerate(cotangent)))
        if not isinstance(cotangent, Tangent):
            raise ProjectionError(
                f"ProjectTo: expected a Tangent for a {primal_type.__name__}, got a "
                f"{type(cotangent).__name__}.")
        if cotangent.primal_type not in (None, primal_type) and not (
                isinstance(primal, (tuple, list, dict))
                and cotangent.primal_type in (tuple, list, dict)):
            raise ProjectionError(
                f"ProjectTo: expected a Tangent for a {primal_type.__name__}, got a Tangent for "
                f"a {cotangent.primal_type.__name__}.")
        backing = {}
        for key, value in cotangent.items():
            try:
                field = field_value(primal, key)
            except (AttributeError, KeyError, IndexError, ValueError):
                raise ProjectionError(
                    f"ProjectTo: a {primal_type.__name__} has no field {key!r}, but the "
                    f"cotangent has one.") from None
            projected = ProjectTo(field)(value)
            if not isinstance(projected, AbstractZero):
                backing[key] = projected
        if not backing:
            return ZeroTangent() if _has_tangent(primal) else NoTangent()
        return Tangent(primal_type, backing)

    def __repr__(self):
        return f"ProjectTo({type(self.primal).__name__})"


def _has_tangent(x: Any, depth: int = 0) -> bool:
    """Whether anything in ``x`` can be perturbed (bounded depth: objects may be cyclic)."""
    projector = ProjectTo(x)
    if projector is _NOTHING:
        return False
    if isinstance(projector, _ProjectToStructure):
        return depth < 32 and any(_has_tangent(v, depth + 1)
                                  for v in structural_fields(x).values())
    return True


_NOTHING_TYPES = (bool, int, str, bytes, type(None), type, types.ModuleType, range, slice,
                  type(Ellipsis), np.dtype, AbstractZero, np.bool_, np.integer, np.str_,
                  np.bytes_, np.datetime64, np.timedelta64)


def register_constant_type(kind: type) -> None:
    """Give values of ``kind`` (and its subclasses) no tangent, as integers: another library's
    values that rules take as constants (SciPy's sparse matrices, which hold plain arrays).
    They are leaves of every structure (the walk never looks into their attributes).

    >>> class Table:
    ...     shape, dtype = (2,), np.dtype(float)
    >>> register_constant_type(Table)
    >>> ProjectTo(Table())(np.ones(2))
    NoTangent()
    """
    global _NOTHING_TYPES
    if not issubclass(kind, _NOTHING_TYPES):
        _NOTHING_TYPES = _NOTHING_TYPES + (kind,)
        _ARRAY_LIKE_TYPES.difference_update([t for t in _ARRAY_LIKE_TYPES if issubclass(t, kind)])
        register_leaf_type(kind)


def _numeric(shape: tuple, dtype: np.dtype, kind: int) -> _ProjectToNumeric:
    projector = object.__new__(_ProjectToNumeric)
    projector.shape, projector.dtype, projector.kind = shape, dtype, kind
    return projector


# Scalars' projectors depend only on the type: built once, found with one dict lookup.
_SCALAR_PROJECTORS = {float: _numeric((), np.dtype(np.float64), _PY_FLOAT),
                      complex: _numeric((), np.dtype(np.complex128), _PY_COMPLEX)}
for _type in (np.float16, np.float32, np.float64, np.longdouble,
              np.complex64, np.complex128, np.clongdouble):
    _SCALAR_PROJECTORS[_type] = _numeric((), np.dtype(_type), _NUMPY_SCALAR)
for _type in (int, bool, np.int64, np.int32, np.bool_, str, type(None)):
    _SCALAR_PROJECTORS[_type] = _NOTHING


# Array projectors depend only on shape and dtype: made once per (shape, dtype).
_ARRAY_PROJECTORS: dict = {}


class _ProjectToVectorSpace(ProjectTo):
    """A value of a type declared with `vector_space`: its cotangents are values of that type
    (or zeros); anything else is refused, naming both types."""

    __slots__ = ("kind",)

    def __call__(self, cotangent):
        from .thunks import unthunk

        if isinstance(cotangent, AbstractZero):
            return cotangent
        cotangent = unthunk(cotangent)
        if type(cotangent) is not self.kind and not isinstance(cotangent, AbstractZero):
            raise ProjectionError(
                f"ProjectTo: a {self.kind.__name__} (declared a vector space) takes cotangents "
                f"of type {self.kind.__name__}, got a {type(cotangent).__name__}. A rule's "
                f"pullback returns a {self.kind.__name__} for such an argument.")
        return cotangent

    def __repr__(self):
        return f"ProjectTo({self.kind.__name__})"


def _projector_for(x: Any) -> ProjectTo:
    projector = _SCALAR_PROJECTORS.get(type(x))
    if projector is not None:
        return projector
    if type(x) is np.ndarray:  # the common case, seen before: one lookup
        projector = _ARRAY_PROJECTORS.get((x.shape, x.dtype))
        if projector is not None:
            return projector
    if type(x) in VECTOR_SPACES:
        return _ProjectToVectorSpace._new(kind=type(x))
    if is_duck_array_type(type(x)):
        dtype = tangent_dtype(x.dtype)
        if dtype is None:
            return _NOTHING
        return _ProjectToDuckArray._new(shape=tuple(x.shape), dtype=dtype, kind=_ARRAY, primal=x)
    if type(x) in _ARRAY_LIKE_TYPES:  # as an array of its shape and dtype (below)
        projector = _ARRAY_PROJECTORS.get((tuple(x.shape), x.dtype))
        if projector is not None:
            return projector
    if issubclass(type(x), np.ndarray):
        key = (x.shape, x.dtype)
        projector = _ARRAY_PROJECTORS.get(key)
        if projector is not None:
            return projector
        dtype = tangent_dtype(x.dtype) if x.dtype.kind != "O" else None
        if dtype is not None:
            if len(_ARRAY_PROJECTORS) > 10_000:  # a bound, for endless distinct shapes
                _ARRAY_PROJECTORS.clear()
            projector = _ARRAY_PROJECTORS[key] = _numeric(x.shape, dtype, _ARRAY)
            return projector
        if x.dtype.kind == "O":
            return _ProjectToObjectArray._new(array=x)
        return _NOTHING
    if issubclass(type(x), np.generic):
        dtype = tangent_dtype(x.dtype)
        return _NOTHING if dtype is None else _numeric((), dtype, _NUMPY_SCALAR)
    if isinstance(x, _NOTHING_TYPES):
        return _NOTHING
    if _is_array_like(x) and not isinstance(x, type):
        dtype = tangent_dtype(x.dtype)
        if dtype is None:
            return _NOTHING
        key = (tuple(x.shape), x.dtype)
        if len(_ARRAY_PROJECTORS) > 10_000:
            _ARRAY_PROJECTORS.clear()
        projector = _ARRAY_PROJECTORS[key] = _numeric(key[0], dtype, _ARRAY)
        return projector
    if issubclass(type(x), float):  # float subclasses
        return _SCALAR_PROJECTORS[float]
    if issubclass(type(x), complex):
        return _SCALAR_PROJECTORS[complex]
    if issubclass(type(x), (types.BuiltinFunctionType, np.ufunc)) or \
            issubclass(type(x), types.FunctionType) and not x.__closure__:
        return _NOTHING
    if isinstance(x, Tangent):
        return _NOTHING
    return _ProjectToStructure._new(primal=x)
