"""Rules for SciPy's multivariate distributions: ``scipy.stats.multivariate_normal``
(``logpdf``, ``pdf``), ``dirichlet`` (``logpdf``, ``pdf``) and ``multinomial`` (``logpmf``,
``pmf``), plain (``st.multivariate_normal.logpdf(x, mean, cov)``) and frozen
(``st.multivariate_normal(mean, cov).logpdf(x)``).

Each method is a registered function of this module, with SciPy's signature and conventions
(``cov`` a scalar, a 1-d diagonal or a matrix; ``x`` batched along its leading axes; the
output squeezed as SciPy squeezes it): `multivariate_normal_logpdf`, `dirichlet_logpdf`,
`multinomial_logpmf` and their ``pdf``/``pmf``. While a trace is active, SciPy's methods are
replaced on their classes (`ROUTED_METHODS`, installed by chainrules.ad.dispatch.routing), and a call
whose arguments (or frozen parameters) hold traced values is recorded as a call of these
functions. Values, formulas and pullbacks are written in NumPy and SciPy calls that have rules
themselves (Cholesky factor, triangular solves, ``gammaln``, ``digamma``), so every rule can
be differentiated again.

Conventions (where SciPy is silent or its reading has no derivative):

- ``multivariate_normal``'s ``cov`` is read as its symmetric part ``(cov + cov.T) / 2``: for
  the symmetric matrices SciPy accepts that is the same value, and the gradient is the
  symmetric matrix ``G`` with ``<G, E>`` the derivative along every symmetric perturbation
  ``E`` (SciPy's own reading, an eigendecomposition of one triangle, would put the
  off-diagonal gradient on one triangle, twice as large). The factorization is Cholesky:
  a covariance that is not positive definite raises (``allow_singular=True`` is accepted,
  and gives the same values, for positive definite matrices; the density of a singular one
  lives on a subspace whose dimension jumps under perturbation, which has no derivative).
  ``cdf``/``logcdf`` (a numerical integral, Genz's algorithm) are refused by name.
- ``dirichlet``'s and ``multinomial``'s densities are differentiated as their formulas,
  extended off the simplex: ``d logpdf / dx_k = (alpha_k - 1) / x_k`` in every entry of
  ``x`` (a ``K - 1``-entry ``x`` completes itself with ``1 - sum(x)``, and its gradient
  follows), ``d logpmf / dp_k = x_k / p_k``. Through SciPy's methods the simplex is checked
  as SciPy checks it; a ``multinomial`` ``p`` that does not sum to 1 is refused (SciPy
  rewrites its last entry, with a FutureWarning, and returns NaN from SciPy 1.18).
  ``n`` and the counts ``x`` are integers and get no tangent.

>>> import numpy as np
>>> from chainrules import rrule, unthunk
>>> y, pullback = rrule(multivariate_normal_logpdf, np.array([1.0, 0.0]), np.zeros(2), 2.0)
>>> round(float(y), 6), unthunk(pullback(1.0)[2])  # d/dmean = cov^-1 (x - mean)
(-2.781024, array([0.5, 0. ]))
"""

from __future__ import annotations

import inspect
import math
import sys
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.special as sc

from ....core.broadcast import unbroadcast
from ....core.registry import recorded_whole, register_method
from ....core.tangents import AbstractZero
from ...define import define

__all__ = ["multivariate_normal_logpdf", "multivariate_normal_pdf", "dirichlet_logpdf",
           "dirichlet_pdf", "multinomial_logpmf", "multinomial_pmf", "ROUTED_METHODS",
           "STAND_INS"]

_LOG_2PI = math.log(2 * math.pi)
_MVN = "scipy.stats.multivariate_normal"
_DIRICHLET = "scipy.stats.dirichlet"
_MULTINOMIAL = "scipy.stats.multinomial"


def _zero(t: Any) -> bool:
    return isinstance(t, AbstractZero)


