"""Slice reads and total sums under ``hvp`` (`ForwardTrace.record_numbers` on index reads of
arrays, `ForwardTrace.record_total`): ``X[:, j]``, ``A[i]``, ``x[i:i + 3]`` (a basic index: each position once) and
``np.sum(h)`` of a small float array, on values carrying tangents, recorded as at order 1 (an
index read, ``np.sum`` one of ``x[...]``) with the output's tangent read at the same index;
the backward pass adds each cotangent with its tangent into the two buffers of the array's
pair at the index. A column loop's hvp took 5.4 gradients before, 2.0 after.

Each program against its closed form and central differences of the gradient, float32
kept, what stays on the general path (an integer-array index, a sum over an axis, a large
array), linear growth counted in elements allocated, and the user's error state."""

from __future__ import annotations

import collections
import importlib
import operator
import sys
import warnings

import numpy as np
import pytest

import chainrules as cr
from chainrules.ad.transforms.forward import ForwardTrace
from chainrules.core.scalar_rule import STAND_IN_SIZE
from chainrules.testing import check_linear

RNG = np.random.default_rng(29)
# (the modules: `chainrules.core` re-exports a function named `accumulate`)
accumulate_module = importlib.import_module("chainrules.core.accumulate")
sparse_module = importlib.import_module("chainrules.core.sparse")


def _hvp_counting(f, x, v) -> tuple:
    """``hvp(f, x, v)``, and a Counter of the functions `ForwardTrace.record_numbers` and
    `ForwardTrace.record_total` recorded."""
    originals = {name: getattr(ForwardTrace, name) for name in ("record_numbers",
                                                                "record_total")}
    made: collections.Counter = collections.Counter()

    def counting(original):
        def count(self, tape, function, *rest):
            recorded = original(self, tape, function, *rest)
            if recorded is not None:
                made[function] += 1
            return recorded
        return count

    for name, original in originals.items():
        setattr(ForwardTrace, name, counting(original))
    try:
        return cr.hvp(f, x, v), made
    finally:
        for name, original in originals.items():
            setattr(ForwardTrace, name, original)


def _central_hvp(f, x, v, step=1e-6):
    """Central difference of the gradient along ``v``, in float64."""
    wide, v = x.astype(np.float64), v.astype(np.float64)
    gradient = cr.grad(f)
    return (gradient(wide + step * v) - gradient(wide - step * v)) / (2 * step)


def column_loop(U):
    s = 0.0
    for t in range(U.shape[1]):
        s = s + np.sum(np.sin(U[:, t]))
    return s


def row_cubes(A):
    return sum(np.sum(A[i] ** 2 * A[i]) for i in range(A.shape[0]))


def windows(x):
    return sum(np.sum(x[i:i + 3] ** 2) for i in range(x.size - 2))


def transposed_loop(U):
    V = U.T  # a moved view, read row by row
    s = 0.0
    for t in range(V.shape[0]):
        s = s + np.sum(np.tanh(V[t]))
    return s


def _window_counts(n):
    counts = np.zeros(n)
    for i in range(n - 2):
        counts[i:i + 3] += 1
    return counts


