"""The rule-testing kit on the Bessel functions of ``scipy.special``
(src/chainrules/rules/scipy/special/bessel.py).

Skipped when SciPy is not installed. Every function is checked against finite differences on
float64 and float32 input, scalars and arrays, integer orders (which have no tangent) with
broadcasting, and complex ``x`` where SciPy takes it; at order 2 with the kit's order-2
checks. Closed forms check what finite differences cannot: the half-integer Bessel functions
(elementary), the refusal of a differentiated order and of complex ``ive``.
"""

from __future__ import annotations

import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")

import chainrules as cr  # noqa: E402
from chainrules import NoTangent, frule, rrule, unthunk  # noqa: E402
from chainrules.testing import case, check_case, test_frule_order2, test_rrule_order2  # noqa: E402

ANY = [0.3, -0.7, 1.2, 2.6]
POSITIVE = [0.4, 1.3, 2.1, 3.7]                      # y0, y1, k0, k1 and their scaled forms
ANY_C = [0.3 + 0.4j, -0.7 + 0.2j, 1.1 - 0.5j]
RIGHT_C = [0.6 + 0.4j, 1.3 - 0.2j, 2.1 + 1.1j]      # yv, kv, kve: off the branch cut

UNARY = {
    sp.j0: ANY, sp.j1: ANY, sp.i0: ANY, sp.i1: ANY, sp.i0e: ANY, sp.i1e: ANY,
    sp.y0: POSITIVE, sp.y1: POSITIVE, sp.k0: POSITIVE, sp.k1: POSITIVE, sp.k0e: POSITIVE,
    sp.k1e: POSITIVE,
}
# function: (real points, complex points or None)
ORDERED = {
    sp.jv: (ANY, ANY_C), sp.iv: (ANY, ANY_C), sp.ive: (ANY, None),
    sp.yv: (POSITIVE, RIGHT_C), sp.kv: (POSITIVE, RIGHT_C), sp.kve: (POSITIVE, RIGHT_C),
    sp.yn: (POSITIVE, None),
}


def _unary_cases():
    cases = []
    for f, points in UNARY.items():
        x = np.array(points)
        cases += [
            case(f, x),
            case(f, x.astype(np.float32)),
            case(f, float(points[1])),
            case(f, np.float32(points[2])),
            case(f, x[:3].reshape(3, 1) * np.array([1.0, 0.5])),
        ]
    return cases


def _ordered_cases():
    cases = []
    orders = np.array([0, 1, 2, 3])
    for f, (real, complex_) in ORDERED.items():
        x = np.array(real)
        cases += [
            case(f, 1, x),
            case(f, 0, x.astype(np.float32)),
            case(f, 2, float(real[1])),
            case(f, orders, x),                              # an order per element
            case(f, orders.reshape(4, 1), x[:3]),            # broadcast: a table
            case(f, np.int32(3), np.float32(real[3])),
        ]
        if f is not sp.yn:
            cases.append(case(f, -1, x))                     # negative orders
        if complex_ is not None:
            cases += [case(f, 1, np.array(complex_)),
                      case(f, 2, np.array(complex_, np.complex64)),
                      case(f, 0, complex(complex_[0]))]
    cases.append(case(sp.i1, 0.0, id="i1-at-zero"))
    return cases


