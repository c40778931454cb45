"""rand_tangent and the hypothesis strategies, and the properties they are for: accumulation is
exact for accumulators and cotangents of every kind, and getitem passes the kit for every index
the strategy draws."""

from __future__ import annotations

import dataclasses
import operator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chainrules import (InplaceableThunk, NoTangent, ProjectTo, SparseCotangent, Tangent, Thunk,
                        ZeroTangent, accumulate, owned_copy, unthunk)
from chainrules.testing import (accumulators, arrays, indices, inplaceable, make_tangent,
                                primals, rand_primal, rand_tangent, tangents, test_rrule)
from chainrules.testing.check_accumulation import kind_problems as _kind_problems
from chainrules.testing.reports import eager_sum as _eager_sum, exact_mismatch as _exact_mismatch


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    steps: int


def test_rand_tangent_keeps_the_primal_space():
    assert rand_tangent(np.zeros((2, 3), np.float32)).dtype == np.float32
    assert rand_tangent(np.zeros(2, np.complex64)).dtype == np.complex64
    assert type(rand_tangent(1.5)) is float and type(rand_tangent(1j)) is complex
    assert type(rand_tangent(np.float32(1.0))) is np.float32
    for nothing in (3, True, "s", None, np.arange(3), np.sin, slice(1)):
        assert rand_tangent(nothing) is NoTangent()
    assert np.all(rand_tangent(np.zeros(100)) != 0)


def test_rand_tangent_in_another_space():
    t = rand_tangent(np.zeros(3), dtype=np.complex128)
    assert t.dtype == np.complex128 and np.all(t.imag != 0)
    t = rand_tangent(np.zeros(3, np.float32), dtype=lambda d: np.promote_types(d, np.float64))
    assert t.dtype == np.float64 and np.any(t != t.astype(np.float32))  # not float32 values


def test_rand_tangent_of_structures():
    t = rand_tangent({"layer": Layer(np.ones(2), 3), "name": "x", "n": 4})
    assert isinstance(t, Tangent) and set(t.keys()) == {"layer"}
    assert isinstance(t["layer"], Tangent) and set(t["layer"].keys()) == {"w"}
    weights = np.ones(2)

    def model(x):
        return weights * x

    assert set(rand_tangent(model).keys()) == {"weights"}
    assert rand_tangent([1, 2, "s"]) is NoTangent()


def test_rand_tangent_is_reproducible():
    assert rand_tangent(np.zeros(3), 7).tolist() == rand_tangent(np.zeros(3), 7).tolist()


def test_make_tangent_kinds():
    x = np.zeros((2, 3))
    assert isinstance(make_tangent(x, "sparse", 0), SparseCotangent)
    assert isinstance(make_tangent(x, "inplaceable", 0), InplaceableThunk)
    assert isinstance(make_tangent(x, "thunk", 0), Thunk)
    assert make_tangent(x, "zero") is ZeroTangent()
    assert make_tangent([1.0, 2.0], "container", 0).__class__ is list
    partial = make_tangent({"a": 1.0, "b": 2.0}, "partial", 0)
    assert list(partial.keys()) == ["a"]
    with pytest.raises(ValueError, match="unknown kind"):
        make_tangent(x, "other")


def test_inplaceable_add_equals_value():
    t = inplaceable(np.array([1.0, 2.0]))
    buffer = np.array([0.5, 0.5])
    assert t.add(buffer) is buffer
    assert buffer.tolist() == [1.5, 2.5] and unthunk(t).tolist() == [1.0, 2.0]


def test_rand_primal():
    assert rand_primal("tuple", 0)[1] == 2
    assert rand_primal("array", 0, np.complex64, (2,)).dtype == np.complex64
    with pytest.raises(ValueError):
        rand_primal("other")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_strategy_tangents_are_tangents_of_their_primal(data):
    x = data.draw(primals())
    t = data.draw(tangents(x))
    projected = ProjectTo(x)(t)
    assert _kind_problems(x, projected, "t") == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_accumulate_is_exact_for_every_kind(data):
    """In place equals eager: accumulate(acc, t) == acc + unthunk(t), exactly, owned or not,
    once or repeatedly, for accumulators and cotangents of every kind and dtype."""
    x = data.draw(primals(max_depth=1))
    acc = data.draw(accumulators(x))
    t = data.draw(tangents(x))
    try:
        expected = _eager_sum(acc, t)
    except TypeError:
        return  # the eager sum itself is undefined (structural + natural): nothing to compare
    snapshot = _eager_sum(acc, ZeroTangent())
    snapshot = owned_copy(snapshot)
    assert _exact_mismatch(expected, accumulate(acc, t)) is None
    assert _exact_mismatch(snapshot, acc) is None  # unowned: not mutated
    buffer = owned_copy(acc)
    for times in range(1, 4):
        buffer = accumulate(buffer, t, owned=True)
        assert _exact_mismatch(expected, buffer) is None, times
        expected = _eager_sum(expected, t)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_getitem_passes_the_kit_for_every_index(data):
    x = data.draw(arrays(shape=data.draw(st.sampled_from([(4,), (3, 2), (2, 3, 2)])),
                         bound=4.0))
    index = data.draw(indices(x.shape))
    test_rrule(operator.getitem, x, index, check_accumulation=data.draw(st.booleans()))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_indices_strategy_draws_valid_indices(data):
    shape = data.draw(st.sampled_from([(4,), (3, 2), (2, 3, 2), ()]))
    index = data.draw(indices(shape))
    np.zeros(shape)[index]  # NumPy accepts it
