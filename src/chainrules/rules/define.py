"""The one way the array rules are written: `define(f, *cotangents, ...)` registers the rrule
and the frule of a NumPy function from formulas that read a `Call`.

    define(np.linalg.inv, lambda call, dy: -H(call.y) @ dy @ H(call.y),
           pushforward=lambda call, da: -call.y @ da @ call.y)
    define(np.sum, lambda call, dy: np.broadcast_to(call.axes.keep(dy), call.shape),
           refused=("out", "where", "initial"), keeps_values=False)

The formulas:

- ``cotangents[i](call, dy)``: the cotangent of positional argument ``i``, before projection;
  ``None`` (or no entry) marks an argument that is not differentiable (axes, shapes, indices,
  conditions). ``every=formula(call, dy, i)`` serves every positional argument instead
  (``einsum``, ``meshgrid``). Keyword arguments get no cotangent.
- ``pushforward(call, *dargs)``: the output tangent, given one input tangent per formula
  position (`ZeroTangent` for a zero one, `NoTangent` where the argument is not
  differentiable or not passed; a list of arrays for a list or tuple argument). Ready-made:
  `multilinear` (the default: ``sum_i f(..., dargs[i], ...)``, right for ``matmul``,
  ``fft``, ``sum``, ``reshape``...), `linear` (``f(*dargs)``: ``where``, ``meshgrid``) and
  `per_argument` (one formula per argument, added: ``np.average``'s data and weights).
- ``prepare(call, dy)``, when given, is computed once per pullback call (lazily) and passed
  to the cotangent formulas instead of ``dy``.
- ``sparse(call, dy)``, when given, answers a `SparseCotangent` ``dy`` (the cotangent of an
  index read of the output, ``x.T[t]``) with the first argument's cotangent, still sparse
  (`through_view`, `through_reshape`), or None (then ``dy`` is made dense, as for any rule):
  a function that only moves its argument's elements keeps an index loop over its output
  O(len(x[t])) per step backward. An output of fewer than `SPARSE_FROM` elements takes the
  dense path: for it a new zero array costs less than moving the index.

A `Call` is the record of one call: ``call.args``, ``call.y``, ``call["axis"]`` (a parameter
by name, passed by position or by keyword, else NumPy's default; "no value" reads as None),
``call.a`` (the first argument as an array), ``call.axes`` (a reduction's axes),
``call.memo(compute)`` (a piece several formulas share), ``call.apply(value, i)`` (``f`` with
``value`` as argument ``i``). ``calls=g`` makes the rule compute ``f``'s values with ``g``
(the same function reached another way: ``np.array`` through NumPy's namespace, where the
engine records it when an outer trace's values arrive, for second derivatives). ``dy``
arrives unthunked and projected onto the output (real for a real output, float32 for a
float32 one); for a tuple or list output (``svd``,
``split``) it is a list of per-output cotangents (`ZeroTangent` where none was given), and
the pushforward returns one tangent per output.

`define` does the rest, the same way for every function: refuses the ``refused`` options
(``out=`` by default, by keyword or position) and, through ``check(call)``, unsupported
option values, with an error naming the function; projects each argument (`project_onto`,
in the forward pass) and each cotangent; answers a zero ``dy`` with zeros; thunks the
cotangents when several arguments are differentiable. The pullback is a slotted object, not
a closure, and a long loop's tape holds one per call: with ``keeps_values=False`` (formulas
that read only ``call.shape``, ``call.dtype``, ``call.is_array`` and a reduction's
``call.axes``, like ``sum``'s and ``expand_dims``') it keeps just those, not the arrays, the
output or the options. Parameter names
are read once per function, at registration.

How to add a rule:

1. Find the module of the function's area: ``chainrules/rules/numpy/<area>.py`` for NumPy
   (an elementwise ufunc is one `scalar_rule` line in ``numpy/elementwise.py``), or the folder
   of its SciPy module, ``chainrules/rules/scipy/<module>/`` (docs/architecture.md).
2. Write one `define` line: a cotangent formula per differentiable argument and, when the
   function is not linear in each argument separately, its ``pushforward``.
3. Add a case to the area's ``tests/rules/test_<area>.py`` (`chainrules.testing.case`): the kit
   checks both rules against finite differences, at order 1 and 2.

The same works for a function of your own that the engine records whole:

>>> import chainrules as cr
>>> @cr.primitive
... def scaled_sum(x, scale):
...     return scale * np.sum(x)
>>> define(scaled_sum, lambda call, dy: call["scale"] * np.broadcast_to(dy, np.shape(call.a)),
...        lambda call, dy: np.sum(call.a) * dy)
>>> cr.grad(scaled_sum, argnums=(0, 1))(np.ones(3), 2.0)
(array([2., 2., 2.]), 3.0)
>>> from chainrules.testing import test_rrule, test_frule
>>> test_rrule(scaled_sum, np.ones(3), 2.0); test_frule(scaled_sum, np.ones(3), 2.0)
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..core.accumulate import accumulate
from ..core.naming import function_name
from ..core.dtypes import cast_to, shared_shape, tangent_dtype
from ..core.dtypes import as_array
from ..core.duck_arrays import is_duck_array
from ..core.projection import NO_TANGENT_PROJECTOR, ProjectionError, ProjectTo, _has_tangent
from ..core.registry import EVERY_COTANGENT_PULLBACKS, dual_form, frule, rrule
from ..core.sparse import SparseCotangent
from ..core.tangents import AbstractZero, NoTangent, Tangent, ZeroTangent
from ..core.thunks import Thunk, unthunk

from .._compat import normalize_axis_tuple, signature

__all__ = ["Axes", "Call", "SPARSE_FROM", "define", "dense_tangent", "linear", "multilinear",
           "normalize_axis_tuple", "per_argument", "project_onto", "unsupported"]

Formula = Callable[..., Any] | None
_NO_VALUE = np._NoValue  # NumPy's "argument not given" default
_NO_OPTIONS: dict = {}   # the keyword arguments of calls without any (shared, never changed)
# The size (elements) from which a ``sparse`` formula moves a sparse cotangent's index through
# a view: below it, a dense cotangent costs less (a loop's ``np.sum(u.reshape(4, 4))`` of a
# 16-element u: 34 us per step with the index moved, 22 us dense)
SPARSE_FROM = 1024


# --- array-like arguments ------------------------------------------------------------------------

_NUMBER_TYPES = frozenset({float, complex, np.float16, np.float32, np.float64, np.longdouble,
                           np.complex64, np.complex128, np.clongdouble})


class _ProjectNumbers:
    """The projector onto a flat list or tuple of numbers of one float or complex type (the
    usual ``np.array([a, b, c])``): a stacked array cotangent is cast in one step, not number
    by number (30 times faster for long lists); any other cotangent goes to `ProjectTo`."""

    __slots__ = ("primal", "dtype")

    def __init__(self, x: list | tuple):
        self.primal, self.dtype = x, np.dtype(type(x[0]))

    def __call__(self, cotangent: Any) -> Any:
        primal = self.primal
        if type(cotangent) is not np.ndarray or cotangent.shape != (len(primal),):
            return ProjectTo(primal)(cotangent)
        values = cast_to(cotangent, self.dtype)
        values = values.tolist() if type(primal[0]) in (float, complex) else list(values)
        return Tangent(type(primal), dict(enumerate(values)))


class _ProjectArrays:
    """The projector onto a list or tuple of float or complex ndarrays (``np.concatenate([a,
    b])``, ``np.stack(rows)``): a list or tuple of cotangents that already fit, each of its
    element's shape and dtype, becomes the `Tangent` at once; any other cotangent goes to
    `ProjectTo`."""

    __slots__ = ("primal",)

    def __init__(self, x: list | tuple):
        self.primal = x

    def __call__(self, cotangent: Any) -> Any:
        primal = self.primal
        if type(cotangent) in (list, tuple) and len(cotangent) == len(primal):
            for value, x in zip(cotangent, primal):
                if type(value) is not np.ndarray or value.dtype is not x.dtype or \
                        value.shape != x.shape:
                    break
            else:
                return Tangent(type(primal), dict(enumerate(cotangent)))
        return ProjectTo(primal)(cotangent)


def project_onto(x: Any) -> Any:
    """The projector onto the array-like ``x``'s tangent space, or ``None`` if ``x`` has none.

    That is `ProjectTo`, which projects a list or tuple element by element (from a list of
    cotangents or from an array stacking them), but a flat list of numbers of one type is
    projected in one step, and a list of float arrays without a walk when the cotangents fit.

    >>> project_onto([1.0, 2.0])(np.array([0.5, 1 + 1j]))
    Tangent[list](0: 0.5, 1: 1.0)
    >>> project_onto([1, 2]) is None
    True
    """
    if type(x) is not np.ndarray and isinstance(x, (list, tuple)):
        if x and type(x[0]) in _NUMBER_TYPES and all(type(e) is type(x[0]) for e in x):
            return _ProjectNumbers(x)
        if x and type(x) in (list, tuple) and all(
                type(e) is np.ndarray and e.dtype.kind in "fc" for e in x):
            return _ProjectArrays(x)
        return ProjectTo(x) if _has_tangent(x) else None
    project = ProjectTo(x)
    return None if project is NO_TANGENT_PROJECTOR else project


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
    return dx if type(dx) is np.ndarray else np.asarray(dx)  # (no call: as `as_array`)


# --- the call, as the formulas see it ------------------------------------------------------------

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


_AXES: dict = {}


def _shared_axes(shape: tuple, axis: Any, keepdims: Any) -> Axes:
    """One shared (read-only) `Axes` per shape and options: a loop of reductions over arrays
    of one shape keeps one, not one per call.

    >>> _shared_axes((2, 3), 1, False) is _shared_axes((2, 3), 1, False)
    True
    """
    key = (shape, axis, bool(keepdims))
    try:
        axes = _AXES.get(key)
    except TypeError:  # an unhashable axis (a list)
        return Axes(shape, axis, keepdims)
    if axes is None:
        if len(_AXES) > 10_000:  # a bound, for programs that see endless shapes
            _AXES.clear()
        axes = _AXES[key] = Axes(shape, axis, keepdims)
    return axes


class Call:
    """One differentiated call ``y = f(*args, **kwargs)``, as the formulas read it.

    >>> call = _Rule(np.sum, (None,)).begin(Call, (np.ones((2, 3)),), {"axis": 1})
    >>> call["axis"], call["keepdims"], call.axes.kept_shape
    (1, None, (2, 1))
    """

    __slots__ = ("rule", "args", "kwargs", "y", "_array", "_axes", "_memo", "_shape", "_dtype",
                 "_is_array")

    def __init__(self, rule: "_Rule", args: tuple, kwargs: dict, y: Any):
        self.rule, self.args, self.kwargs, self.y = rule, args, kwargs, y
        self._array = self._axes = self._memo = self._shape = self._dtype = \
            self._is_array = None

    def __getitem__(self, name: str) -> Any:
        """The parameter ``name``: passed by position or keyword, else NumPy's default."""
        position = self.rule.positions.get(name)
        if position is not None and position < len(self.args):
            value = self.args[position]
        else:
            value = self.kwargs.get(name, _NO_VALUE)
            if value is _NO_VALUE:
                value = self.rule.defaults.get(name)
        return None if value is _NO_VALUE else value

    @property
    def name(self) -> str:
        """The function's name, for error messages (``numpy.sum``)."""
        return self.rule.name

    @property
    def x(self) -> Any:
        """The first argument, as passed."""
        return self.args[0]

    @property
    def a(self) -> np.ndarray:
        """The first argument as an array."""
        if self._array is None:
            first = self.args[0]
            self._array = first if type(first) is np.ndarray else as_array(first)
        return self._array

    @property
    def shape(self) -> tuple:
        """The shape of the first argument."""
        return self._shape if self._shape is not None else self.a.shape

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the first argument's tangents (float64 for an integer argument)."""
        if self._dtype is not None:
            return self._dtype
        return tangent_dtype(self.a.dtype) or np.dtype(np.float64)

    @property
    def duck_array(self) -> Any:
        """The first argument if it is another library's array (Dask's), else None: kept when
        the values are forgotten (it is a graph, not data), for its chunks."""
        array = self._array if self.args is None else self.a
        return array if is_duck_array(array) else None

    @property
    def is_array(self) -> bool:
        """Whether the first argument is an ndarray (not a list or a number)."""
        return self._is_array if self._is_array is not None else \
            issubclass(type(self.args[0]), np.ndarray)

    @property
    def axes(self) -> Axes:
        """The reduction's axes over the first argument, from ``axis`` and ``keepdims``."""
        if self._axes is None:
            self._axes = _shared_axes(self.shape, self["axis"], self["keepdims"])
        return self._axes

    def memo(self, compute: Callable[["Call"], Any]) -> Any:
        """``compute(self)``, computed once per call (a piece several formulas share)."""
        if self._memo is None:
            self._memo = {}
        if compute not in self._memo:
            self._memo[compute] = compute(self)
        return self._memo[compute]

    def apply(self, value: Any, position: int = 0) -> Any:
        """``f`` with ``value`` in place of positional argument ``position``, options kept,
        but for ``initial=``, a constant that ``np.sum`` adds: 0 (the tangent of a linear
        function is the function of the tangent, without its constant term)."""
        args, kwargs = list(self.args), self.kwargs
        args[position] = value
        if "initial" in self.rule.defaults and self["initial"] is not None:
            at = self.rule.positions.get("initial", len(args))
            if at < len(args):
                args[at] = 0
            else:
                kwargs = {**kwargs, "initial": 0}
        return self.rule.f(*args, **kwargs)

    def forget_values(self) -> None:
        """Keep only the first argument's shape, dtype and (for a reduction: a function with a
        ``keepdims`` parameter) axes, for formulas that read nothing else: the arrays, the
        output and the options are freed after the forward pass (small tapes)."""
        array = self.a
        dtype = array.dtype
        self._shape, self._is_array = shared_shape(array.shape), self.is_array
        self._dtype = dtype if dtype.kind in "fc" else self.dtype  # `dtype`, for floats inline
        if "keepdims" in self.rule.defaults:
            _ = self.axes
        self.args = self.kwargs = self.y = None
        if type(array) is np.ndarray or not is_duck_array(array):
            self._array = None  # a Dask array is kept: a graph, not data


