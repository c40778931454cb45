"""autograd's optimizers (``sgd``, ``rmsprop``, ``adam``) over nested containers.

Same signatures and defaults as autograd's: ``optimizer(grad, x0, callback=None,
num_iters=..., step_size=..., ...)``, where ``grad(x, i)`` is the gradient at ``x`` in
iteration ``i`` and ``callback(x, i, g)`` is called before each step. ``x0`` may be any
structure `chainrules.flatten` takes (dicts, lists, tuples, namedtuples, dataclasses...), and
``grad`` may return the gradient as chainrules does (a `Tangent` for a dataclass); the
optimizer works on the flat vector and returns a structure like ``x0``.

>>> import numpy as np
>>> x = adam(lambda p, i: {"w": 2 * (p["w"] - 3.0)}, {"w": np.zeros(2)}, step_size=0.1,
...          num_iters=500)
>>> np.round(x["w"], 6)
array([3., 3.])
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from ...core.trees import flatten

__all__ = ["sgd", "rmsprop", "adam", "unflatten_optimizer"]


def unflatten_optimizer(optimize: Callable) -> Callable:
    """An optimizer of flat vectors made into one of nested structures."""
    @functools.wraps(optimize)
    def structured(grad: Callable, x0: Any, callback: Callable | None = None, *args: Any,
                   **kwargs: Any) -> Any:
        flat_x0, unflatten = flatten(x0)
        flat_x0 = np.array(flat_x0, dtype=np.result_type(flat_x0, np.float64))

        def flat_grad(x: np.ndarray, i: int) -> np.ndarray:
            return np.asarray(unflatten.vector_of(grad(unflatten(x), i)))

        flat_callback = None if callback is None else \
            (lambda x, i, g: callback(unflatten(x), i, unflatten(g)))
        return unflatten(optimize(flat_grad, flat_x0, flat_callback, *args, **kwargs))
    return structured


@unflatten_optimizer
def sgd(grad: Callable, x: np.ndarray, callback: Callable | None = None, num_iters: int = 200,
        step_size: float = 0.1, mass: float = 0.9) -> np.ndarray:
    """Stochastic gradient descent with momentum: the velocity is an exponential average of
    the negative gradients (weight ``mass`` on the old velocity), and each step moves ``x``
    by ``step_size`` times it.

    >>> abs(float(sgd(lambda x, i: 2 * x, 1.0, num_iters=300))) < 1e-6
    True
    """
    velocity = np.zeros_like(x)
    for i in range(num_iters):
        g = grad(x, i)
        if callback is not None:
            callback(x, i, g)
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return x


@unflatten_optimizer
def rmsprop(grad: Callable, x: np.ndarray, callback: Callable | None = None,
            num_iters: int = 100, step_size: float = 0.1, gamma: float = 0.9,
            eps: float = 1e-8) -> np.ndarray:
    """RMSProp: each step is the gradient divided by the root of a running average of its
    squares (decay ``gamma``; the average starts at one, as in autograd).

    >>> abs(float(rmsprop(lambda x, i: 2 * x, 1.0, step_size=0.01, num_iters=200))) < 1e-2
    True
    """
    mean_square = np.ones_like(x)
    for i in range(num_iters):
        g = grad(x, i)
        if callback is not None:
            callback(x, i, g)
        mean_square = gamma * mean_square + (1 - gamma) * g ** 2
        x = x - step_size * g / (np.sqrt(mean_square) + eps)
    return x


@unflatten_optimizer
def adam(grad: Callable, x: np.ndarray, callback: Callable | None = None, num_iters: int = 100,
         step_size: float = 0.001, b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-8) -> np.ndarray:
    """Adam (Kingma and Ba, 2015): running averages of the gradient (decay ``b1``) and of its
    square (decay ``b2``), both corrected for their start at zero; each step is their ratio
    (the mean over the root of the square) times ``step_size``.

    >>> abs(float(adam(lambda x, i: 2 * x, 1.0, step_size=0.1, num_iters=500))) < 1e-3
    True
    """
    mean = np.zeros_like(x)
    square = np.zeros_like(x)
    for i in range(num_iters):
        g = grad(x, i)
        if callback is not None:
            callback(x, i, g)
        mean = b1 * mean + (1 - b1) * g
        square = b2 * square + (1 - b2) * g ** 2
        corrected_mean = mean / (1 - b1 ** (i + 1))
        corrected_square = square / (1 - b2 ** (i + 1))
        x = x - step_size * corrected_mean / (np.sqrt(corrected_square) + eps)
    return x
