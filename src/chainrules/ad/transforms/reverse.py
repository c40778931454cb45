"""The backward pass: walk the tape in reverse, call each pullback, accumulate cotangents.

Each node has a slot. A first contribution is stored as it is (it may alias other values, so
it is not owned); a second one makes a new owned sum (`owned_sum`); later ones are added in
place (`accumulate(..., owned=True)`). Sparse index cotangents therefore stay sparse until they
meet an owned buffer, and a slot that is read once is never copied. Forward over reverse
(``hvp``), where a cotangent is a value of a forward trace carrying its tangent, works the same
way: the second contribution makes a new pair of buffers (`owned_pair_sum`), and later ones
are added into both in place (`add_pair_in_place`). Records and slots are
dropped as soon as they have been used, so memory falls during the pass.

A record of float64 numbers made by a rule's `NumberForm` (its first entry is the form's
payload, not a pullback) is pulled back here without a call: each cotangent is its partial
times ``dy``, summed into a number slot, and ``x[i]``'s is added into ``x``'s owned buffer
(under ``hvp``, a cotangent with its tangent: into ``x``'s owned pair of buffers).
Any other cotangent (a thunk, a traced value) goes to the rule's own pullback
(``form.pullback(payload)``), as if the rule had been called. Writes of one number,
``u[i] = t``, are pulled back here too, on an owned buffer or an owned pair of them.
"""

from __future__ import annotations

import linecache
import math
from typing import Any

import numpy as np

from ...core.accumulate import accumulate, owned_copy, owned_sum
from ...core.broadcast import unbroadcast
from ...core.check_error import CheckError
from ...core.checking import is_checking
from ...core.naming import function_name
from ...core.registry import (EVERY_COTANGENT_PULLBACKS, INDEX_READ, NumberForm, ProductForm,
                              ViewForm)
from ...core.sparse import SparseCotangent, SparseSum
from ...core.tangents import AbstractZero, NoTangent
from ...core.thunks import InplaceableThunk, Thunk, unthunk

from ..dispatch.writes import WritePullback
from ..trace.dual_pullbacks import NUMBER_DUAL, traced_cotangents
from ..trace.errors import RuleError
from ..trace.pairs import add_pair_in_place, dense_pair, is_array_pair, owned_pair_sum
from ..trace.tape import OWNING_PULLBACKS, ArrayAndNumberForm, BroadcastForm, StructureArgument
from ..trace.traced import Traced

__all__ = ["backward"]

def backward(records: list, seeds: list, retain: bool = False) -> tuple[list, bytearray]:
    """Run the backward pass from ``seeds`` (``(node, cotangent)`` pairs).

    Returns the slots (cotangents of the input leaves are left in them) and which slots are
    owned. With ``retain`` the records are kept, so the pass can be run again (``jacobian``).

    The pullbacks run with NumPy's floating-point errors ignored: a derivative that is
    infinite (``sqrt`` at 0) is ``inf``, as in JAX, not a warning or, under the user's
    ``np.errstate(all="raise")``, an error from inside a rule (the user's own code, where a
    pullback runs it again, `checkpoint`, runs under the user's state).
    """
    if is_checking():  # chainrules.checking: every pullback's result checked
        records = [_checked_record(records, node, record) for node, record in
                   enumerate(records)]
    with np.errstate(all="ignore"):
        return _backward(records, seeds, retain)


