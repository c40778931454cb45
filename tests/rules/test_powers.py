"""Powers at 0 and the singular points of the elementwise rules (issue 11, item 2).

- Every power form at ``x == 0`` (``x ** 0``, ``x ** 1``, ``x ** 2``, ``x ** 0.5``, negative
  exponents; the ``**`` operator, ``np.power``, ``np.float_power``; Python float, NumPy
  float64 and float32, 0-d and 1-d array bases) has the closed-form derivative
  ``p * x ** (p - 1)`` with ``p == 0 -> 0`` (JAX's convention), in the base's type.
- The exponent's derivative ``x ** p * log(x)`` is 0 at ``x == 0`` for ``p > 0``.
- A Python float or NumPy scalar at a singular point of a rule (log at 0, arcsin at 1, ...)
  behaves as the same computation on a 0-d or 1-element array: same value including inf and
  nan, NumPy's RuntimeWarning rather than an exception; in reverse and forward mode.
- Derivatives are computed in the primal's precision: a float32 power's within 1 ulp of
  NumPy's own float32 ``p * x ** (p - 1)``.

Expected values are closed forms or the same computation on arrays, never the code's own
output on the same input.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import chainrules as cr
from chainrules import NoTangent, frule, rrule, unthunk

INF = math.inf
NAN = math.nan


def _run(thunk):
    """``thunk()`` and the set of warning categories it raised (all warnings recorded)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = thunk()
    return value, {warning.category for warning in caught}


def _same(a, b) -> bool:
    """Equal values, inf and nan included (and the sign of infinity)."""
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


# --- item 2, the reproducer -------------------------------------------------------------------

def test_polynomial_at_zero_has_exact_finite_gradient():
    gradient, raised = _run(lambda: cr.grad(lambda x: np.sum(x ** 2 + x ** 1 + x ** 0))(
        np.zeros(1)))
    assert _same(gradient, [1.0])
    assert raised == set()


def test_log_and_square_root_of_a_python_float_at_zero_are_inf_without_a_warning():
    # pullbacks run with NumPy's floating-point errors ignored: an infinite derivative is inf,
    # as in JAX, not a warning from a rule (the user's own np.log(0.0) warns, in the forward)
    gradient, raised = _run(lambda: cr.grad(lambda x: x ** 0.5)(0.0))
    assert gradient == INF and type(gradient) is float
    assert raised == set()
    value_warnings = _run(lambda: np.log(0.0))[1]
    gradient, raised = _run(lambda: cr.grad(np.log)(0.0))
    assert gradient == INF and type(gradient) is float
    assert raised == value_warnings  # the forward's own log(0), as NumPy warns, and no more


# --- every power form at 0 ----------------------------------------------------------------------

# (exponent, d(x ** p)/dx at x == 0: the limit from the right where it is infinite); integer
# and float exponents both (a dict would keep one of 0 and 0.0: they hash alike)
EXPONENTS = [(0, 0.0), (0.0, 0.0), (1, 1.0), (1.0, 1.0), (2, 0.0), (2.0, 0.0), (3, 0.0),
             (1.5, 0.0), (0.5, INF), (-1, -INF), (-1.0, -INF), (-2, -INF), (-0.5, -INF)]
DERIVATIVE_AT_ZERO = dict(EXPONENTS)
FORMS = {
    "operator": lambda x, p: x ** p,
    "np.power": np.power,
    "np.float_power": np.float_power,
}
# base at 0 -> (how to reduce to a scalar, the gradient's expected type)
BASES = {
    "float": (lambda: 0.0, float),
    "float64": (lambda: np.float64(0.0), np.float64),
    "float32": (lambda: np.float32(0.0), np.float32),
    "0-d": (lambda: np.zeros(()), np.ndarray),
    "1-d": (lambda: np.zeros(2), np.ndarray),
    "1-d float32": (lambda: np.zeros(2, np.float32), np.ndarray),
}


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("p", [p for p, _ in EXPONENTS], ids=repr)
def test_every_power_form_at_zero_has_the_closed_form_derivative(base, form, p):
    make, kind = BASES[base]
    x = make()
    power = FORMS[form]
    gradient, raised = _run(lambda: cr.grad(lambda x: np.sum(power(x, p)))(x))
    expected = DERIVATIVE_AT_ZERO[p]
    assert _same(gradient, np.full(np.shape(x), expected)), (gradient, expected)
    assert type(gradient) is kind
    if kind is np.ndarray:
        assert gradient.dtype == x.dtype and gradient.shape == x.shape
    # where p * x ** (p - 1) divides by zero the derivative is inf, computed with NumPy's
    # errors ignored (as JAX): no warning from the rule; the forward x ** p itself warns where
    # NumPy does (a negative power of 0)
    assert raised == _run(lambda: np.sum(power(np.asarray(x), p)))[1]


