"""Gradients of plain containers that take part in a training step.

``grad`` of a function of a dict, list, tuple or namedtuple returns a gradient of the same
kind (``isinstance(g, dict)``, ``g["w"]``, unpacking, ``==`` and ``repr`` are a dict's). Python
gives plain containers operators of their own (``tuple + tuple`` concatenates, ``lr * list``
raises), so the gradient is a subclass that does tangent arithmetic instead: scaling by a
number, negation, and adding to or subtracting from its primal, which builds a new object of the
primal's type, leaf by leaf (`chainrules.core.trees.tree_map`). As for `Tangent`s of
dataclasses and objects (`chainrules.core.accumulate.add_to_primal`), one line updates a
model of any structure:

>>> import numpy as np
>>> params = {"w": np.array([1.0, 2.0]), "b": 0.5}
>>> g = as_tangent({"w": np.array([0.5, 0.5]), "b": 1.0})
>>> params - 0.1 * g
{'w': array([0.95, 1.95]), 'b': 0.4}
>>> [1.0, 2.0] + as_tangent([0.5, 0.25])        # not concatenation: a step
[1.5, 2.25]
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from .structure import is_structure
from .tangents import map_tangent_leaves
from .trees import tree_map

__all__ = ["as_tangent", "is_tangent_container"]


class _TangentArithmetic:
    """Tangent arithmetic for a container gradient (mixed in before the container type)."""

    __slots__ = ()

    def __mul__(self, scale: Any) -> Any:
        return _scaled(self, lambda v: v * scale)

    def __rmul__(self, scale: Any) -> Any:
        return _scaled(self, lambda v: scale * v)

    def __truediv__(self, scale: Any) -> Any:
        return _scaled(self, lambda v: v / scale)

    def __neg__(self) -> Any:
        return _scaled(self, operator.neg)

    def __add__(self, other: Any) -> Any:
        return _paired(self, other, operator.add, tangent_first=True)

    def __radd__(self, other: Any) -> Any:
        return _paired(self, other, operator.add, tangent_first=False)

    def __sub__(self, other: Any) -> Any:
        return _paired(self, other, operator.sub, tangent_first=True)

    def __rsub__(self, other: Any) -> Any:
        return _paired(self, other, operator.sub, tangent_first=False)


class TangentDict(_TangentArithmetic, dict):
    """The gradient of a dict (`as_tangent`)."""


class TangentList(_TangentArithmetic, list):
    """The gradient of a list (`as_tangent`)."""


class TangentTuple(_TangentArithmetic, tuple):
    """The gradient of a tuple (`as_tangent`)."""


_NAMEDTUPLE_TANGENTS: dict = {}  # namedtuple type -> its gradient type


def _namedtuple_tangent(cls: type) -> type:
    tangent = _NAMEDTUPLE_TANGENTS.get(cls)
    if tangent is None:  # the same name, so that repr is the namedtuple's
        tangent = _NAMEDTUPLE_TANGENTS[cls] = type(cls.__name__, (_TangentArithmetic, cls),
                                                   {"__slots__": ()})
    return tangent


def as_tangent(x: Any) -> Any:
    """``x``, a dict, list, tuple or namedtuple gradient, as the subclass that does tangent
    arithmetic (anything else unchanged).

    >>> from collections import namedtuple
    >>> Pair = namedtuple("Pair", "a b")
    >>> Pair(1.0, 2.0) - 2 * as_tangent(Pair(0.5, 0.5))
    Pair(a=0.0, b=1.0)
    """
    kind = type(x)
    if kind is dict:
        return TangentDict(x)
    if kind is list:
        return TangentList(x)
    if kind is tuple:
        return TangentTuple(x)
    if issubclass(kind, tuple) and hasattr(kind, "_fields") and \
            not issubclass(kind, _TangentArithmetic):
        return _namedtuple_tangent(kind)(*x)
    return x


def is_tangent_container(x: Any) -> bool:
    """Whether ``x`` is a container gradient made by `as_tangent`.

    >>> is_tangent_container(as_tangent([1.0])), is_tangent_container([1.0])
    (True, False)
    """
    return issubclass(type(x), _TangentArithmetic)


def _scaled(tangent: Any, scale: Callable[[Any], Any]) -> Any:
    """``scale`` applied to every leaf of ``tangent``, nested `Tangent`s included."""
    return as_tangent(map_tangent_leaves(_plain(tangent), scale))


def _paired(tangent: Any, other: Any, combine: Callable, tangent_first: bool) -> Any:
    """``combine(tangent, other)`` (or the other way round) leaf by leaf: a new object of the
    primal's type when ``other`` is a primal, a gradient when it is a gradient too."""
    if not is_structure(other):
        return NotImplemented
    if is_tangent_container(other):
        first, second = (tangent, other) if tangent_first else (other, tangent)
        return as_tangent(map_tangent_leaves(_plain(first), combine, _plain(second)))
    return tree_map((lambda x, t: combine(t, x)) if tangent_first else combine, other, tangent)


def _plain(x: Any) -> Any:
    """The container ``x`` as its plain type (before `as_tangent` wraps it again)."""
    kind = type(x)
    if issubclass(kind, _TangentArithmetic):
        base = next(b for b in kind.__mro__[1:] if not issubclass(b, _TangentArithmetic))
        if base is dict or base is list or base is tuple:
            return base(x)
        return base(*x)  # a namedtuple
    return x
