"""ProjectTo for every primal kind: a table of (primal, cotangent, expected) cases.

Expected values are written out (or built with plain NumPy: real part, then astype), never
taken from ProjectTo itself.
"""

from __future__ import annotations

import dataclasses
from collections import namedtuple

import numpy as np
import pytest

from chainrules.core import (InplaceableThunk, NoTangent, ProjectionError, ProjectTo,
                             SparseCotangent, Tangent, Thunk, ZeroTangent, tangents_equal,
                             unthunk)

FLOAT_DTYPES = [np.float16, np.float32, np.float64, np.longdouble]
COMPLEX_DTYPES = [np.complex64, np.complex128, np.clongdouble]
NO_TANGENT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                     np.uint64, np.bool_]


def expected_in(dtype, value):
    """``value`` projected by hand: the real part for a real dtype, then cast."""
    value = np.asarray(value)
    if np.dtype(dtype).kind != "c" and value.dtype.kind == "c":
        value = value.real
    return value.astype(dtype)


def assert_same(got, want, kind):
    """``got`` has exactly ``want``'s value and dtype, and is of Python type ``kind``."""
    assert type(got) is kind, f"expected a {kind.__name__}, got {type(got).__name__}"
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
    assert np.array_equal(g, w, equal_nan=True), (got, want)


# ---------------------------------------------------------------------------------------------
# Numbers and arrays
# ---------------------------------------------------------------------------------------------

PYTHON_CASES = [
    # primal, cotangent, expected value, expected Python type
    (2.0, 1.5, 1.5, float),
    (2.0, np.float32(1.5), 1.5, float),
    (2.0, np.float64(0.1), 0.1, float),
    (2.0, 1 + 2j, 1.0, float),                 # complex cotangent, real primal: real part
    (2.0, np.complex64(3 - 1j), 3.0, float),
    (2.0, np.array(0.25), 0.25, float),        # 0-d arrays and scalars are interchangeable
    (2.0, 3, 3.0, float),
    (1 + 1j, 1.5, 1.5 + 0j, complex),
    (1 + 1j, 1 - 2j, 1 - 2j, complex),
    (1 + 1j, np.array(2j), 2j, complex),
]


@pytest.mark.parametrize("primal, cotangent, value, kind", PYTHON_CASES)
def test_python_numbers(primal, cotangent, value, kind):
    got = ProjectTo(primal)(cotangent)
    assert type(got) is kind
    assert got == value


@pytest.mark.parametrize("primal", [True, False, 0, 3, -7, "text", b"bytes", None, int, range(3),
                                    slice(1, 2), Ellipsis, np.dtype(np.float64)],
                         ids=repr)
def test_primals_that_cannot_be_perturbed(primal):
    for cotangent in (1.0, 1 + 2j, np.ones(3), ZeroTangent()):
        assert ProjectTo(primal)(cotangent) is NoTangent()


@pytest.mark.parametrize("dtype", NO_TANGENT_DTYPES + [np.str_, np.bytes_, "datetime64[D]",
                                                       "timedelta64[s]"],
                         ids=str)
def test_numpy_primals_without_tangent_dtype(dtype):
    array = np.zeros(3, dtype)
    scalar = array[0]
    assert isinstance(scalar, np.generic)
    for primal in (array, scalar, np.zeros((), dtype)):
        assert ProjectTo(primal)(np.ones(np.shape(primal))) is NoTangent()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + COMPLEX_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("cotangent", [0.1, np.float64(-2.5), np.float32(0.1), 1.5 + 2.5j,
                                       np.complex128(-1j), np.array(0.3), np.array(0.3 - 0.7j),
                                       7])
def test_numpy_scalars_keep_their_dtype(dtype, cotangent):
    primal = np.dtype(dtype).type(1.0)
    got = ProjectTo(primal)(cotangent)
    assert_same(got, expected_in(dtype, cotangent)[()], np.dtype(dtype).type)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + COMPLEX_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("cotangent_dtype", [np.float32, np.float64, np.complex64,
                                             np.complex128, np.int64])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_numpy_arrays_keep_shape_and_dtype(dtype, cotangent_dtype, shape):
    rng = np.random.default_rng(0)
    cotangent = rng.standard_normal(shape).astype(cotangent_dtype)
    if np.dtype(cotangent_dtype).kind == "c":
        cotangent = (cotangent + 1j * rng.standard_normal(shape)).astype(cotangent_dtype)
    got = ProjectTo(np.ones(shape, dtype))(cotangent)
    assert_same(got, expected_in(dtype, cotangent), np.ndarray)
    if np.dtype(cotangent_dtype) == np.dtype(dtype) and shape:
        assert got is cotangent   # already in the tangent space: no copy


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_zero_d_arrays_and_scalars_are_interchangeable(dtype):
    kind = np.dtype(dtype).type
    # 0-d array primal: scalar cotangents give 0-d arrays
    for cotangent in (0.5, kind(0.5), np.float64(0.5), np.array(0.5)):
        assert_same(ProjectTo(np.array(1.0, dtype))(cotangent), np.array(0.5, dtype), np.ndarray)
    # NumPy scalar primal: 0-d array cotangents give NumPy scalars
    for cotangent in (np.array(0.5), np.array(0.5, dtype), np.array(0.5, np.float16)):
        assert_same(ProjectTo(kind(1.0))(cotangent), kind(0.5), kind)


