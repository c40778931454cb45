"""Random programs on small arrays: broadcasting between shapes, reductions along axes (kept
dimensions or not), sorting, flipping, rolling, cumulative sums, fancy and boolean indexing,
matrix products (a row times a matrix too), outer products, einsum, norms, np.where and
clip, reshapes and transposes, reads at lists and integer arrays, with constants of every
kind (float32 arrays, NumPy and Python numbers): ``grad``, grad of grad, ``hvp``,
``hessian``, ``jvp``, ``jacobian`` and ``jacfwd`` against central differences; float32
against float64.

Every value has a shape that broadcasts to ``(2, 3)``, the input's, so any two combine.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import chainrules as cr
from tests.ad.finite_differences import numerical_gradient

SHAPE = (2, 3)


def _along_last(f):
    """``f`` along the last axis; a 0-d value (a full reduction's) scaled instead."""
    return lambda a: f(a) if np.ndim(a) else 1.5 * a


UNARY = {
    "sin": np.sin, "tanh": np.tanh, "exp": lambda a: np.exp(np.tanh(a)),
    "square": np.square, "abs": lambda a: np.abs(a + 3.0),
    "sqrt": lambda a: np.sqrt(a * a + 0.5), "log": lambda a: np.log(a * a + 0.5),
    "flip": _along_last(lambda a: np.flip(a, axis=-1)),
    "roll": _along_last(lambda a: np.roll(a, 1, axis=-1)),
    "cumsum": _along_last(lambda a: np.cumsum(a, axis=-1)),
    "sort": _along_last(lambda a: np.sort(a, axis=-1)),
    "reverse": _along_last(lambda a: a[..., ::-1]), "clip": lambda a: np.clip(a, -0.6, 0.7),
    "fancy": lambda a: a[..., [2, 0, 1]] if np.shape(a)[-1:] == (3,) else a * 1.5,
    "transpose twice": lambda a: np.transpose(np.transpose(a)),
    "masked sum": lambda a: np.sum(a[a > 0.1]) + np.sum(a[a <= 0.1]) * 0.5,
    "outer rows": lambda a: np.broadcast_to(a, SHAPE) * np.array([[1.0], [-2.0]]),
    "negative": lambda a: -a, "copy": lambda a: np.array(a, copy=True),
    "astype": lambda a: a.astype(np.float64) * 0.5,
    "reshape": lambda a: np.reshape(np.ravel(a), np.shape(a)) * 1.25,
    "T of T": lambda a: a.T.T if np.ndim(a) else a * 0.75,
    "x.reshape": lambda a: a.reshape(-1).reshape(np.shape(a)) if np.ndim(a) else a,
    "rows by a list": lambda a: a[[1, 0]] if np.ndim(a) == 2 and np.shape(a)[0] == 2 else
    a * 1.5,
    "repeated columns": lambda a: a[..., np.array([2, 2, 0])] if np.shape(a)[-1:] == (3,)
    else a - 0.5,
    "a column times a row": lambda a: np.broadcast_to(a, SHAPE)[:, None, 0] *
    np.broadcast_to(a, SHAPE)[0],
}

REDUCE = {
    "sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min,
    "prod": lambda a, axis=None, keepdims=False: np.prod(1.0 + 0.5 * np.tanh(a), axis=axis,
                                                        keepdims=keepdims),
    "norm": lambda a, axis=None, keepdims=False: np.linalg.norm(a + 2.0, axis=axis,
                                                               keepdims=keepdims),
    "logsumexp": lambda a, axis=None, keepdims=False: np.log(np.sum(np.exp(a), axis=axis,
                                                                    keepdims=keepdims)),
}

BINARY = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / (b * b + 0.5), "maximum": np.maximum,
    "where": lambda a, b: np.where(a > b, a * 2.0, b), "hypot": lambda a, b: np.hypot(a, b + 2.0),
    "power": lambda a, b: (a * a + 0.5) ** np.tanh(b),
    "matmul": lambda a, b: np.broadcast_to(a, SHAPE) @ np.broadcast_to(b, SHAPE).T @
    np.broadcast_to(a, SHAPE) / 4.0,
    "einsum": lambda a, b: np.einsum("ij,ij->i", np.broadcast_to(a, SHAPE),
                                     np.broadcast_to(b, SHAPE))[:, None],
    "concatenate": lambda a, b: np.concatenate([np.broadcast_to(a, SHAPE),
                                                np.broadcast_to(b, SHAPE)], axis=0)[1:3],
    "stack": lambda a, b: np.stack([np.broadcast_to(a, SHAPE), np.broadcast_to(b, SHAPE)])[1],
    "outer": lambda a, b: np.outer(np.broadcast_to(a, SHAPE)[:, 0],
                                   np.broadcast_to(b, SHAPE)[0]),
    "row @ matrix.T": lambda a, b: (np.broadcast_to(a, SHAPE)[1] @
                                    np.broadcast_to(b, SHAPE).T)[:, None],
}

