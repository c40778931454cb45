"""Forward mode: tangents travel with primal values through the tracer and the frules.

A forward trace is a level of tracing like a reverse `Tape`, and its values are the same
`Traced` objects, so forward and reverse levels nest in any order (``jvp`` of ``grad``,
``grad`` of ``jvp``): an operation is handled by the innermost level among its arguments, and
values of outer levels are constants to it. For a forward trace, a traced value's ``node`` slot
holds its tangent instead of a tape position: nothing is recorded, each operation runs its
``frule`` at once and its output carries ``J dx``. Cost is that of the frules, linear in the
number of operations, and memory does not grow with it.

A function with an rrule and no frule still works: its pushforward is derived from the
pullback, one pullback per real output component (exact; meant for small outputs).

The hot path: an frule may carry ``push(args, tangents, kwargs) -> (y, dy)``, the same rule on
plain tangents (``None`` for a zero or a constant argument), which the frule itself calls once
it has unthunked its tangents; `scalar_rule` (every elementwise ufunc), getitem and `define`
(matmul, sum, reshape, transpose...) rules have one. `ForwardTrace.apply` calls it directly,
and wraps an output whose tangent already has its type, dtype and shape without projecting it
again: one mechanism (the rule), minus the generic dispatch. The operators and ufuncs of
`Traced` (`record_binary`, `record_unary`) hand forward values straight to `apply`.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ...core.naming import function_name
from ...core.pushforward import pushforward_from_pullbacks
from ...core.registry import INDEX_READ, NumberForm, frule, rrule
from ...core.scalar_rule import STAND_IN_SIZE
from ...core.structure import (is_structure, leaves, replace_paths, tangent_at,
                              tangent_from_paths)
from ...core.tangents import AbstractZero, NoTangent, ZeroTangent
from ...core.thunks import unthunk
from ..trace.dual_pullbacks import (DUAL_NUMBERS, DUAL_VALUES, NUMBER_DUAL, DualPullback,
                                    tangent_in_space, zeros_like_primal)
from ..trace.errors import NoRuleError, RuleError
from ..trace.tape import (Level, broadcast_form, next_to_a_number, no_rule_message,
                          record_output)
from ..trace.float_errors import user_error_or_retry
from ..trace.traced import Traced, constant_result
from ..trace.values import (ARRAY_METAS, PLAIN, is_differentiable, is_plain_tuple,
                            record_meta)

__all__ = ["ForwardTrace"]

_NO_TANGENT = NoTangent()
_ZERO = ZeroTangent()
_FRULES = frule._rules


class ForwardTrace(Level):
    """One level of forward-mode tracing (one ``jvp`` call).

    Its values are `Traced` whose ``node`` holds their tangent. ``active`` is always false,
    so the reverse engine's fast paths hand every operation on them to `apply`.
    """

    __slots__ = ()
    active = False
    forward = True
    runs_dual_forms = True
    one_direction = True

    def __enter__(self) -> "ForwardTrace":
        return self

    def __exit__(self, *exc) -> None:
        self.finished = True

    def apply(self, function: Any, primals: tuple, tangents: tuple, kwargs: dict) -> Any:
        """Run ``function``'s frule on ``primals`` with ``tangents`` (an int marks a constant
        argument, as the reverse engine's parent numbers do) and return its traced output."""
        try:
            entry = _FRULES.get(function)
            push = getattr(entry[0], "push", None) if entry is not None and entry[1] is False \
                else None
            if push is not None:
                # The hot path (operators, ufuncs, indexing, shape functions): the rule's own
                # pushforward on plain tangents, without the generic dispatch and thunks, and
                # without projecting what fits. Other tangents (structures, thunks, batches of
                # directions) take the generic path below.
                if len(tangents) == 2:  # binary operators, unrolled
                    first, second = tangents
                    if type(first) not in _VALUES:
                        first = None if type(first) is int else _plain(first)  # int: a constant
                    if type(second) not in _VALUES:
                        second = None if type(second) is int else _plain(second)
                    if first is None and second is None:
                        return constant_result(self, function(*primals, **kwargs))  # constants in
                    plain: Any = (first, second) if first is not _OTHER and second is not _OTHER \
                        else None
                else:
                    plain = tuple([t if type(t) in _VALUES else _plain(t) for t in tangents])
                    constant = True
                    for t in plain:
                        if t is _OTHER:
                            plain, constant = None, False
                            break
                        if t is not None:
                            constant = False
                    if constant:
                        return constant_result(self, function(*primals, **kwargs))  # constants in
            else:
                plain = None
            if plain is not None:
                y, dy = push(primals, plain, kwargs)
                kind = type(y)
                if type(dy) is kind and (kind in _NUMBERS or (
                        kind is np.ndarray and dy.dtype is y.dtype and dy.shape == y.shape
                        and y.dtype.kind in "fc")):
                    traced = _new_object(Traced)  # as in `_wrap`, whose checks this passed
                    traced.primal, traced.tape, traced.node = y, self, dy
                    return traced
                return _wrap(self, y, dy)
            constant = True
            for t in tangents:
                if type(t) is not int and not isinstance(t, AbstractZero):
                    constant = False
                    break
            if constant:
                return constant_result(self, function(*primals, **kwargs))  # constants in
            tangents = tuple(_ZERO if type(t) is int else t for t in tangents)
            entry = _FRULES.get(function) or frule.lookup(function)  # a miss: rules loaded lazily
            result = None
            if entry is not None:
                rule, needs_config = entry
                if needs_config is None:  # declared non-differentiable
                    return function(*primals, **kwargs)
                arguments = ((_NO_TANGENT,) + tangents,) + primals
                result = rule(self.config, *arguments, **kwargs) if needs_config else \
                    rule(*arguments, **kwargs)
            if result is None:
                result = _pushforward_from_pullback(self, function, primals, tangents, kwargs)
            elif type(result) is not tuple or len(result) != 2:
                raise RuleError(f"the frule of {function_name(function)} returned a "
                                f"{type(result).__name__}"
                                f"{f' of {len(result)}' if type(result) is tuple else ''}; an frule "
                                f"returns a pair (y, dy), the output and its tangent (or None if "
                                f"it does not apply).")
            y, dy = result
            return _wrap(self, y, dy)
        except (FloatingPointError, RuntimeWarning):  # the user's error state: whose error?
            return user_error_or_retry(function, primals, kwargs,
                                       lambda: self.apply(function, primals, tangents, kwargs))

    def apply_searching(self, function: Any, args: tuple, kwargs: dict) -> Any:
        """`apply` when arguments may be structures holding this trace's values: a
        structure's tangent is the structure of their tangents."""
        def own(value):
            return type(value) is Traced and value.tape is self

        primals = []
        tangents = []
        for arg in args:
            if own(arg):
                primals.append(arg.primal)
                tangents.append(arg.node)
            elif type(arg) in PLAIN or (type(arg) is tuple and is_plain_tuple(arg)):
                primals.append(arg)  # a constant: nothing to search
                tangents.append(-1)
            elif is_structure(arg) and any(True for _ in leaves(arg, own)):
                found = list(leaves(arg, own))
                primal = replace_paths(arg, {path: v.primal for path, v in found})
                primals.append(primal)
                tangents.append(self.structure_tangent(arg, primal, found))
            else:
                primals.append(arg)
                tangents.append(-1)
        return self.apply(function, tuple(primals), tuple(tangents), kwargs)

    def record_dual(self, tape: Level, function: Any, dual: Any, primals: tuple,
                    parents: tuple, kwargs: dict) -> Any:
        """Record ``function`` on the reverse ``tape`` inside this trace by its rule's dual
        form (`chainrules.core.registry.dual_form`), when ``primals`` are plain values and
        values of this trace holding plain values; else ``None``.

        The output carries its tangent, and the pullback recorded computes each cotangent
        and its tangent from plain values (the rule's ``pullback_dual``), or is the rule's
        plain pullback, given the traced cotangent, for a rule linear in its arguments whose
        pullback reads none of their values. docs/engine.md, "Forward over reverse"."""
        try:
            if len(primals) == 2:  # binary operators and indexing: the loop below, unrolled
                a, b = primals
                da = db = None
                if type(a) is Traced:
                    if a.tape is not self or type(a.primal) not in _DUAL_VALUES:
                        return None  # a value of another level, or holding one (a third level)
                    a, da = a.primal, a.node
                    if type(da) not in _DUAL_VALUES:
                        if not issubclass(type(da), AbstractZero):
                            return None  # a batch of tangents, or a lazy one
                        da = None  # a zero tangent (an array the function created): a constant
                if type(b) is Traced:
                    if b.tape is not self or type(b.primal) not in _DUAL_VALUES:
                        return None
                    b, db = b.primal, b.node
                    if type(db) not in _DUAL_VALUES:
                        if not issubclass(type(db), AbstractZero):
                            return None
                        db = None
                args, tangents = (a, b), (da, db)
            else:
                values = []
                dvalues = []
                for primal in primals:
                    if type(primal) is Traced:
                        value, tangent = primal.primal, primal.node
                        if primal.tape is not self or type(value) not in _DUAL_VALUES:
                            return None
                        if type(tangent) not in _DUAL_VALUES:
                            if not issubclass(type(tangent), AbstractZero):
                                return None
                            tangent = None  # a zero tangent: a constant
                        values.append(value)
                        dvalues.append(tangent)
                    else:
                        values.append(primal)
                        dvalues.append(None)
                args, tangents = tuple(values), tuple(dvalues)
            result = dual(args, tangents, kwargs)
            if result is None:
                return None
            y, dy, pullback, pullback_dual = result
            kind = type(y)
            if kind not in _DUAL_VALUES:
                return None  # a structure or an integer output: the generic path
            if type(dy) is kind and (kind is not np.ndarray or (
                    dy.dtype is y.dtype and dy.shape == y.shape)):
                traced = _new_object(Traced)
                traced.primal, traced.tape, traced.node = y, self, dy
            elif isinstance(dy, AbstractZero):
                traced = y
            else:
                traced = _wrap(self, y, dy)
            if pullback_dual is not None:
                needed = (parents[0] >= 0, parents[1] >= 0) if len(parents) == 2 else \
                    tuple([parent >= 0 for parent in parents])
                pullback = DualPullback(pullback_dual, self, needed, (function, primals, kwargs))
            if type(traced) is not Traced:
                return record_output(tape, function, primals, parents, (traced, pullback))
            if kind is np.ndarray:
                if y.dtype.kind not in "fc":
                    return record_output(tape, function, primals, parents, (traced, pullback))
                meta = record_meta(y.shape, y.dtype, Traced)  # from the plain output: no traced reads
            else:
                meta = _TRACED_NUMBER_META[kind]
            records = tape.records  # recorded as `record_output` does
            records.append((pullback, function, meta) + parents)
            recorded = _new_object(Traced)
            recorded.primal, recorded.tape, recorded.node = traced, tape, len(records) - 1
            return recorded
        except (FloatingPointError, RuntimeWarning):  # the user's error state: whose error?
            return user_error_or_retry(function, primals, kwargs, lambda: self.record_dual(
                tape, function, dual, primals, parents, kwargs))

    def record_product(self, tape: Level, function: Any, form: Any, primals: tuple,
                       parents: tuple) -> Any:
        """`record_dual` for a `ProductForm` (``W @ h`` under ``hvp``), without the rule's
        dual form: the output and its tangent ``f(dW, h) + f(W, dh)`` (the product is
        bilinear) computed here, and recorded on ``tape`` as the two arguments, each a value
        of this trace holding an array and its tangent, or a plain array (a constant); the
        backward pass computes their cotangents with their tangents by the form's formulas
        (`chainrules.ad.transforms.reverse`). ``None`` where it does not apply (then
        `record_dual`)."""
        a, b = primals
        da = db = None
        if type(a) is Traced:
            if a.tape is not self:
                return None
            a, da = a.primal, a.node
            if type(da) is not np.ndarray:
                return None  # a zero, lazy or batched tangent
        if type(b) is Traced:
            if b.tape is not self:
                return None
            b, db = b.primal, b.node
            if type(db) is not np.ndarray:
                return None
        if type(a) is not np.ndarray or type(b) is not np.ndarray or not form.applies(a, b) \
                or da is not None and (da.dtype is not a.dtype or da.shape != a.shape) \
                or db is not None and (db.dtype is not b.dtype or db.shape != b.shape):
            return None
        y = function(a, b)
        dy = function(da, b) if da is not None else function(a, db)
        if da is not None and db is not None:
            dy += function(a, db)
        pair = _new_object(Traced)
        pair.primal, pair.tape, pair.node = y, self, dy
        records = tape.records
        records.append(((form,) + primals, function,
                        record_meta(y.shape, y.dtype, np.ndarray)) + parents)
        recorded = _new_object(Traced)
        recorded.primal, recorded.tape, recorded.node = pair, tape, len(records) - 1
        return recorded

    def record_view(self, tape: Level, function: Any, form: Any, primals: tuple,
                    parents: tuple) -> Any:
        """`record_dual` for a `ViewForm` (``x.T``, ``x.reshape(4, 4)`` under ``hvp``), as the
        tape records it at order 1: the argument's shape, the output and its tangent the
        same view of the value and of its tangent (a view is linear); the backward pass
        gives the argument the form's ``back`` of the cotangent and of its tangent. ``x`` a
        value of this trace holding a small float64 or float32 array and its tangent, the
        options constants. ``None`` where it does not apply (then `record_dual`)."""
        x = primals[0]
        if type(x) is not Traced or x.tape is not self or parents[0] < 0:
            return None
        options = primals[1:]
        for option, parent in zip(options, parents[1:]):
            if parent >= 0 or type(option) is Traced:
                return None  # a traced option
        value, tangent = x.primal, x.node
        if type(value) is not np.ndarray or type(tangent) is not np.ndarray:
            return None  # a value of a third level; a zero, lazy or batched tangent
        dtype = value.dtype
        if (dtype is not _F64_DTYPE and dtype is not _F32_DTYPE) or \
                value.size >= STAND_IN_SIZE or tangent.dtype is not dtype or \
                tangent.shape != value.shape or not form.applies(value, *options):
            return None
        y, dy = function(value, *options), function(tangent, *options)
        if type(y) is not np.ndarray or y.dtype is not dtype or type(dy) is not np.ndarray \
                or dy.dtype is not dtype or dy.shape != y.shape:
            return None
        pair = _new_object(Traced)
        pair.primal, pair.tape, pair.node = y, self, dy
        records = tape.records
        records.append(((form, value.shape, dtype, options), function,
                        ARRAY_METAS.get((y.shape, dtype)) or
                        record_meta(y.shape, dtype, np.ndarray)) + parents)
        recorded = _new_object(Traced)
        recorded.primal, recorded.tape, recorded.node = pair, tape, len(records) - 1
        return recorded

    def record_numbers(self, tape: Level, function: Any, form: Any, primals: tuple,
                       parents: tuple) -> Any:
        """`record_dual` for a `NumberForm` on float64 or float32 numbers (``x[i] ** 3`` in
        a scalar loop under ``hvp``), without the rule's dual form: the output and its tangent
        computed here from the form's ``compute`` and partials, the pullback made from the
        record's plain values only if a cotangent reaches it (`NumberDual`). ``None`` where
        it does not apply (then `record_dual`)."""
        try:
            if form.partials is INDEX_READ:
                # x[i], X[:, j] (a view: the caller checks that the index is basic): linear,
                # its pullback reads only the index
                x, index = primals
                if type(x) is not Traced or x.tape is not self:
                    return None
                value, tangent = x.primal, x.node
                if type(value) is not np.ndarray or type(tangent) is not np.ndarray or \
                        tangent.dtype is not value.dtype or tangent.shape != value.shape:
                    return None
                y = value[index]
                kind = type(y)
                if kind is _F64 or kind is _F32:
                    meta = _TRACED_NUMBER_META[kind]  # a plain cotangent: the inline read
                elif kind is np.ndarray and (y.dtype is _F64_DTYPE or y.dtype is _F32_DTYPE):
                    meta = ARRAY_METAS.get((y.shape, y.dtype)) or \
                        record_meta(y.shape, y.dtype, np.ndarray)
                else:
                    return None
                dy = tangent[index]
                payload = (form, index, tangent.shape, value.dtype)
            elif len(primals) == 2:  # binary operators: the arguments unrolled
                a, b = primals
                da = db = None
                if type(a) is Traced:
                    if a.tape is not self:
                        return None
                    a, da = a.primal, a.node
                    kind = type(a)
                    if (kind is not _F64 and kind is not _F32) or type(da) is not kind:
                        return None  # an array, or a zero, lazy or batched tangent
                    if type(b) is Traced:
                        if b.tape is not self:
                            return None
                        b, db = b.primal, b.node
                        if type(b) is not kind or type(db) is not kind:
                            return None
                    elif type(b) is not kind and (type(b) is not int or not b):
                        b = NumberForm.argument(b, kind)  # (a nonzero int is kept as it is)
                elif type(b) is Traced and b.tape is self:
                    b, db = b.primal, b.node
                    kind = type(b)
                    if (kind is not _F64 and kind is not _F32) or type(db) is not kind:
                        return None
                    if type(a) is not kind:
                        a = NumberForm.argument(a, kind)
                else:
                    return None
                if a is None or b is None:
                    return None
                y = form.compute(a, b)
                if type(y) is not kind:
                    return None
                first, second = form.partials
                payload = form.payloads.get(kind)
                if payload is not None:
                    # constant partials (add, subtract): the order-1 record, whose pullback
                    # takes a cotangent with its tangent as it is (zero second derivatives)
                    dy = None if da is None or first is None else da if first == 1 else \
                        first * da
                    if db is not None and second is not None:
                        term = db if second == 1 else second * db
                        dy = term if dy is None else dy + term
                    meta = _TRACED_NUMBER_META[kind]
                else:
                    # the partials of the arguments the tape differentiates, kept for the
                    # pullback
                    if first is None or type(a) is int or da is None and parents[0] < 0:
                        first = None
                    elif type(first) is not int:
                        first = first(y, a, b)
                    if second is None or type(b) is int or db is None and parents[1] < 0:
                        second = None
                    elif type(second) is not int:
                        second = second(y, a, b)
                    dy = None if da is None or first is None else \
                        (da if first == 1 else first * da) if type(first) is int else first * da
                    if db is not None and second is not None:
                        term = (db if second == 1 else second * db) if type(second) is int \
                            else second * db
                        dy = term if dy is None else dy + term
                    payload = (NUMBER_DUAL, form, (a, b), y, (da, db), [first, second], self,
                               (parents[0] >= 0, parents[1] >= 0), function)
                    meta = _DUAL_NUMBER_META[kind]
            else:  # a function of one number: np.sin(x[i]), -x[i]
                x = primals[0]
                if type(x) is not Traced or x.tape is not self or len(form.partials) != 1:
                    return None
                a, da = x.primal, x.node
                kind = type(a)
                if (kind is not _F64 and kind is not _F32) or type(da) is not kind:
                    return None
                y = form.compute(a)
                if type(y) is not kind:
                    return None
                derivative = form.partials[0]
                if derivative is None:
                    return None
                if type(derivative) is not int:
                    derivative = derivative(y, a)
                    dy = derivative * da
                else:
                    dy = da if derivative == 1 else derivative * da
                payload = form.payloads.get(kind)
                if payload is not None:
                    meta = _TRACED_NUMBER_META[kind]
                else:
                    payload = (NUMBER_DUAL, form, (a,), y, (da,), [derivative], self, (True,),
                               function)
                    meta = _DUAL_NUMBER_META[kind]
            if type(dy) is not kind or (payload[0] is NUMBER_DUAL and
                                        form.pullback_dual is None):
                return None  # no tangent (the general path knows zeros), or another type
            traced = _new_object(Traced)
            traced.primal, traced.tape, traced.node = y, self, dy
            records = tape.records
            records.append((payload, function, meta) + parents)
            recorded = _new_object(Traced)
            recorded.primal, recorded.tape, recorded.node = traced, tape, len(records) - 1
            return recorded
        except (FloatingPointError, RuntimeWarning):  # the user's error state: the general path
            return None

    def record_total(self, tape: Level, function: Any, form: Any, x: Any,
                     parent: int) -> Any:
        """`record_numbers` of ``np.sum(x)`` (the form's ``compute``) for a value ``x`` of
        this trace holding a float64 or float32 array of fewer than `STAND_IN_SIZE` elements
        and its tangent: recorded as at order 1, an index read of ``x[...]``, its tangent the
        tangent's sum. ``None`` where it does not apply (then `record_dual`)."""
        if x.tape is not self:
            return None
        value, tangent = x.primal, x.node
        if type(value) is not np.ndarray or type(tangent) is not np.ndarray or \
                (value.dtype is not _F64_DTYPE and value.dtype is not _F32_DTYPE) or \
                tangent.dtype is not value.dtype or tangent.shape != value.shape or \
                value.size >= STAND_IN_SIZE:
            return None  # (larger arrays: the rule, as at order 1)
        try:
            y, dy = form.compute(value), form.compute(tangent)
        except (FloatingPointError, RuntimeWarning):  # the user's error state: the general path
            return None
        kind = type(y)
        if (kind is not _F64 and kind is not _F32) or type(dy) is not kind:
            return None
        traced = _new_object(Traced)
        traced.primal, traced.tape, traced.node = y, self, dy
        records = tape.records
        records.append(((form, Ellipsis, tangent.shape, value.dtype), function,
                        _TRACED_NUMBER_META[kind], parent))
        recorded = _new_object(Traced)
        recorded.primal, recorded.tape, recorded.node = traced, tape, len(records) - 1
        return recorded

    def record_arrays(self, tape: Level, function: Any, form: Any, primals: tuple,
                      parents: tuple) -> Any:
        """`record_numbers` for small float64 or float32 arrays of one shape and dtype
        (``np.tanh(h)``, ``h + x`` in an RNN's step under ``hvp``), as the tape records them
        at order 1 (`chainrules.ad.trace.tape`): each argument a value of this trace holding
        such an array and its tangent, a plain such array (a constant) or a Python number (a
        constant); the output and its tangent computed here from the function and the form's
        partials. A form with constant partials (add, subtract) is recorded as at order 1,
        its cotangent's tangent passed on as it is; any other keeps the partials' values for
        its `NumberDual` pullback. ``None`` where it does not apply (then `record_dual`)."""
        partials = form.partials
        if partials is INDEX_READ or len(partials) != len(primals):
            return None
        if len(primals) == 1:
            return self._record_array(tape, function, form, primals[0], parents)
        a, b = primals  # two arguments: unrolled
        da = db = None
        number = 0  # 1 or 2: that argument is a traced number next to an array (h / s)
        if type(a) is Traced:
            if a.tape is not self:
                return None
            a, da = a.primal, a.node
            if type(a) is not np.ndarray:
                if (type(a) is not _F64 and type(a) is not _F32) or type(da) is not type(a):
                    return None  # a value of a third level; a zero, lazy or batched tangent
                number = 1
            elif type(da) is not np.ndarray:
                if not issubclass(type(da), AbstractZero):
                    return None  # a lazy or batched tangent
                da = None  # a zero tangent (an array the function created): a constant
        if type(b) is Traced:
            if b.tape is not self:
                return None
            b, db = b.primal, b.node
            if type(b) is not np.ndarray:
                if number or (type(b) is not _F64 and type(b) is not _F32) or \
                        type(db) is not type(b):
                    return None
                number = 2
            elif type(db) is not np.ndarray:
                if not issubclass(type(db), AbstractZero):
                    return None
                db = None
        if number:  # the array: the other argument, with a tangent or a constant
            array = b if number == 1 else a
            if type(array) is not np.ndarray or \
                    type(a if number == 1 else b) is not array.dtype.type:
                return None  # (a number of another type: a cast)
        else:
            array = a if da is not None else b if db is not None else None
            if array is None:
                return None  # no tangent: the general path knows zeros
        shape, dtype = array.shape, array.dtype
        if (dtype is not _F64_DTYPE and dtype is not _F32_DTYPE) or \
                array.size >= STAND_IN_SIZE or \
                da is not None and number != 1 and (da.dtype is not dtype or
                                                     da.shape != a.shape) or \
                db is not None and number != 2 and (db.dtype is not dtype or
                                                     db.shape != b.shape):
            return None
        # each argument an array of that dtype (of that shape, or of another that broadcasts
        # with it: u[:, None] * u), or a Python number: a constant, as the partials read it
        # (a float, or int 0, of the dtype; another int as it is)
        broadcast = False
        kind = type(a)
        if number == 1:
            pass
        elif kind is np.ndarray:
            if a is not array:
                if a.dtype is not dtype or a.size >= STAND_IN_SIZE:
                    return None  # a cast; a large constant
                broadcast = a.shape != shape
        elif kind is float or kind is int and not a:
            a = dtype.type(a)
        elif kind is not int:
            return None  # a NumPy number, a bool, a list...
        kind = type(b)
        if number == 2:
            pass
        elif kind is np.ndarray:
            if b is not array:
                if b.dtype is not dtype or b.size >= STAND_IN_SIZE:
                    return None
                broadcast = b.shape != shape
        elif kind is float or kind is int and not b:
            b = dtype.type(b)
        elif kind is not int:
            return None
        first, second = partials
        try:
            y = function(a, b)
            if type(y) is not np.ndarray or y.dtype is not dtype or y.shape != shape:
                if not broadcast or type(y) is not np.ndarray or y.dtype is not dtype or \
                        y.size >= STAND_IN_SIZE:
                    return None
                shape = y.shape  # (two shapes broadcast together: each argument's partials
                # summed to its shape by the pass, `BroadcastForm`)
            if form.payloads:
                # constant partials (add, subtract): the order-1 record, whose cotangent's
                # tangent is passed on as it is (zero second derivatives)
                dy = None if da is None or first is None else da if first == 1 else \
                    first * da
                if db is not None and second is not None:
                    term = db if second == 1 else second * db
                    dy = term if dy is None else dy + term
                if number:
                    # h - s: the number's cotangent summed over the array, by the pass
                    payload = (next_to_a_number(form), a, b, None)
                    if type(dy) is dtype.type:  # (a constant array: the number's tangent)
                        dy = _FULL(shape, dy, dtype)
                elif broadcast:
                    payload = (broadcast_form(form), a, b, None)
                else:
                    payload = (form, a, b, None)
            else:
                if form.pullback_dual is None:
                    return None
                # the partials of the arguments the tape differentiates, kept for the pullback
                if first is None or type(a) is int or da is None and parents[0] < 0:
                    first = None
                elif type(first) is not int:
                    first = first(y, a, b)
                if second is None or type(b) is int or db is None and parents[1] < 0:
                    second = None
                elif type(second) is not int:
                    second = second(y, a, b)
                dy = None if da is None or first is None else \
                    (da if first == 1 else first * da) if type(first) is int else first * da
                if db is not None and second is not None:
                    term = (db if second == 1 else second * db) if type(second) is int \
                        else second * db
                    dy = term if dy is None else dy + term
                payload = (NUMBER_DUAL, form, (a, b), y, (da, db), [first, second], self,
                           (parents[0] >= 0, parents[1] >= 0), function)
            if broadcast and type(dy) is np.ndarray and dy.shape != shape and \
                    dy.dtype is dtype:
                full = _EMPTY(shape, dtype)  # one argument's tangent, broadcast (u[:, None] + c)
                full[...] = dy
                dy = full
            if type(dy) is not np.ndarray or dy.dtype is not dtype or dy.shape != shape:
                return None  # no tangent (the general path knows zeros), or a cast
        except (FloatingPointError, RuntimeWarning):  # the user's error state: the general path
            return None
        traced = _new_object(Traced)
        traced.primal, traced.tape, traced.node = y, self, dy
        records = tape.records
        records.append((payload, function, ARRAY_METAS.get((shape, dtype)) or
                        record_meta(shape, dtype, np.ndarray)) + parents)
        recorded = _new_object(Traced)
        recorded.primal, recorded.tape, recorded.node = traced, tape, len(records) - 1
        return recorded

    def _record_array(self, tape: Level, function: Any, form: Any, x: Any,
                      parents: tuple) -> Any:
        """`record_arrays` of a function of one array (``np.tanh(h)``), unrolled."""
        if type(x) is not Traced or x.tape is not self:
            return None
        value, tangent = x.primal, x.node
        if type(value) is not np.ndarray or type(tangent) is not np.ndarray:
            return None  # a value of a third level; a zero, lazy or batched tangent
        shape, dtype = value.shape, value.dtype
        if (dtype is not _F64_DTYPE and dtype is not _F32_DTYPE) or \
                value.size >= STAND_IN_SIZE or tangent.dtype is not dtype or \
                tangent.shape != shape:
            return None
        partial = form.partials[0]
        if partial is None:
            return None
        try:
            y = function(value)
            if type(y) is not np.ndarray or y.dtype is not dtype or y.shape != shape:
                return None
            if form.payloads:  # (negative)
                dy = tangent if partial == 1 else partial * tangent
                payload = (form, value, None, None)
            else:
                if form.pullback_dual is None:
                    return None
                derivative = partial if type(partial) is int else partial(y, value)
                dy = (tangent if derivative == 1 else derivative * tangent) \
                    if type(derivative) is int else derivative * tangent
                payload = (NUMBER_DUAL, form, (value,), y, (tangent,), [derivative], self,
                           (parents[0] >= 0,), function)
            if type(dy) is not np.ndarray or dy.dtype is not dtype or dy.shape != shape:
                return None  # a cast
        except (FloatingPointError, RuntimeWarning):  # the user's error state: the general path
            return None
        traced = _new_object(Traced)
        traced.primal, traced.tape, traced.node = y, self, dy
        records = tape.records
        records.append((payload, function, ARRAY_METAS.get((shape, dtype)) or
                        record_meta(shape, dtype, np.ndarray), parents[0]))
        recorded = _new_object(Traced)
        recorded.primal, recorded.tape, recorded.node = traced, tape, len(records) - 1
        return recorded

    def structure_tangent(self, arg: Any, primal: Any, found: list) -> Any:
        """The tangent of a structure argument holding this trace's values ``found`` (``(path,
        value)`` pairs): the structure of their tangents."""
        return tangent_from_paths(arg, {path: v.node for path, v in found})


