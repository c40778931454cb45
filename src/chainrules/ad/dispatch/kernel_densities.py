"""``scipy.stats.gaussian_kde`` while tracing: built on traced data (or weights), or evaluated
at traced points, its density is computed in NumPy operations
(`chainrules.rules.scipy.stats.kernel_density`), differentiable in the points, the data and
the weights, with the bandwidth Scott's or Silverman's rule derives from them.

The constructor builds the estimate on the plain values (every check and attribute is
SciPy's) and keeps the traced data; ``evaluate``, ``__call__``, ``pdf`` and ``logpdf`` then
compute from it. Refused by name on traced data: a callable ``bw_method`` (computed from the
instance, which holds plain values), ``set_bandwidth``, and the methods that do not evaluate
the density (``integrate_*``, ``resample``, ``marginal``). Reading ``kde.dataset`` or
``kde.covariance`` gives the plain values.

>>> import numpy as np, scipy.stats, chainrules as cr
>>> data = np.array([0.1, 0.7, 1.3, 2.0])
>>> gradient = cr.grad(lambda x: scipy.stats.gaussian_kde(x).logpdf(0.9)[0])(data)
>>> gradient.shape
(4,)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..trace.errors import TracingError
from ..trace.traced import primal_value
from ..trace.values import holds_traced
from .routes import Swap, loaded_module

__all__ = ["swaps"]

_DATA = "_chainrules_traced_kde"  # (dataset of shape (d, n), weights or None, bw_method)
_REFUSED = ("integrate_gaussian", "integrate_box_1d", "integrate_box", "integrate_kde",
            "resample", "marginal", "set_bandwidth")


def _init(original: Any) -> Any:
    def __init__(self, dataset: Any, bw_method: Any = None, weights: Any = None) -> None:
        if not (holds_traced(dataset) or holds_traced(weights)):
            return original(self, dataset, bw_method, weights)
        if callable(bw_method):
            raise TracingError(
                "gaussian_kde: a callable bw_method on traced data is not supported (SciPy "
                "calls it with the instance, which holds plain values); pass 'scott', "
                "'silverman' or a number computed from the data.")
        original(self, primal_value(dataset), bw_method,
                 None if weights is None else primal_value(weights))
        data = np.atleast_2d(np.asarray(dataset))
        self.__dict__[_DATA] = (data, None if weights is None else np.asarray(weights),
                                bw_method)

    return __init__


def _points(self: Any, points: Any) -> Any:
    """``points`` as ``(d, m)``, as SciPy reads them (a vector of d values: one point)."""
    points = np.atleast_2d(np.asarray(points))
    d, m = np.shape(points)
    if d != self.d:
        if d == 1 and m == self.d:
            return np.reshape(points, (self.d, 1))
        raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
    return points


def _log_density(self: Any, points: Any) -> Any:
    from ...rules.scipy.stats.kernel_density import log_density

    data = self.__dict__.get(_DATA)
    if data is None:  # plain data, traced points
        return log_density(self.dataset, self.weights, self.factor, _points(self, points))
    dataset, weights, bw_method = data
    return log_density(dataset, weights, bw_method, _points(self, points))


def _evaluating(original: Any, logarithm: bool) -> Any:
    def method(self: Any, points: Any) -> Any:
        if _DATA not in self.__dict__ and not holds_traced(points):
            return original(self, points)
        log = _log_density(self, points)
        return log if logarithm else np.exp(log)

    method.__name__ = original.__name__
    return method


def _refusing(name: str, original: Any) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _DATA in getattr(self, "__dict__", {}):
            raise TracingError(
                f"gaussian_kde.{name} of an estimate built on traced data: chainrules follows "
                f"its density (evaluate, pdf, logpdf), not {name}. Compute it from the "
                f"density, or build the estimate on plain data (chainrules.primal).")
        return original(self, *args, **kwargs)

    method.__name__ = name
    return method


_made: list = []


def swaps() -> list:
    """The replacements to install while tracing, once ``scipy.stats`` is imported."""
    module = loaded_module("scipy.stats")
    if module is None:
        return []
    if _made:
        return _made
    kde = module.gaussian_kde
    own = vars(kde)
    made = [Swap(kde, "__init__", _init(own["__init__"]), own["__init__"])]
    for name, logarithm in (("evaluate", False), ("__call__", False), ("pdf", False),
                            ("logpdf", True)):
        if name in own:
            made.append(Swap(kde, name, _evaluating(own[name], logarithm), own[name]))
    made += [Swap(kde, name, _refusing(name, own[name]), own[name]) for name in _REFUSED
             if name in own]
    _made.extend(made)
    return _made
