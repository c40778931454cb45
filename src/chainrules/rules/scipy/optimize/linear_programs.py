"""``scipy.optimize.linprog`` and ``milp`` with traced data, refused by name: a linear
program's solution sits at a vertex of its feasible set, piecewise constant or linear in the
data through whichever constraints are active, and SciPy's HiGHS solver cannot take traced
values (it raised a ``TypeError`` about its own argument types). While a trace runs, SciPy's
function with traced arguments runs the version here (``TRACED_PATHS`` in
`chainrules.ad.dispatch.routes`), which says so and what to do.

>>> import numpy as np
>>> try:
...     linprog(np.ones(2))
... except NotImplementedError as error:
...     print(str(error)[:37])
scipy.optimize.linprog of traced data
"""

from __future__ import annotations

from typing import Any

__all__ = ["linprog", "milp"]


def _refuse(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"scipy.optimize.{name} of traced data: the derivative of a linear program's solution "
        f"(through its active constraints) is not followed. Pass the problem's data with "
        f"chainrules.primal(...) (a constant) to use the solution's value, or write the problem "
        f"as a smooth one that scipy.optimize.minimize solves (differentiated by the implicit "
        f"function theorem).")


def linprog(*args: Any, **kwargs: Any) -> Any:
    """``scipy.optimize.linprog`` of traced data: refused by name."""
    raise _refuse("linprog")


def milp(*args: Any, **kwargs: Any) -> Any:
    """``scipy.optimize.milp`` of traced data: refused by name."""
    raise _refuse("milp")
