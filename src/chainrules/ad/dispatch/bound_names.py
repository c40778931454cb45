"""Names bound before the trace began: ``from numpy import zeros, array, float64``, ``from
numpy import exp as np_exp``, ``DTYPE = np.float64``, ``from math import sqrt`` at the top of a
module imported before ``grad`` was called.

Such a name holds NumPy's (or ``math``'s) own object, not the numpy namespace's entry that a
trace replaces, so ``zeros(n)`` would make a plain array that cannot take traced values, and
``float64(t)`` or ``sqrt(t)`` would convert a traced value with ``float()``. While a trace is
active, every module global of the program's modules (not those of `LIBRARIES`, the standard
library or compiled extensions) bound to one of these objects is bound to its replacement,
and bound back when the last trace ends (unless the program rebound it meanwhile). Ufuncs
(``np_exp``) dispatch by themselves and Python functions are rerouted in place
(`chainrules.ad.dispatch.routes.Rerouted`): neither needs this.

The modules are scanned again when the program has imported more; ``__main__`` and the globals
of the code calling the transform (a notebook, a doctest, ``exec``'d code) at every trace. The
globals of functions generated into namespaces of their own and kept in such a global (``f =
sympy.lambdify(x, expr)``) are scanned too. Not covered: such objects held elsewhere (a class
attribute, a default argument, a dictionary, a generated function kept only in an attribute):
they raise the error that says what to write.

>>> import numpy as np, chainrules as cr
>>> from numpy import zeros
>>> def f(x):
...     out = zeros(2)
...     out[0] = x[0] ** 2
...     return np.sum(out)
>>> cr.grad(f)(np.array([3.0, 1.0]))
array([6., 0.])
"""

from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["BoundName", "scan", "scan_namespace", "stdlib_namespace"]

_SKIPPED_TOP = frozenset(getattr(sys, "stdlib_module_names", ())) | {"__mp_main__"}


class BoundName:
    """A module global ``name`` bound to ``original``, rebound to ``replacement`` while
    tracing."""

    __slots__ = ("namespace", "name", "replacement", "original")

    def __init__(self, namespace: dict, name: str, replacement: Any, original: Any):
        self.namespace, self.name = namespace, name
        self.replacement, self.original = replacement, original

    def install(self) -> None:
        if self.namespace.get(self.name) is self.original:
            self.namespace[self.name] = self.replacement

    def uninstall(self) -> None:
        if self.namespace.get(self.name) is self.replacement:  # not rebound by the program
            self.namespace[self.name] = self.original


def _program_module(name: str, module: Any, libraries: frozenset) -> bool:
    if name == "__main__":
        return True
    top = name.partition(".")[0]
    if top in libraries or top in _SKIPPED_TOP or type(module) is not types.ModuleType:
        return False
    return not str(getattr(module, "__file__", "") or "").endswith((".so", ".pyd"))


def stdlib_namespace(namespace: dict) -> bool:
    """Whether ``namespace`` is the globals of a module of Python's standard library."""
    name = namespace.get("__name__") or ""
    return name.partition(".")[0] in _SKIPPED_TOP and \
        getattr(sys.modules.get(name), "__dict__", None) is namespace


def scan_namespace(namespace: dict, replacements: dict, foreign: list | None = None) -> list:
    """The `BoundName` entries of one module's globals: ``replacements`` maps ``id`` of each
    original object to ``(original, replacement)``. ``foreign`` collects the globals of
    functions found there that are not a module's (code ``exec``'d in a namespace of its own,
    as ``sympy.lambdify`` makes it), for the caller to scan too."""
    found = []
    for name, value in list(namespace.items()):
        entry = replacements.get(id(value))
        if entry is not None and entry[0] is value:
            found.append(BoundName(namespace, name, entry[1], value))
        elif foreign is not None and type(value) is types.FunctionType and \
                value.__globals__ is not namespace:
            foreign.append(value.__globals__)
    return found


def scan(replacements: dict, libraries: frozenset) -> list:
    """The `BoundName` entries of every program module imported so far."""
    found: list = []
    foreign: list = []
    modules = set()
    for name, module in list(sys.modules.items()):
        if _program_module(name, module, libraries):
            modules.add(id(vars(module)))
            found += scan_namespace(vars(module), replacements, foreign)
    seen = set(modules)
    for namespace in foreign:  # one level: the namespaces of generated functions
        if id(namespace) not in seen and namespace.get("__name__") not in sys.modules:
            seen.add(id(namespace))
            found += scan_namespace(namespace, replacements)
    return found
