"""The functions of SciPy's vendored array-API layer for NumPy
(``scipy._lib.array_api_compat.numpy``) that SciPy's own functions call and that an engine
cannot trace as they are written, in NumPy's public functions, which have rules: ``clip``
fills an array it makes itself (``scipy.stats.pearsonr`` clips its coefficient with it), and
``linalg.solve`` calls NumPy's private solver on arrays it converts itself
(``scipy.signal.lfilter_zi``, which ``filtfilt`` calls). An engine runs these versions while it
traces (``TRACED_PATHS`` in `chainrules.ad.dispatch.routes`).

>>> import numpy as np
>>> clip(np.array([-2.0, 0.5, 3.0]), -1.0, 1.0).tolist()
[-1.0, 0.5, 1.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["clip", "solve"]


def clip(x: Any, /, min: Any = None, max: Any = None, out: Any = None) -> Any:  # noqa: A002
    """The array API's ``clip``: ``np.clip`` in ``x``'s dtype (a NaN bound gives NaN, as
    NumPy's), broadcast to the shapes of the bounds.

    >>> clip(np.ones(2, dtype=np.float32), 0.0, np.array([0.5, 2.0])).dtype
    dtype('float32')
    """
    if out is not None:
        raise NotImplementedError("clip: out= is not supported in differentiated code; use "
                                  "the returned array.")
    shape = np.broadcast_shapes(*(np.shape(v) for v in (x, min, max) if v is not None))
    clipped = np.copy(x) if min is None and max is None else np.clip(x, min, max)
    if np.shape(clipped) != shape or not shape:
        # a new array, not a view; a 0-d array rather than the array API's number: SciPy
        # writes into the result where it is writeable, which it takes a traced number to be
        clipped = np.array(np.broadcast_to(clipped, shape))
    return clipped if clipped.dtype == x.dtype else clipped.astype(x.dtype)


def solve(x1: Any, x2: Any, /) -> Any:
    """The array API's ``linalg.solve``: ``x2`` a vector only when it is 1-d, else a stack of
    matrices (NumPy 2's rule; NumPy 1.26's ``np.linalg.solve`` takes a ``x2`` of one
    dimension fewer than ``x1`` as vectors, so the matrices are broadcast to one stack here).

    >>> solve(np.eye(2) * 2.0, np.array([2.0, 4.0])).tolist()
    [1.0, 2.0]
    """
    if np.ndim(x2) == 1:
        return np.linalg.solve(x1, x2)
    batch = np.broadcast_shapes(np.shape(x1)[:-2], np.shape(x2)[:-2])
    return np.linalg.solve(np.broadcast_to(x1, batch + np.shape(x1)[-2:]),
                           np.broadcast_to(x2, batch + np.shape(x2)[-2:]))
