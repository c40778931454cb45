"""``scipy.ndimage``'s linear filters written in NumPy operations, so that an engine traces
them: ``correlate1d``, ``convolve1d``, ``correlate``, ``convolve``, ``gaussian_filter1d``,
``gaussian_filter``, ``uniform_filter1d``, ``uniform_filter``, ``sobel``, ``prewitt``,
``laplace``, ``gaussian_laplace`` and ``gaussian_gradient_magnitude``, differentiable in the
input and in the weights, at every order.

SciPy computes these in C; an engine reaches these versions instead when an argument holds
traced values (chainrules routes the SciPy functions here while a trace is active). Each is the
input extended at its edges as ``mode`` says (``np.pad``: ``reflect`` is NumPy's
``symmetric``, ``mirror`` NumPy's ``reflect``, ``nearest`` ``edge``, ``wrap``, ``constant``
with ``cval``), then a sum over the kernel's entries of shifted slices times the weight: cost
O(input size x kernel size), as SciPy's. ``origin`` shifts the kernel as SciPy does; the
Gaussian's weights are SciPy's own (``truncate``, ``radius``, ``order``). The order-statistic
filters (``rank_filter``, ``percentile_filter``, ``median_filter``, ``minimum_filter``,
``maximum_filter`` and the last two's 1-D forms) stack the neighbourhoods the same way and take
their minimum, maximum or sorted entry: the derivative goes to the neighbour chosen (one of
them, for ties). Refused by name: an ``output=`` array (use the returned value) and a traced
``sigma``.

>>> import numpy as np, scipy.ndimage
>>> x = np.array([1.0, 2.0, 4.0, 7.0])
>>> bool(np.allclose(correlate1d(x, [1.0, 2.0, 0.5]), scipy.ndimage.correlate1d(x, [1.0, 2.0, 0.5])))
True
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

__all__ = ["correlate1d", "convolve1d", "correlate", "convolve", "gaussian_filter1d",
           "gaussian_filter", "uniform_filter1d", "uniform_filter", "sobel", "prewitt",
           "laplace", "gaussian_laplace", "gaussian_gradient_magnitude", "rank_filter",
           "percentile_filter", "median_filter", "minimum_filter", "maximum_filter",
           "minimum_filter1d", "maximum_filter1d"]

_PAD_MODES = {"reflect": "symmetric", "grid-mirror": "symmetric", "mirror": "reflect",
              "nearest": "edge", "wrap": "wrap", "grid-wrap": "wrap", "constant": "constant",
              "grid-constant": "constant"}


def _refuse_output(name: str, output: Any) -> None:
    if output is not None and not (isinstance(output, type) or type(output) is np.dtype or
                                   type(output) is str):
        raise ValueError(
            f"scipy.ndimage.{name}(..., output=array) of traced values: the result cannot be "
            f"written into a given array here; use the returned value (output=None).")


def _pad_mode(name: str, mode: str) -> str:
    pad = _PAD_MODES.get(mode)
    if pad is None:
        raise ValueError(f"scipy.ndimage.{name}: mode {mode!r} is not supported for traced "
                         f"values; use one of {sorted(_PAD_MODES)}.")
    return pad


def _per_axis(value: Any, ndim: int) -> list:
    if isinstance(value, (list, tuple)) or (type(value) is np.ndarray and value.ndim):
        values = list(value)
        if len(values) != ndim:
            raise RuntimeError("sequence argument must have length equal to input rank")
        return values
    return [value] * ndim


def _padded(name: str, input: Any, shape: tuple, mode: Any, cval: float,
            origins: list) -> Any:
    """``input`` extended at its edges for a kernel of ``shape`` (``origins`` per axis, as
    SciPy places the kernel), each axis as its ``mode`` says."""
    modes = _per_axis(mode, input.ndim)
    padded = input
    for axis, size in enumerate(shape):  # one axis at a time: each its own mode
        left = size // 2 + int(origins[axis])
        if not -(size // 2) <= int(origins[axis]) <= (size - 1) // 2:
            raise ValueError("Invalid origin; origin must satisfy -(weights.shape[k] // 2) "
                             "<= origin[k] <= (weights.shape[k]-1) // 2")
        if size == 1:
            continue
        pad = _pad_mode(name, modes[axis])
        width = [(0, 0)] * input.ndim
        width[axis] = (left, size - 1 - left)
        options = {"constant_values": cval} if pad == "constant" else {}
        padded = np.pad(padded, width, mode=pad, **options)
    return padded


def _correlate(name: str, input: Any, weights: Any, mode: Any, cval: float,
               origins: list) -> Any:
    """``input`` correlated with ``weights`` (of the same rank), ``origins`` per axis."""
    input, weights = np.asarray(input), np.asarray(weights)
    if weights.ndim != input.ndim:
        raise RuntimeError("filter weights array has incorrect shape.")
    padded = _padded(name, input, weights.shape, mode, cval, origins)
    total: Any = 0.0
    for offset in itertools.product(*(range(size) for size in weights.shape)):
        weight = weights[offset]
        window = tuple(slice(o, o + n) for o, n in zip(offset, input.shape))
        total = total + weight * padded[window]
    result = total if np.ndim(total) else np.zeros_like(input) + total
    common = np.result_type(input.dtype, weights.dtype)
    # SciPy's output has the input's dtype (float32 stays float32), complex where the weights
    # make it so
    dtype = input.dtype if input.dtype.kind == common.kind else common
    return result.astype(dtype, copy=False) if dtype.kind in "fc" else result


def correlate1d(input: Any, weights: Any, axis: int = -1, output: Any = None,
                mode: str = "reflect", cval: float = 0.0, origin: int = 0) -> Any:
    """``scipy.ndimage.correlate1d`` in NumPy operations."""
    _refuse_output("correlate1d", output)
    input, weights = np.asarray(input), np.asarray(weights)
    if weights.ndim != 1 or weights.shape[0] < 1:
        raise RuntimeError("no filter weights given")
    axis = axis % input.ndim
    shape = [1] * input.ndim
    shape[axis] = weights.shape[0]
    origins = [0] * input.ndim
    origins[axis] = origin
    return _correlate("correlate1d", input, np.reshape(weights, shape), mode, cval, origins)


def convolve1d(input: Any, weights: Any, axis: int = -1, output: Any = None,
               mode: str = "reflect", cval: float = 0.0, origin: int = 0) -> Any:
    """``scipy.ndimage.convolve1d``: a correlation with the reversed weights."""
    _refuse_output("convolve1d", output)
    weights = np.asarray(weights)[::-1]
    origin = -origin
    if not weights.shape[0] & 1:
        origin -= 1
    return correlate1d(input, weights, axis, None, mode, cval, origin)


def correlate(input: Any, weights: Any, output: Any = None, mode: str = "reflect",
              cval: float = 0.0, origin: Any = 0) -> Any:
    """``scipy.ndimage.correlate`` in NumPy operations."""
    _refuse_output("correlate", output)
    input = np.asarray(input)
    return _correlate("correlate", input, weights, mode, cval, _per_axis(origin, input.ndim))


def convolve(input: Any, weights: Any, output: Any = None, mode: str = "reflect",
             cval: float = 0.0, origin: Any = 0) -> Any:
    """``scipy.ndimage.convolve``: a correlation with the weights reversed along every axis."""
    _refuse_output("convolve", output)
    input, weights = np.asarray(input), np.asarray(weights)
    weights = weights[(slice(None, None, -1),) * weights.ndim]
    origins = [-int(o) for o in _per_axis(origin, input.ndim)]
    for axis, size in enumerate(weights.shape):
        if not size & 1:
            origins[axis] -= 1
    return _correlate("convolve", input, weights, mode, cval, origins)


def _number(name: str, value: Any) -> float:
    """``float(value)`` of a parameter that the filters do not differentiate in; an engine's
    traced value refuses the conversion, and the error then names the parameter."""
    try:
        return float(value)
    except Exception as error:  # noqa: BLE001 - whatever the engine raises: say which
        raise ValueError(f"scipy.ndimage.gaussian_filter: {name} must be a plain number (a "
                         f"traced {name} is not differentiated; the derivative is taken in "
                         f"the input): pass a constant.") from error


def _gaussian_weights(sigma: Any, order: int, truncate: float, radius: Any) -> np.ndarray:
    """SciPy's Gaussian kernel (reversed, as gaussian_filter1d correlates with it)."""
    from scipy.ndimage import _filters

    sigma = _number("sigma", sigma)
    width = int(_number("truncate", truncate) * sigma + 0.5) if radius is None else int(radius)
    return _filters._gaussian_kernel1d(sigma, int(order), width)[::-1]


