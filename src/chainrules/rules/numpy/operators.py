"""Python's operators as keys of NumPy's rules: ``rrule(operator.add, x, y)`` is
``rrule(np.add, x, y)``, and so on for every operator that has a NumPy ufunc. An engine that
sees ``x + y`` (a tracer's ``__add__``, a bytecode's ``BINARY_OP``) can look the rule up under
the operator itself.

>>> import operator
>>> import numpy as np
>>> from chainrules import rrule, unthunk
>>> y, pullback = rrule(operator.truediv, np.array([1.0, 2.0]), 4.0)
>>> y, unthunk(pullback(np.ones(2))[2])
(array([0.25, 0.5 ]), -0.1875)
"""

from __future__ import annotations

import operator

import numpy as np

from ...core.registry import register_alias

# operator -> the NumPy function with its rules (same arguments, same result on arrays)
OPERATORS = {
    operator.add: np.add, operator.sub: np.subtract, operator.mul: np.multiply,
    operator.truediv: np.true_divide, operator.floordiv: np.floor_divide,
    operator.mod: np.remainder, operator.pow: np.power, operator.matmul: np.matmul,
    operator.neg: np.negative, operator.pos: np.positive, operator.abs: np.absolute,
    operator.lt: np.less, operator.le: np.less_equal, operator.eq: np.equal,
    operator.ne: np.not_equal, operator.gt: np.greater, operator.ge: np.greater_equal,
    operator.and_: np.bitwise_and, operator.or_: np.bitwise_or, operator.xor: np.bitwise_xor,
    operator.invert: np.invert, operator.lshift: np.left_shift, operator.rshift: np.right_shift,
}

for _operator, _function in OPERATORS.items():
    register_alias(_operator, _function)
