"""Elementwise rules with refused arguments: `scalar_rule` for a function some of whose
arguments have no practical derivative (the order of a Bessel function, the second derivative
of ``gammainc`` in ``a``...). Such a derivative raises ``NotImplementedError`` naming the
function and the argument when it is needed, never a silent zero; an argument held constant
costs nothing.

>>> import numpy as np, scipy.special as sps
>>> from chainrules import frule, NoTangent, ZeroTangent
>>> try:
...     frule((NoTangent(), ZeroTangent(), 1.0), sps.zeta, 3.0, 2.0)
... except NotImplementedError as error:
...     print(str(error)[:60])
"""

from __future__ import annotations

from typing import Any

from ..core.projection import NO_TANGENT_PROJECTOR, ProjectTo
from ..core.registry import rrule
from ..core.scalar_rule import scalar_rule
from ..core.tangents import AbstractZero
from ..core.thunks import Thunk, unthunk

__all__ = ["REFUSED", "scalar_rule_refusing"]


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


def _raise(refused: _Refused) -> Any:
    refused()


# (function, position) -> why, for the documentation and the tests.
REFUSED: dict = {}


def scalar_rule_refusing(f: Any, name: str, partials: tuple, refused: dict) -> None:
    """`scalar_rule` for ``f`` (called ``name`` in errors) whose arguments at the positions
    of ``refused`` (position -> (argument, why)) have no derivative.

    The frule (and the batched forward trace, which reads its partials) calls the refusing
    partial only for a nonzero tangent. The rrule gives a float argument at a refused position
    a `Thunk` that raises when read: an engine reads the cotangents of traced arguments only,
    so a constant ``a`` costs nothing."""
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
                    cotangents[position + 1] = Thunk(
                        lambda refusal=refusals[position]: _raise(refusal))
            return tuple(cotangents)

        return y, refusing_pullback

    rrule.register(f, replace=True)(refusing_reverse)
