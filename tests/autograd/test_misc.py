"""chainrules.autograd.misc: flatten, flatten_func, the optimizers (trajectories against
hand-written updates on a quadratic) and fixed_point (gradients against closed forms and
finite differences, at orders 1 and 2)."""

import dataclasses

import numpy as np
import pytest

import chainrules
from chainrules.autograd import grad, hessian
from chainrules.autograd.misc import flatten, flatten_func
from chainrules.autograd.misc.fixed_points import fixed_point
from chainrules.autograd.misc.optimizers import adam, rmsprop, sgd
from chainrules.autograd.test_util import check_grads
from chainrules.testing import fd_jacobian

# f(x) = 1/2 (x - c)^T Q (x - c): gradient Q (x - c)
Q = np.array([[3.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 2.0]])
C = np.array([1.0, -2.0, 0.5])


def quadratic_grad(x, i):
    return Q @ (x - C)


def structured_grad(p, i):
    """The same quadratic over {"a": x[:2], "b": (x[2],)}."""
    g = quadratic_grad(np.concatenate([p["a"], [p["b"][0]]]), i)
    return {"a": g[:2], "b": (g[2],)}


def hand_sgd(x, n, step, mass):
    v = np.zeros(3)
    path = []
    for i in range(n):
        g = quadratic_grad(x, i)
        path.append((x.copy(), g))
        v = mass * v - (1 - mass) * g
        x = x + step * v
    return x, path


def hand_rmsprop(x, n, step, gamma, eps):
    s = np.ones(3)
    for i in range(n):
        g = quadratic_grad(x, i)
        s = gamma * s + (1 - gamma) * g * g
        x = x - step * g / (np.sqrt(s) + eps)
    return x


def hand_adam(x, n, step, b1, b2, eps):
    m = np.zeros(3)
    v = np.zeros(3)
    for i in range(n):
        g = quadratic_grad(x, i)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat, vhat = m / (1 - b1 ** (i + 1)), v / (1 - b2 ** (i + 1))
        x = x - step * mhat / (np.sqrt(vhat) + eps)
    return x


X0 = np.zeros(3)


def test_sgd_trajectory_and_callback():
    seen = []
    out = sgd(quadratic_grad, X0, callback=lambda x, i, g: seen.append((x.copy(), i, g.copy())),
              num_iters=25, step_size=0.2, mass=0.8)
    expected, path = hand_sgd(X0, 25, 0.2, 0.8)
    np.testing.assert_allclose(out, expected, rtol=1e-13)
    assert [i for _, i, _ in seen] == list(range(25))
    for (x, _, g), (x_ref, g_ref) in zip(seen, path):
        np.testing.assert_allclose(x, x_ref, rtol=1e-13)
        np.testing.assert_allclose(g, g_ref, rtol=1e-13)


def test_rmsprop_and_adam_trajectories():
    np.testing.assert_allclose(rmsprop(quadratic_grad, X0, num_iters=30, step_size=0.05),
                               hand_rmsprop(X0, 30, 0.05, 0.9, 1e-8), rtol=1e-13)
    np.testing.assert_allclose(adam(quadratic_grad, X0, num_iters=30, step_size=0.05, b1=0.8),
                               hand_adam(X0, 30, 0.05, 0.8, 0.999, 1e-8), rtol=1e-13)


def test_defaults_are_autograds():
    np.testing.assert_allclose(sgd(quadratic_grad, X0), hand_sgd(X0, 200, 0.1, 0.9)[0],
                               rtol=1e-12)
    np.testing.assert_allclose(rmsprop(quadratic_grad, X0), hand_rmsprop(X0, 100, 0.1, 0.9, 1e-8),
                               rtol=1e-12)
    np.testing.assert_allclose(adam(quadratic_grad, X0),
                               hand_adam(X0, 100, 0.001, 0.9, 0.999, 1e-8), rtol=1e-12)


@pytest.mark.parametrize("optimizer", [sgd, rmsprop, adam])
def test_optimizers_over_nested_containers(optimizer):
    x0 = {"a": np.zeros(2), "b": (0.0,)}
    seen = []
    out = optimizer(structured_grad, x0, lambda x, i, g: seen.append((x, g)), num_iters=20)
    flat = optimizer(quadratic_grad, X0, num_iters=20)
    assert set(out) == {"a", "b"} and isinstance(out["b"], tuple)
    np.testing.assert_allclose(np.concatenate([out["a"], out["b"]]), flat, rtol=1e-13)
    x, g = seen[3]
    assert isinstance(x["b"], tuple) and isinstance(g["a"], np.ndarray)


@dataclasses.dataclass
class Model:
    w: np.ndarray
    b: float
    name: str = "model"


def test_optimizer_on_a_dataclass_with_chainrules_gradients():
    target = np.array([1.0, 2.0])

    def loss(m):
        return np.sum((m.w - target) ** 2) + (m.b + 1.0) ** 2

    out = adam(lambda m, i: chainrules.grad(loss)(m), Model(np.zeros(2), 0.0), step_size=0.1,
               num_iters=400)
    assert isinstance(out, Model) and out.name == "model"
    np.testing.assert_allclose(out.w, target, atol=1e-3)
    assert out.b == pytest.approx(-1.0, abs=1e-3)