def gaussian_filter1d(input: Any, sigma: float, axis: int = -1, order: int = 0,
                      output: Any = None, mode: str = "reflect", cval: float = 0.0,
                      truncate: float = 4.0, *, radius: Any = None) -> Any:
    """``scipy.ndimage.gaussian_filter1d`` in NumPy operations."""
    _refuse_output("gaussian_filter1d", output)
    return correlate1d(input, _gaussian_weights(sigma, order, truncate, radius), axis, None,
                       mode, cval, 0)


def gaussian_filter(input: Any, sigma: Any, order: Any = 0, output: Any = None,
                    mode: Any = "reflect", cval: float = 0.0, truncate: float = 4.0, *,
                    radius: Any = None, axes: Any = None) -> Any:
    """``scipy.ndimage.gaussian_filter``: ``gaussian_filter1d`` along each axis."""
    _refuse_output("gaussian_filter", output)
    input = np.asarray(input)
    axes = list(range(input.ndim)) if axes is None else \
        [a % input.ndim for a in ((axes,) if np.ndim(axes) == 0 else axes)]
    count = len(axes)
    sigmas, orders = _per_axis(sigma, count), _per_axis(order, count)
    modes, radii = _per_axis(mode, count), _per_axis(radius, count)
    result = input
    for axis, s, o, m, r in zip(axes, sigmas, orders, modes, radii):
        if _number("sigma", s) > 1e-15:
            result = gaussian_filter1d(result, s, axis, o, None, m, cval, truncate, radius=r)
    return result + 0.0 if result is input else result


