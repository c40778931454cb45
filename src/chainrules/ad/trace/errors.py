"""The engine's errors: what it raises when a traced value is used in a way it cannot follow,
a function has no rule, or a rule returns what does not fit its arguments.

>>> import numpy as np, chainrules as cr
>>> issubclass(cr.TracingError, RuntimeError), issubclass(cr.NoRuleError, NotImplementedError)
(True, True)
"""

from __future__ import annotations

__all__ = ["TracingError", "NoRuleError", "RuleError", "ArrayConversionError",
           "MemoryAttributeError"]


class TracingError(RuntimeError):
    """A traced value was used in a way the engine cannot follow."""


class NoRuleError(NotImplementedError):
    """A function was called on traced values and has no rule."""


class RuleError(ValueError):
    """A rule's pullback returned something that does not fit its arguments."""


class ArrayConversionError(TracingError):
    """NumPy converted a traced value to a plain array (`chainrules.ad.dispatch.array_likes`
    retries the call with its lists of traced values converted by ``np.array``)."""


class MemoryAttributeError(TracingError, AttributeError):
    """Code read an ndarray's memory (``.strides``, ``.base``, ``.ctypes``, ``.data``) of a
    traced value, which has none; an `AttributeError` too, so ``hasattr`` and
    ``getattr(x, name, default)`` still answer as for any object without it."""
