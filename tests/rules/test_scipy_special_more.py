"""The rule-testing kit on src/chainrules/rules/scipy/special/other_functions.py: every function against
finite differences (float64, float32, broadcasting; complex where SciPy has a complex loop),
closed forms and second derivatives at special points, and the refused parameters of
``hyp1f1`` and ``hyp2f1``."""

from __future__ import annotations

import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")

import chainrules as cr  # noqa: E402
from chainrules.testing import case, check_case, test_frule_order2, test_rrule_order2  # noqa: E402
from tests.rules.unary_cases import unary_cases  # noqa: E402

POSITIVE = [0.4, 1.3, 2.1]
ANY = [0.3, -0.7, 1.2]
UNIT = [0.2, 0.5, 0.8]
RIGHT_C = [0.5 + 0.4j, 1.2 - 0.3j, 2.0 + 1.0j]   # exp1/expi/spence off their branch cuts

UNARY = {
    sp.exp1: (POSITIVE, RIGHT_C), sp.expi: (POSITIVE, RIGHT_C), sp.spence: (POSITIVE, RIGHT_C),
    sp.exprel: ([0.3, -0.7, 1.2, 2e-4], None), sp.ellipk: ([0.2, 0.5, -0.8], None),
    sp.ellipe: ([0.2, 0.5, -0.8], None), sp.wofz: ([0.3 + 0.2j, -0.7 + 0.5j, 1.2 + 0.1j], None),
    sp.sindg: ([30.0, -45.0, 100.0], None), sp.cosdg: ([30.0, -45.0, 100.0], None),
}
X = np.array([0.4, 1.3, 2.1])
T = np.array([0.9, 0.6, 1.7])


def _cases() -> list:
    cases = [c for c in unary_cases({f: v for f, v in UNARY.items() if f is not sp.wofz})]
    cases += [case(sp.wofz, np.array(UNARY[sp.wofz][0])),
              case(sp.wofz, np.array(UNARY[sp.wofz][0], np.complex64))]
    cases += [
        case(sp.expn, np.array([0, 1, 3]), X),
        case(sp.kl_div, X, T), case(sp.kl_div, X.astype(np.float32), T.astype(np.float32)),
        case(sp.rel_entr, X, T), case(sp.rel_entr, X[:, None], T[None, :]),
        case(sp.poch, X, T), case(sp.poch, X, 2.0),
        case(sp.hyp1f1, 1, 3, X), case(sp.hyp1f1, 2, 3, RIGHT_C[0]),  # integer a, b: constants
        case(sp.boxcox, X, np.array([0.5, 0.0, -1.3])), case(sp.boxcox, X, 0.7),
        case(sp.boxcox1p, X, np.array([0.5, 0.0, -1.3])),
        case(sp.inv_boxcox, np.array([0.3, 1.1, -0.4]), np.array([0.5, 0.0, 1.3])),
        case(sp.owens_t, np.array([0.3, -1.1, 2.0]), np.array([0.5, 2.0, -0.7])),
        # the ufunc behind lambertw(z, k, tol): k and tol are constants (tol large enough that the
        # order-2 check's finite differences, which move every float, keep it positive)
        case(sp._ufuncs._lambertw, np.array([0.5, 0.0, 2.5, -0.2]), 0, 1e-3),
        case(sp._ufuncs._lambertw, np.array(RIGHT_C), 0, 1e-3),
        case(sp._ufuncs._lambertw, np.array(RIGHT_C), -1, 1e-3),
    ]
    return cases


R = np.array([0.3, -2.0, 1.5])
PHI = np.array([0.3, 0.6, 0.9])

