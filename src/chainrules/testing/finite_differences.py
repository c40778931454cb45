"""Finite differences: the reference every rule is checked against.

A function's arguments (of any structure: numbers, arrays, containers, dataclasses, objects,
closures) are taken apart into *leaves*, the float and complex numbers and arrays that can be
perturbed; integer, bool and string leaves are never perturbed. Each real degree of freedom of
each leaf (the real part, and for complex leaves the imaginary part too, of every element) is
perturbed in turn and the output's derivative along it estimated by central differences with
Richardson extrapolation over a shrinking step (Ridders' scheme): the estimate with the smallest
error estimate is kept. On smooth float64 functions this is accurate to about 1e-10 relative.

The result is a finite-difference Jacobian (`fd_jacobian`) in the real embedding, from which
both products the rules compute follow:

- ``jvp``: the output tangent for input tangents (what an frule returns);
- ``vjp``: the cotangent of each argument for an output cotangent (what an rrule's pullback
  returns), in the complex convention of chainrules: for the real loss
  ``L = Re(vdot(dy, f(x)))`` the cotangent is ``dL/dRe(x) + i dL/dIm(x)``. It is projected
  with ``ProjectTo(argument)`` (float32 stays float32, real stays real).

Low-precision leaves (float16, float32, complex64) are evaluated in float64/complex128 when the
function accepts that, so the reference is accurate even where the rule computes in float32.

>>> import numpy as np
>>> round(fd_vjp(np.sin, 1.0, 0.5)[1], 12), round(float(np.cos(0.5)), 12)
(0.87758256189, 0.87758256189)
>>> g = fd_vjp(lambda z: z.real ** 2 + z.imag ** 2, 1.0, 3 + 4j)[1]   # grad abs2 = 2z
>>> round(g.real, 9), round(g.imag, 9)
(6.0, 8.0)
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np

from ..core.projection import ProjectTo, _ProjectToNumeric
from ..core.structure import get_at, leaves, replace_at, tangent_at
from ..core.tangents import AbstractZero, NoTangent, Tangent, ZeroTangent
from ..core.thunks import unthunk

__all__ = [
    "FiniteDifferenceError", "FiniteDifferenceJacobian", "Leaf", "fd_derivative",
    "fd_jacobian", "fd_jvp", "fd_vjp", "format_path", "perturbable_leaves",
]


class FiniteDifferenceError(ValueError):
    """Finite differences could not be computed (non-finite values, changing output shape)."""


# --------------------------------------------------------------------------------------------
# Leaves: where an argument can be perturbed
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Leaf:
    """A perturbable float or complex number or array inside a value, and its path there.

    ``path`` is a tuple of field keys (positions, dict keys, attribute or captured-variable
    names, object-array positions) leading from the value to the leaf.
    """

    path: tuple
    value: Any

    @property
    def is_complex(self) -> bool:
        return np.iscomplexobj(self.value)

    @property
    def shape(self) -> tuple:
        return np.shape(self.value)


def _is_perturbable(x: Any) -> bool:
    return isinstance(ProjectTo(x), _ProjectToNumeric)


def perturbable_leaves(x: Any) -> list[Leaf]:
    """Every float/complex number or array inside ``x``, with its path; ints/bools excluded.

    >>> perturbable_leaves({"w": 1.5, "n": 3, "b": [2.0]})
    [Leaf(path=('w',), value=1.5), Leaf(path=('b', 0), value=2.0)]
    """
    return [Leaf(path, value) for path, value in leaves(x, _is_perturbable, object_arrays=True)]


def format_path(path: Sequence) -> str:
    """``('w', 2)`` -> ``".w[2]"``: how a field is named in messages."""
    parts = []
    for key in path:
        parts.append(f".{key}" if isinstance(key, str) and key.isidentifier() else f"[{key!r}]")
    return "".join(parts)


# --------------------------------------------------------------------------------------------
# Central differences with Richardson extrapolation
# --------------------------------------------------------------------------------------------

def _richardson(difference: Callable[[float], np.ndarray | None], h0: float, levels: int,
                shrink: float = 2.0) -> tuple[np.ndarray, float]:
    """The best of a Richardson table of central differences over steps h0, h0/2, ...

    ``difference(h)`` returns a central difference with step ``h`` (or ``None`` when the
    function is not finite there). Returns the estimate with the smallest error estimate and
    that error estimate (the max-norm change between neighbouring table entries).
    """
    previous: list | None = None
    best, best_error = None, np.inf
    h = h0
    done = restarts = 0
    while done < levels:
        d = difference(h)
        if d is None or not np.all(np.isfinite(d)):
            # Too large a step (it crossed a singularity or left the domain): start over.
            if restarts >= 40:
                break
            restarts += 1
            previous, best, best_error, done = None, None, np.inf, 0
            h /= shrink
            continue
        row = [d]
        if previous is None:
            if best is None:
                best = d
        else:
            factor = shrink * shrink
            for j, above in enumerate(previous):
                extrapolated = (factor * row[j] - above) / (factor - 1.0)
                error = max(_max_abs(extrapolated - row[j]), _max_abs(extrapolated - above))
                row.append(extrapolated)
                if error <= best_error:
                    best, best_error = extrapolated, error
                factor *= shrink * shrink
            # Converged, and higher order got worse than the best by far: round-off now
            # dominates, smaller steps only add noise.
            if done >= 3 and _max_abs(row[-1] - previous[-1]) >= 2.0 * best_error and \
                    best_error <= 1e-7 * max(_max_abs(best), 1e-300):
                break
        previous = row
        h /= shrink
        done += 1
    if best is None:
        raise FiniteDifferenceError(
            "finite differences: the function is not finite at any step near this point; "
            "choose a point where it is differentiable.")
    return best, best_error


def _max_abs(v: np.ndarray) -> float:
    return float(np.max(np.abs(v))) if np.size(v) else 0.0


def fd_derivative(phi: Callable[[float], Any], x: float, *, step: float = 0.05,
                  levels: int = 10) -> float:
    """The derivative of the real function ``phi`` at the real point ``x``.

    >>> abs(fd_derivative(np.exp, 1.0) - np.e) < 1e-12
    True
    """
    x = float(x)

    def difference(h):
        plus, minus = x + h, x - h
        with np.errstate(all="ignore"):
            value = (np.asarray(phi(plus), float) - np.asarray(phi(minus), float)) / (plus - minus)
        return np.atleast_1d(value)

    estimate, _ = _richardson(difference, step * max(abs(x), 0.1), levels)
    return float(estimate[0])


# --------------------------------------------------------------------------------------------
# The Jacobian of a function of structured arguments, in the real embedding
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Direction:
    argument: int      # index into (f, *args)
    leaf: int          # index into that argument's leaves
    element: int       # flat index inside the leaf
    imaginary: bool    # perturb the imaginary part


@dataclasses.dataclass(frozen=True)
class _OutputLeaf:
    path: tuple
    shape: tuple
    is_complex: bool
    start: int         # offset in the real output vector

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * (2 if self.is_complex else 1)


_HIGH_PRECISION = {np.dtype(np.float16): np.dtype(np.float64),
                   np.dtype(np.float32): np.dtype(np.float64),
                   np.dtype(np.complex64): np.dtype(np.complex128)}


def _upcast_leaf(value: Any) -> Any:
    if issubclass(type(value), (np.ndarray, np.generic)) and value.dtype in _HIGH_PRECISION:
        high = _HIGH_PRECISION[value.dtype]
        return value.astype(high) if issubclass(type(value), np.ndarray) else high.type(value)
    return value


def _upcast(x: Any) -> Any:
    for leaf in perturbable_leaves(x):
        upcast = _upcast_leaf(leaf.value)
        if upcast is not leaf.value:
            x = replace_at(x, leaf.path, upcast)
    return x


def _output_layout(y: Any) -> list[_OutputLeaf]:
    layout, start = [], 0
    for leaf in perturbable_leaves(y):
        spec = _OutputLeaf(leaf.path, np.shape(leaf.value), leaf.is_complex, start)
        layout.append(spec)
        start += spec.size
    return layout


def _output_vector(y: Any, layout: list[_OutputLeaf]) -> np.ndarray:
    parts = []
    for spec in layout:
        try:
            value = np.asarray(get_at(y, spec.path))
        except (AttributeError, KeyError, IndexError, TypeError, ValueError):
            raise FiniteDifferenceError(
                f"finite differences: the output changed structure under perturbation (no "
                f"field {format_path(spec.path)})") from None
        if value.shape != spec.shape:
            raise FiniteDifferenceError(
                f"finite differences: the output{format_path(spec.path)} changed shape from "
                f"{spec.shape} to {value.shape} under perturbation")
        if spec.is_complex:
            parts += [np.real(value).ravel(), np.imag(value).ravel()]
        else:
            if np.iscomplexobj(value) and np.any(np.imag(value) != 0):
                raise FiniteDifferenceError(
                    f"finite differences: the output{format_path(spec.path)} is real at the "
                    f"point but complex nearby; the function is not real-differentiable here")
            parts.append(np.real(value).ravel())
    if not parts:
        return np.zeros(0)
    return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])


def _vector_of_tangent(t: Any, layout: list[_OutputLeaf], what: str) -> np.ndarray:
    """A tangent of the output, laid out as the real output vector (real leaves: real part)."""
    parts = []
    for spec in layout:
        value = unthunk(tangent_at(t, spec.path))
        if isinstance(value, AbstractZero):
            parts.append(np.zeros(spec.size))
            continue
        value = np.asarray(value)
        if value.shape != spec.shape:
            raise FiniteDifferenceError(
                f"{what}{format_path(spec.path)} has shape {value.shape}; the output there has "
                f"shape {spec.shape}")
        parts.append(np.real(value).ravel().astype(np.float64))
        if spec.is_complex:
            parts.append(np.imag(value).ravel().astype(np.float64))
    return np.concatenate(parts) if parts else np.zeros(0)


def _leaf_from_components(leaf: Leaf, values: np.ndarray, directions: list[_Direction],
                          which: list[int]) -> np.ndarray:
    """An array of the leaf's shape (complex if the leaf is) from per-direction values."""
    out = np.zeros(np.shape(leaf.value), np.complex128 if leaf.is_complex else np.float64)
    flat = out.reshape(-1)
    for j in which:
        d = directions[j]
        flat[d.element] += 1j * values[j] if d.imaginary else values[j]
    return out


