"""Central finite differences for the engine's tests (independent of the code under test)."""

from __future__ import annotations

import numpy as np


def numerical_gradient(function, x, step: float = 1e-6):
    """The gradient of a real scalar ``function`` at ``x`` (array or complex array), in the
    convention dL/dRe + i dL/dIm, by central differences."""
    x = np.asarray(x)
    directions = [1.0] + ([1j] if np.iscomplexobj(x) else [])
    gradient = np.zeros(x.shape, dtype=x.dtype if x.dtype.kind in "fc" else float)
    for index in np.ndindex(x.shape):
        for direction in directions:
            plus, minus = x.astype(complex if direction == 1j else x.dtype), x.astype(
                complex if direction == 1j else x.dtype)
            plus[index] += step * direction
            minus[index] -= step * direction
            derivative = (float(np.real(function(plus))) - float(np.real(function(minus)))) / (
                2 * step)
            gradient[index] += derivative * direction
    return gradient
