"""accumulate: the one way tangents are added (ChainRules' ``add!!``, made total and exact).

``accumulate(acc, t)`` returns ``acc + unthunk(t)``: the same values and dtype as the eager sum,
and no exception where the eager sum succeeds. It may update ``acc`` in place only when the
caller says it owns it (``owned=True``).

Ownership, explicitly:
- An *owned* accumulator is one the caller allocated itself, through `owned_copy` or as the
  result of an earlier ``accumulate(..., owned=True)``: every buffer reachable from it (fields
  of a `Tangent` included) belongs to the caller and nothing else refers to it.
- ``accumulate(acc, t, owned=True)`` may mutate ``acc`` and always returns an owned result.
  It never mutates ``t``, and never stores ``t`` itself: a first contribution to an empty slot
  (a zero accumulator or field) is copied or materialized by `owned_copy`.
- ``accumulate(acc, t)`` (not owned) mutates nothing. Its result may share memory with ``acc``
  or ``t`` (``ZeroTangent() + t`` is ``t``), so it is not owned.

In place is used only when it equals the eager sum exactly: the buffer is a writeable ndarray
of the eager result's shape and dtype. A complex cotangent into a real buffer, a float64
cotangent into a float32 buffer, or a broadcast that would grow the buffer, all take the
out-of-place sum instead (whose fresh result is then owned).

Traced values (order 2 and above: a pullback running while an outer trace records) are never
written in place: the same calls build a new value by NumPy operations (``acc + t``), and
sparse index cotangents of traced values are kept as pieces of a `SparseSum`, an owned
accumulator materialized once by one ``scatter_sum``, so index loops stay linear.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .check_error import CheckError
from .sparse import SparseCotangent, SparseSum
from .structure import is_structure, rebuild_with
from .tangents import AbstractZero, NoTangent, Tangent, ZeroTangent, structural_fields
from .thunks import AbstractThunk, InplaceableThunk, unthunk

__all__ = ["accumulate", "add_to_primal", "check_in_place", "owned_copy", "owned_sum"]


def accumulate(acc: Any, t: Any, *, owned: bool = False) -> Any:
    """``acc + unthunk(t)``, in place into ``acc`` when ``owned`` and exact.

    >>> import numpy as np
    >>> buffer = owned_copy(np.zeros(3))
    >>> sparse = SparseCotangent(1, 2.0, (3,), np.float64)
    >>> out = accumulate(buffer, sparse, owned=True)
    >>> out, out is buffer
    (array([0., 2., 0.]), True)
    >>> accumulate(np.zeros(3, np.float32), np.ones(3)).dtype   # as the eager sum
    dtype('float64')
    """
    if owned and CHECK_IN_PLACE:
        return _compared_with_eager(acc, t)
    if owned and type(acc) is np.ndarray:
        if type(t) is SparseCotangent:
            return _into_array(acc, t)  # the engine's hot path: x[i] read in a loop
        if type(t) is np.ndarray and t.dtype is acc.dtype and t.shape == acc.shape and \
                acc.flags.writeable:
            return np.add(acc, t, out=acc)  # (an RNN's weights' cotangent, step by step)
    if not owned and type(acc) in _DENSE and type(t) in _DENSE:
        return acc + t  # numbers and arrays: the eager sum (forward mode's hot path)
    if type(acc) is SparseSum and owned:
        return acc.add(t)
    if issubclass(type(t), AbstractZero):
        if issubclass(type(acc), AbstractZero):
            return acc + t
        return acc
    if issubclass(type(acc), AbstractZero):
        return owned_copy(t) if owned else t
    if owned:
        if type(t) is SparseCotangent and t.is_traced and not issubclass(type(acc), Tangent):
            return SparseSum(t.shape, t.dtype, unthunk(acc)).add(t)
        if type(acc) is np.ndarray:
            return _into_array(acc, t)
        if type(acc) is Tangent:
            return _into_tangent(acc, t)
    return _eager_sum(acc, t)


# Set by `chainrules.core.checking` (the checking mode), through `check_in_place`: every owned
# accumulation is then compared with the eager sum it stands for.
CHECK_IN_PLACE = False


def check_in_place(on: bool) -> None:
    """Compare every owned accumulation with the eager sum (the checking mode) or not.

    >>> check_in_place(False)
    """
    global CHECK_IN_PLACE
    CHECK_IN_PLACE = bool(on)


def _compared_with_eager(acc: Any, t: Any) -> Any:
    """``accumulate(acc, t, owned=True)``, checked against ``copy(acc) + unthunk(t)``."""
    global CHECK_IN_PLACE
    if type(acc) is np.ndarray and type(t) is SparseCotangent and not t.is_traced and \
            _is_basic_index(t.index):
        return _compared_at_index(acc, t)  # O(size of the piece): x[i] loops stay linear
    if not issubclass(type(acc), _CHECKED) or type(t) is SparseCotangent and t.is_traced:
        # values of an outer trace (second order): checked when that trace's pass adds them
        CHECK_IN_PLACE = False
        try:
            return accumulate(acc, t, owned=True)
        finally:
            CHECK_IN_PLACE = True
    before = owned_copy(acc)
    CHECK_IN_PLACE = False  # the accumulation itself, unchecked (it may accumulate inside)
    try:
        result = accumulate(acc, t, owned=True)
        eager = _eager_sum(before, t)
    finally:
        CHECK_IN_PLACE = True
    if not _close(result, eager):
        raise CheckError(
            f"checking: an in-place accumulation differs from the eager sum it stands for: "
            f"adding a {type(t).__name__} into a {type(before).__name__} gave "
            f"{_summary(result)}, the eager sum acc + unthunk(t) gives {_summary(eager)}. The "
            f"tangent's in-place add (an InplaceableThunk's add, a sparse cotangent's "
            f"add_into) disagrees with its value.")
    return result


# NumPy's own, bound at import (a backward pass under hvp runs while NumPy's namespace holds
# the trace's creation functions: `chainrules.core.sparse`)
_ZEROS, _ARRAY = np.zeros, np.array
_CHECKED = (np.ndarray, np.generic, int, float, complex, Tangent)


def _is_basic_index(index: Any) -> bool:
    parts = index if type(index) is tuple else (index,)
    return all(type(part) in (int, slice) or part is None or part is Ellipsis for part in parts)


def _compared_at_index(acc: np.ndarray, t: SparseCotangent) -> Any:
    """The check of `_compared_with_eager` for ``x[i]``'s cotangent (a basic index: no
    repeated element), on the elements it touches only."""
    global CHECK_IN_PLACE
    before = np.array(acc[t.index], copy=True)
    CHECK_IN_PLACE = False
    try:
        result = accumulate(acc, t, owned=True)
    finally:
        CHECK_IN_PLACE = True
    expected = before + np.asarray(t.values)
    if type(result) is np.ndarray and result.shape == acc.shape and \
            not _close(result[t.index], expected):
        raise CheckError(
            f"checking: an in-place accumulation differs from the eager sum it stands for: "
            f"adding the sparse cotangent of x[{t.index!r}] into an array gave "
            f"{_summary(result[t.index])} there, the eager sum gives {_summary(expected)}. The "
            f"sparse cotangent's add_into disagrees with its value.")
    return result


def _close(a: Any, b: Any) -> bool:
    a, b = unthunk(a), unthunk(b)
    if issubclass(type(a), Tangent) or issubclass(type(b), Tangent):
        if not (issubclass(type(a), Tangent) and issubclass(type(b), Tangent)):
            return issubclass(type(a), AbstractZero) or issubclass(type(b), AbstractZero)
        return set(a.keys()) == set(b.keys()) and all(_close(a[k], b[k]) for k in a.keys())
    if issubclass(type(a), AbstractZero) or issubclass(type(b), AbstractZero):
        return True
    if issubclass(type(a), (SparseSum, SparseCotangent)):
        a = a.dense() if issubclass(type(a), SparseCotangent) else unthunk(a)
    if issubclass(type(b), (SparseSum, SparseCotangent)):
        b = b.dense() if issubclass(type(b), SparseCotangent) else unthunk(b)
    plain = (np.ndarray, np.generic, int, float, complex)
    if not (issubclass(type(a), plain) and issubclass(type(b), plain)):
        return True  # traced values (second order): checked by their own trace's pass
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind not in "fc" or b.dtype.kind not in "fc" or a.shape != b.shape:
        return a.shape == b.shape
    scale = float(np.max(np.abs(b), initial=0.0)) if np.all(np.isfinite(b)) else 0.0
    return bool(np.allclose(a, b, rtol=1e-12, atol=1e-12 * scale, equal_nan=True))


def _summary(x: Any) -> str:
    value = np.asarray(unthunk(x)) if not issubclass(type(unthunk(x)), Tangent) else x
    return f"{value!r:.120}"


_DENSE = frozenset({float, complex, np.float64, np.float32, np.float16, np.complex128,
                    np.complex64, np.ndarray})


def owned_copy(t: Any) -> Any:
    """A value equal to ``unthunk(t)`` that shares no memory with anything: an owned buffer.

    >>> import numpy as np
    >>> x = np.ones(2)
    >>> y = owned_copy(x)
    >>> y is x, bool(np.shares_memory(x, y))
    (False, False)
    """
    if issubclass(type(t), AbstractZero):
        return t
    if issubclass(type(t), SparseCotangent):
        return SparseSum(t.shape, t.dtype).add(t) if t.is_traced else t.dense()
    if issubclass(type(t), InplaceableThunk) and not t.is_computed and t.shape is not None \
            and t.dtype is not None:
        return _checked_add(t, _ZEROS(t.shape, t.dtype))
    if issubclass(type(t), AbstractThunk):
        t = t.unthunk()
    if issubclass(type(t), np.ndarray):
        return _ARRAY(t, copy=True, subok=False)
    if issubclass(type(t), Tangent):
        return Tangent(t.primal_type, {k: owned_copy(v) for k, v in t.items()})
    if issubclass(type(t), (tuple, list, dict)):
        return Tangent(type(t), {k: owned_copy(v) for k, v in structural_fields(t).items()})
    return t  # numbers are immutable


def owned_sum(acc: Any, t: Any) -> Any:
    """``acc + unthunk(t)`` as a new owned value: neither argument is mutated or aliased.

    This is how a slot that holds one unowned contribution becomes an owned accumulator when
    a second contribution arrives: one pass over the data, not a copy and then an add.

    >>> import numpy as np
    >>> a = np.ones(2)
    >>> s = owned_sum(a, SparseCotangent(0, 1.0, (2,), np.float64))
    >>> s, bool(np.shares_memory(s, a))
    (array([2., 1.]), False)
    """
    if type(acc) is np.ndarray and not issubclass(type(t), (Tangent, AbstractZero)):
        if issubclass(type(t), (SparseCotangent, np.ndarray, np.generic, int, float, complex)):
            return _eager_sum(acc, t)  # a new array (or number) in the eager sum's dtype
    return accumulate(owned_copy(acc), t, owned=True)


def _fits(buffer: np.ndarray, shape: tuple, dtype: np.dtype) -> bool:
    """Whether ``buffer + (value of shape, dtype)`` has the buffer's own shape and dtype."""
    return (buffer.flags.writeable and shape == buffer.shape
            and np.promote_types(buffer.dtype, dtype) == buffer.dtype)