@pytest.mark.parametrize("p", [0, 0.0, 1, 1.0, 2, 2.0, 0.5, -1, np.float32(0.5), np.float64(2)],
                         ids=repr)
@pytest.mark.parametrize("x", [0.0, np.float64(0.0), np.float32(0.0), np.zeros(3),
                               np.zeros(3, np.float32)], ids=lambda x: type(x).__name__)
def test_power_pushforward_at_zero_is_the_closed_form(x, p):
    """frule of x ** p at 0, with a unit tangent for x: the same numbers as the pullback."""
    expected = {0: 0.0, 1: 1.0, 2: 0.0, 0.5: INF, -1: -INF}[float(p)]
    dx = np.ones_like(x) if np.ndim(x) else type(x)(1.0)
    (y, dy), raised = _run(lambda: frule((NoTangent(), dx, NoTangent()), np.power, x, p))
    assert _same(dy, np.full(np.shape(x), expected))
    assert np.result_type(dy) == np.result_type(y)  # the output's precision
    assert raised == ({RuntimeWarning} if math.isinf(expected) else set())


@pytest.mark.parametrize("x", [0j, np.complex128(0), np.complex64(0), np.zeros(2, complex)],
                         ids=lambda x: type(x).__name__)
@pytest.mark.parametrize("p", [0, 0.0, 1, 1.0, 2, 2.0, 3], ids=repr)
def test_complex_base_at_zero(x, p):
    expected = {0: 0.0, 1: 1.0, 2: 0.0, 3: 0.0}[int(p)]
    (_, pullback), raised = _run(lambda: rrule(np.power, x, p))
    cotangent = unthunk(pullback(np.ones(np.shape(x), complex) if np.ndim(x) else 1.0 + 0j)[1])
    assert _same(cotangent, np.full(np.shape(x), expected, complex))
    assert type(cotangent) is type(x)
    assert raised == set()


@pytest.mark.parametrize("p", [0.5, -1.0, -0.5], ids=repr)
def test_complex_base_at_zero_singular_exponent_behaves_as_an_array(p):
    (_, reference), _ = _run(lambda: rrule(np.power, np.zeros((), complex), p))
    expected, expected_warnings = _run(lambda: reference(np.ones((), complex))[1])
    for x in (0j, np.complex128(0)):
        (_, pullback), _ = _run(lambda: rrule(np.power, x, p))
        cotangent, raised = _run(lambda: pullback(1.0 + 0j)[1])
        assert _same(cotangent, expected) and type(cotangent) is type(x)
        assert raised == expected_warnings


@pytest.mark.parametrize("p", [0.5, 1, 1.0, 2, 2.0, 3.5], ids=repr)
@pytest.mark.parametrize("form", ["operator", "np.power", "np.float_power"])
def test_exponent_derivative_at_zero_base_is_zero_for_positive_exponents(p, form):
    """d(0 ** p)/dp = 0 ** p log(0) is 0 for p > 0 (JAX). A constant number base's own
    derivative p 0 ** (p - 1) is computed too (the rule cannot know it is constant), so for
    p < 1 NumPy warns about that one; an array base's is deferred and never computed."""
    power = FORMS[form]
    quiet = p >= 1
    for base in (0.0, np.float64(0.0), np.float32(0.0)):
        gradient, raised = _run(lambda: cr.grad(lambda q: power(base, q))(float(p)))
        assert gradient == 0.0 and type(gradient) is float
        assert raised == set() or not quiet
    gradient, raised = _run(lambda: cr.grad(lambda q: np.sum(power(np.zeros(3), q)))(
        np.full(1, float(p))))
    assert _same(gradient, [0.0]) and raised == set()
    # both arguments at once, and the exponent as a NumPy float32
    gradients, raised = _run(lambda: cr.grad(power, argnums=(0, 1))(0.0, float(p)))
    assert _same(gradients, (DERIVATIVE_AT_ZERO.get(p, 0.0), 0.0))
    assert raised == set()  # an infinite derivative in the base is inf, without a warning
    gradient, raised = _run(lambda: cr.grad(lambda q: power(0.0, q))(np.float32(p)))
    assert gradient == 0.0 and type(gradient) is np.float32
    assert raised == set() or not quiet


@pytest.mark.parametrize("x", [0.0, np.float64(0.0), np.float32(0.0), -1.5, 2.0])
def test_reversed_power_of_a_constant_base(x):
    """``2.0 ** x``: the derivative 2 ** x log 2, in x's type."""
    for f in (lambda x: 2.0 ** x, lambda x: np.power(2.0, x), lambda x: 2 ** x,
              lambda x: np.float_power(2, x)):
        gradient, raised = _run(lambda: cr.grad(f)(x))
        assert type(gradient) is type(x) and raised == set()
        assert gradient == pytest.approx(2.0 ** float(x) * math.log(2.0),
                                         rel=1e-6 if type(x) is np.float32 else 1e-15)


