"""Signal filters: arrays allocated and filled element by element, with NumPy names bound at
import time (``from numpy import ...``, ``DTYPE = np.float64``)."""

import numpy as np
from numpy import array, empty, exp as np_exp, float64, zeros

DTYPE = np.float64


def moving_average(x, width):
    """The mean of each window of ``width`` samples (np.empty, then filled)."""
    n = len(x) - width + 1
    out = np.empty(n)
    for i in range(n):
        out[i] = np.mean(x[i:i + width])
    return out


def exponential_smoothing(x, alpha):
    """s[0] = x[0], s[i] = alpha x[i] + (1 - alpha) s[i - 1] (``zeros`` bound at import)."""
    out = zeros(len(x))
    out[0] = x[0]
    for i in range(1, len(x)):
        out[i] = alpha * x[i] + (1.0 - alpha) * out[i - 1]
    return out


def cumulative_maximum_envelope(x):
    """``empty`` bound at import, ``float64`` used to cast each element."""
    out = empty(len(x))
    running = float64(x[0])
    for i in range(len(x)):
        running = float64(0.5) * (running + x[i])
        out[i] = running
    return out


def gains(x):
    """``DTYPE(t)`` casts, ``np_exp`` (``from numpy import exp as np_exp``) and ``array`` of a
    list of traced scalars."""
    first, last = DTYPE(x[0]), DTYPE(x[-1])
    return array([np_exp(first), np_exp(2.0 * last), first * last])