# --- default pushforwards ------------------------------------------------------------------------

def per_argument(*forwards: Formula) -> Callable:
    """The pushforward that adds one term per argument with a nonzero tangent:
    ``forwards[i](call, dargs[i])``, or ``f`` with ``dargs[i]`` in place of argument ``i`` where
    ``forwards[i]`` is None (linear in that argument).

    >>> from chainrules.core.registry import recorded_whole
    >>> @recorded_whole
    ... def scale(x, k):
    ...     return k * x
    >>> define(scale, lambda call, dy: call["k"] * dy, lambda call, dy: np.sum(call["x"] * dy),
    ...        pushforward=per_argument(None, lambda call, dk: dk * call["x"]))
    >>> frule((NoTangent(), np.ones(2), 10.0), scale, np.array([1.0, 2.0]), 3.0)[1]
    array([13., 23.])
    """
    def pushforward(call: Call, *dargs: Any) -> Any:
        dy: Any = ZeroTangent()
        for position, darg in enumerate(dargs):
            if not isinstance(darg, AbstractZero):
                forward = forwards[position] if position < len(forwards) else None
                dy = accumulate(dy, call.apply(darg, position) if forward is None
                                else forward(call, darg))
        return dy

    return pushforward


multilinear = per_argument()
multilinear.__doc__ = """The pushforward of a function linear in each argument separately:
``sum_i f(..., dargs[i], ...)`` over the arguments with a nonzero tangent."""