def _backward(records: list, seeds: list, retain: bool) -> tuple[list, bytearray]:
    count = len(records)
    slots: list = [None] * count
    owned = bytearray(count)
    handed: dict = {}  # node -> the traced buffer an owning pullback handed to its slot
    for node, cotangent in seeds:
        _contribute(slots, owned, records, node, cotangent, None, 0)
    pending: dict = {}  # node -> outer products of its cotangent, to sum (`_defer_outer`)
    for node in range(count - 1, -1, -1):
        if pending and node in pending:
            _add_outer_sum(slots, owned, records, node, pending.pop(node))
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
        if type(pullback) is tuple:
            # A NumberForm's record (chainrules.core.registry): cotangents of the output's
            # number type computed and added here; any other cotangent (a thunk, a traced
            # value) goes to the rule's own pullback.
            form = pullback[0]
            kind = type(cotangent)
            if kind is record[2][2]:  # float64 or float32: the record's number type
                if form.partials is INDEX_READ:  # x[i]: dy at position i of x's cotangent
                    parent = record[3]
                    old = slots[parent]
                    if old is None:
                        slots[parent] = SparseCotangent(pullback[1], cotangent, pullback[2],
                                                        pullback[3])
                        continue
                    if owned[parent] == 1 and type(old) is _NDARRAY:
                        old[pullback[1]] += cotangent  # as accumulate's add_into does
                        continue
                    # a cotangent the pass does not own (x - np.sum(x)'s, shared with the
                    # other argument): summed into a new buffer, as the rule's would be
                    _contribute(slots, owned, records, parent,
                                SparseCotangent(pullback[1], cotangent, pullback[2],
                                                pullback[3]), record[1], 1)
                    continue
                elif len(record) == 4:  # one argument: np.sin(x[i]), -x[i]
                    partial = form.partials[0]
                    parent = record[3]
                    if partial is None:
                        continue  # no derivative: no contribution
                    if partial == 1:
                        partial = cotangent
                    else:
                        partial = partial * cotangent if type(partial) is int else \
                            partial(pullback[3], pullback[1]) * cotangent
                    if type(partial) is kind:
                        old = slots[parent]
                        slots[parent] = partial if old is None else old + partial \
                            if type(old) is kind else _sum_into(
                                slots, owned, records, parent, partial, record[1], 1)
                        continue
                else:
                    first, second = form.partials
                    first_parent, second_parent = record[3], record[4]
                    if first_parent < 0 or first is None:
                        first = None
                    elif first == 1:
                        first = cotangent
                    else:
                        first = first * cotangent if type(first) is int else \
                            first(pullback[3], pullback[1], pullback[2]) * cotangent
                    if second_parent < 0 or second is None:
                        second = None
                    elif second == 1:
                        second = cotangent
                    else:
                        second = second * cotangent if type(second) is int else \
                            second(pullback[3], pullback[1], pullback[2]) * cotangent
                    if (first is None or type(first) is kind) and \
                            (second is None or type(second) is kind):
                        if first is not None:
                            old = slots[first_parent]
                            slots[first_parent] = first if old is None else old + first \
                                if type(old) is kind else _sum_into(
                                    slots, owned, records, first_parent, first, record[1], 1)
                        if second is not None:
                            old = slots[second_parent]
                            slots[second_parent] = second if old is None else old + second \
                                if type(old) is kind else _sum_into(
                                    slots, owned, records, second_parent, second, record[1], 2)
                        continue
            elif form is NUMBER_DUAL:  # a number's operation under hvp (and its arguments')
                if _pull_number_pairs(slots, owned, records, record, pullback, cotangent):
                    continue
            elif kind is Traced:  # (a value's cotangent under hvp)
                if type(form) is NumberForm and (
                        type(cotangent.primal) is record[2][2] and
                        type(cotangent.node) is record[2][2] or
                        record[2][2] is None and (form.payloads or
                                                  form.partials is INDEX_READ) and
                        _array_pair(cotangent, record[2])):
                    # Under hvp, a cotangent with its tangent, for a form linear with constant
                    # partials: x[i]'s added into the two buffers of x's owned pair
                    # (`chainrules.ad.trace.pairs`) as a plain one is above; add's and
                    # subtract's (on numbers, or on small arrays: `ForwardTrace.record_arrays`)
                    # the pair itself or its negative
                    if form.partials is INDEX_READ:
                        parent = record[3]
                        old = slots[parent]
                        if owned[parent] == _OWNED_PAIR and cotangent.tape is old.tape and \
                                type(old.primal) is _NDARRAY and type(old.node) is _NDARRAY \
                                and type(pullback[1]) is not _NDARRAY:  # (integers: below)
                            old.primal[pullback[1]] += cotangent.primal
                            old.node[pullback[1]] += cotangent.node
                        else:  # the first or second: summed into a pair by `_contribute`
                            part = None
                            if old is None and type(records[parent][0]) is tuple:
                                # a form's record (np.sum(np.sin(h))): a pair of dense buffers
                                # for its pullback (an input's stays sparse: x[i] of a long x)
                                part = dense_pair(pullback[1], cotangent, pullback[2],
                                                  pullback[3])
                                if part is not None:
                                    slots[parent], owned[parent] = part, _OWNED_PAIR
                                    continue
                            part = SparseCotangent(pullback[1], cotangent, pullback[2],
                                                   pullback[3])
                            _contribute(slots, owned, records, parent, part, record[1], 1)
                        continue
                    if form.payloads:
                        for position, partial in enumerate(form.partials, 1):
                            parent = record[position + 2]
                            if parent < 0 or partial is None:
                                continue
                            part = cotangent if partial == 1 else Traced(
                                partial * cotangent.primal, cotangent.tape,
                                partial * cotangent.node)
                            if slots[parent] is None:
                                slots[parent] = part
                            else:
                                _contribute(slots, owned, records, parent, part, record[1],
                                            position)
                        continue
                elif type(form) is ProductForm and _pull_product_pairs(
                        slots, owned, records, record, form, pullback[1], pullback[2],
                        cotangent, pending):
                    continue  # W @ h under hvp: a cotangent with its tangent
                elif (type(form) is ArrayAndNumberForm or type(form) is BroadcastForm) and \
                        form.form.payloads and _array_pair(cotangent, record[2]):
                    _pull_linear_pair_summed(slots, owned, records, record, form, cotangent)
                    continue  # h - s, u[:, None] - u under hvp: pairs summed to their shapes
                elif type(form) is ViewForm and _array_pair(cotangent, record[2]):
                    _pull_view_pair(slots, owned, records, node, record, form, pullback,
                                    cotangent)
                    continue  # x.T under hvp: the same view of both
            elif kind is not _FLOAT64_TYPE:  # (hvp's number records meet plain floats here)
                # a small array's elementwise operation (`_record_array_form`)
                if (kind is Thunk or kind is InplaceableThunk or kind is SparseCotangent) and \
                        record[2][2] is None and \
                        (type(form) is NumberForm or type(form) is ProductForm or
                         type(form) is ArrayAndNumberForm or type(form) is BroadcastForm or
                         type(form) is ViewForm):
                    # (a reduction's cotangents are lazy; a sum's and an index read's sparse)
                    cotangent = unthunk(cotangent)
                    kind = type(cotangent)
                if kind is _NDARRAY and record[2][2] is None:
                    if type(form) is NumberForm:
                        if form.partials is INDEX_READ:
                            if _pull_index_read(slots, owned, records, record, pullback,
                                                cotangent):
                                continue
                        elif _pull_array_form(slots, owned, records, record, form, pullback,
                                              cotangent, False):
                            continue
                    elif type(form) is ProductForm:
                        if _pull_product_form(slots, owned, records, record, form, pullback,
                                              cotangent, pending):
                            continue
                    elif (type(form) is ArrayAndNumberForm or type(form) is BroadcastForm) \
                            and _pull_array_form(slots, owned, records, record, form, pullback,
                                                 cotangent, True):
                        continue  # h / s, u[:, None] * u: partials summed to their shapes
                    elif type(form) is ViewForm and _pull_view(
                            slots, owned, records, node, record, form, pullback, cotangent):
                        continue  # x.T, x.reshape(4, 4): a view of dy
            pullback = form.pullback(pullback)
        if type(pullback) in OWNING_PULLBACKS:
            if type(pullback) is WritePullback and owned[node] == 1 and \
                    type(cotangent) is np.ndarray and pullback.mode == 2:
                # u[i] = t (`WritePullback.reads_number`): t's cotangent is the number at i
                # of the owned buffer, which is zeroed there and handed on (as `_pull_owned`
                # would, without the calls)
                part = cotangent[pullback.index]
                cotangent[pullback.index] = 0
                parent = record[3]
                if parent >= 0:
                    old = slots[parent]
                    slots[parent] = cotangent if old is None else \
                        accumulate(cotangent, old, owned=True)
                    owned[parent] = 1
                parent = record[5]
                if parent >= 0:
                    old = slots[parent]
                    if type(part) is records[parent][2][2] and (old is None or
                                                                type(old) is type(part)):
                        slots[parent] = part if old is None else old + part
                    else:
                        _contribute(slots, owned, records, parent, pullback.project(part),
                                    record[1], 3)
                continue
            if type(pullback) is WritePullback and owned[node] == _OWNED_PAIR and \
                    pullback.mode == 2 and _pull_number_write_of_pair(
                        slots, owned, records, record, cotangent, pullback):
                continue
            _pull_owned(slots, owned, records, node, record, cotangent, owned[node], handed)
            continue
        if type(cotangent) is np.ndarray and cotangent.flags.writeable:
            # read-only during the call: other pullbacks may read the same array (np.add's
            # hands one array to both arguments); setflags, not .flags: 3x cheaper
            cotangent.setflags(write=False)
            try:
                cotangents = pullback(cotangent, True) if type(pullback) in _EVERY and \
                    min(record[3:]) >= 0 else pullback(cotangent)
            except ValueError as error:
                raise _wrote_into_dy(error, record[1])
            finally:
                cotangent.setflags(write=True)
        elif type(pullback) in _EVERY and min(record[3:]) >= 0:
            cotangents = pullback(cotangent, True)  # (a lazy dy: a matmul chain's)
        else:
            cotangents = pullback(cotangent)
        if type(cotangents) is not tuple or len(cotangents) != len(record) - 2:
            cotangents = _checked_cotangents(cotangents, record)
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


