"""Rules for shape functions (chainrules.rules.numpy.shape): every registered function checked by the
rule-testing kit against finite differences, then closed forms for structural cotangents,
list outputs, casts and refused options."""

from __future__ import annotations

import numpy as np
import pytest

from chainrules import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk
from chainrules.rules.numpy.shape import astype
from chainrules.testing import case, check_case, rand_primal
from tests.numpy_features import accepted, running

_rng = np.random.default_rng(20240602)
F64, F32, C128 = np.float64, np.float32, np.complex128


def normal(*shape, dtype=F64):
    """Random values of ``dtype`` (complex ones have a random imaginary part too)."""
    return rand_primal("array", _rng, dtype, shape)


X = normal(2, 3, 4)

CASES = [
    # reshape, ravel, transpose and friends
    case(np.reshape, X, (4, 6)),
    case(np.reshape, normal(2, 3, dtype=F32), (3, -1), order="F"),
    accepted(case(np.reshape, normal(6, dtype=C128), shape=(2, 3)), "np.reshape(shape=) (NumPy 2.1)"),
    case(np.ravel, X),
    case(np.ravel, normal(2, 3, dtype=C128), "F"),
    # (order='A'/'K' depend on memory layout, which finite differences don't keep:
    # test_memory_orders_of_a_fortran_array checks them)
    case(np.transpose, X),
    case(np.transpose, X, (1, -1, 0)),
    case(np.transpose, normal(2, 3, dtype=C128)),
    case(np.transpose, normal(2, 3, dtype=F32), axes=(1, 0)),
    case(np.swapaxes, X, 0, -1),
    case(np.swapaxes, normal(2, 3, dtype=C128), 0, 1),
    case(np.moveaxis, X, 0, -1),
    case(np.moveaxis, normal(2, 3, 4, dtype=F32), [0, 1], [2, 0]),
    case(np.expand_dims, X, 1),
    case(np.expand_dims, normal(3, dtype=C128), (0, -1)),
    case(np.squeeze, normal(1, 3, 1)),
    case(np.squeeze, normal(1, 3, 1, dtype=F32), axis=0),
    case(np.broadcast_to, normal(3), (2, 3)),
    case(np.broadcast_to, normal(2, 1, dtype=C128), (3, 2, 4)),
    case(np.broadcast_to, 1.5, (3,)),
    # joining: sequences of arrays (and of numbers)
    case(np.concatenate, [normal(2, 3), normal(1, 3)]),
    case(np.concatenate, (normal(2, 3), normal(2, 1, dtype=F32)), axis=-1),
    case(np.concatenate, [normal(2, 3), normal(4)], axis=None),
    case(np.concatenate, (normal(2, dtype=C128), normal(3))),
    case(np.concatenate, normal(3, 2)),
    case(np.stack, [normal(2, 3), normal(2, 3)]),
    case(np.stack, (normal(2, 3), normal(2, 3, dtype=C128)), axis=-1),
    case(np.stack, [normal(3, dtype=F32), normal(3, dtype=F32)], 1),
    case(np.stack, [1.0, 2.0, 3.0]),
    *[case(f, args) for f in (np.hstack, np.vstack, np.dstack, np.column_stack)
      for args in ([normal(3), normal(3)], (normal(2, 3), normal(2, 3, dtype=C128)),
                   [normal(2, 3, 2), normal(2, 3, 2)], [1.0, 2.0])],
    case(np.hstack, [normal(2, 1), normal(2, 3)]),
    case(np.vstack, [normal(3), normal(2, 3, dtype=F32)]),
    case(np.column_stack, [normal(3), normal(3, 2)]),
    # np.block: the innermost lists join along the last axis, arrays promoted to the result's
    case(np.block, [normal(2), normal(3)]),
    case(np.block, [[normal(2, 2), normal(2, 3)], [normal(1, 5)]]),
    case(np.block, [[normal(2, 2), normal(2, 1, dtype=C128)], [normal(2), 1.5]]),
    case(np.block, [[[normal(2, dtype=F32)]], [[normal(2, dtype=F32)]]]),
    case(np.block, normal(2, 3)),
    # splitting: a list of outputs
    case(np.split, normal(6), 3),
    case(np.split, normal(4, 6), [1, 4], axis=1),
    case(np.split, normal(5), [3, 1]),
    case(np.split, normal(5, dtype=C128), [-2]),
    case(np.array_split, normal(7, 2), 3),
    case(np.array_split, normal(5, dtype=F32), 2),
    case(np.hsplit, normal(2, 4), 2),
    case(np.vsplit, normal(4, 2), [1]),
    case(np.dsplit, normal(1, 2, 4), 2),
    # copies: tile, repeat
    case(np.tile, normal(3), 2),
    case(np.tile, normal(2, 3), (2, 1, 2)),
    case(np.tile, normal(2, 3, dtype=C128), (2, 1)),
    case(np.tile, 1.5, 3),
    case(np.repeat, normal(3), 2),
    case(np.repeat, normal(2, 3), [1, 0, 2], axis=1),
    case(np.repeat, normal(2, 3, dtype=F32), 2),
    case(np.repeat, normal(2, 3, dtype=C128), [0, 3], 0),
    # flips, rolls, rotations, triangles
    case(np.flip, X),
    case(np.flip, X, 1),
    case(np.flip, normal(2, 3, dtype=C128), (0, 1)),
    case(np.fliplr, normal(2, 3)),
    case(np.flipud, normal(2, 3, dtype=F32)),
    case(np.roll, normal(5), 2),
    case(np.roll, X, (1, -1), (0, 2)),
    case(np.roll, normal(2, 3, dtype=C128), 4),
    case(np.rot90, normal(2, 3)),
    case(np.rot90, X, 3, (1, 2)),
    case(np.rot90, normal(2, 3, dtype=C128), k=-1, axes=(1, 0)),
    case(np.triu, normal(3, 4)),
    case(np.tril, normal(3, 4), -1),
    case(np.triu, normal(2, 3, 3, dtype=C128), 1),
    case(np.tril, normal(3, 3, dtype=F32)),
    # padding
    *[case(np.pad, x, width, mode=mode)
      for mode in ("constant", "edge", "reflect", "symmetric", "wrap")
      for x, width in ((normal(4), 2), (normal(3, 4), ((1, 2), (3, 0))), (normal(2, 3), 5))],
    case(np.pad, normal(3), 1, constant_values=3.0),
    case(np.pad, normal(3, dtype=C128), (2, 1)),
    case(np.pad, normal(2, 3, dtype=F32), 1, "reflect"),
    # diagonals
    case(np.diag, normal(3)),
    case(np.diag, normal(3, dtype=C128), 1),
    case(np.diag, normal(3), -2),
    case(np.diag, normal(3, 4)),
    case(np.diag, normal(4, 3, dtype=F32), -1),
    case(np.diag, normal(3, 4), 2),
    case(np.diagflat, normal(2, 2)),
    case(np.diagflat, normal(3, dtype=C128), -1),
    case(np.diagflat, [1.0, 2.0]),
    # several arrays in, several out
    *[case(f, x) for f in (np.atleast_1d, np.atleast_2d, np.atleast_3d)
      for x in (1.5, normal(3), normal(2, 3, dtype=C128), normal(2, 3, 4))],
    case(np.atleast_2d, normal(3), 2.0, normal(2, 2, dtype=F32)),
    case(np.atleast_3d, normal(3), normal(2, 2)),
    *[case(np.meshgrid, *xs, **options) for xs in ((normal(3), normal(2)),
                                                   (normal(3), normal(2), normal(4)))
      for options in ({}, dict(indexing="ij"), dict(sparse=True), dict(copy=False))],
    case(np.meshgrid, normal(3)),
    case(np.meshgrid, normal(2, dtype=C128), normal(3, dtype=F32), indexing="ij"),
    # copies and conversions
    case(np.copy, normal(3, dtype=C128)),
    case(np.asarray, normal(2, 3, dtype=F32)),
    case(np.asarray, [1.0, 2.0], dtype=C128),
    case(np.array, [1.0, 2.0, 3.0]),
    case(np.array, [[1.0, 2.0], [3.0, 4.0]]),
    case(np.array, [normal(2), normal(2)]),
    case(np.array, (normal(2), 2.0 * np.ones(2), [0.5, 1.5])),
    case(np.array, normal(3), ndmin=2),
    case(np.array, normal(3), dtype=F32),
    case(np.asanyarray, normal(2, 3, dtype=C128), order="F"),
    case(np.ascontiguousarray, normal(2, 3).T),
    case(np.ascontiguousarray, normal(3, dtype=F32), dtype=C128),
    case(np.asfortranarray, normal(2, 3)),
    case(np.asfortranarray, [[1.0, 2.0], [3.0, 4.0]], dtype=F32),
    case(np.asarray_chkfinite, normal(2, 3)),
    case(np.asarray_chkfinite, normal(3), dtype=F32),
    case(np.require, normal(2, 3).T, requirements=["C"]),
    case(np.require, normal(3, dtype=F32), dtype=C128),
    case(astype, normal(3), C128),
    case(astype, normal(3), F32),
    case(astype, normal(2, 3, dtype=F32), F64),
    case(astype, normal(3, dtype=C128), np.complex64),
    # resize: the flattened input repeated cyclically
    case(np.resize, normal(5), (3, 4)),
    case(np.resize, normal(2, 3), 4),
    case(np.resize, normal(3, dtype=C128), (2, 2)),
    case(np.resize, normal(3, dtype=F32), 7),
    # trim_zeros: no zero at the ends here (a perturbed zero would change the output's
    # shape); the cut ends are tested in test_trim_zeros_cotangent_fills_the_window
    case(np.trim_zeros, normal(5)),
    case(np.trim_zeros, normal(4, dtype=C128), "b"),
]

