"""chainrules.testing.check_grads: passes on correct derivatives of whole functions (any
structure, complex, order 2), fails with a message naming mode, order and argument."""

import dataclasses

import numpy as np
import pytest

import chainrules
from chainrules import NoTangent, rrule
from chainrules.testing import check_grads


@dataclasses.dataclass
class Model:
    w: np.ndarray
    b: float
    steps: int = 3


def test_passes_on_structures_complex_and_order_two():
    x = np.array([0.2, -0.4, 1.1])
    check_grads(lambda m, x: np.sum(np.tanh(m.w * x) + m.b) * m.steps,
                Model(np.array([0.5, 1.0, -1.0]), 0.3), x)
    check_grads(lambda z: np.abs(np.exp(z)) ** 2, np.array([0.3 + 0.2j, -1.0 + 0.5j]))
    check_grads(lambda x: {"s": np.sin(x), "c": [np.cos(x)]}, x, order=3, modes=["rev"])


def _broken(second_order_only: bool):
    @chainrules.primitive
    def f(x):
        return x ** 3

    @rrule.register(f)
    def _(x):
        # first derivative right; the pullback's own derivative wrong unless traced naively
        scale = 3 * x ** 2 if not second_order_only else 3 * chainrules.primal(x) ** 2
        return f(x), lambda dy: (NoTangent(), dy * scale)
    return f


def test_a_wrong_first_derivative_names_mode_order_and_argument():
    @chainrules.primitive
    def g(x, y):
        return x * y

    @rrule.register(g)
    def _(x, y):
        return g(x, y), lambda dy: (NoTangent(), dy * y, dy * y)  # dy * x for y is right

    with pytest.raises(AssertionError) as error:
        check_grads(lambda a, b: np.sum(g(a, b)), np.array([1.0, 2.0]), np.array([3.0, 5.0]),
                    modes=["rev"])
    message = str(error.value)
    assert "reverse mode (vjp) at order 1" in message and "argument 1" in message
    assert "finite differences give" in message


def test_a_wrong_second_derivative_is_found_at_order_two_only():
    f = _broken(second_order_only=True)
    x = np.array([0.5, -1.5])
    check_grads(lambda x: np.sum(f(x)), x, order=1)
    with pytest.raises(AssertionError, match="at order 2 .*derivative of the reverse mode"):
        check_grads(lambda x: np.sum(f(x)), x, order=2, modes=["rev"])


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="modes"):
        check_grads(np.sin, 1.0, modes=["backward"])
    with pytest.raises(ValueError, match="order"):
        check_grads(np.sin, 1.0, order=0)
