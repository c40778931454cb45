"""Python's ``statistics`` module in NumPy operations, for an engine to trace: ``mean``,
``fmean``, ``geometric_mean``, ``harmonic_mean``, ``variance``, ``stdev``, ``pvariance`` and
``pstdev`` of data holding traced numbers.

``statistics.mean`` sums exact fractions (``x.as_integer_ratio()``), which a traced number
cannot give, and ``fmean`` converts with ``float()``. While a trace is active, a call of one
of these whose arguments hold traced values runs the version here instead (``TRACED_PATHS``
in ``chainrules.ad.dispatch.routes``; data given as a generator is read once, there). The
versions raise ``statistics.StatisticsError`` where the module does (too few data points, a
negative value in ``geometric_mean`` or ``harmonic_mean``) and return a float64 number. The
functions that only compare or count values (``median``, ``median_low``, ``mode``, ...) need
no version: they follow the traced numbers as they are.

>>> import statistics, chainrules as cr
>>> float(cr.grad(lambda t: statistics.pstdev([t, 3.0]))(1.0))  # |t - 3| / 2
-0.5
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

__all__ = ["fmean", "geometric_mean", "harmonic_mean", "mean", "pstdev", "pvariance", "stdev",
           "variance"]


def _values(data: Any, least: int, what: str) -> Any:
    """``data`` (numbers, traced or not) as a float64 array of at least ``least`` of them."""
    data = list(data)
    if len(data) < least:
        raise statistics.StatisticsError(what)
    return np.stack([np.asarray(x, dtype=np.float64) for x in data])


def mean(data: Any) -> Any:
    return np.mean(_values(data, 1, "mean requires at least one data point"))


def fmean(data: Any, weights: Any = None) -> Any:
    values = _values(data, 1, "fmean requires at least one data point")
    if weights is None:
        return np.mean(values)
    weights = _values(weights, 1, "fmean requires at least one data point")
    if weights.shape != values.shape:
        raise statistics.StatisticsError("data and weights must be the same length")
    return np.sum(weights * values) / np.sum(weights)


def geometric_mean(data: Any) -> Any:
    values = _values(data, 1, "geometric_mean requires a non-empty dataset containing "
                              "positive numbers")
    if np.any(values <= 0):
        raise statistics.StatisticsError("geometric_mean requires a non-empty dataset "
                                         "containing positive numbers")
    return np.exp(np.mean(np.log(values)))


def harmonic_mean(data: Any, weights: Any = None) -> Any:
    values = _values(data, 1, "harmonic_mean requires at least one data point")
    if np.any(values < 0):
        raise statistics.StatisticsError("harmonic mean does not support negative values")
    weights = np.ones(values.shape) if weights is None else \
        _values(weights, 1, "harmonic_mean requires at least one data point")
    if np.any(values == 0):  # as the module: zero, for any weights
        return np.sum(values * 0.0)
    return np.sum(weights) / np.sum(weights / values)


def _squared_deviations(values: Any, center: Any) -> Any:
    return np.sum((values - center) ** 2) if center is not None else \
        np.sum((values - np.mean(values)) ** 2)


def variance(data: Any, xbar: Any = None) -> Any:
    values = _values(data, 2, "variance requires at least two data points")
    return _squared_deviations(values, xbar) / (values.shape[0] - 1)


def stdev(data: Any, xbar: Any = None) -> Any:
    return np.sqrt(variance(data, xbar))


def pvariance(data: Any, mu: Any = None) -> Any:
    values = _values(data, 1, "pvariance requires at least one data point")
    return _squared_deviations(values, mu) / values.shape[0]


def pstdev(data: Any, mu: Any = None) -> Any:
    return np.sqrt(pvariance(data, mu))
