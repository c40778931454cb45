"""The rule-testing kit on the rules of src/chainrules/rules/scipy/special/gamma.py.

Skipped when SciPy is not installed. Every function is checked against finite differences on
float64 and float32 input, on complex input where SciPy has a complex loop, and with
broadcasting. The parameters without a closed-form derivative (``gammainc`` in ``a``,
``betainc`` in ``a`` and ``b``, ``zeta`` in ``x``: computed by
chainrules.rules.scipy.special.parameters, tested against references in
test_scipy_special_params.py) are differentiated at orders 1 and 2; their third derivative is
refused by name.
Closed forms check what finite differences cannot: third derivatives (order 3), the far left
tail of ``log_ndtr``.
"""

from __future__ import annotations

import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")

from chainrules import NoTangent, ZeroTangent, frule, grad, rrule, unthunk  # noqa: E402
from chainrules.rules.scipy.special.gamma import _multigammaln  # noqa: E402
from chainrules.testing import (case, check_case, test_frule_order2,  # noqa: E402
                                test_rrule_order2)
from tests.rules.unary_cases import unary_cases  # noqa: E402

ANY = [0.3, -0.7, 1.2]
POSITIVE = [0.4, 1.3, 2.1]
UNIT = [0.2, 0.5, 0.8]                       # probabilities: erfcinv on (0, 2) too
OPEN = [-0.6, 0.1, 0.7]                      # erfinv: -1 < x < 1
GAMMA = [0.4, 1.3, 2.1, -0.5, -1.3]          # off the poles
ANY_C = [0.3 + 0.4j, -0.7 + 0.2j, 1.1 - 0.5j]
GAMMA_C = [0.5 + 0.4j, 1.2 - 0.3j, -0.7 + 0.5j, 3.0 + 2.0j]

# function: (real points, complex points or None where SciPy has no complex loop)
UNARY = {
    sp.erfinv: (OPEN, None), sp.erfcinv: ([0.3, 1.1, 1.7], None), sp.erfcx: (ANY, ANY_C),
    sp.ndtr: (ANY, ANY_C), sp.ndtri: (UNIT, None), sp.log_ndtr: (ANY, ANY_C),
    sp.dawsn: (ANY, ANY_C), sp.entr: (POSITIVE, None), sp.log_expit: (ANY, None),
    sp.expm1: (ANY, ANY_C), sp.log1p: (POSITIVE, ANY_C), sp.cbrt: ([0.4, -1.3, 2.1], None),
    sp.gamma: (GAMMA, GAMMA_C), sp.rgamma: (GAMMA, GAMMA_C),
}


def _unary_cases():
    cases = unary_cases(UNARY)
    cases += [case(sp.log_ndtr, np.array([-12.0, -5.0, 6.0]), id="log_ndtr-tails"),
              case(sp.log_expit, np.array([-30.0, 0.0, 30.0]), id="log_expit-saturated")]
    return cases


def _binary_cases():
    x, t = np.array([0.0, 1.3, -0.6]), np.array(POSITIVE)
    a, b = np.array([0.7, 1.5, 3.2]), np.array([2.5, 0.6, 1.1])
    cases = [
        case(sp.xlog1py, x, t),                       # x == 0: d/dt is 0, d/dx is log1p(t)
        case(sp.xlog1py, x.astype(np.float32), t.astype(np.float32)),
        case(sp.xlog1py, 0.7, -0.5),
        case(sp.xlog1py, x.reshape(3, 1), t[:2]),      # broadcasting
        case(sp.xlog1py, np.array(ANY_C), np.array([0.5 + 0.4j, 1.2 - 0.3j, 0.8 + 1.1j])),
    ]
    for f in (sp.beta, sp.betaln):
        cases += [case(f, a, b), case(f, a.astype(np.float32), b.astype(np.float32)),
                  case(f, 1.5, 2.5), case(f, a.reshape(3, 1), b[:2])]
    cases += [
        case(sp.multigammaln, a + 2, 3),
        case(sp.multigammaln, 4.5, 5),
        case(sp.multigammaln, np.array([[1.2, 2.5], [3.0, 7.5]]), 2),
        case(sp.multigammaln, np.array([1.2, 2.5], np.float32), 1),
        case(_multigammaln, a + 2, 4),                 # the traceable stand-in its rules call
    ]
    return cases


