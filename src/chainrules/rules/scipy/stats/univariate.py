"""Rules for ``scipy.stats`` univariate distributions, continuous and discrete (registered when
SciPy is installed).

A call such as ``st.gamma.cdf(x, a, loc=m, scale=s)`` or ``st.gamma(a, scale=s).cdf(x)`` on
traced values is recorded (chainrules.ad.dispatch.routes ``ROUTED_METHODS``) as a call of one stand-in
function per (distribution, method), ``gamma.cdf(x, a, loc, scale)``, its arguments positional
(`redirect` resolves keywords and defaults with SciPy's own parser). Values always come from
SciPy; the rules are `scalar_rule` s whose partials come from ONE table of formulas:

- continuous (the table is ``continuous.py``'s `CONTINUOUS`): per distribution, the
  standardized log-density ``log f(z; shapes)`` with ``z = (x - loc) / scale``
  differentiated in ``z`` and in each shape parameter, and the standardized cdf
  ``F(z; shapes)`` differentiated in each shape parameter. Everything else is
  derived once, in `_continuous_partials`: ``pdf = exp(logpdf)``; cdf in ``x`` is the pdf;
  ``loc``/``scale`` through ``z``; ``sf = 1 - cdf``; ``logcdf``/``logsf`` as ratios computed
  as ``exp(logpdf - logcdf)``; ``ppf``/``isf`` by the implicit function theorem
  (``d ppf/dq = 1/pdf(ppf)``, ``d ppf/dθ = -∂θ cdf / pdf`` at the quantile).
- discrete: per distribution, ``log pmf`` and ``cdf`` differentiated in each continuous
  parameter (``k``, ``loc`` and integer parameters such as binom's ``n`` have no tangent);
  ``ppf``/``isf`` are integers: declared non-differentiable.

Every partial is written with calls that have rules (NumPy, ``scipy.special``, the stand-ins
themselves), so every rule can be differentiated again (hessians). A cdf shape partial without
a closed form (gamma, chi2, beta, t, gennorm, nbinom's ``n``...) comes from the one hook
`_cdf_shape_partial`; until it is wired it raises NotImplementedError naming the distribution,
the method and the parameter when that parameter is differentiated (never a silent zero).

>>> import numpy as np, scipy.stats as st
>>> import chainrules as cr
>>> float(cr.grad(lambda m: st.norm.logpdf(1.0, m, 2.0))(0.5))      # (x - m) / s^2
0.125
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import scipy.special as sps
import scipy.stats as st
from scipy.stats._distn_infrastructure import (rv_continuous, rv_continuous_frozen, rv_discrete,
                                               rv_discrete_frozen, rv_frozen)

from ....core.registry import non_differentiable, recorded_whole, register_method
from ....core.scalar_rule import scalar_rule
from ...refused_arguments import scalar_rule_refusing as _scalar_rule_refusing
from .continuous import CDF_VIA_SPECIAL, CONTINUOUS, Continuous

__all__ = ["STAND_INS", "CONTINUOUS", "DISCRETE", "PENDING", "ROUTED_METHODS", "redirect",
           "stand_in"]

# --- the table ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Discrete:
    """A discrete distribution's derivatives in each parameter, at ``j = k - loc``:
    ``dlogpmf[i](j, *shapes)`` and ``dcdf[i](j, *shapes)``; ``None`` in ``dlogpmf`` marks an
    integer parameter (no tangent), ``None`` in ``dcdf`` a partial without closed form."""

    shapes: tuple
    dlogpmf: tuple
    dcdf: tuple


def _positive_floor(j: Any) -> Any:
    """``floor(j)`` where the cdf's closed form holds (``j >= 0``), and a mask of those."""
    return np.floor(j), j >= 0


def _poisson_dcdf(j: Any, mu: Any) -> Any:          # d gammaincc(k + 1, mu) / d mu
    k, inside = _positive_floor(j)
    return np.where(inside, -np.exp(sps.xlogy(k, mu) - mu - sps.gammaln(k + 1)), 0 * mu)


def _binom_dcdf(j: Any, n: Any, p: Any) -> Any:     # -n pmf(k; n - 1, p)
    k, inside = _positive_floor(j)
    inside = inside & (k < n)
    k = np.where(inside, k, 0)
    log_pmf = (sps.gammaln(n) - sps.gammaln(k + 1) - sps.gammaln(n - k)
               + sps.xlogy(k, p) + sps.xlog1py(n - 1 - k, -p))
    return np.where(inside, -n * np.exp(log_pmf), 0 * p)


