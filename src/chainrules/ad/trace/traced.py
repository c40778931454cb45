"""Traced: a value being differentiated, standing in for an ndarray or a float.

A traced value holds its ``primal`` value, its ``tape`` (the level of tracing it belongs to)
and its ``node`` there (a reverse tape's record number; a forward trace's tangent). What it
answers from the primal is defined here: shape, dtype, ``len``, ``bool(t)`` (so Python control
flow follows the primal values), formatting, and ``isinstance``, which answers as for the plain
value (``isinstance(t, np.ndarray)``; ``type(t)`` stays `Traced`): docs/other-peoples-code.md.

What it records is NumPy's API routed to the tape: its NumPy protocols (``__array_ufunc__``,
``__array_function__``), Python's operators, indexing, writes and the ndarray methods are
`chainrules.ad.dispatch.methods`, installed on this class when the engine is imported (the
routing sits above the value it routes).

>>> import numpy as np
>>> t = Traced(np.ones((2, 3)), None, 0)
>>> t.shape, t.dtype, len(t), isinstance(t, np.ndarray), type(t) is Traced
((2, 3), dtype('float64'), 2, True, True)
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ...core.duck_arrays import exclude_type
from ...core.structure import register_leaf_type
from ...core.tangents import AbstractZero, ZeroTangent

__all__ = ["Traced", "primal_value", "constant", "constant_result", "is_constant", "CONSTANT",
           "WRITABLE_KINDS"]


class Traced:
    """A traced array or scalar: ``primal`` is its value, ``node`` its place on ``tape``."""

    __slots__ = ("primal", "tape", "node", "__weakref__")  # weak: views are followed (writes)
    __array_priority__ = 1000

    def __init__(self, primal: Any, tape: Any, node: int):
        self.primal = primal
        self.tape = tape
        self.node = node

    @property
    def __class__(self) -> type:
        """The class of the value it holds, for ``isinstance``: ``isinstance(t, np.ndarray)`` is
        True for a traced array, ``isinstance(t, np.float64)`` (and ``float``) for a traced
        float64, as for the plain value, so that code branching on it takes the array's path.
        ``type(t)`` stays `Traced` (``type(t) is np.ndarray`` is False), and chainrules' own
        code asks ``type`` (tests/ad/test_conformance.py checks it never asks ``isinstance``
        of NumPy or number types).

        >>> import chainrules as cr
        >>> cr.grad(lambda x: np.sum(x ** 2) if isinstance(x, np.ndarray) else x)(np.ones(2))
        array([2., 2.])
        """
        primal = self.primal
        while type(primal) is Traced:
            primal = primal.primal
        kind = type(primal)
        return kind if issubclass(kind, _LOOKS_LIKE) else Traced

    # --- read from the primal --------------------------------------------------------------
    def __format__(self, spec: str) -> str:
        # Printing a loss inside the function is common: format the value it holds.
        return format(primal_value(self), spec)

    def __str__(self) -> str:
        return str(primal_value(self))

    def __round__(self, ndigits=None):
        # round() is piecewise constant: its derivative is zero, so the constant is exact.
        return round(primal_value(self), ndigits)

    def __int__(self):
        return int(self.primal)

    def __index__(self):
        return operator.index(self.primal)

    def __bool__(self):
        return bool(self.primal)

    # --- properties read from the primal ----------------------------------------------
    # The plain value's (through every level: asking an outer level's value would dispatch
    # np.shape to its trace, an operation per read in second derivatives).
    @property
    def shape(self):
        primal = self.primal
        while type(primal) is Traced:  # primal_value, inlined: rules ask this very often
            primal = primal.primal
        shape = getattr(primal, "shape", None)  # NumPy's values: without np.shape's dispatch
        return np.shape(primal) if shape is None else shape

    @property
    def dtype(self):
        primal = self.primal
        while type(primal) is Traced:
            primal = primal.primal
        dtype = getattr(primal, "dtype", None)
        return np.dtype(type(primal)) if dtype is None else dtype

    @property
    def ndim(self):
        return np.ndim(primal_value(self))

    @property
    def size(self):
        return np.size(primal_value(self))

    def __len__(self):
        return len(self.primal)

    def __repr__(self):
        return f"Traced({self.primal!r}, node={self.node})"

    __hash__ = object.__hash__

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def device(self):
        return "cpu"

    def to_device(self, device, /, *, stream=None):
        if device != "cpu":
            raise ValueError(f"unsupported device {device!r}: NumPy arrays live on the cpu")
        return self


# The values whose class a traced value shows (`Traced.__class__`).
_LOOKS_LIKE = (np.ndarray, np.generic, float, complex, int)


def primal_value(x: Any) -> Any:
    """The plain value under every level of tracing of ``x``."""
    while type(x) is Traced:
        x = x.primal
    return x


def is_constant(traced: Traced) -> bool:
    """Whether ``traced`` is an array created by the function and never written with a traced
    value: a constant, which can be converted to a plain array without losing a gradient."""
    node = traced.node
    if traced.tape.forward:
        return isinstance(node, AbstractZero)
    return type(node) is int and node < 0


CONSTANT = -1  # the node of a constant of a reverse level: no record, a constant parent
_ZERO = ZeroTangent()

# The dtypes of arrays a program may write traced values into: float and complex. (Integer
# arrays stay plain: they are indexes, shapes and counts far more often than values.)
WRITABLE_KINDS = frozenset("fc")


def constant(level: Any, value: Any) -> Traced:
    """``value`` as a constant of ``level``: a traced value with no record (node -1) or a zero
    tangent (forward). Operations on constants alone compute plain NumPy values and give
    constants again (`constant_result`); a write of a traced value into a constant makes it a
    traced value like any other (ad/dispatch/writes.py)."""
    return Traced(value, level, _ZERO if level.forward else CONSTANT)


def constant_result(level: Any, value: Any) -> Any:
    """The result of an operation on constants of ``level`` alone: a float or complex array
    stays a constant (the program may write traced values into it: ``out = np.zeros(n) +
    1.0``); a number, or an array of integers or booleans, is plain. Under an outer level
    (``grad`` of ``grad``) the constants' values are that level's constants, and so is the
    result: it is made a constant of ``level`` too, as created arrays are at every level."""
    plain = value
    while type(plain) is Traced:  # primal_value, inline
        plain = plain.primal
    if type(plain) is np.ndarray and plain.dtype.kind in WRITABLE_KINDS:
        return Traced(value, level, _ZERO if level.forward else CONSTANT)
    return value


register_leaf_type(Traced)
exclude_type(Traced)  # it implements NumPy's protocols to record, not to hold data