# the robust losses, exponentials and degrees, incomplete elliptic integrals, 2F1 in z, Voigt
LATER_CASES = [
    case(sp.huber, 1.0, R), case(sp.huber, X, R),
    case(sp.pseudo_huber, X, R), case(sp.pseudo_huber, 1.5, R.astype(np.float32)),
    case(sp.powm1, X, T), case(sp.cosm1, X), case(sp.exp2, X), case(sp.exp10, X),
    case(sp.radian, X, T, np.array(UNIT)),
    case(sp.tandg, np.array([30.0, -45.0, 100.0])), case(sp.cotdg, np.array([30.0, -45.0, 100.0])),
    case(sp.erfi, X), case(sp.erfi, np.array(RIGHT_C)),
    case(sp.wrightomega, X), case(sp.wrightomega, X + 0.3j),
    case(sp.ellipkinc, PHI, np.array([0.1, 0.25, 0.4])),
    case(sp.ellipkinc, PHI, np.array([0.0, 0.3, -0.8])),  # m = 0: the series
    case(sp.ellipeinc, PHI, np.array([0.1, 0.25, 0.4])),
    case(sp.ellipeinc, PHI, np.array([0.0, 0.3, -0.8])),
    case(sp.ellipkm1, np.array(UNIT)),  # at p = 1: test_second_derivatives_at_removable_...
    case(sp.voigt_profile, np.array([0.3, -1.0, 2.0]), T, np.array(UNIT)),
    case(sp.hyp2f1, 1, 2, 3, np.array(UNIT) * 0.9),  # integer parameters: constants
    case(sp.hyp2f1, 1, 2, 3, np.array(UNIT) + 0.1j),
    # several outputs, each a function of x
    case(sp.sici, X), case(sp.sici, np.array(RIGHT_C)), case(sp.shichi, X),
    case(sp.fresnel, X), case(sp.fresnel, X + 0.2j), case(sp.airy, X), case(sp.airy, -X),
    # the arithmetic-geometric mean (a = b: K at m = 0), Jacobi's functions in u (m held)
    case(sp.agm, X, T), case(sp.agm, 2.0, np.array([1.5, 2.0, 3.0])), case(sp.agm, -X, -T),
    case(sp.ellipj, X, 0), case(sp.ellipj, X, 1),
]
LATER_CASES += [
    case(sp.inv_boxcox1p, np.array([0.3, -0.4, 1.2]), np.array([0.5, 0.0, -0.5])),
    case(sp.inv_boxcox1p, np.array([0.3, 1.5]), 2e-4),  # λ near 0: the series
    case(sp.hyp0f1, 2, np.array([0.3, -1.2, 4.0])),   # an integer v: no tangent (refused)
    case(sp.hyperu, 1, 2, np.array([0.4, 1.5, 3.0])),
    case(sp.wright_bessel, 1, 2, np.array([0.3, 1.5, 4.0])),
    case(sp.nrdtrimn, np.array([0.2, 0.7]), np.array([1.5, 0.4]), np.array([0.3, -2.0])),
    case(sp.nrdtrisd, np.array([0.1, -1.0]), np.array([0.2, 0.7]), np.array([0.3, -2.0])),
]
if hasattr(sp, "log_wright_bessel") and abs(  # SciPy 1.15 (1.14's is wrong: no rule there)
        sp.log_wright_bessel(1.0, 2.0, 1.5) - np.log(sp.wright_bessel(1.0, 2.0, 1.5))) < 1e-12:
    LATER_CASES.append(case(sp.log_wright_bessel, 1, 2, np.array([0.3, 1.5, 4.0])))
if hasattr(sp._ufuncs, "_scaled_exp1"):  # x e^x E1(x), of gompertz's and invgauss' entropy
    LATER_CASES.append(case(sp._ufuncs._scaled_exp1, np.array([0.3, 1.5, 40.0])))
CASES = _cases() + LATER_CASES


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_rules_against_finite_differences(c):
    check_case(c)


@pytest.mark.parametrize("c", [c for c in CASES if np.ndim(c.args[-1]) <= 1
                               and np.result_type(*c.args) in (np.float64, np.complex128)],
                         ids=lambda c: c.id)
def test_order_2(c):
    test_rrule_order2(c.function, *c.args)
    test_frule_order2(c.function, *c.args)


def test_closed_forms_at_special_points():
    # the removable singularities: exprel'(0) = 1/2, K'(0) = π/8, E'(0) = -π/8, spence'(1) = -1
    assert cr.grad(sp.exprel)(0.0) == pytest.approx(0.5, rel=1e-15)
    assert cr.grad(sp.ellipk)(0.0) == pytest.approx(np.pi / 8, rel=1e-15)
    assert cr.grad(sp.ellipe)(0.0) == pytest.approx(-np.pi / 8, rel=1e-15)
    assert cr.grad(sp.spence)(1.0) == pytest.approx(-1.0, rel=1e-15)
    # boxcox at λ = 0 is log x: d/dλ = (log x)^2 / 2; inv_boxcox at λ = 0 is exp(y)
    x = 1.7
    assert cr.grad(lambda lm: sp.boxcox(x, lm))(0.0) == pytest.approx(np.log(x) ** 2 / 2)
    assert cr.grad(lambda lm: sp.inv_boxcox(0.4, lm))(0.0) == \
        pytest.approx(-np.exp(0.4) * 0.4 ** 2 / 2)
    # Owen's T(h, a): T(0, a) = arctan(a) / (2π), so dT/da = 1 / (2π (1 + a^2)) at h = 0
    assert cr.grad(lambda a: sp.owens_t(0.0, a))(0.8) == \
        pytest.approx(1 / (2 * np.pi * (1 + 0.64)), rel=1e-14)


