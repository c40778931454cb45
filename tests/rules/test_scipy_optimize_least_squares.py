"""Implicit gradients of fits: ``scipy.optimize.least_squares`` and ``curve_fit``
(src/chainrules/rules/scipy/optimize/least_squares.py), against closed forms (a linear model's
fit is ``(A^T A)^-1 A^T y``), central differences of the re-solved problem, and the kit at
orders 1 and 2 through wrappers that return the differentiable fields (the kit differentiates
every float of an output, and ``.jac`` and ``pcov`` have no derivative here). Before, both
raised from SciPy's compiled code ("Result from function call is not a proper array of
floats", or a traced value converted in SciPy's finite differences)."""

from __future__ import annotations

import numpy as np
import pytest

scipy_optimize = pytest.importorskip("scipy.optimize")

import chainrules as cr  # noqa: E402
from chainrules.rules.scipy.optimize.nonnegative import nnls_passive_set as _nnls_passive_set  # noqa: E402,E501
from chainrules import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk  # noqa: E402
from chainrules.core.config import frule_via_ad, rrule_via_ad  # noqa: E402
from chainrules.core.registry import positional_call  # noqa: E402
from chainrules.core.registry import recorded_whole  # noqa: E402
from chainrules.core.tangents import AbstractZero  # noqa: E402
from chainrules.testing import case, check_case  # noqa: E402
from chainrules.testing import test_rrule_order2  # noqa: E402

least_squares, curve_fit = scipy_optimize.least_squares, scipy_optimize.curve_fit
T = np.linspace(0.0, 2.0, 7)
DESIGN = np.stack([np.ones_like(T), T, T ** 2], axis=1)
Y = np.array([1.1, 1.9, 2.2, 3.1, 3.9, 5.2, 6.8])
TIGHT = {"xtol": 1e-15, "ftol": 1e-15, "gtol": 1e-15}


def linear_residuals(p, design, y):
    return design @ p - y


def exponential_residuals(p, t, y):
    return p[0] * np.exp(-p[1] * t) - y


# Jacobians for the solver only (with its default finite differences it stops ~1e-8 from the
# solution, which the kit's differences would see as a derivative in x0)
def linear_jacobian(p, design, y):
    return np.asarray(design)


def exponential_jacobian(p, t, y):
    return np.stack([np.exp(-p[1] * t), -p[0] * t * np.exp(-p[1] * t)], axis=1)


@recorded_whole
def fitted(fun, x0, args, loss="linear", jac="2-point"):
    """least_squares' differentiable fields: (x, cost, fun)."""
    result = least_squares(fun, x0, jac=jac, args=args, loss=loss, f_scale=0.7, **TIGHT)
    return result.x, result.cost, result.fun


def _positional_fit(fun, x0, args, loss, jac):
    """``least_squares``' call with ``args`` by position, and where it sits."""
    _, positional, kwargs = positional_call(
        least_squares, (fun, x0), {"args": args, "loss": loss, "f_scale": 0.7, "jac": jac,
                                   **TIGHT},
        moves=lambda value: value is args)
    return positional, kwargs, next(i for i, value in enumerate(positional) if value is args)


@rrule.register(fitted, config=True)
def _fitted_rrule(config, fun, x0, args, loss="linear", jac="2-point"):
    positional, kwargs, at = _positional_fit(fun, x0, args, loss, jac)
    result, pullback = rrule_via_ad(config, least_squares, *positional, **kwargs)

    def fitted_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (NoTangent(),) * (4 + (loss != "linear"))
        cotangents = pullback(Tangent(type(result), {"x": dy[0], "cost": dy[1], "fun": dy[2]}))
        return (NoTangent(), cotangents[1], cotangents[2], cotangents[1 + at]) + \
            (NoTangent(),) * (loss != "linear")

    return (result.x, result.cost, result.fun), fitted_pullback


@frule.register(fitted, config=True)
def _fitted_frule(config, tangents, fun, x0, args, loss="linear", jac="2-point"):
    given = list(tangents) + [ZeroTangent()] * (4 - len(tangents))
    positional, kwargs, at = _positional_fit(fun, x0, args, loss, jac)
    solver_tangents = [NoTangent()] + [ZeroTangent()] * len(positional)
    solver_tangents[1], solver_tangents[2], solver_tangents[1 + at] = given[1:4]
    result, t = frule_via_ad(config, tuple(solver_tangents), least_squares, *positional,
                             **kwargs)
    return (result.x, result.cost, result.fun), Tangent(tuple, {0: t.x, 1: t.cost, 2: t.fun})


