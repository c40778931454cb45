"""Forward mode's hot path gives exactly what the frules give.

Operators, ufuncs, indexing and define()'d functions on forward-traced values call the rule's
``push`` (its pushforward on plain tangents) directly, skipping the generic dispatch and the
projection of tangents that already fit. Here the output and tangent of that path are compared
with the registered frule called through the public registry, bit for bit and type for type:
float32 stays float32, complex stays complex, Python numbers mixed with NumPy scalars and
arrays give what NumPy gives. (The frules themselves are checked against finite differences
in test_forward.py and test_forward_registry.py.)
"""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chainrules as cr
from chainrules.core.registry import frule
from chainrules.core.tangents import AbstractZero, NoTangent, ZeroTangent

# Values of every kind the hot path meets: NumPy arrays and scalars of each inexact dtype,
# Python numbers (an int only as a constant: it has no tangent).
KINDS = {
    "float64 array": lambda r: r.uniform(0.5, 2.0, 3),
    "float32 array": lambda r: r.uniform(0.5, 2.0, 3).astype(np.float32),
    "complex128 array": lambda r: r.uniform(0.5, 2.0, 3) + 1j * r.uniform(0.5, 2.0, 3),
    "float64": lambda r: np.float64(r.uniform(0.5, 2.0)),
    "float32": lambda r: np.float32(r.uniform(0.5, 2.0)),
    "complex64": lambda r: np.complex64(r.uniform(0.5, 2.0) + 1j * r.uniform(0.5, 2.0)),
    "complex128": lambda r: np.complex128(r.uniform(0.5, 2.0) + 1j * r.uniform(0.5, 2.0)),
    "python float": lambda r: float(r.uniform(0.5, 2.0)),
    "python complex": lambda r: complex(r.uniform(0.5, 2.0), r.uniform(0.5, 2.0)),
}
CONSTANTS = {**KINDS, "python int": lambda r: 3, "python int 0": lambda r: 0}

BINARY = [np.add, np.subtract, np.multiply, np.divide, np.power, np.maximum, np.arctan2,
          np.hypot, np.logaddexp]
UNARY = [np.negative, np.exp, np.sin, np.tanh, np.sqrt, np.log, np.square, np.abs,
         np.reciprocal]
OPERATORS = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
             np.divide: operator.truediv, np.power: operator.pow}
REAL_ONLY = {np.maximum, np.arctan2, np.hypot, np.logaddexp}


def tangent_like(value, rng):
    """A random tangent in ``value``'s tangent space (same type, dtype and shape)."""
    if isinstance(value, np.ndarray):
        t = rng.normal(size=value.shape)
        if value.dtype.kind == "c":
            t = t + 1j * rng.normal(size=value.shape)
        return t.astype(value.dtype)
    if isinstance(value, complex) or np.iscomplexobj(value):
        return type(value)(complex(rng.normal(), rng.normal()))
    return type(value)(rng.normal())


# The derivatives in closed form, in complex128 (an independent check of the values).
BINARY_DERIVATIVES = {
    np.add: lambda a, b, da, db: da + db,
    np.subtract: lambda a, b, da, db: da - db,
    np.multiply: lambda a, b, da, db: b * da + a * db,
    np.divide: lambda a, b, da, db: da / b - a * db / b ** 2,
    np.power: lambda a, b, da, db: b * a ** (b - 1) * da + np.log(a) * a ** b * db,
    np.maximum: lambda a, b, da, db: np.where(np.real(a) > np.real(b), da, db),
    np.arctan2: lambda a, b, da, db: (b * da - a * db) / (a * a + b * b),
    np.hypot: lambda a, b, da, db: (a * da + b * db) / np.hypot(np.real(a), np.real(b)),
    np.logaddexp: lambda a, b, da, db: (np.exp(a) * da + np.exp(b) * db) / (np.exp(a)
                                                                            + np.exp(b)),
}
UNARY_DERIVATIVES = {
    np.negative: lambda x, dx: -dx,
    np.exp: lambda x, dx: np.exp(x) * dx,
    np.sin: lambda x, dx: np.cos(x) * dx,
    np.tanh: lambda x, dx: (1 - np.tanh(x) ** 2) * dx,
    np.sqrt: lambda x, dx: dx / (2 * np.sqrt(x)),
    np.log: lambda x, dx: dx / x,
    np.square: lambda x, dx: 2 * x * dx,
    np.abs: lambda x, dx: np.real(np.conj(x) * dx) / np.abs(x),
    np.reciprocal: lambda x, dx: -dx / x ** 2,
}


