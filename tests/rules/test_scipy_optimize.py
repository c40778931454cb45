"""Implicit gradients through scipy.optimize.root, fsolve and minimize, and through a
minimizer that another solver found (minimizer_at)
(src/chainrules/rules/scipy/optimize/implicit.py).

Every gradient is checked against closed forms (the root of ``x**3 - θ`` is ``θ**(1/3)``; the
minimizer of ``x·Ax/2 - b·x`` is ``A^{-1} b``) or against central finite differences of the
re-solved problem, solved to tight tolerances.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.optimize

import chainrules as cr
from chainrules import NoTangent, ZeroTangent, frule, rrule
from chainrules.core.registry import recorded_whole
from chainrules.rules.scipy.optimize.implicit import minimizer_at
from chainrules.testing import case, check_case, test_frule_order2, test_rrule_order2

TIGHT_ROOT = {"tol": 1e-13}
TIGHT_MIN = {"method": "L-BFGS-B", "options": {"gtol": 1e-12, "ftol": 1e-16}}


def cubic(x, t):
    return x ** 3 - t


def coupled(x, a, b):
    """A 2-d system with the unique root near (1, 1) for a, b near 1."""
    return np.stack([x[0] + 0.5 * np.sin(x[1]) - a[0] * b,
                     x[1] + 0.3 * x[0] ** 2 - a[1]])


def quadratic(x, a, b):
    return 0.5 * x @ (a @ x) - b @ x


def quadratic_gradient(x, a, b):
    """For the solver only (with finite-difference gradients it stops at ~1e-8); the
    derivatives of the solution come from chainrules."""
    return 0.5 * (a + a.T) @ x - b


A = np.array([[3.0, 1.0], [1.0, 2.0]])
B = np.array([1.0, -0.5])


def smooth(x, c):
    """A strictly convex objective with a parameter-dependent minimizer."""
    return np.sum(np.cosh(x - c)) + 0.25 * np.sum(x ** 2)


def smooth_gradient(x, c):
    return np.sinh(x - c) + 0.5 * x


def smooth_hessian(x, c):
    return np.diag(np.cosh(x - c)) + 0.5 * np.eye(len(x))


def quadratic_hessian(x, a, b):
    return 0.5 * (a + a.T)


QUADRATIC = {**TIGHT_MIN, "jac": quadratic_gradient}
SMOOTH = {**TIGHT_MIN, "jac": smooth_gradient}


def _smooth_argmin(c):
    """The minimizer of `smooth`, by SciPy, to machine precision."""
    return scipy.optimize.minimize(smooth, np.zeros(3), args=(c,), jac=smooth_gradient,
                                   hess=smooth_hessian, method="Newton-CG",
                                   options={"xtol": 1e-15}).x


@recorded_whole
def smooth_minimizer(c):
    """The minimizer of ``smooth(., c)``, found by SciPy, with `minimizer_at`'s derivatives
    (minimizer_at itself returns its ``x``, which the kit's finite differences would see)."""
    return minimizer_at(smooth, _smooth_argmin(c), c)


@rrule.register(smooth_minimizer, config=True)
def _smooth_minimizer_rrule(config, c):
    x, pullback = rrule.with_constants(config, minimizer_at, smooth, _smooth_argmin(c), c,
                                       name="smooth_minimizer", step_within=1e-8)
    return x, lambda dx: (NoTangent(), pullback(dx)[3])


@frule.register(smooth_minimizer, config=True)
def _smooth_minimizer_frule(config, tangents, c):
    dc = tangents[1] if len(tangents) > 1 else ZeroTangent()
    return frule.with_constants(config, (NoTangent(), ZeroTangent(), NoTangent(), dc),
                                minimizer_at, smooth, _smooth_argmin(c), c,
                                name="smooth_minimizer", step_within=1e-8)



# The kit differentiates the whole OptimizeResult, so the cases use methods whose results hold
# no solver internals as floats (hybr's fjac, BFGS's hess_inv): krylov for root, Newton-CG and
# trust-exact (with the user's jac and hess, which only the solver uses) for minimize. The
# kit perturbs x0 too, whose gradient must be zero: solved to machine precision.
KRYLOV = {"method": "krylov", "options": {"fatol": 1e-14}}
NEWTON = {"method": "Newton-CG", "options": {"xtol": 1e-14}}

CASES = [
    case(scipy.optimize.root, cubic, np.array([1.0]), (8.0,), fkwargs=KRYLOV, rtol=1e-6,
         step=1e-3),
    case(scipy.optimize.root, coupled, np.ones(2), (np.array([1.0, 1.2]), 0.9),
         fkwargs=KRYLOV, rtol=1e-6, step=1e-3),
    case(scipy.optimize.fsolve, cubic, np.array([1.0]), (8.0,), fkwargs={"xtol": 1e-13},
         rtol=1e-6, step=1e-3),
    case(scipy.optimize.fsolve, coupled, np.ones(2), (np.array([1.0, 1.2]), 0.9),
         fkwargs={"xtol": 1e-13}, rtol=1e-6, step=1e-3),
    case(scipy.optimize.minimize, quadratic, np.zeros(2), (A, B),
         fkwargs={**NEWTON, "jac": quadratic_gradient, "hess": quadratic_hessian}, rtol=1e-5,
         step=1e-3),
    case(scipy.optimize.minimize, smooth, np.zeros(3), (np.array([0.3, -0.2, 0.5]),),
         fkwargs={**NEWTON, "jac": smooth_gradient, "hess": smooth_hessian}, rtol=1e-5,
         atol=1e-7, step=1e-3),  # Newton-CG's tolerance: x* moves ~1e-11 with x0
    case(smooth_minimizer, np.array([0.3, -0.2, 0.5]), rtol=1e-6, atol=1e-8, step=1e-3,
         covers=minimizer_at),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_scipy_optimize_rule(rule_case):
    check_case(rule_case)


def _fd(f, x, step=1e-5):
    """Central finite differences of a scalar function of an array (or a number)."""
    x = np.asarray(x, float)
    grad = np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[index] = step
        grad[index] = (f(x + e) - f(x - e)) / (2 * step)
    return grad if x.ndim else grad[()]


# --- closed forms --------------------------------------------------------------------------------

def test_root_of_cubic_closure_matches_cube_root():
    def solution(t):
        return scipy.optimize.root(lambda x: x ** 3 - t, np.array([1.0]), **TIGHT_ROOT).x[0]

    for t in (8.0, 2.0, 27.0):
        assert cr.grad(solution)(t) == pytest.approx(t ** (-2 / 3) / 3, rel=1e-9)
        assert cr.jvp(solution, (t,), (1.0,))[1] == pytest.approx(t ** (-2 / 3) / 3, rel=1e-9)


def test_root_with_args_vector_theta():
    thetas = np.array([8.0, 27.0, 2.0])

    def total(t):
        return np.sum(scipy.optimize.root(cubic, np.ones(3), args=(t,), **TIGHT_ROOT).x ** 2)

    expected = 2 * thetas ** (1 / 3) * thetas ** (-2 / 3) / 3
    np.testing.assert_allclose(cr.grad(total)(thetas), expected, rtol=1e-9)
    jacobian = cr.jacobian(lambda t: scipy.optimize.root(cubic, np.ones(3), args=(t,),
                                                         **TIGHT_ROOT).x)(thetas)
    np.testing.assert_allclose(jacobian, np.diag(thetas ** (-2 / 3) / 3), rtol=1e-9,
                               atol=1e-12)


def test_fsolve_closure_and_scalar_args():
    def solution(t):
        return scipy.optimize.fsolve(lambda x: x ** 3 - t, np.array([1.0]), xtol=1e-13)[0]

    assert cr.grad(solution)(8.0) == pytest.approx(1 / 12, rel=1e-9)

    def with_args(t):  # args given as one value: SciPy wraps it in a tuple
        return scipy.optimize.fsolve(cubic, np.array([1.0]), args=t, xtol=1e-13)[0]

    assert cr.grad(with_args)(27.0) == pytest.approx(27.0 ** (-2 / 3) / 3, rel=1e-9)


def test_minimize_quadratic_closed_form_in_a_and_b():
    def loss(a, b):
        result = scipy.optimize.minimize(quadratic, np.zeros(2), args=(a, b), **QUADRATIC)
        return np.sum(result.x * np.array([1.0, 2.0]))

    # x* = A^{-1} b, loss = c·A^{-1} b: d/db = A^{-T} c, d/dA = -A^{-T} c x*^T
    c = np.array([1.0, 2.0])
    x_star = np.linalg.solve(A, B)
    grad_a, grad_b = cr.grad(loss, argnums=(0, 1))(A, B)
    np.testing.assert_allclose(grad_b, np.linalg.solve(A.T, c), rtol=1e-6)
    # the objective reads A as x·Ax/2, symmetric in A: its gradient is the symmetric part
    full = -np.outer(np.linalg.solve(A.T, c), x_star)
    np.testing.assert_allclose(grad_a, (full + full.T) / 2, rtol=1e-6, atol=1e-9)


def test_minimize_fun_by_envelope_theorem_and_closure():
    def optimum(b):
        return scipy.optimize.minimize(lambda x: quadratic(x, A, b), np.zeros(2),
                                       **TIGHT_MIN).fun

    # f* = -b·A^{-1}b/2: gradient -A^{-1} b
    np.testing.assert_allclose(cr.grad(optimum)(B), -np.linalg.solve(A, B), rtol=1e-6)
    _, tangent = cr.jvp(optimum, (B,), (np.array([1.0, 0.0]),))
    assert tangent == pytest.approx(-np.linalg.solve(A, B)[0], rel=1e-6)


def test_minimize_forward_mode_matches_closed_form():
    def solution(b):
        return scipy.optimize.minimize(quadratic, np.zeros(2), args=(A, b), **QUADRATIC).x

    np.testing.assert_allclose(cr.jacfwd(solution)(B), np.linalg.inv(A), rtol=1e-6)
    np.testing.assert_allclose(cr.jacobian(solution)(B), np.linalg.inv(A), rtol=1e-6)


# --- finite differences of the re-solved problem ------------------------------------------------

def test_minimize_nonquadratic_against_finite_differences():
    weights = np.array([1.0, -2.0, 0.5])

    def loss(c):
        x = scipy.optimize.minimize(smooth, np.zeros(3), args=(c,), **SMOOTH).x
        return np.sum(weights * x ** 2)

    c = np.array([0.3, -0.2, 0.5])
    np.testing.assert_allclose(cr.grad(loss)(c), _fd(loss, c), rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("method", ["hybr", "lm"])
def test_root_coupled_system_against_finite_differences(method):
    def loss(a):
        x = scipy.optimize.root(coupled, np.ones(2), args=(a, 0.9), method=method,
                                **TIGHT_ROOT).x
        return x[0] * x[1]

    a = np.array([1.0, 1.2])
    np.testing.assert_allclose(cr.grad(loss)(a), _fd(loss, a), rtol=1e-6)


def test_root_with_jac_true_and_user_jacobian():
    def with_jacobian(x, t):
        return x ** 3 - t, np.diag(3 * x ** 2)

    def solution(t):
        return scipy.optimize.root(with_jacobian, np.ones(2), args=(t,), jac=True,
                                   **TIGHT_ROOT).x[1]

    assert cr.grad(solution)(8.0) == pytest.approx(1 / 12, rel=1e-9)


# --- order 2 -------------------------------------------------------------------------------------

def test_hessian_of_outer_loss_through_root():
    def solution(t):
        return scipy.optimize.root(lambda x: x ** 3 - t, np.array([1.0]), **TIGHT_ROOT).x[0]

    expected = -2 / 9 * 8.0 ** (-5 / 3)
    assert cr.grad(cr.grad(solution))(8.0) == pytest.approx(expected, rel=1e-7)
    assert cr.hessian(solution)(8.0) == pytest.approx(expected, rel=1e-7)


def test_hessian_of_outer_loss_through_minimize():
    def loss(b):
        x = scipy.optimize.minimize(quadratic, np.zeros(2), args=(A, b), **QUADRATIC).x
        return np.sum(x ** 3)

    def gradient(b):
        x = np.linalg.solve(A, b)
        return np.linalg.solve(A.T, 3 * x ** 2)

    b = np.array([1.0, 0.5])
    hessian = cr.hessian(loss)(b)
    steps = np.eye(2) * 1e-5
    expected = np.stack([(gradient(b + e) - gradient(b - e)) / 2e-5 for e in steps])
    np.testing.assert_allclose(hessian, expected, rtol=1e-5)


@pytest.mark.parametrize("rule_case", [CASES[0], CASES[2], CASES[4], CASES[6]],
                         ids=lambda c: c.id)
def test_order2_kit(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)
    test_frule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)


def test_minimizer_at_in_a_closure_and_its_checks():
    # the minimizer of sum(w (x - d)^2) is the weighted mean: d x*/d w_i = (d_i - x*) / sum(w)
    data = np.array([1.0, 2.0, 4.0])

    def weighted_mean(w):
        found = np.array([np.sum(np.asarray(w) * data) / np.sum(np.asarray(w))])
        return minimizer_at(lambda x: np.sum(w * (x - data) ** 2), found, step_within=1e-9)[0]

    w = np.array([1.0, 2.0, 3.0])
    mean = np.sum(w * data) / np.sum(w)
    np.testing.assert_allclose(cr.grad(weighted_mean)(w), (data - mean) / np.sum(w),
                               rtol=1e-12)
    assert cr.jvp(weighted_mean, (w,), (np.ones(3),))[1] == pytest.approx(
        np.sum(data - mean) / np.sum(w), rel=1e-12)
    # not a stationary point: refused by name, with the step
    with pytest.raises(ValueError, match="weighted: the estimate .* not a stationary point"):
        cr.grad(lambda d: minimizer_at(lambda x, d: np.sum((x - d) ** 2), np.array([0.0]),
                                       d, name="weighted", step_within=1e-6)[0])(data)
    # a maximum, not a minimum
    with pytest.raises(ValueError, match="peak: the estimate .* not a strict minimum"):
        cr.grad(lambda d: minimizer_at(lambda x, d: -np.sum((x - d) ** 2),
                                       np.array([np.mean(d)]), d, name="peak",
                                       step_within=1e-6)[0])(data)


# --- refusals ------------------------------------------------------------------------------------

def test_nonconverged_root_raises_when_differentiated():
    def solution(t):  # x**2 + t has no real root for t > 0
        return scipy.optimize.root(lambda x: x ** 2 + t, np.array([1.0])).x[0]

    with pytest.raises(RuntimeError, match="scipy.optimize.root did not converge"):
        cr.grad(solution)(1.0)


def test_nonconverged_fsolve_raises_when_differentiated():
    def solution(t):
        return scipy.optimize.fsolve(lambda x: x ** 2 + t, np.array([1.0]))[0]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(RuntimeError, match="scipy.optimize.fsolve did not converge"):
            cr.grad(solution)(1.0)


def test_fsolve_full_output_refused():
    def solution(t):
        return scipy.optimize.fsolve(lambda x: x ** 3 - t, np.array([1.0]),
                                     full_output=True)[0][0]

    with pytest.raises(NotImplementedError, match="full_output"):
        cr.grad(solution)(8.0)


def test_active_bounds_stay_and_the_free_components_follow():
    def solution(b, bounds, weights=np.ones(2)):
        return scipy.optimize.minimize(quadratic, np.zeros(2), args=(A, b),
                                       method="L-BFGS-B", bounds=bounds,
                                       options={"gtol": 1e-12, "ftol": 1e-15}).x @ weights

    inactive = [(-5.0, 5.0), (None, 10.0)]
    np.testing.assert_allclose(cr.grad(lambda b: solution(b, inactive))(B),
                               np.linalg.solve(A.T, np.ones(2)), rtol=1e-5)
    # the unconstrained minimizer has x[1] < 0: x = (b0/3, 0), x[1] on its bound (before:
    # refused); x[0] minimizes the rest, 3 x0 + x1 = b0
    active = [(0.0, 5.0), (0.0, 5.0)]
    np.testing.assert_allclose(cr.grad(lambda b: solution(b, active))(B), [1 / 3, 0.0],
                               atol=1e-12)
    weights = np.array([2.0, -1.0])
    np.testing.assert_allclose(cr.jvp(lambda b: solution(b, active, weights), (B,),
                                      (np.array([0.6, 1.0]),))[1], 2 * 0.6 / 3, rtol=1e-12)
    # the minimum's value: the envelope theorem, -x (the bound is a constant)
    value = cr.grad(lambda b: scipy.optimize.minimize(
        quadratic, np.zeros(2), args=(A, b), method="L-BFGS-B", bounds=active,
        options={"gtol": 1e-12, "ftol": 1e-15}).fun)(B)
    np.testing.assert_allclose(value, [-1 / 3, 0.0], atol=1e-8)
    # b = A (0.3, 0): the unconstrained minimizer on the bound, the gradient's component 0
    # there: weakly active, no unique derivative
    with pytest.raises(NotImplementedError, match="do(es)? not push against them"):
        cr.grad(lambda b: solution(b, active))(np.array([0.9, 0.3]))


def test_active_bounds_at_second_order():
    # x1 on its bound, x0 solving 4 (x0 - t0) + t1 exp(t1 x0) = 0 with x1 = 0 fixed: the
    # hessian of x0 against differences of its gradient (x0 by a bracketing root finder)
    def objective(x, t):
        return 2 * (x[0] - t[0]) ** 2 + (x[1] + 1.0) ** 2 + np.exp(t[1] * x[0]) + x[0] * x[1]

    def solution(t):
        return scipy.optimize.minimize(objective, np.array([0.5, 0.5]), args=(t,),
                                       method="L-BFGS-B", bounds=[(None, None), (0.0, None)],
                                       options={"gtol": 1e-12, "ftol": 1e-15}).x[0]

    def reference(t):
        return scipy.optimize.brentq(lambda y: 4 * (y - t[0]) + t[1] * np.exp(t[1] * y),
                                     -5.0, 5.0, xtol=1e-15, rtol=1e-15)

    t = np.array([0.3, 0.4])
    step = 1e-5
    np.testing.assert_allclose(
        cr.grad(solution)(t), [(reference(t + step * e) - reference(t - step * e)) / (2 * step)
                               for e in np.eye(2)], rtol=1e-7)
    gradient = cr.grad(reference)
    expected = [(gradient(t + 1e-4 * e) - gradient(t - 1e-4 * e)) / 2e-4 for e in np.eye(2)]
    np.testing.assert_allclose(cr.hessian(solution)(t), expected, rtol=1e-5, atol=1e-8)


def test_constraints_active_at_the_solution_by_the_kkt_conditions():
    # before: refused. x0 = x1 (an equality): the quadratic on that line, 3.5 x0 = (b0 +
    # b1)/2... here 0.5 x'Ax - b'x with x = (s, s): 3.5 s^2 - (b0 + b1) s, s = (b0 + b1)/7
    def solution(b, constraint, weights=np.array([1.0, 2.0])):
        return scipy.optimize.minimize(quadratic, np.zeros(2), args=(A, b), method="SLSQP",
                                       constraints=[constraint],
                                       options={"ftol": 1e-15, "maxiter": 500}).x @ weights

    equal = {"type": "eq", "fun": lambda x: x[0] - x[1]}
    np.testing.assert_allclose(cr.grad(lambda b: solution(b, equal))(B), [3 / 7, 3 / 7],
                               rtol=1e-7)
    np.testing.assert_allclose(cr.jvp(lambda b: solution(b, equal), (B,),
                                      (np.array([1.0, -0.5]),))[1], 3 / 7 * 0.5, rtol=1e-7)
    # an active inequality, x0 + x1 <= 0.1 (the unconstrained minimizer has x0 + x1 > 0.1):
    # x = (s, 0.1 - s) minimizing the quadratic on the line; an inactive one changes nothing
    line = {"type": "ineq", "fun": lambda x: 0.1 - x[0] - x[1]}
    b = np.array([1.0, 1.0])

    def on_line(b):  # d/ds of 0.5 x'Ax - b'x along x = (s, 0.1 - s): 3 s - 0.1 - b0 + b1 = 0
        s = (0.1 + b[0] - b[1]) / 3
        return np.array([s, 0.1 - s]) @ np.array([1.0, 2.0])

    step = 1e-6
    np.testing.assert_allclose(cr.grad(lambda b: solution(b, line))(b),
                               [(on_line(b + step * e) - on_line(b - step * e)) / (2 * step)
                                for e in np.eye(2)], rtol=1e-6)
    loose = {"type": "ineq", "fun": lambda x: 10.0 - x[0] - x[1]}
    np.testing.assert_allclose(cr.grad(lambda b: solution(b, loose))(B),
                               np.linalg.solve(A.T, np.array([1.0, 2.0])), rtol=1e-6)


def test_constraint_objects_and_weakly_active_constraints_refused():
    def solution(b, constraint):
        return np.sum(scipy.optimize.minimize(quadratic, np.zeros(2), args=(A, b),
                                              method="trust-constr" if not isinstance(
                                                  constraint, dict) else "SLSQP",
                                              constraints=[constraint],
                                              options={"maxiter": 500}).x)

    with pytest.raises(NotImplementedError, match="constraint .* not differentiable"):
        cr.grad(lambda b: solution(b, scipy.optimize.LinearConstraint(np.ones((1, 2)), 0.0,
                                                                        0.1)))(B)
    # the unconstrained minimizer A^-1 b = (0.1, 0) on the line x0 + x1 = 0.1: its
    # multiplier is 0
    with pytest.raises(NotImplementedError, match="weakly active"):
        cr.grad(lambda b: solution(b, {"type": "ineq", "fun": lambda x: 0.1 - x[0] - x[1]}))(
            A @ np.array([0.1, 0.0]))


def test_cotangent_on_a_solver_field_refused():
    def misuse(b):
        return np.sum(scipy.optimize.minimize(quadratic, np.zeros(2), args=(A, b),
                                              method="BFGS",
                                              jac=quadratic_gradient).hess_inv)

    with pytest.raises(NotImplementedError, match=r"\.hess_inv is not differentiable"):
        cr.grad(misuse)(B)


def test_cotangent_on_arrays_nested_in_a_field_refused():
    # trust-constr's .constr is a list of arrays: its arrays are traced too, so using one is
    # refused by name rather than silently treated as a constant
    def misuse(b):
        result = scipy.optimize.minimize(
            quadratic, np.zeros(2), args=(A, b), method="trust-constr",
            constraints=[scipy.optimize.NonlinearConstraint(lambda x: 10.0 - x[0], 0, np.inf)])
        return np.sum(result.constr[0])

    with pytest.raises(NotImplementedError, match=r"\.constr is not differentiable"):
        cr.grad(misuse)(B)


def test_x0_gets_no_gradient():
    def solution(x0):
        return scipy.optimize.root(cubic, x0, args=(8.0,), **TIGHT_ROOT).x[0]

    assert cr.grad(solution)(np.array([1.5])) == pytest.approx(np.zeros(1))


# --- bilevel: a ridge penalty per feature tuned on validation loss -------------------------------

def test_bilevel_ridge_penalties_against_closed_form_finite_differences():
    rng = np.random.default_rng(1)
    w_true = rng.normal(size=4)
    x_train, x_val = rng.normal(size=(15, 4)), rng.normal(size=(25, 4))
    y_train = x_train @ w_true + 0.5 * rng.normal(size=15)
    y_val = x_val @ w_true + 0.5 * rng.normal(size=25)

    def training_loss(w, log_penalties):
        return np.sum((x_train @ w - y_train) ** 2) + np.sum(np.exp(log_penalties) * w ** 2)

    def training_gradient(w, log_penalties):
        return 2 * x_train.T @ (x_train @ w - y_train) + 2 * np.exp(log_penalties) * w

    def validation_loss(log_penalties):
        w = scipy.optimize.minimize(training_loss, np.zeros(4), args=(log_penalties,),
                                    jac=training_gradient, **TIGHT_MIN).x
        return np.mean((x_val @ w - y_val) ** 2)

    def closed_form(log_penalties):
        w = np.linalg.solve(x_train.T @ x_train + np.diag(np.exp(log_penalties)),
                            x_train.T @ y_train)
        return np.mean((x_val @ w - y_val) ** 2)

    s = np.array([0.0, 1.0, -1.0, 0.5])
    np.testing.assert_allclose(cr.grad(validation_loss)(s), _fd(closed_form, s), rtol=1e-6,
                               atol=1e-10)
    # a step of 1e-3: the solver's own error, divided by the step, is below 1e-4 relative there
    np.testing.assert_allclose(cr.grad(validation_loss)(s), _fd(validation_loss, s, 1e-3),
                               rtol=1e-4, atol=1e-8)


# --- more ways to hold the parameters, and more refusals ----------------------------------------

class CubeRootProblem:
    """A callable object whose attribute is the parameter."""

    def __init__(self, t):
        self.t = t

    def __call__(self, x):
        return x ** 3 - self.t


def test_callable_object_parameter_in_both_modes():
    def solution(t):
        return scipy.optimize.root(CubeRootProblem(t), np.ones(1), **TIGHT_ROOT).x[0]

    assert cr.grad(solution)(27.0) == pytest.approx(27.0 ** (-2 / 3) / 3, rel=1e-9)
    assert cr.jvp(solution, (27.0,), (2.0,))[1] == pytest.approx(2 * 27.0 ** (-2 / 3) / 3,
                                                                 rel=1e-9)


def test_nonconverged_root_raises_in_forward_mode():
    def solution(t):
        return scipy.optimize.root(lambda x: x ** 2 + t, np.array([1.0])).x[0]

    with pytest.raises(RuntimeError, match="did not converge"):
        cr.jvp(solution, (1.0,), (1.0,))


def test_least_squares_root_refused():
    def solution(t):  # three residuals, two unknowns: method='lm' solves least squares
        def residuals(x):
            return np.stack([x[0] - t, x[1] - 2 * t, x[0] + x[1] - 3 * t + 0.1])
        return scipy.optimize.root(residuals, np.zeros(2), method="lm").x[0]

    with pytest.raises(NotImplementedError, match="3 residuals for 2 unknowns"):
        cr.grad(solution)(1.0)
