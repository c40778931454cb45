"""Nested parameters as one vector, and functions mapped over their leaves.

``flatten(value)`` turns any structure that ``grad`` takes (dicts, lists, tuples, namedtuples,
dataclasses, objects, closures) into one 1-d array of its *differentiable leaves* (float and
complex numbers and arrays) and a function ``unflatten`` that builds the structure back from
such a vector; ``tree_map(f, tree, *rest)`` applies ``f`` to those leaves (and to the values
at the same paths of ``rest``, which may be gradients: `Tangent` objects, dicts, lists...).
Integers, bools, strings and ``None`` are not leaves: they are kept as they are.

Both are traceable: ``unflatten`` of a traced vector builds a structure of traced values, so
``grad(lambda v: loss(unflatten(v)))`` is the gradient as one vector, which is what
``scipy.optimize.minimize(jac=True)`` wants:

>>> import numpy as np
>>> params = {"w": np.array([1.0, 2.0]), "b": 0.5, "layers": 3}
>>> vector, unflatten = flatten(params)
>>> vector
array([1. , 2. , 0.5])
>>> unflatten(vector * 2)
{'w': array([2., 4.]), 'b': 1.0, 'layers': 3}
>>> tree_map(lambda p, g: p - 0.1 * g, params, {"w": np.ones(2), "b": 1.0})
{'w': array([0.9, 1.9]), 'b': 0.4, 'layers': 3}

The walk is `chainrules.core.structure`'s (the same paths as ``grad``'s gradients).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .structure import leaves, replace_paths, tangent_at
from .tangents import AbstractZero
from .thunks import unthunk

__all__ = ["flatten", "tree_map", "is_differentiable_leaf", "vector_of"]


def is_differentiable_leaf(x: Any) -> bool:
    """Whether ``x`` is a leaf that `flatten` puts in its vector: a float or complex number
    or array (a traced one too).

    >>> is_differentiable_leaf(1.0), is_differentiable_leaf(np.ones(2)), is_differentiable_leaf(1)
    (True, True, False)
    """
    if issubclass(type(x), (bool, int, str, bytes)) or x is None:
        return False
    if issubclass(type(x), (float, complex)):
        return True
    dtype = getattr(x, "dtype", None)
    return issubclass(type(dtype), np.dtype) and dtype.kind in "fc" and hasattr(x, "shape")


class _Layout:
    """Where each differentiable leaf of a structure sits in the flat vector."""

    def __init__(self, example: Any):
        self.example = example
        self.paths: list[tuple] = []
        self.shapes: list[tuple] = []
        self.kinds: list[Any] = []  # float, complex, a NumPy scalar type, or a dtype (arrays)
        self.starts: list[int] = []
        size = 0
        for path, leaf in leaves(example, is_differentiable_leaf):
            shape = tuple(np.shape(leaf))
            self.paths.append(path)
            self.shapes.append(shape)
            self.kinds.append(type(leaf) if issubclass(type(leaf), (float, complex, np.generic))
                              else leaf.dtype)
            self.starts.append(size)
            size += int(np.prod(shape, dtype=np.int64))
        self.size = size

    def pieces(self, values: list) -> Any:
        """The flat vector of ``values`` (one per leaf, in order); traceable."""
        if not values:
            return np.zeros(0)
        if all(issubclass(type(v), (float, complex, np.ndarray, np.generic)) for v in values):
            return np.concatenate([np.ravel(v) for v in values])
        return np.concatenate([np.reshape(v, (-1,)) for v in values])

    def unflatten(self, vector: Any) -> Any:
        if np.ndim(vector) != 1 or np.shape(vector)[0] != self.size:
            raise ValueError(
                f"unflatten: expected a 1-d vector of {self.size} elements (the size of the "
                f"flattened structure), got shape {np.shape(vector)}.")
        plain = issubclass(type(vector), np.ndarray)
        values = {}
        for path, shape, kind, start in zip(self.paths, self.shapes, self.kinds, self.starts):
            piece = vector[start:start + int(np.prod(shape, dtype=np.int64))]
            values[path] = _restore(piece, shape, kind, plain)
        return replace_paths(self.example, values)


def _restore(piece: Any, shape: tuple, kind: Any, plain: bool) -> Any:
    """A leaf of ``shape`` and ``kind`` from its part of the vector (kept traced if traced)."""
    is_complex = np.dtype(kind).kind == "c"
    if plain and not is_complex and piece.dtype.kind == "c":
        piece = piece.real  # a real leaf's part of a complex vector
    if issubclass(type(kind), np.dtype):
        value = np.reshape(piece, shape)
        return value.astype(kind, copy=False) if plain else value
    if not plain:
        return np.reshape(piece, ())
    return kind(piece[0])


def flatten(value: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(vector, unflatten)``: the differentiable leaves of ``value`` as one 1-d array, and
    the function that builds a structure like ``value`` from such a vector.

    Leaves are taken in the order of ``grad``'s structure walk (dicts in insertion order);
    the vector has the common dtype of the leaves (float64 for Python floats; complex if any
    leaf is). ``unflatten`` gives every leaf back its shape and its type (a Python float stays
    a float, float32 stays float32, a real leaf takes the real part of a complex vector), and
    keeps every other field of ``value`` (ints, strings, ``None``) as it was. Both directions
    are traceable, so the gradient of ``lambda v: loss(unflatten(v))`` is a flat vector.
    ``unflatten.vector_of(g)`` flattens a gradient ``g`` of ``value`` as ``grad`` returns it
    (a `Tangent` for a dataclass, zeros where it has no field) in the same order.

    >>> import numpy as np
    >>> v, unflatten = flatten([np.ones((2, 2)), (3.0, "tag")])
    >>> v
    array([1., 1., 1., 1., 3.])
    >>> unflatten(np.arange(5.0))
    [array([[0., 1.],
           [2., 3.]]), (4.0, 'tag')]
    >>> from chainrules import Tangent
    >>> unflatten.vector_of([np.ones((2, 2)), Tangent(tuple, {0: 5.0})])
    array([1., 1., 1., 1., 5.])
    """
    layout = _Layout(value)
    vector = layout.pieces([leaf for _, leaf in leaves(value, is_differentiable_leaf)])

    def unflatten(vector: Any) -> Any:
        return layout.unflatten(vector)

    unflatten.__doc__ = (f"A structure like the flattened one from a vector of "
                         f"{layout.size} elements.")
    unflatten.vector_of = lambda tangent: vector_of(tangent, layout)  # type: ignore[attr-defined]
    return vector, unflatten


