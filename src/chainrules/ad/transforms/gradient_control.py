"""Controlling what gets differentiated and stored: `stop_gradient` and `checkpoint`.

`stop_gradient(x)` is the identity whose derivative is zero: a function declared
`non_differentiable`, so every engine and mode (reverse, forward, batched, any order) computes
it on the primal values and records nothing.

`checkpoint(f)` trades time for memory: a traced call of the checkpointed function is recorded
as one operation whose forward pass runs ``f`` on plain values (no tape of its inside is kept;
only its inputs are) and whose pullback runs ``f`` again under ``rrule_via_ad`` to get the
cotangents. A loop of ``N`` steps cut into checkpointed segments of ``k`` steps keeps the ``N/k``
segment inputs and, in the backward pass, the tape of one segment at a time.

The recomputation must compute the same function: random draws are made again from the same
state. NumPy's global generator (``np.random.rand``...), Python's ``random`` module, and every
``np.random.Generator`` or ``RandomState`` among ``f``'s arguments or in what it closes over
or among the module globals its code names, are set back to their state at the forward call
for the recomputation, and restored after it, so the caller's streams go on as if it had not
happened. A generator ``f`` reaches otherwise (through a function it calls, an attribute of an
object it does not take) is not: pass it in, or draw the random numbers outside ``f``.
"""

from __future__ import annotations

import functools
import random
from typing import Any, Callable, TypeVar

import numpy as np

from ...core.config import RuleConfig, rrule_via_ad
from ...core.registry import frule, non_differentiable, rrule
from ...core.structure import (is_structure, leaves, replace_paths, tangent_at,
                              tangent_from_paths)
from ...core.tangents import AbstractZero, NoTangent, ZeroTangent
from ...core.thunks import unthunk
from .api import primitive, require_callable, run_jvp, wraps_callable
from ..trace.values import is_differentiable

__all__ = ["checkpoint", "stop_gradient"]

T = TypeVar("T")


@primitive
def stop_gradient(x: T) -> T:
    """``x`` itself, with a zero derivative: nothing flows back through it, at any order and in
    forward mode too. ``x`` may be a number, an array or a structure of them.

    Use it for targets that must be held fixed (a bootstrapped value in reinforcement
    learning), for a straight-through estimator, or to keep part of a loss out of the gradient.

    >>> import numpy as np
    >>> from chainrules import grad
    >>> grad(lambda x: x * stop_gradient(x))(3.0)        # d/dx (x * c) with c = x held fixed
    3.0
    >>> def round_straight_through(x):                     # forward: round; backward: identity
    ...     return x + stop_gradient(np.round(x) - x)
    >>> grad(lambda x: np.sum(round_straight_through(x) ** 2))(np.array([0.4, 1.6]))
    array([0., 4.])
    """
    return x


non_differentiable(stop_gradient)


@primitive
def checkpointed_call(f: Callable, *args: Any) -> Any:
    """``f(*args)``, its output flattened (see `_Flattened`): what a traced call of a
    `checkpoint`-ed function records, as one operation whose rules recompute ``f`` in the
    backward pass.

    >>> checkpointed_call(lambda x, y: x * y, 2.0, 3.0)
    6.0
    """
    return _flatten(f(*args))


class _Flattened(tuple):
    """A structured output as the engine records it: ``(skeleton, *leaves)``, the skeleton
    being the output with each differentiable leaf replaced by `_SLOT` (the engine follows
    outputs that are one tuple of arrays; a checkpointed function may return any structure)."""


_SLOT = object()


def _flatten(y: Any) -> Any:
    if not is_structure(y):
        return y
    found = list(leaves(y, _is_output_leaf))
    skeleton = replace_paths(y, {path: _SLOT for path, _ in found})
    return _Flattened((skeleton, *[value for _, value in found]))


def _unflatten(result: Any) -> Any:
    if type(result) is not _Flattened:
        return result
    skeleton, *values = result
    paths = [path for path, _ in leaves(skeleton, _is_slot)]
    return replace_paths(skeleton, dict(zip(paths, values)))


def _call(f: Callable, *args: Any) -> Any:
    return f(*args)


def _is_slot(value: Any) -> bool:
    return value is _SLOT


def _is_output_leaf(value: Any) -> bool:
    return is_differentiable(value)


