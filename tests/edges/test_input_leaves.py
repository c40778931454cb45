"""Every float an input holds is differentiated, wherever it sits (family 3 of "never silent
at the edges"): float and complex subclasses, leaves nested at any depth, a value reached a
second time through a cycle; sets and iterators, whose elements have no path, are refused."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr


class Meters(float):
    """A float subclass that keeps float's arithmetic (a tag)."""


class Units(float):
    def __mul__(self, other):
        return Units(float(self) * float(other))


@pytest.mark.parametrize("transform", [
    lambda f, x: cr.grad(f)(x),
    lambda f, x: cr.jacfwd(f)(x),
    lambda f, x: cr.jvp(f, (x,), (1.0,))[1],
])
def test_a_float_subclass_is_differentiated_as_its_number(transform):
    assert transform(lambda a: a ** 3, Meters(2.0)) == pytest.approx(12.0)


def test_second_order_of_a_float_subclass():
    assert cr.hvp(lambda a: a ** 3, Meters(2.0), 1.0) == pytest.approx(12.0)
    assert cr.hessian(lambda a: a ** 3)(Meters(2.0)) == pytest.approx(12.0)


def test_a_complex_subclass_is_differentiated():
    class Tagged(complex):
        pass
    assert cr.grad(lambda z: np.abs(z) ** 2)(Tagged(3 + 4j)) == pytest.approx(6 + 8j)


def test_a_number_subclass_with_its_own_arithmetic_is_refused_by_name():
    with pytest.raises(TypeError, match=r"argument 0 is a Units, a float subclass that defines "
                                        r"__mul__.*float\(x\)"):
        cr.grad(lambda a: a * a)(Units(2.0))


@pytest.mark.parametrize("depth", [65, 70, 200])
def test_a_leaf_nested_deeper_than_64_gets_its_gradient(depth):
    nested = 1.5
    for _ in range(depth):
        nested = [nested]

    def f(x):
        while isinstance(x, list):
            x = x[0]
        return x ** 2

    g = cr.grad(f)(nested)
    for _ in range(depth):
        assert isinstance(g, list) and len(g) == 1
        g = g[0]
    assert g == pytest.approx(3.0)


def test_a_value_reached_again_through_a_cycle_counts_on_every_path():
    d = {"w": 2.0}
    d["self"] = d
    f = lambda d: d["w"] ** 2 + d["self"]["w"] ** 2  # noqa: E731 - 2 w^2
    g = cr.grad(f)(d)
    assert g["w"] == pytest.approx(8.0)
    assert g["self"]["w"] == pytest.approx(8.0)  # the cycle's field is the gradient again
    assert cr.jacfwd(f)(d)["w"] == pytest.approx(8.0)
    assert cr.jvp(f, (d,), ({"w": 1.0},))[1] == pytest.approx(8.0)


def test_an_object_with_a_back_reference():
    class Layer:
        def __init__(self, w):
            self.w, self.parent = w, None

    class Model:
        def __init__(self):
            self.layer = Layer(np.array([1.0, 2.0]))
            self.layer.parent = self
            self.scale = 3.0

    def loss(model):
        return np.sum(model.layer.w ** 2) * model.layer.parent.scale

    g = cr.grad(loss)(Model())
    np.testing.assert_allclose(g.layer.w, 2 * np.array([1.0, 2.0]) * 3.0)
    assert g.scale == pytest.approx(5.0)


@pytest.mark.parametrize("value, kind", [
    ({1.0, 2.0}, "set"), (frozenset({1.0, 2.0}), "frozenset"),
    ((x for x in [1.0, 2.0]), "generator"), (iter([1.0, 2.0]), "list_iterator"),
    ({"a": {1.0}}, "set"),
])
def test_sets_and_iterators_of_numbers_are_refused(value, kind):
    with pytest.raises(TypeError, match=f"argument 0 holds a {kind}"):
        cr.grad(lambda s: 0.0)(value)


def test_a_set_of_strings_is_left_alone():
    dx, dnames = cr.grad(lambda x, names: x * len(names), argnums=(0, 1))(2.0, {"a", "b"})
    assert dx == pytest.approx(2.0) and dnames == cr.NoTangent()


def test_jvp_refuses_a_set_too():
    with pytest.raises(TypeError, match="holds a set"):
        cr.jvp(lambda s: sum(s), ({1.0, 2.0},), ({1.0, 2.0},))
