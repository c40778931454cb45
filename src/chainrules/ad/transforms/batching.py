"""Batched forward mode: tangents that carry a batch of directions at once.

A `BatchedForwardTrace` is a forward trace (`ForwardTrace`) whose values carry, in their
``node`` slot, a tangent with a leading batch axis: shape ``(B, *primal.shape)``, one
direction per row (``ZeroTangent()`` when every direction is zero). ``jacfwd`` and so
``hessian`` push all the basis vectors of the input through one such trace, instead of one
`jvp` per column: each operation then costs one NumPy call on ``B`` times the data rather
than ``B`` Python-level calls.

Each operation is pushed forward by a batch rule, where one exists:

- elementwise functions (`scalar_rule` partials, unary pushforwards) broadcast the batched
  tangents, each padded with singleton axes up to the output's rank after the batch axis;
- reductions, shape functions, indexing and `scatter_sum` shift their axes by one;
- ``matmul``/``dot``, ``where``, ``inv`` ... use NumPy's broadcasting over the batch axis.

Every other function falls back, exactly, to a loop over the batch that runs its ordinary
``frule`` (or the pushforward derived from its pullback) one direction at a time and stacks
the results; batching changes the cost, never the value.

>>> import numpy as np
>>> from chainrules.ad.transforms.api import ENGINE_CONFIG
>>> trace = BatchedForwardTrace(ENGINE_CONFIG, 2)
>>> with trace:
...     x = lift(np.array([1.0, 2.0]), np.eye(2), trace, lambda v: True)
...     y = np.sum(x ** 2)
>>> y.node     # the gradient, as the pushforwards of both basis vectors
array([2., 4.])
"""

from __future__ import annotations

import copy
import operator
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

from ..._compat import signature
from ...core.pushforward import pushforward_from_pullbacks
from ...core.registry import frule
from ...core.scalar_rule import as_numpy
from ...core.sparse import scatter_sum, selection_shape
from ...core.structure import is_structure, leaves, replace_paths, tangent_at, \
    tangent_from_paths
from ...core.tangents import AbstractZero, NoTangent, ZeroTangent
from ...core.thunks import unthunk
from ...rules.define import Call
from ...rules.numpy.indexing import normalize_index
from ...rules.numpy.shape import astype as _astype
from .forward import ForwardTrace, reverse_for_forward, tangent_part
from ..dispatch.writes import called_from_program
from ..trace.dual_pullbacks import tangent_in_space, zeros_like_primal
from ..trace.values import is_differentiable
from ..trace.float_errors import user_error_or_retry
from ..trace.traced import Traced, constant_result

__all__ = ["BatchedForwardTrace", "lift", "output_tangent"]

_NO_TANGENT = NoTangent()
_ZERO = ZeroTangent()
_FRULES = frule._rules
# NumPy's functions as bound at import: while a trace runs, the namespace holds wrappers that
# accept lists of traced values (chainrules.ad.dispatch.array_likes), and `function` is the original.
_ORIGINAL = SimpleNamespace(**{name: getattr(np, name) for name in (
    "cumsum", "reshape", "ravel", "stack", "diag", "trace", "dot", "take_along_axis")})


