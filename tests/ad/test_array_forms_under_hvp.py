"""Number forms on small arrays under ``hvp`` (`ForwardTrace.record_arrays`): ``np.tanh(h)``,
``h + x``, ``h * 0.9`` on float64 or float32 arrays of one shape and dtype whose values carry
tangents, recorded with the output's tangent computed from the form's partials, the backward
pass computing each cotangent with its tangent from the values kept (an RNN step's hvp 427k ->
382k instructions, callgrind).

Every form against central differences of the gradient, constants on either side, what the
path leaves to the general one (casts, large arrays, NumPy scalars, complex), arrays broadcast
together (``u[:, None] * u``: hvp 2.6 -> 2.1 gradients in a loop over 16-element columns), an
RNN, a Hessian against its closed form, the user's error state and warnings as errors."""

from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest

import chainrules as cr
from chainrules.ad.transforms.forward import ForwardTrace
from chainrules.core.registry import DUAL_FORMS, FIRST_ORDER_ONLY, NUMBER_FORMS
from chainrules.core.scalar_rule import STAND_IN_SIZE

from .test_array_forms import BINARY, UNARY, _domain, _name

RNG = np.random.default_rng(21)


def _hvp_counting(f, x, v) -> tuple:
    """``hvp(f, x, v)``, and a Counter of the functions `ForwardTrace.record_arrays`
    recorded."""
    original = ForwardTrace.record_arrays
    made: collections.Counter = collections.Counter()

    def counting(self, tape, function, *rest):
        recorded = original(self, tape, function, *rest)
        if recorded is not None:
            made[function] += 1
        return recorded

    ForwardTrace.record_arrays = counting
    try:
        return cr.hvp(f, x, v), made
    finally:
        ForwardTrace.record_arrays = original


def _central_hvp(f, x, v, step=1e-4):
    """Central differences of the gradient along ``v``, in float64, Richardson-extrapolated
    (error O(step^4)): a single difference at a step small enough for steep functions loses
    up to 6% of a small hvp to rounding (cotdg near 0, whose gradient cancels)."""
    wide, v = x.astype(np.float64), v.astype(np.float64)
    gradient = cr.grad(f)

    def central(h):
        return (gradient(wide + h * v) - gradient(wide - h * v)) / (2 * h)

    return (4 * central(step / 2) - central(step)) / 3


def _recorded(function) -> bool:
    """Whether the path takes ``function``: its partials are constants, or it has a dual."""
    form = NUMBER_FORMS[function]
    return bool(form.payloads) or form.pullback_dual is not None


def _check(f, x, expected_count=None, **tolerance):
    """``hvp(f, x, v)`` against central differences for a random ``v``; the Counter of the
    path's records, whose total is ``expected_count`` if given."""
    v = RNG.normal(size=x.shape).astype(x.dtype)
    got, count = _hvp_counting(f, x, v)
    assert got.dtype == x.dtype and got.shape == x.shape
    tolerance = tolerance or (dict(rtol=2e-3, atol=2e-3) if x.dtype == np.float32
                              else dict(rtol=1e-6, atol=1e-7))
    np.testing.assert_allclose(got, _central_hvp(f, x, v), **tolerance)
    if expected_count is not None:
        assert sum(count.values()) == expected_count, count
    return got, count


def _against_the_general_path(f, x):
    """``hvp(f, x, v)`` with every dual form turned off: the rules traced."""
    v = np.random.default_rng(22).normal(size=x.shape)
    saved = dict(DUAL_FORMS)
    DUAL_FORMS.clear()
    try:
        expected = cr.hvp(f, x, v)
    finally:
        DUAL_FORMS.update(saved)
    got, count = _hvp_counting(f, x, v)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    return count


