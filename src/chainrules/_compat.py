"""What differs between the supported NumPy releases (1.26 to the newest), in one place.

Each name is found by feature detection, not by version number, so a release that gains the
feature uses it as is.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

try:
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # NumPy < 2
    from numpy.core.numeric import normalize_axis_tuple  # type: ignore[no-redef]

__all__ = ["normalize_axis_tuple", "signature"]


def signature(f: Any) -> inspect.Signature:
    """``inspect.signature(f)``, also for the ufuncs and C functions (``np.dot``, ...) of NumPy
    releases that give them none: each gets the signature that newer NumPy gives it, so that
    binding a call does not depend on the release.

    >>> list(signature(np.add).parameters)[:4]
    ['x1', 'x2', 'out', 'where']
    """
    try:
        return inspect.signature(f)
    except ValueError:
        if issubclass(type(f), np.ufunc):
            return _ufunc_signature(f)
        stand_in = next((s for real, s in _STAND_INS if real is f), None)
        if stand_in is None:
            raise
    return inspect.signature(stand_in)


def _ufunc_signature(f: np.ufunc) -> inspect.Signature:
    P = inspect.Parameter
    names = ["x"] if f.nin == 1 else [f"x{i}" for i in range(1, f.nin + 1)]
    parameters = [P(name, P.POSITIONAL_ONLY) for name in names]
    parameters.append(P("out", P.POSITIONAL_OR_KEYWORD,
                        default=None if f.nout == 1 else (None,) * f.nout))
    if f.signature is None:  # elementwise
        keywords: dict[str, Any] = {"where": True}
    else:  # generalized: works on core dimensions, chosen by axes/axis
        keywords = {"axes": np._NoValue, "axis": np._NoValue, "keepdims": False}
    keywords.update(casting="same_kind", order="K", dtype=None, subok=True, signature=None)
    parameters += [P(name, P.KEYWORD_ONLY, default=value) for name, value in keywords.items()]
    return inspect.Signature(parameters)


# Stand-ins with the signatures that newer NumPy gives these C functions (only the names,
# kinds and defaults of their parameters are read).

def _array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    """np.array's parameters."""


def _asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """np.asarray's parameters."""


def _asanyarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """np.asanyarray's parameters."""


def _ascontiguousarray(a, dtype=None, *, like=None):
    """np.ascontiguousarray's parameters."""


def _asfortranarray(a, dtype=None, *, like=None):
    """np.asfortranarray's parameters."""


def _concatenate(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """np.concatenate's parameters."""


def _dot(a, b, out=None):
    """np.dot's parameters."""


def _inner(a, b, /):
    """np.inner's parameters."""


def _vdot(a, b, /):
    """np.vdot's parameters."""


def _where(condition, x=None, y=None, /):
    """np.where's parameters."""


def _empty_like(prototype, /, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """np.empty_like's parameters."""


def _result_type(*arrays_and_dtypes):
    """np.result_type's parameters."""


def _ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """np.ravel_multi_index's parameters."""


def _unravel_index(indices, shape, order="C"):
    """np.unravel_index's parameters."""


def _can_cast(from_, to, casting="safe"):
    """np.can_cast's parameters."""


def _lexsort(keys, axis=-1):
    """np.lexsort's parameters."""


def _may_share_memory(a, b, /, max_work=0):
    """np.may_share_memory's parameters."""


def _shares_memory(a, b, /, max_work=-1):
    """np.shares_memory's parameters."""


def _min_scalar_type(a, /):
    """np.min_scalar_type's parameters."""


def _packbits(a, /, axis=None, bitorder="big"):
    """np.packbits's parameters."""


def _unpackbits(a, /, axis=None, count=None, bitorder="big"):
    """np.unpackbits's parameters."""


def _bincount(x, /, weights=None, minlength=0):
    """np.bincount's parameters."""


_STAND_INS = ((np.array, _array), (np.asarray, _asarray), (np.asanyarray, _asanyarray),
              (np.ascontiguousarray, _ascontiguousarray), (np.asfortranarray, _asfortranarray),
              (np.concatenate, _concatenate),
              (np.dot, _dot), (np.inner, _inner), (np.vdot, _vdot), (np.where, _where),
              (np.empty_like, _empty_like), (np.result_type, _result_type),
              (np.ravel_multi_index, _ravel_multi_index), (np.unravel_index, _unravel_index),
              (np.can_cast, _can_cast), (np.lexsort, _lexsort),
              (np.may_share_memory, _may_share_memory), (np.shares_memory, _shares_memory),
              (np.min_scalar_type, _min_scalar_type), (np.packbits, _packbits),
              (np.unpackbits, _unpackbits), (np.bincount, _bincount))