X = np.array(POSITIVE[:3])
ORDERS = np.array([0, 1, 3])
# integer orders, the Hankel functions, the real-line scalings jve and yve, Struve functions,
# spherical Bessel functions (Python functions, recorded whole) and their derivatives
MORE_CASES = [
    case(sp.kn, ORDERS, X), case(sp.hankel1, 1, X + 0j), case(sp.hankel2, 0, X + 0.2j),
    case(sp.jve, 1, X), case(sp.yve, 2, X),
    case(sp.struve, 1, X), case(sp.struve, 0, X), case(sp.modstruve, 2, X),
    case(sp.spherical_jn, ORDERS, X), case(sp.spherical_yn, 2, X),
    case(sp.spherical_in, ORDERS, X, True), case(sp.spherical_kn, 1, X + 0.3j),
    case(sp.spherical_jn, 2, X, True), case(sp.spherical_kn, ORDERS, X, True),
    case(sp.hankel1e, 1, X + 0j), case(sp.hankel2e, 0, X + 0.2j),
    # Kelvin functions and their derivatives (x = 0: the limit of f'/x in f''), as pairs too
    *[case(f, np.array([0.5, 1.3, 2.7])) for f in (sp.ber, sp.bei, sp.ker, sp.kei, sp.berp,
                                                   sp.beip, sp.kerp, sp.keip)],
    case(sp.berp, np.array([0.0, 0.8])), case(sp.beip, np.array([0.0, 0.8])),
    case(sp.kelvin, np.array([0.5, 1.3, 2.7])),
    # integrals of Bessel and Struve functions; besselpoly in a (lmb, nu: constants)
    *[case(f, np.array([0.5, 1.3, 2.7])) for f in (sp.itj0y0, sp.iti0k0, sp.it2j0y0,
                                                   sp.it2i0k0, sp.itstruve0, sp.it2struve0,
                                                   sp.itmodstruve0)],
    case(sp.besselpoly, np.array([0.4, 1.1]), 2, 1),
]
CASES = _unary_cases() + _ordered_cases() + MORE_CASES


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_bessel_rule(rule_case):
    check_case(rule_case)


ORDER2 = MORE_CASES + [case(f, np.array(points[:3])) for f, points in UNARY.items()] + [
    case(f, 1, np.array(real[:3])) for f, (real, _) in ORDERED.items()] + [
    case(f, 1, np.array(complex_)) for f, (_, complex_) in ORDERED.items() if complex_]


@pytest.mark.parametrize("rule_case", ORDER2, ids=lambda c: c.id)
def test_bessel_rules_at_order_2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args)
    test_frule_order2(rule_case.function, *rule_case.args)


# --- closed forms --------------------------------------------------------------------------------

def test_half_integer_orders_against_their_elementary_forms():
    # j_{1/2}(x) = sqrt(2 / (pi x)) sin x, i_{1/2}(x) = sqrt(2 / (pi x)) sinh x,
    # k_{1/2}(x) = sqrt(pi / (2 x)) exp(-x), y_{1/2}(x) = -sqrt(2 / (pi x)) cos x: derivatives
    # by hand
    x = np.array([0.4, 1.3, 2.9])
    c = np.sqrt(2 / np.pi)
    expected = {
        sp.jv: c * (np.cos(x) / np.sqrt(x) - np.sin(x) / (2 * x ** 1.5)),
        sp.iv: c * (np.cosh(x) / np.sqrt(x) - np.sinh(x) / (2 * x ** 1.5)),
        sp.kv: -np.sqrt(np.pi / 2) * np.exp(-x) * (1 / np.sqrt(x) + 1 / (2 * x ** 1.5)),
        sp.yv: c * (np.sin(x) / np.sqrt(x) + np.cos(x) / (2 * x ** 1.5)),
    }
    for f, derivative in expected.items():
        g = cr.grad(lambda x: np.sum(f(0.5, x)))(x)
        np.testing.assert_allclose(g, derivative, rtol=1e-12, err_msg=f.__name__)


def test_a_float_order_is_a_constant_for_grad_and_jvp():
    x = 1.3
    step = 1e-6
    for f in (sp.jv, sp.yv, sp.iv, sp.ive, sp.kv, sp.kve):
        by_differences = (f(2.5, x + step) - f(2.5, x - step)) / (2 * step)
        assert np.isclose(cr.grad(lambda x: f(2.5, x))(x), by_differences, rtol=1e-8)
        _, tangent = frule((NoTangent(), NoTangent(), 1.0), f, 2.5, x)
        assert np.isclose(tangent, by_differences, rtol=1e-8)


def test_order_zero_and_one_match_the_general_order():
    x = np.array([0.5, 1.7])
    for f, general, order in ((sp.j1, sp.jv, 1), (sp.y0, sp.yv, 0), (sp.i1e, sp.ive, 1),
                              (sp.k1e, sp.kve, 1), (sp.k0, sp.kv, 0)):
        by_rule = cr.grad(lambda x: np.sum(f(x)))(x)
        np.testing.assert_allclose(by_rule, cr.grad(lambda x: np.sum(general(order, x)))(x),
                                   rtol=1e-12)
        np.testing.assert_allclose(by_rule, [(f(t + 1e-6) - f(t - 1e-6)) / 2e-6 for t in x],
                                   rtol=1e-7)


