"""check_linear: linear work passes and reports its numbers; quadratic time, memory or counts
fail. The deliberately quadratic cases are sized so that their quadratic part dominates (a
whole-array copy per element costs more than the loop's own step), so they grow about 64x for
8x the input, far above the bound of 24 that linear work stays under even on a loaded machine.
"""

from __future__ import annotations

import weakref

import numpy as np
import pytest

from chainrules.testing import Complexity, check_linear


def linear_case(n):
    values = [float(v) for v in np.random.default_rng(0).standard_normal(n)]

    def run():
        total = 0.0
        for v in values:  # Python-level work proportional to n
            total += v * v
        return np.full(n, total)  # and memory proportional to n

    return run


WIDTH = 64  # elements of the accumulated array per element of the loop


def quadratic_time_case(n):
    x = np.ones(WIDTH * n)

    def run():
        total = np.zeros(WIDTH * n)
        for i in range(n):  # a full copy per element, as + on closure tangents did
            total = total + x
        return total

    return run


def in_place_case(n):
    x = np.ones(WIDTH * n)

    def run():
        total = np.zeros(WIDTH * n)
        for i in range(n):  # the same loop, accumulating in place: no copy per element
            total[i] += x[i]
        return total

    return run


def quadratic_memory_case(n):
    def run():
        # n buffers of n elements alive at once; np.empty costs O(1) time each
        return [np.empty(n) for _ in range(n)]

    return run


def test_linear_case_passes_and_reports():
    result = check_linear(linear_case, 20_000)
    assert isinstance(result, Complexity)
    assert result.n == 20_000 and result.factor == 8 and result.bound == 24
    assert result.time_ratio <= 24 and result.times[1] > result.times[0] > 0
    assert result.peaks[1] > result.peaks[0]
    assert result.counts is None and np.isnan(result.count_ratio)
    assert "CPU time" in str(result) and "ratio" in str(result)


def test_quadratic_time_fails():
    with pytest.raises(AssertionError) as failure:
        check_linear(quadratic_time_case, 100, memory=False)
    message = str(failure.value)
    assert "check_linear(quadratic_time_case): superlinear growth: time grew" in message
    assert "from n=100 to n=800 (bound 24x" in message


def test_the_same_loop_accumulating_in_place_passes():
    result = check_linear(in_place_case, 100, memory=False)
    assert result.time_ratio <= 24


def fresh_elements(step):
    """``step`` wrapped to count the elements of each array it returns that is a new array
    (not the one it returned last time): the elements an accumulation allocates and fills."""
    state = {"count": 0, "last": lambda: None}

    def counted(*args):
        result = step(*args)
        if state["last"]() is not result:
            state["count"] += result.size
            state["last"] = weakref.ref(result)
        return result

    return counted, state


def accumulation_case(add):
    def make_case(n):
        x = np.ones(WIDTH * n)

        def run():
            step, state = fresh_elements(add)
            total = np.zeros(WIDTH * n)
            for i in range(n):
                total = step(total, x)
            return state["count"]

        return run

    return make_case


def test_counts_separate_linear_from_quadratic_exactly():
    in_place = check_linear(accumulation_case(lambda total, x: np.add(total, x, out=total)), 50,
                            count=lambda run: run(), memory=False)
    assert in_place.counts == (WIDTH * 50, WIDTH * 400)  # one buffer, filled once
    assert np.isnan(in_place.times[0]) and "count 3200 at n=50" in str(in_place)
    with pytest.raises(AssertionError, match=r"the count grew 64\.0x from n=50 to n=400"):
        check_linear(accumulation_case(lambda total, x: total + x), 50,
                     count=lambda run: run(), memory=False)


def test_counts_of_a_linear_loop_pass():
    def make_case(n):
        return lambda: sum(1 for _ in range(3 * n + 7))

    result = check_linear(make_case, 1000, count=lambda run: run(), memory=False)
    assert result.counts == (3007, 24007) and result.count_ratio < 8.01


def test_quadratic_memory_fails():
    with pytest.raises(AssertionError, match="tracemalloc peak memory grew"):
        check_linear(quadratic_memory_case, 300)


def test_bound_and_factor_are_parameters():
    result = check_linear(linear_case, 10_000, factor=4, bound=16.0, memory=False)
    assert result.factor == 4 and result.peaks == (0, 0) and result.bound == 16.0
