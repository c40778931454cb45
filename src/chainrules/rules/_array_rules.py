"""Machinery shared by the array rules (`reductions`, `shape`): one way to bind NumPy's
arguments, refuse options, project onto array-like arguments and register a rule pair.

A rule here is two formulas on a `Call` (the array argument, the output, the bound options):
``back(call, dy)`` gives the dense cotangent of the array argument and ``forward(call, dx)``
the output tangent. `register` wraps them into an rrule and an frule that bind the arguments,
refuse unsupported options, short-circuit zeros, check the cotangent's shape and project.
Functions that are linear in their array argument need no ``forward``: their pushforward is
the function itself applied to the tangent. Further differentiable parameters (``weights`` of
``np.average``...) get their own pair of formulas, used when they are passed positionally.

Array-like arguments may be nested lists or tuples (``np.array([a, b])``,
``np.concatenate((x, y))``): their cotangent is a ``Tangent(type(seq), {i: d_i})``, built by
`project_onto`, and their tangent is made dense by `dense_tangent`.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Callable

import numpy as np

from ..core.accumulate import accumulate
from ..core.dtypes import cast_to, tangent_dtype
from ..core.projection import NO_TANGENT_PROJECTOR, ProjectionError, ProjectTo
from ..core.registry import frule, rrule
from ..core.tangents import AbstractZero, NoTangent, Tangent, ZeroTangent
from ..core.thunks import InplaceableThunk, Thunk, unthunk

try:
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # NumPy < 2
    from numpy.core.numeric import normalize_axis_tuple  # type: ignore[no-redef]

__all__ = ["Axes", "Call", "LINEAR", "dense_tangent", "diagonal_embed", "has_tangent",
           "normalize_axis_tuple", "parts_of", "project_onto", "register", "spread", "unsupported"]


# --- arguments --------------------------------------------------------------------------------

class Parameters:
    """The parameter names and defaults of a NumPy function, to bind a call's arguments fast."""

    __slots__ = ("name", "names", "defaults")

    def __init__(self, f: Any):
        self.name = f"{f.__module__}.{f.__name__}"
        self.names: list[str] = []
        self.defaults: dict[str, Any] = {}
        for parameter in inspect.signature(f).parameters.values():
            if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
                self.names.append(parameter.name)
            if parameter.default is not parameter.empty:
                default = parameter.default
                self.defaults[parameter.name] = None if default is np._NoValue else default

    def bind(self, args: tuple, kwargs: dict) -> dict:
        """The options by name: defaults (NumPy's "no value" read as None), then the call's."""
        options = dict(self.defaults)
        options.update(zip(self.names, args))
        options.update(kwargs)
        return options


_HOW_TO_AVOID = {
    "out": "compute the result without out= and assign it afterwards",
    "where": "apply np.where to the input (or the result) instead",
    "initial": "combine it with the result yourself, e.g. np.sum(x) + initial or "
               "np.maximum(np.max(x), initial)",
    "mean": "let the function compute the mean itself",
    "order": "structured (record) arrays have no tangents",
}


def refuse(name: str, options: dict, refused: tuple) -> None:
    """Raise a TypeError naming ``name`` and the option if one of ``refused`` was given."""
    for option in refused:
        value = options.get(option)
        if value is None or (option == "where" and value is True):
            continue
        raise TypeError(
            f"{name}: the {option}= argument is not supported in differentiated code; "
            f"{_HOW_TO_AVOID.get(option, f'call {name} without {option}=')}.")


def unsupported(name: str, option: str, value: Any, supported: str) -> NotImplementedError:
    """The error for an option value that has no rule (raise it)."""
    return NotImplementedError(
        f"{name}: {option}={value!r} is not supported in differentiated code (supported: "
        f"{supported}).")


# --- array-like arguments -----------------------------------------------------------------------

_SCALAR_TYPES = frozenset({float, complex, np.float16, np.float32, np.float64, np.longdouble,
                           np.complex64, np.complex128, np.clongdouble})


