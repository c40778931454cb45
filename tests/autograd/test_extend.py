"""chainrules.autograd.extend: primitives with autograd-style VJPs and JVPs, used by every
chainrules operator; chainrules.autograd.checkpoint; test_util.check_grads."""

import numpy as np
import pytest

import chainrules
from chainrules.autograd import checkpoint, grad, hessian
from chainrules.autograd.differential_operators import recompute_in_backward
from chainrules.autograd.extend import (defjvp, defjvp_argnum, defvjp, defvjp_argnum,
                                        primitive)
from chainrules.autograd.test_util import check_grads
from chainrules.testing import fd_jacobian

X = np.array([0.3, -1.2, 0.7])


def test_defvjp_replaces_the_traced_body():
    calls = []

    @primitive
    def softplus(x):
        return np.log1p(np.exp(x))

    def vjp_maker(ans, x):
        calls.append(1)
        return lambda g: g / (1 + np.exp(-x))

    defvjp(softplus, vjp_maker)
    np.testing.assert_allclose(grad(lambda x: np.sum(softplus(x)))(X), 1 / (1 + np.exp(-X)))
    assert calls  # our VJP was used, not a trace of the body
    # second order through the VJP's own operations, checked by finite differences
    check_grads(lambda x: np.sum(softplus(x) ** 2), modes=["rev"], order=2)(X)


def test_defvjp_two_arguments_and_argnums():
    @primitive
    def mul(x, y):
        return x * y

    defvjp(mul, lambda ans, x, y: lambda g: g * y, lambda ans, x, y: lambda g: g * x)
    assert grad(mul, 1)(3.0, 4.0) == pytest.approx(3.0)

    @primitive
    def mul2(x, y):
        return x * y

    defvjp(mul2, lambda ans, x, y: lambda g: g * x, argnums=[1])
    assert grad(mul2, 1)(3.0, 4.0) == pytest.approx(3.0)
    assert grad(lambda y: mul2(3.0, y))(4.0) == pytest.approx(3.0)  # constant x: no VJP needed
    with pytest.raises(NotImplementedError, match="argument 0 is not defined"):
        grad(mul2, 0)(3.0, 4.0)


def test_defvjp_argnum():
    @primitive
    def affine(a, x, b):
        return a * x + b

    defvjp_argnum(affine, lambda n, ans, args, kwargs:
                  (lambda g: np.sum(g * args[1])) if n == 0 else
                  (lambda g: g * args[0]) if n == 1 else (lambda g: g))
    a, x, b = 2.0, X, np.ones(3)
    f = lambda a, x, b: np.sum(affine(a, x, b) ** 2)  # noqa: E731
    reference = fd_jacobian(f, a, x, b).vjp(1.0)
    for n in range(3):
        np.testing.assert_allclose(grad(f, n)(a, x, b), reference[n + 1], rtol=1e-8)


def test_defvjp_in_autograds_complex_convention():
    @primitive
    def square(z):
        return z * z

    # autograd's VJP of a holomorphic function: g * f'(z), without a conjugate
    defvjp(square, lambda ans, z: lambda g: g * 2 * z)
    z = 1.0 + 2.0j
    f = lambda z: np.abs(square(z)) ** 2  # noqa: E731  |z|^4
    assert grad(f)(z) == pytest.approx(np.conj(4 * abs(z) ** 2 * z))
    assert chainrules.grad(f)(z) == pytest.approx(4 * abs(z) ** 2 * z)


def test_defjvp_used_by_forward_mode():
    calls = []

    @primitive
    def cube(x):
        return x ** 3

    def jvp(g, ans, x):
        calls.append(1)
        return 3 * g * x ** 2

    defjvp(cube, jvp)
    y, dy = chainrules.jvp(cube, (X,), (np.ones(3),))
    np.testing.assert_allclose(dy, 3 * X ** 2)
    assert calls
    # reverse mode needs a VJP: autograd raises too, chainrules names what is missing
    with pytest.raises(Exception, match="cube"):
        chainrules.grad(lambda x: np.sum(cube(x)))(X)


def test_defjvp_argnum_sums_the_arguments_contributions():
    @primitive
    def mul(x, y):
        return x * y

    defjvp_argnum(mul, lambda n, g, ans, args, kwargs: g * args[1 - n])
    _, dy = chainrules.jvp(mul, (2.0, 3.0), (1.0, 10.0))
    assert dy == pytest.approx(3.0 + 20.0)


def test_forward_mode_derived_from_defvjp():
    @primitive
    def sine(x):
        return np.sin(x)

    defvjp(sine, lambda ans, x: lambda g: g * np.cos(x))
    np.testing.assert_allclose(hessian(lambda x: np.sum(sine(x)))(X), np.diag(-np.sin(X)),
                               atol=1e-12)


@pytest.mark.parametrize("make", [checkpoint, recompute_in_backward])
def test_checkpoint_gradients_match_the_plain_function(make):
    def layer(x, w):
        return np.tanh(w @ x)

    layer_checkpointed = make(layer)
    w = np.array([[0.5, -0.2, 0.1], [0.3, 0.8, -0.5], [0.0, 0.2, 0.9]])

    def net(w, step):
        x = X
        for _ in range(4):
            x = step(x, w)
        return np.sum(x ** 2)

    np.testing.assert_allclose(net(w, layer_checkpointed), net(w, layer))
    reference = fd_jacobian(lambda w: net(w, layer), w).vjp(1.0)[1]
    np.testing.assert_allclose(grad(net)(w, layer_checkpointed), reference, rtol=1e-7)


def test_recompute_in_backward_runs_the_function_again_in_the_backward_pass():
    calls = []

    def f(x):
        calls.append(1)
        return np.sin(x) * x

    g = recompute_in_backward(f)
    gradient = chainrules.grad(lambda x: np.sum(g(x)))(X)
    np.testing.assert_allclose(gradient, np.cos(X) * X + np.sin(X))
    assert len(calls) == 2  # once forward, once again in the pullback


def test_recompute_in_backward_refuses_captured_traced_values():
    def outer(w):
        g = recompute_in_backward(lambda x: x * w)
        return np.sum(g(X * w))  # an argument and a captured value, both traced

    with pytest.raises(TypeError, match="pass it as one"):
        chainrules.grad(outer)(2.0)


def test_check_grads_passes_and_fails_loudly():
    check_grads(lambda x, y: np.sum(np.sin(x) * y), argnum=1)(X, 2.0)
    check_grads(lambda z: np.abs(z * z) ** 2, modes=["rev"])(1.0 + 2.0j)

    @primitive
    def wrong(x):
        return np.sin(x)

    defvjp(wrong, lambda ans, x: lambda g: g * np.sin(x))  # should be cos
    with pytest.raises(AssertionError, match=r"reverse mode \(vjp\) at order 1 .*argument 0"):
        check_grads(lambda x: np.sum(wrong(x)), modes=["rev"])(X)
    with pytest.raises(AssertionError, match=r"forward mode \(jvp\) at order 1"):
        check_grads(lambda x: np.sum(wrong(x)), modes=["fwd"])(X)
