"""The pullbacks of what a forward trace records on a tape inside it (forward over reverse:
``hvp``, ``jvp`` of ``grad``): a rule's ``pullback_dual`` (`DualPullback`), and an
elementwise form's record of plain values (`NUMBER_DUAL`'s payload, whose pairs the backward
pass computes inline for numbers: `chainrules.ad.transforms.reverse`). Each turns a cotangent
with its tangent into the arguments' cotangents with theirs, values of the trace.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ...core.projection import ProjectTo
from ...core.registry import rrule
from ...core.tangents import AbstractZero, NoTangent, ZeroTangent
from ...core.thunks import unthunk
from .traced import Traced, primal_value

__all__ = ["NumberDual", "NUMBER_DUAL", "NumberDualPullback", "DualPullback",
           "traced_cotangents", "tangent_in_space", "zeros_like_primal", "DUAL_NUMBERS",
           "DUAL_VALUES"]

# The numbers and the plain values that a dual form takes and gives.
DUAL_NUMBERS = frozenset({float, complex, np.float64, np.float32, np.complex128, np.complex64})
DUAL_VALUES = DUAL_NUMBERS | {np.ndarray}
_NUMBERS, _DUAL_VALUES = DUAL_NUMBERS, DUAL_VALUES
_NO_TANGENT = NoTangent()
_new_object = object.__new__


class NumberDual:
    """The first entry of the payload `ForwardTrace.record_numbers` records for an
    elementwise rule, ``(NUMBER_DUAL, form, args, y, tangents, derivatives, trace, needed,
    function)``; an engine's backward pass calls `pullback` on it (as on a `NumberForm`'s
    payload): the form's ``pullback_dual`` on the values recorded, for the cotangent and its
    tangent.

    >>> import numpy as np
    >>> from chainrules.core.registry import NUMBER_FORMS
    >>> trace, x = object(), np.float64(2.0)  # (a forward trace: a level)
    >>> payload = (NUMBER_DUAL, NUMBER_FORMS[np.sin], (x,), np.sin(x), (np.float64(1.0),),
    ...            [np.cos(x)], trace, (True,), np.sin)
    >>> dx = NUMBER_DUAL.pullback(payload)(np.float64(1.0))[1]  # cos(x), its tangent -sin(x)
    >>> bool(dx.primal == np.cos(x)), bool(dx.node == -np.sin(x))
    (True, True)
    """

    __slots__ = ()

    @staticmethod
    def pullback(payload: tuple) -> "NumberDualPullback":
        return NumberDualPullback(payload)

    @staticmethod
    def call(payload: tuple) -> tuple:
        """``(function, traced arguments, keywords)`` of the recorded call."""
        _, _, args, _, tangents, _, trace, _, function = payload
        return function, tuple(arg if tangent is None else Traced(arg, trace, tangent)
                               for arg, tangent in zip(args, tangents)), {}


NUMBER_DUAL = NumberDual()


class NumberDualPullback:
    """The pullback of a `NumberDual` payload: for a cotangent of the output's number type,
    plain or with a number tangent of the payload's trace (a scalar loop's), the form's
    ``pullback_dual`` on the values recorded, called here; any other cotangent goes to
    `DualPullback`, which this stands for."""

    __slots__ = ("payload",)

    def __init__(self, payload: tuple):
        self.payload = payload

    def __call__(self, dy: Any) -> tuple:
        _, form, args, y, tangents, derivatives, trace, needed, _ = self.payload
        kind = type(y)
        if type(dy) is kind:
            pairs = form.pullback_dual(args, y, tangents, derivatives, dy, None, needed)
        elif type(dy) is Traced and dy.tape is trace and type(dy.primal) is kind and \
                type(dy.node) is kind:
            pairs = form.pullback_dual(args, y, tangents, derivatives, dy.primal, dy.node,
                                       needed)
        else:
            dy = unthunk(dy)  # a sparse or lazy cotangent (np.sum(h)'s, X[:, j]'s): dense
            if type(dy) is not kind:
                return DualPullback(partial(form.pullback_dual, args, y, tangents,
                                             derivatives), trace, needed, self.payload)(dy)
            pairs = form.pullback_dual(args, y, tangents, derivatives, dy, None, needed)
        return traced_cotangents(trace, pairs)


class DualPullback:
    """The pullback recorded by `ForwardTrace.record_dual` for a rule whose pullback reads
    its arguments' values: the rule's ``pullback_dual`` on the cotangent's primal and tangent,
    its pairs made values of this trace."""

    __slots__ = ("pullback_dual", "trace", "needed", "call")

    def __init__(self, pullback_dual: Any, trace: Any, needed: tuple, call: tuple):
        self.pullback_dual, self.trace, self.needed = pullback_dual, trace, needed
        # (function, traced arguments, keywords), or a `NumberDual` payload: for any other
        # cotangent
        self.call = call

    def __call__(self, dy: Any) -> tuple:
        kind = type(dy)
        if kind is not Traced and kind not in _DUAL_VALUES:
            dy = unthunk(dy)  # a thunk (the cotangent of one of several arguments)
            if issubclass(type(dy), AbstractZero):
                return (_NO_TANGENT,) * (len(self.needed) + 1)  # no contribution
            kind = type(dy)
        if kind is Traced and dy.tape is self.trace and type(dy.primal) in _DUAL_VALUES \
                and type(dy.node) in _DUAL_VALUES:
            pairs = self.pullback_dual(dy.primal, dy.node, self.needed)
        elif kind in _DUAL_VALUES:
            pairs = self.pullback_dual(dy, None, self.needed)
        else:
            # a value of another level: the rule on the traced arguments, as at any order
            call = self.call
            function, primals, kwargs = NUMBER_DUAL.call(call) if call[0] is NUMBER_DUAL \
                else call
            return rrule.with_constants(self.trace.config, function, *primals, **kwargs)[1](dy)
        return traced_cotangents(self.trace, pairs)


def traced_cotangents(trace: Any, pairs: tuple) -> tuple:
    """A pullback's cotangents (``NoTangent`` for the function first) from a ``pullback_dual``'s
    pairs: each cotangent with its tangent made a value of ``trace``."""
    cotangents = [_NO_TANGENT]
    for pair in pairs:
        if pair is None:
            cotangents.append(_NO_TANGENT)
            continue
        cotangent, tangent = pair
        if tangent is None:
            cotangents.append(cotangent)
            continue
        if type(cotangent) not in _DUAL_VALUES:
            cotangent = unthunk(cotangent)
        if type(tangent) not in _DUAL_VALUES:
            tangent = unthunk(tangent)
        kind = type(cotangent)
        if type(tangent) is kind and (kind in _NUMBERS or (
                kind is np.ndarray and tangent.dtype is cotangent.dtype
                and tangent.shape == cotangent.shape)):
            traced = _new_object(Traced)
            traced.primal, traced.tape, traced.node = cotangent, trace, tangent
        else:
            if isinstance(cotangent, AbstractZero):
                cotangent = zeros_like_primal(tangent)
            traced = Traced(cotangent, trace, tangent_in_space(cotangent, tangent))
        cotangents.append(traced)
    return tuple(cotangents)


def tangent_in_space(y: Any, dy: Any) -> Any:
    """``dy`` in ``y``'s tangent space; zeros stay lazy.

    >>> tangent_in_space(np.float32(1.0), 2.0)
    np.float32(2.0)
    """
    kind = type(dy)
    if kind is np.ndarray and type(y) is np.ndarray:
        if dy.dtype is y.dtype and dy.shape == y.shape:
            return dy  # already in the tangent space (rules project their outputs)
    elif kind is type(y) and kind in _NUMBERS:
        return dy
    dy = unthunk(dy)
    if isinstance(dy, AbstractZero):
        return ZeroTangent()
    return ProjectTo(y)(dy)


def zeros_like_primal(value: Any) -> Any:
    """Zeros of ``value``'s type, shape and dtype (of its primal if it is traced).

    >>> zeros_like_primal(np.ones(2)), zeros_like_primal(np.float32(3.0))
    (array([0., 0.]), np.float32(0.0))
    """
    plain = primal_value(value)
    if issubclass(type(plain), np.ndarray):
        return np.zeros(plain.shape, plain.dtype)
    if issubclass(type(plain), np.generic):
        return plain.dtype.type(0)
    return type(plain)(0)
