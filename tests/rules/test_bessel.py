"""Rules of chainrules.rules.numpy.bessel: np.i0 (its derivative I1 by the trapezoid rule on
its integral) and np.kaiser in beta, through the kit at order 1 and 2, and I1 against its
power series and, where installed, SciPy's."""

from __future__ import annotations

import math

import numpy as np
import pytest

import chainrules as cr
from chainrules.rules.numpy.bessel import bessel_i1
from chainrules.testing import case, check_case, test_rrule_order2

X = np.array([-4.0, -0.7, 0.3, 1.2, 6.5])

CASES = [
    case(np.i0, X),
    case(np.i0, X.reshape(5, 1) * np.array([1.0, 0.5])),
    case(np.i0, X.astype(np.float32)),
    case(np.i0, 2.5),
    case(np.kaiser, 7, 3.0),
    case(np.kaiser, 6, 0.4),
    case(np.kaiser, 1, 2.0),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule_at_order_2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)


def _series(x: float) -> float:
    """I1(x) = sum_k (x/2)^(2k+1) / (k! (k+1)!), summed until the terms stop counting."""
    term, total, k = x / 2, 0.0, 0
    while abs(term) > 1e-18 * abs(total) or k < 3:
        total += term
        k += 1
        term *= (x / 2) ** 2 / (k * (k + 1))
    return total


@pytest.mark.parametrize("x", [-35.0, -3.0, -1e-9, 0.0, 1e-6, 0.5, 2.0, 9.0, 40.0])
def test_i1_matches_its_power_series(x):
    expected = _series(x)
    assert float(bessel_i1(x)) == pytest.approx(expected, rel=1e-13, abs=1e-300)


def test_i1_matches_scipy_where_installed():
    special = pytest.importorskip("scipy.special")
    x = np.concatenate([np.linspace(-709.5, 709.5, 2001), [1e-12, -1e-8, 1e-300]])
    with np.errstate(all="raise"):  # no overflow or underflow of our own
        values = bessel_i1(x)
    np.testing.assert_allclose(values, special.i1(x), rtol=1e-13)


def test_i1_of_many_values_in_blocks():
    x = np.linspace(-20, 20, 10_001).reshape(73, 137)  # more than one block of 4096
    np.testing.assert_allclose(bessel_i1(x).ravel(), [_series(v) for v in x.ravel()],
                               rtol=1e-13)


def test_kaiser_gradient_in_beta_through_the_engine():
    """d/dbeta sum(w * kaiser(M, beta)) against central differences, and hvp."""
    w = np.arange(6.0)

    def loss(beta):
        return np.sum(w * np.kaiser(6, beta))

    step = 1e-6
    assert cr.grad(loss)(3.0) == pytest.approx(
        (loss(3.0 + step) - loss(3.0 - step)) / (2 * step), rel=1e-8)
    slope = cr.grad(loss)
    assert cr.hvp(loss, 3.0, 1.0) == pytest.approx(
        (slope(3.0 + 1e-5) - slope(3.0 - 1e-5)) / 2e-5, rel=1e-6)
    assert math.isfinite(cr.grad(loss)(0.0))
