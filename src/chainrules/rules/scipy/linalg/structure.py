"""``scipy.linalg``'s questions about a matrix's structure: ``bandwidth``, ``issymmetric``,
``ishermitian``. Their answers (integers, booleans) are not differentiable; SciPy computes them
in compiled code, which cannot take traced values, so an engine records them and computes
them on the plain values.

>>> import numpy as np, scipy.linalg
>>> from chainrules import rrule
>>> rrule(scipy.linalg.bandwidth, np.eye(3))[0]
(0, 0)
"""

from __future__ import annotations

import scipy.linalg as sla

from ....core.registry import non_differentiable

__all__: list = []

non_differentiable(sla.bandwidth, sla.issymmetric, sla.ishermitian)
