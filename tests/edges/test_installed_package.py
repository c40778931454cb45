"""Other people's code, installed: the functions of ``labtools`` (tests/site_package, installed
under site-packages by ``make test``, as a real package is), differentiated unmodified, one
test per idiom, against closed forms and central finite differences.

The idioms: arrays allocated then filled inside a package; writes into arrays that are not
fresh creations (arithmetic on them, copies, ``np.asarray`` of a list, a class's attribute
updated with ``+=``, a view of a temporary); names bound at import time (``from numpy import
zeros, float64``, ``np_exp``, ``DTYPE = np.float64``, ``from math import ...``); ``math`` on
traced numbers; ``.flags`` and ``array_api_compat``; a value cache (caught by the checking
mode)."""

from __future__ import annotations

import math
import sysconfig
from pathlib import Path

import numpy as np
import pytest

import chainrules as cr
from tests.ad.finite_differences import numerical_gradient

labtools = pytest.importorskip("labtools", reason="installed by `make test` (tests/site_package)")
from labtools import cached, checks, filters, geometry, integrators  # noqa: E402

X = np.array([0.3, 1.2, -0.4, 2.0, 0.7])


def _check(loss, x=X, atol=1e-6):
    """The gradient of ``loss`` at ``x`` against central finite differences."""
    np.testing.assert_allclose(cr.grad(loss)(x), numerical_gradient(loss, x), atol=atol)


def test_the_package_is_installed_under_site_packages():
    installed = Path(sysconfig.get_paths()["purelib"]).resolve()
    assert installed in Path(labtools.__file__).resolve().parents
    assert "tests" not in Path(labtools.__file__).resolve().relative_to(installed).parts


# --- 1. arrays created inside an installed package -------------------------------------------

def test_allocation_then_fill_inside_a_package():
    # moving average of width 2: out[i] = (x[i] + x[i+1]) / 2; d/dx sum(out**2)
    out = (X[:-1] + X[1:]) / 2
    expected = np.zeros(5)
    expected[:-1] += out
    expected[1:] += out
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(filters.moving_average(x, 2) ** 2))(X),
                               expected)
    _check(lambda x: np.sum(filters.moving_average(x, 3) ** 3))


def test_a_packages_array_that_takes_no_traced_value_is_its_plain_values():
    def loss(x):
        averaged = filters.moving_average(np.arange(5.0), 2)  # constants only
        return np.sum(averaged * x[:4])

    np.testing.assert_allclose(cr.grad(loss)(X), [0.5, 1.5, 2.5, 3.5, 0.0])


# --- 2. writes into arrays that are not fresh creations --------------------------------------

def test_writes_into_arithmetic_copies_and_arrays_from_lists():
    # euler: y_{n+1} = (1 - dt rate) y_n, trajectory stacked: sum of squares over 4 states
    factor = 1 - 0.1 * 0.5
    expected = 2 * X * sum(factor ** (2 * n) for n in range(4))
    np.testing.assert_allclose(
        cr.grad(lambda x: np.sum(integrators.euler(0.5, x, 0.1, 3) ** 2))(X), expected)
    # running sums: s_i = sum_{j<=i} x_j; d sum(s^2)/dx_j = 2 sum_{i>=j} s_i
    sums = np.cumsum(X)
    np.testing.assert_allclose(
        cr.grad(lambda x: np.sum(integrators.running_sums(x) ** 2))(X),
        2 * np.cumsum(sums[::-1])[::-1])


def test_an_in_place_operator_on_a_view_of_a_temporary():
    x = X[:4]
    np.testing.assert_allclose(
        cr.grad(lambda x: np.sum(integrators.shifted_square(x) ** 2))(x), 4 * (2 * x - 1))


def test_a_class_that_updates_its_array_attributes_in_place():
    # v_k = k dt f, x_5 = x_0 + dt sum_{k=1..5} v_k = x_0 + 15 dt^2 f
    force = X
    final = np.arange(5.0) + 15 * 0.01 * force
    np.testing.assert_allclose(cr.grad(lambda f: np.sum(integrators.simulate(f) ** 2))(force),
                               2 * final * 0.15)
    _check(lambda f: np.sum(np.sin(integrators.simulate(f, steps=3, dt=0.3))))


