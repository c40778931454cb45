"""Finite differences of the kit: accuracy, the complex convention, arguments of any structure."""

from __future__ import annotations

import dataclasses
from collections import namedtuple

import numpy as np
import pytest

from chainrules import NoTangent, Tangent, ZeroTangent
from chainrules.testing import (FiniteDifferenceError, fd_derivative, fd_jacobian, fd_jvp,
                                fd_vjp, perturbable_leaves)
from chainrules.testing.finite_differences import format_path, replace_at, tangent_at

SMOOTH = [
    (np.exp, np.exp, 0.3),
    (np.sin, np.cos, 1.2),
    (np.tanh, lambda x: 1 - np.tanh(x) ** 2, 3.0),
    (lambda x: 1 / x, lambda x: -1 / x ** 2, 0.05),          # near a pole
    (np.log, lambda x: 1 / x, 0.01),                         # near the edge of the domain
    (np.arcsin, lambda x: 1 / np.sqrt(1 - x * x), 0.99),     # steep
    (np.sqrt, lambda x: 0.5 / np.sqrt(x), 1e-3),
    (lambda x: np.exp(10 * x), lambda x: 10 * np.exp(10 * x), 1.0),   # large
    (lambda x: x ** 3, lambda x: 3 * x * x, 100.0),
    (lambda x: np.sin(1e3 * x), lambda x: 1e3 * np.cos(1e3 * x), 0.2),  # fast oscillation
]


@pytest.mark.parametrize("f, derivative, x", SMOOTH)
def test_derivative_accurate_to_1e8_relative(f, derivative, x):
    estimate = fd_derivative(f, x)
    assert abs(estimate - derivative(x)) <= 1e-8 * abs(derivative(x))


@pytest.mark.parametrize("f, derivative, x", SMOOTH[:6])
def test_vjp_of_arrays_accurate(f, derivative, x):
    points = np.array([x, x * 0.95, x * 0.9])
    dy = np.array([1.0, -2.0, 0.5])
    got = fd_vjp(f, dy, points)[1]
    np.testing.assert_allclose(got, dy * derivative(points), rtol=1e-8)


def test_complex_convention_abs2():
    """grad of |z|^2 at 3+4j is 6+8j: dL/dRe + i dL/dIm."""
    got = fd_vjp(lambda z: (z * np.conj(z)).real, 1.0, 3 + 4j)[1]
    assert abs(got - (6 + 8j)) < 1e-9
    assert isinstance(got, complex)


def test_complex_convention_holomorphic():
    """For holomorphic f the cotangent is conj(f'(z)) * dy."""
    z = np.array([0.3 + 0.4j, -1.0 + 0.5j])
    dy = np.array([1.0 - 2.0j, 0.5j])
    got = fd_vjp(np.sin, dy, z)[1]
    np.testing.assert_allclose(got, np.conj(np.cos(z)) * dy, rtol=1e-9)


def test_real_argument_of_complex_function_gets_real_cotangent():
    """A real x perturbed only along the real axis: the cotangent is real (projected)."""
    x = np.array([0.5, 2.0])
    got = fd_vjp(lambda x: x * (1 + 2j), np.array([1j, 1.0]), x)[1]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, [2.0, 1.0], rtol=1e-9)


def test_float32_arguments_are_evaluated_in_float64_and_projected():
    x = np.array([0.5, 1.5], np.float32)
    got = fd_vjp(np.exp, np.ones(2, np.float32), x)[1]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.exp(x.astype(np.float64)), rtol=1e-7)


def test_float32_only_function_falls_back_to_its_own_precision():
    def strict(x):
        if x.dtype != np.float32:
            raise TypeError("float32 only")
        return x * x

    x = np.array([0.5, 1.5], np.float32)
    got = fd_vjp(strict, np.ones(2, np.float32), x)[1]
    np.testing.assert_allclose(got, 2 * x, rtol=1e-3)


def test_integer_and_bool_leaves_are_not_perturbed():
    calls = []

    def f(x, n, flag, label):
        calls.append((n, flag, label))
        return x * n if flag else x

    df, dx, dn, dflag, dlabel = fd_vjp(f, 1.0, 2.0, 3, True, "s")
    assert (df, dn, dflag, dlabel) == (NoTangent(), NoTangent(), NoTangent(), NoTangent())
    assert abs(dx - 3.0) < 1e-9
    assert all(c == (3, True, "s") for c in calls)


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float
    name: str = "layer"


@dataclasses.dataclass(frozen=True)
class Frozen:
    scale: float


class Slotted:
    __slots__ = ("a", "count")

    def __init__(self, a, count):
        self.a, self.count = a, count


