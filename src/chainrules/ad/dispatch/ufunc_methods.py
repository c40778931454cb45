"""The methods of NumPy's ufuncs on traced values: ``reduce``, ``accumulate``, ``reduceat`` and
``outer`` (``at`` is an array write: `chainrules.ad.dispatch.writes`).

Each is recorded as NumPy functions that have rules (``np.add.reduce`` is ``np.sum``), or
written in operations that have them, computing what NumPy computes:

- ``outer(a, b)`` is the ufunc of ``a`` reshaped to ``a.shape + (1,) * b.ndim`` and ``b``
  (broadcasting), for every binary ufunc;
- ``reduce`` and ``accumulate`` of ``add``, ``multiply``, ``maximum`` and ``minimum`` are
  ``np.sum``, ``np.prod``, ``np.max``, ``np.min``, ``np.cumsum``, ``np.cumprod``; running
  extrema are gathers of the element that set them; ``logaddexp``'s reduce is a shifted
  log-sum-exp; the other binary ufuncs NumPy reduces in order (`_SEQUENTIAL`) are applied
  slice by slice, as NumPy does (one recorded call per slice: linear in the axis' length);
- ``reduceat`` of any of those is the reduce of each segment (``np.add.reduceat`` is one
  recorded call, `chainrules.rules.numpy.reductions.add_reduceat`);
- a ufunc declared non-differentiable (comparisons, logical and bitwise ones) gives NumPy's
  value of the plain inputs.

NumPy validates every call first, on the plain values, so that a wrong axis, an index out
of range or an empty axis without an identity is NumPy's own error. ``np.power`` and
``np.arctan2`` are refused: NumPy's inner loop does not reduce them in order (in NumPy 1.26 to
2.4, ``np.power.reduce`` of a contiguous row of three to nine elements is its first element to
the power of its last),
so no composite could agree with NumPy's value.

>>> import numpy as np, chainrules as cr
>>> cr.grad(lambda x: np.sum(np.subtract.outer(x, x) ** 2))(np.array([0.0, 1.0, 3.0]))
array([-16.,  -4.,  20.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.registry import NON_DIFFERENTIABLE
from ...rules.numpy.reductions import add_reduceat
from ..trace.errors import TracingError
from ..trace.tape import record
from ..trace.traced import Traced, primal_value

__all__ = ["ufunc_method"]


def ufunc_method(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``getattr(ufunc, method)(*inputs, **kwargs)`` where an input is traced."""
    if ufunc in NON_DIFFERENTIABLE:  # a boolean or integer answer: no gradient to follow
        return getattr(ufunc, method)(*[primal_value(value) for value in inputs],
                                      **{key: primal_value(value) for key, value in kwargs.items()})
    if method == "outer":
        return _outer(ufunc, inputs, kwargs)
    reduction = _FUNCTIONS.get((ufunc, method))
    if reduction is not None:
        if "axis" not in kwargs:  # np.add.reduce runs along axis 0; np.sum over all axes
            kwargs = {**kwargs, "axis": 0}
        return record(reduction, inputs, kwargs)
    composite = _composite(ufunc, method)
    if composite is None:
        raise TracingError(_refusal(ufunc, method))
    unsupported = set(kwargs) - _OPTIONS[method]
    if unsupported or kwargs.get("dtype") is not None:
        raise TracingError(
            f"np.{ufunc.__name__}.{method}: the option(s) "
            f"{', '.join(sorted(unsupported or {'dtype'}))} are not supported on traced values; "
            f"call it with {' and '.join(sorted(_OPTIONS[method] - {'dtype'}))} only, and cast "
            f"the input (x.astype(...)) for a dtype.")
    # NumPy's value of the plain inputs first: its errors (a wrong axis, an index out of
    # range, an empty axis without an identity) are the user's, and an empty axis its answer
    value = getattr(ufunc, method)(*[primal_value(x) for x in inputs], **kwargs)
    array = inputs[0]
    if method == "reduceat":
        return _reduceat(ufunc, array, np.asarray(primal_value(inputs[1])),
                         int(kwargs.get("axis", 0)) % np.ndim(value))
    if np.size(primal_value(array)) == 0:
        return value
    array, axis = _one_axis(array, kwargs.get("axis", 0))
    if axis is None:  # axis=(): nothing reduced
        return np.reshape(array, np.shape(value))
    result = composite(array, axis)
    return np.reshape(result, np.shape(value)) if kwargs.get("keepdims") else result


