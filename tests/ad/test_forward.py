"""Forward mode and second order: jvp, jacfwd, hessian, hvp, elementwise_grad.

Checked against central finite differences and closed forms, never against the engine itself;
jvp and vjp against each other through the identity Re<u, J v> = Re<J^H u, v>.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import chainrules as cr

from .finite_differences import numerical_gradient


def directional(f, x, v, step=1e-6):
    """(f(x + h v) - f(x - h v)) / 2h, for array or structure-free x."""
    return (np.asarray(f(x + step * v)) - np.asarray(f(x - step * v))) / (2 * step)


FUNCTIONS = {
    "elementwise": lambda x: np.sin(x) * np.exp(x / 2) + x ** 3,
    "reductions": lambda x: np.array([np.sum(x ** 2), np.prod(x), np.max(x), np.mean(x)]),
    "matmul": lambda x: np.outer(x, x) @ x + np.linalg.norm(x),
    "index loop": lambda x: sum(x[i] ** 2 * x[i - 1] for i in range(len(x))),
    "shapes": lambda x: np.concatenate([x[::-1], np.cumsum(x), x.reshape(1, -1).T[:, 0]]),
    "powers at zero": lambda x: x ** 2 + x ** 1 + x ** 0,
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jvp_matches_finite_differences(name):
    f = FUNCTIONS[name]
    rng = np.random.default_rng(0)
    x, v = rng.uniform(0.5, 1.5, 4), rng.normal(size=4)
    y, y_dot = cr.jvp(f, (x,), (v,))
    np.testing.assert_allclose(y, f(x), rtol=1e-14)
    np.testing.assert_allclose(y_dot, directional(f, x, v), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jvp_and_vjp_agree(name):
    f = FUNCTIONS[name]
    rng = np.random.default_rng(1)
    x, v = rng.uniform(0.5, 1.5, 4), rng.normal(size=4)
    y, y_dot = cr.jvp(f, (x,), (v,))
    u = rng.normal(size=np.shape(y))
    (x_bar,) = cr.vjp(f, x)[1](u)
    assert np.vdot(u, y_dot).real == pytest.approx(np.vdot(x_bar, v).real, rel=1e-12)


def test_complex_jvp_is_the_directional_derivative():
    def f(z):
        return np.abs(z) ** 2 + np.conj(z) * z ** 2

    z = np.array([0.5 + 0.2j, -0.3 + 1.0j])
    v = np.array([1.0 - 0.5j, 0.25j])
    y, y_dot = cr.jvp(f, (z,), (v,))
    np.testing.assert_allclose(y_dot, directional(f, z, v), rtol=1e-7)
    u = np.array([0.3 + 1j, -2.0])
    (z_bar,) = cr.vjp(f, z)[1](u)
    assert np.vdot(u, y_dot).real == pytest.approx(np.vdot(z_bar, v).real, rel=1e-12)


def test_jvp_of_structures_and_float32():
    @dataclass
    class Layer:
        w: np.ndarray
        b: float

    def f(layer, x):
        return {"out": np.tanh(layer.w * x + layer.b), "n": 3}

    layer = Layer(np.array([0.5, -1.0], np.float32), np.float32(0.25))
    x = np.array([1.0, 2.0], np.float32)
    y, y_dot = cr.jvp(f, (layer, x), (cr.Tangent(Layer, w=np.ones(2, np.float32)),
                                      cr.ZeroTangent()))
    assert y["n"] == 3 and y_dot["n"] is cr.NoTangent() and y_dot["out"].dtype == np.float32
    expected = (1 - np.tanh(layer.w * x + layer.b) ** 2) * x
    np.testing.assert_allclose(y_dot["out"], expected, rtol=1e-6)


def test_jacfwd_equals_jacrev_and_finite_differences():
    f = FUNCTIONS["matmul"]
    x = np.array([0.3, -0.8, 1.1])
    forward, reverse = cr.jacfwd(f)(x), cr.jacrev(f)(x)
    np.testing.assert_allclose(forward, reverse, rtol=1e-12)
    columns = [directional(f, x, e) for e in np.eye(3)]
    np.testing.assert_allclose(forward, np.stack(columns, axis=-1), rtol=1e-7)
    J = cr.jacfwd(lambda p: {"s": p["a"] * p["b"]})({"a": 2.0, "b": 3.0})
    assert J == {"s": {"a": 3.0, "b": 2.0}}


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    n = len(x)
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        H[i, i + 1] = H[i + 1, i] = -400 * x[i]
        H[i + 1, i + 1] += 200
    return H


def test_hessian_of_rosenbrock_in_ten_dimensions():
    x = np.random.default_rng(2).uniform(-1.5, 1.5, 10)
    np.testing.assert_allclose(cr.hessian(rosenbrock)(x), rosenbrock_hessian(x), rtol=1e-12)


def test_hvp_is_the_hessian_times_v_without_forming_it():
    rng = np.random.default_rng(3)
    x, v = rng.uniform(-1.5, 1.5, 10), rng.normal(size=10)
    np.testing.assert_allclose(cr.hvp(rosenbrock, x, v), rosenbrock_hessian(x) @ v,
                               rtol=1e-12)
    np.testing.assert_allclose(cr.hvp(rosenbrock, x, v), cr.hessian(rosenbrock)(x) @ v,
                               rtol=1e-12)


def mlp_loss(params, X, y):
    W1, b1, w2 = params["W1"], params["b1"], params["w2"]
    hidden = np.tanh(X @ W1 + b1)
    return np.mean((hidden @ w2 - y) ** 2)


def test_hessian_of_a_two_layer_mlp_against_finite_differences_of_the_gradient():
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(6, 3)), rng.normal(size=6)
    w2 = rng.normal(size=4)
    params = {"W1": rng.normal(size=(3, 4)) * 0.5, "b1": rng.normal(size=4) * 0.1, "w2": w2}

    def loss_of_w1(W1):
        return mlp_loss({**params, "W1": W1}, X, y)

    H = cr.hessian(loss_of_w1)(params["W1"])
    assert H.shape == (3, 4, 3, 4)
    gradient = cr.grad(loss_of_w1)
    step = 1e-6
    for i, j in [(0, 0), (1, 2), (2, 3)]:
        e = np.zeros((3, 4))
        e[i, j] = step
        column = (gradient(params["W1"] + e) - gradient(params["W1"] - e)) / (2 * step)
        np.testing.assert_allclose(H[:, :, i, j], column, rtol=1e-6, atol=1e-9)
    v = {"W1": rng.normal(size=(3, 4)), "b1": np.zeros(4), "w2": np.zeros(4)}
    Hv = cr.hvp(lambda p: mlp_loss(p, X, y), params, v)
    np.testing.assert_allclose(Hv["W1"], np.tensordot(H, v["W1"], axes=2), rtol=1e-10)


def test_elementwise_grad_is_the_derivative_at_each_element():
    x = np.linspace(-2.0, 2.0, 7)
    np.testing.assert_allclose(cr.elementwise_grad(np.tanh)(x), 1 - np.tanh(x) ** 2,
                               rtol=1e-14)
    np.testing.assert_allclose(cr.elementwise_grad(cr.elementwise_grad(np.sin))(x),
                               -np.sin(x), rtol=1e-14)


def test_nested_orders_on_scalars_to_depth_four():
    def f(x):
        return np.exp(2.0 * x) * x

    # d^k/dx^k x e^{2x} = (2^k x + k 2^(k-1)) e^{2x}
    x = 0.3
    derivatives = [cr.grad(f), cr.grad(cr.grad(f)), cr.grad(cr.grad(cr.grad(f)))]
    for k, derivative in enumerate(derivatives, start=1):
        assert derivative(x) == pytest.approx((2 ** k * x + k * 2 ** (k - 1)) * np.exp(2 * x),
                                              rel=1e-12)
    third = cr.jvp(cr.grad(cr.grad(f)), (x,), (1.0,))[1]
    assert third == pytest.approx((8 * x + 12) * np.exp(2 * x), rel=1e-12)
    fourth = cr.jvp(lambda x: cr.jvp(cr.grad(cr.grad(f)), (x,), (1.0,))[1], (x,), (1.0,))[1]
    assert fourth == pytest.approx((16 * x + 32) * np.exp(2 * x), rel=1e-12)


def test_forward_mode_through_an_index_loop_stores_nothing_per_operation():
    import tracemalloc

    def loop(x):
        return sum(x[i] ** 2 for i in range(len(x)))

    def peak(n):
        x = np.random.default_rng(n).normal(size=n)
        tracemalloc.start()
        try:
            y, y_dot = cr.jvp(loop, (x,), (np.ones(n),))
            return tracemalloc.get_traced_memory()[1], y_dot, x
        finally:
            tracemalloc.stop()

    small, y_dot, x = peak(1000)
    assert y_dot == pytest.approx(2 * np.sum(x), rel=1e-12)
    large, _, _ = peak(8000)
    # Nothing is recorded: memory does not grow with the number of operations at all.
    assert large < 2 * small + 200_000, (small, large)
