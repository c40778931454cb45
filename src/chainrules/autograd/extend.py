"""autograd's ``extend``: your own primitives, with their VJPs and JVPs in autograd's form.

``primitive(f)`` makes the engine record calls of ``f`` as one operation; ``defvjp`` and
``defjvp`` give its derivatives as autograd does, and register them as chainrules rules
(an ``rrule`` and an ``frule``), so every chainrules operator (``grad``, ``jvp``,
``hessian``...) uses them too. VJPs are written in autograd's complex convention (see
`chainrules.autograd`) and converted. Without ``defjvp``, forward mode derives the JVP from
the VJPs.

>>> import numpy as np
>>> from chainrules.autograd import grad
>>> @primitive
... def logsumexp(x):
...     m = np.max(x)
...     return m + np.log(np.sum(np.exp(x - m)))
>>> defvjp(logsumexp, lambda ans, x: lambda g: g * np.exp(x - ans))
>>> grad(logsumexp)(np.array([0.0, np.log(3.0)]))
array([0.25, 0.75])

Not provided: ``Box``, ``VSpace``, ``vspace``, ``SparseObject``, ``notrace_primitive``
(chainrules needs no boxes or vector spaces: see docs/migrating-from-autograd.md).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..ad.transforms.api import primitive as _primitive
from ..core.naming import function_name
from ..core.registry import frule, rrule
from ..core.tangents import AbstractZero, NoTangent, ZeroTangent
from ..core.thunks import Thunk, unthunk
from ..core.trees import is_differentiable_leaf
from ..core.structure import is_structure
from .differential_operators import conj

__all__ = ["primitive", "defvjp", "defvjp_argnum", "defjvp", "defjvp_argnum"]


def primitive(f: Callable) -> Callable:
    """``f`` as one operation for the engine (its body is not traced): give its derivatives
    with `defvjp` / `defjvp`. This is `chainrules.primitive`.

    >>> import numpy as np
    >>> @primitive
    ... def cube(x):
    ...     return x ** 3
    >>> defvjp(cube, lambda ans, x: lambda g: 3 * g * x ** 2)
    """
    return _primitive(f)


def _may_have_tangent(value: Any) -> bool:
    return is_differentiable_leaf(value) or is_structure(value)


def defvjp_argnum(fun: Callable, vjpmaker: Callable) -> None:
    """Give ``fun``'s VJPs by one function: ``vjpmaker(argnum, ans, args, kwargs)`` returns
    the VJP with respect to argument ``argnum``, a function of the output cotangent ``g``.

    >>> import numpy as np
    >>> @primitive
    ... def scale(a, x):
    ...     return a * x
    >>> defvjp_argnum(scale, lambda n, ans, args, kwargs:
    ...               (lambda g: np.sum(g * args[1])) if n == 0 else (lambda g: g * args[0]))
    """
    def rule(*args: Any, **kwargs: Any) -> tuple:
        ans = fun(*args, **kwargs)

        def pullback(dy: Any) -> tuple:
            g = conj(unthunk(dy))
            cotangents: list = [NoTangent()]
            for n, arg in enumerate(args):
                if not _may_have_tangent(arg):
                    cotangents.append(NoTangent())
                elif isinstance(g, AbstractZero):
                    cotangents.append(ZeroTangent())
                else:  # computed only if this argument is being differentiated
                    cotangents.append(Thunk(lambda n=n: conj(vjpmaker(n, ans, args,
                                                                      kwargs)(g))))
            return tuple(cotangents)
        return ans, pullback

    rrule.register(fun, replace=True)(rule)


def defvjp(fun: Callable, *vjpmakers: Callable | None, argnums: Sequence[int] | None = None
           ) -> None:
    """Give ``fun``'s VJPs, one maker per argument (``argnums``: which; by default the
    first ones in order): ``vjpmaker(ans, *args, **kwargs)`` returns the VJP, a function of
    the output cotangent ``g``. ``None`` (or a missing maker) means not defined: an error if
    that argument is differentiated.

    >>> import numpy as np
    >>> @primitive
    ... def mul(x, y):
    ...     return x * y
    >>> defvjp(mul, lambda ans, x, y: lambda g: g * y, lambda ans, x, y: lambda g: g * x)
    """
    numbers = list(range(len(vjpmakers))) if argnums is None else list(argnums)
    makers = {n: m for n, m in zip(numbers, vjpmakers) if m is not None}

    def vjpmaker(argnum: int, ans: Any, args: tuple, kwargs: dict) -> Callable:
        if argnum not in makers:
            raise NotImplementedError(
                f"VJP of {function_name(fun)} with respect to argument {argnum} is not defined; give "
                f"it with defvjp({function_name(fun)}, ..., argnums=[..., {argnum}]).")
        return makers[argnum](ans, *args, **kwargs)

    defvjp_argnum(fun, vjpmaker)


def defjvp_argnum(fun: Callable, jvpmaker: Callable) -> None:
    """Give ``fun``'s JVPs by one function: ``jvpmaker(argnum, g, ans, args, kwargs)`` is the
    output tangent for the tangent ``g`` of argument ``argnum``; the contributions of the
    arguments are summed.

    >>> import numpy as np
    >>> @primitive
    ... def square(x):
    ...     return x * x
    >>> defjvp_argnum(square, lambda n, g, ans, args, kwargs: 2 * g * args[0])
    """
    def rule(tangents: tuple, *args: Any, **kwargs: Any) -> tuple:
        ans = fun(*args, **kwargs)
        total: Any = None
        for n, tangent in enumerate(tangents[1:]):
            tangent = unthunk(tangent)
            if isinstance(tangent, AbstractZero):
                continue
            part = jvpmaker(n, tangent, ans, args, kwargs)
            total = part if total is None else total + part
        return ans, ZeroTangent() if total is None else total

    frule.register(fun, replace=True)(rule)


def defjvp(fun: Callable, *jvpfuns: Callable | None, argnums: Sequence[int] | None = None
           ) -> None:
    """Give ``fun``'s JVPs, one per argument: ``jvpfun(g, ans, *args, **kwargs)`` is the
    output tangent for the tangent ``g`` of that argument.

    >>> import numpy as np
    >>> @primitive
    ... def sine(x):
    ...     return np.sin(x)
    >>> defjvp(sine, lambda g, ans, x: g * np.cos(x))
    """
    numbers = list(range(len(jvpfuns))) if argnums is None else list(argnums)
    funs = {n: j for n, j in zip(numbers, jvpfuns) if j is not None}

    def jvpmaker(argnum: int, g: Any, ans: Any, args: tuple, kwargs: dict) -> Any:
        if argnum not in funs:
            raise NotImplementedError(
                f"JVP of {function_name(fun)} with respect to argument {argnum} is not defined; give "
                f"it with defjvp({function_name(fun)}, ..., argnums=[..., {argnum}]).")
        return funs[argnum](g, ans, *args, **kwargs)

    defjvp_argnum(fun, jvpmaker)
