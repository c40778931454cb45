"""Lazy tangents: `Thunk` (computed at most once) and `InplaceableThunk` (can add itself).

Their base, `AbstractThunk`, and `unthunk` are tangent kinds like the others
(`chainrules.core.tangents`); they are importable from here too.

A rule that returns several cotangents thunks the ones that may go unused, so an engine that
never asks for them never pays for them. Unlike ChainRulesCore's thunks, ours memoize: the
value is computed the first time it is needed and then kept.

Thunks are values. ``copy.copy`` returns the thunk itself (a thunk is immutable, like a
tuple). ``copy.deepcopy`` and ``pickle`` materialize the value: they give a thunk of the same
type that is already computed and holds a deep copy (or the unpickled copy) of the value; the
function that would have computed it is never copied, since it is usually a closure or a
lambda that cannot be pickled. Pickling a thunk whose value does not pickle raises a
`pickle.PicklingError` that names the thunk.
"""

from __future__ import annotations

import copy
import functools
import pickle
from typing import Any, Callable

import numpy as np

from .tangents import _UNSET, AbstractThunk, unthunk

__all__ = ["AbstractThunk", "Thunk", "InplaceableThunk", "NotImplementedCotangent", "unthunk"]

def _check_value_pickles(thunk: AbstractThunk, value: Any, protocol: int) -> None:
    """Raise a `pickle.PicklingError` naming the thunk if its ``value`` does not pickle.

    Arrays and numbers always pickle and are not tried (a trial would pickle them twice).
    """
    if type(value) in (float, int, complex, bool) or (
            issubclass(type(value), (np.ndarray, np.generic)) and value.dtype.kind != "O"):
        return
    try:
        pickle.dumps(value, protocol)
    except Exception as error:  # noqa: BLE001 - any failure is reported the same way
        raise pickle.PicklingError(
            f"cannot pickle a {type(thunk).__name__}: pickling materializes its value, a "
            f"{type(value).__qualname__}, and that value does not pickle ({error})") from error


def _computed_thunk(value: Any) -> "Thunk":
    """A `Thunk` whose value is already ``value`` (how copies and unpickled thunks are built)."""
    thunk = Thunk(None)  # type: ignore[arg-type]
    thunk._value = value
    return thunk


def _add_value(value: Any, buffer: np.ndarray) -> np.ndarray:
    """``buffer += value`` in place: the ``add`` of a copied or unpickled `InplaceableThunk`."""
    return np.add(buffer, value, out=buffer)


def _computed_inplaceable(value: Any, shape: tuple | None, dtype: Any) -> "InplaceableThunk":
    return InplaceableThunk(functools.partial(_add_value, value), value, shape=shape,
                            dtype=dtype)


class Thunk(AbstractThunk):
    """A lazily computed tangent: ``Thunk(f)`` is the value ``f()``, computed at most once.

    >>> calls = []
    >>> t = Thunk(lambda: calls.append(1) or 2.0)
    >>> unthunk(t), unthunk(t), len(calls)
    (2.0, 2.0, 1)
    >>> t + 1.0
    3.0

    ``copy.deepcopy(t)`` and ``pickle.loads(pickle.dumps(t))`` compute the value (if it was not
    yet) and give a computed `Thunk` holding a copy of it:

    >>> import copy
    >>> copy.deepcopy(Thunk(lambda: [1.0])).unthunk()
    [1.0]
    """

    __slots__ = ("_function",)

    def __init__(self, function: Callable[[], Any]):
        self._function = function
        self._value = _UNSET

    def _compute(self):
        return self._function()

    def _release(self):
        self._function = None

    def __deepcopy__(self, memo: dict) -> "Thunk":
        return _computed_thunk(copy.deepcopy(self.unthunk(), memo))

    def __reduce_ex__(self, protocol):
        value = self.unthunk()
        _check_value_pickles(self, value, protocol)
        return (_computed_thunk, (value,))

    def __repr__(self) -> str:
        if self.is_computed:
            return f"Thunk(= {self._value!r})"
        return f"Thunk({getattr(self._function, '__qualname__', self._function)!r})"


class InplaceableThunk(AbstractThunk):
    """A lazy tangent that can also add itself into a buffer: ``InplaceableThunk(add, val)``.

    ``val`` is the value (a `Thunk` or a plain value). ``add(buffer)`` must do
    ``buffer += unthunk(val)`` in place, more cheaply than building the value, and return
    ``buffer``. Give ``shape`` and ``dtype`` of the value when ``val`` is lazy: they let
    `accumulate` decide whether ``add`` can be used (the buffer must be able to hold the sum
    exactly, with its own dtype) without computing ``val``. Without them, `accumulate` uses
    the value, which is always correct.

    >>> import numpy as np
    >>> dy = np.array([1.0, 2.0])
    >>> t = InplaceableThunk(lambda b: np.add(b, dy, out=b), Thunk(lambda: dy.copy()),
    ...                      shape=(2,), dtype=np.float64)
    >>> unthunk(t)
    array([1., 2.])

    A deep copy or an unpickled copy is computed already; its ``add`` adds the copied value.
    """

    __slots__ = ("add", "val", "shape", "dtype")

    def __init__(self, add: Callable[[np.ndarray], np.ndarray], val: Any, *,
                 shape: tuple | None = None, dtype: Any = None):
        self.add = add
        self.val = val
        self._value = _UNSET
        if not issubclass(type(val), AbstractThunk):
            self._value = val
            if shape is None:
                shape = np.shape(val)
            if dtype is None and issubclass(type(val), (np.ndarray, np.generic)):
                dtype = val.dtype
        self.shape = None if shape is None else tuple(shape)
        self.dtype = None if dtype is None else np.dtype(dtype)

    def _compute(self):
        return unthunk(self.val)

    def __deepcopy__(self, memo: dict) -> "InplaceableThunk":
        return _computed_inplaceable(copy.deepcopy(self.unthunk(), memo), self.shape,
                                     self.dtype)

    def __reduce_ex__(self, protocol):
        value = self.unthunk()
        _check_value_pickles(self, value, protocol)
        return (_computed_inplaceable, (value, self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"InplaceableThunk(shape={self.shape}, dtype={self.dtype})"


class NotImplementedCotangent(Thunk):
    """The cotangent of an argument whose derivative is not implemented, as ChainRulesCore's
    ``@not_implemented``: a `Thunk` that raises ``NotImplementedError(message)`` when it is
    read, so an engine that never reads it (the argument is a constant) pays nothing. An
    engine can tell it without reading it, by its type, and report ``message``.

    >>> t = NotImplementedCotangent("f: the derivative with respect to a is not implemented")
    >>> isinstance(t, NotImplementedCotangent), t.message[:3]
    (True, 'f: ')
    >>> try:
    ...     unthunk(t)
    ... except NotImplementedError as error:
    ...     print(error)
    f: the derivative with respect to a is not implemented
    """

    __slots__ = ("message",)

    def __init__(self, message: str):
        super().__init__(self._refuse)
        self.message = message

    def _refuse(self) -> Any:
        raise NotImplementedError(self.message)

    def __repr__(self) -> str:
        return f"NotImplementedCotangent({self.message!r})"
