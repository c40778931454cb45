"""Which NumPy dtypes have tangents, and the one cast that puts a value into a tangent dtype."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["tangent_dtype", "cast_to", "shared_shape", "is_plain", "as_array"]

_PLAIN_NUMBERS = (np.ndarray, np.generic, int, float, complex)
_CONVERTED = _PLAIN_NUMBERS + (list, tuple)  # what `as_array` converts


def is_plain(value: Any) -> bool:
    """Whether ``value`` is a plain number or ndarray, not a value that an engine traces.

    At order 2 and above, pullbacks run on traced values (the cotangents and primals of an
    outer trace); core must then build new values by NumPy operations, never write in place.

    >>> is_plain(np.ones(2)), is_plain(1.0), is_plain(object())
    (True, True, False)
    """
    return issubclass(type(value), _PLAIN_NUMBERS)


def tangent_dtype(dtype: Any) -> np.dtype | None:
    """The dtype of tangents for primals of ``dtype``, or ``None`` if they cannot be perturbed.

    Floating and complex dtypes are their own tangent dtypes (float32 stays float32);
    integers, bools, strings, dates and objects have no tangent dtype.

    >>> tangent_dtype(np.float32), tangent_dtype(np.int64)
    (dtype('float32'), None)
    """
    dtype = np.dtype(dtype)
    return dtype if dtype.kind in "fc" else None


def cast_to(value: Any, dtype: np.dtype) -> Any:
    """``value`` (a number or an array) in ``dtype``: the real part for a real ``dtype``.

    Arrays stay arrays (not copied when already right), scalars become NumPy scalars.

    >>> cast_to(1 + 2j, np.dtype(np.float32))
    np.float32(1.0)
    >>> cast_to(np.array([1j, 2.0]), np.dtype(np.float64))
    array([0., 2.])
    """
    if not issubclass(type(value), _PLAIN_NUMBERS):
        return _cast_traced(value, dtype)
    if issubclass(type(value), np.ndarray):
        if value.dtype == dtype:
            return value
        if value.dtype.kind == "c" and dtype.kind != "c":
            value = value.real
        return value.astype(dtype)
    if dtype.kind != "c" and issubclass(type(value), (complex, np.complexfloating)):
        value = value.real
    try:
        return dtype.type(value)
    except TypeError:
        raise TypeError(
            f"cannot use a value of type {type(value).__name__} as a tangent of dtype {dtype}"
        ) from None


def as_array(value: Any) -> Any:
    """``np.asarray(value)`` for plain values; a traced value (order 2) is left as it is, since
    converting it would cut it out of the outer trace.

    >>> as_array(2.0)
    array(2.)
    """
    if type(value) is np.ndarray:
        return value  # (what np.asarray returns, without a call: under a forward trace
        # NumPy's namespace holds the trace's creation functions, each a structure walk)
    return np.asarray(value) if issubclass(type(value), _CONVERTED) else value


def _cast_traced(value: Any, dtype: np.dtype) -> Any:
    """`cast_to` by NumPy operations, for a traced value (order 2): recorded, differentiable."""
    kind = getattr(value, "dtype", None)
    if kind is None or kind == dtype:
        return value
    if kind.kind == "c" and dtype.kind != "c":
        value = np.real(value)
    return value.astype(dtype) if value.dtype != dtype else value


_shapes: dict = {}


def shared_shape(shape: tuple) -> tuple:
    """One shared tuple object per distinct shape.

    ``ndarray.shape`` makes a new tuple on every access; rules and tapes that keep shapes for
    the backward pass keep this one instead, so a loop of a million operations on arrays of
    one shape stores one tuple, not a million.

    >>> shared_shape((2, 3)) is shared_shape(tuple([2, 3]))
    True
    """
    shared = _shapes.get(shape)
    if shared is None:
        if len(_shapes) > 100_000:  # a bound, for programs that see endless distinct shapes
            _shapes.clear()
        shared = _shapes[shape] = shape
    return shared
