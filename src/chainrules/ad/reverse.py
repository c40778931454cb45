"""The backward pass: walk the tape in reverse, call each pullback, accumulate cotangents.

Each node has a slot. A first contribution is stored as it is (it may alias other values, so
it is not owned); a second one makes a new owned sum (`owned_sum`); later ones are added in
place (`accumulate(..., owned=True)`). Sparse index cotangents therefore stay sparse until they
meet an owned buffer, and a slot that is read once is never copied. Records and slots are
dropped as soon as they have been used, so memory falls during the pass.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.accumulate import accumulate, owned_sum
from ..core.config import _name
from ..core.sparse import SparseCotangent
from ..core.tangents import AbstractZero
from ..core.thunks import InplaceableThunk
from ..core.structure import tangent_at

__all__ = ["backward", "RuleError"]


class RuleError(ValueError):
    """A rule's pullback returned something that does not fit its arguments."""


def backward(records: list, seeds: list, retain: bool = False) -> tuple[list, bytearray]:
    """Run the backward pass from ``seeds`` (``(node, cotangent)`` pairs).

    Returns the slots (cotangents of the input leaves are left in them) and which slots are
    owned. With ``retain`` the records are kept, so the pass can be run again (``jacobian``).
    """
    count = len(records)
    slots: list = [None] * count
    owned = bytearray(count)
    for node, cotangent in seeds:
        _contribute(slots, owned, records, node, cotangent, None, 0)
    for node in range(count - 1, -1, -1):
        cotangent = slots[node]
        if cotangent is None:
            continue
        pullback, parents, function, _, _ = records[node]
        if pullback is None:  # an input leaf: its slot is the result
            continue
        slots[node] = None
        if not retain:
            records[node] = None
        cotangents = pullback(cotangent)
        if len(cotangents) != len(parents) + 1:
            raise RuleError(
                f"the pullback of {_name(function)} returned {len(cotangents)} cotangents; "
                f"expected {len(parents) + 1}: one for the function itself, then one per "
                f"positional argument ({len(parents)}).")
        position = 0
        for parent in parents:
            position += 1
            if type(parent) is int:
                if parent < 0:
                    continue
                cotangent = cotangents[position]
                # Hot path: a first scalar contribution that matches its primal exactly.
                if slots[parent] is None and type(cotangent) in _SCALAR_DTYPES and \
                        records[parent][4] is _SCALAR_DTYPES[type(cotangent)] and \
                        records[parent][3] == ():
                    slots[parent] = cotangent
                else:
                    _contribute(slots, owned, records, parent, cotangent, function, position)
            else:
                structural = cotangents[position]
                for path, leaf in parent:
                    _contribute(slots, owned, records, leaf, tangent_at(structural, path),
                                function, position)
    return slots, owned


def _contribute(slots: list, owned: bytearray, records: list, node: int, cotangent: Any,
                function: Any, position: int) -> None:
    if cotangent is None or isinstance(cotangent, AbstractZero):
        return
    record = records[node]
    _check(cotangent, record[3], record[4], function, position)
    old = slots[node]
    if old is None:
        slots[node] = cotangent
    elif owned[node]:
        slots[node] = accumulate(old, cotangent, owned=True)
    else:
        slots[node] = owned_sum(old, cotangent)
        owned[node] = 1


def _check(cotangent: Any, shape: tuple | None, dtype: np.dtype | None, function: Any,
           position: int) -> None:
    """A cotangent must have its primal's shape and dtype (lazy ones are checked by kind)."""
    if shape is None:
        return
    kind = type(cotangent)
    if kind is np.ndarray or kind is SparseCotangent or isinstance(cotangent, np.generic):
        got_shape, got_dtype = cotangent.shape, cotangent.dtype
    elif kind is float:
        got_shape, got_dtype = (), _FLOAT64
    elif kind is complex:
        got_shape, got_dtype = (), _COMPLEX128
    elif kind is InplaceableThunk and cotangent.shape is not None:
        got_shape, got_dtype = cotangent.shape, cotangent.dtype or dtype
    else:
        return  # a thunk or structural tangent: checked when it is used
    if got_shape != shape or got_dtype != dtype:
        source = (f"the pullback of {_name(function)} returned, for argument {position - 1},"
                  if function is not None else "the seed given to the pullback was")
        raise RuleError(
            f"{source} a cotangent of shape {got_shape} and dtype {got_dtype}; the argument "
            f"has shape {shape} and dtype {dtype}. Rules must reduce broadcast dimensions and "
            f"project their cotangents (chainrules.ProjectTo(x)(dx)).")


_FLOAT64 = np.dtype(np.float64)
_SCALAR_DTYPES = {kind: np.dtype(kind) for kind in (np.float64, np.float32, np.float16,
                                                     np.complex128, np.complex64)}
_COMPLEX128 = np.dtype(np.complex128)