def test_derivatives_at_zero_where_the_recurrence_has_no_1_over_x():
    # I1(x) = x/2 + O(x^3), I1e(x) = x/2 - x|x|/2 + O(x^3) (a kink finite differences
    # cannot step over): both have slope 1/2 at 0; so has J1
    for f in (sp.i1, sp.i1e, sp.j1):
        assert cr.grad(f)(0.0) == 0.5
        assert frule((NoTangent(), 1.0), f, 0.0)[1] == 0.5
    assert cr.grad(lambda x: sp.iv(1, x))(0.0) == 0.5


def test_third_derivative_of_j0():
    # j0''' = -j1'' = (3 j1 - j3) / 4, from the recurrence applied twice
    third = cr.grad(cr.grad(cr.grad(sp.j0)))(1.1)
    assert np.isclose(third, (3 * sp.j1(1.1) - sp.jv(3, 1.1)) / 4, rtol=1e-12)


@pytest.mark.parametrize("f", [sp.jv, sp.yv, sp.iv, sp.ive, sp.kv, sp.kve, sp.yn],
                         ids=lambda f: f.__name__)
def test_a_differentiated_order_is_refused_by_name(f):
    message = f"scipy.special.{f.__name__}: the derivative with respect to the order v"
    with pytest.raises(NotImplementedError, match=message):
        cr.grad(lambda v: f(v, 1.3))(2.0)
    with pytest.raises(NotImplementedError, match=message):
        cr.grad(lambda v: np.sum(f(v, np.array([1.3, 2.0]))))(np.array([1.0, 2.0]))
    with pytest.raises(NotImplementedError, match=message):
        frule((NoTangent(), 1.0, 0.0), f, 2.0, 1.3)
    _, pullback = rrule(f, 2.0, 1.3)
    _, dv, dx = pullback(1.0)
    assert np.isfinite(unthunk(dx))
    with pytest.raises(NotImplementedError, match=message):
        unthunk(dv)


def test_an_integer_order_has_no_tangent():
    _, pullback = rrule(sp.jv, np.array([0, 1]), np.array([0.5, 1.5]))
    _, dv, dx = pullback(np.ones(2))
    assert isinstance(dv, NoTangent)
    np.testing.assert_allclose(unthunk(dx), [-sp.j1(0.5), (sp.j0(1.5) - sp.jv(2, 1.5)) / 2])


def test_complex_ive_is_refused_by_name():
    with pytest.raises(NotImplementedError, match="scipy.special.ive: complex x"):
        cr.grad(lambda x: np.real(sp.ive(1, x * (1 + 1j))))(0.7)


def test_from_imports_hessian_and_batched_forward():
    # ufuncs dispatch on traced values whatever way they were imported
    from scipy.special import jv, kve
    x = np.array([0.5, 1.5, 2.5])
    second = (jv(-0.5, x) - 2 * jv(1.5, x) + jv(3.5, x)) / 4     # the recurrence twice
    np.testing.assert_allclose(cr.hessian(lambda x: np.sum(jv(1.5, x)))(x), np.diag(second),
                               rtol=1e-12, atol=1e-15)
    slope = kve(1, x) - (kve(0, x) + kve(2, x)) / 2
    np.testing.assert_allclose(cr.jacfwd(lambda x: kve(1, x))(x), np.diag(slope), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="scipy.special.jv: the derivative with "
                                                  "respect to the order v"):
        cr.jacfwd(lambda v: jv(v, x))(np.array([1.0, 2.0, 3.0]))


def test_struve_of_a_half_integer_order_and_jve_of_complex_z():
    """d/dx struve(1.5, x) against central differences (a non-integer order, which the kit
    cases cannot hold constant); jve's scale exp(-|Im z|) is refused for complex z."""
    import chainrules as cr
    step = 1e-6
    for f in (sp.struve, sp.modstruve):
        expected = (f(1.5, 1.2 + step) - f(1.5, 1.2 - step)) / (2 * step)
        assert cr.grad(lambda x: f(1.5, x))(1.2) == pytest.approx(expected, rel=1e-8)
    with pytest.raises(NotImplementedError, match="jve.*not holomorphic"):
        cr.grad(lambda x: np.real(sp.jve(1.0, x + 0.5j)))(1.2)

