"""``scipy.optimize.linprog`` with traced data, differentiated through its active constraints;
``milp`` refused by name.

A linear program's solution sits at a vertex of its feasible set, where ``n`` constraints hold
with equality (every equality row, the inequality rows without slack, the bounds the solution
sits on): ``M x = r``, ``M`` those rows, ``r`` their right-hand sides. SciPy's HiGHS solver
finds the vertex on the plain data (`plain_linprog`, which engines compute on plain values);
the traced solution is ``x = M^-1 r`` and the objective ``c x``, so their derivatives in
``c``, ``A_ub``, ``b_ub``, ``A_eq``, ``b_eq`` and the bounds are those of the vertex, exact
while the same constraints stay active (the solution is piecewise linear in the data). The
duals, ``y = M^-T c`` (SciPy's ``marginals``: the objective's slope in each right-hand side),
are traced values too. A vertex where more than ``n`` constraints are active (degenerate), or
an optimum that is not a vertex (a face of optima), has no unique derivative and is refused
by name, as are a solve that did not finish (``status`` 1 or 4) and integer variables. An
infeasible or unbounded problem returns SciPy's result, which holds no solution.

>>> import numpy as np
>>> c, A, b = np.array([-1.0, -2.0]), np.array([[1.0, 1.0], [0.0, 1.0]]), np.array([4.0, 3.0])
>>> result = linprog(c, A_ub=A, b_ub=b)
>>> result.x, float(result.fun), result.ineqlin.marginals
(array([1., 3.]), -7.0, array([-1., -1.]))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....core.registry import non_differentiable, recorded_whole

__all__ = ["active_constraints", "linprog", "milp", "plain_linprog"]

_ACTIVE = 1e-9   # a constraint is active where its slack is below this, relative to its scale


def plain_linprog(c: Any, A_ub: Any, b_ub: Any, A_eq: Any, b_eq: Any, bounds: Any,
                  method: str, options: Any, x0: Any) -> Any:
    """``scipy.optimize.linprog`` on plain values; not differentiable: an engine computes it
    on plain values (SciPy's checks, errors and solution, before the traced one).

    >>> float(plain_linprog(np.array([1.0]), None, None, None, None, (2.0, None), "highs",
    ...                     None, None).x[0])
    2.0
    """
    import scipy.optimize

    return scipy.optimize.linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds,
                                  method=method, options=options, x0=x0)


non_differentiable(recorded_whole(plain_linprog))


def _bound_pairs(bounds: Any, n: int) -> list:
    """SciPy's ``bounds`` as ``n`` pairs ``(lower, upper)``, ``None`` for no bound."""
    if bounds is None:
        bounds = (0, None)
    pairs = list(bounds)
    if len(pairs) == 2 and all(b is None or np.ndim(b) == 0 for b in pairs):
        pairs = [tuple(pairs)] * n
    elif len(pairs) == 1:
        pairs = [tuple(pairs[0])] * n
    if len(pairs) != n:
        raise ValueError(f"scipy.optimize.linprog: {len(pairs)} bounds for {n} variables")
    return [(None if low is None or np.isneginf(low) else low,
             None if high is None or np.isposinf(high) else high) for low, high in pairs]


def _bound_values(pairs: list, indices: Any, side: int) -> Any:
    """The lower (``side`` 0) or upper (1) bounds of the variables ``indices``, an array
    (infinite for no bound; traced where the bounds are)."""
    values = [(-np.inf if side == 0 else np.inf) if pairs[j][side] is None
              else pairs[j][side] * 1.0 for j in indices]
    return np.stack(values) if values else np.zeros(0)


def active_constraints(x: Any, slack: Any, b_ub: Any, bounds: Any, A_ub: Any, A_eq: Any
                       ) -> tuple:
    """The constraints active at SciPy's solution ``x``: a mask of the inequality rows, and
    of the lower and upper bounds; not differentiable (plain values). Raises, naming
    linprog, where they do not make a vertex: more or fewer than ``len(x)`` of them, or
    dependent ones.

    >>> masks = active_constraints(np.array([1.0, 3.0]), np.array([0.0, 0.0]),
    ...                            np.array([4.0, 3.0]), (0, None),
    ...                            np.array([[1.0, 1.0], [0.0, 1.0]]), None)
    >>> [mask.tolist() for mask in masks]
    [[True, True], [False, False], [False, False]]
    """
    n = len(x)
    rows = []
    ub = np.zeros(0, bool)
    if A_ub is not None:
        b_ub = np.reshape(np.asarray(b_ub, float), -1)
        ub = np.abs(np.asarray(slack, float)) <= _ACTIVE * (1 + np.abs(b_ub))
        rows.append(np.reshape(np.asarray(A_ub, float), (-1, n))[ub])
    if A_eq is not None:
        rows.append(np.reshape(np.asarray(A_eq, float), (-1, n)))
    lower, upper = np.zeros(n, bool), np.zeros(n, bool)
    for j, (low, high) in enumerate(_bound_pairs(bounds, n)):
        lower[j] = low is not None and abs(x[j] - low) <= _ACTIVE * (1 + abs(low))
        upper[j] = high is not None and not lower[j] and \
            abs(x[j] - high) <= _ACTIVE * (1 + abs(high))
    rows += [np.eye(n)[lower], np.eye(n)[upper]]
    matrix = np.concatenate(rows)
    count = matrix.shape[0]
    if count != n or np.linalg.matrix_rank(matrix) < n:
        kind = ("a degenerate vertex" if count > n else "an optimum that is not a vertex (a "
                "face of optima: the solution is not unique)" if count < n else
                "a vertex of dependent constraints")
        raise ValueError(
            f"scipy.optimize.linprog of traced data: the solution is {kind} ({count} active "
            f"constraints for {n} variables), where it has no unique derivative. Perturb the "
            f"problem slightly, or pass its data with chainrules.primal(...) (a constant) to "
            f"use the solution's value.")
    return ub, lower, upper


non_differentiable(recorded_whole(active_constraints))


def linprog(c: Any, A_ub: Any = None, b_ub: Any = None, A_eq: Any = None, b_eq: Any = None,
            bounds: Any = (0, None), method: str = "highs", callback: Any = None,
            options: Any = None, x0: Any = None, integrality: Any = None) -> Any:
    """``scipy.optimize.linprog`` of traced data: SciPy's solution, and the traced vertex
    through its active constraints (this module's docstring)."""
    from scipy.optimize import OptimizeResult

    if integrality is not None and np.any(np.asarray(integrality) != 0):
        raise _refuse("linprog with integer variables (integrality)")
    if callback is not None:
        raise NotImplementedError(
            "scipy.optimize.linprog of traced data with a callback: the callback would see "
            "the solver's plain iterates; call linprog without it.")
    # a sparse matrix holds plain values: dense here (the vertex's solve is dense)
    A_ub, A_eq = (a.toarray() if hasattr(a, "toarray") else a for a in (A_ub, A_eq))
    result = plain_linprog(c, A_ub, b_ub, A_eq, b_eq, bounds, method, options, x0)
    if result.status in (1, 4):
        raise ValueError(f"scipy.optimize.linprog of traced data did not finish (status "
                         f"{result.status}: {result.message}): its point has no derivative.")
    if result.status != 0:
        return result  # infeasible or unbounded: no solution
    n = result.x.size
    ub, lower, upper = active_constraints(result.x, result.slack, b_ub, bounds, A_ub, A_eq)
    pairs = _bound_pairs(bounds, n)
    c = np.reshape(c, -1)
    identity = np.eye(n)
    rows, values = [], []
    if A_ub is not None:
        A_ub, b_ub = np.reshape(A_ub, (-1, n)), np.reshape(b_ub, -1)
        rows.append(A_ub[ub])
        values.append(b_ub[ub])
    if A_eq is not None:
        A_eq, b_eq = np.reshape(A_eq, (-1, n)), np.reshape(b_eq, -1)
        rows.append(A_eq)
        values.append(b_eq)
    for mask, side in ((lower, 0), (upper, 1)):
        rows.append(identity[mask])
        values.append(_bound_values(pairs, np.flatnonzero(mask), side))
    matrix, right = np.concatenate(rows), np.concatenate(values)
    x = np.linalg.solve(matrix, right)
    duals = np.linalg.solve(np.transpose(matrix), c)
    out = OptimizeResult(result)
    out.x, out.fun = x, c @ x
    # each dual back in its place (a selection matrix: plain): SciPy's marginals, 0 elsewhere
    start = 0
    if A_ub is not None:
        count = int(np.sum(ub))
        out.slack = b_ub - A_ub @ x
        out.ineqlin = OptimizeResult(residual=out.slack, marginals=np.eye(len(ub))[:, ub]
                                     @ duals[start:start + count])
        start += count
    if A_eq is not None:
        count = A_eq.shape[0]
        out.con = b_eq - A_eq @ x
        out.eqlin = OptimizeResult(residual=out.con, marginals=duals[start:start + count])
        start += count
    for mask, side, name in ((lower, 0, "lower"), (upper, 1, "upper")):
        count = int(np.sum(mask))
        edge = _bound_values(pairs, range(n), side)
        out[name] = OptimizeResult(residual=x - edge if side == 0 else edge - x,
                                   marginals=identity[:, mask] @ duals[start:start + count])
        start += count
    return out


def _refuse(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"scipy.optimize.{name} of traced data: the derivative of a mixed-integer program's "
        f"solution is not followed (it is piecewise constant in the data). Pass the problem's "
        f"data with chainrules.primal(...) (a constant) to use the solution's value.")


def milp(*args: Any, **kwargs: Any) -> Any:
    """``scipy.optimize.milp`` of traced data: refused by name."""
    raise _refuse("milp")
