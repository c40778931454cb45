"""chainrules.testing: the rule-testing kit, for chainrules' own rules and for yours.

Check a rule against finite differences, with seeds inside and outside the output's tangent
space, cotangent kinds and dtypes, and in-place accumulation into accumulators of every kind:

>>> import numpy as np
>>> from chainrules.testing import test_rrule, test_frule, test_scalar
>>> test_rrule(np.multiply, np.array([1.0, 2.0]), np.float32(3.0))
>>> test_scalar(np.tanh, 0.3)

- `test_rrule`, `test_frule`, `test_scalar`: pytest-friendly checks raising `AssertionError`;
  `test_rrule_order2` and `test_frule_order2`: the pullback's and the pushforward's own
  derivatives (by the engine) against finite differences, and the jvp/vjp consistency at
  order 2; `first_order_only` declares a rule whose pullback is not differentiable yet;
  `test_non_differentiable` for functions declared non-differentiable whose outputs cannot be
  compared with finite differences;
- `case`, `RuleCase`, `check_case`: rule tests as declarative case lists;
- `check_grads`: a whole function's derivatives (reverse and forward mode, up to ``order``)
  against finite differences, as in JAX and autograd;
- `check_linear`: fail when a computation's time, memory or a count grows superlinearly;
- `rand_tangent`, `make_tangent`, `inplaceable` and the hypothesis strategies `primals`,
  `tangents`, `accumulators`, `indices`, `arrays` (hypothesis is imported only when a
  strategy is built);
- `fd_jacobian`, `fd_jvp`, `fd_vjp`, `fd_derivative`: the finite differences themselves;
- `TestConfig`: the `RuleConfig` handed to higher-order rules.

See docs/testing-your-own-rules.md for a worked example.
"""

from .check_rules import (FIRST_ORDER_ONLY, RuleCase, TestConfig, Tolerance, case, check_case,
                          first_order_only, test_frule, test_non_differentiable, test_rrule,
                          test_scalar)
from .check_order2 import test_frule_order2, test_rrule_order2
from .check_grads import check_grads
from .complexity import Complexity, check_linear, peak_memory
from .finite_differences import (FiniteDifferenceError, FiniteDifferenceJacobian,
                                 fd_derivative, fd_jacobian, fd_jvp, fd_vjp,
                                 perturbable_leaves)
from .strategies import (accumulators, arrays, float_dtypes, indices, inplaceable,
                         make_tangent, primals, rand_primal, rand_tangent, tangents)

__all__ = [
    "Complexity", "FIRST_ORDER_ONLY", "FiniteDifferenceError", "first_order_only", "FiniteDifferenceJacobian", "RuleCase",
    "TestConfig", "Tolerance", "accumulators", "arrays", "case", "check_case", "check_grads", "check_linear",
    "fd_derivative", "fd_jacobian", "fd_jvp", "fd_vjp", "float_dtypes", "indices",
    "inplaceable", "make_tangent", "peak_memory", "perturbable_leaves", "primals", "rand_primal",
    "rand_tangent", "tangents", "test_frule", "test_frule_order2", "test_non_differentiable", "test_rrule",
    "test_rrule_order2", "test_scalar",
]
