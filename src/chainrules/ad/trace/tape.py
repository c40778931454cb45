"""The tape: every differentiable operation of a trace, recorded in execution order.

Execution order is a topological order, so the backward pass is a reverse walk over a list: no
graph search, no recursion. A record is a flat tuple ``(pullback, function, meta, *parents)``
(flat, so that a scalar loop keeps one small tuple per operation until its backward pass):

- ``pullback`` maps the output's cotangent to ``(cotangent for function, *per positional
  argument)``, as `rrule` returns it (``None`` for an input leaf); or, for an operation on
  float64 numbers whose rule has a `chainrules.core.registry.NumberForm` (``x[i]``, ``a * b``,
  ``x ** 2``), a tuple of plain values (the form's payload) instead of a pullback object,
  from which the backward pass computes the cotangents inline;
- ``meta`` is ``(shape, dtype, number)``, one shared tuple per distinct value: the output's
  shape and dtype, so that cotangents flowing into it are checked, and ``number``, the
  output's type if it is a float or complex number (``None`` otherwise): a cotangent of exactly
  that type passes the check with one comparison;
- ``parents`` has one entry per positional argument: a node number, or ``-1`` for a constant.
  A structure holding traced values (a list passed to ``np.stack``, a closure passed to
  ``np.vectorize``) gets a node of its own, recorded just before, whose pullback
  (`StructureArgument`) hands each traced value its part of the structural cotangent.
"""

from __future__ import annotations

import copy
import gc
import itertools
import os
import sys
import threading
from typing import Any

import numpy as np


from ...core.checking import is_checking
from ...core.config import RuleConfig
from ...core.naming import function_name
from ...core.scalar_rule import STAND_IN_SIZE
from ...core.registry import (DUAL_FORMS, EXPANSIONS, FIRST_ORDER_ONLY, INDEX_READ, NUMBER_FORMS,
                              NumberForm, PRODUCT_FORMS, VIEW_FORMS, WRITES_IN_PLACE,
                              KeywordArgumentError, ViewForm, positional_call, rrule)
from ...core.tangents import NoTangent, Tangent
from ...core.structure import (is_structure, leaves, replace_paths, tangent_at,
                              tangent_from_paths)

from .errors import NoRuleError, RuleError, TracingError
from .traced import Traced, constant_result
from .values import (ARRAY_METAS, NO_META, PLAIN, SCALAR_META, dtype_of, holds_traced,
                     is_differentiable, is_float_leaf, is_plain_tuple, is_traced, record_meta,
                     shape_of)

__all__ = ["Level", "Tape", "no_garbage_collection", "record", "record_unary", "record_binary",
           "record_output", "no_rule_message", "StructureArgument", "OWNING_PULLBACKS",
           "ArrayAndNumberForm", "BroadcastForm"]

_levels = itertools.count(1)
_new_object = object.__new__
_RULES = rrule._rules


class Level:
    """A level of tracing: a reverse `Tape` or a forward trace. ``level`` orders nested
    levels (the innermost handles an operation; values of outer levels are its constants)."""

    __slots__ = ("level", "config", "deferred", "finished")
    forward = False
    # A forward trace whose values a reverse tape inside it records by the rules' dual forms
    # (`record_dual`): forward over reverse, one rule call per operation.
    runs_dual_forms = False
    # A forward trace whose values carry one tangent each (not a batch of them): cotangents
    # that are its values are summed as pairs of buffers (`chainrules.ad.trace.pairs`).
    one_direction = False

    def __init__(self, config: RuleConfig):
        self.level = next(_levels)
        self.config = config
        self.deferred: list = []
        self.finished = False  # the transform has returned: its values are plain values

    def defer_error(self, error: Exception) -> None:
        """Raise ``error`` when the traced function returns (for errors that would be
        replaced by another one if raised where they happen)."""
        self.deferred.append(error)

    def raise_deferred(self) -> None:
        """Raise the first deferred error, if any."""
        if self.deferred:
            raise self.deferred[0]


_OWN_DIRECTORIES = tuple(os.path.dirname(module.__file__) + os.sep
                         for module in (np, sys.modules["chainrules"]))


class RecordsWithSources(list):
    """The records of a tape in the checking mode (`chainrules.checking`): each one's source,
    the line of the user's code that recorded it, beside it in ``sources``, for the reports."""

    __slots__ = ("sources",)

    def __init__(self) -> None:
        super().__init__()
        self.sources: list = []

    def append(self, record: Any) -> None:
        frame = sys._getframe(1)
        while frame is not None and (frame.f_code.co_filename.startswith(_OWN_DIRECTORIES)
                                     or "site-packages" + os.sep + "scipy" in
                                     frame.f_code.co_filename):
            frame = frame.f_back
        self.sources.append(None if frame is None else
                            (frame.f_code.co_filename, frame.f_lineno))
        super().append(record)


class Tape(Level):
    """The records of one trace (one ``grad``/``vjp`` call)."""

    __slots__ = ("records", "active", "calls_back")

    def __init__(self, config: RuleConfig):
        super().__init__(config)
        self.records: list = RecordsWithSources() if is_checking() else []
        self.active = False
        # whether a recorded rule took the config, so its pullback may call back into the
        # engine (rrule_via_ad: an ODE's adjoint differentiates the right-hand side per step)
        self.calls_back = False

    def leaf(self, primal: Any) -> "Traced":
        """A new input of this trace."""
        node = len(self.records)
        self.records.append((None, None, record_meta(shape_of(primal), dtype_of(primal), type(primal))))
        return Traced(primal, self, node)

    def __enter__(self) -> "Tape":
        self.active = True
        return self

    def __exit__(self, *exc) -> None:
        self.active = False
        self.finished = True


