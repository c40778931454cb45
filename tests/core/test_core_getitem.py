"""The getitem rule's cotangent: the acceptance cases of seed-cases.md section 1, every index
kind against a dense closed form (np.add.at into zeros), and the O(index) cost of add_into.

Values are compared with the eager sum ``buffer + unthunk(dx)`` or with closed forms built
here with NumPy alone, never with the code's own output.
"""

from __future__ import annotations

import operator
import time
import tracemalloc

import numpy as np
import pytest

from chainrules.core import (NoTangent, ProjectionError, SparseCotangent, ZeroTangent,
                             accumulate, frule, owned_copy, rrule, unthunk)
from chainrules.rules.numpy import indexing  # noqa: F401  (registers the getitem rule)


def getitem_cotangent(x, index, dy):
    """The cotangent for ``x`` of ``y = x[index]`` given the output cotangent ``dy``."""
    y, pullback = rrule(operator.getitem, x, index)
    cotangents = pullback(dy)
    assert len(cotangents) == 3
    assert cotangents[0] is NoTangent() and cotangents[2] is NoTangent()
    return cotangents[1]


def accumulate_both_ways(buffer, dx):
    """``accumulate`` into an unowned ``buffer`` and into an owned copy of it.

    Checks that the unowned buffer is not mutated and that the owned one is updated in place
    whenever the sum has the buffer's own dtype; returns both results.
    """
    before = buffer.copy()
    unowned = accumulate(buffer, dx)
    np.testing.assert_array_equal(buffer, before)
    assert buffer.dtype == before.dtype

    owned = owned_copy(buffer)
    assert not np.shares_memory(owned, buffer)
    result = accumulate(owned, dx, owned=True)
    if np.promote_types(owned.dtype, unthunk(dx).dtype) == owned.dtype:
        assert result is owned
    return unowned, result


