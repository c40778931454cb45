"""Rules for ``scipy.signal``: ``convolve``, ``correlate``, ``fftconvolve``, ``convolve2d``,
``correlate2d`` and ``lfilter`` (registered when SciPy is installed).

Every pullback is written with functions that have rules themselves (``scipy.signal``'s, routed
while a trace runs by chainrules.ad.dispatch.routing, and ``pad``, ``flip``, ``conj``), so each rule
can be differentiated again (order 2).

- Convolutions: every output mode is a window of the ``'full'`` one, so ``dy`` is padded to the
  full shape and pulled back through it: for ``y_full = convolve(a, w)``,
  ``da = correlate(dy_full, w, 'valid')`` and ``dw = correlate(dy_full, a, 'valid')``, and
  ``correlate(a, v)`` is ``convolve(a, w)`` with ``w = conj(flip(v))``. ``method`` ('direct',
  'fft', 'auto') changes how the product is computed, not its derivative; the pullback uses the
  caller's method. ``fftconvolve``'s ``axes`` convolve along some axes and broadcast along the
  others. ``convolve2d``/``correlate2d``: ``boundary='fill'`` with ``fillvalue=0`` (the
  defaults) in every mode; other boundaries or fill values only in ``mode='valid'`` (where no
  padding is read), else refused by name.
- ``lfilter(b, a, x, axis)``: the output solves ``a * y = b * x`` (causal convolutions cut to
  ``x``'s length), so with ``g = flip(lfilter([1], conj(a), flip(dy)))`` (the adjoint IIR
  filter, run backward in time): ``dx = flip(lfilter(conj(b), [1], flip(g)))``,
  ``db[k] = sum_n g[n] conj(x[n - k])`` and ``da[k] = -sum_n g[n] conj(y[n - k])``. Tangent:
  ``dy = lfilter(db, a, x) + lfilter(b, a, dx) - lfilter(da, a, y)``. ``zi`` (initial
  conditions, which make lfilter return ``(y, zf)``) is refused here by name: an engine runs
  those calls as `chainrules.rules.scipy.signal.initial_state.lfilter`, written with this
  rule's filter from rest.

>>> import numpy as np, scipy.signal
>>> import chainrules as cr
>>> cr.grad(lambda v: scipy.signal.convolve(np.array([1.0, 2.0]), v).sum())(np.ones(2))
array([3., 3.])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.signal as ssig

from ....core.broadcast import unbroadcast
from ....core.tangents import AbstractZero
from ...define import Call, define, normalize_axis_tuple, unsupported

__all__: list[str] = []

# The functions themselves, taken at import: the rules are registered for these. Pullbacks call
# them through the module (``ssig.correlate``), where a trace puts its routing wrappers.
convolve, correlate, fftconvolve = ssig.convolve, ssig.correlate, ssig.fftconvolve
convolve2d, correlate2d, lfilter = ssig.convolve2d, ssig.correlate2d, ssig.lfilter

_MODES = ("full", "same", "valid")


def _kind(call: Call) -> str:
    """The function's own name: ``'convolve'``, ``'correlate2d'``..."""
    return call.name.rsplit(".", 1)[-1]


