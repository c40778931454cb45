"""The rule-testing kit on every elementwise rule (src/chainrules/rules/numpy/elementwise.py).

Each registered function is checked on float64 and float32 arrays and Python scalars, and on
complex128 and complex64 values where NumPy supports complex input, with points chosen inside
the function's domain and away from branch cuts. Binary functions are also checked with
broadcasting and with mixed real/complex and float32/float64 arguments. Functions declared
non-differentiable are checked the same way: their cotangents must be NoTangent and agree
with finite differences (zero between their jumps).
"""

from __future__ import annotations

import numpy as np
import pytest

from chainrules.testing import case, check_case
from tests.rules.unary_cases import unary_cases

# --- sample points ------------------------------------------------------------------------
ANY = [0.3, -0.7, 1.2]               # no restriction
POSITIVE = [0.4, 1.3, 2.1]           # log, sqrt, ...
UNIT = [-0.6, 0.2, 0.7]              # arcsin, arccos, arctanh: |x| < 1
ABOVE_ONE = [1.3, 2.0, 3.5]          # arccosh
ANY_C = [0.3 + 0.4j, -0.7 + 0.2j, 1.1 - 0.5j]
RIGHT_C = [0.5 + 0.4j, 1.2 - 0.3j, 0.8 + 1.1j]    # away from the cut on the negative axis
SMALL_C = [0.3 + 0.2j, -0.2 + 0.4j, 0.1 - 0.3j]   # inside the unit disc: inverse trig/hyp
ACOSH_C = [1.5 + 0.5j, 2.0 + 1.0j, 0.5 + 1.0j]    # away from the cut x < 1

# function: (real points, complex points or None where NumPy has no complex loop)
UNARY = {
    np.negative: (ANY, ANY_C), np.positive: (ANY, ANY_C), np.reciprocal: (ANY, ANY_C),
    np.square: (ANY, ANY_C), np.sqrt: (POSITIVE, RIGHT_C), np.cbrt: (ANY, None),
    np.exp: (ANY, ANY_C), np.exp2: (ANY, ANY_C), np.expm1: (ANY, ANY_C),
    np.log: (POSITIVE, RIGHT_C), np.log2: (POSITIVE, RIGHT_C), np.log10: (POSITIVE, RIGHT_C),
    np.log1p: (POSITIVE, RIGHT_C), np.sin: (ANY, ANY_C), np.cos: (ANY, ANY_C),
    np.tan: (ANY, ANY_C), np.arcsin: (UNIT, SMALL_C), np.arccos: (UNIT, SMALL_C),
    np.arctan: (ANY, SMALL_C), np.sinh: (ANY, ANY_C), np.cosh: (ANY, ANY_C),
    np.tanh: (ANY, ANY_C), np.arcsinh: (ANY, SMALL_C), np.arccosh: (ABOVE_ONE, ACOSH_C),
    np.arctanh: (UNIT, SMALL_C), np.deg2rad: (ANY, None), np.radians: (ANY, None),
    np.rad2deg: (ANY, None), np.degrees: (ANY, None), np.sign: (ANY, ANY_C),
    np.abs: (ANY, ANY_C), np.fabs: (ANY, None), np.real: (ANY, ANY_C),
    np.imag: (ANY, ANY_C), np.conj: (ANY, ANY_C), np.conjugate: (ANY, ANY_C),
    np.angle: (ANY, ANY_C), np.sinc: (ANY, ANY_C),
}

# function: (first argument's points, second's, complex supported)
BINARY = {
    np.add: (ANY, POSITIVE, True), np.subtract: (ANY, POSITIVE, True),
    np.multiply: (ANY, POSITIVE, True), np.divide: (ANY, POSITIVE, True),
    np.power: (POSITIVE, ANY, True), np.float_power: (POSITIVE, ANY, True),
    np.logaddexp: (ANY, POSITIVE, False), np.logaddexp2: (ANY, POSITIVE, False),
    np.arctan2: (ANY, POSITIVE, False), np.hypot: (ANY, POSITIVE, False),
    np.heaviside: (ANY, POSITIVE, False), np.maximum: (ANY, POSITIVE, False),
    np.minimum: (ANY, POSITIVE, False), np.fmax: (ANY, POSITIVE, False),
    np.fmin: (ANY, POSITIVE, False),
}


def _c(values, scale=1.0):
    return [v * scale for v in values]


def _unary_cases():
    cases = unary_cases(UNARY)
    cases += [case(np.angle, np.array(ANY_C), deg=True), case(np.angle, np.array(ANY_C), True),
              case(np.angle, np.array(ANY), True)]
    # sinc at and next to 0, where (cos(pi x) - sinc(x)) / x is 0/0 or cancels: derivative 0
    cases += [case(np.sinc, np.array([0.0, 1e-3, -0.02, 0.05]), id="sinc-near-zero"),
              case(np.sinc, 0.0, id="sinc-at-zero"),
              case(np.sinc, np.array([0.0, 0.01], np.float32), id="sinc-near-zero-float32")]
    return cases