class BatchedForwardTrace(ForwardTrace):
    """One level of forward-mode tracing carrying ``size`` directions at once.

    Its values are `Traced` whose ``node`` holds their batched tangent, of shape
    ``(size, *shape)``, or ``ZeroTangent()``.
    """

    __slots__ = ("size",)
    runs_dual_forms = False  # its tangents are batches of directions
    one_direction = False

    def __init__(self, config: Any, size: int):
        super().__init__(config)
        self.size = size

    def apply(self, function: Any, primals: tuple, tangents: tuple, kwargs: dict) -> Any:
        """Push the batched ``tangents`` through ``function`` (an int marks a constant
        argument) and return its traced output."""
        try:
            tangents = tuple(None if type(t) is int or isinstance(t, AbstractZero) else t
                             for t in tangents)
            if all(t is None for t in tangents):
                # constants in: a constant out, which the program may write into (a plain
                # array in a library's code, which may keep it past the trace: SciPy's
                # quad_vec keeps its sums)
                y = function(*primals, **kwargs)
                return constant_result(self, y) if called_from_program() else y
            entry = _FRULES.get(function)
            if entry is not None and entry[1] is None:  # declared non-differentiable
                return function(*primals, **kwargs)
            result = None
            batch_rule = _BATCH_RULES.get(function)
            if batch_rule is not None:
                if batch_rule in _STRUCTURES or not any(type(t) is _Paths for t in tangents):
                    result = batch_rule(self, function, primals, tangents, kwargs)
            elif entry is not None and not any(type(t) is _Paths for t in tangents):
                partials = getattr(entry[0], "partials", None)
                if partials is not None:
                    result = _elementwise(function, partials, primals, tangents, kwargs)
                else:
                    pushforward = getattr(entry[0], "elementwise_pushforward", None)
                    if pushforward is not None and len(primals) == 1 and not kwargs:
                        y = function(*primals, **kwargs)
                        result = y, pushforward(primals[0], y, tangents[0])
            if result is None:
                result = _one_direction_at_a_time(self, function, primals, tangents, kwargs,
                                                  entry)
            return _wrap(self, *result)
        except (FloatingPointError, RuntimeWarning):  # the user's error state: whose error?
            return user_error_or_retry(function, primals, kwargs,
                                       lambda: self.apply(function, primals, tangents, kwargs))

    def structure_tangent(self, arg: Any, primal: Any, found: list) -> Any:
        """A structure argument's tangent: a `_Paths` (its batched leaves by path), or a
        constant's mark when they are all zero."""
        nonzero = {path: v.node for path, v in found if not isinstance(v.node, AbstractZero)}
        return _Paths(primal, nonzero) if nonzero else -1


class _Paths:
    """The batched tangent of a structure argument: its nonzero leaves' tangents by path."""

    __slots__ = ("structure", "values")

    def __init__(self, structure: Any, values: dict):
        self.structure, self.values = structure, values

    def direction(self, b: int) -> Any:
        """The ordinary structural tangent of direction ``b``."""
        return tangent_from_paths(self.structure, {path: v[b] for path, v in
                                                   self.values.items()})

    def elements(self, size: int, dtype: np.dtype) -> list | None:
        """The batched tangent of each element of a list or tuple argument (None for a zero
        one), an element that is itself a list of numbers or arrays (``[s]`` in
        ``np.concatenate([a, [s]])``) stacked as NumPy reads it; None if the structure is
        deeper."""
        structure = self.structure
        if not isinstance(structure, (list, tuple)) or \
                any(len(path) > 2 for path in self.values):
            return None
        parts = []
        for position, element in enumerate(structure):
            if (position,) in self.values:
                parts.append(self.values[(position,)])
            elif not any(path[0] == position for path in self.values):
                parts.append(None)
            elif isinstance(element, (list, tuple)) and all(
                    not is_structure(value) for value in element):
                parts.append(np.stack([
                    self.values.get((position, k), np.zeros((size,) + np.shape(value), dtype))
                    for k, value in enumerate(element)], axis=1))
            else:
                return None
        return parts


# --- the tangents of values of the trace ---------------------------------------------------------

def _shape(x: Any) -> tuple:
    shape = getattr(x, "shape", None)
    return () if shape is None else tuple(shape)


def _dtype(x: Any) -> np.dtype:
    dtype = getattr(x, "dtype", None)
    return np.dtype(type(x)) if dtype is None else dtype


def _fit(trace: BatchedForwardTrace, y: Any, dy: Any) -> Any:
    """``dy`` in the batched tangent space of ``y``: shape ``(B, *y.shape)``, ``y``'s dtype
    (the real part for a real ``y``), zeros kept lazy."""
    if dy is None or isinstance(dy, AbstractZero):
        return _ZERO
    shape = (trace.size,) + _shape(y)
    dtype = _dtype(y)
    if type(dy) is not np.ndarray and type(dy) is not Traced:
        dy = np.asarray(unthunk(dy))
    if dy.dtype != dtype:
        if dtype.kind != "c" and dy.dtype.kind == "c":
            dy = np.real(dy)
        if dy.dtype != dtype:
            dy = dy.astype(dtype)
    if _shape(dy) != shape:
        dy = np.broadcast_to(dy, shape)
    return dy