class _ProjectSequence:
    """Projector onto a (nested) list or tuple of numbers and arrays: a positional Tangent."""

    __slots__ = ("primal", "numbers", "_parts")

    def __init__(self, x: list | tuple):
        self.primal = x
        self._parts = None
        # A flat sequence of numbers of one float or complex type (the usual np.array([a, b]))
        # is projected in one step, as an array of that type.
        kind = type(x[0]) if x else None
        self.numbers = None
        if kind in _SCALAR_TYPES and len(set(map(type, x))) == 1:
            self.numbers = (ProjectTo(np.zeros(len(x), np.dtype(kind))), kind)

    @property
    def parts(self) -> list:
        """The projector of each element."""
        if self._parts is None:
            self._parts = [project_onto(element) for element in self.primal]
        return self._parts

    def __call__(self, cotangent: Any) -> Any:
        """``cotangent`` is an array stacking the elements' cotangents, or a list of them."""
        cotangent = unthunk(cotangent)
        if isinstance(cotangent, AbstractZero):
            return cotangent
        primal_type = type(self.primal)
        if self.numbers is not None and isinstance(cotangent, np.ndarray):
            project, kind = self.numbers
            values = project(cotangent)
            values = values.tolist() if kind in (float, complex) else list(values)
            return Tangent(primal_type, dict(enumerate(values)))
        backing = {}
        for position, project in enumerate(self.parts):
            if project is NO_TANGENT_PROJECTOR:
                continue
            value = project(cotangent[position])
            if not isinstance(value, AbstractZero):
                backing[position] = value
        return Tangent(primal_type, backing) if backing else ZeroTangent()


def project_onto(x: Any) -> Any:
    """The projector onto the tangent space of the array-like ``x``.

    Arrays and numbers get `ProjectTo`; lists and tuples get a positional ``Tangent``, element
    by element, from a cotangent that stacks them (an array) or lists them.

    >>> project_onto([1.0, 2])(np.array([0.5, 0.5]))
    Tangent[list](0: 0.5)
    """
    if isinstance(x, (list, tuple)):
        return _ProjectSequence(x)
    return ProjectTo(x)


def has_tangent(project: Any) -> bool:
    """Whether the argument behind the projector ``project`` can be perturbed at all."""
    if isinstance(project, _ProjectSequence):
        return project.numbers is not None or any(has_tangent(part) for part in project.parts)
    return project is not NO_TANGENT_PROJECTOR


def dense_tangent(x: Any, dx: Any) -> Any:
    """The tangent ``dx`` of the array-like ``x`` as arrays: zeros where ``dx`` is zero.

    A list or tuple ``x`` gives a list of dense tangents (its elements may differ in shape).

    >>> dense_tangent([1.0, np.ones(2)], Tangent(list, {0: 3.0}))
    [array(3.), array([0., 0.])]
    """
    dx = unthunk(dx)
    if isinstance(x, (list, tuple)):
        return [dense_tangent(element, dx[position]) for position, element in enumerate(x)]
    if isinstance(dx, AbstractZero):
        return np.zeros(np.shape(x), tangent_dtype(np.result_type(x)) or np.float64)
    return np.asarray(dx)


def parts_of(cotangent: Any, count: int) -> list:
    """The ``count`` cotangents of a list or tuple output (a list, tuple or Tangent), unthunked;
    missing entries are zero."""
    cotangent = unthunk(cotangent)
    if isinstance(cotangent, (list, tuple)) and len(cotangent) != count:
        raise ProjectionError(
            f"expected a cotangent for each of the {count} outputs, got {len(cotangent)}.")
    return [unthunk(cotangent[i]) for i in range(count)]


# --- the call ------------------------------------------------------------------------------------

class Axes:
    """The axes a reduction runs over, and how to line its output back up with its input.

    >>> axes = Axes((2, 3, 4), axis=(0, -1), keepdims=False)
    >>> axes.axes, axes.kept_shape, axes.count
    ((0, 2), (1, 3, 1), 8)
    """

    __slots__ = ("axes", "keepdims", "kept_shape", "count")

    def __init__(self, shape: tuple, axis: Any, keepdims: Any):
        ndim = len(shape)
        axes = tuple(range(ndim)) if axis is None else normalize_axis_tuple(axis, ndim)
        self.axes = axes
        self.keepdims = bool(keepdims)
        self.kept_shape = tuple(1 if i in axes else n for i, n in enumerate(shape))
        self.count = math.prod(shape[i] for i in axes)

    def keep(self, value: Any) -> np.ndarray:
        """A value of the reduction's output shape, reshaped to broadcast against the input."""
        return np.reshape(value, self.kept_shape)

    def reduce(self, value: Any) -> Any:
        """``value`` (input-shaped) summed over the axes, in the output's shape."""
        return np.sum(value, axis=self.axes, keepdims=self.keepdims)