def _real(name: str, argument: str, value: Any) -> None:
    dtype = getattr(value, "dtype", None)
    if (dtype is not None and np.dtype(dtype).kind == "c") or issubclass(type(value), complex):
        raise TypeError(f"{name}: {argument} must be real (got {dtype or 'complex'}); SciPy's "
                        f"distributions are real-valued.")


def _squeeze(out: Any) -> Any:
    """SciPy's ``_squeeze_output``: size-1 axes dropped, a number for a single value."""
    out = np.squeeze(out)
    return out[()] if np.ndim(out) == 0 else out


# --- multivariate_normal -------------------------------------------------------------------------

def _mvn_parameters(mean: Any, cov: Any) -> tuple:
    """``(dim, mean (dim,), cov (dim, dim))`` as SciPy reads them (cov symmetrized)."""
    _real(_MVN, "mean", mean)
    _real(_MVN, "cov", cov)
    if mean is None:
        cov_array = None if cov is None else np.asarray(cov, dtype=float)
        dim = 1 if cov_array is None or np.ndim(cov_array) < 2 else np.shape(cov_array)[0]
        mean = np.zeros(dim)
    mean = np.asarray(mean, dtype=float)
    dim = math.prod(np.shape(mean))
    cov = np.asarray(1.0 if cov is None else cov, dtype=float)
    if dim == 1:
        mean, cov = np.reshape(mean, (1,)), np.reshape(cov, (1, 1))
    if np.ndim(mean) != 1:
        raise ValueError(f"{_MVN}: 'mean' must be a vector of length {dim}.")
    shape = np.shape(cov)
    if len(shape) == 0:
        return dim, mean, cov * np.eye(dim)
    if len(shape) == 1 and shape[0] == dim:
        return dim, mean, np.diag(cov)
    if len(shape) == 2 and shape == (dim, dim):
        return dim, mean, (cov + cov.T) / 2
    raise ValueError(f"{_MVN}: 'cov' must be a number, a vector of length {dim} or a "
                     f"({dim}, {dim}) matrix for a mean of length {dim}; got shape {shape}.")


def _mvn_quantiles(x: Any, dim: int) -> Any:
    """``x`` as an ``(n, dim)`` matrix of points, and the shape of the batch (SciPy's
    ``_process_quantiles``: a vector is one point, or ``n`` points when ``dim`` is 1)."""
    _real(_MVN, "x", x)
    x = np.asarray(x, dtype=float)
    shape = np.shape(x)
    if len(shape) == 0:
        batch, last = (1,), 1
    elif len(shape) == 1:
        batch, last = (shape, 1) if dim == 1 else ((1,), shape[0])
    else:
        batch, last = shape[:-1], shape[-1]
    if last != dim:
        raise ValueError(f"{_MVN}: the last axis of x holds the {dim} components of each "
                         f"point; got x of shape {shape}.")
    return np.reshape(x, (-1, dim)), batch


def _cholesky(cov: Any) -> Any:
    try:
        return np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        raise ValueError(
            f"{_MVN}: the covariance matrix is not positive definite. Differentiated code "
            f"factors it by Cholesky; a singular covariance (allow_singular=True) has a "
            f"density on a subspace, which has no derivative where its rank changes.") from None


def _mvn_value(x: Any, mean: Any, cov: Any) -> Any:
    dim, mean, cov = _mvn_parameters(mean, cov)
    points, batch = _mvn_quantiles(x, dim)
    factor = _cholesky(cov)
    z = sla.solve_triangular(factor, (points - mean).T, lower=True)
    log_det = 2 * np.sum(np.log(np.diagonal(factor)))
    out = -0.5 * (dim * _LOG_2PI + log_det + np.sum(z * z, axis=0))
    return _squeeze(np.reshape(out, batch))


@recorded_whole
def multivariate_normal_logpdf(x: Any, mean: Any = None, cov: Any = 1,
                               allow_singular: bool = False) -> Any:
    """``scipy.stats.multivariate_normal.logpdf(x, mean, cov)``, differentiable in ``x``,
    ``mean`` and ``cov`` (read as its symmetric part; see the module's docstring).

    >>> float(multivariate_normal_logpdf([0.0, 0.0], [0.0, 0.0], [1.0, 1.0]))
    -1.8378770664093453
    """
    return _mvn_value(x, mean, cov)


