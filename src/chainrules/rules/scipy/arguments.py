"""How SciPy's Python-level functions read their arguments, for the rules of
`chainrules.rules.scipy`: every parameter bound by name, options refused by name, one
cotangent per positional argument.

>>> import scipy.special
>>> bind_arguments(scipy.special.logsumexp, "logsumexp", ([1.0, 2.0],), {})["axis"] is None
True
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np

from ...core.tangents import NoTangent, ZeroTangent
from ...core.thunks import unthunk

__all__ = ["bind_arguments", "conj", "no_tangents", "refuse", "refuse_overwrite_b", "tangent_of"]


@functools.lru_cache(maxsize=None)
def _signature(f: Callable) -> inspect.Signature:
    return inspect.signature(f)


def bind_arguments(f: Callable, name: str, args: tuple, kwargs: dict) -> dict:
    """Every parameter of ``f`` by name (defaults filled in), as SciPy reads the call."""
    try:
        bound = _signature(f).bind(*args, **kwargs)
    except TypeError as error:
        raise TypeError(f"{name}: {error}") from None
    bound.apply_defaults()
    return bound.arguments


def refuse(name: str, option: str, value: Any, fix: str) -> None:
    raise ValueError(f"{name}: {option}={value!r} is not supported in differentiated code; {fix}")


def refuse_overwrite_b(name: str, call: dict) -> None:
    if call["overwrite_b"]:
        refuse(name, "overwrite_b", True, "it may overwrite b in place while other "
                "differentiated operations still read it. Leave overwrite_b=False (the default).")


def no_tangents(count: int, differentiable: dict) -> list:
    """``[NoTangent() for f, then one per positional argument]``, with ``differentiable``
    (position -> cotangent) filled in."""
    tangents: list = [NoTangent()] * (count + 1)
    for position, tangent in differentiable.items():
        if position < count:
            tangents[position + 1] = tangent
    return tangents


def conj(x: Any) -> Any:
    return np.conj(x) if np.iscomplexobj(x) else x


def tangent_of(tangents: tuple, args: tuple, position: int) -> Any:
    """The input tangent of the argument at ``position`` if it was passed positionally
    (arguments passed by keyword get no tangent, as they get no cotangent)."""
    if position < len(args):
        return unthunk(tangents[position + 1])
    return ZeroTangent()