def _one_axis(array: Any, axis: Any) -> tuple:
    """``(array, axis)`` with the axes NumPy accepted for a reduction (``None`` for all of
    them, a tuple of several where the ufunc is reorderable) merged into the last one, or
    ``(array, None)`` for none."""
    ndim = np.ndim(primal_value(array))
    if type(axis) is not tuple and axis is not None:
        return array, int(axis) % max(ndim, 1)
    axes = tuple(range(ndim)) if axis is None else tuple(int(a) % ndim for a in axis)
    if not axes:
        return array, None
    if len(axes) == 1:
        return array, axes[0]
    kept = [a for a in range(ndim) if a not in axes]
    moved = np.transpose(array, kept + list(axes))
    shape = np.shape(primal_value(moved))
    return np.reshape(moved, shape[:len(kept)] + (-1,)), len(kept)


def _outer(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> Any:
    """``ufunc.outer(a, b)``: ``ufunc(a[..., None, ..., None], b)``."""
    if kwargs:
        raise TracingError(
            f"np.{ufunc.__name__}.outer: the option(s) {', '.join(sorted(kwargs))} are not "
            f"supported on traced values; call np.{ufunc.__name__}.outer(a, b) without them.")
    if ufunc.nin != 2 or len(inputs) != 2:  # NumPy's error
        raise ValueError("outer product only supported for binary functions")
    a, b = inputs
    a = a if type(a) is Traced else np.asarray(a)
    b = b if type(b) is Traced else np.asarray(b)
    return ufunc(np.reshape(a, np.shape(a) + (1,) * np.ndim(b)), b)


def _reduceat(ufunc: np.ufunc, array: Any, indices: np.ndarray, axis: int) -> Any:
    """``ufunc.reduceat``: the reduce of ``array[start:stop]`` along ``axis`` for each start
    (to the end for the last), or ``array[start]`` where ``stop <= start``; stacked."""
    starts = [int(start) for start in np.ravel(indices)]
    stops = starts[1:] + [np.shape(primal_value(array))[axis]]
    before = (slice(None),) * axis
    pieces = []
    for start, stop in zip(starts, stops):
        if start < stop:
            pieces.append(getattr(ufunc, "reduce")(array[before + (slice(start, stop),)],
                                                   axis=axis))
        else:
            pieces.append(array[before + (start,)])
    return np.stack(pieces, axis=axis)


def _running_extreme(ufunc: np.ufunc) -> Any:
    """``np.maximum.accumulate`` (or ``minimum``) as a gather: each output is the element
    where the running extremum was attained (the latest, of equal ones; a NaN once one is
    met, as NumPy propagates it), which `np.take_along_axis` reads with its rule."""
    def accumulate(array: Any, axis: int) -> Any:
        plain = np.asarray(primal_value(array))
        values = ufunc.accumulate(plain, axis=axis)
        shape = [1] * plain.ndim
        shape[axis] = plain.shape[axis]
        positions = np.reshape(np.arange(plain.shape[axis]), shape)
        with np.errstate(invalid="ignore"):
            attained = (plain == values) | (np.isnan(plain) & np.isnan(values))
        index = np.maximum.accumulate(np.where(attained, positions, 0), axis=axis)
        return np.take_along_axis(array, index, axis=axis)

    return accumulate


def _last_of_running_extreme(ufunc: np.ufunc) -> Any:
    """``np.fmax.reduce`` (``fmin``): the last of the running extrema, which ignore NaNs."""
    running = _running_extreme(ufunc)

    def reduce(array: Any, axis: int) -> Any:
        return np.take(running(array, axis), -1, axis=axis)

    return reduce


def _log_add_reduce(exp: Any, log: Any) -> Any:
    """``np.logaddexp.reduce`` (``logaddexp2``): ``m + log(sum(exp(x - m)))`` with ``m`` the
    largest element (a constant: its derivative cancels), 0 for a slice without a finite
    one."""
    def reduce(array: Any, axis: int) -> Any:
        largest = np.max(np.asarray(primal_value(array)), axis=axis, keepdims=True)
        largest = np.where(np.isfinite(largest), largest, 0.0)
        total = np.sum(exp(array - largest), axis=axis)
        with np.errstate(divide="ignore"):  # a slice of -inf only: -inf, as NumPy, unwarned
            return log(total) + np.squeeze(largest, axis=axis)

    return reduce


def _sequential(ufunc: np.ufunc, accumulate: bool) -> Any:
    """``ufunc.reduce`` or ``ufunc.accumulate`` of any other binary ufunc (``np.subtract``,
    ``np.hypot``, ``np.logaddexp.accumulate``...) as NumPy computes it: ``ufunc(partial,
    next slice)`` along the axis, one recorded call per slice (linear in the axis' length)."""
    def compute(array: Any, axis: int) -> Any:
        slices = [np.take(array, k, axis=axis) for k in range(np.shape(array)[axis])]
        partials = [slices[0]]
        for piece in slices[1:]:
            partials.append(ufunc(partials[-1], piece))
        return np.stack(partials, axis=axis) if accumulate else partials[-1]

    return compute


# Ufunc methods that are NumPy functions with rules.
_FUNCTIONS = {
    (np.add, "reduce"): np.sum,
    (np.multiply, "reduce"): np.prod,
    (np.maximum, "reduce"): np.max,
    (np.minimum, "reduce"): np.min,
    (np.add, "accumulate"): np.cumsum,
    (np.multiply, "accumulate"): np.cumprod,
    (np.add, "reduceat"): add_reduceat,
}

# The binary ufuncs whose reduce and accumulate NumPy computes in order along the axis (checked
# against NumPy for C and Fortran layouts: np.power's and np.arctan2's inner loops do not).
_SEQUENTIAL = frozenset({np.subtract, np.divide, np.float_power, np.floor_divide, np.fmod,
                         np.remainder, np.hypot, np.logaddexp, np.logaddexp2, np.copysign,
                         np.heaviside, np.nextafter})

# Ufunc methods without a NumPy function of their own: written in operations with rules.
_COMPOSITES = {
    (np.maximum, "accumulate"): _running_extreme(np.maximum),
    (np.minimum, "accumulate"): _running_extreme(np.minimum),
    (np.fmax, "accumulate"): _running_extreme(np.fmax),
    (np.fmin, "accumulate"): _running_extreme(np.fmin),
    (np.fmax, "reduce"): _last_of_running_extreme(np.fmax),
    (np.fmin, "reduce"): _last_of_running_extreme(np.fmin),
    (np.logaddexp, "reduce"): _log_add_reduce(np.exp, np.log),
    (np.logaddexp2, "reduce"): _log_add_reduce(np.exp2, np.log2),
}

# The options each composite method takes (``dtype`` only as None).
_OPTIONS = {"reduce": frozenset({"axis", "keepdims", "dtype"}),
            "accumulate": frozenset({"axis", "dtype"}),
            "reduceat": frozenset({"axis", "dtype"})}


def _composite(ufunc: np.ufunc, method: str) -> Any:
    """How ``ufunc.method`` is computed in operations with rules, or None."""
    if method == "reduceat":  # any ufunc whose reduce is followed
        return _reduceat if (ufunc, "reduce") in _FUNCTIONS or ufunc in _SEQUENTIAL or \
            (ufunc, "reduce") in _COMPOSITES else None
    composite = _COMPOSITES.get((ufunc, method))
    if composite is None and method in ("reduce", "accumulate") and ufunc in _SEQUENTIAL:
        composite = _sequential(ufunc, method == "accumulate")
    return composite


def _refusal(ufunc: np.ufunc, method: str) -> str:
    name = f"np.{ufunc.__name__}.{method}"
    if method == "at":
        return f"{name} is not supported on traced values (it updates an array in place)."
    if ufunc in (np.power, np.arctan2) and method in ("reduce", "accumulate", "reduceat"):
        return (f"{name} is not supported on traced values: NumPy's inner loop does not apply "
                f"np.{ufunc.__name__} in order along the axis (np.power.reduce of a contiguous "
                f"row of three to nine elements is its first to the power of its last), so "
                f"no gradient could agree with NumPy's value. Write the loop you mean: "
                f"y = x[0]; for v in x[1:]: y = np.{ufunc.__name__}(y, v).")
    return (f"{name} is not supported on traced values (np.{ufunc.__name__} has no "
            f"derivative the engine follows through {method}); use np.sum, np.prod, np.max, "
            f"np.cumsum, ... or a loop of np.{ufunc.__name__} calls instead.")