def linear(call: Call, *dargs: Any) -> Any:
    """The pushforward of a function linear in all its differentiable arguments at once:
    ``f`` of their tangents (zeros for zero ones), the other arguments kept."""
    args = list(call.args)
    for position, darg in enumerate(dargs):
        if darg is not NoTangent():  # a differentiable argument's tangent, or ZeroTangent
            args[position] = dense_tangent(args[position], darg)
    return call.rule.f(*args, **call.kwargs)


# --- refusing options ----------------------------------------------------------------------------

_HOW_TO_AVOID = {
    "out": "compute the result without out= and assign it afterwards",
    "where": "apply np.where to the input (or the result) instead",
    "initial": "combine it with the result yourself, e.g. np.sum(x) + initial or "
               "np.maximum(np.max(x), initial)",
    "mean": "let the function compute the mean itself",
    "order": "structured (record) arrays have no tangents",
}


def unsupported(name: str, option: str, value: Any, supported: str) -> NotImplementedError:
    """The error for an option value that has no rule (raise it).

    >>> print(unsupported("numpy.pad", "mode", "mean", "'constant', 'edge'"))
    numpy.pad: mode='mean' is not supported in differentiated code (supported: 'constant', 'edge').
    """
    return NotImplementedError(
        f"{name}: {option}={value!r} is not supported in differentiated code (supported: "
        f"{supported}).")