def _pushforward_from_pullback(trace: ForwardTrace, function: Any, primals: tuple,
                               tangents: tuple, kwargs: dict) -> tuple:
    y, pullback = reverse_for_forward(trace, function, primals, kwargs)
    return y, pushforward_from_pullbacks(y, pullback, (_NO_TANGENT,) + tangents)


def reverse_for_forward(trace: Level, function: Any, primals: tuple, kwargs: dict) -> tuple:
    """``(y, pullback)`` of ``function``'s rrule, for a forward trace that finds no frule: the
    pushforward is derived from it. Raises when there is no rrule, or its output is a
    structure."""
    reverse = rrule.with_constants(trace.config, function, *primals, **kwargs)
    if reverse is None:
        raise NoRuleError(no_rule_message(function, primals).replace(
            "no rule for", "no forward rule (frule), and no reverse rule to derive one from, "
            "for", 1))
    y, pullback = reverse
    if is_structure(y):
        raise NotImplementedError(
            f"{function_name(function)} has no frule, and its output is a structure, from which "
            f"forward mode cannot derive a pushforward. Register an frule for it.")
    return y, pullback


def _wrap(trace: ForwardTrace, y: Any, dy: Any) -> Any:
    if is_differentiable(y):
        return Traced(y, trace, tangent_in_space(y, dy))
    if isinstance(y, (tuple, list)):
        names = getattr(type(y), "_fields", None)
        elements = []
        for position, element in enumerate(y):
            if is_differentiable(element):
                key = names[position] if names else position
                part = tangent_part(dy, key, position)
                elements.append(Traced(element, trace, tangent_in_space(element, part)))
            elif isinstance(element, (dict, tuple, list)):  # a result object in a tuple
                # ((x, RootResults)) or a list of arrays (histogramdd's (H, [edges, ...]))
                key = names[position] if names else position
                elements.append(_wrap(trace, element, tangent_part(dy, key, position)))
            else:
                elements.append(element)
        return type(y)(*elements) if names else type(y)(elements)
    if isinstance(y, dict):  # a result object (OptimizeResult): float fields traced
        fields = copy.copy(y)  # not type(y)(y): RootResults.__init__ takes its fields
        for key, value in y.items():
            if is_differentiable(value):
                fields[key] = Traced(value, trace, tangent_in_space(value, tangent_part(dy, key, key)))
        return fields
    return y  # integer, boolean or other non-differentiable output


