"""``scipy.stats``' ``_find_repeats`` (the values that occur more than once in an array, and how
often), for engines to trace: SciPy's sorts a flattened view of its argument in place, which
would reorder the caller's array (a write through a view: refused while tracing); this one
sorts a copy. ``theilslopes`` counts ties with it. The counts are integers (no derivative).

>>> find_repeats(np.array([2.0, 1.0, 2.0, 3.0, 1.0, 2.0]))
(array([1., 2.]), array([2, 3]))
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["find_repeats"]


def find_repeats(arr: Any) -> tuple:
    """``(values, counts)`` of the values of ``arr`` that occur more than once."""
    values = np.sort(np.ravel(np.asarray(arr, dtype=np.float64)))
    if values.size == 0:
        return np.array(0, np.float64), np.array(0, np.intp)
    starts = np.concatenate([[True], values[1:] != values[:-1]])
    counts = np.diff(np.concatenate([np.flatnonzero(starts), [values.size]]))
    repeated = counts > 1
    return values[starts][repeated], counts[repeated]