# --- the rule ------------------------------------------------------------------------------------

class _Rule:
    """What `define` knows of a function: its formulas, and its parameters by name (read once,
    at the first call, so that binding a call's options costs a dict lookup)."""

    __slots__ = ("f", "name", "cotangents", "every", "pushforward", "prepare", "check",
                 "refused", "keeps_values", "positions", "defaults", "has_formula",
                 "refused_from", "source", "sparse")

    def __init__(self, f: Any, cotangents: tuple, every: Formula = None,
                 pushforward: Callable = multilinear, prepare: Formula = None,
                 check: Formula = None, refused: Sequence[str] = ("out",),
                 keeps_values: bool = True, calls: Callable | None = None,
                 sparse: Formula = None):
        self.f, self.name, self.cotangents, self.every = calls or f, function_name(f), cotangents, every
        self.pushforward, self.prepare, self.check = pushforward, prepare, check
        self.keeps_values = keeps_values
        self.positions: dict[str, int] | None = None  # read at the first call: `_read`
        self.defaults: dict[str, Any] = {}
        self.refused = tuple(refused)
        self.refused_from = math.inf
        self.has_formula = tuple(c is not None for c in cotangents)
        self.source = f
        self.sparse = sparse

    def _read(self) -> None:
        """Read the function's parameters, once, at its first call (reading them at
        registration would cost ``import chainrules`` an ``inspect.signature`` per rule)."""
        positions: dict[str, int] = {}
        for parameter in signature(self.source).parameters.values():
            if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
                positions[parameter.name] = len(positions)
            if parameter.default is not parameter.empty:
                self.defaults[parameter.name] = parameter.default
        # Read on every call: each refused option with its position, each position's formula.
        self.refused = tuple((option, positions.get(option)) for option in self.refused)
        self.refused_from = min([position for _, position in self.refused if position is not None],
                                default=math.inf)  # fewer positional arguments: none refused
        self.positions = positions

    def differentiable(self, position: int) -> bool:
        """Whether positional argument ``position`` has a cotangent formula."""
        return self.every is not None or (position < len(self.has_formula)
                                          and self.has_formula[position])

    def cotangent(self, call: Call, dy: Any, position: int) -> Any:
        """The formula's cotangent of positional argument ``position``, unprojected."""
        if self.every is not None:
            return self.every(call, dy, position)
        return self.cotangents[position](call, dy)

    def begin(self, cls: type, args: tuple, kwargs: dict) -> Call:
        """The record of a call, after refusing options it has no rule for."""
        if self.positions is None:
            self._read()
        if kwargs or len(args) > self.refused_from:
            self.refuse(args, kwargs)
        if not args and self.has_formula and self.has_formula[0]:
            raise TypeError(f"{self.name}: pass the array argument positionally in "
                            f"differentiated code (keyword arguments get no cotangent).")
        call = cls(self, args, kwargs or _NO_OPTIONS, None)
        if self.check is not None:
            self.check(call)
        return call

    def refuse(self, args: tuple, kwargs: dict) -> None:
        """Raise a TypeError naming the function and the option if a refused one is given."""
        for option, position in self.refused:
            value = args[position] if position is not None and position < len(args) \
                else kwargs.get(option)
            if value is not None and value is not _NO_VALUE and not (
                    option == "where" and value is True):
                raise TypeError(
                    f"{self.name}: the {option}= argument is not supported in differentiated "
                    f"code; {_HOW_TO_AVOID.get(option, f'call {self.name} without {option}=')}.")

    def reverse(self, *args: Any, **kwargs: Any) -> tuple:
        """The rrule: ``(y, pullback)``."""
        pullback = self.begin(_Pullback, args, kwargs)
        y = self.f(*args, **kwargs)
        return y, self._complete(pullback, y, args)

    def _complete(self, pullback: "_Pullback", y: Any, args: tuple) -> Any:
        """The pullback of the call ``pullback`` records, once its output ``y`` is known."""
        if self.every is None:
            has_formula, count = self.has_formula, len(self.has_formula)
            projectors = tuple([project_onto(arg) if i < count and has_formula[i] else None
                                for i, arg in enumerate(args)])
        else:
            projectors = tuple([project_onto(arg) for arg in args])
        if projectors.count(None) == len(projectors):
            return _Zeros(_zeros(projectors))
        if (type(y) is np.ndarray and y.dtype.kind in "fcO") or type(y) in _NUMBER_TYPES:
            # `_has_tangent_space`, inline
            output = ProjectTo(y) if not self.keeps_values else None
        elif isinstance(y, (tuple, list)):
            if not _has_tangent_space(y):
                return _Zeros(_zeros(projectors))
            output = ProjectTo(y) if not self.keeps_values else None
        else:
            output = ProjectTo(y)
            if output is NO_TANGENT_PROJECTOR:
                return _Zeros(_zeros(projectors))
            if self.keeps_values:
                output = None
        pullback.y, pullback.projectors, pullback.output = y, projectors, output
        if not self.keeps_values:
            pullback.forget_values()
        return pullback

    def forward(self, tangents: tuple, *args: Any, **kwargs: Any) -> tuple:
        """The frule: ``(y, dy)``."""
        plain = []
        for tangent in tangents[1:]:
            tangent = unthunk(tangent)
            plain.append(None if isinstance(tangent, AbstractZero) else tangent)
        return self.push(args, plain, kwargs)

    def push(self, args: tuple, tangents: Sequence, kwargs: dict) -> tuple:
        """The frule on plain tangents, one per positional argument (``None`` for a zero or a
        missing one); forward mode calls it directly."""
        call = self.begin(Call, args, kwargs)
        y = call.y = self.f(*args, **kwargs)
        return y, self._tangent(call, y, args, tangents)

    def _tangent(self, call: Call, y: Any, args: tuple, tangents: Sequence) -> Any:
        """The output tangent of ``call`` (whose output is ``y``), for plain ``tangents``."""
        count = len(args) if self.every is not None else len(self.cotangents)
        dargs: list[Any] = []  # NoTangent: not differentiable or not passed; ZeroTangent: zero
        nonzero = False
        every, has_formula = self.every is not None, self.has_formula
        for position in range(count):
            if position >= len(args) or not (every or (position < len(has_formula)
                                                       and has_formula[position])):
                dargs.append(_NO_TANGENT)  # not differentiable (`differentiable`)
                continue
            d = tangents[position] if position < len(tangents) else None
            if d is None:
                d = _ZERO_TANGENT
            else:
                nonzero = True
                if isinstance(args[position], (list, tuple)):
                    d = dense_tangent(args[position], d)
            dargs.append(d)
        if not nonzero:
            return ZeroTangent()
        dy = self.pushforward(call, *dargs)
        if type(y) is np.ndarray and type(dy) is np.ndarray and dy.dtype == y.dtype \
                and dy.shape == y.shape and y.dtype.kind in "fc":
            return dy  # what ProjectTo(y) returns
        if isinstance(y, (tuple, list)):
            return _output_tangent(y, dy)
        return dy if isinstance(dy, AbstractZero) else ProjectTo(y)(dy)


    def dual(self, args: tuple, tangents: Sequence, kwargs: dict) -> tuple | None:
        """The dual form (`chainrules.core.registry.dual_form`) of a function linear in each
        of its differentiable arguments (the pushforwards `multilinear` and `linear`): the
        cotangent of argument ``i`` is linear in ``dy`` and in each other argument, so its
        tangent is the formula at ``ddy``, plus the formula at ``dy`` of the calls with one
        other argument ``j`` replaced by its tangent (`_DualPullback`)."""
        pullback = self.begin(_Pullback, args, kwargs)
        y = pullback.y = self.f(*args, **kwargs)
        if type(y) is not np.ndarray and type(y) not in _NUMBER_TYPES:
            return None  # several outputs: the generic path
        dy = self._tangent(pullback, y, args, tangents)  # before values may be forgotten
        pullback = self._complete(pullback, y, args)
        if type(pullback) is _Zeros:
            return y, dy, pullback, None
        several = self.pushforward is not linear and (
            len(args) > 1 if self.every is not None else
            self.has_formula[:len(args)].count(True) > 1)
        if several and not self.keeps_values:
            return None
        return y, dy, pullback, _DualPullback(pullback, tuple(tangents) if several else None)


