"""chainrules.ad: a reverse-mode engine for unmodified NumPy code.

Modules: `tracer` (the traced value and its NumPy protocols), `tape` (recording operations
through their rules), `reverse` (the backward pass), `intercept` (NumPy entry points that do
not dispatch), `api` (grad, vjp, ...). Leaves of Python objects are found by
`chainrules.core.structure`.
"""

from .api import EngineConfig, grad, jacobian, primal, primitive, value_and_grad, vjp
from .reverse import RuleError
from .tape import NoRuleError, TracingError
from .tracer import Traced

__all__ = ["EngineConfig", "NoRuleError", "RuleError", "Traced", "TracingError", "grad",
           "jacobian", "primal", "primitive", "value_and_grad", "vjp"]