@pytest.mark.parametrize("function", UNARY, ids=_name)
def test_every_unary_form_under_hvp_against_central_differences(function):
    if function in FIRST_ORDER_ONLY:
        pytest.skip(f"{_name(function)} is differentiable once only")
    x = _domain(function)
    # the product with x: the cotangent reaching the form carries a tangent
    loss = lambda x: np.sum(function(x) * x)  # noqa: E731
    _check(loss, x, rtol=1e-3, atol=1e-6)  # (steep ones: cotdg)
    count = _against_the_general_path(loss, x)
    assert (count[function] >= 1) == _recorded(function)


@pytest.mark.parametrize("function", BINARY, ids=_name)
def test_every_binary_form_under_hvp_against_central_differences(function):
    x = _domain(function)
    with np.errstate(all="ignore"):
        if not np.all(np.isfinite(cr.grad(lambda x: np.sum(function(x, x[::-1]) * x))(x))):
            pytest.skip(f"{_name(function)} has no finite gradient near X")
    loss = lambda x: np.sum(function(x, x[::-1]) * x)  # noqa: E731
    _check(loss, x, rtol=1e-3, atol=1e-6)
    count = _against_the_general_path(loss, x)
    assert (count[function] >= 1) == _recorded(function)


X = np.array([0.31, 0.47, 0.62, 0.83, 0.55])
C = np.array([1.5, -0.5, 2.0, 0.25, -1.0])

CONSTANTS = {  # name: loss of x; every elementwise operation on x is recorded by the path
    "python float on the right": (lambda x: np.sum(np.sin(x * 0.9) * x), 3),
    "python float on the left": (lambda x: np.sum((1.0 - x) ** 3), 2),
    "python int": (lambda x: np.sum(np.exp(2 * x) / (x + 1)), 4),
    "int zero": (lambda x: np.sum(np.cos(x + 0) * x), 3),
    "a plain array on either side": (lambda x: np.sum(np.tanh(C * x + C) * (x - C)), 5),
    "negative and subtract": (lambda x: np.sum(-np.sin(x) * (x - x ** 2)), 5),
}


@pytest.mark.parametrize("name", list(CONSTANTS))
def test_constants_on_either_side(name):
    loss, count = CONSTANTS[name]
    _check(loss, X, count)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_float32_stays_float32(dtype):
    x = X.astype(dtype)
    got, count = _check(lambda x: np.sum(np.tanh(x * 0.5 + C.astype(dtype)) ** 2 * x), x)
    assert got.dtype == dtype and sum(count.values()) == 5


NUMBER_NEXT_TO_AN_ARRAY = {  # name: (loss of x, the operation of an array and a traced number)
    "h / s": (lambda x: np.sum(np.exp(x) / np.sum(np.exp(x)) * C), np.divide),
    "s * h": (lambda x: np.sum(np.sum(x * x) * np.sin(x)), np.multiply),
    "h - s": (lambda x: np.sum((x - np.sum(x) / 5) ** 3), np.subtract),
    "s + h": (lambda x: np.sum(np.sin(x[0] + x) * x), np.add),
    "s - a constant array": (lambda x: np.sum((x[1] - C) ** 3), np.subtract),
    "a constant array / s": (lambda x: np.sum(np.sin(C / (x[2] + 2.0))), np.divide),
    "h ** s": (lambda x: np.sum(x ** x[0]), np.power),
    "np.maximum(h, s)": (lambda x: np.sum(np.maximum(x, x[2]) ** 2 * x), np.maximum),
    "a matrix / s": (lambda x: np.sum(np.sin(np.outer(x, C) / np.sum(x * x))), np.divide),
}