def _checked_add(t: InplaceableThunk, buffer: np.ndarray) -> np.ndarray:
    result = t.add(buffer)
    if result is not buffer:
        raise TypeError(
            f"InplaceableThunk.add must update the buffer it is given in place and return "
            f"that same buffer; {getattr(t.add, '__qualname__', t.add)!r} returned a "
            f"{type(result).__name__} instead.")
    return buffer


def _into_array(acc: np.ndarray, t: Any) -> Any:
    if type(t) is SparseCotangent:
        if t.is_traced:
            return SparseSum(t.shape, t.dtype, acc).add(t)
        if (t.dtype is acc.dtype or _fits(acc, t.shape, t.dtype)) and t.shape == acc.shape \
                and acc.flags.writeable:
            return t.add_into(acc)
        return _eager_sum(acc, t)
    if issubclass(type(t), InplaceableThunk):
        if not t.is_computed and t.shape is not None and t.dtype is not None:
            if _fits(acc, t.shape, t.dtype):
                return _checked_add(t, acc)
        t = t.unthunk()
    elif issubclass(type(t), AbstractThunk):
        t = t.unthunk()
    if issubclass(type(t), np.ndarray):
        if acc.flags.writeable and np.promote_types(acc.dtype, t.dtype) == acc.dtype and (
                t.shape == acc.shape or np.broadcast_shapes(acc.shape, t.shape) == acc.shape):
            return np.add(acc, t, out=acc)
    elif issubclass(type(t), (int, float, complex, np.generic)) and \
            not issubclass(type(t), Tangent):
        if acc.flags.writeable and np.result_type(acc, t) == acc.dtype:
            return np.add(acc, t, out=acc)
    return _eager_sum(acc, t)