class _DualPullback:
    """A `define`d pullback on a cotangent ``dy`` with its tangent ``ddy`` (the
    ``pullback_dual`` of its dual form): each formula at ``dy`` and at ``ddy``, and, for a
    function linear in each of several arguments, at ``dy`` with another argument ``j``
    replaced by its tangent ``dx_j``."""

    __slots__ = ("pullback", "tangents")

    def __init__(self, pullback: "_Pullback", tangents: tuple | None):
        self.pullback, self.tangents = pullback, tangents

    def __call__(self, dy: Any, ddy: Any, needed: tuple) -> tuple:
        pullback = self.pullback
        rule, projectors, y = pullback.rule, pullback.projectors, pullback.y
        fits = type(y) is np.ndarray and y.dtype.kind in "fc"  # then skip fitting arrays
        if not (fits and type(dy) is np.ndarray and dy.dtype is y.dtype and dy.shape == y.shape):
            dy = pullback._project_output(dy)
            if isinstance(dy, AbstractZero):
                return (None,) * len(projectors)
        shared = dy if rule.prepare is None else rule.prepare(pullback, dy)
        if ddy is not None and not (fits and type(ddy) is np.ndarray and ddy.dtype is y.dtype
                                    and ddy.shape == y.shape):
            ddy = pullback._project_output(ddy)
            if isinstance(ddy, AbstractZero):
                ddy = None
        if ddy is not None and rule.prepare is not None:
            ddy = rule.prepare(pullback, ddy)
        swapped: dict = {}  # j -> (the call with dx_j in place of argument j, its shared dy)
        pairs = []
        for i, project in enumerate(projectors):
            if project is None or not needed[i]:
                pairs.append(None)
                continue
            cotangent = project(rule.cotangent(pullback, shared, i))
            tangent = None if ddy is None else project(rule.cotangent(pullback, ddy, i))
            for j, dx in enumerate(self.tangents or ()):
                if dx is None or j == i:
                    continue
                if j not in swapped:
                    args = pullback.args
                    call = Call(rule, args[:j] + (dx,) + args[j + 1:], pullback.kwargs,
                                pullback.y)
                    swapped[j] = call, dy if rule.prepare is None else rule.prepare(call, dy)
                call, call_dy = swapped[j]
                term = project(rule.cotangent(call, call_dy, i))
                if not isinstance(term, AbstractZero):
                    tangent = term if tangent is None else accumulate(tangent, term)
            if isinstance(tangent, AbstractZero):
                tangent = None
            pairs.append((cotangent, tangent))
        return tuple(pairs)


