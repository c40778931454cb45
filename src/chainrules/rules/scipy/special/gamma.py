"""Rules for more of ``scipy.special``: the error-function, normal-distribution, gamma, beta and
zeta families (with ``loggamma``, ``binom``, ``zetac``, the inverses ``gammaincinv``,
``gammainccinv``, ``betaincinv``, ``betainccinv``, ``ndtri_exp``, and the distribution
functions ``chdtr``, ``chdtrc``, ``gdtr``, ``gdtrc``, ``pdtr``, ``pdtrc``, ``stdtr``, ``bdtr``,
``bdtrc``, ``nbdtr``, ``nbdtrc``, and the inverses ``bdtri``, ``nbdtri``, ``stdtrit``,
``chdtri``, ``gdtrix``, ``pdtri`` in their continuous arguments, the F distribution's
``fdtr``, ``fdtrc``, ``fdtri``, and the inverses in a parameter ``gdtria``, ``gdtrib``,
``btdtria``, ``btdtrib``, ``chdtriv``, ``stdtridf``, ``pdtrik``), and
SciPy's own ``expm1``, ``log1p``, ``cbrt`` (registered when SciPy is installed).

Each elementwise function is one `scalar_rule` line: its partials are functions of
``(y, *args)`` written with calls that have rules themselves, so every rule here can be
differentiated again, to any order. Where SciPy has a complex loop the partials are the
holomorphic derivative.

The derivatives of ``gammainc``/``gammaincc`` in ``a``, of ``betainc`` in ``a`` and ``b``,
and of ``zeta(x, q)`` in ``x`` have no closed form: they are computed by the functions of
`chainrules.rules.scipy.special.parameters` (converged series, continued fractions and
Euler-Maclaurin sums, differentiated term by term to second order, to about 1e-13
relative), whose own rules give their derivatives in ``x`` in closed form; the third
derivative in those parameters is refused by name (``NotImplementedError``, see
`chainrules.rules.refused_arguments`). ``gammasgn`` is
declared non-differentiable (piecewise constant).

>>> import numpy as np, scipy.special
>>> from chainrules import rrule
>>> y, pullback = rrule(scipy.special.ndtri, 0.5)
>>> float(pullback(1.0)[1]) == float(np.sqrt(2 * np.pi))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.special as sps

from ....core.registry import frule, non_differentiable, recorded_whole, rrule
from ....core.scalar_rule import scalar_rule
from ...refused_arguments import REFUSED, scalar_rule_deferring
from .elementary import _hurwitz_zeta
from .parameters import (betainc_da, betainc_db, gammainc_da, gammaincc_da, riemann_zeta_dx,
                         zeta_dx)

__all__ = ["REFUSED"]

_SQRT_PI = float(np.sqrt(np.pi))
_SQRT_2PI = float(np.sqrt(2 * np.pi))


# --- partials that need care ---------------------------------------------------------------------

def _xlog1py_t(y: Any, x: Any, t: Any) -> Any:
    """d xlog1py(x, t)/dt = x / (1 + t), and 0 where x == 0 (where xlog1py is 0 for every t,
    also at t = -1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.asarray(x) == 0, 0 * np.asarray(t), np.divide(x, 1 + t))


def _log_ndtr_derivative(y: Any, x: Any) -> Any:
    """``pdf(x) / ndtr(x) = exp(-x^2/2 - log_ndtr(x)) / sqrt(2 pi)``: no 0/0 far in the left
    tail, where ndtr underflows."""
    return np.exp(-x * x / 2 - y) / _SQRT_2PI


@recorded_whole
def _multigammaln(a: Any, d: Any) -> Any:
    """``multigammaln(a, d) = d(d-1)/4 log(pi) + sum_{j<d} gammaln(a - j/2)``, with SciPy's
    checks, written with ufuncs that have rules: differentiable to any order.
    ``sps.multigammaln`` converts ``a`` with ``np.asarray``, so its rules call this."""
    dimension = np.asarray(d)[()]
    if not np.isscalar(dimension) or np.floor(dimension) != dimension:
        raise ValueError("scipy.special.multigammaln: d should be a positive integer "
                         f"(dimension), got {d!r}")
    if np.any(np.asarray(a <= 0.5 * (dimension - 1))):
        raise ValueError(f"scipy.special.multigammaln: condition a > 0.5 * (d-1) "
                         f"({0.5 * (dimension - 1)}) not met")
    total = dimension * (dimension - 1) * 0.25 * np.log(np.pi)
    for j in range(int(dimension)):
        total = total + sps.gammaln(a - j / 2)
    return total