class no_garbage_collection:
    """Pause Python's cyclic garbage collector while a trace or a backward pass runs.

    Both create millions of small objects that are freed by reference counting; the cyclic
    collector's full passes over them would make long traces superlinear in time.

    Pauses are counted process-wide, under a lock, so they nest and overlap in any order, in
    one thread or many: the first pause to begin records whether the collector was enabled and
    disables it; the last one to end restores that state. So concurrent ``grad`` calls leave
    the collector as the user had it, and it stays paused while any of them runs. A user's
    ``gc.enable()`` during a pause is kept (the collector then runs again, and the last pause
    leaves it enabled); a ``gc.disable()`` during a pause cannot be told apart from the pause
    itself, so the state recorded when the first pause began is restored at the end.

    >>> import gc
    >>> before = gc.isenabled()
    >>> with no_garbage_collection():
    ...     with no_garbage_collection():
    ...         paused = not gc.isenabled()
    >>> paused, gc.isenabled() == before
    (True, True)
    """

    __slots__ = ()
    _lock = threading.Lock()
    _active = 0  # pauses begun and not yet ended, in all threads
    _was_enabled = False  # the collector's state when the first of them began

    def __enter__(self):
        cls = no_garbage_collection
        with cls._lock:
            if cls._active == 0:
                cls._was_enabled = gc.isenabled()
                gc.disable()
            cls._active += 1

    def __exit__(self, *exc):
        cls = no_garbage_collection
        with cls._lock:
            cls._active -= 1
            if cls._active == 0 and cls._was_enabled:
                gc.enable()


def _innermost_tape(args: tuple) -> tuple[Tape | None, bool]:
    """The tape of highest level among the traced values in ``args``; and whether any
    argument is a structure that must be searched for traced values."""
    tape = None
    search = False
    for arg in args:
        kind = type(arg)
        if kind is Traced:
            if tape is None or arg.tape.level > tape.level:
                tape = arg.tape
        elif kind is list or kind is tuple:
            flat = True  # (a flat list of arrays and numbers, np.stack's: read without a walk)
            for part in arg:
                if type(part) is Traced:
                    search = True
                    if tape is None or part.tape.level > tape.level:
                        tape = part.tape
                elif type(part) not in PLAIN:
                    flat = False
                    break
            if not flat:
                search = True
                for _, traced in leaves(arg, is_traced):
                    if tape is None or traced.tape.level > tape.level:
                        tape = traced.tape
        elif kind not in PLAIN and is_structure(arg):
            search = True
            for _, traced in leaves(arg, is_traced):
                if tape is None or traced.tape.level > tape.level:
                    tape = traced.tape
    return tape, search


def record(function: Any, args: tuple, kwargs: dict) -> Any:
    """Call ``function(*args, **kwargs)`` on traced values: run its rule and record it."""
    if kwargs and any(holds_traced(value) for value in kwargs.values()):
        function, args, kwargs = _keywords_to_positions(function, args, kwargs)
    # Traced values of one trace and plain values, no structures to search.
    tape = None
    primals = []
    parents = []
    for arg in args:
        kind = type(arg)
        if kind is Traced:
            if tape is None:
                tape = arg.tape
            elif arg.tape is not tape:
                return _record_searching(function, args, kwargs)  # nested traces
            primals.append(arg.primal)
            parents.append(arg.node)
        elif kind in PLAIN or (kind is tuple and is_plain_tuple(arg)):
            primals.append(arg)
            parents.append(-1)
        else:
            return _record_searching(function, args, kwargs)
    if tape is None:
        return function(*args, **kwargs)
    return _apply(tape, function, tuple(primals), tuple(parents), kwargs)


def record_unary(function: Any, x: "Traced") -> Any:
    """``record(function, (x,), {})`` for a traced ``x``: the path of ``-x``, ``x.T``..."""
    tape, primals, parents = x.tape, (x.primal,), (x.node,)
    if not tape.active and tape.forward and not tape.finished:
        return tape.apply(function, primals, parents, _NO_KEYWORDS)
    entry = _RULES.get(function)
    if entry is None or entry[1] is not False or not tape.active:
        return _apply(tape, function, primals, parents, _NO_KEYWORDS)  # as in record_binary
    if x.node < 0:  # a constant (an array the function created: ad/dispatch/writes.py)
        return constant_result(tape, function(x.primal))
    kind = type(x.primal)
    if kind is _F64 or kind is _F32:
        form = _NUMBER_FORMS.get(function)
        if form is not None and form.rule is entry[0] and form.partials is not INDEX_READ:
            y = form.compute(x.primal)
            if type(y) is kind:
                records = tape.records
                records.append((form.payloads.get(kind) or
                                (form, x.primal, None, y if form.keeps_output else None),
                                function, _FORM_NUMBERS[kind], x.node))
                traced = _new_object(Traced)
                traced.primal, traced.tape, traced.node = y, tape, len(records) - 1
                return traced
    elif kind is _NDARRAY:  # np.tanh(h) on a small array
        form = _NUMBER_FORMS.get(function)
        if form is not None and form.rule is entry[0]:
            recorded = _record_array_form(tape, function, form, x.primal, None, x.node, -1)
            if recorded is not None:
                return recorded
        else:  # x.T, np.ravel(x)
            form = _VIEW_FORMS.get(function)
            if form is not None and form.rule is entry[0]:
                recorded = _record_view(tape, function, form, primals, parents)
                if recorded is not None:
                    return recorded
    if type(x.primal) is Traced and x.primal.tape.runs_dual_forms:
        recorded = _record_dual(tape, function, entry[0], primals, parents, _NO_KEYWORDS)
        if recorded is not None:
            return recorded
    return record_output(tape, function, primals, parents, entry[0](x.primal))


