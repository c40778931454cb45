"""Rules for reductions: sums, means, products, extrema, moments, norms, cumulative ops, sort.

Each rule is a pair of formulas on a `Call` (see `_array_rules`): ``back(call, dy)``, the
cotangent of the array argument, and ``forward(call, dx)``, the output tangent. ``call.axes``
lines the output back up with the input (``axis`` as int, tuple, None or negative, and
``keepdims``). Holomorphic reductions take ``conj`` of their partials in reverse mode;
real-valued ones (moments, norms) are written with their gradient ``g = dL/dRe + i dL/dIm``,
giving ``back = g * Re(dy)`` and ``forward = sum(Re(conj(g) * dx))``.

Ties: ``max``/``min`` (and ``ptp``, and the inf-norms) split the cotangent evenly between the
elements that attain the extremum.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.dtypes import cast_to
from ._array_rules import Call, register, spread

_REDUCTION_REFUSES = ("out", "where", "initial")


# --- sum, mean -----------------------------------------------------------------------------------

def _sum_back(call: Call, dy: Any) -> Any:
    return spread(call, dy)


def _mean_back(call: Call, dy: Any) -> Any:
    return spread(call, dy, divide_by=call.axes.count)


register(np.sum, _sum_back, refuse_options=_REDUCTION_REFUSES)
register(np.mean, _mean_back, refuse_options=_REDUCTION_REFUSES)