def _multigammaln_derivative(y: Any, a: Any, d: Any) -> Any:
    """``sum_{j<d} digamma(a - j/2)``."""
    total = 0
    for j in range(int(d)):
        total = total + sps.digamma(a - j / 2)
    return total


def _gammainc_x(y: Any, a: Any, x: Any) -> Any:
    """``x^(a-1) e^(-x) / Gamma(a)``, the integrand of the regularized lower gamma function."""
    return np.exp(sps.xlogy(a - 1, x) - x - sps.gammaln(a))


def _betainc_x(y: Any, a: Any, b: Any, x: Any) -> Any:
    """``x^(a-1) (1-x)^(b-1) / B(a, b)``, the integrand of the regularized beta function."""
    return np.exp(sps.xlogy(a - 1, x) + sps.xlog1py(b - 1, -x) - sps.betaln(a, b))


# --- the table -----------------------------------------------------------------------------------

# error functions and the normal distribution
scalar_rule(sps.erfinv, lambda y, x: _SQRT_PI / 2 * np.exp(y * y))
scalar_rule(sps.erfcinv, lambda y, x: -_SQRT_PI / 2 * np.exp(y * y))
scalar_rule(sps.erfcx, lambda y, x: 2 * x * y - 2 / _SQRT_PI)
scalar_rule(sps.ndtr, lambda y, x: np.exp(-x * x / 2) / _SQRT_2PI)
scalar_rule(sps.ndtri, lambda y, x: _SQRT_2PI * np.exp(y * y / 2))
scalar_rule(sps.log_ndtr, _log_ndtr_derivative)
scalar_rule(sps.dawsn, lambda y, x: 1 - 2 * x * y)

# logarithms and exponentials
scalar_rule(sps.entr, lambda y, x: -np.log(x) - 1)
scalar_rule(sps.log_expit, lambda y, x: sps.expit(-x))
scalar_rule(sps.xlog1py, lambda y, x, t: sps.log1p(t), _xlog1py_t)
scalar_rule(sps.expm1, lambda y, x: y + 1)
scalar_rule(sps.log1p, lambda y, x: 1 / (1 + x))
scalar_rule(sps.cbrt, lambda y, x: 1 / (3 * y * y))

# gamma and beta
scalar_rule(sps.gamma, lambda y, x: y * sps.digamma(x))
scalar_rule(sps.rgamma, lambda y, x: -y * sps.digamma(x))
non_differentiable(sps.gammasgn)
scalar_rule(_multigammaln, _multigammaln_derivative, None)
rrule.register(sps.multigammaln)(rrule.lookup(_multigammaln)[0])
frule.register(sps.multigammaln)(frule.lookup(_multigammaln)[0])
scalar_rule(sps.beta, lambda y, a, b: y * (sps.digamma(a) - sps.digamma(a + b)),
            lambda y, a, b: y * (sps.digamma(b) - sps.digamma(a + b)))
scalar_rule(sps.betaln, lambda y, a, b: sps.digamma(a) - sps.digamma(a + b),
            lambda y, a, b: sps.digamma(b) - sps.digamma(a + b))

# Parameters without a closed-form derivative: converged series, continued fractions and
# Euler-Maclaurin sums (`parameters`; NumPy-style functions with rules of their own, so
# these rules differentiate again in x), deferred for float numbers too (costly).
scalar_rule_deferring(sps.gammainc, (lambda y, a, x: gammainc_da(a, x), _gammainc_x),
                      (0,))
scalar_rule_deferring(sps.gammaincc, (lambda y, a, x: gammaincc_da(a, x),
                                      lambda y, a, x: -_gammainc_x(y, a, x)), (0,))
scalar_rule_deferring(sps.betainc, (lambda y, a, b, x: betainc_da(a, b, x),
                                    lambda y, a, b, x: betainc_db(a, b, x), _betainc_x),
                      (0, 1))
if hasattr(sps, "betaincc"):  # SciPy 1.11: 1 - betainc, computed without the cancellation
    scalar_rule_deferring(sps.betaincc, (lambda y, a, b, x: -betainc_da(a, b, x),
                                         lambda y, a, b, x: -betainc_db(a, b, x),
                                         lambda y, a, b, x: -_betainc_x(None, a, b, x)), (0, 1))

# zeta(x, q): SciPy's Python function calls this ufunc, so its rule serves both
scalar_rule_deferring(_hurwitz_zeta, (lambda y, s, q: zeta_dx(s, q),
                                      lambda y, s, q: -s * _hurwitz_zeta(s + 1, q)), (0,))