def _wrap(trace: BatchedForwardTrace, y: Any, dy: Any) -> Any:
    """``y`` as a value of ``trace`` carrying ``dy`` (a list of element tangents for a tuple
    or list output)."""
    if is_differentiable(y):
        return Traced(y, trace, _fit(trace, y, dy))
    if isinstance(y, (tuple, list)):
        names = getattr(type(y), "_fields", None)
        elements = []
        for position, element in enumerate(y):
            if is_differentiable(element):
                part = dy[position] if isinstance(dy, list) else None
                elements.append(Traced(element, trace, _fit(trace, element, part)))
            elif isinstance(element, (dict, tuple, list)):  # a result object in a tuple
                # ((x, RootResults)) or a list of arrays (histogramdd's (H, [edges, ...]))
                elements.append(_wrap(trace, element,
                                      dy[position] if isinstance(dy, list) else None))
            else:
                elements.append(element)
        return type(y)(*elements) if names else type(y)(elements)
    if isinstance(y, dict):  # a result object (OptimizeResult): float fields traced
        fields = copy.copy(y)  # not type(y)(y): RootResults.__init__ takes its fields
        for key, value in y.items():
            if is_differentiable(value):
                part = dy.get(key) if isinstance(dy, dict) else None
                fields[key] = Traced(value, trace, _fit(trace, value, part))
        return fields
    return y


def lift(x: Any, tangent: Any, trace: BatchedForwardTrace, select: Callable) -> Any:
    """``x`` with every leaf chosen by ``select`` replaced by a value of ``trace`` carrying
    its part of the batched ``tangent`` (a structure like ``x``, each leaf of shape
    ``(B, *leaf.shape)``; missing parts are zero)."""
    return replace_paths(x, {
        path: Traced(value, trace, _fit(trace, value, tangent_at(tangent, path)))
        for path, value in leaves(x, select)})


def output_tangent(value: Any, trace: BatchedForwardTrace) -> Any:
    """The batched tangent of an output leaf, materialized (zeros for a constant output)."""
    if type(value) is Traced and value.tape is trace:
        tangent, value = value.node, value.primal
        if not isinstance(tangent, AbstractZero):
            return tangent
    return np.zeros((trace.size,) + _shape(value), _dtype(value))


def _pad(t: Any, ndim: int) -> Any:
    """The batched tangent ``t`` with singleton axes after the batch axis, to rank
    ``1 + ndim`` (so that it broadcasts like its primal against an output of rank ndim)."""
    shape = _shape(t)
    missing = ndim + 1 - len(shape)
    if missing <= 0:
        return t
    return t.reshape(shape[:1] + (1,) * missing + shape[1:])


# --- the fallback: one direction at a time -------------------------------------------------------

def _one_direction_at_a_time(trace: BatchedForwardTrace, function: Any, primals: tuple,
                             tangents: tuple, kwargs: dict, entry: Any) -> tuple:
    """``(y, dy)`` by the ordinary forward rule (or the pushforward derived from the
    pullback), run once per direction; the tangents are stacked."""
    pullback = None
    if entry is None:
        y, pullback = reverse_for_forward(trace, function, primals, kwargs)
    directions = []
    for b in range(trace.size):
        direction = tuple(_ZERO if t is None else t.direction(b) if type(t) is _Paths
                          else t[b] for t in tangents)
        if pullback is not None:
            directions.append(pushforward_from_pullbacks(y, pullback,
                                                        (_NO_TANGENT,) + direction))
            continue
        rule, needs_config = entry
        arguments = ((_NO_TANGENT,) + direction,) + primals
        result = rule(trace.config, *arguments, **kwargs) if needs_config else \
            rule(*arguments, **kwargs)
        if result is None:
            return _one_direction_at_a_time(trace, function, primals, tangents, kwargs, None)
        if b == 0:
            y = result[0]
        directions.append(result[1])
    return y, _stacked(y, directions)


