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
    # coefficient arithmetic (without leading zeros: np.polymul drops them, a change of shape)
    case(np.polyadd, normal(4), normal(2)),
    case(np.polyadd, normal(2, dtype=F32), normal(5, dtype=F32)),
    case(np.polyadd, normal(3, dtype=C128), 0.5),
    case(np.polysub, normal(2), normal(4)),
    case(np.polysub, normal(3, dtype=C128), normal(3)),
    case(np.polymul, normal(4), normal(2)),
    case(np.polymul, normal(3, dtype=C128), normal(2, dtype=C128)),
    case(np.polymul, normal(3, dtype=F32), normal(3, dtype=F32)),
    case(np.polyder, normal(5)),
    case(np.polyder, normal(5), 2),
    case(np.polyder, normal(3), 4),  # more derivatives than the degree: empty
    case(np.polyder, normal(4, dtype=C128), 1),
    case(np.polyint, normal(4)),
    case(np.polyint, normal(4, dtype=F32), 2),
    case(np.polyint, normal(3), 3, normal(3)),
    case(np.polyint, normal(3, dtype=C128), 2, 0.7),  # one constant for both integrations
    case(np.polydiv, normal(5), normal(3)),
    case(np.polydiv, normal(3), normal(3)),
    case(np.polydiv, normal(2), normal(4)),  # the dividend is the shorter: q = 0, r = u
    case(np.polydiv, normal(5, dtype=C128), normal(2, dtype=C128)),
    case(np.poly, normal(3)),
    case(np.poly, normal(1)),
    case(np.poly, normal(3, dtype=C128)),
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


def test_polymul_leading_zeros_get_no_cotangent():
    """np.polymul drops leading zero coefficients (np.poly1d): the product has no place for
    them, so their cotangent is zero; the others' is the closed form 2 conj(b) * y."""
    a, b = np.array([0.0, 1.5, 2.0]), np.array([1.0, -0.5, 3.0])
    gradient = cr.grad(lambda a: np.sum(np.polymul(a, b) ** 2))(a)
    y = np.convolve(a[1:], b)
    expected = np.concatenate([[0.0], np.correlate(2 * y, b, "valid")])
    np.testing.assert_allclose(gradient, expected)
    assert np.polymul(a, b).shape == (4,)


def test_poly_of_conjugate_pairs_is_real_and_differentiable():
    """np.poly returns a real array for roots in conjugate pairs; the gradient of a real
    function of it, dL/dRe(r) + i dL/dIm(r), matches finite differences in each part."""
    roots = np.array([1 + 2j, 1 - 2j, 0.5])
    w = np.array([0.3, -1.2, 0.7, 2.0])

    def loss(r):
        return np.sum(np.real(np.poly(r)) * w)

    assert np.poly(roots).dtype == np.float64
    gradient = cr.grad(loss)(roots)
    step, expected = 1e-6, np.zeros(3, complex)
    for j in range(3):
        e = np.eye(3)[j]
        expected[j] = ((loss(roots + step * e) - loss(roots - step * e))
                       + 1j * (loss(roots + 1j * step * e) - loss(roots - 1j * step * e))) / (
            2 * step)
    np.testing.assert_allclose(gradient, expected, atol=1e-7)


def test_poly_of_a_matrix_is_refused_with_the_fix():
    with pytest.raises(NotImplementedError, match="eigvals"):
        cr.grad(lambda a: np.sum(np.poly(a)))(np.eye(2))


def test_polydiv_reassembles_and_matches_finite_differences_in_both_outputs():
    """u = conv(q, v) + r, and the gradient of a loss of both outputs (q and the trimmed r)
    against central differences, in u and in v."""
    u, v = normal(6), normal(3)
    q, r = np.polydiv(u, v)
    np.testing.assert_allclose(np.polyadd(np.polymul(q, v), r), u, atol=1e-12)
    wq, wr = normal(np.shape(q)[0]), normal(np.shape(r)[0])

    def loss(u, v):
        q, r = np.polydiv(u, v)
        return np.sum(wq * q) + np.sum(wr * r ** 2)

    du, dv = cr.grad(loss, argnums=(0, 1))(u, v)
    np.testing.assert_allclose(du, fd_vjp(lambda u: loss(u, v), 1.0, u)[1], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dv, fd_vjp(lambda v: loss(u, v), 1.0, v)[1], rtol=1e-6, atol=1e-8)


def test_polyint_constants_by_keyword_and_polyder_undo_it():
    """polyint's constants k get cotangents by keyword too; polyder(polyint(p, m), m) = p, so
    the gradient through both is the identity's."""
    p, k = normal(3), normal(2)
    dp, dk = cr.grad(lambda p, k: np.sum(np.polyint(p, 2, k=k) * np.arange(5.0)),
                     argnums=(0, 1))(p, k)
    np.testing.assert_allclose(dp, [0.0, 1 / 6, 1.0])  # weights 1/12, 1/6, 1/2 times 0, 1, 2
    np.testing.assert_allclose(dk, [3.0, 4.0])
    w = normal(3)
    np.testing.assert_allclose(
        cr.grad(lambda p: np.sum(w * np.polyder(np.polyint(p, 2, k=k), 2)))(p), w)