def _parameter_cases():
    # Integer parameters have no tangent (so their cases also serve the order-2 sweep, which
    # tries the cheapest cases first); float ones are differentiated.
    x = np.array([0.3, 1.2, 4.0])
    a = np.array([0.6, 1.7, 3.5])
    cases = []
    for f in (sp.gammainc, sp.gammaincc):
        cases += [case(f, 2, x), case(f, np.array([1, 3, 5]), x),
                  case(f, 1, x.astype(np.float32)), case(f, 3, 2.5),
                  case(f, np.array([[1], [4]]), x),
                  case(f, a, x), case(f, 2.5, 1.5), case(f, a.reshape(3, 1), x[:2]),
                  case(f, a.astype(np.float32), x.astype(np.float32)),
                  case(f, a, 2.0)]
    unit = np.array(UNIT)
    cases += [case(sp.betainc, 2, 3, unit), case(sp.betainc, 1, 1, unit),
              case(sp.betainc, np.array([1, 2, 4]), 2, unit.astype(np.float32)),
              case(sp.betainc, 3, np.array([[1], [5]]), unit), case(sp.betainc, 2, 5, 0.3),
              case(sp.betainc, a, np.array([2.5, 0.6, 1.1]), unit),
              case(sp.betainc, 1.5, 2.5, 0.4), case(sp.betainc, a.reshape(3, 1), 2.2, unit[:2]),
              case(sp.betainc, a.astype(np.float32), np.float32(1.5),
                   unit.astype(np.float32))]
    from chainrules.rules.scipy.special.elementary import _hurwitz_zeta
    q = np.array(POSITIVE)
    s = np.array([1.5, 2.5, 4.0])
    cases += [case(sp.zeta, 2, q), case(sp.zeta, 3, q.astype(np.float32)), case(sp.zeta, 4, 1.7),
              case(_hurwitz_zeta, np.array([[2], [5]]), q),
              case(sp.zeta, s, q), case(sp.zeta, 3.5, 0.8), case(sp.zeta, s.reshape(3, 1), q[:2]),
              case(sp.zeta, s.astype(np.float32), q.astype(np.float32)),
              case(_hurwitz_zeta, s, 1.3),
              case(sp._ufuncs._riemann_zeta, np.array([1.5, 3.0, 4.5])),  # zeta(x): q = 1
              case(sp._ufuncs._riemann_zeta, np.array([2.5, 6.0], np.float32))]
    cases += [case(sp.gammasgn, np.array(GAMMA), non_differentiable=True)]
    return cases