def test_augmented_assignment_into_a_plain_array_held_twice_is_refused():
    def loss(x):
        state = np.arange(2) * 1.0  # plain: made from integers
        alias = state  # NumPy would change `alias` too, which the engine cannot follow
        state += x
        return np.sum(state * alias)

    with pytest.raises(cr.TracingError, match=r"a \+= t.*something else holds it"):
        cr.grad(loss)(np.ones(2))


# --- 3. names bound before the trace began ---------------------------------------------------

def test_names_imported_from_numpy_at_the_top_of_a_module():
    alpha = 0.3

    def loss(x):
        return np.sum(filters.exponential_smoothing(x, alpha) ** 2)

    _check(loss)
    # the plain forward agrees with the closed recurrence
    s = [X[0]]
    for value in X[1:]:
        s.append(alpha * value + (1 - alpha) * s[-1])
    np.testing.assert_allclose(filters.exponential_smoothing(X, alpha), s)


def test_scalar_types_bound_to_names_cast_traced_values():
    # gains: [exp(x0), exp(2 x4), x0 x4]; d sum / dx0 = exp(x0) + x4, d/dx4 = 2 exp(2 x4) + x0
    expected = np.zeros(5)
    expected[0] = np.exp(X[0]) + X[-1]
    expected[-1] = 2 * np.exp(2 * X[-1]) + X[0]
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(filters.gains(x)))(X), expected)
    _check(lambda x: np.sum(filters.cumulative_maximum_envelope(x) ** 2))


def test_bound_names_are_the_packages_own_again_after_the_trace():
    from numpy import zeros

    cr.grad(lambda x: np.sum(filters.exponential_smoothing(x, 0.5)))(X)
    assert filters.zeros is zeros and filters.float64 is np.float64
    assert filters.DTYPE is np.float64 and geometry.exp is math.exp


# --- 4. the math module on traced numbers ----------------------------------------------------

def test_math_functions_differentiate_as_numpy_does():
    p, angle = np.array([1.5, -0.5]), 0.4
    # rotate: sum = (c + s) p0 + (c - s) p1 -> d/dangle = (c - s) p0 - (s + c) p1
    c, s = math.cos(angle), math.sin(angle)
    g = cr.grad(lambda x: sum(geometry.rotate(x[:2], x[2])))(np.array([p[0], p[1], angle]))
    np.testing.assert_allclose(g, [c + s, c - s, (c - s) * p[0] - (s + c) * p[1]])
    # polar: r + atan2(y, x): d/dx = x/r - y/r^2, d/dy = y/r + x/r^2
    r = math.hypot(*p)
    np.testing.assert_allclose(cr.grad(lambda q: sum(geometry.polar(q)))(p),
                               [p[0] / r - p[1] / r ** 2, p[1] / r + p[0] / r ** 2])
    _check(lambda x: geometry.soft_distance(x[:2], x[2:4], x[4]))


def test_math_functions_that_read_values_and_domain_errors():
    degenerate = np.array([0.0, 2.0])  # isclose(x0, 0) and isfinite(x1): a plain True
    np.testing.assert_array_equal(
        cr.grad(lambda x: x[1] * (1.0 + geometry.is_degenerate(x)))(degenerate), [0.0, 2.0])
    with pytest.raises(ValueError, match="math domain error"):
        cr.grad(lambda x: math.sqrt(x - 2.0))(1.0)
    assert float(cr.grad(lambda t: math.log(t, 2.0))(4.0)) == pytest.approx(
        1 / (4 * math.log(2)))
    assert float(cr.grad(lambda t: math.fsum(t * k for k in range(4)))(1.0)) == 6.0
    assert float(cr.grad(lambda t: math.erf(t))(0.5)) == pytest.approx(
        2 / math.sqrt(math.pi) * math.exp(-0.25))
    assert float(cr.grad(lambda t: math.lgamma(t))(3.0)) == pytest.approx(1.5 - 0.5772156649)


