"""autograd's differential operators, on chainrules' engine.

Each operator takes the function and ``argnum`` (an int, or a tuple of ints: then the
derivative is with respect to that tuple of arguments) and returns a function of the same
arguments as ``fun``, as in autograd. Gradients are in autograd's complex convention: the
conjugate of chainrules' (``grad(abs2)(3+4j) == 6-8j``; see `chainrules.autograd`).

>>> import numpy as np
>>> grad(lambda x, y: x * y ** 2, argnum=1)(3.0, 2.0)
12.0
>>> grad(lambda z: np.abs(z) ** 2)(3 + 4j)
(6-8j)
"""

from __future__ import annotations

import collections
import functools
import inspect
from typing import Any, Callable, Sequence

import numpy as np

from .. import ad
from ..ad.transforms.api import primal
from ..core.structure import replace_leaves
from ..core.tangents import AbstractZero, NoTangent, Tangent
from ..core.thunks import unthunk
from ..core.trees import is_differentiable_leaf, tree_map

__all__ = ["grad", "value_and_grad", "grad_and_aux", "elementwise_grad", "deriv", "jacobian",
           "hessian", "make_vjp", "make_jvp", "make_hvp", "make_ggnvp",
           "hessian_tensor_product", "hessian_vector_product", "tensor_jacobian_product",
           "vector_jacobian_product", "holomorphic_grad", "grad_named", "multigrad_dict",
           "checkpoint"]

Argnum = "int | Sequence[int]"


def conj(tangent: Any) -> Any:
    """A (co)tangent in the other complex convention: complex leaves conjugated, real ones
    (and zeros) as they are. Traceable."""
    tangent = unthunk(tangent)
    if isinstance(tangent, AbstractZero):
        return tangent
    if isinstance(tangent, Tangent):
        return tangent.conj()

    def is_complex(v: Any) -> bool:
        return isinstance(v, Tangent) or (is_differentiable_leaf(v) and
                                          np.iscomplexobj(primal(v)))

    return replace_leaves(tangent, _conj_leaf, is_complex)


def _conj_leaf(v: Any) -> Any:
    if issubclass(type(v), (Tangent, complex)):
        return v.conjugate() if issubclass(type(v), complex) else v.conj()  # keeps the type
    return np.conj(v)


def _unary(fun: Callable, argnum: Any, args: tuple, kwargs: dict) -> tuple[Callable, Any]:
    """``fun`` as a function of argument(s) ``argnum`` alone, the others fixed; and the value
    of those argument(s)."""
    several = isinstance(argnum, (tuple, list))
    numbers = tuple(argnum) if several else (argnum,)
    for n in numbers:
        if not issubclass(type(n), (int, np.integer)) or issubclass(type(n), bool):
            raise TypeError(f"{_name(fun)}: argnum must be an int or a tuple of ints, got "
                            f"{argnum!r}.")
        if not -len(args) <= n < len(args):
            raise IndexError(f"{_name(fun)}: argnum={argnum!r}, but it was called with "
                             f"{len(args)} positional argument(s) (argnum counts them from 0).")

    def unary(x: Any) -> Any:
        values = list(args)
        for n, value in zip(numbers, x if several else (x,)):
            values[n] = value
        return fun(*values, **kwargs)

    unary.__name__ = unary.__qualname__ = _name(fun)
    x = tuple(args[n] for n in numbers) if several else args[argnum]
    return unary, x


def _name(f: Callable) -> str:
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


def _operator(build: Callable) -> Callable:
    """An operator ``op(fun, argnum=0, ...)`` from ``build(unary, x, *extra)``, which computes
    the result for ``fun`` of the argument(s) ``x`` alone."""
    @functools.wraps(build)
    def operator(fun: Callable, argnum: Any = 0, *extra: Any, **options: Any) -> Callable:
        @functools.wraps(fun)
        def applied(*args: Any, **kwargs: Any) -> Any:
            unary, x = _unary(fun, argnum, args, kwargs)
            return build(unary, x, *extra, **options)
        return applied
    return operator


