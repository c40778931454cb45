"""``scipy.linalg``'s questions about a matrix's structure: ``bandwidth``, ``issymmetric``,
``ishermitian``. Their answers (integers, booleans) are not differentiable; SciPy computes them
in compiled code, which cannot take traced values, so an engine records them and computes
them on the plain values. SciPy 1.11 makes them compiled functions without a signature, which
a rule needs to bind its call: there they stay without one (a traced matrix raises).

>>> import numpy as np, scipy.linalg, pytest
>>> from chainrules import rrule
>>> if rrule.lookup(scipy.linalg.bandwidth) is None:
...     pytest.skip("SciPy 1.11: compiled without a signature, no rule")
>>> rrule(scipy.linalg.bandwidth, np.eye(3))[0]
(0, 0)
"""

from __future__ import annotations

import inspect

import scipy.linalg as sla

from ....core.registry import non_differentiable

__all__: list = []


def _has_signature(f: object) -> bool:
    try:
        inspect.signature(f)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


non_differentiable(*(f for f in (sla.bandwidth, sla.issymmetric, sla.ishermitian)
                     if _has_signature(f)))
