"""The ufunc methods on traced values (chainrules.ad.dispatch.ufunc_methods): ``outer`` of every
binary ufunc, ``reduceat`` of every ufunc whose ``reduce`` is followed, ``reduce`` with
``keepdims`` and several axes, ``np.fmax.reduce``; each value against NumPy's, each gradient
against central differences at orders 1 and 2, and jvp against the same differences. Before,
each raised "np.<ufunc>.<method> is not supported on traced values"."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr

from .finite_differences import numerical_gradient
from .test_idioms import numerical_hessian

M = np.array([[0.7, 1.3, 2.1, 0.9], [1.9, 0.4, 1.1, 1.6], [0.3, 0.8, 1.6, 1.2]])


def _weighted(y):
    """A loss that weighs each output differently (a wrong permutation cannot pass)."""
    return np.sum(y ** 2 * np.arange(1.0, 1.0 + np.size(y)).reshape(np.shape(y)))


def _check(call, m=M):
    """``call``'s value against NumPy's; the weighted loss' gradient, Hessian and a jvp
    against central differences."""
    np.testing.assert_allclose(cr.vjp(call, m)[0], call(m), rtol=1e-13)

    def loss(a):
        return _weighted(call(a))

    np.testing.assert_allclose(cr.grad(loss)(m), numerical_gradient(loss, m), rtol=1e-6,
                               atol=1e-8)
    flat = lambda v: loss(v.reshape(m.shape))  # noqa: E731
    np.testing.assert_allclose(cr.hessian(flat)(m.ravel()), numerical_hessian(flat, m.ravel()),
                               rtol=1e-4, atol=1e-5)
    direction = np.cos(np.arange(m.size)).reshape(m.shape)
    step = 1e-6
    expected = (call(m + step * direction) - call(m - step * direction)) / (2 * step)
    np.testing.assert_allclose(cr.jvp(call, (m,), (direction,))[1], expected, rtol=1e-6,
                               atol=1e-8)


OUTER = [np.add, np.subtract, np.multiply, np.divide, np.hypot, np.arctan2, np.maximum,
         np.power, np.logaddexp]


@pytest.mark.parametrize("ufunc", OUTER, ids=lambda u: u.__name__)
def test_outer_of_binary_ufuncs(ufunc):
    # pairwise differences, products, distances: np.subtract.outer(x, y) as scientists write it
    _check(lambda a: ufunc.outer(a[0], a[1:, :2]))


def test_outer_with_a_plain_argument_and_of_a_comparison():
    x = np.array([0.0, 1.0, 3.0])
    # sum_ij (x_i - x_j)^2 = 2 n sum x^2 - 2 (sum x)^2: gradient 4 n x - 4 sum x
    np.testing.assert_allclose(cr.grad(lambda v: np.sum(np.subtract.outer(v, v) ** 2))(x),
                               4 * 3 * x - 4 * np.sum(x))
    grid = np.array([1.0, 2.0])
    np.testing.assert_allclose(cr.grad(lambda v: np.sum(np.multiply.outer(grid, v)))(x),
                               np.full(3, 3.0))
    # a comparison's outer: NumPy's booleans, no gradient through them
    mask = cr.vjp(lambda v: np.less.outer(v, v), x)[0]
    np.testing.assert_array_equal(mask, np.less.outer(x, x))
    # sum_ij [x_i < x_j] v_j: v_j counted once per smaller x_i
    np.testing.assert_allclose(cr.grad(lambda v: np.sum(np.less.outer(v, v) * v))(x),
                               [0.0, 1.0, 2.0])


def test_outer_refuses_options_and_unary_ufuncs_as_numpy_does():
    with pytest.raises(cr.TracingError, match="np.add.outer: the option"):
        cr.grad(lambda v: np.sum(np.add.outer(v, v, dtype=np.float32)))(np.ones(2))
    with pytest.raises(ValueError, match="binary"):
        cr.grad(lambda v: np.sum(np.exp.outer(v, v)))(np.ones(2))


REDUCEAT = [np.multiply, np.maximum, np.minimum, np.subtract, np.divide, np.hypot,
            np.logaddexp, np.fmax]


@pytest.mark.parametrize("ufunc", REDUCEAT, ids=lambda u: u.__name__)
@pytest.mark.parametrize("indices, axis", [([0, 2, 3], 1), ([2, 0, 1], 0), ([1, 1, 3, 0], -1)])
def test_reduceat_of_every_followed_reduce(ufunc, indices, axis):
    _check(lambda a: ufunc.reduceat(a, indices, axis=axis))


def test_reduceat_errors_are_numpys():
    with pytest.raises(IndexError):
        cr.grad(lambda v: np.sum(np.multiply.reduceat(v, [0, 7])))(np.ones(3))
    with pytest.raises(cr.TracingError, match="np.arctan2.reduceat"):
        cr.grad(lambda v: np.sum(np.arctan2.reduceat(v, [0, 1])))(np.ones(3))


@pytest.mark.parametrize("ufunc", [np.subtract, np.logaddexp, np.fmax, np.fmin, np.hypot],
                         ids=lambda u: u.__name__)
@pytest.mark.parametrize("options", [{"axis": 1, "keepdims": True}, {"axis": (0,)},
                                     {"axis": -1}, {"axis": None}, {"axis": (0, 1)}],
                         ids=str)
def test_reduce_options_as_numpy_takes_them(ufunc, options):
    if options.get("axis", 0) in (None, (0, 1)) and ufunc is np.subtract:
        with pytest.raises(ValueError, match="reorderable"):  # NumPy's own refusal
            ufunc.reduce(M, **options)
        with pytest.raises(ValueError, match="reorderable"):
            cr.grad(lambda a: np.sum(ufunc.reduce(a, **options)))(M)
        return
    _check(lambda a: ufunc.reduce(a, **options))


def test_fmax_reduce_ignores_nan_and_a_one_row_reduce_is_the_row():
    x = np.array([1.0, np.nan, 3.0, 2.0])
    y, pullback = cr.vjp(np.fmax.reduce, x)
    assert y == 3.0
    np.testing.assert_array_equal(pullback(1.0)[0], [0.0, 0.0, 1.0, 0.0])
    np.testing.assert_allclose(cr.grad(lambda v: np.sum(np.subtract.reduce(v, axis=()) ** 2))(
        M), 2 * M)


def test_power_and_arctan2_reductions_are_refused_with_the_loop_to_write():
    # NumPy's own value is not the in-order reduction (its first to the power of its last):
    b = np.array([0.6, 1.3, 0.9, 1.2])
    assert not np.isclose(np.power.reduce(b), ((0.6 ** 1.3) ** 0.9) ** 1.2)
    for ufunc in (np.power, np.arctan2):
        for method in ("reduce", "accumulate"):
            with pytest.raises(cr.TracingError, match=f"np.{ufunc.__name__}.{method}.*"
                                                      f"Write the loop"):
                cr.grad(lambda v: np.sum(getattr(ufunc, method)(v)))(b)


def test_an_unsupported_option_names_itself():
    with pytest.raises(cr.TracingError, match="np.subtract.reduce: the option.*initial"):
        cr.grad(lambda v: np.subtract.reduce(v, initial=1.0))(np.ones(3))