def vector_of(tangent: Any, layout: _Layout) -> Any:
    """The flat vector of a tangent (a gradient) of the flattened structure, read by path:
    `Tangent`s, dicts, lists, and zeros (missing fields, `ZeroTangent`) are all accepted."""
    values = []
    for path, shape, kind in zip(layout.paths, layout.shapes, layout.kinds):
        part = unthunk(tangent_at(tangent, path))
        if isinstance(part, AbstractZero):
            part = np.zeros(shape, kind if issubclass(type(kind), np.dtype) else np.dtype(kind))
        values.append(part)
    return layout.pieces(values)


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """``tree`` with every differentiable leaf ``x`` replaced by ``f(x, *others)``, where
    ``others`` are the values at the same path in each of ``rest`` (zeros where a tangent
    in ``rest`` has none). Other fields are kept; ``tree`` itself is not modified (dataclasses
    and objects are copied, frozen ones too).

    ``rest`` may hold gradients of ``tree``: a training step is one line for any model.

    >>> import numpy as np
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Model:
    ...     w: np.ndarray
    ...     name: str
    >>> m = tree_map(lambda w: w * 2, Model(np.ones(2), "m"))
    >>> m
    Model(w=array([2., 2.]), name='m')
    """
    found = list(leaves(tree, is_differentiable_leaf))
    if not found:
        return tree
    values = {}
    for path, leaf in found:
        others = []
        for other in rest:
            part = unthunk(tangent_at(other, path))
            if isinstance(part, AbstractZero):
                part = np.zeros_like(leaf) if issubclass(type(leaf), np.ndarray) else type(leaf)(0)
            others.append(part)
        values[path] = f(leaf, *others)
    return replace_paths(tree, values)
