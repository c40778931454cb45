"""scipy.interpolate: the rule-testing kit on `evaluate` (src/chainrules/rules/scipy/interpolate/
splines.py) at order 1 and 2, and SciPy's interpolators through the engine
(src/chainrules/ad/dispatch/interpolants.py), in their data values and their evaluation points,
against central finite differences: interp1d of every kind (inside and outside the nodes, with
fill values and extrapolation), CubicSpline and make_interp_spline (with derivative boundary
values, values with trailing axes, along another axis), Hessians, and the loud refusals."""

from __future__ import annotations

import numpy as np
import pytest

interpolate = pytest.importorskip("scipy.interpolate")

import chainrules as cr  # noqa: E402
from chainrules.rules.scipy.interpolate.splines import Interpolant, evaluate  # noqa: E402
from chainrules.testing import case, check_case  # noqa: E402
from chainrules.testing import test_frule_order2, test_rrule_order2  # noqa: E402
from tests.ad.finite_differences import numerical_gradient  # noqa: E402

NODES = np.array([0.0, 0.7, 1.5, 2.1, 3.0, 3.3])
VALUES = np.cos(NODES)
POINTS = np.array([0.4, 1.3, 2.2, 2.9])
OUTSIDE = np.array([0.4, 1.3, -0.5, 3.6])
SPLINE = Interpolant(interpolate.CubicSpline(NODES, VALUES))
B_SPLINE = Interpolant(interpolate.make_interp_spline(NODES, np.stack([VALUES, VALUES ** 2], 1),
                                                      k=3))

