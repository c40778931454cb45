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

from ._array_rules import Call, normalize_axis_tuple, register

__all__ = ["astype"]


def _reshape_back(call: Call, dy: Any) -> Any:
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


# --- reshape, transpose --------------------------------------------------------------------------

def _reshape_order(call: Call) -> str:
    return _memory_order("numpy.reshape", call.a, call.options.get("order"))


register(np.reshape,
         lambda call, dy: np.reshape(dy, call.a.shape, order=_reshape_order(call)),
         lambda call, dx: np.reshape(dx, np.shape(call.y), order=_reshape_order(call)))


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
    return [np.reshape(piece, np.shape(x)) for piece, x in zip(pieces, call.x)]


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


# --- copies and conversions ------------------------------------------------------------------------

def _identity_back(call: Call, dy: Any) -> Any:
    return np.reshape(dy, np.shape(call.x))


for _f in (np.array, np.asarray, np.copy):
    register(_f, _identity_back, lambda call, dx: np.reshape(dx, np.shape(call.y)),
             refuse_options=())


def astype(x: Any, dtype: Any, **kwargs: Any) -> Any:
    """``x.astype(dtype)``, as a function an engine can map the method call to.

    Its cotangent is cast back to x's dtype: the real part for a real ``x``, float32 for a
    float32 ``x``; an integer result has no tangent.

    >>> astype(np.array([1.5, 2.0]), np.complex128)
    array([1.5+0.j, 2. +0.j])
    """
    return np.asarray(x).astype(dtype, **kwargs)


register(astype, _identity_back, lambda call, dx: np.reshape(dx, np.shape(call.y)),
         refuse_options=())
