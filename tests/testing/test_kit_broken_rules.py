"""The kit against deliberately broken rules: each must fail, with a message naming the problem.

The first two are ChainRules' defects from issue #863 (seed-cases.md):

1. a getindex rule whose in-place ``add`` adds the raw ``dy`` while its value is projected
   (ChainRules v1.74.8): caught only with seeds outside the output's space (complex for a real
   array, float64 for a float32 array), which ChainRulesTestUtils never generated;
2. a ``sum(f, xs)`` rule that adds the function's tangents with ``+``: every value right,
   quadratic cost, caught by `check_linear`.

Then a rule returning float64 for a float32 primal, and one with a wrong derivative. The
rules are defined here and handed to the kit with ``rule=``: nothing is registered globally.
"""

from __future__ import annotations

import operator
import weakref

import numpy as np
import pytest

from chainrules import (InplaceableThunk, NoTangent, ProjectTo, SparseCotangent, Tangent, Thunk,
                        ZeroTangent, accumulate, rrule_via_ad, unthunk)
from chainrules.core import AbstractZero
from chainrules.testing import TestConfig, check_linear, test_frule, test_rrule

getitem = operator.getitem


# --- 1. getindex: add! skips the projection (ChainRules v1.74.8) -----------------------------

def getindex_add_unprojected(x, index):
    """ChainRules' getindex: ``val`` is projected, ``add!`` adds the raw ``dy``."""
    project = ProjectTo(x)

    def pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return NoTangent(), ZeroTangent(), NoTangent()

        def value():
            dx = np.zeros(x.shape, np.result_type(x, dy))
            dx[index] = dy
            return project(dx)

        def add(buffer):
            buffer[index] += dy  # the defect: dy was never projected
            return buffer

        return NoTangent(), InplaceableThunk(add, Thunk(value), shape=x.shape,
                                             dtype=x.dtype), NoTangent()

    return x[index], pullback


def getindex_add_projected(x, index):
    """The same rule with ``add`` built from the projected ``dy``: what ours does."""
    project = ProjectTo(x)
    dtype = project.dtype

    def pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return NoTangent(), ZeroTangent(), NoTangent()
        projected = np.asarray(dy).real.astype(dtype) if dtype.kind != "c" else \
            np.asarray(dy).astype(dtype)

        def value():
            dx = np.zeros(x.shape, dtype)
            dx[index] = projected
            return dx

        def add(buffer):
            buffer[index] += projected
            return buffer

        return NoTangent(), InplaceableThunk(add, Thunk(value), shape=x.shape,
                                             dtype=dtype), NoTangent()

    return x[index], pullback


def test_unprojected_add_fails_with_complex_seeds_into_real_arrays():
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(AssertionError) as failure:
        test_rrule(getitem, x, 0, rule=getindex_add_unprojected)
    message = str(failure.value)
    assert "test_rrule(_operator.getitem) with rule" in message
    assert "getindex_add_unprojected" in message
    assert "in-place accumulation disagrees with the eager sum" in message
    assert "argument 1 (a)" in message
    assert "complex128 output tangent" in message
    assert "InplaceableThunk" in message and "expected (eager sum)" in message


def test_unprojected_add_fails_with_float64_seeds_into_float32_arrays():
    x32 = np.array([1, 2, 3], np.float32)
    # The seed case: cotangent 0.1 for x32[1], accumulated into a float64 buffer.
    with pytest.raises(AssertionError, match="in-place accumulation disagrees") as failure:
        test_rrule(getitem, x32, 1, output_tangent=0.1, rule=getindex_add_unprojected)
    assert "a float64 array (owned)" in str(failure.value)


def test_unprojected_add_passes_with_seeds_of_the_outputs_own_type():
    """The blind spot: seeded only in the output's own space (as ChainRulesTestUtils does),
    the defective rule passes every check."""
    test_rrule(getitem, np.array([1.0, 2.0, 3.0]), 0, rule=getindex_add_unprojected,
               check_seeds=False)
    test_rrule(getitem, np.array([1, 2, 3], np.float32), 1, rule=getindex_add_unprojected,
               check_seeds=False)


@pytest.mark.parametrize("x", [np.array([1.0, 2.0, 3.0]), np.array([1, 2, 3], np.float32),
                               np.array([1 + 1j, 2, 3])])
