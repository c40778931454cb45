"""autograd's ``misc.flatten`` and ``flatten_func``: `chainrules.flatten`, with the entries of
dicts taken in sorted key order, as autograd takes them (so a flat parameter vector is laid out
as autograd lays it out).

>>> import numpy as np
>>> f, unflatten, x = flatten_func(lambda p: {"y": p["a"] * 2}, {"a": np.ones(2)})
>>> f(x)
array([2., 2.])
>>> flatten({"b": 1.0, "a": np.array([2.0, 3.0])})[0]
array([2., 3., 1.])
"""

from __future__ import annotations

from typing import Any, Callable

from ...core.trees import flatten as _insertion_order_flatten

__all__ = ["flatten", "flatten_func"]


def _sorted_dicts(value: Any) -> Any:
    """``value`` with the entries of every dict (in lists, tuples and dicts, the containers
    autograd's flatten looks into) in sorted key order."""
    kind = type(value)
    if kind is dict:
        return {key: _sorted_dicts(value[key]) for key in sorted(value)}
    if kind in (list, tuple):
        return kind(_sorted_dicts(item) for item in value)
    return value


def flatten(value: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(vector, unflatten)`` as autograd's ``flatten``: the leaves of ``value`` as one 1-d
    array, dict entries in sorted key order; ``unflatten`` builds the structure back (its
    dicts in that order).

    >>> v, unflatten = flatten({"w": [1.0, 2.0], "b": 0.5})
    >>> v, unflatten(v)
    (array([0.5, 1. , 2. ]), {'b': 0.5, 'w': [1.0, 2.0]})
    """
    return _insertion_order_flatten(_sorted_dicts(value))


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
