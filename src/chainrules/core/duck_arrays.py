"""Arrays of other libraries that implement NumPy's API: Dask's, CuPy's (NEP 13 and NEP 18).

A *duck array* is a value whose type is not NumPy's but takes part in NumPy's protocols
(``__array_ufunc__`` and ``__array_function__``) and says its ``shape``, ``dtype`` and ``ndim``.
The rules are written with NumPy's functions, which such arrays implement, so a rule run on
duck arrays builds the duck library's values: on Dask arrays, lazily, a graph of chunks.

For the tangents of a duck array:

- it is a leaf of every structure (the walk never looks into its attributes), and
  differentiable when its dtype is float or complex;
- its cotangent is an array of the same library, shape and dtype, and for chunked arrays
  (Dask) the same chunks: `like` puts a cotangent there, and rechunks only a cotangent whose
  chunks differ from the primal's;
- cotangents are added by the library's own ``+``, never in place (a Dask array is a graph;
  the sum is a new graph).

A *lazy* array (a Dask collection) is computed only when asked: `compute_all` computes many
at once, in one pass over their shared graph.

>>> import numpy as np
>>> is_duck_array(np.ones(2)), is_duck_array(3.0)
(False, False)
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["is_duck_array", "is_duck_array_type", "is_lazy", "like", "compute_all",
           "exclude_type", "library_name"]

_DUCK_TYPES: dict = {}  # type -> whether it is a duck array type (decided once per type)
_EXCLUDED: set = set()  # an engine's own traced values: they are not another library's arrays
_PROTOCOL = ("__array_function__", "__array_ufunc__", "shape", "dtype", "ndim")


def exclude_type(kind: type) -> None:
    """Never treat values of ``kind`` as duck arrays (an AD engine's traced values, which
    implement NumPy's protocols to record operations, not to hold data)."""
    _EXCLUDED.add(kind)
    _DUCK_TYPES[kind] = False


def is_duck_array_type(kind: type) -> bool:
    """Whether values of ``kind`` are duck arrays.

    >>> is_duck_array_type(np.ndarray), is_duck_array_type(list)
    (False, False)
    """
    known = _DUCK_TYPES.get(kind)
    if known is None:
        known = _DUCK_TYPES[kind] = (
            kind not in _EXCLUDED and not issubclass(kind, (np.ndarray, np.generic, type))
            and all(hasattr(kind, name) for name in _PROTOCOL))
    return known


def is_duck_array(x: Any) -> bool:
    """Whether ``x`` is another library's array that implements NumPy's API.

    >>> is_duck_array(np.float64(1.0))
    False
    """
    return is_duck_array_type(type(x))


def is_lazy(x: Any) -> bool:
    """Whether ``x`` is a lazy array (a Dask collection): its values are computed only when
    asked.

    >>> is_lazy(np.ones(2))
    False
    """
    return hasattr(type(x), "__dask_graph__") and x.__dask_graph__() is not None


def library_name(x: Any) -> str:
    """The library of ``x``'s type and the type's name, for messages: ``'dask.array.Array'``.

    >>> library_name(np.ones(1))
    'numpy.ndarray'
    """
    kind = type(x)
    module = kind.__module__.split(".")[0]
    if module == "dask":
        module = "dask.array"
    return f"{module}.{kind.__name__}"


def like(value: Any, primal: Any) -> Any:
    """``value`` (a cotangent of ``primal``'s shape) as an array of ``primal``'s library, with
    ``primal``'s chunks when it has chunks: a NumPy value is converted, a value of the library
    with other chunks is rechunked, anything else is returned as it is.

    >>> like(np.ones(2), np.zeros(2))
    array([1., 1.])
    """
    if not is_duck_array(primal):
        return value
    chunks = getattr(primal, "chunks", None)
    if type(value) is not type(primal):
        if not issubclass(type(value), (np.ndarray, np.generic, int, float, complex)):
            return value  # an engine's traced value (higher order): its own operations
        value = np.asarray(value, like=primal)
        if value.shape != primal.shape:
            value = np.broadcast_to(value, primal.shape)
    if chunks is not None and getattr(value, "chunks", chunks) != chunks:
        value = value.rechunk(chunks)
    return value


def compute_all(values: Sequence) -> list:
    """The lazy ``values`` computed together, in one pass over their shared graph (the chunks
    of data that several of them read are read once); values that are not lazy are returned
    as they are.

    >>> compute_all([1.0, np.ones(1)])
    [1.0, array([1.])]
    """
    positions = [i for i, value in enumerate(values) if is_lazy(value)]
    results = list(values)
    if positions:
        import dask  # only reached with Dask values, which Dask made

        computed = dask.compute(*[values[i] for i in positions])
        for i, value in zip(positions, computed):
            results[i] = value
    return results