def _array_pair(cotangent: Traced, meta: tuple) -> bool:
    """Whether a cotangent with its tangent (under ``hvp``) holds two arrays of the record's
    shape and dtype, ``meta``."""
    primal, tangent = cotangent.primal, cotangent.node
    return type(primal) is _NDARRAY and type(tangent) is _NDARRAY and \
        primal.dtype is meta[1] and tangent.dtype is meta[1] and \
        primal.shape == meta[0] and tangent.shape == meta[0]


def _pull_array_form(slots: list, owned: bytearray, records: list, record: tuple, form: Any,
                     payload: tuple, cotangent: np.ndarray, summed: bool) -> bool:
    """The cotangents of a `NumberForm`'s record on arrays (`record_binary` on small arrays of
    one shape and dtype; with ``summed``, an array and a traced number, or arrays broadcast
    together): ``partial * dy`` for each argument (with ``summed``, summed to its shape),
    added into its slot; a product
    is the pass's own buffer, so what is added to it later is added in place. False, with
    nothing added, where ``dy`` or a product is not of the output's shape and dtype (a
    partial that casts): then the rule's own pullback, which projects."""
    shape, dtype, _ = record[2]
    if cotangent.dtype is not dtype or cotangent.shape != shape:
        return False
    parts = []
    for position, partial in enumerate(form.partials, 1):
        parent = record[position + 2]
        if parent < 0 or partial is None:
            continue
        if partial == 1:
            part = cotangent  # shared with the other arguments' slots: not owned
        else:
            part = partial * cotangent if type(partial) is int else \
                partial(payload[3], payload[1]) * cotangent if payload[2] is None else \
                partial(payload[3], payload[1], payload[2]) * cotangent
            if type(part) is not _NDARRAY or part.dtype is not dtype or part.shape != shape:
                return False
        parts.append((parent, part, position))
    if summed:  # partials summed to each argument's shape: a number's (h / s:
        # `ArrayAndNumberForm`), a broadcast array's (u[:, None] * u: `BroadcastForm`)
        for k, (parent, part, position) in enumerate(parts):
            meta = records[parent][2]
            number = meta[2]
            if number is not None:
                part = _ADD_REDUCE(part)
                if type(part) is not number:
                    return False
                parts[k] = (parent, part, position)
            elif meta[0] != shape:
                part = unbroadcast(part, meta[0])
                if type(part) is not _NDARRAY or part.dtype is not dtype or \
                        part.shape != meta[0]:
                    return False
                parts[k] = (parent, part, position)
    for parent, part, position in parts:
        if slots[parent] is None:
            slots[parent] = part
            owned[parent] = part is not cotangent  # (a number: immutable, summed anew)
        else:
            _contribute(slots, owned, records, parent, part, record[1], position)
    return True