@pytest.mark.parametrize("primal, cotangent, shapes", [
    (np.zeros((2, 3)), np.zeros(3), ["(2, 3)", "(3,)"]),
    (np.zeros(3), np.zeros((1, 3)), ["(3,)", "(1, 3)"]),
    (np.zeros(3, np.float32), np.zeros(4), ["(3,)", "(4,)"]),
    (np.float32(1.0), np.zeros(2), ["()", "(2,)"]),
    (1.0, np.zeros((2, 2)), ["()", "(2, 2)"]),
    (np.zeros(()), np.zeros(1), ["()", "(1,)"]),
    (np.zeros(3), SparseCotangent(0, 1.0, (4,), np.float64), ["(3,)", "(4,)"]),
])
def test_shape_mismatch_names_both_shapes(primal, cotangent, shapes):
    with pytest.raises(ProjectionError) as error:
        ProjectTo(primal)(cotangent)
    message = str(error.value)
    for shape in shapes:
        assert shape in message, f"{shape} not in {message!r}"


@pytest.mark.parametrize("primal", [np.zeros(3), 1.0, np.float32(1.0)], ids=repr)
def test_numeric_primal_rejects_a_structural_cotangent(primal):
    with pytest.raises(ProjectionError, match="Tangent"):
        ProjectTo(primal)(Tangent(tuple, {0: 1.0}))


@pytest.mark.parametrize("primal", [np.zeros(3), 1.0, np.float32(1.0), (1.0, 2.0),
                                    {"a": np.ones(2)}], ids=repr)
def test_zeros_pass_through(primal):
    assert ProjectTo(primal)(ZeroTangent()) is ZeroTangent()
    assert ProjectTo(primal)(NoTangent()) is NoTangent()


# ---------------------------------------------------------------------------------------------
# Structures: containers, dataclasses, objects, closures, recursively
# ---------------------------------------------------------------------------------------------

Pair = namedtuple("Pair", "weight count")


@dataclasses.dataclass
class Layer:
    weight: np.ndarray
    bias: float
    name: str
    size: int


class Plain:
    def __init__(self):
        self.w = np.ones(2, np.float32)
        self.label = "plain"
        self.scale = 2.0


class Slotted:
    __slots__ = ("w", "n")

    def __init__(self):
        self.w = np.ones(3)
        self.n = 4


def make_closure():
    w = np.ones(2, np.float32)
    k = 3
    c = 2.0 + 0j
    return lambda x: x * w * k * c


CLOSURE = make_closure()
F64 = np.array([0.5, 1.5])
F64_3 = np.array([1.0, 2.0, 3.0])
C128 = np.array([0.5 + 1j, 1.5 - 2j])

STRUCTURE_CASES = [
    # primal, cotangent, expected Tangent
    ((1.0, np.ones(2, np.float32), 3, "s"), (2.0, C128, 1.0, 1.0),
     Tangent(tuple, {0: 2.0, 1: np.array([0.5, 1.5], np.float32)})),
    ([np.ones(2), 1 + 0j, True], [F64, 1 + 2j, 1.0],
     Tangent(list, {0: F64, 1: 1 + 2j})),
    ({"w": np.ones(2), "n": 3, "b": np.float32(0)}, {"w": C128, "n": 1.0, "b": 0.1},
     Tangent(dict, {"w": F64, "b": np.float32(0.1)})),
    (Pair(np.ones(2), 5), Tangent(Pair, weight=C128, count=2.0),
     Tangent(Pair, weight=F64)),
    (Layer(np.ones(2, np.float32), 0.5, "dense", 2),
     Tangent(Layer, weight=F64, bias=1 + 1j, name=1.0, size=1.0),
     Tangent(Layer, weight=np.array([0.5, 1.5], np.float32), bias=1.0)),
    (Plain(), Tangent(Plain, w=C128, label=1.0, scale=3.0),
     Tangent(Plain, w=np.array([0.5, 1.5], np.float32), scale=3.0)),
    (Slotted(), Tangent(Slotted, w=F64_3, n=1.0), Tangent(Slotted, w=F64_3)),
    (CLOSURE, Tangent(type(CLOSURE), w=C128, k=1.0, c=1j),
     Tangent(type(CLOSURE), w=np.array([0.5, 1.5], np.float32), c=1j)),
    # nested: a dict holding a dataclass holding a list
    ({"layer": Layer(np.ones(2), 1.0, "x", 1), "steps": [1.0, 2, np.ones(3, np.float32)]},
     {"layer": Tangent(Layer, weight=C128, size=5.0),
      "steps": Tangent(list, {0: 1 + 1j, 1: 1.0, 2: F64_3})},
     Tangent(dict, {"layer": Tangent(Layer, weight=F64),
                    "steps": Tangent(list, {0: 1.0, 2: F64_3.astype(np.float32)})})),
]


