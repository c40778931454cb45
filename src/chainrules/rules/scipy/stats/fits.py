"""Maximum-likelihood fits of ``scipy.stats`` distributions in closed form, for engines to
trace: ``expon.fit`` and ``uniform.fit`` of traced data. SciPy computes them with NumPy
operations but returns ``float(loc), float(scale)``, which would cut the data out of the
gradient; the versions here return the same values as arrays of the engine.

SciPy's own fit runs first on the plain data (`plain_fit`, which engines compute on plain
values and do not differentiate): its checks and errors (all parameters fixed, data outside a
fixed support, a fixed scale too small) are SciPy's. The estimates, then, in the data:
``expon``: ``loc = min(x)``, ``scale = mean(x) - loc``; ``uniform``: ``loc = min(x)``,
``scale = max(x) - min(x)`` (with a fixed scale, the support centred on the data's range).
``method='MM'`` (SciPy's generic moment fit) is refused by name.

>>> import numpy as np, scipy.stats
>>> expon_fit(scipy.stats.expon, np.array([1.0, 2.0, 4.0]))
(np.float64(1.0), np.float64(1.3333333333333335))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....core.registry import non_differentiable, recorded_whole

__all__ = ["expon_fit", "uniform_fit", "plain_fit"]


def plain_fit(distribution: Any, data: Any, *args: Any, **kwds: Any) -> Any:
    """``distribution.fit(data, ...)``; not differentiable: an engine computes it on plain
    values (SciPy's checks and errors, before the traced estimates).

    >>> import scipy.stats
    >>> plain_fit(scipy.stats.norm, np.array([1.0, 3.0]))
    (np.float64(2.0), np.float64(1.0))
    """
    return distribution.fit(data, *args, **kwds)


non_differentiable(recorded_whole(plain_fit))


def _maximum_likelihood(name: str, kwds: dict) -> None:
    method = kwds.get("method", "MLE")
    if str(method).lower() != "mle":
        raise ValueError(f"scipy.stats.{name}.fit(..., method={method!r}) of traced data: only "
                         f"the maximum-likelihood fit (method='MLE', the default) is followed.")


def expon_fit(self: Any, data: Any, *args: Any, **kwds: Any) -> tuple:
    """``scipy.stats.expon.fit``: ``loc = min(x)``, ``scale = mean(x) - loc``."""
    plain_fit(self, data, *args, **kwds)
    _maximum_likelihood("expon", kwds)
    data = np.asarray(data)
    loc = np.min(data) if kwds.get("floc") is None else kwds["floc"]
    scale = np.mean(data) - loc if kwds.get("fscale") is None else kwds["fscale"]
    return loc, scale


def uniform_fit(self: Any, data: Any, *args: Any, **kwds: Any) -> tuple:
    """``scipy.stats.uniform.fit``: the data's range, or a fixed scale centred on it."""
    plain_fit(self, data, *args, **kwds)
    _maximum_likelihood("uniform", kwds)
    data = np.asarray(data)
    low, high = np.min(data), np.max(data)
    floc, fscale = kwds.get("floc"), kwds.get("fscale")
    if fscale is not None:
        return low - 0.5 * (fscale - (high - low)), fscale
    if floc is not None:
        return floc, high - floc
    return low, high - low
