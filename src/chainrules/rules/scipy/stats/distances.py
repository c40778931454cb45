"""The distances between two samples' distributions that ``scipy.stats`` computes from their
empirical CDFs, ``wasserstein_distance`` (p = 1) and ``energy_distance`` (p = 2, times sqrt 2),
written for engines to trace: ``cdf_distance(p, u, v, u_weights, v_weights)`` is the L^p norm
of ``U - V`` over the real line, a sum over the gaps between the merged sorted values, where
the CDFs are constant. The positions (``searchsorted`` of sorted values) have no derivative;
the gaps and the weights do, so the distance is differentiable in the values and the weights.

SciPy's version calls ``searchsorted`` as a method of one sample's sorted values, which cannot
take traced values when that sample is a plain array; while a trace runs, SciPy's
``_cdf_distance`` with traced arguments runs this one (``TRACED_PATHS`` in
`chainrules.ad.dispatch.routes`).

>>> import numpy as np, scipy.stats
>>> u, v = np.array([0.0, 1.0, 3.0]), np.array([5.0, 6.0, 8.0])
>>> float(cdf_distance(1, u, v)) == float(scipy.stats.wasserstein_distance(u, v))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["cdf_distance"]


def _sample(values: Any, weights: Any) -> tuple:
    """The values (and weights) as 1-D float arrays, checked as SciPy checks them."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        raise ValueError("Distribution can't be empty.")
    if weights is None:
        return values, None
    weights = np.asarray(weights, dtype=float)
    if weights.shape != values.shape:
        raise ValueError("Value and weight array-likes for the same empirical distribution "
                         "must be of the same size.")
    if np.any(weights < 0):
        raise ValueError("All weights must be non-negative.")
    total = np.sum(weights)
    if not 0 < total < np.inf:
        raise ValueError("Weight array-like sum must be positive and finite. Set as None for "
                         "an equal distribution of weight.")
    return values, weights


def _cdf(values: Any, weights: Any, points: Any) -> Any:
    """The empirical CDF of ``values`` (weighted) at ``points``."""
    order = np.argsort(values)
    below = np.searchsorted(values[order], points, side="right")  # positions: no derivative
    if weights is None:
        return below / values.size
    cumulative = np.concatenate([np.zeros(1), np.cumsum(weights[order])])
    return cumulative[below] / cumulative[-1]


def cdf_distance(p: float, u_values: Any, v_values: Any, u_weights: Any = None,
                 v_weights: Any = None) -> Any:
    """``(integral |U - V|^p)^(1/p)`` for the empirical CDFs ``U`` and ``V`` of two samples."""
    u_values, u_weights = _sample(u_values, u_weights)
    v_values, v_weights = _sample(v_values, v_weights)
    merged = np.sort(np.concatenate([u_values, v_values]))
    gaps = np.diff(merged)
    difference = np.abs(_cdf(u_values, u_weights, merged[:-1]) -
                        _cdf(v_values, v_weights, merged[:-1]))
    if p == 1:
        return np.sum(difference * gaps)
    if p == 2:
        return np.sqrt(np.sum(difference ** 2 * gaps))
    return np.sum(difference ** p * gaps) ** (1.0 / p)