def assert_exactly(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert np.array_equal(got, want, equal_nan=True), (got, want)


# ---------------------------------------------------------------------------------------------
# seed-cases.md, section 1
# ---------------------------------------------------------------------------------------------

def test_seed_complex_cotangent_for_real_array_index_0():
    x = np.array([1.0, 2.0, 3.0])
    dx = getitem_cotangent(x, 0, 1.0 + 2.0j)

    value = unthunk(dx)
    assert value.dtype == np.float64
    assert_exactly(value, np.array([1.0, 0.0, 0.0]))

    for result in accumulate_both_ways(np.zeros(3), dx):   # no InexactError analogue
        assert_exactly(result, np.array([1.0, 0.0, 0.0]))
        assert_exactly(result, np.zeros(3) + unthunk(dx))

    for result in accumulate_both_ways(np.zeros(3, complex), dx):
        assert_exactly(result, np.array([1.0 + 0.0j, 0.0, 0.0]))   # imaginary part projected away
        assert result.imag.tolist() == [0.0, 0.0, 0.0]


def test_seed_imaginary_cotangent_for_real_slice():
    x = np.array([1.0, 2.0, 3.0])
    dx = getitem_cotangent(x, slice(0, 2), np.array([1.0j, 2.0j]))

    assert_exactly(unthunk(dx), np.zeros(3))
    for result in accumulate_both_ways(np.zeros(3), dx):
        assert_exactly(result, np.zeros(3))


@pytest.mark.parametrize("dy", [0.1, np.float64(0.1), np.array(0.1)],
                         ids=["python-float", "float64-scalar", "float64-0d"])
def test_seed_float32_array_keeps_float32(dy):
    x32 = np.array([1, 2, 3], np.float32)
    dx = getitem_cotangent(x32, 1, dy)

    value = unthunk(dx)
    assert value.dtype == np.float32
    assert value[1] == np.float32(0.1)
    assert_exactly(value, np.array([0, np.float32(0.1), 0], np.float32))

    for result in accumulate_both_ways(np.zeros(3), dx):
        assert result.dtype == np.float64
        assert result[1] == float(np.float32(0.1))
        assert result[1] != 0.1   # the float32 value, widened, not the float64 dy
        assert_exactly(result, np.zeros(3) + unthunk(dx))

    for result in accumulate_both_ways(np.zeros(3, np.float32), dx):   # float32 stays float32
        assert_exactly(result, np.array([0, np.float32(0.1), 0], np.float32))


def test_seed_scalar_index_cotangent_is_sparse_and_projected_before_it_is_built():
    x32 = np.array([1, 2, 3], np.float32)
    dx = getitem_cotangent(x32, 1, 0.1)
    assert isinstance(dx, SparseCotangent)
    assert dx.dtype == np.float32 and np.asarray(dx.values).dtype == np.float32

    buffer = owned_copy(np.zeros(3))
    result = accumulate(buffer, dx, owned=True)
    assert result is buffer
    assert not dx.is_computed   # added in place, its dense value never built

    x = np.array([1.0, 2.0, 3.0])
    dx = getitem_cotangent(x, 0, 1.0 + 2.0j)
    assert np.asarray(dx.values).dtype == np.float64   # projected on construction


def test_getitem_of_integer_array_and_zero_cotangent():
    assert getitem_cotangent(np.arange(3), 1, 1.0) is NoTangent()
    dx = getitem_cotangent(np.arange(3.0), 1, ZeroTangent())
    assert isinstance(dx, type(ZeroTangent()))


def test_getitem_pullback_rejects_a_cotangent_of_the_wrong_shape():
    _, pullback = rrule(operator.getitem, np.zeros((3, 4)), 1)
    with pytest.raises(ProjectionError, match=r"\(4,\).*\(3,\)"):
        pullback(np.ones(3))


# ---------------------------------------------------------------------------------------------
# Every index kind against a dense closed form
# ---------------------------------------------------------------------------------------------

def as_numpy_reads_it(index):
    """Lists in an index become arrays (as NumPy reads them)."""
    if isinstance(index, tuple):
        return tuple(np.asarray(p) if isinstance(p, list) else p for p in index)
    return np.asarray(index) if isinstance(index, list) else index


def closed_form(shape, index, dy, dtype):
    """The cotangent of ``x[index]``: ``np.add.at`` of the projected ``dy`` into zeros.

    Positions are found by indexing an array of flat positions with the same index, so repeated
    integer indices are summed, in index order.
    """
    index = as_numpy_reads_it(index)
    positions = np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape)[index]
    dy = np.asarray(dy)
    if dy.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        dy = dy.real
    values = np.broadcast_to(dy.astype(dtype), np.shape(positions))
    out = np.zeros(int(np.prod(shape)), dtype)
    np.add.at(out, np.ravel(positions), values.ravel())
    return out.reshape(shape)


MASK_1D = np.array([True, False, True, True, False, False])
MASK_2D = np.arange(20).reshape(4, 5) % 3 == 0
INDEX_CASES = [
    ((6,), 2),
    ((6,), -1),
    ((6,), np.int64(3)),
    ((6,), np.array(4)),                                  # 0-d integer array
    ((6,), slice(1, 5)),
    ((6,), slice(None, None, -2)),
    ((6,), slice(10, 20)),                                # empty selection
    ((6,), Ellipsis),
    ((6,), None),
    ((6,), np.array([0, 0, 2, -6, 5, 5, 5])),            # repeats, negative aliasing positive
    ((6,), [1, 1, 3]),                                    # a list, read as an array
    ((6,), np.array([], dtype=np.intp)),
    ((6,), MASK_1D),
    ((4, 5), 1),
    ((4, 5), (1, -2)),
    ((4, 5), (slice(None), 3)),
    ((4, 5), (Ellipsis, None)),
    ((4, 5), (None, 1)),
    ((4, 5), (Ellipsis, 2)),
    ((4, 5), MASK_2D),
    ((4, 5), (np.array([True, False, True, True]), 2)),
    ((4, 5), (np.array([0, 2, 0]), slice(1, 4))),        # int array (repeats) and slice
    ((4, 5), (slice(None), np.array([[0, 1], [1, 1]]))),  # 2-d int array
    ((4, 5), (np.array([0, 0, 3]), np.array([1, 1, -1]))),
    ((4, 5), (np.array([[0], [2]]), np.array([1, 1, 4]))),  # broadcast advanced indices
    ((4, 5), (1, np.array([4, 4, 0]))),
    ((4, 5), (Ellipsis, np.array([2, 2]))),
]


