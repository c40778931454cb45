"""Tangents are values: copy, deepcopy and pickle of every tangent type give an equal value.

The zeros stay the singletons; thunks are materialized by deepcopy and pickle (a computed thunk
of the same type holding a copy of the value), copy returns them unchanged; sparse cotangents
stay sparse with every index kind; structural Tangents of dataclasses, namedtuples, dicts and
closures keep their fields and type. What cannot be pickled raises an error naming the tangent.
Expected values are written here (dense arrays built by hand), never the code's own output.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import types
from collections import namedtuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chainrules.core import (InplaceableThunk, NoTangent, SparseCotangent, Tangent, Thunk,
                             ZeroTangent, accumulate, owned_copy, tangents_equal, unthunk)
from chainrules.testing import primals, tangents


@dataclasses.dataclass
class Layer:
    weight: np.ndarray
    bias: float


Pair = namedtuple("Pair", ["first", "second"])


def pickled(value):
    return pickle.loads(pickle.dumps(value))


COPIES = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": pickled}


def lazy_thunk(value):
    """An uncomputed Thunk whose function is a lambda closure (lambdas do not pickle)."""
    calls = []
    return Thunk(lambda: calls.append(1) or value), calls


def lazy_inplaceable(value):
    return InplaceableThunk(lambda b: np.add(b, value, out=b), Thunk(lambda: value.copy()),
                            shape=value.shape, dtype=value.dtype)


# (name, factory, the expected value written out by hand)
CASES = [
    ("thunk of array", lambda: lazy_thunk(np.array([1.0, 2.0]))[0], np.array([1.0, 2.0])),
    ("thunk of float", lambda: lazy_thunk(2.5)[0], 2.5),
    ("thunk of Tangent", lambda: lazy_thunk(Tangent(Layer, weight=np.ones(2)))[0],
     Tangent(Layer, weight=np.ones(2), bias=ZeroTangent())),
    ("inplaceable lazy", lambda: lazy_inplaceable(np.array([3.0, 4.0])), np.array([3.0, 4.0])),
    ("inplaceable eager", lambda: InplaceableThunk(lambda b: np.add(b, 1.0, out=b),
                                                   np.array([1.0, 1.0])), np.ones(2)),
    ("sparse", lambda: SparseCotangent(np.array([0, 0, 2]), np.array([1.0, 2.0, 3.0]), (4,),
                                       np.float64), np.array([3.0, 0.0, 3.0, 0.0])),
    ("Tangent of dataclass", lambda: Tangent(Layer, weight=np.array([1.0, 2.0]), bias=0.5),
     Tangent(Layer, weight=np.array([1.0, 2.0]), bias=0.5)),
    ("Tangent of namedtuple", lambda: Tangent(Pair, {0: 1.0, 1: np.ones(3)}),
     Tangent(Pair, first=1.0, second=np.ones(3))),
    ("Tangent of dict", lambda: Tangent(dict, {"a": np.arange(3.0), 7: 2.0}),
     Tangent(dict, {"a": np.array([0.0, 1.0, 2.0]), 7: 2.0})),
    ("Tangent of closure", lambda: Tangent(types.FunctionType, {"y": 3.0}),
     Tangent(types.FunctionType, {"y": 3.0})),
    ("Tangent without type", lambda: Tangent(None, {"x": 1.0}), Tangent(None, {"x": 1.0})),
    ("nested lazy", lambda: Tangent(dict, {
        "layer": Tangent(Layer, weight=lazy_thunk(np.array([5.0, 6.0]))[0],
                         bias=lazy_thunk(0.25)[0]),
        "pair": Tangent(Pair, first=SparseCotangent(1, 2.0, (3,), np.float64),
                        second=lazy_inplaceable(np.array([7.0]))),
        "zero": ZeroTangent(), "none": NoTangent()}),
     Tangent(dict, {"layer": Tangent(Layer, weight=np.array([5.0, 6.0]), bias=0.25),
                    "pair": Tangent(Pair, first=np.array([0.0, 2.0, 0.0]),
                                    second=np.array([7.0])),
                    "zero": ZeroTangent(), "none": NoTangent()})),
]


@pytest.mark.parametrize("how", list(COPIES))
@pytest.mark.parametrize("name, make, expected", CASES, ids=[c[0] for c in CASES])
def test_copies_are_equal_values_of_the_same_type(name, make, expected, how):
    original = make()
    result = COPIES[how](original)
    assert type(result) is type(original)
    assert tangents_equal(result, expected)
    assert tangents_equal(original, expected)  # the original is still intact and equal
    if isinstance(original, Tangent):
        assert result.primal_type is original.primal_type
        assert set(result.keys()) == set(original.keys())


@pytest.mark.parametrize("how", list(COPIES))
@pytest.mark.parametrize("zero", [ZeroTangent(), NoTangent()], ids=repr)
def test_zeros_stay_the_singletons(zero, how):
    assert COPIES[how](zero) is zero
    assert COPIES[how]([zero, Tangent(dict, {"z": zero})])[1]["z"] is zero


def test_copy_of_a_thunk_is_the_thunk_and_computes_nothing():
    thunk, calls = lazy_thunk(np.ones(2))
    assert copy.copy(thunk) is thunk
    assert calls == [] and not thunk.is_computed


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_deepcopy_and_pickle_materialize_a_thunk_once_into_an_independent_copy(how):
    value = np.array([1.0, 2.0])
    thunk, calls = lazy_thunk(value)
    result = COPIES[how](thunk)
    assert result.is_computed and thunk.is_computed and calls == [1]
    assert np.array_equal(unthunk(result), [1.0, 2.0])
    unthunk(result)[0] = 100.0  # the copy owns its value
    assert value[0] == 1.0 and unthunk(thunk)[0] == 1.0
    assert calls == [1]
    assert "Thunk(=" in repr(result)


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_copied_inplaceable_thunk_still_adds_itself_in_place(how):
    result = COPIES[how](lazy_inplaceable(np.array([3.0, 4.0])))
    buffer = np.array([1.0, 1.0])
    assert result.add(buffer) is buffer
    assert np.array_equal(buffer, [4.0, 5.0])
    assert (result.shape, result.dtype) == ((2,), np.dtype(np.float64))
    assert np.array_equal(accumulate(np.array([10.0, 20.0]), result), [13.0, 24.0])


def test_deepcopy_keeps_sharing_inside_one_structure():
    shared = lazy_thunk(np.ones(2))[0]
    result = copy.deepcopy(Tangent(dict, {"a": shared, "b": shared}))
    assert result["a"] is result["b"] and result["a"] is not shared


def test_copy_of_a_tangent_has_its_own_fields():
    weight = np.ones(2)
    original = Tangent(Layer, weight=weight)
    shallow, deep = copy.copy(original), copy.deepcopy(original)
    assert shallow.backing is not original.backing and shallow.weight is weight
    assert deep.weight is not weight and np.array_equal(deep.weight, weight)
    accumulate(shallow, Tangent(Layer, bias=1.0), owned=True)  # adding into the copy...
    assert "bias" not in original  # ...leaves the original's fields alone


# Every index kind of a sparse cotangent, with the dense value written out by hand.
SPARSE = [
    ("int", 1, 5.0, (3,), [0.0, 5.0, 0.0]),
    ("negative int", -1, 5.0, (3,), [0.0, 0.0, 5.0]),
    ("slice", slice(0, 3, 2), np.array([1.0, 2.0]), (4,), [1.0, 0.0, 2.0, 0.0]),
    ("Ellipsis", Ellipsis, np.array([1.0, 2.0]), (2,), [1.0, 2.0]),
    ("None", (None, 0), np.array([4.0]), (2,), [4.0, 0.0]),
    ("array, repeats", np.array([2, 0, 2]), np.array([1.0, 2.0, 3.0]), (3,), [2.0, 0.0, 4.0]),
    ("array, distinct", np.array([2, 0]), np.array([1.0, 2.0]), (3,), [2.0, 0.0, 1.0]),
    ("mask", np.array([True, False, True]), np.array([1.0, 2.0]), (3,), [1.0, 0.0, 2.0]),
    ("tuple int slice", (1, slice(None)), np.array([1.0, 2.0]), (2, 2), [[0.0, 0.0],
                                                                          [1.0, 2.0]]),
    ("tuple arrays", (np.array([0, 0]), np.array([1, 1])), np.array([1.0, 2.0]), (2, 2),
     [[0.0, 3.0], [0.0, 0.0]]),
    ("tuple Ellipsis array", (Ellipsis, np.array([0])), np.array([[1.0], [2.0]]), (2, 2),
     [[1.0, 0.0], [2.0, 0.0]]),
]


@pytest.mark.parametrize("how", list(COPIES))
@pytest.mark.parametrize("name, index, values, shape, dense", SPARSE, ids=[s[0] for s in SPARSE])
@pytest.mark.parametrize("classified", [False, True], ids=["fresh", "classified"])
def test_sparse_cotangents_stay_sparse_and_equal_with_every_index_kind(
        name, index, values, shape, dense, how, classified):
    original = SparseCotangent(index, values, shape, np.float64)
    if classified:
        original.dense()  # fills the internal caches (_kind, _groups) before copying
        original.unthunk()
    result = COPIES[how](original)
    assert type(result) is SparseCotangent
    assert np.array_equal(result.dense(), dense)
    assert np.array_equal(unthunk(result), dense)
    buffer = np.ones(shape)
    assert np.array_equal(result.add_into(buffer), np.ones(shape) + np.array(dense))
    assert result.shape == shape and result.dtype == np.float64


def test_pickling_a_thunk_whose_value_does_not_pickle_names_the_thunk():
    thunk = Thunk(lambda: (lambda x: x))  # its value is a lambda
    with pytest.raises(pickle.PicklingError, match="Thunk.*function"):
        pickle.dumps(thunk)
    inplaceable = InplaceableThunk(lambda b: b, Thunk(lambda: {"f": lambda: 0}))
    with pytest.raises(pickle.PicklingError, match="InplaceableThunk"):
        pickle.dumps(inplaceable)


def test_a_thunk_whose_function_raises_reports_that_error_when_pickled():
    def broken():
        raise ValueError("no value")

    with pytest.raises(ValueError, match="no value"):
        pickle.dumps(Thunk(broken))


def test_tangent_of_a_local_class_deepcopies_but_pickling_names_the_class():
    @dataclasses.dataclass
    class Local:
        x: float

    original = Tangent(Local, x=lazy_thunk(2.0)[0])
    assert tangents_equal(copy.deepcopy(original), Tangent(Local, x=2.0))
    assert copy.deepcopy(original).primal_type is Local
    with pytest.raises(pickle.PicklingError, match=r"Tangent\[.*Local\].*module level"):
        pickle.dumps(original)
    # Its fields alone do pickle.
    assert tangents_equal(pickled(dict(original.backing)), {"x": 2.0})


# --- every kind of tangent the kit's strategies draw, of every kind of primal -------------------

@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_copies_of_any_drawn_tangent_are_equal(data):
    primal = data.draw(primals())
    tangent = data.draw(tangents(primal))
    # The expected value: the tangent's own value, written out field by field beforehand.
    expected = owned_copy(tangent)
    for how, duplicate in COPIES.items():
        result = duplicate(tangent)
        assert tangents_equal(result, expected), how
        if how != "copy":
            assert type(result) is type(tangent), how