@recorded_whole
def multivariate_normal_pdf(x: Any, mean: Any = None, cov: Any = 1,
                            allow_singular: bool = False) -> Any:
    """``scipy.stats.multivariate_normal.pdf(x, mean, cov)``: ``exp`` of
    `multivariate_normal_logpdf`.

    >>> round(float(multivariate_normal_pdf(0.0)), 6)
    0.398942
    """
    return np.exp(_mvn_value(x, mean, cov))


def _mvn_state(call: Any) -> tuple:
    """What every formula reads: ``alpha = cov^-1 (x - mean)`` per point and ``cov^-1``."""
    dim, mean, cov = _mvn_parameters(call["mean"], call["cov"])
    points, batch = _mvn_quantiles(call["x"], dim)
    inverse_factor = sla.solve_triangular(_cholesky(cov), np.eye(dim), lower=True)
    inverse = inverse_factor.T @ inverse_factor
    return dim, batch, (points - mean) @ inverse, inverse


def _mvn_weights(call: Any, dy: Any) -> Any:
    """``dy`` per point (times the density for ``pdf``)."""
    if call.rule.f is multivariate_normal_pdf:
        dy = dy * call.y
    return np.reshape(dy, (-1,))


def _mvn_dx(call: Any, dy: Any) -> Any:
    _, _, alpha, _ = call.memo(_mvn_state)
    return np.reshape(-_mvn_weights(call, dy)[:, None] * alpha, np.shape(call["x"]))


def _mvn_dmean(call: Any, dy: Any) -> Any:
    _, _, alpha, _ = call.memo(_mvn_state)
    return np.reshape(_mvn_weights(call, dy) @ alpha, np.shape(call["mean"]))


def _mvn_dcov(call: Any, dy: Any) -> Any:
    dim, _, alpha, inverse = call.memo(_mvn_state)
    w = _mvn_weights(call, dy)
    g = 0.5 * (alpha.T @ (w[:, None] * alpha) - np.sum(w) * inverse)
    shape = np.shape(call["cov"])
    if len(shape) == 2 or dim == 1:
        return np.reshape(g, shape)
    return np.trace(g) if len(shape) == 0 else np.diagonal(g)


def _mvn_pushforward(call: Any, dx: Any, dmean: Any, dcov: Any) -> Any:
    dim, batch, alpha, inverse = call.memo(_mvn_state)
    t = np.zeros(np.shape(alpha)[0])
    if not _zero(dx):
        t = t - np.sum(np.reshape(dx, (-1, dim)) * alpha, axis=-1)
    if not _zero(dmean):
        t = t + alpha @ np.reshape(dmean, (dim,))
    if not _zero(dcov):
        _, _, e = _mvn_parameters(np.zeros(dim), dcov)
        t = t + 0.5 * (np.sum((alpha @ e) * alpha, axis=-1) - np.sum(inverse * e))
    t = np.reshape(t, np.shape(call.y))
    return t * call.y if call.rule.f is multivariate_normal_pdf else t


def _mvn_check(call: Any) -> None:
    if not issubclass(type(call["allow_singular"]), (bool, np.bool_)):
        raise TypeError(f"{_MVN}: allow_singular must be True or False.")


for _f in (multivariate_normal_logpdf, multivariate_normal_pdf):
    define(_f, _mvn_dx, _mvn_dmean, _mvn_dcov, pushforward=_mvn_pushforward, check=_mvn_check,
           refused=())


# --- dirichlet -----------------------------------------------------------------------------------