def _pull_product_pairs(slots: list, owned: bytearray, records: list, record: tuple,
                        form: ProductForm, a: Any, b: Any, cotangent: Any,
                        pending: dict) -> bool:
    """`_pull_product_form` under ``hvp`` (`ForwardTrace.record_product`): the arguments and
    the cotangent ``dy`` values of one forward trace holding an array and its tangent, or
    plain arrays. Each formula reads ``dy`` and the other argument only, linearly in each
    (the product is bilinear), so the cotangent's tangent is the formula at ``ddy`` plus the
    formula at the other argument's tangent; both are new arrays, the slot's own pair. False,
    with nothing added, where ``dy`` is not of the output's shape and dtype."""
    shape, dtype, _ = record[2]
    trace = None
    ddy = da = db = None
    if type(cotangent) is Traced:
        trace, dy, ddy = cotangent.tape, cotangent.primal, cotangent.node
        if type(ddy) is not _NDARRAY or ddy.dtype is not dtype or ddy.shape != shape:
            return False
    else:
        dy = cotangent
    if type(a) is Traced:
        if trace is not None and a.tape is not trace:
            return False
        trace, a, da = a.tape, a.primal, a.node
    if type(b) is Traced:
        if trace is not None and b.tape is not trace:
            return False
        trace, b, db = b.tape, b.primal, b.node
    if type(dy) is not _NDARRAY or dy.dtype is not dtype or dy.shape != shape:
        return False
    cotangent_of_a, cotangent_of_b = form.cotangents
    outer = 0 if form.outer is None else form.outer(a, b)
    for position, parent in ((1, record[3]), (2, record[4])):
        if parent < 0:
            continue
        if position == outer == 1:
            # W @ h: outer(dy, h) and its tangent outer(dy, dh) + outer(ddy, h), summed later
            terms = []
            if db is not None:
                terms.append((dy, db))
            if ddy is not None:
                terms.append((ddy, b))
            _defer_outer(pending, slots, owned, records, parent, record[1], dy, b, trace,
                         terms)
            continue
        if position == outer == 2:
            # h @ W: outer(h, dy) and its tangent outer(dh, dy) + outer(h, ddy), summed later
            terms = []
            if da is not None:
                terms.append((da, dy))
            if ddy is not None:
                terms.append((a, ddy))
            _defer_outer(pending, slots, owned, records, parent, record[1], a, dy, trace,
                         terms)
            continue
        if position == 1:
            value = cotangent_of_a(a, b, dy)
            tangent = cotangent_of_a(a, db, dy) if db is not None else None
            if ddy is not None:
                term = cotangent_of_a(a, b, ddy)
                tangent = term if tangent is None else tangent + term
        else:
            value = cotangent_of_b(a, b, dy)
            tangent = cotangent_of_b(da, b, dy) if da is not None else None
            if ddy is not None:
                term = cotangent_of_b(a, b, ddy)
                tangent = term if tangent is None else tangent + term
        if tangent is None:  # (a constant argument's, at a plain dy)
            part = value
        else:
            part = Traced(value, trace, tangent)
        if slots[parent] is None:
            slots[parent] = part
            owned[parent] = 1 if tangent is None else _OWNED_PAIR
        else:
            _contribute(slots, owned, records, parent, part, record[1], position)
    return True


