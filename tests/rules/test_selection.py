"""Rules for selection (chainrules.rules.numpy.selection): every registered function checked by the
rule-testing kit against finite differences; then the sparse cotangents of the indexing-like
functions, the choice of which argument a gradient flows to, and the functions without
tangents."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr

from chainrules import NoTangent, SparseCotangent, Tangent, ZeroTangent, accumulate, frule, \
    rrule, unthunk
from chainrules.core import owned_copy
from chainrules.testing import case, check_case, rand_primal
from tests.numpy_features import accepted

_rng = np.random.default_rng(20240613)
F64, F32, C128 = np.float64, np.float32, np.complex128


def normal(*shape, dtype=F64):
    return rand_primal("array", _rng, dtype, shape)


def distinct(*shape, dtype=F64):
    """Values 0.37 apart: comparisons (clip, unique) don't change under finite differences."""
    size = int(np.prod(shape))
    return ((_rng.permutation(size) - size // 2) * 0.37 + 0.15).reshape(shape).astype(dtype)


MASK = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, True]])
CHOICE = np.array([[0, 2, 1, 0], [1, 1, 2, 0], [2, 0, 0, 1]])

CASES = [
    # take: flat and along an axis, repeated and negative indices, every mode, scalar index
    *[case(np.take, normal(5, dtype=t), np.array([0, 2, 2, -1])) for t in (F64, F32, C128)],
    case(np.take, normal(3, 4, dtype=C128), np.array([[0, 3], [3, 3]]), 1),
    case(np.take, normal(3, 4), 5),
    # overlapping windows: each element's cotangent sums the windows that read it
    *[case(np.lib.stride_tricks.sliding_window_view, normal(6, dtype=t), 3) for t in (F64, F32,
                                                                                       C128)],
    case(np.lib.stride_tricks.sliding_window_view, normal(4, 5), (2, 3)),
    case(np.lib.stride_tricks.sliding_window_view, normal(3, 5), 2, axis=1),
    case(np.lib.stride_tricks.sliding_window_view, normal(4, 5), (2, 2), axis=(1, 0)),
    case(np.take, normal(3, 4), np.array([1, 1, 0]), axis=0),
    case(np.take, normal(3, 4), np.array([0, 7, -9]), 0, mode="wrap"),
    case(np.take, normal(3, 4), np.array([0, 7, -9]), axis=1, mode="clip"),
    case(np.take, normal(2, 3), [[0, 5], [5, 1]]),
    # take_along_axis
    case(np.take_along_axis, normal(3, 4), np.array([[0, 1, 1], [3, 3, 0], [2, 2, 2]]), 1),
    case(np.take_along_axis, normal(3, 4, dtype=F32), np.array([[0, 1, 2, 2]]), 0),
    case(np.take_along_axis, normal(3, 4, dtype=C128), np.array([[0], [3], [-1]]), axis=-1),
    case(np.take_along_axis, normal(3, 4), np.array([0, 11, 5, 5]), None),
    case(np.take_along_axis, normal(3, 4), np.argsort(normal(3, 4), axis=1), 1),
    # compress, extract
    case(np.compress, np.array([True, False, True]), normal(3, 4), 0),
    case(np.compress, np.array([True, False, True]), normal(3, 4, dtype=C128)),
    case(np.compress, np.array([False, True, True]), normal(2, 4, dtype=F32), axis=1),
    case(np.extract, MASK, normal(3, 4)),
    case(np.extract, MASK.ravel()[:5], normal(2, 4, dtype=C128)),
    # diagonal: offsets, axes in any order, neighbours or not
    case(np.diagonal, normal(4, 4)),
    case(np.diagonal, normal(3, 5, dtype=F32), 1),
    case(np.diagonal, normal(5, 3), -2),
    case(np.diagonal, normal(2, 3, 4, dtype=C128), 1, 0, 2),
    case(np.diagonal, normal(2, 3, 4), 0, 2, 1),
    case(np.diagonal, normal(2, 3, 4, 3), -1, 1, 3),
    case(np.diagonal, normal(2, 3, 3), axis1=-1, axis2=-2),
    # choose: choices as an array (sparse) or a list (broadcast), modes
    case(np.choose, CHOICE, normal(3, 3, 4)),
    case(np.choose, CHOICE, normal(3, 1, 4, dtype=C128)),
    case(np.choose, CHOICE, [normal(3, 4), normal(4), normal(3, 1, dtype=F32)]),
    case(np.choose, np.array([0, 4, -1]), [normal(3), normal(3)], mode="wrap"),
    case(np.choose, np.array([0, 4, -1]), (normal(3), normal(3)), mode="clip"),
    # where, three-argument form: broadcasting, scalars, mixed dtypes
    case(np.where, MASK, normal(3, 4), normal(4)),
    case(np.where, MASK, 2.0, normal(3, 4, dtype=C128)),
    case(np.where, np.array([True, False, True]), normal(2, 1), normal(3, dtype=F32)),
    case(np.where, np.array(True), normal(3), normal(2, 3)),
    case(np.where, MASK),
    # select: the first true condition wins; the default where none is
    case(np.select, [MASK, ~MASK[0]], [normal(3, 4), normal(4)], normal(3, 1)),
    case(np.select, [MASK[0], MASK[1]], [normal(4), normal(1, dtype=C128)]),
    case(np.select, [MASK, MASK[::-1]], (normal(3, 4, dtype=F32), normal(3, 4, dtype=F32)), 0.5),
    # clip: scalar, array and missing bounds; bounds crossing; keyword bounds
    case(np.clip, distinct(3, 4), -0.5, 0.6),
    case(np.clip, distinct(3, 4), distinct(4) * 0.5 - 0.05, distinct(3, 1) + 1.03),
    case(np.clip, distinct(3, 4), None, distinct(4) + 0.1),
    case(np.clip, distinct(3, 4, dtype=F32), np.float32(-0.3), None),
    accepted(case(np.clip, distinct(3, 4), min=-0.3, max=0.3), "np.clip(min=, max=) (NumPy 2.1)"),
    case(np.clip, distinct(3, 4), 0.55, -0.55),
    # full_like: the fill value is differentiable, the array only gives the shape
    case(np.full_like, normal(3, 2), 2.5),
    case(np.full_like, normal(3, 2), normal(2)),
    case(np.full_like, normal(3, 2), normal(2, dtype=C128), dtype=C128),
    case(np.full_like, normal(3, 2, dtype=F32), 2.5),
    case(np.full_like, np.zeros((2, 2), int), 1.5),
    # unique: its values are the input's (distinct) elements
    case(np.unique, distinct(6)),
    case(np.unique, np.array([3.0, 1.0, 4.0, 2.0]), return_index=True, return_counts=True),
    case(np.unique, np.array([[1.0, 2.0], [2.0, 3.0], [0.0, 5.0]]), axis=0),
    # the array-API unique functions (NumPy 2.0) and the set operations, on distinct values
    # (a tie moves apart under finite differences; see test_set_operations_with_shared_values)
    *[case(getattr(np, name), distinct(2, 3)) for name in (
        "unique_values", "unique_counts", "unique_inverse", "unique_all") if hasattr(np, name)],
    *([case(np.unique_all, distinct(5, dtype=C128))] if hasattr(np, "unique_all") else []),
    case(np.union1d, distinct(4), distinct(3) + 0.1),
    case(np.union1d, distinct(3, dtype=F32), distinct(2, 2, dtype=F32) + 0.1),
    case(np.setdiff1d, distinct(5), distinct(3) + 0.1),
    case(np.setxor1d, distinct(4, dtype=C128), distinct(3) + 0.1),
    case(np.intersect1d, distinct(4), distinct(3) + 0.1),  # an empty intersection
    # no tangents
    *[case(f, normal(3, 4)) for f in (np.argmax, np.argmin, np.argsort, np.nonzero,
                                      np.flatnonzero, np.shape, np.ndim, np.size,
                                      np.zeros_like, np.ones_like,
                                      np.count_nonzero, np.iscomplexobj, np.isrealobj)],
    case(np.argmax, normal(3, 4), axis=1),
    case(np.searchsorted, np.sort(normal(5)), normal(3)),
    case(np.isclose, normal(3), normal(3)),
    case(np.allclose, normal(3), normal(3)),
    case(np.array_equal, normal(3), normal(3)),
    case(np.result_type, normal(3), normal(2, dtype=F32)),
    case(np.empty_like, np.zeros((2, 0))),  # empty: an empty_like array's values are undefined
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_selection_rule(rule_case):
    check_case(rule_case)


# --- sparse cotangents: reading a few elements costs what it reads ---------------------------

@pytest.mark.parametrize("f, args, index", [
    (np.take, (np.array([5, 5, 1]),), np.unravel_index([5, 5, 1], (100, 3))),
    (np.take, (np.array([1, 0]), 1), (slice(None), np.array([1, 0]))),
    (np.take_along_axis, (np.array([[0], [2], [1], [0]] * 25), 1), None),
    (np.diagonal, (), None),
])
def test_indexing_like_cotangents_are_sparse(f, args, index):
    x = normal(100, 3)
    y, pullback = rrule(f, x, *args)
    cotangent = pullback(np.ones(np.shape(y)))[1]
    assert isinstance(cotangent, SparseCotangent) and cotangent.shape == x.shape
    if index is not None:
        expected = np.zeros_like(x)
        np.add.at(expected, index, 1.0)
        np.testing.assert_array_equal(cotangent.dense(), expected)


def test_sliding_windows_at_orders_1_and_2_against_their_counts():
    # before: "no rule for numpy.lib.stride_tricks.sliding_window_view"
    windows = np.lib.stride_tricks.sliding_window_view
    x = np.arange(1.0, 7.0)
    counts = np.array([1.0, 2.0, 3.0, 3.0, 2.0, 1.0])  # windows of 3 that read each element
    np.testing.assert_allclose(cr.grad(lambda v: np.sum(windows(v, 3) ** 2))(x), 2 * counts * x)
    np.testing.assert_allclose(cr.hessian(lambda v: np.sum(windows(v, 3) ** 3))(x),
                               np.diag(6 * counts * x))
    tangent = cr.jvp(lambda v: windows(v, 3), (x,), (x ** 2,))[1]
    np.testing.assert_array_equal(tangent, windows(x ** 2, 3))
    # writeable=True (which SciPy's spectrogram asks for without writing) gives read-only
    # windows: the same values and gradient; a write through one, which would change x and
    # every window that overlaps it, is refused (before: writeable=True refused itself)
    np.testing.assert_allclose(
        cr.grad(lambda v: np.sum(windows(v, 3, writeable=True) ** 2))(x), 2 * counts * x)

    def write_through_a_window(v):
        windows(v, 2, writeable=True)[0, 0] = 5.0
        return np.sum(v ** 2)

    with pytest.raises(cr.TracingError, match="writing into a view"):
        cr.grad(write_through_a_window)(x)


def test_sparse_cotangent_is_projected_and_accumulates_in_place():
    x = normal(10, dtype=F32)
    _, pullback = rrule(np.take, x, np.array([3, 3, 7]))
    cotangent = pullback(np.array([0.1 + 1j, 0.2, 0.3]))[1]      # complex, float64 values
    assert cotangent.dtype == F32
    buffer = owned_copy(np.zeros(10, F32))
    result = accumulate(buffer, cotangent, owned=True)
    assert result is buffer
    expected = np.zeros(10, F32)
    expected[3], expected[7] = np.float32(0.1) + np.float32(0.2), np.float32(0.3)
    np.testing.assert_array_equal(result, expected)


def test_choose_from_an_array_reads_one_element_per_output():
    choices = normal(3, 2, 4)
    a = np.array([[0, 2, 1, 0], [1, 1, 2, 2]])
    _, pullback = rrule(np.choose, a, choices)
    cotangent = pullback(np.ones((2, 4)))[2]
    assert isinstance(cotangent, SparseCotangent)
    dense = cotangent.dense()
    assert dense.sum() == 8 and all(dense[a[i, j], i, j] == 1 for i in range(2)
                                    for j in range(4))


def test_choose_from_a_list_gives_a_tangent_of_the_list():
    _, pullback = rrule(np.choose, np.array([0, 1, 1]), [normal(3), normal(1)])
    cotangent = pullback(np.array([1.0, 2.0, 3.0]))[2]
    assert isinstance(cotangent, Tangent) and cotangent.primal_type is list
    np.testing.assert_array_equal(cotangent[0], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(cotangent[1], [5.0])


# --- who gets the gradient ---------------------------------------------------------------------

def test_clip_gradient_flows_to_the_bound_that_was_used():
    a = np.array([-2.0, -0.5, 0.0, 0.5, 2.0])
    lower, upper = np.full(5, -1.0), np.full(5, 1.0)
    _, pullback = rrule(np.clip, a, lower, upper)
    _, da, dlower, dupper = (unthunk(t) for t in pullback(np.arange(1.0, 6.0)))
    np.testing.assert_array_equal(da, [0, 2, 3, 4, 0])
    np.testing.assert_array_equal(dlower, [1, 0, 0, 0, 0])
    np.testing.assert_array_equal(dupper, [0, 0, 0, 0, 5])


def test_clip_at_a_bound_gives_the_gradient_to_the_input():
    _, pullback = rrule(np.clip, np.array([1.0, -1.0]), -1.0, 1.0)
    _, da, dlower, dupper = pullback(np.ones(2))
    np.testing.assert_array_equal(unthunk(da), [1.0, 1.0])
    assert dlower == 0.0 and dupper == 0.0


def test_where_splits_the_cotangent_by_condition():
    cond = np.array([True, False, True])
    _, pullback = rrule(np.where, cond, np.ones(3), 2.0)
    _, dcond, dx, dother = pullback(np.array([1.0, 2.0, 3.0]))
    assert dcond is NoTangent()
    np.testing.assert_array_equal(unthunk(dx), [1.0, 0.0, 3.0])
    assert dother == 2.0


def test_select_first_true_condition_wins():
    conds = [np.array([True, True, False]), np.array([True, False, False])]
    _, pullback = rrule(np.select, conds, [np.zeros(3), np.zeros(3)], np.zeros(3))
    _, _, dchoices, ddefault = pullback(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(unthunk(dchoices)[0], [1.0, 2.0, 0.0])
    np.testing.assert_array_equal(unthunk(dchoices)[1], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(unthunk(ddefault), [0.0, 0.0, 3.0])


def test_full_like_gives_no_tangent_to_the_array():
    _, pullback = rrule(np.full_like, np.ones((2, 3)), 1.5)
    assert pullback(np.ones((2, 3))) == (NoTangent(), NoTangent(), 6.0)


def test_unique_values_reach_the_first_occurrence():
    x = np.array([2.0, 1.0, 2.0, 3.0])
    _, pullback = rrule(np.unique, x)
    np.testing.assert_array_equal(unthunk(pullback(np.array([10.0, 20.0, 30.0]))[1]),
                                  [20.0, 10.0, 0.0, 30.0])


def test_unique_index_outputs_have_no_tangent():
    x = np.array([2.0, 1.0, 3.0])
    y, pullback = rrule(np.unique, x, return_counts=True)
    assert pullback((ZeroTangent(), np.ones(3))) == (NoTangent(), ZeroTangent())
    _, dy = frule((NoTangent(), np.ones(3)), np.unique, x, return_counts=True)
    assert isinstance(dy, Tangent) and list(dy.keys()) == [0]


@pytest.mark.parametrize("f, args", [
    (np.where, (np.array([True, False]),)), (np.argmax, (np.ones(3),)),
    (np.nonzero, (np.ones(3),)), (np.zeros_like, (np.ones(3),)), (np.empty_like, (np.ones(3),)),
])
def test_no_tangent_functions(f, args):
    y, pullback = rrule(f, *args)
    assert all(t is NoTangent() for t in pullback(ZeroTangent()))
    assert frule((NoTangent(), np.ones(3)), f, *args)[1] is ZeroTangent()


@pytest.mark.parametrize("call", [
    lambda: rrule(np.take, np.ones(3), np.array([0]), out=np.ones(1)),
    lambda: rrule(np.clip, np.ones(3), 0.0, 1.0, out=np.ones(3)),
    lambda: rrule(np.choose, np.array([0]), [np.ones(1)], out=np.ones(1)),
    lambda: frule((NoTangent(), np.ones(3), NoTangent()), np.compress, np.array([True]),
                  np.ones(3), out=np.ones(1)),
])
def test_out_is_refused(call):
    with pytest.raises(TypeError, match="numpy.*out="):
        call()


# --- reading one element or column in a loop is linear ----------------------------------------

@pytest.mark.parametrize("read", [
    lambda x, i: np.take(x, i),
    lambda x, i: np.take(x, [i, i]).sum(),
], ids=["take", "take-repeated"])
def test_reading_in_a_loop_is_linear(read):
    import chainrules as cr
    from chainrules.testing import check_linear

    def make_case(n):
        x = normal(n)

        def call():
            gradient = cr.grad(lambda x: sum(read(x, i) * x[i] for i in range(0, n, 4)))(x)
            assert gradient.shape == x.shape
        return call

    check_linear(make_case, 300)


SHARED_A = np.array([3.0, 1.0, 3.0, 2.5, -1.0])
SHARED_B = np.array([2.5, 7.0, 1.0, 4.0])


@pytest.mark.parametrize("f", [np.intersect1d, np.union1d, np.setdiff1d, np.setxor1d])
def test_set_operations_with_shared_values(f):
    """Where both inputs (or two elements) hold a value, a perturbation keeps the output's
    shape only if it moves the copies together: along such a direction the derivative
    (central differences) is the gradient's total; and each value's cotangent goes to its
    first occurrence in the inputs laid end to end (the first input's, for a shared one)."""
    import chainrules as cr
    a, b = SHARED_A, SHARED_B
    w = np.arange(1.0, np.size(f(a, b)) + 1)

    def loss(a, b):
        return np.sum(w * f(a, b))

    ga, gb = cr.grad(loss, argnums=(0, 1))(a, b)
    pool = np.concatenate([a, b])
    lift = {value: 0.1 * (k + 1) for k, value in enumerate(np.unique(pool))}
    da, db = (np.array([lift[value] for value in x]) for x in (a, b))  # equal values together
    step = 1e-6
    slope = (loss(a + step * da, b + step * db) - loss(a - step * da, b - step * db)) / (2 * step)
    np.testing.assert_allclose(np.sum(ga * da) + np.sum(gb * db), slope, rtol=1e-8)
    expected = np.zeros(pool.shape)
    for value, weight in zip(f(a, b), w):
        expected[np.flatnonzero(pool == value)[0]] = weight
    np.testing.assert_array_equal(np.concatenate([ga, gb]), expected)
    _, tangent = cr.jvp(f, (a, b), (da, db))
    np.testing.assert_allclose(tangent, [lift[value] for value in f(a, b)])


def test_unique_values_with_repeats_and_nans():
    """np.unique_values (NumPy 2.0) keeps each NaN; a repeated value's cotangent goes to its
    first occurrence, each NaN's to a NaN of the input in order."""
    import chainrules as cr
    if not hasattr(np, "unique_values"):
        pytest.skip("np.unique_values: NumPy 2.0")
    x = np.array([2.0, np.nan, 1.0, 2.0, np.nan])
    y = np.unique_values(x)
    w = np.arange(1.0, y.size + 1)
    gradient = cr.grad(lambda x: np.sum(np.where(np.isnan(y), 0.0, w) * np.nan_to_num(
        np.unique_values(x))))(x)
    expected = np.zeros(5)
    for value, weight in zip(y, w):
        if not np.isnan(value):
            expected[np.flatnonzero(x == value)[0]] = weight
    np.testing.assert_array_equal(gradient, expected)

