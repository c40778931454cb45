"""``scipy.fft``'s transforms written with functions that have rules, for engines to trace.

SciPy computes them in compiled code (uarray multimethods over pocketfft), which cannot take
traced values. While a trace runs, a call of one with traced arguments runs the version here
(``TRACED_PATHS`` in `chainrules.ad.dispatch.routes`):

- the Fourier transforms (``fft``, ``ifft``, ``rfft``, ``irfft``, ``hfft``, ``ihfft`` and their
  2-D and n-D forms, ``fftshift``, ``ifftshift``) are NumPy's, whose rules are in
  `chainrules.rules.numpy.fft`, with SciPy's arguments; single precision stays single, as in
  SciPy (NumPy 1.26 computes in double);
- the cosine and sine transforms (``dct``, ``idct``, ``dst``, ``idst`` and their n-D forms),
  linear maps, are products with their matrices, which SciPy itself computes (the transform of
  each unit vector): O(n^2) per transformed line rather than SciPy's O(n log n), exact.

``overwrite_x``, ``workers`` and ``plan`` change only how SciPy computes and are ignored.

>>> import numpy as np, scipy.fft
>>> x = np.array([1.0, 2.0, 0.5, -1.0])
>>> bool(np.allclose(dct(x, norm="ortho"), scipy.fft.dct(x, norm="ortho")))
True
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "fftshift", "ifftshift", "dct", "idct", "dst",
           "idst", "dctn", "idctn", "dstn", "idstn"]

# (by name: while a trace runs, np.float32 is the numpy module's cast of traced values)
_SINGLE = {np.dtype("float32"): "complex64", np.dtype("complex64"): "complex64"}


def _dtype(x: Any) -> np.dtype:
    """The dtype of an array, traced or not (np.result_type would dispatch on a traced one)."""
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.result_type(x)


def _kept_precision(x: Any, y: Any) -> Any:
    """``y`` in single precision when ``x`` is (SciPy keeps it; NumPy 1.26 does not)."""
    single = _SINGLE.get(_dtype(x))
    if single is None or _dtype(y) in _SINGLE:
        return y
    return y.astype("float32" if _dtype(y).kind == "f" else single)


def _one_axis(name: str) -> Any:
    def transform(x: Any, n: Any = None, axis: int = -1, norm: Any = None,
                  overwrite_x: bool = False, workers: Any = None, *, plan: Any = None) -> Any:
        return _kept_precision(x, getattr(np.fft, name)(x, n, axis, norm))

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"``scipy.fft.{name}``, through ``numpy.fft.{name}``."
    return transform


def _several_axes(name: str, axes_default: Any) -> Any:
    def transform(x: Any, s: Any = None, axes: Any = axes_default, norm: Any = None,
                  overwrite_x: bool = False, workers: Any = None, *, plan: Any = None) -> Any:
        return _kept_precision(x, getattr(np.fft, name)(x, s, axes, norm))

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"``scipy.fft.{name}``, through ``numpy.fft.{name}``."
    return transform


fft, ifft, rfft, irfft, hfft, ihfft = (_one_axis(name) for name in (
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft"))
fft2, ifft2, rfft2, irfft2 = (_several_axes(name, (-2, -1)) for name in (
    "fft2", "ifft2", "rfft2", "irfft2"))
fftn, ifftn, rfftn, irfftn = (_several_axes(name, None) for name in (
    "fftn", "ifftn", "rfftn", "irfftn"))


def fftshift(x: Any, axes: Any = None) -> Any:
    """``scipy.fft.fftshift``."""
    return np.fft.fftshift(x, axes)


def ifftshift(x: Any, axes: Any = None) -> Any:
    """``scipy.fft.ifftshift``."""
    return np.fft.ifftshift(x, axes)


def _resized(x: Any, n: Any, axis: int) -> Any:
    """``x`` cut or padded with zeros to ``n`` along ``axis``, as SciPy does for ``n=``."""
    size = np.shape(x)[axis]
    if n is None or n == size:
        return x
    if n < size:
        return np.take(x, np.arange(n), axis=axis)
    padding = [(0, 0)] * np.ndim(x)
    padding[axis] = (0, n - size)
    return np.pad(x, padding)


def _real_transform(name: str) -> Any:
    def transform(x: Any, type: int = 2, n: Any = None, axis: int = -1, norm: Any = None,
                  overwrite_x: bool = False, workers: Any = None,
                  orthogonalize: Any = None) -> Any:
        x = _resized(x, n, axis)
        size = np.shape(x)[axis]
        single = _dtype(x) in _SINGLE
        matrix = _matrix(name, type, size, norm, orthogonalize, single)
        lines = np.moveaxis(x, axis, 0)
        return np.moveaxis(np.tensordot(matrix, lines, axes=1), 0, axis)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"``scipy.fft.{name}``: the product with its matrix along ``axis``."
    return transform


@functools.lru_cache(maxsize=64)
def _matrix(name: str, type: int, size: int, norm: Any, orthogonalize: Any,
            single: bool) -> np.ndarray:
    """The matrix of SciPy's transform ``name`` on ``size`` samples: SciPy's own transform of
    each unit vector, by the multimethod where ``scipy.fft`` defines it (its module attribute
    is what a trace routes here)."""
    from scipy.fft import _realtransforms

    options = {} if orthogonalize is None else {"orthogonalize": orthogonalize}
    identity = np.diag(np.ones(size, dtype="float32" if single else "float64"))
    matrix = getattr(_realtransforms, name)(identity, type, axis=0, norm=norm, **options)
    matrix.flags.writeable = False  # shared by the calls of the cache
    return matrix


dct, idct, dst, idst = (_real_transform(name) for name in ("dct", "idct", "dst", "idst"))


def _real_transform_n(one_axis: Any, name: str) -> Any:
    def transform(x: Any, type: int = 2, s: Any = None, axes: Any = None, norm: Any = None,
                  overwrite_x: bool = False, workers: Any = None, *,
                  orthogonalize: Any = None) -> Any:
        ndim = np.ndim(x)
        if axes is None:
            axes = tuple(range(ndim)) if s is None else tuple(range(ndim - len(s), ndim))
        axes = (axes,) if np.ndim(axes) == 0 else tuple(axes)
        sizes = (None,) * len(axes) if s is None else ((s,) if np.ndim(s) == 0 else tuple(s))
        for axis, size in zip(axes, sizes):
            x = one_axis(x, type, size, axis, norm, orthogonalize=orthogonalize)
        return x

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"``scipy.fft.{name}``: the 1-D transform along each axis."
    return transform


dctn, idctn, dstn, idstn = (_real_transform_n(one, name) for one, name in (
    (dct, "dctn"), (idct, "idctn"), (dst, "dstn"), (idst, "idstn")))