def _nbinom_dcdf_dp(j: Any, n: Any, p: Any) -> Any:  # d betainc(n, k + 1, p) / dp
    k, inside = _positive_floor(j)
    density = np.exp(sps.xlogy(n - 1, p) + sps.xlog1py(k, -p) - sps.betaln(n, k + 1))
    return np.where(inside, density, 0 * p)


def _geom_dcdf(j: Any, p: Any) -> Any:               # d (1 - (1 - p)^k) / dp
    k, inside = _positive_floor(j)
    inside = inside & (k >= 1)
    return np.where(inside, k * np.exp(sps.xlog1py(k - 1, -p)), 0 * p)


def _bernoulli_dcdf(j: Any, p: Any) -> Any:          # cdf = 1 - p on [0, 1)
    return np.where((j >= 0) & (j < 1), -1 + 0 * p, 0 * p)


def _betabinom_dlogpmf_da(j: Any, n: Any, a: Any, b: Any) -> Any:
    return sps.digamma(j + a) - sps.digamma(n + a + b) - sps.digamma(a) + sps.digamma(a + b)


def _betabinom_dlogpmf_db(j: Any, n: Any, a: Any, b: Any) -> Any:
    return sps.digamma(n - j + b) - sps.digamma(n + a + b) - sps.digamma(b) + sps.digamma(a + b)


def _betabinom_dcdf(j: Any, n: Any, a: Any, b: Any, which: int) -> Any:
    """d cdf / da (``which`` 0) or / db (1): the pmf's partial summed over 0, ..., floor(j),
    on one grid of counts (its length the largest ``j``) broadcast against the parameters."""
    k, inside = _positive_floor(j)
    k, n, a, b = np.broadcast_arrays(k, n, a, b)
    top = int(np.max(np.where(inside, k, 0), initial=0))
    grid = np.arange(top + 1).reshape((-1,) + (1,) * np.ndim(k))
    counted = (grid <= k) & (grid <= n)
    grid = np.minimum(grid, n)  # counts past n are not summed: kept in the pmf's domain
    logpmf = (sps.gammaln(n + 1) - sps.gammaln(grid + 1) - sps.gammaln(n - grid + 1)
              + sps.betaln(grid + a, n - grid + b) - sps.betaln(a, b))
    partial = (_betabinom_dlogpmf_da, _betabinom_dlogpmf_db)[which](grid, n, a, b)
    terms = np.where(counted, np.exp(logpmf) * partial, 0.0)
    return np.where(inside, np.sum(terms, axis=0), 0.0)


# Continuous: name -> Continuous(shapes, d log f/dz, d log f/d shape, d F/d shape).
def _summed(distribution: str, which: int, low: int) -> Callable:
    """d cdf/d shape ``which`` of ``distribution`` as the sum of its pmf's partials over the
    counts ``low, ..., floor(j)``, on one grid (its length the largest ``j``) broadcast
    against the parameters: for a cdf without a closed form, as logser's and zipf's."""
    def partial(j: Any, *shapes: Any) -> Any:
        k, inside = _positive_floor(j)
        k, *shapes = np.broadcast_arrays(k, *shapes)
        top = int(np.max(np.where(inside, k, 0), initial=0))
        grid = np.arange(low, max(top, low) + 1).reshape((-1,) + (1,) * np.ndim(k))
        logpmf = _BY_KEY[distribution, "logpmf"](grid, *shapes, 0)
        derivative = DISCRETE[distribution].dlogpmf[which](grid, *shapes)
        terms = np.where(grid <= k, np.exp(logpmf) * derivative, 0.0)
        return np.where(inside & (k >= low), np.sum(terms, axis=0), 0.0)

    return partial


def _zipf_dlogpmf(j: Any, a: Any) -> Any:
    """pmf = k^-a / zeta(a)."""
    from ..special.parameters import zeta_dx

    return -np.log(j) - zeta_dx(a, 1.0) / sps.zeta(a, 1.0)


def _boltzmann_dcdf(j: Any, lam: Any, n: Any) -> Any:
    """F = (1 - e^(-lam (k + 1)))/(1 - e^(-lam N)) on 0 <= k < N."""
    k, inside = _positive_floor(j)
    mass = -np.expm1(-lam * n)
    cdf = -np.expm1(-lam * (k + 1)) / mass
    partial = ((k + 1) * np.exp(-lam * (k + 1)) - cdf * n * np.exp(-lam * n)) / mass
    return np.where(inside & (k < n), partial, 0 * lam)


