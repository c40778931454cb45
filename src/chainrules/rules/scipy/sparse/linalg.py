"""Rules for ``scipy.sparse.linalg``: ``spsolve(A, b)`` and ``expm_multiply(A, B)`` in their
dense right-hand side (the sparse matrix is a constant). Both are linear in it:
``spsolve``'s cotangent is ``spsolve(A^H, dy)``, ``expm_multiply``'s ``expm_multiply(A^H, dy)``;
their tangents the functions of the tangent. A dense ``A`` of ``expm_multiply`` is
differentiable too (the Frechet derivative of ``expm``, `scipy.linalg.expm_frechet`); its
time grid (``start``, ``stop``, ``num``) is refused by name.

>>> import numpy as np, scipy.sparse, scipy.sparse.linalg
>>> from chainrules import rrule
>>> A = scipy.sparse.csc_matrix(np.array([[2.0, 0.0], [1.0, 4.0]]))
>>> y, pullback = rrule(scipy.sparse.linalg.spsolve, A, np.array([2.0, 5.0]))
>>> y.tolist(), pullback(np.array([1.0, 0.0]))[2].tolist()
([1.0, 1.0], [0.5, 0.0])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse.linalg as spla

from ...define import Call, define, per_argument, unsupported
from .products import _adjoint

__all__: list[str] = []


def _spsolve_b(call: Call, dy: Any) -> Any:
    # SciPy returns a vector for a single column b of shape (n, 1): back to b's shape
    solved = spla.spsolve(_adjoint(call.args[0]).tocsc(), dy)
    return np.reshape(solved, np.shape(call.args[1]))


def _spsolve_check(call: Call) -> None:
    if not hasattr(call.args[0], "tocsc"):
        raise NotImplementedError(
            f"{call.name}: A of type {type(call.args[0]).__name__} is not supported in "
            "differentiated code, only a SciPy sparse matrix (a constant); for a dense A, "
            "call scipy.linalg.solve, which is differentiable in both arguments.")


define(spla.spsolve, None, _spsolve_b, check=_spsolve_check, refused=())


def _expm_multiply_check(call: Call) -> None:
    for option in ("start", "stop", "num", "endpoint"):
        if call[option] is not None:
            raise unsupported(call.name, option, call[option],
                              "None (one product exp(A) B; for a time grid, call it per time)")


def _expm_multiply_a(call: Call, dy: Any) -> Any:
    """A dense ``A``'s cotangent: the Frechet derivative of ``expm`` at ``A^H`` (its adjoint)
    in the direction ``dy B^H``. (A sparse ``A`` is a constant: never computed.)"""
    a, b = call.args[0], call.args[1]
    direction = np.outer(dy, np.conj(b)) if np.ndim(b) == 1 else \
        dy @ np.conj(np.swapaxes(b, -1, -2))
    return sla.expm_frechet(np.conj(np.swapaxes(a, -1, -2)), direction, compute_expm=False)


def _expm_multiply_da(call: Call, da: Any) -> Any:
    b = call.args[1]
    frechet = sla.expm_frechet(call.args[0], da, compute_expm=False)
    return frechet @ b


define(spla.expm_multiply, _expm_multiply_a,
       lambda call, dy: spla.expm_multiply(_adjoint(call.args[0]), dy,
                                           traceA=_conjugate_trace(call)),
       pushforward=per_argument(_expm_multiply_da), check=_expm_multiply_check, refused=())


def _conjugate_trace(call: Call) -> Any:
    trace = call["traceA"]
    return None if trace is None else np.conj(trace)