def _into_tangent(acc: Tangent, t: Any) -> Any:
    if issubclass(type(t), AbstractThunk):
        t = t.unthunk()
    if issubclass(type(t), (tuple, list, dict)):
        t = Tangent(acc.primal_type, structural_fields(t))
    if not issubclass(type(t), Tangent):
        return _eager_sum(acc, t)
    _check_same_primal(acc, t)
    backing = acc.backing
    for key, value in t.items():
        old = backing.get(key)
        backing[key] = owned_copy(value) if old is None else accumulate(old, value, owned=True)
    return acc


def _check_same_primal(a: Tangent, b: Tangent) -> None:
    if a.primal_type is not None and b.primal_type is not None \
            and a.primal_type is not b.primal_type:
        raise TypeError(
            f"cannot add a Tangent of {b.primal_type.__qualname__} to a Tangent of "
            f"{a.primal_type.__qualname__}: they are tangents of different types.")


def _eager_sum(acc: Any, t: Any) -> Any:
    """``unthunk(acc) + unthunk(t)`` for every pair of tangent kinds, never mutating either."""
    if issubclass(type(acc), AbstractThunk):
        acc = acc.unthunk()
    if issubclass(type(t), SparseCotangent) and issubclass(type(acc), np.ndarray) and \
            acc.shape == t.shape and not t.is_traced:
        # acc + dense(t), without building dense(t): copy acc into the result dtype, add t.
        result = _ARRAY(acc, dtype=np.promote_types(acc.dtype, t.dtype), copy=True)
        return t.add_into(result)
    if issubclass(type(t), AbstractThunk):
        t = t.unthunk()
    if issubclass(type(acc), AbstractZero) or issubclass(type(t), AbstractZero):
        return accumulate(acc, t)
    if issubclass(type(t), Tangent) and _is_primal_structure(acc):
        return add_to_primal(acc, t)
    if issubclass(type(acc), Tangent) and _is_primal_structure(t):
        return add_to_primal(t, acc)
    acc_structural = issubclass(type(acc), (Tangent, tuple, list, dict))
    t_structural = issubclass(type(t), (Tangent, tuple, list, dict))
    if acc_structural or t_structural:
        if not (acc_structural and t_structural):
            structural, other = (acc, t) if acc_structural else (t, acc)
            raise TypeError(
                f"cannot add a structural tangent ({type(structural).__name__}) and a "
                f"{type(other).__name__}: they are tangents of different kinds of primal.")
        return _sum_structural(acc, t)
    return acc + t


