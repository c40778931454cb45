"""Undoing NumPy broadcasting in a cotangent: sum over the dimensions that were broadcast."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["shape_of", "unbroadcast"]


def shape_of(x: Any) -> tuple:
    """``np.shape(x)``, read from ``x.shape`` when it has one: an AD engine's traced value
    answers without NumPy's function dispatch (rules ask this of every argument at order 2).

    >>> shape_of(np.ones((2, 3))), shape_of(1.0), shape_of([1.0, 2.0])
    ((2, 3), (), (2,))
    """
    shape = getattr(x, "shape", None)
    return np.shape(x) if type(shape) is not tuple else shape


def unbroadcast(cotangent: Any, shape: tuple) -> Any:
    """Sum ``cotangent`` over the axes that broadcasting added to an argument of ``shape``.

    >>> unbroadcast(np.ones((2, 3)), (3,))
    array([2., 2., 2.])
    >>> unbroadcast(np.ones((2, 3)), (2, 1))
    array([[3.],
           [3.]])
    >>> float(unbroadcast(np.ones(4), ()))
    4.0
    """
    cotangent_shape = cotangent.shape if type(cotangent) is np.ndarray else shape_of(cotangent)
    if cotangent_shape == shape:
        return cotangent
    extra = len(cotangent_shape) - len(shape)
    if extra < 0:
        return cotangent  # not a broadcast: projection reports the shape mismatch
    axes = tuple(range(extra)) + tuple(
        extra + axis for axis, size in enumerate(shape)
        if size == 1 and cotangent_shape[extra + axis] != 1)
    if type(cotangent) is _NDARRAY:  # (NumPy's reduction itself: np.sum's Python wrapper
        # costs more than the sum of a small array)
        return (_ADD_REDUCE(cotangent, axes) if axes else cotangent).reshape(shape)
    summed = np.sum(cotangent, axis=axes) if axes else np.asarray(cotangent)
    return summed.reshape(shape)


_NDARRAY, _ADD_REDUCE = np.ndarray, np.add.reduce
