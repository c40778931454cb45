"""Adding a tangent to its primal (``x + dx``, ``x - lr * dx``): a new object of ``x``'s type,
field by field, as in ChainRulesCore; the one-line training step on every structure."""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

from collections import namedtuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chainrules as cr
from chainrules.core.accumulate import add_to_primal


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float


@dataclasses.dataclass
class Model:
    layers: list
    scale: np.ndarray
    name: str = "m"
    steps: int = 0


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: np.ndarray
    tag: int


class Pair(NamedTuple):
    a: np.ndarray
    b: float


class Plain:
    def __init__(self, w, k):
        self.w = w
        self.k = k


def _model_loss(m: Model) -> float:
    total = np.sum(m.scale ** 2)
    for layer in m.layers:
        total = total + np.sum(layer.w ** 2) + 3.0 * layer.b
    return total


def _model() -> Model:
    return Model([Layer(np.array([1.0, -2.0]), 0.5), Layer(np.array([3.0]), -1.0)],
                 np.array([[1.0, 2.0], [0.5, -1.0]]), "net", 7)


def test_training_step_on_a_dataclass_matches_the_hand_written_update():
    model, lr = _model(), 0.1
    updated = model - lr * cr.grad(_model_loss)(model)
    # d/dw sum(w**2) = 2w, d/db 3b = 3, d/dscale sum(scale**2) = 2 scale
    assert type(updated) is Model and type(updated.layers) is list
    for new, old in zip(updated.layers, model.layers):
        assert type(new) is Layer
        np.testing.assert_allclose(new.w, old.w - lr * 2 * old.w)
        assert new.b == pytest.approx(old.b - lr * 3.0)
    np.testing.assert_allclose(updated.scale, model.scale - lr * 2 * model.scale)
    assert updated.name == "net" and updated.steps == 7  # no tangent: unchanged
    np.testing.assert_array_equal(model.layers[0].w, [1.0, -2.0])  # the input is not modified
    assert updated.layers[0] is not model.layers[0]


def test_plus_and_minus_in_either_order():
    model = _model()
    g = cr.grad(_model_loss)(model)
    plus, minus = model + g, model - g
    np.testing.assert_allclose(plus.scale, 3 * model.scale)
    np.testing.assert_allclose(minus.scale, -model.scale)
    flipped = g + model
    assert type(flipped) is Model
    np.testing.assert_allclose(flipped.layers[1].w, 3 * model.layers[1].w)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-10, 10), min_size=1, max_size=5), st.floats(1e-3, 1.0))
def test_training_step_property(values, lr):
    w = np.array(values)
    frozen = Frozen(w, 4)

    def loss(p):
        return np.sum(np.sin(p.w))

    updated = frozen - lr * cr.grad(loss)(frozen)
    assert type(updated) is Frozen and updated.tag == 4
    np.testing.assert_allclose(updated.w, w - lr * np.cos(w), rtol=1e-12, atol=1e-12)


def test_descent_converges_on_a_quadratic():
    target = np.array([1.0, -2.0, 0.5])
    params = Layer(np.zeros(3), 4.0)

    def loss(p):
        return np.sum((p.w - target) ** 2) + (p.b - 1.0) ** 2

    for _ in range(200):
        params = params - 0.1 * cr.grad(loss)(params)
    np.testing.assert_allclose(params.w, target, atol=1e-8)
    assert params.b == pytest.approx(1.0, abs=1e-8)


def test_dict_and_list_training_steps_tree_style():
    params = {"w": np.array([1.0, 2.0]), "b": 0.5, "layers": [np.array([3.0]), 1.5]}

    def loss(p):
        return np.sum(p["w"] ** 2) + p["b"] ** 2 + np.sum(p["layers"][0] ** 3) + p["layers"][1]

    g = cr.grad(loss)(params)
    assert isinstance(g, dict) and type(g["layers"]) is list  # grad mirrors containers
    top = {k: v - 0.1 * g[k] for k, v in params.items() if k != "layers"}
    np.testing.assert_allclose(top["w"], [0.8, 1.6])
    assert top["b"] == pytest.approx(0.4)
    # nested containers: one call adds the whole structure, field by field
    stepped = add_to_primal(params, cr.Tangent(dict, g) * -0.1)
    np.testing.assert_allclose(stepped["layers"][0], 3.0 - 0.1 * 27.0)
    assert stepped["layers"][1] == pytest.approx(1.5 - 0.1)
    np.testing.assert_allclose(stepped["w"], [0.8, 1.6])
    by_operator = params - 0.1 * cr.Tangent(dict, g)
    assert type(by_operator) is dict and by_operator.keys() == params.keys()
    np.testing.assert_allclose(by_operator["layers"][0], 3.0 - 0.1 * 27.0)
    assert by_operator["b"] == pytest.approx(0.4)