def _make_vjp(unary: Callable, x: Any) -> tuple[Callable, Any]:
    ans, pullback = ad.vjp(unary, x)

    def vjp(g: Any) -> Any:
        return conj(pullback(conj(g))[0])
    return vjp, ans


def _ones_like(value: Any) -> Any:
    def one(v: Any) -> Any:
        if issubclass(type(v), (float, complex)):
            return type(v)(1)
        return np.ones(np.shape(v), v.dtype)
    return tree_map(one, value)


@_operator
def make_vjp(unary: Callable, x: Any) -> tuple[Callable, Any]:
    """``make_vjp(fun, argnum=0)(*args)`` is ``(vjp, ans)``: ``ans = fun(*args)`` and
    ``vjp(g)`` the vector-Jacobian product with ``g`` (autograd's order: ``vjp`` first).

    >>> import numpy as np
    >>> vjp, ans = make_vjp(np.sin)(np.array([0.0, np.pi / 3]))
    >>> vjp(np.array([1.0, 2.0]))
    array([1., 1.])
    """
    return _make_vjp(unary, x)


@_operator
def grad(unary: Callable, x: Any) -> Any:
    """The gradient of a real scalar ``fun`` with respect to argument ``argnum``.

    >>> import numpy as np
    >>> grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
    array([2., 4.])
    """
    return conj(ad.grad(unary)(x))


@_operator
def value_and_grad(unary: Callable, x: Any) -> tuple[Any, Any]:
    """``(fun(*args), grad(fun)(*args))`` from one evaluation.

    >>> import numpy as np
    >>> value_and_grad(lambda x: x ** 3)(np.float64(2.0))
    (np.float64(8.0), np.float64(12.0))
    """
    value, gradient = ad.value_and_grad(unary)(x)
    return value, conj(gradient)


@_operator
def grad_and_aux(unary: Callable, x: Any) -> tuple[Any, Any]:
    """For ``fun`` returning ``(value, aux)``: ``(gradient of value, aux)``.

    >>> grad_and_aux(lambda x: (x ** 2, "aux"))(3.0)
    (6.0, 'aux')
    """
    gradient, aux = ad.grad(unary, has_aux=True)(x)
    return conj(gradient), aux


@_operator
def elementwise_grad(unary: Callable, x: Any) -> Any:
    """The vector-Jacobian product with a vector of ones: for a ``fun`` applied element by
    element, the derivative at each element.

    >>> import numpy as np
    >>> elementwise_grad(np.tanh)(np.array([0.0, 1.0]))
    array([1.        , 0.41997434])
    """
    vjp, ans = _make_vjp(unary, x)
    return vjp(_ones_like(ans))


@_operator
def deriv(unary: Callable, x: Any) -> Any:
    """The Jacobian-vector product with a vector of ones (forward mode): the derivative of a
    function of one variable, or of an elementwise one.

    >>> float(deriv(lambda x: x ** 3)(2.0))
    12.0
    """
    return ad.jvp(unary, (x,), (_ones_like(x),))[1]


@_operator
def jacobian(unary: Callable, x: Any) -> Any:
    """The Jacobian, of shape ``fun(*args).shape + x.shape``.

    >>> import numpy as np
    >>> jacobian(lambda x: x[:2] * x[1:])(np.array([1.0, 2.0, 3.0]))
    array([[2., 1., 0.],
           [0., 3., 2.]])
    """
    return conj(ad.jacobian(unary)(x))


@_operator
def hessian(unary: Callable, x: Any) -> Any:
    """The Jacobian of the Jacobian (forward over reverse): for a real scalar ``fun``, its
    Hessian, ``x.shape + x.shape``; for an array-valued one, ``ans.shape + x.shape * 2``.

    >>> import numpy as np
    >>> hessian(lambda x: x[0] ** 2 * x[1])(np.array([1.0, 2.0]))
    array([[4., 2.],
           [2., 0.]])
    """
    return ad.jacfwd(ad.jacobian(unary))(x)