def _stacked(y: Any, directions: list) -> Any:
    """The batched tangent of the output ``y`` from its tangent in each direction: an array,
    a list per element of a tuple or list (None for a constant element; nested lists, as
    histogramdd's edges, in turn), a dict per float field of a result object (also one
    inside a tuple: ``(x, RootResults)``)."""
    if is_differentiable(y):
        return _stack(y, [tangent_in_space(y, d) for d in directions])
    if isinstance(y, (tuple, list)):
        names = getattr(type(y), "_fields", None)
        return [_stacked(element, [tangent_part(d, names[position] if names else position,
                                                position) for d in directions])
                if is_differentiable(element) or isinstance(element, (dict, tuple, list))
                else None
                for position, element in enumerate(y)]
    if isinstance(y, dict):
        return {key: _stacked(value, [tangent_part(d, key, key) for d in directions])
                for key, value in y.items() if is_differentiable(value)}
    return None


def _stack(y: Any, tangents: list) -> Any:
    if all(isinstance(t, AbstractZero) for t in tangents):
        return _ZERO
    return np.stack([zeros_like_primal(y) if isinstance(t, AbstractZero) else t
                     for t in tangents])


# --- batch rules ---------------------------------------------------------------------------------
# Each takes (trace, function, primals, tangents, kwargs), tangents None where zero, and returns
# (y, batched dy), or None to fall back to the loop (an option it does not batch).

def _elementwise(function: Any, partials: tuple, primals: tuple, tangents: tuple,
                 kwargs: dict) -> tuple | None:
    """``sum_i partial_i * dx_i`` of a `scalar_rule` function, on padded batched tangents."""
    if kwargs or len(primals) != len(partials):
        return None  # out=, where=, ...: the ordinary rule explains what it refuses
    y = function(*primals)
    values = as_numpy(primals, y)
    ndim = len(_shape(y))
    dy = None
    for t, partial in zip(tangents, partials):
        if t is None or partial is None:
            continue
        t = _pad(t, ndim)
        if type(partial) is int:
            term = t if partial == 1 else partial * t
        else:
            term = partial(y, *values) * t
        dy = term if dy is None else dy + term
    return y, dy


_SIGNATURES: dict = {}


def _bind(function: Any, primals: tuple, kwargs: dict) -> dict | None:
    """The arguments of a call by parameter name (those given), or None if they do not
    bind."""
    try:
        found = _SIGNATURES.get(function)
        if found is None:
            found = _SIGNATURES[function] = signature(function)
        return found.bind(*primals, **kwargs).arguments
    except (TypeError, ValueError):
        return None


def _axis(axis: int, ndim: int) -> int:
    """A (possibly negative) axis of a primal of rank ``ndim``, in its batched tangent."""
    return operator.index(axis) % ndim + 1 if ndim else 1


def _axes(axis: Any, ndim: int) -> Any:
    if axis is None:
        return tuple(range(1, ndim + 1))
    if isinstance(axis, (tuple, list, range)):
        return tuple(_axis(a, ndim) for a in axis)
    return _axis(axis, ndim)


def _only(arguments: dict | None, allowed: tuple) -> bool:
    return arguments is not None and all(name in allowed for name in arguments)


def _linear_reduction(trace, function, primals, tangents, kwargs):
    """sum, mean and cumsum (linear): the axes shifted by one."""
    arguments = _bind(function, primals, kwargs)
    if not _only(arguments, ("a", "axis", "dtype", "keepdims")) or tangents[0] is None:
        return None
    x, t = primals[0], tangents[0]
    ndim = len(_shape(x))
    options = {name: arguments[name] for name in ("dtype", "keepdims") if name in arguments}
    axis = arguments.get("axis")
    if function is _ORIGINAL.cumsum:
        if axis is None:
            t, axis = t.reshape(t.shape[0], -1), 1
        else:
            axis = _axis(axis, ndim)
    else:
        axis = _axes(axis, ndim)
    return function(*primals, **kwargs), function(t, axis=axis, **options)


