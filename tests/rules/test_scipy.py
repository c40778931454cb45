"""The rule-testing kit on every SciPy rule (src/chainrules/rules/scipy/special/elementary.py).

Skipped when SciPy is not installed. Every registered function is checked against finite
differences on float64 and, where SciPy keeps it, float32 input, on complex input where SciPy
supports it, with several axes and options. Matrices passed to ``solve_triangular`` and
``cho_solve`` carry values in the triangle SciPy does not read: finite differences see that
their cotangent is 0 there. A few closed forms check points where finite differences cannot
look (a zero weighted sum, ``xlogy`` at ``x == 0``, ``t == 0``) and the refused options.
"""

from __future__ import annotations

import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")
sla = pytest.importorskip("scipy.linalg")

from chainrules import NoTangent, ZeroTangent, frule, rrule, unthunk  # noqa: E402
from chainrules.testing import case, check_case  # noqa: E402
from tests.rules.unary_cases import unary_cases  # noqa: E402
from tests.numpy_features import accepted  # noqa: E402

ANY = [0.3, -0.7, 1.2]
POSITIVE = [0.4, 1.3, 2.1]
UNIT = [0.2, 0.5, 0.8]                               # logit: 0 < x < 1
GAMMA = [0.4, 1.3, 2.1, -0.5, -1.3]                  # gammaln, digamma: off the poles
ANY_C = [0.3 + 0.4j, -0.7 + 0.2j, 1.1 - 0.5j]
DIGAMMA_C = [0.5 + 0.4j, 1.2 - 0.3j, -0.7 + 0.5j, 3.0 + 2.0j, -2.4 - 1.5j, 14.0 + 1.0j,
             -14.3 + 0.5j]

# function: (real points, complex points or None where SciPy has no complex loop)
UNARY = {
    sp.gammaln: (GAMMA, None), sp.digamma: (GAMMA, DIGAMMA_C), sp.erf: (ANY, ANY_C),
    sp.erfc: (ANY, ANY_C), sp.expit: (ANY, None), sp.logit: (UNIT, None),
}


def _unary_cases():
    cases = unary_cases(UNARY)
    cases.append(case(sp.expit, np.array([-30.0, 0.0, 30.0]), id="expit-saturated"))
    return cases


def _xlogy_cases():
    x, t = np.array([0.0, 1.3, -0.6]), np.array(POSITIVE)
    return [
        case(sp.xlogy, x, t),                            # x == 0: d/dt is 0, d/dx is log(t)
        case(sp.xlogy, x.astype(np.float32), t.astype(np.float32)),
        case(sp.xlogy, 0.7, 1.5),
        case(sp.xlogy, x.reshape(3, 1), t[:2]),          # broadcasting
        case(sp.xlogy, 0.5, t),
        case(sp.xlogy, np.array(ANY_C), np.array([0.5 + 0.4j, 1.2 - 0.3j, 0.8 + 1.1j])),
        case(sp.xlogy, np.array(ANY_C, np.complex64),
             np.array([0.5 + 0.4j, 1.2 - 0.3j, 0.8 + 1.1j], np.complex64)),
        case(sp.xlogy, x, np.array([0.5 + 0.4j, 1.2 - 0.3j, 0.8 + 1.1j])),   # real x
    ]


A23 = np.array([[0.3, -0.7, 1.2], [0.5, 2.0, -1.1]])


