"""A pushforward derived from pullbacks, for functions that have an rrule and no frule: one
pullback per real output component (exact; meant for small outputs), and the real inner
product of tangents it is made of.

>>> import numpy as np
>>> from chainrules.core.tangents import ZeroTangent
>>> pushforward_from_pullbacks(np.float64(0.0), lambda dy: (ZeroTangent(), 2.0 * dy),
...                            (ZeroTangent(), 3.0))
np.float64(6.0)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .tangents import AbstractZero, Tangent, unthunk

__all__ = ["pushforward_from_pullbacks", "real_inner"]


def real_inner(cotangent: Any, tangent: Any) -> float:
    """``Re <cotangent, tangent>``, summed over the fields of structural tangents."""
    cotangent, tangent = unthunk(cotangent), unthunk(tangent)
    if isinstance(cotangent, AbstractZero) or isinstance(tangent, AbstractZero):
        return 0.0
    if isinstance(cotangent, Tangent):
        fields = tangent if isinstance(tangent, Tangent) else None
        return sum(real_inner(value, fields[key] if fields is not None else tangent[key])
                   for key, value in cotangent.items())
    if isinstance(cotangent, (tuple, list)):
        if isinstance(tangent, Tangent):  # fields by position; missing ones are zero
            return sum(real_inner(c, tangent[i]) for i, c in enumerate(cotangent))
        return sum(real_inner(c, t) for c, t in zip(cotangent, tangent))
    if isinstance(cotangent, dict):
        return sum(real_inner(value, tangent[key] if isinstance(tangent, Tangent) else
                               tangent.get(key, 0.0)) for key, value in cotangent.items())
    # no float(): inside an outer trace (order 2) the product is a traced value
    return np.real(np.vdot(np.asarray(cotangent), np.asarray(tangent)))


def pushforward_from_pullbacks(y: Any, pullback: Callable, tangents: tuple) -> Any:
    """``J dx`` for a numeric output ``y``, from ``J^H dy`` for each real output direction:
    ``Re dy_k = Re <J^H e_k, dx>`` and ``Im dy_k = Re <J^H (i e_k), dx>``."""
    values = np.asarray(y)
    complex_output = values.dtype.kind == "c"
    dtype = values.dtype if values.dtype.kind in "fc" else np.dtype(float)
    parts: list = []
    for index in np.ndindex(values.shape):
        part: Any = 0.0
        for unit in ((1.0, 1j) if complex_output else (1.0,)):
            seed = np.zeros(values.shape, dtype)
            seed[index] = unit
            cotangents = pullback(seed if values.ndim else seed[()])
            part = part + unit * sum(real_inner(c, t) for c, t in zip(cotangents, tangents))
        parts.append(part)
    if all(issubclass(type(part), (float, complex, np.number)) for part in parts):
        dy = np.array(parts, dtype).reshape(values.shape)
    else:  # traced parts (the pushforward differentiated again): stacked, no writes
        dy = np.reshape(np.stack(parts), values.shape)
    return dy if values.ndim else dy[()]
