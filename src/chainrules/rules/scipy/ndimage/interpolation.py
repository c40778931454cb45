"""``scipy.ndimage.map_coordinates`` of order 0 and 1 written in NumPy operations, so that an
engine traces it: differentiable in the input (linear) and, for order 1, in the coordinates
(piecewise linear), at every order. ``shift`` and ``zoom`` of the same orders read the input
at their coordinates through it (``zoom``'s corners on the input's, as SciPy maps them).

Order 1 is the weighted sum over the ``2**ndim`` corners of each point's cell, the weights
products of ``t`` and ``1 - t`` (``t`` the coordinate's fractional part); order 0 takes the
nearest sample (its derivative in the coordinates is zero). The corners' indices follow
``mode`` as SciPy's do: ``constant`` (a point outside the input gets ``cval``),
``grid-constant`` (corners outside count as ``cval``), ``nearest``, ``reflect``
(``grid-mirror``), ``mirror`` and ``grid-wrap``. Refused by name: ``order`` above 1 (the
spline prefilter; use ``order=1``, or ``scipy.interpolate.RegularGridInterpolator``... on
plain values), ``mode='wrap'`` (use ``grid-wrap``) and an ``output=`` array.

>>> import numpy as np, scipy.ndimage
>>> image = np.arange(12.0).reshape(3, 4)
>>> points = np.array([[0.5, 1.2], [2.25, 0.0]])
>>> bool(np.allclose(map_coordinates(image, points, order=1),
...                  scipy.ndimage.map_coordinates(image, points, order=1)))
True
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

__all__ = ["map_coordinates", "shift", "zoom"]

_MODES = ("constant", "grid-constant", "nearest", "reflect", "grid-mirror", "mirror",
          "grid-wrap")


def _mapped(index: np.ndarray, size: int, mode: str) -> np.ndarray:
    """Integer indices outside ``[0, size)`` mapped back in as ``mode`` extends the input
    (constant modes: clipped; their points or corners are masked by the caller)."""
    if mode in ("nearest", "constant", "grid-constant") or size == 1:
        return np.clip(index, 0, size - 1)
    if mode in ("reflect", "grid-mirror"):
        folded = np.mod(index, 2 * size)
        return np.where(folded >= size, 2 * size - 1 - folded, folded)
    if mode == "mirror":
        folded = np.mod(index, 2 * (size - 1))
        return np.where(folded >= size, 2 * (size - 1) - folded, folded)
    return np.mod(index, size)  # grid-wrap


def map_coordinates(input: Any, coordinates: Any, output: Any = None, order: int = 3,
                    mode: str = "constant", cval: float = 0.0, prefilter: bool = True) -> Any:
    """``scipy.ndimage.map_coordinates`` for ``order`` 0 and 1, in NumPy operations."""
    if output is not None and not isinstance(output, type) and type(output) is not np.dtype:
        raise ValueError("scipy.ndimage.map_coordinates(..., output=array) of traced values: "
                         "use the returned value (output=None).")
    if order not in (0, 1):
        raise NotImplementedError(
            f"scipy.ndimage.map_coordinates of order {order} with traced values: only orders "
            f"0 and 1 are differentiated (higher orders prefilter with a spline). Pass "
            f"order=1 (linear interpolation).")
    if mode not in _MODES:
        raise NotImplementedError(
            f"scipy.ndimage.map_coordinates with mode={mode!r} and traced values: use one of "
            f"{', '.join(_MODES)} (for 'wrap', 'grid-wrap').")
    input, coordinates = np.asarray(input), np.asarray(coordinates)
    if coordinates.shape[0] != input.ndim:
        raise RuntimeError("invalid shape for coordinate array")
    shape = input.shape
    axes = range(input.ndim)
    if order == 0:
        corners = [(np.floor(coordinates[a] + 0.5).astype(np.intp),) for a in axes]
        weights_of = [(None,) for _ in axes]
    else:
        base = [np.floor(coordinates[a]).astype(np.intp) for a in axes]
        fraction = [coordinates[a] - base[a] for a in axes]
        corners = [(base[a], base[a] + 1) for a in axes]
        weights_of = [(1.0 - fraction[a], fraction[a]) for a in axes]
    total: Any = 0.0
    for choice in itertools.product(*(range(len(c)) for c in corners)):
        index = tuple(_mapped(corners[a][choice[a]], shape[a], mode) for a in axes)
        value = input[index]
        if mode == "grid-constant":
            outside = np.zeros(value.shape, bool)
            for a in axes:
                raw = corners[a][choice[a]]
                outside = outside | (raw < 0) | (raw >= shape[a])
            value = np.where(outside, cval, value)
        weight = None
        for a in axes:
            w = weights_of[a][choice[a]]
            if w is not None:
                weight = w if weight is None else weight * w
        total = total + (value if weight is None else weight * value)
    if mode == "constant":  # a point outside the input: cval
        outside = np.zeros(np.shape(total), bool)
        for a in axes:
            outside = outside | (coordinates[a] < 0) | (coordinates[a] > shape[a] - 1)
        total = np.where(outside, cval, total)
    return total


def _order(name: str, order: int) -> int:
    if order not in (0, 1):
        raise NotImplementedError(
            f"scipy.ndimage.{name} of order {order} with traced values: only orders 0 and 1 "
            f"are differentiated (higher orders prefilter with a spline). Pass order=1 "
            f"(linear interpolation).")
    return order


def shift(input: Any, shift: Any, output: Any = None, order: int = 3, mode: str = "constant",
          cval: float = 0.0, prefilter: bool = True) -> Any:
    """``scipy.ndimage.shift`` for ``order`` 0 and 1: the input read at each index less
    ``shift`` (`map_coordinates`), differentiable in the input and in ``shift``."""
    _order("shift", order)
    input = np.asarray(input)
    shape = np.shape(input)
    shifts = shift if np.ndim(shift) else [shift] * len(shape)
    grid = np.indices(shape, dtype=np.float64)
    coordinates = np.stack([grid[axis] - shifts[axis] for axis in range(len(shape))])
    return map_coordinates(input, coordinates, output, order, mode, cval, prefilter)


def zoom(input: Any, zoom: Any, output: Any = None, order: int = 3, mode: str = "constant",
         cval: float = 0.0, prefilter: bool = True, *, grid_mode: bool = False) -> Any:
    """``scipy.ndimage.zoom`` for ``order`` 0 and 1 and ``grid_mode=False``: the output's
    corners on the input's (SciPy's mapping), the rest read by `map_coordinates`."""
    _order("zoom", order)
    if grid_mode:
        raise NotImplementedError("scipy.ndimage.zoom with grid_mode=True and traced values: "
                                  "call it with grid_mode=False.")
    input = np.asarray(input)
    shape = np.shape(input)
    factors = [float(z) for z in (zoom if np.ndim(zoom) else [zoom] * len(shape))]
    out_shape = tuple(int(round(n * z)) for n, z in zip(shape, factors))
    axes = []
    for n, m in zip(shape, out_shape):
        step = (n - 1) / (m - 1) if m > 1 else 1.0
        axes.append(np.arange(m, dtype=np.float64) * step)
    coordinates = np.stack(np.meshgrid(*axes, indexing="ij"))
    return map_coordinates(input, coordinates, output, order, mode, cval, prefilter)
