"""SciPy's interpolants of scattered data through the engine
(src/chainrules/ad/dispatch/scattered_interpolants.py): LinearNDInterpolator,
NearestNDInterpolator, CloughTocher2DInterpolator, griddata and RBFInterpolator, in their data
values and their evaluation points, against central finite differences and against SciPy's own
interpolants of unit vectors (the values enter linearly); Hessians, forward mode, the options
(rescale, values with trailing axes, fill values, coordinate arrays, neighbors, smoothing,
every kernel, complex values) and the loud refusals. Also interpn at traced points and a
regular grid with descending nodes (src/chainrules/ad/dispatch/interpolants.py)."""

from __future__ import annotations

import numpy as np
import pytest

interpolate = pytest.importorskip("scipy.interpolate")

import chainrules as cr  # noqa: E402
from tests.ad.finite_differences import numerical_gradient  # noqa: E402

CASES: list = []  # no rule of its own: SciPy's classes, followed by the engine

RNG = np.random.default_rng(7)
POINTS = RNG.uniform(size=(25, 2)) * [1.0, 3.0]  # anisotropic: rescale=True matters
VALUES = np.sin(3 * POINTS[:, 0]) + POINTS[:, 1] ** 2 / 4
INSIDE = np.array([[0.45, 1.4], [0.6, 2.0], [0.35, 0.9], [0.55, 1.7]])
QUERY = np.vstack([INSIDE, [[5.0, 5.0]]])  # the last outside the data's convex hull


def _close(actual, expected, atol=1e-6):
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=atol)


def _unit_weights(build, query, n=len(VALUES)):
    """SciPy's interpolant of each unit vector at ``query``: the weights of the values."""
    return np.stack([np.asarray(build(e)(query)) for e in np.eye(n)], axis=-1)


