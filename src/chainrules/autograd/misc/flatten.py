"""autograd's ``misc.flatten``: `chainrules.flatten`, and ``flatten_func``.

>>> import numpy as np
>>> f, unflatten, x = flatten_func(lambda p: {"y": p["a"] * 2}, {"a": np.ones(2)})
>>> f(x)
array([2., 2.])
"""

from __future__ import annotations

from typing import Any, Callable

from ...core.trees import flatten

__all__ = ["flatten", "flatten_func"]


def flatten_func(func: Callable, example: Any) -> tuple[Callable, Callable, Any]:
    """``(flat_func, unflatten, flat_example)``: ``flat_func(v, *args)`` is
    ``func(unflatten(v), *args)`` flattened, a function of vectors (traceable).

    >>> f, unflatten, x = flatten_func(lambda p: p[0] * p[1], [2.0, 3.0])
    >>> f(x)
    array([6.])
    """
    flat_example, unflatten = flatten(example)

    def flat_func(vector: Any, *args: Any) -> Any:
        return flatten(func(unflatten(vector), *args))[0]
    return flat_func, unflatten, flat_example
