"""NumPy's iterators over arrays written with indexing, for engines to trace: ``ndenumerate``
yields each index with the element there, read by ``arr[index]`` (a sparse read, whose
cotangent costs its one element), in NumPy's order (C order, last index fastest).

>>> import numpy as np
>>> [(index, float(value)) for index, value in ndenumerate(np.array([[1.0, 2.0]]))]
[((0, 0), 1.0), ((0, 1), 2.0)]
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

__all__ = ["ndenumerate"]


def ndenumerate(arr: Any) -> Iterator[tuple]:
    """``np.ndenumerate(arr)``: ``(index, arr[index])`` for every index."""
    for index in np.ndindex(*np.shape(arr)):
        yield index, arr[index]