@pytest.mark.parametrize("primal, tangent, expected", [
    ([1.0, 2.0], cr.Tangent(list, {1: 5.0}), [1.0, 7.0]),
    ((1.0, "s"), cr.Tangent(tuple, {0: 1.0, 1: cr.NoTangent()}), (2.0, "s")),
    ({"a": 1.0, "n": 3}, cr.Tangent(dict, a=-1.0), {"a": 0.0, "n": 3}),
    (Pair(np.ones(2), 2.0), cr.Tangent(Pair, b=1.0), Pair(np.ones(2), 3.0)),
    (Pair(np.ones(2), 2.0), cr.Tangent(Pair, {0: np.ones(2)}), Pair(2 * np.ones(2), 2.0)),
])
def test_containers_plus_tangent_keep_their_type(primal, tangent, expected):
    for result in (primal + tangent, tangent + primal):
        assert type(result) is type(expected)
        assert cr.core.tangents_equal(list(result.values()) if isinstance(result, dict)
                                      else list(result), list(expected.values())
                                      if isinstance(expected, dict) else list(expected))
    if isinstance(primal, dict):
        assert (primal + tangent).keys() == expected.keys()


def test_plain_object_closure_and_partial():
    obj = Plain(np.array([1.0, 2.0]), 3)
    moved = obj - 0.5 * cr.grad(lambda p: np.sum(p.w ** 2))(obj)
    assert type(moved) is Plain and moved.k == 3 and moved is not obj
    np.testing.assert_allclose(moved.w, [0.0, 0.0])

    w = np.array([2.0, -1.0])
    f = lambda x: np.sum(w * x)  # noqa: E731
    moved_f = f + cr.Tangent(type(f), w=np.array([1.0, 1.0]))
    assert moved_f(np.ones(2)) == pytest.approx(3.0 + 0.0)  # captures w + 1
    assert f(np.ones(2)) == pytest.approx(1.0)  # the original closure is unchanged

    p = functools.partial(np.multiply, 2.0)
    moved_p = p + cr.Tangent(functools.partial, {0: 1.0})
    assert moved_p(np.float64(1.0)) == pytest.approx(3.0)


def test_zeros_leave_fields_unchanged():
    layer = Layer(np.array([1.0]), 2.0)
    out = layer + cr.Tangent(Layer, w=cr.ZeroTangent(), b=cr.NoTangent())
    np.testing.assert_array_equal(out.w, layer.w)
    assert out.b == 2.0 and out is not layer
    assert layer + cr.ZeroTangent() is layer  # a zero tangent adds nothing


def test_scaling_a_tangent_maps_plain_containers_elementwise():
    g = cr.Tangent(Model, layers=[cr.Tangent(Layer, w=np.ones(2), b=1.0), (1.0, 2.0)],
                   scale={"k": 3.0})
    doubled = 2 * g
    assert len(doubled.layers) == 2  # not a repeated list
    np.testing.assert_array_equal(doubled.layers[0].w, [2.0, 2.0])
    assert doubled.layers[1] == (2.0, 4.0) and doubled.scale == {"k": 6.0}
    assert (-g).layers[1] == (-1.0, -2.0)
    assert (g / 2).layers[0].b == 0.5


def test_mismatched_tangents_are_refused_by_name():
    with pytest.raises(TypeError, match="Tangent of Layer to a Plain"):
        Plain(1.0, 2) + cr.Tangent(Layer, w=1.0)
    with pytest.raises(TypeError, match="field 'z'.*Layer"):
        Layer(np.ones(1), 1.0) + cr.Tangent(Layer, z=1.0)


