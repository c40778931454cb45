"""Rules for polynomials (chainrules.rules.numpy.polynomial): polyval and polyfit through the kit
(order 1 and 2), forward over reverse, and numpy.polynomial evaluation (traced through) in x
and in the coefficients against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import case, check_case, fd_jvp, fd_vjp, test_rrule_order2
from chainrules import NoTangent
from tests.numpy_features import running
from tests.rules.second_order import assert_jvp_of_grad

_rng = np.random.default_rng(20240615)
F32, C128 = np.float32, np.complex128
P = np.polynomial


def normal(*shape, dtype=np.float64):
    x = _rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * _rng.standard_normal(shape)
    return x.astype(dtype)


X6 = np.sort(_rng.uniform(-2, 2, 6))
WEIGHTS = _rng.uniform(0.5, 2.0, 6)

CASES = [
    case(np.polyval, normal(4), normal(5)),
    case(np.polyval, normal(3, dtype=C128), normal(2, 2, dtype=C128)),
    case(np.polyval, normal(3), 0.7),
    case(np.polyval, normal(1), normal(3)),
    case(np.polyval, normal(3, dtype=F32), normal(4, dtype=F32)),
    case(np.polyfit, X6, normal(6), 2),
    case(np.polyfit, X6, normal(6, 2), 3),
    case(np.polyfit, X6, normal(6), 1, None, False, WEIGHTS),
    case(np.polyfit, X6, normal(6, 2), 2, w=WEIGHTS),
    case(np.polyfit, X6.astype(F32), normal(6, dtype=F32), 2, rtol=1e-2, atol=1e-2),
    case(np.polyfit, X6, normal(6, dtype=C128), 2),
    case(np.common_type, normal(3), normal(2, dtype=F32), non_differentiable=True),
    case(np.roots, np.poly([1.0, -2.0, 3.5])),  # real, simple roots: a real output
    case(np.roots, np.array([1.0, 0.4, 2.0, -1.0])),  # a complex pair and a real root
    case(np.roots, np.array([1.0 + 0.5j, -2.0, 0.3j])),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule(rule_case):
    check_case(rule_case)


ORDER2 = [c for c in running(CASES)
          if c.function is not np.common_type and c.args[0].dtype != F32]


@pytest.mark.parametrize("rule_case", ORDER2, ids=lambda c: c.id)
def test_rule_at_order_2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)


SECOND_ORDER = {
    "polyval in x": (lambda x: np.sum(np.polyval([1.0, -2.0, 0.5, 3.0], x) ** 2), normal(4)),
    "polyval in p": (lambda p: np.sum(np.polyval(p * p, X6)), normal(3)),
    "polyfit in y": (lambda y: np.sum(np.polyfit(X6, y * y, 2) ** 2), normal(6)),
    "polyfit in x": (lambda x: np.sum(np.polyfit(x, np.sin(X6), 2) ** 2), X6),
    "polyfit in w": (lambda w: np.sum(np.polyfit(X6, np.sin(X6), 1, w=w * w) ** 2), WEIGHTS),
}


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_forward_over_reverse(name):
    f, x = SECOND_ORDER[name]
    assert_jvp_of_grad(f, x, rtol=1e-4, atol=1e-6)


def test_polyfit_options_refused():
    with pytest.raises(NotImplementedError, match="full=True"):
        cr.grad(lambda y: np.sum(np.polyfit(X6, y, 2, full=True)[0]))(normal(6))
    with pytest.raises(NotImplementedError, match="cov=True"):
        cr.grad(lambda y: np.sum(np.polyfit(X6, y, 2, cov=True)[0]))(normal(6))


def test_polyfit_of_exact_data_moves_with_it():
    # y = 1 + 2x exactly: shifting y by t shifts the constant coefficient by t
    x = np.array([0.0, 1.0, 2.0, 3.0])
    np.testing.assert_allclose(cr.grad(lambda y: np.polyfit(x, y, 1)[1])(1 + 2 * x),
                               [0.7, 0.4, 0.1, -0.2])


# --- numpy.polynomial: traced through (no rules needed), in x and in the coefficients ------------

EVALUATIONS = [
    ("polyval", lambda x, c: P.polynomial.polyval(x, c)),
    ("chebval", lambda x, c: P.chebyshev.chebval(x, c)),
    ("legval", lambda x, c: P.legendre.legval(x, c)),
    ("hermval", lambda x, c: P.hermite.hermval(x, c)),
    ("hermeval", lambda x, c: P.hermite_e.hermeval(x, c)),
    ("lagval", lambda x, c: P.laguerre.lagval(x, c)),
    ("Polynomial", lambda x, c: P.Polynomial(c)(x)),
    ("Polynomial with domain", lambda x, c: P.Polynomial(c, domain=[-1.0, 3.0])(x)),
    ("Chebyshev", lambda x, c: P.Chebyshev(c)(x)),
    ("Legendre", lambda x, c: P.Legendre(c)(x)),
]


@pytest.mark.parametrize("name, evaluate", EVALUATIONS, ids=[n for n, _ in EVALUATIONS])
def test_numpy_polynomial_evaluation(name, evaluate):
    x, c, dy = normal(4), normal(3), normal(4)

    def of_x(x, c=c, evaluate=evaluate):
        return evaluate(x, c)

    def of_c(c, x=x, evaluate=evaluate):
        return evaluate(x, c)

    np.testing.assert_allclose(cr.vjp(of_x, x)[1](dy)[0], fd_vjp(of_x, dy, x)[1], rtol=1e-6)
    np.testing.assert_allclose(cr.vjp(of_c, c)[1](dy)[0], fd_vjp(of_c, dy, c)[1], rtol=1e-6)
    v = normal(3)
    np.testing.assert_allclose(cr.jvp(of_c, (c,), (v,))[1],
                               fd_jvp(of_c, (NoTangent(), v), c), rtol=1e-6)
    assert_jvp_of_grad(lambda c, x=x, dy=dy, evaluate=evaluate:
                       np.sum(dy * evaluate(x, c) ** 2), c)