def _dlaplace_dcdf(j: Any, a: Any) -> Any:
    """F = 1 - e^(-a k)/(e^a + 1) (k >= 0), e^(a (k + 1))/(e^a + 1) (k < 0)."""
    k = np.floor(j)
    total = np.exp(a) + 1
    right = np.exp(-a * np.maximum(k, 0)) * (k / total + np.exp(a) / (total * total))
    left = np.exp(a * (np.minimum(k, -1) + 1)) * ((k + 1) / total - np.exp(a) / (total * total))
    return np.where(k >= 0, right, left)


def _skellam_ratio(step: int) -> Callable:
    """pmf(k + step)/pmf(k) - 1: d log pmf/d mu1 (``step`` -1) or /d mu2 (+1)."""
    def partial(j: Any, mu1: Any, mu2: Any) -> Any:
        logpmf = _BY_KEY["skellam", "logpmf"]
        return np.exp(logpmf(j + step, mu1, mu2, 0) - logpmf(j, mu1, mu2, 0)) - 1

    return partial


def _skellam_dcdf(step: int) -> Callable:
    """-pmf(k) (mu1, ``step`` 0) or pmf(k + 1) (mu2, 1): the pmf's partials telescope."""
    def partial(j: Any, mu1: Any, mu2: Any) -> Any:
        value = np.exp(_BY_KEY["skellam", "logpmf"](np.floor(j) + step, mu1, mu2, 0))
        return value if step else -value

    return partial


# Discrete: name -> Discrete(shapes, d log pmf / d shape, d cdf / d shape).
DISCRETE: dict[str, Discrete] = {
    "poisson": Discrete(("mu",), (lambda j, mu: j / mu - 1,), (_poisson_dcdf,)),
    "binom": Discrete(("n", "p"), (None, lambda j, n, p: j / p - (n - j) / (1 - p)),
                      (None, _binom_dcdf)),
    "nbinom": Discrete(("n", "p"),
                       (lambda j, n, p: sps.digamma(j + n) - sps.digamma(n) + np.log(p),
                        lambda j, n, p: n / p - j / (1 - p)),
                       (None, _nbinom_dcdf_dp)),
    "bernoulli": Discrete(("p",), (lambda j, p: j / p - (1 - j) / (1 - p),),
                          (_bernoulli_dcdf,)),
    "geom": Discrete(("p",), (lambda j, p: 1 / p - (j - 1) / (1 - p),), (_geom_dcdf,)),
    # pmf = C(n, k) B(k + a, n - k + b) / B(a, b); the cdf's partials summed over 0..k
    "betabinom": Discrete(("n", "a", "b"), (None, _betabinom_dlogpmf_da, _betabinom_dlogpmf_db),
                          (None, lambda j, n, a, b: _betabinom_dcdf(j, n, a, b, 0),
                           lambda j, n, a, b: _betabinom_dcdf(j, n, a, b, 1))),
    # pmf = C(n + k - 1, k) B(a + n, b + k)/B(a, b)
    "betanbinom": Discrete(("n", "a", "b"),
                           (None, lambda j, n, a, b: sps.digamma(a + n) - sps.digamma(a + n + b + j)
                            - sps.digamma(a) + sps.digamma(a + b),
                            lambda j, n, a, b: sps.digamma(b + j) - sps.digamma(a + n + b + j)
                            - sps.digamma(b) + sps.digamma(a + b)),
                           (None, _summed("betanbinom", 1, 0), _summed("betanbinom", 2, 0))),
    # pmf = -p^k/(k log(1 - p)), k >= 1
    "logser": Discrete(("p",), (lambda j, p: j / p + 1 / ((1 - p) * np.log1p(-p)),),
                       (_summed("logser", 0, 1),)),
    # pmf = (1 - e^-lam) e^(-lam k); F = 1 - e^(-lam (k + 1))
    "planck": Discrete(("lambda_",), (lambda j, lam: 1 / np.expm1(lam) - j,),
                       (lambda j, lam: np.where(j >= 0, (np.floor(j) + 1)
                                                * np.exp(-lam * (np.floor(j) + 1)), 0 * lam),)),
    # pmf = (1 - e^-lam) e^(-lam k)/(1 - e^(-lam N)) on 0 <= k < N
    "boltzmann": Discrete(("lambda_", "N"),
                          (lambda j, lam, n: 1 / np.expm1(lam) - j - n / np.expm1(lam * n), None),
                          (_boltzmann_dcdf, None)),
    # pmf = tanh(a/2) e^(-a |k|)
    "dlaplace": Discrete(("a",), (lambda j, a: 1 / np.sinh(a) - np.abs(j),), (_dlaplace_dcdf,)),
    # pmf = alpha B(k, alpha + 1); F = 1 - k B(k, alpha + 1)
    "yulesimon": Discrete(("alpha",),
                          (lambda j, alpha: 1 / alpha + sps.digamma(alpha + 1)
                           - sps.digamma(j + alpha + 1),),
                          (lambda j, alpha: np.where(
                              j >= 1, -np.floor(j) * sps.beta(np.maximum(np.floor(j), 1), alpha + 1)
                              * (sps.digamma(alpha + 1) - sps.digamma(np.floor(j) + alpha + 1)),
                              0 * alpha),)),
    "zipf": Discrete(("a",), (_zipf_dlogpmf,), (_summed("zipf", 0, 1),)),
    # the difference of two Poisson counts: d pmf(k)/d mu1 = pmf(k - 1) - pmf(k)
    "skellam": Discrete(("mu1", "mu2"), (_skellam_ratio(-1), _skellam_ratio(1)),
                        (_skellam_dcdf(0), _skellam_dcdf(1))),
}
# Only the distributions of the installed SciPy (betanbinom is newer than some it admits).
DISCRETE = {name: table for name, table in DISCRETE.items() if hasattr(st, name)}


