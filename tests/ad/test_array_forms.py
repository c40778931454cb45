"""Number forms on small arrays (`_record_array_form` in chainrules.ad.trace.tape): an
elementwise operation on float64 or float32 arrays of one shape and dtype, Python numbers
standing for constants, recorded as plain values whose cotangents the backward pass computes
inline. Every form against central differences, constants on either side, what the path
leaves to the rule (broadcasting, casts, large arrays, NumPy scalars), sums into owned
buffers, lazy and sparse cotangents, writes after use, second derivatives and the checking
mode."""

from __future__ import annotations

import importlib.util
import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.ad.trace import tape as tape_module
from chainrules.core.registry import INDEX_READ, NUMBER_FORMS
from chainrules.core.scalar_rule import STAND_IN_SIZE
from chainrules.rules import load_scipy_rules

from .finite_differences import numerical_gradient

if importlib.util.find_spec("scipy") is not None:  # SciPy's elementwise forms too, always
    load_scipy_rules(everything=True)

X = np.array([0.31, 0.47, 0.62, 0.83, 0.55])
W = np.array([1.0, -2.0, 0.5, 3.0, -1.5])

# (the forms of rules still registered: a rule registered over a form's turns it off)
_ELEMENTWISE = [function for function, form in NUMBER_FORMS.items()
                if form.partials is not INDEX_READ and cr.rrule.lookup(function) is not None
                and form.rule is cr.rrule.lookup(function)[0]]
UNARY = [f for f in _ELEMENTWISE if len(NUMBER_FORMS[f].partials) == 1]
BINARY = [f for f in _ELEMENTWISE if len(NUMBER_FORMS[f].partials) == 2]


def _name(function) -> str:
    return getattr(function, "__name__", repr(function))


def _domain(function) -> np.ndarray:
    """X, or X moved where ``function`` is finite and smooth (arccosh: above 1)."""
    for shift in (0.0, 1.0, -0.2, -1.0):
        x = X + shift
        with np.errstate(all="ignore"):
            values = function(x) if NUMBER_FORMS[function].partials.__len__() == 1 else \
                function(x, x[::-1])
        if np.all(np.isfinite(values)) and values.dtype.kind == "f":
            return x
    pytest.skip(f"{_name(function)} has no finite values near X")


def _records(f, *args):
    """The records of tracing ``f(*args)``: (function, whether recorded by its form)."""
    made = []
    original = tape_module.Tape.__init__

    def remember(self, *a, **k):
        original(self, *a, **k)
        made.append(self)

    tape_module.Tape.__init__ = remember
    try:
        cr.vjp(f, *args)
    finally:
        tape_module.Tape.__init__ = original
    return [(record[1], type(record[0]) is tuple) for record in made[-1].records
            if record[0] is not None]


def _check(f, x, rtol=1e-7, atol=1e-9):
    gradient = cr.grad(f)(x)
    assert gradient.dtype == x.dtype and gradient.shape == x.shape
    assert np.allclose(gradient, numerical_gradient(f, x), rtol=rtol, atol=atol)
    return gradient


@pytest.mark.parametrize("function", UNARY, ids=_name)
def test_every_unary_form_on_arrays_against_central_differences(function):
    x = _domain(function)
    gradient = _check(lambda x: np.sum(W * function(x)), x)
    if isinstance(function, np.ufunc):  # (np.sinc, a Python function, records its body)
        assert _records(lambda x: function(x), x) == [(function, True)]
    assert np.all(np.isfinite(gradient))


@pytest.mark.parametrize("function", BINARY, ids=_name)
def test_every_binary_form_on_arrays_against_central_differences(function):
    x = _domain(function)
    reversed_x = np.array(x[::-1])

    def both(x):
        return np.sum(W * function(x, x[::-1] * 1.0))

    def constant_after(x):
        return np.sum(W * function(x, 1.7))

    def constant_before(x):
        return np.sum(W * function(1.3, x))

    def constant_array(x):
        return np.sum(W * function(x, reversed_x))

    for f in (both, constant_after, constant_before, constant_array):
        with np.errstate(all="ignore"):
            value = f(x)
        if not np.isfinite(value):
            continue  # power(-, 1.7)...: outside the function's real domain
        _check(f, x)
    if isinstance(function, np.ufunc) or function.__module__ == "_operator":
        assert (function, True) in _records(lambda x: function(x, 1.7), x)
        assert (function, True) in _records(lambda x: function(x, x), x)


