"""chainrules.autograd's differential operators against autograd's documented behaviour, with
values from finite differences or closed forms."""

import collections

import numpy as np
import pytest

import chainrules
from chainrules.autograd import (deriv, elementwise_grad, grad, grad_and_aux, grad_named,
                                 hessian, hessian_tensor_product, hessian_vector_product,
                                 holomorphic_grad, jacobian, make_ggnvp, make_hvp, make_jvp,
                                 make_vjp, multigrad_dict, tensor_jacobian_product,
                                 value_and_grad, vector_jacobian_product)
from chainrules.testing import fd_jacobian

X = np.array([0.3, -1.2, 0.7])
A = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, -1.0], [0.0, -1.0, 1.5]])


def loss(x, a):
    return np.sum(np.sin(x) * (a @ x)) + 0.5 * np.sum(x ** 4)


def fd_grad(f, *args, argnum=0):
    return fd_jacobian(f, *args).vjp(1.0)[argnum + 1]


def fd_full_jacobian(f, x):
    y = np.asarray(f(x))
    J = fd_jacobian(f, x)
    rows = [np.asarray(J.vjp(np.eye(y.size)[k].reshape(y.shape))[1]) for k in range(y.size)]
    return np.array(rows).reshape(y.shape + np.shape(x))


def test_grad_argnum_default_and_given():
    np.testing.assert_allclose(grad(loss)(X, A), fd_grad(loss, X, A), rtol=1e-8)
    np.testing.assert_allclose(grad(loss, 1)(X, A), fd_grad(loss, X, A, argnum=1), rtol=1e-8)
    np.testing.assert_allclose(grad(loss, argnum=1)(X, A), fd_grad(loss, X, A, argnum=1),
                               rtol=1e-8)


def test_grad_tuple_argnum_gives_a_tuple():
    gx, ga = grad(loss, (0, 1))(X, A)
    np.testing.assert_allclose(gx, fd_grad(loss, X, A), rtol=1e-8)
    np.testing.assert_allclose(ga, fd_grad(loss, X, A, argnum=1), rtol=1e-8)


def test_grad_keywords_pass_through():
    assert grad(lambda x, scale=1.0: scale * x ** 2)(3.0, scale=2.0) == pytest.approx(12.0)


def test_grad_of_a_list_argument_is_a_list():
    g = grad(lambda p: p[0] * p[1] ** 2)([2.0, 3.0])
    assert isinstance(g, list) and g == pytest.approx([9.0, 12.0])


def test_grad_refuses_array_output_loudly():
    with pytest.raises(TypeError, match="real scalar"):
        grad(lambda x: x * 2)(X)


def test_grad_bad_argnum_names_the_function():
    with pytest.raises(IndexError, match="argnum=3"):
        grad(loss, 3)(X, A)


def test_complex_convention_is_autograds():
    abs2 = lambda z: np.abs(z) ** 2  # noqa: E731
    assert chainrules.grad(abs2)(3 + 4j) == pytest.approx(6 + 8j)
    assert grad(abs2)(3 + 4j) == pytest.approx(6 - 8j)
    value, g = value_and_grad(abs2)(3 + 4j)
    assert value == pytest.approx(25.0) and g == pytest.approx(6 - 8j)
    z = np.array([1 + 2j, -0.5 + 1j])
    f = lambda z: np.sum(np.real(z * np.conj(z) * np.exp(1j * z)))  # noqa: E731
    np.testing.assert_allclose(grad(f)(z), np.conj(fd_grad(f, z)), rtol=1e-7)


def test_holomorphic_grad_is_the_complex_derivative():
    z = 0.4 + 0.9j
    assert holomorphic_grad(lambda z: np.exp(z) * z)(z) == pytest.approx(np.exp(z) * (1 + z))


def test_value_and_grad():
    value, g = value_and_grad(loss)(X, A)
    assert value == pytest.approx(loss(X, A))
    np.testing.assert_allclose(g, fd_grad(loss, X, A), rtol=1e-8)


def test_grad_and_aux():
    g, aux = grad_and_aux(lambda x: (np.sum(x ** 2), {"norm": np.linalg.norm(x)}))(X)
    np.testing.assert_allclose(g, 2 * X)
    assert float(aux["norm"]) == pytest.approx(np.linalg.norm(X))


def test_elementwise_grad_of_tanh_and_its_second_derivative():
    x = np.linspace(-2, 2, 7)
    sech2 = 1 / np.cosh(x) ** 2
    np.testing.assert_allclose(elementwise_grad(np.tanh)(x), sech2, rtol=1e-12)
    np.testing.assert_allclose(elementwise_grad(elementwise_grad(np.tanh))(x),
                               -2 * np.tanh(x) * sech2, rtol=1e-10, atol=1e-14)


