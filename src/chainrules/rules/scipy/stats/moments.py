"""The moments of ``scipy.stats`` distributions in their parameters: ``stats`` (and through it
``mean``, ``var``, ``std``), ``entropy`` and a continuous distribution's ``expect``, plain and
frozen, written as SciPy computes them, so that an engine traces them (``TRACED_PATHS`` in
`chainrules.ad.dispatch.routes`: SciPy's own methods convert the parameters with
``np.asarray`` and fill arrays they make).

- ``stats``: SciPy's parser for the distribution's arguments, its ``_stats`` of the shapes
  (each distribution's closed forms, in NumPy and ``scipy.special`` operations) and, for a
  moment ``_stats`` leaves out, its ``_munp`` (raw moments); the mean ``loc + scale mu``, the
  variance ``scale^2 mu2``, skewness and kurtosis as SciPy forms them. Parameters outside the
  domain give NaN, as SciPy's.
- ``entropy``: the distribution's ``_entropy`` of the shapes plus ``log(scale)``.
- ``moment(order)``: SciPy's standardized raw moments (``_moment_from_stats``, from ``_stats``
  and ``_munp``), moved to ``loc`` and ``scale`` by the binomial sum
  ``E[(loc + scale Y)^n] = sum_k C(n, k) loc^(n-k) scale^k E[Y^k]``.
- ``expect``: SciPy's three quadratures (split at the 5% and 95% quantiles), with the support's
  infinite ends kept constant (SciPy's ``loc + a scale`` with ``a = -inf`` would give the
  scale a derivative of 0 times infinity there).

>>> import numpy as np, scipy.stats
>>> float(stats(scipy.stats.gamma, 2.0, scale=3.0, moments="m"))
6.0
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import scipy.special as sc
from scipy.stats._distn_infrastructure import rv_continuous, rv_generic

__all__ = ["stats", "entropy", "expect", "moment"]


def _valid(distribution: Any, shapes: tuple, scale: Any) -> Any:
    """Where the parameters are in the distribution's domain (SciPy's ``_argcheck``; its
    default, every shape positive, written with comparisons, which traced values take)."""
    if type(distribution)._argcheck is rv_generic._argcheck:
        check = functools.reduce(np.logical_and, [np.greater(s, 0) for s in shapes], True)
    else:
        check = distribution._argcheck(*shapes)
    return np.logical_and(check, np.greater(scale, 0))


def _where_valid(valid: Any, value: Any) -> Any:
    value = np.where(valid, value, np.nan)
    return value[()] if np.ndim(value) == 0 else value


def stats(distribution: Any, *args: Any, **kwds: Any) -> Any:
    """``distribution.stats(*args, **kwds)``, as SciPy's.

    >>> import scipy.stats
    >>> [float(m) for m in stats(scipy.stats.norm, loc=1.0, scale=2.0)]
    [1.0, 4.0]
    """
    shapes, loc, scale, moments = distribution._parse_args_stats(*args, **kwds)
    valid = _valid(distribution, shapes, scale)
    if distribution._stats_has_moments:
        mu, mu2, g1, g2 = distribution._stats(*shapes, moments=moments)
    else:
        mu, mu2, g1, g2 = distribution._stats(*shapes)

    def raw(n: int) -> Any:
        return distribution._munp(n, *shapes)

    known = {"mu": mu, "mu2": mu2}

    def mean() -> Any:  # the moments _stats leaves out, from the raw ones, as SciPy
        if known["mu"] is None:
            known["mu"] = raw(1)
        return known["mu"]

    def variance() -> Any:
        if known["mu2"] is None:
            known["mu2"] = raw(2) - mean() ** 2
        return known["mu2"]

    def third() -> Any:
        return (-mean() ** 2 - 3 * variance()) * mean() + raw(3)

    output = []
    with np.errstate(invalid="ignore", divide="ignore"):
        for moment in moments:
            if moment == "m":
                output.append(mean() * scale + loc)
            elif moment == "v":
                output.append(variance() * scale * scale)
            elif moment == "s":
                output.append(g1 if g1 is not None else third() / np.power(variance(), 1.5))
            elif moment == "k":
                if g2 is None:
                    mu3 = third() if g1 is None else g1 * np.power(variance(), 1.5)
                    mu4 = ((-mean() ** 2 - 6 * variance()) * mean() - 4 * mu3) * mean() + raw(4)
                    g2 = mu4 / variance() ** 2.0 - 3.0
                output.append(g2)
    output = [_where_valid(valid, value) for value in output]
    return output[0] if len(output) == 1 else tuple(output)


def entropy(distribution: Any, *args: Any, **kwds: Any) -> Any:
    """``distribution.entropy(*args, **kwds)``, as SciPy's.

    >>> import scipy.stats
    >>> bool(np.isclose(entropy(scipy.stats.norm, scale=2.0), scipy.stats.norm.entropy(scale=2.0)))
    True
    """
    shapes, loc, scale = distribution._parse_args(*args, **kwds)
    valid = _valid(distribution, shapes, scale)
    if any(np.ndim(s) for s in shapes):
        value = distribution.vecentropy(*shapes)
    elif getattr(distribution, "name", None) in _ENTROPIES:
        value = _ENTROPIES[distribution.name](*shapes)
    elif type(distribution)._entropy is rv_continuous._entropy:
        value = _integrated_entropy(distribution, shapes)
    else:
        value = distribution._entropy(*shapes)
    return _where_valid(valid, value + np.log(scale))


def _pearson3_entropy(skew: Any) -> Any:
    """Pearson III is a gamma distribution of shape ``a = 4/skew^2`` scaled by ``|skew|/2``:
    its entropy ``a + log Gamma(a) + (1 - a) psi(a) + log(|skew|/2)``, by its series near
    skew 0 (the normal's, less ``skew^2/12 + skew^4/192 + skew^6/5760``), where that
    cancels. SciPy integrates it over the whole line, where its support ends at ``-2/skew``:
    the density jumps there for ``|skew| >= 2``, whose moving edge that integral's derivative
    misses."""
    small = np.abs(skew) < 0.05
    safe = np.where(small, 1.0, skew)
    a = 4 / (safe * safe)
    exact = a + sc.gammaln(a) + (1 - a) * sc.digamma(a) + np.log(np.abs(safe) / 2)
    square = skew * skew
    series = 0.5 * math.log(2 * math.pi * math.e) - square * (
        1 / 12 + square * (1 / 192 + square / 5760))
    return np.where(small, series, exact)


# entropies in closed form where SciPy has none and its integral's derivative would be wrong
_ENTROPIES = {"pearson3": _pearson3_entropy}


def _integrated_entropy(distribution: Any, shapes: tuple) -> Any:
    """SciPy's entropy of a continuous distribution without a closed form: the quadrature of
    ``entr(pdf)`` over the support (again between the quantiles 1e-10 and 1 - 1e-10 if that
    is NaN), with the integrand a constant 0 where the pdf underflows to 0: SciPy's is 0 there
    too, and its derivative would be NaN (``entr'(0) = -inf`` times the pdf's derivative 0,
    or the pdf's own ``0 * inf``, as ``exp(-exp(x^b))``'s far in the tail)."""
    import scipy.integrate
    import scipy.special

    def integrand(x: Any) -> Any:
        density = distribution._pdf(x, *shapes)
        if np.ndim(x) == 0:  # quad's nodes, one at a time
            return scipy.special.entr(density) if density > 0 else 0.0
        positive = density > 0  # (nodes at once): the density again where it is positive
        inside = np.where(positive, x, x[np.argmax(positive)])
        return np.where(positive, scipy.special.entr(distribution._pdf(inside, *shapes)), 0.0)

    low, high = distribution._get_support(*shapes)
    with np.errstate(over="ignore"):
        value = scipy.integrate.quad(integrand, low, high)[0]
    if not np.isnan(value):
        return value
    lower, upper = distribution.ppf([1e-10, 1.0 - 1e-10], *shapes)
    return scipy.integrate.quad(integrand, lower if np.isinf(low) else low,
                                upper if np.isinf(high) else high)[0]


def moment(distribution: Any, order: int, *args: Any, **kwds: Any) -> Any:
    """``distribution.moment(order, *args, **kwds)``, as SciPy's.

    >>> import scipy.stats
    >>> float(moment(scipy.stats.norm, 2, loc=1.0, scale=2.0))
    5.0
    """
    from math import comb

    from scipy.stats._distn_infrastructure import _moment_from_stats

    shapes, loc, scale = distribution._parse_args(*args, **kwds)
    if np.floor(order) != order:
        raise ValueError("Moment must be an integer.")
    if order < 0:
        raise ValueError("Moment must be positive.")
    valid = _valid(distribution, shapes, scale)
    known = (None,) * 4
    if 0 < order < 5:
        options = ({"moments": {1: "m", 2: "v", 3: "vs", 4: "mvsk"}[order]}
                   if distribution._stats_has_moments else {})
        known = distribution._stats(*shapes, **options)
    total = 0.0
    for k in range(order + 1):
        standard = 1.0 if k == 0 else _moment_from_stats(k, *known, distribution._munp, shapes)
        total = total + comb(order, k) * np.power(loc, order - k) * np.power(scale, k) * standard
    return _where_valid(valid, total)


def expect(distribution: Any, func: Any = None, args: tuple = (), loc: Any = 0,
           scale: Any = 1, lb: Any = None, ub: Any = None, conditional: bool = False,
           **kwds: Any) -> Any:
    """``distribution.expect(...)`` of a continuous distribution, as SciPy's, with the
    support's infinite ends constant.

    >>> import scipy.stats
    >>> round(float(expect(scipy.stats.norm, lambda t: t ** 2, loc=1.0, scale=2.0)), 8)
    5.0
    """
    import scipy.integrate

    lockwds = {"loc": loc, "scale": scale}
    low, high = distribution._get_support(*args)
    if func is None:
        def fun(x: Any, *shapes: Any) -> Any:
            return x * distribution.pdf(x, *shapes, **lockwds)
    else:
        def fun(x: Any, *shapes: Any) -> Any:
            return func(x) * distribution.pdf(x, *shapes, **lockwds)
    if lb is None:
        lb = low if np.isinf(low) else loc + low * scale
    if ub is None:
        ub = high if np.isinf(high) else loc + high * scale
    bounds = distribution.cdf(np.stack([lb, ub]), *args, **lockwds)
    mass = bounds[1] - bounds[0]
    kwds["args"] = args
    inner = bounds[0] + mass * np.array([0.05, 0.95])  # SciPy's split of body and tails
    c, d = loc + distribution._ppf(inner, *args) * scale
    value = (scipy.integrate.quad(fun, lb, c, **kwds)[0]
             + scipy.integrate.quad(fun, c, d, **kwds)[0]
             + scipy.integrate.quad(fun, d, ub, **kwds)[0])
    if conditional:
        value = value / mass
    return value