def _logsumexp_cases():
    f, a = sp.logsumexp, np.array(ANY)
    b = np.array([1.5, 0.5, 2.0])
    return [
        case(f, a),
        case(f, a.astype(np.float32)),
        case(f, A23),
        case(f, A23, 0),                                 # axis positionally
        case(f, A23, axis=1),
        case(f, A23, axis=-1, keepdims=True),
        case(f, A23, axis=(0, 1)),
        case(f, A23, keepdims=True),
        case(f, A23.astype(np.float32), axis=0),
        case(f, A23, 1, b),                              # b positionally: differentiated
        case(f, A23, 1, b, True),                        # keepdims positionally
        case(f, A23, None, b[:, None][:2]),              # b broadcast along axis 1
        case(f, a, None, np.array([2.0, -0.5, 1.0])),    # a negative weight, positive sum
        case(f, a, None, np.array([0.0, 1.0, 2.0])),     # a zero weight
        case(f, A23, axis=0, b=b),                       # b by keyword: not differentiated
        case(f, a[0], None, 2.0, id="logsumexp-scalars"),
        case(f, np.array([-40.0, 0.5, 1.0]), id="logsumexp-tiny-weight"),
        case(f, np.array(ANY_C)),
        case(f, np.array(ANY_C) * np.ones((2, 1)), axis=1),
        case(f, np.array(ANY_C), None, np.array([1.0 + 0.5j, 0.5, 2.0])),
        case(f, np.array(ANY_C, np.complex64)),
        # return_sign=True: log|s| and the sign of s (its phase, for complex s)
        case(f, a, None, np.array([2.0, -3.0, 1.0]), return_sign=True),   # s < 0
        case(f, A23, 1, np.array([[1.0, -2.0, 0.5], [-1.0, 0.3, 0.2]]), False, True),
        case(f, A23, axis=0, keepdims=True, return_sign=True),
        case(f, a.astype(np.float32), None, np.array([1.0, -4.0, 0.5], np.float32),
             return_sign=True),
        case(f, np.array(ANY_C), return_sign=True),
        case(f, np.array(ANY_C), None, np.array([1.0 + 0.5j, -0.5, 2.0]), return_sign=True),
    ]


def _softmax_cases():
    cases = []
    for f in (sp.softmax, sp.log_softmax):
        cases += [
            case(f, np.array(ANY)),
            case(f, np.array(ANY, np.float32)),
            case(f, A23),                                # axis=None: over all elements
            case(f, A23, 0),
            case(f, A23, axis=1),
            case(f, A23, axis=-2),
            case(f, A23, axis=(0, 1)),
            case(f, A23.astype(np.float32), axis=1),
            case(f, np.array(ANY_C)),
            case(f, np.array(ANY_C, np.complex64)),
            case(f, np.array(ANY_C) * np.array([[1.0], [0.5]]), axis=0),
        ]
    return cases


# A matrix whose upper triangle is well conditioned; the lower triangle holds other values,
# which solve_triangular(lower=False) never reads (and the other way round).
M = np.array([[2.0, 0.7, -0.4], [0.9, 1.5, 0.3], [-0.6, 0.8, 1.8]])
M_C = M + 1j * np.array([[0.2, -0.3, 0.5], [0.4, -0.1, 0.6], [0.3, 0.7, 0.25]])
B3 = np.array([0.5, -1.2, 0.8])
B32 = np.array([[0.5, 1.0], [-1.2, 0.3], [0.8, -0.6]])


STACKS = "stacks of matrices (SciPy 1.16)"


def _solve_triangular_cases():
    f = sla.solve_triangular
    cases = [
        case(f, M, B3),
        case(f, M, B32, lower=True),
        case(f, M, B3, 1),                               # trans positionally
        case(f, M, B32, trans="T", lower=True),
        case(f, M, B3, trans=2),
        case(f, M, B32, trans="C", unit_diagonal=True),
        case(f, M, B3, 0, True, True),                   # lower, unit_diagonal positionally
        case(f, M, B3, lower=True, unit_diagonal=True, trans=1),
        case(f, M.astype(np.float32), B3.astype(np.float32)),
        case(f, M.astype(np.float32), B32.astype(np.float32), trans=1, lower=True),
        case(f, M_C, B3 + 0.5j),
        case(f, M_C, B32, trans="T", lower=True),
        case(f, M_C, B32 * (1 - 0.3j), trans="C"),
        case(f, M_C, B3, trans=2, lower=True, unit_diagonal=True),
        case(f, M, B3 * (1 + 1j), trans=1),              # real matrix, complex right side
        case(f, M_C.astype(np.complex64), B3.astype(np.complex64), trans=2),
        *[accepted(c, STACKS) for c in (
            case(f, np.stack([M, M.T]), B3),             # a stack of matrices, one vector
            case(f, np.stack([M, M.T]), np.stack([B32, -B32]), trans=1, lower=True),
            case(f, M, np.stack([B32, -B32])),           # one matrix, a stack of right sides
        )],
    ]
    return cases