@pytest.mark.parametrize("x_dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("dy_dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape, index", INDEX_CASES,
                         ids=[f"{shape}-{index!r}".replace("\n", "") for shape, index
                              in INDEX_CASES])
def test_getitem_cotangent_equals_closed_form(shape, index, x_dtype, dy_dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(x_dtype)
    y_shape = np.shape(x[as_numpy_reads_it(index)])
    dy = rng.standard_normal(y_shape).astype(dy_dtype)
    if np.dtype(dy_dtype).kind == "c":
        dy = dy + 1j * rng.standard_normal(y_shape)
    if dy.ndim == 0:
        dy = dy[()]

    dx = getitem_cotangent(x, index, dy)
    assert isinstance(dx, SparseCotangent)
    want = closed_form(shape, index, dy, x_dtype)
    assert_exactly(unthunk(dx), want)
    assert_exactly(dx.dense(), want)

    for buffer_dtype in (np.float32, np.float64, np.complex128, np.int64):
        buffer = (rng.standard_normal(shape) * 4).astype(buffer_dtype)
        for result in accumulate_both_ways(buffer, dx):
            assert_exactly(result, buffer + want)
        if np.promote_types(buffer_dtype, x_dtype) == buffer_dtype:
            target = buffer.copy()
            assert dx.add_into(target) is target
            assert_exactly(target, buffer + want)


@pytest.mark.parametrize("shape, index", INDEX_CASES)
def test_getitem_frule_is_the_indexed_tangent(shape, index):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape)
    dx = rng.standard_normal(shape)
    norm = as_numpy_reads_it(index)
    y, dy = frule((NoTangent(), dx, NoTangent()), operator.getitem, x, index)
    assert_exactly(y, x[norm])
    assert_exactly(dy, dx[norm])


# ---------------------------------------------------------------------------------------------
# add_into costs O(size of the index), not O(size of the buffer)
# ---------------------------------------------------------------------------------------------

def best_time(function, repeats=7, calls=300):
    function()   # warm up (caches, first-use allocations)
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()  # CPU time: waiting for other processes is not counted
        for _ in range(calls):
            function()
        best = min(best, time.process_time() - start)
    return best


def peak_bytes(function):
    """The tracemalloc peak of one call: load cannot change it."""
    function()
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("index", [5, -3, (np.array([3, 3, 7]),)],
                         ids=["int", "negative-int", "int-array-with-repeats"])
def test_add_into_costs_o_index_not_o_buffer(index):
    timings = []
    for n in (10**4, 10**6):
        x = np.zeros(n)
        buffer = np.zeros(n)
        _, pullback = rrule(operator.getitem, x, index)
        dy = 1.0 if np.isscalar(x[index]) else np.ones(np.shape(x[index]))

        def step():
            pullback(dy)[1].add_into(buffer)

        timings.append(best_time(step))
        assert peak_bytes(step) < 64 * 1024  # never a dense array of the buffer's size
        assert buffer[index if not isinstance(index, tuple) else 3] != 0.0
    small, large = timings
    assert large / small < 20, f"add_into: {small:.2e}s at n=1e4, {large:.2e}s at n=1e6"


def test_accumulating_scalar_index_cotangent_into_owned_buffer_is_o_1():
    timings = []
    for n in (10**4, 10**6):
        x = np.zeros(n)
        buffer = owned_copy(np.zeros(n))
        _, pullback = rrule(operator.getitem, x, 7)

        def step():
            assert accumulate(buffer, pullback(1.0)[1], owned=True) is buffer

        timings.append(best_time(step))
        assert peak_bytes(step) < 64 * 1024  # never a dense array of the buffer's size
    small, large = timings
    assert large / small < 20, f"accumulate: {small:.2e}s at n=1e4, {large:.2e}s at n=1e6"
