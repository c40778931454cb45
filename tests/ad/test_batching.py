"""Batched forward mode (chainrules.ad.transforms.batching): jacfwd and hessian push all the basis
vectors through one trace. Each batch rule family against the per-column jvp (one direction at
a time, the unbatched engine) and against finite differences; the fallback loop; dtypes,
Python numbers, structures, chunks and nesting; Hessians of an MLP and of a Gaussian
log-likelihood with a Cholesky-parameterised covariance against closed forms or finite
differences of the gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chainrules as cr
from chainrules.ad.transforms import batching


def per_column_jvp(f, x):
    """The Jacobian column by column, by the unbatched forward engine: (out..., in...)."""
    x = np.asarray(x)
    columns = []
    for k in range(x.size):
        e = np.zeros(x.size, x.dtype)
        e[k] = 1
        columns.append(np.asarray(cr.jvp(f, (x,), (e.reshape(x.shape),))[1]))
    out_shape = columns[0].shape
    return np.stack(columns, axis=-1).reshape(out_shape + x.shape)


def finite_jacobian(f, x, step=1e-6):
    x = np.asarray(x, dtype=float)
    columns = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = step
        e = e.reshape(x.shape)
        columns.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * step))
    out_shape = columns[0].shape
    return np.stack(columns, axis=-1).reshape(out_shape + x.shape)


@pytest.fixture
def loops(monkeypatch):
    """The functions that went through the one-direction-at-a-time fallback."""
    seen = []
    original = batching._one_direction_at_a_time

    def counting(trace, function, *rest):
        seen.append(function)
        return original(trace, function, *rest)

    monkeypatch.setattr(batching, "_one_direction_at_a_time", counting)
    return seen


X = np.array([0.3, -0.8, 1.1, 0.5, -1.4, 0.9])

# name -> function of a 6-vector; each exercises one family of batch rules.
BATCHED = {
    "elementwise, broadcasting, Python numbers": lambda x: np.sin(x[:3, None]) * x[None, 3:]
    + 2.0 * x[:3, None] ** 3 - 1 / (2.0 + x[None, :3] ** 2),
    "unary pushforward": lambda x: np.abs(x) * np.tanh(x),
    "sum, mean over axes": lambda x: np.concatenate([
        np.sum(x.reshape(2, 3) ** 2, axis=0), np.mean(np.exp(x).reshape(3, 2), axis=-1),
        np.sum(x.reshape(2, 3), axis=(0, 1), keepdims=True).ravel(), [np.mean(x * x)]]),
    "prod, max, min, ptp, var, std (weighted reductions)": lambda x: np.concatenate([
        np.prod(x.reshape(2, 3), axis=1), [np.max(x ** 2)], np.min(x.reshape(3, 2), axis=0),
        np.ptp(x.reshape(2, 3), axis=-1, keepdims=True).ravel(), [np.var(np.sin(x))],
        np.std(x.reshape(2, 3), axis=0, ddof=1), [np.nanmax(x), np.nanvar(x)]]),
    "cumsum": lambda x: np.concatenate([np.cumsum(x ** 2), np.cumsum(x.reshape(2, 3), axis=1)
                                        .ravel(), np.cumsum(x.reshape(3, 2))]),
    "reshape, transpose, swapaxes, moveaxis": lambda x: np.concatenate([
        np.transpose(x.reshape(1, 2, 3) ** 2, (2, 0, 1)).ravel(),
        np.swapaxes(x.reshape(3, 2, 1), 0, -1).ravel() * 3.0,
        np.moveaxis(np.sin(x).reshape(2, 3, 1), 0, -1).ravel(), x.reshape(2, 3).T.ravel(),
        np.reshape(x.reshape(2, 3).T, 6, order="F") ** 2, np.ravel(x.reshape(3, 2), "F")]),
    "expand_dims, squeeze, broadcast_to": lambda x: (
        np.broadcast_to(np.expand_dims(x ** 2, 0), (2, 6)) *
        np.squeeze(x.reshape(1, 6, 1)) + np.broadcast_to(x[0], (2, 6))),
    "concatenate, stack with constants": lambda x: np.stack(
        [np.concatenate([x[:2] ** 2, np.ones(1), x[4:]]), np.full(5, 2.0),
         np.concatenate([x[1:3], np.sin(x[3:])])], axis=-1),
    "concatenate with axis None": lambda x: np.concatenate([x.reshape(2, 3), np.exp(x[:2])],
                                                           axis=None),
    "tril, triu, diagonal, trace, diag": lambda x: np.concatenate([
        np.tril(np.outer(x[:3], x[3:])).ravel(), np.triu(x.reshape(2, 3), 1).ravel(),
        np.diagonal(x.reshape(2, 3) ** 2, 1), [np.trace(np.outer(x[:3], x[3:]))],
        np.diag(np.outer(x[:2], x[4:]))]),
    "getitem: slices, arrays, Ellipsis, None, masks": lambda x: np.concatenate([
        x[1:4] * x[::-2], x[np.array([0, 2, 2])] ** 2, x.reshape(2, 3)[..., 1],
        x[None, 1:3].ravel(), x[x > 0], x.reshape(2, 3)[1, [0, 2]],
        x.reshape(2, 3)[[1, 0], 1:].ravel()]),
    "getitem: non-adjacent advanced indices (loop)": lambda x: x.reshape(1, 2, 3)[
        [0, 0], :, [2, 1]].ravel() ** 2,
    "matmul and dot, 1-d and 2-d and stacks": lambda x: np.concatenate([
        x.reshape(2, 3) @ x[:3], x[:2] @ x.reshape(2, 3), [x[:3] @ x[3:]],
        (x.reshape(2, 3) @ x.reshape(3, 2)).ravel(),
        (x.reshape(2, 1, 3) @ x.reshape(3, 2)).ravel(), (x[:3] @ x.reshape(2, 3, 1)).ravel(),
        np.dot(x.reshape(3, 2), x[:2]), [np.dot(x[:2], x[4:])]]),
    "einsum, take, take_along_axis": lambda x: np.concatenate([
        np.einsum("ij,jk->ik", x.reshape(2, 3), x.reshape(3, 2)).ravel(),
        np.einsum("i,i->", x, np.sin(x))[None], np.einsum("ij->j", x.reshape(3, 2) ** 2),
        np.take(x, [4, 0, 0]) ** 2, np.take(x.reshape(2, 3), [2, 1], axis=1).ravel(),
        np.take_along_axis(x.reshape(2, 3), np.array([[2, 0], [1, 1]]), axis=1).ravel(),
        np.take_along_axis(x, np.array([5, 1]), axis=None)]),
    "where": lambda x: np.where(x > 0, x ** 2, 3.0 * x) + np.where(x[0] > 0, 1.0, x),
    "real, imag, conj of complex intermediates": lambda x: np.real(
        np.exp(1j * x) * (1 + 2j)) + np.imag(np.conj(x * (2 - 1j))),
    "pad": lambda x: np.concatenate([np.pad(x ** 2, (1, 2)),
                                     np.pad(x.reshape(2, 3), ((0, 1), (1, 0)), mode="edge")
                                     .ravel()]),
    "inv, solve, cholesky, det, slogdet": lambda x: np.concatenate([
        np.linalg.inv(np.eye(2) * 3 + x[:4].reshape(2, 2)).ravel(),
        np.linalg.solve(np.eye(2) * 3 + x[:4].reshape(2, 2), x[4:]),
        np.linalg.solve(np.eye(2) * 3 + x[:4].reshape(2, 2), x[2:].reshape(2, 2)).ravel(),
        np.linalg.cholesky(np.eye(3) * 4 + np.outer(x[:3], x[:3])).ravel(),
        [np.linalg.det(np.eye(2) + x[:4].reshape(2, 2)),
         np.linalg.slogdet(np.eye(2) * 2 + x[:4].reshape(2, 2))[1]]]),
}

# Functions that have no batch rule: they must go through the loop and still be exact.
LOOPED = {
    "sort and cumprod": (lambda x: np.sort(x) * np.cumprod(x[::-1]), {np.sort, np.cumprod}),
    "eigh (a tuple output)": (lambda x: np.linalg.eigh(
        np.outer(x[:3], x[:3]) + np.diag(x[3:]))[0], {np.linalg.eigh}),
    "implicit einsum": (lambda x: np.einsum("i,i", x, x), {np.einsum}),
}


@pytest.mark.parametrize("name", list(BATCHED))
def test_each_batch_rule_family_equals_per_column_jvp_and_finite_differences(name, loops):
    f = BATCHED[name]
    J = cr.jacfwd(f)(X)
    np.testing.assert_allclose(J, per_column_jvp(f, X), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(J, finite_jacobian(f, X), rtol=1e-6, atol=1e-7)
    if "loop" not in name:
        assert loops == [], f"{name}: fell back to the loop for {loops}"


@pytest.mark.parametrize("name", list(LOOPED))
def test_functions_without_a_batch_rule_fall_back_exactly(name, loops):
    f, expected = LOOPED[name]
    J = cr.jacfwd(f)(X)
    np.testing.assert_allclose(J, per_column_jvp(f, X), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(J, finite_jacobian(f, X), rtol=1e-6, atol=1e-7)
    assert expected <= set(loops)


def test_a_user_rule_without_frule_and_one_without_batch_rule():
    """A primitive with only an rrule (the pushforward derived from its pullback, per
    direction) and one with only an frule, inside a batched trace."""
    @cr.primitive
    def cube(x):
        return x ** 3

    @cr.rrule.register(cube)
    def _cube_rrule(x):
        return cube(x), lambda dy: (cr.NoTangent(), 3 * x ** 2 * dy)

    @cr.primitive
    def twice(x):
        return 2 * x

    @cr.frule.register(twice)
    def _twice_frule(tangents, x):
        return twice(x), 2 * tangents[1]

    def f(x):
        return twice(cube(x) + x)

    J = cr.jacfwd(f)(X[:3])
    np.testing.assert_allclose(J, np.diag(2 * (3 * X[:3] ** 2 + 1)), rtol=1e-14)


def test_float32_stays_float32():
    x = X.astype(np.float32)
    f = BATCHED["elementwise, broadcasting, Python numbers"]
    J = cr.jacfwd(f)(x)
    assert J.dtype == np.float32
    np.testing.assert_allclose(J, cr.jacfwd(f)(X), rtol=1e-4, atol=1e-5)
    H = cr.hessian(lambda x: np.sum(np.sin(x) * x ** 2))(x)
    assert H.dtype == np.float32


def test_complex_outputs_of_real_inputs():
    def f(x):
        return np.exp(1j * x) * x + (2 - 1j) * x ** 2

    J = cr.jacfwd(f)(X)
    assert J.dtype == np.complex128
    np.testing.assert_allclose(J, per_column_jvp(f, X), rtol=1e-12)
    np.testing.assert_allclose(J, np.diag(1j * np.exp(1j * X) * X + np.exp(1j * X)
                                          + 2 * (2 - 1j) * X), rtol=1e-12)


def test_python_floats_and_structures():
    def f(p):
        return {"u": p["a"] ** 2 * p["b"], "v": np.sin(p["w"]) * p["a"]}

    p = {"a": 1.5, "b": -0.5, "w": np.array([0.2, 0.4])}
    J = cr.jacfwd(f)(p)
    assert J["u"]["a"] == pytest.approx(2 * 1.5 * -0.5) and type(J["u"]["a"]) is float
    assert J["u"]["b"] == pytest.approx(1.5 ** 2)
    np.testing.assert_allclose(J["u"]["w"], np.zeros(2))
    np.testing.assert_allclose(J["v"]["a"], np.sin(p["w"]))
    np.testing.assert_allclose(J["v"]["w"], np.diag(np.cos(p["w"]) * 1.5))
    assert cr.hessian(lambda x: x ** 4 * np.exp(x))(0.7) == pytest.approx(
        (12 * 0.7 ** 2 + 8 * 0.7 ** 3 + 0.7 ** 4) * np.exp(0.7), rel=1e-12)


def test_several_arguments_and_chunks():
    def f(a, b, k):
        return np.tanh(a[:, None] * b[None, :] * k)

    a, b = X[:3], X[3:5]
    whole = cr.jacfwd(f, argnums=(0, 1), chunk_size=None)(a, b, 2)
    for chunk in (1, 2, 4, 100):
        parts = cr.jacfwd(f, argnums=(0, 1), chunk_size=chunk)(a, b, 2)
        for got, expected in zip(parts, whole):
            np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(whole[0], finite_jacobian(lambda a: f(a, b, 2), a), rtol=1e-7)
    np.testing.assert_allclose(whole[1], finite_jacobian(lambda b: f(a, b, 2), b), rtol=1e-7)
    with pytest.raises(ValueError, match="chunk_size"):
        cr.jacfwd(f, chunk_size=0)


def test_a_constant_output_and_a_constant_function():
    J = cr.jacfwd(lambda x: (np.ones(2), x[0] * 0 + 3.0))(X)
    np.testing.assert_array_equal(J[0], np.zeros((2, 6)))
    np.testing.assert_array_equal(J[1], np.zeros(6))


def test_index_loop_hessian():
    """The seed's index loop: its sparse cotangents meet in one batched scatter_sum."""
    def f(x):
        return sum(x[i] ** 3 * x[(i + 1) % len(x)] for i in range(len(x)))

    x = X
    n = len(x)
    H = np.zeros((n, n))
    for i in range(n):
        j = (i + 1) % n
        H[i, i] += 6 * x[i] * x[j]
        H[i, j] += 3 * x[i] ** 2
        H[j, i] += 3 * x[i] ** 2
    np.testing.assert_allclose(cr.hessian(f)(x), H, rtol=1e-12)