def record_binary(function: Any, a: Any, b: Any) -> Any:
    """``record(function, (a, b), {})`` where ``a`` or ``b`` is traced: the hot path of
    Python's binary operators and of indexing. It calls the rule itself, and records a
    number output itself (as `record_output` does), since scalar loops are made of this."""
    view = False
    if type(a) is Traced:
        tape, first, first_node = a.tape, a.primal, a.node
        kind = type(b)
        # element: b is an integer or a tuple of integers (x[i], u[k, i]: an index read); view:
        # b is a slice and an integer (X[:, j], a view of a column, read with no call)
        if kind is int:
            second, second_node, element = b, -1, True
        elif kind is Traced:
            if b.tape is not tape:
                return record(function, (a, b), {})  # nested traces
            second, second_node = b.primal, b.node
            element = type(second) is int
        elif kind is tuple:
            if len(b) == 2 and type(b[0]) is int and type(b[1]) is int:  # u[k, i]: no call
                element = True
            elif len(b) == 2 and type(b[0]) is slice and type(b[1]) is int:  # X[:, j]
                element, view = False, True
            elif is_plain_tuple(b):
                element = len(b) > 0 and type(b[0]) is int and _integers(b)
            else:
                return record(function, (a, b), {})
            second, second_node = b, -1
        elif kind in PLAIN:
            second, second_node, element = b, -1, False
        elif kind is list and _integers(b):  # x[[0, 3, 5]]: as NumPy reads it, an array
            second, second_node, element = _FROMITER(b, _INTP, len(b)), -1, False
        else:
            return record(function, (a, b), {})
        kind = type(first)  # a traced argument's type (unless a constant: then no form)
    elif type(a) in PLAIN and type(b) is Traced:
        tape, first, second, first_node, second_node = b.tape, a, b.primal, -1, b.node
        kind = type(second)
        element = False
    else:
        return record(function, (a, b), {})
    if not tape.active:
        if tape.forward and not tape.finished:
            return tape.apply(function, (first, second), (first_node, second_node),
                              _NO_KEYWORDS)
        return _apply(tape, function, (first, second), (first_node, second_node),
                      _NO_KEYWORDS)  # an ended trace
    entry = _RULES.get(function)
    if entry is None or entry[1] is not False:
        # No rule, a rule taking the config, a non-differentiable function.
        return _apply(tape, function, (first, second), (first_node, second_node),
                      _NO_KEYWORDS)
    if first_node < 0 and second_node < 0:  # constants (arrays the function created)
        return constant_result(tape, function(first, second))
    # Float64 or float32 numbers (x[i] ** 2 in a scalar loop): a record of plain values, whose
    # cotangents the backward pass computes inline (`chainrules.core.registry.NumberForm`)
    if kind is _NDARRAY:
        form = _NUMBER_FORMS.get(function)
        if form is None or form.rule is not entry[0]:
            form = _PRODUCT_FORMS.get(function)  # W @ h
            if form is not None and form.rule is entry[0] and type(first) is _NDARRAY and \
                    type(second) is _NDARRAY and form.applies(first, second):
                return _record_product(tape, function, form, (first, second),
                                       (first_node, second_node))
        elif form.partials is INDEX_READ:
            if (element or view or _basic(second) or type(second) is _NDARRAY and
                    second.dtype.kind in "iu" and second.ndim) and first.dtype in _FORM_DTYPES:
                # x[i], u[k, i] (a number); X[:, j], x[2:5] (a view); x[idx] (integers, which
                # may repeat: the backward pass adds them as a SparseCotangent does): read at
                # the index
                y = first[second]
                meta = _FORM_NUMBERS.get(type(y))
                if meta is None and type(y) is _NDARRAY:
                    meta = ARRAY_METAS.get((y.shape, y.dtype)) or \
                        record_meta(y.shape, y.dtype, _NDARRAY)
                if meta is not None:
                    records = tape.records
                    records.append(((form, second, records[first_node][2][0], first.dtype),
                                    function, meta, first_node, -1))
                    traced = _new_object(Traced)
                    traced.primal, traced.tape, traced.node = y, tape, len(records) - 1
                    return traced
        else:  # a small array's elementwise operation (an RNN's h * 0.9 + x, h ** 2)
            recorded = _record_array_form(tape, function, form, first, second, first_node,
                                          second_node)
            if recorded is not None:
                return recorded
    elif kind is _F64 or kind is _F32:
        form = _NUMBER_FORMS.get(function)
        if form is not None and form.rule is entry[0] and form.partials is not INDEX_READ and \
                (type(first) is kind or first_node < 0 and type(first) in _PYTHON_REALS) and \
                (type(second) is kind or second_node < 0 and type(second) in _PYTHON_REALS):
            y = form.compute(first, second)
            if type(y) is kind:
                records = tape.records
                # the arguments as the partials read them (`NumberForm.argument`, inline): a
                # Python float, or int 0, as the output's type; another int as it is
                records.append((form.payloads.get(kind) or (
                    form, first if type(first) is kind or type(first) is int and first
                    else kind(first), second if type(second) is kind or
                    type(second) is int and second else kind(second),
                    y if form.keeps_output else None), function, _FORM_NUMBERS[kind],
                    first_node, second_node))
                traced = _new_object(Traced)
                traced.primal, traced.tape, traced.node = y, tape, len(records) - 1
                return traced
        elif type(second) is _NDARRAY and form is not None and form.rule is entry[0]:
            # a traced number times a small array (s * h): the array's form, the number's
            # cotangent summed
            recorded = _record_array_form(tape, function, form, first, second, first_node,
                                          second_node)
            if recorded is not None:
                return recorded
    if type(first) is Traced or type(second) is Traced:  # values of an outer level
        outer_value = first if type(first) is Traced else second
        outer = outer_value.tape
        found = DUAL_FORMS.get(function) if outer.runs_dual_forms else None
        if found is not None and found[0] is entry[0] and not outer.finished:
            # numbers of a forward trace (a scalar loop under hvp): the NumberForm, as above
            form = _NUMBER_FORMS.get(function)
            if form is not None and form.rule is entry[0] and (
                    type(outer_value.primal) in _FORM_NUMBERS if form.partials is not INDEX_READ
                    else element or view or _basic(second)):
                recorded = outer.record_numbers(tape, function, form, (first, second),
                                                (first_node, second_node))
                if recorded is not None:
                    return recorded
                other = second if outer_value is first else first
                if form.partials is not INDEX_READ and (type(other) is _NDARRAY or type(
                        other) is Traced and type(other.primal) is _NDARRAY):
                    # a traced number and a small array (s + h): the form on the array, the
                    # number's pair summed
                    recorded = outer.record_arrays(tape, function, form, (first, second),
                                                   (first_node, second_node))
                    if recorded is not None:
                        return recorded
            elif form is not None and type(outer_value.primal) is _NDARRAY and \
                    form.rule is entry[0] and form.partials is not INDEX_READ:
                # h + x, h * 0.9 on small arrays: the form on arrays (as above)
                recorded = outer.record_arrays(tape, function, form, (first, second),
                                               (first_node, second_node))
                if recorded is not None:
                    return recorded
            form = _PRODUCT_FORMS.get(function)  # W @ h under hvp: its ProductForm on pairs
            if form is not None and form.rule is entry[0]:
                recorded = outer.record_product(tape, function, form, (first, second),
                                                (first_node, second_node))
                if recorded is not None:
                    return recorded
            recorded = outer.record_dual(tape, function, found[1], (first, second),
                                         (first_node, second_node), _NO_KEYWORDS)
            if recorded is not None:
                return recorded
    result = entry[0](first, second)
    if result is not None:
        if type(result) is not tuple:
            raise RuleError(_bad_rule_result(function, result))
        try:
            y, pullback = result
        except ValueError:  # (a try costs nothing: the hot path)
            raise RuleError(_bad_rule_result(function, result)) from None
        if pullback is None:
            raise RuleError(_bad_rule_result(function, result))
        meta = SCALAR_META.get(type(y))
        if meta is not None:
            if (second_node < 0 and type(second) is float) or \
                    (first_node < 0 and type(first) is float):
                # a constant Python float (0.5 * x[i]): its cotangent is never asked for
                drop = getattr(pullback, "drop_unneeded", None)
                if drop is not None:
                    drop((first_node >= 0, second_node >= 0))
            records = tape.records
            records.append((pullback, function, meta, first_node, second_node))
            traced = _new_object(Traced)
            traced.primal, traced.tape, traced.node = y, tape, len(records) - 1
            return traced
    return record_output(tape, function, (first, second), (first_node, second_node), result)


