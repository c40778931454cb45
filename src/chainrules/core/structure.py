"""Leaves of Python structures: find them by path, replace them, and read tangents by path.

A *structure* is anything whose tangent is a `Tangent`: tuples, lists, dicts, namedtuples,
dataclasses, plain objects, closures, bound methods and ``functools.partial``. A *leaf* is
anything else (arrays, numbers, strings, ...). A *path* is the tuple of field keys from the root
to a leaf, as `structural_fields` names them (positions, dict keys, attribute names, names of
captured variables).

The engine uses this to differentiate with respect to any argument (``grad`` of a dataclass
model or a closure) and to find traced values hidden inside arguments (``np.stack`` of a list,
``np.vectorize`` of a closure). Walks are iterative and guard against cycles.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import types
from typing import Any, Callable, Iterator

import numpy as np

from .tangents import AbstractZero, Tangent, ZeroTangent, structural_fields
from .thunks import unthunk

__all__ = ["is_structure", "leaves", "replace_leaves", "tangent_at", "rebuild_with"]

_LEAF_TYPES = (np.ndarray, np.generic, int, float, complex, bool, str, bytes, type(None),
               range, slice, type(Ellipsis), np.dtype, np.ufunc, type, types.ModuleType,
               AbstractZero, Tangent)


def register_leaf_type(kind: type) -> None:
    """Treat values of ``kind`` as leaves (the engine's traced values are leaves)."""
    global _LEAF_TYPES
    _LEAF_TYPES = _LEAF_TYPES + (kind,)


def is_structure(x: Any) -> bool:
    """Whether ``x`` has fields that may hold differentiable values.

    >>> is_structure([1.0]), is_structure(np.ones(2)), is_structure(lambda: 0)
    (True, False, False)
    """
    if isinstance(x, _LEAF_TYPES):
        return False
    if isinstance(x, (tuple, list, dict, functools.partial, types.MethodType)):
        return True
    if isinstance(x, types.FunctionType):
        return bool(x.__closure__)
    if isinstance(x, (types.BuiltinFunctionType, types.BuiltinMethodType, property)):
        return False
    if dataclasses.is_dataclass(x):
        return True
    return hasattr(x, "__dict__") or any(
        getattr(k, "__slots__", ()) for k in type(x).__mro__[:-1])


def _fields(x: Any) -> dict:
    if isinstance(x, functools.partial):
        fields = dict(enumerate(x.args))
        fields.update(x.keywords)
        fields["func"] = x.func
        return fields
    if isinstance(x, types.MethodType):
        return {"__self__": x.__self__}
    return structural_fields(x)


def leaves(x: Any, select: Callable[[Any], bool]) -> Iterator[tuple[tuple, Any]]:
    """``(path, leaf)`` for every leaf of ``x`` for which ``select(leaf)`` is true.

    >>> list(leaves({"a": [1.0, "s"], "b": 2}, lambda v: isinstance(v, float)))
    [(('a', 0), 1.0)]
    """
    if not is_structure(x):
        if select(x):
            yield (), x
        return
    seen = {id(x)}
    stack = [((), x)]
    while stack:
        path, node = stack.pop()
        items = list(_fields(node).items())
        for key, value in reversed(items):
            child = path + (key,)
            if is_structure(value):
                if id(value) not in seen:
                    seen.add(id(value))
                    stack.append((child, value))
            elif select(value):
                yield child, value


def rebuild_with(x: Any, fields: dict) -> Any:
    """A shallow copy of the structure ``x`` with some of its fields replaced.

    Closures get new cells, so the original function is not modified.

    >>> rebuild_with((1, 2), {0: 5})
    (5, 2)
    """
    if isinstance(x, list):
        out = list(x)
        for key, value in fields.items():
            out[key] = value
        return out
    if isinstance(x, tuple):
        out = list(x)
        names = getattr(type(x), "_fields", None)
        for key, value in fields.items():
            out[names.index(key) if isinstance(key, str) else key] = value
        return type(x)(*out) if names else tuple(out)
    if isinstance(x, dict):
        out = copy.copy(x)
        out.update(fields)
        return out
    if isinstance(x, types.FunctionType):
        names = x.__code__.co_freevars
        cells = tuple(types.CellType(fields[name]) if name in fields else cell
                      for name, cell in zip(names, x.__closure__))
        function = types.FunctionType(x.__code__, x.__globals__, x.__name__, x.__defaults__,
                                      cells)
        function.__kwdefaults__ = x.__kwdefaults__
        function.__dict__.update(x.__dict__)
        function.__qualname__ = x.__qualname__
        return function
    if isinstance(x, types.MethodType):
        return types.MethodType(x.__func__, fields.get("__self__", x.__self__))
    if isinstance(x, functools.partial):
        func = fields.get("func", x.func)
        args = [fields.get(i, a) for i, a in enumerate(x.args)]
        keywords = {k: fields.get(k, v) for k, v in x.keywords.items()}
        return functools.partial(func, *args, **keywords)
    out = copy.copy(x)
    for key, value in fields.items():
        object.__setattr__(out, key, value)
    return out


def replace_leaves(x: Any, replacement: Callable[[Any], Any],
                   select: Callable[[Any], bool]) -> Any:
    """A copy of ``x`` with every selected leaf replaced by ``replacement(leaf)``.

    Only the structures on the way to a selected leaf are copied; the rest is shared.

    >>> replace_leaves({"a": [1.0, "s"], "b": 2}, lambda v: v * 10, lambda v: isinstance(v, float))
    {'a': [10.0, 's'], 'b': 2}
    """
    found = list(leaves(x, select))
    if not found:
        return x
    if found[0][0] == ():
        return replacement(x)
    return _replace_paths(x, {path: replacement(value) for path, value in found})


def _replace_paths(x: Any, values: dict) -> Any:
    """``x`` with the leaves at the given paths replaced (paths relative to ``x``)."""
    by_key: dict = {}
    for path, value in values.items():
        by_key.setdefault(path[0], {})[path[1:]] = value
    fields = {}
    current = _fields(x)
    for key, sub in by_key.items():
        if () in sub:
            fields[key] = sub[()]
        else:
            fields[key] = _replace_paths(current[key], sub)
    return rebuild_with(x, fields)


def tangent_at(tangent: Any, path: tuple) -> Any:
    """The part of a structural tangent at ``path`` (zero where it is absent).

    >>> tangent_at(Tangent(dict, {"a": Tangent(list, {1: 3.0})}), ("a", 1))
    3.0
    >>> tangent_at(Tangent(dict, {}), ("a", 1))
    ZeroTangent()
    """
    for key in path:
        tangent = unthunk(tangent)
        if isinstance(tangent, AbstractZero):
            return tangent
        if isinstance(tangent, Tangent):
            tangent = tangent[key]
        elif isinstance(tangent, dict):
            tangent = tangent.get(key, ZeroTangent())
        elif isinstance(tangent, (list, tuple)):
            if isinstance(key, str):
                tangent = getattr(tangent, key)
            else:
                tangent = tangent[key]
        else:
            raise TypeError(
                f"expected a structural tangent with a field {key!r}, got a "
                f"{type(tangent).__name__}")
    return tangent
