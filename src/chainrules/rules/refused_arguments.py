"""Elementwise rules with refused or costly arguments: `scalar_rule` for a function some of
whose arguments have no practical derivative (the third derivative of ``gammainc`` in
``a``...), or one that costs far more than the function (``gammainc`` in ``a``: a converged
series). A refused derivative raises ``NotImplementedError`` naming the function and the
argument when it is needed, never a silent zero; an argument held constant costs nothing,
also when it is a float number (whose cotangent `scalar_rule` computes at once).

>>> from chainrules import frule, NoTangent, ZeroTangent
>>> from chainrules.rules.scipy.special.parameters import zeta_dxx
>>> try:                           # the third derivative of zeta(x, q) in x
...     frule((NoTangent(), 1.0, ZeroTangent()), zeta_dxx, 3.0, 2.0)
... except NotImplementedError as error:
...     print(str(error)[:104])
chainrules.rules.scipy.special.parameters.zeta_dxx: the derivative with respect to x (argument 1) is not
>>> bool(frule((NoTangent(), ZeroTangent(), 1.0), zeta_dxx, 3.0, 2.0)[1] < 0)  # in q: closed
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.projection import NO_TANGENT_PROJECTOR, ProjectTo
from ..core.registry import rrule
from ..core.scalar_rule import scalar_rule
from ..core.tangents import AbstractZero
from ..core.thunks import NotImplementedCotangent, Thunk, unthunk

__all__ = ["REFUSED", "scalar_rule_refusing", "scalar_rule_deferring"]


class _Refused:
    """The partial of a parameter without a practical derivative: it raises, naming the
    function and the argument, when it is needed."""

    __slots__ = ("message",)

    def __init__(self, function: str, argument: str, position: int, why: str):
        self.message = (
            f"{function}: the derivative with respect to {argument} (argument {position + 1}) "
            f"is not implemented: {why}. Hold {argument} constant (an integer, or a value "
            f"that is not differentiated); the derivative with respect to the other "
            f"arguments is exact.")

    def __call__(self, *values: Any) -> Any:
        raise NotImplementedError(self.message)


# (function, position) -> why, for the documentation and the tests.
REFUSED: dict = {}


def scalar_rule_refusing(f: Any, name: str, partials: tuple, refused: dict) -> None:
    """`scalar_rule` for ``f`` (called ``name`` in errors) whose arguments at the positions
    of ``refused`` (position -> (argument, why)) have no derivative.

    The frule (and the batched forward trace, which reads its partials) calls the refusing
    partial only for a nonzero tangent. The rrule gives a float argument at a refused position
    a `Thunk` that raises when read: an engine reads the cotangents of traced arguments only,
    so a constant ``a`` costs nothing. That thunk is a `NotImplementedCotangent`: other
    engines can tell it by its type."""
    refusals = {position: _Refused(name, argument, position, why)
                for position, (argument, why) in refused.items()}
    quiet = tuple(None if position in refused else partial
                  for position, partial in enumerate(partials))
    scalar_rule(f, *quiet)
    reverse = rrule.lookup(f)[0]
    scalar_rule(f, *(refusals.get(position, partial) for position, partial in enumerate(partials)))
    for position, (argument, why) in refused.items():
        REFUSED[f, position] = argument

    def refusing_reverse(*args: Any, **kwargs: Any):
        y, pullback = reverse(*args, **kwargs)
        flagged = [position for position in refusals if position < len(args)
                   and ProjectTo(args[position]) is not NO_TANGENT_PROJECTOR]
        if not flagged:
            return y, pullback

        def refusing_pullback(dy: Any) -> tuple:
            cotangents = list(pullback(dy))
            if not isinstance(unthunk(dy), AbstractZero):
                for position in flagged:
                    cotangents[position + 1] = NotImplementedCotangent(
                        refusals[position].message)
            return tuple(cotangents)

        return y, refusing_pullback

    rrule.register(f, replace=True)(refusing_reverse)


def scalar_rule_deferring(f: Any, partials: tuple, costly: tuple) -> None:
    """`scalar_rule` for ``f`` whose partials at the positions ``costly`` cost much more than
    ``f`` itself: the cotangent of a float *number* there is a `Thunk` too (`scalar_rule`
    defers those of arrays already), so that a constant float parameter, whose cotangent an
    engine never reads, costs nothing.

    >>> import numpy as np
    >>> from chainrules.core.registry import recorded_whole
    >>> @recorded_whole
    ... def scaled(a, x):
    ...     return a * x
    >>> scalar_rule_deferring(scaled, (lambda y, a, x: x, lambda y, a, x: a), (0,))
    >>> _, pullback = rrule(scaled, 2.0, 3.0)
    >>> cotangents = pullback(1.0)
    >>> type(cotangents[1]).__name__, float(unthunk(cotangents[1])), float(cotangents[2])
    ('Thunk', 3.0, 2.0)
    """
    quiet = tuple(None if position in costly else partial
                  for position, partial in enumerate(partials))
    scalar_rule(f, *quiet)
    quiet_reverse = rrule.lookup(f)[0]
    scalar_rule(f, *partials)
    full_reverse = rrule.lookup(f)[0]

    def deferring_reverse(*args: Any, **kwargs: Any):
        differentiable = [position for position in costly if position < len(args)
                          and ProjectTo(args[position]) is not NO_TANGENT_PROJECTOR]
        if not any(not issubclass(type(args[position]), np.ndarray) for position in differentiable):
            return full_reverse(*args, **kwargs)  # arrays' cotangents are thunks already
        y, pullback = quiet_reverse(*args, **kwargs)

        def deferring_pullback(dy: Any) -> tuple:
            cotangents = list(pullback(dy))
            if isinstance(unthunk(dy), AbstractZero):
                return tuple(cotangents)
            full: list = []  # the full pullback's cotangents, computed once, when first read

            def read(position: int) -> Any:
                if not full:
                    full.append(full_reverse(*args, **kwargs)[1](dy))
                return unthunk(full[0][position + 1])

            for position in differentiable:
                cotangents[position + 1] = Thunk(lambda position=position: read(position))
            return tuple(cotangents)

        return y, deferring_pullback

    rrule.register(f, replace=True)(deferring_reverse)