def _binary_cases():
    cases = []
    complex_points = {np.power: RIGHT_C, np.float_power: RIGHT_C}
    for f, (a, b, complex_) in BINARY.items():
        a64, b64 = np.array(a), np.array(b)
        cases += [
            case(f, a64, b64),
            case(f, np.array(a, np.float32), np.array(b, np.float32)),
            case(f, float(a[0]), float(b[0])),
            case(f, np.array(a, np.float32), float(b[1])),           # float32 with a float
            case(f, a64.reshape(3, 1) * np.ones((1, 2)), np.array(b[:2])),  # broadcasting
            case(f, float(a[2]), b64),                                 # a scalar broadcast
        ]
        if complex_:
            ca = np.array(complex_points.get(f, ANY_C))
            cb = np.array(RIGHT_C) if f not in complex_points else np.array(ANY_C) * 0.5
            cases += [
                case(f, ca, cb),
                case(f, ca.astype(np.complex64), cb.astype(np.complex64)),
                case(f, np.abs(ca) if f in complex_points else a64, complex(cb[0])),  # mixed
                case(f, ca, b64 if f not in complex_points else b64 * 0.5),      # real arg
            ]
    # ties: the gradient is split evenly, as central differences see it
    for f in (np.maximum, np.minimum, np.fmax, np.fmin):
        cases.append(case(f, np.array([0.5, 1.0, 2.0]), np.array([0.5, 3.0, 2.0]),
                          id=f"{f.__name__}-ties"))
    # exponent zero: d(a**b)/da is 0 there even at a == 0
    cases.append(case(np.power, np.array([0.5, 2.0]), np.array([0.0, 3.0]),
                      id="power-zero-exponent"))
    return cases


def _non_differentiable_cases():
    floats = np.array([0.3, -1.7, 2.2])
    other = np.array([0.5, -1.2, 0.9])   # no quotient at an integer: floor_divide's jumps
    ints = np.array([3, 5, 12])
    cases = []
    for f in (np.floor, np.ceil, np.trunc, np.rint, np.fix, np.round, np.around,
              np.signbit, np.isnan, np.isinf, np.isfinite, np.isreal, np.iscomplex,
              np.logical_not):
        cases += [case(f, floats), case(f, np.array(floats, np.float32))]
    cases += [case(np.round, floats, 1), case(np.around, floats, 1),
              case(np.isreal, np.array(ANY_C)), case(np.iscomplex, np.array(ANY_C)),
              case(np.isnan, np.array(ANY_C))]
    for f in (np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
              np.logical_and, np.logical_or, np.logical_xor, np.floor_divide):
        cases += [case(f, floats, other), case(f, np.float32(0.7), floats)]
    for f in (np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.left_shift, np.right_shift):
        cases.append(case(f, ints, np.array([1, 2, 3])))
    cases.append(case(np.invert, ints))
    return cases


def _number_cases():
    """NumPy numbers, as scalar loops make them (``x[i] ** 2``, ``s + x[i]``): the rules'
    number paths, one pullback shared per argument types for add and subtract, and number
    pullbacks that project by type for the others."""
    pairs = [(np.float64(0.7), np.float64(1.3)), (np.float32(0.7), np.float32(1.3)),
             (np.float32(0.7), np.float64(1.3)), (np.float64(0.7), 1.3),
             (np.complex128(0.3 + 0.4j), np.complex128(1.1 - 0.5j)),
             (np.complex64(0.3 + 0.4j), np.float32(1.3)), (np.float64(0.7), 2),
             (np.float32(1.3), np.int64(3))]
    cases = []
    for f in (np.add, np.subtract, np.multiply, np.divide, np.power):
        for a, b in pairs:
            cases.append(case(f, a, b, id=f"{f.__name__}-{type(a).__name__}-{type(b).__name__}"))
    return cases


CASES = _unary_cases() + _binary_cases() + _non_differentiable_cases() + _number_cases()


def test_linear_rules_share_one_pullback_per_argument_types():
    from chainrules import rrule

    _, first = rrule(np.add, np.float32(1.0), np.float32(2.0))
    _, second = rrule(np.add, np.float32(5.0), np.float32(-3.0))
    assert first is second  # nothing of the values is kept
    _, cotangent_a, cotangent_b = second(np.float64(0.5))  # a float64 dy: projected
    assert type(cotangent_a) is np.float32 and cotangent_a == 0.5 and cotangent_b == 0.5
    _, minus = rrule(np.subtract, np.complex64(1j), np.complex64(2.0))
    assert minus(np.complex64(1 + 2j))[1:] == (np.complex64(1 + 2j), np.complex64(-1 - 2j))


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_elementwise_rule(rule_case):
    check_case(rule_case)


