"""``scipy.signal`` functions computed from functions that have rules, for engines to trace:
``oaconvolve`` (the overlap-add convolution, whose value is ``fftconvolve``'s: SciPy writes its
blocks into arrays of its own) and ``upfirdn`` (upsample, FIR filter, downsample: the input
with ``up - 1`` zeros after each sample, convolved with ``h``, every ``down``-th sample kept),
which ``resample_poly`` and ``decimate`` call. SciPy computes ``upfirdn`` in compiled code; the
version here is a ``convolve`` of the zero-stuffed input: differentiable in ``x`` and ``h``.

While a trace runs, SciPy's function with traced arguments runs the version here
(``TRACED_PATHS`` in `chainrules.ad.dispatch.routes`). ``upfirdn``'s padding modes other than
``'constant'`` with ``cval=0`` (its default) are refused by name.

>>> import numpy as np, scipy.signal
>>> x, h = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.5])
>>> bool(np.allclose(upfirdn(h, x, 2, 3), scipy.signal.upfirdn(h, x, 2, 3)))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.signal as signal

__all__ = ["oaconvolve", "upfirdn"]


def oaconvolve(in1: Any, in2: Any, mode: str = "full", axes: Any = None) -> Any:
    """``scipy.signal.oaconvolve``: the same convolution as ``fftconvolve``."""
    return signal.fftconvolve(in1, in2, mode=mode, axes=axes)


def upfirdn(h: Any, x: Any, up: int = 1, down: int = 1, axis: int = -1,
            mode: str = "constant", cval: float = 0) -> Any:
    """``scipy.signal.upfirdn``: ``x`` upsampled by ``up`` (zeros between its samples),
    filtered by ``h``, downsampled by ``down``, along ``axis``."""
    if mode != "constant" or cval != 0:
        raise ValueError(f"scipy.signal.upfirdn(..., mode={mode!r}, cval={cval!r}) of traced "
                         f"values: only mode='constant' with cval=0 (the default) is "
                         f"followed; pad the signal with np.pad first.")
    h, x = np.asarray(h), np.asarray(x)
    if h.ndim != 1 or h.shape[0] == 0:
        raise ValueError("h must be 1-D with non-zero length")
    up, down = int(up), int(down)
    if up < 1 or down < 1:
        raise ValueError("Both up and down must be >= 1")
    x = np.moveaxis(x, axis, -1)
    count = x.shape[-1]
    if up > 1:  # sample i at i * up, zeros between
        zeros = np.zeros_like(x)
        x = np.reshape(np.stack([x] + [zeros] * (up - 1), axis=-1),
                       x.shape[:-1] + (count * up,))[..., :(count - 1) * up + 1]
    kernel = np.reshape(h, (1,) * (x.ndim - 1) + (h.shape[0],))
    filtered = signal.convolve(x, kernel, mode="full", method="direct")
    return np.moveaxis(filtered[..., ::down], -1, axis)