def _expm_cases():
    f = sla.expm
    a = np.array([[0.3, -0.7, 0.2], [0.5, 0.1, -0.4], [0.6, 0.25, -0.2]])
    a_c = a + 1j * np.array([[0.1, 0.4, -0.3], [-0.2, 0.3, 0.15], [0.5, -0.1, 0.2]])
    return [
        case(f, a),
        case(f, a[:2, :2] * 3),                          # larger norm: more squarings
        case(f, a.astype(np.float32)),
        case(f, a_c),
        case(f, a_c.astype(np.complex64)),
        case(f, np.stack([a[:2, :2], -a[1:, 1:]])),       # a stack
        case(f, np.array([[0.7]])),
    ]


def _cholesky_factor(lower: bool, complex_: bool = False) -> np.ndarray:
    """A well-conditioned Cholesky factor, with other values in the triangle that cho_solve
    does not read (as cho_factor leaves them)."""
    a = M_C if complex_ else M
    spd = a @ a.conj().T + np.eye(3)
    factor = np.linalg.cholesky(spd)
    if not lower:
        factor = factor.conj().T
    noise = (np.triu(M.T, 1) if lower else np.tril(M.T, -1)) * 0.5
    return factor + noise


def _cho_solve_cases():
    f = sla.cho_solve
    lower, upper = _cholesky_factor(True), _cholesky_factor(False)
    lower_c, upper_c = _cholesky_factor(True, True), _cholesky_factor(False, True)
    return [
        case(f, (lower, True), B3),
        case(f, (upper, False), B32),
        case(f, [lower, True], B32),                     # a list pair
        case(f, (lower.astype(np.float32), True), B3.astype(np.float32)),
        case(f, (upper.astype(np.float32), False), B32.astype(np.float32)),
        case(f, (lower_c, True), B3 * (1 + 0.5j)),
        case(f, (upper_c, False), B32),
        case(f, (upper_c.astype(np.complex64), False), B3.astype(np.complex64)),
        accepted(case(f, (np.stack([lower, 0.5 * lower]), True), B3), STACKS),
        accepted(case(f, (np.stack([upper, upper]), False), np.stack([B32, -B32])), STACKS),
        case(f, (lower, True), B3, check_finite=False),
    ]


def _polygamma_cases():
    # order n is an integer (no tangent); the Hurwitz zeta ufunc is differentiated in q only
    from chainrules.rules.scipy.special.elementary import _hurwitz_zeta, _polygamma
    x = np.array(POSITIVE)
    return [case(sp.polygamma, 1, x), case(sp.polygamma, 2, x.astype(np.float32)),
            case(_polygamma, 3, x), case(_hurwitz_zeta, 3, x)]


CASES = (_unary_cases() + _xlogy_cases() + _polygamma_cases() + _logsumexp_cases() + _softmax_cases()
         + _solve_triangular_cases() + _expm_cases() + _cho_solve_cases())


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_scipy_rule(rule_case):
    check_case(rule_case)


# --- closed forms, where finite differences cannot look ------------------------------------------

def test_xlogy_at_zero_gives_the_t_derivative_zero():
    # xlogy(0, t) = 0 for every t, also at t = 0 where x / t is 0 / 0
    _, pullback = rrule(sp.xlogy, np.array([0.0, 0.0, 2.0]), np.array([0.0, 1.5, 4.0]))
    _, dx, dt = pullback(np.ones(3))
    assert np.array_equal(unthunk(dt), [0.0, 0.0, 0.5])
    assert np.array_equal(unthunk(dx), [-np.inf, np.log(1.5), np.log(4.0)])
    _, tangent = frule((NoTangent(), ZeroTangent(), 1.0), sp.xlogy, 0.0, 0.0)
    assert tangent == 0.0


