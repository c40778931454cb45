"""``array_api_extra``'s ``at(x)[idx].set(y)``, ``.add(y)``, ``.multiply(y)``... while
tracing, where ``x`` or ``y`` holds traced values: SciPy's array-API code (its rotations, its
distributions) updates arrays with them, and for NumPy arrays they write in place, through a
view (``x[idx] *= y``), which an engine cannot follow. They run
`chainrules.rules.scipy.array_api.at_update` instead: one write of the new values into a copy.
Calls on plain values keep SciPy's code.

>>> import numpy as np, chainrules as cr, pytest
>>> at = pytest.importorskip("scipy._lib.array_api_extra._lib._at").at   # SciPy 1.16+
>>> float(cr.grad(lambda t: np.sum(at(np.ones(3))[1:].multiply(t)))(2.0))
2.0
"""

from __future__ import annotations

import inspect
from typing import Any

from ..trace.values import holds_traced
from .routes import Swap, loaded_module

__all__ = ["swaps"]

_MODULE = "scipy._lib.array_api_extra._lib._at"
_PARAMETERS = ["self", "at_op", "in_place_op", "out_of_place_op", "y", "copy", "xp"]


def _updating(original: Any) -> Any:
    # imported here, when SciPy is: importing chainrules imports no SciPy rule module
    from ...rules.scipy.array_api import at_update

    def _op(self: Any, at_op: Any, in_place_op: Any, out_of_place_op: Any, y: Any, /,
            copy: Any = None, xp: Any = None) -> Any:
        if holds_traced(self._x) or holds_traced(y):
            return at_update(self._x, self._idx, out_of_place_op, y, copy)
        return original(self, at_op, in_place_op, out_of_place_op, y, copy=copy, xp=xp)

    _op.__wrapped__ = original
    return _op


_made: list = []


def swaps() -> list:
    """The replacement to install while tracing, once SciPy's ``array_api_extra`` is imported
    (in the releases whose ``at._op`` takes the arguments read here)."""
    if _made:
        return _made
    module = loaded_module(_MODULE)
    if module is None:
        return []
    original = vars(module.at).get("_op")
    if original is None or list(inspect.signature(original).parameters) != _PARAMETERS:
        return []
    _made.append(Swap(module.at, "_op", _updating(original), original))
    return _made
