"""Lists and tuples of traced values wherever NumPy takes an array-like.

NumPy's dispatch (``__array_function__``) looks at a function's array arguments, not inside
lists: ``np.mean([a, b])`` with traced ``a`` and ``b`` never reaches the engine, and NumPy
converts the list itself, which a traced value refuses (`ArrayConversionError`). While a trace
is active, every array function of ``numpy``, ``numpy.linalg`` and ``numpy.fft`` is replaced in
its namespace by a wrapper that calls the function unchanged and, only if that conversion was
refused, calls it once more with each list or tuple argument that holds traced values turned
into a traced array by ``np.array`` (recorded by its rule, as ``np.array([a, b])`` in user code
is). So:

- a call without such a list costs one Python call more, and nothing else;
- a function whose dispatch looks inside lists (``np.stack``, ``np.concatenate``) receives
  the list itself, as before;
- nested lists mixing traced values, numbers and plain arrays become what ``np.array`` makes
  of them, with NumPy's own errors (a ragged list is NumPy's ``ValueError``).

The index tricks ``np.r_`` and ``np.c_`` (and every ``AxisConcatenator``) convert their pieces
with a reference to ``np.array`` of their own module; it is replaced too, so traced pieces,
scalars, plain arrays, slices (constant ranges) and the axis directives ``"0"``, ``"1,2"``...
work as in NumPy.

    >>> import numpy as np, chainrules as cr
    >>> cr.grad(lambda x: np.mean([x[0], 3 * x[1]]))(np.array([1.0, 2.0]))
    array([0.5, 1.5])

Not covered: a ufunc given only lists (``np.exp([a, b])``: a ufunc cannot be wrapped without
losing its identity and methods; write ``np.exp(np.array([a, b]))``), references taken before
the trace (``from numpy import mean``), and the ``"r"``/``"c"`` matrix directives of ``np.r_``.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ...core.registry import STANDS_FOR
from ..trace.errors import ArrayConversionError
from ..trace.values import holds_traced
from .creation import REPLACEMENTS
from .routes import ORIGINALS, ROUTED

__all__ = ["install", "uninstall", "accepting_array_likes"]

_DISPATCHER = type(np.mean)  # NumPy's array functions (numpy._ArrayFunctionDispatcher)
_NAMESPACES = ("numpy", "numpy.linalg", "numpy.fft")
_tables: list | None = None  # [(namespace dict, {name: wrapper}, {name: original})]


def accepting_array_likes(original: Any) -> Any:
    """``original``, called again with its list and tuple arguments that hold traced values
    converted by ``np.array`` when NumPy's own conversion of them was refused."""
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        except ArrayConversionError:
            converted = _converted(args, kwargs)
            if converted is None:
                raise
        return original(*converted[0], **converted[1])

    for attribute in ("__name__", "__qualname__", "__module__", "__doc__"):
        setattr(call, attribute, getattr(original, attribute, None))
    call.__wrapped__ = original
    setattr(call, STANDS_FOR, original)  # its rules are the original's
    return call


def _converted(args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
    """``args`` and ``kwargs`` with each list or tuple holding traced values as a traced array;
    None if there is none."""
    def convert(value: Any) -> Any:
        if type(value) in (list, tuple) and holds_traced(value):
            return np.array(value)  # the trace's np.array: recorded by its rule
        return value

    new_args = tuple(convert(arg) for arg in args)
    new_kwargs = {key: convert(value) for key, value in kwargs.items()}
    if all(new is old for new, old in zip(new_args, args)) and all(
            new_kwargs[key] is kwargs[key] for key in kwargs):
        return None
    return new_args, new_kwargs


def _build_tables() -> list:
    # Names that the other interceptions replace keep their own replacement.
    excluded = {name.split(".")[0] for name in ORIGINALS} | {
        name for module, name in ROUTED if module in _NAMESPACES}
    tables = []
    for module_name in _NAMESPACES:
        namespace = vars(sys.modules[module_name])
        originals = {name: value for name, value in list(namespace.items())
                     if type(value) is _DISPATCHER and not name.startswith("_")
                     and name not in excluded}
        tables.append((namespace, {name: accepting_array_likes(value)
                                   for name, value in originals.items()}, originals))
    index_tricks = vars(sys.modules[type(np.r_).__module__])
    if index_tricks.get("array") is ORIGINALS["array"]:  # its own reference, read by r_, c_
        tables.append((index_tricks, {"array": REPLACEMENTS["array"]},
                       {"array": ORIGINALS["array"]}))
    return tables


def install() -> None:
    """A first trace starts: put the wrappers in NumPy's namespaces (one dict update each)."""
    global _tables
    if _tables is None:
        _tables = _build_tables()
    for namespace, wrappers, _ in _tables:
        namespace.update(wrappers)


def uninstall() -> None:
    """The last trace ended: put NumPy's functions back."""
    for namespace, _, originals in _tables or ():
        namespace.update(originals)
