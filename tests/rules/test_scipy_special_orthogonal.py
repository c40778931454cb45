"""The rule-testing kit on src/chainrules/rules/scipy/special/orthogonal.py: scipy.special's
``eval_*`` orthogonal polynomials in ``x``, at order 1 and 2 (integer degrees and parameters:
constants), then through the engine with float parameters held constant, against finite
differences and closed forms, and the refused parameters.

Before: "no rule for scipy.special.eval_legendre".

Skipped when SciPy is not installed.
"""

from __future__ import annotations

import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")

import chainrules as cr  # noqa: E402
from chainrules.testing import (case, check_case, test_frule_order2,  # noqa: E402
                                test_rrule_order2)

X = np.array([0.3, -0.45, 0.8])

CASES = [
    case(sp.eval_jacobi, 3, 1, 2, X), case(sp.eval_legendre, 4, X),
    case(sp.eval_legendre, np.array([0, 1, 2]), X), case(sp.eval_sh_legendre, 3, X / 2 + 0.5),
    case(sp.eval_gegenbauer, 3, 2, X), case(sp.eval_chebyt, 5, X), case(sp.eval_chebyu, 4, X),
    case(sp.eval_chebyc, 3, X), case(sp.eval_chebys, 3, X), case(sp.eval_sh_chebyt, 3, X),
    case(sp.eval_sh_chebyu, 3, X), case(sp.eval_hermite, 4, X), case(sp.eval_hermite, 0, X),
    case(sp.eval_hermitenorm, 3, X), case(sp.eval_laguerre, 3, X),
    case(sp.eval_genlaguerre, 3, 2, X),
    case(sp.lpmv, 1, 3, X), case(sp.lpmv, 0, 2, X),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("rule_case", CASES[::2], ids=lambda c: c.id)
def test_rule_at_order_2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args)
    test_frule_order2(rule_case.function, *rule_case.args)


FLOAT_PARAMETERS = {
    "jacobi": lambda x: sp.eval_jacobi(3, 0.3, 0.7, x),
    "jacobi, non-integer degree": lambda x: sp.eval_jacobi(2.5, 0.3, 0.7, x),
    "gegenbauer": lambda x: sp.eval_gegenbauer(4, 0.6, x),
    "genlaguerre": lambda x: sp.eval_genlaguerre(3, 0.5, x),
    "chebyt, non-integer degree": lambda x: sp.eval_chebyt(2.5, x),
    "lpmv, non-integer degree": lambda x: sp.lpmv(2, 2.5, x),
}


@pytest.mark.parametrize("name", FLOAT_PARAMETERS)
def test_in_x_with_float_parameters_held_constant(name):
    f = FLOAT_PARAMETERS[name]

    def loss(x):
        return np.sum(np.sin(f(x)))

    step = 1e-6
    expected = [(loss(X + step * e) - loss(X - step * e)) / (2 * step) for e in np.eye(3)]
    np.testing.assert_allclose(cr.grad(loss)(X), expected, rtol=1e-6, atol=1e-9)
    hessian = cr.hessian(loss)(X)
    gradient = cr.grad(loss)
    expected = [(gradient(X + step * e) - gradient(X - step * e)) / (2 * step) for e in np.eye(3)]
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-7)


def test_closed_forms():
    # P_2 = (3x^2 - 1)/2, T_3 = 4x^3 - 3x, H_3 = 8x^3 - 12x, L_2 = (x^2 - 4x + 2)/2
    x = 0.4
    assert cr.grad(lambda t: sp.eval_legendre(2, t))(x) == pytest.approx(3 * x)
    assert cr.grad(lambda t: sp.eval_chebyt(3, t))(x) == pytest.approx(12 * x ** 2 - 3)
    assert cr.grad(lambda t: sp.eval_hermite(3, t))(x) == pytest.approx(24 * x ** 2 - 12)
    assert cr.grad(lambda t: sp.eval_laguerre(2, t))(x) == pytest.approx(x - 2)
    assert cr.grad(cr.grad(lambda t: sp.eval_hermite(3, t)))(x) == pytest.approx(48 * x)


def test_float_parameters_are_refused_by_name():
    with pytest.raises(NotImplementedError, match="eval_jacobi.*alpha"):
        cr.grad(lambda a: sp.eval_jacobi(2, a, 0.5, 0.3))(0.2)
    with pytest.raises(NotImplementedError, match="eval_legendre.*n"):
        cr.grad(lambda n: sp.eval_legendre(n, 0.3))(2.0)