def _nbinom_dcdf_dn(special: Any, j: Any, n: Any, p: Any) -> Any:
    """cdf = betainc(n, k + 1, p)."""
    k, inside = _positive_floor(j)
    return np.where(inside, special.betainc_da(n, np.maximum(k, 0) + 1, p), 0 * n)


# (distribution, parameter) -> the cdf partial from ``chainrules.rules.scipy.special.parameters``
# (``special``): the continuous distributions' (`CDF_VIA_SPECIAL`) and nbinom's.
_VIA_SPECIAL: dict = {
    **CDF_VIA_SPECIAL,
    ("nbinom", "n"): lambda special: lambda j, n, p: _nbinom_dcdf_dn(special, j, n, p),
}


def _cdf_shape_partial(distribution: str, parameter: str) -> Callable | None:
    """The one hook for cdf shape partials that have no closed form (``None`` in the
    tables): the partial of the standardized cdf in ``parameter`` as a function of ``(z,
    *shapes)`` (``(j, *shapes)`` for a discrete distribution), from the numerical parameter
    derivatives of ``gammainc``/``betainc`` (``rules/scipy/special/parameters.py``); ``None`` where
    those are not available, and the rules then refuse that parameter by name."""
    try:
        from ..special import parameters as special
    except ImportError:
        return None
    partial = _VIA_SPECIAL.get((distribution, parameter))
    return None if partial is None else partial(special)


# (distribution, method, parameter) whose derivative is refused until `_cdf_shape_partial`
# gives it: filled in at registration, for the documentation and the tests.
PENDING: list[tuple[str, str, str]] = []

_PENDING = ("its cdf has no derivative in this parameter in closed form nor from gammainc's or "
            "betainc's in their parameters (SciPy integrates it numerically, or the special "
            "function's derivative in it is not in chainrules); its density's is")

_NO_DENSITY_PARTIAL = ("its density has no derivative in this parameter in closed form (an order of "
                       "a Bessel function, or a count of degrees of freedom of a noncentral "
                       "distribution, whose derivative chainrules lacks)")

CONTINUOUS_METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf")
DISCRETE_METHODS = ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf")


# --- stand-ins --------------------------------------------------------------------------------------