# zeta(x) without q: the Riemann zeta function, defined (unlike zeta(x, q)) for x < 1 too
scalar_rule_deferring(sps._ufuncs._riemann_zeta, (lambda y, s: riemann_zeta_dx(s),), (0,))
rrule.register(sps.zeta, replace=True)(rrule.lookup(_hurwitz_zeta)[0])
frule.register(sps.zeta, replace=True)(frule.lookup(_hurwitz_zeta)[0])

# log-gamma on the complex plane, binomial coefficients of real arguments
scalar_rule(sps.loggamma, lambda y, z: sps.digamma(z))
scalar_rule(sps.binom, lambda y, n, k: y * (sps.digamma(n + 1) - sps.digamma(n - k + 1)),
            lambda y, n, k: y * (sps.digamma(n - k + 1) - sps.digamma(k + 1)))


# Inverses of the incomplete gamma and beta functions and of log_ndtr: the implicit function
# theorem on F(params, x) = y, dx = (dy - F_params dparams) / F_x, with F_x the density.
def _gamma_inverse(upper: bool) -> tuple:
    sign = -1.0 if upper else 1.0
    return (lambda y, a, p: -gammainc_da(a, y) / _gammainc_x(None, a, y),
            lambda y, a, p: sign / _gammainc_x(None, a, y))


def _beta_inverse(upper: bool) -> tuple:
    sign = -1.0 if upper else 1.0
    return (lambda y, a, b, p: -betainc_da(a, b, y) / _betainc_x(None, a, b, y),
            lambda y, a, b, p: -betainc_db(a, b, y) / _betainc_x(None, a, b, y),
            lambda y, a, b, p: sign / _betainc_x(None, a, b, y))


scalar_rule_deferring(sps.gammaincinv, _gamma_inverse(upper=False), (0,))
scalar_rule_deferring(sps.gammainccinv, _gamma_inverse(upper=True), (0,))
scalar_rule_deferring(sps.betaincinv, _beta_inverse(upper=False), (0, 1))
if hasattr(sps, "betainccinv"):  # SciPy 1.11
    scalar_rule_deferring(sps.betainccinv, _beta_inverse(upper=True), (0, 1))
if hasattr(sps, "ndtri_exp"):
    scalar_rule(sps.ndtri_exp, lambda y, t: _SQRT_2PI * np.exp(t + y * y / 2))


# Distribution functions written through the incomplete gamma and beta functions.
def _student_df(y: Any, df: Any, t: Any) -> Any:
    """stdtr(df, t) = [t > 0] + c I_x(df/2, 1/2), x = df / (df + t^2), c = -1/2 for t > 0 and
    1/2 otherwise: d/ddf = c (I_a / 2 + I_x t^2 / (df + t^2)^2); 0 at t = 0."""
    # stdtr(df, 0) = 1/2 for every df, where x = 1 and the series is 0/0: there (t^2 below
    # df eps, x rounds to 1) the partial is t times its slope in t, d/ddf of the density at 0
    # (exact to first order in t; the next term is of order t^3)
    centre = t * t <= df * np.finfo(np.result_type(t, df, 1.0)).eps
    safe = np.where(centre, 1.0, t)
    x = df / (df + safe * safe)
    half = np.where(safe > 0, -0.5, 0.5)
    away = half * (betainc_da(df / 2, 0.5, x) / 2 +
                   _betainc_x(None, df / 2, 0.5, x) * safe * safe / (df + safe * safe) ** 2)
    at_zero = _student_t(None, df, 0.0) * (sps.digamma((df + 1) / 2) - sps.digamma(df / 2)
                                           - 1 / df) / 2
    return np.where(centre, t * at_zero, away)


def _student_t(y: Any, df: Any, t: Any) -> Any:
    """The density of Student's t."""
    return np.exp(sps.gammaln((df + 1) / 2) - sps.gammaln(df / 2) - (df + 1) / 2 *
                  np.log1p(t * t / df)) / np.sqrt(df * np.pi)


scalar_rule_deferring(sps.chdtr, (lambda y, v, x: gammainc_da(v / 2, x / 2) / 2,
                                  lambda y, v, x: _gammainc_x(None, v / 2, x / 2) / 2), (0,))
scalar_rule_deferring(sps.chdtrc, (lambda y, v, x: gammaincc_da(v / 2, x / 2) / 2,
                                   lambda y, v, x: -_gammainc_x(None, v / 2, x / 2) / 2), (0,))
scalar_rule_deferring(sps.gdtr, (lambda y, a, b, x: x * _gammainc_x(None, b, a * x),
                                 lambda y, a, b, x: gammainc_da(b, a * x),
                                 lambda y, a, b, x: a * _gammainc_x(None, b, a * x)), (1,))