_NO_TANGENT = NoTangent()
_ZERO_TANGENT = ZeroTangent()


def _has_tangent_space(y: Any) -> bool:
    """Whether the output ``y`` can carry a tangent (cheap for arrays and numbers)."""
    if type(y) is np.ndarray:
        return y.dtype.kind in "fcO"
    if isinstance(y, (tuple, list)):
        return any(_has_tangent_space(part) for part in y)
    return ProjectTo(y) is not NO_TANGENT_PROJECTOR


def _zeros(projectors: tuple) -> tuple:
    """The cotangents for a zero ``dy``: ZeroTangent where an argument has a tangent."""
    return (NoTangent(),) + tuple(NoTangent() if p is None else ZeroTangent()
                                  for p in projectors)


class _Zeros:
    """The pullback of a call whose output or arguments cannot be perturbed."""

    __slots__ = ("zeros",)

    def __init__(self, zeros: tuple):
        self.zeros = zeros

    def __call__(self, dy: Any) -> tuple:
        return self.zeros


class _Pullback(Call):
    """The pullback of one call: its record, the arguments' projectors (None where an
    argument cannot be perturbed) and the output's projector (None: made from ``y`` when
    needed, which saves keeping one per call)."""

    __slots__ = ("projectors", "output")

    def __call__(self, dy: Any, every: bool = False) -> tuple:
        """The cotangents for ``dy``; of several arguments, each a `Thunk` (a caller may need
        only some), unless ``every``: an engine that reads them all says so."""
        rule = self.rule
        if self.output is None and isinstance(self.y, (tuple, list)):
            dy = _output_cotangents(dy, self.y)
            is_zero = all(isinstance(part, AbstractZero) for part in dy)
        else:
            if type(dy) is SparseCotangent and rule.sparse is not None:
                moved = self._sparse(dy)
                if moved is not None:
                    return moved
            dy = unthunk(dy)
            is_zero = isinstance(dy, AbstractZero)
            if not is_zero:
                dy = self._project_output(dy)
                is_zero = isinstance(dy, AbstractZero)
        if is_zero:
            return _zeros(self.projectors)
        shared = dy if rule.prepare is None else Thunk(lambda: rule.prepare(self, dy))
        several = not every and len(self.projectors) - self.projectors.count(None) > 1
        cotangents: list[Any] = [NoTangent()]
        for position, project in enumerate(self.projectors):
            if project is None:
                cotangents.append(NoTangent())
            elif several:  # thunked: the caller may need only some of them
                cotangents.append(Thunk(lambda position=position, project=project: project(
                    rule.cotangent(self, unthunk(shared), position))))
            else:
                cotangents.append(project(rule.cotangent(self, unthunk(shared), position)))
        return tuple(cotangents)

    def _sparse(self, dy: SparseCotangent) -> tuple | None:
        """The cotangents for a sparse ``dy`` by the rule's ``sparse`` formula: the first
        argument's still sparse, the others' none (they are options); None where it does not
        apply (then ``dy`` is made dense)."""
        project = self.projectors[0] if self.projectors else None
        if project is None or self.projectors.count(None) != len(self.projectors) - 1 or \
                math.prod(dy.shape) < SPARSE_FROM:
            return None
        dy = self._project_output(dy)  # checks the shape; a sparse dy stays sparse
        if type(dy) is not SparseCotangent:
            return None
        moved = self.rule.sparse(self, dy)
        if moved is None:
            return None
        return (_NO_TANGENT, project(moved)) + (_NO_TANGENT,) * (len(self.projectors) - 1)

    def _project_output(self, dy: Any) -> Any:
        project = self.output or ProjectTo(self.y)
        try:
            return project(dy)
        except ProjectionError as error:
            shape = getattr(project, "shape", None)
            raise ProjectionError(
                f"{self.rule.name} pullback: the output has shape {shape}, but its cotangent "
                f"has shape {np.shape(dy)}." if shape is not None and np.shape(dy) != shape
                else f"{self.rule.name} pullback: {error}") from None


