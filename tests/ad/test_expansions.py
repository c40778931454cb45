"""Expansions (`chainrules.core.registry.Expansion`): ``np.mean(x)`` and ``x.mean()`` of a
small float64 array recorded as ``np.sum(x) / x.size`` (a total sum and a division of
numbers, each recorded inline by its own form: `_record_expansion` in ad/trace/tape.py) instead
of by the mean rule's pullback object: in a loop over 16-element columns, 18 -> 10 us per
step, its hvp 2.2 -> 1.8 gradients. ``np.max(x)``, ``np.min``, ``np.nanmax``... of a small
float array with one extremum recorded as an index read of it, ``x[i]`` (23 -> 11 us per
step, its hvp 3.6 -> 1.4 gradients). ``np.linalg.norm(x)`` of a small float vector as
``np.sqrt(np.dot(x, x))`` under hvp (NumPy's own computation), 6.1-6.4 -> 2.8-3.0 gradients.
Under hvp only, ``np.clip(x, lower, upper)`` between constants as ``np.minimum(np.maximum(x,
lower), upper)`` (612k -> 409k instructions per step), ``np.var(x)`` of a small float64 array
as the mean square of its deviations (797k -> 568k).
And a total sum's cotangent added into a buffer the backward pass does not own
(``x - np.sum(x)``: the subtraction's cotangent is shared by its two arguments) stays inline
too.

Values bit for bit against NumPy's; gradients and hvps against closed forms; what the
path leaves to the rule (axes, keywords, float32, complex and large arrays); second
derivatives by grad of grad; the user's error state."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import chainrules as cr
from chainrules.core.scalar_rule import STAND_IN_SIZE

RNG = np.random.default_rng(17)


def _rule_calls(f, *args, transform=None, name="_spread") -> int:
    """How many times the rules' function ``name`` runs in ``f``'s gradient (or
    ``transform(f, *args)``): the sum and mean rules' cotangent `_spread`, the extrema's
    `_extremum_weights`."""
    calls = [0]

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == name:
            calls[0] += 1

    sys.setprofile(profile)
    try:
        (transform or (lambda f, *a: cr.grad(f)(*a)))(f, *args)
    finally:
        sys.setprofile(None)
    return calls[0]


def column_means(X):
    return sum(np.mean(X[:, j]) ** 2 for j in range(X.shape[1]))


def column_means_by_method(X):
    return sum(X[:, j].mean() ** 2 for j in range(X.shape[1]))


@pytest.mark.parametrize("f", [column_means, column_means_by_method], ids=["np.mean", "x.mean()"])
def test_means_in_a_loop_against_their_closed_form(f):
    X = RNG.normal(size=(7, 5))
    means = X.mean(axis=0)
    # d/dX[i, j] of sum_j mean_j^2 = 2 mean_j / n; the hvp along V: 2 mean(V_j) / n
    np.testing.assert_allclose(cr.grad(f)(X), np.broadcast_to(2 * means / 7, X.shape),
                               rtol=1e-13)
    V = RNG.normal(size=X.shape)
    np.testing.assert_allclose(cr.hvp(f, X, V), np.broadcast_to(2 * V.mean(axis=0) / 7,
                                                                X.shape), rtol=1e-12)
    assert _rule_calls(f, X) == 0  # neither the mean's rule nor the sum's ran
    assert _rule_calls(f, X, transform=lambda f, x: cr.hvp(f, x, V)) == 0


@pytest.mark.parametrize("shape", [(1,), (16,), (3, 5), (2, 3, 4), (STAND_IN_SIZE - 1,)])
def test_the_value_is_np_means_bit_for_bit(shape):
    x = RNG.normal(size=shape) * 1e3 + 0.1
    seen = []

    def f(x):
        m = np.mean(x)
        seen.append(cr.primal(m))
        return m

    gradient = cr.grad(f)(x)
    assert seen[0] == np.mean(x) and type(seen[0]) is np.float64
    np.testing.assert_allclose(gradient, np.full(shape, 1 / x.size), rtol=1e-15)
    assert _rule_calls(f, x) == 0


@pytest.mark.parametrize("name, f, x", [
    ("an axis", lambda x: np.sum(np.mean(x, axis=0)), RNG.normal(size=(3, 4))),
    ("keepdims", lambda x: np.sum(np.mean(x, keepdims=True)), RNG.normal(size=5)),
    ("a dtype", lambda x: np.mean(x, dtype=np.float64), RNG.normal(size=5)),
    ("float32", lambda x: np.mean(x), RNG.normal(size=5).astype(np.float32)),
    ("complex", lambda x: np.real(np.mean(x * (1 + 2j))), RNG.normal(size=5)),
    ("large", lambda x: np.mean(x), RNG.normal(size=STAND_IN_SIZE)),
])
def test_what_stays_with_the_rule(name, f, x):
    # each gradient is d mean / dx_i = 1/n over the reduced elements, of x's dtype
    gradient = cr.grad(f)(x)
    assert gradient.dtype == x.dtype and gradient.shape == x.shape
    expected = {"an axis": np.full(x.shape, 1 / 3)}.get(name, np.full(x.shape, 1 / x.size))
    np.testing.assert_allclose(gradient, expected, rtol=1e-6 if x.dtype == np.float32
                               else 1e-15)
    assert _rule_calls(f, x) >= 1  # the mean rule's own pullback


def test_a_total_sums_cotangent_into_a_shared_buffer_stays_inline():
    # x - np.sum(x): the subtraction hands one cotangent to both arguments (not owned), then
    # the sum's is added: into a new buffer, not through the sum rule's pullback
    def centered(x):
        d = x - np.sum(x)
        return np.sum(d * d)

    x = RNG.normal(size=6)
    n, d = x.size, x - np.sum(x)
    expected = 2 * d - 2 * np.sum(d)  # d/dx_i sum_k (x_k - S)^2
    np.testing.assert_allclose(cr.grad(centered)(x), expected, rtol=1e-12)
    assert _rule_calls(centered, x) == 0
    assert n == 6


def test_second_derivatives_by_grad_of_grad():
    def f(x):
        return np.mean(x) ** 3

    x = RNG.normal(size=4)
    m = np.mean(x)
    # d/dx_i of 3 m^2 / n is 6 m / n^2 for every i
    np.testing.assert_allclose(cr.hessian(f)(x), np.full((4, 4), 6 * m / 16), rtol=1e-12)
    g = cr.grad(lambda x: np.sum(cr.grad(f)(x) * x))(x)
    np.testing.assert_allclose(g, 3 * m ** 2 / 4 + np.full(4, 6 * m / 16) @ x, rtol=1e-12)


def test_the_users_error_state_and_warnings_as_errors():
    X = RNG.normal(size=(5, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            np.testing.assert_allclose(cr.grad(column_means)(X),
                                       np.broadcast_to(2 * X.mean(axis=0) / 5, X.shape),
                                       rtol=1e-13)


EXTREMA = {
    "np.max": (np.max, np.argmax), "np.min": (np.min, np.argmin),
    "np.amax": (np.amax, np.argmax), "np.amin": (np.amin, np.argmin),
    "x.max()": (lambda x: x.max(), np.argmax), "x.min()": (lambda x: x.min(), np.argmin),
    "np.nanmax": (np.nanmax, np.nanargmax), "np.nanmin": (np.nanmin, np.nanargmin),
}


@pytest.mark.parametrize("name", list(EXTREMA))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(7,), (3, 4)])
def test_an_extremum_attained_once_is_an_index_read(name, dtype, shape):
    extremum, position = EXTREMA[name]
    x = RNG.normal(size=shape).astype(dtype)
    if name.startswith("np.nan"):
        x.flat[1 if position(x) != 1 else 2] = np.nan  # (ignored: not the extremum)
    at = np.unravel_index(position(x), shape)
    seen = []

    def f(x):  # extremum^3: gradient 3 m^2 at the extremum's position, hvp 6 m v there
        m = extremum(x)
        seen.append(cr.primal(m))
        return m ** 3

    gradient = cr.grad(f)(x)
    m = x[at]
    assert seen[0] == extremum(x) and type(seen[0]) is type(extremum(x)) and \
        np.signbit(seen[0]) == np.signbit(extremum(x))
    expected = np.zeros(shape, dtype)
    expected[at] = 3 * m * m
    assert gradient.dtype == dtype
    np.testing.assert_allclose(gradient, expected, rtol=1e-6 if dtype == np.float32 else 1e-14)
    v = RNG.normal(size=shape).astype(dtype)
    hessian_v = np.zeros(shape, dtype)
    hessian_v[at] = 6 * m * v[at]
    np.testing.assert_allclose(cr.hvp(f, x, v), hessian_v,
                               rtol=1e-5 if dtype == np.float32 else 1e-13)
    assert _rule_calls(f, x, name="_extremum_weights") == 0


@pytest.mark.parametrize("case", ["ties", "NaN", "all NaN", "an axis", "large"])
def test_what_the_extremum_leaves_to_the_rule(case):
    x = {"ties": np.array([1.0, 3.0, -2.0, 3.0]), "NaN": np.array([1.0, np.nan, 2.0]),
         "all NaN": np.array([np.nan, np.nan]), "an axis": np.array([[1.0, 4.0], [3.0, 2.0]]),
         "large": np.arange(STAND_IN_SIZE, dtype=np.float64)}[case]
    f = {"an axis": lambda x: np.sum(np.max(x, axis=0)),
         "all NaN": lambda x: np.nan_to_num(np.nanmax(x))}.get(case, np.max)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (all NaN: NumPy's own warning)
        gradient = cr.grad(f)(x)
    expected = {"ties": [0, 0.5, 0, 0.5], "NaN": [0, 1, 0], "all NaN": [0, 0],
                "an axis": [[0, 1], [1, 0]]}.get(case)
    if case == "large":
        expected = np.zeros(x.size)
        expected[-1] = 1
    np.testing.assert_array_equal(gradient, expected)  # dy split evenly among the ties
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert _rule_calls(f, x, name="_extremum_weights") >= 1


def test_softmax_with_its_maximum_subtracted_in_a_loop():
    # the stable softmax: exp(u - max(u)) / sum(...); its log-sum-exp gradient is softmax(u)
    def f(X):
        total = 0.0
        for j in range(X.shape[1]):
            u = X[:, j]
            e = np.exp(u - np.max(u))
            total = total + np.log(np.sum(e)) + np.max(u)
        return total

    X = RNG.normal(size=(6, 4))
    softmax = np.exp(X) / np.sum(np.exp(X), axis=0)
    np.testing.assert_allclose(cr.grad(f)(X), softmax, rtol=1e-13)
    V = RNG.normal(size=X.shape)
    np.testing.assert_allclose(cr.hvp(f, X, V),
                               softmax * V - softmax * np.sum(softmax * V, axis=0), rtol=1e-12)
    assert _rule_calls(f, X, name="_extremum_weights") == 0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_vectors_norm_is_the_root_of_its_dot_product(dtype):
    # |x|: gradient x / |x|, Hessian (I - u u^T) / |x| with u = x / |x|
    x, v = RNG.normal(size=5).astype(dtype), RNG.normal(size=5).astype(dtype)
    seen = []

    def f(x):
        y = np.linalg.norm(x)
        seen.append(cr.primal(y))
        return y

    gradient = cr.grad(f)(x)
    assert seen[0] == np.linalg.norm(x) and type(seen[0]) is type(np.linalg.norm(x))
    x64, v64 = x.astype(np.float64), v.astype(np.float64)
    r = np.sqrt(x64 @ x64)
    u = x64 / r
    rtol = 1e-5 if dtype == np.float32 else 1e-14
    assert gradient.dtype == dtype
    np.testing.assert_allclose(gradient, u, rtol=rtol)
    np.testing.assert_allclose(cr.hvp(f, x, v), (v64 - u * (u @ v64)) / r, rtol=10 * rtol)
    # expanded under hvp only (`first_order=False`): at order 1 the rule costs as much
    assert _rule_calls(f, x, name="_norm_gradient",
                       transform=lambda f, x: cr.hvp(f, x, v)) == 0
    assert _rule_calls(f, x, name="_norm_gradient") == 1


@pytest.mark.parametrize("case", ["zero", "overflow", "a matrix", "ord=1", "an axis"])
def test_what_the_norm_leaves_to_the_rule(case):
    x = {"zero": np.zeros(3), "overflow": np.array([1e200, 1.0]),
         "a matrix": np.array([[3.0, 0.0], [0.0, 4.0]])}.get(case, np.array([3.0, -4.0]))
    f = {"ord=1": lambda x: np.linalg.norm(x, 1),
         "an axis": lambda x: np.linalg.norm(x, axis=0)}.get(case, np.linalg.norm)
    expected = {"zero": [0, 0, 0], "overflow": [0, 0], "a matrix": [[0.6, 0], [0, 0.8]],
                "ord=1": [1, -1], "an axis": [0.6, -0.8]}[case]
    with np.errstate(over="ignore"):  # (the overflow: the user's, NumPy's warning)
        np.testing.assert_allclose(cr.grad(f)(x), expected, rtol=1e-15)
        v = np.ones_like(x)  # (under hvp, where the norm would be expanded: the rule still)
        assert _rule_calls(f, x, name="_norm_gradient",
                           transform=lambda f, x: cr.hvp(f, x, v)) >= 1


CLIPS = {
    "np.clip(x, -0.5, 0.7)": (lambda x: np.clip(x, -0.5, 0.7), -0.5, 0.7),
    "x.clip(-0.5, 0.7)": (lambda x: x.clip(-0.5, 0.7), -0.5, 0.7),
    "np.clip(x, None, 0.7)": (lambda x: np.clip(x, None, 0.7), -np.inf, 0.7),
    "np.clip(x, -1, None)": (lambda x: np.clip(x, -1, None), -1, np.inf),
    "bounds crossed": (lambda x: np.clip(x, 0.7, -0.5), 0.7, -0.5),
}


@pytest.mark.parametrize("name", list(CLIPS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_clip_between_constants_is_a_maximum_and_a_minimum_under_hvp(name, dtype):
    clip, lower, upper = CLIPS[name]
    x = RNG.uniform(-1.5, 1.5, size=9).astype(dtype)
    seen = []

    def f(x):  # sum(clip(x)^3): 3 c^2 where x is strictly inside, hvp 6 c v there
        c = clip(x)
        seen.append(cr.primal(c))
        return np.sum(c ** 3)

    gradient = cr.grad(f)(x)
    np.testing.assert_array_equal(seen[0], clip(x))
    assert seen[0].dtype == dtype and gradient.dtype == dtype
    inside = (x > lower) & (x < upper)
    c = clip(x).astype(np.float64)
    rtol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(gradient, np.where(inside, 3 * c * c, 0), rtol=rtol)
    v = RNG.normal(size=9).astype(dtype)
    np.testing.assert_allclose(cr.hvp(f, x, v), np.where(inside, 6 * c * v, 0),
                               rtol=10 * rtol, atol=1e-12)
    # expanded under hvp only (`first_order=False`): at order 1 the rule costs less
    assert _rule_calls(f, x, name="_clip_sources", transform=lambda f, x: cr.hvp(f, x, v)) == 0
    assert _rule_calls(f, x, name="_clip_sources") == 1


@pytest.mark.parametrize("case", ["a tie", "NaN", "array bounds", "a traced bound", "large"])
def test_what_clip_leaves_to_the_rule(case):
    x = {"a tie": np.array([0.2, 0.5, -0.9]), "NaN": np.array([0.2, np.nan, -0.9]),
         "large": np.linspace(-1, 1, STAND_IN_SIZE)}.get(case, np.array([0.2, 0.6, -0.9]))
    f = {"array bounds": lambda x: np.sum(np.clip(x, np.full(3, -0.5), 0.5)),
         "a traced bound": lambda x: np.sum(np.clip(x, x[0], 0.5))}.get(
             case, lambda x: np.sum(np.clip(x, -0.5, 0.5)))
    # the rule's convention: at a tie the cotangent goes to x (maximum's rule splits it),
    # and a NaN passes it on
    expected = {"a tie": [1, 1, 0], "NaN": [1, 1, 0],
                "a traced bound": [2, 0, 0]}.get(case, np.where(np.abs(x) < 0.5, 1.0, 0.0))
    np.testing.assert_array_equal(cr.grad(f)(x), expected)
    v = np.ones_like(x)  # (under hvp, where clip would be expanded: the rule still)
    assert _rule_calls(f, x, name="_clip_sources", transform=lambda f, x: cr.hvp(f, x, v)) >= 1


def test_a_variance_is_its_mean_square_deviation_under_hvp():
    # var(x) = |x - m|^2 / n: gradient 2 (x - m) / n, Hessian 2 (I - 1 1^T / n) / n; the value
    # is np.var's bit for bit (NumPy's own computation)
    from chainrules.rules.numpy.reductions import _variance

    for shape in [(1,), (16,), (3, 5), (2, 3, 4)]:
        x = RNG.normal(size=shape) * 1e3 + 0.1
        assert _variance((x,), x) == np.var(x)
    x, v = RNG.normal(size=7), RNG.normal(size=7)
    seen = []

    def f(x):
        y = np.var(x)
        seen.append(cr.primal(y))
        return y

    n = x.size
    np.testing.assert_allclose(cr.grad(f)(x), 2 * (x - x.mean()) / n, rtol=1e-13)
    np.testing.assert_allclose(cr.hvp(f, x, v), 2 * (v - v.mean()) / n, rtol=1e-13)
    assert seen[0] == np.var(x) and seen[-1] == np.var(x)
    # expanded under hvp only (`first_order=False`): at order 1 the rule records it in one
    assert _rule_calls(f, x, name="_variance_gradient",
                       transform=lambda f, x: cr.hvp(f, x, v)) == 0
    assert _rule_calls(f, x, name="_variance_gradient") == 1


@pytest.mark.parametrize("case", ["ddof", "an axis", "float32", "large"])
def test_what_the_variance_leaves_to_the_rule(case):
    x = {"float32": RNG.normal(size=5).astype(np.float32),
         "large": RNG.normal(size=STAND_IN_SIZE)}.get(case, RNG.normal(size=(3, 4)))
    f = {"ddof": lambda x: np.var(x, ddof=1),
         "an axis": lambda x: np.sum(np.var(x, axis=0))}.get(case, np.var)
    v = RNG.normal(size=x.shape).astype(x.dtype)
    got = cr.hvp(f, x, v)
    v64 = v.astype(np.float64)
    if case == "an axis":  # per column: 2 (v - its mean) / rows
        expected = 2 * (v64 - v64.mean(axis=0)) / x.shape[0]
    else:
        expected = 2 * (v64 - v64.mean()) / (x.size - (case == "ddof"))
    assert got.dtype == x.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-5 if case == "float32" else 1e-12,
                               atol=1e-6 if case == "float32" else 1e-14)
    assert _rule_calls(f, x, name="_variance_gradient",
                       transform=lambda f, x: cr.hvp(f, x, v)) >= 1
