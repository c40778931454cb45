"""Rules for NumPy's modified Bessel function ``np.i0`` and the Kaiser window built on it.

``d I0(x) / dx = I1(x)``, which NumPy does not have. It is computed here from its integral
``I1(x) = (1/pi) int_0^pi exp(x cos t) cos t dt`` by the trapezoid rule: for a periodic
analytic integrand the rule's error is the aliased Fourier coefficients, ``I_{M-1}(x) +
I_{M+1}(x)`` for ``M`` points on the period, below ``exp(-M^2 / 2|x|)`` relative to ``I1``;
256 points make it rounding wherever ``np.i0(x)`` is finite (``|x| < 709.8``). ``expm1``
keeps small ``x`` (``I1(x) ~ x / 2``) accurate, without an underflow. It is made of NumPy
operations, so its own derivative (``I0(x) - I1(x) / x``) traces: order 2 works.

- ``i0(x)``: ``dx = I1(x) dy`` (real input only, as NumPy).
- ``kaiser(M, beta)``: ``w_n = I0(beta r_n) / I0(beta)``, ``r_n = sqrt(1 - ((n - a) / a)^2)``,
  ``a = (M - 1) / 2``; ``dw_n / dbeta = (r_n I1(beta r_n) - w_n I1(beta)) / I0(beta)``.

>>> import chainrules as cr
>>> round(float(cr.grad(np.i0)(1.0)), 12)  # I1(1)
0.565159103992
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..define import Call, define

__all__: list[str] = []

_POINTS = 256  # on the whole period; by symmetry the rule reads half of them
_ANGLES = np.cos(np.linspace(0.0, np.pi, _POINTS // 2 + 1))
_WEIGHTS = np.full(_POINTS // 2 + 1, 2.0 / _POINTS)
_WEIGHTS[[0, -1]] = 1.0 / _POINTS
_CHUNK = 4096  # elements per block: a block's table is _CHUNK x 129 numbers


def bessel_i1(x: Any) -> Any:
    """The modified Bessel function of the first kind of order 1, ``I1(x)``, elementwise
    (the derivative of ``np.i0``), by the trapezoid rule on its integral (see the module).

    >>> round(float(bessel_i1(2.0)), 12)
    1.590636854637
    """
    x = np.asarray(x, dtype=np.result_type(x, 1.0))
    flat = np.reshape(x, (-1,))
    blocks = [_i1_block(flat[start:start + _CHUNK])
              for start in range(0, max(np.shape(flat)[0], 1), _CHUNK)]
    values = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
    return np.reshape(values, np.shape(x))


def _i1_block(x: Any) -> Any:
    """I1 of a block of values. Below ``|x| = 1e-150``, where ``x cos t`` would underflow, it
    is ``x / 2`` (to rounding); up to where ``np.i0`` overflows (709.8), so does nothing."""
    tiny = np.abs(x) < 1e-150
    values = (np.expm1(np.expand_dims(np.where(tiny, 1.0, x), -1) * _ANGLES) * _ANGLES
              ) @ _WEIGHTS  # the mean of cos t is 0
    return np.where(tiny, x / 2, values)


def _kaiser_parts(call: Call) -> tuple:
    """``(r, I0(beta r), I0(beta))`` of the window's samples."""
    count, beta = int(call.args[0]), call.args[1]
    if count == 1:
        r = np.ones(1)
    else:
        half = (count - 1) / 2.0
        r = np.sqrt(1 - ((np.arange(count) - half) / half) ** 2)
    return r, np.i0(beta * r), np.i0(beta)


def _kaiser_slope(call: Call) -> Any:
    r, top, bottom = call.memo(_kaiser_parts)
    beta = call.args[1]
    return (r * bessel_i1(beta * r) - top / bottom * bessel_i1(beta)) / bottom


define(np.i0, lambda call, dy: bessel_i1(call.args[0]) * dy,
       pushforward=lambda call, dx: bessel_i1(call.args[0]) * dx)
define(np.kaiser, None, lambda call, dy: np.sum(_kaiser_slope(call) * dy),
       pushforward=lambda call, dcount, dbeta: _kaiser_slope(call) * dbeta)