def assert_tangent_exactly(got, want, where="tangent"):
    """Field by field: same keys, same primal types, same values, dtypes and Python types."""
    assert type(got) is type(want), f"{where}: {type(got).__name__} vs {type(want).__name__}"
    if isinstance(want, Tangent):
        assert got.primal_type is want.primal_type, (where, got.primal_type, want.primal_type)
        assert set(got.keys()) == set(want.keys()), (where, set(got.keys()), set(want.keys()))
        for key in want.keys():
            assert_tangent_exactly(got[key], want[key], f"{where}[{key!r}]")
        return
    assert_same(got, want, type(want))


@pytest.mark.parametrize("primal, cotangent, expected", STRUCTURE_CASES,
                         ids=["tuple", "list", "dict", "namedtuple", "dataclass", "object",
                              "slots", "closure", "nested"])
def test_structures_are_projected_field_by_field(primal, cotangent, expected):
    assert_tangent_exactly(ProjectTo(primal)(cotangent), expected)


def test_namedtuple_cotangent_given_by_position_is_keyed_by_field_name():
    projected = ProjectTo(Pair(np.ones(2), 5))((C128, 1.0))
    assert_tangent_exactly(projected, Tangent(Pair, weight=F64))
    assert set(projected.keys()) == {"weight"}
    np.testing.assert_array_equal(projected[0], F64)


def test_structure_with_nothing_differentiable_projects_to_no_tangent():
    assert ProjectTo((1, "a", None))((1.0, 2.0, 3.0)) is NoTangent()
    assert ProjectTo({"n": 3})({"n": 1.0}) is NoTangent()
    k = 3
    assert ProjectTo(lambda x: x + k)(Tangent(None, k=1.0)) is NoTangent()
    assert ProjectTo(len)(1.0) is NoTangent()       # builtins and plain functions
    assert ProjectTo(np.sin)(1.0) is NoTangent()    # ufuncs


def test_structure_with_zero_cotangent_fields_projects_to_zero_tangent():
    assert ProjectTo((1.0, np.ones(2)))((ZeroTangent(), ZeroTangent())) is ZeroTangent()
    assert ProjectTo(Plain())(Tangent(Plain, label=1.0)) is ZeroTangent()


def test_structure_cotangent_with_an_unknown_field_is_an_error():
    with pytest.raises(ProjectionError, match="'z'"):
        ProjectTo(Plain())(Tangent(Plain, z=1.0))
    with pytest.raises(ProjectionError, match="'q'"):
        ProjectTo({"w": 1.0})({"w": 1.0, "q": 2.0})
    with pytest.raises(ProjectionError, match="Tangent for a Plain"):
        ProjectTo(Plain())(Tangent(Slotted, w=1.0))
    with pytest.raises(ProjectionError):
        ProjectTo(Plain())(np.ones(2))


def test_field_shape_mismatch_inside_a_structure_names_both_shapes():
    with pytest.raises(ProjectionError, match=r"\(2,\).*\(3,\)"):
        ProjectTo({"w": np.ones(2)})({"w": np.ones(3)})