SHAPE_FUNCTIONS = [
    np.reshape, np.ravel, np.transpose, np.swapaxes, np.moveaxis, np.expand_dims, np.squeeze,
    np.broadcast_to, np.concatenate, np.stack, np.hstack, np.vstack, np.dstack,
    np.column_stack, np.block, np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit, np.tile,
    np.repeat, np.flip, np.fliplr, np.flipud, np.roll, np.rot90, np.pad, np.triu, np.tril,
    np.diag, np.diagflat, np.atleast_1d, np.atleast_2d, np.atleast_3d, np.meshgrid, np.copy,
    np.asarray, np.array, np.asanyarray, np.ascontiguousarray, np.asfortranarray, astype,
    np.asarray_chkfinite, np.require,
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("f", SHAPE_FUNCTIONS, ids=lambda f: f.__name__)
def test_every_shape_function_has_both_rules_and_cases(f):
    assert rrule.lookup(f) is not None and frule.lookup(f) is not None
    assert any(c.function is f for c in running(CASES))


# --- closed forms: structural cotangents, lists of outputs, casts, errors ------------------------

def test_array_of_scalars_gives_a_list_tangent():
    y, pullback = rrule(np.array, [1.0, 2.0, 3])
    np.testing.assert_array_equal(y, [1.0, 2.0, 3.0])
    cotangent = pullback(np.array([4.0, 5.0, 6.0]))[1]
    assert cotangent == Tangent(list, {0: 4.0, 1: 5.0})  # the int gets no tangent
    assert type(cotangent[0]) is float


def test_array_of_arrays_stacks():
    a, b = np.ones(2, np.float32), np.zeros(2)
    _, pullback = rrule(np.array, (a, b))
    cotangent = pullback(np.array([[1.0, 2.0], [3.0, 4.0]]))[1]
    assert cotangent.primal_type is tuple
    assert cotangent[0].dtype == np.float32
    np.testing.assert_array_equal(cotangent[1], [3.0, 4.0])


@pytest.mark.parametrize("f, kwargs", [(np.concatenate, {}), (np.stack, dict(axis=1)),
                                       (np.hstack, {}), (np.vstack, {})])
def test_sequence_arguments_get_positional_tangents(f, kwargs):
    x, n = np.arange(3.0), np.arange(3)
    y, pullback = rrule(f, [x, n, 2 * x], **kwargs)
    dy = np.arange(np.size(y), dtype=float).reshape(np.shape(y))
    cotangent = pullback(dy)[1]
    assert cotangent.primal_type is list and set(cotangent.keys()) == {0, 2}  # ints omitted
    pieces = f([np.ones(3), np.zeros(3), 2 * np.ones(3)], **kwargs)  # where each element went
    np.testing.assert_array_equal(cotangent[0], dy[pieces == 1])
    np.testing.assert_array_equal(cotangent[2], dy[pieces == 2])


def test_concatenate_rows_of_an_array():
    x = np.arange(6.0).reshape(2, 3)
    y, pullback = rrule(np.concatenate, x)
    np.testing.assert_array_equal(pullback(np.arange(6.0) * 10)[1], x * 10)


@pytest.mark.parametrize("dy, expected", [
    ([ZeroTangent(), np.ones(2), ZeroTangent()], [0, 0, 1, 1, 0, 0]),
    ((np.ones(2), 2 * np.ones(2), 3 * np.ones(2)), [1, 1, 2, 2, 3, 3]),
    (Tangent(list, {2: np.ones(2)}), [0, 0, 0, 0, 1, 1]),
])
def test_split_cotangent_with_zero_entries(dy, expected):
    _, pullback = rrule(np.split, np.arange(6.0), 3)
    np.testing.assert_array_equal(pullback(dy)[1], expected)


def test_split_all_zero_cotangent():
    _, pullback = rrule(np.split, np.arange(6.0), 3)
    assert pullback([ZeroTangent()] * 3) == (NoTangent(), ZeroTangent(), NoTangent())


def test_split_with_overlapping_indices():
    # np.split(x, [3, 1]) gives x[:3], x[3:1] (empty), x[1:]: pieces overlap, cotangents add
    _, pullback = rrule(np.split, np.arange(5.0), [3, 1])
    dy = [np.ones(3), np.zeros(0), 10 * np.ones(4)]
    np.testing.assert_array_equal(pullback(dy)[1], [1, 11, 11, 10, 10])


def test_meshgrid_cotangents_sum_the_copies():
    _, pullback = rrule(np.meshgrid, np.arange(3.0), np.arange(2.0))
    dx, dy = pullback((np.ones((2, 3)), ZeroTangent()))[1:]  # lazy: two arrays
    np.testing.assert_array_equal(unthunk(dx), [2.0, 2.0, 2.0])
    assert unthunk(dy) is ZeroTangent()


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_astype_real_to_complex_takes_the_real_part(dtype):
    x = np.array([1.0, 2.0])
    y, pullback = rrule(astype, x, dtype)
    assert y.dtype == dtype
    cotangent = pullback(np.array([1 + 2j, 3 - 4j], dtype))[1]
    assert cotangent.dtype == np.float64
    np.testing.assert_array_equal(cotangent, [1.0, 3.0])


def test_astype_float64_to_float32_casts_back():
    _, pullback = rrule(astype, np.array([1.0, 2.0]), np.float32)
    cotangent = pullback(np.array([0.5, 0.25], np.float32))[1]
    assert cotangent.dtype == np.float64
    np.testing.assert_array_equal(cotangent, [0.5, 0.25])


def test_astype_to_integer_has_a_zero_cotangent():
    _, pullback = rrule(astype, np.array([1.5, 2.5]), np.int64)
    assert pullback(np.ones(2)) == (NoTangent(), ZeroTangent(), NoTangent())


def test_integer_arrays_have_no_tangent():
    _, pullback = rrule(np.reshape, np.arange(6), (2, 3))
    assert pullback(np.ones((2, 3)))[1] is NoTangent()


@pytest.mark.parametrize("kwargs, match", [
    (dict(mode="linear_ramp"), "numpy.pad: mode='linear_ramp' is not supported"),
    (dict(mode="mean"), "numpy.pad: mode='mean' is not supported"),
    (dict(mode="reflect", reflect_type="odd"), "numpy.pad: reflect_type='odd'"),
])
def test_pad_unsupported_modes(kwargs, match):
    with pytest.raises(NotImplementedError, match=match):
        rrule(np.pad, np.ones(3), 1, **kwargs)


def test_refused_out():
    with pytest.raises(TypeError, match="numpy.concatenate: the out= argument"):
        rrule(np.concatenate, [np.ones(2), np.ones(2)], out=np.zeros(4))


def test_ravel_order_k_of_a_strided_array_is_refused():
    with pytest.raises(NotImplementedError, match="numpy.ravel: order='K'"):
        rrule(np.ravel, np.ones((4, 3, 2)).transpose(1, 0, 2), "K")


@pytest.mark.parametrize("f, args", [(np.ravel, ("K",)), (np.ravel, ("A",)),
                                     (np.reshape, (6, "A"))])
def test_memory_orders_of_a_fortran_array(f, args):
    x = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    y, pullback = rrule(f, x, *args)
    np.testing.assert_array_equal(y, [0, 3, 1, 4, 2, 5])  # read in memory order
    np.testing.assert_array_equal(pullback(y * 10)[1], x * 10)
    np.testing.assert_array_equal(frule((NoTangent(), x * 10), f, x, *args)[1], y * 10)


@pytest.mark.parametrize("x, trim, kwargs, window", [
    (np.array([0.0, 0.0, 1.5, 0.0, -2.0, 0.0]), "fb", {}, (slice(2, 5),)),
    (np.array([0.0, 0.0, 1.5, 0.0, -2.0, 0.0]), "f", {}, (slice(2, 6),)),
    (np.array([0.0, 0.0, 1.5, 0.0, -2.0, 0.0]), "B", {}, (slice(0, 5),)),
    (np.array([[0.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 1.0, 3.0]]), "fb", {"axis": 1},
     (slice(None), slice(1, 3))),
    (np.array([[0.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 1.0, 3.0]]), "fb", {},
     (slice(1, 3), slice(1, 3))),
])
def test_trim_zeros_cotangent_fills_the_window(x, trim, kwargs, window):
    """The gradient of sum(w * trim_zeros(x)) is w in the window NumPy keeps, 0 in the cut
    ends; the tangent is the window of the input's; hvp of a cube, 6 x v in the window."""
    import chainrules as cr
    try:
        y = np.trim_zeros(x, trim, **kwargs)
    except (TypeError, ValueError):
        pytest.skip("np.trim_zeros of arrays with more than one axis: NumPy 2.2")
    w = np.arange(1.0, y.size + 1).reshape(y.shape)
    expected = np.zeros_like(x)
    expected[window] = w
    np.testing.assert_array_equal(
        cr.grad(lambda x: np.sum(w * np.trim_zeros(x, trim, **kwargs)))(x), expected)
    v = np.arange(x.size, dtype=float).reshape(x.shape) + 1.0
    _, tangent = cr.jvp(lambda x: np.trim_zeros(x, trim, **kwargs), (x,), (v,))
    np.testing.assert_array_equal(tangent, v[window])
    hvp = cr.hvp(lambda x: np.sum(np.trim_zeros(x, trim, **kwargs) ** 3), x, v)
    cube = np.zeros_like(x)
    cube[window] = 6 * x[window] * v[window]
    np.testing.assert_allclose(hvp, cube)


def test_resize_sums_the_copies():
    import chainrules as cr
    x, w = normal(3), normal(2, 4)
    expected = np.bincount(np.arange(8) % 3, weights=w.ravel())
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(w * np.resize(x, (2, 4))))(x), expected)


def test_a_list_of_arrays_projects_fitting_cotangents_at_once_and_others_by_projectto():
    from chainrules.core.projection import ProjectTo
    from chainrules.core.tangents import Tangent
    from chainrules.rules.define import project_onto

    a, b = np.ones((2, 3)), np.ones(4, dtype=np.float32)
    fitting = [np.full((2, 3), 2.0), np.full(4, 3.0, dtype=np.float32)]
    projected = project_onto([a, b])(fitting)
    assert type(projected) is Tangent and projected[0] is fitting[0] and projected[1] is fitting[1]
    wide = [np.full((2, 3), 2.0 + 1j), np.full(4, 3.0)]  # complex onto real, float64 onto float32
    projected = project_onto((a, b))(wide)
    expected = ProjectTo((a, b))(wide)
    assert projected.primal_type is tuple and projected[1].dtype == np.float32
    for key in (0, 1):
        np.testing.assert_array_equal(projected[key], expected[key])
    np.testing.assert_array_equal(projected[0], np.full((2, 3), 2.0))