def test_nested_batched_traces():
    """grad of a Hessian, jvp of a jacfwd, jacfwd of a Hessian: batched traces inside other
    levels and other batched traces, against finite differences of the Hessian."""
    def f(x):
        return np.sum(np.sin(x) * x[::-1] ** 2) + np.prod(x)

    x, h = X[:3], 1e-6
    hessian = cr.hessian(f)
    shifted = [(hessian(x + h * e) - hessian(x - h * e)) / (2 * h) for e in np.eye(3)]
    third = np.stack(shifted, axis=-1)
    np.testing.assert_allclose(cr.jacfwd(hessian)(x), third, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(hessian(x)))(x),
                               third.sum(axis=(0, 1)), rtol=1e-6)
    v = np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(cr.jvp(hessian, (x,), (v,))[1], third @ v, rtol=1e-6,
                               atol=1e-8)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 7), st.integers(0, 2 ** 31))
def test_rosenbrock_hessian_in_any_dimension(n, seed):
    x = np.random.default_rng(seed).uniform(-1.5, 1.5, n + 1)

    def rosenbrock(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    H = np.zeros((n + 1, n + 1))
    for i in range(n):
        H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        H[i, i + 1] = H[i + 1, i] = -400 * x[i]
        H[i + 1, i + 1] += 200
    np.testing.assert_allclose(cr.hessian(rosenbrock)(x), H, rtol=1e-12, atol=1e-9)


def test_mlp_hessian_against_finite_differences_of_the_gradient(loops):
    rng = np.random.default_rng(5)
    X_, y = rng.normal(size=(8, 3)), rng.normal(size=8)

    def loss(w):
        W1, b1, w2 = w[:12].reshape(3, 4), w[12:16], w[16:]
        return np.mean((np.tanh(X_ @ W1 + b1) @ w2 - y) ** 2)

    w = rng.normal(size=20) * 0.5
    H = cr.hessian(loss)(w)
    np.testing.assert_allclose(H, finite_jacobian(cr.grad(loss), w), rtol=1e-6, atol=1e-8)
    assert loops == []


def test_gaussian_log_likelihood_with_cholesky_covariance():
    """log N(data | mu, L L^T) with L lower-triangular: the Hessian in mu is -n Sigma^-1, and
    the whole Hessian matches finite differences of the gradient."""
    rng = np.random.default_rng(6)
    data = rng.normal(size=(10, 3)) @ np.array([[1.0, 0.0, 0.0], [0.5, 1.2, 0.0],
                                                [0.2, -0.3, 0.8]]).T
    rows, cols = np.tril_indices(3)
    place = np.zeros((9, 6))  # the lower triangle's 6 parameters into a 3x3 matrix
    place[rows * 3 + cols, np.arange(6)] = 1

    def log_likelihood(theta):
        mu = theta[:3]
        L = (place @ theta[3:]).reshape(3, 3)
        covariance = L @ L.T + 0.1 * np.eye(3)
        C = np.linalg.cholesky(covariance)
        z = np.linalg.solve(C, (data - mu).T)
        n = data.shape[0]
        return -0.5 * np.sum(z ** 2) - n * np.sum(np.log(np.diagonal(C))) \
            - 0.5 * n * 3 * np.log(2 * np.pi)

    L0 = np.array([[1.1, 0.0, 0.0], [0.4, 0.9, 0.0], [0.1, -0.2, 0.7]])
    theta = np.concatenate([data.mean(axis=0) + 0.1, L0[rows, cols]])
    H = cr.hessian(log_likelihood)(theta)
    sigma = L0 @ L0.T + 0.1 * np.eye(3)
    np.testing.assert_allclose(H[:3, :3], -10 * np.linalg.inv(sigma), rtol=1e-10)
    np.testing.assert_allclose(H, finite_jacobian(cr.grad(log_likelihood), theta),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(H, H.T, rtol=1e-10, atol=1e-12)


def test_arrays_built_from_lists_of_traced_values(loops):
    def f(x):
        a, b, c = x[0], x[1], x[2]
        m = np.array([[a * b, 1.0], [np.sin(c), a]])
        v = np.asarray([a ** 2, b, 3.0])
        return np.concatenate([m.ravel(), v, np.array(x[3:] * 2.0).ravel()])

    J = cr.jacfwd(f)(X)
    np.testing.assert_allclose(J, per_column_jvp(f, X), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(J, finite_jacobian(f, X), rtol=1e-6, atol=1e-7)
    assert loops == []


BINARY = [np.add, np.subtract, np.multiply, np.divide, np.power, np.arctan2, np.hypot,
          np.maximum, np.logaddexp]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(BINARY), st.sampled_from([((3,), (2, 3)), ((2, 1), (1, 3)),
                                                 ((), (2, 3)), ((2, 3), (3,)), ((1,), (2, 1))]),
       st.booleans(), st.integers(0, 2 ** 31))
def test_binary_ufuncs_broadcast_batched_tangents(ufunc, shapes, scalar, seed):
    """Each operand's batched tangent padded to the output's rank, whatever the broadcasting
    (and a Python number in place of one operand)."""
    rng = np.random.default_rng(seed)
    a_shape, b_shape = shapes
    a, b = rng.uniform(0.5, 1.5, a_shape), rng.uniform(0.5, 1.5, b_shape)
    x = np.concatenate([np.ravel(a), np.ravel(b)])

    def f(x):
        first = x[:a.size].reshape(a_shape)
        second = 1.3 if scalar else x[a.size:].reshape(b_shape)
        return ufunc(np.sin(first), second) * 1.0

    J = cr.jacfwd(f)(x)
    np.testing.assert_allclose(J, per_column_jvp(f, x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(J, finite_jacobian(f, x), rtol=1e-6, atol=1e-7)


def test_empty_inputs():
    J = cr.jacfwd(lambda a, b: np.sum(a) + b * 2.0, argnums=(0, 1))(np.zeros(0), np.ones(2))
    assert J[0].shape == (2, 0)
    np.testing.assert_array_equal(J[1], 2.0 * np.eye(2))
    assert cr.jacfwd(lambda a: a * 2.0)(np.zeros((0, 3))).shape == (0, 3, 0, 3)
