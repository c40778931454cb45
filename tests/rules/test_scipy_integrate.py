"""The rule-testing kit on src/chainrules/rules/scipy/integrate/quadrature.py: quad and quad_vec (limits,
``args``, closures, infinite limits), trapezoid, cumulative_trapezoid and simpson (``x``,
``dx``, ``axis``, float32), at order 1 and 2; then gradients through the engine (calls written
``scipy.integrate.quad(...)`` as users write them) against closed forms and finite
differences, and the refused options.

Skipped when SciPy is not installed.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

integrate = pytest.importorskip("scipy.integrate")

import chainrules as cr  # noqa: E402
from chainrules.rules.scipy.integrate.quadrature import _simpson_weights, simpson_by_position  # noqa: E402,E501
from chainrules.testing import (case, check_case, test_frule_order2,  # noqa: E402
                                test_rrule_order2)

_rng = np.random.default_rng(20261203)
F32 = np.float32


def normal(*shape, dtype=np.float64):
    return _rng.standard_normal(shape).astype(dtype)


def grid(*shape, dtype=np.float64):
    """Increasing, unevenly spaced sample points along the last axis."""
    return np.cumsum(_rng.uniform(0.3, 1.0, shape), axis=-1).astype(dtype)


def damped(t, c, d):
    return np.exp(-c * t) * np.sin(d * t)


def gaussian(t, c):
    return np.exp(-c * t * t)


_THETA = np.array([0.5, -1.0, 2.0])


def _polynomial(t):  # closes over _THETA: its tangent is the function's own
    return _THETA[0] + _THETA[1] * t + _THETA[2] * t ** 2


def _vector(t):  # a vector integrand over a closure, for quad_vec
    return np.array([np.sin(_THETA[0] * t), _THETA[1] * t ** 2])


_Y5, _X5, _Y6, _X6 = normal(5), grid(5), normal(6), grid(6)
_M, _XM = normal(3, 5), grid(3, 5)
_YC = normal(6) + 1j * normal(6)

# SciPy 1.14 takes simpson's x by keyword only: there the kit checks the positional form that
# the engine records for such calls (the same rule); calls by keyword are checked below.
_SIMPSON = integrate.simpson if inspect.signature(integrate.simpson).parameters["x"].kind \
    is inspect.Parameter.POSITIONAL_OR_KEYWORD else simpson_by_position

CASES = [
    # quad: limits, args, a closure, an infinite limit, reversed limits
    case(integrate.quad, damped, 0.2, 1.5, (0.7, 2.0)),
    case(integrate.quad, damped, 1.5, 0.2, (0.7, 2.0)),
    case(integrate.quad, np.sin, 0.3, 2.0),
    case(integrate.quad, gaussian, 0.1, 0.9, 1.4),                  # args=(1.4,), as quad reads it
    case(integrate.quad, lambda t, v: np.sum(v * t ** np.arange(3)), 0.0, 1.0,
         np.array([0.5, -1.0, 2.0]), id="quad-array-args"),
    case(integrate.quad, _polynomial, 0.0, 1.0),
    # (infinite limits: below, through the engine; finite differences cannot step them)
    # quad_vec: vector outputs, a closure
    case(integrate.quad_vec, _vector, 0.1, 1.2),
    # trapezoid: x 1-d and n-d, dx, axis, float32
    case(integrate.trapezoid, _Y5, _X5),
    case(integrate.trapezoid, _Y5, None, 0.3),
    case(integrate.trapezoid, _M, _XM, axis=1),
    case(integrate.trapezoid, _M.T, _X5, axis=0),
    case(integrate.trapezoid, _M.astype(F32), _X5.astype(F32), rtol=1e-2, atol=1e-2),
    # cumulative_trapezoid: initial=None or 0
    case(integrate.cumulative_trapezoid, _Y5, _X5),
    case(integrate.cumulative_trapezoid, _Y5, _X5, initial=0),
    case(integrate.cumulative_trapezoid, _Y5, None, 0.7),
    case(integrate.cumulative_trapezoid, _M, _XM, axis=-1, initial=0),
    case(integrate.cumulative_trapezoid, _M.T, _X5, axis=0),
    case(integrate.cumulative_trapezoid, _M.astype(F32), _X5.astype(F32), rtol=1e-2,
         atol=1e-2),
    # simpson: odd and even sample counts (the Cartwright correction), 2 samples, dx, axis
    *[case(_SIMPSON, _Y6[:n], _X6[:n]) for n in (2, 3, 4, 5, 6)],
    case(integrate.simpson, _Y6, dx=0.4), case(integrate.simpson, _Y6[:5], x=_X6[:5]),
    *([case(_SIMPSON, _Y6, None, 0.4), case(_SIMPSON, _Y5, None, 0.4)]
      if inspect.signature(integrate.simpson).parameters["dx"].kind
      is inspect.Parameter.POSITIONAL_OR_KEYWORD else []),  # SciPy < 1.14
    case(integrate.simpson, _Y5, dx=0.4),
    case(_SIMPSON, _M, _XM, axis=1),
    case(_SIMPSON, _M.T, _X5, axis=0),
    case(_SIMPSON, normal(3, 4), grid(3, 4), axis=-1),
    case(_SIMPSON, _M.astype(F32), _X5.astype(F32), rtol=1e-2, atol=1e-2),
    # the positional form recorded for keyword-only x (SciPy 1.14), on every SciPy
    case(simpson_by_position, _Y6[:5], _X6[:5]), case(simpson_by_position, _Y6, None, 0.4),
    # complex samples at real points
    *[case(f, _YC[:n], _X6[:n]) for f in (integrate.trapezoid, integrate.cumulative_trapezoid,
                                          _SIMPSON) for n in (5, 6)],
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_scipy_integrate_rule(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("rule_case", [c for c in CASES if "float32" not in c.id],
                         ids=lambda c: c.id)
def test_scipy_integrate_rule_order2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)
    test_frule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)


# --- quad through the engine ----------------------------------------------------------------------

def test_quad_gradient_in_args_and_limits_against_closed_forms():
    # ∫_a^∞ exp(-c t²) dt: d/da = -exp(-c a²), d/dc = -∫ t² exp(-c t²) dt
    def integral(a, c):
        return integrate.quad(gaussian, a, np.inf, args=(c,))[0]

    da, dc = cr.grad(integral, argnums=(0, 1))(0.0, 2.0)
    assert abs(da + 1.0) < 1e-12
    assert abs(dc + np.sqrt(np.pi) / 4 * 2.0 ** -1.5) < 1e-8


def _decay_integral_derivative(k):
    """d/dk of the integral of exp(-k t) over [0, 1], (1 - e^-k) / k."""
    return (np.exp(-k) * (k + 1) - 1) / k ** 2


@pytest.mark.parametrize("how", ["args=()", "args=(constant,)", "args=(traced,)",
                                 "args by position"])
def test_quad_args_by_keyword_or_by_position(how):
    # quad(f, a, b, args=...) by keyword gets no cotangent of its own (an engine passes it by
    # position when it holds traced values); by keyword it was taken for a positional
    # argument, and the engine refused the extra cotangent
    def loss(p):
        if how == "args=()":
            return integrate.quad(lambda t: np.exp(-p[0] * t), 0.0, 1.0, args=())[0]
        if how == "args=(constant,)":
            return integrate.quad(lambda t, c: np.exp(-p[0] * c * t), 0.0, 1.0, args=(2.0,))[0]
        if how == "args=(traced,)":
            return integrate.quad(lambda t, c: np.exp(-c * t), 0.0, 1.0, args=(p[0],))[0]
        return integrate.quad(lambda t, c: np.exp(-c * t), 0.0, 1.0, (p[0],))[0]

    p = np.array([0.7])
    scale = 2.0 if how == "args=(constant,)" else 1.0
    expected = scale * _decay_integral_derivative(scale * p[0])
    np.testing.assert_allclose(cr.grad(loss)(p), [expected], rtol=1e-8)
    h = 1e-4
    second = (_decay_integral_derivative(scale * (p[0] + h))
              - _decay_integral_derivative(scale * (p[0] - h))) * scale / (2 * h)
    np.testing.assert_allclose(cr.hvp(loss, p, np.ones(1)), [second], rtol=1e-6)


def test_quad_gradient_of_a_closure_over_an_array():
    theta = np.array([0.5, -1.0, 2.0])

    def integral(theta):
        return integrate.quad(lambda t: theta[0] + theta[1] * t + theta[2] * t ** 2,
                              0.0, 2.0)[0]

    np.testing.assert_allclose(cr.grad(integral)(theta), [2.0, 2.0, 8.0 / 3.0], rtol=1e-10)


def test_quad_gradient_matches_finite_differences_in_every_input():
    def integral(a, b, c, scale):
        return integrate.quad(lambda t, c: scale * np.exp(-c * t) * np.cos(t), a, b,
                              args=(c,))[0]

    point = (0.1, 1.7, 0.6, 1.5)
    gradient = cr.grad(integral, argnums=(0, 1, 2, 3))(*point)
    for k in range(4):
        up, down = list(point), list(point)
        up[k] += 1e-6
        down[k] -= 1e-6
        fd = (integral(*up) - integral(*down)) / 2e-6
        assert abs(gradient[k] - fd) < 1e-6, k


def test_quad_second_derivatives():
    # d²/db² ∫_0^b sin(c t) dt = c cos(c b); d²/dc² ∫_0^1 exp(c t) dt = ∫ t² exp(c t) dt
    def in_b(b):
        return integrate.quad(lambda t: np.sin(1.5 * t), 0.0, b)[0]

    assert abs(cr.grad(cr.grad(in_b))(0.8) - 1.5 * np.cos(1.2)) < 1e-9

    def in_c(c):
        return integrate.quad(lambda t: np.exp(c[0] * t), 0.0, 1.0)[0]

    c = np.array([0.7])
    expected = integrate.quad(lambda t: t * t * np.exp(0.7 * t), 0.0, 1.0)[0]
    np.testing.assert_allclose(cr.hessian(in_c)(c), [[expected]], rtol=1e-7)


@pytest.mark.parametrize("through", ["closure", "args"])
def test_quad_hessian_in_captures_args_and_a_limit_against_finite_differences(through):
    def integral(theta):
        if through == "closure":
            return integrate.quad(lambda t: np.exp(theta[0] * t) * np.sin(theta[1] * t),
                                  0.0, theta[2])[0]
        return integrate.quad(lambda t, p, q: np.exp(p * t) * np.sin(q * t), 0.0, theta[2],
                              args=(theta[0], theta[1]))[0]

    theta = np.array([0.3, 1.7, 1.2])
    gradient = cr.grad(integral)
    by_fd = np.array([(gradient(theta + e) - gradient(theta - e)) / 2e-5
                      for e in np.eye(3) * 1e-5])
    np.testing.assert_allclose(cr.hessian(integral)(theta), by_fd, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(gradient)(theta), by_fd, atol=1e-8)


def test_quad_vec_jacobian_in_both_modes_against_finite_differences():
    def integral(theta):
        return integrate.quad_vec(lambda t: np.array([np.sin(theta[0] * t),
                                                      theta[1] * t ** 2]), 0.0, theta[1])[0]

    theta = np.array([1.3, 0.5])
    by_fd = np.array([(integral(theta + e) - integral(theta - e)) / 2e-6
                      for e in np.eye(2) * 1e-6]).T
    np.testing.assert_allclose(cr.jacfwd(integral)(theta), by_fd, atol=1e-8)
    np.testing.assert_allclose(cr.jacobian(integral)(theta), by_fd, atol=1e-8)


def test_quad_forward_mode():
    def integral(c):
        return integrate.quad(lambda t: np.exp(-c * t), 0.0, 1.0)[0]

    # d/dc (1 - exp(-c)) / c
    c = 0.9
    expected = np.exp(-c) / c - (1 - np.exp(-c)) / c ** 2
    _, tangent = cr.jvp(integral, (c,), (1.0,))
    assert abs(tangent - expected) < 1e-9


def test_quad_infinite_limits_get_no_tangent_but_finite_ones_do():
    def integral(a, b):
        return integrate.quad(lambda t: np.exp(-t * t), a, b)[0]

    da, db = cr.grad(integral, argnums=(0, 1))(-np.inf, 0.5)
    assert da == 0.0 and abs(db - np.exp(-0.25)) < 1e-12


def test_quad_vec_gradient_of_a_closure():
    def integral(theta):
        values = integrate.quad_vec(lambda t: np.array([np.sin(theta[0] * t),
                                                        theta[1] * t ** 2]), 0.0, 1.0)[0]
        return values[0] + 3.0 * values[1]

    theta = np.array([1.3, 0.5])
    # d/dθ0 ∫ sin(θ0 t) = ∫ t cos(θ0 t); d/dθ1 3 ∫ θ1 t² = 1
    expected0 = integrate.quad(lambda t: t * np.cos(1.3 * t), 0.0, 1.0)[0]
    np.testing.assert_allclose(cr.grad(integral)(theta), [expected0, 1.0], rtol=1e-7)


@pytest.mark.parametrize("options, word", [({"weight": "cos", "wvar": 2.0}, "weight"),
                                           ({"full_output": 1}, "full_output")])
def test_quad_refuses_options_it_cannot_differentiate(options, word):
    def integral(c):
        return integrate.quad(lambda t: c * t, 0.0, 1.0, **options)[0]

    with pytest.raises(NotImplementedError, match=f"scipy.integrate.quad: {word}="):
        cr.grad(integral)(1.0)


# --- trapezoid, cumulative_trapezoid, simpson through the engine ---------------------------------

def test_trapezoid_gradient_in_y_is_the_trapezoid_weights():
    x = np.array([0.0, 0.5, 1.2, 2.0])
    weights = cr.grad(lambda y: integrate.trapezoid(y, x))(np.ones(4))
    np.testing.assert_allclose(weights, [0.25, 0.6, 0.75, 0.4])


def test_cumulative_trapezoid_gradient_against_finite_differences():
    x, y = grid(6), normal(6)

    def loss(y, x):
        return np.sum(integrate.cumulative_trapezoid(y, x, initial=0) ** 2)

    gy, gx = cr.grad(loss, argnums=(0, 1))(y, x)
    for k in range(6):
        e = np.zeros(6)
        e[k] = 1e-6
        assert abs(gy[k] - (loss(y + e, x) - loss(y - e, x)) / 2e-6) < 1e-6
        assert abs(gx[k] - (loss(y, x + e) - loss(y, x - e)) / 2e-6) < 1e-6


def test_cumulative_trapezoid_refuses_a_nonzero_initial():
    with pytest.raises((NotImplementedError, ValueError), match="initial"):
        cr.grad(lambda y: np.sum(integrate.cumulative_trapezoid(y, initial=1.0)))(np.ones(3))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 9), seed=st.integers(0, 2 ** 16))
def test_simpson_weights_reproduce_scipy(n, seed):
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.uniform(0.1, 1.0, n))
    y = rng.standard_normal(n)
    weights = _simpson_weights(np.diff(x), n)
    assert abs(np.sum(weights * y) - integrate.simpson(y, x=x)) < 1e-12 * (1 + np.sum(abs(y)))


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 8), seed=st.integers(0, 2 ** 16))
def test_simpson_gradient_in_x_against_finite_differences(n, seed):
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.uniform(0.2, 1.0, n))
    y = rng.standard_normal(n)
    gradient = cr.grad(lambda x: integrate.simpson(y, x=x))(x)
    for k in range(n):
        e = np.zeros(n)
        e[k] = 1e-6
        fd = (integrate.simpson(y, x=x + e) - integrate.simpson(y, x=x - e)) / 2e-6
        assert abs(gradient[k] - fd) < 1e-5 * (1 + abs(fd))


def test_simpson_integrates_a_cubic_exactly_and_so_does_its_gradient():
    # Simpson is exact for cubics on evenly spaced odd samples: ∫_0^2 c t³ dt = 4 c
    x = np.linspace(0.0, 2.0, 5)
    assert abs(cr.grad(lambda c: integrate.simpson(c * x ** 3, x=x))(1.7) - 4.0) < 1e-12


def test_quad_over_the_whole_line_against_the_closed_form():
    # ∫ exp(-c t²) dt over R = sqrt(pi / c): d/dc = -sqrt(pi) / 2 c^(-3/2); d²/dc² = 3/4 ...
    def integral(c):
        return integrate.quad(gaussian, -np.inf, np.inf, args=(c,))[0]

    c = 0.8
    assert abs(cr.grad(integral)(c) + np.sqrt(np.pi) / 2 * c ** -1.5) < 1e-8
    assert abs(cr.grad(cr.grad(integral))(c) - 0.75 * np.sqrt(np.pi) * c ** -2.5) < 1e-6


@pytest.mark.skipif("even" not in inspect.signature(integrate.simpson).parameters,
                    reason="SciPy 1.14 removed simpson's even=")
def test_simpson_refuses_the_old_even_methods():
    with pytest.raises(NotImplementedError, match="even='avg'"):
        cr.grad(lambda y: integrate.simpson(y, even="avg"))(np.ones(4))


def test_quad_with_breakpoints_passes_them_to_the_gradient_integrals():
    # ∫_0^3 c |t - 1| dt = 2.5 c, with the kink given as a breakpoint
    def integral(c):
        return integrate.quad(lambda t: c * np.abs(t - 1.0), 0.0, 3.0, points=[1.0])[0]

    assert abs(cr.grad(integral)(0.4) - 2.5) < 1e-10


def test_quad_vec_args_are_constants_and_traced_ones_are_refused_loudly():
    def integral(c):
        return integrate.quad_vec(lambda t, c: c * t, 0.0, 1.0, args=(c,))[0]

    with pytest.raises(cr.TracingError,
                       match="keyword argument args= holds a traced value"):
        cr.grad(integral)(2.0)
    # through a closure instead: d/dc ∫_0^1 c t dt = 1/2
    assert abs(cr.grad(lambda c: integrate.quad_vec(lambda t: c * t, 0.0, 1.0)[0])(2.0)
               - 0.5) < 1e-10


@pytest.mark.skipif(not hasattr(integrate, "cumulative_simpson"),
                    reason="scipy.integrate.cumulative_simpson: SciPy 1.12")
@pytest.mark.parametrize("spacing", ["dx", "x"])
def test_cumulative_simpson(spacing):
    # before: "`sub_integrals[..., :-1:2] = ...`: a traced value was converted to a plain
    # NumPy array" (SciPy fills an array it makes with xp.empty)
    x = grid(9)
    weights = normal(8)  # the integrals from x[0] to each later point

    def loss(y, x):
        integral = integrate.cumulative_simpson(y, dx=0.3) if spacing == "dx" else \
            integrate.cumulative_simpson(y, x=x)
        return np.sum(weights * integral ** 2)

    y = np.sin(x)
    for argnum in (0, 1) if spacing == "x" else (0,):
        def partial(v, argnum=argnum):
            return loss(v, x) if argnum == 0 else loss(y, v)
        point = (y, x)[argnum]
        step = 1e-6
        expected = [(partial(point + step * e) - partial(point - step * e)) / (2 * step)
                    for e in np.eye(point.size)]
        np.testing.assert_allclose(cr.grad(partial)(point), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.skipif(not hasattr(integrate, "cumulative_simpson"),
                    reason="scipy.integrate.cumulative_simpson: SciPy 1.12")
def test_cumulative_simpson_closed_form():
    # Simpson's rule is exact for quadratics: the cumulative integral of c t^2 on an even grid
    # is c t^3 / 3, whose derivative in c is t^3 / 3
    t = np.linspace(0.0, 2.0, 9)
    got = cr.grad(lambda c: np.sum(integrate.cumulative_simpson(c * t ** 2, x=t)))(1.5)
    assert got == pytest.approx(np.sum(t[1:] ** 3 / 3), rel=1e-12)
