"""Rules for ``scipy.sparse.linalg``: ``spsolve(A, b)``, ``expm_multiply(A, B)``, the solves
of a factorization (``splu(A).solve(b)``, `factor_solve`) and the iterative solvers (``cg``,
``gmres``, ``bicgstab``, ``minres``...) in their dense right-hand side (a sparse matrix, a
``LinearOperator`` or a factor is a constant). ``spsolve`` and
``expm_multiply`` are linear in it:
``spsolve``'s cotangent is ``spsolve(A^H, dy)``, ``expm_multiply``'s ``expm_multiply(A^H, dy)``;
their tangents the functions of the tangent. A dense ``A`` of ``expm_multiply`` is
differentiable too (the Frechet derivative of ``expm``, `scipy.linalg.expm_frechet`); its
time grid (``start``, ``stop``, ``num``) is refused by name.

An iterative solver's ``x`` solves ``A x = b`` to its tolerance: by the implicit function
theorem ``db = A^-H dx``, computed by the same solver on ``A^H`` with the call's tolerances
(so the gradient is as accurate as the solution; the preconditioner and callback are not
reused), and, for a dense ``A``, ``dA = -db x^H``. An adjoint solve that does not converge
raises, naming the solver.

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
import scipy.sparse
import scipy.sparse.linalg as spla

from ....core.projection import register_constant_type
from ....core.registry import recorded_whole
from ....core.tangents import AbstractZero, ZeroTangent
from ...define import Call, define, per_argument, unsupported
from .products import _adjoint

__all__ = ["Factorization", "factor_solve"]


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


# --- a factorization's solves: splu(A).solve(b), factorized(A)(b) -----------------------------------

# SciPy's LU factor class (compiled; its module path differs between releases), a constant
_SUPERLU = type(spla.splu(scipy.sparse.eye(1, format="csc")))
register_constant_type(_SUPERLU)


@recorded_whole  # an engine records `lu.solve(b)` of a `Factorization` as this function
def factor_solve(factor: Any, b: Any, trans: str = "N") -> Any:
    """``factor.solve(b, trans)`` of SciPy's ``SuperLU`` factor (``splu``, ``spilu``): ``x``
    with ``A x = b`` (``A^T x = b`` for ``'T'``, ``A^H x = b`` for ``'H'``).

    >>> import scipy.sparse, scipy.sparse.linalg
    >>> lu = scipy.sparse.linalg.splu(scipy.sparse.csc_matrix(np.array([[2.0, 0.0], [1.0, 4.0]])))
    >>> factor_solve(lu, np.array([2.0, 5.0])).tolist()
    [1.0, 1.0]
    """
    return factor.solve(np.asarray(b), trans)


def _factor_solve_b(call: Call, dy: Any) -> Any:
    """The adjoint solve: ``A^-H dy`` for ``'N'`` (``'T'`` on a real factor), ``A^-1 dy`` for
    ``'H'`` (and ``'T'`` on a real one), ``conj(A^-1 conj(dy))`` for ``'T'`` on a complex one."""
    factor, trans = call.args[0], call["trans"] or "N"
    complex_factor = np.dtype(factor.L.dtype).kind == "c"
    if trans == "N":
        return factor_solve(factor, dy, "H" if complex_factor else "T")
    if trans == "T" and complex_factor:
        return np.conj(factor_solve(factor, np.conj(dy), "N"))
    return factor_solve(factor, dy, "N")


define(factor_solve, None, _factor_solve_b, None)


class Factorization:
    """SciPy's ``SuperLU`` factor whose ``solve`` an engine records (`factor_solve`), so that
    ``lu = splu(A); x = lu.solve(b)`` is differentiable in ``b``; every other attribute is the
    factor's (``L``, ``U``, ``perm_r``...). An engine hands these out for ``splu`` and ``spilu``
    while it traces.

    >>> import scipy.sparse, scipy.sparse.linalg
    >>> lu = Factorization(scipy.sparse.linalg.splu(scipy.sparse.eye(2, format="csc") * 2.0))
    >>> lu.solve(np.array([2.0, 4.0])).tolist(), lu.shape
    ([1.0, 2.0], (2, 2))
    """

    __slots__ = ("factor",)

    def __init__(self, factor: Any):
        self.factor = factor

    def solve(self, b: Any, trans: str = "N") -> Any:
        return factor_solve(self.factor, b, trans)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.factor, name)


register_constant_type(Factorization)


# --- iterative solvers: x = A^-1 b to a tolerance -------------------------------------------------

register_constant_type(spla.LinearOperator)  # a matrix given by its products: a constant

_ACCURACY = ("tol", "rtol", "atol", "maxiter", "restart", "shift", "inner_m", "outer_k")


def _adjoint_operator(a: Any) -> Any:
    return a.H if isinstance(a, spla.LinearOperator) else _adjoint(a)


def _iterative_solve(call: Call, a: Any, b: Any) -> Any:
    """``x`` with ``a x = b`` by the call's solver and tolerances, checked for convergence."""
    options = {name: call.kwargs[name] for name in _ACCURACY if name in call.kwargs}
    solver = getattr(spla, call.name.rsplit(".", 1)[-1])
    x, info = solver(a, b, **options)
    if np.ndim(info) == 0 and info != 0:
        raise RuntimeError(
            f"{call.name}: the solve for the derivative did not converge (info={info}); "
            "pass a smaller rtol or a larger maxiter, or solve with scipy.sparse.linalg.spsolve.")
    return x


def _iterative_adjoint(call: Call, dy: Any) -> Any:
    """``A^-H dx``: the cotangent of ``b``, the piece every formula reads."""
    dx = dy[0]
    if isinstance(dx, AbstractZero):
        return np.zeros(np.shape(call.args[1]), np.result_type(call.y[0]))
    return _iterative_solve(call, _adjoint_operator(call.args[0]), dx)


def _iterative_a(call: Call, db: Any) -> Any:  # a dense A (a sparse one is a constant)
    return -np.outer(db, np.conj(call.y[0])) if np.ndim(db) == 1 else \
        -db @ np.conj(np.swapaxes(call.y[0], -1, -2))


def _iterative_pushforward(call: Call, da: Any, db: Any, *rest: Any) -> Any:
    a, x = call.args[0], call.y[0]
    rhs = 0.0 if isinstance(db, AbstractZero) else db
    if not isinstance(da, AbstractZero):
        rhs = rhs - da @ x
    rhs = rhs + np.zeros(np.shape(x), np.result_type(x))
    return _iterative_solve(call, a, rhs), ZeroTangent()


for _name in ("cg", "bicg", "bicgstab", "cgs", "gmres", "lgmres", "minres", "qmr", "tfqmr"):
    if hasattr(spla, _name):
        define(getattr(spla, _name), _iterative_a, lambda call, db: db,
               pushforward=_iterative_pushforward, prepare=_iterative_adjoint, refused=())


def _conjugate_trace(call: Call) -> Any:
    trace = call["traceA"]
    return None if trace is None else np.conj(trace)