def _same_elements(trace, function, primals, tangents, kwargs):
    """Functions whose output holds the input's elements in the same (C) order: reshape,
    ravel, expand_dims, squeeze, copy, astype, asarray..."""
    if any(t is not None for t in tangents[1:]):
        return None
    arguments = _bind(function, primals, kwargs)
    order = arguments.get("order", "C") if arguments is not None and \
        function in (_ORIGINAL.reshape, _ORIGINAL.ravel) else "C"
    if arguments is None or order not in ("C", "F"):
        return None  # "A", "K": the order depends on the primal's memory layout
    y = function(*primals, **kwargs)
    t = tangents[0]
    if order == "F":  # the batch axis last is the slowest in Fortran order
        return y, np.moveaxis(np.moveaxis(t, 0, -1).reshape(_shape(y) + (_shape(t)[0],),
                                                            order="F"), -1, 0)
    return y, t.reshape((_shape(t)[0],) + _shape(y))


def _array(trace, function, primals, tangents, kwargs):
    """np.array and np.asarray: of a traced array, its elements; of a list of traced values,
    their tangents stacked after the batch axis."""
    if any(t is not None for t in tangents[1:]):
        return None
    y = function(*primals, **kwargs)
    t = tangents[0]
    if type(t) is not _Paths:
        return y, t.reshape((_shape(t)[0],) + _shape(y))
    parts = t.elements(trace.size, _dtype(y))
    if parts is None:
        return None
    stacked = np.stack([np.zeros((trace.size,) + np.shape(element), _dtype(y))
                        if part is None else part for element, part in zip(primals[0], parts)],
                       axis=1)
    return y, stacked.reshape((trace.size,) + _shape(y))


def _transpose(trace, function, primals, tangents, kwargs):
    arguments = _bind(function, primals, kwargs)
    if arguments is None:
        return None
    ndim = len(_shape(primals[0]))
    axes = arguments.get("axes")
    if axes is None:
        axes = tuple(range(ndim, 0, -1))
    else:
        axes = tuple(_axis(a, ndim) for a in axes)
    return function(*primals, **kwargs), np.transpose(tangents[0], (0,) + axes)


def _swapaxes(trace, function, primals, tangents, kwargs):
    arguments = _bind(function, primals, kwargs)
    if arguments is None:
        return None
    ndim = len(_shape(primals[0]))
    return function(*primals, **kwargs), np.swapaxes(
        tangents[0], _axis(arguments["axis1"], ndim), _axis(arguments["axis2"], ndim))


def _moveaxis(trace, function, primals, tangents, kwargs):
    arguments = _bind(function, primals, kwargs)
    if arguments is None:
        return None
    ndim = len(_shape(primals[0]))
    return function(*primals, **kwargs), np.moveaxis(
        tangents[0], _axes(arguments["source"], ndim), _axes(arguments["destination"], ndim))


def _broadcast_to(trace, function, primals, tangents, kwargs):
    y = function(*primals, **kwargs)
    t = _pad(tangents[0], y.ndim)
    return y, np.broadcast_to(t, (_shape(t)[0],) + y.shape)


def _join(trace, function, primals, tangents, kwargs):
    """concatenate and stack of a list or tuple of arrays: the batch axis leads in each."""
    arguments = _bind(function, primals, kwargs)
    if not _only(arguments, ("arrays", "axis")) or type(tangents[0]) is not _Paths:
        return None
    y = function(*primals, **kwargs)
    dtype = _dtype(y)
    size = trace.size
    parts = tangents[0].elements(size, dtype)
    if parts is None:
        return None
    arrays = [np.zeros((size,) + np.shape(a), dtype) if t is None else t
              for a, t in zip(primals[0], parts)]
    axis = arguments.get("axis", 0)
    if function is _ORIGINAL.stack:
        return y, np.stack(arrays, axis=_axis(axis, len(_shape(y))))
    if axis is None:
        return y, np.concatenate([a.reshape(size, -1) for a in arrays], axis=1)
    return y, np.concatenate(arrays, axis=_axis(axis, len(_shape(y))))


def _triangle(trace, function, primals, tangents, kwargs):
    if len(_shape(primals[0])) < 2 or any(t is not None for t in tangents[1:]):
        return None
    return function(*primals, **kwargs), function(tangents[0], *primals[1:], **kwargs)


