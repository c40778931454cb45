"""FFT rules: ``np.fft.fft``/``ifft``/``rfft``/``irfft``, their 2-d and n-d forms, the
Hermitian ``hfft``/``ihfft`` (``irfft`` of the conjugate, the conjugate of ``rfft``), and
``fftshift``/``ifftshift`` (whose adjoints are each other).

Every transform is linear, so its frule applies the transform to the tangent (the default of
`define.define`) and its rule is one formula, the adjoint:

    define(np.fft.fft, _one_dimensional("fft"))

A transform is a sequence of 1-d steps (each: cut or zero-pad an axis to ``n``, then
transform it), replayed backwards with each step's adjoint:

- ``fft`` with norm N: ``ifft`` with the dual norm (backward <-> forward, ortho <-> ortho);
  ``ifft`` likewise with ``fft``;
- ``rfft`` (real input, keeps the n//2+1 non-negative frequencies): ``irfft`` of the cotangent
  weighted by 1/2 except at frequency 0 and, for even n, n/2 (``irfft`` counts every other
  frequency twice, through its Hermitian mirror, so the weight undoes that);
- ``irfft`` (Hermitian input, real output): ``rfft`` of the cotangent weighted by 2 except at
  frequency 0 and, for even n, n/2 (each kept frequency stands for itself and its mirror);
- cutting an axis is undone by zero-padding and padding by cutting.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..define import define

_DUAL_NORM = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}
_OUTPUT_LENGTH = {"fft": lambda n: n, "ifft": lambda n: n, "rfft": lambda n: n // 2 + 1,
                  "irfft": lambda n: n}


def _steps(shape: tuple, plan: list) -> list[tuple[str, int, int, int]]:
    """``(kind, axis, n, input length)`` for each step of ``plan`` (``(kind, axis, n)``)."""
    shape = list(shape)
    steps = []
    for kind, axis, n in plan:
        axis = axis % len(shape)
        length = shape[axis]
        if n is None or n == -1:
            n = 2 * (length - 1) if kind == "irfft" and n is None else length
        steps.append((kind, axis, n, length))
        shape[axis] = _OUTPUT_LENGTH[kind](n)
    return steps


def _fit(x: np.ndarray, axis: int, length: int) -> np.ndarray:
    """``x`` cut or zero-padded along ``axis`` to ``length``."""
    current = x.shape[axis]
    if current > length:
        return x[(slice(None),) * axis + (slice(0, length),)]
    if current < length:
        padding = [(0, 0)] * x.ndim
        padding[axis] = (0, length - current)
        return np.pad(x, padding)
    return x


def _mirror_weights(n: int, axis: int, ndim: int, inside: float, edges: float) -> np.ndarray:
    """Weights along ``axis`` of the n//2+1 kept frequencies: ``edges`` at 0 (and n/2 for even
    n), ``inside`` elsewhere."""
    weights = np.full(n // 2 + 1, inside)
    weights[0] = edges
    if n % 2 == 0:
        weights[-1] = edges
    return weights.reshape([-1 if i == axis else 1 for i in range(ndim)])


def _adjoint(dy: Any, steps: list, norm: Any) -> np.ndarray:
    """The adjoint of the transform made of ``steps``, applied to ``dy``."""
    dual = _DUAL_NORM[norm]
    g = np.asarray(dy)
    for kind, axis, n, length in reversed(steps):
        if kind == "fft":
            g = np.fft.ifft(g, axis=axis, norm=dual)
        elif kind == "ifft":
            g = np.fft.fft(g, axis=axis, norm=dual)
        elif kind == "rfft":
            g = np.fft.irfft(g * _mirror_weights(n, axis, g.ndim, 0.5, 1.0), n=n, axis=axis,
                             norm=dual)
        else:
            g = np.fft.rfft(np.real(g), axis=axis, norm=dual) * _mirror_weights(
                n, axis, g.ndim, 2.0, 1.0)
        g = _fit(g, axis, length)
    return g


def _cook(shape: tuple, s: Any, axes: Any, inverse_real: bool) -> tuple[list, list]:
    """``s`` and ``axes`` of an n-d transform made explicit, as NumPy reads them."""
    if s is None:
        s = [shape[axis] for axis in axes] if axes is not None else list(shape)
        if inverse_real:
            s[-1] = None  # irfft's default length, 2 * (input length - 1)
    s = list(s)
    axes = list(range(-len(s), 0)) if axes is None else list(axes)
    return s, axes


def _plan_nd(kind: str, shape: tuple, s: Any, axes: Any) -> list:
    """The 1-d steps of an n-d transform, in the order NumPy applies them."""
    s, axes = _cook(shape, s, axes, kind == "irfft")
    if kind == "rfft":
        return [("rfft", axes[-1], s[-1])] + [("fft", axes[i], s[i])
                                              for i in range(len(axes) - 2, -1, -1)]
    if kind == "irfft":
        return [("ifft", axes[i], s[i]) for i in range(len(axes) - 1)] + [
            ("irfft", axes[-1], s[-1])]
    return [(kind, axes[i], s[i]) for i in reversed(range(len(axes)))]


def _one_dimensional(kind: str):
    def cotangent(call, dy):
        return _adjoint(dy, _steps(call.shape, [(kind, call["axis"], call["n"])]), call["norm"])
    return cotangent


def _n_dimensional(kind: str):
    def cotangent(call, dy):
        plan = _plan_nd(kind, call.shape, call["s"], call["axes"])
        return _adjoint(dy, _steps(call.shape, plan), call["norm"])
    return cotangent


# --- the table: each transform, linear in its first argument ---------------------------------

for _kind in ("fft", "ifft", "rfft", "irfft"):
    define(getattr(np.fft, _kind), _one_dimensional(_kind))
    define(getattr(np.fft, _kind + "2"), _n_dimensional(_kind))
    define(getattr(np.fft, _kind + "n"), _n_dimensional(_kind))


# hfft(a) = irfft(conj(a)) and ihfft(a) = conj(rfft(a)), each with the dual norm: their
# adjoints conjugate around irfft's and rfft's.
define(np.fft.hfft, lambda call, dy: np.conj(_adjoint(dy, _steps(
    call.shape, [("irfft", call["axis"], call["n"])]), _DUAL_NORM[call["norm"]])))
define(np.fft.ihfft, lambda call, dy: _adjoint(np.conj(dy), _steps(
    call.shape, [("rfft", call["axis"], call["n"])]), _DUAL_NORM[call["norm"]]))


# --- shifts: permutations of the frequencies, each the other's inverse --------------------------

define(np.fft.fftshift, lambda call, dy: np.fft.ifftshift(dy, call["axes"]))
define(np.fft.ifftshift, lambda call, dy: np.fft.fftshift(dy, call["axes"]))
