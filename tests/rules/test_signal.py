"""Rules for sampled signals (chainrules.rules.numpy.signal): convolve, correlate, interp and
trapezoid (trapz where NumPy has it) through the kit (order 1 and 2), forward over reverse
against finite differences, closed forms and refused options."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import case, check_case, test_rrule_order2
from chainrules.rules.numpy.signal import unwrap_by_position
from tests.numpy_features import needs, running
from tests.rules.second_order import assert_jvp_of_grad

_rng = np.random.default_rng(20240614)
F32, C128 = np.float32, np.complex128
TRAPEZOID = getattr(np, "trapezoid", None)
TRAPZ = getattr(np, "trapz", None)


def normal(*shape, dtype=np.float64):
    x = _rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * _rng.standard_normal(shape)
    return x.astype(dtype)


XP = np.array([0.0, 1.0, 2.0, 3.0])
X_OUT = np.array([-1.0, 0.3, 1.7, 2.5, 5.0])  # below, inside, above the breakpoints

PHASES = np.array([0.0, 2.5, 6.1, 0.4, -2.7, 3.9])  # jumps 2.5, 3.6, -5.7, -3.1, 6.6

CASES = [
    *[case(f, normal(n), normal(m), mode) for f in (np.convolve, np.correlate)
      for n, m in ((5, 3), (3, 5), (4, 4), (2, 5)) for mode in ("full", "same", "valid")],
    case(np.convolve, normal(5), normal(1)), case(np.correlate, normal(5), normal(2)),
    case(np.convolve, normal(4, dtype=F32), normal(3, dtype=F32), "same"),
    case(np.correlate, normal(4, dtype=C128), normal(3, dtype=C128), "full"),
    case(np.convolve, normal(3, dtype=C128), normal(5), mode="valid"),
    case(np.correlate, normal(6, dtype=F32), normal(2, dtype=F32)),
    # interp: x, xp, fp, left, right
    case(np.interp, X_OUT, XP, normal(4)),
    case(np.interp, np.array([0.3, 1.7, 2.5]), XP, normal(4, dtype=C128)),
    case(np.interp, X_OUT, XP, normal(4), 0.5, -2.0),
    case(np.interp, 1.3, XP, normal(4)),
    case(np.interp, np.array([[0.2, 2.6], [1.1, 1.9]]), np.array([0.0, 0.5, 2.0, 3.5]), normal(4)),
    case(np.interp, X_OUT.astype(F32), XP.astype(F32), normal(4, dtype=F32)),
    case(np.interp, np.array([0.3, 1.2]), np.array([1.0]), np.array([2.0])),
    # unwrap: jumps away from the threshold (period / 2), where the added multiples are fixed
    case(np.unwrap, PHASES),
    case(np.unwrap, PHASES.astype(F32)),
    case(np.unwrap, np.stack([PHASES, PHASES[::-1]]), None, 0),
    case(np.unwrap, PHASES, 4.0),
    case(unwrap_by_position, PHASES, None, -1, 6.0),  # a traced period= is recorded so
    case(unwrap_by_position, PHASES, 4.5, -1, 7.0),
]
if TRAPEZOID is not None:
    CASES += [
        case(TRAPEZOID, normal(5)),
        case(TRAPEZOID, normal(3, 4), np.array([0.0, 0.5, 1.5, 2.0])),
        case(TRAPEZOID, normal(3, 4), normal(3, 4), axis=0),
        case(TRAPEZOID, normal(4, 3), None, 0.3, 0),
        case(TRAPEZOID, normal(5, dtype=C128)),
        case(TRAPEZOID, normal(2, 5, dtype=F32), None, 0.5),
    ]
if TRAPZ is not None:
    CASES += [case(TRAPZ, normal(3, 4), np.array([0.0, 0.5, 1.5, 2.0])),
              case(TRAPZ, normal(4, 3), None, 0.3, 0)]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # np.trapz (NumPy 2.0 to 2.3)
def test_rule(rule_case):
    check_case(rule_case)


ORDER2 = running(CASES)[::3]


@pytest.mark.parametrize("rule_case", ORDER2, ids=lambda c: c.id)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_rule_at_order_2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)


K, W = normal(3), normal(7)
SECOND_ORDER = {
    "convolve": (lambda a: np.sum(W[:5] * np.convolve(a * a, K, "same")), normal(5)),
    "correlate": (lambda a: np.sum(np.correlate(a, a, "full") ** 2), normal(4)),
    "interp in x": (lambda x: np.sum(np.interp(x * x, XP, [0.0, 1.0, 4.0, 9.0]) ** 2),
                    np.array([0.3, 1.2, 1.5])),
    "interp in fp": (lambda fp: np.sum(np.interp(X_OUT, XP, fp) ** 3), normal(4)),
    "interp in xp": (lambda xp: np.sum(np.interp(np.array([0.5, 1.5]), np.cumsum(xp * xp),
                                                 [0.0, 1.0, 3.0, 2.0]) ** 2),
                     np.array([0.2, 1.0, 1.1, 0.9])),
}
if TRAPEZOID is not None:
    SECOND_ORDER["trapezoid"] = (lambda x: TRAPEZOID(np.sin(x), np.cumsum(x * x)) ** 2,
                                 normal(6))


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_forward_over_reverse(name):
    f, x = SECOND_ORDER[name]
    assert_jvp_of_grad(f, x)


def test_interp_closed_forms():
    fp = np.array([2.0, 6.0, 4.0])
    xp = np.array([0.0, 1.0, 3.0])
    np.testing.assert_allclose(cr.grad(lambda f: np.interp(0.25, xp, f))(fp), [0.75, 0.25, 0])
    assert cr.grad(lambda x: np.interp(x, xp, fp))(2.0) == pytest.approx(-1.0)
    assert cr.grad(lambda x: np.interp(x, xp, fp))(7.0) == 0.0
    # left/right default to the end values: the cotangent goes to fp[0] and fp[-1]
    np.testing.assert_allclose(cr.grad(lambda f: np.sum(np.interp([-1.0, 5.0], xp, f)))(fp),
                               [1.0, 0.0, 1.0])
    # (left and right reach the rule when x, xp or fp is traced: NumPy dispatches on those)
    dleft, dfp = cr.grad(lambda left, f: np.interp(-1.0, xp, f, left), argnums=(0, 1))(3.0, fp)
    assert dleft == 1.0
    np.testing.assert_array_equal(dfp, 0.0)


def test_interp_period_is_refused_by_the_rule():
    # an engine traces NumPy's reduction of the periodic problem instead (below)
    with pytest.raises(NotImplementedError, match="period=360"):
        cr.rrule(np.interp, 10.0, [0.0, 90.0], [0.0, 1.0], None, None, 360)


PERIODIC_XP = np.array([0.3, 1.7, 2.2, 0.9])  # unsorted, as period= allows
PERIODIC_FP = np.array([1.0, -0.5, 2.0, 0.4])
PERIODIC_X = np.array([-1.0, 0.5, 2.9, 4.1, 7.3])


@pytest.mark.parametrize("position", [0, 1, 2], ids=["x", "xp", "fp"])
def test_interp_with_a_period(position):
    # before: refused by name
    weights = np.arange(1.0, 6.0)

    def loss(*args):
        return np.sum(np.interp(*args, period=3.0) ** 2 * weights)

    args = [PERIODIC_X, PERIODIC_XP, PERIODIC_FP]
    assert cr.vjp(loss, *args)[0] == pytest.approx(loss(*args), rel=1e-14)

    def partial(v):
        return loss(*args[:position], v, *args[position + 1:])

    step = 1e-6
    expected = [(partial(args[position] + step * e) - partial(args[position] - step * e))
                / (2 * step) for e in np.eye(args[position].size)]
    np.testing.assert_allclose(cr.grad(loss, argnums=position)(*args), expected, rtol=1e-6,
                               atol=1e-8)


def test_interp_with_a_period_closed_form():
    # x = 3.25 is 0.25 modulo 1, half way along the segment from xp = 0 (fp 2) to 0.5 (fp 6):
    # dy/dx = 4 / 0.5 = 8, and each end's value weighs 0.5
    xp, fp = np.array([0.5, 0.0]), np.array([6.0, 2.0])
    assert cr.grad(lambda x: np.interp(x, xp, fp, period=1.0))(3.25) == pytest.approx(8.0)
    np.testing.assert_allclose(cr.grad(lambda f: np.interp(3.25, xp, f, period=1.0))(fp),
                               [0.5, 0.5])
    with pytest.raises(ValueError, match="period must be a non-zero value"):
        cr.grad(lambda x: np.interp(x, xp, fp, period=0.0))(0.5)


@needs(TRAPEZOID is not None, "np.trapezoid (NumPy 2.0)")
def test_trapezoid_closed_form():
    x = np.array([0.0, 1.0, 3.0])
    np.testing.assert_allclose(cr.grad(lambda y: TRAPEZOID(y, x))(np.ones(3)), [0.5, 1.5, 1.0])


def test_convolve_closed_form():
    # y = convolve(a, [1, 2]): y[i] = a[i] + 2 a[i-1]; sum(y) = 3 sum(a) - 2 a[-1] ... full
    np.testing.assert_allclose(cr.grad(lambda a: np.sum(np.convolve(a, [1.0, 2.0])))(
        np.ones(3)), [3.0, 3.0, 3.0])
    np.testing.assert_allclose(cr.grad(lambda a: np.sum(np.convolve(a, [1.0, 2.0], "valid")))(
        np.ones(3)), [2.0, 3.0, 1.0])


def test_unwrap_adds_multiples_of_the_period():
    """unwrap(p) - p = k period, k piecewise constant: the gradient of w . unwrap(p) is w, the
    tangent is the input's, and the derivative in a traced period= (keyword-only, which
    NumPy does not dispatch on: routed to the engine) is sum(w k), against central
    differences."""
    w = normal(6)
    assert not np.allclose(np.unwrap(PHASES), PHASES)
    np.testing.assert_allclose(cr.grad(lambda p: np.sum(w * np.unwrap(p)))(PHASES), w)
    _, tangent = cr.jvp(np.unwrap, (PHASES,), (w,))
    np.testing.assert_allclose(tangent, w)

    def loss(period):
        return np.sum(w * np.unwrap(PHASES, period=period))

    k = np.round((np.unwrap(PHASES, period=6.0) - PHASES) / 6.0)
    assert cr.grad(loss)(6.0) == pytest.approx(np.sum(w * k))
    assert cr.grad(loss)(6.0) == pytest.approx((loss(6.0 + 1e-6) - loss(6.0 - 1e-6)) / 2e-6,
                                               rel=1e-6)