@pytest.mark.parametrize("name", list(NUMBER_NEXT_TO_AN_ARRAY))
def test_an_array_and_a_traced_number(name):
    # recorded with the number (`record_arrays`): the number's cotangent and its tangent
    # summed over the array by the pass (add, subtract) or the pairs (`_array_pairs`)
    loss, function = NUMBER_NEXT_TO_AN_ARRAY[name]
    _check(loss, X)
    count = _against_the_general_path(loss, X)
    assert count[function] >= 1, count


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_an_array_and_a_traced_number_keep_their_dtype(dtype):
    x = X.astype(dtype)
    got, count = _check(lambda x: np.sum(np.exp(x) / np.sum(np.exp(x)) * x - x[0]), x)
    assert got.dtype == dtype
    if type(np.float32(1.0) * np.float32(2.0)) is np.float32 and dtype == np.float64 or \
            np.result_type(np.ones(2, dtype), dtype(1.0)) == dtype:
        assert count[np.divide] == 1 and count[np.subtract] == 1, count


BROADCAST = {  # name: (loss of x, the operation of two arrays broadcast together)
    "a column times a row": (lambda x: np.sum(np.sin(x[None, :] * x[:, None])), np.multiply),
    "pairwise differences": (lambda x: np.sum((x[:, None] - x) ** 2 * C), np.subtract),
    "a column plus a vector": (lambda x: np.sum(np.tanh(x[:, None] + x)), np.add),
    "a constant column plus x": (lambda x: np.sum(np.tanh(C[:, None] + x) * x), np.add),
    "x plus a constant matrix": (lambda x: np.sum(np.tanh(x + np.outer(C, C)) ** 2), np.add),
    "a column over a vector": (lambda x: np.sum(x[:, None] / (x * x + 1.0)), np.divide),
    "a (1, n) row and an (n, 1) column": (
        lambda x: np.sum(np.exp(x[None, :] - x[:3, None]) ** 2), np.subtract),
    "a column to the power x": (lambda x: np.sum(x[:, None] ** x), np.power),
    "np.maximum of a column and x": (lambda x: np.sum(np.maximum(x[:, None], x) ** 2),
                                     np.maximum),
    "a 0-d array times x": (lambda x: np.sum(np.sin(x.reshape(5, 1)[2, 0, ...] * x)),
                            np.multiply),
}


@pytest.mark.parametrize("name", list(BROADCAST))
def test_arrays_broadcast_together(name):
    # recorded with their shapes (`record_arrays`): each argument's cotangent and its tangent
    # summed to its shape by the pass (add, subtract) or the pairs (`_array_pairs`)
    loss, function = BROADCAST[name]
    _check(loss, X)
    count = _against_the_general_path(loss, X)
    assert count[function] >= 1, count


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_arrays_broadcast_together_keep_their_dtype(dtype):
    x, c = X.astype(dtype), C.astype(dtype)
    got, count = _check(lambda x: np.sum(np.sin(x[:, None] * x) - (x[:, None] - c) ** 2), x)
    assert got.dtype == dtype
    assert count[np.multiply] == 1 and count[np.subtract] == 2, count  # (and the outer one)


LEFT = {  # name: (loss of x, the function the general path takes)
    "a broadcast that casts": (lambda x: np.sum(np.sin(x[:, None] * C.astype(np.float32))),
                               np.multiply),
    "a large broadcast": (lambda x: np.sum(np.sin(np.tile(x, 205)[:, None] * x)) / 1000,
                          np.multiply),
    "a cast (float64 and float32)": (lambda x: np.sum(np.sin(x * C.astype(np.float32))),
                                     np.multiply),
    "a NumPy scalar constant": (lambda x: np.sum(np.sin(np.float64(0.5) * x)), np.multiply),
    "complex": (lambda x: np.sum(np.abs(np.exp(1j * x) * x) ** 2), np.exp),
    "a large array": (lambda x: np.sum(np.sin(np.tile(x, STAND_IN_SIZE)) ** 2) / STAND_IN_SIZE,
                      np.sin),
}


@pytest.mark.parametrize("name", list(LEFT))
def test_what_the_path_leaves_to_the_general_one(name):
    loss, function = LEFT[name]
    _, count = _check(loss, X)
    assert count[function] == 0, count


