"""chainrules.flatten and chainrules.tree_map: round trips over every structure grad takes,
traceability, and scipy.optimize.minimize(jac=True) on structured parameters."""

import collections
import dataclasses

import numpy as np
import pytest
import scipy.optimize

import chainrules
from chainrules import flatten, tree_map

Pair = collections.namedtuple("Pair", "left right")


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    b: float
    name: str = "layer"
    width: int = 2


def example():
    return {"layers": [Layer(np.arange(4.0).reshape(2, 2), 0.5), Layer(np.ones((2, 1)), -1.0)],
            "pair": Pair(np.float32(2.0), (3.0 + 1.0j, None)),
            "steps": 7, "scale": 1.5}


def test_flatten_collects_differentiable_leaves_in_walk_order():
    vector, _ = flatten(example())
    np.testing.assert_array_equal(vector, [0, 1, 2, 3, 0.5, 1, 1, -1, 2, 3 + 1j, 1.5])
    assert vector.dtype == np.complex128


def test_unflatten_rebuilds_types_shapes_and_dtypes():
    tree = example()
    vector, unflatten = flatten(tree)
    back = unflatten(vector * 2)
    assert isinstance(back["layers"][0], Layer) and back["layers"][0].name == "layer"
    assert back["layers"][0].width == 2 and back["steps"] == 7
    np.testing.assert_array_equal(back["layers"][0].w, 2 * np.arange(4.0).reshape(2, 2))
    assert isinstance(back["layers"][1].b, float) and back["layers"][1].b == -2.0
    assert isinstance(back["pair"], Pair) and back["pair"].left.dtype == np.float32
    assert back["pair"].right == (6.0 + 2.0j, None)
    assert tree["layers"][0].w[0, 1] == 1.0  # the original is untouched


def test_unflatten_checks_the_vector_size():
    _, unflatten = flatten({"a": np.ones(3)})
    with pytest.raises(ValueError, match="3 elements"):
        unflatten(np.ones(4))


def test_flatten_of_a_structure_without_leaves():
    vector, unflatten = flatten({"n": 3, "s": "x"})
    assert vector.shape == (0,)
    assert unflatten(vector) == {"n": 3, "s": "x"}


def test_unflatten_is_traceable():
    params = {"w": np.array([1.0, 2.0]), "b": 0.5}
    vector, unflatten = flatten(params)

    def loss(v):
        p = unflatten(v)
        return np.sum(p["w"] ** 2) * p["b"]

    np.testing.assert_allclose(chainrules.grad(loss)(vector), [1.0, 2.0, 5.0])


def test_flatten_is_traceable():
    g = chainrules.grad(lambda p: flatten(p)[0] @ np.array([1.0, 2.0, 3.0]))(
        {"w": np.zeros(2), "b": 0.0})
    np.testing.assert_allclose(g["w"], [1.0, 2.0])
    assert g["b"] == 3.0


def test_tree_map_with_gradients_of_a_dataclass():
    layer = Layer(np.array([[1.0, 2.0], [3.0, 4.0]]), 0.5)

    def loss(m):
        return np.sum(m.w ** 2) + m.b ** 2

    g = chainrules.grad(loss)(layer)
    stepped = tree_map(lambda p, d: p - 0.25 * d, layer, g)
    assert isinstance(stepped, Layer) and stepped.name == "layer" and stepped.width == 2
    np.testing.assert_allclose(stepped.w, 0.5 * layer.w)
    assert stepped.b == pytest.approx(0.25)


def test_tree_map_reads_missing_fields_as_zero():
    out = tree_map(lambda p, d: p + d, {"a": 1.0, "b": np.ones(2)}, {"a": 2.0})
    assert out["a"] == 3.0
    np.testing.assert_array_equal(out["b"], np.ones(2))


def test_scipy_minimize_on_structured_parameters():
    # least squares fit of y = w . x + b, with parameters in a dict
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    true = {"w": np.array([1.0, -2.0, 0.5]), "b": 0.3}
    y = X @ true["w"] + true["b"]

    def loss(params):
        return np.mean((X @ params["w"] + params["b"] - y) ** 2)

    start = {"w": np.zeros(3), "b": 0.0}
    vector, unflatten = flatten(start)
    result = scipy.optimize.minimize(chainrules.value_and_grad(lambda v: loss(unflatten(v))),
                                     vector, jac=True, method="BFGS", options={"gtol": 1e-10})
    fitted = unflatten(result.x)
    np.testing.assert_allclose(fitted["w"], true["w"], atol=1e-6)
    assert fitted["b"] == pytest.approx(true["b"], abs=1e-6)


from hypothesis import given, settings  # noqa: E402

from chainrules.testing import primals  # noqa: E402
from chainrules.testing.finite_differences import perturbable_leaves  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(primals())
def test_round_trip_of_any_structure(tree):
    vector, unflatten = flatten(tree)
    found = perturbable_leaves(tree)
    assert vector.shape == (sum(int(np.size(leaf.value)) for leaf in found),)
    back = unflatten(vector)
    assert [leaf.path for leaf in perturbable_leaves(back)] == [leaf.path for leaf in found]
    for old, new in zip(found, perturbable_leaves(back)):
        assert type(new.value) is type(old.value)
        assert np.shape(new.value) == np.shape(old.value)
        if isinstance(old.value, (np.ndarray, np.generic)):
            assert new.value.dtype == old.value.dtype
        np.testing.assert_array_equal(new.value, old.value)
    doubled = tree_map(lambda x: x * 2, tree)
    np.testing.assert_array_equal(flatten(doubled)[0], 2 * vector)
