"""Cotangents that are values of a forward trace (forward over reverse: ``hvp``, ``jvp`` of
``grad``), summed as pairs of buffers: the backward pass (`chainrules.ad.transforms.reverse`)
owns the sum of two such cotangents, and adds later ones into its value and its tangent in
place, by the one `accumulate`, as it does at order 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.accumulate import accumulate, owned_sum
from ...core.tangents import AbstractZero
from .traced import Traced

__all__ = ["owned_pair_sum", "add_pair_in_place"]

# Plain values that a pair holds as its value and its tangent.
_PAIR_VALUES = frozenset({float, complex, np.float64, np.float32, np.complex128, np.complex64,
                          np.ndarray})


def owned_pair_sum(a: Any, b: Any) -> Any:
    """``a + b`` for two cotangents that are values of one forward trace (forward over
    reverse) holding plain values and tangents of one shape and dtype, as a new value whose
    primal and tangent are fresh buffers: an accumulator the backward pass owns, into which
    `add_pair_in_place` adds later contributions. ``None`` when they are not such a pair (the
    caller takes `owned_sum`).

    >>> from chainrules.ad.transforms.api import ENGINE_CONFIG
    >>> from chainrules.ad.transforms.forward import ForwardTrace
    >>> trace = ForwardTrace(ENGINE_CONFIG)
    >>> a, b = Traced(np.ones(2), trace, np.ones(2)), Traced(np.ones(2), trace, np.zeros(2))
    >>> total = owned_pair_sum(a, b)
    >>> total.primal, total.node, total.primal is a.primal
    (array([2., 2.]), array([1., 1.]), False)
    """
    if not (_is_pair(a) and _is_pair(b) and a.tape is b.tape and _same_space(a, b)):
        return None
    return Traced(owned_sum(a.primal, b.primal), a.tape, owned_sum(a.node, b.node))


def add_pair_in_place(total: Any, t: Any) -> bool:
    """Add ``t`` into ``total``, an accumulator made by `owned_pair_sum`, in place (its primal
    and its tangent, by `accumulate`); False, changing nothing, when ``t`` is not a value of
    the same trace of ``total``'s shape and dtype.

    >>> from chainrules.ad.transforms.api import ENGINE_CONFIG
    >>> from chainrules.ad.transforms.forward import ForwardTrace
    >>> trace = ForwardTrace(ENGINE_CONFIG)
    >>> total = owned_pair_sum(Traced(np.ones(2), trace, np.ones(2)),
    ...                        Traced(np.ones(2), trace, np.ones(2)))
    >>> add_pair_in_place(total, Traced(np.ones(2), trace, np.ones(2))), total.node
    (True, array([3., 3.]))
    """
    if not (_is_pair(t) and t.tape is total.tape and _same_space(total, t)):
        return False
    total.primal = accumulate(total.primal, t.primal, owned=True)
    total.node = accumulate(total.node, t.node, owned=True)
    return True


def _is_pair(value: Any) -> bool:
    """Whether ``value`` is a value of a running forward trace (one direction) whose primal
    and tangent are plain numbers or arrays of the primal's shape and dtype, or a zero."""
    if type(value) is not Traced or not getattr(value.tape, "one_direction", False) \
            or value.tape.finished:
        return False
    primal, tangent = value.primal, value.node
    if type(primal) not in _PAIR_VALUES:
        return False
    if issubclass(type(tangent), AbstractZero):
        return True
    return type(tangent) is type(primal) and (type(primal) is not np.ndarray or (
        tangent.dtype is primal.dtype and tangent.shape == primal.shape))


def _same_space(a: Traced, b: Traced) -> bool:
    """Whether ``a`` and ``b`` have one kind, dtype and shape (so their sum keeps them)."""
    first, second = a.primal, b.primal
    if type(first) is not type(second):
        return False
    return type(first) is not np.ndarray or (first.dtype is second.dtype
                                             and first.shape == second.shape)
