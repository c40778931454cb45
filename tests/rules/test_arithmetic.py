"""Rules for the remainder family (chainrules.rules.numpy.remainder): ``np.remainder``/``np.mod``/
``%``, ``np.fmod``, ``np.divmod``/``divmod()``, and ``//`` (non-differentiable), checked by the
kit at order 1 and 2 and, through the engine, against finite differences and closed forms."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules import frule, rrule
from chainrules.testing import case, check_case, test_rrule_order2
from tests.ad.finite_differences import numerical_gradient

from tests.second_order import assert_jvp_of_grad

F32 = np.float32
_rng = np.random.default_rng(20261203)


def away_from_jumps(*shape, scale=5.0, dtype=np.float64):
    """Values whose quotients by the divisors below are not near an integer (no jump)."""
    x = _rng.uniform(-scale, scale, size=shape)
    return (np.round(x) + 0.37).astype(dtype)


B = np.array([1.3, -0.9, 2.1])

CASES = [
    case(np.remainder, away_from_jumps(3), B),
    case(np.remainder, away_from_jumps(2, 3), B),          # broadcast divisor
    case(np.remainder, away_from_jumps(3, dtype=F32), B.astype(F32)),
    case(np.remainder, 7.37, 1.3),
    case(np.mod, away_from_jumps(3), 1.7),
    case(np.fmod, away_from_jumps(3), B),
    case(np.fmod, away_from_jumps(2, 3, dtype=F32), F32(1.7)),
    case(np.divmod, away_from_jumps(3), B),
    case(np.divmod, away_from_jumps(2, 3), 1.7),
    case(np.divmod, away_from_jumps(3, dtype=F32), B.astype(F32)),
    case(np.floor_divide, away_from_jumps(3), B),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("rule_case", [c for c in CASES if c.function is not np.floor_divide],
                         ids=lambda c: c.id)
def test_rule_order2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)


def test_partials_closed_form():
    a, b = np.array([7.5, -7.5, 7.5]), np.array([2.0, 2.0, -2.0])
    for f, quotient in ((np.remainder, np.floor(a / b)), (np.fmod, np.trunc(a / b))):
        _, pullback = rrule(f, a, b)
        _, da, db = pullback(np.ones(3))
        np.testing.assert_array_equal(cr.unthunk(da), np.ones(3))
        np.testing.assert_array_equal(cr.unthunk(db), -quotient)
        _, dy = frule((cr.NoTangent(), np.ones(3), np.ones(3)), f, a, b)
        np.testing.assert_array_equal(dy, 1 - quotient)


def test_divmod_quotient_has_no_tangent():
    a, b = away_from_jumps(3), B
    (q, r), pullback = rrule(np.divmod, a, b)
    assert pullback((np.ones(3), cr.ZeroTangent())) == (cr.NoTangent(), cr.ZeroTangent(),
                                                        cr.ZeroTangent())
    _, dy = frule((cr.NoTangent(), np.ones(3), np.zeros(3)), np.divmod, a, b)
    assert 0 not in dy and 1 in dy


def _operators(x, b):
    return np.sum(x % b + np.mod(2.37, x) + divmod(x, b)[1] + divmod(5.37, x)[1]
                  + (x // b) * 100.0 + np.fmod(x * x, b))


def test_operators_on_traced_values_match_finite_differences():
    x, b = np.array([1.13, 1.61, 2.27, 0.81]), 0.43  # no quotient near an integer
    gradient = cr.grad(_operators)(x, b)
    np.testing.assert_allclose(gradient, numerical_gradient(lambda x: _operators(x, b), x),
                               rtol=1e-6, atol=1e-6)
    divisor_gradient = cr.grad(_operators, argnums=1)(x, b)
    np.testing.assert_allclose(divisor_gradient,
                               numerical_gradient(lambda b: _operators(x, b), b),
                               rtol=1e-6, atol=1e-6)


def test_floor_division_is_non_differentiable_and_divmod_of_numbers_works():
    assert cr.grad(lambda x: x // 0.3 + 0.0 * x)(1.0) == 0.0
    q_and_r = []

    def f(x):
        q, r = divmod(x, 0.3)
        q_and_r.append((cr.primal(q), cr.primal(r)))
        return r * r

    x = 1.0
    gradient = cr.grad(f)(x)
    assert q_and_r[0] == pytest.approx(divmod(x, 0.3))
    assert gradient == pytest.approx(2 * (x % 0.3))


def test_second_order_through_the_remainder():
    assert_jvp_of_grad(lambda x: np.sum((x % 0.7) ** 3 + np.fmod(x, 0.6) ** 2 * x),
                       np.array([1.13, 1.61, 2.27, 0.81]))