def _rnn(W, U):
    h = np.zeros(W.shape[0], dtype=W.dtype)
    for t in range(U.shape[1]):
        h = np.tanh(W @ h + U[:, t])
    return np.sum(h * h)


W6 = np.random.default_rng(11).normal(scale=0.4, size=(6, 6))
U6 = np.random.default_rng(12).normal(size=(6, 5))


@pytest.mark.parametrize("argument", ["W", "U"])
def test_an_rnn_under_hvp(argument):
    # each step's add and tanh (the first step's add of W @ 0, whose tangent is zeros in W,
    # a constant in U), and the last square
    if argument == "W":
        _check(lambda W: _rnn(W, U6), W6, 2 * 5 + 1)
    else:
        _check(lambda U: _rnn(W6, U), U6, 2 * 5 + 1)


def test_a_hessian_through_the_forms_against_its_closed_form():
    # f(x) = sum(tanh(x) * x + 0.5 * x): f'' = tanh''(x) x + 2 tanh'(x), on the diagonal
    t = np.tanh(X)
    diagonal = -2 * t * (1 - t * t) * X + 2 * (1 - t * t)
    f = lambda x: np.sum(np.tanh(x) * x + 0.5 * x)  # noqa: E731
    np.testing.assert_allclose(cr.hessian(f)(X), np.diag(diagonal), rtol=1e-12, atol=1e-14)
    v = RNG.normal(size=X.shape)
    got, count = _hvp_counting(f, X, v)
    np.testing.assert_allclose(got, diagonal * v, rtol=1e-12, atol=1e-14)
    assert sum(count.values()) == 4


def test_the_users_error_state_and_warnings_as_errors():
    f = lambda W: _rnn(W, U6)  # noqa: E731
    v = RNG.normal(size=W6.shape)
    expected = cr.hvp(f, W6, v)
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(cr.hvp(f, W6, v), expected, rtol=1e-14, atol=1e-15)
        # the user's own error is the user's: log of a zero under errstate(raise)
        with pytest.raises(FloatingPointError):
            cr.hvp(lambda x: np.sum(np.log(x) * x), np.array([0.0, 1.0]), np.ones(2))


def test_the_checking_mode_agrees():
    f = lambda W: _rnn(W, U6)  # noqa: E731
    v = RNG.normal(size=W6.shape)
    got = cr.hvp(f, W6, v)
    with cr.checking():
        np.testing.assert_allclose(cr.hvp(f, W6, v), got, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_an_argument_given_twice_gets_one_pair(dtype):
    # u * u: the two pairs of one argument summed into one new pair by the pass
    # (`_pull_array_pairs`; sin(u) * sin(u): two arguments); closed forms: d2/du2 of
    # sum(u^4) is 12 u^2, of sum(sin(u)^2) is 2 cos(2u)
    from chainrules.ad.transforms import reverse

    taken, original = collections.Counter(), reverse._pull_array_pairs

    def counting(slots, owned, records, record, payload, cotangent):
        done = original(slots, owned, records, record, payload, cotangent)
        taken[record[1], done] += 1
        return done

    x = X.astype(dtype)
    v = RNG.normal(size=x.shape).astype(dtype)
    reverse._pull_array_pairs = counting
    try:
        quartic = cr.hvp(lambda u: np.sum((u * u) * (u * u)), x, v)
        sine = cr.hvp(lambda u: np.sum(np.sin(u) * np.sin(u)), x, v)
    finally:
        reverse._pull_array_pairs = original
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    assert quartic.dtype == dtype and sine.dtype == dtype
    np.testing.assert_allclose(quartic, 12 * x.astype(np.float64) ** 2 * v, rtol=rtol)
    np.testing.assert_allclose(sine, 2 * np.cos(2 * x.astype(np.float64)) * v, rtol=rtol,
                               atol=rtol)
    assert taken[np.multiply, True] == 4 and taken[np.sin, True] == 2, taken
    assert not any(not done for _, done in taken), taken