def decay(t, a, k):
    return a * np.exp(-k * t)


def decay_jacobian(t, a, k):  # for the solver only (to solve to machine precision)
    return np.stack([np.exp(-k * t), -a * t * np.exp(-k * t)], axis=1)


FIT = {"jac": decay_jacobian, **TIGHT}


@recorded_whole
def popt_of(t, y, sigma):
    """curve_fit's popt for an exponential decay."""
    return curve_fit(decay, t, y, p0=[1.0, 0.5], sigma=sigma, **FIT)[0]


@rrule.register(popt_of, config=True)
def _popt_rrule(config, t, y, sigma):
    (popt, pcov), pullback = rrule_via_ad(config, curve_fit, decay, t, y, [1.0, 0.5], sigma,
                                          **FIT)

    def popt_pullback(dp):
        cotangents = pullback((dp, ZeroTangent()))
        return NoTangent(), cotangents[2], cotangents[3], cotangents[5]

    return popt, popt_pullback


@frule.register(popt_of, config=True)
def _popt_frule(config, tangents, t, y, sigma):
    given = list(tangents) + [ZeroTangent()] * (4 - len(tangents))
    (popt, _), tangent = frule_via_ad(
        config, (NoTangent(), ZeroTangent(), given[1], given[2], ZeroTangent(), given[3]),
        curve_fit, decay, t, y, [1.0, 0.5], sigma, **FIT)
    dp = unthunk(tangent)
    dp = dp if isinstance(dp, AbstractZero) else dp[0]
    return popt, dp


DECAY = 2.0 * np.exp(-0.7 * T) + 0.05 * np.sin(5 * T)
CASES = [
    case(fitted, linear_residuals, np.zeros(3), (DESIGN, Y), jac=linear_jacobian, rtol=1e-5,
         atol=1e-7, step=1e-4, covers=least_squares),
    case(fitted, exponential_residuals, np.array([1.0, 1.0]), (T, DECAY), "soft_l1",
         jac=exponential_jacobian, rtol=1e-4, atol=1e-6, step=1e-4, covers=least_squares),
    case(popt_of, T, DECAY, 1.0 + 0.1 * T, rtol=1e-4, atol=1e-6, step=1e-4, covers=curve_fit),
    # nnls' positive components: not differentiable (an engine computes them on plain values)
    case(_nnls_passive_set, np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]),
         np.array([2.0, 1.0, -1.0]), non_differentiable=True),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("rule_case", CASES[::2], ids=lambda c: c.id)
def test_rule_at_order_2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs,
                      rtol=1e-4, atol=1e-6)