_NUMBER_FORMS = NUMBER_FORMS
_PRODUCT_FORMS = PRODUCT_FORMS
_FROMITER, _INTP = np.fromiter, np.intp  # (NumPy's own: engines do not stand in for fromiter)
_VIEW_FORMS = VIEW_FORMS
_EXPANSIONS = EXPANSIONS
_NDARRAY = np.ndarray
# The number types recorded by NumberForms, each with its records' meta; their array dtypes
_F64, _F32 = np.float64, np.float32
_FORM_NUMBERS = {kind: SCALAR_META[kind] for kind in (_F64, _F32)}
_FORM_DTYPES = frozenset(np.dtype(kind) for kind in _FORM_NUMBERS)
_F64_DTYPE, _F32_DTYPE = np.dtype(_F64), np.dtype(_F32)
_PYTHON_REALS = frozenset({int, float})  # the constants a NumberForm takes (not bool)
_NO_KEYWORDS: dict = {}  # shared, never mutated: rules receive keyword arguments as copies


def _record_array_form(tape: "Tape", function: Any, form: NumberForm, a: Any, b: Any,
                       a_node: int, b_node: int) -> Any:
    """Record an elementwise ``function(a, b)`` (``b`` None: ``function(a)``) on float64 or
    float32 arrays of one shape and dtype, or such an array and a traced number of its type
    (``h / s``), Python numbers standing for constants, by its
    `NumberForm`, as numbers are: a record of plain values whose cotangents the backward pass
    computes inline (`chainrules.ad.transforms.reverse`), without a pullback object made and
    called per operation. Two arrays of different shapes broadcast together (``u[:, None] *
    u``) are recorded by the `BroadcastForm`, whose backward pass sums each argument's
    partials to its shape. Arrays of `STAND_IN_SIZE` elements or more, where the rule keeps
    less than its arguments (`_ScalarPullback.drop_unneeded`) and per-operation costs matter
    less, take the rule as before; so does anything cast. ``None`` where it does not
    apply."""
    if form.partials is INDEX_READ:
        return None
    array = a if type(a) is _NDARRAY else b
    dtype = array.dtype
    if (dtype is not _F64_DTYPE and dtype is not _F32_DTYPE) or array.size >= STAND_IN_SIZE:
        return None
    shape = array.shape
    if b is None:
        if len(form.partials) != 1:
            return None
        y = function(a)
    else:
        if len(form.partials) != 2:
            return None
        other, other_node = (b, b_node) if array is a else (a, a_node)  # (array: a or b)
        kind = type(other)
        if kind is _NDARRAY:
            if other.dtype is not dtype:
                return None  # cast
            if other.shape != shape:
                if other.size >= STAND_IN_SIZE:
                    return None
                form = broadcast_form(form)  # each argument's partials summed to its shape
                shape = None  # the output's, found below
        elif other_node >= 0:
            if kind is not dtype.type:
                return None  # a traced number of another type
            form = next_to_a_number(form)  # its partials to be summed
        elif kind is not float and kind is not int:
            return None  # a NumPy number as a constant, a bool...
        y = function(a, b)
        if kind is not _NDARRAY and (kind is float or not other):
            other = dtype.type(other)  # a Python constant as the partials read it
            if array is a:
                b = other
            else:
                a = other
    if type(y) is not _NDARRAY or y.dtype is not dtype or y.shape != shape:
        if shape is not None or type(y) is not _NDARRAY or y.dtype is not dtype or \
                y.size >= STAND_IN_SIZE:
            return None
        shape = y.shape  # (broadcast)
    records = tape.records
    meta = records[a_node if a_node >= 0 else b_node][2]  # the traced argument's: y's too
    if meta[1] is not dtype or meta[2] is not None or meta[0] != shape:
        meta = record_meta(shape, dtype, _NDARRAY)
    payload = (form, a, b, y if form.keeps_output else None)
    records.append((payload, function, meta, a_node) if b is None else
                   (payload, function, meta, a_node, b_node))
    traced = _new_object(Traced)
    traced.primal, traced.tape, traced.node = y, tape, len(records) - 1
    return traced