def _as_primal_kind(value: np.ndarray, primal: Any) -> Any:
    """A 0-d value as a scalar where the primal is one (projection does the dtype)."""
    if not issubclass(type(primal), np.ndarray) and value.shape == ():
        return value[()]
    return value


def _assemble(primal: Any, values: dict) -> Any:
    """A tangent shaped like ``primal`` from ``{path: array}``; missing leaves are zero."""
    if () in values:
        return _as_primal_kind(values[()], primal)
    groups: dict = {}
    for path, value in values.items():
        groups.setdefault(path[0], {})[path[1:]] = value
    if issubclass(type(primal), np.ndarray):  # object array
        out = np.empty(primal.shape, dtype=object)
        for position in np.ndindex(primal.shape):
            out[position] = ZeroTangent()
        for key, sub in groups.items():
            out[key] = _assemble(primal[key], sub)
        return out
    return Tangent(type(primal), {key: _assemble(get_at(primal, (key,)), sub)
                                  for key, sub in groups.items()})


class FiniteDifferenceJacobian:
    """The Jacobian of ``f(*args)`` by finite differences, with respect to ``(f, *args)``.

    Position 0 is the function itself (perturbed through its captured variables or fields,
    when it has any), positions 1.. are the positional arguments, as in a pullback's tuple.
    """

    def __init__(self, function: Callable, args: tuple, kwargs: dict, *, step: float = 0.05,
                 levels: int = 10, upcast: bool = True):
        self.function, self.args, self.kwargs = function, tuple(args), dict(kwargs)
        self.primals = (function, *args)
        self.leaves = [perturbable_leaves(p) for p in self.primals]
        self.output = self._call(self.primals)
        self.layout = _output_layout(self.output)
        self.output_size = sum(spec.size for spec in self.layout)
        base = self.primals
        if upcast and any(_upcast_leaf(leaf.value) is not leaf.value
                          for leaves in self.leaves for leaf in leaves):
            try:
                high = tuple(_upcast(p) for p in self.primals)
                _output_vector(self._call(high), self.layout)
                base = high
            except Exception:  # the function insists on its dtypes: use them
                base = self.primals
        self._base = base
        self._base_leaves = [perturbable_leaves(p) for p in base]
        self.directions: list[_Direction] = []
        for a, leaves in enumerate(self._base_leaves):
            for i, leaf in enumerate(leaves):
                for k in range(int(np.size(leaf.value))):
                    self.directions.append(_Direction(a, i, k, False))
                    if leaf.is_complex:
                        self.directions.append(_Direction(a, i, k, True))
        self.columns = np.zeros((self.output_size, len(self.directions)))
        self.errors = np.zeros(len(self.directions))
        for j, direction in enumerate(self.directions):
            self.columns[:, j], self.errors[j] = self._column(direction, step, levels)

    def _call(self, primals: tuple) -> Any:
        return primals[0](*primals[1:], **self.kwargs)

    def _column(self, d: _Direction, step: float, levels: int) -> tuple[np.ndarray, float]:
        leaf = self._base_leaves[d.argument][d.leaf]
        original = leaf.value
        is_array = issubclass(type(original), np.ndarray)
        element = original.reshape(-1)[d.element] if is_array else original
        x0 = float(np.imag(element) if d.imaginary else np.real(element))

        def with_component(v: float) -> tuple[Any, float]:
            if is_array:
                new = original.copy()
                flat = new.reshape(-1)
                old = flat[d.element]
                flat[d.element] = (np.real(old) + 1j * v) if d.imaginary else (
                    v + 1j * np.imag(old) if leaf.is_complex else v)
                actual = flat[d.element]
            else:
                kind = type(original)
                value = complex(np.real(original), v) if d.imaginary else (
                    complex(v, np.imag(original)) if leaf.is_complex else v)
                new = kind(value) if kind not in (float, complex) else kind(value)
                actual = new
            actual = float(np.imag(actual) if d.imaginary else np.real(actual))
            return new, actual

        primals = list(self._base)

        def difference(h: float):
            plus, x_plus = with_component(x0 + h)
            minus, x_minus = with_component(x0 - h)
            if x_plus == x_minus:
                return None
            primals[d.argument] = replace_at(self._base[d.argument], leaf.path, plus)
            with np.errstate(all="ignore"):
                y_plus = _output_vector(self._call(tuple(primals)), self.layout)
            primals[d.argument] = replace_at(self._base[d.argument], leaf.path, minus)
            with np.errstate(all="ignore"):
                y_minus = _output_vector(self._call(tuple(primals)), self.layout)
            return (y_plus - y_minus) / (x_plus - x_minus)

        if self.output_size == 0:
            return np.zeros(0), 0.0
        return _richardson(difference, step * max(abs(x0), 0.1), levels)

    # -- products --------------------------------------------------------------------------

    def vjp(self, output_tangent: Any) -> tuple:
        """The cotangent of each of ``(f, *args)`` for ``output_tangent``, projected.

        Arguments that cannot be perturbed get `NoTangent`.
        """
        return self.vjp_with_scale(output_tangent)[0]

    def vjp_with_scale(self, output_tangent: Any) -> tuple[tuple, tuple]:
        """``vjp`` and, per argument, the scale of each element: ``|dy| @ |J|`` (the size of
        the terms summed, which bounds round-off and finite-difference error)."""
        seed = _vector_of_tangent(output_tangent, self.layout, "the output tangent")
        values = seed @ self.columns if self.output_size else np.zeros(len(self.directions))
        scales = np.abs(seed) @ np.abs(self.columns) if self.output_size else values * 0
        scales = scales + np.abs(seed).sum() * self.errors
        cotangents, scale_tangents = [], []
        for a, primal in enumerate(self.primals):
            leaves = self._base_leaves[a]
            if not leaves:
                cotangents.append(NoTangent())
                scale_tangents.append(NoTangent())
                continue
            grads, grad_scales = {}, {}
            for i, leaf in enumerate(leaves):
                which = [j for j, d in enumerate(self.directions)
                         if d.argument == a and d.leaf == i]
                grads[leaf.path] = _leaf_from_components(leaf, values, self.directions, which)
                scale = np.zeros(np.shape(leaf.value))
                flat = scale.reshape(-1)
                for j in which:
                    flat[self.directions[j].element] = max(flat[self.directions[j].element],
                                                           scales[j])
                grad_scales[leaf.path] = scale
            cotangents.append(ProjectTo(primal)(_assemble(primal, grads)))
            scale_tangents.append(_assemble(primal, grad_scales))
        return tuple(cotangents), tuple(scale_tangents)

    def jvp(self, tangents: Sequence) -> Any:
        """The output tangent for the tangents of ``(f, *args)``, projected onto the output."""
        return self.jvp_with_scale(tangents)[0]

    def jvp_with_scale(self, tangents: Sequence) -> tuple[Any, Any]:
        """``jvp`` and the scale of each output element, ``|J| @ |dx|``."""
        if len(tangents) != len(self.primals):
            raise ValueError(f"expected {len(self.primals)} tangents (the function's, then "
                             f"one per argument), got {len(tangents)}")
        dx = np.zeros(len(self.directions))
        leaf_values: dict = {}
        for j, d in enumerate(self.directions):
            key = (d.argument, d.leaf)
            if key not in leaf_values:
                path = self._base_leaves[d.argument][d.leaf].path
                value = unthunk(tangent_at(tangents[d.argument], path))
                leaf_values[key] = None if isinstance(value, AbstractZero) else \
                    np.asarray(value).reshape(-1)
            value = leaf_values[key]
            if value is not None:
                element = value[d.element] if value.size > 1 else value[0]
                dx[j] = np.imag(element) if d.imaginary else np.real(element)
        vector = self.columns @ dx
        scale = np.abs(self.columns) @ np.abs(dx) + self.errors @ np.abs(dx)
        return self._output_tangent(vector), self._output_tangent(scale, scale=True)

    def _output_tangent(self, vector: np.ndarray, scale: bool = False) -> Any:
        if not self.layout:
            return NoTangent()
        values = {}
        for spec in self.layout:
            n = int(np.prod(spec.shape, dtype=np.int64))
            part = vector[spec.start:spec.start + n].reshape(spec.shape)
            if spec.is_complex:
                imaginary = vector[spec.start + n:spec.start + 2 * n].reshape(spec.shape)
                part = np.maximum(part, imaginary) if scale else part + 1j * imaginary
            values[spec.path] = part
        tangent = _assemble(self.output, values)
        return tangent if scale else ProjectTo(self.output)(tangent)