def checkpoint(f: Callable[..., T]) -> Callable[..., T]:
    """``f`` whose inside is recomputed in the backward pass instead of stored.

    When traced, a call of the returned function is recorded as one operation: its forward
    pass runs ``f`` on plain values and keeps only the inputs, and its pullback runs ``f``
    again under reverse mode (``rrule_via_ad``) to get the cotangents. Cutting a long loop
    into checkpointed segments of ``k`` steps bounds the reverse pass's memory by the ``N/k``
    segment inputs plus one segment's tape, at the cost of one more forward pass. Values that
    ``f`` closes over are differentiated (its own tangent, as for any closure), keyword
    arguments are too; inputs and outputs may be structures. In forward mode (``jvp``) the
    pushforward runs ``f`` once under a forward trace; second derivatives work (the recomputed
    forward pass is itself differentiated).

    >>> import numpy as np
    >>> from chainrules import grad
    >>> def segment(x):                # 8 steps, recomputed in the backward pass
    ...     for _ in range(8):
    ...         x = np.sin(x) * 0.9
    ...     return x
    >>> segment = checkpoint(segment)
    >>> def run(x):                    # 40 steps: 5 segment inputs kept, not 40 steps' values
    ...     for _ in range(5):
    ...         x = segment(x)
    ...     return np.sum(x)
    >>> x0 = np.array([0.3, 0.7])
    >>> h = 1e-6
    >>> fd = (run(x0 + [h, 0]) - run(x0 - [h, 0])) / (2 * h)
    >>> bool(np.isclose(grad(run)(x0)[0], fd))
    True
    """
    require_callable("checkpoint", f)
    @wraps_callable(f)
    def checkpointed(*args: Any, **kwargs: Any) -> T:
        function = functools.partial(f, **kwargs) if kwargs else f
        return _unflatten(checkpointed_call(function, *args))

    return checkpointed


def _is_generator(value: Any) -> bool:
    return issubclass(type(value), (np.random.Generator, np.random.RandomState))


class _RandomStates:
    """The states of the random streams ``f`` may draw from, to draw the same numbers again
    (and NumPy's floating-point error state, to run ``f`` again as it ran)."""

    def __init__(self, f: Callable, args: tuple):
        self.error_state = np.geterr()  # the user's, for the user's code run again
        self.generators = [g for _, g in leaves((f, args), _is_generator)] + \
            [g for g in _named_globals(f) if _is_generator(g)]
        self.states = self._read()

    def _read(self) -> tuple:
        return (np.random.get_state(), random.getstate(),
                [_generator_state(g) for g in self.generators])

    def _write(self, states: tuple) -> None:
        numpy_state, python_state, generator_states = states
        np.random.set_state(numpy_state)
        random.setstate(python_state)
        for generator, state in zip(self.generators, generator_states):
            _set_generator_state(generator, state)

    def replay(self, function: Callable, *args: Any) -> Any:
        """``function(*args)`` with every stream at its saved state; the streams restored."""
        current = self._read()
        self._write(self.states)
        try:
            with np.errstate(**self.error_state):
                return function(*args)
        finally:
            self._write(current)


def _named_globals(f: Any) -> list:
    """The module globals ``f``'s own code names (a module-level ``rng``), if it is a function."""
    f = getattr(f, "func", f)  # functools.partial
    code, namespace = getattr(f, "__code__", None), getattr(f, "__globals__", None)
    if code is None or namespace is None:
        return []
    return [namespace[name] for name in code.co_names if name in namespace]


def _generator_state(generator: Any) -> Any:
    if issubclass(type(generator), np.random.Generator):
        return generator.bit_generator.state
    return generator.get_state()


def _set_generator_state(generator: Any, state: Any) -> None:
    if issubclass(type(generator), np.random.Generator):
        generator.bit_generator.state = state
    else:
        generator.set_state(state)


@rrule.register(checkpointed_call, config=True)
def _checkpointed_call_rrule(config: RuleConfig, f: Callable, *args: Any):
    streams = _RandomStates(f, args)  # the recomputation draws the same random numbers
    y = f(*args)  # no tape of the inside is kept: only f and args, for the recomputation
    flat = _flatten(y)

    def checkpointed_call_pullback(dy: Any) -> tuple:
        dy = unthunk(dy)
        if type(flat) is _Flattened:
            paths = [path for path, _ in leaves(y, _is_output_leaf)]
            dy = tangent_from_paths(y, {path: unthunk(tangent_at(dy, (position,)))
                                        for position, path in enumerate(paths, 1)})
        if isinstance(dy, AbstractZero):
            return (NoTangent(),) * (2 + len(args))
        _, pullback = streams.replay(rrule_via_ad, config, f, *args)  # the recomputation
        return (NoTangent(), *pullback(dy))

    return flat, checkpointed_call_pullback


@frule.register(checkpointed_call, config=True)
def _checkpointed_call_frule(config: RuleConfig, tangents: tuple, f: Callable, *args: Any):
    given = [unthunk(t) for t in tangents[1:]]
    given += [ZeroTangent()] * (1 + len(args) - len(given))
    # Forward mode stores nothing, so there is nothing to recompute: one forward trace of f
    # (its pushforward), with the function's own tangent for what it closes over.
    y, dy = run_jvp(_call, (f, *args), tuple(given), lend=False)
    flat = _flatten(y)
    if type(flat) is not _Flattened:
        return flat, dy
    return flat, (NoTangent(), *[tangent_at(dy, path)
                                 for path, _ in leaves(y, _is_output_leaf)])