def _is_primal_structure(x: Any) -> bool:
    """Whether ``x`` is an object with fields that is not itself a tangent: a dataclass,
    namedtuple, plain object, closure, or a tuple, list or dict (whose sum with a `Tangent`
    of it is the same, field by field, whether it is read as a primal or as a tangent)."""
    return not issubclass(type(x), _TANGENT_TYPES) and is_structure(x)


_TANGENT_TYPES = (Tangent, AbstractZero, AbstractThunk, SparseCotangent, SparseSum, np.ndarray)


def add_to_primal(x: Any, dx: Any) -> Any:
    """``x + dx`` for a structure ``x`` and its structural tangent ``dx``: a new object of
    ``x``'s type whose fields are ``x``'s plus ``dx``'s, as ChainRulesCore adds a
    ``Tangent{P}`` to a ``P``. Zero fields (`ZeroTangent`, `NoTangent`, absent ones) leave
    ``x``'s fields as they are (integers, strings, ...); nested objects and containers are
    rebuilt the same way; ``x`` itself is never modified. This is what ``params + dx`` and
    ``params - lr * grad(loss)(params)`` compute.

    >>> from dataclasses import dataclass
    >>> import numpy as np
    >>> @dataclass
    ... class Params:
    ...     w: np.ndarray
    ...     steps: int
    >>> Params(np.ones(2), 3) - 0.5 * Tangent(Params, w=np.array([2.0, 4.0]))
    Params(w=array([ 0., -1.]), steps=3)
    >>> add_to_primal({"a": [1.0, 2.0]}, Tangent(dict, a=[10.0, ZeroTangent()]))
    {'a': [11.0, 2.0]}
    """
    dx = unthunk(dx)
    if issubclass(type(dx), AbstractZero):
        return rebuild_with(x, {}) if _is_primal_structure(x) else x
    if not _is_primal_structure(x):
        return x + dx  # a leaf: an array or a number (a structural dx raises, by name)
    current = structural_fields(x)
    if issubclass(type(dx), Tangent):
        primal_type = dx.primal_type
        if primal_type is not None and not isinstance(x, primal_type):
            raise TypeError(
                f"cannot add a Tangent of {primal_type.__qualname__} to a "
                f"{type(x).__qualname__}: a tangent is added to an object of its own type.")
        given = dx.items()
    elif isinstance(dx, tuple) and not hasattr(type(dx), "_fields") \
            and hasattr(type(x), "_fields"):
        given = zip(type(x)._fields, dx)  # a plain tuple as the tangent of a namedtuple
    elif issubclass(type(dx), (tuple, list, dict)):
        given = structural_fields(dx).items()
    else:
        raise TypeError(
            f"cannot add a {type(dx).__name__} to a {type(x).__qualname__}: the tangent of an "
            f"object with fields is a Tangent (or a tuple, list or dict) of its fields.")
    new_fields = {}
    for key, value in given:
        value = unthunk(value)
        if issubclass(type(value), AbstractZero):
            continue
        if key not in current:
            raise TypeError(
                f"cannot add the tangent to a {type(x).__qualname__}: the tangent has a field "
                f"{key!r} that the {type(x).__qualname__} has not (its fields: "
                f"{', '.join(map(repr, current))}).")
        new_fields[key] = add_to_primal(current[key], value)
    return rebuild_with(x, new_fields)


def _sum_structural(acc: Any, t: Any) -> Any:
    primal_type = acc.primal_type if issubclass(type(acc), Tangent) else type(acc)
    a = acc if issubclass(type(acc), Tangent) else Tangent(primal_type, structural_fields(acc))
    b = t if issubclass(type(t), Tangent) else Tangent(primal_type, structural_fields(t))
    _check_same_primal(a, b)
    backing = dict(a.backing)
    for key, value in b.items():
        backing[key] = _eager_sum(backing[key], value) if key in backing else value
    if a.primal_type is None:
        primal_type = b.primal_type
    return Tangent(primal_type, backing)


def _tangent_plus(tangent: Tangent, other: Any) -> Any:
    """``tangent + other``: `accumulate`, the one addition of tangents."""
    return accumulate(tangent, other)


def _plus_tangent(tangent: Tangent, other: Any) -> Any:
    """``other + tangent``."""
    return accumulate(other, tangent)


# `Tangent`'s ``+`` is installed here, not in its class body: the tangent types sit below the
# arithmetic that combines them (chainrules.core.tangents imports nothing above it).
Tangent.__add__ = _tangent_plus  # type: ignore[method-assign]
Tangent.__radd__ = _plus_tangent  # type: ignore[method-assign]
