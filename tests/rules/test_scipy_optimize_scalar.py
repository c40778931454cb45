"""Implicit gradients through SciPy's scalar root finders and minimizers
(src/chainrules/rules/scipy/optimize/scalar.py).

Every gradient is checked against closed forms: the root of ``x**3 - t`` is ``t**(1/3)``; the
minimizer of ``(x - a)**2 b + x**4`` satisfies ``2 b (x - a) + 4 x**3 = 0``, so
``dx*/da = 2b / (2b + 12 x*^2)`` and ``dx*/db = -2 (x* - a) / (2b + 12 x*^2)``, and its
minimum's derivatives are ``∂f/∂a = -2 b (x* - a)``, ``∂f/∂b = (x* - a)**2`` (envelope
theorem); the kit checks each rule against central differences at orders 1 and 2.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.optimize as so
from hypothesis import given, settings, strategies as st

import chainrules as cr
from chainrules.testing import case, check_case, test_frule_order2, test_rrule_order2


def cubic(x, t):
    return x ** 3 - t


def squared_cubic(x, t):
    return (x ** 3 - t) ** 2


def quartic(x, a, b):
    return (x - a) ** 2 * b + x ** 4


TIGHT = {"xtol": 1e-14}
# A minimizer compares values of f, which places x* only to about sqrt(eps |f(x*)| / f''): to
# 1e-8 for the quartic, too coarse for finite differences of its derivatives. The kit's cases
# minimize (x**3 - t)**2, whose minimum value is zero, so the comparisons place x* = t^(1/3)
# to rounding (the quartic's derivatives are checked against closed forms below).
BRACKET = (0.0, 1.0, 3.0)
# The bounded method stops within sqrt(eps) |x*| of the minimum whatever xatol asks (about
# 3e-8 here): steps of 1e-2 keep that noise in the finite differences to 3e-6.
BOUNDED = {"rtol": 1e-5, "atol": 1e-5, "step": 1e-2}
CASES = [
    *[case(getattr(so, name), cubic, 0.5, 3.0, (8.0,), fkwargs=TIGHT, rtol=1e-6, step=1e-3)
      for name in ("brentq", "brenth", "ridder", "bisect", "toms748")],
    case(so.root_scalar, cubic, (6.0,), fkwargs={"bracket": (0.5, 3.0), **TIGHT}, rtol=1e-6,
         step=1e-3),
    case(so.minimize_scalar, squared_cubic, BRACKET, None, (8.0,), fkwargs={"tol": 1e-14},
         rtol=1e-6, step=1e-3),
    case(so.minimize_scalar, squared_cubic, None, (0.5, 3.0), (8.0,),
         fkwargs={"options": {"xatol": 1e-14}}, **BOUNDED),
    case(so.golden, squared_cubic, (8.0,), BRACKET, fkwargs={"tol": 1e-14}, rtol=1e-6,
         step=1e-3),
    case(so.brent, squared_cubic, (8.0,), BRACKET, fkwargs={"tol": 1e-14}, rtol=1e-6,
         step=1e-3),
    case(so.fminbound, squared_cubic, 0.5, 3.0, (8.0,), fkwargs={"xtol": 1e-14}, **BOUNDED),
    case(so.newton, cubic, 1.0, None, (8.0,), fkwargs={"tol": 1e-14}, rtol=1e-6, step=1e-3),
    case(so.newton, cubic, np.ones(3), None, (np.array([8.0, 2.0, 27.0]),),
         fkwargs={"tol": 1e-14}, rtol=1e-6, step=1e-3),  # elementwise, from an array x0
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_scipy_scalar_solver_rule(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_order2_kit(rule_case):
    # the kit's steps (1e-5) against the bounded method's noise (3e-8): 3e-3 (its second
    # derivatives are checked against the closed form in test_minimizer_against_...)
    bounded = rule_case.options.get("step") == BOUNDED["step"]
    tolerances = {"rtol": 1e-2, "atol": 1e-4} if bounded else {}
    test_rrule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs,
                      **tolerances)
    test_frule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs,
                      **tolerances)


# --- closed forms --------------------------------------------------------------------------------

ROOTS = {
    name: (lambda solver: lambda f, **kw: solver(f, 0.0, 10.0, xtol=1e-14, **kw))(
        getattr(so, name)) for name in ("brentq", "brenth", "ridder", "bisect", "toms748")}
ROOTS["root_scalar"] = lambda f, **kw: so.root_scalar(f, bracket=(0.0, 10.0), xtol=1e-14,
                                                      **kw).root
ROOTS["root_scalar-newton"] = lambda f, **kw: so.root_scalar(f, x0=1.0, xtol=1e-14, **kw).root
ROOTS["newton"] = lambda f, **kw: so.newton(f, 1.0, tol=1e-14, **kw)  # secant: no fprime
ROOTS["newton-newton"] = lambda f, **kw: so.newton(f, 1.0, tol=1e-14, **kw)
ROOTS["newton-full-output"] = lambda f, **kw: so.newton(f, 1.0, tol=1e-14, full_output=True,
                                                        **kw)[1].root


@pytest.mark.parametrize("name", sorted(ROOTS))
def test_root_against_cube_root_in_every_mode(name):
    solve = ROOTS[name]
    fprime = {"fprime": lambda x, t=None: 3 * x ** 2} if name.endswith("newton") else {}

    def closure(t):
        return solve(lambda x: x ** 3 - t, **fprime)

    def by_args(t):
        return solve(lambda x, t: x ** 3 - t, args=(t,), **fprime)

    t = 8.0
    for root in (closure, by_args):
        assert cr.grad(root)(t) == pytest.approx(t ** (-2 / 3) / 3, rel=1e-9)
        assert cr.jvp(root, (t,), (2.0,))[1] == pytest.approx(2 * t ** (-2 / 3) / 3, rel=1e-9)
        assert cr.hvp(root, t, 1.0) == pytest.approx(-2 / 9 * t ** (-5 / 3), rel=1e-7)


def test_root_finders_full_output_root_results_are_differentiable():
    def root_twice(t):  # x and the RootResults' .root are both the root
        x, result = so.brentq(cubic, 0.0, 10.0, (t,), xtol=1e-14, full_output=True)
        assert result.converged
        return x + 2 * result.root

    assert cr.grad(root_twice)(8.0) == pytest.approx(3 * 8.0 ** (-2 / 3) / 3, rel=1e-9)
    assert cr.jvp(root_twice, (8.0,), (1.0,))[1] == pytest.approx(8.0 ** (-2 / 3), rel=1e-9)
    assert cr.hvp(root_twice, 8.0, 1.0) == pytest.approx(-2 / 3 * 8.0 ** (-5 / 3), rel=1e-7)

    def both(t):  # the engine's batched forward mode (jacfwd) and reverse mode (jacobian)
        x, result = so.brentq(cubic, 0.0, 10.0, (t[0],), xtol=1e-14, full_output=True)
        return np.stack([x, result.root * t[1]])

    expected = [[1 / 12, 0.0], [2 / 12, 2.0]]
    for jacobian in (cr.jacfwd, cr.jacobian):
        np.testing.assert_allclose(jacobian(both)(np.array([8.0, 2.0])), expected, rtol=1e-9)
    # root_scalar's result: .root differentiable; iterations and flags stay plain
    result = cr.grad(lambda t: so.root_scalar(cubic, (t,), bracket=(0, 10), xtol=1e-14).root)
    assert result(27.0) == pytest.approx(27.0 ** (-2 / 3) / 3, rel=1e-9)


def test_root_scalar_with_fprime_true():
    def root(t):  # f returns its derivative too: for the solver only
        return so.root_scalar(lambda x: (x ** 3 - t, 3 * x ** 2), x0=1.0, fprime=True,
                              xtol=1e-14).root

    assert cr.grad(root)(8.0) == pytest.approx(1 / 12, rel=1e-9)


def _minimizer_closed_form(a, b, x):
    denominator = 2 * b + 12 * x ** 2
    return np.array([2 * b, -2 * (x - a)]) / denominator


MINIMIZERS = {
    "minimize_scalar": lambda f, args: so.minimize_scalar(f, bracket=(-2, 0, 2), args=args,
                                                          tol=1e-12).x,
    "minimize_scalar-bounded": lambda f, args: so.minimize_scalar(
        f, bounds=(-2, 2), args=args, options={"xatol": 1e-12}).x,
    "golden": lambda f, args: so.golden(f, args=args, brack=(-2, 0, 2), tol=1e-12),
    "brent": lambda f, args: so.brent(f, args=args, brack=(-2, 0, 2), tol=1e-12),
    "fminbound": lambda f, args: so.fminbound(f, -2, 2, args=args, xtol=1e-12),
}


@pytest.mark.parametrize("name", sorted(MINIMIZERS))
def test_minimizer_against_implicit_closed_form(name):
    # traced through before, golden's gradient was zero at every point (its steps depend on
    # the function only through comparisons) and fminbound's off at one minimum in forty
    solve = MINIMIZERS[name]
    theta = np.array([0.7, 0.4])

    def closure(t):
        return solve(lambda x: quartic(x, t[0], t[1]), ())

    def by_args(t):
        return solve(quartic, (t[0], t[1]))

    x = so.minimize_scalar(quartic, args=(0.7, 0.4), bracket=(-2, 0, 2), tol=1e-14).x
    expected = _minimizer_closed_form(0.7, 0.4, x)
    for minimizer in (closure, by_args):
        np.testing.assert_allclose(cr.grad(minimizer)(theta), expected, rtol=1e-6)
        np.testing.assert_allclose(cr.jvp(minimizer, (theta,), (np.array([1.0, 2.0]),))[1],
                                   expected @ [1.0, 2.0], rtol=1e-6)
    # second order: the Hessian of x*(θ), differentiating the closed form once more
    np.testing.assert_allclose(cr.hessian(by_args)(theta), _minimizer_hessian(0.7, 0.4, x),
                               rtol=1e-6)


def _minimizer_hessian(a, b, x):
    """The Hessian of x*(a, b): x_a = 2b/D, x_b = -2(x - a)/D, D = 2b + 12 x^2."""
    denominator = 2 * b + 12 * x ** 2
    x_a, x_b = _minimizer_closed_form(a, b, x)
    d_a, d_b = 24 * x * x_a, 2 + 24 * x * x_b
    x_aa = -2 * b * d_a / denominator ** 2
    x_ab = (2 * denominator - 2 * b * d_b) / denominator ** 2
    x_bb = (-2 * x_b * denominator + 2 * (x - a) * d_b) / denominator ** 2
    return np.array([[x_aa, x_ab], [x_ab, x_bb]])


@pytest.mark.parametrize("name", ["minimize_scalar", "golden", "brent", "fminbound"])
def test_minimum_value_by_envelope_theorem(name):
    def minimum(t):
        if name == "minimize_scalar":
            return so.minimize_scalar(quartic, bracket=(-2, 0, 2), args=(t[0], t[1]),
                                      tol=1e-12).fun
        if name == "fminbound":
            return so.fminbound(quartic, -2, 2, (t[0], t[1]), 1e-12, full_output=True)[1]
        return getattr(so, name)(quartic, (t[0], t[1]), (-2, 0, 2), 1e-12, True)[1]

    a, b = 0.7, 0.4
    x = so.minimize_scalar(quartic, args=(a, b), bracket=(-2, 0, 2), tol=1e-14).x
    np.testing.assert_allclose(cr.grad(minimum)(np.array([a, b])),
                               [-2 * b * (x - a), (x - a) ** 2], rtol=1e-7, atol=1e-12)
    x_a, x_b = _minimizer_closed_form(a, b, x)
    hessian = [[-2 * b * (x_a - 1), -2 * (x - a) - 2 * b * x_b],
               [-2 * b * (x_a - 1) * 0 + 2 * (x - a) * (x_a - 1), 2 * (x - a) * x_b]]
    np.testing.assert_allclose(cr.hessian(minimum)(np.array([a, b])), hessian, rtol=1e-6)


@settings(max_examples=25, deadline=None)
@given(a=st.floats(-1.5, 1.5), b=st.floats(0.1, 3.0),
       name=st.sampled_from(sorted(MINIMIZERS)))
def test_random_quartics_against_closed_form(a, b, name):
    x = so.minimize_scalar(quartic, args=(a, b), bracket=(-2, 0, 2), tol=1e-14).x
    gradient = cr.grad(lambda t: MINIMIZERS[name](quartic, (t[0], t[1])))(np.array([a, b]))
    np.testing.assert_allclose(gradient, _minimizer_closed_form(a, b, x), rtol=1e-5,
                               atol=1e-7)


# --- refusals ------------------------------------------------------------------------------------

def test_minimum_at_a_bound_refused_by_name():
    def at_bound(t):  # (x - 3 t)^2 on [-2, 2]: the minimum is the bound 2, where f' != 0
        return so.fminbound(lambda x: (x - 3 * t) ** 2, -2, 2)

    with pytest.raises(NotImplementedError, match="fminbound: bounds active"):
        cr.grad(at_bound)(1.0)
    with pytest.raises(NotImplementedError, match="minimize_scalar: bounds active"):
        cr.grad(lambda t: so.minimize_scalar(lambda x: (x - 3 * t) ** 2,
                                             bounds=(-2, 2)).x)(1.0)
    # inside, the same problem is differentiable: x* = 3 t
    assert cr.grad(lambda t: so.fminbound(lambda x: (x - 3 * t) ** 2, -2, 2,
                                          xtol=1e-12))(0.2) == pytest.approx(3.0, rel=1e-6)


def test_unconverged_root_raises_when_differentiated():
    def root(t):  # two iterations of bisection: not a root
        return so.bisect(cubic, 0.0, 10.0, (t,), maxiter=2, disp=False)

    with pytest.raises(RuntimeError, match="scipy.optimize.bisect did not converge"):
        cr.grad(root)(8.0)
    with pytest.raises(RuntimeError, match="scipy.optimize.bisect did not converge"):
        cr.jvp(root, (8.0,), (1.0,))


def test_unconverged_fminbound_warns():
    def minimizer(t):
        return so.fminbound(quartic, -2, 2, (t, 1.0), maxfun=3, disp=0)

    with pytest.warns(RuntimeWarning, match="fminbound reported a failure"):
        cr.grad(minimizer)(0.7)


def test_plain_calls_inside_a_trace_run_as_they_are():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradient = cr.grad(lambda t: t * so.brentq(lambda x: x - 0.5, 0, 1))(2.0)
    assert gradient == pytest.approx(0.5)


def test_newton_from_an_array_of_starting_points():
    """newton with an array x0 solves f elementwise (x**2 = t here): the Jacobian of the
    roots is diag(1 / (2 sqrt(t))), in jacfwd and jacobian, with full_output's (root,
    converged, zero_der) too; an element that did not converge refuses differentiation."""
    t = np.array([4.0, 9.0, 2.0])

    def roots(t):
        return so.newton(lambda x: x ** 2 - t, np.ones(3), tol=1e-14)

    expected = np.diag(1 / (2 * np.sqrt(t)))
    np.testing.assert_allclose(cr.jacfwd(roots)(t), expected, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(cr.jacobian(roots)(t), expected, rtol=1e-9, atol=1e-15)
    full = cr.grad(lambda t: np.sum(so.newton(lambda x: x ** 2 - t, np.ones(3), tol=1e-14,
                                              full_output=True).root))(t)
    np.testing.assert_allclose(full, np.diag(expected), rtol=1e-9)
    unreachable = np.array([4.0, -9.0, 2.0])  # x**2 = -9: no real root
    with pytest.warns(RuntimeWarning, match="some failed to converge"), \
            pytest.raises(RuntimeError, match="newton did not converge .1 of 3 elements failed"):
        cr.grad(lambda t: np.sum(so.newton(lambda x: x ** 2 - t, np.ones(3), maxiter=20,
                                           disp=False)))(unreachable)

