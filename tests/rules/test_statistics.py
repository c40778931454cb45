"""Rules for quantiles, covariances, weighted histograms and counts (chainrules.rules.numpy.statistics):
the kit against finite differences (order 1), the kit's order-2 check, forward over reverse
against finite differences, NaN-ignoring forms with NaNs, closed forms and refused options."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules import NoTangent, frule, rrule, unthunk
from chainrules.testing import case, check_case, fd_jvp, fd_vjp, test_rrule_order2
from tests.numpy_features import running
from tests.rules.second_order import assert_jvp_of_grad

_rng = np.random.default_rng(20240613)
F32, C128 = np.float32, np.complex128


def normal(*shape, dtype=np.float64):
    x = _rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * _rng.standard_normal(shape)
    return x.astype(dtype)


def distinct(*shape, dtype=np.float64):
    """Values at least 0.5 apart (finite differences do not cross a change of rank)."""
    values = _rng.permutation(np.prod(shape, dtype=int)) * 0.7 + _rng.uniform(0, 0.1)
    return values.reshape(shape).astype(dtype)


DATA = np.array([0.3, 1.7, 0.9, 2.4, 1.1, 0.2])  # no value on an edge for 3 or 4 bins
DATA_Y = np.array([1.3, 0.15, 2.2, 0.7, 1.9, 0.45])
COUNTS = np.array([0, 1, 1, 2, 5, 7, 3])

CASES = [
    # median, quantile, percentile: q chosen between ranks (the derivative in q jumps at them)
    case(np.median, distinct(5)),
    case(np.median, distinct(6, dtype=F32)),
    case(np.median, distinct(3, 4), 1),
    case(np.median, distinct(3, 4), axis=0, keepdims=True),
    case(np.median, distinct(2, 3, 4), axis=(0, 2)),
    case(np.median, 1.5),
    case(np.quantile, distinct(7), 0.3),
    case(np.quantile, distinct(3, 5), np.array([0.125, 0.625]), axis=1),
    case(np.quantile, distinct(3, 5, dtype=F32), 0.375, axis=-1, keepdims=True),
    case(np.quantile, distinct(6), 0.5, method="lower"),
    case(np.quantile, distinct(6), 0.5, method="higher"),
    case(np.quantile, distinct(6), 0.5, method="midpoint"),
    # NumPy's other estimators: continuous ones move with q (clipped at the ends), the others
    # read one rank (or two, halved) that q selects
    *[case(np.quantile, distinct(2, 7), np.array([0.031, 0.3137, 0.8713]), axis=1, method=m)
      for m in ("interpolated_inverted_cdf", "hazen", "weibull", "median_unbiased",
                "normal_unbiased", "nearest", "inverted_cdf", "averaged_inverted_cdf",
                "closest_observation")],
    case(np.percentile, distinct(9, dtype=F32), 41.3, method="hazen"),
    case(np.nanquantile, distinct(2, 5), np.array([0.07, 0.61]), axis=1, method="weibull"),
    case(np.nanpercentile, distinct(7), 63.1, method="nearest"),
    case(np.percentile, distinct(4, 5), np.array([[10.0], [65.0]]), axis=(0, 1)),
    case(np.percentile, distinct(9), 30.0),
    case(np.nanmedian, distinct(3, 4), axis=1),
    case(np.nanquantile, distinct(2, 5), 0.375, axis=1),
    case(np.nanpercentile, distinct(7), np.array([30.0, 80.0])),
    # covariances and correlations
    case(np.cov, normal(3, 6)),
    case(np.cov, normal(6)),
    case(np.cov, normal(6, 2), normal(6), rowvar=False),
    case(np.cov, normal(2, 5), normal(5), bias=True),
    case(np.cov, normal(2, 5, dtype=C128)),
    case(np.cov, normal(2, 5, dtype=F32), ddof=0),
    case(np.corrcoef, normal(3, 6)),
    case(np.corrcoef, normal(6), normal(6)),
    case(np.corrcoef, normal(5, 2), rowvar=False),
    case(np.corrcoef, normal(2, 5, dtype=C128)),
    case(np.corrcoef, normal(2, 5, dtype=F32)),
    # weighted histograms (integer data: the counts are piecewise constant in the data)
    case(np.histogram, COUNTS, 3, None, False, normal(7)),
    case(np.histogram, COUNTS, 4, (0, 6), True, normal(7)),
    case(np.histogram, COUNTS, 4, (1, 6), False, normal(7, dtype=F32)),
    case(np.histogram, COUNTS, 3, None, False, normal(7, dtype=C128)),
    case(np.histogram, np.array([0.5, 1.5, 1.5, 2.5]), np.array([0.0, 1.0, 2.0, 3.0]), None,
         True, normal(4)),
    # edges from the data's extrema (which move them) and the counts divided by their widths
    case(np.histogram, DATA, 4, None, True),
    case(np.histogram, DATA, 3, None, True, normal(6)),
    case(np.histogram, DATA.astype(F32), 4),
    case(np.histogram_bin_edges, DATA, 4),
    case(np.histogram_bin_edges, DATA, "sturges"),
    case(np.histogram_bin_edges, DATA, np.array([0.0, 1.0, 2.5])),
    # in two and more dimensions: the same per dimension (edges from each column's extrema,
    # bins, or range; counts divided by the bins' volumes)
    case(np.histogram2d, DATA, DATA_Y, 3, None, True),
    case(np.histogram2d, DATA, DATA_Y, [3, 2], None, True, normal(6)),
    case(np.histogram2d, DATA, DATA_Y, np.array([0.0, 0.5, 1.0, 2.0, 2.6])),
    case(np.histogram2d, DATA, DATA_Y, 3, [[0.05, 2.8], [0.1, 2.5]], True),
    case(np.histogram2d, DATA, DATA_Y.astype(F32), 2, None, False, normal(6, dtype=F32)),
    case(np.histogramdd, np.stack([DATA, DATA_Y], axis=1), 3, None, True),
    case(np.histogramdd, np.stack([DATA, DATA_Y], axis=1), (2, 3), None, True, normal(6)),
    case(np.histogramdd, [DATA, DATA_Y], [np.array([0.0, 1.0, 2.6]), 2]),
    case(np.histogramdd, np.stack([DATA, DATA_Y], axis=1), 2, [(0.05, 2.8), None], True),
    case(np.histogramdd, DATA, 4, None, True, normal(6, dtype=F32)),
    # weighted counts (linear in the weights; NumPy sums them in float64)
    case(np.bincount, COUNTS, normal(7)),
    case(np.bincount, COUNTS, normal(7, dtype=F32), 10),
    case(np.bincount, np.array([2, 2, 2]), normal(3), 1),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule(rule_case):
    check_case(rule_case)


ORDER2 = [c for c in running(CASES) if c.function not in (
    np.histogram, np.bincount, np.histogram_bin_edges, np.histogram2d, np.histogramdd)
          and not (c.fkwargs.get("method") in ("lower", "higher", "midpoint"))][::2] + [
    case(np.histogram, COUNTS, 4, (0, 6), True, normal(7)),
    case(np.bincount, COUNTS, normal(7), 10)]


@pytest.mark.parametrize("rule_case", ORDER2, ids=lambda c: c.id)
def test_rule_at_order_2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)


W = normal(3, 4)
SECOND_ORDER = {
    "median": (lambda x: np.sum(W[:, 0] * np.median(x, axis=1) ** 2), distinct(3, 4)),
    "quantile": (lambda x: np.sum(np.quantile(x * x, [0.125, 0.625], axis=0) ** 2),
                 distinct(5, 2) + 1),
    "quantile in q": (lambda q: np.sum(np.quantile(np.array([1.0, 4.0, 2.0, 8.0]), q * q)),
                      np.array([0.5, 0.7])),
    "hazen quantile in q and x": (
        lambda v: np.sum(np.quantile(v[:5] ** 2, v[5:] * v[5:], method="hazen") ** 2),
        np.array([0.3, 1.9, 1.2, 2.6, 0.8, 0.55, 0.83])),
    "nanpercentile": (lambda x: np.nanpercentile(x, 30.0) ** 2, distinct(7)),
    "cov": (lambda x: np.sum(W[:2, :2] * np.cov(x) ** 2), normal(2, 6)),
    "corrcoef": (lambda x: np.sum(W[:3, :3] * np.corrcoef(x)), normal(3, 5)),
    "histogram": (lambda w: np.sum(np.histogram(COUNTS, 3, None, True, w * w)[0] ** 2),
                  normal(7)),
    "bincount": (lambda w: np.sum(np.bincount(COUNTS, w * w, 9) ** 3), normal(7)),
}


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_forward_over_reverse(name):
    f, x = SECOND_ORDER[name]
    assert_jvp_of_grad(f, x)


# --- NaN-ignoring forms with NaNs ----------------------------------------------------------------

@pytest.mark.parametrize("f, args", [(np.nanmedian, ()), (np.nanquantile, (0.3,)),
                                     (np.nanpercentile, (np.array([20.0, 70.0]),))])
@pytest.mark.parametrize("axes", [{}, dict(axis=1), dict(axis=0, keepdims=True)])
def test_nan_forms_with_nans(f, args, axes):
    """NaNs get a zero cotangent; the others match finite differences in the finite values."""
    x = distinct(3, 5)
    x.flat[[1, 7, 8]] = np.nan
    present = ~np.isnan(x)

    def of_finite_values(values, x=x, present=present, f=f, args=args, axes=axes):
        filled = x.copy()  # (default arguments: finite differences perturb captured arrays)
        filled[present] = values
        return f(filled, *args, **axes)

    y, pullback = rrule(f, x, *args, **axes)
    dy = normal(*np.shape(y))
    cotangent = unthunk(pullback(dy)[1])
    np.testing.assert_allclose(cotangent[present], fd_vjp(of_finite_values, dy, x[present])[1],
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(cotangent[~present], 0.0)
    dx = normal(3, 5)
    tangents = (NoTangent(), dx) + (NoTangent(),) * len(args)
    np.testing.assert_allclose(frule(tangents, f, x, *args, **axes)[1],
                               fd_jvp(of_finite_values, (NoTangent(), dx[present]), x[present]),
                               rtol=1e-6, atol=1e-9)


def test_all_nan_slice_has_zero_cotangent():
    x = np.array([[np.nan, np.nan], [1.0, 3.0]])
    with pytest.warns(RuntimeWarning):
        g = cr.grad(lambda x: np.nansum(np.nanmedian(x, axis=1)))(x)
    np.testing.assert_array_equal(g, [[0.0, 0.0], [0.5, 0.5]])


# --- closed forms --------------------------------------------------------------------------------

def test_median_of_an_even_count_averages_the_middle_pair():
    g = cr.grad(np.median)(np.array([3.0, 1.0, 2.0, 5.0]))
    np.testing.assert_array_equal(g, [0.5, 0.0, 0.5, 0.0])


def test_quantile_gradient_in_q_is_the_rank_slope():
    x = np.array([1.0, 4.0, 2.0, 8.0])  # sorted 1, 2, 4, 8; q = 0.5 sits between 2 and 4
    assert cr.grad(lambda q: np.quantile(x, q))(0.5) == pytest.approx(3 * (4 - 2))
    assert cr.grad(lambda q: np.percentile(x, q))(50.0) == pytest.approx(3 * (4 - 2) / 100)


def test_traced_numbers_stacked():
    assert cr.grad(lambda a, b: np.median(np.array([a, b, 3.0])), argnums=(0, 1))(1.0, 2.0) \
        == (0.0, 1.0)


def test_cov_closed_form():
    x = normal(2, 6)
    w = normal(2, 2)
    xc = x - x.mean(axis=1, keepdims=True)
    expected = (w + w.T) @ xc / 5
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(w * np.cov(x)))(x), expected)


def test_corrcoef_of_one_variable_is_constant():
    np.testing.assert_allclose(cr.grad(np.corrcoef)(normal(5)), 0.0, atol=1e-12)


# --- refused options -----------------------------------------------------------------------------

@pytest.mark.parametrize("f, args, kwargs, match", [
    (np.median, (), dict(overwrite_input=True), "overwrite_input"),
    (np.cov, (), dict(aweights=np.ones(4)), "aweights"),
    (np.cov, (), dict(fweights=np.ones(4, int)), "fweights"),
])
def test_refused_options(f, args, kwargs, match):
    with pytest.raises(NotImplementedError, match=match):
        cr.grad(lambda x: np.sum(f(x, *args, **kwargs)))(distinct(2, 4))


def test_histogram_edges_move_with_the_data_and_the_range():
    """Edges from the data run from its minimum to its maximum, so they (and, with
    density=True, the counts through the bin widths) have a derivative there; edges from
    range= move with it. Before, both gradients were zero, without a word."""
    a = np.array([0.3, 1.7, 0.9, 2.4, 1.1, 0.2])  # minimum at 5, maximum at 3
    t = np.arange(5) / 4

    def edges_loss(a):
        return np.sum(np.arange(5.0) * np.histogram(a, 4)[1])

    expected = np.zeros(6)
    expected[5], expected[3] = np.sum(np.arange(5.0) * (1 - t)), np.sum(np.arange(5.0) * t)
    np.testing.assert_allclose(cr.grad(edges_loss)(a), expected)
    w = np.arange(1.0, 5.0)
    for loss, x in ((lambda a: np.sum(w * np.histogram(a, 4, density=True)[0]), a),
                    (lambda r: np.sum(w * np.histogram(a, 4, (r[0], r[1]), True)[0]),
                     np.array([0.05, 3.1]))):
        np.testing.assert_allclose(cr.grad(loss)(x), fd_vjp(loss, 1.0, x)[1], rtol=1e-6)
    counts_only = cr.grad(lambda a: np.sum(np.histogram(a, 3, weights=a)[0]))
    np.testing.assert_array_equal(counts_only(np.array([0.2, 1.4, 2.9])), [1.0, 1.0, 1.0])