class ArrayAndNumberForm:
    """The first entry of a `_record_array_form` record of an array and a traced number (``h /
    s``, ``s * h``): the `NumberForm` ``form``, its ``partials`` and ``keeps_output``, for a
    backward pass that sums the number's partials over the array
    (`chainrules.ad.transforms.reverse`); any other cotangent gets the rule's own pullback,
    which does the same, from ``pullback``.

    >>> import numpy as np
    >>> from chainrules import unthunk
    >>> from chainrules.core.registry import NUMBER_FORMS
    >>> form = ArrayAndNumberForm(NUMBER_FORMS[np.multiply])
    >>> pullback = form.pullback((form, np.array([1.0, 2.0]), np.float64(3.0), None))
    >>> unthunk(pullback(np.ones(2))[2])  # h * s: s's cotangent, sum(h * dy)
    np.float64(3.0)
    """

    __slots__ = ("form", "partials", "keeps_output")

    def __init__(self, form: NumberForm):
        self.form, self.partials, self.keeps_output = form, form.partials, form.keeps_output

    def pullback(self, payload: tuple) -> Any:
        return self.form.rule(payload[1], payload[2])[1]


class BroadcastForm(ArrayAndNumberForm):
    """The first entry of a `_record_array_form` record of two small arrays of different
    shapes broadcast together (``u[:, None] * u``, ``x[:, None] - x``): as `ArrayAndNumberForm`,
    for a backward pass that sums each argument's partials to its shape
    (`chainrules.core.broadcast.unbroadcast`, the rule's own reduction).

    >>> import numpy as np
    >>> from chainrules import unthunk
    >>> from chainrules.core.registry import NUMBER_FORMS
    >>> form = BroadcastForm(NUMBER_FORMS[np.multiply])
    >>> u = np.array([1.0, 2.0])
    >>> pullback = form.pullback((form, u[:, None], u, None))
    >>> unthunk(pullback(np.ones((2, 2)))[1])  # u[:, None]'s cotangent, sum(u) per row
    array([[3.],
           [3.]])
    """

    __slots__ = ()


_NEXT_TO_A_NUMBER: dict = {}  # NumberForm -> its ArrayAndNumberForm
_BROADCAST: dict = {}  # NumberForm -> its BroadcastForm


def next_to_a_number(form: NumberForm) -> ArrayAndNumberForm:
    """The `ArrayAndNumberForm` of ``form`` (one per form): a record's first entry for an
    array and a traced number."""
    found = _NEXT_TO_A_NUMBER.get(form)
    if found is None:
        found = _NEXT_TO_A_NUMBER[form] = ArrayAndNumberForm(form)
    return found


def broadcast_form(form: NumberForm) -> BroadcastForm:
    """The `BroadcastForm` of ``form`` (one per form): a record's first entry for two
    small arrays of different shapes broadcast together."""
    found = _BROADCAST.get(form)
    if found is None:
        found = _BROADCAST[form] = BroadcastForm(form)
    return found


def _record_product(tape: "Tape", function: Any, form: Any, primals: tuple,
                    parents: tuple) -> "Traced":
    """Record ``function(a, b)`` by its `ProductForm` (``form.applies(a, b)``): the two
    arguments, whose cotangents the backward pass computes by the form's formulas."""
    a, b = primals
    y = function(a, b)
    records = tape.records
    records.append(((form, a, b), function, record_meta(y.shape, y.dtype, _NDARRAY)) + parents)
    traced = _new_object(Traced)
    traced.primal, traced.tape, traced.node = y, tape, len(records) - 1
    return traced


def _record_total(tape: "Tape", function: Any, form: NumberForm, x: np.ndarray,
                  node: int) -> Any:
    """Record ``np.sum(x)`` of a float64 or float32 array of fewer than `STAND_IN_SIZE`
    elements by its `NumberForm`, as an index read of every element (``x[...]``): the backward
    pass adds ``dy`` into x's buffer at every position, as it adds ``x[i]``'s at ``i``.
    ``None`` where it does not apply (other dtypes, larger arrays: the rule, as before)."""
    if x.dtype not in _FORM_DTYPES or x.size >= STAND_IN_SIZE:
        return None
    y = form.compute(x)
    if type(y) not in _FORM_NUMBERS:
        return None
    records = tape.records
    records.append(((form, Ellipsis, records[node][2][0], x.dtype), function,
                    _FORM_NUMBERS[type(y)], node))
    traced = _new_object(Traced)
    traced.primal, traced.tape, traced.node = y, tape, len(records) - 1
    return traced


def _record_view(tape: "Tape", function: Any, form: ViewForm, primals: tuple,
                 parents: tuple) -> Any:
    """Record ``function(x, *options)`` (``x.T``, ``x.reshape(4, 4)``) of a float64 or
    float32 array of fewer than `STAND_IN_SIZE` elements, constant options, by its
    `ViewForm`: the argument's shape, from which the backward pass computes its cotangent as
    a view of ``dy``. ``None`` where it does not apply (larger arrays keep a sparse
    cotangent sparse through the rule's pullback; other dtypes)."""
    x = primals[0]
    if x.dtype not in _FORM_DTYPES or x.size >= STAND_IN_SIZE or parents[0] < 0:
        return None
    for parent in parents[1:]:
        if parent >= 0:
            return None  # a traced option
    if not form.applies(*primals):
        return None
    y = function(*primals)
    if type(y) is not _NDARRAY or y.dtype is not x.dtype:
        return None
    records = tape.records
    records.append(((form, x.shape, x.dtype, primals[1:]), function,
                    ARRAY_METAS.get((y.shape, y.dtype)) or
                    record_meta(y.shape, y.dtype, _NDARRAY)) + parents)
    traced = _new_object(Traced)
    traced.primal, traced.tape, traced.node = y, tape, len(records) - 1
    return traced


def _basic(index: Any) -> bool:
    """Whether ``index`` is a slice, ``None`` or ``...``, or a tuple of those and Python
    integers (``X[:, j]``, ``u[:, None]``): a read of a view, each position once."""
    if type(index) is slice or index is None or index is Ellipsis:
        return True
    if type(index) is not tuple:
        return False
    for part in index:
        if type(part) is not int and type(part) is not slice and part is not None and \
                part is not Ellipsis:
            return False
    return True