def _dirichlet_parts(x: Any, alpha: Any) -> tuple:
    """``alpha`` (K,), ``x`` as ``(K, n)`` points (a ``K - 1``-row ``x`` completed with
    ``1 - sum``), whether it was completed, and the batch shape."""
    _real(_DIRICHLET, "alpha", alpha)
    _real(_DIRICHLET, "x", x)
    alpha = np.asarray(alpha, dtype=float)
    if np.ndim(alpha) != 1:
        raise ValueError(f"{_DIRICHLET}: alpha must be one-dimensional; got shape "
                         f"{np.shape(alpha)}.")
    if np.min(alpha) <= 0:
        raise ValueError(f"{_DIRICHLET}: every alpha must be greater than 0.")
    x = np.asarray(x, dtype=float)
    k, shape = np.shape(alpha)[0], np.shape(x)
    if len(shape) == 0 or shape[0] not in (k, k - 1):
        raise ValueError(f"{_DIRICHLET}: the first axis of x holds the components, {k} or "
                         f"{k - 1} of them for alpha of shape {(k,)}; got x of shape {shape}.")
    points = np.reshape(x, (shape[0], -1))
    completed = shape[0] == k - 1
    if completed:
        points = np.concatenate([points, 1 - np.sum(points, axis=0, keepdims=True)], axis=0)
    if np.min(points) < 0:
        raise ValueError(f"{_DIRICHLET}: every entry of x must be at least 0.")
    return alpha, points, completed, shape[1:]


def _dirichlet_value(x: Any, alpha: Any) -> Any:
    alpha, points, _, batch = _dirichlet_parts(x, alpha)
    log_b = np.sum(sc.gammaln(alpha)) - sc.gammaln(np.sum(alpha))
    out = np.sum(sc.xlogy((alpha - 1)[:, None], points), axis=0) - log_b
    return _squeeze(np.reshape(out, batch))


@recorded_whole
def dirichlet_logpdf(x: Any, alpha: Any) -> Any:
    """``scipy.stats.dirichlet.logpdf(x, alpha)`` (components along ``x``'s first axis),
    differentiable in ``x`` and ``alpha``; the simplex is not checked here (see the module's
    docstring).

    >>> round(float(dirichlet_logpdf([0.2, 0.3, 0.5], [1.0, 2.0, 3.0])), 6)
    1.504077
    """
    return _dirichlet_value(x, alpha)


@recorded_whole
def dirichlet_pdf(x: Any, alpha: Any) -> Any:
    """``scipy.stats.dirichlet.pdf(x, alpha)``: ``exp`` of `dirichlet_logpdf`.

    >>> round(float(dirichlet_pdf([0.2, 0.3, 0.5], [1.0, 2.0, 3.0])), 6)
    4.5
    """
    return np.exp(_dirichlet_value(x, alpha))


def _dirichlet_state(call: Any) -> tuple:
    alpha, points, completed, _ = _dirichlet_parts(call["x"], call["alpha"])
    shifted = (alpha - 1)[:, None]
    # d xlogy(a - 1, x) / dx: 0 where a == 1 (the term is 0 for every x, even x = 0)
    slope = np.where(shifted == 0, 0.0, shifted / np.where(shifted == 0, 1.0, points))
    return alpha, points, completed, slope


def _dirichlet_weights(call: Any, dy: Any) -> Any:
    if call.rule.f is dirichlet_pdf:
        dy = dy * call.y
    return np.reshape(dy, (-1,))


def _dirichlet_dx(call: Any, dy: Any) -> Any:
    _, _, completed, slope = call.memo(_dirichlet_state)
    g = slope * _dirichlet_weights(call, dy)[None, :]
    if completed:
        g = g[:-1] - g[-1:]
    return np.reshape(g, np.shape(call["x"]))


def _dirichlet_dalpha(call: Any, dy: Any) -> Any:
    alpha, points, _, _ = call.memo(_dirichlet_state)
    w = _dirichlet_weights(call, dy)
    return np.log(points) @ w + np.sum(w) * (sc.digamma(np.sum(alpha)) - sc.digamma(alpha))