def _diagonal(trace, function, primals, tangents, kwargs):
    """diagonal and trace (offset, axis1, axis2); np.diag of a matrix."""
    arguments = _bind(function, primals, kwargs)
    ndim = len(_shape(primals[0]))
    if arguments is None or ndim < 2:
        return None
    if function is _ORIGINAL.diag:
        offset, axis1, axis2 = arguments.get("k", 0), 0, 1
    else:
        if not _only(arguments, ("a", "offset", "axis1", "axis2")):
            return None
        offset = arguments.get("offset", 0)
        axis1, axis2 = arguments.get("axis1", 0), arguments.get("axis2", 1)
    reduce = np.trace if function is _ORIGINAL.trace else np.diagonal
    return function(*primals, **kwargs), reduce(tangents[0], offset, _axis(axis1, ndim),
                                                _axis(axis2, ndim))


def _linear_unary(trace, function, primals, tangents, kwargs):
    """real, imag, conj: elementwise, linear over the reals."""
    if len(primals) != 1 or kwargs:
        return None
    return function(*primals), function(tangents[0])


def _advanced_positions_adjacent(parts: tuple) -> bool:
    """Whether prepending a full slice to the index ``parts`` keeps the batch axis first:
    NumPy moves the axes of advanced indices to the front when they are not adjacent."""
    if not any(issubclass(type(part), np.ndarray) for part in parts):
        return True
    positions = [position for position, part in enumerate(parts)
                 if issubclass(type(part), (np.ndarray, int, np.integer))
                 and not issubclass(type(part), (bool, np.bool_))]
    return positions == list(range(positions[0], positions[0] + len(positions)))


def _index_parts(index: Any) -> tuple | None:
    parts = index if type(index) is tuple else (index,)
    if any(issubclass(type(part), (bool, np.bool_)) or not (
            issubclass(type(part), (np.ndarray, int, np.integer, slice)) or part is None
            or part is Ellipsis) for part in parts):
        return None
    if not _advanced_positions_adjacent(parts):
        return None
    return parts


def _getitem(trace, function, primals, tangents, kwargs):
    x, index = primals
    if not hasattr(x, "dtype") or tangents[0] is None or type(tangents[0]) is _Paths:
        return None
    index = normalize_index(index)
    parts = _index_parts(index)
    if parts is None:
        return None
    return x[index], tangents[0][(slice(None),) + parts]


def _scatter_sum(trace, function, primals, tangents, kwargs):
    shape, dtype, indices = primals[0], primals[1], primals[2]
    y = scatter_sum(shape, dtype, indices, *primals[3:])
    size = trace.size
    kept_indices, kept = [], []
    for index, value, t in zip(indices, primals[3:], tangents[3:]):
        if t is None:
            continue
        parts = _index_parts(index)
        if parts is None or type(t) is _Paths:
            return None
        kept_indices.append((slice(None),) + parts)
        kept.append(_pad(t, len(selection_shape(tuple(shape), index))))
    if not kept:
        return y, None
    return y, scatter_sum((size,) + tuple(shape), _dtype(y), tuple(kept_indices),
                          *kept)


def _pad_rule(trace, function, primals, tangents, kwargs):
    arguments = _bind(function, primals, kwargs)
    if arguments is None or any(t is not None for t in tangents[1:]):
        return None
    mode = arguments.get("mode", "constant")
    if mode not in ("constant", "edge", "reflect", "symmetric", "wrap"):
        return None
    options = dict(arguments.get("kwargs", {}))
    if mode == "constant":
        options = {}  # the constants have no tangent
    elif any(name != "reflect_type" for name in options):
        return None
    x = primals[0]
    width = np.broadcast_to(np.asarray(arguments["pad_width"]), (len(_shape(x)), 2))
    width = ((0, 0),) + tuple(map(tuple, width.tolist()))
    return function(*primals, **kwargs), np.pad(tangents[0], width, mode=mode, **options)


