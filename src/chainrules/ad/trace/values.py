"""What the tape records of a value, and which values are plain: shape, dtype and number kind
(a record's ``meta``), whether a value is differentiable, and whether an argument holds
traced values.

>>> import numpy as np
>>> record_meta((2,), np.dtype(np.float64), np.ndarray)
((2,), dtype('float64'), None)
>>> is_differentiable(np.float32(1.0)), is_differentiable(3)
(True, False)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.dtypes import shared_shape
from ...core.duck_arrays import is_duck_array_type
from ...core.structure import is_structure, leaves
from ...core.vector_spaces import VECTOR_SPACES
from .traced import Traced, is_constant, primal_value

__all__ = ["shape_of", "dtype_of", "record_meta", "ARRAY_METAS", "SCALAR_META", "NO_META", "FLOAT_SCALARS", "PLAIN",
           "is_differentiable", "is_traced", "is_plain_tuple", "holds_traced", "holds_variables", "is_float_leaf"]


def shape_of(x: Any) -> tuple:
    shape = getattr(x, "shape", None)
    return () if shape is None else shared_shape(shape)


def dtype_of(x: Any) -> np.dtype:
    dtype = getattr(x, "dtype", None)
    return np.dtype(type(x)) if dtype is None else dtype


FLOAT_SCALARS = frozenset({float, complex, np.float64, np.float32, np.float16, np.complex128,
                            np.complex64, np.longdouble, np.clongdouble})
SCALAR_META = {kind: ((), np.dtype(kind), kind) for kind in FLOAT_SCALARS}
NO_META = (None, None, None)  # outputs that are not checked (structures, tuples)
ARRAY_METAS: dict = {}  # (shape, dtype) -> an array's meta: record_meta's, read on hot paths


def record_meta(shape: tuple, dtype: np.dtype, kind: type) -> tuple:
    """The shared ``(shape, dtype, number)`` of an output: ``number`` is ``kind`` for a float or
    complex number, else ``None``."""
    if shape == () and kind in SCALAR_META:
        return SCALAR_META[kind]
    key = (shape, dtype)
    meta = ARRAY_METAS.get(key)
    if meta is None:
        if len(ARRAY_METAS) > 100_000:  # a bound, for programs that see endless distinct shapes
            ARRAY_METAS.clear()
        meta = ARRAY_METAS[key] = (shared_shape(shape), dtype, None)
    return meta


PLAIN = frozenset({int, float, complex, bool, str, type(None), slice, type(Ellipsis),
                    np.ndarray, np.float64, np.float32, np.int64, np.bool_, np.complex128,
                    np.int32, np.intp, np.dtype})


def is_differentiable(y: Any) -> bool:
    kind = type(y)
    if kind in FLOAT_SCALARS:
        return True
    if kind is np.ndarray:
        return y.dtype.kind in "fc"
    if kind is Traced:
        primal = primal_value(y)
        return type(primal) in VECTOR_SPACES or y.dtype.kind in "fc"
    if kind in VECTOR_SPACES:  # a type of the user's, declared its own tangent type
        return True
    if is_duck_array_type(kind):  # another library's array (Dask's, CuPy's)
        return y.dtype.kind in "fc"
    return issubclass(type(y), np.generic) and y.dtype.kind in "fc"


def is_traced(x: Any) -> bool:
    return type(x) is Traced


def is_plain_tuple(value: tuple) -> bool:
    for part in value:
        if type(part) not in PLAIN:
            return False
    return True


def holds_traced(value: Any) -> bool:
    return type(value) is Traced or (type(value) not in PLAIN and is_structure(value) and any(
        True for _ in leaves(value, is_traced)))


def holds_variables(value: Any) -> bool:
    """Whether ``value`` holds a traced value that is not a constant at every level of tracing
    (`is_constant`: an array the function made, as ``np.arange(5.0)``, is one)."""
    for leaf in leaves(value, is_traced) if type(value) is not Traced else (value,):
        while type(leaf) is Traced:
            if not is_constant(leaf):
                return True
            leaf = leaf.primal
    return False


def is_float_leaf(x: Any) -> bool:
    return is_differentiable(x)
