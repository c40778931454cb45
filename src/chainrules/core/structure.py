"""Leaves of Python structures: find them by path, replace them, and read tangents by path.

A *structure* is anything whose tangent is a `Tangent`: tuples, lists, dicts, namedtuples,
dataclasses, plain objects, closures, bound methods and ``functools.partial``. A *leaf* is
anything else (arrays, numbers, strings, ...). A *path* is the tuple of field keys from the root
to a leaf, as `structural_fields` names them (positions, dict keys, attribute names, names of
captured variables); object arrays, when walked (``object_arrays=True``), add element positions.

The engine uses this to differentiate with respect to any argument (``grad`` of a dataclass
model or a closure) and to find traced values hidden inside arguments (``np.stack`` of a list,
``np.vectorize`` of a closure); the testing kit to perturb the leaves of any argument. A leaf
reached by several paths (a layer shared by two parts of a model) is found at each of them.
Walks are iterative and stop at cycles.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import types
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from .duck_arrays import is_duck_array_type
from .tangents import AbstractZero, Tangent, ZeroTangent, field_value, structural_fields
from .thunks import unthunk

__all__ = ["is_structure", "fields", "get_at", "leaves", "rebuild_with", "register_leaf_type",
           "replace_at", "replace_leaves", "replace_paths", "tangent_at", "tangent_from_paths"]

_LEAF_TYPES = (np.ndarray, np.generic, int, float, complex, bool, str, bytes, type(None),
               range, slice, type(Ellipsis), np.dtype, np.ufunc, type, types.ModuleType,
               AbstractZero, Tangent)


def register_leaf_type(kind: type) -> None:
    """Treat values of ``kind`` as leaves (the engine's traced values are leaves).

    >>> class Opaque:
    ...     pass
    >>> register_leaf_type(Opaque)
    >>> is_structure(Opaque())
    False
    """
    global _LEAF_TYPES
    _LEAF_TYPES = _LEAF_TYPES + (kind,)


def is_structure(x: Any, object_arrays: bool = False) -> bool:
    """Whether ``x`` has fields that may hold differentiable values.

    Object arrays are leaves unless ``object_arrays`` is true.

    >>> is_structure([1.0]), is_structure(np.ones(2)), is_structure(lambda: 0)
    (True, False, False)
    >>> is_structure(np.array([1.0, None]), object_arrays=True)
    True
    """
    if isinstance(x, _LEAF_TYPES):
        return object_arrays and issubclass(type(x), np.ndarray) and x.dtype.kind == "O"
    if isinstance(x, (tuple, list, dict, functools.partial, types.MethodType)):
        return True
    if isinstance(x, types.FunctionType):
        return bool(x.__closure__)
    if isinstance(x, (types.BuiltinFunctionType, types.BuiltinMethodType, property)):
        return False
    if dataclasses.is_dataclass(x):
        return True
    if is_duck_array_type(type(x)):  # another library's array (Dask's): a leaf
        return False
    return hasattr(x, "__dict__") or any(
        getattr(k, "__slots__", ()) for k in type(x).__mro__[:-1])


def fields(x: Any) -> dict:
    """The fields of the structure ``x``: `structural_fields`, and the elements of an object
    array by position.

    >>> fields(np.array([1.0, None]))
    {(0,): 1.0, (1,): None}
    """
    if issubclass(type(x), np.ndarray):
        return dict(np.ndenumerate(x))
    return structural_fields(x)


def _field(x: Any, key: Any) -> Any:
    if issubclass(type(x), np.ndarray):
        return x[key]
    return field_value(x, key)


def get_at(x: Any, path: Sequence) -> Any:
    """The value at ``path`` inside ``x``.

    >>> get_at({"a": [1.0, 2.0]}, ("a", 1))
    2.0
    """
    for key in path:
        x = _field(x, key)
    return x


def leaves(x: Any, select: Callable[[Any], bool],
           object_arrays: bool = False) -> Iterator[tuple[tuple, Any]]:
    """``(path, leaf)`` for every value of ``x`` for which ``select`` is true, not looking
    inside selected values; structures are looked into, other values skipped. A structure
    shared by several paths is looked into at each; one already on the path (a cycle) is not.

    >>> list(leaves({"a": [1.0, "s"], "b": 2}, lambda v: type(v) is float))
    [(('a', 0), 1.0)]
    """
    if select(x):
        yield (), x
        return
    if not is_structure(x, object_arrays):
        return
    active = {id(x)}  # the structures on the current path
    stack = [((), id(x), iter(fields(x).items()))]
    while stack:
        path, identity, items = stack[-1]
        for key, value in items:
            if select(value):
                yield path + (key,), value
            elif is_structure(value, object_arrays) and id(value) not in active:
                active.add(id(value))
                stack.append((path + (key,), id(value), iter(fields(value).items())))
                break
        else:
            stack.pop()
            active.discard(identity)


def rebuild_with(x: Any, new_fields: dict) -> Any:
    """A shallow copy of the structure ``x`` with some of its fields replaced.

    Containers are rebuilt, object arrays copied, objects and dataclasses (frozen ones too)
    shallow-copied, closures rebuilt with new cells: ``x`` itself is never modified.

    >>> rebuild_with((1, 2), {0: 5})
    (5, 2)
    """
    if isinstance(x, list):
        out = list(x)
        for key, value in new_fields.items():
            out[key] = value
        return out
    if isinstance(x, tuple):
        out = list(x)
        names = getattr(type(x), "_fields", None)
        for key, value in new_fields.items():
            out[names.index(key) if isinstance(key, str) else key] = value
        if names:
            return type(x)(*out)
        return tuple(out) if type(x) is tuple else type(x)(out)
    if issubclass(type(x), (dict, np.ndarray)):
        out = copy.copy(x)
        for key, value in new_fields.items():
            out[key] = value
        return out
    if isinstance(x, types.FunctionType):
        names = x.__code__.co_freevars
        cells = tuple(types.CellType(new_fields[name]) if name in new_fields else cell
                      for name, cell in zip(names, x.__closure__))
        function = types.FunctionType(x.__code__, x.__globals__, x.__name__, x.__defaults__,
                                      cells)
        function.__kwdefaults__ = x.__kwdefaults__
        function.__dict__.update(x.__dict__)
        function.__qualname__ = x.__qualname__
        return function
    if isinstance(x, types.MethodType):
        return types.MethodType(x.__func__, new_fields.get("__self__", x.__self__))
    if isinstance(x, functools.partial):
        func = new_fields.get("func", x.func)
        args = [new_fields.get(i, a) for i, a in enumerate(x.args)]
        keywords = {k: new_fields.get(k, v) for k, v in x.keywords.items()}
        return functools.partial(func, *args, **keywords)
    out = _shallow_copy(x)
    for key, value in new_fields.items():
        object.__setattr__(out, key, value)
    return out


def _shallow_copy(x: Any) -> Any:
    """``copy.copy(x)``; for a class with a catch-all ``__getattr__`` (a proxy, a mock), whose
    answers `copy` would take for ``__setstate__`` or ``__reduce_ex__``, its fields copied."""
    kind = type(x)
    if not hasattr(kind, "__getattr__"):
        return copy.copy(x)
    out = object.__new__(kind)
    for klass in kind.__mro__:
        for name in getattr(klass, "__slots__", ()):
            if name not in ("__dict__", "__weakref__"):
                try:
                    object.__setattr__(out, name, object.__getattribute__(x, name))
                except AttributeError:
                    pass
    if hasattr(out, "__dict__"):
        out.__dict__.update(object.__getattribute__(x, "__dict__"))
    return out


def replace_leaves(x: Any, replacement: Callable[[Any], Any],
                   select: Callable[[Any], bool]) -> Any:
    """A copy of ``x`` with every selected leaf replaced by ``replacement(leaf)``.

    Only the structures on the way to a selected leaf are copied; the rest is shared.

    >>> replace_leaves({"a": [1.0, "s"], "b": 2}, lambda v: v * 10, lambda v: type(v) is float)
    {'a': [10.0, 's'], 'b': 2}
    """
    found = list(leaves(x, select))
    if not found:
        return x
    if found[0][0] == ():
        return replacement(x)
    return _replace_relinked(x, {path: replacement(value) for path, value in found})


def replace_at(x: Any, path: Sequence, value: Any) -> Any:
    """A copy of ``x`` with the value at ``path`` replaced; only the path is copied.

    >>> replace_at({"a": [1.0, 2.0]}, ("a", 1), 5.0)
    {'a': [1.0, 5.0]}
    """
    if not path:
        return value
    return _replace_relinked(x, {tuple(path): value})


def replace_paths(x: Any, values: dict) -> Any:
    """A copy of ``x`` with the value at each path of ``values`` replaced (``()`` replaces
    ``x`` itself); only the structures on those paths are copied.

    >>> replace_paths({"a": [1.0, 2.0], "b": 3.0}, {("a", 0): 5.0, ("b",): 6.0})
    {'a': [5.0, 2.0], 'b': 6.0}
    """
    if () in values:
        return values[()]
    return _replace_relinked(x, values) if values else x


def _replace_relinked(x: Any, values: dict) -> Any:
    """``x`` with the values at the given (non-empty) paths replaced; a field of a copy that
    refers back to a structure on its own path (a cycle: ``d["self"] is d``) refers to that
    structure's copy, so that the replaced leaves are reached by every path, the cycle's too.
    (A structure shared by two paths that is not a cycle is copied at each, as `leaves` finds
    it at each.)"""
    copies: list = []  # (copy, the (id, [copy]) of the structures on its path, itself included)
    result = _replace_paths(x, values, copies, ())
    for new, chain in copies:
        if isinstance(new, (dict, list)):
            items = new.items() if isinstance(new, dict) else enumerate(new)
        elif hasattr(new, "__dict__") and not isinstance(new, types.FunctionType):
            items = fields(new).items()
        else:
            continue  # tuples, closures and partials cannot refer back to their own copy
        ancestors = dict(chain)
        relinked = [(key, ancestors[id(value)][0]) for key, value in items
                    if id(value) in ancestors and ancestors[id(value)][0] is not value]
        for key, value in relinked:
            if isinstance(new, (dict, list)):
                new[key] = value
            elif isinstance(key, str):
                object.__setattr__(new, key, value)
    return result


def _replace_paths(x: Any, values: dict, copies: list, chain: tuple) -> Any:
    """``x`` with the values at the given (non-empty) paths replaced."""
    holder: list = [None]
    chain = chain + ((id(x), holder),)
    by_key: dict = {}
    for path, value in values.items():
        by_key.setdefault(path[0], {})[path[1:]] = value
    new_fields = {}
    for key, sub in by_key.items():
        if () in sub:
            new_fields[key] = sub[()]
        else:
            new_fields[key] = _replace_paths(_field(x, key), sub, copies, chain)
    holder[0] = new = rebuild_with(x, new_fields)
    copies.append((new, chain))
    return new


def tangent_at(tangent: Any, path: Sequence) -> Any:
    """The part of a structural tangent at ``path`` (zero where a field is absent).

    The tangent may be a `Tangent`, or a plain tuple, list, dict or object array.

    >>> tangent_at(Tangent(dict, {"a": Tangent(list, {1: 3.0})}), ("a", 1))
    3.0
    >>> tangent_at(Tangent(dict, {}), ("a", 1)), tangent_at({"a": [1.0]}, ("a", 2))
    (ZeroTangent(), ZeroTangent())
    """
    for key in path:
        tangent = unthunk(tangent)
        if isinstance(tangent, AbstractZero):
            return tangent
        if isinstance(tangent, Tangent):
            tangent = tangent[key]
        elif issubclass(type(tangent), (tuple, list, dict, np.ndarray)):
            if isinstance(key, str) and isinstance(tangent, tuple):
                if not hasattr(type(tangent), "_fields"):
                    raise TypeError(
                        f"expected a structural tangent with a field {key!r}, got a plain "
                        f"tuple; give a Tangent (or a namedtuple) for a namedtuple")
                tangent = getattr(tangent, key)
                continue
            try:
                tangent = tangent[key]
            except (KeyError, IndexError):
                return ZeroTangent()
        else:
            raise TypeError(
                f"expected a structural tangent with a field {key!r}, got a "
                f"{type(tangent).__name__}")
    return tangent


def tangent_from_paths(x: Any, values: dict) -> Any:
    """The structural tangent of ``x`` that is ``values[path]`` at each path (zeros are
    left out; O(number of paths)); `ZeroTangent` when nothing is left.

    >>> tangent_from_paths({"a": [1.0, 2.0]}, {("a", 1): 3.0})
    Tangent[dict](a=Tangent[list](1: 3.0))
    """
    root: dict = {}
    for path, value in values.items():
        if isinstance(value, AbstractZero):
            continue
        node = root
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    if not root:
        return ZeroTangent()
    return _nested_tangent(x, root)


def _nested_tangent(x: Any, nested: dict) -> Tangent:
    current = fields(x)
    return Tangent(type(x), {key: _nested_tangent(current[key], value)
                             if isinstance(value, dict) and is_structure(current[key])
                             else value for key, value in nested.items()})