def uniform_filter1d(input: Any, size: int, axis: int = -1, output: Any = None,
                     mode: str = "reflect", cval: float = 0.0, origin: int = 0) -> Any:
    """``scipy.ndimage.uniform_filter1d``: the mean of ``size`` neighbours along ``axis``."""
    _refuse_output("uniform_filter1d", output)
    size = int(size)
    if size < 1:
        raise RuntimeError("incorrect filter size")
    return correlate1d(input, np.full(size, 1.0 / size), axis, None, mode, cval, origin)


def uniform_filter(input: Any, size: Any = 3, output: Any = None, mode: Any = "reflect",
                   cval: float = 0.0, origin: Any = 0, *, axes: Any = None) -> Any:
    """``scipy.ndimage.uniform_filter``: ``uniform_filter1d`` along each axis."""
    _refuse_output("uniform_filter", output)
    input = np.asarray(input)
    axes = list(range(input.ndim)) if axes is None else \
        [a % input.ndim for a in ((axes,) if np.ndim(axes) == 0 else axes)]
    count = len(axes)
    sizes, modes, origins = (_per_axis(size, count), _per_axis(mode, count),
                             _per_axis(origin, count))
    result = input
    for axis, n, m, o in zip(axes, sizes, modes, origins):
        if int(n) > 1:
            result = uniform_filter1d(result, n, axis, None, m, cval, o)
    return result + 0.0 if result is input else result


def _derivative_filter(name: str, smoothing: list) -> Any:
    def derivative(input: Any, axis: int = -1, output: Any = None, mode: Any = "reflect",
                   cval: float = 0.0) -> Any:
        _refuse_output(name, output)
        input = np.asarray(input)
        axis = axis % input.ndim
        modes = _per_axis(mode, input.ndim)
        result = correlate1d(input, [-1.0, 0.0, 1.0], axis, None, modes[axis], cval, 0)
        for other in range(input.ndim):
            if other != axis:
                result = correlate1d(result, smoothing, other, None, modes[other], cval, 0)
        return result

    derivative.__name__ = derivative.__qualname__ = name
    derivative.__doc__ = (f"``scipy.ndimage.{name}``: a central difference along ``axis``, "
                          f"smoothed by {smoothing} along the others.")
    return derivative


sobel = _derivative_filter("sobel", [1.0, 2.0, 1.0])
prewitt = _derivative_filter("prewitt", [1.0, 1.0, 1.0])