def _through_module(name: str) -> Any:
    """``scipy.signal.<name>`` looked up at each call: inside a trace it is the routing wrapper,
    which records calls on traced values (the rule's own values, at order 2)."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(ssig, name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def _nonzero(d: Any) -> bool:
    return not isinstance(d, AbstractZero) and d is not None


def _as_array(value: Any) -> Any:
    """A list tangent (a list of arrays) stacked; anything else as an array."""
    return np.stack(value) if isinstance(value, list) else np.asarray(value)


def _coefficients(value: Any) -> Any:
    """Filter coefficients as a 1-d array (a scalar ``b`` or ``a`` as one coefficient: SciPy
    before 1.12 takes the length of them)."""
    value = _as_array(value)
    return np.reshape(value, (1,)) if np.ndim(value) == 0 else value


def _flip_conj(v: Any, axes: tuple) -> Any:
    flipped = np.flip(v, axes)
    return np.conj(flipped) if np.iscomplexobj(flipped) else flipped


# --- convolutions --------------------------------------------------------------------------------

def _check_mode(call: Call) -> str:
    mode = call["mode"]
    if mode not in _MODES:
        raise unsupported(call.name, "mode", mode, "'full', 'same', 'valid'")
    return mode


def _check_boundary(call: Call) -> None:
    mode = _check_mode(call)
    if mode == "valid":  # no padded value is read
        return
    if call["boundary"] not in ("fill", "pad"):  # SciPy's two names of one boundary
        raise unsupported(call.name, "boundary", call["boundary"],
                          "'fill' with fillvalue=0, or any boundary with mode='valid'")
    if np.any(np.asarray(call["fillvalue"]) != 0):
        raise unsupported(call.name, "fillvalue", call["fillvalue"],
                          "0, or any fill value with mode='valid'")


def _check_correlate2d(call: Call) -> None:
    _check_boundary(call)
    a, v = call.args[0], call.args[1]
    complex_input = np.iscomplexobj(a) or np.iscomplexobj(v)
    if call["mode"] == "valid" and complex_input and any(
            m > n for n, m in zip(np.shape(a), np.shape(v))):
        # SciPy swaps the inputs here and returns the conjugate of the correlation's window.
        raise NotImplementedError(
            f"{call.name}: mode='valid' with in2 larger than in1 on complex input is not "
            f"supported in differentiated code (shapes {np.shape(a)} and {np.shape(v)}); pass "
            "the larger array first and conjugate-flip the output, or use "
            "scipy.signal.correlate.")


def _conv_axes(call: Call) -> tuple:
    """The axes the call convolves along (every axis but for fftconvolve's ``axes``)."""
    ndim = np.ndim(call.y)
    if _kind(call) == "fftconvolve" and call["axes"] is not None:
        return tuple(sorted(normalize_axis_tuple(call["axes"], ndim)))
    return tuple(range(ndim))


def _full_cotangent(call: Call, dy: Any) -> Any:
    """``dy`` padded with zeros to the shape of the full-mode output."""
    mode = _check_mode(call)
    a_shape, v_shape = np.shape(call.args[0]), np.shape(call.args[1])
    widths = [(0, 0)] * np.ndim(dy)
    for axis in _conv_axes(call):
        n, m = a_shape[axis], v_shape[axis]
        if mode == "full":
            start = 0
        elif mode == "valid":
            start = min(n, m) - 1
        elif _kind(call) == "correlate2d":  # centred on the other side of an even in2
            start = m // 2
        else:
            start = (m - 1) // 2
        widths[axis] = (start, n + m - 1 - start - np.shape(dy)[axis])
    return np.pad(dy, widths)


def _correlate_valid(call: Call, x: Any, kernel: Any) -> Any:
    """``sum_k x[i + k] conj(kernel[k])`` along the convolution axes (``'valid'``), by the
    call's method."""
    if _kind(call) == "fftconvolve":
        axes = _conv_axes(call)
        return ssig.fftconvolve(x, _flip_conj(kernel, axes), "valid", axes=axes)
    method = call["method"] if _kind(call) in ("convolve", "correlate") else "auto"
    return ssig.correlate(x, kernel, "valid", method=method)


def _is_correlation(call: Call) -> bool:
    return _kind(call) in ("correlate", "correlate2d")


def _kernel(call: Call) -> Any:
    """The kernel ``w`` of ``y_full = convolve(in1, w)``: ``in2``, or its conjugate flip for a
    correlation."""
    v = call.args[1]
    return _flip_conj(v, _conv_axes(call)) if _is_correlation(call) else v


# The formulas below get ``dy_full`` (`_full_cotangent`, computed once per pullback call).

def _conv_in1(call: Call, dy_full: Any) -> Any:
    return unbroadcast(_correlate_valid(call, dy_full, _kernel(call)), np.shape(call.args[0]))


def _conv_in2(call: Call, dy_full: Any) -> Any:
    dw = _correlate_valid(call, dy_full, call.args[0])
    if _is_correlation(call):
        dw = _flip_conj(dw, _conv_axes(call))
    return unbroadcast(dw, np.shape(call.args[1]))


def _conv_fillvalue(call: Call, dy_full: Any) -> Any:
    """The fill value's cotangent (with ``fillvalue=0``, or any in 'valid' mode): the fill
    value multiplies the kernel entries that fall outside ``in1``, so it is the total of
    ``dy_full`` times the kernel's total, less what lands inside (the total of ``in1``'s
    cotangent)."""
    if call["mode"] == "valid":  # no padded value is read
        return np.zeros(())
    inside = np.sum(_correlate_valid(call, dy_full, _kernel(call)))
    return np.sum(dy_full) * np.conj(np.sum(_kernel(call))) - inside


def _conv2d_pushforward(call: Call, d_in1: Any, d_in2: Any, *options: Any) -> Any:
    """Linear in each of in1 and in2 (with fillvalue 0 or in 'valid' mode); the fill value
    enters as ``f(zeros, in2, fillvalue=d_fill)``."""
    total: Any = np.zeros(np.shape(call.y), np.result_type(call.y))
    if _nonzero(d_in1):
        total = total + call.apply(d_in1, 0)
    if _nonzero(d_in2):
        total = total + call.apply(d_in2, 1)
    d_fill = options[2] if len(options) > 2 else None
    if _nonzero(d_fill) and call["mode"] != "valid":
        zeros = np.zeros(np.shape(call.args[0]))
        total = total + getattr(ssig, _kind(call))(zeros, call.args[1], call["mode"],
                                                   call["boundary"], d_fill)
    return total


# Each is linear in each input (correlate conjugate-linear in in2, whose tangent is then
# correlate(in1, d_in2)): the default pushforward sum_i f(..., dargs[i], ...) is exact.
for _f, _check in ((convolve, _check_mode), (correlate, _check_mode),
                   (fftconvolve, _check_mode)):
    define(_f, _conv_in1, _conv_in2, prepare=_full_cotangent, check=_check,
           calls=_through_module(_f.__name__))
define(convolve2d, _conv_in1, _conv_in2, None, None, _conv_fillvalue,
       pushforward=_conv2d_pushforward, prepare=_full_cotangent, check=_check_boundary,
       calls=_through_module("convolve2d"))
define(correlate2d, _conv_in1, _conv_in2, None, None, _conv_fillvalue,
       pushforward=_conv2d_pushforward, prepare=_full_cotangent, check=_check_correlate2d,
       calls=_through_module("correlate2d"))


# --- lfilter -------------------------------------------------------------------------------------

def _lfilter_check(call: Call) -> None:
    if call["zi"] is not None:
        raise NotImplementedError(
            f"{call.name}: zi= (initial conditions) is not supported in differentiated code; "
            "leave zi=None (zero initial state), or prepend to x the samples that produced "
            "the state.")


def _axis(call: Call) -> int:
    return normalize_axis_tuple(call["axis"], np.ndim(call.args[2]))[0]


def _adjoint_state(call: Call, dy: Any) -> Any:
    """``g = A^-H dy``: the denominator's adjoint filter run backward in time along ``axis``."""
    axis = _axis(call)
    a = _coefficients(call.args[1])
    reversed_g = ssig.lfilter(np.ones(1), np.conj(a) if np.iscomplexobj(a) else a,
                              np.flip(dy, axis), axis=axis)
    return np.flip(reversed_g, axis)


def _lagged(call: Call, g: Any, s: Any, count: int) -> Any:
    """``out[k] = sum_n g[n] conj(s[n - k])`` along ``axis``, summed over the other axes, for
    ``k < count``: one 'valid' correlation of ``s`` (zero-padded in front) with ``g``, whose
    other axes, of equal sizes, sum to one entry (SciPy picks a direct or FFT method)."""
    axis = _axis(call)
    widths = [(0, 0)] * np.ndim(s)
    widths[axis] = (count - 1, 0)
    lags = ssig.correlate(np.pad(s, widths), g, "valid")  # lags[count - 1 - k] = conj(out[k])
    return _flip_conj(np.reshape(lags, (count,)), (0,))


def _lfilter_b(call: Call, g: Any) -> Any:
    b = call.args[0]  # a scalar b (lfilter(2.0, a, x)) gets a scalar cotangent
    return np.reshape(_lagged(call, g, call.args[2], np.size(b)), np.shape(b))


def _lfilter_a(call: Call, g: Any) -> Any:
    a = call.args[1]  # lfilter(b, 1.0, x), the usual FIR call, has a scalar a
    return np.reshape(-_lagged(call, g, call.y, np.size(a)), np.shape(a))


def _lfilter_x(call: Call, g: Any) -> Any:
    axis = _axis(call)
    b = _coefficients(call.args[0])
    b = np.conj(b) if np.iscomplexobj(b) else b
    return np.flip(ssig.lfilter(b, np.ones(1), np.flip(g, axis), axis=axis), axis)


def _lfilter_pushforward(call: Call, db: Any, da: Any, dx: Any, *rest: Any) -> Any:
    b, a, x = _coefficients(call.args[0]), _coefficients(call.args[1]), call.args[2]
    axis = _axis(call)
    total: Any = np.zeros(np.shape(call.y))
    if _nonzero(dx):
        total = total + ssig.lfilter(b, a, _as_array(dx), axis=axis)
    if _nonzero(db):
        total = total + ssig.lfilter(_coefficients(db), a, x, axis=axis)
    if _nonzero(da):
        total = total - ssig.lfilter(_coefficients(da), a, call.y, axis=axis)
    return total


define(lfilter, _lfilter_b, _lfilter_a, _lfilter_x, None, None,
       pushforward=_lfilter_pushforward, prepare=_adjoint_state, check=_lfilter_check,
       calls=_through_module("lfilter"))