def _dirichlet_pushforward(call: Any, dx: Any, dalpha: Any) -> Any:
    alpha, points, completed, slope = call.memo(_dirichlet_state)
    t = np.zeros(np.shape(points)[1])
    if not _zero(dx):
        d = np.reshape(dx, (np.shape(call["x"])[0], -1))
        if completed:
            d = np.concatenate([d, -np.sum(d, axis=0, keepdims=True)], axis=0)
        t = t + np.sum(slope * d, axis=0)
    if not _zero(dalpha):
        t = t + dalpha @ np.log(points) + np.sum(
            dalpha * (sc.digamma(np.sum(alpha)) - sc.digamma(alpha)))
    t = np.reshape(t, np.shape(call.y))
    return t * call.y if call.rule.f is dirichlet_pdf else t


for _f in (dirichlet_logpdf, dirichlet_pdf):
    define(_f, _dirichlet_dx, _dirichlet_dalpha, pushforward=_dirichlet_pushforward,
           refused=())


# --- multinomial ---------------------------------------------------------------------------------

def _multinomial_parts(x: Any, n: Any, p: Any) -> tuple:
    """The counts (float), ``n``, ``p`` and where SciPy answers -inf (``x`` not counts
    summing to ``n``) or NaN (``n < 0``, ``p`` outside [0, 1])."""
    _real(_MULTINOMIAL, "p", p)
    p = np.asarray(p, dtype=float)
    n = np.asarray(n)
    counts = np.asarray(x)
    if np.ndim(counts) == 0:
        raise ValueError(f"{_MULTINOMIAL}: x must be an array of counts.")
    if np.shape(counts)[-1] != np.shape(p)[-1]:
        raise ValueError(f"{_MULTINOMIAL}: x has {np.shape(counts)[-1]} categories along its "
                         f"last axis, p has {np.shape(p)[-1]}.")
    whole = np.asarray(counts, dtype=int)
    outside = np.any(whole != counts, axis=-1) | np.any(whole < 0, axis=-1) | (
        np.sum(whole, axis=-1) != n)
    bad = (n < 0) | np.any(p < 0, axis=-1) | np.any(p > 1, axis=-1)
    return whole.astype(float), np.asarray(n, dtype=int), p, outside, bad


def _multinomial_value(x: Any, n: Any, p: Any) -> Any:
    counts, n, p, outside, bad = _multinomial_parts(x, n, p)
    out = sc.gammaln(n + 1) + np.sum(sc.xlogy(counts, p) - sc.gammaln(counts + 1), axis=-1)
    out = np.where(outside, -np.inf, out)
    return np.where(bad, np.nan, out)


@recorded_whole
def multinomial_logpmf(x: Any, n: Any, p: Any) -> Any:
    """``scipy.stats.multinomial.logpmf(x, n, p)``, differentiable in ``p`` (the counts ``x``
    and ``n`` are integers: no tangent).

    >>> round(float(multinomial_logpmf([1, 1], 2, [0.5, 0.5])), 6)
    -0.693147
    """
    return _multinomial_value(x, n, p)


@recorded_whole
def multinomial_pmf(x: Any, n: Any, p: Any) -> Any:
    """``scipy.stats.multinomial.pmf(x, n, p)``: ``exp`` of `multinomial_logpmf`.

    >>> float(multinomial_pmf([1, 1], 2, [0.5, 0.5]))
    0.5
    """
    return np.exp(_multinomial_value(x, n, p))


def _multinomial_slope(call: Any) -> Any:
    """``d logpmf / dp = x / p`` (0 where the count is 0, or where the value is constant)."""
    counts, _, p, outside, _ = _multinomial_parts(call["x"], call["n"], call["p"])
    slope = counts / np.where(counts == 0, 1.0, p)
    return np.where(outside[..., None], 0.0, slope)


def _multinomial_dp(call: Any, dy: Any) -> Any:
    if call.rule.f is multinomial_pmf:
        dy = dy * call.y
    g = np.expand_dims(dy, -1) * call.memo(_multinomial_slope)
    return unbroadcast(g, np.shape(call["p"]))