CASES = [
    case(evaluate, SPLINE, POINTS),
    case(evaluate, SPLINE, POINTS, 1),
    case(evaluate, SPLINE, 1.1),
    case(evaluate, B_SPLINE, POINTS),
    case(evaluate, Interpolant(interpolate.PchipInterpolator(NODES, VALUES)), POINTS, 0, True),
    case(evaluate, Interpolant(interpolate.CubicSpline(NODES, VALUES.astype(np.float32))),
         POINTS.astype(np.float32), rtol=1e-2, atol=1e-2),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_evaluate_rule(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("rule_case", CASES[:5], ids=lambda c: c.id)
def test_evaluate_rule_at_order_2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args, **rule_case.fkwargs)
    test_frule_order2(rule_case.function, *rule_case.args, **rule_case.fkwargs)


def _check(loss, x, atol=1e-6):
    np.testing.assert_allclose(cr.grad(loss)(x), numerical_gradient(loss, x), atol=atol)


@pytest.mark.parametrize("kind", ["linear", "slinear", "quadratic", "cubic", "nearest",
                                  "previous", "next", "zero"])
@pytest.mark.parametrize("options", [{}, {"bounds_error": False, "fill_value": 0.3},
                                     {"fill_value": "extrapolate"}], ids=["inside", "fill",
                                                                           "extrapolate"])
def test_interp1d_in_values_and_points(kind, options):
    points = POINTS if not options else OUTSIDE
    if kind in ("previous", "next") and options.get("fill_value") == "extrapolate":
        points = POINTS  # (NaN beyond the nodes on one side, as SciPy gives)
    constant = kind in ("nearest", "previous", "next", "zero")
    shifted = points + 0.05 if constant else points  # off the jumps of a step function
    _check(lambda y: np.sum(interpolate.interp1d(NODES, y, kind=kind, **options)(shifted) ** 2),
           VALUES)
    slopes = cr.grad(lambda q: np.sum(interpolate.interp1d(NODES, VALUES, kind=kind,
                                                           **options)(q) ** 2))(shifted)
    if constant:
        np.testing.assert_array_equal(slopes, 0.0)
    else:
        _check(lambda q: np.sum(interpolate.interp1d(NODES, VALUES, kind=kind,
                                                     **options)(q) ** 2), shifted)


def test_interp1d_sorts_its_nodes_and_takes_an_axis():
    order = np.array([3, 0, 5, 1, 4, 2])
    table = np.stack([VALUES, np.sin(NODES)])  # (2, 6): interpolated along axis 1

    def loss(flat):
        f = interpolate.interp1d(NODES[order], flat.reshape(2, 6)[:, order], kind="cubic")
        return np.sum(np.tanh(f(POINTS)))

    _check(loss, table.ravel())


def test_interp1d_bounds_error_is_scipys():
    with pytest.raises(ValueError, match="above the interpolation range"):
        cr.grad(lambda y: np.sum(interpolate.interp1d(NODES, y)(np.array([4.0]))))(VALUES)


@pytest.mark.parametrize("bc", [None, "natural", "clamped",
                                ((1, np.array([0.5, -0.2])), (2, np.array([-1.0, 0.3])))])
def test_cubic_spline_with_trailing_axes_and_boundary_values(bc):
    table = np.stack([VALUES, np.sin(NODES)], axis=1)  # (6, 2)

    def build(y):
        return interpolate.CubicSpline(NODES, y, bc_type="not-a-knot" if bc is None else bc)

    _check(lambda flat: np.sum(np.sin(build(flat.reshape(6, 2))(POINTS))), table.ravel())
    _check(lambda q: np.sum(np.sin(build(table)(q, 1))), POINTS)


def test_cubic_spline_along_another_axis():
    table = np.stack([VALUES, np.sin(NODES), NODES ** 2])  # (3, 6), along axis 1
    _check(lambda flat: np.sum(interpolate.CubicSpline(NODES, flat.reshape(3, 6), axis=1)(
        POINTS[:2]) * np.arange(6.0).reshape(3, 2)), table.ravel())


@pytest.mark.parametrize("k", [1, 3, 5])
def test_make_interp_spline_in_values_and_points(k):
    _check(lambda y: np.sum(interpolate.make_interp_spline(NODES, y, k=k)(POINTS) ** 2), VALUES)
    _check(lambda q: np.sum(interpolate.make_interp_spline(NODES, VALUES, k=k)(q) ** 2), POINTS)


def test_hessians_in_values_points_and_both():
    def mixed(v):
        return np.sum(interpolate.CubicSpline(NODES, v[:6])(v[6:]) ** 3)

    v = np.concatenate([VALUES, POINTS[:3]])
    expected = np.array([numerical_gradient(lambda z: cr.grad(mixed)(z)[i], v)
                         for i in range(v.size)])
    np.testing.assert_allclose(cr.hessian(mixed)(v), expected, atol=1e-4)


def test_forward_mode_in_the_values():
    _, tangent = cr.jvp(lambda y: interpolate.CubicSpline(NODES, y)(POINTS), (VALUES,),
                        (np.ones(6),))
    np.testing.assert_allclose(tangent, 1.0)  # the spline of ones is one


def test_traced_nodes_and_other_methods_are_refused():
    with pytest.raises(cr.TracingError, match="nodes x hold traced values"):
        cr.grad(lambda x: np.sum(interpolate.CubicSpline(x, VALUES)(POINTS)))(NODES)
    with pytest.raises(cr.TracingError, match="derivative of an interpolant built on traced"):
        cr.grad(lambda y: np.sum(interpolate.CubicSpline(NODES, y).derivative()(POINTS)))(VALUES)
    with pytest.raises(cr.TracingError, match="own coefficients hold traced values"):
        cr.grad(lambda s: np.sum(s(POINTS)))(interpolate.make_interp_spline(NODES, VALUES))
    # outside a trace the classes are SciPy's own
    spline = interpolate.CubicSpline(NODES, VALUES)
    assert spline.derivative()(1.0) == spline(1.0, 1)


@pytest.mark.parametrize("build", [
    lambda x, y: interpolate.CubicSpline(x, y),
    lambda x, y: interpolate.interp1d(x, y, kind="quadratic"),
    lambda x, y: interpolate.make_interp_spline(x, y, k=3),
], ids=["CubicSpline", "interp1d", "make_interp_spline"])
def test_nodes_the_function_makes_are_constants(build):
    # before: "the interpolation nodes x hold traced values" for np.arange(6.0), an array the
    # function made (a constant of the trace), though no derivative flows through it
    points = np.array([0.4, 2.5, 4.7])

    def loss(y):
        return np.sum(build(np.arange(6.0), y)(points) ** 2)

    y = np.cos(np.arange(6.0))
    np.testing.assert_allclose(cr.grad(loss)(y), numerical_gradient(loss, y), rtol=1e-6,
                               atol=1e-9)
    flat = np.linspace(0.0, 5.0, 6)  # nodes from np.linspace, evaluated under hessian too
    hessian = cr.hessian(lambda y: np.sum(build(np.linspace(0.0, 5.0, 6), y)(points) ** 2))(y)
    basis = np.stack([build(flat, e)(points) for e in np.eye(6)], axis=1)  # linear in y
    np.testing.assert_allclose(hessian, 2 * basis.T @ basis, rtol=1e-9, atol=1e-12)


GRID = (np.linspace(0.0, 1.0, 4), np.linspace(-1.0, 2.0, 5))
GRID_VALUES = np.cos(np.arange(20.0)).reshape(4, 5)
QUERY = np.array([[0.1, 0.3], [0.55, 1.7], [0.9, -0.6]])


@pytest.mark.parametrize("method", ["linear", "slinear", "nearest"])
@pytest.mark.parametrize("options", [{}, {"bounds_error": False, "fill_value": None},
                                     {"bounds_error": False, "fill_value": 0.25}],
                         ids=["inside", "extrapolated", "filled"])
def test_regular_grid_interpolator_in_values_and_points(method, options):
    # before: "float() of a traced value cuts it out of the gradient"
    query = QUERY if not options else np.vstack([QUERY, [[1.2, 0.4], [0.45, -1.3]]])

    def in_values(v):
        return np.sum(interpolate.RegularGridInterpolator(GRID, v, method, **options)(query)
                      ** 2)

    def in_points(q):
        return np.sum(interpolate.RegularGridInterpolator(GRID, GRID_VALUES, method,
                                                          **options)(q) ** 2)

    assert cr.vjp(in_values, GRID_VALUES)[0] == pytest.approx(in_values(GRID_VALUES), 1e-13)
    np.testing.assert_allclose(cr.grad(in_values)(GRID_VALUES),
                               numerical_gradient(in_values, GRID_VALUES), rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_allclose(cr.grad(in_points)(query), numerical_gradient(in_points, query),
                               rtol=1e-6, atol=1e-9)
    # linear in the values: the Hessian is 2 B^T B, B the interpolation weights
    flat = lambda v: in_values(v.reshape(4, 5))  # noqa: E731
    weights = np.stack([interpolate.RegularGridInterpolator(GRID, e.reshape(4, 5), method,
                                                            **options)(query)
                        for e in np.eye(20)], axis=1)
    if options.get("fill_value") == 0.25:
        weights = np.where(np.isin(np.arange(len(query)), [3, 4])[:, None], 0.0, weights)
    np.testing.assert_allclose(cr.hessian(flat)(GRID_VALUES.ravel()), 2 * weights.T @ weights,
                               rtol=1e-9, atol=1e-12)


def test_interpn_and_trailing_value_axes():
    values = np.cos(np.arange(40.0)).reshape(4, 5, 2)

    def loss(v):
        return np.sum(interpolate.interpn(GRID, v, QUERY) ** 3)

    np.testing.assert_allclose(cr.grad(loss)(values), numerical_gradient(loss, values),
                               rtol=1e-6, atol=1e-9)
    with pytest.raises(cr.TracingError, match="method='cubic'"):
        cr.grad(lambda v: np.sum(interpolate.RegularGridInterpolator(GRID, v, "cubic")(
            QUERY)))(GRID_VALUES)


# --- piecewise polynomials with traced coefficients: CubicHermiteSpline, PchipInterpolator ----

HERMITE_NODES = np.array([0.0, 0.7, 1.5, 2.0, 3.2, 4.0])
HERMITE_VALUES = np.array([0.1, 0.9, 0.8, 1.7, 2.5, 2.4])
HERMITE_POINTS = np.array([0.3, 1.0, 2.1, 3.9, -0.5, 4.6])  # two outside: extrapolated
HERMITE = {
    "PchipInterpolator": lambda y: interpolate.PchipInterpolator(HERMITE_NODES, y)(
        HERMITE_POINTS),
    "PchipInterpolator, derivative": lambda y: interpolate.PchipInterpolator(
        HERMITE_NODES, y)(HERMITE_POINTS, 1),
    "PchipInterpolator, no extrapolation": lambda y: np.nan_to_num(interpolate.PchipInterpolator(
        HERMITE_NODES, y, extrapolate=False)(HERMITE_POINTS)),
    "PchipInterpolator, along axis 1": lambda y: interpolate.PchipInterpolator(
        HERMITE_NODES, np.stack([y, y ** 2]), axis=1)(HERMITE_POINTS),
    "pchip_interpolate": lambda y: interpolate.pchip_interpolate(HERMITE_NODES, y,
                                                                 HERMITE_POINTS[:4]),
    "CubicHermiteSpline": lambda y: interpolate.CubicHermiteSpline(HERMITE_NODES, y,
                                                                   np.cos(y))(HERMITE_POINTS),
    # SciPy's constructor fills arrays of its own: followed as a program's
    "Akima1DInterpolator": lambda y: interpolate.Akima1DInterpolator(HERMITE_NODES, y)(
        HERMITE_POINTS[:4]),
    "Akima1DInterpolator, two columns": lambda y: interpolate.Akima1DInterpolator(
        HERMITE_NODES, np.stack([y, y ** 2], axis=1))(HERMITE_POINTS[:4]),
}


@pytest.mark.parametrize("name", HERMITE)
def test_hermite_interpolants_in_their_data(name):
    # before: "`dk[1:-1][~condition] = ...`: a traced value was converted" (Pchip's derivative
    # estimates), or "the interpolant's own coefficients hold traced values"
    f = HERMITE[name]
    weights = np.linspace(0.5, 1.5, np.size(f(HERMITE_VALUES)))

    def loss(y):
        return np.sum(weights * np.ravel(np.sin(f(y))))

    np.testing.assert_allclose(cr.vjp(f, HERMITE_VALUES)[0], f(HERMITE_VALUES), rtol=1e-13)
    step = 1e-6
    expected = [(loss(HERMITE_VALUES + step * e) - loss(HERMITE_VALUES - step * e)) / (2 * step)
                for e in np.eye(HERMITE_VALUES.size)]
    np.testing.assert_allclose(cr.grad(loss)(HERMITE_VALUES), expected, rtol=1e-6, atol=1e-9)


def test_pchip_on_a_line_and_next_to_a_flat_stretch():
    # on data from a straight line the interpolant is the line and every estimate its slope,
    # the harmonic mean of equal slopes: its derivative in the data is that of the mean
    # (1/2, 1/2 for equal weights), which central differences confirm
    nodes = np.array([0.0, 1.0, 2.0, 3.0])

    def value(y):
        return interpolate.PchipInterpolator(nodes, y)(1.25)

    line = 2.0 * nodes
    assert cr.vjp(value, line)[0] == pytest.approx(2.5)
    step = 1e-6
    expected = [(value(line + step * e) - value(line - step * e)) / (2 * step)
                for e in np.eye(4)]
    np.testing.assert_allclose(cr.grad(value)(line), expected, rtol=1e-6, atol=1e-9)
    # a flat stretch beside a rise: the estimate there is 0 for nearby data, and the second
    # derivatives stay finite (no 0/0 in the harmonic mean's masked entries)
    flat = np.array([1.0, 1.0, 2.0, 3.0])
    hessian = cr.hessian(lambda y: interpolate.PchipInterpolator(nodes, y)(0.5))(flat)
    assert np.all(np.isfinite(hessian))


def test_a_piecewise_polynomial_passed_as_an_input_gets_its_coefficients_gradient():
    spline = interpolate.CubicSpline(NODES, VALUES)
    gradient = cr.grad(lambda s: np.sum(s(POINTS) ** 2))(spline)
    coefficients = spline.c.copy()

    def loss(c):
        return np.sum(interpolate.PPoly(c, NODES)(POINTS) ** 2)

    step, expected = 1e-6, np.zeros_like(coefficients)
    for index in np.ndindex(coefficients.shape):
        e = np.zeros_like(coefficients)
        e[index] = step
        expected[index] = (loss(coefficients + e) - loss(coefficients - e)) / (2 * step)
    got = dict(gradient.items())
    np.testing.assert_allclose(got["_c" if "_c" in got else "c"], expected, rtol=1e-6,
                               atol=1e-9)


def test_lagrange_with_a_zero_value_and_traced_nodes():
    # before: a value exactly 0 (sin(0)) got a zero gradient: SciPy builds each term as
    # np.poly1d(w[j]), which NumPy trims to a new constant [0] when w[j] = 0
    nodes = np.linspace(0.0, 1.0, 5)
    values = np.sin(3 * nodes)  # values[0] == 0.0
    points = np.array([0.13, 0.5, 0.77, 0.95])

    def in_values(w):
        return np.sum(interpolate.lagrange(nodes, w)(points) ** 2)

    def in_nodes(x):
        return np.sum(interpolate.lagrange(x, values)(points) ** 2)

    assert cr.value_and_grad(in_values)(values)[0] == pytest.approx(in_values(values), 1e-10)
    np.testing.assert_allclose(cr.grad(in_values)(values), numerical_gradient(in_values, values),
                               rtol=1e-6)
    np.testing.assert_allclose(cr.grad(in_nodes)(nodes), numerical_gradient(in_nodes, nodes),
                               rtol=1e-5)
    weights = np.stack([interpolate.lagrange(nodes, e)(points) for e in np.eye(5)], axis=1)
    np.testing.assert_allclose(cr.hessian(in_values)(values), 2 * weights.T @ weights,
                               rtol=1e-8)
    # one node: the constant polynomial
    assert cr.grad(lambda w: interpolate.lagrange([0.5], w)(2.0))(np.array([0.0]))[0] == 1.0


# --- B-splines whose coefficients hold traced values -----------------------------------------

KNOTS = np.r_[[0.0] * 4, [0.8, 1.6, 2.4], [3.3] * 4]
SPLINE_POINTS = np.array([0.1, 0.9, 1.7, 2.8, 3.2])


@pytest.mark.parametrize("nu", [0, 1])
def test_bspline_in_its_coefficients_and_points(nu):
    # before: "the interpolant's own coefficients hold traced values" for BSpline(t, c, k)
    # built in the function, and for make_smoothing_spline, which solves for c in NumPy
    c = np.cos(np.arange(7.0))

    def both(z):
        return np.sum(interpolate.BSpline(KNOTS, z[:7], 3)(z[7:], nu) ** 3)

    z = np.concatenate([c, SPLINE_POINTS])
    np.testing.assert_allclose(cr.grad(both)(z), numerical_gradient(both, z), rtol=1e-6,
                               atol=1e-8)
    expected = np.array([numerical_gradient(lambda v: cr.grad(both)(v)[i], z)
                         for i in range(z.size)])
    np.testing.assert_allclose(cr.hessian(both)(z), expected, atol=1e-4)
    _, tangent = cr.jvp(lambda z: interpolate.BSpline(KNOTS, z, 3)(SPLINE_POINTS), (c,),
                        (np.ones(7),))
    np.testing.assert_allclose(tangent, 1.0)  # the B-splines sum to one inside the knots


def test_bspline_coefficients_along_an_axis_and_periodic():
    c = np.cos(np.arange(14.0)).reshape(2, 7)

    def along(z):
        return np.sum(interpolate.BSpline(KNOTS, z, 3, axis=1)(SPLINE_POINTS) ** 2)

    np.testing.assert_allclose(cr.grad(along)(c), numerical_gradient(along, c), rtol=1e-6,
                               atol=1e-9)

    def periodic(z):
        return np.sum(interpolate.BSpline(KNOTS, z, 3, extrapolate="periodic")(
            np.array([-0.4, 3.9, 1.0])) ** 2)

    np.testing.assert_allclose(cr.grad(periodic)(c[0]), numerical_gradient(periodic, c[0]),
                               rtol=1e-6, atol=1e-9)


def test_smoothing_and_least_squares_splines_in_their_data():
    x = np.linspace(0.0, 3.3, 15)
    y = np.sin(2 * x)
    weights = np.linspace(1.0, 2.0, 15)

    def smoothing(v):
        return np.sum(interpolate.make_smoothing_spline(x, v, lam=0.05)(SPLINE_POINTS) ** 2)

    def least_squares(v):
        return np.sum(interpolate.make_lsq_spline(x, v, KNOTS, w=weights)(SPLINE_POINTS) ** 2)

    def least_squares_columns(v):
        return np.sum(interpolate.make_lsq_spline(x, v, KNOTS, axis=1)(SPLINE_POINTS) ** 2)

    for loss, values in ((smoothing, y), (least_squares, y),
                         (least_squares_columns, np.stack([y, y ** 2]))):
        try:
            expected = loss(values)
        except ValueError:  # SciPy 1.11's make_lsq_spline along axis 1 ("not C-contiguous")
            assert loss is least_squares_columns
            continue
        assert cr.value_and_grad(loss)(values)[0] == pytest.approx(expected, 1e-10)
        np.testing.assert_allclose(cr.grad(loss)(values), numerical_gradient(loss, values),
                                   rtol=1e-6, atol=1e-8)
    fits = np.stack([interpolate.make_lsq_spline(x, e, KNOTS, w=weights)(SPLINE_POINTS)
                     for e in np.eye(15)], axis=1)  # linear in the data
    np.testing.assert_allclose(cr.hessian(least_squares)(y), 2 * fits.T @ fits, rtol=1e-8,
                               atol=1e-10)
    with pytest.raises(cr.TracingError, match="make_lsq_spline: the weights w"):
        cr.grad(lambda w: np.sum(interpolate.make_lsq_spline(x, y, KNOTS, w=w)(1.0)))(weights)
    with pytest.raises(cr.TracingError, match="nodes x hold traced values"):
        cr.grad(lambda t: np.sum(interpolate.make_lsq_spline(x, y, t)(1.0)))(KNOTS)


@pytest.mark.parametrize("name", ["values", "points", "derivatives", "nodes",
                                  "krogh_interpolate", "barycentric"])
def test_polynomial_interpolators(name):
    # before (Krogh): "a traced value was converted to a plain NumPy array" at `c[0] =
    # self.yi[0]`, a write into SciPy's own array (its module is followed now)
    nodes = np.linspace(0.0, 1.0, 6)
    values = np.sin(3 * nodes)
    points = np.array([0.13, 0.5, 0.77, 0.95])
    loss, x = {
        "values": (lambda y: np.sum(interpolate.KroghInterpolator(nodes, y)(points) ** 2),
                   values),
        "points": (lambda q: np.sum(interpolate.KroghInterpolator(nodes, values)(q) ** 2),
                   points),
        "derivatives": (lambda y: np.sum(interpolate.KroghInterpolator(nodes, y).derivatives(
            points, 2) ** 2), values),
        "nodes": (lambda n: np.sum(interpolate.KroghInterpolator(n, values)(points) ** 2),
                  nodes),
        "krogh_interpolate": (lambda y: np.sum(interpolate.krogh_interpolate(
            nodes, y, points) ** 2), values),
        "barycentric": (lambda y: np.sum(interpolate.barycentric_interpolate(
            nodes, y, points) ** 2), values),
    }[name]
    np.testing.assert_allclose(cr.grad(loss)(x), numerical_gradient(loss, x), rtol=1e-5,
                               atol=1e-7)


# --- FITPACK: splrep, splev and the UnivariateSpline classes (ad/dispatch/fitpack_splines.py) -

FIT_NODES = np.linspace(0.0, 3.0, 12)
FIT_VALUES = np.sin(2 * FIT_NODES)
FIT_POINTS = np.array([0.1, 0.95, 1.7, 2.45, 2.9])


@pytest.mark.parametrize("options", [{"k": 1}, {"k": 3}, {"k": 5},
                                     {"t": [0.8, 1.5, 2.2], "task": -1},
                                     {"w": np.linspace(1.0, 2.0, 12), "s": 0},
                                     {"per": 1}],
                         ids=["k=1", "k=3", "k=5", "knots", "weights", "periodic"])
def test_splrep_and_splev_in_the_data(options):
    # before: "a traced value was converted to a plain NumPy array" in FITPACK's curfit
    values = FIT_VALUES.copy()
    if options.get("per"):
        values[-1] = values[0]

    def loss(y):
        return np.sum(interpolate.splev(FIT_POINTS, interpolate.splrep(FIT_NODES, y,
                                                                       **options)) ** 2)

    assert cr.value_and_grad(loss)(values)[0] == pytest.approx(loss(values), 1e-10)
    np.testing.assert_allclose(cr.grad(loss)(values), numerical_gradient(loss, values),
                               rtol=1e-6, atol=1e-8)
    fits = np.stack([interpolate.splev(FIT_POINTS, interpolate.splrep(FIT_NODES, e, **options))
                     for e in np.eye(12)], axis=1)  # linear in the data
    np.testing.assert_allclose(cr.hessian(loss)(values), 2 * fits.T @ fits, rtol=1e-7,
                               atol=1e-9)


@pytest.mark.parametrize("ext", [0, 1, 3])
@pytest.mark.parametrize("der", [0, 1, 2])
def test_splev_at_traced_points_and_coefficients(ext, der):
    tck = interpolate.splrep(FIT_NODES, FIT_VALUES)
    points = np.array([-0.4, 0.3, 1.2, 2.75, 3.6])  # two outside the knots

    def in_points(x):
        return np.sum(interpolate.splev(x, tck, der=der, ext=ext) ** 2)

    def in_coefficients(c):
        return np.sum(interpolate.splev(points, (tck[0], c, 3), der=der, ext=ext) ** 2)

    assert cr.value_and_grad(in_points)(points)[0] == pytest.approx(in_points(points), 1e-10)
    np.testing.assert_allclose(cr.grad(in_points)(points), numerical_gradient(in_points, points),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(cr.grad(in_coefficients)(tck[1]),
                               numerical_gradient(in_coefficients, tck[1]), rtol=1e-6,
                               atol=1e-8)


def test_splev_refuses_as_fitpack_does_and_parametric_splines():
    tck = interpolate.splrep(FIT_NODES, FIT_VALUES)
    with pytest.raises(ValueError, match="not in the domain"):  # ext=2: SciPy's own error
        cr.grad(lambda x: np.sum(interpolate.splev(x, tck, ext=2)))(np.array([1.0, 3.5]))
    curve, _ = interpolate.splprep([FIT_VALUES, np.cos(FIT_NODES)], s=0)

    def on_curve(u):
        x, y = interpolate.splev(u, curve)
        return np.sum(x * y)

    u = np.array([0.2, 0.5, 0.9])
    np.testing.assert_allclose(cr.grad(on_curve)(u), numerical_gradient(on_curve, u),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("build", [
    lambda y: interpolate.InterpolatedUnivariateSpline(FIT_NODES, y),
    lambda y: interpolate.InterpolatedUnivariateSpline(FIT_NODES, y, k=2, ext=3),
    lambda y: interpolate.LSQUnivariateSpline(FIT_NODES, y, [0.8, 1.5, 2.2]),
    lambda y: interpolate.UnivariateSpline(FIT_NODES, y, s=0),
], ids=["interpolated", "interpolated, k=2, ext=3", "least squares", "s=0"])
def test_univariate_spline_classes_in_data_and_points(build):
    points = np.array([0.1, 0.95, 1.7, 2.45, 3.4])

    def in_values(y):
        spline = build(y)
        return np.sum(spline(points) ** 2) + np.sum(spline(points, 1)) + \
            np.sum(spline.get_coeffs() ** 2)

    def in_points(x):
        return np.sum(build(FIT_VALUES)(x) ** 3)

    assert cr.value_and_grad(in_values)(FIT_VALUES)[0] == pytest.approx(in_values(FIT_VALUES),
                                                                        1e-10)
    np.testing.assert_allclose(cr.grad(in_values)(FIT_VALUES),
                               numerical_gradient(in_values, FIT_VALUES), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.grad(in_points)(points), numerical_gradient(in_points, points),
                               rtol=1e-5, atol=1e-7)


def test_fitpack_refusals_are_loud():
    with pytest.raises(cr.TracingError, match="UnivariateSpline: a smoothing spline"):
        cr.grad(lambda y: np.sum(interpolate.UnivariateSpline(FIT_NODES, y)(FIT_POINTS)))(
            FIT_VALUES)
    with pytest.raises(cr.TracingError, match="splrep: a smoothing spline"):
        cr.grad(lambda y: np.sum(interpolate.splev(1.0, interpolate.splrep(FIT_NODES, y,
                                                                           s=0.1))))(FIT_VALUES)
    with pytest.raises(cr.TracingError, match="integral of an interpolant built on traced data"):
        cr.grad(lambda y: interpolate.InterpolatedUnivariateSpline(FIT_NODES, y).integral(
            0.0, 1.0))(FIT_VALUES)
    with pytest.raises(cr.TracingError, match="splrep: w holds traced values"):
        cr.grad(lambda w: np.sum(interpolate.splev(1.0, interpolate.splrep(
            FIT_NODES, FIT_VALUES, w=w, s=0))))(np.ones(12))
    with pytest.raises(cr.TracingError, match="nodes x hold traced values"):
        cr.grad(lambda x: np.sum(interpolate.InterpolatedUnivariateSpline(x, FIT_VALUES)(
            1.0)))(FIT_NODES)
    # outside a trace the classes are SciPy's own
    spline = interpolate.InterpolatedUnivariateSpline(FIT_NODES, FIT_VALUES)
    assert spline.integral(0.0, 3.0) == pytest.approx(np.sum(np.sin(2 * np.linspace(
        0.0, 3.0, 100001))) * 3.0 / 100000, abs=1e-3)


@pytest.mark.parametrize("ends", [(0.2, 2.7, True), (2.7, 0.2, True), (-0.5, 3.6, False),
                                  (-0.5, 3.6, True), (0.4, 1.0, None)], ids=repr)
def test_bspline_integral_in_its_coefficients(ends):
    # before: "Expected a 2-dim C contiguous array" from SciPy's compiled integration
    a, b, extrapolate = ends

    def loss(c):
        spline = interpolate.BSpline(KNOTS, np.stack([c, c ** 2], axis=1), 3)
        return np.sum(spline.integrate(a, b, extrapolate=extrapolate) ** 2)

    c = np.cos(np.arange(7.0))
    assert cr.value_and_grad(loss)(c)[0] == pytest.approx(loss(c), rel=1e-12)
    np.testing.assert_allclose(cr.grad(loss)(c), numerical_gradient(loss, c), rtol=1e-6,
                               atol=1e-9)
    spline = interpolate.BSpline(KNOTS, c, 3, extrapolate="periodic")
    with pytest.raises(cr.TracingError, match="extrapolate='periodic'"):
        cr.grad(lambda z: interpolate.BSpline(KNOTS, z, 3, extrapolate="periodic").integrate(
            0.0, 1.0))(c)
    assert np.isfinite(spline.integrate(0.0, 1.0))  # outside a trace: SciPy's own