def _defer_outer(pending: dict, slots: list, owned: bytearray, records: list, node: int,
                 function: Any, left: np.ndarray, right: np.ndarray, trace: Any,
                 tangent_terms: Any) -> None:
    """Add the cotangent ``np.multiply.outer(left, right)`` (with the tangent the sum of
    the outer products of ``tangent_terms``' pairs, under ``hvp``) to ``node``'s, later:
    kept as its two vectors in ``pending[node]``, and summed with the node's other such
    cotangents by one matrix product (`_add_outer_sum`) when the pass reaches the node, or
    once they hold as many numbers as the matrix (so they never take more memory than one
    buffer of it). An RNN's ``W @ h``: one product per such batch of steps instead of an
    outer product and a sum into W's buffer at each step."""
    entry = pending.get(node)
    if entry is not None and trace is not None and entry[0] is not trace:
        if entry[0] is not None:  # (another forward trace's: summed now)
            _add_outer_sum(slots, owned, records, node, pending.pop(node))
            entry = None
        else:
            entry[0] = trace
    if entry is None:
        rows, columns = left.shape[0], right.shape[0]
        entry = pending[node] = [trace, [], [], [], [], function,
                                 max(1, rows * columns // (rows + columns))]
    entry[1].append(left)
    entry[2].append(right)
    for tangent_left, tangent_right in tangent_terms:
        entry[3].append(tangent_left)
        entry[4].append(tangent_right)
    if len(entry[1]) + len(entry[3]) >= entry[6]:
        _add_outer_sum(slots, owned, records, node, pending.pop(node))


def _add_outer_sum(slots: list, owned: bytearray, records: list, node: int,
                   entry: list) -> None:
    """Add the outer products kept by `_defer_outer` to ``node``'s cotangent: ``sum_k
    outer(l_k, r_k)`` as the one matrix product ``L.T @ R`` (and the tangent's likewise)."""
    trace, lefts, rights, tangent_lefts, tangent_rights, function, _ = entry
    part = _ROWS(lefts).T @ _ROWS(rights)
    if tangent_lefts:
        part = Traced(part, trace, _ROWS(tangent_lefts).T @ _ROWS(tangent_rights))
    if slots[node] is None:
        slots[node] = part
        owned[node] = _OWNED_PAIR if tangent_lefts else 1
    else:
        _contribute(slots, owned, records, node, part, function, 1)


def _pull_view(slots: list, owned: bytearray, records: list, node: int, record: tuple,
               form: ViewForm, payload: tuple, cotangent: np.ndarray) -> bool:
    """The cotangent of a `ViewForm`'s record (``x.T``, ``x.reshape(4, 4)``): the form's
    ``back``, a view of ``dy``, which is the pass's own buffer where ``dy`` was. False, with
    nothing added, where ``dy`` is not of the output's shape and dtype: then the rule's own
    pullback, which projects."""
    if cotangent.dtype is not record[2][1] or cotangent.shape != record[2][0]:
        return False
    part = form.back(cotangent, payload[1])
    if type(part) is not _NDARRAY or part.dtype is not payload[2] or part.shape != payload[1]:
        return False
    parent = record[3]
    if slots[parent] is None:
        slots[parent] = part
        owned[parent] = owned[node] == 1  # (dy's slot is cleared: its buffer is no one else's)
    else:
        _contribute(slots, owned, records, parent, part, record[1], 1)
    return True


def _pull_linear_pair_summed(slots: list, owned: bytearray, records: list, record: tuple,
                             form: ArrayAndNumberForm, cotangent: Traced) -> None:
    """Under ``hvp``, the cotangent with its tangent of an array and a traced number added
    or subtracted (``h - s``), or of two arrays broadcast together (``u[:, None] - u``:
    `ForwardTrace.record_arrays`): an argument of the output's shape gets the pair (or its
    negative), a number its sum over the array, a broadcast array its sum to its shape
    (constant partials: no second derivatives)."""
    shape = record[2][0]
    for position, partial in enumerate(form.partials, 1):
        parent = record[position + 2]
        if parent < 0 or partial is None:
            continue
        primal, tangent = cotangent.primal, cotangent.node
        if partial != 1:
            primal, tangent = partial * primal, partial * tangent
        to = records[parent][2][0]
        if to != shape:
            if type(form) is ArrayAndNumberForm:  # the number's
                primal, tangent = _ADD_REDUCE(primal, None), _ADD_REDUCE(tangent, None)
            else:  # a broadcast array's
                primal, tangent = unbroadcast(primal, to), unbroadcast(tangent, to)
        elif partial == 1:
            _contribute(slots, owned, records, parent, cotangent, record[1], position)
            continue  # (shared with the other argument: not owned)
        part = _new_object(Traced)
        part.primal, part.tape, part.node = primal, cotangent.tape, tangent
        _contribute(slots, owned, records, parent, part, record[1], position)


def _pull_number_pairs(slots: list, owned: bytearray, records: list, record: tuple,
                       payload: tuple, cotangent: Any) -> bool:
    """Under ``hvp``, the cotangents with their tangents of a number's elementwise operation
    recorded with its arguments' tangents (``x[i] ** 3`` in a scalar loop:
    `ForwardTrace.record_numbers`), for a cotangent ``dy`` of the output's type, plain or
    with a tangent ``ddy``: ``partial_i * dy``, its tangent ``partial_i * ddy + sum_j H_ij
    dx_j dy``, from the partials' values kept and the form's ``second_partials``, added into
    the slots (what its `NumberDualPullback` gives, without the calls). False, with nothing
    added, for another cotangent (an array's, a lazy one, a value of another level) or a
    form without ``second_partials``: then that pullback."""
    _, form, args, y, tangents, derivatives, trace, _, _ = payload
    kind = type(y)
    if kind is _NDARRAY:
        return _pull_array_pairs(slots, owned, records, record, payload, cotangent)
    table = form.second_partials
    if table is None or (kind is not _FLOAT64_TYPE and kind is not _FLOAT32_TYPE):
        return False
    if type(cotangent) is kind:
        dy, ddy = cotangent, None
    elif type(cotangent) is Traced and cotangent.tape is trace and \
            type(cotangent.primal) is kind and type(cotangent.node) is kind:
        dy, ddy = cotangent.primal, cotangent.node
    else:
        return False
    parts = []
    position = 2
    for derivative in derivatives:
        position += 1
        parent = record[position]
        if derivative is None or parent < 0:
            continue
        part = derivative * dy
        tangent = None if ddy is None else derivative * ddy
        if table:
            for h, dx in zip(table[position - 3], tangents):
                if h is not None and dx is not None:
                    term = ((dx if h == 1 else h * dx) if type(h) is int else
                            h(y, *args) * dx) * dy
                    tangent = term if tangent is None else tangent + term
        if type(part) is not kind or tangent is not None and type(tangent) is not kind:
            return False  # (a partial of another type: the pullback projects)
        if tangent is not None:
            pair = _new_object(Traced)
            pair.primal, pair.tape, pair.node = part, trace, tangent
            part = pair
        parts.append((parent, part, position - 2))
    for parent, part, position in parts:
        if slots[parent] is None:
            slots[parent] = part
        else:
            _contribute(slots, owned, records, parent, part, record[1], position)
    return True


def _pull_array_pairs(slots: list, owned: bytearray, records: list, record: tuple,
                      payload: tuple, cotangent: Any) -> bool:
    """`_pull_number_pairs` for small arrays (``np.tanh(h)``, ``u * u`` under ``hvp``:
    `ForwardTrace.record_arrays`), for a cotangent of the output's shape and dtype, plain or
    with a tangent: the form's ``pullback_dual`` on the values kept, its pairs added into
    the slots; the two of an argument given twice (``u * u``) summed into one new pair first.
    False, with nothing added, for another cotangent (a value of another level...)."""
    _, form, args, y, tangents, derivatives, trace, needed, _ = payload
    kind = type(cotangent)
    if kind is SparseCotangent or kind is Thunk or kind is InplaceableThunk:
        cotangent = unthunk(cotangent)  # (a total sum's, a slice read's: dense)
        kind = type(cotangent)
    if kind is Traced:
        if cotangent.tape is not trace:
            return False
        dy, ddy = cotangent.primal, cotangent.node
        if type(dy) is not _NDARRAY or type(ddy) is not _NDARRAY or dy.dtype is not y.dtype \
                or ddy.dtype is not y.dtype or dy.shape != y.shape or ddy.shape != y.shape:
            return False
    elif kind is _NDARRAY and cotangent.dtype is y.dtype and cotangent.shape == y.shape:
        dy, ddy = cotangent, None
    else:
        return False
    parts = traced_cotangents(trace, form.pullback_dual(args, y, tangents, derivatives, dy,
                                                        ddy, needed))
    if len(parts) == 3 and record[3] == record[4] >= 0 and type(parts[1]) is Traced and \
            type(parts[2]) is Traced and is_array_pair(parts[1]) and \
            is_array_pair(parts[2]) and parts[1].primal.shape == parts[2].primal.shape:
        # u * u: one pair, the pass's own
        first, second = parts[1], parts[2]
        part = _new_object(Traced)
        part.primal, part.tape, part.node = first.primal + second.primal, trace, \
            first.node + second.node
        parent = record[3]
        if slots[parent] is None:
            slots[parent], owned[parent] = part, _OWNED_PAIR
        else:
            _contribute(slots, owned, records, parent, part, record[1], 1)
        return True
    position = 2
    for part in parts[1:]:
        position += 1
        parent = record[position]
        if parent < 0 or type(part) is NoTangent:
            continue
        if slots[parent] is None and (type(part) is Traced or
                                      type(part) is records[parent][2][2]):
            slots[parent] = part
        else:
            _contribute(slots, owned, records, parent, part, record[1], position - 2)
    return True


def _pull_view_pair(slots: list, owned: bytearray, records: list, node: int, record: tuple,
                    form: ViewForm, payload: tuple, cotangent: Traced) -> None:
    """`_pull_view` under ``hvp``: a cotangent with its tangent (two arrays of the output's
    shape and dtype), each moved back by the form's ``back`` (a view is linear), the pass's
    own pair where the cotangent's was."""
    shape = payload[1]
    part = _new_object(Traced)
    part.primal, part.tape, part.node = form.back(cotangent.primal, shape), cotangent.tape, \
        form.back(cotangent.node, shape)
    parent = record[3]
    if slots[parent] is None:
        slots[parent] = part
        # (dy's slot is cleared: its buffers are no one else's)
        owned[parent] = _OWNED_PAIR if owned[node] == _OWNED_PAIR else 0
    else:
        _contribute(slots, owned, records, parent, part, record[1], 1)


def _pull_index_read(slots: list, owned: bytearray, records: list, record: tuple,
                     payload: tuple, cotangent: np.ndarray) -> bool:
    """The cotangent of a slice read's record (``X[:, j]``, `record_binary`): ``dy`` added
    into x's buffer at the index when the pass owns one, else given as a `SparseCotangent`
    (O(size of the slice), never O(size of x)). False, with nothing added, where ``dy`` is
    not of the slice's shape and dtype: then the rule's own pullback, which projects."""
    if cotangent.dtype is not payload[3] or cotangent.shape != record[2][0]:
        return False
    parent = record[3]
    old = slots[parent]
    if type(payload[1]) is _NDARRAY and _PROD(payload[2]) < _DENSE_BELOW:
        # x[idx] of a small x, integers which may repeat: its dense cotangent, each position's
        # values summed in index order as SparseCotangent's dense value is (np.add.at on
        # zeros), then added as accumulate adds it; cheaper there than grouping the index
        part = _ZEROS(payload[2], payload[3])
        _ADD_AT(part, payload[1], cotangent)
        if old is None:
            slots[parent] = part
            owned[parent] = 1
        elif owned[parent] == 1 and type(old) is _NDARRAY:
            old += part
        else:
            _contribute(slots, owned, records, parent, part, record[1], 1)
        return True
    if owned[parent] == 1 and type(old) is _NDARRAY:
        if type(payload[1]) is _NDARRAY:  # integers, which may repeat: summed first, exactly
            SparseCotangent(payload[1], cotangent, payload[2], payload[3]).add_into(old)
        else:
            old[payload[1]] += cotangent
    elif old is None:
        slots[parent] = SparseCotangent(payload[1], cotangent, payload[2], payload[3])
    else:
        _contribute(slots, owned, records, parent, SparseCotangent(
            payload[1], cotangent, payload[2], payload[3]), record[1], 1)
    return True


def _pull_product_form(slots: list, owned: bytearray, records: list, record: tuple,
                       form: ProductForm, payload: tuple, cotangent: np.ndarray,
                       pending: dict) -> bool:
    """The cotangents of a `ProductForm`'s record (``W @ h``): each argument's formula at
    the recorded arguments, a new array, which becomes its slot's own buffer or is added
    into the slot. False, with nothing added, where ``dy`` is not of the output's shape and
    dtype: then the rule's own pullback, which projects. A matrix's cotangent that is an
    outer product (``W @ h``'s, ``h @ W``'s: `ProductForm.outer`) is summed with the others
    of its node by one matrix product (`_defer_outer`)."""
    shape, dtype, _ = record[2]
    a, b = payload[1], payload[2]
    if type(a) is Traced or type(b) is Traced:  # (recorded under hvp)
        return _pull_product_pairs(slots, owned, records, record, form, a, b, cotangent,
                                   pending)
    if cotangent.dtype is not dtype or cotangent.shape != shape:
        return False
    outer = 0 if form.outer is None else form.outer(a, b)
    for position, cotangent_of in enumerate(form.cotangents, 1):
        parent = record[position + 2]
        if parent < 0:
            continue
        if position == outer:
            if outer == 1:
                _defer_outer(pending, slots, owned, records, parent, record[1], cotangent, b,
                             None, ())
            else:
                _defer_outer(pending, slots, owned, records, parent, record[1], a, cotangent,
                             None, ())
            continue
        part = cotangent_of(a, b, cotangent)
        if slots[parent] is None:
            slots[parent] = part
            owned[parent] = 1
        else:
            _contribute(slots, owned, records, parent, part, record[1], position)
    return True


def _checked_record(records: list, node: int, record: Any) -> Any:
    """``record`` with its pullback checked (`_CheckedPullback`), in the checking mode."""
    if record is None or record[0] is None or type(record[0]) in OWNING_PULLBACKS:
        return record
    if type(record[0]) is tuple:  # a NumberForm's record: checked as its rule's pullback
        record = (record[0][0].pullback(record[0]),) + record[1:]
    return (_CheckedPullback(record, records, node),) + record[1:]


class _CheckedPullback:
    """A pullback whose cotangents are checked against their primals' shapes and dtypes (lazy
    ones computed), and for the first NaN or infinity made from a finite cotangent, reported
    with the line of the user's code that recorded the operation."""

    __slots__ = ("record", "records", "node")

    def __init__(self, record: tuple, records: list, node: int):
        self.record, self.records, self.node = record, records, node

    def __call__(self, dy: Any) -> Any:
        pullback, function = self.record[0], self.record[1]
        cotangents = pullback(dy)
        if type(cotangents) is not tuple or len(cotangents) != len(self.record) - 2:
            return cotangents  # refused by the engine, naming the rule
        checked = list(cotangents)
        finite = _is_finite(dy)
        for position, parent in enumerate(self.record[3:], 1):
            cotangent = checked[position]
            if parent < 0 or cotangent is None or issubclass(type(cotangent), AbstractZero):
                continue
            if issubclass(type(cotangent), InplaceableThunk):
                # its value, read without computing the thunk itself: the engine still adds
                # it in place, and the accumulation check compares that with this value
                cotangent = unthunk(cotangent.val)
            elif issubclass(type(cotangent), Thunk):
                cotangent = checked[position] = unthunk(cotangent)
            shape, dtype, _ = self.records[parent][2]
            _check(cotangent, shape, dtype, function, position)
            if finite and not _is_finite(cotangent):
                raise CheckError(self._non_finite(function, position, cotangent))
        return tuple(checked)

    def _non_finite(self, function: Any, position: int, cotangent: Any) -> str:
        values = np.asarray(cotangent.values if type(cotangent) is SparseCotangent
                            else cotangent)
        made = "nan" if np.isnan(values).any() else "inf"
        sources = getattr(self.records, "sources", None) or \
            getattr(self.record, "sources", None)
        where = "an unknown line (the tape was made outside the checking mode)"
        source = sources[self.node] if sources and self.node < len(sources) else None
        if source is not None:
            line = linecache.getline(source[0], source[1]).strip()
            where = f"{source[0]}, line {source[1]}: {line}" if line else \
                f"{source[0]}, line {source[1]}"
        return (f"checking: the pullback of {_source_name(function)} made {made} from a "
                f"finite cotangent (argument {position - 1}):\n"
                f"  recorded at {where}\n"
                f"A derivative is infinite or undefined there (sqrt, log or a division at 0, "
                f"0 * inf): move the input off the point, or hide the branch with "
                f"np.where on a safe input (docs/engine.md, 'NaN gradients through np.where').")


def _is_finite(value: Any) -> bool:
    """Whether a cotangent holds only finite numbers (structural and traced ones: not read)."""
    kind = type(value)
    if kind is SparseCotangent:
        if value.is_traced:
            return True  # a value of an outer trace: not read here
        value = value.values  # its nonzero part: no dense array made
    elif not issubclass(kind, (np.ndarray, np.generic, float, complex, int)):
        return True
    return bool(np.all(np.isfinite(value)))


def _wrote_into_dy(error: ValueError, function: Any) -> Exception:
    """The error of a pullback that wrote into its read-only ``dy`` (else ``error`` itself)."""
    if "read-only" not in str(error):
        return error
    wrote = RuleError(
        f"the pullback of {_source_name(function)} wrote into its cotangent dy, which is "
        f"read-only: other pullbacks may read the same array. Compute a new array "
        f"(dy * 2, not dy *= 2).")
    wrote.__cause__ = error
    return wrote


def _checked_cotangents(cotangents: Any, record: tuple) -> tuple:
    """A pullback's result as a tuple of one cotangent for the function and one per argument,
    or an error that names the rule."""
    expected = len(record) - 2
    where = f"the pullback of {_source_name(record[1])} returned"
    if type(cotangents) is list and len(cotangents) == expected:
        return tuple(cotangents)
    if type(cotangents) is not tuple and type(cotangents) is not list:
        raise RuleError(
            f"{where} a value of type {type(cotangents).__name__}; a pullback returns a tuple of {expected} "
            f"cotangents: one for the function itself (NoTangent() for a plain function), then "
            f"one per positional argument ({expected - 1}).")
    raise RuleError(
        f"{where} {len(cotangents)} cotangents; expected {expected}: one for the function "
        f"itself, then one per positional argument ({expected - 1}).")


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
            if old is None and type(record[0]) is WritePullback and record[0].mode != 1 and \
                    is_array_pair(buffer):
                # written in place by the pullback (`dy[index] = 0`), so its buffers are the
                # pass's own: later pairs are added into them (`add_pair_in_place`)
                owned[parent] = _OWNED_PAIR
            else:
                handed[parent] = slots[parent]
    for position in range(2, len(record) - 2):
        parent = record[position + 2]
        if parent >= 0:
            _contribute(slots, owned, records, parent, cotangents[position], record[1],
                        position)


def _pull_number_write_of_pair(slots: list, owned: bytearray, records: list, record: tuple,
                               cotangent: Any, pullback: WritePullback) -> bool:
    """``u[i] = t`` under ``hvp``, its cotangent an owned pair of buffers (`owned[node]` is
    `_OWNED_PAIR`): as the mode-2 path of `_backward` at order 1, on both buffers: ``t``'s
    cotangent and its tangent read at ``i`` and zeroed there, the pair handed on to ``u``
    as it is, owned. False, doing nothing, where it does not apply (the write's pullback
    then runs on the traced cotangent)."""
    if not is_array_pair(cotangent):
        return False
    value, tangent, index = cotangent.primal, cotangent.node, pullback.index
    part = Traced(value[index], cotangent.tape, tangent[index])
    value_parent = record[5]
    if value_parent >= 0:
        shape, dtype, _ = records[value_parent][2]
        if shape != () or part.primal.dtype is not dtype:
            part = pullback.project(part)  # (a float32 number written into float64)
    value[index] = 0
    tangent[index] = 0
    parent = record[3]
    if parent >= 0:
        old = slots[parent]
        slots[parent] = cotangent
        if old is None or add_pair_in_place(cotangent, old):
            owned[parent] = _OWNED_PAIR
        else:
            slots[parent] = accumulate(cotangent, old, owned=True)
            owned[parent] = 1
    if value_parent >= 0:
        _contribute(slots, owned, records, value_parent, part, record[1], 3)
    return True


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


def _sum_into(slots: list, owned: bytearray, records: list, node: int, cotangent: Any,
              function: Any, position: int) -> Any:
    """`_contribute`, returning the slot's new value."""
    _contribute(slots, owned, records, node, cotangent, function, position)
    return slots[node]


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
        if kind is Traced or kind is SparseCotangent and type(cotangent.values) is Traced:
            # forward over reverse: a value and its tangent (or x[i]'s cotangent of one),
            # summed in place
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
# NumPy's own np.array, taken at import: under hvp the backward pass runs inside the forward
# trace, whose namespace's np.array looks for traced values in the list
# (ad/dispatch/creation.py)
_ROWS = np.array
_FLOAT64 = np.dtype(np.float64)
_EVERY = EVERY_COTANGENT_PULLBACKS
_FLOAT64_TYPE, _FLOAT32_TYPE = np.float64, np.float32
_NDARRAY = np.ndarray  # a module's name: fewer instructions than np.ndarray in the loop
_ZEROS, _ADD_AT, _PROD = np.zeros, np.add.at, math.prod  # (NumPy's own, as _ROWS)
_DENSE_BELOW = 1024  # x[idx]'s cotangent is dense for an x of fewer elements (`_pull_index_read`)
_ADD_REDUCE = np.add.reduce  # a whole array's sum, NumPy's own (bound at import, as _ROWS)
_new_object = object.__new__
_COMPLEX128 = np.dtype(np.complex128)


