"""autograd's ``fixed_point``: iterate to a fixed point, differentiate by the implicit function
theorem.

``fixed_point(f, a, x0, distance, tol)`` iterates ``x <- f(a)(x)`` from ``x0`` until
``distance(x, x_previous) <= tol`` and returns ``x*``. Its derivative does not go through the
iterations: at ``x* = f(a)(x*)``,

    dx*/da = (I - ∂f/∂x)^{-1} ∂f/∂a,

so the pullback of a cotangent ``g`` solves the adjoint fixed point ``w = g + (∂f/∂x)^T w``
(iterated, with the same ``distance`` and ``tol``) and returns ``(∂f/∂a)^T w``. The adjoint
iteration is itself a ``fixed_point`` of traceable operations, so the gradient is
differentiable again (order 2 and up). Values captured by ``f``'s closure are differentiated
too (the rule gives ``f`` its cotangent); ``x0`` gets none (the fixed point does not depend on
where the iteration starts).

>>> import numpy as np
>>> from chainrules.autograd import grad
>>> def newton_sqrt(a):          # x -> (x + a / x) / 2 converges to sqrt(a)
...     return fixed_point(lambda a: lambda x: 0.5 * (x + a / x), a, 1.0,
...                        lambda x, y: abs(x - y), 1e-12)
>>> round(grad(newton_sqrt)(2.0), 9), round(0.5 / 2.0 ** 0.5, 9)
(0.353553391, 0.353553391)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...ad.transforms.api import primitive, vjp
from ...core.registry import rrule
from ...core.tangents import AbstractZero, ZeroTangent
from ...core.thunks import unthunk
from ...core.trees import tree_map

__all__ = ["fixed_point"]

MAX_ITERATIONS = 100_000


@primitive
def fixed_point(f: Callable, a: Any, x0: Any, distance: Callable, tol: float) -> Any:
    """The fixed point ``x* = f(a)(x*)``, iterated from ``x0`` until ``distance`` between
    successive iterates is at most ``tol`` (a `RuntimeError` after `MAX_ITERATIONS`).

    >>> x = fixed_point(lambda a: lambda x: a * x + 1.0, 0.5, 0.0, lambda x, y: abs(x - y), 1e-12)
    >>> round(x, 9)
    2.0
    """
    step = f(a)
    x, previous = step(x0), x0
    iterations = 1
    while not distance(x, previous) <= tol:
        if iterations >= MAX_ITERATIONS:
            raise RuntimeError(
                f"fixed_point: no convergence after {MAX_ITERATIONS} iterations (distance "
                f"{distance(x, previous)!r} > tol {tol!r}); check that f(a) is a contraction "
                f"near the fixed point, or loosen tol.")
        x, previous = step(x), x
        iterations += 1
    return x


def _apply(f: Callable, a: Any, x: Any) -> Any:
    return f(a)(x)


def _adjoint_step(parameters: tuple) -> Callable:
    """``w -> g + (∂f/∂x)^T w`` at the fixed point, for ``parameters = (f, a, x*, g)``."""
    f, a, x_star, g = parameters

    def step(w: Any) -> Any:
        pulled = vjp(lambda x: f(a)(x), x_star)[1](w)[0]
        return tree_map(lambda gi, pi: gi + pi, g, pulled)
    return step


@rrule.register(fixed_point)
def _fixed_point_rule(f: Callable, a: Any, x0: Any, distance: Callable, tol: float) -> tuple:
    x_star = fixed_point(f, a, x0, distance, tol)

    def pullback(dy: Any) -> tuple:
        g = unthunk(dy)
        if isinstance(g, AbstractZero):
            return (ZeroTangent(),) * 6
        zero = tree_map(lambda v: v * 0, g)
        w = fixed_point(_adjoint_step, (f, a, x_star, g), zero, distance, tol)
        _, pull = vjp(_apply, f, a, x_star)
        df, da, _ = pull(w)
        return ZeroTangent(), df, da, ZeroTangent(), ZeroTangent(), ZeroTangent()
    return x_star, pullback
