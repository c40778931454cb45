"""Tangent types: the zeros' arithmetic, structural Tangents, thunks and in-place addable thunks.

Expected values are closed forms written here (sums and products of the fields), never the
code's own output.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections import namedtuple

import numpy as np
import pytest

from chainrules.core import (AbstractZero, InplaceableThunk, NoTangent, SparseCotangent,
                             Tangent, Thunk, ZeroTangent, accumulate, field_value, owned_copy,
                             structural_fields, tangents_equal, unthunk)

ZEROS = [ZeroTangent(), NoTangent()]


def counting_thunk(value):
    calls = []
    return Thunk(lambda: calls.append(1) or value), calls


def nonzero_tangents():
    """One value of every non-zero tangent kind (fresh objects each call)."""
    return [
        np.array([1.0, 2.0]),
        np.float32(1.5),
        2.5,
        1 + 2j,
        Tangent(tuple, {0: 1.0}),
        Thunk(lambda: np.ones(2)),
        InplaceableThunk(lambda b: np.add(b, 1.0, out=b), Thunk(lambda: np.ones(2)),
                         shape=(2,), dtype=np.float64),
        SparseCotangent(0, 1.0, (2,), np.float64),
    ]


# ---------------------------------------------------------------------------------------------
# ZeroTangent and NoTangent
# ---------------------------------------------------------------------------------------------

def test_zeros_are_singletons_and_survive_copy_and_pickle():
    for zero in ZEROS:
        assert type(zero)() is zero
        assert copy.copy(zero) is zero and copy.deepcopy(zero) is zero
        assert pickle.loads(pickle.dumps(zero)) is zero
        assert isinstance(zero, AbstractZero)
    assert ZeroTangent() is not NoTangent()
    assert repr(ZeroTangent()) == "ZeroTangent()" and repr(NoTangent()) == "NoTangent()"


@pytest.mark.parametrize("zero", ZEROS, ids=repr)
@pytest.mark.parametrize("position", range(8))
def test_zero_plus_x_is_x_the_same_object(zero, position):
    x = nonzero_tangents()[position]
    assert zero + x is x
    assert x + zero is x
    assert x - zero is x
    assert accumulate(zero, x) is x and accumulate(x, zero) is x
    if hasattr(x, "is_computed"):
        assert not x.is_computed, "a zero forced a thunk"


def test_no_tangent_wins_addition_among_zeros():
    assert NoTangent() + ZeroTangent() is NoTangent()
    assert ZeroTangent() + NoTangent() is NoTangent()
    assert NoTangent() + NoTangent() is NoTangent()
    assert ZeroTangent() + ZeroTangent() is ZeroTangent()
    assert accumulate(ZeroTangent(), NoTangent()) is NoTangent()
    assert accumulate(NoTangent(), ZeroTangent(), owned=True) is NoTangent()


@pytest.mark.parametrize("zero", ZEROS, ids=repr)
@pytest.mark.parametrize("position", range(8))
def test_zero_times_x_is_zero(zero, position):
    x = nonzero_tangents()[position]
    assert zero * x is zero
    if not isinstance(x, Tangent):   # a Tangent is scaled by numbers, not by tangents
        assert x * zero is zero
    if hasattr(x, "is_computed"):
        assert not x.is_computed, "a zero forced a thunk"


def test_zero_tangent_wins_multiplication_among_zeros():
    assert NoTangent() * ZeroTangent() is ZeroTangent()
    assert ZeroTangent() * NoTangent() is ZeroTangent()
    assert NoTangent() * NoTangent() is ZeroTangent()


@pytest.mark.parametrize("zero", ZEROS, ids=repr)
def test_zero_unary_operations_and_access(zero):
    assert -zero is zero and +zero is zero
    assert zero.conj() is zero and zero.real is zero and zero.imag is zero
    assert zero[3] is zero and zero["w"] is zero
    assert zero.layer.weight is zero   # field access on a zero gradient
    assert not zero
    assert list(zero) == []
    np.testing.assert_array_equal(zero - np.array([1.0, 2.0]), [-1.0, -2.0])
    assert np.ones(2) @ zero is zero
    assert zero / 2.0 is zero


# ---------------------------------------------------------------------------------------------
# Tangent
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Point:
    x: float
    y: float


Pair = namedtuple("Pair", "weight bias")


def test_fields_by_attribute_and_item_missing_are_zero():
    t = Tangent(Point, x=1.5)
    assert t.x == 1.5 and t["x"] == 1.5
    assert t.y is ZeroTangent() and t["y"] is ZeroTangent()
    assert t.primal_type is Point
    assert dict(t.backing) == {"x": 1.5}
    assert "x" in t and "y" not in t
    assert len(t) == 1 and list(t.keys()) == ["x"]

    listed = Tangent(list, {0: 1.0, 2: 3.0})
    assert listed[0] == 1.0 and listed[1] is ZeroTangent() and listed[2] == 3.0

    keyed = Tangent(dict, {"a b": 2.0})
    assert keyed["a b"] == 2.0 and keyed["c"] is ZeroTangent()


def test_backing_dict_and_keyword_fields_merge():
    t = Tangent(dict, {"a": 1.0}, b=2.0)
    assert t["a"] == 1.0 and t["b"] == 2.0


def test_namedtuple_tangent_reads_by_name_and_by_position():
    t = Tangent(Pair, weight=np.ones(2))
    np.testing.assert_array_equal(t[0], np.ones(2))
    assert t[0] is t.weight and t[-2] is t.weight
    assert t[1] is ZeroTangent() and t.bias is ZeroTangent()
    assert 0 in t and 1 not in t

    positional = Tangent(Pair, {0: 1.0, 1: 2.0})
    assert positional.weight == 1.0 and positional.bias == 2.0
    assert positional == Tangent(Pair, weight=1.0, bias=2.0)


def test_namedtuple_tangents_by_name_and_by_position_add_field_by_field():
    by_position = Tangent(Pair, {0: 1.0})
    by_name = Tangent(Pair, weight=2.0, bias=5.0)
    total = by_position + by_name
    assert total.weight == 3.0 and total.bias == 5.0
    assert set(total.keys()) == {"weight", "bias"}

    owned = accumulate(ZeroTangent(), by_name, owned=True)
    owned = accumulate(owned, by_position, owned=True)
    assert owned.weight == 3.0 and owned.bias == 5.0 and set(owned.keys()) == {"weight", "bias"}


def test_namedtuple_field_given_twice_is_an_error():
    with pytest.raises(ValueError, match="weight"):
        Tangent(Pair, {0: 1.0}, weight=2.0)


def test_equality_treats_missing_fields_as_zero():
    assert Tangent(Point, x=1.0) == Tangent(Point, x=1.0, y=0.0)
    assert Tangent(Point, x=1.0) == Tangent(Point, x=1.0, y=ZeroTangent())
    assert Tangent(Point, x=np.zeros(3)) == ZeroTangent()
    assert Tangent(Point, x=1.0) != Tangent(Point, x=2.0)
    assert Tangent(Point, x=1.0) != Tangent(Point, y=1.0)
    assert Tangent(Point, x=1.0) != Tangent(Pair, x=1.0)      # different primal types
    assert Tangent(Point, x=np.array([1.0, np.nan])) == Tangent(Point, x=np.array([1.0, np.nan]))
    assert Tangent(Point, x=Thunk(lambda: 2.0)) == Tangent(Point, x=2.0)   # by value
    assert tangents_equal(Tangent(tuple, {0: 1.0}), Tangent(tuple, {0: 1.0, 1: ZeroTangent()}))
    assert not tangents_equal(Tangent(tuple, {0: 1.0}), np.array(1.0))
    assert not Tangent(Point, x=0.0, y=ZeroTangent())
    assert Tangent(Point, x=1.0)


def test_repr_is_readable():
    assert repr(Tangent(Point, x=1.0, y=2.0)) == "Tangent[Point](x=1.0, y=2.0)"
    assert repr(Tangent(dict, {"a b": 1.0, 3: 2.0})) == "Tangent[dict]('a b': 1.0, 3: 2.0)"
    assert repr(Tangent(None, {})) == "Tangent[Any]()"
    assert repr(Tangent(Pair, {0: 1.0})) == "Tangent[Pair](weight=1.0)"


def test_addition_is_field_by_field():
    a = Tangent(Point, x=np.array([1.0, 2.0]), y=1.5)
    b = Tangent(Point, x=np.array([0.5, -1.0]))
    total = a + b
    assert total.primal_type is Point
    np.testing.assert_array_equal(total.x, [1.5, 1.0])
    assert total.y == 1.5
    np.testing.assert_array_equal(a.x, [1.0, 2.0])   # operands unchanged
    np.testing.assert_array_equal(b.x, [0.5, -1.0])

    difference = a - b
    np.testing.assert_array_equal(difference.x, [0.5, 3.0])
    assert difference.y == 1.5

    nested = Tangent(dict, {"p": a}) + Tangent(dict, {"p": b, "q": 4.0})
    np.testing.assert_array_equal(nested["p"].x, [1.5, 1.0])
    assert nested["q"] == 4.0

    with pytest.raises(TypeError, match="Point"):
        a + Tangent(Pair, weight=1.0)


def test_scalar_multiplication_and_negation():
    t = Tangent(Point, x=np.array([1.0, -2.0]), y=3.0)
    for scaled in (2.0 * t, t * 2.0):
        assert scaled.primal_type is Point
        np.testing.assert_array_equal(scaled.x, [2.0, -4.0])
        assert scaled.y == 6.0
    halved = t / 2.0
    np.testing.assert_array_equal(halved.x, [0.5, -1.0])
    assert halved.y == 1.5
    negated = -t
    np.testing.assert_array_equal(negated.x, [-1.0, 2.0])
    assert negated.y == -3.0
    conj = Tangent(Point, x=1 + 2j, y=np.array([1j, 2.0]), z=Tangent(Pair, weight=-1j)).conj()
    assert conj.x == 1 - 2j and type(conj.x) is complex
    np.testing.assert_array_equal(conj.y, [-1j, 2.0])
    assert conj.z.weight == 1j


def test_structural_fields_and_field_value():
    assert structural_fields((1.0, 2.0)) == {0: 1.0, 1: 2.0}
    assert structural_fields(Pair(1.0, 2.0)) == {"weight": 1.0, "bias": 2.0}
    assert structural_fields(Point(1.0, 2.0)) == {"x": 1.0, "y": 2.0}
    assert structural_fields({"a": 1}) == {"a": 1}

    def make():
        w = 3.0
        return lambda x: x * w

    closure = make()
    assert structural_fields(closure) == {"w": 3.0}
    assert field_value(closure, "w") == 3.0
    assert field_value(Pair(1.0, 2.0), "bias") == 2.0
    assert field_value(Pair(1.0, 2.0), 1) == 2.0
    assert field_value([5.0, 6.0], 1) == 6.0

    class Slotted:
        __slots__ = ("a", "b")

        def __init__(self):
            self.a = 1.0

    assert structural_fields(Slotted()) == {"a": 1.0}   # unset slots are skipped


# ---------------------------------------------------------------------------------------------
# Thunks
# ---------------------------------------------------------------------------------------------

def test_thunk_is_computed_at_most_once():
    thunk, calls = counting_thunk(np.array([1.0, 2.0]))
    assert not thunk.is_computed and calls == []
    for _ in range(3):
        np.testing.assert_array_equal(unthunk(thunk), [1.0, 2.0])
    np.testing.assert_array_equal(thunk + 1.0, [2.0, 3.0])
    np.testing.assert_array_equal(2.0 * thunk, [2.0, 4.0])
    np.testing.assert_array_equal(np.asarray(thunk), [1.0, 2.0])
    assert thunk[1] == 2.0
    assert thunk.is_computed and calls == [1]
    assert unthunk(thunk) is unthunk(thunk)
    assert "= array" in repr(thunk)


def test_nested_thunks_unthunk_fully():
    inner, calls = counting_thunk(4.0)
    outer = Thunk(lambda: inner)
    assert unthunk(outer) == 4.0
    assert unthunk(outer) == 4.0
    assert calls == [1]


def test_thunk_arithmetic_uses_the_value():
    thunk = Thunk(lambda: np.array([1.0, 2.0]))
    np.testing.assert_array_equal(thunk - np.ones(2), [0.0, 1.0])
    np.testing.assert_array_equal(np.ones(2) - thunk, [0.0, -1.0])
    np.testing.assert_array_equal(np.ones(2) + thunk, [2.0, 3.0])
    np.testing.assert_array_equal(thunk / 2.0, [0.5, 1.0])
    np.testing.assert_array_equal(-thunk, [-1.0, -2.0])
    assert thunk @ np.ones(2) == 3.0
    assert Thunk(lambda: 1 + 2j).conj() == 1 - 2j
    assert thunk == np.array([1.0, 2.0])


def test_unthunk_of_a_plain_value_is_the_value():
    value = np.ones(2)
    assert unthunk(value) is value
    assert unthunk(ZeroTangent()) is ZeroTangent()


def test_inplaceable_thunk_add_and_value():
    dy = np.array([1.0, 2.0])
    value, calls = counting_thunk(dy * 2)
    t = InplaceableThunk(lambda b: np.add(b, dy * 2, out=b), value, shape=[2], dtype="float64")
    assert t.shape == (2,) and t.dtype == np.float64
    buffer = np.ones(2)
    assert t.add(buffer) is buffer
    np.testing.assert_array_equal(buffer, [3.0, 5.0])
    assert calls == []
    np.testing.assert_array_equal(unthunk(t), [2.0, 4.0])
    assert "shape=(2,)" in repr(t)

    plain = InplaceableThunk(lambda b: b, np.ones(3, np.float32))
    assert plain.shape == (3,) and plain.dtype == np.float32 and plain.is_computed


@pytest.mark.parametrize("bad_add", [
    lambda buffer: buffer + 1.0,
    lambda buffer: None,
    lambda buffer: buffer.copy(),
], ids=["new-array", "none", "copy"])
def test_inplaceable_thunk_add_returning_another_object_is_a_clear_type_error(bad_add):
    t = InplaceableThunk(bad_add, Thunk(lambda: np.ones(3)), shape=(3,), dtype=np.float64)
    with pytest.raises(TypeError, match=r"InplaceableThunk\.add must update the buffer .* in "
                                        r"place and return that same buffer"):
        accumulate(owned_copy(np.zeros(3)), t, owned=True)
    with pytest.raises(TypeError, match=r"InplaceableThunk\.add must"):
        owned_copy(t)
