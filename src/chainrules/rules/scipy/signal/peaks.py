"""``scipy.signal``'s peak finding, for engines to trace: ``find_peaks``, ``peak_prominences``
and ``peak_widths`` of traced signals.

Which samples are peaks, their bases and the samples where a peak's width is measured are
positions (integers, no derivative): SciPy finds them on the signal's values (`peak_search`,
which engines compute on plain values and do not differentiate). The measures are then computed
again from the traced signal at those positions, in NumPy operations, and are differentiable:
a peak's height ``x[p]``, its thresholds ``x[p] - x[p -+ 1]``, its prominence ``x[p] -
max(x[left base], x[right base])``, the height at which its width is measured ``x[p] -
rel_height * prominence``, and the width's ends, interpolated linearly between the two samples
around that height as SciPy does.

>>> import numpy as np, scipy.signal
>>> x = np.array([0.0, 1.0, 0.2, 3.0, 0.5, 0.0])
>>> peaks, found = find_peaks(x, prominence=0.1)
>>> peaks, found["prominences"]
(array([1, 3]), array([0.8, 3. ]))
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.signal as signal

from ....core.registry import non_differentiable, recorded_whole

__all__ = ["find_peaks", "peak_prominences", "peak_widths", "peak_search"]


def peak_search(name: str, x: Any, *args: Any, **kwargs: Any) -> Any:
    """SciPy's ``name`` (``find_peaks``, ``peak_prominences``, ``peak_widths``) of ``x``: the
    positions it finds. Not differentiable: an engine computes it on plain values.

    >>> peak_search("find_peaks", np.array([0.0, 2.0, 0.0]))[0]
    array([1])
    """
    return getattr(signal, name)(x, *args, **kwargs)


non_differentiable(recorded_whole(peak_search))


def _prominences(x: Any, peaks: np.ndarray, left: np.ndarray, right: np.ndarray) -> Any:
    return x[peaks] - np.maximum(x[left], x[right])


def _widths(x: Any, peaks: np.ndarray, prominences: Any, rel_height: float,
            left_ips: np.ndarray, right_ips: np.ndarray) -> tuple:
    """``(widths, width_heights, left_ips, right_ips)`` from SciPy's interpolated positions:
    the sample before (after) each end, and whether SciPy interpolated there (its value is
    below the height: else the end is a base or a sample at the height)."""
    height = x[peaks] - prominences * rel_height
    below, above = np.floor(left_ips).astype(np.intp), np.ceil(right_ips).astype(np.intp)
    ends = []
    for sample, neighbour, sign in ((below, np.minimum(below + 1, len(x) - 1), 1.0),
                                    (above, np.maximum(above - 1, 0), -1.0)):
        interpolated = np.asarray(x[sample] < height)  # (a comparison: plain)
        step = np.where(interpolated, x[neighbour] - x[sample], 1.0)
        fraction = np.where(interpolated, (height - x[sample]) / step, 0.0)
        ends.append(sample + sign * fraction)
    return ends[1] - ends[0], height, ends[0], ends[1]


def find_peaks(x: Any, height: Any = None, threshold: Any = None, distance: Any = None,
               prominence: Any = None, width: Any = None, wlen: Any = None,
               rel_height: float = 0.5, plateau_size: Any = None) -> tuple:
    """``scipy.signal.find_peaks``: SciPy's peaks, their measures from the traced ``x``."""
    peaks, found = peak_search("find_peaks", x, height, threshold, distance, prominence,
                               width, wlen, rel_height, plateau_size)
    x = np.asarray(x)
    found = dict(found)
    if "peak_heights" in found:
        found["peak_heights"] = x[peaks]
    if "left_thresholds" in found:
        found["left_thresholds"] = x[peaks] - x[peaks - 1]
        found["right_thresholds"] = x[peaks] - x[peaks + 1]
    if "prominences" in found:
        found["prominences"] = _prominences(x, peaks, found["left_bases"], found["right_bases"])
    if "widths" in found:
        found["widths"], found["width_heights"], found["left_ips"], found["right_ips"] = \
            _widths(x, peaks, found["prominences"], rel_height, found["left_ips"],
                    found["right_ips"])
    return peaks, found


def peak_prominences(x: Any, peaks: Any, wlen: Any = None) -> tuple:
    """``scipy.signal.peak_prominences``: SciPy's bases, the prominences from the traced ``x``."""
    _, left, right = peak_search("peak_prominences", x, peaks, wlen)
    peaks = np.asarray(peaks, dtype=np.intp)
    return _prominences(np.asarray(x), peaks, left, right), left, right


def peak_widths(x: Any, peaks: Any, rel_height: float = 0.5, prominence_data: Any = None,
                wlen: Any = None) -> tuple:
    """``scipy.signal.peak_widths``: SciPy's ends, the widths from the traced ``x`` (and the
    given prominences)."""
    _, _, left_ips, right_ips = peak_search("peak_widths", x, peaks, rel_height,
                                            prominence_data, wlen)
    peaks = np.asarray(peaks, dtype=np.intp)
    prominences = peak_prominences(x, peaks, wlen)[0] if prominence_data is None else \
        prominence_data[0]
    return _widths(np.asarray(x), peaks, prominences, rel_height, left_ips, right_ips)
