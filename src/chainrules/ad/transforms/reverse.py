"""The backward pass: walk the tape in reverse, call each pullback, accumulate cotangents.

Each node has a slot. A first contribution is stored as it is (it may alias other values, so
it is not owned); a second one makes a new owned sum (`owned_sum`); later ones are added in
place (`accumulate(..., owned=True)`). Sparse index cotangents therefore stay sparse until they
meet an owned buffer, and a slot that is read once is never copied. Forward over reverse
(``hvp``), where a cotangent is a value of a forward trace carrying its tangent, works the same
way: the second contribution makes a new pair of buffers (`owned_pair_sum`), and later ones
are added into both in place (`add_pair_in_place`). Records and slots are
dropped as soon as they have been used, so memory falls during the pass.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.accumulate import accumulate, owned_copy, owned_sum
from ...core.naming import function_name
from ...core.sparse import SparseCotangent, SparseSum
from ...core.tangents import AbstractZero, NoTangent
from ...core.thunks import InplaceableThunk, Thunk, unthunk

from ..trace.errors import RuleError
from ..trace.pairs import add_pair_in_place, owned_pair_sum
from ..trace.tape import OWNING_PULLBACKS, StructureArgument
from ..trace.traced import Traced

__all__ = ["backward"]

def backward(records: list, seeds: list, retain: bool = False) -> tuple[list, bytearray]:
    """Run the backward pass from ``seeds`` (``(node, cotangent)`` pairs).

    Returns the slots (cotangents of the input leaves are left in them) and which slots are
    owned. With ``retain`` the records are kept, so the pass can be run again (``jacobian``).
    """
    count = len(records)
    slots: list = [None] * count
    owned = bytearray(count)
    handed: dict = {}  # node -> the traced buffer an owning pullback handed to its slot
    for node, cotangent in seeds:
        _contribute(slots, owned, records, node, cotangent, None, 0)
    for node in range(count - 1, -1, -1):
        cotangent = slots[node]
        if cotangent is None:
            continue
        record = records[node]
        pullback = record[0]
        if pullback is None:  # an input leaf: its slot is the result
            continue
        slots[node] = None
        if not retain:
            records[node] = None
        if type(pullback) in OWNING_PULLBACKS:
            _pull_owned(slots, owned, records, node, record, cotangent, owned[node], handed)
            continue
        cotangents = pullback(cotangent)
        if len(cotangents) != len(record) - 2:
            raise RuleError(
                f"the pullback of {_source_name(record[1])} returned {len(cotangents)} "
                f"cotangents; expected {len(record) - 2}: one for the function itself, then "
                f"one per positional argument ({len(record) - 3}).")
        if len(record) == 5:
            # Two arguments (binary operators, indexing): the loop below, unrolled. It is
            # the same code; unrolled, a scalar loop's gradient runs 4% fewer instructions
            # (callgrind).
            parent = record[3]
            if parent >= 0:
                cotangent = cotangents[1]
                if slots[parent] is None and (type(cotangent) is records[parent][2][2]
                                              or type(cotangent) is Traced):
                    slots[parent] = cotangent
                else:
                    _contribute(slots, owned, records, parent, cotangent, record[1], 1)
            parent = record[4]
            if parent >= 0:
                cotangent = cotangents[2]
                if slots[parent] is None and (type(cotangent) is records[parent][2][2]
                                              or type(cotangent) is Traced):
                    slots[parent] = cotangent
                else:
                    _contribute(slots, owned, records, parent, cotangent, record[1], 2)
            continue
        position = 0
        for parent in record[3:]:
            position += 1
            if parent >= 0:  # not a constant argument
                cotangent = cotangents[position]
                if slots[parent] is None and (type(cotangent) is records[parent][2][2]
                                              or type(cotangent) is Traced):
                    slots[parent] = cotangent  # the hot path: a first number of its type
                else:
                    _contribute(slots, owned, records, parent, cotangent, record[1], position)
    return slots, owned


def _pull_owned(slots: list, owned: bytearray, records: list, node: int, record: tuple,
                cotangent: Any, is_owned: int, handed: dict) -> None:
    """Run the owning pullback of ``node``: its cotangent made owned (copied once if it is
    not), written in place, and handed on, owned, to the first argument's slot."""
    if is_owned and type(cotangent) is SparseSum:
        cotangent = _fold(cotangent, handed.pop(node, None))
    if not is_owned or not (type(cotangent) is np.ndarray or type(cotangent) is Traced):
        cotangent = unthunk(cotangent)
        cotangent = np.copy(cotangent) if type(cotangent) is Traced else owned_copy(cotangent)
    cotangents = record[0](cotangent)
    parent = record[3]
    if parent >= 0:
        buffer, old = cotangents[1], slots[parent]
        slots[parent] = buffer if old is None else accumulate(buffer, old, owned=True)
        owned[parent] = 1
        if type(slots[parent]) is Traced:
            handed[parent] = slots[parent]
    for position in range(2, len(record) - 2):
        parent = record[position + 2]
        if parent >= 0:
            _contribute(slots, owned, records, parent, cotangents[position], record[1],
                        position)