def _cast_by_the_ufunc(f, kind):
    """The rrule's and frule's derivatives of ``f(a, b)``: float64 ``a`` and float32 values
    ``b`` given as ``kind`` (float32, which the ufunc casts to float64, or float64), as arrays
    and as NumPy numbers."""
    from chainrules import frule, rrule
    from chainrules.core.tangents import NoTangent

    a, b, _ = BINARY[f]
    results = []
    b = np.array(b, np.float32)
    for first, second in ((np.array(a), b.astype(kind)), (np.float64(a[1]), kind(b[1]))):
        y, pullback = rrule(f, first, second)
        _, da, db = pullback(np.ones_like(y))
        dy = frule((NoTangent(), np.ones_like(first), np.full_like(second, 0.5)), f, first,
                   second)[1]
        results.append((y, da, db, dy))
    return results


@pytest.mark.parametrize("f", list(BINARY), ids=lambda f: f.__name__)
def test_partials_see_a_float32_argument_as_the_ufunc_cast_it(f):
    """A float32 argument meeting a float64 one is cast to float64 by the ufunc: the partials
    compute in float64 too (they computed ``log(a)`` of ``a ** b`` and the ``1 / b`` of
    ``x / b`` in float32 once: gradients of float64 parameters good to 1e-7 only), so the
    derivatives are those of the same values given as float64, to the last bit."""
    mixed, wide = _cast_by_the_ufunc(f, np.float32), _cast_by_the_ufunc(f, np.float64)
    for (y, da, db, dy), (y64, da64, db64, dy64) in zip(mixed, wide):
        assert np.array_equal(y, y64)
        assert np.asarray(da).dtype == np.float64 and np.asarray(db).dtype == np.float32
        np.testing.assert_array_equal(da, da64)
        np.testing.assert_array_equal(db, np.asarray(db64).astype(np.float32))
        np.testing.assert_array_equal(dy, dy64)


def test_a_negative_real_base_with_complex_exponents():
    """``np.power`` casts a real base to complex for a complex exponent, so ``log(a)`` of a
    negative ``a`` is complex, not nan (it was nan for a real array: a Python float was cast)."""
    import chainrules as cr
    from tests.ad.finite_differences import numerical_gradient

    base = np.array([-2.0, -0.5, 1.5])

    def loss(b):
        return np.sum(np.abs(np.power(base, b)) ** 2)

    b = np.array([0.5 + 0.1j, 1.5 - 0.2j, -0.3 + 0.4j])
    gradient = cr.grad(loss)(b)
    # |a^b|^2 = exp(2 Re(b log a)): dL/dRe(b) + i dL/dIm(b) = 2 L conj(log a) per element
    logs = np.log(base.astype(complex))
    expected = 2 * np.abs(np.power(base, b)) ** 2 * np.conj(logs)
    np.testing.assert_allclose(gradient, expected, rtol=1e-12)
    np.testing.assert_allclose(gradient, numerical_gradient(loss, b), rtol=1e-6)
    np.testing.assert_allclose(cr.jvp(loss, (b,), (np.ones(3, complex),))[1],
                               np.sum(np.real(np.conj(expected))), rtol=1e-12)


@pytest.mark.parametrize("function, partial", [
    (np.maximum, lambda a, b: (b > a) + 0.5 * (b == a)),
    (np.power, lambda a, b: a ** b * np.log(a)),
    (np.multiply, lambda a, b: a),
])
def test_a_numbers_cotangent_next_to_an_array_is_deferred(function, partial):
    # np.maximum(h, 0.7): the engine never asks for the constant's cotangent, a sum over the
    # array of its partial; the pullback defers it (the array's own stays as it was)
    from chainrules.core.registry import rrule
    from chainrules.core.thunks import Thunk, unthunk

    a = np.array([0.5, 0.7, 1.5, 2.0])
    b = 0.7
    dy = np.array([1.0, -2.0, 3.0, 0.5])
    _, pullback = rrule(function, a, b)
    _, _, cotangent = pullback(dy)
    assert type(cotangent) is Thunk and not cotangent.is_computed
    value = unthunk(cotangent)
    assert type(value) is float
    np.testing.assert_allclose(value, np.sum(partial(a, b) * dy), rtol=1e-14)
    _, _, number = rrule(function, 1.2, b)[1](1.5)  # numbers: computed at once, as before
    assert type(number) is float