def assert_derivative(y, y_dot, expected, what, single=False):
    """``y_dot`` is in ``y``'s tangent space (type, dtype, shape) and equals ``expected``
    (to single precision if ``single``: a rule computes in its arguments' precision)."""
    assert type(y_dot) is type(y), f"{what}: tangent {type(y_dot)} for output {type(y)}"
    assert np.result_type(y_dot) == np.result_type(y), what
    assert np.shape(y_dot) == np.shape(y), what
    single = single or np.result_type(y) in (np.float32, np.complex64)
    if not np.all(np.isfinite(expected)):
        return  # a singular point (0 ** b): the rules' conventions there are tested elsewhere
    with np.errstate(invalid="ignore"):
        if not np.iscomplexobj(y):
            expected = np.real(expected)
        np.testing.assert_allclose(np.asarray(y_dot, complex), np.asarray(expected, complex),
                                   rtol=1e-4 if single else 1e-10, atol=1e-5 if single else
                                   1e-12, err_msg=what)


def plain(value):
    """``value`` in complex128 or float64, for the closed forms."""
    return np.asarray(value, complex if np.iscomplexobj(value) else float)


def by_rule(function, primals, tangents):
    """``(y, dy)`` of the registered frule, called as any AD system would."""
    y, dy = frule((NoTangent(),) + tuple(tangents), function, *primals)
    return y, dy


def assert_identical(got, expected, what):
    if isinstance(expected, AbstractZero):
        assert isinstance(got, AbstractZero) or not np.any(got), what
        return
    assert type(got) is type(expected), f"{what}: {type(got)} != {type(expected)}"
    if isinstance(expected, (np.ndarray, np.generic)):
        assert got.dtype == expected.dtype, f"{what}: {got.dtype} != {expected.dtype}"
        assert got.shape == expected.shape, what
    with np.errstate(invalid="ignore"):
        if np.iscomplexobj(expected):
            # NumPy's complex loops round differently by memory alignment (SIMD or not): the
            # same np.square(z) can differ in the last bit between two calls.
            eps = np.finfo(np.result_type(expected)).eps
            np.testing.assert_allclose(got, expected, rtol=4 * eps, atol=0, err_msg=what)
        else:
            assert np.array_equal(got, expected, equal_nan=True), f"{what}: {got} != {expected}"


def jvp_of(function, primals, tangents, traced):
    """``function(*primals)`` and its tangent through the engine (the hot path), with the
    arguments at ``traced`` traced and the others constants."""
    positions = [i for i in traced]

    def f(*values):
        args = list(primals)
        for i, value in zip(positions, values):
            args[i] = value
        return function(*args)

    return cr.jvp(f, tuple(primals[i] for i in positions),
                  tuple(tangents[i] for i in positions))