def _integers(index: tuple | list) -> bool:
    """Whether the tuple or list ``index`` holds Python integers only (``u[k, i]``)."""
    for part in index:
        if type(part) is not int:
            return False
    return True


def _record_searching(function: Any, args: tuple, kwargs: dict) -> Any:
    """`record` when some arguments are structures (lists, closures...) that may hold traced
    values, or when traced values of nested traces meet."""
    if issubclass(type(function), np.ufunc):
        args = _ufunc_inputs(args)
    tape, search = _innermost_tape(args)
    if tape is None:
        return function(*args, **kwargs)
    if tape.forward and not tape.finished:
        return tape.apply_searching(function, args, kwargs)
    primals = []
    parents = []
    for position, arg in enumerate(args):
        if type(arg) is Traced and arg.tape is tape:
            primals.append(arg.primal)
            parents.append(arg.node)
        elif search and (type(arg) is list or type(arg) is tuple) and all(
                type(part) is Traced or type(part) in PLAIN for part in arg):
            # a flat list (np.stack's, np.concatenate's): its traced values by position
            found = [((key,), part) for key, part in enumerate(arg)
                     if type(part) is Traced and part.tape is tape]
            if found:
                primals.append(type(arg)([part.primal if type(part) is Traced and
                                          part.tape is tape else part for part in arg]))
                parents.append(_record_structure(tape, function, position, found))
            else:
                primals.append(arg)
                parents.append(-1)
        elif search and is_structure(arg):
            found = list(leaves(arg, lambda v: type(v) is Traced and v.tape is tape))
            if found:
                primals.append(replace_paths(arg, {path: traced.primal
                                                   for path, traced in found}))
                parents.append(_record_structure(tape, function, position, found))
            else:
                primals.append(arg)
                parents.append(-1)
        else:
            primals.append(arg)
            parents.append(-1)
    return _apply(tape, function, tuple(primals), tuple(parents), kwargs)


def _ufunc_inputs(args: tuple) -> tuple:
    """A ufunc's inputs with each list or tuple holding traced values made a traced array by
    ``np.array`` (as NumPy reads it: an array-like), so that it is differentiated as an array
    at every order."""
    return tuple(np.array(arg) if type(arg) in (list, tuple) and holds_traced(arg) else arg
                 for arg in args)


def _record_structure(tape: Tape, function: Any, position: int, found: list) -> int:
    """Record a node for a structure argument holding the traced values ``found`` (``(path,
    traced)`` pairs), and return its number: the argument's parent."""
    records = tape.records
    node = len(records)
    pullback = StructureArgument(function, position, tuple(path for path, _ in found))
    records.append((pullback, pullback, NO_META) + tuple(traced.node for _, traced in found))
    return node


def _apply(tape: Tape, function: Any, primals: tuple, parents: tuple, kwargs: dict) -> Any:
    """Run ``function``'s rule on the primal values and record it on ``tape``."""
    if not tape.active:
        if tape.forward and not tape.finished:  # a forward trace records nothing
            return tape.apply(function, primals, parents, kwargs)
        raise TracingError(
            f"{function_name(function)} was called on a traced value from a grad/vjp call that has "
            f"already returned. Traced values must not escape the function being "
            f"differentiated (store primal values, or return them as has_aux output).")
    if not parents or max(parents) < 0:  # (max with a default= keyword: 2.5x the time)
        # Only constants (node -1: arrays the function created and wrote no traced value
        # into, ad/dispatch/writes.py): computed as plain NumPy, as forward mode does; an
        # array result is a constant too.
        return constant_result(tape, function(*primals, **kwargs))
    entry = _RULES.get(function) or rrule.lookup(function)  # a miss: rules loaded lazily
    if entry is None:
        if function in WRITES_IN_PLACE:
            raise TracingError(
                f"{function_name(function)} writes into its argument in place, which cannot be "
                f"differentiated (traced arrays are immutable, and a plain array that receives "
                f"traced values cuts them out of the gradient); "
                f"{WRITES_IN_PLACE[function]}.")
        raise NoRuleError(no_rule_message(function, primals))
    if function in FIRST_ORDER_ONLY and holds_traced(primals):
        # Its pullback will run on values of an outer level, and cannot be differentiated.
        raise NotImplementedError(
            f"{function_name(function)} is differentiable once only (its rule is declared first-order "
            f"only: {FIRST_ORDER_ONLY[function]}); it was called inside a second derivative "
            f"(grad of grad, hessian, hvp or jvp of grad).")
    rule, needs_config = entry
    if needs_config:
        tape.calls_back = True
        result = rule(tape.config, *primals, **kwargs)
    elif needs_config is None:  # declared non-differentiable: computed, not recorded
        return function(*primals, **kwargs)
    else:
        if len(primals) == 1 and type(primals[0]) is _NDARRAY and not kwargs:
            form = _NUMBER_FORMS.get(function)  # np.sum(x): an index read of x[...]
            if form is not None and form.rule is rule and form.partials is INDEX_READ:
                recorded = _record_total(tape, function, form, primals[0], parents[0])
                if recorded is not None:
                    return recorded
        elif len(primals) == 2 and type(primals[0]) is _NDARRAY and \
                type(primals[1]) is _NDARRAY and not kwargs:
            form = _PRODUCT_FORMS.get(function)  # np.dot(W, h): as W @ h in record_binary
            if form is not None and form.rule is rule and form.applies(*primals):
                return _record_product(tape, function, form, primals, parents)
        if primals and type(primals[0]) is _NDARRAY and not kwargs:
            form = _VIEW_FORMS.get(function)  # x.reshape(4, 4), np.transpose(x)
            if form is not None and form.rule is rule:
                recorded = _record_view(tape, function, form, primals, parents)
                if recorded is not None:
                    return recorded
        if not kwargs:
            form = _EXPANSIONS.get(function)  # np.mean(x): np.sum(x) / x.size
            if form is not None and form.rule is rule:
                recorded = _record_expansion(tape, form, primals, parents)
                if recorded is not None:
                    return recorded
        for primal in primals:
            if type(primal) is Traced and primal.tape.runs_dual_forms:
                recorded = _record_dual(tape, function, rule, primals, parents, kwargs)
                if recorded is not None:
                    return recorded
                break
        result = rule(*primals, **kwargs)
    return record_output(tape, function, primals, parents, result)


