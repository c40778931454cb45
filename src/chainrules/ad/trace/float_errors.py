"""Whose floating-point error is it: the user's function's, or a rule's derivative?

Under the user's ``np.errstate(all="raise")``, NumPy raises ``FloatingPointError`` in whatever
computation divides by zero. A forward rule computes the function's value and its derivative
together, and a derivative may be infinite where the value is fine (``sqrt`` at 0: JAX gives
``inf``). When a rule raises (or warns, under ``python -W error``), `user_error_or_retry` runs the plain function under the user's
state: if that raises too, the error is the user's and is raised as NumPy would; else the rule
runs again with errors ignored, so its derivative is ``inf`` or ``nan`` as computed, without a
warning from chainrules' own code. The normal path costs nothing (a ``try`` block).

>>> import numpy as np
>>> with np.errstate(all="raise"):
...     user_error_or_retry(np.sqrt, (0.0,), {}, lambda: np.float64(1.0) / np.sqrt(0.0))
np.float64(inf)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .traced import primal_value

__all__ = ["user_error_or_retry"]


def user_error_or_retry(function: Any, primals: tuple, kwargs: dict,
                        retry: Callable[[], Any]) -> Any:
    """After a rule for ``function`` raised ``FloatingPointError`` (or a ``RuntimeWarning``
    turned into an error): raise the user's own error if ``function`` raises on the plain
    values, else ``retry()`` with errors ignored."""
    plain = tuple(primal_value(p) for p in primals)
    function(*plain, **kwargs)  # the user's error state applies to the user's computation
    with np.errstate(all="ignore"):
        return retry()
