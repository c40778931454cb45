"""How chainrules names a function in its messages: ``module.qualname``, as the user would
import it (``numpy.sin``, ``scipy.special.gammaln``, ``mymodel.loss``).

>>> import numpy as np
>>> function_name(np.linalg.solve)
'numpy.linalg.solve'
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["function_name", "is_function"]


# Where a ufunc without a module (NumPy 1's, SciPy's) is found, in this order.
_UFUNC_HOMES = ("numpy", "scipy.special", "scipy.special._ufuncs")


def function_name(f: Any) -> str:
    """``module.qualname`` of ``f`` (its repr if it has no name).

    >>> import scipy.special
    >>> function_name(scipy.special.huber)  # a ufunc: SciPy's, not NumPy's
    'scipy.special.huber'
    """
    module = getattr(f, "__module__", None)
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)
    if module is None and type(f).__module__ == "numpy":  # a ufunc: found where it lives
        module = next((home for home in _UFUNC_HOMES
                       if getattr(sys.modules.get(home), name, None) is f), None)
    return f"{module}.{name}" if module and module not in ("builtins",) else name


def is_function(value: Any) -> bool:
    """Whether ``value`` is a function to call, not a value: callable, and not an array-like
    (arrays, and an engine's traced values, define ``__array_ufunc__``; a traced value is
    callable so that values of callable vector spaces can be called).

    >>> import numpy as np
    >>> is_function(np.sin), is_function(lambda x: x), is_function(np.ones(2))
    (True, True, False)
    """
    return callable(value) and not hasattr(type(value), "__array_ufunc__")
