"""Siegel's repeated-medians line (``scipy.stats.siegelslopes``), for engines to trace: SciPy
computes it in compiled code (pythran), which cannot take traced values.

For each point ``j``, the median of the slopes to the points with another ``x``; the line's
slope is the median of those. The intercept is the median of ``y - slope x``
(``method='hierarchical'``), or, ``'separate'``, the median over ``j`` of the medians of the
intercepts of the lines through ``j`` and each other point. Medians pick (or average) values,
so the result is differentiable in ``y`` and ``x`` wherever no two candidates tie.

While a trace runs, SciPy's compiled function with traced arguments runs the one here
(``TRACED_PATHS`` in `chainrules.ad.dispatch.routes`), on the arrays SciPy's ``siegelslopes``
prepared.

>>> y, x = np.array([1.0, 3.0, 5.2, 7.0]), np.array([0.0, 1.0, 2.0, 3.0])
>>> [float(v) for v in repeated_medians(y, x, "hierarchical")]
[2.0, 1.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["repeated_medians"]


def repeated_medians(y: Any, x: Any, method: str) -> tuple:
    """``(slope, intercept)`` of Siegel's repeated-medians line through ``(x, y)``."""
    y, x = np.asarray(y), np.asarray(x)
    slopes, intercepts = [], []
    for j in range(np.shape(y)[0]):
        other = np.asarray(x != x[j])  # (a comparison: plain)
        run = x[other] - x[j]
        slopes.append(np.median((y[other] - y[j]) / run))
        if method == "separate":
            intercepts.append(np.median((x[other] * y[j] - x[j] * y[other]) / run))
    slope = np.median(np.stack(slopes))
    if method == "separate":
        return slope, np.median(np.stack(intercepts))
    return slope, np.median(y - slope * x)
