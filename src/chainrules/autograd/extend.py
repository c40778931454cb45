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

``VSpace`` and ``vspace`` declare a type of your own a vector space (`chainrules.vector_space`:
its values are their own gradients), as autograd's ``VSpace.register`` does; ``Box.register``
is accepted and does nothing (a traced value needs no box class; the value's attributes are
read inside its rules, which receive the value itself). Not provided: ``SparseObject``, ``notrace_primitive`` (docs/migrating-from-autograd.md).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..ad.transforms.api import primitive as _primitive
from ..core.naming import function_name
from ..core.registry import frule, rrule
from ..core.tangents import AbstractZero, NoTangent, ZeroTangent
from ..core.thunks import Thunk, unthunk
from ..core.trees import is_differentiable_leaf
from ..core.vector_spaces import is_vector_space, vector_space
from ..core.structure import is_structure
from .differential_operators import conj

__all__ = ["primitive", "defvjp", "defvjp_argnum", "defjvp", "defjvp_argnum", "VSpace", "vspace",
           "Box"]


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
    return is_differentiable_leaf(value) or is_structure(value) or is_vector_space(value)


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


_VSPACES: dict = {}  # a registered value type -> what makes its VSpace from a value


class VSpace:
    """autograd's vector-space description of a type: subclass it with ``_add``,
    ``_scalar_mul`` (and ``zeros``, ``_inner_prod`` as you need), then
    ``MySpace.register(MyType)``: ``MyType`` becomes a `chainrules.vector_space`, and
    ``vspace(value).add(a, b)`` calls your ``_add``, as in autograd.

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    ...     def __add__(self, other): return vspace(self).add(self, other)
    ...     def __mul__(self, s): return vspace(self).scalar_mul(self, s)
    >>> class PairSpace(VSpace):
    ...     def _add(self, x, y): return Pair(x.a + y.a, x.b + y.b)
    ...     def _scalar_mul(self, x, s): return Pair(x.a * s, x.b * s)
    >>> PairSpace.register(Pair)
    >>> (Pair(1.0, 2.0) + Pair(0.5, 0.5) * 2.0).b
    3.0
    """

    def __init__(self, value: Any):
        self.value_type = type(value)

    def add(self, x: Any, y: Any) -> Any:
        return self._add(x, y)

    def mut_add(self, x: Any, y: Any) -> Any:
        return self._add(x, y)

    def scalar_mul(self, x: Any, a: Any) -> Any:
        return self._scalar_mul(x, a)

    def inner_prod(self, x: Any, y: Any) -> Any:
        return self._inner_prod(x, y)

    def covector(self, x: Any) -> Any:
        return x

    def _add(self, x: Any, y: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}._add")

    def _scalar_mul(self, x: Any, a: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}._scalar_mul")

    def _inner_prod(self, x: Any, y: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}._inner_prod")

    @classmethod
    def register(cls, value_type: type, vspace_maker: Callable | None = None) -> None:
        """Declare ``value_type`` a vector space described by this class (or
        ``vspace_maker(value)``)."""
        _VSPACES[value_type] = vspace_maker or cls
        vector_space(value_type)


def vspace(value: Any) -> VSpace:
    """The `VSpace` of a value of a registered type (autograd's ``vspace``)."""
    maker = _VSPACES.get(type(value))
    if maker is None:
        raise TypeError(f"vspace: {type(value).__name__} is not registered; register it with "
                        f"YourSpace.register({type(value).__name__}) (a VSpace subclass).")
    return maker(value)


class Box:
    """autograd's box: chainrules traces values without boxes, so ``Box.register(T)`` (and a
    ``TBox(Box, T)`` subclass) has no effect; kept so that autograd programs import."""

    @classmethod
    def register(cls, value_type: type) -> None:
        """Accepted, and nothing to do."""