def _make_stand_in(name: str, method: str, discrete: bool) -> Callable:
    """``scipy.stats.<name>.<method>`` as a function of positional arguments only: ``(x,
    *shapes, loc, scale)`` (continuous) or ``(k, *shapes, loc)`` (discrete). It closes over names only: a SciPy object's float attributes would read as
    parameters of the function itself."""
    if discrete:
        def function(x, *parameters):
            *shapes, loc = parameters
            return getattr(getattr(st, name), method)(x, *shapes, loc=loc)
    else:
        def function(x, *parameters):
            *shapes, loc, scale = parameters
            return getattr(getattr(st, name), method)(x, *shapes, loc=loc, scale=scale)

    function.__module__ = "scipy.stats"
    function.__name__ = method
    function.__qualname__ = f"{name}.{method}"
    function.__doc__ = (f"``scipy.stats.{name}.{method}`` with positional parameters: the "
                        f"function that chainrules records for it (values from SciPy).")
    return recorded_whole(function)


STAND_INS: dict[str, Callable] = {}
_BY_KEY: dict[tuple, Callable] = {}
for _name_, _methods, _discrete in [(n, CONTINUOUS_METHODS, False) for n in CONTINUOUS] + \
        [(n, DISCRETE_METHODS, True) for n in DISCRETE]:
    for _method in _methods:
        _f = _make_stand_in(_name_, _method, _discrete)
        _BY_KEY[_name_, _method] = STAND_INS[f"scipy.stats.{_name_}.{_method}"] = _f


def stand_in(distribution: str, method: str) -> Callable:
    """The registered function recorded for ``scipy.stats.<distribution>.<method>``.

    >>> float(stand_in("norm", "cdf")(0.0, 0.0, 1.0))
    0.5
    """
    try:
        return _BY_KEY[distribution, method]
    except KeyError:
        known = ", ".join(sorted({*CONTINUOUS, *DISCRETE}))
        raise NotImplementedError(
            f"scipy.stats.{distribution}.{method}: no derivative rule for this distribution "
            f"or method (differentiable: {known}; methods logpdf/pdf/logpmf/pmf, cdf, logcdf, "
            f"sf, logsf, ppf, isf). Call it on plain values (outside the differentiated "
            f"function), or write its density with NumPy.") from None


def redirect(instance: Any, method: str, args: tuple, kwargs: dict) -> tuple:
    """``(stand-in, positional arguments, {})`` for ``instance.<method>(*args, **kwargs)``, a
    call of a SciPy distribution (plain or frozen, which calls the plain one); parameters
    given by keyword or left to their defaults are resolved by SciPy's own parser.

    >>> f, args, kwargs = redirect(st.gamma, "cdf", (1.0, 2.0), {"scale": 3.0})
    >>> f.__qualname__, args
    ('gamma.cdf', (1.0, 2.0, 0, 3.0))
    """
    function = stand_in(getattr(instance, "name", type(instance).__name__), method)
    kwargs = dict(kwargs)
    if not args:
        for key in ("x", "q", "k"):
            if key in kwargs:
                args = (kwargs.pop(key),)
                break
        else:
            raise TypeError(f"{function.__module__}.{function.__qualname__}: missing the "
                            f"first argument (x, k or q)")
    # (shapes, loc, scale); a discrete distribution's scale is always 1 (it has none)
    shapes, loc, scale = instance._parse_args(*args[1:], **kwargs)
    if isinstance(instance, rv_discrete):
        return function, (args[0], *shapes, loc), {}
    return function, (args[0], *shapes, loc, scale), {}


def _key_redirect(method: str) -> Callable:
    """The redirect by which ``rrule(st.gamma.cdf, x, a)`` and ``rrule(st.gamma(a).cdf, x)``
    find the stand-in's rules (`chainrules.core.registry.register_method`): a frozen
    distribution's parameters are read from its ``args`` and ``kwds``, and their cotangents
    are those of the method's own instance."""
    def redirect_key(instance: Any, args: tuple, kwargs: dict) -> tuple:
        if isinstance(instance, rv_frozen):
            function, arguments, _ = redirect(instance.dist, method,
                                              (*args, *instance.args), {**instance.kwds, **kwargs})
            names = [*(instance.dist.shapes or "").replace(",", " ").split(), "loc", "scale"]
            sources: list = [None] * (len(arguments) - len(args))
            for index in range(len(instance.args)):
                sources[index] = ("args", index)
            for key in instance.kwds:
                if key in names and key not in kwargs and names.index(key) < len(sources):
                    sources[names.index(key)] = ("kwds", key)
            return function, arguments, {}, sources
        function, arguments, _ = redirect(instance, method, args, kwargs)
        return function, arguments, {}, [None] * (len(arguments) - len(args))

    return redirect_key


