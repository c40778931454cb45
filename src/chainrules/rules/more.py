"""Rules for public NumPy functions that the namespace walk found without one and that are
short: the array-API spellings of existing products (``np.linalg.matmul``, ``outer``,
``tensordot``), matrix transposes, and the elementwise ``copysign`` and ``ldexp``. Each reuses
the formulas of the rule it restates, so both stay one formula.

    >>> import numpy as np
    >>> from chainrules import rrule, unthunk
    >>> y, pullback = rrule(np.copysign, np.array([2.0, -3.0]), np.array([-1.0, 1.0]))
    >>> unthunk(pullback(np.ones(2))[1])
    array([-1., -1.])
"""

from __future__ import annotations

import numpy as np

from ..core.scalar_rule import scalar_rule
from . import linalg
from ._define import define

__all__: list[str] = []


def _array_api_tensordot_axes(call):
    """np.linalg.tensordot names its operands x1, x2 (np.tensordot's are a, b)."""
    return linalg._contracted_axes(np.ndim(call.args[0]), np.ndim(call.args[1]), call["axes"])


def _transpose_back(call, dy):
    return np.swapaxes(dy, -1, -2)


# np.linalg's array-API functions take the positional arguments of np.matmul, np.outer (1-D
# only, which NumPy checks when computing the value) and np.tensordot (axes=).
if hasattr(np.linalg, "matmul"):  # NumPy 2.0
    define(np.linalg.matmul, linalg._matmul_da, linalg._matmul_db)
    define(np.linalg.outer, linalg._outer_da, linalg._outer_db)
    define(np.linalg.tensordot, linalg._product(_array_api_tensordot_axes, of_b=False),
           linalg._product(_array_api_tensordot_axes, of_b=True))
for _transpose in (getattr(np, "matrix_transpose", None),
                   getattr(np.linalg, "matrix_transpose", None)):
    if _transpose is not None:
        define(_transpose, _transpose_back)

# copysign(a, b) = |a| with b's sign: slope +-1 in a (the sign of a times that of b), 0 in b.
scalar_rule(np.copysign, lambda y, a, b: np.where(np.signbit(a) == np.signbit(b), 1.0, -1.0),
            lambda y, a, b: 0 * b)
# ldexp(a, n) = a * 2**n, n an integer.
scalar_rule(np.ldexp, lambda y, a, n: np.ldexp(np.ones_like(a), n), None)