def _matmul(trace, function, primals, tangents, kwargs):
    """``dA @ B + A @ dB`` on batched tangents: 1-d operands as matrices, each tangent padded
    to the output's stack rank, so that matmul broadcasts over the batch axis."""
    if kwargs or len(primals) != 2:
        return None
    a, b = primals
    a_ndim, b_ndim = len(_shape(a)), len(_shape(b))
    if a_ndim == 0 or b_ndim == 0 or (function is _ORIGINAL.dot and max(a_ndim, b_ndim) > 2):
        return None
    y = function(a, b)
    stack = max(a_ndim, b_ndim, 2)  # the rank of the product of the operands as matrices
    dy = None
    for position, t in enumerate(tangents):
        if t is None:
            continue
        if position == 0:
            if a_ndim == 1:
                t = t.reshape((t.shape[0], 1) + t.shape[1:])
            term = _pad(t, stack) @ (b if b_ndim > 1 else b.reshape(-1, 1))
        else:
            if b_ndim == 1:
                t = t.reshape(t.shape + (1,))
            term = (a if a_ndim > 1 else a.reshape(1, -1)) @ _pad(t, stack)
        dy = term if dy is None else dy + term
    return y, dy.reshape((dy.shape[0],) + _shape(y))


def _outer(trace, function, primals, tangents, kwargs):
    if len(primals) != 2 or kwargs:
        return None
    a, b = primals
    y = function(a, b)
    ta, tb = tangents
    dy = None
    if ta is not None:
        dy = ta.reshape(ta.shape[0], -1, 1) * np.reshape(b, (1, 1, -1))
    if tb is not None:
        term = np.reshape(a, (1, -1, 1)) * tb.reshape(tb.shape[0], 1, -1)
        dy = term if dy is None else dy + term
    return y, dy


def _einsum(trace, function, primals, tangents, kwargs):
    """einsum with explicit subscripts: a new letter for the batch axis, in the operand whose
    tangent it is and in the output (linear in each operand)."""
    subscripts = primals[0]
    if not isinstance(subscripts, str) or "->" not in subscripts or "." in subscripts \
            or set(kwargs) - {"optimize"} or tangents[0] is not None:
        return None
    inputs, output = subscripts.replace(" ", "").split("->")
    inputs = inputs.split(",")
    letter = next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba"
                  if c not in subscripts)
    operands = list(primals[1:])
    if len(inputs) != len(operands):
        return None
    y = function(*primals, **kwargs)
    dy = None
    for position, t in enumerate(tangents[1:]):
        if t is None:
            continue
        marked = ",".join(letter + part if k == position else part
                          for k, part in enumerate(inputs))
        term = np.einsum(f"{marked}->{letter}{output}",
                         *operands[:position], t, *operands[position + 1:], **kwargs)
        dy = term if dy is None else dy + term
    return y, dy


def _take(trace, function, primals, tangents, kwargs):
    """take and take_along_axis, linear in the array: the axis shifted, None flattened."""
    arguments = _bind(function, primals, kwargs)
    if arguments is None or any(t is not None for t in tangents[1:]) or \
            set(arguments) - {"a", "arr", "indices", "axis", "mode"}:
        return None
    t = tangents[0]
    ndim = len(_shape(primals[0]))
    axis = arguments.get("axis")
    indices = arguments["indices"]
    y = function(*primals, **kwargs)
    if axis is None:
        t, axis = t.reshape(t.shape[0], -1), 1
        if function is _ORIGINAL.take_along_axis:
            indices = np.ravel(indices)
    else:
        axis = _axis(axis, ndim)
    if function is _ORIGINAL.take_along_axis:
        return y, function(t, np.expand_dims(indices, 0), axis)
    return y, function(t, indices, axis, **({"mode": arguments["mode"]} if "mode" in
                                            arguments else {}))


def _where(trace, function, primals, tangents, kwargs):
    if len(primals) != 3 or kwargs or tangents[0] is not None:
        return None
    condition, x, z = primals
    y = function(condition, x, z)
    ndim = len(_shape(y))
    tx, tz = (0.0 if t is None else _pad(t, ndim) for t in tangents[1:])
    return y, np.where(condition, tx, tz)


def _inv(trace, function, primals, tangents, kwargs):
    if len(primals) != 1 or kwargs:
        return None
    y = function(primals[0])
    return y, -(y @ tangents[0] @ y)