def test_lambertw_and_riemann_zeta_differentiate_through_scipy():
    # the public functions call private ufuncs: the rules of those serve them (no NoRuleError
    # naming numpy._lambertw or numpy._riemann_zeta)
    w = sp.lambertw(1.0).real
    assert cr.grad(lambda z: np.real(sp.lambertw(z)))(1.0) == pytest.approx(w / (1 + w), rel=1e-14)
    assert cr.grad(lambda z: np.real(sp.lambertw(z)))(0.0) == pytest.approx(1.0, rel=1e-14)
    h = 1e-5
    fd = (sp.zeta(3.0 + h) - sp.zeta(3.0 - h)) / (2 * h)
    assert cr.grad(sp.zeta)(3.0) == pytest.approx(fd, rel=1e-8)
    assert cr.grad(sp.zeta)(3.0) == pytest.approx(-0.19812624288563685, rel=1e-12)  # zeta'(3)


def test_hyp1f1_parameters_are_refused_by_name():
    with pytest.raises(NotImplementedError, match="hyp1f1.*a"):
        cr.grad(lambda a: sp.hyp1f1(a, 2.5, 0.7))(1.5)
    with pytest.raises(NotImplementedError, match="hyp1f1.*b"):
        cr.grad(lambda b: sp.hyp1f1(1.5, b, 0.7))(2.5)
    # held constant, the parameters cost nothing and x is exact: d/dx 1F1(a;b;x) = a/b 1F1(a+1;b+1;x)
    assert cr.grad(lambda x: sp.hyp1f1(1.5, 2.5, x))(0.7) == \
        pytest.approx(1.5 / 2.5 * sp.hyp1f1(2.5, 3.5, 0.7), rel=1e-14)


@pytest.mark.parametrize("c", LATER_CASES, ids=lambda c: c.id)
def test_later_rules_at_order_2(c):
    test_rrule_order2(c.function, *c.args, fkwargs=c.fkwargs)
    test_frule_order2(c.function, *c.args, fkwargs=c.fkwargs)


@pytest.mark.parametrize("f, point", [
    (sp.ellipk, 0.0), (sp.ellipe, 0.0), (sp.spence, 1.0), (sp.ellipkm1, 1.0),
    (lambda m: sp.ellipkinc(0.9, m), 0.0), (lambda m: sp.ellipeinc(0.9, m), 0.0)])
def test_second_derivatives_at_removable_singularities(f, point):
    """Where a partial is a 0/0 limit, the rule takes the series there: the second derivative
    is right at the point too (before: a constant partial, so the second derivative was 0
    there, where it is 9 pi/64 for ellipk, without a word)."""
    step = 1e-4
    expected = (f(point + step) - 2 * f(point) + f(point - step)) / step ** 2
    assert cr.hvp(f, point, 1.0) == pytest.approx(expected, rel=1e-6, abs=1e-9)


def test_hyp2f1_parameters_are_refused_by_name():
    with pytest.raises(NotImplementedError, match="hyp2f1.*with respect to c"):
        cr.grad(lambda c: sp.hyp2f1(1.0, 2.0, c, 0.3))(3.0)
    slope = cr.grad(lambda z: sp.hyp2f1(1.0, 2.0, 3.0, z))(0.3)
    assert slope == pytest.approx(2 / 3 * sp.hyp2f1(2.0, 3.0, 4.0, 0.3))


def test_elliptic_slopes_near_zero_keep_their_digits():
    """dK/dm and dE/dm at m = 1e-9: pi/8 + 9 pi m/64 and -pi/8 - 3 pi m/64 to rounding (the
    closed forms lost eps/m of their digits there: 2e-7 relative)."""
    m = 1e-9
    assert cr.grad(sp.ellipk)(m) == pytest.approx(np.pi / 8 + 9 * np.pi / 64 * m, rel=1e-14)
    assert cr.grad(sp.ellipe)(m) == pytest.approx(-np.pi / 8 - 3 * np.pi / 64 * m, rel=1e-14)
    assert cr.grad(sp.ellipkm1)(1 - m) == pytest.approx(-np.pi / 8 - 9 * np.pi / 64 * m,
                                                        rel=1e-14)


def test_ellipj_in_u_and_its_parameter_refused():
    """d/du of (sn, cn, dn, am) = (cn dn, -sn dn, -m sn cn, dn) at m = 0.3, against central
    differences; the derivative in m is refused by name."""
    weights = np.array([1.0, 2.0, -1.0, 0.5])

    def loss(u):
        return np.sum(np.array(sp.ellipj(u, 0.3)) * weights)

    step = 1e-6
    assert cr.grad(loss)(0.8) == pytest.approx((loss(0.8 + step) - loss(0.8 - step)) /
                                               (2 * step), rel=1e-7)
    with pytest.raises(NotImplementedError, match="ellipj.*with respect to m"):
        cr.grad(lambda m: sp.ellipj(0.8, m)[0])(0.3)

