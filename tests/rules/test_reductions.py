"""Rules for reductions (chainrules.rules.numpy.reductions): every registered function checked by the
rule-testing kit against finite differences, then closed forms for ties, zeros, lazy cotangents
and refused options."""

from __future__ import annotations

import numpy as np
import pytest

from chainrules import (InplaceableThunk, NoTangent, ZeroTangent, accumulate, frule, rrule,
                        unthunk)
from chainrules.core import ProjectionError
from chainrules.rules.numpy.reductions import add_reduceat
from chainrules.testing import case, check_case, fd_jvp, fd_vjp, rand_primal
from tests.numpy_features import accepted, running

_rng = np.random.default_rng(20240601)
F64, F32, C128 = np.float64, np.float32, np.complex128


def normal(*shape, dtype=F64):
    """Random values of ``dtype`` (complex ones have a random imaginary part too)."""
    return rand_primal("array", _rng, dtype, shape)


def distinct(*shape, dtype=F64):
    """Values 0.37 apart and away from 0: sorting, extrema and |x| don't change under the
    finite-difference steps."""
    size = int(np.prod(shape))
    x = (_rng.permutation(size) - size // 2) * 0.37 + 0.15
    if np.dtype(dtype).kind == "c":
        x = x + 1j * normal(size)
    return x.reshape(shape).astype(dtype)


def positive(*shape, dtype=F64):
    return _rng.uniform(0.5, 2.0, shape).astype(dtype)


def with_nans(*shape):
    x = distinct(*shape)
    x.flat[[1, 4]] = np.nan
    return x


AXES = [{}, dict(axis=0), dict(axis=-1), dict(axis=(0, 2)), dict(axis=1, keepdims=True),
        dict(axis=None, keepdims=True)]
FEW_AXES = [{}, dict(axis=0), dict(axis=(-1, 0), keepdims=True)]
TIES = np.array([[1.0, 3.0, 3.0], [2.0, -1.0, -1.0]])          # two-way ties in each row
ZEROS = np.array([[2.0, 0.0, 3.0, 1.5], [0.0, 1.5, 0.0, 2.0], [1.0, 2.0, 3.0, 0.5]])

VECTOR_ORDS = [None, 1, 2, 0, 3, 0.5, 3.0, -1.5]
NAN_REDUCTIONS = [np.nansum, np.nanmean, np.nanmax, np.nanmin, np.nanprod, np.nanvar, np.nanstd]
MATRIX_ORDS = ["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]
MATRIX_NORM = getattr(np.linalg, "matrix_norm", None)  # NumPy 2.0
CUMULATIVE_PROD = getattr(np, "cumulative_prod", None)  # NumPy 2.1

CASES = [
    # sum and mean: every form of axis, float64, float32, complex; positional axis; lists
    *[case(f, normal(2, 3, 4, dtype=dtype), **axes) for f in (np.sum, np.mean)
      for dtype in (F64, F32, C128) for axes in AXES],
    case(np.sum, normal(2, 3), 1),
    case(np.mean, normal(2, 3), -1, None, None, True),
    case(np.sum, [1.0, 2.0, 3.0]),
    case(np.sum, normal(4, dtype=F32), dtype=F64),
    # prod: one zero and several zeros in a slice
    *[case(np.prod, normal(2, 3, 4), **axes) for axes in AXES],
    *[case(np.prod, x, **axes) for x in (normal(2, 3, dtype=F32), normal(2, 3, dtype=C128))
      for axes in FEW_AXES],
    *[case(np.prod, x, **axes) for x in (ZEROS, ZEROS.astype(C128))
      for axes in ({}, dict(axis=0), dict(axis=1), dict(axis=1, keepdims=True))],
    # extrema: distinct values, and two-way ties (split evenly)
    *[case(f, x, **axes) for f in (np.max, np.min, np.amax, np.amin)
      for x in (distinct(2, 3, 4), distinct(2, 3, 4, dtype=F32)) for axes in AXES[:4]],
    *[case(f, TIES, **axes) for f in (np.max, np.min, np.amax, np.amin, np.ptp)
      for axes in ({}, dict(axis=1), dict(axis=1, keepdims=True))],
    case(np.max, distinct(2, 3, dtype=C128), axis=1),
    # initial=: a constant summed, multiplied, or compared (where it is the extremum, no
    # element gets the cotangent: it is in some rows of distinct(3, 4) / 4 - 1, not others)
    case(np.sum, normal(2, 3), axis=1, initial=2.5),
    case(np.prod, normal(2, 3, dtype=C128), axis=0, initial=-1.5),
    case(np.nanprod, normal(3, 2), initial=3.0),
    *[case(f, distinct(3, 4) / 4 - 1, axis=1, initial=-0.55) for f in (np.max, np.amax,
                                                                        np.nanmax)],
    *[case(f, distinct(3, 4) / 4 - 1, axis=1, initial=-1.4) for f in (np.min, np.nanmin)],
    case(np.max, np.zeros((2, 0)), axis=1, initial=0.3),
    *[case(np.ptp, distinct(3, 4), **axes) for axes in FEW_AXES],
    # moments
    *[case(f, x, **axes, **ddof) for f in (np.var, np.std)
      for x in (normal(2, 3, 4), normal(3, 4, dtype=C128), normal(3, 4, dtype=F32))
      for axes in FEW_AXES for ddof in ({}, dict(ddof=1))],
    case(np.std, normal(3, 4), 0, None, None, 1),
    accepted(case(np.var, normal(3, 4), axis=1, correction=1), "np.var(correction=) (NumPy 2.0)"),
    # average: data and (positional) weights both differentiable
    *[case(np.average, x, **axes) for x in (normal(2, 3, 4), normal(2, 3, dtype=C128))
      for axes in FEW_AXES],
    case(np.average, normal(2, 3, 4), None, positive(2, 3, 4)),
    case(np.average, normal(2, 3, 4), 1, positive(3)),
    *[accepted(case(np.average, normal(2, 3, 4), (2, 0), positive(4, 2), **options),
               "weights over several axes (NumPy 2.0)") for options in ({}, dict(keepdims=True))],
    case(np.average, normal(2, 3, dtype=C128), 0, positive(2) + 0.5j),
    case(np.average, normal(2, 3, dtype=F32), -1, positive(3, dtype=F32)),
    case(np.average, normal(3, 2), axis=1, weights=positive(2)),
    # cumulative sums and products (cumprod: one and several zeros)
    *[case(f, x, **axes) for f in (np.cumsum, np.cumprod)
      for x in (normal(2, 3), normal(2, 3, dtype=F32), normal(2, 3, dtype=C128))
      for axes in ({}, dict(axis=0), dict(axis=-1))],
    case(np.cumsum, normal(3, 4), 1, F64),
    # segment sums (np.add.reduceat): increasing, repeated and decreasing indices
    case(add_reduceat, normal(6), [0, 2, 5]),
    case(add_reduceat, normal(6, 2, dtype=F32), [0, 4, 1, 5, 5]),
    case(add_reduceat, normal(3, 5, dtype=C128), [1, 3], axis=1),
    case(add_reduceat, normal(2, 5), [2, 0, 3], -1),
    *[case(np.cumprod, x, **axes) for x in (ZEROS, ZEROS.astype(C128), ZEROS.astype(F32))
      for axes in ({}, dict(axis=0), dict(axis=1))],
    case(np.cumprod, np.array([0.0, 0.0, 2.0, 3.0])),
    # NaN-ignoring reductions, on finite data (with NaNs: test_nan_reductions_with_nans)
    *[case(f, distinct(3, 4), **axes) for f in NAN_REDUCTIONS
      for axes in ({}, dict(axis=0), dict(axis=1, keepdims=True))],
    case(np.nanvar, distinct(3, 4), axis=1, ddof=1),
    case(np.nansum, normal(3, 4, dtype=C128), axis=0),
    case(np.nanmean, normal(3, 4, dtype=F32), axis=1),
    # trace, diff, sort
    case(np.trace, normal(3, 3)),
    case(np.trace, normal(3, 4), 1),
    case(np.trace, normal(4, 3, dtype=C128), -2),
    case(np.trace, normal(2, 3, 4, dtype=F32), 0, 2, 0),
    case(np.trace, normal(3, 3, 2), offset=1, axis1=1, axis2=0),
    case(np.diff, normal(5)),
    case(np.diff, normal(3, 5), 2),
    case(np.diff, normal(4, 3, dtype=C128), axis=0),
    case(np.diff, normal(4, 3, dtype=F32), 3, 0),
    case(np.diff, normal(4, 3), prepend=1.0, append=np.ones((4, 2))),
    case(np.diff, normal(2, 4, 3), 2, 1, np.ones((2, 1, 3))),
    case(np.sort, distinct(5)),
    case(np.sort, distinct(3, 4), 0),
    case(np.sort, distinct(3, 4), axis=None),
    case(np.sort, distinct(3, 4, dtype=C128)),
    case(np.sort, distinct(3, 4, dtype=F32), kind="stable"),
    # norms: vector ords (also along an axis of a stack), matrix ords (also batched)
    # (a finite float ord passed positionally is differentiated too; inf goes by keyword)
    *[case(np.linalg.norm, distinct(5), order) for order in VECTOR_ORDS],
    *[case(np.linalg.norm, distinct(5), ord=order) for order in (np.inf, -np.inf)],
    *[case(np.linalg.norm, distinct(4, dtype=C128), order) for order in (None, 1, 3)],
    case(np.linalg.norm, distinct(4, dtype=C128), ord=np.inf),
    *[case(np.linalg.norm, distinct(2, 3, 4), order, 1) for order in (None, 1, 3)],
    case(np.linalg.norm, distinct(2, 3, 4), ord=-np.inf, axis=1),
    case(np.linalg.norm, distinct(2, 3, 4), 2, -1, True),
    case(np.linalg.norm, normal(2, 3, 4)),
    case(np.linalg.norm, normal(3, 4, dtype=F32), keepdims=True),
    # (matrix ords by keyword: a float ord=inf would be perturbed, into an invalid order)
    *[case(np.linalg.norm, distinct(3, 4), ord=order) for order in MATRIX_ORDS],
    *[case(np.linalg.norm, distinct(4, 3, dtype=C128), ord=order) for order in MATRIX_ORDS],
    *[case(np.linalg.norm, distinct(2, 3, 4), ord=order, axis=(2, 0)) for order in MATRIX_ORDS],
    case(np.linalg.norm, distinct(2, 3, 4), "nuc", (0, 1), True),
    # np.linalg.matrix_norm (NumPy 2.0) and np.linalg.cond: the matrix norms of the last axes
    *[case(MATRIX_NORM, distinct(3, 4), ord=order) for order in MATRIX_ORDS if MATRIX_NORM],
    *([case(MATRIX_NORM, distinct(2, 3, 3, dtype=C128), ord="nuc", keepdims=True),
       case(MATRIX_NORM, normal(2, 3, dtype=F32))] if MATRIX_NORM else []),
    case(np.linalg.cond, distinct(3, 3)),
    case(np.linalg.cond, distinct(3, 4)),
    case(np.linalg.cond, distinct(2, 3, 3), -2),
    case(np.linalg.cond, distinct(3, 3, dtype=C128), 2),
    *[case(np.linalg.cond, distinct(3, 3), p=order) for order in ("fro", "nuc", 1, -np.inf)],
    case(np.linalg.cond, distinct(3, 3, dtype=C128), p=np.inf),
    # scans: cumulative_prod (NumPy 2.1, with include_initial) and nancumprod
    *([case(CUMULATIVE_PROD, distinct(5)),
       case(CUMULATIVE_PROD, distinct(3, 4), axis=1, include_initial=True),
       case(CUMULATIVE_PROD, distinct(4, dtype=C128), include_initial=True),
       case(CUMULATIVE_PROD, distinct(3, 4, dtype=F32), axis=0)] if CUMULATIVE_PROD else []),
    case(np.nancumprod, distinct(2, 3)),  # NaNs: test_nancumprod_skips_nans
    case(np.nancumprod, distinct(2, 3, dtype=C128), axis=0),
    case(np.nancumprod, distinct(4, dtype=F32)),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule(rule_case):
    check_case(rule_case)


REDUCTIONS = [np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.ptp, np.std,
              np.var, np.average, np.cumsum, np.cumprod, np.nansum, np.nanmean, np.nanmax,
              np.nanmin, np.nanprod, np.nanstd, np.nanvar, np.trace, np.diff, np.sort,
              np.linalg.norm, np.linalg.cond, np.nancumprod]


@pytest.mark.parametrize("f", REDUCTIONS, ids=lambda f: f.__name__)
def test_every_reduction_has_both_rules_and_cases(f):
    assert rrule.lookup(f) is not None and frule.lookup(f) is not None
    assert any(c.function is f for c in running(CASES))


# --- closed forms: ties, zeros, lazy cotangents, errors ------------------------------------------

def _cotangent(f, *args, dy=None, **kwargs):
    y, pullback = rrule(f, *args, **kwargs)
    dy = np.ones_like(y) if dy is None else dy
    return unthunk(pullback(dy)[1])


@pytest.mark.parametrize("f", [np.max, np.amax, np.nanmax])
def test_max_ties_split_evenly(f):
    np.testing.assert_array_equal(_cotangent(f, np.array([1.0, 3.0, 3.0])), [0, 0.5, 0.5])
    x = np.array([[2.0, 2.0, 2.0], [1.0, 5.0, 0.0]])
    np.testing.assert_allclose(_cotangent(f, x, axis=1), [[1 / 3] * 3, [0, 1, 0]])
    _, dy = frule((NoTangent(), np.array([[3.0, 0.0, 0.0], [1.0, 1.0, 1.0]])), f, x, axis=1)
    np.testing.assert_allclose(dy, [1.0, 1.0])


@pytest.mark.parametrize("f", [np.min, np.amin, np.nanmin])
def test_min_ties_split_evenly(f):
    x = np.array([[0.0, 1.0], [0.0, -1.0]])
    np.testing.assert_array_equal(_cotangent(f, x, axis=0, dy=np.array([4.0, 2.0])),
                                  [[2.0, 0.0], [2.0, 2.0]])


def test_max_nan_and_nanmax():
    x = np.array([1.0, np.nan, 3.0])
    np.testing.assert_array_equal(_cotangent(np.max, x), [0, 1, 0])  # max propagates the NaN
    np.testing.assert_array_equal(_cotangent(np.nanmax, x), [0, 0, 1])


def test_ptp_ties():
    np.testing.assert_array_equal(_cotangent(np.ptp, np.array([1.0, 4.0, 1.0, 4.0])),
                                  [-0.5, 0.5, -0.5, 0.5])


@pytest.mark.parametrize("x, expected", [
    ([2.0, 0.0, 3.0], [0.0, 6.0, 0.0]),           # one zero: the product of the others
    ([2.0, 0.0, 3.0, 0.0], [0.0, 0.0, 0.0, 0.0]),  # several zeros: all partials vanish
    ([2.0, 5.0, 3.0], [15.0, 6.0, 10.0]),
])
def test_prod_with_zeros(x, expected):
    np.testing.assert_array_equal(_cotangent(np.prod, np.array(x)), expected)
    _, dy = frule((NoTangent(), np.ones(len(x))), np.prod, np.array(x))
    assert dy == sum(expected)


def test_prod_with_zeros_along_axis():
    x = np.array([[0.0, 2.0], [3.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(_cotangent(np.prod, x, axis=1), [[2, 0], [0, 3], [0, 0]])
    np.testing.assert_array_equal(_cotangent(np.prod, x, axis=0), [[0, 0], [0, 0], [0, 0]])


@pytest.mark.parametrize("x, expected", [
    # y = cumprod(x); entry j is sum_i dy_i/dx_j
    ([2.0, 0.0, 3.0, 4.0], [1.0, 2 + 6 + 24, 0.0, 0.0]),
    ([2.0, 0.0, 3.0, 0.0], [1.0, 2 + 6 + 0, 0.0, 0.0]),
    ([0.0, 0.0, 5.0], [1.0, 0.0, 0.0]),
    ([2.0, 3.0, 4.0], [1 + 3 + 12, 2 + 8, 6]),
])
def test_cumprod_with_zeros(x, expected):
    x = np.array(x)
    np.testing.assert_allclose(_cotangent(np.cumprod, x), expected)
    _, dy = frule((NoTangent(), np.ones_like(x)), np.cumprod, x)
    jacobian = np.array([[np.prod(x[:i + 1][np.arange(i + 1) != j]) if j <= i else 0.0
                          for j in range(len(x))] for i in range(len(x))])
    np.testing.assert_allclose(dy, jacobian.sum(axis=1))


@pytest.mark.parametrize("f, scale", [(np.sum, 1.0), (np.mean, 1 / 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
def test_sum_and_mean_cotangents_are_inplaceable(f, scale, dtype):
    x = np.ones((2, 3), dtype)
    y, pullback = rrule(f, x, axis=1)
    dy = np.array([1.0 + 2.0j, 3.0 - 1.0j])
    cotangent = pullback(dy)[1]
    assert isinstance(cotangent, InplaceableThunk)
    assert cotangent.shape == x.shape and cotangent.dtype == x.dtype
    expected = np.broadcast_to((dy if np.iscomplexobj(x) else dy.real)[:, None] * scale, x.shape)
    value = unthunk(cotangent)
    assert value.dtype == x.dtype
    np.testing.assert_allclose(value, expected, rtol=1e-6)
    buffer = np.arange(6.0).reshape(2, 3).astype(dtype)
    eager = buffer + value
    np.testing.assert_array_equal(accumulate(buffer.copy(), cotangent, owned=True), eager)


def test_zero_cotangent_short_circuits():
    _, pullback = rrule(np.sum, np.ones(3), 0)
    assert pullback(ZeroTangent()) == (NoTangent(), ZeroTangent(), NoTangent())
    assert frule((NoTangent(), ZeroTangent()), np.max, np.ones(3))[1] is ZeroTangent()


@pytest.mark.parametrize("f", [np.sum, np.mean, np.max, np.prod, np.cumsum, np.sort])
def test_integer_input_has_no_tangent(f):
    _, pullback = rrule(f, np.arange(4))
    assert pullback(np.ones(np.shape(f(np.arange(4)))))[1] is NoTangent()


def test_cotangent_of_wrong_shape_is_an_error():
    _, pullback = rrule(np.sum, np.ones((2, 3)), axis=0)
    with pytest.raises(ProjectionError, match=r"numpy.sum pullback.*\(3,\).*\(2,\)"):
        pullback(np.ones(2))


@pytest.mark.parametrize("f, kwargs, match", [
    (np.sum, dict(out=np.zeros(())), "numpy.sum: the out= argument"),
    (np.mean, dict(where=np.array([True, False, True])), "numpy.mean: the where= argument"),
    (np.max, dict(where=np.array([True, False, True]), initial=0.0),
     "numpy.max: the where= argument"),
    (np.var, dict(mean=0.5), "numpy.var: the mean= argument"),
    (np.cumsum, dict(out=np.zeros(3)), "numpy.cumsum: the out= argument"),
    (np.sort, dict(order="x"), "numpy.sort: the order= argument"),
])
def test_refused_options(f, kwargs, match):
    # held constant (as an engine calls them), the rules refuse these options themselves
    with pytest.raises(TypeError, match=match):
        rrule.with_constants(f, np.ones(3), **kwargs)
    with pytest.raises(TypeError, match=match):
        frule.with_constants((NoTangent(), np.ones(3)), f, np.ones(3), **kwargs)


def test_average_returned_is_refused():
    with pytest.raises(NotImplementedError, match="numpy.average: returned=True"):
        rrule(np.average, np.ones(3), None, np.ones(3), True)


def test_average_weights_cotangent_closed_form():
    a, w = np.array([1.0, 2.0, 4.0]), np.array([1.0, 1.0, 2.0])
    y, pullback = rrule(np.average, a, 0, w)
    assert y == 11 / 4
    _, da, _, dw = pullback(1.0)
    np.testing.assert_allclose(unthunk(da), w / 4)
    np.testing.assert_allclose(unthunk(dw), (a - 11 / 4) / 4)


def test_var_and_std_closed_forms():
    x = np.array([1.0, 2.0, 6.0])  # mean 3
    np.testing.assert_allclose(_cotangent(np.var, x), 2 * (x - 3) / 3)
    np.testing.assert_allclose(_cotangent(np.var, x, ddof=1), 2 * (x - 3) / 2)
    np.testing.assert_allclose(_cotangent(np.std, x), (x - 3) / 3 / np.std(x))
    np.testing.assert_array_equal(_cotangent(np.std, np.full(3, 2.0)), np.zeros(3))


def test_norm_closed_forms():
    x = np.array([3.0, -4.0])
    np.testing.assert_allclose(_cotangent(np.linalg.norm, x), x / 5)
    np.testing.assert_allclose(_cotangent(np.linalg.norm, x, 1), [1.0, -1.0])
    np.testing.assert_allclose(_cotangent(np.linalg.norm, x, np.inf), [0.0, -1.0])
    a = np.diag([3.0, 1.0])
    np.testing.assert_allclose(_cotangent(np.linalg.norm, a, "nuc"), np.eye(2))
    np.testing.assert_allclose(_cotangent(np.linalg.norm, a, 2), [[1, 0], [0, 0]])
    np.testing.assert_allclose(_cotangent(np.linalg.norm, a, -2), [[0, 0], [0, 1]])
    z = np.array([3 + 4j])
    np.testing.assert_allclose(_cotangent(np.linalg.norm, z), z / 5)  # grad |z| = z / |z|


@pytest.mark.parametrize("f", NAN_REDUCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("axes", [{}, dict(axis=0), dict(axis=1, keepdims=True)])
def test_nan_reductions_with_nans(f, axes):
    """NaNs get a zero cotangent; the others match finite differences in the finite values."""
    x = with_nans(3, 4)
    present = ~np.isnan(x)

    def of_finite_values(values, x=x, present=present, f=f, axes=axes):  # captures nothing
        filled = x.copy()
        filled[present] = values
        return f(filled, **axes)

    y, pullback = rrule(f, x, **axes)
    dy = normal(*np.shape(y))
    cotangent = unthunk(pullback(dy)[1])
    expected = fd_vjp(of_finite_values, dy, x[present])[1]
    np.testing.assert_allclose(cotangent[present], expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(cotangent[~present], 0.0)
    dx = normal(3, 4)
    np.testing.assert_allclose(frule((NoTangent(), dx), f, x, **axes)[1],
                               fd_jvp(of_finite_values, (NoTangent(), dx[present]),
                                      x[present]), rtol=1e-6, atol=1e-9)


def test_norm_order_derivative():
    x = np.array([1.0, -2.0, 0.0, 3.0])
    for order in (0.5, 1.0, 2.0, 3.0):
        _, pullback = rrule(np.linalg.norm, x, order)
        derivative = pullback(1.0)[2]
        expected = fd_vjp(lambda p: np.linalg.norm(x, p), 1.0, order)[1]
        assert derivative == pytest.approx(expected, rel=1e-6)
    assert unthunk(rrule(np.linalg.norm, x, np.inf)[1](1.0)[2]) is ZeroTangent()
    # matrix norms take discrete orders only
    assert unthunk(rrule(np.linalg.norm, np.eye(2), 2.0)[1](1.0)[2]) is NoTangent()


def test_nancumprod_skips_nans():
    """d/dx sum(w * nancumprod(x)), a NaN counting as 1: the closed form at the other
    elements (sum over later outputs of w_i y_i / x_j), 0 at the NaNs."""
    import chainrules as cr
    x, w = np.array([2.0, np.nan, -0.5, 3.0]), np.array([0.5, 1.0, -2.0, 3.0])
    y = np.nancumprod(x)  # [2, 2, -1, -3]
    expected = np.array([(0.5 * 2 + 1.0 * 2 - 2.0 * -1 + 3.0 * -3) / 2, 0.0,
                         (-2.0 * -1 + 3.0 * -3) / -0.5, 3.0 * -3 / 3.0])
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(w * np.nancumprod(x)))(x), expected)
    _, tangent = cr.jvp(np.nancumprod, (x,), (np.ones(4),))
    np.testing.assert_allclose(tangent, y * np.cumsum(np.where(np.isnan(x), 0, 1 / x)))


def test_cond_of_an_orthogonal_times_diagonal_matrix():
    """cond(Q diag(s)) = s_max / s_min: its gradient is u_max v_max^T / s_min - s_max /
    s_min^2 u_min v_min^T, with u = Q's columns and v the unit vectors."""
    import chainrules as cr
    q, _ = np.linalg.qr(normal(3, 3))
    s = np.array([4.0, 2.0, 0.5])
    gradient = cr.grad(np.linalg.cond)(q * s)
    expected = np.outer(q[:, 0], [1, 0, 0]) / 0.5 - 4.0 / 0.25 * np.outer(q[:, 2], [0, 0, 1])
    np.testing.assert_allclose(gradient, expected, atol=1e-10)