scalar_rule_deferring(sps.gdtrc, (lambda y, a, b, x: -x * _gammainc_x(None, b, a * x),
                                  lambda y, a, b, x: gammaincc_da(b, a * x),
                                  lambda y, a, b, x: -a * _gammainc_x(None, b, a * x)), (1,))
# pdtr(k, m) = Q(floor(k) + 1, m): piecewise constant in k
scalar_rule(sps.pdtr, None, lambda y, k, m: -_gammainc_x(None, np.floor(k) + 1, m))
scalar_rule(sps.pdtrc, None, lambda y, k, m: _gammainc_x(None, np.floor(k) + 1, m))
scalar_rule_deferring(sps.stdtr, (_student_df, _student_t), (0,))


# Binomial and negative binomial distribution functions, integer counts k and n (SciPy
# truncates them: piecewise constant), in the probability p: bdtr(k, n, p) = I_{1-p}(n - k,
# k + 1) for 0 <= k < n (1 at k = n), nbdtr(k, n, p) = I_p(n, k + 1) for k >= 0.
def _binomial_density(k: Any, n: Any, p: Any) -> Any:
    """d bdtr(k, n, p)/dp = -density of Beta(n - k, k + 1) at 1 - p; 0 outside 0 <= k < n."""
    k, n = np.floor(k), np.floor(n)
    inside = (k >= 0) & (k < n)
    a, b = np.where(inside, n - k, 1.0), np.where(inside, k + 1, 1.0)
    return np.where(inside, -_betainc_x(None, a, b, 1 - p), 0.0)


def _negative_binomial_density(k: Any, n: Any, p: Any) -> Any:
    """d nbdtr(k, n, p)/dp = density of Beta(n, k + 1) at p; 0 for k < 0."""
    k = np.floor(k)
    inside = k >= 0
    return np.where(inside, _betainc_x(None, np.floor(n), np.where(inside, k + 1, 1.0), p), 0.0)


scalar_rule(sps.bdtr, None, None, lambda y, k, n, p: _binomial_density(k, n, p))
scalar_rule(sps.bdtrc, None, None, lambda y, k, n, p: -_binomial_density(k, n, p))
scalar_rule(sps.bdtri, None, None, lambda y, k, n, q: 1 / _binomial_density(k, n, y))
scalar_rule(sps.nbdtr, None, None, lambda y, k, n, p: _negative_binomial_density(k, n, p))
scalar_rule(sps.nbdtrc, None, None, lambda y, k, n, p: -_negative_binomial_density(k, n, p))
scalar_rule(sps.nbdtri, None, None, lambda y, k, n, q: 1 / _negative_binomial_density(k, n, y))


# Inverses in the point, by the implicit function theorem on the functions above: Student's t
# quantile, chi-squared's survival inverse, the gamma distribution's quantile in x, Poisson's
# in the mean.
scalar_rule_deferring(sps.stdtrit, (lambda y, df, p: -_student_df(None, df, y) /
                                    _student_t(None, df, y),
                                    lambda y, df, p: 1 / _student_t(None, df, y)), (0,))
scalar_rule_deferring(sps.chdtri, (lambda y, v, q: gammaincc_da(v / 2, y / 2) /
                                   _gammainc_x(None, v / 2, y / 2),
                                   lambda y, v, q: -2 / _gammainc_x(None, v / 2, y / 2)), (0,))
scalar_rule_deferring(sps.gdtrix, (lambda y, a, b, p: -y / a,
                                   lambda y, a, b, p: -gammainc_da(b, a * y) /
                                   (a * _gammainc_x(None, b, a * y)),
                                   lambda y, a, b, p: 1 / (a * _gammainc_x(None, b, a * y))), (1,))
scalar_rule(sps.pdtri, None, lambda y, k, q: -1 / _gammainc_x(None, np.floor(k) + 1, y))


# The F distribution, fdtr(dfn, dfd, x) = I_w(dfn/2, dfd/2), w = dfn x/(dfn x + dfd), and its
# quantile fdtri (the implicit function theorem on fdtr).
def _f_partials(dfn: Any, dfd: Any, x: Any) -> tuple:
    """fdtr's partials in dfn, dfd and x."""
    total = dfn * x + dfd
    w = dfn * x / total
    density = _betainc_x(None, dfn / 2, dfd / 2, w)
    return (betainc_da(dfn / 2, dfd / 2, w) / 2 + density * x * dfd / (total * total),
            betainc_db(dfn / 2, dfd / 2, w) / 2 - density * dfn * x / (total * total),
            density * dfn * dfd / (total * total))