@pytest.mark.parametrize("rescale", [False, True])
def test_linear_in_values_and_points(rescale):
    # before: "a traced value was converted to a plain NumPy array" (compiled constructor)
    def in_values(v):
        return np.sum(interpolate.LinearNDInterpolator(POINTS, v, fill_value=0.3,
                                                       rescale=rescale)(QUERY) ** 2)

    def in_points(q):
        return np.sum(interpolate.LinearNDInterpolator(POINTS, VALUES,
                                                       rescale=rescale)(q) ** 3)

    assert cr.value_and_grad(in_values)(VALUES)[0] == pytest.approx(in_values(VALUES), 1e-13)
    _close(cr.grad(in_values)(VALUES), numerical_gradient(in_values, VALUES))
    _close(cr.grad(in_points)(INSIDE), numerical_gradient(in_points, INSIDE))
    weights = _unit_weights(lambda e: interpolate.LinearNDInterpolator(
        POINTS, e, fill_value=0.0, rescale=rescale), QUERY)
    np.testing.assert_allclose(cr.hessian(in_values)(VALUES), 2 * weights.T @ weights,
                               atol=1e-12)
    # second order in the points: the Hessian of the sum of cubes, by differences of grads
    expected = np.array([numerical_gradient(lambda q: cr.grad(in_points)(q)[i // 2, i % 2],
                                            INSIDE).ravel() for i in range(INSIDE.size)])
    np.testing.assert_allclose(cr.hessian(lambda q: in_points(q.reshape(-1, 2)))(
        INSIDE.ravel()), expected, atol=1e-4)


def test_linear_with_trailing_axes_coordinate_arrays_and_forward_mode():
    values = np.stack([VALUES, np.cos(VALUES)], axis=1)

    def loss(v):
        ip = interpolate.LinearNDInterpolator(POINTS, v)
        return np.sum(ip(INSIDE[:, 0], INSIDE[:, 1]) ** 2) + np.sum(ip(INSIDE[:2]))

    _close(cr.grad(loss)(values), numerical_gradient(loss, values))
    _, tangent = cr.jvp(lambda v: interpolate.LinearNDInterpolator(POINTS, v)(INSIDE),
                        (VALUES,), (np.ones(len(VALUES)),))
    np.testing.assert_allclose(tangent, 1.0)  # barycentric weights sum to one


@pytest.mark.parametrize("method", ["linear", "nearest", "cubic"])
def test_griddata_in_values(method):
    def loss(v):
        return np.sum(interpolate.griddata(POINTS, v, INSIDE, method=method) ** 2)

    _close(cr.grad(loss)(VALUES), numerical_gradient(loss, VALUES), atol=1e-5)


@pytest.mark.parametrize("method", ["linear", "nearest"])
def test_griddata_in_points_and_in_one_dimension(method):
    def loss(q):
        return np.sum(interpolate.griddata(POINTS, VALUES, q, method=method) ** 2)

    _close(cr.grad(loss)(INSIDE), numerical_gradient(loss, INSIDE))
    line = np.array([0.0, 0.4, 1.1, 1.6, 2.5])

    def on_a_line(v):
        return np.sum(interpolate.griddata(line, v, np.array([0.2, 1.3, 2.2]),
                                           method=method) ** 2)

    _close(cr.grad(on_a_line)(np.cos(line)), numerical_gradient(on_a_line, np.cos(line)))


@pytest.mark.parametrize("rescale", [False, True])
def test_nearest_in_values_and_points(rescale):
    def loss(v, q):
        return np.sum(interpolate.NearestNDInterpolator(POINTS, v, rescale=rescale)(q) ** 2)

    gradient_values, gradient_points = cr.grad(loss, argnums=(0, 1))(VALUES, INSIDE)
    _close(gradient_values, numerical_gradient(lambda v: loss(v, INSIDE), VALUES))
    assert not np.any(gradient_points)  # piecewise constant in the points
    weights = _unit_weights(lambda e: interpolate.NearestNDInterpolator(POINTS, e,
                                                                        rescale=rescale), INSIDE)
    np.testing.assert_allclose(cr.hessian(lambda v: loss(v, INSIDE))(VALUES),
                               2 * weights.T @ weights, atol=1e-12)


def test_nearest_beyond_the_distance_bound_is_scipys_nan():
    query = np.vstack([INSIDE, [[9.0, 9.0]]])

    def loss(v):
        found = interpolate.NearestNDInterpolator(POINTS, v)(query, distance_upper_bound=1.0)
        return np.sum(np.nan_to_num(found, nan=0.0) ** 2)

    try:
        interpolate.NearestNDInterpolator(POINTS, VALUES)(query, distance_upper_bound=1.0)
    except TypeError:
        pytest.skip("this SciPy's NearestNDInterpolator takes no query options (SciPy < 1.12)")
    _close(cr.grad(loss)(VALUES), numerical_gradient(loss, VALUES))


def test_clough_tocher_in_values():
    def loss(v):
        return np.sum(interpolate.CloughTocher2DInterpolator(POINTS, v, fill_value=0.5,
                                                             tol=1e-12)(QUERY) ** 2)

    assert cr.value_and_grad(loss)(VALUES)[0] == pytest.approx(loss(VALUES), 1e-9)
    _close(cr.grad(loss)(VALUES), numerical_gradient(loss, VALUES), atol=1e-5)

    def positional(v):  # fill_value and tol by position: the basis keeps each in its place
        return np.sum(interpolate.CloughTocher2DInterpolator(POINTS, v, 0.5, 1e-12)(QUERY) ** 2)

    assert cr.value_and_grad(positional)(VALUES)[0] == pytest.approx(loss(VALUES), 1e-9)
    _close(cr.grad(positional)(VALUES), numerical_gradient(positional, VALUES), atol=1e-5)


RBF_KERNELS = {"linear": None, "thin_plate_spline": None, "cubic": None, "quintic": None,
               "multiquadric": 1.5, "inverse_multiquadric": 1.5, "inverse_quadratic": 1.5,
               "gaussian": 1.5}


@pytest.mark.parametrize("kernel", sorted(RBF_KERNELS))
def test_rbf_in_values_and_points(kernel):
    # before: "x.view() on a traced array is not supported" (values), a pythran TypeError
    # (points)
    options = {"kernel": kernel, "epsilon": RBF_KERNELS[kernel]}

    def in_values(d):
        return np.sum(interpolate.RBFInterpolator(POINTS, d, **options)(INSIDE) ** 2)

    def in_points(x):
        return np.sum(interpolate.RBFInterpolator(POINTS, VALUES, **options)(x) ** 3)

    assert cr.value_and_grad(in_values)(VALUES)[0] == pytest.approx(in_values(VALUES), 1e-10)
    _close(cr.grad(in_values)(VALUES), numerical_gradient(in_values, VALUES), atol=1e-5)
    _close(cr.grad(in_points)(INSIDE), numerical_gradient(in_points, INSIDE), atol=1e-5)


@pytest.mark.parametrize("options", [{"degree": -1, "kernel": "gaussian", "epsilon": 2.0},
                                     {"degree": 2, "smoothing": 0.1},
                                     {"neighbors": 8}],
                         ids=["no polynomial", "degree 2, smoothing", "neighbors"])
def test_rbf_options(options):
    def in_values(d):
        return np.sum(interpolate.RBFInterpolator(POINTS, d, **options)(INSIDE) ** 2)

    _close(cr.grad(in_values)(VALUES), numerical_gradient(in_values, VALUES), atol=1e-5)
    weights = _unit_weights(lambda e: interpolate.RBFInterpolator(POINTS, e, **options), INSIDE)
    np.testing.assert_allclose(cr.hessian(in_values)(VALUES), 2 * weights.T @ weights,
                               rtol=1e-6, atol=1e-8)
    if "neighbors" not in options:
        def in_points(x):
            return np.sum(interpolate.RBFInterpolator(POINTS, VALUES, **options)(x) ** 3)

        _close(cr.grad(in_points)(INSIDE), numerical_gradient(in_points, INSIDE), atol=1e-5)


def test_rbf_complex_values_trailing_axes_and_a_point_on_a_node():
    complex_values = VALUES + 1j * np.cos(VALUES)

    def loss(d):
        return np.sum(np.abs(interpolate.RBFInterpolator(POINTS, d)(INSIDE)) ** 2)

    _close(cr.grad(loss)(complex_values), numerical_gradient(loss, complex_values), atol=1e-5)
    values = np.stack([VALUES, VALUES ** 2], axis=1)

    def columns(d):
        return np.sum(interpolate.RBFInterpolator(POINTS, d)(INSIDE)[:, 1] ** 2)

    _close(cr.grad(columns)(values), numerical_gradient(columns, values), atol=1e-5)
    # at a data point r = 0: finite derivatives (the kernels are even in r), as differences
    on_node = np.vstack([INSIDE, POINTS[3:4]])

    def in_points(x):
        return np.sum(interpolate.RBFInterpolator(POINTS, VALUES, kernel="cubic")(x) ** 2)

    _close(cr.grad(in_points)(on_node), numerical_gradient(in_points, on_node), atol=1e-5)


def test_refusals_are_loud():
    with pytest.raises(cr.TracingError, match="nodes x hold traced values"):
        cr.grad(lambda p: np.sum(interpolate.LinearNDInterpolator(p, VALUES)(INSIDE)))(POINTS)
    with pytest.raises(cr.TracingError, match="nodes x hold traced values"):
        cr.grad(lambda p: np.sum(interpolate.RBFInterpolator(p, VALUES)(INSIDE)))(POINTS)
    with pytest.raises(cr.TracingError, match="CloughTocher2DInterpolator at traced points"):
        cr.grad(lambda q: np.sum(interpolate.griddata(POINTS, VALUES, q, method="cubic")))(
            INSIDE)
    with pytest.raises(cr.TracingError, match="neighbors at traced points"):
        cr.grad(lambda q: np.sum(interpolate.RBFInterpolator(POINTS, VALUES, neighbors=5)(q)))(
            INSIDE)
    with pytest.raises(cr.TracingError, match="fill_value holds a traced value"):
        cr.grad(lambda c: np.sum(interpolate.LinearNDInterpolator(POINTS, VALUES, c)(QUERY)))(
            0.5)
    with pytest.raises(cr.TracingError, match="epsilon holds a traced value"):
        cr.grad(lambda e: np.sum(interpolate.RBFInterpolator(
            POINTS, VALUES, kernel="gaussian", epsilon=e)(INSIDE)))(1.0)
    # outside a trace the classes are SciPy's own
    ip = interpolate.LinearNDInterpolator(POINTS, VALUES)
    assert "_chainrules_traced_values" not in vars(ip) and np.isnan(ip(QUERY)[-1])


def test_interpn_at_traced_points():
    # before: "a traced value was converted to a plain NumPy array" in interpn's own checks
    grid = (np.linspace(0.0, 1.0, 4), np.linspace(-1.0, 2.0, 5))
    values = np.cos(np.arange(20.0)).reshape(4, 5)
    query = np.array([[0.1, 0.3], [0.55, 1.7], [0.9, -0.6]])
    for method in ("linear", "nearest"):
        def loss(q):
            return np.sum(interpolate.interpn(grid, values, q, method=method) ** 2)

        _close(cr.grad(loss)(query), numerical_gradient(loss, query))
    with pytest.raises(cr.TracingError, match="interpn: method='cubic'"):
        cr.grad(lambda q: np.sum(interpolate.interpn(grid, values, q, method="cubic")))(query)


def test_regular_grid_with_descending_nodes():
    # before: the traced values were read in the order SciPy had flipped: a wrong value and a
    # silently wrong gradient
    grid = (np.linspace(1.0, 0.0, 6), np.linspace(0.0, 1.0, 5))
    values = np.cos(np.arange(30.0)).reshape(6, 5)
    query = np.array([[0.31, 0.52], [0.77, 0.1]])

    def loss(v):
        return np.sum(interpolate.RegularGridInterpolator(grid, v)(query) ** 2)

    try:
        expected = loss(values)
    except ValueError:
        pytest.skip("this SciPy refuses descending grid nodes (SciPy < 1.13)")
    assert cr.value_and_grad(loss)(values)[0] == pytest.approx(expected, 1e-13)
    _close(cr.grad(loss)(values), numerical_gradient(loss, values))
