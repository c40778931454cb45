"""chainrules.ad: the engine that differentiates unmodified NumPy code, in three layers, each
importing only those below it:

- `trace` (bottom): the traced value (`trace.traced`), the tape that records operations through
  their rules (`trace.tape`, with what it records of a value in `trace.values`), the engine's
  errors, and the cotangent pairs of forward over reverse (`trace.pairs`);
- `dispatch`: NumPy's API routed to the tape: the methods and protocols of traced values
  (`dispatch.methods`), array writes (`dispatch.writes`), array creation, masked arrays, NumPy's
  scalar types, array-likes, and the names replaced while a trace runs (`dispatch.routing`, its
  top; `dispatch.routes`, the tables its parts share);
- `transforms` (top): the backward pass (`transforms.reverse`), forward mode
  (`transforms.forward`, `transforms.batching`), the public API (`transforms.api`: grad, vjp,
  jvp, hessian, ...) and `checkpoint`/`stop_gradient` (`transforms.gradient_control`).

docs/architecture.md draws the layers and follows one value through a trace.
"""

from .trace.errors import NoRuleError, RuleError, TracingError
from .trace.traced import Traced
from .transforms.api import (EngineConfig, elementwise_grad, grad, hessian, hvp, jacfwd,
                             jacobian, jacrev, jvp, primal, primitive, value_and_grad, vjp)

__all__ = ["EngineConfig", "NoRuleError", "RuleError", "Traced", "TracingError",
           "elementwise_grad", "grad", "hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jvp",
           "primal", "primitive", "value_and_grad", "vjp"]
