"""NumPy's predicates and index functions, declared non-differentiable.

Their outputs are booleans, integers (indices, counts, positions, dtypes) or piecewise constant
in the inputs, so no gradient flows through them: an engine records nothing for them, and a
traced argument gets `NoTangent` instead of a "no rule" error. The elementwise ones (comparison
ufuncs, ``floor``, ``isnan``...) are declared in `chainrules.rules.numpy.elementwise`, the ones next
to a differentiable relative (``argmax``, ``searchsorted``...) in `chainrules.rules.numpy.selection`.
Names that only some NumPy releases have are declared where they exist.

    >>> import numpy as np
    >>> from chainrules import rrule
    >>> y, pullback = rrule(np.any, np.array([0.0, 2.0]))
    >>> bool(y), pullback(1.0)
    (True, (NoTangent(), NoTangent()))
"""

from __future__ import annotations

import numpy as np

from ...core.registry import non_differentiable

__all__ = ["DECLARED"]

# By namespace: the names declared here (those the installed NumPy has).
_NAMES = {
    np: (
        # truth of arrays and comparisons of whole arrays
        "all", "any", "array_equiv", "isneginf", "isposinf", "isin", "in1d",
        "may_share_memory", "shares_memory",
        # positions and indices
        "argwhere", "digitize", "lexsort", "nanargmax", "nanargmin", "ravel_multi_index",
        "unravel_index", "diag_indices_from", "tril_indices_from", "triu_indices_from",
        # dtypes of arrays
        "can_cast", "common_type", "min_scalar_type",
        # integer-only and piecewise-constant ufuncs
        "gcd", "lcm", "bitwise_count", "spacing", "packbits", "unpackbits",
        # a contraction plan for np.einsum (lists and strings)
        "einsum_path",
    ),
    np.linalg: ("matrix_rank",),
}

DECLARED: tuple = tuple(getattr(namespace, name) for namespace, names in _NAMES.items()
                        for name in names if hasattr(namespace, name))

non_differentiable(*DECLARED)