def _multinomial_pushforward(call: Any, dx: Any, dn: Any, dp: Any) -> Any:
    t = np.sum(call.memo(_multinomial_slope) * dp, axis=-1)
    t = np.broadcast_to(t, np.shape(call.y))
    return t * call.y if call.rule.f is multinomial_pmf else t


for _f in (multinomial_logpmf, multinomial_pmf):
    define(_f, None, None, _multinomial_dp, pushforward=_multinomial_pushforward, refused=())


# --- SciPy's methods, routed here while a trace is active ----------------------------------------

def _bound(f: Any, args: tuple, kwargs: dict) -> dict:
    bound = inspect.signature(f).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.arguments


def _plain_call(*args: Any) -> None:
    """What a routed ``__init__`` records: nothing (its redirect set the instance up)."""
    return None


def _as_matrix(cov: Any) -> Any:
    """A ``scipy.stats.Covariance`` object as its matrix (a constant: its parameters are
    not traced values); anything else as it is."""
    return cov.covariance if hasattr(cov, "whiten") and hasattr(cov, "covariance") else cov


def _mvn_method(f: Any) -> Any:
    def redirect(self: Any, args: tuple, kwargs: dict) -> tuple:
        call = _bound(f, args, kwargs)
        return f, (call["x"], call["mean"], _as_matrix(call["cov"])), {
            "allow_singular": call["allow_singular"]}

    return redirect


def _mvn_frozen_method(f: Any) -> Any:
    def redirect(self: Any, args: tuple, kwargs: dict) -> tuple:
        (x,) = _bound(lambda x: None, args, kwargs).values()
        return f, (x, self.mean, self.cov), {}

    return redirect


class _TracedCovariance:
    """The ``cov_object`` of a frozen ``multivariate_normal`` made from traced parameters:
    its ``covariance``; anything else SciPy's methods would read is refused by name."""

    _allow_singular = False

    def __init__(self, covariance: Any):
        self.covariance = covariance

    def __getattr__(self, name: str) -> Any:
        raise NotImplementedError(
            f"{_MVN}: a frozen distribution whose mean or cov holds traced values supports "
            f"logpdf and pdf in differentiated code (it reached .{name}); call other methods "
            f"outside the differentiated function.")


def _mvn_frozen_init(self: Any, args: tuple, kwargs: dict) -> tuple:
    def signature(mean=None, cov=1, allow_singular=False, seed=None, maxpts=None,
                  abseps=1e-5, releps=1e-5):
        return None

    call = _bound(signature, args, kwargs)
    module = sys.modules[type(self).__module__]
    self._dist = module.multivariate_normal_gen(call["seed"])
    self.dim, self.mean, cov = _mvn_parameters(call["mean"], _as_matrix(call["cov"]))
    _cholesky(cov)  # refused now, as SciPy refuses it at freeze time
    self.cov_object = _TracedCovariance(cov)
    self.allow_singular = bool(call["allow_singular"])
    self.maxpts = call["maxpts"] or 1000000 * self.dim
    self.abseps, self.releps = call["abseps"], call["releps"]
    self.args, self.kwds = (), {"mean": self.mean, "cov": cov}  # routes its methods
    return _plain_call, (), {}


def _refuse_cdf(name: str) -> Any:
    def redirect(self: Any, args: tuple, kwargs: dict) -> tuple:
        raise NotImplementedError(
            f"{_MVN}.{name} is not differentiable in chainrules: SciPy computes it by "
            f"randomized numerical integration (Genz), whose result is not a smooth function "
            f"of its arguments. Use logpdf/pdf, or compute {name} outside the "
            f"differentiated function.")

    return redirect


def _dirichlet_method(f: Any) -> Any:
    def redirect(self: Any, args: tuple, kwargs: dict) -> tuple:
        call = _bound(lambda x, alpha: None, args, kwargs)
        module = sys.modules[type(self).__module__]
        checked = module._dirichlet_check_parameters(call["alpha"])
        module._dirichlet_check_input(checked, call["x"])  # SciPy's checks, the simplex too
        return f, (call["x"], call["alpha"]), {}

    return redirect


