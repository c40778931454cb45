"""The rule-testing kit on the higher-order rules (src/chainrules/rules/numpy/callables.py):
np.vectorize (recorded as ``vectorized_call``), np.apply_along_axis, np.apply_over_axes and
np.piecewise.

These rules are registered with ``config=True`` and call back into AD through
``rrule_via_ad(config, f, ...)``: the kit runs them with its `TestConfig` and with the default
config. The functions they are given here have registered rules, so their pullbacks can be
called as often as the kit needs. Closures are given their rules through the config, as an AD
system would derive them.
"""

from __future__ import annotations

import numpy as np
import pytest

from chainrules import NoTangent, SparseCotangent, Tangent, ZeroTangent, unthunk
from chainrules.core import AbstractZero
from chainrules.rules.numpy.callables import vectorized_call
from chainrules.testing import TestConfig, case, check_case

x = np.array([0.5, -1.0, 2.0])
matrix = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])


def squares_of(values):
    """A closure ``i -> values[i] ** 2`` and a config that knows its rule."""
    def square(i):
        return values[i] ** 2

    def square_rule(i):
        def square_pullback(dy):
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return ZeroTangent(), NoTangent()
            cotangent = SparseCotangent(i, 2 * values[i] * dy, values.shape, values.dtype)
            return Tangent(type(square), {"values": cotangent}), NoTangent()

        return values[i] ** 2, square_pullback

    return square, TestConfig(rules={square: square_rule})


_square, _square_config = squares_of(x.copy())

CASES = [
    case(vectorized_call, np.sin, x),
    case(vectorized_call, np.sin, x.astype(np.float32)),
    case(vectorized_call, np.exp, x * (1 + 1j)),
    case(vectorized_call, np.multiply, x, 2.0),
    case(vectorized_call, np.hypot, x.reshape(3, 1), np.array([1.0, 2.0])),   # broadcasting
    case(vectorized_call, _square, np.arange(3), config=_square_config),       # a closure
    # a signature: calls on core slices, the loop dimensions broadcast
    case(vectorized_call, np.linalg.norm, matrix, signature="(n)->()"),
    case(vectorized_call, np.inner, matrix, x, signature="(n),(n)->()"),
    case(vectorized_call, np.outer, matrix, x[:2], signature="(n),(m)->(n,m)"),
    case(vectorized_call, np.cumsum, matrix.astype(np.float32), signature="(n)->(n)"),
    case(np.apply_along_axis, np.sum, 1, matrix),
    case(np.apply_along_axis, np.cumsum, 0, matrix),
    case(np.apply_along_axis, np.prod, -1, matrix.astype(np.float32)),
    case(np.apply_over_axes, np.sum, matrix, [0, 1]),
    case(np.apply_over_axes, np.cumsum, matrix, 1),  # keeps the dimensions: no expansion
    case(np.apply_over_axes, np.prod, np.stack([matrix, 2 * matrix]), (0, 2)),
    case(np.apply_over_axes, np.mean, matrix.astype(np.complex128) * (1 - 1j), [-1]),
    case(np.piecewise, x, [x < 0, x >= 0], [np.sin, np.cos]),
    case(np.piecewise, x, [x < 0], [np.exp, np.tanh]),                         # otherwise
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_higher_order_rule(rule_case):
    check_case(rule_case)


def test_vectorize_with_a_signature_through_the_engine():
    # before: "np.vectorize(...) with excluded=, signature= or keyword arguments is not
    # differentiable yet"
    import chainrules as cr
    from tests.ad.finite_differences import numerical_gradient

    rows = np.cos(np.arange(9.0)).reshape(3, 3)

    def loss(v):
        norms = np.vectorize(lambda r: np.sqrt(r @ r), signature="(n)->()")(v)
        pairs = np.vectorize(lambda a, b: np.outer(a, b) * a[0], signature="(n),(m)->(n,m)")(
            v[:2], v[2])
        return np.sum(norms * np.arange(3.0)) + np.sum(pairs ** 2)

    np.testing.assert_allclose(cr.grad(loss)(rows), numerical_gradient(loss, rows), rtol=1e-6,
                               atol=1e-8)
    flat = lambda w: loss(w.reshape(3, 3))  # noqa: E731
    direction = np.sin(np.arange(9.0))
    step = 1e-5
    fd = (cr.grad(flat)(rows.ravel() + step * direction)
          - cr.grad(flat)(rows.ravel() - step * direction)) / (2 * step)
    np.testing.assert_allclose(cr.hvp(flat, rows.ravel(), direction), fd, rtol=1e-5, atol=1e-7)
    with pytest.raises(NotImplementedError, match="several outputs"):
        cr.grad(lambda v: np.sum(np.vectorize(lambda r: (r, r), signature="(n)->(n),(n)")(
            v)[0]))(rows)


def test_apply_over_axes_with_a_closure_through_the_engine():
    """The callable's closure gets its tangent summed over the calls, and a plain array with
    a traced closure is routed to the rule: f(s) = s**2 sum(a), so df/ds = 2 s sum(a); hvp of
    sum(apply_over_axes(sum, a**2)**2) against central differences of the gradient."""
    import chainrules as cr
    a = np.arange(24.0).reshape(2, 3, 4) / 10

    def scaled(s):
        return np.sum(np.apply_over_axes(lambda values, axis: np.sum(values * s, axis), a,
                                         (0, 1)))

    assert cr.grad(scaled)(1.5) == pytest.approx(2 * 1.5 * np.sum(a))

    def loss(a):
        return np.sum(np.apply_over_axes(np.sum, a ** 2, [0, 2]) ** 2)

    v = np.linspace(-1.0, 1.0, 24).reshape(a.shape)
    gradient, step = cr.grad(loss), 1e-5
    expected = (gradient(a + step * v) - gradient(a - step * v)) / (2 * step)
    np.testing.assert_allclose(cr.hvp(loss, a, v), expected, rtol=1e-6, atol=1e-8)