def test_misc_flatten_and_flatten_func():
    params = {"w": np.ones((2, 2)), "b": [0.5, np.float32(2.0)]}
    v, unflatten = flatten(params)
    assert v.shape == (6,)
    back = unflatten(v)
    assert back["b"][1].dtype == np.float32 and isinstance(back["b"][0], float)
    f, unflatten_f, x = flatten_func(lambda p, k: {"s": np.sum(p["w"]) * k, "b": p["b"]},
                                     params)
    # dict entries in sorted key order, as autograd lays them out: "b" before "s" and "w"
    np.testing.assert_allclose(x, [0.5, 2.0, 1, 1, 1, 1])
    np.testing.assert_allclose(f(x, 3.0), [0.5, 2.0, 12.0])
    np.testing.assert_allclose(grad(lambda x: np.sum(f(x, 3.0)))(x), [1, 1, 3, 3, 3, 3])
    v, unflatten = flatten({"z": 1.0, "a": {"y": 2.0, "x": np.array([3.0, 4.0])}})
    np.testing.assert_array_equal(v, [3.0, 4.0, 2.0, 1.0])
    assert unflatten(v)["a"]["y"] == 2.0


def test_scipy_objects_import_as_autograd_modules_and_builtins():
    import scipy.stats

    import chainrules.autograd.scipy.stats.multivariate_normal as mvn
    import chainrules.autograd.scipy.stats.norm as norm
    from chainrules.autograd.builtins import dict as ag_dict, isinstance as ag_isinstance
    from chainrules.autograd.builtins import list as ag_list, tuple as ag_tuple

    assert mvn is scipy.stats.multivariate_normal and norm is scipy.stats.norm
    # d/dmean log N(x; mean, I) = x - mean
    np.testing.assert_allclose(grad(lambda m: mvn.logpdf(np.array([1.0, 2.0]), m, np.eye(2)))(
        np.zeros(2)), [1.0, 2.0])
    # the containers are Python's: gradients through them by position and key
    loss = lambda x: ag_tuple((x, x * 2.0))[1] + ag_list([x])[0] + ag_dict(a=x ** 2)["a"]
    assert grad(loss)(3.0) == pytest.approx(9.0)
    assert grad(lambda x: x * ag_isinstance(x, float))(1.5) == 1.0


def newton_sqrt(a):
    return fixed_point(lambda a: lambda x: 0.5 * (x + a / x), a, 1.0,
                       lambda x, y: abs(x - y), 1e-13)


def test_fixed_point_value_and_derivatives_of_sqrt():
    assert newton_sqrt(2.0) == pytest.approx(np.sqrt(2.0), rel=1e-14)
    assert grad(newton_sqrt)(2.0) == pytest.approx(0.5 / np.sqrt(2.0), rel=1e-10)
    assert grad(grad(newton_sqrt))(2.0) == pytest.approx(-0.25 * 2.0 ** -1.5, rel=1e-8)


def test_fixed_point_of_a_vector_map_against_finite_differences():
    # x = tanh(W x + a): a contraction for small W
    W = np.array([[0.2, -0.1, 0.05], [0.1, 0.3, 0.0], [-0.2, 0.1, 0.25]])

    def solve(a):
        return fixed_point(lambda a: lambda x: np.tanh(W @ x + a), a, np.zeros(3),
                           lambda x, y: np.max(np.abs(x - y)), 1e-14)

    a = np.array([0.3, -0.5, 0.8])
    x = solve(a)
    np.testing.assert_allclose(x, np.tanh(W @ x + a), atol=1e-13)
    loss = lambda a: np.sum(solve(a) ** 2)  # noqa: E731
    np.testing.assert_allclose(grad(loss)(a), fd_jacobian(loss, a).vjp(1.0)[1], rtol=1e-7)
    H = hessian(loss)(a)
    H_fd = np.array([fd_jacobian(lambda a: chainrules.grad(loss)(a)[k], a).vjp(1.0)[1]
                     for k in range(3)])
    np.testing.assert_allclose(H, H_fd, rtol=1e-6, atol=1e-9)
    check_grads(loss, modes=["rev"], order=2)(a)


def test_fixed_point_differentiates_captured_values_and_fails_loudly():
    def solve(scale):
        return fixed_point(lambda a: lambda x: scale * np.cos(x) + a, 0.1, 0.0,
                           lambda x, y: abs(x - y), 1e-14)

    # x = s cos x + a: dx/ds = cos x / (1 + s sin x)
    s = 0.5
    x = solve(s)
    assert grad(solve)(s) == pytest.approx(np.cos(x) / (1 + s * np.sin(x)), rel=1e-9)
    with pytest.raises(RuntimeError, match="no convergence"):
        fixed_point(lambda a: lambda x: 2 * x + a, 1.0, 1.0, lambda x, y: abs(x - y), 1e-10)