@_operator
def make_jvp(unary: Callable, x: Any) -> Callable:
    """``make_jvp(fun, argnum=0)(*args)`` is ``jvp``: ``jvp(v)`` returns ``(ans, J v)``.

    >>> import numpy as np
    >>> make_jvp(np.sin)(np.array([0.0]))(np.array([2.0]))
    (array([0.]), array([2.]))
    """
    def jvp(v: Any) -> tuple[Any, Any]:
        return ad.jvp(unary, (x,), (v,))
    return jvp


@_operator
def make_hvp(unary: Callable, x: Any) -> tuple[Callable, Any]:
    """``make_hvp(fun, argnum=0)(*args)`` is ``(hvp, gradient)``: ``hvp(v)`` the
    Hessian-vector product at ``x`` (the gradient is traced once; each ``hvp`` is one
    backward pass through it).

    >>> import numpy as np
    >>> hvp, g = make_hvp(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    >>> hvp(np.array([1.0, 0.0])), g
    (array([6., 0.]), array([ 3., 12.]))
    """
    return _make_vjp(lambda y: conj(ad.grad(unary)(y)), x)


def hessian_tensor_product(fun: Callable, argnum: Any = 0) -> Callable:
    """A function of ``(*args, v)``: the Hessian of ``fun`` at ``args`` contracted with ``v``
    over all of ``v``'s axes (for a vector ``v``, the Hessian-vector product).

    >>> import numpy as np
    >>> hessian_tensor_product(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]), np.ones(2))
    array([ 6., 12.])
    """
    @functools.wraps(fun)
    def product(*args: Any, **kwargs: Any) -> Any:
        *args, v = args
        return make_hvp(fun, argnum)(*args, **kwargs)[0](v)
    return product


hessian_vector_product = hessian_tensor_product


def tensor_jacobian_product(fun: Callable, argnum: Any = 0) -> Callable:
    """A function of ``(*args, v)``: ``v`` contracted with the Jacobian of ``fun`` over the
    output's axes, a vector-Jacobian product.

    >>> import numpy as np
    >>> tensor_jacobian_product(lambda x: 2 * x)(np.ones(2), np.array([1.0, 3.0]))
    array([2., 6.])
    """
    @functools.wraps(fun)
    def product(*args: Any, **kwargs: Any) -> Any:
        *args, v = args
        return make_vjp(fun, argnum)(*args, **kwargs)[0](v)
    return product


vector_jacobian_product = tensor_jacobian_product


def _half_sum_of_squares(x: Any) -> Any:
    return 0.5 * np.sum(x ** 2, axis=-1)


def make_ggnvp(f: Callable, g: Callable = _half_sum_of_squares, f_argnum: Any = 0) -> Callable:
    """Generalized Gauss-Newton products: ``make_ggnvp(f, g)(*args)`` is ``ggnvp``, with
    ``ggnvp(v) = J_f^T H_g J_f v`` (``J_f`` the Jacobian of ``f`` at ``args``, ``H_g`` the
    Hessian of the scalar ``g`` at ``f(*args)``). By default ``g`` is half the sum of squares.

    >>> import numpy as np
    >>> ggnvp = make_ggnvp(lambda w: 3.0 * w)(np.array([1.0, 2.0]))
    >>> ggnvp(np.array([1.0, 0.0]))
    array([9., 0.])
    """
    @functools.wraps(f)
    def make(*args: Any, **kwargs: Any) -> Callable:
        unary, x = _unary(f, f_argnum, args, kwargs)
        f_vjp, f_x = _make_vjp(unary, x)
        g_hvp, _ = make_hvp(g)(f_x)

        def ggnvp(v: Any) -> Any:
            return f_vjp(g_hvp(ad.jvp(unary, (x,), (v,))[1]))
        return ggnvp
    return make


@_operator
def holomorphic_grad(unary: Callable, x: Any) -> Any:
    """The complex derivative ``f'(z)`` of a holomorphic ``fun``.

    >>> complex(holomorphic_grad(lambda z: z ** 2)(1 + 2j))
    (2+4j)
    """
    if not np.iscomplexobj(primal(x)):
        import warnings
        warnings.warn("holomorphic_grad: the input is not complex", stacklevel=3)
    return conj(ad.grad(lambda z: np.real(unary(z)))(x))


