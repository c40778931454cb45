"""chainrules.core.structure: the one walk over Python structures, shared by the engine and the
testing kit (leaves by path, replacement by path, tangents by path)."""

import dataclasses
import functools

import numpy as np
import pytest

import chainrules as cr
from chainrules.core import ProjectTo, Tangent, ZeroTangent, field_value, structural_fields
from chainrules.core.structure import (fields, get_at, is_structure, leaves, replace_at,
                                       replace_leaves, tangent_at)
from chainrules.testing import fd_vjp, perturbable_leaves


def is_float(value):
    return isinstance(value, float)


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: float
    n: int


def test_a_shared_part_is_found_at_every_path():
    layer = {"w": 1.0}
    found = list(leaves({"a": layer, "b": layer}, is_float))
    assert found == [(("a", "w"), 1.0), (("b", "w"), 1.0)]


def test_a_cycle_stops_the_walk_but_a_sibling_is_still_walked():
    class Node:
        pass

    node = Node()
    node.value = 2.0
    node.self = node
    assert list(leaves([node, node], is_float)) == [((0, "value"), 2.0), ((1, "value"), 2.0)]


def test_object_arrays_are_leaves_unless_asked():
    array = np.empty(2, dtype=object)
    array[0], array[1] = 1.5, [2.5]
    assert list(leaves(array, is_float)) == []
    assert list(leaves(array, is_float, object_arrays=True)) == [(((0,),), 1.5), (((1,), 0), 2.5)]
    replaced = replace_at(array, ((1,), 0), 7.0)
    assert replaced[1] == [7.0] and array[1] == [2.5]
    assert get_at(replaced, ((1,), 0)) == 7.0


def test_replace_at_copies_only_the_path_and_never_mutates():
    value = {"keep": [1.0], "frozen": Frozen(1.0, 2), "t": (1.0, "s")}
    out = replace_at(value, ("frozen", "w"), 3.0)
    assert out["frozen"] == Frozen(3.0, 2) and value["frozen"] == Frozen(1.0, 2)
    assert out["keep"] is value["keep"]
    assert replace_at(value, ("t", 0), 4.0)["t"] == (4.0, "s")
    assert replace_at(1.0, (), 2.0) == 2.0


def test_closures_are_rebuilt_with_new_cells():
    scale = 2.0

    def f(x):
        return x * scale

    g = replace_at(f, ("scale",), 5.0)
    assert g(1.0) == 5.0 and f(1.0) == 2.0


def test_partial_and_bound_methods_have_fields_everywhere():
    def f(x, y, *, z):
        return x * y * z

    p = functools.partial(f, 2.0, z=3.0)
    assert is_structure(p) and fields(p) == structural_fields(p) == {0: 2.0, "z": 3.0, "func": f}
    assert field_value(p, 0) == 2.0 and field_value(p, "z") == 3.0
    assert replace_at(p, ("z",), 5.0)(1.0) == 10.0

    class Model:
        def __init__(self):
            self.w = 3.0

        def apply(self, x):
            return self.w * x

    method = Model().apply
    assert structural_fields(method) == {"__self__": method.__self__}
    assert replace_leaves(method, lambda v: v * 2, is_float)(1.0) == 6.0


def test_projection_kit_and_engine_agree_on_partials_and_methods():
    def f(x, y):
        return x * y

    p = functools.partial(f, np.array([2.0, 3.0]))
    fd = fd_vjp(lambda g, z: np.sum(g(z)), 1.0, p, np.array([1.0, 1.0]))[1]
    ad = cr.grad(lambda g, z: np.sum(g(z)), argnums=0)(p, np.array([1.0, 1.0]))
    np.testing.assert_allclose(fd[0], [1.0, 1.0], rtol=1e-9)
    np.testing.assert_allclose(ad[0], [1.0, 1.0], rtol=1e-12)
    assert isinstance(ProjectTo(p)(Tangent(functools.partial, {0: np.ones(2)})), Tangent)
    assert [leaf.path for leaf in perturbable_leaves(p)] == [(0,)]


def test_tangent_at_zero_for_missing_fields_in_any_container():
    assert tangent_at({"a": [1.0]}, ("a", 0)) == 1.0
    assert tangent_at({"a": [1.0]}, ("b",)) is ZeroTangent()
    assert tangent_at([1.0], (3,)) is ZeroTangent()
    assert tangent_at(Tangent(dict, {}), ("a", 1)) is ZeroTangent()
    with pytest.raises(TypeError, match="plain tuple"):
        tangent_at((1.0, 2.0), ("x",))
    with pytest.raises(TypeError, match="field 'a'"):
        tangent_at(1.0, ("a",))


def test_the_engine_differentiates_a_shared_layer_at_each_path():
    # A layer used by two parts of a model: each path gets the gradient of its own uses.
    layer = {"w": np.array([1.0, 2.0])}
    params = {"a": layer, "b": {"w": layer["w"]}}
    shared = {"a": layer, "b": layer}

    def loss(p):
        return np.sum(p["a"]["w"] * p["b"]["w"] ** 2)

    expected = cr.grad(loss)(params)
    got = cr.grad(loss)(shared)
    np.testing.assert_allclose(got["a"]["w"], expected["a"]["w"])
    np.testing.assert_allclose(got["b"]["w"], expected["b"]["w"])
    fd = fd_vjp(loss, 1.0, shared)[1]
    np.testing.assert_allclose(fd["a"]["w"], expected["a"]["w"], rtol=1e-8)
    np.testing.assert_allclose(fd["b"]["w"], expected["b"]["w"], rtol=1e-8)