def _record_expansion(tape: Tape, form: Any, primals: tuple, parents: tuple) -> Any:
    """Record a call by its `Expansion` (``np.mean(x)`` as ``np.sum(x) / x.size``): the
    expansion called on the arguments made values of ``tape`` again (constants as they are),
    its calls recorded by their own forms, at any order. ``None`` where it does not apply."""
    values = []
    outer = False  # whether an argument is a value of an outer level (hvp, grad of grad)
    for argument in primals:
        while type(argument) is Traced:  # (a value of an outer level: its plain value)
            argument = argument.primal
            outer = True
        values.append(argument)
    if not outer and not form.first_order:
        return None  # (the rule records it more cheaply)
    values = tuple(values)
    if not form.applies(*values):
        return None
    arguments = []
    for argument, parent in zip(primals, parents):
        if parent >= 0:
            traced = _new_object(Traced)
            traced.primal, traced.tape, traced.node = argument, tape, parent
            argument = traced
        arguments.append(argument)
    return form.expand(values, *arguments)


def _record_dual(tape: Tape, function: Any, rule: Any, primals: tuple, parents: tuple,
                 kwargs: dict) -> Any:
    """Forward over reverse: record ``function`` on ``tape`` when its arguments are values of
    a forward trace outside it (``hvp``, ``jvp`` of ``grad``), by its rule's dual form, which
    computes the output, its tangent and the pullback once on plain values; ``None`` when
    there is no dual form or the arguments are not all plain values and values of that one
    forward trace (then the rule runs on the traced values, as at any other order)."""
    found = DUAL_FORMS.get(function)
    if found is None or found[0] is not rule:
        return None
    level = None
    for primal in primals:
        kind = type(primal)
        if kind is Traced:
            if level is None:
                level = primal.tape
            elif primal.tape is not level:
                return None
        elif kind not in PLAIN and not (kind is tuple and is_plain_tuple(primal)):
            return None
    if level.finished:
        return None
    if len(primals) == 1 and not kwargs:
        # np.sin(x[i]), np.tanh(h): by the NumberForm, on numbers or small arrays (as in
        # record_binary)
        form = _NUMBER_FORMS.get(function)
        if form is not None and form.rule is rule:
            kind = type(primals[0].primal)
            if form.partials is INDEX_READ:  # np.sum(x): a read of x[...], as at order 1
                recorded = level.record_total(tape, function, form, primals[0], parents[0]) \
                    if kind is _NDARRAY else None
            else:
                recorded = level.record_numbers(tape, function, form, primals, parents) \
                    if kind in _FORM_NUMBERS else level.record_arrays(
                        tape, function, form, primals, parents) if kind is _NDARRAY else None
            if recorded is not None:
                return recorded
    elif len(primals) == 2 and not kwargs:  # np.dot(W, h): as W @ h in record_binary
        form = _PRODUCT_FORMS.get(function)
        if form is not None and form.rule is rule:
            recorded = level.record_product(tape, function, form, primals, parents)
            if recorded is not None:
                return recorded
    if not kwargs:
        form = _VIEW_FORMS.get(function)  # x.T, x.reshape(4, 4): as at order 1
        if form is not None and form.rule is rule:
            recorded = level.record_view(tape, function, form, primals, parents)
            if recorded is not None:
                return recorded
    return level.record_dual(tape, function, found[1], primals, parents, kwargs)


def record_output(tape: Tape, function: Any, primals: tuple, parents: tuple,
                   result: Any) -> Any:
    """Record the result ``(y, pullback)`` of ``function``'s rule and return traced ``y``."""
    if result is None:
        raise NoRuleError(no_rule_message(function, primals))
    if type(result) is not tuple:
        raise RuleError(_bad_rule_result(function, result))
    try:
        y, pullback = result
    except ValueError:
        raise RuleError(_bad_rule_result(function, result)) from None
    if pullback is None:
        raise RuleError(_bad_rule_result(function, result))
    records = tape.records
    meta = SCALAR_META.get(type(y))
    if meta is not None:  # the hot path: a float scalar
        records.append((pullback, function, meta) + parents)
    elif type(y) is np.ndarray and y.dtype.kind in "fc":
        if y.size >= STAND_IN_SIZE and len(parents) > 1 and min(parents) < 0:
            # a constant argument: its cotangent is never asked for, nor what only its
            # derivative reads (large arrays only: for small ones, not worth the time)
            drop = getattr(pullback, "drop_unneeded", None)
            if drop is not None:
                drop(tuple(parent >= 0 for parent in parents))
        records.append((pullback, function, record_meta(y.shape, y.dtype, np.ndarray)) + parents)
    elif type(y) is Traced and y.dtype.kind in "fc":  # order 2: a value of an outer level
        records.append((pullback, function, record_meta(y.shape, y.dtype, Traced)) + parents)
    else:
        return _wrap_output(tape, y, pullback, parents, function)
    traced = _new_object(Traced)  # as Traced(y, tape, node), without a Python-level call
    traced.primal, traced.tape, traced.node = y, tape, len(records) - 1
    return traced


def _bad_rule_result(function: Any, result: Any) -> str:
    """What is wrong with an rrule's result that is not ``(y, pullback)``."""
    if type(result) is tuple and len(result) == 2:
        got = "a pair whose pullback is None (None marks an input leaf on the tape)"
    elif type(result) is tuple:
        got = f"a tuple of {len(result)}"
    else:
        got = f"a value of type {type(result).__name__}"
    return (f"the rrule of {function_name(function)} returned {got}; an rrule returns a pair "
            f"(y, pullback), where pullback(dy) returns one cotangent for the function and one "
            f"per argument (return None from the rrule if it does not apply).")