def _inverse_and_distribution_cases():
    x, a, unit = np.array([0.4, 1.3, 2.1]), np.array([1.4, 2.3, 3.1]), np.array(UNIT)
    cases = [
        case(sp.loggamma, x), case(sp.loggamma, x + 1j), case(sp.binom, x + 3, np.array([0.9, 0.6, 1.7])),
        case(sp.gammaincinv, 2, unit), case(sp.gammaincinv, a, unit),
        case(sp.gammainccinv, a, unit), case(sp.betaincinv, 2, 3, unit),
        case(sp.betaincinv, a, np.array([1.9, 1.6, 2.7]), unit),
        case(sp.ndtri_exp, -x),
        case(sp.chdtr, 3, x), case(sp.chdtr, a, x), case(sp.chdtrc, a, x),
        case(sp.gdtr, x, a, unit + 0.5), case(sp.gdtrc, x, 2, unit + 0.5),
        case(sp.pdtr, np.array([1.5, 2.5, 4.5]), x), case(sp.pdtrc, np.array([1, 2, 4]), x),
        case(sp.stdtr, a + 1, np.array([-0.5, 0.7, 1.9])), case(sp.stdtr, 4, x),
        case(sp.stdtr, a + 1, np.array([-0.5, 0.0, 1.9])),  # t = 0: 1/2 for every df
        case(sp.zetac, x + 1.5),
        # binomial and negative binomial in p (counts k, n: constants, truncated by SciPy),
        # k = n where bdtr is 1; the inverses in the point
        case(sp.bdtr, np.array([0, 3, 10]), 10, unit), case(sp.bdtrc, 3, 10, unit),
        case(sp.bdtri, 3, 10, unit), case(sp.nbdtr, 3, 5, unit), case(sp.nbdtrc, 3, 5, unit),
        case(sp.nbdtri, 3, 5, unit),
        case(sp.stdtrit, a + 1, unit), case(sp.stdtrit, 4, unit), case(sp.chdtri, a, unit),
        case(sp.gdtrix, x, a, unit), case(sp.gdtrix, 2, 3, unit), case(sp.pdtri, 3, unit),
        # the F distribution and its quantile; inverses in a parameter (pdtrik's k stops at
        # its bound 0 at the first point: no derivative there)
        case(sp.fdtr, a, a + 4, x), case(sp.fdtrc, a, a + 4, x), case(sp.fdtri, a, a + 4, unit),
        case(sp.gdtria, unit, a, x),
        case(sp.gdtrib, x, unit, a), case(sp.btdtria, unit, a, np.array([0.3, 0.5, 0.6])),
        case(sp.btdtrib, a, unit, np.array([0.3, 0.5, 0.6])), case(sp.chdtriv, unit, a),
        case(sp.stdtridf, np.array([0.6, 0.8, 0.9]), x), case(sp.pdtrik, unit, a),
    ]
    if hasattr(sp, "betainccinv"):  # SciPy 1.12
        cases.append(case(sp.betainccinv, a, np.array([1.9, 1.6, 2.7]), unit))
    if hasattr(sp, "betaincc"):
        cases += [case(sp.betaincc, a, np.array([1.9, 1.6, 2.7]), unit),
                  case(sp.betaincc, 2, 3, unit)]
    return cases


INVERSE_AND_DISTRIBUTION_CASES = _inverse_and_distribution_cases()
CASES = _unary_cases() + _binary_cases() + _parameter_cases() + INVERSE_AND_DISTRIBUTION_CASES


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_special_rule(rule_case):
    check_case(rule_case)


SECOND_ORDER = [
    case(sp.erfinv, np.array(OPEN)), case(sp.ndtri, np.array(UNIT)),
    case(sp.log_ndtr, np.array([-12.0, -1.0, 2.0])), case(sp.erfcx, np.array(ANY_C)),
    case(sp.gamma, np.array(GAMMA)), case(sp.rgamma, np.array(GAMMA_C)),
    case(sp.xlog1py, np.array([0.5, 1.3, -0.6]), np.array(POSITIVE)),
    case(sp.betaln, np.array([0.7, 1.5]), np.array([2.5, 0.6])),
    case(sp.multigammaln, np.array([2.2, 3.5]), 3),
    case(sp.gammainc, 2, np.array([0.3, 1.2, 4.0])),
    case(sp.betainc, 2, 3, np.array(UNIT)),
    case(sp.zeta, 3, np.array(POSITIVE)),
    # the parameters differentiated too (their second derivatives are computed)
    case(sp.gammainc, np.array([0.6, 2.5]), np.array([0.3, 4.0])),
    case(sp.betainc, 1.5, 2.5, np.array([0.2, 0.7])),
    case(sp.zeta, np.array([1.5, 3.0]), np.array([0.4, 2.1])),
]


@pytest.mark.parametrize("rule_case", SECOND_ORDER, ids=lambda c: c.id)
def test_second_order(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args)
    test_frule_order2(rule_case.function, *rule_case.args)


