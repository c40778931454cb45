"""chainrules' rules inside PyTorch: any function with an rrule becomes a
``torch.autograd.Function``, so PyTorch programs can call NumPy and SciPy functions (and your
own rules) and still get gradients.

    >>> import numpy as np, scipy.special, torch
    >>> gammaln = as_torch(scipy.special.gammaln)
    >>> x = torch.tensor([1.5, 3.0], dtype=torch.float64, requires_grad=True)
    >>> gammaln(x).sum().backward()
    >>> x.grad                                          # digamma(x)
    tensor([0.0365, 0.9228], dtype=torch.float64)

The contract this bridge relies on (docs/engine-authors.md):

- ``rrule(f, *args)`` returns ``(y, pullback)``; ``pullback(dy)`` returns one cotangent for
  ``f`` and one per positional argument. Keyword arguments are constants to the rule, so
  ``positional_call`` first moves the tensors given by keyword to their positions.
- Cotangents may be lazy (``unthunk``), zero (``ZeroTangent``/``NoTangent``: PyTorch's
  ``None``) or refused (``NotImplementedCotangent``, recognised without computing it: an
  error only if PyTorch needs that gradient).
- A cotangent may be ``dy`` itself, a view of it, or the same array for two arguments; with
  ``dy`` read-only such cotangents are read-only too. The bridge copies each into a new tensor,
  so PyTorch's in-place accumulation never reaches another gradient.

Run it with ``python examples/torch_bridge.py`` (PyTorch installed): it checks a few rules
with ``torch.autograd.gradcheck``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from chainrules import NotImplementedCotangent, positional_call, rrule, unthunk
from chainrules.core import AbstractZero


def _to_numpy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        array = value.detach().cpu().numpy()
        array.setflags(write=False)  # rules never write into their arguments; make sure
        return array
    return value


class _RuleFunction(torch.autograd.Function):
    """One call of ``function``: the forward pass runs its rrule, the backward its pullback.
    ``kwargs`` are the call's constant keyword arguments."""

    @staticmethod
    def forward(ctx: Any, function: Callable, kwargs: dict, *args: Any) -> torch.Tensor:
        result = rrule.with_constants(function, *map(_to_numpy, args), **kwargs)
        if result is None:
            raise NotImplementedError(f"no rrule for {function!r}")
        y, ctx.pullback = result
        ctx.dtype = next(a.dtype for a in args if isinstance(a, torch.Tensor))
        return torch.as_tensor(np.array(y), dtype=ctx.dtype)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple:
        cotangents = ctx.pullback(_to_numpy(grad_output))[1:]
        grads: list = [None, None]  # for `function` and `kwargs`
        for needed, cotangent in zip(ctx.needs_input_grad[2:], cotangents):
            if not needed or isinstance(cotangent, AbstractZero):
                grads.append(None)
            elif isinstance(cotangent, NotImplementedCotangent):
                raise NotImplementedError(cotangent.message)
            else:  # a copy: the cotangent may alias dy or another argument's
                grads.append(torch.tensor(np.array(unthunk(cotangent)), dtype=ctx.dtype))
        return tuple(grads)


def as_torch(function: Callable) -> Callable:
    """``function`` (anything with an rrule: a NumPy or SciPy function, an operator, a bound
    method such as ``scipy.stats.norm.logpdf``, a ``@chainrules.primitive`` of yours) as a
    function of PyTorch tensors that PyTorch can differentiate."""
    def call(*args: Any, **kwargs: Any) -> torch.Tensor:
        target, args, kwargs = positional_call(   # tensors given by keyword: to positions
            function, args, kwargs, moves=lambda value: isinstance(value, torch.Tensor))
        return _RuleFunction.apply(target, kwargs, *args)

    return call


def main() -> None:
    import operator

    import scipy.special
    import scipy.stats

    def tensor(*values: float) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.float64, requires_grad=True)

    checks = {
        "np.sin": (as_torch(np.sin), (tensor(0.3, -1.2),)),
        "np.add (one array for both cotangents)": (as_torch(np.add), (tensor(1.0, 2.0),
                                                                      tensor(3.0, 4.0))),
        "operator.mul": (as_torch(operator.mul), (tensor(1.0, 2.0), tensor(0.5, -1.0))),
        "scipy.special.gammaln": (as_torch(scipy.special.gammaln), (tensor(1.5, 3.0),)),
        "scipy.stats.norm.logpdf": (as_torch(scipy.stats.norm.logpdf),
                                    (tensor(0.3, 1.5), tensor(1.0), tensor(2.0))),
        "np.sum(axis=0)": (lambda x: as_torch(np.sum)(x, axis=0),
                           (torch.rand(3, 2, dtype=torch.float64, requires_grad=True),)),
        "np.linalg.solve": (as_torch(np.linalg.solve),
                            (torch.eye(2, dtype=torch.float64).add(0.5).requires_grad_(),
                             tensor(1.0, 2.0))),
    }
    for name, (function, args) in checks.items():
        assert torch.autograd.gradcheck(function, args), name
        print(f"gradcheck passed: {name}")
    order, x = tensor(1.0), tensor(1.5)
    bessel = as_torch(scipy.special.jv)         # jv(v, x): no derivative in the order v
    bessel(order.detach(), x).sum().backward()  # a constant order: fine
    try:
        bessel(order, x).sum().backward()
    except NotImplementedError as error:
        print(f"refused by name: {str(error)[:75]}...")


if __name__ == "__main__":
    main()
