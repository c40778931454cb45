"""An interpolant evaluated at points: ``evaluate(interpolant, x, nu)``, differentiable in ``x``
at every order.

``evaluate(s, x, nu)`` is ``s(x, nu)`` for SciPy's piecewise polynomials (``PPoly``, its
``CubicSpline``, ``BSpline``, ...; ``nu`` the order of the derivative) and ``s(x)`` (``nu = 0``)
or zeros (``nu > 0``) for a piecewise-constant interpolant (``interp1d`` of kind ``nearest``,
``previous``, ``next``, ``zero``). Its derivative in ``x`` is ``evaluate(s, x, nu + 1)``: the
pullback and pushforward call ``evaluate`` again, so an engine differentiates them as far as it
likes. The interpolant is a constant (its data plain): the engine differentiates in the data
values by evaluating an interpolant of the identity (chainrules.ad.dispatch.interpolants).

>>> import numpy as np, scipy.interpolate
>>> from chainrules import rrule
>>> s = scipy.interpolate.CubicSpline([0.0, 1.0, 2.0], [0.0, 1.0, 4.0])
>>> y, pullback = rrule(evaluate, Interpolant(s), np.array([0.5]))
>>> float(pullback(np.ones(1))[2][0]) == float(s(0.5, 1))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....core.projection import ProjectTo
from ....core.registry import frule, recorded_whole, rrule
from ....core.structure import register_leaf_type
from ....core.tangents import AbstractZero, NoTangent, ZeroTangent
from ....core.thunks import unthunk

__all__ = ["evaluate", "Interpolant"]


class Interpolant:
    """An interpolant as a constant: ``evaluate(Interpolant(s), x)`` differentiates in ``x``
    only. Structure walks (an engine's, the test kit's) do not look inside it, where the
    interpolant's coefficients would otherwise be taken for differentiable fields.

    >>> import scipy.interpolate
    >>> s = scipy.interpolate.CubicSpline([0.0, 1.0, 2.0], [0.0, 1.0, 4.0])
    >>> float(evaluate(Interpolant(s), 1.5))
    2.25
    """

    __slots__ = ("interpolant",)

    def __init__(self, interpolant: Any):
        self.interpolant = interpolant

    def __repr__(self) -> str:
        return f"Interpolant({type(self.interpolant).__name__})"

    def __eq__(self, other: Any) -> bool:
        """The same interpolant: the same class and equal fields (copies compare equal)."""
        if type(other) is not Interpolant:
            return NotImplemented
        mine, theirs = self.interpolant, other.interpolant
        if mine is theirs:
            return True
        if type(mine) is not type(theirs) or vars(mine).keys() != vars(theirs).keys():
            return False
        return all(np.array_equal(value, vars(theirs)[key]) if issubclass(type(value), np.ndarray)
                   else value == vars(theirs)[key] for key, value in vars(mine).items()
                   if not callable(value))

    def __hash__(self) -> int:
        return hash(type(self.interpolant))


register_leaf_type(Interpolant)


def evaluate(interpolant: Any, x: Any, nu: int = 0, extrapolate: Any = None) -> Any:
    """``interpolant(x, nu, extrapolate)``: values (``nu = 0``) or derivatives at ``x``.

    >>> import scipy.interpolate
    >>> float(evaluate(scipy.interpolate.CubicSpline([0.0, 1.0, 2.0], [0.0, 1.0, 4.0]), 1.5))
    2.25
    """
    if type(interpolant) is Interpolant:
        interpolant = interpolant.interpolant
    if hasattr(interpolant, "derivative"):  # PPoly, BSpline: derivatives of any order
        return interpolant(x, nu, extrapolate)
    values = interpolant(x)
    return values if nu == 0 else np.zeros_like(values)


recorded_whole(evaluate)  # an engine records it whole (chainrules' routes it while tracing)


def _trailing_sum(slopes: Any, dy: Any, x: Any) -> Any:
    """The cotangent of ``x``: ``slopes * dy`` summed over the output's trailing axes (the
    interpolated values' own shape)."""
    product = slopes * dy
    extra = np.ndim(product) - np.ndim(x)
    return np.sum(product, axis=tuple(range(np.ndim(x), np.ndim(product)))) if extra else \
        product


@rrule.register(evaluate)
def _evaluate_rrule(interpolant: Any, x: Any, *options: Any) -> tuple:
    y = evaluate(interpolant, x, *options)
    nu, extrapolate = (tuple(options) + (0, None))[:2] if options else (0, None)
    rest = (NoTangent(),) * len(options)

    def evaluate_pullback(dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (NoTangent(), NoTangent(), ZeroTangent()) + rest
        dy = ProjectTo(y)(dy)
        dx = _trailing_sum(evaluate(interpolant, x, nu + 1, extrapolate), dy, x)
        return (NoTangent(), NoTangent(), ProjectTo(x)(dx)) + rest

    return y, evaluate_pullback


@frule.register(evaluate)
def _evaluate_frule(tangents: tuple, interpolant: Any, x: Any, *options: Any) -> tuple:
    nu, extrapolate = (tuple(options) + (0, None))[:2]
    y = evaluate(interpolant, x, nu, extrapolate)
    dx = unthunk(tangents[2])
    if isinstance(dx, AbstractZero):
        return y, ZeroTangent()
    slopes = evaluate(interpolant, x, nu + 1, extrapolate)
    dx = np.reshape(dx, np.shape(dx) + (1,) * (np.ndim(slopes) - np.ndim(dx)))
    return y, slopes * dx
