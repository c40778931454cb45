"""RuleConfig: what the AD system running a rule can do, and the way back into it.

Higher-order rules (``vectorize``, ``apply_along_axis``, solvers taking a user function) need
the derivative of a function they were given. They ask the config: ``rrule_via_ad(config, f,
*args)`` differentiates ``f`` with whichever engine is running the rule.

`RuleConfig` itself is defined in `chainrules.core.registry`, beside the rule tables that its
methods look rules up in; this module holds the calls that rules make on it.

>>> import numpy as np
>>> y, pullback = rrule_via_ad(RuleConfig(), np.sin, np.float64(0.0))
>>> y, pullback(1.0)[1]
(np.float64(0.0), np.float64(1.0))
"""

from __future__ import annotations

from typing import Any, Callable

from .registry import DEFAULT_CONFIG, RuleConfig

__all__ = ["RuleConfig", "DEFAULT_CONFIG", "rrule_via_ad", "frule_via_ad"]


def rrule_via_ad(config: RuleConfig, f: Callable, *args: Any, **kwargs: Any):
    """Differentiate ``f`` in reverse mode with the AD system behind ``config``."""
    return config.rrule_via_ad(f, *args, **kwargs)


def frule_via_ad(config: RuleConfig, tangents: tuple, f: Callable, *args: Any, **kwargs: Any):
    """Differentiate ``f`` in forward mode with the AD system behind ``config``."""
    return config.frule_via_ad(tangents, f, *args, **kwargs)