def test_the_operators_take_the_path_and_match_their_closed_form():
    def f(x):
        y = x * x + 2.0 * x - x / 3 + x ** 3 - (1 - x) + 3 / x + 2 ** x + x ** 0.5
        return np.sum(W * np.tanh(y))

    x = X
    y = x * x + 2.0 * x - x / 3 + x ** 3 - (1 - x) + 3 / x + 2 ** x + x ** 0.5
    dy = 2 * x + 2.0 - 1 / 3 + 3 * x ** 2 + 1 - 3 / x ** 2 + np.log(2) * 2 ** x + \
        0.5 / np.sqrt(x)
    expected = W * (1 - np.tanh(y) ** 2) * dy
    assert np.allclose(cr.grad(f)(x), expected, rtol=1e-12)
    assert all(by_form for function, by_form in _records(lambda x: np.tanh(x * x + 2.0 * x), x))
    assert all(by_form for _, by_form in _records(lambda x: x ** 2 * x ** 3 - 2 ** x, x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float32_stays_float32_with_python_constants(dtype):
    x = X.astype(dtype)

    def f(x):
        return np.sum(np.exp(0.5 * x) * x - 2 * x + x / 4.0 + np.sin(x) ** 2)

    gradient = cr.grad(f)(x)
    assert gradient.dtype == dtype
    expected = 0.5 * np.exp(0.5 * x) * x + np.exp(0.5 * x) - 2 + 0.25 + np.sin(2 * x)
    assert np.allclose(gradient, expected, rtol=1e-12 if dtype == np.float64 else 1e-5)
    assert all(by_form for _, by_form in _records(lambda x: np.exp(0.5 * x) * x, x))


@pytest.mark.parametrize("case", ["broadcast to a large array", "cast", "large",
                                  "numpy scalar", "bool", "0-d"])
def test_what_the_path_leaves_to_the_rule(case):
    # each still right, by the rule's own pullback (which broadcasts, casts and projects)
    x = X
    if case == "broadcast to a large array":
        ones = np.ones((STAND_IN_SIZE, 1))

        def f(x):
            return np.sum(x * ones)
        expected = np.full(5, float(STAND_IN_SIZE))
    elif case == "cast":
        def f(x):
            return np.sum(x * np.arange(5, dtype=np.float32))
        expected = np.arange(5.0)
    elif case == "large":
        x = np.linspace(0.1, 0.9, STAND_IN_SIZE)

        def f(x):
            return np.sum(np.sin(x) * x)
        expected = np.cos(x) * x + np.sin(x)
    elif case == "numpy scalar":
        def f(x):
            return np.sum(x * np.float64(3.0) + np.float32(2.0) * x)
        expected = np.full(5, 5.0)
    elif case == "bool":
        def f(x):
            return np.sum(x * True)
        expected = np.ones(5)
    else:
        x = np.array(0.4)

        def f(x):
            return np.sin(x) * x
        expected = np.cos(0.4) * 0.4 + np.sin(0.4)
    assert np.allclose(cr.grad(f)(x), expected, rtol=1e-12)
    if case in ("broadcast to a large array", "cast", "large", "numpy scalar"):
        left = [by for function, by in _records(f, x)
                if function in (np.multiply, operator.mul, np.sin)]
        assert left and not any(left)


def test_an_array_read_by_several_operations_sums_into_one_owned_buffer():
    # x's cotangent: a product (the pass's own buffer) first, the rest added into it in
    # place; the cotangents handed on unchanged (add's) are shared, never written
    def f(x):
        y = x + x
        return np.sum(W * (y * x + np.sin(x) + x * 3.0 - y))

    x = X.copy()
    expected = W * (4 * x + np.cos(x) + 3.0 - 2.0)
    gradient = cr.grad(f)(x)
    assert np.allclose(gradient, expected, rtol=1e-12)
    assert np.array_equal(x, X)
    again = cr.grad(f)(x)
    assert np.array_equal(gradient, again) and again is not gradient


def test_repeated_backward_passes_over_the_same_records():
    y, pullback = cr.vjp(lambda x: np.tanh(x) * x + x, X)
    dy = np.array([1.0, 2.0, -1.0, 0.5, 0.0])
    derivative = (1 - np.tanh(X) ** 2) * X + np.tanh(X) + 1
    first = pullback(dy)[0]
    second = pullback(2 * dy)[0]
    assert np.allclose(first, dy * derivative, rtol=1e-12)
    assert np.allclose(second, 2 * dy * derivative, rtol=1e-12)


def test_lazy_cotangents_of_matrix_products_an_rnn_against_backpropagation_by_hand():
    rng = np.random.default_rng(3)
    W_, U = rng.normal(scale=0.4, size=(6, 6)), rng.normal(size=(6, 7))

    def rnn(W_, U):
        h = np.zeros(6)
        for t in range(U.shape[1]):
            h = np.tanh(W_ @ h + U[:, t])
        return np.sum(h * h)

    hs = [np.zeros(6)]
    for t in range(U.shape[1]):
        hs.append(np.tanh(W_ @ hs[-1] + U[:, t]))
    dW, dU = np.zeros_like(W_), np.zeros_like(U)
    dh = 2 * hs[-1]
    for t in reversed(range(U.shape[1])):
        da = dh * (1 - hs[t + 1] ** 2)
        dU[:, t] = da
        dW += np.outer(da, hs[t])
        dh = W_.T @ da
    gW, gU = cr.grad(rnn, argnums=(0, 1))(W_, U)
    assert np.allclose(gW, dW, rtol=1e-12) and np.allclose(gU, dU, rtol=1e-12)
    assert (np.tanh, True) in _records(rnn, W_, U)


def test_sparse_and_broadcast_cotangents_go_to_the_rules_pullback():
    # y's cotangent is x[0]'s sparse one and a broadcast view: not plain arrays of y's shape
    def f(x):
        y = np.exp(x) * x
        return y[0] * 2.0 + np.sum(np.broadcast_to(y, (3, 5))) + y[1:3].sum()

    derivative = np.exp(X) * X + np.exp(X)
    expected = derivative * np.array([5.0, 4.0, 4.0, 3.0, 3.0])
    assert np.allclose(cr.grad(f)(X), expected, rtol=1e-12)


def test_writes_after_use_do_not_reach_the_values_kept():
    # tanh keeps its output for its derivative; the write makes a new version of h
    def f(x):
        h = np.tanh(x)
        g = h * h
        h[0] = 5.0
        return np.sum(g) + np.sum(h * x)

    h = np.tanh(X)
    written = h.copy()
    written[0] = 5.0
    dh = 1 - h ** 2
    expected = 2 * h * dh + written + np.where(np.arange(5) == 0, 0.0, X * dh)
    assert np.allclose(cr.grad(f)(X), expected, rtol=1e-12)


@pytest.mark.parametrize("order", ["hessian", "hvp", "grad of grad"])
def test_second_derivatives_through_the_forms(order):
    def f(x):
        return np.sum(W * np.sin(x) * x ** 2)

    diagonal = W * (-np.sin(X) * X ** 2 + 4 * np.cos(X) * X + 2 * np.sin(X))
    if order == "hessian":
        assert np.allclose(cr.hessian(f)(X), np.diag(diagonal), rtol=1e-12)
    elif order == "hvp":
        v = np.array([1.0, -2.0, 0.5, 3.0, 0.25])
        assert np.allclose(cr.hvp(f, X, v), diagonal * v, rtol=1e-12)
    else:
        v = np.array([1.0, -2.0, 0.5, 3.0, 0.25])
        got = cr.grad(lambda x: np.sum(cr.grad(f)(x) * v))(X)
        assert np.allclose(got, diagonal * v, rtol=1e-12)


def test_the_checking_mode_checks_the_forms_records():
    with cr.checking():
        assert np.allclose(cr.grad(lambda x: np.sum(np.sin(x) * x))(X),
                           np.cos(X) * X + np.sin(X), rtol=1e-12)
    with cr.checking(), pytest.raises(cr.CheckError, match="power"):
        cr.grad(lambda x: np.sum(x ** 0.5))(np.array([0.0, 1.0]))  # inf from a finite dy


def test_a_rule_registered_over_a_forms_rule_is_used():
    original = cr.rrule.lookup(np.multiply)[0]

    def halved(a, b):
        y, pullback = original(a, b)
        return y, lambda dy: tuple(c if type(c) is cr.NoTangent else 0.5 * cr.unthunk(c)
                                   for c in pullback(dy))

    cr.rrule.register(np.multiply, replace=True)(halved)
    try:
        assert np.allclose(cr.grad(lambda x: np.sum(x * W))(X), 0.5 * W)
    finally:
        cr.rrule.register(np.multiply, replace=True)(original)
    assert np.allclose(cr.grad(lambda x: np.sum(x * W))(X), W)


def test_an_operator_and_its_ufunc_take_one_path():
    assert NUMBER_FORMS.get(operator.mul) is NUMBER_FORMS.get(np.multiply) or \
        operator.mul not in NUMBER_FORMS
    assert [by for _, by in _records(lambda x: np.multiply(x, 2.0), X)] == [True]


# --- np.sum(x) of a small array: an index read of every element (`_record_total`) -----------

def test_total_sums_are_index_reads_of_every_element():
    def f(x):
        return np.sum(np.sin(x) * x) + x.sum() * 2.0 + np.sum(x) * np.sum(x * x)

    s, q = X.sum(), (X * X).sum()
    expected = np.cos(X) * X + np.sin(X) + 2.0 + q + s * 2 * X
    assert np.allclose(_check(f, X.copy()), expected, rtol=1e-12)
    assert [by for function, by in _records(f, X) if function is np.sum] == [True] * 4
    x32 = X.astype(np.float32)
    gradient = cr.grad(lambda x: np.sum(x) * np.sum(x))(x32)
    assert gradient.dtype == np.float32 and np.allclose(gradient, 2 * x32.sum(), rtol=1e-6)


@pytest.mark.parametrize("case", ["axis", "keepdims", "large", "complex", "integers",
                                  "a number"])
def test_what_the_total_sum_leaves_to_the_rule(case):
    x = {"large": np.linspace(0.1, 1.0, STAND_IN_SIZE), "complex": X + 0.5j,
         "a number": X}.get(case, X)
    f = {"axis": lambda x: np.sum(np.sum(x, 0) * W),
         "keepdims": lambda x: np.sum(np.sum(x, keepdims=True) * x),
         "large": lambda x: np.sum(x) * 3.0,
         "complex": lambda x: np.real(np.sum(x) * (1 - 2j)),
         "integers": lambda x: np.sum(np.arange(3)) * np.sum(x),  # np.arange: a constant
         "a number": lambda x: np.sum(x[1]) * x[0]}[case]
    expected = {"axis": np.full(5, W.sum()), "keepdims": np.full(5, 2 * X.sum()),
                "large": np.full(x.shape, 3.0),
                "complex": np.full(x.shape, 1 + 2j), "integers": np.full(5, 3.0),
                "a number": np.array([X[1], X[0], 0, 0, 0])}[case]
    assert np.allclose(cr.grad(f)(x), expected, rtol=1e-12)
    by_form = [by for function, by in _records(f, x) if function is np.sum]
    assert by_form.count(True) == (1 if case in ("axis", "keepdims", "integers") else 0)


def test_a_total_sums_cotangent_reaches_any_rule_and_owned_buffers():
    # dy at every position: added into x's buffer in place, and handed to cumsum's pullback
    def f(x):
        c = np.cumsum(x)
        return np.sum(c) + np.sum(x) + np.sum(x[1:] * 2.0)

    expected = np.arange(5, 0, -1.0) + 1.0 + np.array([0.0, 2, 2, 2, 2])
    assert np.allclose(cr.grad(f)(X), expected, rtol=1e-12)
    y, pullback = cr.vjp(lambda x: np.sum(x), X)
    assert np.array_equal(pullback(2.0)[0], np.full(5, 2.0))
    assert np.array_equal(pullback(3.0)[0], np.full(5, 3.0))  # the records reused


@pytest.mark.parametrize("order", ["hessian", "hvp", "grad of grad"])
def test_second_derivatives_through_total_sums(order):
    def f(x):
        return sum(np.sum(np.sin(x * k)) for k in (1.0, 2.0)) * np.sum(x)

    def gradient(x):
        return (np.cos(x) + 2 * np.cos(2 * x)) * x.sum() + np.sum(np.sin(x) + np.sin(2 * x))

    rows = [(gradient(X + 1e-6 * e) - gradient(X - 1e-6 * e)) / 2e-6 for e in np.eye(5)]
    hessian = np.array(rows)
    v = np.array([1.0, -2.0, 0.5, 3.0, 0.25])
    if order == "hessian":
        assert np.allclose(cr.hessian(f)(X), hessian, rtol=1e-6, atol=1e-8)
    elif order == "hvp":
        assert np.allclose(cr.hvp(f, X, v), hessian @ v, rtol=1e-6, atol=1e-8)
    else:
        got = cr.grad(lambda x: np.sum(cr.grad(f)(x) * v))(X)
        assert np.allclose(got, hessian @ v, rtol=1e-6, atol=1e-8)


def test_a_rule_registered_over_sums_turns_its_form_off():
    original = cr.rrule.lookup(np.sum)[0]

    def doubled(*args, **kwargs):
        y, pullback = original(*args, **kwargs)
        return y, lambda dy: tuple(c if type(c) is cr.NoTangent else 2 * cr.unthunk(c)
                                   for c in pullback(dy))

    cr.rrule.register(np.sum, replace=True)(doubled)
    try:
        assert np.allclose(cr.grad(lambda x: np.sum(x))(X), 2.0)
    finally:
        cr.rrule.register(np.sum, replace=True)(original)
    assert np.allclose(cr.grad(lambda x: np.sum(x))(X), 1.0)
    with cr.checking():
        assert np.allclose(cr.grad(lambda x: np.sum(np.sin(x)))(X), np.cos(X), rtol=1e-12)


# --- slice reads: X[:, j], x[2:5] recorded as index reads (`record_binary`) -----------------

M = np.arange(1.0, 13.0).reshape(3, 4) / 7.0


def _slices_of(f, x) -> list:
    return [by for function, by in _records(f, x) if function is operator.getitem]


@pytest.mark.parametrize("index", [(slice(None), 1), slice(1, 3), (slice(None, None, -1), 2),
                                   (1, slice(None, None, 2)), (slice(0, 2), slice(1, 4)),
                                   (slice(3, 1),), (Ellipsis, 1), (None, slice(1, 3)),
                                   (slice(None), None, 2), None, Ellipsis,
                                   (1, Ellipsis, None)], ids=repr)
def test_slice_reads_against_closed_forms(index):
    weights = np.linspace(-1.0, 2.0, M[index].size).reshape(M[index].shape)

    def f(x):
        return np.sum(np.sin(x[index]) * weights) + np.sum(x[index] * x[index])

    expected = np.zeros_like(M)
    np.add.at(expected, index, np.cos(M[index]) * weights + 2 * M[index])
    assert np.allclose(_check(f, M.copy()), expected, rtol=1e-12)
    assert _slices_of(f, M) == [True, True, True]


def test_a_column_loop_adds_into_one_owned_buffer():
    def columns(X):
        return sum(np.sum(np.sin(X[:, j]) * X[:, j]) for j in range(X.shape[1]))

    X = np.random.default_rng(5).uniform(size=(6, 40))
    gradient = cr.grad(columns)(X)
    assert np.allclose(gradient, np.cos(X) * X + np.sin(X), rtol=1e-12)
    assert set(_slices_of(columns, X)) == {True}


@pytest.mark.parametrize("case", ["integer array in a tuple", "mask", "integers", "complex",
                                  "numpy integer"])
def test_what_the_slice_read_leaves_to_the_rule(case):
    x = {"integers": np.arange(12).reshape(3, 4), "complex": M + 1j}.get(case, M)
    index = {"integer array in a tuple": (slice(None), np.array([0, 0, 2])), "mask": M > 0.8,
             "numpy integer": (slice(None), np.int64(2))}.get(case, (slice(None), 1))
    if case == "integers":  # an integer array is a constant: its slice too, no record
        assert cr.grad(lambda y: np.sum(x[index] * y))(2.0) == np.sum(x[index])
        return
    f = lambda x: np.real(np.sum(x[index] * (1 - 1j)))  # noqa: E731
    expected = np.zeros(x.shape)
    np.add.at(expected, index, 1.0)
    gradient = cr.grad(f)(x)
    assert np.allclose(gradient, expected * (1 + 1j if case == "complex" else 1), rtol=1e-12)
    assert _slices_of(f, x) == [False]


def test_a_slices_cotangent_of_another_shape_or_lazy_goes_through():
    # y's cotangents: a broadcast view (the rule's pullback) and x[0]'s sparse one
    def f(x):
        y = x[:, 1:3]
        return np.sum(np.broadcast_to(y, (2, 3, 2))) + y[0, 1] * 5.0 + np.sum(y[1])

    expected = np.zeros_like(M)
    expected[:, 1:3] = 2.0
    expected[0, 2] += 5.0
    expected[1, 1:3] += 1.0
    assert np.allclose(cr.grad(f)(M), expected, rtol=1e-12)
    with cr.checking():
        assert np.allclose(cr.grad(f)(M), expected, rtol=1e-12)


def test_writes_after_a_slice_read():
    def f(x):
        x = x * 1.0
        v = x[:, 1]  # a view, followed: it sees the write
        w = np.sin(x[0, :2])
        x[1, 1] = 7.0
        return np.sum(v * v) + np.sum(w)

    def expected(x):
        g = np.zeros_like(x)
        g[:, 1] = 2 * x[:, 1]
        g[1, 1] = 0.0  # written over before v was read
        g[0, :2] += np.cos(x[0, :2])
        return g

    assert np.allclose(cr.grad(f)(M), expected(M), rtol=1e-12)


@pytest.mark.parametrize("order", ["hessian", "hvp", "grad of grad"])
def test_second_derivatives_through_slice_reads(order):
    def f(x):
        return sum(np.sum(np.sin(x[:, j]) * x[:, j]) for j in range(x.shape[1]))

    diagonal = (2 * np.cos(M) - M * np.sin(M)).ravel()
    v = np.random.default_rng(2).normal(size=M.shape)
    if order == "hessian":
        assert np.allclose(cr.hessian(f)(M).reshape(12, 12), np.diag(diagonal), rtol=1e-12)
    elif order == "hvp":
        assert np.allclose(cr.hvp(f, M, v), diagonal.reshape(M.shape) * v, rtol=1e-12)
    else:
        got = cr.grad(lambda x: np.sum(cr.grad(f)(x) * v))(M)
        assert np.allclose(got, diagonal.reshape(M.shape) * v, rtol=1e-12)


@pytest.mark.parametrize("function", BINARY, ids=_name)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_traced_number_next_to_an_array_by_every_binary_form(function, dtype):
    # h / s, s * h: the array's form, the number's cotangent its partials summed
    x = _domain(function).astype(dtype)

    def number_after(x):
        return np.sum(W[1:] * function(x[1:], x[0]))

    def number_before(x):
        return np.sum(W[2:] * function(x[1], x[2:]))

    for f in (number_after, number_before):
        with np.errstate(all="ignore"):
            value = f(x.astype(np.float64))
        if not np.isfinite(value):
            continue  # outside the function's real domain
        if dtype is np.float64:
            _check(f, x)
        else:  # float32: against float64's gradient, at float32's precision
            gradient = cr.grad(f)(x)
            assert gradient.dtype == np.float32
            np.testing.assert_allclose(gradient, cr.grad(f)(x.astype(np.float64)),
                                       rtol=2e-5, atol=2e-5)
        if isinstance(function, np.ufunc) or function.__module__ == "_operator":
            forms = [made for called, made in _records(f, x) if called is function]
            assert forms[0] is True, forms  # (the function's call, before W's product)


# --- arrays broadcast together: u[:, None] * u (`BroadcastForm`) ----------------------------------

BROADCASTS = {  # the traced array's index, the other array's (each a view of x, or a constant)
    "column and row": ((slice(None), None), (None, slice(None))),
    "column and vector": ((slice(None), None), slice(None)),
    "matrix and row": ("outer", (None, slice(None))),
    "vector and constant matrix": (slice(None), "constant"),
    "constant column and vector": ("constant column", slice(None)),
}


def _broadcast_pair(x, case):
    """The two arguments of ``case``, read from ``x`` (or constants)."""
    first, second = BROADCASTS[case]
    constant = np.linspace(0.5, 1.5, x.size * x.size).reshape(x.size, x.size).astype(x.dtype)
    a = x[:, None] * x[::-1] if first == "outer" else \
        constant[:, :1] if first == "constant column" else x[first]
    b = constant if second == "constant" else x[second]
    return a, b


@pytest.mark.parametrize("case", list(BROADCASTS))
@pytest.mark.parametrize("function", BINARY, ids=_name)
def test_every_binary_form_on_arrays_broadcast_together(function, case):
    """Each binary form on arrays of different shapes, against central differences: each
    argument's partials summed to its shape; recorded by the form."""
    x = _domain(function)

    def f(x):
        a, b = _broadcast_pair(x, case)
        return np.sum(W[:, None] * function(a, b))

    with np.errstate(all="ignore"):
        if not np.isfinite(f(x)):
            pytest.skip("outside the function's real domain")
    _check(f, x, rtol=1e-6, atol=1e-8)
    if isinstance(function, np.ufunc) or function.__module__ == "_operator":
        forms = [made for called, made in _records(f, x) if called is function]
        assert forms[0] is True, forms  # (the function's call, before W's product)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_broadcast_forms_against_closed_forms(dtype):
    # sum_ij (x_i - x_j)^2 w_j: d/dx_k = 2 sum_j (x_k - x_j) w_j - 2 sum_i (x_i - x_k) w_k
    x = X.astype(dtype)
    w = W.astype(dtype)

    def f(x):
        return np.sum((x[:, None] - x) ** 2 * w)

    gradient = cr.grad(f)(x)
    assert gradient.dtype == dtype and gradient.shape == x.shape
    x64, w64 = X, W
    expected = 2 * ((x64[:, None] - x64) * w64).sum(axis=1) - \
        2 * (x64[:, None] - x64).sum(axis=0) * w64
    np.testing.assert_allclose(gradient, expected, rtol=1e-12 if dtype == np.float64 else 2e-5,
                               atol=1e-12 if dtype == np.float64 else 2e-5)
    assert all(made for called, made in _records(f, x)
               if called in (operator.sub, operator.pow, operator.mul))


def test_a_broadcast_forms_lazy_cotangent_and_second_derivatives():
    # np.sum's cotangent is sparse (every element): made dense for the form; under hvp and
    # grad of grad the arrays are traced, so the rule's own pullback: against closed forms
    def f(x):
        return np.sum(np.exp(x[:, None] * x))

    expected = 2 * np.sum(np.exp(X[:, None] * X) * X, axis=1)
    np.testing.assert_allclose(cr.grad(f)(X), expected, rtol=1e-12)
    hessian = 2 * np.exp(X[:, None] * X) * (1 + X[:, None] * X) + \
        np.diag(2 * np.sum(np.exp(X[:, None] * X) * X ** 2, axis=1))
    v = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_allclose(cr.hvp(f, X, v), hessian @ v, rtol=1e-10)
    np.testing.assert_allclose(cr.jvp(cr.grad(f), (X,), (v,))[1], hessian @ v, rtol=1e-10)
    with cr.checking():
        np.testing.assert_allclose(cr.grad(f)(X), expected, rtol=1e-12)


def test_a_softmaxs_sum_takes_the_array_and_number_form_with_a_sparse_cotangent():
    # np.sum(np.exp(x) / s): the division's cotangent is np.sum's sparse one, made dense
    def f(x):
        e = np.exp(x)
        return np.sum(W * e / np.sum(e)) + np.sum(e / np.sum(e))

    p = np.exp(X) / np.sum(np.exp(X))
    expected = p * W - p * np.sum(p * W)  # (the second sum is 1: no gradient)
    np.testing.assert_allclose(cr.grad(f)(X), expected, rtol=1e-10, atol=1e-15)
    assert all(made for called, made in _records(f, X) if called is operator.truediv)


# --- reads at an integer array or list, x[idx] (integers that may repeat) ------------------------

@pytest.mark.parametrize("index", [np.array([0, 2, 2, 4, 0, 0]), [1, 1, 3], [-1, 0, -1],
                                   np.array([[0, 1], [1, 1]]), np.array([], dtype=np.intp),
                                   np.array([3], dtype=np.uint8)], ids=repr)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_integer_reads_sum_repeats_in_index_order(index, dtype):
    # d/dx sum(w * x[idx]) = bincount(idx, w): each position's weights summed in index order,
    # as np.add.at on zeros sums them (the dense value of a SparseCotangent): bit for bit
    x = X.astype(dtype)
    positions = np.asarray(index, dtype=np.intp) % 5
    w = np.linspace(0.1, 0.7, positions.size).reshape(positions.shape).astype(dtype)

    def f(x):
        return np.sum(w * x[index])

    gradient = cr.grad(f)(x)
    assert gradient.dtype == dtype
    expected = np.zeros(5, dtype)
    np.add.at(expected, positions, w)
    np.testing.assert_array_equal(gradient, expected)
    assert _slices_of(f, x) == [True]


def test_integer_reads_added_into_a_buffer_of_a_small_x_and_of_a_long_one():
    # an integer read's cotangent added to others of x (owned buffer), of a small x and of
    # a long one (its SparseCotangent grouped: no dense array per read); exact sums
    index = np.array([1, 1, 3, 0])

    def f(x):
        return np.sum(x[index] * x[index[::-1]]) + np.sum(x[:4] ** 2) + x[1] * 3.0

    for x in (X, np.linspace(0.1, 0.9, STAND_IN_SIZE + 5)):
        expected = np.zeros_like(x)
        np.add.at(expected, index, x[index[::-1]])
        np.add.at(expected, index[::-1], x[index])
        expected[:4] += 2 * x[:4]
        expected[1] += 3.0
        np.testing.assert_allclose(cr.grad(f)(x), expected, rtol=1e-15, atol=0)
        with cr.checking():
            np.testing.assert_allclose(cr.grad(f)(x), expected, rtol=1e-15, atol=0)


@pytest.mark.parametrize("order", ["hvp", "grad of grad"])
def test_second_derivatives_through_integer_reads(order):
    index = [0, 2, 2, 4]

    def f(x):
        return np.sum(np.sin(x[index]) * x[np.array(index)[::-1]])

    v = np.linspace(-1.0, 1.0, 5)
    step = 1e-6
    gradient = cr.grad(f)
    expected = (gradient(X + step * v) - gradient(X - step * v)) / (2 * step)
    got = cr.hvp(f, X, v) if order == "hvp" else \
        cr.grad(lambda x: np.sum(cr.grad(f)(x) * v))(X)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