def test_one_line_step_for_every_container_grad_takes():
    """``grad`` of a dict, list, tuple or namedtuple returns a gradient of the same kind
    whose operators are tangent arithmetic (chainrules.core.containers): ``params - lr * g``
    builds a new object of the primal's type, leaf by leaf, nested containers included."""
    Pair = namedtuple("Pair", "w b")

    def loss_of(leaves_of):
        return lambda p: sum(np.sum(leaf ** 2) for leaf in leaves_of(p))

    nested = {"w": np.array([1.0, 2.0]), "rest": [np.array(3.0), (0.5, "tag")], "n": 4}
    cases = [
        (nested, lambda p: [p["w"], p["rest"][0], p["rest"][1][0]]),
        ([np.array([1.0, -2.0]), 0.5], lambda p: p),
        ((np.array([1.0, -2.0]), 0.5), lambda p: p),
        (Pair(np.array([1.0, -2.0]), 0.5), lambda p: list(p)),
    ]
    for params, leaves_of in cases:
        g = cr.grad(loss_of(leaves_of))(params)
        stepped = params - 0.1 * g                   # d/dv v^2 = 2v: each leaf becomes 0.8 v
        assert type(stepped) is type(params)
        expected = leaves_of(params)
        for got, want in zip(leaves_of(stepped), expected):
            np.testing.assert_allclose(got, 0.8 * np.asarray(want))
        added = params + g                           # not concatenation
        assert type(added) is type(params) and len(added) == len(params)
        for got, want in zip(leaves_of(added), expected):
            np.testing.assert_allclose(got, 3.0 * np.asarray(want))
        for got, want in zip(leaves_of(-g / 2), expected):  # -v, as a gradient
            np.testing.assert_allclose(got, -np.asarray(want))
    assert nested["n"] == 4 and (nested - 0.1 * cr.grad(loss_of(cases[0][1]))(nested))[
        "rest"][1][1] == "tag"


# Random nested structures of dicts, lists, tuples and dataclasses, with float and array leaves:
# for f = sum of squares, grad is 2x at every leaf, so every arithmetic of the gradient has a
# closed form, leaf by leaf, at any depth of nesting.
@dataclasses.dataclass
class _Box:
    inner: object
    bias: float


def _structures():
    leaf = st.one_of(st.floats(-3, 3).map(float),
                     st.lists(st.floats(-3, 3), min_size=1, max_size=3).map(np.array))
    return st.recursive(leaf, lambda children: st.one_of(
        st.lists(children, min_size=1, max_size=3),
        st.lists(children, min_size=1, max_size=3).map(tuple),
        st.dictionaries(st.sampled_from("abc"), children, min_size=1, max_size=3),
        st.tuples(children, st.floats(-3, 3)).map(lambda p: _Box(*p))), max_leaves=8)


def _leaves(x):
    if isinstance(x, _Box):
        return _leaves(x.inner) + [x.bias]
    if isinstance(x, dict):
        return [leaf for key in sorted(x) for leaf in _leaves(x[key])]
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def _sum_of_squares(x):
    return sum(np.sum(np.asarray(leaf) ** 2) if isinstance(leaf, np.ndarray) else leaf ** 2
               for leaf in _leaves(x))


@given(_structures(), st.floats(1e-3, 1.0))
@settings(max_examples=60, deadline=None)
def test_arithmetic_on_gradients_recurses_through_every_nesting(params, lr):
    g = cr.grad(_sum_of_squares)(params)
    cases = {"params - lr * g": (params - lr * g, lambda x: x - lr * 2 * x),
             "params - g * lr": (params - g * lr, lambda x: x - lr * 2 * x),
             "params + g / 4": (params + g / 4, lambda x: x + 2 * x / 4),
             "params + (g + g)": (params + (g + g), lambda x: x + 4 * x),
             "params - (g - 0.5 * g)": (params - (g - 0.5 * g), lambda x: x - x),
             "params + -g": (params + -g, lambda x: x - 2 * x)}
    for name, (stepped, expected) in cases.items():
        assert type(stepped) is type(params), name
        got, want = _leaves(stepped), [expected(leaf) for leaf in _leaves(params)]
        assert len(got) == len(want), name
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)


def test_a_list_of_dataclass_layers_takes_the_learning_rate():
    layers = [Layer(np.array([1.0, 2.0]), 1.0), Layer(np.array([3.0]), -2.0)]
    g = cr.grad(lambda ls: sum(np.sum(layer.w ** 2) + layer.b ** 2 for layer in ls))(layers)
    stepped = layers - 0.1 * g
    np.testing.assert_allclose(stepped[0].w, [0.8, 1.6])
    assert stepped[1].b == pytest.approx(-1.6)
    with pytest.raises(ValueError, match="different structures"):
        g + cr.grad(lambda ls: ls[0].b ** 2)(layers[:1])
