"""chainrules.ad: a reverse-mode engine for unmodified NumPy code.

Modules: `tracer` (the traced value and its NumPy protocols), `tape` (recording operations
through their rules), `reverse` (the backward pass), `forward` (forward mode: tangents carried
through the frules), `intercept` (NumPy entry points that do
not dispatch), `api` (grad, vjp, ...). Leaves of Python objects are found by
`chainrules.core.structure`.
"""

from .api import (EngineConfig, elementwise_grad, grad, hessian, hvp, jacfwd, jacobian, jacrev,
                  jvp, primal, primitive, value_and_grad, vjp)
from .reverse import RuleError
from .tape import NoRuleError, TracingError
from .tracer import Traced

__all__ = ["EngineConfig", "NoRuleError", "RuleError", "Traced", "TracingError",
           "elementwise_grad", "grad", "hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jvp",
           "primal", "primitive", "value_and_grad", "vjp"]
