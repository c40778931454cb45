"""Maximum-likelihood fits of ``scipy.stats`` distributions, for engines to trace: every
continuous distribution's ``fit`` of traced data (and of traced fixed parameters), and its
``nnlf``. ``expon.fit`` and ``uniform.fit`` are in closed form: SciPy computes them with
NumPy operations but returns ``float(loc), float(scale)``, which would cut the data out of the
gradient; the versions here return the same values as arrays of the engine. The others
(`continuous_fit`) are SciPy's numerical optimum, whose derivative is the implicit one
(`chainrules.rules.scipy.optimize.implicit.minimizer_at`): ``dθ/dx = -H^-1 ∂²L/∂θ∂x`` for the
log-likelihood ``L``, at SciPy's estimate ``θ``, never the optimizer's iterations. It is as
accurate as the estimate: SciPy's default optimizer (``fmin``) stops within about 1e-4 of the
optimum; pass a tighter ``optimizer`` to ``fit`` for a more accurate estimate and
derivative. An optimum where the Hessian is singular (a parameter the data do not determine)
raises NumPy's ``LinAlgError`` in the pullback.

SciPy's own fit runs first on the plain data (`plain_fit`, which engines compute on plain
values and do not differentiate): its checks and errors (all parameters fixed, data outside a
fixed support, a fixed scale too small) are SciPy's. The estimates, then, in the data:
``expon``: ``loc = min(x)``, ``scale = mean(x) - loc``; ``uniform``: ``loc = min(x)``,
``scale = max(x) - min(x)`` (with a fixed scale, the support centred on the data's range).
``method='MM'`` (SciPy's generic moment fit) and censored data are refused by name.

>>> import numpy as np, scipy.stats
>>> expon_fit(scipy.stats.expon, np.array([1.0, 2.0, 4.0]))
(np.float64(1.0), np.float64(1.3333333333333335))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....core.registry import non_differentiable, recorded_whole
from ..optimize.implicit import minimizer_at

__all__ = ["expon_fit", "uniform_fit", "plain_fit", "continuous_fit", "negative_log_likelihood"]


def plain_fit(distribution: Any, data: Any, args: tuple = (), kwds: dict | None = None
              ) -> Any:
    """``distribution.fit(data, *args, **kwds)``; not differentiable: an engine computes it
    on plain values (SciPy's checks and errors, before the traced estimates; the starting
    guesses in ``args`` and ``kwds`` may be traced values, passed in the structures).

    >>> import scipy.stats
    >>> plain_fit(scipy.stats.norm, np.array([1.0, 3.0]))
    (np.float64(2.0), np.float64(1.0))
    """
    return distribution.fit(data, *args, **(kwds or {}))


non_differentiable(recorded_whole(plain_fit))


def _maximum_likelihood(name: str, kwds: dict) -> None:
    method = kwds.get("method", "MLE")
    if str(method).lower() != "mle":
        raise ValueError(f"scipy.stats.{name}.fit(..., method={method!r}) of traced data: only "
                         f"the maximum-likelihood fit (method='MLE', the default) is followed.")


def expon_fit(self: Any, data: Any, *args: Any, **kwds: Any) -> tuple:
    """``scipy.stats.expon.fit``: ``loc = min(x)``, ``scale = mean(x) - loc``."""
    plain_fit(self, data, args, kwds)
    _maximum_likelihood("expon", kwds)
    data = np.asarray(data)
    loc = np.min(data) if kwds.get("floc") is None else kwds["floc"]
    scale = np.mean(data) - loc if kwds.get("fscale") is None else kwds["fscale"]
    return loc, scale


def uniform_fit(self: Any, data: Any, *args: Any, **kwds: Any) -> tuple:
    """``scipy.stats.uniform.fit``: the data's range, or a fixed scale centred on it."""
    plain_fit(self, data, args, kwds)
    _maximum_likelihood("uniform", kwds)
    data = np.asarray(data)
    low, high = np.min(data), np.max(data)
    floc, fscale = kwds.get("floc"), kwds.get("fscale")
    if fscale is not None:
        return low - 0.5 * (fscale - (high - low)), fscale
    if floc is not None:
        return floc, high - floc
    return low, high - low


def negative_log_likelihood(self: Any, theta: Any, x: Any) -> Any:
    """``scipy.stats.rv_continuous.nnlf``: ``-sum(logpdf(x, *theta))``, with ``theta`` the
    shapes, then ``loc`` and ``scale``; ``inf`` outside the distribution's parameter space
    and where a point is outside the support, as SciPy's.

    >>> import scipy.stats
    >>> float(negative_log_likelihood(scipy.stats.norm, (0.0, 1.0), np.zeros(2)))
    1.8378770664093453
    """
    *shapes, loc, scale = theta
    value = -np.sum(self.logpdf(np.ravel(x), *shapes, loc=loc, scale=scale))
    return np.inf if np.isnan(value) else value  # logpdf is nan outside the parameter space


def _fixed_parameters(self: Any, kwds: dict) -> dict:
    """``{index: value}`` of the parameters that ``fit``'s keywords fix (``f0``, ``fa`` or
    ``fix_a`` for the shape ``a``; ``floc``, ``fscale``), in the order shapes, loc, scale."""
    shapes = self.shapes.replace(",", " ").split() if self.shapes else []
    fixed = {}
    for index, shape in enumerate(shapes):
        for key in (f"f{index}", f"f{shape}", f"fix_{shape}"):
            if kwds.get(key) is not None:
                fixed[index] = kwds[key]
    for index, key in ((len(shapes), "floc"), (len(shapes) + 1, "fscale")):
        if kwds.get(key) is not None:
            fixed[index] = kwds[key]
    return fixed


# The most a Newton step from SciPy's estimate may move it (relative to the largest parameter,
# or 1) for its implicit derivative to be taken: SciPy's default optimizer stops within
# xtol=1e-4 of the optimum; a larger step means an optimum at infinity or on an edge.
_STEP_WITHIN = 1e-2


def continuous_fit(self: Any, data: Any, *args: Any, **kwds: Any) -> tuple:
    """``scipy.stats.rv_continuous.fit``: SciPy's maximum-likelihood estimate, with the
    implicit derivative in the data and the fixed parameters (`minimizer_at` of the negative
    log-likelihood in the free ones)."""
    if type(data).__name__ == "CensoredData":
        raise NotImplementedError(
            f"scipy.stats.{self.name}.fit of traced CensoredData: not followed; fit the "
            f"uncensored values, or use the censored values as constants.")
    estimates = tuple(plain_fit(self, data, args, kwds))
    _maximum_likelihood(self.name, kwds)
    fixed = _fixed_parameters(self, kwds)
    free = [index for index in range(len(estimates)) if index not in fixed]
    fixed_indices = sorted(fixed)

    def parameters(theta: Any, fixed_values: tuple) -> list:
        values = dict(zip(fixed_indices, fixed_values))
        values.update((index, theta[k]) for k, index in enumerate(free))
        return [values[index] for index in range(len(estimates))]

    def objective(theta: Any, x: Any, *fixed_values: Any) -> Any:
        *shapes, loc, scale = parameters(theta, fixed_values)
        return -np.sum(self.logpdf(x, *shapes, loc=loc, scale=scale))

    fixed_values = tuple(fixed[index] for index in fixed_indices)
    theta = minimizer_at(objective, np.array([estimates[index] for index in free], float),
                         np.ravel(data), *fixed_values, name=f"scipy.stats.{self.name}.fit",
                         step_within=_STEP_WITHIN)
    return tuple(parameters(theta, fixed_values))