def fd_jacobian(f: Callable, *args: Any, fkwargs: dict | None = None, step: float = 0.05,
                levels: int = 10, upcast: bool = True) -> FiniteDifferenceJacobian:
    """The finite-difference Jacobian of ``f(*args, **fkwargs)`` w.r.t. ``(f, *args)``.

    ``step`` is the first step relative to ``max(|x|, 0.1)``; ``levels`` the number of halvings
    of the Richardson table.

    >>> J = fd_jacobian(np.multiply, 2.0, 3.0)
    >>> [round(c, 10) for c in J.vjp(1.0)[1:]]
    [3.0, 2.0]
    """
    return FiniteDifferenceJacobian(f, args, fkwargs or {}, step=step, levels=levels,
                                    upcast=upcast)


def fd_vjp(f: Callable, output_tangent: Any, *args: Any, **options: Any) -> tuple:
    """``(df, dx1, dx2, ...)``: what a correct pullback of ``f`` returns for ``output_tangent``.

    >>> df, dx, dn = fd_vjp(np.multiply, 1.0, 2.0, 3)      # ints are not perturbed
    >>> df, round(dx, 9), dn
    (NoTangent(), 3.0, NoTangent())
    """
    return fd_jacobian(f, *args, **options).vjp(output_tangent)


def fd_jvp(f: Callable, tangents: Sequence, *args: Any, **options: Any) -> Any:
    """The output tangent of ``f`` for ``tangents`` of ``(f, *args)``: what an frule returns.

    >>> from chainrules import NoTangent
    >>> round(float(fd_jvp(np.exp, (NoTangent(), 2.0), 0.0)), 10)
    2.0
    """
    return fd_jacobian(f, *args, **options).jvp(tangents)