# ---------------------------------------------------------------------------------------------
# Lazy and in-place addable cotangents
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("primal, value, expected", [
    (np.zeros(3, np.float32), np.array([1.0, 2.0, 3.5j]), np.array([1.0, 2.0, 0.0], np.float32)),
    (np.float32(1.0), 0.1 + 1j, np.float32(0.1)),
    (1.0, 2 - 1j, 2.0),
    (np.array(1.0), 0.5j, np.array(0.0)),
    ((1.0, np.ones(2)), (1j, np.array([1 + 1j, 2.0])),
     Tangent(tuple, {0: 0.0, 1: np.array([1.0, 2.0])})),
    (Plain(), Tangent(Plain, w=np.ones(2), scale=1j),
     Tangent(Plain, w=np.ones(2, np.float32), scale=0.0)),
], ids=["float32-array", "float32-scalar", "float", "0-d", "tuple", "object"])
def test_projecting_a_thunk_stays_lazy(primal, value, expected):
    calls = []
    thunk = Thunk(lambda: calls.append(1) or value)
    projected = ProjectTo(primal)(thunk)
    assert calls == [], "the thunk was computed by projection"
    result = unthunk(projected)
    assert calls == [1]
    if isinstance(expected, Tangent):
        assert tangents_equal(result, expected)
        assert_tangent_exactly(result, expected)
    else:
        assert_same(result, expected, type(expected))


def test_projecting_a_computed_thunk_gives_the_projected_value():
    thunk = Thunk(lambda: np.array([1.0 + 1j, 2.0]))
    unthunk(thunk)
    assert_same(unthunk(ProjectTo(np.zeros(2, np.float32))(thunk)),
                np.array([1.0, 2.0], np.float32), np.ndarray)


def adder(value):
    return lambda buffer: np.add(buffer, value, out=buffer)


@pytest.mark.parametrize("value", [np.array([0.1, 0.2, 0.3]), np.array([1 + 2j, 3j, -1.5])],
                         ids=["float64", "complex128"])
@pytest.mark.parametrize("primal_dtype", [np.float32, np.float64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shaped", [True, False], ids=["shaped", "unshaped"])
def test_projecting_an_inplaceable_thunk_keeps_it_inplace_addable(value, primal_dtype, shaped):
    calls = []
    lazy = Thunk(lambda: calls.append(1) or value)
    t = InplaceableThunk(adder(value), lazy, shape=(3,) if shaped else None,
                         dtype=value.dtype if shaped else None)
    projected = ProjectTo(np.zeros(3, primal_dtype))(t)
    assert isinstance(projected, InplaceableThunk)
    assert projected.shape == (3,) and projected.dtype == np.dtype(primal_dtype)
    if shaped and value.dtype == np.dtype(primal_dtype):
        assert projected is t
    assert calls == []

    want = expected_in(primal_dtype, value)
    for buffer_dtype in (np.float32, np.float64, np.complex128):
        buffer = np.arange(3, dtype=buffer_dtype) + 0.25
        eager = buffer + want
        if np.promote_types(buffer_dtype, primal_dtype) == np.dtype(buffer_dtype):
            target = buffer.copy()
            assert projected.add(target) is target
            assert_same(target, eager, np.ndarray)   # the add and the value agree
    assert_same(unthunk(projected), want, np.ndarray)


@pytest.mark.parametrize("index, values", [
    (1, 0.1 + 2j),
    (slice(0, 2), np.array([1 / 3, 2j])),
    (np.array([0, 0, 2]), np.array([0.1, 0.2, 0.3])),
    (np.array([True, False, True]), np.array([1e-8 + 1j, 7.0])),
], ids=["int", "slice", "repeats", "mask"])
@pytest.mark.parametrize("primal_dtype", [np.float32, np.float64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_projecting_a_sparse_cotangent_keeps_it_sparse(index, values, primal_dtype):
    sparse = SparseCotangent(index, values, (3,), np.complex128)
    projected = ProjectTo(np.zeros(3, primal_dtype))(sparse)
    assert isinstance(projected, SparseCotangent)
    assert projected.dtype == np.dtype(primal_dtype)
    assert not sparse.is_computed

    positions = np.arange(3)[index]
    want = np.zeros(3, primal_dtype)
    np.add.at(want, positions, np.broadcast_to(expected_in(primal_dtype, values),
                                               positions.shape))
    assert_same(unthunk(projected), want, np.ndarray)
    for buffer_dtype in (np.float32, np.float64, np.complex128):
        buffer = np.arange(3, dtype=buffer_dtype) + 0.25
        if np.promote_types(buffer_dtype, primal_dtype) == np.dtype(buffer_dtype):
            target = buffer.copy()
            assert projected.add_into(target) is target
            assert_same(target, buffer + want, np.ndarray)


def test_projector_repr_is_readable():
    assert "(2, 3)" in repr(ProjectTo(np.zeros((2, 3), np.float32)))
    assert "float32" in repr(ProjectTo(np.zeros((2, 3), np.float32)))
    assert "NoTangent" in repr(ProjectTo(3))