def tangent_part(dy: Any, key: Any, position: int) -> Any:
    dy = unthunk(dy)
    if isinstance(dy, AbstractZero):
        return dy
    if isinstance(dy, (tuple, list)):
        return dy[position]
    return tangent_at(dy, (key,))




_NUMBERS = DUAL_NUMBERS
# Tangents that are values as they are (no constant marker, zero or thunk): `_plain`'s fast path.
_VALUES = _NUMBERS | {np.ndarray, Traced}
_new_object = object.__new__
_FULL, _EMPTY = np.full, np.empty  # NumPy's own (a trace puts the engine's in NumPy's namespace)


def _plain(tangent: Any) -> Any:
    """A tangent as a rule's ``push`` takes it: ``None`` for a zero or a constant argument,
    ``_OTHER`` for one that is not a number or array (the frule is called then)."""
    kind = type(tangent)
    if kind is int or kind is ZeroTangent or kind is NoTangent:
        return None
    return tangent if kind in _OTHER_NUMBERS else _OTHER


# Plain values that a dual form takes and gives (`ForwardTrace.record_dual`).
_DUAL_VALUES = DUAL_VALUES
# The record's ``(shape, dtype, kind)`` of a number of this trace on a tape inside it: its
# primal's kind, so that a plain cotangent of that kind takes the backward pass's fast path.
_TRACED_NUMBER_META = {kind: ((), np.dtype(kind), kind) for kind in _NUMBERS}
# The record's ``(shape, dtype, kind)`` of a number `ForwardTrace.record_numbers` recorded by
# an elementwise form: no kind, so that every cotangent goes to its pullback (a plain one
# has a tangent too, from the arguments' tangents).
_DUAL_NUMBER_META = {kind: ((), np.dtype(kind), None) for kind in _NUMBERS}
_F64, _F32 = np.float64, np.float32  # the numbers a NumberForm records
_F64_DTYPE, _F32_DTYPE = np.dtype(_F64), np.dtype(_F32)  # and the arrays
_OTHER = object()  # a tangent that is not a plain value
_OTHER_NUMBERS = frozenset({np.float16, np.longdouble, np.clongdouble})  # not in `_VALUES`


def lift(x: Any, tangent: Any, trace: ForwardTrace, select) -> Any:
    """``x`` with every leaf chosen by ``select`` replaced by a value of ``trace`` carrying
    its part of ``tangent`` (a structure like ``x``; missing parts are zero)."""
    return replace_paths(x, {
        path: Traced(value, trace, tangent_in_space(value, tangent_at(tangent, path)))
        for path, value in leaves(x, select)})


def output_tangent(value: Any, trace: ForwardTrace) -> Any:
    """The tangent of an output leaf: its tangent if it is a value of ``trace``, else zero
    (a constant output), materialized in the primal's shape and dtype."""
    if type(value) is Traced and value.tape is trace:
        tangent, value = value.node, value.primal
        if not isinstance(tangent, AbstractZero):
            return tangent
    return zeros_like_primal(value)


