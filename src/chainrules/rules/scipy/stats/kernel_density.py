"""``scipy.stats.gaussian_kde``'s density in NumPy operations, for engines to trace: the
estimate at points, differentiable in the points, the data, the weights and (through the
bandwidth, which Scott's and Silverman's rules compute from the data) everything SciPy
derives from them.

With weights ``w`` (summing to 1; ``1/n`` without), the data's weighted covariance ``S``
(SciPy's: ``sum w (x - m)(x - m)^T / (1 - sum w^2)``), the bandwidth factor ``f`` (Scott:
``neff^(-1/(d+4))``, Silverman: ``(neff (d+2)/4)^(-1/(d+4))``, ``neff = 1/sum w^2``; or the
number given) and ``L`` the Cholesky factor of ``f^2 S``:

    log p(y) = logsumexp_i(log w_i - |L^-1 (y - x_i)|^2 / 2) - d/2 log(2 pi) - sum log diag L

>>> import numpy as np, scipy.stats
>>> data = np.array([[0.1, 0.7, 1.3, 2.0]])
>>> bool(np.allclose(log_density(data, None, "scott", np.array([[0.5, 1.0]])),
...                  scipy.stats.gaussian_kde(data).logpdf(np.array([[0.5, 1.0]]))))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["log_density", "bandwidth_factor"]


def bandwidth_factor(bw_method: Any, d: int, weights: Any) -> Any:
    """The bandwidth factor of ``bw_method`` (None, 'scott', 'silverman' or a number)."""
    if bw_method is None or bw_method == "scott" or bw_method == "silverman":
        neff = 1.0 / np.sum(weights ** 2)
        if bw_method == "silverman":
            return (neff * (d + 2.0) / 4.0) ** (-1.0 / (d + 4))
        return neff ** (-1.0 / (d + 4))
    return bw_method


def log_density(dataset: Any, weights: Any, bw_method: Any, points: Any) -> Any:
    """``gaussian_kde(dataset, bw_method, weights).logpdf(points)`` (``dataset`` of shape
    ``(d, n)``, ``points`` of shape ``(d, m)``)."""
    import scipy.special

    d, n = np.shape(dataset)
    if weights is None:
        weights = np.full(n, 1.0 / n)
    else:
        weights = weights / np.sum(weights)
    mean = dataset @ weights
    centred = dataset - mean[:, None]
    covariance = (centred * weights) @ centred.T / (1.0 - np.sum(weights ** 2))
    factor = bandwidth_factor(bw_method, d, weights)
    factor_l = np.linalg.cholesky(covariance * factor ** 2)
    difference = points[:, None, :] - dataset[:, :, None]  # (d, n, m)
    m = np.shape(points)[1]
    scaled = np.linalg.solve(factor_l, np.reshape(difference, (d, n * m)))
    distances = np.reshape(np.sum(scaled ** 2, axis=0), (n, m))
    normalisation = 0.5 * d * np.log(2 * np.pi) + np.sum(np.log(np.diagonal(factor_l)))
    return scipy.special.logsumexp(np.log(weights)[:, None] - 0.5 * distances, axis=0) - \
        normalisation