@pytest.mark.parametrize("index", [0, -1, slice(0, 2)])
def test_projected_add_passes(x, index):
    test_rrule(getitem, x, index, rule=getindex_add_projected)


def test_registered_getindex_passes_the_same_checks():
    x = np.array([1.0, 2.0, 3.0])
    test_rrule(getitem, x, 0, output_tangent=1 + 2j)
    test_rrule(getitem, x.astype(np.float32), 1, output_tangent=0.1)


# Structural tangents holding in-place addable cotangents: a closure reading x[i], whose
# tangent is Tangent(function, x=<cotangent of x[i]>), accumulated field by field.

def reader_of(x, getindex_rule):
    def read(i):
        return x[i]

    def read_rule(i):
        y, pullback = getindex_rule(x, i)

        def read_pullback(dy):
            _, dx, _ = pullback(dy)
            if isinstance(dx, AbstractZero):
                return dx, NoTangent()
            return Tangent(type(read), {"x": dx}), NoTangent()

        return y, read_pullback

    return read, read_rule


def test_structural_tangent_holding_an_unprojected_add_fails():
    read, rule = reader_of(np.array([1.0, 2.0, 3.0], np.float32), getindex_add_unprojected)
    with pytest.raises(AssertionError) as failure:
        test_rrule(read, 1, rule=rule)
    message = str(failure.value)
    assert "the cotangent of the function itself (cotangent 0)" in message
    assert "in-place accumulation disagrees with the eager sum" in message
    assert "a Tangent with" in message  # a structural accumulator


def test_structural_tangent_holding_a_projected_add_passes():
    read, rule = reader_of(np.array([1.0, 2.0, 3.0], np.float32), getindex_add_projected)
    test_rrule(read, 1, rule=rule)
    read, rule = reader_of(np.array([1.0, 2.0, 3.0]), getitem_rule)
    test_rrule(read, -1, rule=rule)


def getitem_rule(x, index):
    """The registered getitem rule (sparse cotangents)."""
    from chainrules import rrule

    return rrule(getitem, x, index)


# --- 2. sum(f, xs) accumulating the function's tangents with + -------------------------------

def sum_map(f, xs):
    """``sum(f(x) for x in xs)``: a higher-order function whose rule calls back into AD."""
    total = 0.0
    for x in xs:
        total = total + f(x)
    return total


def _sum_map_rule(add):
    def rule(config, f, xs):
        calls = [rrule_via_ad(config, f, x) for x in xs]
        total = 0.0
        for y, _ in calls:
            total = total + y

        def sum_map_pullback(dy):
            if isinstance(unthunk(dy), AbstractZero):
                return NoTangent(), ZeroTangent(), NoTangent()
            df = ZeroTangent()
            for _, pullback in calls:
                df = add(df, pullback(dy)[0])
            return NoTangent(), df, NoTangent()

        return total, sum_map_pullback

    return rule


sum_map_with_plus = _sum_map_rule(lambda df, t: df + t)                    # ChainRules' defect
sum_map_accumulating = _sum_map_rule(lambda df, t: accumulate(df, t, owned=True))  # the fix


def row_reader(x):
    """``i -> x[i] @ x[i]`` (a closure reading one row of the matrix it captures) and its
    rule, given to the config the kit passes to ``sum_map``'s rule (as an AD would find it)."""
    def read(i):
        return x[i] @ x[i]

    def read_rule(i):
        row = x[i]

        def read_pullback(dy):
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return ZeroTangent(), NoTangent()
            cotangent = SparseCotangent(i, 2 * row * dy, x.shape, x.dtype)
            return Tangent(type(read), {"x": cotangent}), NoTangent()

        return row @ row, read_pullback

    return read, TestConfig(rules={read: read_rule})


@pytest.mark.parametrize("rule", [sum_map_with_plus, sum_map_accumulating])
def test_sum_map_values_are_right_either_way(rule):
    """Value checks cannot tell the two apart: both give the right gradient."""
    x = np.array([[0.5, -1.0], [2.0, 0.25], [1.5, -0.75]])
    read, config = row_reader(x)
    test_rrule(sum_map, read, range(len(x)), rule=rule, rule_takes_config=True, config=config)


def _gradient_case(rule, columns=32):
    def make_case(n):
        x = np.random.default_rng(0).standard_normal((n, columns))
        read, config = row_reader(x)

        def gradient():
            _, pullback = rule(config, read, range(n))
            return pullback(1.0)[1]

        return gradient

    return make_case


