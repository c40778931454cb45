"""Values returned by an inner transform are ordinary values of the outer trace.

Only the inner level is closed when an inner ``vjp``/``value_and_grad``/``grad`` returns: its
value and aux output stay traced by the outer levels, so a loss built from them (a training
step inside a meta-objective) has the right gradient. Checked against closed forms and finite
differences.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr

from .finite_differences import numerical_gradient


def test_the_value_of_an_inner_vjp():
    assert cr.grad(lambda x: cr.vjp(lambda z: z ** 2, x)[0])(3.0) == 6.0


@pytest.mark.parametrize("inner_value", [
    lambda x: cr.vjp(lambda z: np.sin(z) * z, x)[0],
    lambda x: cr.vjp(lambda z: (np.sin(z) * z, z), x, has_aux=True)[0],
    lambda x: cr.value_and_grad(lambda z: np.sin(z) * z)(x)[0],
    lambda x: cr.value_and_grad(lambda z: (np.sin(z) * z, 0.0), has_aux=True)(x)[0][0],
    lambda x: cr.value_and_grad(lambda z: (z * 0.0, np.sin(z) * z), has_aux=True)(x)[0][1],
    lambda x: cr.grad(lambda z: (z * 2.0, np.sin(z) * z), has_aux=True)(x)[1],
    lambda x: cr.vjp(lambda z: (z * 2.0, np.sin(z) * z), x, has_aux=True)[2],
], ids=["vjp", "vjp-has-aux", "value_and_grad", "value_and_grad-value-with-aux",
        "value_and_grad-aux", "grad-aux", "vjp-aux"])
def test_every_inner_value_and_aux_is_differentiable_by_the_outer_trace(inner_value):
    # d/dx (x sin x) = sin x + x cos x, whichever transform returned the value.
    x = 0.7
    assert cr.grad(inner_value)(x) == pytest.approx(np.sin(x) + x * np.cos(x), rel=1e-12)


def test_inner_values_of_arrays_and_structures():
    x = np.array([0.3, -1.2, 2.0])

    def loss(x):
        value, gradient = cr.value_and_grad(lambda z: np.sum(z ** 3))(x)
        y, _ = cr.vjp(lambda z: {"a": np.exp(z), "b": [z * 2.0]}, x)
        return value + np.sum(y["a"]) + np.sum(y["b"][0])

    np.testing.assert_allclose(cr.grad(loss)(x), 3 * x ** 2 + np.exp(x) + 2.0, rtol=1e-12)
    np.testing.assert_allclose(cr.grad(loss)(x), numerical_gradient(loss, x), rtol=1e-7)


def test_a_training_step_inside_a_meta_objective():
    # One gradient step on w, then the validation loss as a function of the learning rate.
    data = np.array([1.0, 2.0, -0.5])

    def train_loss(w):
        return np.sum((w * data - 1.0) ** 2)

    def meta(learning_rate):
        w = 0.2
        value, gradient = cr.value_and_grad(train_loss)(w)
        w_new = w - learning_rate * gradient
        return train_loss(w_new) + 0.1 * value

    rate = 0.05
    step = 1e-6
    numerical = (meta(rate + step) - meta(rate - step)) / (2 * step)
    assert cr.grad(meta)(rate) == pytest.approx(numerical, rel=1e-6)


def test_three_levels_keep_their_values():
    # f(x) = value of value of x**3, through three traces: 3 x^2.
    def f(x):
        return cr.value_and_grad(lambda y: cr.value_and_grad(lambda z: z ** 3)(y)[0])(x)[0]

    assert cr.grad(f)(2.0) == pytest.approx(12.0, rel=1e-12)


def test_an_inner_gradient_treats_outer_values_as_constants():
    # Perturbation confusion: the inner derivative is with respect to y only.
    def f(x):
        return cr.grad(lambda y: x * y)(1.0)  # = x

    assert cr.grad(f)(3.0) == 1.0
    assert cr.grad(lambda x: x * cr.grad(lambda y: x * y)(2.0))(3.0) == 6.0  # d(x^2)/dx