class Call:
    """One differentiated call ``y = f(x, *rest, **kwargs)``, as the formulas see it."""

    __slots__ = ("f", "args", "kwargs", "options", "x", "y", "_array", "_axes", "_memo",
                 "_shape", "_dtype", "_is_array")

    def __init__(self, f: Any, args: tuple, kwargs: dict, options: dict, y: Any):
        self.f, self.args, self.kwargs, self.options, self.y = f, args, kwargs, options, y
        self.x = args[0]
        self._array = self._axes = self._shape = self._dtype = self._is_array = None
        self._memo: dict = {}

    def forget_values(self) -> None:
        """Keep only the argument's shape, dtype and axes, for formulas that read nothing
        else (``sum``, ``mean``): the arrays and options can then be freed after the forward
        pass, which is what keeps a long loop's tape small."""
        self._shape, self._dtype = self.a.shape, self.dtype
        self._is_array = isinstance(self.x, np.ndarray)
        _ = self.axes
        self.options = {}
        self.args = self.x = self.y = self._array = None

    @property
    def shape(self) -> tuple:
        """The shape of the array argument."""
        return self._shape if self._shape is not None else self.a.shape

    @property
    def is_array(self) -> bool:
        """Whether the array argument is an ndarray (not a list or a scalar)."""
        return self._is_array if self._is_array is not None else isinstance(self.x, np.ndarray)

    def memo(self, compute: Callable[["Call"], Any]) -> Any:
        """``compute(self)``, computed once per call (pieces shared by several formulas)."""
        if compute not in self._memo:
            self._memo[compute] = compute(self)
        return self._memo[compute]

    @property
    def a(self) -> np.ndarray:
        """The array argument as an array."""
        if self._array is None:
            self._array = np.asarray(self.x)
        return self._array

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the array argument's tangents."""
        if self._dtype is not None:
            return self._dtype
        return tangent_dtype(self.a.dtype) or np.dtype(np.float64)

    @property
    def axes(self) -> Axes:
        """The reduction's axes, from the ``axis`` and ``keepdims`` options."""
        if self._axes is None:
            self._axes = Axes(self.a.shape, self.options.get("axis"),
                              self.options.get("keepdims"))
        return self._axes

    def apply(self, value: Any) -> Any:
        """``f`` applied to ``value`` in place of the array argument, with the same options."""
        return self.f(value, *self.args[1:], **self.kwargs)


def spread(call: Call, dy: Any, divide_by: Any = 1) -> Any:
    """``dy / divide_by`` broadcast back over the reduced axes, in the array's tangent dtype.

    For an array argument it is an `InplaceableThunk`: ``add`` does ``buffer += dy`` (broadcast)
    and ``val`` is the broadcast copy, both from the same projected ``dy``.
    """
    shape, dtype = call.shape, call.dtype
    kept = call.axes.keep(cast_to(np.asarray(dy), dtype))
    if divide_by != 1:
        with np.errstate(divide="ignore", invalid="ignore"):  # empty slices: NumPy warns
            kept = kept / divide_by
    if not call.is_array:
        return np.array(np.broadcast_to(kept, shape))

    def add(buffer: np.ndarray) -> np.ndarray:
        buffer += kept
        return buffer

    return InplaceableThunk(add, Thunk(lambda: np.array(np.broadcast_to(kept, shape))),
                            shape=shape, dtype=dtype)


def diagonal_embed(values: Any, shape: tuple, offset: int, axis1: int, axis2: int,
                   dtype: Any) -> np.ndarray:
    """The adjoint of ``np.diagonal(x, offset, axis1, axis2)``: zeros of ``shape`` with
    ``values`` (shaped like that diagonal) on the diagonal.

    >>> diagonal_embed([1.0, 2.0], (2, 3), 1, 0, 1, np.float64)
    array([[0., 1., 0.],
           [0., 0., 2.]])
    """
    out = np.zeros(shape, dtype)
    view = np.moveaxis(out, (axis1, axis2), (-2, -1))
    values = np.asarray(values)
    steps = np.arange(values.shape[-1] if values.ndim else 0)
    view[..., steps + max(-offset, 0), steps + max(offset, 0)] = values
    return out


# --- registration --------------------------------------------------------------------------------

LINEAR = None  # ``forward=LINEAR``: the pushforward is the function applied to the tangent


def _output_has_tangent(y: Any) -> bool:
    if isinstance(y, (list, tuple)):
        return True
    return tangent_dtype(np.result_type(y)) is not None