def laplace(input: Any, output: Any = None, mode: Any = "reflect", cval: float = 0.0, *,
            axes: Any = None) -> Any:
    """``scipy.ndimage.laplace``: the sum of the second differences along the axes."""
    _refuse_output("laplace", output)
    input = np.asarray(input)
    axes = list(range(input.ndim)) if axes is None else \
        [a % input.ndim for a in ((axes,) if np.ndim(axes) == 0 else axes)]
    modes = _per_axis(mode, len(axes))
    result: Any = 0.0
    for axis, m in zip(axes, modes):
        result = result + correlate1d(input, [1.0, -2.0, 1.0], axis, None, m, cval, 0)
    return result


def _gaussian_derivatives(input: Any, sigma: Any, order: int, mode: Any, cval: float,
                          axes: Any, options: dict) -> list:
    """``gaussian_filter`` of ``input`` with derivative ``order`` along each axis in turn."""
    input = np.asarray(input)
    axes = list(range(input.ndim)) if axes is None else \
        [a % input.ndim for a in ((axes,) if np.ndim(axes) == 0 else axes)]
    sigmas, modes = _per_axis(sigma, input.ndim), _per_axis(mode, input.ndim)
    derivatives = []
    for axis in axes:
        orders = [order if other == axis else 0 for other in range(input.ndim)]
        derivatives.append(gaussian_filter(input, sigmas, orders, None, modes, cval, **options))
    return derivatives


def gaussian_laplace(input: Any, sigma: Any, output: Any = None, mode: Any = "reflect",
                     cval: float = 0.0, *, axes: Any = None, **kwargs: Any) -> Any:
    """``scipy.ndimage.gaussian_laplace``: the sum of the Gaussian second derivatives."""
    _refuse_output("gaussian_laplace", output)
    total: Any = 0.0
    for derivative in _gaussian_derivatives(input, sigma, 2, mode, cval, axes, kwargs):
        total = total + derivative
    return total


def gaussian_gradient_magnitude(input: Any, sigma: Any, output: Any = None,
                                mode: Any = "reflect", cval: float = 0.0, *, axes: Any = None,
                                **kwargs: Any) -> Any:
    """``scipy.ndimage.gaussian_gradient_magnitude``: the norm of the Gaussian gradient."""
    _refuse_output("gaussian_gradient_magnitude", output)
    total: Any = 0.0
    for derivative in _gaussian_derivatives(input, sigma, 1, mode, cval, axes, kwargs):
        total = total + derivative * derivative
    return np.sqrt(total)


# --- order statistics of the neighbourhood: rank, percentile, median, minimum, maximum -------

def _order_statistic(name: str, input: Any, rank: Any, size: Any, footprint: Any,
                     output: Any, mode: Any, cval: float, origin: Any, axes: Any) -> Any:
    """The ``rank(count)``-th smallest of each point's neighbours under ``footprint`` (or a box
    of ``size``): the neighbourhoods stacked (one shifted slice of the padded input per
    footprint entry), then their minimum, maximum or sorted entry, whose derivative goes to
    the neighbour chosen."""
    _refuse_output(name, output)
    if isinstance(mode, (list, tuple)) and name in ("rank_filter", "percentile_filter",
                                                    "median_filter"):
        raise RuntimeError("A sequence of modes is not supported by non-separable rank "
                           "filters")  # (SciPy's own error)
    input = np.asarray(input)
    axes = list(range(input.ndim)) if axes is None else \
        [a % input.ndim for a in ((axes,) if np.ndim(axes) == 0 else axes)]
    if footprint is None:
        if size is None:
            raise RuntimeError("no footprint or filter size provided")
        footprint = np.ones([int(n) for n in _per_axis(size, len(axes))], dtype=bool)
    footprint = np.asarray(footprint, dtype=bool)
    if footprint.ndim != len(axes):
        raise RuntimeError("footprint array has incorrect shape.")
    shape, modes, origins = [1] * input.ndim, ["constant"] * input.ndim, [0] * input.ndim
    for axis, n, m, o in zip(axes, footprint.shape, _per_axis(mode, len(axes)),
                             _per_axis(origin, len(axes))):
        shape[axis], modes[axis], origins[axis] = n, m, o
    padded = _padded(name, input, tuple(shape), modes, cval, origins)
    full = np.reshape(footprint, shape)
    neighbours = [padded[tuple(slice(o, o + n) for o, n in zip(offset, input.shape))]
                  for offset in np.argwhere(full)]
    count = len(neighbours)
    chosen = rank(count)
    if not 0 <= chosen < count:
        raise RuntimeError("rank not within filter footprint size")
    stacked = np.stack(neighbours)
    if chosen == 0:
        return np.min(stacked, axis=0)
    if chosen == count - 1:
        return np.max(stacked, axis=0)
    return np.sort(stacked, axis=0)[chosen]


