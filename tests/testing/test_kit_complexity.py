"""check_linear: linear work passes and reports its numbers; quadratic time or memory fails."""

from __future__ import annotations

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


def quadratic_time_case(n):
    x = np.ones(n)

    def run():
        total = np.zeros(n)
        for i in range(n):  # a full copy per element, as + on closure tangents did
            total = total + x
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
    assert result.n == 20_000 and result.factor == 8
    assert result.time_ratio <= 12 and result.times[1] > result.times[0] > 0
    assert result.peaks[1] > result.peaks[0]
    assert "ratio" in str(result)


def test_quadratic_time_fails():
    with pytest.raises(AssertionError) as failure:
        check_linear(quadratic_time_case, 1000)
    message = str(failure.value)
    assert "check_linear(quadratic_time_case): superlinear growth: time grew" in message
    assert "from n=1000 to n=8000 (bound 12x" in message


def test_quadratic_memory_fails():
    with pytest.raises(AssertionError, match="tracemalloc peak memory grew"):
        check_linear(quadratic_memory_case, 300)


def test_bound_and_factor_are_parameters():
    result = check_linear(linear_case, 10_000, factor=4, bound=16.0, memory=False)
    assert result.factor == 4 and result.peaks == (0, 0) and result.bound == 16.0
