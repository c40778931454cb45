"""The shared shape of array rules: one formula per argument, registered as rrule and frule.

``define(f, cotangent_0, cotangent_1, ..., pushforward=...)`` registers both rules of ``f``:

- reverse: ``cotangent_i(dy, y, *args, **kwargs)`` is the (unprojected) cotangent of positional
  argument ``i``; ``None`` (or no entry) marks an argument that is not differentiable (indices,
  axes, conditions). The rule builds the argument's projector in the forward pass
  (`project_onto`: ``ProjectTo``, or element by element for a list or tuple, whose cotangent
  may be an array or a list), short-circuits a zero ``dy``, thunks the cotangents when several
  array arguments are differentiable, and projects every cotangent;
- forward: ``pushforward(dargs, y, *args, **kwargs)`` is the output tangent, ``dargs`` holding
  the unthunked input tangents (an `AbstractZero` for a zero one; a list of dense tangents for
  a list or tuple argument, zeros where the tangent is zero). The default, `multilinear`,
  is right for every function that is linear in each differentiable argument separately
  (``matmul``, ``fft``, ``take``...): ``sum_i f(..., dargs[i], ...)``.

The formulas see ``dy`` unthunked and projected onto the output's tangent space (a complex
``dy`` for a real output arrives real). Functions that return a tuple (``slogdet``, ``svd``...)
see ``dy`` as a list with one such cotangent per output (`ZeroTangent` where the caller gave
none, whether it passed a tuple or a `Tangent` keyed by position or field name); their
pushforward returns one tangent per output, and the rule returns them as a `Tangent` of the
output's type. ``prepare(dy, y, *args,
**kwargs)``, when given, is computed once (lazily) and passed to the formulas instead of ``dy``,
for work that several cotangents share.

``refused`` names keyword options that raise a clear error naming the function (``out=`` by
default); ``check(*args, **kwargs)``, when given, runs before the function, to refuse
unsupported values of other options with a clear error.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core.accumulate import accumulate
from ..core.config import _name
from ..core.projection import NO_TANGENT_PROJECTOR, ProjectTo
from ..core.registry import frule, rrule
from ..core.tangents import AbstractZero, NoTangent, Tangent, ZeroTangent
from ..core.thunks import Thunk, unthunk
from ._array_rules import dense_tangent, has_tangent, project_onto

__all__ = ["define", "multilinear", "refuse", "conj", "H", "zero_cotangents",
           "output_cotangent", "output_cotangents", "output_tangent", "dense"]

Formula = Callable[..., Any] | None
_SCALARS = (int, float, complex, np.generic)  # cheap cotangents: not worth a thunk


def refuse(f: Any, kwargs: dict, options: Sequence[str] = ("out",)) -> None:
    """Raise a clear error if ``kwargs`` uses one of ``options`` (``out=None`` is accepted).

    >>> refuse(np.sum, {"out": np.zeros(1)})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    TypeError: numpy.sum: the out= argument is not supported in differentiated code. ...
    """
    for option in options:
        if option in kwargs and not (option == "out" and kwargs[option] is None):
            raise TypeError(
                f"{_name(f)}: the {option}= argument is not supported in differentiated code. "
                f"Call {getattr(f, '__name__', f)} without {option}=" +
                (" and assign the result instead." if option == "out" else "."))


def conj(x: Any) -> Any:
    """``np.conj(x)`` for complex values, ``x`` itself (no copy) for real ones."""
    return np.conj(x) if np.iscomplexobj(x) else x


def H(x: Any) -> Any:
    """The conjugate transpose of (a stack of) matrices: the last two axes swapped."""
    return conj(np.swapaxes(x, -1, -2))


def zero_cotangents(projectors: Sequence[Any]) -> tuple:
    """The pullback's answer to a zero ``dy``: ZeroTangent or NoTangent for each argument."""
    return (NoTangent(),) + tuple(
        ZeroTangent() if has_tangent(p) else NoTangent() for p in projectors)


def output_cotangents(dy: Any, y: tuple) -> list:
    """One projected cotangent per output of a tuple-valued function (ZeroTangent if absent).

    ``dy`` may be a tuple or list, a `Tangent` keyed by position or by field name, or a zero.
    """
    dy = unthunk(dy)
    if isinstance(dy, AbstractZero):
        return [ZeroTangent()] * len(y)
    if not isinstance(dy, Tangent):
        parts = list(dy)
    else:
        fields = getattr(type(y), "_fields", ())
        parts = [dy[i] if i in dy or not fields else dy[fields[i]] for i in range(len(y))]
    return [output_cotangent(t, output) for t, output in zip(parts, y)]