def _rank(rank: Any) -> Any:
    def chosen(count: int) -> int:
        value = int(rank)
        return value + count if value < 0 else value
    return chosen


def _percentile_rank(percentile: Any) -> Any:
    def chosen(count: int) -> int:
        percent = float(percentile)
        percent = percent + 100.0 if percent < 0.0 else percent
        if not 0 <= percent <= 100:
            raise RuntimeError("invalid percentile")
        return count - 1 if percent == 100.0 else int(float(count) * percent / 100.0)
    return chosen


def rank_filter(input: Any, rank: int, size: Any = None, footprint: Any = None,
                output: Any = None, mode: Any = "reflect", cval: float = 0.0, origin: Any = 0,
                *, axes: Any = None) -> Any:
    """``scipy.ndimage.rank_filter`` in NumPy operations."""
    return _order_statistic("rank_filter", input, _rank(rank), size, footprint, output, mode,
                            cval, origin, axes)


def percentile_filter(input: Any, percentile: float, size: Any = None, footprint: Any = None,
                      output: Any = None, mode: Any = "reflect", cval: float = 0.0,
                      origin: Any = 0, *, axes: Any = None) -> Any:
    """``scipy.ndimage.percentile_filter`` in NumPy operations."""
    return _order_statistic("percentile_filter", input, _percentile_rank(percentile), size,
                            footprint, output, mode, cval, origin, axes)


def median_filter(input: Any, size: Any = None, footprint: Any = None, output: Any = None,
                  mode: Any = "reflect", cval: float = 0.0, origin: Any = 0, *,
                  axes: Any = None) -> Any:
    """``scipy.ndimage.median_filter``: the neighbour of rank ``count // 2`` (the upper of the
    two middle ones for an even count, as SciPy's)."""
    return _order_statistic("median_filter", input, lambda count: count // 2, size, footprint,
                            output, mode, cval, origin, axes)


def minimum_filter(input: Any, size: Any = None, footprint: Any = None, output: Any = None,
                   mode: Any = "reflect", cval: float = 0.0, origin: Any = 0, *,
                   axes: Any = None) -> Any:
    """``scipy.ndimage.minimum_filter`` in NumPy operations."""
    return _order_statistic("minimum_filter", input, lambda count: 0, size, footprint, output,
                            mode, cval, origin, axes)


def maximum_filter(input: Any, size: Any = None, footprint: Any = None, output: Any = None,
                   mode: Any = "reflect", cval: float = 0.0, origin: Any = 0, *,
                   axes: Any = None) -> Any:
    """``scipy.ndimage.maximum_filter`` in NumPy operations."""
    return _order_statistic("maximum_filter", input, lambda count: count - 1, size, footprint,
                            output, mode, cval, origin, axes)


def minimum_filter1d(input: Any, size: int, axis: int = -1, output: Any = None,
                     mode: str = "reflect", cval: float = 0.0, origin: int = 0) -> Any:
    """``scipy.ndimage.minimum_filter1d`` in NumPy operations."""
    if int(size) < 1:
        raise RuntimeError("incorrect filter size")
    return _order_statistic("minimum_filter1d", input, lambda count: 0, size, None, output,
                            mode, cval, origin, axis)


def maximum_filter1d(input: Any, size: int, axis: int = -1, output: Any = None,
                     mode: str = "reflect", cval: float = 0.0, origin: int = 0) -> Any:
    """``scipy.ndimage.maximum_filter1d`` in NumPy operations."""
    if int(size) < 1:
        raise RuntimeError("incorrect filter size")
    return _order_statistic("maximum_filter1d", input, lambda count: count - 1, size, None,
                            output, mode, cval, origin, axis)