EVERY_COTANGENT_PULLBACKS.add(_Pullback)


def _output_cotangents(dy: Any, y: tuple | list) -> list:
    """One projected cotangent per output of a tuple- or list-valued function (ZeroTangent
    where none is given): ``dy`` may be a tuple or list, a `Tangent` keyed by position or by
    field name, or a zero."""
    dy = unthunk(dy)
    if isinstance(dy, AbstractZero):
        return [ZeroTangent()] * len(y)
    if isinstance(dy, Tangent):
        fields = getattr(type(y), "_fields", ())
        parts = [dy[i] if i in dy or not fields else dy[fields[i]] for i in range(len(y))]
    else:
        parts = list(dy)
        if len(parts) != len(y):
            raise ProjectionError(f"expected a cotangent for each of the {len(y)} outputs, got "
                                  f"{len(parts)}.")
    projected = []
    for part, output in zip(parts, y):
        part = unthunk(part)
        projected.append(part if isinstance(part, AbstractZero) else ProjectTo(output)(part))
    return projected


def _output_tangent(y: tuple | list, tangents: Sequence) -> Any:
    """The tangent of a tuple or list output: a projected `Tangent` of ``type(y)``."""
    fields = getattr(type(y), "_fields", None) or range(len(y))
    backing = {key: t for key, t in zip(fields, tangents) if not isinstance(t, AbstractZero)}
    return ProjectTo(y)(Tangent(type(y), backing)) if backing else ZeroTangent()


