"""``scipy.spatial.ConvexHull``, ``KDTree`` and ``Delaunay.find_simplex`` while tracing.
Built on traced points, a hull is Qhull's on the plain points (its facets, vertices and every
attribute SciPy computes), with ``volume`` and ``area`` computed from the traced points
(`chainrules.rules.scipy.spatial.structures.hull_measures`) and ``points`` the traced points;
adding points to a traced hull is refused by name. A ``KDTree`` built on traced data keeps
them; its ``query`` at traced points, or of a traced tree, finds the neighbours on the plain
values and computes their distances from the traced ones (`neighbor_distances`).
``Delaunay.find_simplex`` at traced points answers on their plain values (simplex indices:
not differentiable; the barycentric coordinates from ``transform`` are then differentiable in
the points). SciPy's ``cKDTree`` is a compiled type, which cannot be changed: a traced value
reaching it raises, naming the line (``KDTree`` is the same tree).

>>> import numpy as np, chainrules as cr, scipy.spatial
>>> square = np.array([[0.0, 0.0], [2.0, 0.0], [2.0, 1.0], [0.0, 1.0], [1.0, 0.5]])
>>> cr.grad(lambda p: scipy.spatial.ConvexHull(p).volume)(square)[2]   # d area / d corner
array([0.5, 1. ])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..trace.errors import TracingError
from ..trace.traced import primal_value
from ..trace.values import holds_traced
from .routes import Swap, loaded_module

__all__ = ["swaps"]

_DATA = "_chainrules_traced_data"   # a KDTree's traced data


def _hull_init(original: Any) -> Any:
    def __init__(self: Any, points: Any, incremental: bool = False,
                 qhull_options: Any = None) -> None:
        if not holds_traced(points):
            return original(self, points, incremental, qhull_options)
        if incremental:
            raise TracingError(
                "scipy.spatial.ConvexHull(..., incremental=True) of traced points: adding "
                "points later is not followed; build the hull of all the points at once.")
        from ...rules.scipy.spatial.structures import hull_measures  # with SciPy, not before
        original(self, primal_value(points), incremental, qhull_options)
        points = np.asarray(points)
        self.volume, self.area = hull_measures(points, self.simplices, self.vertices)
        self._points = points

    return __init__


def _tree_init(original: Any) -> Any:
    def __init__(self: Any, data: Any, *args: Any, **kwargs: Any) -> None:
        if not holds_traced(data):
            return original(self, data, *args, **kwargs)
        if kwargs.get("boxsize", args[4] if len(args) > 4 else None) is not None:
            raise TracingError("scipy.spatial.KDTree(..., boxsize=...) of traced data: "
                               "periodic distances are not followed; pass boxsize=None.")
        original(self, primal_value(data), *args, **kwargs)
        self.__dict__[_DATA] = np.asarray(data)

    return __init__


def _tree_query(original: Any) -> Any:
    def query(self: Any, x: Any, k: Any = 1, eps: float = 0.0, p: float = 2.0,
              distance_upper_bound: float = np.inf, workers: int = 1) -> tuple:
        data = self.__dict__.get(_DATA)
        if data is None and not holds_traced(x):
            return original(self, x, k, eps, p, distance_upper_bound, workers)
        from ...rules.scipy.spatial.structures import neighbor_distances  # with SciPy
        _, indices = original(self, primal_value(x), k, eps, p, distance_upper_bound,
                              workers)
        distances = neighbor_distances(x, self.data if data is None else data, indices, p)
        return distances, indices

    return query


def _find_simplex(original: Any) -> Any:
    def find_simplex(self: Any, xi: Any, bruteforce: bool = False, tol: Any = None) -> Any:
        return original(self, primal_value(xi), bruteforce, tol)

    return find_simplex


_made: list = []


def swaps() -> list:
    """The replacements to install while tracing, once ``scipy.spatial`` is imported."""
    if _made:
        return _made
    module = loaded_module("scipy.spatial")
    if module is None:
        return []
    hull, tree, triangulation = module.ConvexHull, module.KDTree, module.Delaunay
    _made.extend([Swap(hull, "__init__", _hull_init(vars(hull)["__init__"]),
                       vars(hull)["__init__"]),
                  Swap(tree, "__init__", _tree_init(vars(tree)["__init__"]),
                       vars(tree)["__init__"]),
                  Swap(tree, "query", _tree_query(vars(tree)["query"]), vars(tree)["query"]),
                  Swap(triangulation, "find_simplex",
                       _find_simplex(vars(triangulation)["find_simplex"]),
                       vars(triangulation)["find_simplex"])])
    return _made