def _multinomial_check_sum(p: Any) -> None:
    eps = np.finfo(np.float64).eps * 10
    if np.any(np.abs(1 - np.sum(p, axis=-1)) > eps):
        raise ValueError(
            f"{_MULTINOMIAL}: p must sum to 1 along its last axis in differentiated code "
            f"(SciPy replaces the last entry with 1 - sum of the others, with a FutureWarning, "
            f"and returns NaN from SciPy 1.18). Normalize p, e.g. p / np.sum(p).")


def _multinomial_method(f: Any) -> Any:
    def redirect(self: Any, args: tuple, kwargs: dict) -> tuple:
        call = _bound(lambda x, n, p: None, args, kwargs)
        _multinomial_check_sum(call["p"])
        return f, (call["x"], call["n"], call["p"]), {}

    return redirect


def _multinomial_frozen_init(self: Any, args: tuple, kwargs: dict) -> tuple:
    call = _bound(lambda n, p, seed=None: None, args, kwargs)
    module = sys.modules[type(self).__module__]
    self._dist = module.multinomial_gen(call["seed"])
    p = np.asarray(call["p"], dtype=float)
    _multinomial_check_sum(p)
    self.n = np.array(call["n"], dtype=int)
    self.p = p
    self.npcond = (self.n < 0) | np.any(p < 0, axis=-1) | np.any(p > 1, axis=-1)
    self._dist._process_parameters = lambda n, p: (self.n, self.p, self.npcond)
    return _plain_call, (), {}


_MODULE = "scipy.stats._multivariate"

# (module, class, method, redirect), read by chainrules.ad.dispatch.routes.
ROUTED_METHODS = [
    (_MODULE, "multivariate_normal_gen", "logpdf", _mvn_method(multivariate_normal_logpdf)),
    (_MODULE, "multivariate_normal_gen", "pdf", _mvn_method(multivariate_normal_pdf)),
    (_MODULE, "multivariate_normal_gen", "cdf", _refuse_cdf("cdf")),
    (_MODULE, "multivariate_normal_gen", "logcdf", _refuse_cdf("logcdf")),
    (_MODULE, "multivariate_normal_frozen", "__init__", _mvn_frozen_init),
    (_MODULE, "multivariate_normal_frozen", "logpdf",
     _mvn_frozen_method(multivariate_normal_logpdf)),
    (_MODULE, "multivariate_normal_frozen", "pdf", _mvn_frozen_method(multivariate_normal_pdf)),
    (_MODULE, "multivariate_normal_frozen", "cdf", _refuse_cdf("cdf")),
    (_MODULE, "multivariate_normal_frozen", "logcdf", _refuse_cdf("logcdf")),
    (_MODULE, "dirichlet_gen", "logpdf", _dirichlet_method(dirichlet_logpdf)),
    (_MODULE, "dirichlet_gen", "pdf", _dirichlet_method(dirichlet_pdf)),
    (_MODULE, "multinomial_gen", "logpmf", _multinomial_method(multinomial_logpmf)),
    (_MODULE, "multinomial_gen", "pmf", _multinomial_method(multinomial_pmf)),
    (_MODULE, "multinomial_frozen", "__init__", _multinomial_frozen_init),
]


def _key_redirect(redirect: Any) -> Any:
    """A routed method's redirect as the key of ``rrule(st.dirichlet.logpdf, x, alpha)``
    (`chainrules.core.registry.register_method`): the parameters are the call's own."""
    def redirect_key(instance: Any, args: tuple, kwargs: dict) -> tuple:
        function, arguments, keywords = redirect(instance, args, kwargs)
        return function, arguments, keywords, [None] * (len(arguments) - len(args))

    return redirect_key


for _module, _class, _method, _redirect in ROUTED_METHODS:
    if _class.endswith("_gen") and _method in ("logpdf", "pdf", "logpmf", "pmf"):
        register_method(getattr(sys.modules[_module], _class), _method, _key_redirect(_redirect))


