"""chainrules.core: tangent types, thunks, projection, accumulation, the rule registry.

It knows nothing of NumPy's function list or of any AD engine.
"""

from .accumulate import accumulate, owned_copy
from .broadcast import unbroadcast
from .config import RuleConfig, frule_via_ad, rrule_via_ad
from .dtypes import cast_to, tangent_dtype
from .projection import ProjectionError, ProjectTo
from .registry import RuleTable, UnusedRuleWarning, frule, non_differentiable, rrule
from .scalar_rule import scalar_rule
from .sparse import SparseCotangent
from .tangents import (AbstractZero, NoTangent, Tangent, ZeroTangent, field_value,
                       is_zero_tangent, structural_fields, tangents_equal)
from .thunks import AbstractThunk, InplaceableThunk, NotImplementedCotangent, Thunk, unthunk

__all__ = [
    "AbstractThunk", "AbstractZero", "InplaceableThunk", "NoTangent", "NotImplementedCotangent", "ProjectTo",
    "ProjectionError", "RuleConfig", "RuleTable", "SparseCotangent", "Tangent", "Thunk",
    "UnusedRuleWarning",
    "ZeroTangent", "accumulate", "cast_to", "field_value", "frule", "frule_via_ad",
    "is_zero_tangent", "non_differentiable", "owned_copy", "rrule", "rrule_via_ad",
    "scalar_rule", "structural_fields", "tangent_dtype", "tangents_equal", "unbroadcast",
    "unthunk",
]