# name -> (function, shape, closed-form H v, reads recorded by the form per call)
PROGRAMS = {
    "X[:, j] and np.sum": (column_loop, (6, 9), lambda x, v: -np.sin(x) * v, 9),
    "A[i] of a matrix": (row_cubes, (7, 5), lambda x, v: 6 * x * v, 7),
    "x[i:i + 3], windows": (windows, (11,), lambda x, v: 2 * _window_counts(x.size) * v, 9),
    "U.T[t], a moved view": (transposed_loop, (5, 8), lambda x, v: (
        -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)) * v, 8),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_reads_and_sums_under_hvp_against_closed_forms(name):
    f, shape, closed, reads = PROGRAMS[name]
    x, v = RNG.uniform(-1, 1, shape), RNG.normal(size=shape)
    result, made = _hvp_counting(f, x, v)
    assert made[operator.getitem] >= reads  # read by the form, not the general path
    assert made[np.sum] == reads
    np.testing.assert_allclose(result, closed(x, v), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(result, _central_hvp(f, x, v), rtol=1e-6, atol=1e-8)
    # jvp of grad takes the same path
    _, tangent = cr.jvp(cr.grad(f), (x,), (v,))
    np.testing.assert_allclose(tangent, closed(x, v), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_float32_stays_float32(name):
    f, shape, closed, _ = PROGRAMS[name]
    x = RNG.uniform(-1, 1, shape).astype(np.float32)
    v = RNG.normal(size=shape).astype(np.float32)
    result, made = _hvp_counting(f, x, v)
    assert made[np.sum] > 0
    assert result.dtype == np.float32 and result.shape == shape
    np.testing.assert_allclose(result, closed(x.astype(np.float64), v.astype(np.float64)),
                               rtol=2e-5, atol=2e-5)


# name -> (function, argument, a function, how many of its calls the form records): what
# the general path keeps
LEFT = {
    "an integer-array index": (lambda x: sum(np.sum(x[[i, i, i + 1]] ** 3)
                                             for i in range(x.size - 1)),
                               RNG.uniform(0.5, 1.5, 6), operator.getitem, 0),
    "np.sum over an axis": (lambda X: np.sum(np.sum(np.sin(X), axis=0) ** 2),
                            RNG.uniform(-1, 1, (4, 3)), np.sum, 1),  # (the outer one only)
    "a large array's sum": (lambda x: np.sum(np.sin(x)) ** 2,
                            RNG.uniform(-1, 1, STAND_IN_SIZE + 5), np.sum, 0),
}


@pytest.mark.parametrize("name", list(LEFT))
def test_what_stays_on_the_general_path(name):
    f, x, function, recorded = LEFT[name]
    v = RNG.normal(size=x.shape)
    result, made = _hvp_counting(f, x, v)
    assert made[function] == recorded
    np.testing.assert_allclose(result, _central_hvp(f, x, v), rtol=1e-6, atol=1e-7)


def _elements_allocated(run) -> int:
    """The elements of the buffers the backward pass makes dense (`SparseCotangent.dense`,
    `accumulate`'s copies and zeros) while ``run()`` runs: a whole array made per read would
    show in it."""
    total = [0]
    originals = (sparse_module._ZEROS, accumulate_module._ZEROS, accumulate_module._ARRAY)

    def counting(original):
        def make(*args, **kwargs):
            out = original(*args, **kwargs)
            total[0] += out.size
            return out
        return make

    sparse_module._ZEROS = counting(originals[0])
    accumulate_module._ZEROS, accumulate_module._ARRAY = map(counting, originals[1:])
    try:
        run()
    finally:
        sparse_module._ZEROS = originals[0]
        accumulate_module._ZEROS, accumulate_module._ARRAY = originals[1:]
    return total[0]


@pytest.mark.parametrize("f", [column_loop, transposed_loop], ids=["X[:, j]", "U.T[t]"])
def test_loops_of_reads_stay_linear_under_hvp(f):
    def make(n):
        U, V = RNG.uniform(-1, 1, (8, n)), RNG.normal(size=(8, n))
        return lambda: cr.hvp(f, U, V)

    result = check_linear(make, 40, count=_elements_allocated, bound=8 * 1.25, memory=False)
    assert result.counts[1] > 4 * result.counts[0]  # the count sees the buffers


def test_the_users_error_state_and_warnings_as_errors():
    x, v = RNG.uniform(-1, 1, (4, 6)), RNG.normal(size=(4, 6))
    expected = -np.sin(x) * v
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            np.testing.assert_allclose(cr.hvp(column_loop, x, v), expected, rtol=1e-12)


def _creation_calls(f, x, v) -> int:
    """How many times ``hvp(f, x, v)`` calls the function a trace puts in NumPy's namespace
    for its creation functions (``np.asarray``, ``np.zeros``: `chainrules.ad.dispatch.creation`)."""
    calls = [0]

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "create" and \
                frame.f_code.co_filename.endswith("creation.py"):
            calls[0] += 1

    sys.setprofile(profile)
    try:
        cr.hvp(f, x, v)
    finally:
        sys.setprofile(None)
    return calls[0]


def test_the_backward_pass_of_integer_array_reads_calls_no_routed_creation_function():
    # Under hvp the backward pass runs while NumPy's namespace holds the trace's creation
    # functions; a cotangent at an integer-array index built by NumPy's Python functions
    # (as_strided, unique) went through them, each call walking its argument (5.6
    # gradients per read of u[[0, 3, 5]], 2.1 without)
    def loop(X):
        return sum(np.sum(X[:, j][[0, 3, 5, 3]] ** 2) for j in range(X.shape[1]))

    counts = []
    for n in (4, 16):
        X, V = RNG.normal(size=(8, n)), RNG.normal(size=(8, n))
        expected = np.zeros_like(X)
        for index in (0, 5):  # d2/dx2 of x^2 (2) at each position once; 3 read twice: 4
            expected[index] = 2 * V[index]
        expected[3] = 4 * V[3]
        np.testing.assert_allclose(cr.hvp(loop, X, V), expected, rtol=1e-12)
        counts.append(_creation_calls(loop, X, V))
    assert counts[1] == counts[0], counts  # none per step


def test_the_gradients_seed_under_hvp_is_a_number_the_total_sum_takes_inline():
    # hvp is jvp of grad: grad's seed 1.0 for an output of the forward trace was projected
    # onto a 0-d array, which np.sum's record (an index read of x[...]) does not take, so
    # the sum rule's pullback ran (Rosenbrock's hvp 2.0 -> 1.7 gradients without it)
    def rosenbrock(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    x, v = RNG.uniform(-1, 1, 6), RNG.normal(size=6)
    hessian = np.zeros((6, 6))  # the closed form
    for i in range(5):
        a, b = x[i], x[i + 1]
        hessian[i, i] += 1200 * a * a - 400 * b + 2
        hessian[i, i + 1] -= 400 * a
        hessian[i + 1, i] -= 400 * a
        hessian[i + 1, i + 1] += 200
    spread = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "_spread":
            spread.append(frame.f_code.co_filename)

    sys.setprofile(profile)
    try:
        got = cr.hvp(rosenbrock, x, v)
    finally:
        sys.setprofile(None)
    np.testing.assert_allclose(got, hessian @ v, rtol=1e-12)
    assert spread == []  # the sum's rule (`_spread`) never ran
