"""Array creation while tracing: ``np.array``, ``np.asarray``... of arguments holding traced
values, recorded as one call of NumPy's own function; and the creation functions (``np.zeros``,
``np.ones``, ``np.full``...) whose arrays the differentiated function may write traced values
into (`chainrules.ad.dispatch.writes`). `REPLACEMENTS` maps each replaced name in the
``numpy`` namespace to its replacement (NumPy's scalar types among them:
`chainrules.ad.dispatch.scalar_types`); `NUMPY_REROUTED` holds those rerouted in place.

>>> import numpy as np, chainrules as cr
>>> cr.grad(lambda x: np.sum(np.array([x[0], 2.0 * x[1]]) ** 2))(np.ones(2))
array([2., 8.])
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from ...core.structure import leaves, replace_leaves
from ...core.tangents import AbstractZero, NoTangent
from ...core.thunks import unthunk
from ..trace.errors import TracingError
from ..trace.tape import record, record_output
from ..trace.traced import Traced, primal_value
from ..trace.values import holds_traced
from . import writes
from .routes import ORIGINALS, REROUTED, Rerouted
from .scalar_types import stand_ins

__all__ = ["CREATION", "WRITABLE", "REPLACEMENTS", "NUMPY_REROUTED"]


CREATION = ("array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray")


_FIRST_PARAMETER = {"array": "object"}  # the others call it ``a``


def _creation(name: str) -> Any:
    """The replacement of ``np.<name>``: NumPy itself for plain arguments (every argument
    passed on unchanged), the engine when the array argument holds traced values."""
    original = ORIGINALS[name]
    first = _FIRST_PARAMETER.get(name, "a")

    def create(*args: Any, **kwargs: Any) -> Any:
        if args:
            if len(args) == 1 and (type(args[0]) is list or type(args[0]) is tuple) and (
                    not kwargs or len(kwargs) == 1 and "dtype" in kwargs):
                # np.array([a, b, c]); np.asarray(..., dtype=float), as solve_ivp calls it
                stacked = _stacked_numbers(original, args[0], kwargs.get("dtype"))
                if stacked is not None:
                    return stacked
            if holds_traced(args[0]):
                return _create_traced(name, args, kwargs)
        elif first in kwargs and holds_traced(kwargs[first]):  # passed by keyword
            kwargs = dict(kwargs)
            return _create_traced(name, (kwargs.pop(first),), kwargs)
        if kwargs and kwargs.get("like") is not None:
            kwargs = {**kwargs, "like": _like(name, kwargs["like"], strict=False)}
        result = original(*args, **kwargs)
        if type(result) is np.ndarray and result.base is None and \
                (not args or result is not args[0]):
            # a new array (np.asarray([0.0] * n) too): the function may write traced values
            # into it (ad/dispatch/writes.py)
            return writes.created(result)
        return result

    create.__name__ = create.__qualname__ = name
    create.__doc__ = original.__doc__
    create.__wrapped__ = original
    return create


def _stacked_numbers(function: Any, elements: list | tuple, dtype: Any = None) -> Any:
    """``np.array([a, b, c])`` of float64 (or float32) numbers of one reverse tape recording
    at order 1, and Python numbers (constants; float64 only, which they would widen), with no
    ``dtype`` or the numbers' own: recorded
    as one record whose parents are the numbers, its pullback handing each one its number of
    the cotangent (`_StackedNumbersPullback`), without the structure walks of the general path
    (an ODE's right-hand side returns its derivatives so). ``None`` where it does not apply."""
    tape = kind = None
    primals, parents = [], []
    for element in elements:
        if type(element) is Traced:
            if tape is None:
                tape, kind = element.tape, type(element.primal)
            elif element.tape is not tape or type(element.primal) is not kind:
                return None
            primals.append(element.primal)
            parents.append(element.node)
        elif type(element) is float or type(element) is int:
            primals.append(element)
            parents.append(-1)
        else:
            return None
    if tape is None or (kind is not _F64 and kind is not _F32) or not tape.active or \
            max(parents) < 0:
        return None
    y = function(primals) if dtype is None else function(primals, dtype=dtype)
    if type(y) is not _NDARRAY or y.dtype.type is not kind:
        return None  # (a Python constant widened float32 numbers; another dtype asked for)
    return record_output(tape, function, tuple(primals), tuple(parents),
                         (y, _StackedNumbersPullback(len(primals), y.dtype)))


class _StackedNumbersPullback:
    """The pullback of `_stacked_numbers`: each number's cotangent is the cotangent's element
    at its position."""

    __slots__ = ("count", "dtype")

    def __init__(self, count: int, dtype: np.dtype):
        self.count, self.dtype = count, dtype

    def __call__(self, dy: Any) -> tuple:
        if type(dy) is not _NDARRAY:
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return (_NO_TANGENT,) * (self.count + 1)
        if type(dy) is _NDARRAY:
            if dy.dtype is not self.dtype:
                dy = dy.astype(self.dtype)  # (a thunk's value, unprojected)
            return (_NO_TANGENT,) + tuple(dy)  # NumPy numbers of the array's dtype
        return (_NO_TANGENT,) + tuple([dy[k] for k in range(self.count)])  # traced (order 2)


_NO_TANGENT = NoTangent()
# NumPy's number types, bound at import (while tracing, NumPy's namespace holds stand-ins:
# `chainrules.ad.dispatch.scalar_types`)
_F64, _F32, _NDARRAY = np.float64, np.float32, np.ndarray


def _create_traced(name: str, args: tuple, kwargs: dict) -> Any:
    """``np.<name>(*args, **kwargs)`` where ``args[0]`` holds traced values: recorded as one
    call of NumPy's own function, whose rule (`chainrules.rules.numpy.shape`) reshapes the cotangent
    back to the argument's shape and projects it onto the argument's dtype."""
    obj = args[0]
    if type(obj) is Traced and writes.is_constant(obj) and not writes.from_program(2):
        # NumPy's and SciPy's own code converting a constant: a plain array, as it expects
        return ORIGINALS[name](primal_value(obj), *args[1:], **kwargs)
    if type(obj) is Traced and name in _SAME_VALUES and _keeps_dtype(obj, args, kwargs):
        # The same values, shape and dtype, and traced values are immutable: nothing to record
        # (a number stays a number rather than becoming a 0-d array: scalar code stays fast).
        return obj
    if "like" in kwargs:
        kwargs = {**kwargs, "like": _like(name, kwargs["like"])}
    if type(obj) is not Traced and _inside_outer_trace(obj):
        return _create_nested(name, args, kwargs)
    return _no_objects(name, record(ORIGINALS[name], args, kwargs))


def _no_objects(name: str, result: Any) -> Any:
    if getattr(result, "dtype", None) == object:
        raise TracingError(
            f"np.{name}: the result would be an array of Python objects (dtype=object), "
            f"which cuts the traced values it holds out of the gradient. Give a float or "
            f"complex dtype, or build the array with np.stack.")
    return result


def _inside_outer_trace(obj: Any) -> bool:
    """Whether a list or tuple holds traced values whose own values are traced (a rule
    differentiated again: second derivatives)."""
    return any(holds_traced(leaf.primal)
               for _, leaf in leaves(obj, lambda v: type(v) is Traced))


def _create_nested(name: str, args: tuple, kwargs: dict) -> Any:
    """`_create_traced` for a list or tuple inside an outer trace, where a list's cotangent
    cannot be taken apart without indexing traced values: its traced elements are stacked
    (``np.stack``, differentiable at every order), and the stack is converted to what NumPy
    makes of the list. NumPy decides what that is, and its errors, on a stand-in list with
    zeros in place of the traced values."""
    def is_traced(value: Any) -> bool:
        return type(value) is Traced

    stand_in = replace_leaves(args[0], lambda t: np.zeros(t.shape, t.dtype), is_traced)
    expected = _no_objects(name, ORIGINALS[name](stand_in, *args[1:], **kwargs))
    fortran = expected.flags.f_contiguous and not expected.flags.c_contiguous
    return record(ORIGINALS["array"], (_stacked(args[0]),),
                  {"dtype": expected.dtype, "ndmin": expected.ndim, "order": "F" if fortran
                   else "K"})


def _stacked(obj: Any) -> Any:
    """The list or tuple ``obj`` holding traced values as one traced array (``np.stack`` of
    its elements, recursively); plain elements as NumPy makes them."""
    if not isinstance(obj, (list, tuple)):
        return obj
    if not holds_traced(obj):
        return ORIGINALS["array"](obj)
    return np.stack([_stacked(element) for element in obj])


# np.array copies: traced arrays can be written in place, so it must give a new one.
_SAME_VALUES = frozenset({"asarray", "asanyarray"})


def _keeps_dtype(obj: Any, args: tuple, kwargs: dict) -> bool:
    """Whether the call passes no option but a ``dtype`` that is ``obj``'s own."""
    if len(args) > 2 or (kwargs and (len(kwargs) > 1 or "dtype" not in kwargs)):
        return False
    dtype = args[1] if len(args) == 2 else kwargs.get("dtype")
    if dtype is None:
        return True
    try:
        return np.dtype(dtype) == obj.dtype
    except TypeError:
        return False  # not a dtype: NumPy says so


def _like(name: str, like: Any, strict: bool = True) -> Any:
    """The ``like=`` argument to pass on: a traced value as its primal (traced values stand in
    for ndarrays: the result is a plain ndarray, a constant), anything else as it is; with
    ``strict`` (the array argument holds traced values), only None and NumPy's arrays."""
    if type(like) is Traced:
        return like.primal
    if not strict or like is None or \
            getattr(type(like), "__array_function__", None) is np.ndarray.__array_function__:
        return like
    raise TypeError(
        f"np.{name}: like= must be None, a NumPy array or a traced value when the array "
        f"argument holds traced values (got {type(like).__name__}): another array library's "
        f"array creation cannot record on the trace. Drop like=, or convert with that library "
        f"outside the differentiated function.")


def _writable(name: str, original: Any, frames: int = 0) -> Any:
    """The replacement of a creation function (``np.zeros``...), calling ``original``: an array
    that the differentiated function creates is a traced constant, into which it can write
    traced values (ad/dispatch/writes.py). ``frames``: how many frames the call passes through between
    the caller and the replacement (a rerouted function's trampoline)."""

    def create(*args: Any, **kwargs: Any) -> Any:
        if name in ("full", "full_like"):  # a traced fill value is written into the array
            result = writes.full(original, args, kwargs)
            if result is not None:
                return result
        return writes.created(original(*args, **kwargs), depth=1 + frames)

    create.__name__ = create.__qualname__ = name
    create.__doc__ = original.__doc__
    create.__wrapped__ = original
    return create


# Creation functions whose float or complex arrays, made by the differentiated function, can
# take traced values (ad/dispatch/writes.py).
WRITABLE = ("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
            "full_like", "eye", "identity", "copy", "linspace", "arange")
ORIGINALS.update({name: getattr(np, name) for name in WRITABLE})
REPLACEMENTS = {name: _creation(name) for name in CREATION}
NUMPY_REROUTED: list = []  # filled below

# NumPy's creation functions written in Python (np.ones, np.full, np.eye, np.identity) are
# rerouted in place, as SciPy's are, so that `from numpy import ones` creates writable arrays
# too; the others (written in C) are replaced in the numpy namespace.
REROUTED.update({ORIGINALS[name]: Rerouted(ORIGINALS[name],
                                             lambda own, name=name: _writable(name, own, 2))
                  for name in WRITABLE if type(ORIGINALS[name]) is types.FunctionType})
REPLACEMENTS.update({name: _writable(name, ORIGINALS[name]) for name in WRITABLE
                      if ORIGINALS[name] not in REROUTED})
NUMPY_REROUTED[:] = [REROUTED[ORIGINALS[name]] for name in WRITABLE
                      if ORIGINALS[name] in REROUTED]

# NumPy's scalar types: np.float64(t) casts as t.astype(np.float64) (ad/dispatch/scalar_types.py).
_SCALAR_TYPES = stand_ins()
ORIGINALS.update({name: getattr(np, name) for name in _SCALAR_TYPES})
REPLACEMENTS.update(_SCALAR_TYPES)
