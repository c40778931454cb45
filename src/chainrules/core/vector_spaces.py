"""Types of your own as tangents: a class whose values add with ``+`` and scale with ``*`` by
a number (a function in a reproducing-kernel Hilbert space, a polynomial, a field on a mesh)
declared a vector space is differentiated as a value: its own tangent and cotangent type.

ChainRulesCore lets any type with ``+`` and scalar ``*`` be a tangent; autograd registers a
``VSpace``. Here, `vector_space(cls)` declares ``cls``, and then:

- a value of ``cls`` is a leaf (the structure walk does not look into its fields) and a
  differentiable input: ``grad(f)(value)`` gives a gradient of type ``cls``;
- its cotangents are values of ``cls`` (or zeros): a rule returns one for an argument of type
  ``cls``, projection refuses anything else, naming the type;
- cotangents add up with the class's own ``+`` (`chainrules.core.accumulate`), never in place;
- it reaches a differentiated function as a traced value, which rules (``@primitive``
  functions with registered rules, a primitive ``__call__``) receive as the value itself:
  only such rules look inside it (the traced value has none of its attributes).

>>> import numpy as np, chainrules as cr
>>> @cr.vector_space
... class Pair:
...     def __init__(self, a, b): self.a, self.b = a, b
...     def __add__(self, other): return Pair(self.a + other.a, self.b + other.b)
...     def __mul__(self, s): return Pair(self.a * s, self.b * s)
...     __rmul__ = __mul__
>>> @cr.primitive
... def energy(p): return p.a ** 2 + 3.0 * p.b
>>> @cr.rrule.register(energy)
... def _(p):
...     return energy(p), lambda dy: (cr.NoTangent(), Pair(2.0 * p.a, 3.0) * dy)
>>> g = cr.grad(lambda p: energy(p) + 2.0 * energy(p))(Pair(1.5, 0.0))
>>> type(g).__name__, g.a, g.b
('Pair', 9.0, 9.0)
"""

from __future__ import annotations

from typing import Any, TypeVar

from .structure import register_leaf_type

__all__ = ["vector_space", "is_vector_space", "VECTOR_SPACES"]

VECTOR_SPACES: set = set()

Space = TypeVar("Space", bound=type)


def vector_space(cls: Space) -> Space:
    """Declare ``cls`` a vector space: its values are their own tangents (``+`` adds them,
    ``*`` by a number scales them). Usable as a class decorator; returns ``cls``.

    >>> class Field:
    ...     def __add__(self, other): return self
    ...     def __mul__(self, s): return self
    >>> vector_space(Field) is Field, is_vector_space(Field())
    (True, True)
    """
    if not isinstance(cls, type):
        raise TypeError(f"vector_space takes a class, got {type(cls).__name__}")
    for operation in ("__add__", "__mul__"):
        if not callable(getattr(cls, operation, None)):
            raise TypeError(f"vector_space({cls.__name__}): a vector space's values add with "
                            f"+ and scale with * by a number; {cls.__name__} has no "
                            f"{operation}.")
    register_leaf_type(cls)
    VECTOR_SPACES.add(cls)
    return cls


def is_vector_space(x: Any) -> bool:
    """Whether ``x`` is a value of a type declared with `vector_space`."""
    return type(x) in VECTOR_SPACES
