"""Statistical models written with NumPy's functions only, so that their data may be NumPy
arrays or Dask arrays (which implement NumPy's API lazily)."""

import numpy as np


def logistic_loss(w, X, y):
    """The mean negative log-likelihood of a logistic regression with weights ``w``."""
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def mean_square(w, X, y):
    """The mean squared residual of the linear model ``X @ w`` for ``y``."""
    residual = X @ w - y
    return np.mean(residual ** 2)


def blockwise_sum_of_squares(x, rows):
    """The sum of squares of ``x``, a block of ``rows`` rows at a time."""
    total = 0.0
    for start in range(0, x.shape[0], rows):
        total = total + np.sum(x[start:start + rows] ** 2)
    return total
