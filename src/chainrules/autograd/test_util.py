"""autograd's ``test_util.check_grads``, on `chainrules.testing.check_grads`.

>>> import numpy as np
>>> check_grads(np.sin, modes=["rev"], order=2)(np.array([0.3, 1.2]))
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..testing.check_grads import check_grads as _check_grads
from .differential_operators import _unary

__all__ = ["check_grads"]


def check_grads(fun: Callable, argnum: Any = 0, modes: Sequence[str] = ("fwd", "rev"),
                order: int = 2) -> Callable:
    """``check_grads(fun, modes=["fwd", "rev"], order=2)(*args)``: check ``fun``'s
    derivatives with respect to argument(s) ``argnum`` up to ``order`` against finite
    differences, as autograd's does; raises `AssertionError` naming mode, order and argument.
    (Checking chainrules' derivatives checks autograd's: they are conjugates.)

    >>> check_grads(lambda x, y: x * y ** 2, argnum=1)(2.0, 3.0)
    """
    def check(*args: Any, **kwargs: Any) -> None:
        unary, x = _unary(fun, argnum, args, kwargs)
        _check_grads(unary, x, order=order, modes=modes)
    return check