def test_integer_exponent_arrays_with_zeros():
    x = np.zeros(4)
    p = np.array([0, 1, 2, 3])
    gradient, raised = _run(lambda: cr.grad(lambda x: np.sum(x ** p))(x))
    assert _same(gradient, [0.0, 1.0, 0.0, 0.0]) and raised == set()
    gradient, raised = _run(lambda: cr.grad(lambda x: np.sum(np.power(x, p * 1.0)))(x))
    assert _same(gradient, [0.0, 1.0, 0.0, 0.0]) and raised == set()


def test_number_types_are_kept():
    """A NumPy float64 input gets a float64 cotangent, a Python float a Python float, float32
    stays float32 (projected), on the scalar-loop paths of ``x ** 2``."""
    for x in (3.0, np.float64(3.0), np.float32(3.0)):
        for p in (2, 2.0, 0, 0.0, np.float32(2.0)):
            gradient = cr.grad(lambda x: x ** p)(x)
            assert type(gradient) is type(x), (x, p, gradient)
            assert gradient == (6.0 if p else 0.0)
    gradient = cr.grad(lambda x: sum(x[i] ** 2 for i in range(3)))(np.arange(3.0))
    assert _same(gradient, [0.0, 2.0, 4.0])


# --- every singular point of the elementwise table ---------------------------------------------

# (function of one argument, point, closed-form derivative there); the derivative is the
# limit NumPy's formula reaches in floating point (inf where it divides by zero, nan for 0/0)
SINGULAR = [
    ("log", np.log, 0.0, INF), ("log2", np.log2, 0.0, INF), ("log10", np.log10, 0.0, INF),
    ("log1p", np.log1p, -1.0, INF), ("sqrt", np.sqrt, 0.0, INF), ("cbrt", np.cbrt, 0.0, INF),
    ("arcsin(1)", np.arcsin, 1.0, INF), ("arcsin(-1)", np.arcsin, -1.0, INF),
    ("arccos(1)", np.arccos, 1.0, -INF), ("arccos(-1)", np.arccos, -1.0, -INF),
    ("arctanh(1)", np.arctanh, 1.0, INF), ("arctanh(-1)", np.arctanh, -1.0, INF),
    ("arccosh(1)", np.arccosh, 1.0, INF), ("reciprocal", np.reciprocal, 0.0, -INF),
    ("1/x", lambda x: 1 / x, 0.0, -INF), ("1.0/x", lambda x: 1.0 / x, 0.0, -INF),
    ("divide(1, x)", lambda x: np.divide(1.0, x), 0.0, -INF),
    ("x/0", lambda x: x / 0, 1.0, INF), ("x/0.0", lambda x: x / 0.0, 1.0, INF),
    ("x**-1", lambda x: x ** -1, 0.0, -INF), ("x**-2", lambda x: x ** -2, 0.0, -INF),
    ("x**-0.5", lambda x: x ** -0.5, 0.0, -INF), ("x**0.5", lambda x: x ** 0.5, 0.0, INF),
    ("float_power(x,-1)", lambda x: np.float_power(x, -1), 0.0, -INF),
    ("0**x at -1", lambda x: 0.0 ** x, -1.0, NAN),  # inf * log(0 -> 1): JAX's nan
    ("arctan2(x, 0)", lambda x: np.arctan2(x, 0.0), 0.0, NAN),
    ("hypot(x, 0)", lambda x: np.hypot(x, 0.0), 0.0, NAN),
    ("exp overflow", np.exp, 1000.0, INF), ("sqrt(-1)", np.sqrt, -1.0, NAN),
]
KINDS = {"float": float, "float64": np.float64, "float32": np.float32}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name, f, point, expected", SINGULAR, ids=[s[0] for s in SINGULAR])
def test_numbers_at_singular_points_behave_as_arrays(name, f, point, expected, kind):
    number = KINDS[kind](point)
    dtype = np.float32 if kind == "float32" else np.float64
    gradient, raised = _run(lambda: cr.grad(f)(number))
    zero_d, raised_zero_d = _run(lambda: cr.grad(f)(np.array(point, dtype)))
    one, raised_one = _run(lambda: cr.grad(lambda x: np.sum(f(x)))(np.array([point], dtype)))
    assert _same(gradient, expected), (gradient, expected)
    assert _same(gradient, zero_d) and _same([gradient], one)
    assert type(gradient) is KINDS[kind]
    # the same warnings as the function's own value (none from the rule: its infinite
    # derivative is computed with NumPy's errors ignored, as in JAX)
    assert raised == raised_zero_d == raised_one == \
        _run(lambda: f(np.array([point], dtype)))[1]