def define(f: Any, *cotangents: Formula, every: Formula = None,
           pushforward: Callable = multilinear, prepare: Formula = None,
           check: Formula = None, refused: Sequence[str] = ("out",),
           keeps_values: bool = True, calls: Callable | None = None,
           sparse: Formula = None) -> None:
    """Register the rrule and the frule of ``f`` (see the module's docstring).

    >>> from chainrules.core.registry import recorded_whole
    >>> @recorded_whole  # an engine's primitive (chainrules.primitive), so rules are used
    ... def scale(x, k):  # linear in x; k is not differentiable here
    ...     return k * x
    >>> define(scale, lambda call, dy: call["k"] * dy, None)
    >>> rrule(scale, np.ones(2), 3)[1](np.ones(2))
    (NoTangent(), array([3., 3.]), NoTangent())
    >>> frule((NoTangent(), np.ones(2), NoTangent()), scale, np.ones(2), 3)[1]
    array([3., 3.])
    """
    rule = _Rule(f, cotangents, every, pushforward, prepare, check, refused, keeps_values, calls,
                 sparse)
    reverse = rule.reverse  # one bound method: the dual form belongs to this very rrule
    rrule.register(f, replace=True)(reverse)
    if pushforward is multilinear or pushforward is linear:
        dual_form(f, reverse, rule.dual)
    def forward(tangents: tuple, *args: Any, **kwargs: Any) -> tuple:
        return rule.forward(tangents, *args, **kwargs)

    forward.push = rule.push  # type: ignore[attr-defined]
    forward.rule = rule  # type: ignore[attr-defined]  # read by chainrules.ad.transforms.batching
    frule.register(f, replace=True)(forward)
