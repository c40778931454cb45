"""The product of a SciPy sparse matrix (or array) with a dense one: ``A @ x``, ``A.dot(x)``,
``x @ A`` (``(A^T @ x^T)^T``, as SciPy computes it). The matrix is a constant (SciPy's sparse
formats hold plain arrays: a traced value never enters one), so the product is linear in ``x``:
its cotangent is ``A^H @ dy`` and its tangent ``A @ dx``, both sparse products again, so the
rule can be differentiated again.

An engine records the product when SciPy's sparse classes meet traced values in their matrix
product (``ROUTED_METHODS`` below: ``_matmul_dispatch``, ``_mul_dispatch`` before SciPy 1.12).

>>> import numpy as np, scipy.sparse
>>> from chainrules import rrule
>>> A = scipy.sparse.csr_matrix(np.array([[1.0, 2.0], [0.0, 3.0]]))
>>> y, pullback = rrule(matmul, A, np.ones(2))
>>> y.tolist(), pullback(np.array([1.0, 1.0]))[2].tolist()
([3.0, 3.0], [1.0, 5.0])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse

from ....core.projection import register_constant_type
from ....core.registry import recorded_whole
from ...define import define

__all__ = ["ROUTED_METHODS", "matmul"]


# SciPy's sparse matrices and arrays hold plain arrays: constants, with no tangent
register_constant_type(scipy.sparse._base._spbase)


@recorded_whole  # an engine records `A @ x` as this function
def matmul(matrix: Any, x: Any) -> Any:
    """``matrix @ x`` for a SciPy sparse ``matrix`` and a dense ``x``, as SciPy computes it.

    >>> import scipy.sparse
    >>> matmul(scipy.sparse.eye(2) * 2.0, np.array([1.0, 2.0])).tolist()
    [2.0, 4.0]
    """
    return matrix @ x


def _adjoint(matrix: Any) -> Any:
    """``matrix^H`` of a sparse matrix (or of a dense one)."""
    transposed = matrix.T if hasattr(matrix, "tocsr") else np.swapaxes(matrix, -1, -2)
    return transposed.conj() if np.dtype(matrix.dtype).kind == "c" else transposed


define(matmul, None, lambda call, dy: matmul(_adjoint(call.args[0]), dy))


def _redirect(matrix: Any, args: tuple, kwargs: dict) -> tuple:
    return matmul, (matrix, *args), kwargs


ROUTED_METHODS = [("scipy.sparse._base", "_spbase", name, _redirect)
                  for name in ("_matmul_dispatch", "_mul_dispatch")]