CONSTANTS = [2, 0.5, -1.5, np.float64(0.75), np.float32(1.25),
             np.array([0.5, -1.0, 2.0], np.float32), np.array([[1.5], [-0.5]]),
             np.arange(6.0).reshape(SHAPE) / 4.0]

# The operations defined on complex values, and holomorphic or real-valued there
COMPLEX_UNARY = ["sin", "exp", "square", "flip", "roll", "cumsum", "reverse", "fancy",
                 "transpose twice", "outer rows", "negative", "copy", "abs"]
COMPLEX_REDUCE = ["sum", "mean", "prod", "norm"]
COMPLEX_BINARY = ["+", "-", "*", "matmul", "einsum", "concatenate", "stack"]


def _programs(unary, reduce, binary):
    value = st.integers(0, 63)  # taken modulo the values there are
    steps = st.one_of(
        st.tuples(st.just("unary"), st.sampled_from(sorted(unary)), value),
        st.tuples(st.just("reduce"), st.sampled_from(sorted(reduce)), value,
                  st.sampled_from([None, 0, 1, -1]), st.booleans()),
        st.tuples(st.just("binary"), st.sampled_from(sorted(binary)), value, value),
        st.tuples(st.just("constant"), st.sampled_from(sorted(binary)), value,
                  st.integers(0, len(CONSTANTS) - 1), st.booleans()),
        st.tuples(st.just("row"), value, st.integers(0, 1)),
        st.tuples(st.just("column"), value, st.integers(0, 2)),
    )
    return st.lists(steps, min_size=1, max_size=8)


programs = _programs(UNARY, REDUCE, BINARY)
complex_programs = _programs(COMPLEX_UNARY, COMPLEX_REDUCE, COMPLEX_BINARY)


def _fits(value) -> bool:
    try:
        np.broadcast_shapes(np.shape(value), SHAPE)
    except ValueError:
        return False
    return np.broadcast_shapes(np.shape(value), SHAPE) == SHAPE


def run(program: list, x) -> list:
    """The program's values, each of a shape that broadcasts to ``SHAPE``."""
    values = [x]
    for step in program:
        kind = step[0]
        pick = (lambda k: values[k % len(values)])
        if kind == "unary":
            value = UNARY[step[1]](pick(step[2]))
        elif kind == "reduce":
            a, axis, keepdims = pick(step[2]), step[3], step[4]
            if axis is not None and np.ndim(a) <= max(axis, 0):
                axis = None if np.ndim(a) == 0 else -1
            value = REDUCE[step[1]](a, axis=axis, keepdims=keepdims)
            if not _fits(value):  # (2,) from a row's reduction: a column
                value = np.reshape(value, (2, 1))
        elif kind == "binary":
            value = BINARY[step[1]](pick(step[2]), pick(step[3]))
        elif kind == "constant":
            a, c = pick(step[2]), CONSTANTS[step[3]]
            value = BINARY[step[1]](c, a) if step[4] else BINARY[step[1]](a, c)
        elif kind == "row":
            a = np.broadcast_to(pick(step[1]), SHAPE)
            value = a[step[2]]
        else:
            a = np.broadcast_to(pick(step[1]), SHAPE)
            value = a[:, step[2]:step[2] + 1]
        assert _fits(value), (step, np.shape(value))
        values.append(value)
    return values


def _loss(program: list, weights: np.ndarray):
    def loss(x):
        total = 0.0
        for k, value in enumerate(run(program, x)):
            full = np.broadcast_to(value, SHAPE)
            total = total + np.sum(np.real(weights[k % len(weights)] * full)) + np.sum(
                np.abs(full) ** 2) / 8.0
        return total
    return loss


