"""The parameter derivatives of src/chainrules/rules/scipy/special/parameters.py: ``gammainc_da``,
``gammaincc_da``, ``betainc_da``, ``betainc_db``, ``zeta_dx`` and the second derivatives
``gammainc_daa``, ``gammaincc_daa``, ``betainc_daa``, ``betainc_dab``, ``betainc_dbb``,
``zeta_dxx``.

mpmath is not a dependency, so the references are:
- closed forms where the parameter derivative has one: P(1, x) = 1 - e^-x, I_x(a, 1) = x^a,
  I_x(1, b) = 1 - (1-x)^b, zeta'(2), zeta'(3), the Laurent series of zeta at 1 (Stieltjes
  constants), zeta(s, 1/2) = (2^s - 1) zeta(s);
- recurrences in the parameter that link different branches of the method (series and
  continued fraction, direct and reflected), on random points (hypothesis);
- central differences of SciPy's own functions, extrapolated twice (Richardson: error
  O(h^6)), in float64. With steps h ~ 1e-2 and values of order 1 the truncation error is
  below 1e-12 and the rounding error about 1e-16 / h ~ 1e-14, so the points are chosen
  where the derivative is not tiny against the function's value (away from the far tails)
  and the tolerance is 1e-10 relative (1e-9 for parameters in the thousands, where the
  method loses ~1e-16 a log a).
The second derivatives are checked against the same kinds of references (closed forms,
twice-differentiated recurrences, and differences of the first derivatives, which are accurate
to ~1e-13, so that their differences are accurate to ~1e-10 of the first derivative's scale).
The kit checks every rule: at order 1 in all arguments; at order 2 the first derivatives in
``x`` only (parameters constant: an integer), since the third derivative in the parameters is
refused by name.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sp = pytest.importorskip("scipy.special")

from chainrules import grad  # noqa: E402
from chainrules.rules.scipy.special import parameters as params  # noqa: E402
from chainrules.rules.scipy.special.parameters import (betainc_da, betainc_dab,  # noqa: E402
                                                   betainc_daa, betainc_db, betainc_dbb,
                                                   gammainc_da, gammainc_daa, gammaincc_da,
                                                   gammaincc_daa, riemann_zeta_dx,
                                                   riemann_zeta_dxx, zeta_dx, zeta_dxx)
from chainrules.testing import case, check_case, test_frule_order2, test_rrule_order2  # noqa: E402

EULER = np.euler_gamma


def richardson(f, t: float, h: float) -> np.ndarray:
    """df/dt at t: central differences at h, h/2, h/4, extrapolated twice (error O(h^6))."""
    def central(step):
        return (f(t + step) - f(t - step)) / (2 * step)

    d1, d2, d3 = central(h), central(h / 2), central(h / 4)
    r1, r2 = (4 * d2 - d1) / 3, (4 * d3 - d2) / 3
    return (16 * r2 - r1) / 15


def assert_close(got, expected, rtol):
    got, expected = np.asarray(got), np.asarray(expected)
    error = np.abs(got - expected) / np.abs(expected)
    assert np.all(error <= rtol), (got, expected, error)


# --- kit cases: the derivatives in x (closed forms), parameters held constant -------------------

X = np.array([0.3, 1.2, 4.0])
UNIT = np.array([0.2, 0.5, 0.8])
Q = np.array([0.4, 1.3, 2.1])

CASES = []
for _f in (gammainc_da, gammaincc_da):
    CASES += [case(_f, 2, 1.5), case(_f, 3, X), case(_f, np.array([1, 3, 7]), X),
              case(_f, 2, X.astype(np.float32)), case(_f, np.array([[1], [4]]), X[:2])]
for _f in (gammainc_daa, gammaincc_daa):
    CASES += [case(_f, 3, X), case(_f, 2, X.astype(np.float32)),
              case(_f, np.array([[1], [4]]), X[:2])]
for _f in (betainc_da, betainc_db):
    CASES += [case(_f, 2, 3, 0.4), case(_f, 2, 3, UNIT), case(_f, np.array([1, 2, 5]), 2, UNIT),
              case(_f, 3, 1, UNIT.astype(np.float32)), case(_f, 2, np.array([[1], [4]]), UNIT)]
for _f in (betainc_daa, betainc_dab, betainc_dbb):
    CASES += [case(_f, 2, 3, UNIT), case(_f, 3, 1, UNIT.astype(np.float32)),
              case(_f, 2, np.array([[1], [4]]), UNIT[:2])]
for _f in (zeta_dx, zeta_dxx):
    CASES += [case(_f, 3, 1.7), case(_f, 2, Q), case(_f, 4, Q.astype(np.float32)),
              case(_f, np.array([[2], [5]]), Q)]
# the Riemann function on both sides of its pole and of the reflection at -1/2
RIEMANN = np.array([-7.3, -2.5, -0.6, -0.4, 0.6, 2.2])
# (its derivative, riemann_zeta_dxx, refuses the next one: the third derivative of zeta)
CASES += [case(riemann_zeta_dx, RIEMANN, covers=riemann_zeta_dxx), case(riemann_zeta_dx, -3.1),
          case(riemann_zeta_dx, RIEMANN.astype(np.float32))]
# (few: each call runs a series or continued fraction per element, and the kit makes many)
CASES += [case(gammainc_da, np.array([0.6, 3.5]), np.array([0.3, 4.0])),
          case(gammaincc_da, 2.5, 1.2),
          case(betainc_da, 0.7, 2.5, 0.3), case(betainc_db, 1.5, 0.8, 0.6),
          case(zeta_dx, np.array([1.5, 4.0]), np.array([0.4, 2.1]))]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule(rule_case):
    check_case(rule_case)


SECOND_ORDER = [case(gammainc_da, 3, X), case(gammaincc_da, 2, X), case(gammainc_daa, 2, X),
                case(betainc_da, 2, 3, UNIT), case(betainc_db, 2, 3, UNIT),
                case(betainc_dab, 2, 3, UNIT), case(zeta_dx, 3, Q), case(zeta_dxx, 3, Q)]


@pytest.mark.parametrize("rule_case", SECOND_ORDER, ids=lambda c: c.id)
def test_second_order_in_x(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args)
    test_frule_order2(rule_case.function, *rule_case.args)


# --- closed forms ---------------------------------------------------------------------------------

def test_gammainc_da_at_a_1():
    # P(a, x) = int_0^x t^(a-1) e^-t dt / Gamma(a): at a = 1, d/da = int_0^x log t e^-t dt
    # + gamma (1 - e^-x) = -e^-x (log x + gamma) - E1(x)
    # (for small x the reference cancels: log x + gamma ~ -E1(x); at x = 0.01, 1e-14 relative)
    x = np.array([1e-2, 0.1, 0.5, 1.0, 2.0, 7.5, 30.0])   # both branches (series, fraction)
    expected = -np.exp(-x) * (np.log(x) + EULER) - sp.exp1(x)
    assert_close(gammainc_da(1.0, x), expected, 1e-13)
    assert_close(gammaincc_da(1.0, x), -expected, 1e-13)


def test_betainc_closed_forms():
    x = np.array([1e-3, 0.1, 0.4, 0.5, 0.7, 0.99])          # both branches (direct, reflected)
    for a in (0.3, 1.0, 2.5, 40.0):
        assert_close(betainc_da(a, 1.0, x), x ** a * np.log(x), 1e-12)      # I_x(a, 1) = x^a
    for b in (0.3, 1.0, 2.5, 40.0):
        x_ = x[x < 0.9] if b == 40.0 else x                                # (1-x)^40 underflows
        assert_close(betainc_db(1.0, b, x_), -(1 - x_) ** b * np.log1p(-x_), 1e-12)
    for a in (0.3, 1.0, 2.5, 40.0):
        assert_close(betainc_daa(a, 1.0, x), x ** a * np.log(x) ** 2, 1e-12)
    for b in (0.3, 1.0, 2.5):
        assert_close(betainc_dbb(1.0, b, x), -(1 - x) ** b * np.log1p(-x) ** 2, 1e-12)


def test_zeta_dx_known_values():
    assert abs(zeta_dx(2.0) - -0.9375482543158437) <= 1e-15 * 0.94
    assert abs(zeta_dx(3.0, 1.0) - -0.19812624288563685) <= 1e-15 * 0.2
    assert abs(zeta_dxx(2.0) - 1.98928023429890) <= 1e-14 * 2
    # zeta(s, 1/2) = (2^s - 1) zeta(s): d/ds = 2^s log 2 zeta(s) + (2^s - 1) zeta'(s)
    s = np.array([1.3, 2.0, 3.7, 12.0])
    expected = 2 ** s * np.log(2) * sp.zeta(s) + (2 ** s - 1) * zeta_dx(s, 1.0)
    assert_close(zeta_dx(s, 0.5), expected, 1e-13)


def test_zeta_dx_near_the_pole():
    # zeta(s) = 1/(s-1) + sum_n (-1)^n gamma_n (s-1)^n / n!, the gamma_n Stieltjes constants:
    # zeta'(s) = -1/(s-1)^2 + sum_(n>=1) (-1)^n gamma_n (s-1)^(n-1) / (n-1)!
    stieltjes = [-0.0728158454836767249, -0.00969036319287231848, 0.00205383442030334587,
                 0.00232537006546730006, 0.000793323817301062702, -0.000238769345430199610,
                 -0.000527289567057751046]
    for e in (0.1, 0.01, 0.3):
        series = -1 / e ** 2 + sum((-1) ** n * g * e ** (n - 1) / np.prod(np.arange(1, n))
                                   for n, g in enumerate(stieltjes, start=1))
        # the first term left out, gamma_8 e^7 / 7!, is below 1e-7 e^7
        assert abs(zeta_dx(1 + e) - series) <= 1e-13 * abs(series) + 1e-7 * e ** 7
        # zeta''(s) = 2/(s-1)^3 + sum_(n>=2) (-1)^n gamma_n (s-1)^(n-2) / (n-2)!
        series = 2 / e ** 3 + sum((-1) ** n * g * e ** (n - 2) / np.prod(np.arange(1, n - 1))
                                  for n, g in enumerate(stieltjes, start=1) if n >= 2)
        assert abs(zeta_dxx(1 + e) - series) <= 1e-13 * abs(series) + 1e-6 * e ** 6


# --- recurrences across the branches of the method ------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(a=st.floats(0.05, 60.0), x=st.floats(0.01, 120.0))
def test_gammainc_da_recurrence(a, x):
    # P(a+1, x) = P(a, x) - x^a e^-x / Gamma(a+1): differentiated in a
    term = np.exp(a * np.log(x) - x - sp.gammaln(a + 1))
    lhs = gammainc_da(a + 1, x)
    rhs = gammainc_da(a, x) - term * (np.log(x) - sp.digamma(a + 1))
    scale = abs(gammainc_da(a, x)) + term * abs(np.log(x) - sp.digamma(a + 1))
    assert abs(lhs - rhs) <= 1e-12 * scale + 1e-300
    # twice: T'' = T ((log x - psi(a+1))^2 - psi'(a+1))
    curvature = (np.log(x) - sp.digamma(a + 1)) ** 2 - sp.polygamma(1, a + 1)
    lhs, rhs = gammainc_daa(a + 1, x), gammainc_daa(a, x) - term * curvature
    scale = abs(gammainc_daa(a, x)) + term * abs(curvature) + abs(gammainc_da(a, x))
    assert abs(lhs - rhs) <= 1e-11 * scale + 1e-300


@settings(max_examples=30, deadline=None)
@given(a=st.floats(0.05, 40.0), b=st.floats(0.05, 40.0), x=st.floats(0.001, 0.999))
def test_betainc_recurrence(a, b, x):
    # I_x(a+1, b) = I_x(a, b) - T, T = x^a (1-x)^b / (a B(a, b)): differentiated in a and b
    term = np.exp(a * np.log(x) + b * np.log1p(-x) - np.log(a) - sp.betaln(a, b))
    log_da = np.log(x) - 1 / a - sp.digamma(a) + sp.digamma(a + b)
    log_db = np.log1p(-x) - sp.digamma(b) + sp.digamma(a + b)
    for derivative, log_term in ((betainc_da, log_da), (betainc_db, log_db)):
        lhs = derivative(a + 1, b, x)
        rhs = derivative(a, b, x) - term * log_term
        scale = abs(derivative(a, b, x)) + term * abs(log_term)
        assert abs(lhs - rhs) <= 1e-11 * scale + 1e-300
    # twice: T_aa = T (La^2 + 1/a^2 - psi'(a) + psi'(a+b)), T_ab = T (La Lb + psi'(a+b)),
    # T_bb = T (Lb^2 - psi'(b) + psi'(a+b)), La and Lb the logarithmic derivatives above
    trigamma = sp.polygamma(1, a + b)
    for derivative, curvature in (
            (betainc_daa, log_da ** 2 + 1 / a ** 2 - sp.polygamma(1, a) + trigamma),
            (betainc_dab, log_da * log_db + trigamma),
            (betainc_dbb, log_db ** 2 - sp.polygamma(1, b) + trigamma)):
        lhs = derivative(a + 1, b, x)
        rhs = derivative(a, b, x) - term * curvature
        scale = (abs(derivative(a, b, x)) + term * abs(curvature) + abs(betainc_da(a, b, x))
                 + abs(betainc_db(a, b, x)))
        assert abs(lhs - rhs) <= 1e-10 * scale + 1e-300


@settings(max_examples=60, deadline=None)
@given(s=st.floats(1.05, 30.0), q=st.floats(0.05, 50.0))
def test_zeta_dx_recurrence(s, q):
    # zeta(s, q) = q^-s + zeta(s, q+1): differentiated in s
    lhs, rhs = zeta_dx(s, q), -np.log(q) * q ** -s + zeta_dx(s, q + 1)
    assert abs(lhs - rhs) <= 1e-13 * (abs(zeta_dx(s, q + 1)) + abs(np.log(q) * q ** -s))
    lhs, rhs = zeta_dxx(s, q), np.log(q) ** 2 * q ** -s + zeta_dxx(s, q + 1)
    assert abs(lhs - rhs) <= 1e-13 * (abs(zeta_dxx(s, q + 1)) + np.log(q) ** 2 * q ** -s)


# --- against finite differences of SciPy's functions ---------------------------------------------

@pytest.mark.parametrize("a", [0.05, 0.5, 1.3, 4.0, 25.0, 150.0])
def test_gammainc_da_against_finite_differences(a):
    around = a + np.sqrt(a) * np.array([-1.5, -0.7, 0.0, 0.7, 1.5])   # where P moves
    x = np.unique(np.concatenate([[0.05, 0.5, 2.0], np.maximum(around, 0.01)]))
    reference = richardson(lambda t: sp.gammainc(t, x), a, min(1e-2, a / 10))
    # away from the tails, where P is 0 or 1 to 1e-3: the reference's rounding error, about
    # 1e-16 / h ~ 1e-14, is then below 1e-11 relative
    significant = np.abs(reference) > 1e-3
    assert significant.sum() >= 4
    assert_close(gammainc_da(a, x)[significant], reference[significant], 1e-10)
    assert_close(gammaincc_da(a, x)[significant], -reference[significant], 1e-10)


@pytest.mark.parametrize("a, b", [(0.3, 0.5), (2.0, 3.0), (1.3, 7.0), (10.0, 2.5),
                                  (0.8, 30.0), (60.0, 40.0)])
def test_betainc_derivatives_against_finite_differences(a, b):
    mean, spread = a / (a + b), np.sqrt(a * b / (a + b) ** 2 / (a + b + 1))
    x = np.clip(mean + spread * np.array([-1.5, -0.7, 0.0, 0.7, 1.5]), 0.02, 0.98)
    reference_a = richardson(lambda t: sp.betainc(t, b, x), a, min(1e-2, a / 10))
    reference_b = richardson(lambda t: sp.betainc(a, t, x), b, min(1e-2, b / 10))
    for got, reference in ((betainc_da(a, b, x), reference_a),
                           (betainc_db(a, b, x), reference_b)):
        significant = np.abs(reference) > 1e-3   # (as for gammainc)
        assert significant.sum() >= 3
        assert_close(got[significant], reference[significant], 1e-10)


@pytest.mark.parametrize("q", [0.3, 1.0, 2.5, 50.0])
def test_zeta_dx_against_finite_differences(q):
    s = np.array([1.5, 2.0, 3.5, 7.0])
    reference = np.array([richardson(lambda t: sp.zeta(t, q), si, 1e-2) for si in s])
    assert_close(zeta_dx(s, q), reference, 1e-10)


@pytest.mark.parametrize("a", [0.05, 0.5, 1.3, 4.0, 25.0, 150.0])
def test_gammainc_daa_against_differences_of_gammainc_da(a):
    # the reference's error is about 1e-13 |dP/da| / h: relative to the scale of dP/da
    x = np.maximum(a + np.sqrt(a) * np.array([-1.5, -0.7, 0.0, 0.7, 1.5]), 0.01)
    h = min(1e-2, a / 10) * max(1.0, np.sqrt(a) / 10)
    reference = richardson(lambda t: gammainc_da(t, x), a, h)
    scale = np.max(np.abs(gammainc_da(a, x)))
    assert np.all(np.abs(gammainc_daa(a, x) - reference) <= 1e-10 * scale / min(h, 1.0))
    assert np.array_equal(gammaincc_daa(a, x), -gammainc_daa(a, x))


@pytest.mark.parametrize("a, b", [(0.3, 0.5), (2.0, 3.0), (1.3, 7.0), (10.0, 2.5),
                                  (60.0, 40.0)])
def test_betainc_second_derivatives_against_differences(a, b):
    mean, spread = a / (a + b), np.sqrt(a * b / (a + b) ** 2 / (a + b + 1))
    x = np.clip(mean + spread * np.array([-1.5, -0.7, 0.0, 0.7, 1.5]), 0.02, 0.98)
    ha, hb = min(1e-2, a / 10), min(1e-2, b / 10)
    scale = np.max(np.abs([betainc_da(a, b, x), betainc_db(a, b, x)]))
    for got, reference, h in (
            (betainc_daa(a, b, x), richardson(lambda t: betainc_da(t, b, x), a, ha), ha),
            (betainc_dab(a, b, x), richardson(lambda t: betainc_db(t, b, x), a, ha), ha),
            (betainc_dab(a, b, x), richardson(lambda t: betainc_da(a, t, x), b, hb), hb),
            (betainc_dbb(a, b, x), richardson(lambda t: betainc_db(a, t, x), b, hb), hb)):
        assert np.all(np.abs(got - reference) <= 1e-10 * scale / h)


@pytest.mark.parametrize("q", [0.3, 1.0, 2.5, 50.0])
def test_zeta_dxx_against_differences_of_zeta_dx(q):
    s = np.array([1.5, 2.0, 3.5, 7.0])
    reference = np.array([richardson(lambda t: zeta_dx(t, q), si, 1e-2) for si in s])
    assert_close(zeta_dxx(s, q), reference, 1e-10)


@pytest.mark.parametrize("a", [1e3, 1e4])
def test_large_parameters(a):
    # near x = a (the terms needed grow like sqrt(a)); the exponent of the prefactor loses
    # about 1e-16 a log a
    x = a * np.array([0.97, 1.0, 1.03])
    h = np.sqrt(a) / 100
    reference = richardson(lambda t: sp.gammainc(t, x), a, h)
    assert_close(gammainc_da(a, x), reference, 1e-9)
    b = a / 2
    x = np.array([0.66, 2 / 3, 0.67])
    # (the reference is as good as SciPy's betainc: SciPy 1.11's, Cephes, makes its differences
    # good to 5e-9 here; Boost's, from SciPy 1.12, to 1e-10)
    assert_close(betainc_da(a, b, x), richardson(lambda t: sp.betainc(t, b, x), a, h), 2e-8)
    assert_close(betainc_db(a, b, x), richardson(lambda t: sp.betainc(a, t, x), b, h), 2e-8)


# --- through the engine: sp.gammainc etc. differentiated in their parameters ----------------------

def test_mixed_second_derivative_through_the_engine():
    # d/dx dP/da against a mixed central difference of SciPy's gammainc (error ~ 1e-16/h^2)
    a, x = np.array([0.7, 2.5, 5.0]), np.array([0.5, 3.0, 4.0])
    mixed = grad(lambda v: np.sum(grad(lambda u: np.sum(sp.gammainc(u, v)))(a)))(x)
    h = 1e-4
    expected = (sp.gammainc(a + h, x + h) - sp.gammainc(a + h, x - h)
                - sp.gammainc(a - h, x + h) + sp.gammainc(a - h, x - h)) / (4 * h * h)
    assert_close(mixed, expected, 1e-6)
    s, q = 3.0, np.array([0.8, 2.0])
    mixed = grad(lambda v: np.sum(grad(lambda u: np.sum(sp.zeta(u, v)))(s)))(q)
    expected = (sp.zeta(s + h, q + h) - sp.zeta(s + h, q - h) - sp.zeta(s - h, q + h)
                + sp.zeta(s - h, q - h)) / (4 * h * h)
    assert_close(mixed, expected, 1e-6)


def test_betainc_gradient_in_all_arguments():
    a, b, x = 1.7, 3.2, 0.35
    got = grad(lambda p: sp.betainc(p[0], p[1], p[2]))(np.array([a, b, x]))
    expected = [richardson(lambda t: sp.betainc(t, b, x), a, 1e-2),
                richardson(lambda t: sp.betainc(a, t, x), b, 1e-2),
                richardson(lambda t: sp.betainc(a, b, t), x, 1e-3)]
    assert_close(got, expected, 1e-10)


# --- values, dtypes and shapes --------------------------------------------------------------------

def test_edges_and_domain():
    assert gammainc_da(2.0, 0.0) == 0 and gammainc_da(2.0, np.inf) == 0
    assert betainc_da(2.0, 3.0, 0.0) == 0 and betainc_db(2.0, 3.0, 1.0) == 0
    for value in (gammainc_da(-1.0, 2.0), gammainc_da(0.0, 2.0), gammainc_da(2.0, -1.0),
                  gammainc_da(np.nan, 1.0), betainc_da(2.0, 3.0, 1.5),
                  betainc_db(2.0, -3.0, 0.5), zeta_dx(0.5, 1.0), zeta_dx(2.0, -0.5),
                  zeta_dx(np.nan, 1.0)):
        assert np.isnan(value)


def test_dtypes_and_shapes():
    x32 = np.array([0.5, 2.0], np.float32)
    assert gammainc_da(np.float32(1.5), x32).dtype == np.float32
    assert gammainc_da(2, x32).dtype == np.float32                 # a Python int is weak
    assert betainc_db(2, 3, np.array([0.2, 0.4], np.float32)).dtype == np.float32
    assert zeta_dx(np.float32(3.0), np.float32(2.0)).dtype == np.float32
    assert type(gammainc_da(2.0, 1.0)) is np.float64                # numbers give a scalar
    assert gammainc_da(2, 3).dtype == np.float64                    # integers give float64
    assert gammainc_da(np.array([[1.0], [2.0], [3.0]]), [0.5, 1.5]).shape == (3, 2)
    assert betainc_da(np.ones((2, 1, 1)), np.ones(3)[:, None], UNIT).shape == (2, 3, 3)
    assert zeta_dx(np.array(2.0), np.array([[1.0, 2.0]])).shape == (1, 2)
    with pytest.raises(TypeError, match="real numbers"):
        gammainc_da(1.0 + 1j, 2.0)
    # float32 values: the float64 result, rounded
    assert gammainc_da(np.float32(1.5), x32)[1] == np.float32(gammainc_da(1.5, 2.0))


def test_elementwise_results_do_not_depend_on_the_other_elements():
    # elements leave the iteration as they converge: a slow one (large a near x = a) does
    # not change the others
    a = np.array([0.5, 3000.0, 2.0, 7.0])
    x = np.array([0.3, 3000.0, 9.0, 6.5])
    alone = np.array([gammainc_da(ai, xi) for ai, xi in zip(a, x)])
    assert np.array_equal(gammainc_da(a, x), alone)


def test_unconverged_elements_are_nan(monkeypatch):
    monkeypatch.setattr(params, "_MAX_TERMS", 2)
    assert np.isnan(gammainc_da(5.0, 4.0)) and np.isnan(gammainc_da(2.0, 6.0))
    assert np.isnan(betainc_da(2.0, 3.0, 0.3))


def test_the_riemann_zeta_functions_derivative_below_its_pole():
    # zeta(x) is defined for every x but 1 (zeta(x, q) only above 1): its derivative was NaN
    # below 1. Known values: zeta'(0) = -log(2 pi) / 2, zeta'(-1) = 1/12 - log A (Glaisher's
    # constant A), zeta'(-2) = -zeta(3) / (4 pi^2); elsewhere differences of SciPy's zeta.
    glaisher = 1.2824271291006226
    assert_close(riemann_zeta_dx(np.array([0.0, -1.0, -2.0])),
                 [-np.log(2 * np.pi) / 2, 1 / 12 - np.log(glaisher),
                  -sp.zeta(3.0) / (4 * np.pi ** 2)], 1e-12)
    x = np.array([-25.5, -9.7, -4.2, -2.0, -0.501, -0.499, 0.2, 0.9, 1.1, 3.5])
    differences = np.array([richardson(sp.zeta, t, 1e-3 * max(1.0, abs(t))) for t in x])
    assert_close(riemann_zeta_dx(x), differences, 1e-9)
    assert_close(riemann_zeta_dxx(x), [richardson(riemann_zeta_dx, t, 1e-3) for t in x], 1e-7)
    assert np.isnan(riemann_zeta_dx(1.0))
    for function in (sp.zeta, sp.zetac):  # the rules of zeta(x) and zetac(x) use it
        assert_close(grad(lambda x: np.sum(function(x)))(x), riemann_zeta_dx(x), 1e-15)