def _matrix_pushforward(trace, function, primals, tangents, kwargs):
    """Rules whose pushforward is written for stacks of matrices (``...`` axes first): with
    the primal matrices unstacked, the batch axis is one more stack axis of the tangents."""
    if any(len(_shape(p)) > 2 for p in primals) or _shape(primals[0]) == ():
        return None
    rule = getattr(_FRULES[function][0], "rule", None)  # `define`'s rule, if it is one
    if rule is None or getattr(rule, "pushforward", None) is None:
        return None
    call = rule.begin(Call, primals, kwargs)
    y = call.y = function(*primals, **kwargs)
    dargs = [_ZERO if t is None else t for t in tangents[:len(rule.cotangents)]]
    dargs += [_NO_TANGENT] * (len(rule.cotangents) - len(dargs))
    dy = rule.pushforward(call, *dargs)
    if isinstance(y, (tuple, list)):
        return y, [None if isinstance(d, AbstractZero) else d for d in dy]
    return y, dy


class _BatchedAxes:
    """A reduction's `Axes` whose ``reduce`` sums a batched value (the batch axis first);
    everything else, read on the primal, unchanged."""

    __slots__ = ("axes", "keepdims", "kept_shape", "count", "_shifted")

    def __init__(self, axes: Any):
        self.axes, self.keepdims = axes.axes, axes.keepdims
        self.kept_shape, self.count = axes.kept_shape, axes.count
        self._shifted = tuple(a + 1 for a in axes.axes)

    def keep(self, value: Any) -> Any:
        return np.reshape(value, self.kept_shape)

    def reduce(self, value: Any) -> Any:
        return np.sum(value, axis=self._shifted, keepdims=self.keepdims)


def _weighted_reduction(trace, function, primals, tangents, kwargs):
    """Reductions whose pushforward is ``axes.reduce(weights * dx)`` (prod, max, min, ptp,
    var, std and their NaN-ignoring forms): the weights read the primal, the sum is over the
    shifted axes."""
    rule = getattr(_FRULES[function][0], "rule", None)
    if rule is None or len(rule.cotangents) != 1 or type(primals[0]) is not np.ndarray \
            or any(t is not None for t in tangents[1:]):
        return None
    call = rule.begin(Call, primals, kwargs)
    y = call.y = function(*primals, **kwargs)
    call._axes = _BatchedAxes(call.axes)
    return y, rule.pushforward(call, tangents[0])


_STRUCTURES = (_join, _array)  # the rules that take a structure argument (a `_Paths`)

_BATCH_RULES: dict[Any, Callable] = {
    operator.getitem: _getitem,
    scatter_sum: _scatter_sum,
    np.sum: _linear_reduction,
    np.mean: _linear_reduction,
    np.cumsum: _linear_reduction,
    np.reshape: _same_elements,
    np.ravel: _same_elements,
    np.expand_dims: _same_elements,
    np.squeeze: _same_elements,
    np.copy: _same_elements,
    _astype: _same_elements,
    np.array: _array,
    np.asarray: _array,
    np.transpose: _transpose,
    np.swapaxes: _swapaxes,
    np.moveaxis: _moveaxis,
    np.broadcast_to: _broadcast_to,
    np.concatenate: _join,
    np.stack: _join,
    np.tril: _triangle,
    np.triu: _triangle,
    np.diagonal: _diagonal,
    np.trace: _diagonal,
    np.diag: _diagonal,
    np.real: _linear_unary,
    np.imag: _linear_unary,
    np.conj: _linear_unary,
    np.pad: _pad_rule,
    np.matmul: _matmul,
    np.dot: _matmul,
    np.outer: _outer,
    np.einsum: _einsum,
    np.take: _take,
    np.take_along_axis: _take,
    np.where: _where,
    np.linalg.inv: _inv,
    **{f: _weighted_reduction for f in (np.prod, np.max, np.min, np.amax, np.amin, np.ptp,
                                        np.nanmax, np.nanmin, np.var, np.std, np.nanvar,
                                        np.nanstd)},
    np.linalg.solve: _matrix_pushforward,
    np.linalg.cholesky: _matrix_pushforward,
    np.linalg.det: _matrix_pushforward,
    np.linalg.slogdet: _matrix_pushforward,
}
