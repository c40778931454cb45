"""``scipy.optimize.nnls``, the non-negative least-squares solution, for engines to trace.

SciPy solves it in compiled code, which cannot take traced values. At the solution, the
components that are positive (the passive set) are the unconstrained least-squares solution on
their columns of ``A``, and the others are zero; the set is constant under small changes of
``A`` and ``b`` (where no component is exactly zero at a constraint's edge), so the solution's
derivative is that of ``lstsq(A[:, passive], b)``. SciPy finds the set on the plain values
(`nnls_passive_set`, which engines compute on plain values and do not differentiate); the
solution and the residual norm are then computed from the traced ``A`` and ``b``.

>>> import numpy as np, scipy.optimize
>>> A, b = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]), np.array([2.0, 1.0, -1.0])
>>> x, residual = nnls(A, b)
>>> bool(np.allclose(x, scipy.optimize.nnls(A, b)[0]))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.optimize as optimize

from ....core.registry import non_differentiable, recorded_whole

__all__ = ["nnls", "nnls_passive_set"]


def nnls_passive_set(A: Any, b: Any, *args: Any, **kwargs: Any) -> np.ndarray:
    """Where SciPy's solution is positive; not differentiable: an engine computes it on plain
    values.

    >>> nnls_passive_set(np.eye(2), np.array([1.0, -1.0]))
    array([ True, False])
    """
    return optimize.nnls(A, b, *args, **kwargs)[0] > 0


non_differentiable(recorded_whole(nnls_passive_set))


def nnls(A: Any, b: Any, *args: Any, **kwargs: Any) -> tuple:
    """``scipy.optimize.nnls``: ``(x, ||A x - b||)``, ``x`` the least-squares solution on the
    passive set's columns, zero elsewhere."""
    columns = np.flatnonzero(nnls_passive_set(A, b, *args, **kwargs))
    A = np.asarray(A)
    count = np.shape(A)[1]
    if columns.size:
        solution = np.linalg.lstsq(A[:, columns], b, rcond=None)[0]
        x = np.eye(count)[:, columns] @ solution
    else:  # every component at its bound: zero, whatever A and b
        x = np.zeros(count)
    return x, np.linalg.norm(A @ x - b)