def _moderate(program: list, x: np.ndarray) -> bool:
    """Finite, not large, not single precision (a float32 constant meeting a Python number),
    and no two values of a max, sort, clip or np.where comparison closer than the
    differences' reach (there the function has a kink)."""
    with np.errstate(all="ignore"):
        values = run(program, x)
        shifted = [run(program, x + 1e-5 * d) for d in np.random.default_rng(1).normal(
            size=(2,) + SHAPE)]
    for value in values:
        value = np.asarray(value)
        if value.dtype.itemsize < (8 if value.dtype.kind == "f" else 16) or \
                not np.all(np.isfinite(value)) or np.any(np.abs(value) > 1e3):
            return False
    # a kink within reach: a value that moves by far more than the step (a jump of max, a
    # swap in sort, a mask that flips) makes central differences meaningless there
    for other in shifted:
        for a, b in zip(values, other):
            if np.any(np.abs(np.asarray(a) - np.asarray(b)) > 1e-2):
                return False
        if any(np.shape(a) != np.shape(b) for a, b in zip(values, other)):
            return False
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(programs, st.integers(0, 2 ** 16))
def test_random_array_programs_at_orders_1_and_2(program, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, SHAPE)
    v = rng.normal(size=SHAPE)
    assume(_moderate(program, x))
    loss = _loss(program, rng.normal(size=16))
    gradient = cr.grad(loss)
    g = gradient(x)
    assert g.dtype == np.float64 and g.shape == SHAPE
    # central differences with steps of 1e-6 round to about eps |loss| / 1e-6 (a loss of 1e5
    # from products and einsum: 2e-5), which the absolute tolerance takes in
    rounding = 10 * np.finfo(float).eps * abs(float(loss(x))) / 1e-6
    np.testing.assert_allclose(g, numerical_gradient(loss, x), rtol=1e-5,
                               atol=max(1e-6, rounding))
    hessian_v = numerical_gradient(lambda x: np.sum(gradient(x) * v), x)
    np.testing.assert_allclose(cr.jvp(gradient, (x,), (v,))[1], hessian_v, rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(gradient(x) * v))(x), hessian_v,
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.tensordot(cr.hessian(loss)(x), v, 2), hessian_v, rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(cr.jvp(loss, (x,), (v,))[1], np.sum(g * v), rtol=1e-8,
                               atol=1e-10)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.filter_too_much])
@given(programs, st.integers(0, 2 ** 16))
def test_random_array_programs_jacobians(program, seed):
    x = np.random.default_rng(seed).uniform(-1.0, 1.0, SHAPE)
    assume(_moderate(program, x))

    def f(x):
        return np.concatenate([np.ravel(np.broadcast_to(v, SHAPE)) for v in run(program, x)])

    expected = np.stack([(f(x + 1e-6 * e.reshape(SHAPE)) - f(x - 1e-6 * e.reshape(SHAPE))) /
                         2e-6 for e in np.eye(x.size)], axis=-1).reshape((-1,) + SHAPE)
    np.testing.assert_allclose(cr.jacobian(f)(x), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cr.jacfwd(f)(x), expected, rtol=1e-5, atol=1e-6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.filter_too_much])
@given(programs, st.integers(0, 2 ** 16))
def test_random_array_programs_in_float32(program, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, SHAPE)
    assume(_moderate(program, x))
    # the same branches in float32: two equal values (one expression computed twice) compared
    # by np.where tie in float64 and may differ by an ulp in float32, a different function
    with np.errstate(all="ignore"):
        single = run(program, x.astype(np.float32))
    assume(all(np.allclose(np.asarray(a, np.float64), b, rtol=1e-3, atol=1e-3)
               for a, b in zip(single, run(program, x))))
    loss = _loss(program, rng.normal(size=16))
    with np.errstate(all="ignore"):
        gradient = cr.grad(loss)(x.astype(np.float32))
    assert gradient.dtype == np.float32
    assume(np.all(np.isfinite(gradient)))
    expected = numerical_gradient(loss, x)
    np.testing.assert_allclose(gradient, expected, rtol=2e-3,
                               atol=2e-3 * (1 + np.max(np.abs(expected))))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.filter_too_much])
@given(complex_programs, st.integers(0, 2 ** 16))
def test_random_array_programs_of_complex_values(program, seed):
    """The gradient of a real loss of complex values: dL/dRe + i dL/dIm."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, SHAPE) + 1j * rng.uniform(-1.0, 1.0, SHAPE)
    assume(_moderate(program, x))
    loss = _loss(program, rng.normal(size=16) + 1j * rng.normal(size=16))
    gradient = cr.grad(loss)(x)
    assert gradient.dtype == np.complex128
    np.testing.assert_allclose(gradient, numerical_gradient(loss, x), rtol=1e-5, atol=1e-6)