@settings(max_examples=300, deadline=None)
@given(function=st.sampled_from(BINARY), first=st.sampled_from(sorted(KINDS)),
       second=st.sampled_from(sorted(CONSTANTS)), both=st.booleans(), swap=st.booleans(),
       operator_form=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_binary_hot_path_equals_frule(function, first, second, both, swap, operator_form,
                                      seed):
    rng = np.random.default_rng(seed)
    a, b = KINDS[first](rng), CONSTANTS[second](rng)
    if function in REAL_ONLY and (np.iscomplexobj(a) or np.iscomplexobj(b)):
        return
    both = both and second in KINDS
    da, db = tangent_like(a, rng), tangent_like(b, rng) if both else ZeroTangent()
    primals, tangents, traced = [a, b], [da, db], [0, 1] if both else [0]
    if swap:
        primals, tangents = primals[::-1], tangents[::-1]
        traced = [1 - i for i in traced][::-1]
    call = OPERATORS.get(function, function) if operator_form else function
    with np.errstate(all="ignore"):
        try:
            expected = by_rule(function, primals, tangents)
        except (ZeroDivisionError, OverflowError, ValueError, TypeError):
            return  # the operation itself fails on these numbers
        y, y_dot = jvp_of(call, primals, tangents, traced)
    what = f"{function.__name__}({type(primals[0]).__name__}, {type(primals[1]).__name__})"
    assert_identical(y, expected[0], what + " output")
    assert_identical(y_dot, expected[1], what + " tangent")
    d = [0.0 if isinstance(t, AbstractZero) else plain(t) for t in tangents]
    with np.errstate(all="ignore"):
        closed = BINARY_DERIVATIVES[function](plain(primals[0]), plain(primals[1]), *d)
    assert_derivative(y, y_dot, closed, what, single=any(
        np.result_type(p) in (np.float32, np.complex64) for p in primals))


@settings(max_examples=150, deadline=None)
@given(function=st.sampled_from(UNARY), kind=st.sampled_from(sorted(KINDS)),
       seed=st.integers(0, 2 ** 16))
def test_unary_hot_path_equals_frule(function, kind, seed):
    rng = np.random.default_rng(seed)
    x = KINDS[kind](rng)
    dx = tangent_like(x, rng)
    with np.errstate(all="ignore"):
        expected = by_rule(function, [x], [dx])
        y, y_dot = cr.jvp(function, (x,), (dx,))
    assert_identical(y, expected[0], f"{function.__name__}({kind}) output")
    assert_identical(y_dot, expected[1], f"{function.__name__}({kind}) tangent")
    with np.errstate(all="ignore"):
        closed = UNARY_DERIVATIVES[function](plain(x), plain(dx))
    assert_derivative(y, y_dot, closed, f"{function.__name__}({kind})")


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("case", ["index", "slice", "sum", "matmul", "reshape", "transpose",
                                  "swapaxes"])
def test_indexing_and_array_functions_equal_frule(case, dtype):
    rng = np.random.default_rng(1)
    x = (rng.normal(size=(3, 4)) + (1j * rng.normal(size=(3, 4)) if dtype is np.complex128
                                    else 0)).astype(dtype)
    dx = tangent_like(x, rng)
    w = rng.normal(size=(4, 2)).astype(dtype)
    calls = {
        "index": (operator.getitem, lambda t: t[1], (x, 1)),
        "slice": (operator.getitem, lambda t: t[1:, ::2], (x, (slice(1, None), slice(None, None, 2)))),
        "sum": (np.sum, lambda t: np.sum(t), (x,)),
        "matmul": (np.matmul, lambda t: t @ w, (x, w)),
        "reshape": (np.reshape, lambda t: t.reshape((4, 3)), (x, (4, 3))),
        "transpose": (np.transpose, lambda t: t.T, (x,)),
        "swapaxes": (np.swapaxes, lambda t: np.swapaxes(t, 0, 1), (x, 0, 1)),
    }
    function, through_engine, primals = calls[case]
    tangents = (dx,) + (ZeroTangent(),) * (len(primals) - 1)
    expected = by_rule(function, primals, tangents)
    y, y_dot = cr.jvp(through_engine, (x,), (dx,))
    assert_identical(y, expected[0], f"{case} output")
    assert_identical(y_dot, expected[1], f"{case} tangent")


def test_index_loop_of_float32_stays_float32():
    x = np.arange(1.0, 5.0, dtype=np.float32)
    v = np.ones(4, np.float32)
    def f(x):
        return sum(x[i] ** 3 * 2.0 for i in range(4))

    y, y_dot = cr.jvp(f, (x,), (v,))
    # float32 on NumPy 2; NumPy 1 makes a float32 number times a Python float a double
    assert type(y) is type(f(x)) and type(y_dot) is type(y)
    assert y_dot == 6.0 * (1 + 4 + 9 + 16)  # d/dx 2 x^3 = 6 x^2


def _forward_operations(run) -> int:
    """The number of operations forward traces handle while ``run()`` runs (a count that
    load cannot change)."""
    from chainrules.ad.transforms.forward import ForwardTrace

    apply = ForwardTrace.apply
    count = [0]

    def counting(self, *args):
        count[0] += 1
        return apply(self, *args)

    ForwardTrace.apply = counting
    try:
        run()
    finally:
        ForwardTrace.apply = apply
    return count[0]


@pytest.mark.parametrize("transform", ["jvp", "hvp"])
def test_scalar_index_loop_is_linear_in_forward_mode(transform):
    from chainrules.testing import check_linear

    def make(n):
        x = np.linspace(0.5, 1.5, n)
        v = np.ones(n)

        def f(x):
            return sum(x[i] ** 3 for i in range(n))

        if transform == "jvp":
            def run():
                y, y_dot = cr.jvp(f, (x,), (v,))
                assert np.isclose(y_dot, np.sum(3 * x ** 2))  # closed form
        else:
            def run():
                np.testing.assert_allclose(cr.hvp(f, x, v), 6 * x)  # H = diag(6 x)
        return run

    # exact counts; memory (tracemalloc, whose peaks move with the allocator's state: 8.5x
    # once at this bound in a full run) and CPU time with the default wide bound
    check_linear(make, 200, count=_forward_operations, bound=8.5, memory=False)
    check_linear(make, 200)
