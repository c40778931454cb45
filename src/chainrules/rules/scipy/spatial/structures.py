"""Measures of ``scipy.spatial``'s geometric structures in NumPy operations, for engines to
trace: the volume and area of a convex hull (`hull_measures`) and the distances of a k-d
tree's nearest neighbours (`neighbor_distances`). Qhull and the k-d tree choose the facets and
the neighbours (plain values, constant where the points move a little); these compute what
depends on the points smoothly from them.

>>> import numpy as np
>>> square = np.array([[0.0, 0.0], [2.0, 0.0], [2.0, 1.0], [0.0, 1.0]])
>>> hull_measures(square, np.array([[0, 1], [1, 2], [2, 3], [3, 0]]), np.arange(4))
(np.float64(2.0), np.float64(6.0))
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["hull_measures", "neighbor_distances"]


def hull_measures(points: Any, simplices: np.ndarray, vertices: np.ndarray) -> tuple:
    """``(volume, area)`` of the convex hull of ``points`` whose facets are ``simplices``
    (indices of their ``d`` vertices) and vertices ``vertices``: the volume as the sum of the
    simplices from an interior point (the vertices' mean) to each facet, ``|det| / d!``; the
    area (the facets' total (d-1)-measure: a polygon's perimeter) from each facet's Gram
    determinant, ``sqrt(det(E E^T)) / (d-1)!``."""
    points = np.asarray(points)
    dimension = np.shape(points)[-1]
    centre = np.mean(points[vertices], axis=0)
    corners = points[simplices]                                   # (facets, d, d)
    volume = np.sum(np.abs(np.linalg.det(corners - centre))) / math.factorial(dimension)
    edges = corners[:, 1:, :] - corners[:, :1, :]                # (facets, d - 1, d)
    gram = edges @ np.swapaxes(edges, -1, -2)
    area = np.sum(np.sqrt(np.linalg.det(gram))) / math.factorial(dimension - 1)
    return volume, area


def neighbor_distances(x: Any, data: Any, indices: np.ndarray, p: float) -> Any:
    """The Minkowski ``p``-distances from the points ``x`` (``(..., m)``) to their neighbours
    ``data[indices]`` (``indices`` of shape ``x.shape[:-1]``, or with a last axis of ``k``
    neighbours each); ``inf`` where an index is ``len(data)`` (no neighbour within the bound,
    as SciPy's). A neighbour at the point itself has distance 0 with a zero derivative."""
    x, data = np.asarray(x), np.asarray(data)
    count = np.shape(data)[0]
    found = indices < count
    neighbours = data[np.where(found, indices, 0)]
    if np.ndim(indices) == np.ndim(x):   # a last axis of k neighbours
        x = np.expand_dims(x, -2)
    difference = np.abs(neighbours - x)
    if p == np.inf:
        distance = np.max(difference, axis=-1)
    elif p == 1:
        distance = np.sum(difference, axis=-1)
    else:
        powered = np.sum(difference ** p, axis=-1)
        positive = powered > 0
        distance = np.where(positive, np.where(positive, powered, 1.0) ** (1.0 / p), 0.0)
    return np.where(found, distance, np.inf)
