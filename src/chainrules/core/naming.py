"""How chainrules names a function in its messages: ``module.qualname``, as the user would
import it (``numpy.sin``, ``scipy.special.gammaln``, ``mymodel.loss``).

>>> import numpy as np
>>> function_name(np.linalg.solve)
'numpy.linalg.solve'
"""

from __future__ import annotations

from typing import Any

__all__ = ["function_name"]


def function_name(f: Any) -> str:
    """``module.qualname`` of ``f`` (its repr if it has no name)."""
    module = getattr(f, "__module__", None)
    if module is None and type(f).__module__ == "numpy":  # NumPy 1's ufuncs have no module
        module = "numpy"
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)
    return f"{module}.{name}" if module and module not in ("builtins",) else name