Pair = namedtuple("Pair", ["left", "right"])


def test_structured_arguments_perturbed_leaf_by_leaf():
    layer = Layer(np.array([1.0, 2.0]), 0.5)
    params = {"layer": layer, "extra": [Frozen(2.0), Slotted(np.array([3.0]), 4)],
              "pair": Pair(1.5, 7)}

    def loss(p):
        layer = p["layer"]
        frozen, slotted = p["extra"]
        return (np.sum(layer.w ** 2) * layer.b + frozen.scale * slotted.a[0]
                + p["pair"].left ** 3 + slotted.count)

    (_, grad) = fd_vjp(loss, 1.0, params)
    assert isinstance(grad, Tangent)
    np.testing.assert_allclose(grad["layer"].w, 2 * layer.w * layer.b, rtol=1e-9)
    assert abs(grad["layer"].b - np.sum(layer.w ** 2)) < 1e-9
    assert abs(grad["extra"][0].scale - 3.0) < 1e-9
    np.testing.assert_allclose(grad["extra"][1].a, [2.0], rtol=1e-9)
    assert isinstance(grad["extra"][1].count, ZeroTangent)  # not a field of the tangent
    assert abs(grad["pair"].left - 3 * 1.5 ** 2) < 1e-9
    # the primal was never modified
    assert params["layer"].w.tolist() == [1.0, 2.0] and params["extra"][0].scale == 2.0


def test_closures_are_perturbed_through_their_captured_variables():
    weights = np.array([0.5, -1.0])
    offset = 2

    def model(x):
        return np.sum(weights * x) + offset

    df, dx = fd_vjp(model, 1.0, np.array([3.0, 4.0]))
    assert isinstance(df, Tangent) and set(df.keys()) == {"weights"}
    np.testing.assert_allclose(df.weights, [3.0, 4.0], rtol=1e-9)
    np.testing.assert_allclose(dx, weights, rtol=1e-9)
    assert fd_vjp(np.sin, 1.0, 0.5)[0] is NoTangent()  # captures nothing


def test_leaves_and_paths():
    value = {"w": np.ones(2), "n": 3, "nested": [1.5, (2.0 + 1j, "s")]}
    leaves = perturbable_leaves(value)
    assert [leaf.path for leaf in leaves] == [("w",), ("nested", 0), ("nested", 1, 0)]
    assert format_path(("layer", "w", 2)) == ".layer.w[2]"
    replaced = replace_at(value, ("nested", 1, 0), 5.0)
    assert replaced["nested"][1] == (5.0, "s") and value["nested"][1][0] == 2.0 + 1j
    assert tangent_at(Tangent(dict, {"nested": Tangent(list, {0: 1.0})}), ("nested", 1)) \
        is ZeroTangent()


def test_cyclic_objects_do_not_recurse_forever():
    class Node:
        pass

    node = Node()
    node.value = 2.0
    node.self = node
    leaves = perturbable_leaves(node)
    assert [leaf.path for leaf in leaves] == [("value",)]


def test_jvp_and_vjp_are_adjoint():
    def f(x, y):
        return {"a": np.sin(x) * y, "b": (x ** 2).sum() + 1j * y[0]}

    x, y = np.array([0.3, -0.2, 0.9]), np.array([1.5, 0.5, -1.0])
    J = fd_jacobian(f, x, y)
    dx, dy = np.array([1.0, 2.0, -1.0]), np.array([0.5, -0.25, 2.0])
    out_bar = {"a": np.array([1.0, -1.0, 0.5]), "b": 0.5 - 2.0j}
    forward = J.jvp((NoTangent(), dx, dy))
    reverse = J.vjp(out_bar)
    lhs = np.vdot(out_bar["a"], forward["a"]).real + (np.conj(out_bar["b"]) * forward["b"]).real
    rhs = np.vdot(reverse[1], dx).real + np.vdot(reverse[2], dy).real
    assert abs(lhs - rhs) < 1e-8


def test_jvp_matches_closed_form():
    x = np.array([0.2, 0.4])
    got = fd_jvp(np.exp, (NoTangent(), np.array([1.0, -1.0])), x)
    np.testing.assert_allclose(got, np.exp(x) * [1.0, -1.0], rtol=1e-9)


def test_output_changing_shape_is_an_error():
    def f(x):
        return np.ones(3) if x > 0.5 else np.ones(2)

    with pytest.raises(FiniteDifferenceError, match="changed shape"):
        fd_jacobian(f, 0.5 + 1e-13)


def test_not_finite_anywhere_is_an_error():
    with pytest.raises(FiniteDifferenceError, match="not finite"):
        fd_vjp(lambda x: np.log(x - 1.0), 1.0, 1.0)