def test_logsumexp_with_masked_entries():
    # -inf entries (masked) get 0; a slice that is all -inf (an empty sum, y = -inf) gets 0
    a = np.array([[-np.inf, -np.inf, -np.inf], [-np.inf, 0.0, np.log(3.0)]])
    y, pullback = rrule(sp.logsumexp, a, 1)
    assert np.isneginf(y[0])
    _, da, _ = pullback(np.ones(2))
    assert np.allclose(da, [[0.0, 0.0, 0.0], [0.0, 0.25, 0.75]], rtol=1e-15, atol=0)


def test_logsumexp_with_sign_closed_form():
    # log|s| for s = sum(b exp(a)) < 0: d/da_k = b_k exp(a_k) / s, d/db_k = exp(a_k) / s
    # (before: refused by name); the sign of a real sum has no derivative
    a, b = np.array([0.2, -0.4, 1.1]), np.array([1.0, -3.0, -0.5])
    s = np.sum(b * np.exp(a))
    (y, sign), pullback = rrule(sp.logsumexp, a, None, b, False, True)
    assert (y, sign) == (pytest.approx(np.log(-s), rel=1e-14), -1.0)
    _, da, _, db, _, _ = pullback((1.0, ZeroTangent()))
    np.testing.assert_allclose(unthunk(da), b * np.exp(a) / s, rtol=1e-13)
    np.testing.assert_allclose(unthunk(db), np.exp(a) / s, rtol=1e-13)
    _, tangent = frule((NoTangent(), np.ones(3), NoTangent(), ZeroTangent(), NoTangent(),
                        NoTangent()), sp.logsumexp, a, None, b, False, True)
    assert tangent[0] == pytest.approx(np.sum(b * np.exp(a)) / s, rel=1e-13)
    assert isinstance(tangent[1], ZeroTangent)


def test_digamma_complex_derivative_matches_trigamma_series():
    # trigamma(z) = sum_k 1 / (z + k)^2, summed directly (slowly) as the closed form
    z = np.array([0.5 + 0.4j, -0.7 + 0.5j, 3.0 + 2.0j])
    k = np.arange(2_000_000)[:, None]
    tail = 1 / (z + 2_000_000)   # the rest of the sum, to O(1/N^2)
    expected = np.sum(1 / (z + k) ** 2, axis=0) + tail
    _, pullback = rrule(sp.digamma, z)
    assert np.allclose(pullback(np.ones(3))[1], np.conj(expected), rtol=1e-9, atol=0)


def test_solve_triangular_gradient_lies_in_the_triangle():
    _, pullback = rrule(sla.solve_triangular, M, B3, lower=True, unit_diagonal=True)
    _, da, _ = pullback(np.ones(3))
    assert np.array_equal(np.triu(unthunk(da)), np.zeros((3, 3)))


def test_zero_seed_gives_zero_cotangents():
    _, pullback = rrule(sla.cho_solve, (_cholesky_factor(True), True), B3)
    assert pullback(ZeroTangent()) == (NoTangent(), ZeroTangent(), ZeroTangent())


@pytest.mark.parametrize("call, message", [
    (lambda: rrule(sla.solve_triangular, M, B3.copy(), overwrite_b=True),
     "scipy.linalg.solve_triangular: overwrite_b=True"),
    (lambda: rrule(sla.cho_solve, (_cholesky_factor(True), True), B3.copy(), True),
     "scipy.linalg.cho_solve: overwrite_b=True"),
    (lambda: rrule(sla.expm, np.float64(0.5)), "scipy.linalg.expm: differentiating needs a "
                                               "square matrix"),
    (lambda: rrule(sla.cho_solve, _cholesky_factor(True), B3),
     "scipy.linalg.cho_solve: the first argument must be the pair"),
])
def test_refused_options_name_the_function_and_option(call, message):
    with pytest.raises((ValueError, TypeError), match=message.replace("(", r"\(")):
        call()