def _f_partial(which: int, sign: float) -> Any:
    return lambda y, dfn, dfd, x: sign * _f_partials(dfn, dfd, x)[which]


def _f_quantile(which: int) -> Any:
    """fdtri's partial in dfn (``which`` 0), dfd (1) or p (2), at its quantile y."""
    def partial(y: Any, dfn: Any, dfd: Any, p: Any) -> Any:
        partials = _f_partials(dfn, dfd, y)
        return 1 / partials[2] if which == 2 else -partials[which] / partials[2]
    return partial


scalar_rule_deferring(sps.fdtr, tuple(_f_partial(i, 1.0) for i in range(3)), (0, 1))
scalar_rule_deferring(sps.fdtrc, tuple(_f_partial(i, -1.0) for i in range(3)), (0, 1))
scalar_rule_deferring(sps.fdtri, tuple(_f_quantile(i) for i in range(3)), (0, 1))


# Inverses in a parameter, by the implicit function theorem: gdtria and gdtrib (gdtr(a, b, x)
# = P(b, a x) in a and b), btdtria and btdtrib (I_x(a, b) in a and b), chdtriv (chdtr(v, x) =
# P(v/2, x/2) in v), stdtridf (stdtr in df) and pdtrik (pdtr's continuous k: Q(k + 1, m)).
def _gamma_rate_inverse(y: Any, p: Any, b: Any, x: Any) -> tuple:
    slope = x * _gammainc_x(None, b, y * x)       # d gdtr/da at a = y
    return 1 / slope, -gammainc_da(b, y * x) / slope, -y * _gammainc_x(None, b, y * x) / slope


def _gamma_shape_inverse(y: Any, a: Any, p: Any, x: Any) -> tuple:
    slope = gammainc_da(y, a * x)                 # d gdtr/db at b = y
    density = _gammainc_x(None, y, a * x)
    return -x * density / slope, 1 / slope, -a * density / slope


def _beta_parameter_inverse(first: bool) -> Any:
    """btdtria (``first``: y = a, arguments (p, b, x)) or btdtrib (y = b, (a, p, x))."""
    def partials(y: Any, u: Any, v: Any, x: Any) -> tuple:
        a, b = (y, v) if first else (u, y)
        da, db = betainc_da(a, b, x), betainc_db(a, b, x)
        slope, other = (da, db) if first else (db, da)
        inverse = (1 / slope, -other / slope) if first else (-other / slope, 1 / slope)
        return (*inverse, -_betainc_x(None, a, b, x) / slope)
    return partials


def _chi2_df_inverse(y: Any, p: Any, x: Any) -> tuple:
    slope = gammainc_da(y / 2, x / 2) / 2          # d chdtr/dv at v = y
    return 1 / slope, -_gammainc_x(None, y / 2, x / 2) / 2 / slope


def _student_df_inverse(y: Any, p: Any, t: Any) -> tuple:
    slope = _student_df(None, y, t)               # d stdtr/d df at df = y
    return 1 / slope, -_student_t(None, y, t) / slope


def _poisson_count_inverse(y: Any, p: Any, m: Any) -> tuple:
    """0 where SciPy's k stops at its bound 0 (Q(1, m) = e^-m is below p there)."""
    slope = gammaincc_da(y + 1, m)               # d Q(k + 1, m)/dk at k = y
    inside = y > 0
    return (np.where(inside, 1 / slope, 0.0),
            np.where(inside, _gammainc_x(None, y + 1, m) / slope, 0.0))


def _by_position(partials: Any, count: int) -> tuple:
    return tuple((lambda y, *args, i=i: partials(y, *args)[i]) for i in range(count))


scalar_rule_deferring(sps.gdtria, _by_position(_gamma_rate_inverse, 3), (1,))
scalar_rule_deferring(sps.gdtrib, _by_position(_gamma_shape_inverse, 3), (0, 1, 2))
scalar_rule_deferring(sps.btdtria, _by_position(_beta_parameter_inverse(True), 3), (0, 1, 2))
scalar_rule_deferring(sps.btdtrib, _by_position(_beta_parameter_inverse(False), 3), (0, 1, 2))
scalar_rule_deferring(sps.chdtriv, _by_position(_chi2_df_inverse, 2), (0, 1))
scalar_rule_deferring(sps.stdtridf, _by_position(_student_df_inverse, 2), (0, 1))
scalar_rule_deferring(sps.pdtrik, _by_position(_poisson_count_inverse, 2), (0, 1))
scalar_rule_deferring(sps.zetac, (lambda y, x: riemann_zeta_dx(x),), (0,))
