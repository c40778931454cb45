"""``scipy.signal.lfilter`` and ``sosfilt`` with initial conditions (``zi=``), written with the
filter from rest (``lfilter`` without ``zi``, which has a rule) and NumPy operations, so that
an engine traces them; ``filtfilt`` and ``sosfiltfilt``, which start each pass from a state,
work through them.

With coefficients normalised by ``a[0]`` and ``K = max(len(a), len(b)) - 1`` delays, SciPy's
filter (transposed direct form II) started from the state ``zi`` is the filter from rest plus
the free response ``zi(z) / A(z)``, which is the filter ``1 / A`` applied to ``zi`` followed by
zeros. The final state is a fixed combination of the last ``K`` inputs and outputs:
``zf[i] = sum_m b[i + 1 + m] x[N - 1 - m] - a[i + 1 + m] y[N - 1 - m]`` over ``m < K - i``,
plus, for a signal shorter than the state (``N < K``), the part of ``zi`` not yet shifted out,
``zi[i + N]``.

>>> import numpy as np, scipy.signal
>>> b, a, x, zi = [0.5, 0.2], [1.0, -0.3], np.arange(4.0), np.array([0.7])
>>> ours, theirs = lfilter(b, a, x, zi=zi), scipy.signal.lfilter(b, a, x, zi=zi)
>>> all(bool(np.allclose(u, v)) for u, v in zip(ours, theirs))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.signal as ssig

__all__ = ["lfilter", "sosfilt"]


def _filter_from_rest(b: Any, a: Any, x: Any) -> Any:
    """The filter from rest along the last axis, through the module (an engine records it)."""
    return ssig.lfilter(b, a, x, axis=-1)


def _state_shape(x: Any, zi: Any, axis: int, delays: int) -> tuple:
    """The shape ``zi`` must broadcast to (``x``'s, with ``delays`` along ``axis``), checked as
    SciPy checks it: equal sizes, or 1 along another axis."""
    expected = list(np.shape(x))
    expected[axis] = delays
    if np.ndim(zi) != np.ndim(x):
        raise ValueError("Dimensions of parameters x and zi must match, but "
                         f"x.ndim={np.ndim(x)}, zi.ndim={np.ndim(zi)} (zi.shape={np.shape(zi)}, "
                         f"expected {tuple(expected)})!")
    for k, (size, wanted) in enumerate(zip(np.shape(zi), expected)):
        if size != wanted and (k == axis or size != 1):
            raise ValueError(f"Unexpected shape for parameter zi: expected {tuple(expected)}, "
                             f"found {np.shape(zi)}.")
    return tuple(expected)


def _padded(c: Any, length: int) -> Any:
    return np.pad(c, (0, length - np.shape(c)[0]))


def lfilter(b: Any, a: Any, x: Any, axis: int = -1, zi: Any = None) -> Any:
    """``scipy.signal.lfilter`` with ``zi``: the filter started from that state, returning
    ``(y, zf)`` as SciPy's. Without ``zi``, ``NotImplemented``: an engine records the call
    (``lfilter``'s rule).

    >>> import numpy as np
    >>> y, zf = lfilter([1.0], [1.0, -0.5], np.zeros(3), zi=np.array([2.0]))
    >>> y.tolist(), zf.tolist()  # the free response 2 (0.5)^n; the state 0.5 y[-1]
    ([2.0, 1.0, 0.5], [0.25])
    """
    b, a = np.atleast_1d(b), np.atleast_1d(a)
    if np.ndim(b) != 1 or np.size(b) == 0:
        raise ValueError(f"Parameter b is not a non-empty 1d array, since b.shape={np.shape(b)}!")
    if np.ndim(a) != 1 or np.size(a) == 0:
        raise ValueError(f"Parameter a is not a non-empty 1d array, since a.shape={np.shape(a)}!")
    if zi is None:
        return NotImplemented
    axis = int(axis) % max(np.ndim(x), 1)
    delays = max(np.shape(a)[0], np.shape(b)[0]) - 1
    zi = np.broadcast_to(zi, _state_shape(x, zi, axis, delays))
    x, zi = np.moveaxis(x, axis, -1), np.moveaxis(zi, axis, -1)
    n = np.shape(x)[-1]
    front = [(0, 0)] * (np.ndim(x) - 1)
    free = np.pad(zi, front + [(0, n)])  # zi, then zeros: what 1/A turns into the free response
    y = _filter_from_rest(b, a, x) + _filter_from_rest(a[:1], a, free[..., :n])
    # zf[i] = sum_m (b[i + 1 + m] x[n - 1 - m] - a[i + 1 + m] y[n - 1 - m]), b and a by a[0]
    lags = np.arange(delays)[:, None] + np.arange(delays)[None, :] + 1
    b_lags = _padded(b / a[0], 2 * delays + 1)[lags]
    a_lags = _padded(a / a[0], 2 * delays + 1)[lags]

    def latest(s: Any) -> Any:  # s[n - 1 - m] for m < delays, zeros before the signal
        return np.flip(np.pad(s, front + [(delays, 0)])[..., n:], -1)

    zf = latest(x) @ b_lags.T - latest(y) @ a_lags.T + free[..., n:n + delays]
    return np.moveaxis(y, -1, axis), np.moveaxis(zf, -1, axis)


def sosfilt(sos: Any, x: Any, axis: int = -1, zi: Any = None) -> Any:
    """``scipy.signal.sosfilt``: the second-order sections applied one after another, each by
    `lfilter`; with ``zi`` (one state per section, ``zi[s]``) it returns ``(y, zf)``.

    >>> import numpy as np
    >>> sos = np.array([[1.0, 0.0, 0.0, 1.0, -0.5, 0.0]])
    >>> sosfilt(sos, np.ones(3)).tolist()
    [1.0, 1.5, 1.75]
    """
    sos = np.atleast_2d(sos)
    if np.ndim(sos) != 2 or np.shape(sos)[1] != 6:
        raise ValueError("sos array must be shape (n_sections, 6)")
    if not np.all(np.asarray(sos[:, 3] == 1)):
        raise ValueError("sos[:, 3] should be all ones")
    sections = np.shape(sos)[0]
    if zi is not None:
        expected = list(np.shape(x))
        expected[axis] = 2
        if tuple(np.shape(zi)) != (sections, *expected):
            raise ValueError(f"Invalid zi shape. With axis={axis!r}, an input with shape "
                             f"{np.shape(x)}, and an sos array with {sections} sections, zi "
                             f"must have shape {(sections, *expected)}, got {np.shape(zi)}.")
    y, states = x, []
    for section in range(sections):  # through the module: recorded, or this module's lfilter
        if zi is None:
            y = ssig.lfilter(sos[section, :3], sos[section, 3:], y, axis=axis)
        else:
            y, state = ssig.lfilter(sos[section, :3], sos[section, 3:], y, axis=axis,
                                    zi=zi[section])
            states.append(state)
    return y if zi is None else (y, np.stack(states))
