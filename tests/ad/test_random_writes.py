"""Random programs that write into arrays and read views of them: ``grad``, grad of grad
(reverse over reverse), ``hessian`` and ``hvp`` (forward over reverse, batched and in one
direction), ``jvp``, ``jacobian`` and
``jacfwd`` against finite differences, in float64, float32 and complex.

A program is a short list of steps over one array ``out`` the function creates: numbers and
slices written, augmented assignment, ``np.add.at``, a ufunc's ``out=``, views (slices, views
of views, rows of a reshape) taken before later writes (they must see them, as NumPy's views
do), arrays derived from constants, and terms read from the array or its views. The loss is a fixed weighted sum of ``out``, the views and the terms.
Found this way, and fixed: a view of a temporary view (``out.reshape(2, 3)[0]``) missed later
writes, at every order; under grad of grad, a view taken before a write lost its gradient and
a view of a view of a created array was cut out of it; ``jacfwd`` refused writes into the
copy of a created array.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import chainrules as cr
from tests.ad.finite_differences import numerical_gradient

SIZE = 6      # the length of ``out``
INPUTS = 3    # the length of ``x``

_index = st.integers(0, SIZE - 1)
_input = st.integers(0, INPUTS - 1)
_slice = st.tuples(st.integers(0, SIZE - 2), st.integers(1, 3), st.integers(1, 2)).map(
    lambda t: slice(t[0], min(SIZE, t[0] + t[1] * t[2]), t[2]))

_steps = st.one_of(
    st.tuples(st.just("write_number"), _index, _input, st.sampled_from(["sin", "square", "scale"])),
    st.tuples(st.just("write_slice"), _slice, _input),
    st.tuples(st.just("add_number"), _index, _input),
    st.tuples(st.just("add_at"), st.lists(_index, min_size=1, max_size=3), _input),
    st.tuples(st.just("view"), _slice),
    st.tuples(st.just("view_of_view"), st.integers(0, 1)),
    st.tuples(st.just("derive"), st.floats(0.5, 2.0)),
    st.tuples(st.just("read"), _index, _input),
    st.tuples(st.just("read_view"), _input),
    st.tuples(st.just("multiply_slice"), _slice, _input),
    st.tuples(st.just("reshape_view"), st.integers(0, 1)),
    st.tuples(st.just("sin_in_place")),
    st.tuples(st.just("transpose_view"), st.integers(0, 1)),
    st.tuples(st.just("copy")),
    st.tuples(st.just("write_last"), _input),
    st.tuples(st.just("write_fancy"), st.lists(_index, min_size=1, max_size=4), _input),
    st.tuples(st.just("forget_view")),
)
programs = st.lists(_steps, min_size=1, max_size=8)


def _number(kind: str, value):
    if kind == "sin":
        return np.sin(value)
    if kind == "square":
        return value * value
    return 1.5 * value


def run(program: list, x) -> list:
    """The program's arrays and numbers, in order (plain NumPy or traced alike); ``out`` has
    ``x``'s dtype."""
    out = np.zeros(SIZE, x.dtype)
    views, terms = [], []
    for step in program:
        kind = step[0]
        if kind == "write_number":
            out[step[1]] = _number(step[3], x[step[2]])
        elif kind == "write_slice":
            out[step[1]] = x[step[2]] * np.arange(1.0, 1.0 + len(range(*step[1].indices(SIZE))),
                                                  dtype=x.dtype)
        elif kind == "add_number":
            out[step[1]] += x[step[2]] ** 2
        elif kind == "add_at":
            np.add.at(out, np.array(step[1]), x[step[2]])
        elif kind == "view":
            views.append(out[step[1]])
        elif kind == "view_of_view" and views:
            views.append(views[-1][step[1]:])
        elif kind == "derive":
            out = out * step[1] + 0.25  # a new array: the old views keep the old one
            views = [np.array(v) for v in views]  # as values: their array is gone
        elif kind == "read":
            terms.append(out[step[1]] * x[step[2]])
        elif kind == "read_view" and views:
            terms.append(np.sum(views[-1]) * x[step[1]])
        elif kind == "multiply_slice":
            out[step[1]] *= x[step[2]]
        elif kind == "reshape_view":
            views.append(out.reshape(2, SIZE // 2)[step[1]])
        elif kind == "sin_in_place":
            np.sin(out, out=out)
        elif kind == "transpose_view":
            views.append(out.reshape(2, SIZE // 2).T[step[1]])
        elif kind == "copy":
            out = out.copy()  # the views keep seeing the old array, as NumPy's do
        elif kind == "write_last":
            out[-1] = x[step[1]] - 0.5
        elif kind == "forget_view" and len(views) > 1:
            del views[-2]  # the view a view of a view was taken from, gone
        elif kind == "write_fancy":  # a repeated position keeps the last value, as in NumPy
            out[np.array(step[1])] = x[step[2]] * np.arange(1.0, 1.0 + len(step[1]),
                                                            dtype=x.dtype)
    return [out] + views + terms


def _loss(program: list, weights: np.ndarray):
    def loss(x):
        values = run(program, x)
        flat = np.concatenate([np.ravel(v) for v in values])
        return np.sum(np.real(weights[:len(flat)] * flat)) + np.sum(np.abs(flat) ** 2) / 5.0
    return loss


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, st.integers(0, 2 ** 16))
def test_random_write_programs_at_orders_1_and_2(program, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, INPUTS)
    v = rng.normal(size=INPUTS)
    loss = _loss(program, rng.normal(size=64))
    gradient = cr.grad(loss)
    np.testing.assert_allclose(gradient(x), numerical_gradient(loss, x), rtol=1e-5, atol=1e-6)
    hessian_v = numerical_gradient(lambda x: np.dot(gradient(x), v), x)
    np.testing.assert_allclose(cr.grad(lambda x: np.dot(gradient(x), v))(x), hessian_v,
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(cr.hessian(loss)(x) @ v, hessian_v, rtol=1e-4, atol=1e-5)
    # forward over reverse: the writes' cotangents are pairs (of buffers, when the pass owns
    # them)
    np.testing.assert_allclose(cr.hvp(loss, x, v), hessian_v, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(cr.jvp(loss, (x,), (v,))[1], gradient(x) @ v, rtol=1e-8,
                               atol=1e-10)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, st.integers(0, 2 ** 16), st.sampled_from([np.float32, np.complex128]))
def test_random_write_programs_in_float32_and_complex(program, seed, dtype):
    """float32: against the same program in float64; complex: dL/dRe + i dL/dIm."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, INPUTS)
    if dtype == np.complex128:
        x = x + 1j * rng.uniform(-1.0, 1.0, INPUTS)
    weights = rng.normal(size=64) + (1j * rng.normal(size=64) if dtype == np.complex128 else 0)
    with np.errstate(all="ignore"):  # sin of sin of a complex number grows as exp(exp(...))
        values = np.concatenate([np.ravel(v) for v in run(program, x)])
    assume(np.all(np.abs(values) < 1e3))  # where central differences keep their accuracy
    loss = _loss(program, weights)
    gradient = cr.grad(loss)(x.astype(dtype))
    assert gradient.dtype == dtype
    expected = numerical_gradient(loss, x)
    tolerance = 2e-3 if dtype == np.float32 else 1e-6
    np.testing.assert_allclose(gradient, expected, rtol=tolerance, atol=tolerance)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, st.integers(0, 2 ** 16))
def test_random_write_programs_jacobians(program, seed):
    """``jacobian`` (reverse, one row at a time) and ``jacfwd`` (a batch of directions, which
    once left the copy of a created array plain, refusing the writes into it)."""
    x = np.random.default_rng(seed).uniform(-1.0, 1.0, INPUTS)

    def f(x):
        return np.concatenate([np.ravel(v) for v in run(program, x)])

    expected = np.stack([(f(x + 1e-6 * e) - f(x - 1e-6 * e)) / 2e-6 for e in np.eye(INPUTS)],
                        axis=1)
    np.testing.assert_allclose(cr.jacobian(f)(x), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cr.jacfwd(f)(x), expected, rtol=1e-5, atol=1e-6)
