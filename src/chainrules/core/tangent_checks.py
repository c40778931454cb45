"""A tangent or cotangent a user gives, checked against its primal: structure, shape, dtype.

The transforms read user-supplied tangents by path (`chainrules.core.structure.tangent_at`),
and a path that is missing reads as zero: a misspelled key, a dict for a list, one element for
a pair would give a zero derivative, silently. `check_tangent` walks the tangent beside its
primal and refuses every part that has no primal or the wrong shape or dtype, naming the
transform, the argument and the path, as JAX does for custom rules:

>>> import numpy as np
>>> check_tangent({"w": 1.0}, {"w": 2.0}, "jvp: tangents[0]")
>>> try:
...     check_tangent({"w": 1.0}, {"v": 2.0}, "jvp: tangents[0]")
... except ValueError as error:
...     print(error)
jvp: tangents[0]['v'] has no primal; the primal's keys are ['w']

Missing parts are allowed (they are zero), as are `ZeroTangent` and `NoTangent` anywhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .structure import fields, is_structure
from .tangents import AbstractZero, Tangent
from .thunks import AbstractThunk

__all__ = ["check_tangent"]


def _where(where: str, path: tuple) -> str:
    return where + "".join(f"[{key!r}]" for key in path)


def _is_number_like(x: Any) -> bool:
    """A number or an array (any array type: NumPy's, a traced value of an outer transform)."""
    kind = type(x)
    if issubclass(kind, (bool, np.bool_)):
        return False
    return issubclass(kind, (np.ndarray, np.generic, int, float, complex)) or (
        hasattr(x, "shape") and hasattr(x, "dtype") and not is_structure(x))


def _shape(x: Any) -> tuple:
    return tuple(x.shape) if hasattr(x, "shape") else ()


def _is_complex(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype.kind == "c" if dtype is not None else issubclass(type(x), complex)


def check_tangent(primal: Any, tangent: Any, where: str, primal_name: str = "the primal") -> None:
    """Raise ``ValueError`` (or ``TypeError`` for a tangent of another kind) if ``tangent``
    does not fit ``primal``; ``where`` names the transform and the argument
    (``"jvp: tangents[0]"``), ``primal_name`` what the tangent belongs to (``"the output"``)."""
    stack = [((), primal, tangent)]
    on_path: set = set()
    while stack:
        path, x, t = stack.pop()
        if issubclass(type(t), (AbstractZero, AbstractThunk)) or t is None and not \
                _is_number_like(x):
            continue
        if is_structure(x):
            if id(x) in on_path:
                continue  # a cycle: checked where it was first reached
            on_path.add(id(x))
            stack.extend((path + (key,), value, part)
                         for key, value, part in _matching_fields(x, t, where, path, primal_name))
            continue
        if _is_number_like(x):
            _check_leaf(x, t, where, path, primal_name)


def _matching_fields(x: Any, t: Any, where: str, path: tuple, primal_name: str) -> list:
    """``(key, primal field, tangent field)`` for each field the structural tangent ``t`` of
    ``x`` holds; an error for a field ``x`` does not have or a tangent of another kind."""
    primal_fields = fields(x)
    if isinstance(t, Tangent):
        parts = dict(t.items())
    elif isinstance(t, dict) and isinstance(x, dict):
        parts = dict(t)
    elif isinstance(t, (list, tuple)) and isinstance(x, (list, tuple)):
        if len(t) != len(x):
            raise ValueError(
                f"{_where(where, path)} has {len(t)} element(s); {primal_name}, a "
                f"{type(x).__name__}, has {len(x)}. Give one tangent per element (zeros where "
                f"there is none).")
        parts = dict(zip(primal_fields, t))
    else:
        raise TypeError(
            f"{_where(where, path)} is a {type(t).__name__}; {primal_name} is a "
            f"{type(x).__name__}, whose tangent is a {_tangent_kinds(x)}.")
    for key in parts:
        if key not in primal_fields:
            names = list(primal_fields)
            noun = "keys" if isinstance(x, dict) else "fields"
            raise ValueError(f"{_where(where, path + (key,))} has no primal; {primal_name}'s "
                             f"{noun} are {names}")
    return [(key, primal_fields[key], part) for key, part in parts.items()]


def _tangent_kinds(x: Any) -> str:
    if isinstance(x, dict):
        return "dict with the same keys (or a Tangent)"
    if isinstance(x, (list, tuple)):
        return f"{type(x).__name__} of the same length (or a Tangent)"
    return f"Tangent of its fields ({', '.join(map(str, fields(x)))})"


def _check_leaf(x: Any, t: Any, where: str, path: tuple, primal_name: str) -> None:
    """A tangent of a number or an array: a number or an array of its shape, real if it is."""
    if is_structure(t) or not _is_number_like(t):
        raise TypeError(f"{_where(where, path)} is a {type(t).__name__}; {primal_name} is "
                        f"{_describe(x)}, whose tangent is a number or an array of its shape.")
    x_shape, t_shape = _shape(x), _shape(t)
    if x_shape != t_shape:
        raise ValueError(f"{_where(where, path)} has shape {t_shape}; {primal_name}'s shape is "
                         f"{x_shape}. Give a tangent of that shape.")
    if _is_complex(t) and not _is_complex(x):
        raise ValueError(f"{_where(where, path)} is complex; {primal_name} "
                         f"is real ({_describe(x)}), whose tangents are real. Give the real "
                         f"part, or make {primal_name} complex.")


def _describe(x: Any) -> str:
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"an array of shape {tuple(x.shape)} and dtype {x.dtype}"
    return f"a {type(x).__name__}"
