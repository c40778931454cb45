"""``check_grads``: a whole function's derivatives against finite differences.

Where `test_rrule` checks one rule, ``check_grads(f, *args)`` checks what the engine makes of
a whole function of yours (a loss, a model, code that calls your own rules), as JAX's and
autograd's ``check_grads`` do:

- ``"rev"``: ``vjp(f, *args)`` with a random output cotangent, against the finite-difference
  vector-Jacobian product (every argument, every float or complex leaf inside it);
- ``"fwd"``: ``jvp(f, args, tangents)`` with random tangents, against finite differences;
- ``order=2`` (the default) also checks the derivatives of those products, with respect to
  the arguments, in each mode: reverse over reverse, forward over reverse, and so on.

A failure raises an `AssertionError` naming the mode, the order, the argument (and the field
inside it) and the element, with the two values.

>>> import numpy as np
>>> check_grads(lambda x, y: np.sum(np.sin(x) * y), np.array([0.1, 0.2]), 3.0)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core.structure import register_leaf_type, tangent_at
from ..core.tangents import AbstractZero, NoTangent
from ..core.thunks import unthunk
from ..core.trees import _Layout, vector_of
from .finite_differences import fd_jacobian, format_path, perturbable_leaves
from .strategies import rand_tangent

__all__ = ["check_grads"]

_MODES = ("fwd", "rev")
_MODE_NAMES = {"rev": "reverse mode (vjp)", "fwd": "forward mode (jvp)"}


class _Fixed:
    """``f`` as finite differences see it: fixed (what it captures is not perturbed: only the
    arguments are checked)."""

    __slots__ = ("f",)

    def __init__(self, f: Callable):
        self.f = f

    def __call__(self, *args: Any) -> Any:
        return self.f(*args)


register_leaf_type(_Fixed)


def check_grads(f: Callable, *args: Any, order: int = 2, modes: Sequence[str] = _MODES,
                rtol: float = 1e-5, atol: float = 1e-8, seed: int = 0) -> None:
    """Check ``f``'s derivatives at ``args`` up to ``order`` in each of ``modes`` against
    finite differences; raise `AssertionError` on the first mismatch.

    Every float or complex leaf of every argument is checked (structures of any kind:
    dicts, lists, dataclasses...); integers, bools and strings are held fixed. An element
    passes when ``|ad - fd| <= atol + rtol * scale``, where ``scale`` bounds the size of the
    terms summed (``|dy| @ |J|``). Random tangents come from ``seed``.

    >>> import numpy as np
    >>> check_grads(lambda p: p["w"] @ p["w"] * p["b"], {"w": np.ones(2), "b": 2.0})
    >>> check_grads(lambda x: np.abs(x) ** 2, 3 + 4j, order=1, modes=["rev"])
    """
    modes = tuple(modes)
    unknown = [m for m in modes if m not in _MODES]
    if unknown or not modes:
        raise ValueError(f"check_grads: modes must be a non-empty subset of {_MODES}, got "
                         f"{modes!r}.")
    if not issubclass(type(order), (int, np.integer)) or issubclass(type(order), bool) or order < 1:
        raise ValueError(f"check_grads: order must be a positive int, got {order!r}.")
    rng = np.random.default_rng(seed)
    _check(f, tuple(args), int(order), modes, rtol, atol, rng, 1, "")


def _name(f: Callable) -> str:
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


def _check(f: Callable, args: tuple, order: int, modes: tuple, rtol: float, atol: float,
           rng: np.random.Generator, level: int, through: str) -> None:
    fd = fd_jacobian(_Fixed(f), *args)
    for mode in modes:
        where = f"check_grads({_name(f)}): {_MODE_NAMES[mode]} at order {level}{through}"
        if mode == "rev":
            dy = rand_tangent(fd.output, rng)
            got = _run(where, lambda: _vjp(f, args, dy))
            expected, scales = fd.vjp_with_scale(dy)
            for i, arg in enumerate(args):
                _compare(where, f"argument {i}", arg, got[i], expected[i + 1], scales[i + 1],
                         rtol, atol)
        else:
            tangents = tuple(rand_tangent(a, rng) for a in args)
            got = _run(where, lambda: _jvp(f, args, tangents))
            expected, scale = fd.jvp_with_scale((NoTangent(),) + tangents)
            _compare(where, "the output", fd.output, got, expected, scale, rtol, atol)
        if order > 1:
            product = _product(f, mode, args, rng)
            _check(product, args, order - 1, modes, rtol, atol, rng, level + 1,
                   f" (the derivative of the {_MODE_NAMES[mode]} product)")


def _run(where: str, compute: Callable[[], Any]) -> Any:
    try:
        return compute()
    except Exception as error:
        raise AssertionError(f"{where} failed: {type(error).__name__}: {error}") from error


def _vjp(f: Callable, args: tuple, dy: Any) -> tuple:
    from ..ad.transforms.api import vjp  # the testing kit does not need the engine to be imported
    return vjp(f, *args)[1](dy)


def _jvp(f: Callable, args: tuple, tangents: tuple) -> Any:
    from ..ad.transforms.api import jvp
    return jvp(f, args, tangents)[1]


def _product(f: Callable, mode: str, args: tuple, rng: np.random.Generator) -> Callable:
    """The function whose derivatives are ``f``'s at the next order: the vjp (or jvp) with a
    fixed random seed, as a function of the arguments, flattened to one vector."""
    y = f(*args)
    if mode == "rev":
        dy = rand_tangent(y, rng)
        layouts = [_Layout(a) for a in args]

        def reverse_product(*xs: Any) -> Any:
            cotangents = _vjp(f, xs, dy)
            parts = [vector_of(c, layout) for c, layout in zip(cotangents, layouts)]
            return np.concatenate(parts)
        reverse_product.__qualname__ = f"vjp({_name(f)})"
        return reverse_product
    tangents = tuple(rand_tangent(a, rng) for a in args)
    layout = _Layout(y)

    def forward_product(*xs: Any) -> Any:
        return vector_of(_jvp(f, xs, tangents), layout)
    forward_product.__qualname__ = f"jvp({_name(f)})"
    return forward_product


def _compare(where: str, what: str, primal: Any, got: Any, expected: Any, scale: Any,
             rtol: float, atol: float) -> None:
    for leaf in perturbable_leaves(primal):
        name = what + format_path(leaf.path)
        value = unthunk(tangent_at(got, leaf.path))
        want = np.asarray(unthunk(tangent_at(expected, leaf.path)))
        bound = np.asarray(unthunk(tangent_at(scale, leaf.path)))
        if isinstance(value, AbstractZero):
            value = np.zeros(want.shape)
        value = np.asarray(value)
        if value.shape != want.shape:
            raise AssertionError(f"{where}: {name} has shape {value.shape}; expected "
                                 f"{want.shape}, the shape of the primal there.")
        if isinstance(bound, AbstractZero) or bound.dtype == object:
            bound = np.abs(want)
        error = np.abs(value - want)
        tolerance = atol + rtol * np.maximum(np.abs(bound), np.abs(want))
        bad = np.argwhere(~(error <= tolerance).reshape(value.shape or (1,)))
        if bad.shape[0]:
            index = tuple(int(i) for i in bad[0][:value.ndim])
            at = f" at element {index}" if value.ndim else ""
            raise AssertionError(
                f"{where} is wrong for {name}{at}: got {value[index]!r}, finite differences "
                f"give {want[index]!r} (|difference| {error[index]:.3g} > tolerance "
                f"{tolerance[index]:.3g}; {bad.shape[0]} of {max(value.size, 1)} element(s) "
                f"off).")