def test_deriv_is_forward_mode_elementwise_derivative():
    x = np.array([0.1, 0.5])
    np.testing.assert_allclose(deriv(np.sin)(x), np.cos(x))


def test_jacobian_shape_and_values():
    f = lambda x: np.outer(np.sin(x), x[:2])  # noqa: E731
    J = jacobian(f)(X)
    assert J.shape == (3, 2, 3)
    np.testing.assert_allclose(J, fd_full_jacobian(f, X), rtol=1e-7, atol=1e-10)


def test_hessian_of_scalar_and_of_vector_function():
    H = hessian(loss)(X, A)
    np.testing.assert_allclose(H, fd_full_jacobian(lambda x: chainrules.grad(loss)(x, A), X),
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(H, H.T, atol=1e-12)
    T = hessian(lambda x: x ** 3)(X)
    assert T.shape == (3, 3, 3)
    expected = np.zeros((3, 3, 3))
    for i in range(3):
        expected[i, i, i] = 6 * X[i]
    np.testing.assert_allclose(T, expected, atol=1e-12)


def test_make_vjp_returns_vjp_then_value():
    vjp, ans = make_vjp(lambda x: A @ np.sin(x))(X)
    np.testing.assert_allclose(ans, A @ np.sin(X))
    g = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(vjp(g), np.cos(X) * (A.T @ g), rtol=1e-12)


def test_vector_jacobian_product_and_tensor_jacobian_product():
    f = lambda x, a: a @ np.sin(x)  # noqa: E731
    v = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(vector_jacobian_product(f)(X, A, v), np.cos(X) * (A.T @ v))
    M = np.arange(6.0).reshape(2, 3)
    tensor_f = lambda x: np.outer(x[:2], x)  # noqa: E731
    np.testing.assert_allclose(tensor_jacobian_product(tensor_f)(X, M),
                               np.tensordot(M, fd_full_jacobian(tensor_f, X), 2), rtol=1e-7)


def test_make_jvp():
    jvp = make_jvp(lambda x: A @ x ** 2)(X)
    v = np.array([0.5, 1.0, -1.0])
    ans, dy = jvp(v)
    np.testing.assert_allclose(ans, A @ X ** 2)
    np.testing.assert_allclose(dy, A @ (2 * X * v))


def test_hessian_vector_products():
    H = fd_full_jacobian(lambda x: chainrules.grad(loss)(x, A), X)
    v = np.array([0.5, 1.0, -1.0])
    np.testing.assert_allclose(hessian_vector_product(loss)(X, A, v), H @ v, rtol=1e-7)
    np.testing.assert_allclose(hessian_tensor_product(loss)(X, A, v), H @ v, rtol=1e-7)
    hvp, g = make_hvp(loss)(X, A)
    np.testing.assert_allclose(g, fd_grad(loss, X, A), rtol=1e-8)
    for w in (v, np.eye(3)[1]):
        np.testing.assert_allclose(hvp(w), H @ w, rtol=1e-7, atol=1e-9)


def test_make_ggnvp_is_jt_h_j():
    f = lambda w: np.tanh(A @ w)  # noqa: E731
    J = fd_full_jacobian(f, X)
    v = np.array([1.0, 0.0, 2.0])
    np.testing.assert_allclose(make_ggnvp(f)(X)(v), J.T @ J @ v, rtol=1e-7)
    g = lambda y: np.sum(np.exp(y))  # noqa: E731  Hessian diag(exp(y))
    np.testing.assert_allclose(make_ggnvp(f, g)(X)(v), J.T @ np.diag(np.exp(f(X))) @ J @ v,
                               rtol=1e-7)


def test_grad_named_by_position_and_keyword():
    def f(x, y, scale=2.0):
        return scale * x * y ** 2
    assert grad_named(f, "y")(3.0, 2.0) == pytest.approx(24.0)
    assert grad_named(f, "y")(3.0, y=2.0) == pytest.approx(24.0)
    assert grad_named(f, "scale")(3.0, 2.0, scale=1.0) == pytest.approx(12.0)
    with pytest.raises(ValueError, match="no argument named 'z'"):
        grad_named(f, "z")


def test_multigrad_dict_covers_every_argument_in_order():
    def f(x, y, scale=2.0):
        return scale * np.sum(x * y ** 2)
    grads = multigrad_dict(f)(X, A[0])
    assert isinstance(grads, collections.OrderedDict)
    assert list(grads) == ["x", "y", "scale"]
    np.testing.assert_allclose(grads["x"], 2.0 * A[0] ** 2)
    np.testing.assert_allclose(grads["y"], 4.0 * X * A[0])
    assert grads["scale"] == pytest.approx(np.sum(X * A[0] ** 2))