# --- 5. array attributes libraries read -----------------------------------------------------

def test_flags_of_a_traced_array():
    # the norm of every other element: d/dx = x / |x| at those
    strided = X[::2]
    expected = np.zeros(5)
    expected[::2] = strided / np.linalg.norm(strided)
    np.testing.assert_allclose(cr.grad(lambda x: checks.contiguous_norm(x[::2]))(X), expected)


def test_array_api_compat_gives_numpys_namespace():
    compat = pytest.importorskip("array_api_compat")
    seen = []

    def loss(x):
        seen.append(compat.array_namespace(x))
        return checks.array_api_softplus(x)

    np.testing.assert_allclose(cr.grad(loss)(X), 1 / (1 + np.exp(-X)))
    assert seen[0] is compat.array_namespace(X)


# --- 7. a cache of an earlier untraced call --------------------------------------------------

def test_a_value_cache_is_caught_by_the_checking_mode():
    model = cached.CachedModel()
    model(X)  # an ordinary call fills the cache
    # the gradient treats the cached value as a constant: zero
    assert not np.any(cr.grad(model)(X))
    with cr.checking(directional=True):
        with pytest.raises(cr.CheckError, match="finite difference"):
            cr.grad(model)(X)
    # a fresh object per call: sin(z) + z cos(z)
    np.testing.assert_allclose(cr.grad(lambda z: cached.CachedModel()(z))(X),
                               np.sin(X) + X * np.cos(X))


# --- 6. functions these packages call ---------------------------------------------------------

def test_pseudo_inverse_roots_and_place_in_a_package():
    from labtools import fitting

    design = np.array([[1.0, 0.2], [1.0, 0.9], [1.0, 1.7], [1.0, 2.4]])
    targets = np.array([0.3, 1.1, 1.9, 2.2])
    _check(lambda t: np.sum(fitting.least_squares(design, t) ** 2), targets)
    _check(lambda d: np.sum(fitting.least_squares(d.reshape(4, 2), targets) ** 2),
           design.ravel())
    # the largest root r of x^2 + b x + c: dr/db = -r / (2r + b), dr/dc = -1 / (2r + b)
    b, c = -3.0, 2.0
    root = 2.0
    np.testing.assert_allclose(
        cr.grad(lambda p: fitting.largest_real_root(p))(np.array([1.0, b, c]))[1:],
        [-root / (2 * root + b), -1 / (2 * root + b)])
    np.testing.assert_array_equal(cr.grad(lambda v: np.sum(fitting.clipped(v, 1.0)))(X),
                                  (X <= 1.0) * 1.0)


@pytest.mark.parametrize("kind", ["linear", "cubic", "spline", "bspline"])
def test_interpolation_in_a_package_in_values_and_points(kind):
    from labtools import fitting

    nodes = np.linspace(0.0, 2.0, 6)
    values = np.sin(nodes)
    points = np.array([0.3, 0.9, 1.55])
    _check(lambda v: np.sum(fitting.resample(nodes, v, points, kind) ** 2), values)
    _check(lambda p: np.sum(fitting.resample(nodes, values, p, kind) ** 2), points)


def test_image_filters_in_a_package():
    from labtools import fitting

    image = np.outer(np.sin(np.linspace(0, 3, 6)), np.cos(np.linspace(0, 2, 5)))
    _check(lambda a: np.sum(fitting.smoothed_edges(a)), image)
    rows, cols = np.array([0.5, 2.25, 4.1]), np.array([1.2, 0.3, 3.6])
    _check(lambda r: np.sum(fitting.sample(image, r, cols) ** 2), rows)
    _check(lambda a: np.sum(fitting.sample(a, rows, cols) ** 2), image)


def test_generated_code_with_names_bound_in_its_own_namespace():
    from labtools import codegen

    # sum = sin(x) y + x^2 + exp(y) + x y
    x, y = 0.5, 2.0
    np.testing.assert_allclose(cr.grad(lambda v: np.sum(codegen.model(v[0], v[1])))(
        np.array([x, y])), [np.cos(x) * y + 2 * x + y, np.sin(x) + np.exp(y) + x])