def _fold(total: SparseSum, handed: Any) -> Any:
    """An owned sum of traced sparse pieces (order 2), as its dense part with the pieces added
    into it in place by ``np.add.at`` (recorded on the outer trace as array writes, so
    O(size of the pieces), not a dense scatter per write); unchanged if it does not apply.
    The dense part is written only if it is ``handed``: the buffer an owning pullback handed
    to this node's slot (the engine's own, and nowhere else); anything else is copied first."""
    dense = total.dense
    if type(dense) is not Traced or total.is_computed or dense.dtype != total.dtype:
        return total
    if dense is not handed:
        dense = np.copy(dense)
    for index, piece in zip(total.indices, total.pieces):
        np.add.at(dense, index, piece)
    return dense


def _contribute(slots: list, owned: bytearray, records: list, node: int, cotangent: Any,
                function: Any, position: int) -> None:
    if cotangent is None or issubclass(type(cotangent), AbstractZero):
        return
    shape, dtype, _ = records[node][2]
    kind = type(cotangent)
    if kind is not Thunk and kind is not Traced and not (
            (kind is SparseCotangent or kind is np.ndarray)
            and cotangent.dtype is dtype and cotangent.shape == shape):
        _check(cotangent, shape, dtype, function, position)  # thunks: when used
    old = slots[node]
    if old is None:
        slots[node] = cotangent
    elif owned[node] == _OWNED_PAIR and add_pair_in_place(old, cotangent):
        return
    elif owned[node]:
        slots[node] = accumulate(old, cotangent, owned=True)
        owned[node] = 1
    else:
        if kind is Traced:  # forward over reverse: a value and its tangent, summed in place
            total = owned_pair_sum(old, cotangent)
            if total is not None:
                slots[node] = total
                owned[node] = _OWNED_PAIR
                return
        slots[node] = owned_sum(old, cotangent)
        owned[node] = 1


def _check(cotangent: Any, shape: tuple | None, dtype: np.dtype | None, function: Any,
           position: int) -> None:
    """A cotangent must have its primal's shape and dtype (lazy ones are checked by kind)."""
    if shape is None:
        return
    kind = type(cotangent)
    if kind is np.ndarray or kind is SparseCotangent or issubclass(type(cotangent), np.generic):
        got_shape, got_dtype = cotangent.shape, cotangent.dtype
    elif kind is float:
        got_shape, got_dtype = (), _FLOAT64
    elif kind is complex:
        got_shape, got_dtype = (), _COMPLEX128
    elif kind is InplaceableThunk and cotangent.shape is not None:
        got_shape, got_dtype = cotangent.shape, cotangent.dtype or dtype
    else:
        return  # a thunk or structural tangent: checked when it is used
    if got_dtype is not dtype and got_dtype != dtype or got_shape != shape:
        if function is None:
            source = "the seed given to the pullback was"
        elif type(function) is StructureArgument:
            source = (f"the pullback of {function_name(function.function)} returned, for the traced "
                      f"value at {list(function.paths[position - 1])} in argument "
                      f"{function.position},")
        else:
            source = f"the pullback of {function_name(function)} returned, for argument {position - 1},"
        raise RuleError(
            f"{source} a cotangent of shape {got_shape} and dtype {got_dtype}; the argument "
            f"has shape {shape} and dtype {dtype}. Rules must reduce broadcast dimensions and "
            f"project their cotangents (chainrules.ProjectTo(x)(dx)).")


def _source_name(function: Any) -> str:
    if type(function) is StructureArgument:
        return f"{function_name(function.function)} (argument {function.position}, a structure)"
    return function_name(function)


_NO_TANGENT = NoTangent()
# `owned[node]` of a slot holding an `owned_pair_sum` (1: any other owned accumulator).
_OWNED_PAIR = 2
_FLOAT64 = np.dtype(np.float64)
_COMPLEX128 = np.dtype(np.complex128)


