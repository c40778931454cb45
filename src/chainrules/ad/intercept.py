"""NumPy entry points that NumPy's dispatch protocols cannot route to traced values.

``np.array``/``np.asarray`` do not dispatch on their argument, and ``np.vectorize(f)(i)``,
``np.apply_along_axis(f, 0, a)`` and ``np.piecewise`` with plain array arguments never see the
traced values that ``f`` captures. While at least one trace is active, these names are replaced
in the ``numpy`` namespace (and ``np.vectorize.__call__`` on the class, so vectorized functions
made before the trace are covered too) by versions that look for traced values and, if they
find some, hand the call to the engine. When no trace is active, NumPy is untouched: there is no
cost at all.

Not covered: references taken before the trace (``from numpy import asarray``), C extensions,
and threads other than the tracing one running NumPy code at the same time.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

__all__ = ["enter", "exit", "ORIGINALS"]

_lock = threading.Lock()
_depth = 0

ORIGINALS = {
    "array": np.array,
    "asarray": np.asarray,
    "asanyarray": np.asanyarray,
    "apply_along_axis": np.apply_along_axis,
    "piecewise": np.piecewise,
    "vectorize.__call__": np.vectorize.__call__,
}


def _holds_traced(x: Any) -> bool:
    from .structure import is_structure, leaves
    from .tracer import Traced

    if type(x) is Traced:
        return True
    return is_structure(x) and any(True for _ in leaves(x, lambda v: type(v) is Traced))


def _traced_array(obj: Any, dtype: Any = None, **kwargs: Any) -> Any:
    """np.array/np.asarray of a traced value, or of nested lists holding traced values."""
    from .tracer import Traced

    if type(obj) is Traced:
        result = obj
    elif isinstance(obj, (list, tuple)) and _holds_traced(obj):
        result = np.stack([_traced_array(element) for element in obj]) if len(obj) else \
            ORIGINALS["array"](obj)
    else:
        return ORIGINALS["array"](obj, dtype=dtype, **kwargs)
    if dtype is not None and np.dtype(dtype) != result.dtype:
        result = result.astype(dtype)
    return result


def _array(obj: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> Any:
    if _holds_traced(obj):
        return _traced_array(obj, dtype)
    return ORIGINALS["array"](obj, dtype, *args, **kwargs)


def _asarray(obj: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> Any:
    if _holds_traced(obj):
        return _traced_array(obj, dtype)
    return ORIGINALS["asarray"](obj, dtype, *args, **kwargs)


def _asanyarray(obj: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> Any:
    if _holds_traced(obj):
        return _traced_array(obj, dtype)
    return ORIGINALS["asanyarray"](obj, dtype, *args, **kwargs)


def _apply_along_axis(function: Any, axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    if _holds_traced(function) or _holds_traced(arr) or any(_holds_traced(a) for a in args):
        from .tape import record

        return record(ORIGINALS["apply_along_axis"], (function, axis, arr) + args, kwargs)
    return ORIGINALS["apply_along_axis"](function, axis, arr, *args, **kwargs)


def _piecewise(x: Any, condlist: Any, funclist: Any, *args: Any, **kwargs: Any) -> Any:
    if _holds_traced(x) or _holds_traced(funclist) or any(_holds_traced(a) for a in args):
        from .tape import record

        return record(ORIGINALS["piecewise"], (x, condlist, funclist) + args, kwargs)
    return ORIGINALS["piecewise"](x, condlist, funclist, *args, **kwargs)


def _vectorize_call(self: np.vectorize, *args: Any, **kwargs: Any) -> Any:
    if _holds_traced(self.pyfunc) or any(_holds_traced(a) for a in args) or any(
            _holds_traced(v) for v in kwargs.values()):
        from ..rules.higher_order import vectorized_call
        from .tape import record

        options = {"otypes": self.otypes, "excluded": self.excluded,
                   "signature": self.signature}
        return record(vectorized_call, (self.pyfunc,) + args, {**kwargs, **options})
    return ORIGINALS["vectorize.__call__"](self, *args, **kwargs)


def enter() -> None:
    """A trace starts: route the entry points above to the engine (first trace only)."""
    global _depth
    with _lock:
        _depth += 1
        if _depth == 1:
            np.array = _array
            np.asarray = _asarray
            np.asanyarray = _asanyarray
            np.apply_along_axis = _apply_along_axis
            np.piecewise = _piecewise
            np.vectorize.__call__ = _vectorize_call


def exit() -> None:
    """A trace ends: restore NumPy when no trace is left."""
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0:
            np.array = ORIGINALS["array"]
            np.asarray = ORIGINALS["asarray"]
            np.asanyarray = ORIGINALS["asanyarray"]
            np.apply_along_axis = ORIGINALS["apply_along_axis"]
            np.piecewise = ORIGINALS["piecewise"]
            np.vectorize.__call__ = ORIGINALS["vectorize.__call__"]
