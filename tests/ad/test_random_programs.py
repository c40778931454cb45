"""Random small elementwise programs: ``cr.grad`` against finite differences.

Programs are compositions of +, -, *, /, ** (integer and float exponents, 0 and 1 included),
sin, exp, log of positive values, np.sum and indexing, over Python floats and 1-d arrays whose
power terms meet exact zeros. Where finite differences are ill-defined (a power term at 0),
the gradient is checked against the closed form instead.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import chainrules as cr
from chainrules.testing import fd_derivative

EXPONENTS = [0, 1, 2, 3, 0.0, 1.0, 2.0, 0.5, 1.5]
UNARY = {"sin": (np.sin, np.cos), "exp": (np.exp, np.exp),
         "log": (lambda u: np.log(1.5 + u * u), lambda u: 2 * u / (1.5 + u * u))}


def _power_derivative(x, p):
    """d(x ** p)/dx in closed form (p == 0 -> 0, p == 1 -> 1, as at x == 0)."""
    if p == 0:
        return 0.0
    if p == 1:
        return 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return p * np.float64(x) ** (p - 1)  # NumPy's inf at 0 for p < 1


@st.composite
def programs(draw):
    """(f, df): a random scalar program of one real number and its derivative."""
    terms = []
    for _ in range(draw(st.integers(1, 3))):
        p = draw(st.sampled_from(EXPONENTS))
        name = draw(st.sampled_from(sorted(UNARY)))
        c = draw(st.sampled_from([1.0, -2.0, 0.5]))
        op = draw(st.sampled_from(["+", "-", "*", "/"]))
        terms.append((p, name, c, op))

    def f(x):
        total = 0.0
        for p, name, c, op in terms:
            u = UNARY[name][0](x)
            w = x ** p
            if op == "+":
                term = c * w + u
            elif op == "-":
                term = c * w - u
            elif op == "*":
                term = c * w * u
            else:
                term = c * w / (2.0 + u * u)
            total = total + term
        return total

    def df(x):
        total = 0.0
        for p, name, c, op in terms:
            u, du = UNARY[name][0](x), UNARY[name][1](x)
            w, dw = x ** p, _power_derivative(x, p)
            if op == "+":
                total += c * dw + du
            elif op == "-":
                total += c * dw - du
            elif op == "*":
                total += c * (dw * u + w * du)
            else:
                total += c * (dw * (2.0 + u * u) - w * 2 * u * du) / (2.0 + u * u) ** 2
        return total

    return f, df, any(p in (0.5, 1.5) for p, *_ in terms)


POINTS = st.one_of(st.just(0.0), st.floats(-1.5, 1.5), st.sampled_from([0.25, -0.75]))


@settings(max_examples=60, deadline=None)
@given(programs(), POINTS)
def test_python_float_programs(program, x):
    f, df, fractional = program
    if fractional and x < 0:
        x = -x  # a fractional power of a negative number is nan in NumPy
    with warnings.catch_warnings():
        expected = df(x)
        warnings.simplefilter("ignore", RuntimeWarning)
        gradient = cr.grad(f)(x)
    assert type(gradient) is float
    if x == 0.0 or (fractional and x < 0.1):
        # near a power term's 0, FD straddles the kink or leaves the domain: closed form
        # inf and nan (inf * 0 in a product term) where the closed form has them
        assert np.array_equal([gradient], [expected], equal_nan=True) or (
            gradient == pytest.approx(expected, rel=1e-12, abs=1e-12))
    else:
        assert gradient == pytest.approx(fd_derivative(f, x), rel=1e-6, abs=1e-6)
        assert gradient == pytest.approx(expected, rel=1e-9, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(programs(), st.lists(st.sampled_from([0.0, 0.3, 1.1, 2.0]), min_size=1, max_size=4))
def test_array_programs_with_sum_and_indexing(program, values):
    """The same programs on a 1-d array, through np.sum of the whole and of an indexed
    element, with exact zeros among the elements: the closed form, elementwise."""
    f, df, _ = program
    x = np.array(values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        gradient = cr.grad(lambda x: np.sum(f(x)) + f(x[0]))(x)
        expected = np.array([df(float(v)) for v in values])
    expected[0] *= 2
    assert gradient.dtype == np.float64 and gradient.shape == x.shape
    assert np.allclose(gradient, expected, rtol=1e-9, atol=1e-12, equal_nan=True) or np.all(
        (gradient == expected) | np.isclose(gradient, expected, rtol=1e-9, atol=1e-12))


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(EXPONENTS), st.floats(0.2, 2.0))
def test_nested_grad_of_powers(p, x):
    """Second derivatives of x ** p by ``cr.grad(cr.grad(...))`` against the closed form."""
    expected = 0.0 if p in (0, 1) else p * (p - 1) * x ** (p - 2)
    assert cr.grad(cr.grad(lambda x: x ** p))(x) == pytest.approx(expected, rel=1e-9,
                                                                  abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(programs(), st.floats(0.3, 2.0))
def test_nested_transforms_of_random_programs(program, x):
    """Every way of nesting transforms on a random program of a Python float: second
    derivatives (reverse over reverse, forward over reverse, hessian) against finite
    differences of the closed-form first derivative, and the values of inner transforms
    differentiated by the outer one against that first derivative."""
    f, df, _ = program
    second = fd_derivative(df, x)
    assert cr.grad(cr.grad(f))(x) == pytest.approx(second, rel=1e-6, abs=1e-6)
    assert cr.jvp(cr.grad(f), (x,), (1.0,))[1] == pytest.approx(second, rel=1e-6, abs=1e-6)
    assert cr.hessian(f)(x) == pytest.approx(second, rel=1e-6, abs=1e-6)
    first = df(x)
    assert cr.grad(lambda x: cr.value_and_grad(f)(x)[0])(x) == pytest.approx(first, rel=1e-9)
    assert cr.grad(lambda x: cr.vjp(f, x)[0])(x) == pytest.approx(first, rel=1e-9)
    assert cr.jvp(f, (x,), (1.0,))[1] == pytest.approx(first, rel=1e-9)