# --- closed forms --------------------------------------------------------------------------------

def test_third_derivative_of_gammaln_is_polygamma_2():
    # the example: digamma's rule calls polygamma, which must trace
    x = np.array([0.7, 1.5, 4.2])
    third = grad(lambda v: np.sum(grad(lambda u: np.sum(grad(
        lambda w: np.sum(sp.gammaln(w)))(u)))(v)))(x)
    assert np.allclose(third, sp.polygamma(2, x), rtol=1e-12, atol=0)


def test_third_derivative_of_gamma():
    # Gamma''' = Gamma (psi^3 + 3 psi psi1 + psi2)
    x = 1.7
    third = grad(grad(grad(sp.gamma)))(x)
    psi, psi1, psi2 = sp.digamma(x), sp.polygamma(1, x), sp.polygamma(2, x)
    assert np.isclose(third, sp.gamma(x) * (psi ** 3 + 3 * psi * psi1 + psi2), rtol=1e-12)


def test_log_ndtr_far_in_the_left_tail():
    # pdf(x) / ndtr(x) = 2 / (sqrt(2 pi) erfcx(-x / sqrt 2)): no underflow at x = -40
    x = np.array([-40.0, -20.0, -8.0])
    expected = 2 / (np.sqrt(2 * np.pi) * sp.erfcx(-x / np.sqrt(2)))
    assert np.allclose(grad(lambda v: np.sum(sp.log_ndtr(v)))(x), expected, rtol=1e-12, atol=0)


def test_gammainc_derivative_is_the_gamma_density():
    a, x = 2.5, np.array([0.5, 2.0, 6.0])
    density = x ** (a - 1) * np.exp(-x) / sp.gamma(a)
    assert np.allclose(grad(lambda v: np.sum(sp.gammainc(a, v)))(x), density, rtol=1e-12)
    assert np.allclose(grad(lambda v: np.sum(sp.gammaincc(a, v)))(x), -density, rtol=1e-12)


def test_betainc_derivative_is_the_beta_density():
    a, b, x = 2.5, 0.5, np.array([0.1, 0.5, 0.9])
    density = x ** (a - 1) * (1 - x) ** (b - 1) / sp.beta(a, b)
    assert np.allclose(grad(lambda v: np.sum(sp.betainc(a, b, v)))(x), density, rtol=1e-12)


def test_xlog1py_at_zero_gives_the_t_derivative_zero():
    _, pullback = rrule(sp.xlog1py, np.array([0.0, 0.0, 2.0]), np.array([-1.0, 0.5, 3.0]))
    _, dx, dt = pullback(np.ones(3))
    assert np.array_equal(unthunk(dt), [0.0, 0.0, 0.5])
    assert np.allclose(unthunk(dx)[1:], np.log1p([0.5, 3.0]), rtol=1e-15)


def test_multigammaln_refuses_what_scipy_refuses():
    with pytest.raises(ValueError, match="scipy.special.multigammaln: condition a"):
        rrule(sp.multigammaln, 0.9, 3)
    with pytest.raises(ValueError, match="scipy.special.multigammaln: d should be"):
        grad(lambda a: sp.multigammaln(a, 2.5))(4.0)


def test_gammasgn_is_declared():
    _, pullback = rrule(sp.gammasgn, np.array([-0.5, 2.0]))
    assert pullback(np.ones(2)) == (NoTangent(), NoTangent())


# --- parameters without a closed-form derivative -------------------------------------------------

