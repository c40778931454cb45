"""chainrules: exact, fast gradients of ordinary NumPy code.

Rules (``rrule``/``frule``) are separate from the engine; tangents are typed (zeros, thunks,
sparse index cotangents, structural tangents); every cotangent is projected onto its primal's
tangent space; accumulation is in place exactly when that equals the eager sum.

Complex convention: for a real ``L`` of a complex ``z`` the gradient is
``dL/dRe(z) + i dL/dIm(z)``, so the gradient of ``abs2(z) = |z|**2`` at ``3+4j`` is ``6+8j``.
"""

from .core import (InplaceableThunk, NoTangent, NotImplementedCotangent, ProjectTo, RuleConfig, SparseCotangent,
                   Tangent, Thunk, ZeroTangent, accumulate, frule, frule_via_ad,
                   non_differentiable, owned_copy, rrule, rrule_via_ad, scalar_rule, unthunk)
from . import rules  # noqa: F401  (registers the NumPy rules)
from .ad import (EngineConfig, NoRuleError, RuleError, TracingError, elementwise_grad, grad,
                 hessian, hvp, jacfwd, jacobian, jacrev, jvp, primal, primitive, value_and_grad,
                 vjp)
from .ad.transforms.gradient_control import checkpoint, stop_gradient
from .core.check_error import CheckError
from .core.checking import checking
from .core.registry import KeywordArgumentError, positional_call
from .core.trees import flatten, tree_map
from .core.vector_spaces import vector_space

__version__ = "0.1.0"

__all__ = [
    "EngineConfig", "NoRuleError", "RuleError", "TracingError", "elementwise_grad", "grad",
    "hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jvp", "primal", "primitive",
    "value_and_grad", "vjp",
    "InplaceableThunk", "NoTangent", "NotImplementedCotangent", "ProjectTo", "RuleConfig", "SparseCotangent", "Tangent",
    "Thunk", "ZeroTangent", "accumulate", "frule", "frule_via_ad", "non_differentiable",
    "owned_copy", "rrule", "rrule_via_ad", "scalar_rule", "unthunk",
    "checkpoint", "stop_gradient",
    "flatten", "tree_map",
    "CheckError", "checking", "vector_space", "KeywordArgumentError", "positional_call",
]
