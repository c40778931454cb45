"""``scipy.spatial.ConvexHull`` and ``KDTree`` on traced points
(src/chainrules/ad/dispatch/spatial_structures.py, rules/scipy/spatial/structures.py): a
hull's volume and area in its points, a k-d tree's neighbour distances in the query points
and in the tree's data (every ``p``, ``k`` as a number or a list, a distance bound), against
SciPy's values, central differences and a closed form. Before, each raised from compiled
code ("a traced value was converted to a plain NumPy array")."""

from __future__ import annotations

import numpy as np
import pytest

spatial = pytest.importorskip("scipy.spatial")

import chainrules as cr  # noqa: E402
from chainrules.ad.trace.errors import TracingError  # noqa: E402
from tests.ad.finite_differences import numerical_gradient  # noqa: E402

CASES: list = []   # no rules: measures computed in NumPy operations

_RNG = np.random.default_rng(0)
POINTS, POINTS_3D, QUERIES = (_RNG.normal(size=(12, 2)), _RNG.normal(size=(15, 3)),
                              _RNG.normal(size=(5, 2)))
TREE = spatial.KDTree(POINTS)


def _bounded(distances):
    return np.where(np.isinf(distances), 0.0, distances)


PROGRAMS = {
    "query": (lambda x: np.sum(TREE.query(x)[0] ** 2), QUERIES),
    "query k=2, p=1": (lambda x: np.sum(TREE.query(x, k=2, p=1)[0] ** 2), QUERIES),
    "query k=[1, 3], p=inf": (lambda x: np.sum(TREE.query(x, k=[1, 3], p=np.inf)[0] ** 2),
                              QUERIES),
    "query p=3 at one point": (lambda x: TREE.query(x[0], k=3, p=3)[0] @ np.arange(3.0),
                               QUERIES),
    "query within a bound": (lambda x: np.sum(_bounded(TREE.query(
        x, k=3, distance_upper_bound=0.8)[0])), QUERIES),
    "tree of traced data": (lambda x: np.sum(spatial.KDTree(x).query(QUERIES, k=2)[0] ** 2),
                            POINTS),
    "nearest other point": (lambda x: np.sum(spatial.KDTree(x).query(x, k=2)[0][:, 1] ** 2),
                            POINTS),
    "chamfer distance": (lambda x: np.sum(spatial.KDTree(POINTS).query(x)[0] ** 2)
                         + np.sum(spatial.KDTree(x).query(POINTS)[0] ** 2), QUERIES),
    "hull area (2-D volume)": (lambda x: spatial.ConvexHull(x).volume, POINTS),
    "hull perimeter": (lambda x: spatial.ConvexHull(x).area, POINTS),
    "hull in 3-D": (lambda x: spatial.ConvexHull(x).volume + 2 * spatial.ConvexHull(x).area,
                    POINTS_3D),
    "hull's points": (lambda x: np.sum(spatial.ConvexHull(x).points[
        spatial.ConvexHull(x).vertices] ** 2), POINTS),
    "barycentric coordinates": (lambda x: np.sum(_barycentric(x) ** 2), 0.3 * QUERIES),
}


def _barycentric(x):
    """The barycentric coordinates of points in their simplices of a triangulation (the
    simplex found on the plain points: before, find_simplex raised on traced ones)."""
    triangulation = spatial.Delaunay(POINTS)
    simplex = triangulation.find_simplex(x)
    transform = triangulation.transform[simplex]
    return np.einsum("nij,nj->ni", transform[:, :2], x - transform[:, 2])


@pytest.mark.parametrize("name", PROGRAMS)
def test_measures_in_the_points(name):
    program, x = PROGRAMS[name]
    value, gradient = cr.value_and_grad(program)(x)
    assert value == pytest.approx(program(x), rel=1e-13)   # SciPy's value
    np.testing.assert_allclose(gradient, numerical_gradient(program, x), rtol=1e-6,
                               atol=1e-9)


def test_rectangle_closed_form_and_second_order():
    # a w x h rectangle (and a point inside): area w h, perimeter 2 (w + h); moving the
    # corner (w, h) by (dx, dy) changes the area by (h dx + w dy) / 2 (two triangles)
    w, h = 2.0, 1.0
    corners = np.array([[0.0, 0.0], [w, 0.0], [w, h], [0.0, h], [0.5, 0.5]])
    area = cr.grad(lambda p: spatial.ConvexHull(p).volume)(corners)
    np.testing.assert_allclose(area[2], [h / 2, w / 2], rtol=1e-14)
    np.testing.assert_allclose(area[4], [0.0, 0.0], atol=1e-15)   # not a vertex
    program, x = PROGRAMS["hull in 3-D"]
    v = np.cos(np.arange(x.size)).reshape(x.shape)
    gradient = cr.grad(program)
    expected = (gradient(x + 1e-5 * v) - gradient(x - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(cr.hvp(program, x, v), expected, rtol=1e-5, atol=1e-8)


def test_refused_and_loud():
    with pytest.raises(TracingError, match="incremental=True"):
        cr.grad(lambda p: spatial.ConvexHull(p, incremental=True).volume)(POINTS)
    with pytest.raises(TracingError, match="boxsize"):
        cr.grad(lambda p: np.sum(spatial.KDTree(p, boxsize=10.0).query(QUERIES)[0]))(
            POINTS + 5.0)
    # cKDTree is a compiled type: a traced value reaching it raises, naming the line
    with pytest.raises(TracingError, match="cKDTree"):
        cr.grad(lambda x: np.sum(spatial.cKDTree(POINTS).query(x)[0]))(QUERIES)