def test_a_linear_fit_is_the_normal_equations_solution_in_every_output():
    weights = np.arange(1.0, 4.0)
    solve = np.linalg.solve(DESIGN.T @ DESIGN, DESIGN.T)  # p = solve @ y

    exact = {"jac": linear_jacobian, **TIGHT}

    def through_x(y):
        return weights @ least_squares(linear_residuals, np.zeros(3), args=(DESIGN, y),
                                       **exact).x

    np.testing.assert_allclose(cr.grad(through_x)(Y), solve.T @ weights, rtol=1e-9,
                               atol=1e-12)
    # cost = |r|^2 / 2 with r = (H - I) y: gradient -(I - H)^T r = r projected, (I - H) r = r
    residual = DESIGN @ (solve @ Y) - Y
    np.testing.assert_allclose(cr.grad(lambda y: least_squares(
        linear_residuals, np.zeros(3), args=(DESIGN, y), **exact).cost)(Y), -residual,
        rtol=1e-8, atol=1e-12)
    # .fun = (H - I) y: its cotangent w goes to (H - I)^T w
    w = np.cos(np.arange(7.0))
    hat = DESIGN @ solve
    np.testing.assert_allclose(cr.grad(lambda y: w @ least_squares(
        linear_residuals, np.zeros(3), args=(DESIGN, y), **exact).fun)(Y),
        (hat - np.eye(7)).T @ w, rtol=1e-8, atol=1e-12)
    # curve_fit of the same model, captured data in a closure, jvp too
    popt = lambda y: curve_fit(lambda t, a, b, c: a + b * t + c * t ** 2, T, y,  # noqa: E731
                               p0=[0.0, 0.0, 0.0])[0]
    np.testing.assert_allclose(cr.jacobian(popt)(Y), solve, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(cr.jvp(popt, (Y,), (w,))[1], solve @ w, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("loss", ["soft_l1", "huber", "cauchy", "arctan"])
def test_robust_losses_against_the_resolved_fit(loss):
    def slope(y):
        return fitted(exponential_residuals, np.array([1.0, 1.0]), (T, y), loss,
                      exponential_jacobian)[0][1]

    gradient = cr.grad(slope)(DECAY)
    # the robust fits stop at a gradient norm of ~1e-9 (SciPy's xtol): a larger step, a
    # fourth-order difference, and the tolerance that stop allows
    step = 3e-3
    fd = np.array([(8 * (slope(DECAY + step * e) - slope(DECAY - step * e))
                    - (slope(DECAY + 2 * step * e) - slope(DECAY - 2 * step * e))) / (12 * step)
                   for e in np.eye(7)])
    np.testing.assert_allclose(gradient, fd, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("call, match", [
    (lambda y: least_squares(linear_residuals, np.zeros(3), args=(DESIGN, y),
                             loss=lambda z: np.stack([z, np.ones_like(z), np.zeros_like(z)])).x,
     "loss=.*callable"),
    (lambda y: least_squares(linear_residuals, np.zeros(3), args=(DESIGN, y)).jac,
     r"\.jac is not differentiable"),
    (lambda y: curve_fit(lambda t, a: a * t, T, y, p0=[1.0])[1],
     "pcov is not differentiable"),
    (lambda y: curve_fit(lambda t, a: a * t, T, y, p0=[1.0], sigma=np.eye(7))[0],
     "2-D sigma"),
], ids=["callable loss", "jac", "pcov", "2-D sigma"])
def test_refusals_name_what_is_refused(call, match):
    with pytest.raises(NotImplementedError, match=match):
        cr.grad(lambda y: np.sum(call(y)))(Y)


def test_active_bounds_stay_in_least_squares_and_curve_fit():
    # before: refused. The slope held at its bound 2 (the free fit's is 0.84): the other two
    # coefficients are the least-squares fit of y - 2 t on (1, t^2)
    free = DESIGN[:, [0, 2]]
    expected = np.linalg.pinv(free)  # d(p0, p2)/dy
    fit = lambda y: least_squares(linear_residuals, np.array([0.0, 2.5, 0.0]),  # noqa: E731
                                  args=(DESIGN, y), bounds=([-np.inf, 2.0, -np.inf], np.inf),
                                  **TIGHT).x
    np.testing.assert_allclose(cr.jacobian(fit)(Y), np.insert(expected, 1, 0.0, axis=0),
                               rtol=1e-6, atol=1e-9)
    popt = lambda y: curve_fit(lambda t, a, b, c: a + b * t + c * t ** 2, T, y,  # noqa: E731
                               p0=[0.0, 2.5, 0.0], bounds=([-np.inf, 2.0, -np.inf], np.inf))[0]
    np.testing.assert_allclose(cr.jacobian(popt)(Y), np.insert(expected, 1, 0.0, axis=0),
                               rtol=1e-5, atol=1e-8)


def test_nonnegative_least_squares_in_the_matrix_and_the_data():
    # before: "argument 1 must be numpy.ndarray, not Traced" (SciPy's compiled NNLS)
    from tests.ad.finite_differences import numerical_gradient

    rng = np.random.default_rng(0)
    matrix, data = rng.normal(size=(8, 4)), rng.normal(size=8)
    optimize = scipy_optimize
    assert 0 < np.count_nonzero(optimize.nnls(matrix, data)[0]) < 4  # some at the bound

    def in_data(b):
        x, residual = optimize.nnls(matrix, b)
        return np.sum(x ** 2) + residual

    def in_matrix(a):
        x, residual = optimize.nnls(a, data)
        return np.sum(x * np.arange(4.0)) + residual ** 2

    for loss, value in ((in_data, data), (in_matrix, matrix)):
        result, gradient = cr.value_and_grad(loss)(value)
        assert result == pytest.approx(loss(value), rel=1e-12)
        np.testing.assert_allclose(gradient, numerical_gradient(loss, value), atol=1e-6)
    # every component at the bound: a zero solution, whose derivative is zero
    np.testing.assert_array_equal(
        cr.grad(lambda b: np.sum(optimize.nnls(np.eye(2), b)[0]))(np.array([-1.0, -2.0])), 0.0)


def test_mixed_integer_programs_are_refused_by_name():
    # before: a TypeError from SciPy's HiGHS bindings about their argument types (linprog:
    # tests/rules/test_scipy_optimize_linprog.py)
    optimize = scipy_optimize
    with pytest.raises(NotImplementedError, match="scipy.optimize.milp of traced"):
        cr.grad(lambda b: optimize.milp(b, bounds=optimize.Bounds(0, 1)).fun)(
            np.array([0.5, 1.5]))