class _Pullback:
    """The pullback of a rule made by `register` (an object, not a closure: tapes of long
    loops hold one per call, so it is kept small)."""

    __slots__ = ("name", "formulas", "call", "projectors", "zero", "y_shape")

    def __init__(self, name: str, formulas: dict, call: Call, projectors: dict, zero: tuple,
                 y_shape: tuple | None):
        self.name, self.formulas, self.call = name, formulas, call
        self.projectors, self.zero, self.y_shape = projectors, zero, y_shape

    def cotangent(self, position: int, dy: Any) -> Any:
        return self.projectors[position](self.formulas[position][0](self.call, dy))

    def __call__(self, dy: Any) -> tuple:
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return self.zero
        if self.y_shape is not None and np.shape(dy) != self.y_shape:
            raise ProjectionError(
                f"{self.name} pullback: the output has shape {self.y_shape}, but its cotangent "
                f"has shape {np.shape(dy)}.")
        cotangents = list(self.zero)
        projectors = self.projectors
        for position in projectors:  # thunked when several (some may go unused)
            cotangents[position + 1] = self.cotangent(position, dy) if len(projectors) == 1 \
                else Thunk(lambda position=position: self.cotangent(position, dy))
        return tuple(cotangents)


def register(f: Any, back: Callable[[Call, Any], Any], forward: Callable | None = LINEAR, *,
             extra: dict | None = None, refuse_options: tuple = ("out",),
             check: Callable | None = None, keeps_values: bool = True) -> None:
    """Register the rrule and frule of ``f``, differentiable in its first (array-like) argument.

    ``back(call, dy)`` returns the cotangent of the array argument (dense, or lazy, or a list
    of pieces for a sequence argument), before projection; ``forward(call, dx)`` returns the
    output tangent from a dense input tangent (default: ``f`` applied to ``dx``).
    ``extra = {parameter: (back, forward)}`` does the same for further differentiable
    parameters (weights, prepend...), when they are passed positionally. ``check(name,
    options)`` raises for option values the formulas don't support. ``keeps_values=False``
    says the reverse formulas read only the argument's shape, dtype and axes (see
    `Call.forget_values`).
    """
    parameters = Parameters(f)
    name = parameters.name
    formulas = {0: (back, forward)}
    for parameter, pair in (extra or {}).items():
        formulas[parameters.names.index(parameter)] = pair

    def bind(args: tuple, kwargs: dict) -> dict:
        if not args:
            raise TypeError(f"{name}: pass the array argument positionally in differentiated "
                            f"code (keyword arguments get no cotangent).")
        options = parameters.bind(args, kwargs)
        refuse(name, options, refuse_options)
        if check is not None:
            check(name, options)
        return options

    def reverse(*args: Any, **kwargs: Any):
        options = bind(args, kwargs)
        y = f(*args, **kwargs)
        projectors = {}
        for position in formulas:
            if position < len(args):
                project = project_onto(args[position])
                if has_tangent(project):
                    projectors[position] = project
        zero = [NoTangent()] * (len(args) + 1)
        if not projectors:
            return y, lambda dy: tuple(zero)
        for position in projectors:
            zero[position + 1] = ZeroTangent()
        zero = tuple(zero)
        if not _output_has_tangent(y):
            return y, lambda dy: zero
        call = Call(f, args, kwargs, options, y)
        if not keeps_values:
            call.forget_values()
        y_shape = None if isinstance(y, (list, tuple)) else np.shape(y)
        return y, _Pullback(name, formulas, call, projectors, zero, y_shape)

    def pushforward(tangents: tuple, *args: Any, **kwargs: Any):
        options = bind(args, kwargs)
        y = f(*args, **kwargs)
        if not _output_has_tangent(y):
            return y, ZeroTangent()
        call = Call(f, args, kwargs, options, y)
        dy: Any = ZeroTangent()
        for position, (_, forward_of) in formulas.items():
            d = unthunk(tangents[position + 1]) if position + 1 < len(tangents) else None
            if position >= len(args) or d is None or isinstance(d, AbstractZero):
                continue
            d = dense_tangent(args[position], d)
            dy = accumulate(dy, call.apply(d) if forward_of is LINEAR else forward_of(call, d))
        if isinstance(dy, AbstractZero):
            return y, ZeroTangent()
        return y, ProjectTo(y)(dy)

    rrule.register(f, replace=True)(reverse)
    frule.register(f, replace=True)(pushforward)
