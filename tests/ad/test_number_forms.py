"""Number forms (chainrules.core.registry.NumberForm): float64 scalar operations recorded as
plain values, their cotangents computed inline by the backward pass. Every path of that
mechanism checked against closed forms: each form, constants on either side, a number read
by several operations, cotangents the inline path hands to the rule's own pullback (thunks,
arrays' cotangents, traced values at order 2), repeated backward passes, the checking mode,
and a rule registered over a form's."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules import NoTangent, rrule
from chainrules.core.registry import INDEX_READ, NUMBER_FORMS

X = np.array([0.7, -1.3, 2.1, 0.4])


def test_every_operator_form_against_its_closed_form():
    def f(x):
        a, b, c, d = x[0], x[1], x[-2], x[3]
        return a * b + a / c - b ** 3 + 2.0 * d - (1 - c) + d ** 0.5 + 3 / a + c ** a

    a, b, c, d = X
    expected = np.array([b - 3 / a ** 2 + 1 / c + np.log(c) * c ** a,
                         a - 3 * b ** 2,
                         -a / c ** 2 + 1 + a * c ** (a - 1),
                         2.0 + 0.5 / np.sqrt(d)])
    gradient = cr.grad(f)(X)
    assert np.allclose(gradient, expected, rtol=1e-12)
    assert gradient.dtype == np.float64


def test_the_operations_are_recorded_as_number_forms():
    # The mechanism under test is in use: x[i] and the operators have forms, and their rule
    # is the registered one.
    for function in (operator.getitem, np.add, np.subtract, np.multiply, np.divide, np.power):
        form = NUMBER_FORMS[function]
        assert form.rule is rrule.lookup(function)[0]
    assert NUMBER_FORMS[operator.getitem].partials is INDEX_READ


def test_a_number_read_by_several_operations_sums_its_cotangents():
    def f(x):
        y = x[1]
        return y * y + y - 4.0 * y + y ** 2

    y = X[1]
    assert np.allclose(cr.grad(f)(X), [0.0, 4 * y - 3, 0.0, 0.0], rtol=1e-12)


def test_each_element_read_many_times_in_a_loop():
    # x[i] read 3 times per element: the first read is sparse, the second makes the owned
    # buffer, the rest are added into it in place
    def f(x):
        total = 0.0
        for _ in range(3):
            for i in range(len(x)):
                total = total + x[i] * x[i]
        return total

    assert np.allclose(cr.grad(f)(X), 6 * X, rtol=1e-12)


def test_sums_of_sparse_cotangents_at_order_one_are_plain_sums(monkeypatch):
    # forward over reverse sums cotangents with tangents as pairs of buffers; at order 1 a
    # second sparse cotangent (y[1] and y[0:2] both read) makes a plain owned sum at once,
    # without trying the pair sum first
    from chainrules.ad.transforms import reverse

    tried = []
    pair_sum = reverse.owned_pair_sum
    monkeypatch.setattr(reverse, "owned_pair_sum", lambda *a: tried.append(1) or pair_sum(*a))

    def f(x):
        return x[1] * x[1] + np.sum(x[0:2] ** 2) + x[3]

    assert np.allclose(cr.grad(f)(X), [2 * X[0], 4 * X[1], 0.0, 1.0], rtol=1e-12)
    assert tried == []
    assert np.allclose(cr.hvp(f, X, np.ones(4)), [2.0, 4.0, 0.0, 0.0], rtol=1e-12)
    assert tried  # under hvp the same sums are pairs


def test_a_number_also_read_by_array_operations():
    # y's cotangent comes from np.multiply's (array) pullback and from number forms: the inline
    # sums meet the general accumulation
    def f(x):
        y = x[2]
        return np.sum(np.arange(3.0) * y) + y ** 2 + np.sum(x[1:3] * y)

    a = X
    expected = np.zeros(4)
    expected[2] = 3.0 + 2 * a[2] + a[1] + 2 * a[2]
    expected[1] = a[2]
    assert np.allclose(cr.grad(f)(X), expected, rtol=1e-12)


def test_an_array_output_made_of_numbers():
    # the numbers' cotangents come from np.array's pullback (not float64 numbers only)
    def f(x):
        return np.array([x[0] * x[1], x[2] ** 2, x[3] - x[0]])

    a, b, c, d = X
    expected = np.array([[b, a, 0, 0], [0, 0, 2 * c, 0], [-1, 0, 0, 1]])
    assert np.allclose(cr.jacobian(f)(X), expected, rtol=1e-12)


def test_repeated_backward_passes_over_the_same_records():
    y, pullback = cr.vjp(lambda x: x[0] * x[1] + x[2] ** 2, X)
    first = pullback(1.0)[0]
    second = pullback(2.0)[0]
    expected = np.array([X[1], X[0], 2 * X[2], 0.0])
    assert np.allclose(first, expected, rtol=1e-12)
    assert np.allclose(second, 2 * expected, rtol=1e-12)


@pytest.mark.parametrize("order", ["hessian", "hvp", "grad of grad"])
def test_second_derivatives_through_the_forms(order):
    # inner records made of plain float64 numbers meet traced cotangents (order 2)
    def f(x):
        return sum(x[i] ** 3 * x[(i + 1) % len(x)] for i in range(len(x)))

    n = len(X)
    hessian = np.zeros((n, n))
    for i in range(n):
        j = (i + 1) % n
        hessian[i, i] += 6 * X[i] * X[j]
        hessian[i, j] += 3 * X[i] ** 2
        hessian[j, i] += 3 * X[i] ** 2
    if order == "hessian":
        got = cr.hessian(f)(X)
        assert np.allclose(got, hessian, rtol=1e-12)
    elif order == "hvp":
        v = np.array([1.0, -2.0, 0.5, 3.0])
        assert np.allclose(cr.hvp(f, X, v), hessian @ v, rtol=1e-12)
    else:
        got = cr.grad(lambda x: cr.grad(f)(x)[1])(X)
        assert np.allclose(got, hessian[1], rtol=1e-12)


def test_the_checking_mode_checks_the_forms_records():
    def f(x):
        return sum(x[i] ** 2 for i in range(len(x)))

    with cr.checking():
        assert np.allclose(cr.grad(f)(X), 2 * X, rtol=1e-12)
    with cr.checking(), pytest.raises(cr.CheckError, match="power"):
        cr.grad(lambda x: x[0] ** 0.5 + x[1])(np.array([0.0, 1.0]))  # inf from a finite dy


def test_a_rule_registered_over_a_forms_rule_is_used():
    original = rrule.lookup(np.multiply)[0]

    def halved(a, b):
        y, pullback = original(a, b)
        return y, lambda dy: tuple(c if type(c) is NoTangent else 0.5 * c
                                   for c in pullback(dy))

    rrule.register(np.multiply, replace=True)(halved)
    try:
        assert np.allclose(cr.grad(lambda x: x[0] * x[1])(X), [0.5 * X[1], 0.5 * X[0], 0, 0])
    finally:
        rrule.register(np.multiply, replace=True)(original)
    assert NUMBER_FORMS[np.multiply].rule is rrule.lookup(np.multiply)[0]
    assert np.allclose(cr.grad(lambda x: x[0] * x[1])(X), [X[1], X[0], 0, 0])


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_float32_forms_and_complex_numbers_keep_their_type(dtype):
    x = X.astype(dtype)
    gradient = cr.grad(lambda x: np.real(sum(x[i] * x[i] for i in range(len(x)))))(x)
    assert gradient.dtype == dtype
    assert np.allclose(gradient, 2 * np.conj(x), rtol=1e-6)


def test_python_float_inputs_keep_python_semantics():
    # a traced Python float is not a float64: x ** -1 at 0 is NumPy's inf, not Python's
    # ZeroDivisionError, through the rule's own path
    with np.errstate(divide="ignore"):  # the forward's own 0.0 ** -1
        assert cr.grad(lambda x: x ** -1)(0.0) == -np.inf
    assert cr.grad(lambda x: x * 3.0 + x ** 2)(2.0) == 7.0


def test_functions_of_one_number():
    def f(x):
        return np.sin(x[0]) * np.exp(x[1]) - np.tanh(x[2]) + abs(-x[3]) + np.sqrt(x[3])

    a, b, c, d = X
    expected = np.array([np.cos(a) * np.exp(b), np.sin(a) * np.exp(b), -(1 - np.tanh(c) ** 2),
                         1.0 + 0.5 / np.sqrt(d)])
    assert np.allclose(cr.grad(f)(X), expected, rtol=1e-12)
    assert NUMBER_FORMS[np.sin].rule is rrule.lookup(np.sin)[0]


def test_a_function_of_one_number_without_a_derivative():
    # np.floor's partial is zero everywhere it is defined: no contribution, no error
    assert np.allclose(cr.grad(lambda x: np.floor(x[2]) * x[1] + x[2])(X), [0, 2.0, 1.0, 0])


def test_two_dimensional_index_reads():
    # u[k, i] (a tuple index), with NumPy integers and a 0-d index array too
    u = np.arange(12.0).reshape(3, 4) / 7.0

    def f(u):
        total = 0.0
        for k in range(3):
            for i in range(4):
                total = total + u[k, i] ** 2
        return total + u[np.int64(1), np.int64(2)] * u[(2, 3)] + u[1][np.array(0)]

    expected = 2 * u
    expected[1, 2] += u[2, 3]
    expected[2, 3] += u[1, 2]
    expected[1, 0] += 1.0
    assert np.allclose(cr.grad(f)(u), expected, rtol=1e-12)


def test_the_heat_equation_of_the_benchmark_against_central_differences():
    def heat(u0, steps=6, r=0.4):
        n = len(u0)
        u = np.zeros((steps + 1, n))
        u[0] = u0
        for k in range(steps):
            for i in range(1, n - 1):
                u[k + 1, i] = u[k, i] + r * (u[k, i + 1] - 2.0 * u[k, i] + u[k, i - 1])
        return np.sum(u[-1] ** 2)

    u0 = np.sin(np.linspace(0.0, np.pi, 9))
    step = 1e-6
    numeric = np.array([(heat(u0 + step * e) - heat(u0 - step * e)) / (2 * step)
                        for e in np.eye(len(u0))])
    assert np.allclose(cr.grad(heat)(u0), numeric, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cotangents_the_inline_path_hands_to_the_rules_own_pullback(dtype):
    # np.broadcast_arrays gives 0-d arrays as the numbers' cotangents: each form (a linear one
    # of one number, -a, included) pulls them back by its rule's own pullback, in the
    # numbers' own type
    def f(x):
        a, b = x[0], x[1]
        parts = np.broadcast_arrays(-a, a * b, np.sin(b), a - b, x[2:])
        return np.sum(np.stack(parts) * np.arange(1.0, 6.0, dtype=dtype)[:, None])

    x = X.astype(dtype)
    a, b = x[0], x[1]
    expected = np.array([2 * (-1 + 2 * b + 4), 2 * (2 * a + 3 * np.cos(b) - 4), 5.0, 5.0])
    gradient = cr.grad(f)(x)
    assert gradient.dtype == dtype
    assert np.allclose(gradient, expected, rtol=1e-12 if dtype == np.float64 else 1e-5)


def test_float32_scalar_loop_with_constants_of_both_kinds():
    # Python floats and ints meet float32 numbers: float32 results, float32 gradient
    def f(x):
        return sum(0.5 * x[i] ** 2 - 2 * x[i] + x[i] / 4.0 for i in range(len(x)))

    x = X.astype(np.float32)
    gradient = cr.grad(f)(x)
    assert gradient.dtype == np.float32
    assert np.allclose(gradient, x - 2 + 0.25, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_maximum_and_minimum_of_numbers_split_ties_evenly(dtype):
    # np.maximum(x[i], c) in a scalar loop (a ReLU) by its NumberForm: 1 where x[i] wins,
    # 1/2 at a tie, 0 where it loses; the constant's cotangent is never computed
    assert NUMBER_FORMS[np.maximum].rule is rrule._rules[np.maximum][0]
    x = np.array([-1.0, 0.0, 0.5, 2.0, 0.5], dtype=dtype)

    def f(x):
        total = 0.0
        for i in range(x.size):
            total = total + np.maximum(x[i], 0.0) * 3.0 + np.minimum(x[i], x[2]) + \
                np.fmax(x[i], 1.0) + np.fmin(x[i], -0.5)
        return total

    gradient = cr.grad(f)(x)
    # 3 max(x_i, 0): 3 * (0, 1/2, 1, 1, 1); min(x_i, x_2): 1 to x_0 and x_1 (below 0.5), a
    # tie at i = 2 (1/2 + 1/2 to x_2), 1 to x_2 at i = 3, 1/2 to x_4 and x_2 at i = 4;
    # fmax(x_i, 1): 1 to x_3; fmin(x_i, -0.5): 1 to x_0
    expected = np.array([0 + 1 + 1, 1.5 + 1, 3 + 1 + 1 + 0.5, 3 + 1, 3 + 0.5])
    assert gradient.dtype == dtype
    np.testing.assert_allclose(gradient, expected, rtol=1e-6)
    recorded = cr.grad(lambda x: np.maximum(x[0], 0.0))  # and one number's, as its rule's
    assert recorded(np.array([0.0], dtype=dtype)).tolist() == [0.5]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_abs_of_numbers_by_its_form_as_its_rule(dtype):
    # abs(x[i]) in a scalar loop (an L1 penalty): sign(x) as the rule gives it, 0 at 0 and
    # at -0.0, NaN at NaN; a complex number keeps the rule (its form sees real values only)
    assert NUMBER_FORMS[np.absolute].rule is rrule._rules[np.absolute][0]
    x = np.array([-1.5, 0.0, -0.0, 2.5, np.nan], dtype=dtype)

    def f(x):
        return sum(abs(x[i]) + 2.0 * np.fabs(x[i]) for i in range(x.size))

    gradient = cr.grad(f)(x)
    assert gradient.dtype == dtype
    np.testing.assert_array_equal(gradient, [-3.0, 0.0, 0.0, 3.0, np.nan])
    z = np.array([3.0 + 4.0j, -1.0j])
    np.testing.assert_allclose(cr.grad(lambda z: abs(z[0]) + np.abs(z[1]))(z),
                               [0.6 + 0.8j, -1.0j], rtol=1e-15)
    np.testing.assert_allclose(cr.hvp(lambda x: sum(abs(x[i]) * x[i] for i in range(2)),
                                      np.array([-2.0, 3.0]), np.array([1.0, 1.0])),
                               [-2.0, 2.0])  # (|x| x)'' = 2 sign(x)
