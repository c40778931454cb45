"""The directional check of the checking mode: a gradient against one finite difference.

In ``chainrules.checking(directional=True)``, each gradient that ``grad`` and
``value_and_grad`` return is compared with a central finite difference of the function along
one random direction ``v`` of its differentiated arguments: ``<g, v>`` against
``(f(x + h v) - f(x - h v)) / 2h``, two more evaluations of ``f``. No structural check can see
a library that returns a value it cached from an untraced call, or a user's rule with a wrong
formula; this one does, whatever the cause. The direction comes from a generator of its own
(the user's random streams are not touched). A kink exactly at ``x`` can fail it. A
gradient that is zero along ``v`` is also checked with a step of 1e-3 (relative), which a cache
matched by tolerance (``np.allclose(z, last_z)``) does not take for its cached point.

>>> import numpy as np
>>> check_direction(lambda x: np.sum(x ** 2), (np.ones(2),), {}, (0,), (2 * np.ones(2),), 2.0)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ...core.check_error import CheckError
from ...core.naming import function_name
from ...core.trees import flatten

__all__ = ["check_direction"]

_DIRECTIONS = np.random.default_rng(20261205)


def check_direction(f: Callable, args: tuple, kwargs: dict, numbers: Sequence[int],
                    gradients: tuple, y: Any) -> None:
    """Raise `CheckError` if ``gradients`` (of ``f`` at ``args``, one per argument in
    ``numbers``) disagree with a central finite difference along a random direction."""
    vectors, unflattens, directions = [], [], []
    predicted = 0.0
    low = False
    for number, gradient in zip(numbers, gradients):
        vector, unflatten = flatten(args[number])
        if vector.size == 0:
            continue
        low = low or vector.dtype in (np.float32, np.complex64)
        direction = _DIRECTIONS.standard_normal(vector.shape)
        if vector.dtype.kind == "c":
            direction = direction + 1j * _DIRECTIONS.standard_normal(vector.shape)
        direction /= np.linalg.norm(direction)
        g = np.asarray(unflatten.vector_of(gradient))
        predicted += float(np.real(np.vdot(g, direction)))  # Re <g, v>: the convention
        vectors.append((number, vector))
        unflattens.append(unflatten)
        directions.append(direction)
    if not vectors:
        return
    scale = max(float(np.max(np.abs(vector), initial=0.0)) for _, vector in vectors)
    h = (1e-3 if low else 1e-6) * (1.0 + scale)

    def value_at(step: float) -> float:
        moved = list(args)
        for (number, vector), unflatten, direction in zip(vectors, unflattens, directions):
            moved[number] = unflatten(vector + step * direction)
        return float(np.real(f(*moved, **kwargs)))

    fd = (value_at(h) - value_at(-h)) / (2 * h)
    rtol = 1e-2 if low else 1e-5
    atol = (1e-3 if low else 1e-8) * (1.0 + abs(float(np.real(y))))
    if predicted == 0.0 and abs(fd) <= atol:
        # A zero gradient along a random direction: also from a larger step, which a cache
        # matched by tolerance (np.allclose(z, last_z)) cannot mistake for the cached point.
        h = 1e-3 * (1.0 + scale)
        fd = (value_at(h) - value_at(-h)) / (2 * h)
        atol = 1e-3 * (1.0 + abs(float(np.real(y))))
    if not abs(predicted - fd) <= atol + rtol * max(abs(predicted), abs(fd)):
        raise CheckError(
            f"checking: the gradient of {function_name(f)} disagrees with finite differences "
            f"along a random direction v of its arguments {list(numbers)}: <gradient, v> = "
            f"{predicted!r}, (f(x + h v) - f(x - h v)) / 2h = {fd!r} (h = {h:.1e}). A value "
            f"the function computed outside the trace (a cache, a call on plain values) or a "
            f"rule with a wrong formula gives a wrong gradient; check the rules registered by "
            f"your code first (chainrules.testing.test_rrule).")