def output_cotangent(dy: Any, y: Any) -> Any:
    """``dy`` unthunked and projected onto the output ``y``'s tangent space (a real output gets
    a real cotangent, a float32 one a float32 cotangent), so formulas need not do it."""
    dy = unthunk(dy)
    return dy if isinstance(dy, AbstractZero) else ProjectTo(y)(dy)


def output_tangent(y: tuple, tangents: Sequence) -> Any:
    """The tangent of a tuple output: a projected `Tangent` of ``type(y)`` (zeros omitted)."""
    fields = getattr(type(y), "_fields", None) or range(len(y))
    backing = {key: t for key, t in zip(fields, tangents) if not isinstance(t, AbstractZero)}
    return ProjectTo(y)(Tangent(type(y), backing)) if backing else ZeroTangent()


def dense(t: Any, like: Any) -> Any:
    """``t``, or an array of zeros shaped like ``like`` when ``t`` is a zero tangent."""
    return np.zeros_like(like) if isinstance(t, AbstractZero) else t


def multilinear(f: Any) -> Callable:
    """The pushforward of ``f`` when ``f`` is linear in each differentiable argument."""
    def pushforward(dargs: tuple, y: Any, *args: Any, **kwargs: Any) -> Any:
        dy = ZeroTangent()
        for i, darg in enumerate(dargs):
            if not isinstance(darg, AbstractZero):
                dy = accumulate(dy, f(*args[:i], darg, *args[i + 1:], **kwargs))
        return dy

    return pushforward


def define(f: Any, *cotangents: Formula, pushforward: Callable | None = None,
           prepare: Callable | None = None, check: Callable | None = None,
           refused: Sequence[str] = ("out",)) -> None:
    """Register the rrule and frule of ``f`` from per-argument cotangent formulas.

    >>> import numpy as np
    >>> def scale(x, k):  # linear in x; k is not differentiable here
    ...     return k * x
    >>> define(scale, lambda dy, y, x, k: k * dy, None)
    >>> rrule(scale, np.ones(2), 3)[1](np.ones(2))
    (NoTangent(), array([3., 3.]), NoTangent())
    >>> frule((NoTangent(), np.ones(2), NoTangent()), scale, np.ones(2), 3)[1]
    array([3., 3.])
    """
    if pushforward is None:
        pushforward = multilinear(f)
    differentiable_count = sum(c is not None for c in cotangents)

    def formula(i: int) -> Formula:
        return cotangents[i] if i < len(cotangents) else None

    def reverse(*args: Any, **kwargs: Any):
        refuse(f, kwargs, refused)
        if check is not None:
            check(*args, **kwargs)
        y = f(*args, **kwargs)
        projectors = [project_onto(arg) if formula(i) is not None else NO_TANGENT_PROJECTOR
                      for i, arg in enumerate(args)]

        def pullback(dy: Any) -> tuple:
            dy = output_cotangents(dy, y) if isinstance(y, tuple) else output_cotangent(dy, y)
            if all(isinstance(d, AbstractZero) for d in (dy if isinstance(y, tuple) else [dy])):
                return zero_cotangents(projectors)
            shared = dy if prepare is None else Thunk(lambda: prepare(dy, y, *args, **kwargs))
            result: list[Any] = [NoTangent()]
            for i, (arg, project) in enumerate(zip(args, projectors)):
                if not has_tangent(project):
                    result.append(NoTangent())
                elif differentiable_count > 1 and not isinstance(arg, _SCALARS):
                    result.append(Thunk(lambda i=i, project=project: project(
                        cotangents[i](unthunk(shared), y, *args, **kwargs))))
                else:
                    result.append(project(cotangents[i](unthunk(shared), y, *args, **kwargs)))
            return tuple(result)

        return y, pullback

    def forward(tangents: tuple, *args: Any, **kwargs: Any):
        refuse(f, kwargs, refused)
        if check is not None:
            check(*args, **kwargs)
        y = f(*args, **kwargs)
        dargs = tuple(unthunk(t) if formula(i) is not None else NoTangent()
                      for i, t in enumerate(tangents[1:len(args) + 1]))
        dargs += (NoTangent(),) * (len(args) - len(dargs))
        if all(isinstance(d, AbstractZero) for d in dargs):
            return y, ZeroTangent()
        dargs = tuple(dense_tangent(arg, d) if isinstance(arg, (list, tuple))
                      and not isinstance(d, AbstractZero) else d for arg, d in zip(args, dargs))
        dy = pushforward(dargs, y, *args, **kwargs)
        if isinstance(y, tuple):
            return y, output_tangent(y, dy)
        if isinstance(dy, AbstractZero):
            return y, ZeroTangent()
        return y, ProjectTo(y)(dy)

    rrule.register(f, replace=True)(reverse)
    frule.register(f, replace=True)(forward)