def _method_redirect(method: str) -> Callable:
    def redirect_method(instance: Any, args: tuple, kwargs: dict) -> tuple:
        return redirect(instance, method, args, kwargs)

    return redirect_method


# The methods an engine replaces on SciPy's base classes while it traces (chainrules.ad.dispatch.routing
# installs them): (module, class, method, redirect(instance, args, kwargs)).
ROUTED_METHODS = [("scipy.stats._distn_infrastructure", kind.__name__, method,
                   _method_redirect(method))
                  for kind, methods in ((rv_continuous, CONTINUOUS_METHODS),
                                        (rv_discrete, DISCRETE_METHODS))
                  for method in methods]


for _kind, _frozen, _methods in ((rv_continuous, rv_continuous_frozen, CONTINUOUS_METHODS),
                                 (rv_discrete, rv_discrete_frozen, DISCRETE_METHODS)):
    for _method in _methods:
        register_method(_kind, _method, _key_redirect(_method))
        register_method(_frozen, _method, _key_redirect(_method))


# --- rules: continuous ------------------------------------------------------------------------------

def _outside_support(name: str, count: int) -> Callable | None:
    """``outside(x, parameters)``: where ``x`` lies outside the support, so that the pdf and
    the cdf are constant (0, or 0 and 1) and every partial is 0 there (the formulas would
    give a log of a negative number, or a cdf beyond [0, 1]); None for a support that is the
    whole line. The support comes from SciPy (``_get_support``, standardized units)."""
    distribution = getattr(st, name)
    if not np.isfinite([distribution.a, distribution.b]).any() and \
            type(distribution)._get_support is rv_continuous._get_support:
        return None

    def outside(x: Any, parameters: tuple) -> Any:
        low, high = getattr(st, name)._get_support(*parameters[:count])
        z = (x - parameters[-2]) / parameters[-1]
        return (z < low) | (z > high)

    return outside


def _masked(partial: Callable, outside: Callable) -> Callable:
    """``partial``, 0 where ``outside(x, parameters)``."""
    def masked(y, x, *parameters):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(outside(x, parameters), 0, partial(y, x, *parameters))

    return masked


def _continuous_partials(name: str, method: str, table: Continuous) -> tuple:
    """The partials of ``<name>.<method>(x, *shapes, loc, scale)`` as functions of ``(y, x,
    *shapes, loc, scale)``, and the shape positions whose partial is refused; outside the
    support and at an infinite ``x``, the partials of the pdf and of the cdf forms are 0."""
    partials, refused = _formulas(name, method, table)
    if method in ("logpdf", "ppf", "isf"):
        return partials, refused
    outside = _outside_support(name, len(table.shapes))
    constant = _infinite if outside is None else (
        lambda x, parameters: _infinite(x, parameters) | outside(x, parameters))
    return tuple(_masked(partial, constant) for partial in partials), refused


def _infinite(x: Any, parameters: tuple) -> Any:
    """Where ``x`` is infinite: the pdf and the cdf are constant there (0, or 0 and 1) in
    every parameter, and the formulas would give 0 times infinity (the scale's ``-z pdf(z)``
    at ``x = -inf``, which ``expect`` and ``cdf([lb, ub])`` on an infinite support reach)."""
    return np.isinf(x)