def grad_named(fun: Callable, argname: str) -> Callable:
    """The gradient with respect to the argument named ``argname`` (given by position or by
    keyword).

    >>> grad_named(lambda x, y: x * y, "y")(2.0, 5.0)
    2.0
    """
    parameters = list(inspect.signature(fun).parameters.values())
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY,
                                                          p.POSITIONAL_OR_KEYWORD)]
    if argname not in [p.name for p in parameters]:
        raise ValueError(f"grad_named: {_name(fun)} has no argument named {argname!r}; its "
                         f"arguments are {[p.name for p in parameters]}.")

    @functools.wraps(fun)
    def gradient(*args: Any, **kwargs: Any) -> Any:
        if argname in kwargs:
            def of_named(value: Any) -> Any:
                return fun(*args, **{**kwargs, argname: value})
            return grad(of_named)(kwargs[argname])
        if argname in positional and positional.index(argname) < len(args):
            return grad(fun, positional.index(argname))(*args, **kwargs)
        raise TypeError(f"grad_named: {_name(fun)} was called without a value for "
                        f"{argname!r}.")
    return gradient


def multigrad_dict(fun: Callable) -> Callable:
    """The gradient with respect to every argument at once, as an ordered dict from argument
    name to gradient (defaults included; ``*args`` as a tuple, ``**kwargs`` as a dict).

    >>> multigrad_dict(lambda x, y=2.0: x * y)(3.0)
    OrderedDict([('x', 2.0), ('y', 3.0)])
    """
    signature = inspect.signature(fun)

    @functools.wraps(fun)
    def gradients(*args: Any, **kwargs: Any) -> collections.OrderedDict:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        names = list(bound.arguments)

        def of_all(values: dict) -> Any:
            call = signature.bind_partial()
            call.arguments.update(values)
            return fun(*call.args, **call.kwargs)

        result = grad(of_all)(dict(bound.arguments))
        return collections.OrderedDict((name, result[name]) for name in names)
    return gradients


def checkpoint(fun: Callable) -> Callable:
    """``fun`` with the same values, whose intermediate values are not stored for the
    backward pass but recomputed there (memory for time). Gradients flow to its arguments
    (as in autograd); pass the parameters it uses as arguments rather than capturing them.

    Uses `chainrules.checkpoint` when this chainrules has it.

    >>> import numpy as np
    >>> step = checkpoint(lambda x, w: np.tanh(w * x))
    >>> round(float(grad(lambda w: step(step(1.0, w), w))(0.5)), 6)
    0.811253
    """
    import chainrules
    native = getattr(chainrules, "checkpoint", None)
    if native is not None:
        return native(fun)
    return recompute_in_backward(fun)


def recompute_in_backward(fun: Callable) -> Callable:
    """`checkpoint` by a rule: the forward pass runs ``fun`` on plain values (nothing is
    recorded inside it); the pullback traces ``fun`` again at the same arguments and pulls
    the cotangent back through that trace."""
    from ..core.registry import rrule
    from ..core.structure import leaves

    @ad.primitive
    @functools.wraps(fun)
    def checkpointed(*args: Any, **kwargs: Any) -> Any:
        return fun(*args, **kwargs)

    def rule(*args: Any, **kwargs: Any) -> tuple:
        y = checkpointed(*args, **kwargs)
        traced = lambda v: isinstance(v, ad.Traced)  # noqa: E731
        levels = {id(v.tape) for _, v in leaves(list(args), traced)}
        if any(id(v.tape) not in levels for _, v in leaves(y, traced)):
            raise TypeError(
                f"checkpoint({_name(fun)}): the function uses a value being differentiated "
                f"that is not one of its arguments (captured by a closure or global); "
                f"checkpoint differentiates with respect to arguments: pass it as one.")

        def pullback(dy: Any) -> tuple:
            _, again = ad.vjp(lambda *a: fun(*a, **kwargs), *args)
            return (NoTangent(),) + tuple(again(dy))
        return y, pullback

    rrule.register(checkpointed)(rule)
    return checkpointed
