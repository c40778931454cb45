"""scipy.stats' binned statistics through the engine: binned_statistic, binned_statistic_2d and
binned_statistic_dd of traced values, for every named statistic and a callable, one set of
values or several, against central finite differences; the bins come from the plain sample.
SciPy fills an array of its own (src/chainrules/ad/dispatch/writes.py follows the function)
and reshapes it with a shape held in an integer array (x.reshape(array), also transpose)."""

from __future__ import annotations

import numpy as np
import pytest

stats = pytest.importorskip("scipy.stats")

import chainrules as cr  # noqa: E402
from tests.ad.finite_differences import numerical_gradient  # noqa: E402

CASES: list = []  # no rule of its own: SciPy's Python code, followed by the engine

RNG = np.random.default_rng(3)
X, Y = RNG.uniform(size=40), RNG.uniform(size=40)
VALUES = np.cos(7 * X) + Y
STATISTICS = ["mean", "sum", "std", "median", "min", "max", "count"]


def _sum_of_squares(array):
    return np.sum(array ** 2)


def _check(loss):
    np.testing.assert_allclose(cr.grad(loss)(VALUES), numerical_gradient(loss, VALUES),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("statistic", STATISTICS + [_sum_of_squares],
                         ids=STATISTICS + ["callable"])
def test_binned_statistic_in_the_values(statistic):
    # before: "a traced value was converted to a plain NumPy array" at `result[vv, a] = ...`
    def loss(v):
        found = stats.binned_statistic(X, v, statistic, bins=5).statistic
        return np.sum(np.nan_to_num(found) ** 2)

    _check(loss)


@pytest.mark.parametrize("statistic", ["mean", "std", "median", "max"])
def test_binned_statistic_2d_and_several_values(statistic):
    def in_two_dimensions(v):
        return np.sum(np.nan_to_num(stats.binned_statistic_2d(X, Y, v, statistic,
                                                              bins=3).statistic) ** 2)

    def several(v):
        found = stats.binned_statistic_dd(np.stack([X, Y], axis=1), [v, v ** 2], statistic,
                                          bins=[2, 3]).statistic
        return np.sum(np.nan_to_num(found) ** 2)

    _check(in_two_dimensions)
    _check(several)


def test_reshape_and_transpose_take_a_shape_in_an_integer_array():
    # before: TypeError "only integer scalar arrays can be converted to a scalar index"
    def loss(x):
        return np.sum(x.reshape(np.array([2, 3])).transpose(np.array([1, 0])) *
                      np.arange(6.0).reshape(3, 2))

    np.testing.assert_allclose(cr.grad(loss)(np.ones(6)), [0.0, 2.0, 4.0, 1.0, 3.0, 5.0])
