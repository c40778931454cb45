"""SciPy's sparse factorizations while tracing: ``splu(A)`` and ``spilu(A)`` hand out a
`chainrules.rules.scipy.sparse.linalg.Factorization` (the same factor, with a ``solve`` the
engine records), and ``factorized(A)`` a solve that records one on traced right-hand sides,
so that ``lu.solve(b)`` and ``solve(b)`` are differentiable in ``b`` (SciPy's ``SuperLU`` is a
compiled class: its ``solve`` cannot take traced values). A factor made before the trace is
SciPy's own, and its ``solve`` refuses traced values loudly.

>>> import numpy as np, scipy.sparse, scipy.sparse.linalg, chainrules as cr
>>> A = scipy.sparse.csc_matrix(np.array([[2.0, 0.0], [1.0, 4.0]]))
>>> cr.grad(lambda b: np.sum(scipy.sparse.linalg.splu(A).solve(b)))(np.ones(2)).tolist()
[0.375, 0.25]
"""

from __future__ import annotations

from typing import Any

from ..trace.values import holds_traced
from .routes import REROUTED, Rerouted, loaded_module

__all__ = ["swaps"]


def _factoring(own: Any) -> Any:
    """``splu``/``spilu`` handing out a `Factorization` of SciPy's factor."""
    from ...rules.scipy.sparse.linalg import Factorization

    def factor(*args: Any, **kwargs: Any) -> Any:
        return Factorization(own(*args, **kwargs))

    return factor


def _factorized(own: Any) -> Any:
    """``factorized(A)``: SciPy's solve for plain right-hand sides, a recorded one (on an LU
    factor of ``A``, made when first needed) for traced ones."""
    from ...rules.scipy.sparse.linalg import factor_solve

    def factorized(A: Any) -> Any:
        import scipy.sparse
        import scipy.sparse.linalg

        plain_solve, factor = own(A), []

        def solve(b: Any) -> Any:
            if not holds_traced(b):
                return plain_solve(b)
            if not factor:
                factor.append(scipy.sparse.linalg.splu(scipy.sparse.csc_matrix(A)).factor)
            return factor_solve(factor[0], b)

        return solve

    return factorized


_made: list = []


def swaps() -> list:
    """The replacements to install while tracing, once ``scipy.sparse.linalg`` is imported."""
    module = loaded_module("scipy.sparse.linalg")
    if module is None:
        return []
    if _made:
        return _made
    for name, replacement in (("splu", _factoring), ("spilu", _factoring),
                              ("factorized", _factorized)):
        function = getattr(module, name, None)
        if function is None:
            continue
        rerouted = REROUTED.get(function)
        if rerouted is None:
            rerouted = REROUTED[function] = Rerouted(function, replacement)
        _made.append(rerouted)
    return _made