UNARY_SINGULAR = [(name, f, point, expected) for name, f, point, expected in SINGULAR
                  if isinstance(f, np.ufunc)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name, f, point, expected", UNARY_SINGULAR,
                         ids=[s[0] for s in UNARY_SINGULAR])
def test_pushforward_of_numbers_at_singular_points_behaves_as_arrays(name, f, point, expected,
                                                                    kind):
    number = KINDS[kind](point)
    dtype = np.float32 if kind == "float32" else np.float64
    (_, tangent), raised = _run(lambda: frule((NoTangent(), KINDS[kind](1.0)), f, number))
    (_, array_tangent), array_raised = _run(
        lambda: frule((NoTangent(), np.ones(1, dtype)), f, np.array([point], dtype)))
    assert _same(tangent, expected) and _same([tangent], array_tangent)
    assert raised == array_raised and RuntimeWarning in raised


@pytest.mark.parametrize("f, point", [(np.log, 0j), (np.reciprocal, 0j), (np.sqrt, 0j),
                                      (np.arctanh, 1 + 0j), (np.log1p, -1 + 0j),
                                      (np.arcsin, 1 + 0j), (np.log10, 0j)],
                         ids=lambda v: getattr(v, "__name__", repr(v)))
def test_complex_numbers_at_singular_points_behave_as_arrays(f, point):
    (_, reference), _ = _run(lambda: rrule(f, np.array(point)))
    expected, expected_raised = _run(lambda: reference(np.ones((), complex))[1])
    (_, expected_tangent), expected_forward = _run(
        lambda: frule((NoTangent(), np.ones((), complex)), f, np.array(point)))
    for number in (point, np.complex128(point)):
        (_, pullback), _ = _run(lambda: rrule(f, number))
        cotangent, raised = _run(lambda: pullback(1.0 + 0j)[1])
        assert _same(cotangent, expected) and type(cotangent) is type(number)
        assert raised == expected_raised  # NumPy's complex reciprocal does not warn
        (_, tangent), raised = _run(lambda: frule((NoTangent(), 1.0 + 0j), f, number))
        assert _same(tangent, expected_tangent) and raised == expected_forward


def test_python_int_divisor_zero_warns_like_numpy():
    for x in (1.0, np.float64(1.0), np.float32(1.0), np.ones(()), np.ones(2)):
        gradient, raised = _run(lambda: cr.grad(lambda x: np.sum(x / 0))(x))
        assert _same(gradient, np.full(np.shape(x), INF)) and raised == {RuntimeWarning}


# --- precision ----------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.1, 0.5, 1.7, 2.5, -0.3, -1.5, 3, np.float32(0.3),
                               np.float32(2.2)], ids=repr)
def test_float32_power_derivative_is_numpy_float32_within_one_ulp(p):
    rng = np.random.default_rng(0)
    x = rng.uniform(0.05, 4.0, 200).astype(np.float32)
    p32 = np.float32(p)
    # NumPy's own float32 computation of p * x ** (p - 1), and the exact float64 one
    exact = np.float64(p32) * np.float64(x) ** (np.float64(p32) - 1)
    for base in (x, *x[:5]):  # the array and NumPy float32 numbers (the scalar-loop path)
        _, pullback = rrule(np.power, base, p)
        cotangent = unthunk(pullback(np.ones_like(base))[1])
        assert np.result_type(cotangent) == np.float32
        # NumPy's own float32 p * x ** (p - 1) on the same kind of base (NumPy's scalar and
        # array powers may differ by an ulp), and the exact one, rounded
        numpy32 = p32 * base ** (p32 - np.float32(1))
        assert np.all(np.abs(cotangent - numpy32) <= np.spacing(np.abs(numpy32)))
        index = slice(None) if np.ndim(base) else np.flatnonzero(x == base)[0]
        assert np.allclose(cotangent, exact[index], rtol=4 * np.finfo(np.float32).eps, atol=0)
    gradient = cr.grad(lambda x: np.sum(x ** p))(x)
    assert gradient.dtype == np.float32
    assert np.allclose(gradient, exact, rtol=4 * np.finfo(np.float32).eps, atol=0)


# --- the rule-testing kit at 0 (where finite differences are well defined) ----------------------

from chainrules.testing import case, check_case  # noqa: E402

CASES = [case(f, x, p, id=f"{f.__name__}-{type(x).__name__}-{p!r}")
         for f in (np.power, np.float_power)
         for x in (0.0, np.float64(0.0), np.float32(0.0), np.zeros(3), np.zeros(3, np.float32))
         for p in (0, 1, 2, 3, 1.0, 2.0)]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_kit_on_powers_at_zero(rule_case):
    check_case(rule_case)
