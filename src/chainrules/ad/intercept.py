"""NumPy entry points that NumPy's dispatch protocols cannot route to traced values.

``np.array``/``np.asarray`` do not dispatch on their argument; ``np.vectorize(f)(i)``,
``np.apply_along_axis(f, 0, a)`` and ``np.piecewise`` with plain array arguments never see the
traced values that ``f`` captures; and SciPy's Python-level functions (``logsumexp``,
``expm``, ...) convert their arguments with ``np.asarray`` before anything can dispatch. While at least one trace is active, these names are replaced
in the ``numpy`` namespace (and ``np.vectorize.__call__`` on the class, so vectorized functions
made before the trace are covered too) by versions that look for traced values and, if they
find some, hand the call to the engine. When no trace is active, NumPy is untouched: there is no
cost at all.

Not covered: references taken before the trace (``from numpy import asarray``), C extensions,
and threads other than the tracing one running NumPy code at the same time.
"""

from __future__ import annotations

import sys
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
    "vectorize.__call__": np.vectorize.__call__,
}


def _holds_traced(x: Any) -> bool:
    from ..core.structure import is_structure, leaves
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


def _routed(original: Any) -> Any:
    """``original``, handed to the engine when an argument holds a traced value."""
    def routed(*args: Any, **kwargs: Any) -> Any:
        if any(_holds_traced(a) for a in args) or any(
                _holds_traced(v) for v in kwargs.values()):
            from .tape import record

            return record(original, args, kwargs)
        return original(*args, **kwargs)

    routed.__wrapped__ = original
    return routed


# Functions written in Python that convert their arguments with np.asarray (so traced values
# never reach __array_function__), or that take a callable: (module, name).
ROUTED = [("numpy", "apply_along_axis"), ("numpy", "piecewise"),
          ("scipy.special", "logsumexp"), ("scipy.special", "softmax"),
          ("scipy.special", "log_softmax"), ("scipy.special", "polygamma"),
          ("scipy.linalg", "solve_triangular"),
          ("scipy.linalg", "expm"), ("scipy.linalg", "cho_solve")]
_replaced: list = []


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
            np.vectorize.__call__ = _vectorize_call
            for module_name, name in ROUTED:
                module = sys.modules.get(module_name)  # only modules the program imported
                original = getattr(module, name, None) if module else None
                if original is not None:
                    setattr(module, name, _routed(original))
                    _replaced.append((module, name, original))


def exit() -> None:
    """A trace ends: restore NumPy when no trace is left."""
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0:
            np.array = ORIGINALS["array"]
            np.asarray = ORIGINALS["asarray"]
            np.asanyarray = ORIGINALS["asanyarray"]
            np.vectorize.__call__ = ORIGINALS["vectorize.__call__"]
            while _replaced:
                module, name, original = _replaced.pop()
                setattr(module, name, original)