# The registered function that each public method is recorded as (chainrules.coverage lists them).
STAND_INS = {f"scipy.stats.{name}.{method}": function for name, method, function in (
    ("multivariate_normal", "logpdf", multivariate_normal_logpdf),
    ("multivariate_normal", "pdf", multivariate_normal_pdf),
    ("dirichlet", "logpdf", dirichlet_logpdf), ("dirichlet", "pdf", dirichlet_pdf),
    ("multinomial", "logpmf", multinomial_logpmf), ("multinomial", "pmf", multinomial_pmf))}


# --- invwishart: SciPy's log-density in NumPy operations (traced: TRACED_PATHS) --------------------

def invwishart_logpdf(self: Any, x: Any, dim: int, df: Any, log_det_scale: Any, C: Any) -> Any:
    """``scipy.stats.invwishart._logpdf``, as SciPy computes it, its BLAS triangular solve a
    batched ``np.linalg.solve`` of each point's Cholesky factor (an engine traces it; SciPy's
    ``trsm`` takes no traced values): ``x`` holds the points along its last axis, ``C`` is the
    scale's lower Cholesky factor (SciPy 1.11 passes the scale and its log-determinant
    instead, its inverse by an in-place LAPACK call).

    >>> import scipy.stats
    >>> x, scale = np.array([[2.0, 0.3], [0.3, 1.0]]), np.eye(2)
    >>> C = np.linalg.cholesky(scale)
    >>> value = invwishart_logpdf(scipy.stats.invwishart, x[:, :, None], 2, 4, 0.0, C)
    >>> bool(np.isclose(value[0], scipy.stats.invwishart.logpdf(x, 4, scale)))
    True
    """
    if np.ndim(log_det_scale) == 2:  # SciPy 1.11's order: (x, dim, df, scale, log_det_scale)
        log_det_scale, C = C, np.linalg.cholesky(log_det_scale)
    if dim > 1:
        points = np.moveaxis(x, -1, 0)
        factors = np.linalg.cholesky(points)
        log_det_x = 2 * np.sum(np.log(np.diagonal(factors, axis1=-2, axis2=-1)), axis=-1)
        solved = np.linalg.solve(factors, np.broadcast_to(C, points.shape))
        trace = np.sum(solved * solved, axis=(-2, -1))
    else:
        log_det_x = np.log(x[0, 0])
        trace = C[0, 0] ** 2 / x[0, 0]
    return ((0.5 * df * log_det_scale - 0.5 * trace)
            - (0.5 * df * dim * math.log(2.0) + 0.5 * (df + dim + 1) * log_det_x)
            - sc.multigammaln(0.5 * df, dim))


def vonmises_fisher_parameters(self: Any, mu: Any, kappa: Any) -> tuple:
    """``scipy.stats.vonmises_fisher._process_parameters`` with its checks on comparisons
    (SciPy's ``float(kappa) == 0`` would take a traced ``kappa`` out of the gradient).

    >>> import scipy.stats
    >>> vonmises_fisher_parameters(scipy.stats.vonmises_fisher, [0.0, 1.0], 2.0)[0]
    2
    """
    mu = np.asarray(mu)
    if mu.ndim > 1:
        raise ValueError("'mu' must have one-dimensional shape.")
    if not np.allclose(np.linalg.norm(mu), 1.0):
        raise ValueError("'mu' must be a unit vector of norm 1.")
    if not mu.size > 1:
        raise ValueError("'mu' must have at least two entries.")
    if np.ndim(kappa) != 0 or kappa < 0:
        raise ValueError("'kappa' must be a positive scalar.")
    if kappa == 0:
        raise ValueError("For 'kappa=0' the von Mises-Fisher distribution becomes the uniform "
                         "distribution on the sphere surface. Consider using "
                         "'scipy.stats.uniform_direction' instead.")
    return mu.size, mu, kappa