@pytest.mark.parametrize("f, args, position, message", [
    (sp.gammainc, (1.5, 2.0), 0, r"special.parameters.gammainc_daa: the derivative with "
                                 r"respect to a "),
    (sp.gammaincc, (1.5, 2.0), 0, r"special.parameters.gammaincc_daa: the derivative with "
                                  r"respect to a "),
    (sp.betainc, (1.5, 2.0, 0.3), 0, r"special.parameters.betainc_daa: the derivative with "
                                     r"respect to a "),
    (sp.betainc, (1.5, 2.0, 0.3), 1, r"special.parameters.betainc_dbb: the derivative with "
                                     r"respect to b "),
    (sp.zeta, (3.0, 2.0), 0, r"special.parameters.zeta_dxx: the derivative with respect to x "),
    (sp.zetac, (-2.7,), 0, r"special.parameters.riemann_zeta_dx is differentiable once only "
                           r"\(its rule is declared first-order only: the third derivative of "
                           r"the Riemann zeta function is not computed"),
])
def test_third_derivative_in_the_parameter_is_refused_by_name(f, args, position, message):
    def along(value):
        changed = list(args)
        changed[position] = value
        return np.sum(f(*changed))

    h = 1e-4
    t = args[position]
    first = grad(along)
    assert np.isclose(first(t), (along(t + h) - along(t - h)) / (2 * h), rtol=1e-7)
    second = grad(first)  # the first two derivatives are computed...
    assert np.isclose(second(t), (first(t + h) - first(t - h)) / (2 * h), rtol=1e-6)
    with pytest.raises(NotImplementedError, match=message):  # ...the third is refused
        grad(second)(t)


@pytest.mark.parametrize("f, args", [
    (sp.gammainc, (1.5, 2.0)), (sp.gammaincc, (np.array([1.5, 0.5]), 2.0)),
    (sp.betainc, (1.5, 2.0, 0.3)), (sp.zeta, (3.0, np.array([2.0, 1.5]))),
])
def test_a_constant_parameter_is_not_differentiated(f, args):
    # the last argument is differentiated; the parameters are constant floats, whose
    # derivative (a converged series) is deferred, never computed
    from chainrules.rules.scipy.special import parameters as scipy_special_params

    last = args[-1]
    h = 1e-6
    slope = (f(*args[:-1], last + h) - f(*args[:-1], last - h)) / (2 * h)
    calls = []
    names = ("_gammainc_jet", "_betainc_jet", "_zeta_jet")   # what every derivative calls
    originals = {name: getattr(scipy_special_params, name) for name in names}
    try:
        for name in names:
            setattr(scipy_special_params, name,
                    lambda *a, name=name: calls.append(name) or originals[name](*a))
        got = grad(lambda v: np.sum(f(*args[:-1], v)))(last)
        scipy_special_params.gammainc_da(1.5, 2.0)   # (the patch itself is seen)
    finally:
        for name in names:
            setattr(scipy_special_params, name, originals[name])
    assert calls == ["_gammainc_jet"]
    assert np.allclose(got, np.sum(slope) if np.ndim(last) == 0 else slope, rtol=1e-7)
    frule_tangents = (NoTangent(),) + (ZeroTangent(),) * (len(args) - 1) + (np.ones_like(last),)
    assert np.allclose(frule(frule_tangents, f, *args)[1], slope, rtol=1e-7)


@pytest.mark.parametrize("rule_case", INVERSE_AND_DISTRIBUTION_CASES, ids=lambda c: c.id)
def test_inverses_and_distribution_functions_at_order_2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args)
    test_frule_order2(rule_case.function, *rule_case.args)


def test_inverses_invert():
    """gammaincinv and betaincinv differentiated through: P(a, gammaincinv(a, p)) = p, so the
    gradient of the composition in p is 1 and in a is 0 (implicit function theorem)."""
    import chainrules as cr
    p, a, b = 0.37, 2.3, 1.7
    assert cr.grad(lambda p: sp.gammainc(a, sp.gammaincinv(a, p)))(p) == pytest.approx(1.0)
    assert cr.grad(lambda a: sp.gammainc(a, sp.gammaincinv(a, p)))(a) == pytest.approx(
        0.0, abs=1e-10)
    assert cr.grad(lambda b: sp.betainc(a, b, sp.betaincinv(a, b, p)))(b) == pytest.approx(
        0.0, abs=1e-10)

