"""``np.ma`` met by traced values: the shape helpers work, masked arrays are refused by name.

A masked array's data is an ndarray in memory: it cannot hold traced values, and converting
them would cut them out of the gradient. While a trace is active (and ``numpy.ma`` has been
imported), `swaps` replaces:

- ``np.ma.atleast_1d``/``atleast_2d``/``atleast_3d`` by NumPy's own for traced arguments: a
  traced value has no masked element, so the result is the values, reshaped (its mask, none,
  is a constant);
- ``np.ma.MaskedArray.__new__`` (``np.ma.array``, ``np.ma.masked_array``,
  ``np.ma.masked_invalid``, ``np.ma.masked_where``... all make one) by a check that raises a
  `TracingError` naming ``np.ma``, the line that asked, and how to write the masking with
  plain NumPy (``np.where``, ``where=``), for data holding traced values.

Everything else, and every plain argument, goes to ``np.ma`` unchanged.

    >>> import numpy as np, chainrules as cr
    >>> cr.grad(lambda x: np.sum(np.ma.atleast_2d(x) ** 2))(np.array([1.0, 2.0]))
    array([2., 4.])
"""

from __future__ import annotations

import linecache
import sys
from typing import Any

import numpy as np

from ..trace.errors import TracingError
from ..trace.values import holds_traced
from .routes import Swap

__all__ = ["swaps", "masked_array_error"]

_SHAPE_HELPERS = ("atleast_1d", "atleast_2d", "atleast_3d")
_swaps: list = []


def masked_array_error() -> Exception:
    """The error for a masked array of traced values, quoting the first line outside NumPy."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(
            ("numpy", "chainrules.ad")):
        frame = frame.f_back
    line = "" if frame is None else linecache.getline(frame.f_code.co_filename,
                                                      frame.f_lineno).strip()
    where = "" if frame is None else \
        f"`{line}` " * bool(line) + f"({frame.f_code.co_filename}, line {frame.f_lineno}): "
    return TracingError(
        f"{where}np.ma: a masked array cannot hold traced values (its data is a plain "
        f"ndarray: the values would be cut out of the gradient). Keep the values traced and "
        f"the mask plain: mask = ~np.isfinite(chainrules.primal(x)) (or your condition), then "
        f"np.where(mask, fill, x), np.sum(x, where=~mask), x[~mask]. np.ma.atleast_1d/2d/3d "
        f"work on traced values.")


def _shape_helper(name: str, original: Any) -> Any:
    numpy_function = getattr(np, name)

    def helper(*args: Any, **kwargs: Any) -> Any:
        if any(holds_traced(a) for a in args):
            return numpy_function(*args, **kwargs)
        return original(*args, **kwargs)

    helper.__name__ = helper.__qualname__ = name
    helper.__doc__ = original.__doc__
    helper.__wrapped__ = original
    return helper


def _guarded_new(original: Any) -> Any:
    def __new__(cls: type, data: Any = None, *args: Any, **kwargs: Any) -> Any:
        if holds_traced(data):
            raise masked_array_error()
        return original(cls, data, *args, **kwargs)

    __new__.__wrapped__ = original
    return __new__


def swaps() -> list:
    """The replacements in ``numpy.ma`` (`chainrules.ad.dispatch.routes.Swap` objects).

    ``numpy.ma`` is imported here, at the first trace (7 ms, once), not when a traced function
    first reaches ``np.ma``: NumPy 2 imports it on first access, which may be inside the trace,
    after the routes were planned, and the first trace of a process would then fail where the
    next one works."""
    if not _swaps:
        import numpy.ma as ma
        for name in _SHAPE_HELPERS:
            original = getattr(ma, name)
            _swaps.append(Swap(ma, name, _shape_helper(name, original), original))
        masked = ma.MaskedArray
        _swaps.append(Swap(masked, "__new__", _guarded_new(masked.__new__),
                            masked.__dict__["__new__"]))
    return _swaps