def _formulas(name: str, method: str, table: Continuous) -> tuple:
    """`_continuous_partials` without the support."""
    count = len(table.shapes)
    logpdf = _BY_KEY[name, "logpdf"]
    dcdf = [partial if partial is not None else _cdf_shape_partial(name, shape)
            for shape, partial in zip(table.shapes, table.dcdf)]
    refused = {1 + i: (shape, _PENDING) for i, shape in enumerate(table.shapes)
               if dcdf[i] is None and method not in ("logpdf", "pdf")}
    refused.update({1 + i: (shape, _NO_DENSITY_PARTIAL) for i, shape in enumerate(table.shapes)
                    if table.dlogf[i] is None})

    def z_of(x, parameters):
        return (x - parameters[-2]) / parameters[-1]

    def shape_partials(each: Callable) -> list:
        return [(lambda y, x, *p, i=i: each(i, y, x, p)) for i in range(count)]

    if method in ("logpdf", "pdf"):
        factor = (lambda y: 1) if method == "logpdf" else (lambda y: y)

        def dx(y, x, *p):
            return factor(y) * table.dlogf_dz(z_of(x, p), *p[:count]) / p[-1]

        def dshape(i, y, x, p):
            return factor(y) * table.dlogf[i](z_of(x, p), *p[:count])

        def dscale(y, x, *p):
            z = z_of(x, p)
            return -factor(y) * (z * table.dlogf_dz(z, *p[:count]) + 1) / p[-1]

        return (dx, *shape_partials(dshape), lambda y, x, *p: -dx(y, x, *p), dscale), refused

    if method in ("cdf", "sf", "logcdf", "logsf"):
        sign = 1 if method in ("cdf", "logcdf") else -1
        ratio = method.startswith("log")

        def dx(y, x, *p):   # d cdf/dx = pdf; the log forms divide by exp(y)
            return sign * np.exp(logpdf(x, *p) - y) if ratio else sign * np.exp(logpdf(x, *p))

        def dshape(i, y, x, p):
            partial = sign * dcdf[i](z_of(x, p), *p[:count])
            return partial * np.exp(-y) if ratio else partial

        return (dx, *shape_partials(dshape), lambda y, x, *p: -dx(y, x, *p),
                lambda y, x, *p: -z_of(x, p) * dx(y, x, *p)), refused

    # ppf, isf: y is the quantile, F(z(y)) = q (ppf) or 1 - q (isf)
    sign = 1 if method == "ppf" else -1

    def dq(y, q, *p):
        return sign * np.exp(-logpdf(y, *p))

    def dshape(i, y, q, p):
        return -dcdf[i](z_of(y, p), *p[:count]) * np.exp(-logpdf(y, *p))

    return (dq, *shape_partials(dshape), lambda y, q, *p: 1 + 0 * y,
            lambda y, q, *p: z_of(y, p)), refused


def _register_continuous() -> None:
    for name, table in CONTINUOUS.items():
        for method in CONTINUOUS_METHODS:
            function = _BY_KEY[name, method]
            partials, refused = _continuous_partials(name, method, table)
            label = f"scipy.stats.{name}.{method}"
            if refused:
                _scalar_rule_refusing(function, label, partials, refused)
                PENDING.extend((name, method, shape) for shape, _ in refused.values())
            else:
                scalar_rule(function, *partials)


# --- rules: discrete --------------------------------------------------------------------------------

def _discrete_partials(name: str, method: str, table: Discrete) -> tuple:
    """The partials of ``<name>.<method>(k, *shapes, loc)`` as functions of ``(y, k, *shapes,
    loc)`` (``None`` for ``k``, ``loc`` and integer parameters), and the refused positions."""
    count = len(table.shapes)
    dcdf = [partial if partial is not None else _cdf_shape_partial(name, shape)
            for shape, partial in zip(table.shapes, table.dcdf)]
    refused = {}
    partials: list = [None]
    for i, shape in enumerate(table.shapes):
        if table.dlogpmf[i] is None:
            partials.append(None)  # an integer parameter (binom's n)
            continue
        if method in ("logpmf", "pmf"):
            factor = (lambda y: 1) if method == "logpmf" else (lambda y: y)
            partials.append(lambda y, k, *p, i=i, factor=factor:
                            factor(y) * table.dlogpmf[i](k - p[-1], *p[:count]))
            continue
        if dcdf[i] is None:
            refused[1 + i] = (shape, _PENDING)
            partials.append(None)
            continue
        sign = 1 if method in ("cdf", "logcdf") else -1
        if method.startswith("log"):
            partials.append(lambda y, k, *p, i=i, sign=sign:
                            sign * dcdf[i](k - p[-1], *p[:count]) * np.exp(-y))
        else:
            partials.append(lambda y, k, *p, i=i, sign=sign:
                            sign * dcdf[i](k - p[-1], *p[:count]))
    partials.append(None)  # loc: the pmf is piecewise constant in it
    return tuple(partials), refused


def _register_discrete() -> None:
    for name, table in DISCRETE.items():
        for method in DISCRETE_METHODS:
            function = _BY_KEY[name, method]
            if method in ("ppf", "isf"):
                non_differentiable(function)  # an integer quantile
                continue
            partials, refused = _discrete_partials(name, method, table)
            if refused:
                _scalar_rule_refusing(function, f"scipy.stats.{name}.{method}", partials,
                                      refused)
                PENDING.extend((name, method, shape) for shape, _ in refused.values())
            else:
                scalar_rule(function, *partials)


_register_continuous()
_register_discrete()