def _primal_of(traced: "Traced") -> Any:
    return traced.primal


def _keywords_to_positions(function: Any, args: tuple, kwargs: dict) -> tuple:
    """Move keyword arguments that hold traced values to their positions (rules give
    cotangents to positional arguments only; `chainrules.core.registry.positional_call`):
    ``np.average(x, weights=w)`` is recorded as ``np.average(x, None, w)``."""
    try:
        return positional_call(function, args, kwargs, moves=holds_traced)
    except KeywordArgumentError as error:
        raise TracingError(str(error).replace("carries a derivative", "holds a traced value")
                           ) from None


def no_rule_message(function: Any, primals: list) -> str:
    if type(function) is np.ufunc and function.types and all(
            types.endswith("O") for types in function.types):  # made by np.frompyfunc
        return (f"np.frompyfunc's ufunc {function.__name__!r} was called on traced values: "
                f"it hides its Python function from the engine (and returns an object "
                f"array). Make it with np.vectorize(f) instead (or call f in a loop), whose "
                f"calls of f are differentiated.")
    name = function_name(function)
    kinds = ", ".join(type(p).__name__ for p in primals)
    return (f"no rule for {name} (called with {kinds}) and it was given traced values. "
            f"Register one:\n"
            f"    @chainrules.rrule.register({name})\n"
            f"    def _(x, ...): return y, lambda dy: (NoTangent(), dx, ...)\n"
            f"or declare it with chainrules.non_differentiable({name}) if its outputs do "
            f"not depend differentiably on its inputs. See "
            f"`python -m chainrules.coverage` for the functions that have rules.")


def _wrap_output(tape: Tape, y: Any, pullback: Any, parents: tuple, function: Any) -> Any:
    records = tape.records
    if is_differentiable(y):
        node = len(records)
        records.append((pullback, function, record_meta(shape_of(y), dtype_of(y), type(y))) + parents)
        return Traced(y, tape, node)
    if isinstance(y, (tuple, list)):
        whole = len(records)
        records.append((pullback, function, NO_META) + parents)
        names = getattr(type(y), "_fields", None)
        elements = []
        for position, element in enumerate(y):
            if is_differentiable(element):
                key = names[position] if names else position
                node = len(records)
                records.append((_ElementPullback(type(y), key), function,
                                record_meta(shape_of(element), dtype_of(element), type(element)), whole))
                elements.append(Traced(element, tape, node))
            elif is_structure(element):  # a result object in a tuple: (x, RootResults)
                elements.append(_traced_leaves(tape, y, position, element, function, whole))
            else:
                elements.append(element)
        if names:
            return type(y)(*elements)
        return type(y)(elements)
    if isinstance(y, dict) and any(is_differentiable(v) for v in y.values()):
        # A result object such as scipy's OptimizeResult: each float field is traced, the
        # rest (counts, flags, messages) stays plain; the rule's pullback receives a Tangent
        # of the dict's type keyed by field.
        whole = len(records)
        records.append((pullback, function, NO_META) + parents)
        fields = copy.copy(y)  # not type(y)(y): RootResults.__init__ takes its fields
        for key, value in y.items():
            if is_differentiable(value):
                node = len(records)
                records.append((_ElementPullback(type(y), key), function,
                                record_meta(shape_of(value), dtype_of(value), type(value)), whole))
                fields[key] = Traced(value, tape, node)
            elif is_structure(value):  # arrays nested in a field (trust-constr's .constr)
                fields[key] = _traced_leaves(tape, y, key, value, function, whole)
        return fields
    return y  # integer, boolean or other non-differentiable output


def _traced_leaves(tape: Tape, y: Any, key: Any, value: Any, function: Any, whole: int) -> Any:
    """``value``, the structure at ``key`` of the output ``y``, with its float leaves traced
    (each a record whose pullback gives a structural cotangent of the whole output)."""
    records = tape.records
    traced = {}
    for path, leaf in leaves(value, is_float_leaf):
        traced[path] = Traced(leaf, tape, len(records))
        records.append((_NestedElementPullback(y, (key,) + path), function,
                        record_meta(shape_of(leaf), dtype_of(leaf), type(leaf)), whole))
    return replace_paths(value, traced) if traced else value


class _ElementPullback:
    """The pullback of ``output[key]`` for one element of a tuple or list output."""

    __slots__ = ("primal_type", "key")

    def __init__(self, primal_type: type, key: Any):
        self.primal_type = primal_type
        self.key = key

    def __call__(self, dy: Any) -> tuple:
        return NoTangent(), Tangent(self.primal_type, {self.key: dy})


class _NestedElementPullback:
    """The pullback of a float leaf at ``path`` inside a field of a dict output (a result
    object): a structural tangent of the whole output, so that the rule's pullback sees which
    field it reached (and raises for a field it cannot differentiate)."""

    __slots__ = ("output", "path")

    def __init__(self, output: dict, path: tuple):
        self.output, self.path = output, path

    def __call__(self, dy: Any) -> tuple:
        return NoTangent(), tangent_from_paths(self.output, {self.path: dy})


class StructureArgument:
    """The pullback of a structure argument (a list given to ``np.stack``, a closure given to
    ``np.vectorize``) that holds traced values: it hands each traced value, at ``paths[k]``,
    its part of the structural cotangent. The tape records it as a node of its own, so that
    every parent of every record is a node number."""

    __slots__ = ("function", "position", "paths")

    def __init__(self, function: Any, position: int, paths: tuple):
        self.function, self.position, self.paths = function, position, paths

    def __call__(self, cotangent: Any) -> tuple:
        return (_NO_TANGENT,) + tuple(tangent_at(cotangent, path) for path in self.paths)


_NO_TANGENT = NoTangent()

# Pullbacks that write into the cotangent they are given (array writes,
# chainrules.ad.dispatch.writes): the backward pass hands them one it owns, and passes the
# result on to their first argument as owned.
OWNING_PULLBACKS: set = set()
