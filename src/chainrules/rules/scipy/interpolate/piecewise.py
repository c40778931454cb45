"""SciPy's piecewise polynomials written in NumPy operations, for an engine to trace when their
coefficients hold traced values: a ``PPoly`` evaluated at points (`ppoly_values`: the
polynomial of each point's interval, by Horner's rule; SciPy evaluates in compiled code), and
the derivative estimates of ``PchipInterpolator`` (`pchip_derivatives`: SciPy's, which write
into an array it makes). ``CubicHermiteSpline(x, y, dydx)`` builds its coefficients from
``y`` and ``dydx`` with NumPy operations already, so with these ``PchipInterpolator`` and
``CubicHermiteSpline`` are differentiable in their data values (and derivatives), at every
order.

>>> import numpy as np
>>> c = np.array([[1.0, 2.0], [0.0, 1.0]])  # x on [0, 1], 2 (x - 1) + 1 on [1, 2]
>>> ppoly_values(c, np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.5])).tolist()
[0.5, 2.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ppoly_values", "pchip_derivatives"]


def ppoly_values(c: Any, x: Any, points: Any, nu: int = 0, extrapolate: Any = True,
                 axis: int = 0) -> Any:
    """``PPoly(c, x, extrapolate, axis)(points, nu)``, as SciPy computes it: the interval
    ``x[i] <= point < x[i + 1]`` (the last one closed; the end ones beyond the ends when
    extrapolating, ``NaN`` otherwise; ``'periodic'`` maps the points into ``[x[0], x[-1]]``),
    ``sum_m c[m, i] (point - x[i])^(k - m)`` and its derivative of order ``nu``.

    >>> ppoly_values(np.array([[1.0], [0.0], [0.0]]), np.array([0.0, 2.0]), 3.0, nu=1).item()
    6.0
    """
    if nu < 0:
        raise NotImplementedError(
            "PPoly: a negative nu (an antiderivative) of an interpolant built on traced "
            "values is not supported in differentiated code; differentiate its values.")
    nodes = np.asarray(x)
    if np.any(np.diff(nodes) < 0):
        raise NotImplementedError(
            "PPoly: decreasing breakpoints with traced coefficients are not supported in "
            "differentiated code; build the interpolant on increasing nodes.")
    points = np.asarray(points)
    shape, ndim = np.shape(points), np.ndim(points)
    points = np.reshape(points, (-1,))
    if extrapolate == "periodic":
        points = nodes[0] + np.mod(points - nodes[0], nodes[-1] - nodes[0])
        extrapolate = False
    intervals = np.shape(c)[1]
    index = np.clip(np.searchsorted(nodes, points, side="right") - 1, 0, intervals - 1)
    coefficients = c
    for _ in range(nu):  # d/dx sum_m c[m] dx^(k - m): the powers shift down
        degree = np.shape(coefficients)[0] - 1
        if degree == 0:
            coefficients = 0 * coefficients
            break
        powers = np.arange(degree, 0, -1).reshape((-1,) + (1,) * (np.ndim(c) - 1))
        coefficients = coefficients[:-1] * powers
    trailing = np.shape(c)[2:]
    offset = np.reshape(points - nodes[index], (-1,) + (1,) * len(trailing))
    gathered = coefficients[:, index]  # (degree + 1, points, *trailing)
    value = gathered[0]
    for term in range(1, np.shape(gathered)[0]):
        value = value * offset + gathered[term]
    if not extrapolate:
        inside = np.reshape((points >= nodes[0]) & (points <= nodes[-1]),
                            (-1,) + (1,) * len(trailing))
        value = np.where(inside, value, np.nan)
    value = np.reshape(value, shape + trailing)
    if axis:  # SciPy's order: the points' axes at the interpolation axis
        order = list(range(np.ndim(value)))
        order = order[ndim:ndim + axis] + order[:ndim] + order[ndim + axis:]
        value = np.transpose(value, order)
    return value


def _edge(h0: Any, h1: Any, m0: Any, m1: Any) -> Any:
    """SciPy's one-sided three-point estimate at an end, kept monotone."""
    d = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1)
    wrong_sign = np.sign(d) != np.sign(m0)
    overshoot = (np.sign(m0) != np.sign(m1)) & (np.abs(d) > 3.0 * np.abs(m0))
    return np.where(wrong_sign, 0.0, np.where(overshoot, 3.0 * m0, d))


def pchip_derivatives(x: Any, y: Any, xp: Any = None) -> Any:
    """``PchipInterpolator._find_derivatives(x, y)``: at each interior node the weighted
    harmonic mean of the neighbouring slopes (0 where they differ in sign or one is 0), at the
    ends SciPy's monotone three-point estimate.

    >>> pchip_derivatives(np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 4.0])).tolist()
    [0.0, 1.5, 4.0]
    >>> from scipy.interpolate import PchipInterpolator  # SciPy's own, on the same data
    >>> PchipInterpolator([0.0, 1.0, 2.0], [0.0, 1.0, 4.0])([0, 1, 2], 1).tolist()
    [0.0, 1.5, 4.0]
    """
    shape = np.shape(y)
    if np.ndim(y) == 1:
        x, y = np.reshape(x, (-1, 1)), np.reshape(y, (-1, 1))
    h = x[1:] - x[:-1]
    m = (y[1:] - y[:-1]) / h
    if np.shape(y)[0] == 2:
        return np.reshape(np.concatenate([m, m]), shape)
    sign = np.sign(m)
    flat = (sign[1:] != sign[:-1]) | (m[1:] == 0) | (m[:-1] == 0)
    w1, w2 = 2 * h[1:] + h[:-1], h[1:] + 2 * h[:-1]
    safe_left = np.where(flat, 1.0, m[:-1])  # 0 where the slopes meet a zero: not divided
    safe_right = np.where(flat, 1.0, m[1:])
    interior = np.where(flat, 0.0, (w1 + w2) / (w1 / safe_left + w2 / safe_right))
    first = _edge(h[0], h[1], m[0], m[1])
    last = _edge(h[-1], h[-2], m[-1], m[-2])
    derivatives = np.concatenate([first[None], interior, last[None]])
    return np.reshape(derivatives, shape)