def _elements_case(add):
    """The gradient of ``sum_map(read, range(n))`` with ``add``, counting the elements of each
    new array that holds the running sum: what the accumulation allocates and fills."""
    def make_case(n):
        x = np.random.default_rng(0).standard_normal((n, 32))
        read, config = row_reader(x)

        def elements():
            state = {"count": 0, "last": lambda: None}

            def counted(df, t):
                df = add(df, t)
                field = df.x if isinstance(df, Tangent) else None
                if isinstance(field, np.ndarray) and state["last"]() is not field:
                    state["count"] += field.size
                    state["last"] = weakref.ref(field)
                return df

            _, pullback = _sum_map_rule(counted)(config, read, range(n))
            np.testing.assert_array_equal(pullback(1.0)[1].x, 2 * x)
            return state["count"]

        return elements

    return make_case


def test_sum_map_with_plus_is_quadratic():
    with pytest.raises(AssertionError) as failure:
        check_linear(_elements_case(lambda df, t: df + t), 100, name="sum_map with +",
                     count=lambda run: run(), memory=False)
    message = str(failure.value)
    # n - 1 new n x 32 arrays: 99 * 3200 elements, then 799 * 25600: 64.6x.
    assert "check_linear(sum_map with +): superlinear growth: the count grew 64.6x" in message
    assert "n=100" in message and "n=800" in message


def test_sum_map_with_plus_is_quadratic_in_time():
    """Wide rows, so that the copy per element dominates: the time ratio is near 64 too."""
    with pytest.raises(AssertionError) as failure:
        check_linear(_gradient_case(sum_map_with_plus, columns=4096), 30,
                     name="sum_map with +", memory=False)
    assert "check_linear(sum_map with +): superlinear growth: time grew" in str(failure.value)


def test_sum_map_accumulating_is_linear():
    counted = check_linear(_elements_case(lambda df, t: accumulate(df, t, owned=True)), 100,
                           count=lambda run: run(), memory=False, name="sum_map")
    assert counted.counts == (3200, 25600)  # one n x 32 buffer
    result = check_linear(_gradient_case(sum_map_accumulating), 500, name="sum_map")
    assert result.time_ratio <= 24
    assert result.times[0] > 0 and result.peaks[1] > 0


def test_sum_map_gradient_is_right():
    x = np.array([[0.5, -1.0], [2.0, 0.25]])
    read, config = row_reader(x)
    df = sum_map_accumulating(config, read, range(2))[1](1.0)[1]
    np.testing.assert_array_equal(df.x, 2 * x)


# --- 3. float64 cotangent for a float32 primal -------------------------------------------------

def exp_float64_cotangent(x):
    y = np.exp(x)

    def pullback(dy):
        return NoTangent(), np.asarray(unthunk(dy), np.float64) * np.exp(x.astype(np.float64))

    return y, pullback


def test_float64_cotangent_for_float32_primal_fails():
    x32 = np.array([0.5, 1.5], np.float32)
    with pytest.raises(AssertionError) as failure:
        test_rrule(np.exp, x32, rule=exp_float64_cotangent, check_seeds=False)
    message = str(failure.value)
    assert "test_rrule(numpy.exp) with rule" in message
    assert "argument 1 (x): cotangent has dtype float64, expected the primal's tangent dtype " \
           "float32" in message


# --- 4. a wrong derivative ---------------------------------------------------------------------

def tanh_wrong_derivative(x):
    y = np.tanh(x)
    return y, lambda dy: (NoTangent(), unthunk(dy) * (1 + y * y))  # should be 1 - y*y


def test_wrong_derivative_fails():
    with pytest.raises(AssertionError) as failure:
        test_rrule(np.tanh, np.array([0.3, -0.8]), rule=tanh_wrong_derivative)
    message = str(failure.value)
    assert "the cotangent of argument 1 (x) does not match finite differences" in message
    assert "expected (finite differences, projected)" in message and "got (pullback)" in message
    assert "max abs error" in message and "max rel error" in message


def tanh_wrong_frule(tangents, x):
    y = np.tanh(x)
    return y, (1 + y * y) * unthunk(tangents[1])


def test_wrong_forward_derivative_fails():
    with pytest.raises(AssertionError, match="the output tangent does not match finite "
                                             "differences"):
        test_frule(np.tanh, np.array([0.3, -0.8]), rule=tanh_wrong_frule)
