"""scalar_rule: an elementwise rule (rrule and frule) from its partial derivatives, in one line.

``scalar_rule(np.sin, lambda y, x: np.cos(x))`` registers both rules for ``np.sin``. Each
partial is a function of the output and the arguments; ``None`` marks an argument that is not
differentiable. Broadcasting, complex numbers and projection are handled here, once:

- reverse: ``cotangent_i = project_i(unbroadcast(conj(partial_i) * dy))``;
- forward: ``dy = project_y(sum_i partial_i * dx_i)``.

That is the convention under which ``grad(abs2)(3+4j) == 6+8j`` (the gradient of a real loss
is ``dL/dRe(z) + i dL/dIm(z)``).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .accumulate import accumulate
from .broadcast import unbroadcast
from .config import _name
from .projection import NO_TANGENT_PROJECTOR, ProjectTo
from .registry import frule, rrule
from .tangents import AbstractZero, NoTangent, ZeroTangent
from .thunks import Thunk, unthunk

__all__ = ["scalar_rule"]

Partial = Callable[..., Any] | None

_REFUSED_KEYWORDS = ("out", "where")


def _conj(value: Any) -> Any:
    return np.conj(value) if np.iscomplexobj(value) else value


def _check_keywords(f: Any, kwargs: dict) -> None:
    for keyword in _REFUSED_KEYWORDS:
        if keyword in kwargs:
            raise TypeError(
                f"{_name(f)}: the {keyword}= argument is not supported in differentiated code. "
                f"Compute the result without {keyword}= (for where=, use np.where on the "
                f"result).")


def _argument_cotangent(project: ProjectTo, arg: Any, partial: Callable, y: Any, args: tuple,
                        dy: Any) -> Any:
    return project(unbroadcast(_conj(partial(y, *args)) * dy, np.shape(arg)))


def scalar_rule(f: Any, *partials: Partial) -> None:
    """Register the rrule and frule of the elementwise function ``f`` from its partials.

    >>> import numpy as np
    >>> def cube(x):
    ...     return x ** 3
    >>> scalar_rule(cube, lambda y, x: 3 * x ** 2)
    >>> y, pullback = rrule(cube, np.float32(2.0))
    >>> pullback(1.0)          # float32 primal, float32 cotangent
    (NoTangent(), np.float32(12.0))
    >>> frule((NoTangent(), 1.0), cube, 2.0)
    (8.0, 12.0)
    """
    count = len(partials)
    name = _name(f)

    def reverse(*args: Any, **kwargs: Any):
        if len(args) != count:
            raise TypeError(f"{name} takes {count} differentiable argument(s), got {len(args)}")
        _check_keywords(f, kwargs)
        y = f(*args, **kwargs)

        def pullback(dy: Any) -> tuple:
            dy = unthunk(dy)
            cotangents: list[Any] = [NoTangent()]
            for arg, partial in zip(args, partials):
                project = ProjectTo(arg)
                if partial is None or project is NO_TANGENT_PROJECTOR:
                    cotangents.append(NoTangent())
                elif isinstance(dy, AbstractZero):
                    cotangents.append(ZeroTangent())
                elif count > 1 and isinstance(arg, np.ndarray) and arg.ndim:
                    # Thunked: the engine may not need every argument's cotangent.
                    cotangents.append(Thunk(
                        lambda project=project, arg=arg, partial=partial: _argument_cotangent(
                            project, arg, partial, y, args, dy)))
                else:
                    cotangents.append(_argument_cotangent(project, arg, partial, y, args, dy))
            return tuple(cotangents)

        return y, pullback

    def forward(tangents: tuple, *args: Any, **kwargs: Any):
        if len(tangents) != count + 1:
            raise TypeError(f"{name}: expected {count + 1} tangents (for the function and each "
                            f"argument), got {len(tangents)}")
        _check_keywords(f, kwargs)
        y = f(*args, **kwargs)
        dy: Any = ZeroTangent()
        for arg, darg, partial in zip(args, tangents[1:], partials):
            darg = unthunk(darg)
            if partial is None or isinstance(darg, AbstractZero):
                continue
            dy = accumulate(dy, partial(y, *args) * darg)
        if isinstance(dy, AbstractZero):
            return y, ZeroTangent()
        if np.shape(dy) != np.shape(y):
            dy = np.broadcast_to(dy, np.shape(y))
        return y, ProjectTo(y)(dy)

    rrule.register(f, replace=True)(reverse)
    frule.register(f, replace=True)(forward)
