"""``scipy.signal.savgol_filter`` written with functions that have rules, so that an engine
traces it (SciPy computes it in compiled code, and the filter's ends by writes through views).

Away from the ends, the filter is ``scipy.ndimage.convolve1d`` with SciPy's own
``savgol_coeffs`` (traced through its NumPy version, `chainrules.rules.scipy.ndimage.filters`),
with the ``mode`` SciPy passes it. With ``mode='interp'`` (the default), the ``window_length //
2`` values at each end are those of the polynomial fitted to the first (last) window, as SciPy
computes them: a fixed matrix (the fit of each unit sample) times the window's samples.

>>> import numpy as np, scipy.signal
>>> x = np.array([1.0, 3.0, 2.0, 5.0, 4.0, 6.0, 8.0])
>>> bool(np.allclose(savgol_filter(x, 5, 2), scipy.signal.savgol_filter(x, 5, 2)))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["savgol_filter"]

_MODES = ("mirror", "constant", "nearest", "interp", "wrap")


def _edge_fit(window_length: int, polyorder: int, deriv: int, delta: float) -> np.ndarray:
    """``fit[i, j]``: the weight of sample ``j`` of a window in the value (or derivative) at
    position ``i`` of the polynomial of degree ``polyorder`` fitted to the window."""
    positions = np.arange(window_length, dtype="float64")
    coefficients = np.polyfit(positions, np.eye(window_length), polyorder)
    for _ in range(deriv):  # the derivative of each column's polynomial
        degree = coefficients.shape[0] - 1
        if degree == 0:
            coefficients = np.zeros_like(coefficients)
            break
        coefficients = coefficients[:-1] * np.arange(degree, 0, -1)[:, None]
    powers = positions[:, None] ** np.arange(coefficients.shape[0] - 1, -1, -1)[None, :]
    return powers @ coefficients / delta ** deriv


def savgol_filter(x: Any, window_length: int, polyorder: int, deriv: int = 0,
                  delta: float = 1.0, axis: int = -1, mode: str = "interp",
                  cval: float = 0.0) -> Any:
    """``scipy.signal.savgol_filter``, for an engine to trace."""
    import scipy.ndimage
    import scipy.signal

    if mode not in _MODES:
        raise ValueError("mode must be 'mirror', 'constant', 'nearest' 'wrap' or 'interp'.")
    x = np.asarray(x)
    if x.dtype.char not in "fd":  # (by code: while tracing, np.float64 casts traced values)
        x = x.astype("float64")
    coefficients = scipy.signal.savgol_coeffs(window_length, polyorder, deriv=deriv,
                                              delta=delta).astype(x.dtype)
    if mode != "interp":
        return scipy.ndimage.convolve1d(x, coefficients, axis=axis, mode=mode, cval=cval)
    n = np.shape(x)[axis]
    if window_length > n:
        raise ValueError("If mode is 'interp', window_length must be less than or equal to "
                         "the size of x.")
    y = scipy.ndimage.convolve1d(x, coefficients, axis=axis, mode="constant")
    half = window_length // 2
    fit = _edge_fit(window_length, polyorder, deriv, delta).astype(x.dtype)
    samples, filtered = np.moveaxis(x, axis, -1), np.moveaxis(y, axis, -1)
    first = samples[..., :window_length] @ fit[:half].T
    last = samples[..., n - window_length:] @ fit[window_length - half:].T
    joined = np.concatenate([first, filtered[..., half:n - half], last], axis=-1)
    return np.moveaxis(joined, -1, axis)
