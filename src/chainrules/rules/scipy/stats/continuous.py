"""The table of continuous ``scipy.stats`` distributions' derivatives: per distribution, the
standardized log-density's partials in ``z = (x - loc)/scale`` and in each shape parameter, and
the standardized cdf's partials in each shape parameter (`Continuous`). The rules of every
method (``logpdf``, ``cdf``, ``ppf``...) are derived from these in ``univariate.py``.

Every formula is written with calls that have rules (NumPy, ``scipy.special``), so that it can
be differentiated again. A cdf partial without a closed form is ``None``: `CDF_VIA_SPECIAL`
gives it from the parameter derivatives of ``gammainc``/``betainc`` where it is one of those,
and otherwise the rules refuse that parameter by name (a derivative in ``x``, ``loc`` or
``scale``, and of the density in every shape, is still there).

>>> import numpy as np
>>> float(CONTINUOUS["gumbel_r"].dlogf_dz(np.float64(0.0)))    # d/dz (-z - e^-z) at 0
0.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import scipy.special as sps
import scipy.stats as st

__all__ = ["CDF_VIA_SPECIAL", "CONTINUOUS", "Continuous"]

_SQRT_2PI = float(np.sqrt(2 * np.pi))


@dataclass(frozen=True)
class Continuous:
    """A continuous distribution's derivatives in standardized form, ``z = (x - loc)/scale``:
    ``dlogf_dz(z, *shapes)``, ``dlogf[i](z, *shapes)`` (in shape ``i``; ``None``: the shape
    has no derivative, refused by name in every method) and ``dcdf[i](z, *shapes)``
    (``None``: no closed form, see `CDF_VIA_SPECIAL`)."""

    shapes: tuple
    dlogf_dz: Callable
    dlogf: tuple = ()
    dcdf: tuple = ()


def _phi(z: Any) -> Any:
    return np.exp(-z * z / 2) / _SQRT_2PI


def _mills(t: Any) -> Any:
    """phi(t) / Phi(t), through the log of Phi (finite far in the left tail)."""
    return np.exp(-t * t / 2 - sps.log_ndtr(t)) / _SQRT_2PI


def _truncnorm_mass(a: Any, b: Any) -> Any:
    """``ndtr(b) - ndtr(a)``, from the upper tail when it is the smaller one."""
    return np.where(a > 0, sps.ndtr(-a) - sps.ndtr(-b), sps.ndtr(b) - sps.ndtr(a))


def _truncnorm_cdf(z: Any, a: Any, b: Any) -> Any:
    return (sps.ndtr(z) - sps.ndtr(a)) / _truncnorm_mass(a, b)


def _t_dlogf_ddf(z: Any, df: Any) -> Any:
    return (0.5 * (sps.digamma((df + 1) / 2) - sps.digamma(df / 2)) - 1 / (2 * df)
            - 0.5 * np.log1p(z * z / df) + (df + 1) * z * z / (2 * df * (df + z * z)))


def _gennorm_dlogf_dbeta(z: Any, beta: Any) -> Any:
    power = np.abs(z) ** beta
    return 1 / beta + sps.digamma(1 / beta) / (beta * beta) - sps.xlogy(power, np.abs(z))


_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(64)


def _vonmises_dcdf_dkappa(z: Any, kappa: Any) -> Any:
    """``d F(z; kappa)/d kappa`` for SciPy's von Mises cdf, which adds whole periods (that do
    not depend on kappa) to the cdf at ``r = z - 2 pi round(z / 2 pi)`` in ``[-pi, pi]``:

    - ``kappa < 50`` (SciPy sums a series): ``int f(t) (cos t - I1/I0) dt`` over the shorter
      tail, ``[-pi, r]`` or minus ``[r, pi]`` (the integral over the period is 0), by 64-point
      Gauss-Legendre quadrature (smooth integrand: about 1e-11 relative);
    - ``kappa >= 50`` (SciPy's normal approximation ``ndtr(c sin(r/2))``, ``c = sqrt(2/pi) /
      i0e(kappa)``): its derivative, ``phi(c sin(r/2)) sin(r/2) c (1 - i1e/i0e)``.
    """
    r = z - 2 * np.pi * np.round(z / (2 * np.pi))
    ratio = sps.i1e(kappa) / sps.i0e(kappa)
    left = r <= 0
    start, end = np.where(left, -np.pi, r), np.where(left, r, np.pi)
    half = np.expand_dims((end - start) / 2, -1)
    t = half * (_NODES + 1) + np.expand_dims(start, -1)
    k = np.expand_dims(kappa, -1)
    density = np.exp(k * (np.cos(t) - 1)) / (2 * np.pi * sps.i0e(k))
    tail = np.sum(half * _WEIGHTS * density * (np.cos(t) - np.expand_dims(ratio, -1)), axis=-1)
    series = np.where(left, tail, -tail)
    c = np.sqrt(2 / np.pi) / sps.i0e(kappa)
    sine = np.sin(r / 2)
    normal = _phi(c * sine) * sine * c * (1 - ratio)
    return np.where(kappa < 50, series, normal)


def _gev_u(z: Any, c: Any) -> tuple:
    """Generalized extreme value, ``u = log(1 - c z)/c`` (``-z`` at ``c = 0``; F = exp(-e^u),
    log f = u - e^u - log(1 - c z)) and ``du/dc``, whose closed form cancels near ``c z = 0``:
    there its series ``-sum_k (k - 1)/k c^(k-2) z^k`` (five terms: 1e-16 relative at |cz| <
    1e-3)."""
    near = np.abs(c * z) < 1e-3
    safe = np.where(near, 1.0, c)
    log1p = np.log1p(-safe * z)
    u = np.where(near, -z * (1 + c * z * (1 / 2 + c * z * (1 / 3 + c * z / 4))), log1p / safe)
    exact = (-safe * z / (1 - safe * z) - log1p) / (safe * safe)
    series = -z * z * (1 / 2 + c * z * (2 / 3 + c * z * (3 / 4 + c * z * (4 / 5 + c * z * 5 / 6))))
    return u, np.where(near, series, exact)


def _gev_dlogf_dz(z: Any, c: Any) -> Any:
    u, _ = _gev_u(z, c)
    return (np.exp(u) + c - 1) / (1 - c * z)


def _gev_dlogf_dc(z: Any, c: Any) -> Any:
    u, du = _gev_u(z, c)
    return du * (1 - np.exp(u)) + z / (1 - c * z)


def _gev_dcdf_dc(z: Any, c: Any) -> Any:
    u, du = _gev_u(z, c)
    return -np.exp(u - np.exp(u)) * du


def _beta_density(a: Any, b: Any, x: Any) -> Any:
    """``d betainc(a, b, x)/dx``."""
    return np.exp(sps.xlogy(a - 1, x) + sps.xlog1py(b - 1, -x) - sps.betaln(a, b))


def _gamma_density(a: Any, x: Any) -> Any:
    """``d gammainc(a, x)/dx``."""
    return np.exp(sps.xlogy(a - 1, x) - x - sps.gammaln(a))


def _t_dcdf_ddf(special: Any, z: Any, df: Any) -> Any:
    """F = 1/2 + sign(z)/2 (1 - I_w(df/2, 1/2)), w = df / (df + z^2)."""
    w = df / (df + z * z)
    dw = z * z / ((df + z * z) * (df + z * z))
    return -0.5 * np.sign(z) * (0.5 * special.betainc_da(df / 2, 0.5, w)
                                + _beta_density(df / 2, 0.5, w) * dw)


def _gennorm_dcdf_dbeta(special: Any, z: Any, beta: Any) -> Any:
    """F = 1/2 + sign(z)/2 P(1/beta, |z|^beta)."""
    w = np.abs(z) ** beta
    return 0.5 * np.sign(z) * (-special.gammainc_da(1 / beta, w) / (beta * beta)
                               + _gamma_density(1 / beta, w) * sps.xlogy(w, np.abs(z)))


def _f_dcdf(special: Any, z: Any, n: Any, m: Any, numerator: bool) -> Any:
    """F = I_w(n/2, m/2), w = n z / (n z + m): in the numerator's degrees of freedom ``n`` or
    the denominator's ``m``."""
    w = n * z / (n * z + m)
    if numerator:
        return 0.5 * special.betainc_da(n / 2, m / 2, w) + _beta_density(n / 2, m / 2, w) * (
            z * m / ((n * z + m) * (n * z + m)))
    return 0.5 * special.betainc_db(n / 2, m / 2, w) - _beta_density(n / 2, m / 2, w) * (
        n * z / ((n * z + m) * (n * z + m)))


def _series_near_zero(c: Any, z: Any) -> tuple:
    """``(near, safe c, safe z)``: where ``|c z| < 1e-3`` a closed form in ``c`` cancels, and
    the values at which it is computed elsewhere (1 and 0 there: no division by zero)."""
    near = np.abs(c * z) < 1e-3
    return near, np.where(near, 1.0, c), np.where(near, 0.0, z)


def _genpareto_terms(z: Any, c: Any) -> tuple:
    """Generalized Pareto, ``log f = -(1 + 1/c) log1p(c z)``: ``r = log1p(c z)/c`` (``z`` at
    ``c = 0``; ``F = 1 - exp(-r)``) and ``q = -dr/dc = (log1p(c z) - c z/(1 + c z))/c^2``,
    both by their series near ``c z = 0`` (five terms: 1e-15 relative at ``|c z| < 1e-3``)."""
    near, safe, zs = _series_near_zero(c, z)
    u = c * z
    log1p = np.log1p(safe * zs)
    r = np.where(near, z * (1 - u * (1 / 2 - u * (1 / 3 - u * (1 / 4 - u / 5)))), log1p / safe)
    q = np.where(near, z * z * (1 / 2 - u * (2 / 3 - u * (3 / 4 - u * (4 / 5 - u * 5 / 6)))),
                 (log1p - safe * zs / (1 + safe * zs)) / (safe * safe))
    return r, q


def _genpareto_dlogf_dc(z: Any, c: Any) -> Any:
    return _genpareto_terms(z, c)[1] - z / (1 + c * z)


def _genpareto_dcdf_dc(z: Any, c: Any) -> Any:
    r, q = _genpareto_terms(z, c)
    return -np.exp(-r) * q


def _log_bessel_k1_slope(t: Any) -> Any:
    """``d log K1(t)/dt = -K0(t)/K1(t) - 1/t``, from the scaled Bessel functions."""
    return -sps.k0e(t) / sps.k1e(t) - 1 / t


def _norminvgauss_dlogf_dz(z: Any, a: Any, b: Any) -> Any:
    q = np.sqrt(1 + z * z)
    return (a * _log_bessel_k1_slope(a * q) - 1 / q) * z / q + b


def _argus_psi(chi: Any) -> Any:
    """``Phi(chi) - chi phi(chi) - 1/2`` without its cancellation at small ``chi``."""
    return sps.gammainc(1.5, chi * chi / 2) / 2


def _argus_dcdf(z: Any, chi: Any) -> Any:
    """F = 1 - Psi(chi w)/Psi(chi), w = sqrt(1 - z^2), Psi'(t) = t^2 phi(t)."""
    w = np.sqrt((1 - z) * (1 + z))
    psi = _argus_psi(chi)
    return (_argus_psi(chi * w) * chi * chi * _phi(chi) / psi
            - w * (chi * w) ** 2 * _phi(chi * w)) / psi


def _exponnorm_exponent(z: Any, k: Any) -> Any:
    """``log`` of the term the exponentially modified normal's cdf subtracts from Phi(z)."""
    return (0.5 / k - z) / k + sps.log_ndtr(z - 1 / k)


def _exponnorm_dexponent_dk(z: Any, k: Any) -> Any:
    return (z - 1 / k + _mills(z - 1 / k)) / (k * k)


def _foldnorm_ratio(z: Any, c: Any) -> Any:
    """phi(z + c) / phi(z - c) on the support z, c >= 0."""
    return np.exp(-2 * z * c)


def _genexpon_parts(z: Any, a: Any, b: Any, c: Any) -> tuple:
    """``(e, m, s)``: ``e = -expm1(-c z)``, ``m = a + b e`` (the density's factor) and
    ``s = -(a + b) z + b e/c`` (its exponent: ``F = 1 - exp(s)``)."""
    e = -np.expm1(-c * z)
    return e, a + b * e, -(a + b) * z + b * e / c


def _genexpon_dlogf_dc(z: Any, a: Any, b: Any, c: Any) -> Any:
    e, m, _ = _genexpon_parts(z, a, b, c)
    return b * z * (1 - e) / m - b * e / (c * c) + b * z * (1 - e) / c


def _genexpon_dcdf(which: int) -> Callable:
    def partial(z: Any, a: Any, b: Any, c: Any) -> Any:
        e, _, s = _genexpon_parts(z, a, b, c)
        ds = (-z, -z + e / c, -b * e / (c * c) + b * z * (1 - e) / c)[which]
        return -np.exp(s) * ds

    return partial


def _genhalflogistic_t(z: Any, c: Any) -> tuple:
    """``t = (1 - c z)^(1/c)`` (``F = (1 - t)/(1 + t)``) and ``dt/dc``."""
    log_base = np.log1p(-c * z)
    t = np.exp(log_base / c)
    return t, t * (-z / (c * (1 - c * z)) - log_base / (c * c))


def _genhalflogistic_dlogf_dc(z: Any, c: Any) -> Any:
    t, dt = _genhalflogistic_t(z, c)
    return (-np.log1p(-c * z) / (c * c) - (1 / c - 1) * z / (1 - c * z)
            - 2 * dt / (1 + t))


def _genhalflogistic_dcdf_dc(z: Any, c: Any) -> Any:
    t, dt = _genhalflogistic_t(z, c)
    return -2 * dt / ((1 + t) * (1 + t))


def _gengamma_dcdf_dc(z: Any, a: Any, c: Any) -> Any:
    w = z ** c
    return np.sign(c) * _gamma_density(a, w) * w * np.log(z)


def _invgauss_dcdf_dmu(z: Any, mu: Any) -> Any:
    """F = Phi((z/mu - 1)/sqrt z) + exp(2/mu) Phi(-(z/mu + 1)/sqrt z); the phi terms cancel."""
    return -2 / (mu * mu) * np.exp(2 / mu + sps.log_ndtr(-(z / mu + 1) / np.sqrt(z)))


def _recipinvgauss_dcdf_dmu(z: Any, mu: Any) -> Any:
    """F = Phi((z - 1/mu)/sqrt z) - exp(2/mu) Phi(-(z + 1/mu)/sqrt z)."""
    return 2 / (mu * mu) * np.exp(2 / mu + sps.log_ndtr(-(z + 1 / mu) / np.sqrt(z)))


def _kappa3_dlogcdf_da(z: Any, a: Any) -> Any:
    """d log F/da, F = z (a + z^a)^(-1/a)."""
    base = a + z ** a
    return np.log(base) / (a * a) - (1 + z ** a * np.log(z)) / (a * base)


def _asymmetric_laplace_dcdf(z: Any, kappa: Any) -> Any:
    k2 = 1 + kappa * kappa
    right = np.exp(-np.maximum(z, 0) * kappa) * (z / k2 + 2 * kappa / (k2 * k2))
    left = np.exp(np.minimum(z, 0) / kappa) * (2 * kappa / (k2 * k2) - z / k2)
    return np.where(z >= 0, right, left)


def _mielke_dlogcdf(which: int) -> Callable:
    """d log F/dk (``which`` 0) or /ds (1), log F = k log z - (k/s) log1p(z^s)."""
    def partial(z: Any, k: Any, s: Any) -> Any:
        log1p = np.log1p(z ** s)
        if which == 0:
            return np.log(z) - log1p / s
        return k * log1p / (s * s) - k / s * z ** s * np.log(z) / (1 + z ** s)

    return partial


def _powerlognorm_dlogf_dz(z: Any, c: Any, s: Any) -> Any:
    u = np.log(z) / s
    return (-1 - (u + (c - 1) * _mills(-u)) / s) / z


def _powerlognorm_dlogf_ds(z: Any, c: Any, s: Any) -> Any:
    u = np.log(z) / s
    return (u * (u + (c - 1) * _mills(-u)) - 1) / s


def _powerlognorm_dcdf_ds(z: Any, c: Any, s: Any) -> Any:
    u = np.log(z) / s
    return -c * np.exp((c - 1) * sps.log_ndtr(-u)) * _phi(u) * u / s


def _skewcauchy_dcdf_da(z: Any, a: Any) -> Any:
    width = np.where(z <= 0, 1 - a, 1 + a)
    return np.sign(z) * (np.arctan(z / width) - width * z / (width * width + z * z)) / np.pi - 0.5


def _trapezoid_dlogf(which: int) -> Callable:
    """d log f/dc (``which`` 0) or /dd (1); f = u {z/c, 1, (1 - z)/(1 - d)}, u = 2/(1 + d - c)."""
    def partial(z: Any, c: Any, d: Any) -> Any:
        if which == 0:
            return 1 / (1 + d - c) - np.where(z < c, 1 / c, 0.0)
        return -1 / (1 + d - c) + np.where(z > d, 1 / (1 - d), 0.0)

    return partial


def _trapezoid_dcdf(which: int) -> Callable:
    def partial(z: Any, c: Any, d: Any) -> Any:
        u = 2 / (1 + d - c)
        du = u * u / 2 if which == 0 else -u * u / 2
        left, right = z * z / (2 * c), (1 - z) * (1 - z) / (2 * (1 - d))
        if which == 0:
            inside = (du * left - u * left / c, du * (z - c / 2) - u / 2, -du * right)
        else:
            inside = (du * left, du * (z - c / 2), -du * right - u * right / (1 - d))
        return np.where(z < c, inside[0], np.where(z <= d, inside[1], inside[2]))

    return partial


def _truncpareto_dlogf_db(z: Any, b: Any, c: Any) -> Any:
    return 1 / b - np.log(z) - np.log(c) / np.expm1(b * np.log(c))


def _truncpareto_dcdf(which: int) -> Callable:
    """F = (1 - z^-b)/(1 - c^-b): in ``b`` (``which`` 0) or ``c`` (1)."""
    def partial(z: Any, b: Any, c: Any) -> Any:
        top, bottom = -np.expm1(-b * np.log(z)), -np.expm1(-b * np.log(c))
        if which == 0:
            return (z ** -b * np.log(z) * bottom - top * c ** -b * np.log(c)) / (bottom * bottom)
        return -top * b * c ** (-b - 1) / (bottom * bottom)

    return partial


def _truncweibull_parts(c: Any, a: Any, b: Any) -> tuple:
    """The mass ``D = exp(-a^c) - exp(-b^c)`` and its partials in ``c``, ``a``, ``b``."""
    ea, eb = np.exp(-a ** c), np.exp(-b ** c)
    return ea - eb, (-ea * sps.xlogy(a ** c, a) + eb * sps.xlogy(b ** c, b),
                     -ea * c * a ** (c - 1), eb * c * b ** (c - 1))


def _truncweibull_dlogf(which: int) -> Callable:
    def partial(z: Any, c: Any, a: Any, b: Any) -> Any:
        mass, dmass = _truncweibull_parts(c, a, b)
        own = 1 / c + np.log(z) * (1 - z ** c) if which == 0 else 0 * z
        return own - dmass[which] / mass

    return partial


def _truncweibull_dcdf(which: int) -> Callable:
    """F = (exp(-a^c) - exp(-z^c))/D."""
    def partial(z: Any, c: Any, a: Any, b: Any) -> Any:
        mass, dmass = _truncweibull_parts(c, a, b)
        ez = np.exp(-z ** c)
        cdf = (np.exp(-a ** c) - ez) / mass
        dtop = (-np.exp(-a ** c) * sps.xlogy(a ** c, a) + ez * sps.xlogy(z ** c, z),
                dmass[1], 0 * z)[which]
        return (dtop - cdf * dmass[which]) / mass

    return partial


def _jf_skew_t_parts(z: Any, a: Any, b: Any) -> tuple:
    """``r = z/sqrt(a + b + z^2)`` (``F = I_{(1 + r)/2}(a, b)``), ``dr/da = dr/db`` and the
    log-density's slope in ``r``."""
    s2 = a + b + z * z
    r = z / np.sqrt(s2)
    return r, -z / (2 * s2 * np.sqrt(s2)), (a + 0.5) / (1 + r) - (b + 0.5) / (1 - r)


def _jf_skew_t_dlogf_dz(z: Any, a: Any, b: Any) -> Any:
    s2 = a + b + z * z
    return _jf_skew_t_parts(z, a, b)[2] * (a + b) / (s2 * np.sqrt(s2))


def _jf_skew_t_dlogf(which: int) -> Callable:
    """log f = (a + 1/2) log(1 + r) + (b + 1/2) log(1 - r) - (a + b - 1) log 2 - B(a, b)
    - log(a + b)/2: in ``a`` (``which`` 0) or ``b`` (1)."""
    def partial(z: Any, a: Any, b: Any) -> Any:
        r, dr, slope = _jf_skew_t_parts(z, a, b)
        own = np.log1p(r) - sps.digamma(a) if which == 0 else np.log1p(-r) - sps.digamma(b)
        return own + sps.digamma(a + b) - np.log(2) - 1 / (2 * (a + b)) + slope * dr

    return partial


def _ncx2_logpdf(z: Any, df: Any, nc: Any) -> Any:
    return st.ncx2.logpdf(z, df, nc)


def _ncx2_cdf(z: Any, df: Any, nc: Any) -> Any:
    return st.ncx2.cdf(z, df, nc)


def _ncx2_dlogf_dz(z: Any, df: Any, nc: Any) -> Any:
    """-1/2 + v/z + sqrt(nc/z) I_(v+1)/I_v (sqrt(nc z))/2, v = df/2 - 1 (chi2's at nc = 0)."""
    v = df / 2 - 1
    positive = nc > 0
    safe = np.where(positive, nc, 1.0)
    t = np.sqrt(safe * z)
    bessel = np.sqrt(safe / z) * sps.ive(v + 1, t) / sps.ive(v, t) / 2
    return -0.5 + v / z + np.where(positive, bessel, 0.0)


def _crystalball_parts(beta: Any, m: Any) -> tuple:
    """``log N`` (the normalization: ``1/N = m/(beta (m - 1)) e^(-beta^2/2) + sqrt(2 pi)
    Phi(beta)``) and its partials in ``beta`` and ``m``."""
    tail = np.exp(-beta * beta / 2)
    inverse = m / (beta * (m - 1)) * tail + _SQRT_2PI * sps.ndtr(beta)
    return (-np.log(inverse),
            tail * (beta * beta + m) / (beta * beta * (m - 1)) / inverse,
            tail / (beta * (m - 1) ** 2) / inverse)


def _crystalball_tail(z: Any, beta: Any, m: Any) -> tuple:
    """The power-law tail's ``B - z``, ``B = m/beta - beta`` (kept positive where z is in
    the Gaussian core, whose branch is taken there)."""
    return np.maximum(m / beta - beta - z, m / beta)


def _crystalball_dlogf(which: int) -> Callable:
    """d log f/d beta (``which`` 0) or /dm (1): log N - z^2/2 (z > -beta), else log N
    + m log(m/beta) - beta^2/2 - m log(B - z)."""
    def partial(z: Any, beta: Any, m: Any) -> Any:
        dlog_n = _crystalball_parts(beta, m)[1 + which]
        gap = _crystalball_tail(z, beta, m)
        if which == 0:
            tail = -m / beta - beta + m * (m / (beta * beta) + 1) / gap
        else:
            tail = np.log(m / beta) + 1 - np.log(gap) - m / (beta * gap)
        return dlog_n + np.where(z > -beta, 0 * z, tail)

    return partial


def _crystalball_dcdf(which: int) -> Callable:
    """F = N G: G = (m/beta) e^(-beta^2/2)/(m - 1) + sqrt(2 pi) (Phi(z) - Phi(-beta))
    (z > -beta), else (m/beta)^m e^(-beta^2/2) (B - z)^(1-m)/(m - 1)."""
    def partial(z: Any, beta: Any, m: Any) -> Any:
        log_n, dbeta_n, dm_n = _crystalball_parts(beta, m)
        tail = np.exp(-beta * beta / 2)
        core = m / beta * tail / (m - 1) + _SQRT_2PI * (sps.ndtr(z) - sps.ndtr(-beta))
        if which == 0:
            dcore = tail * (1 - m * (1 + beta * beta) / (beta * beta * (m - 1)))
        else:
            dcore = -tail / (beta * (m - 1) ** 2)
        gap = _crystalball_tail(z, beta, m)
        log_power = m * np.log(m / beta) - beta * beta / 2 + (1 - m) * np.log(gap) - np.log(m - 1)
        if which == 0:
            dlog_power = -m / beta - beta + (1 - m) * (-m / (beta * beta) - 1) / gap
        else:
            dlog_power = np.log(m / beta) + 1 - np.log(gap) + (1 - m) / (beta * gap) - 1 / (m - 1)
        power = np.exp(log_power)
        dlog_n = (dbeta_n, dm_n)[which]
        return np.exp(log_n) * np.where(z > -beta, dlog_n * core + dcore,
                                        power * (dlog_n + dlog_power))

    return partial


def _pearson3_dlogf_ds(z: Any, skew: Any) -> Any:
    """Pearson III, a gamma distribution of shape a = 4/skew^2 standardized: log f =
    a (log1p(u) - u) - log1p(u) - R(a) - log(2 pi)/2, u = skew z/2, R the remainder of
    Stirling's series for log Gamma(a). Each term's derivative in skew is written without
    the cancellations of the gamma form (its slope z^3/6 - z/2 at skew 0 is the Edgeworth
    term's): the first is z^2 h(u), h(u) = (log1p(u) - u)/u^2, by its series near u = 0; R'
    by its own series for large a."""
    u = skew * z / 2
    near = np.abs(u) < 1e-3
    safe_u = np.where(near, 1.0, u)
    slope = np.where(near, 1 / 3 - u * (1 / 2 - u * (3 / 5 - u * (2 / 3 - u * 5 / 7))),
                     (2 * (safe_u - np.log1p(safe_u)) - safe_u * safe_u / (1 + safe_u))
                     / safe_u ** 3)
    large = np.abs(skew) < 0.36   # a > 30
    safe_skew = np.where(large, 1.0, skew)
    a = 4 / (safe_skew * safe_skew)
    remainder = np.where(large, skew * (1 / 24 - skew ** 4 * (1 / 3840 - skew ** 4 / 129024)),
                         -8 / safe_skew ** 3 * (sps.digamma(a) - np.log(a) + 1 / (2 * a)))
    return z ** 3 * slope / 2 - z / (2 * (1 + u)) - remainder


# Continuous: name -> Continuous(shapes, d log f/dz, d log f/d shape, d F/d shape).
CONTINUOUS: dict[str, Continuous] = {
    "norm": Continuous((), lambda z: -z),
    "expon": Continuous((), lambda z: 0 * z - 1),
    "laplace": Continuous((), lambda z: -np.sign(z)),
    "cauchy": Continuous((), lambda z: -2 * z / (1 + z * z)),
    "logistic": Continuous((), lambda z: -np.tanh(z / 2)),
    "uniform": Continuous((), lambda z: 0 * z),
    "t": Continuous(("df",), lambda z, df: -(df + 1) * z / (df + z * z),
                    (_t_dlogf_ddf,), (None,)),
    "gamma": Continuous(("a",), lambda z, a: (a - 1) / z - 1,
                        (lambda z, a: np.log(z) - sps.digamma(a),), (None,)),
    "chi2": Continuous(("df",), lambda z, df: (df / 2 - 1) / z - 0.5,
                       (lambda z, df: 0.5 * (np.log(z / 2) - sps.digamma(df / 2)),), (None,)),
    "beta": Continuous(("a", "b"), lambda z, a, b: (a - 1) / z - (b - 1) / (1 - z),
                       (lambda z, a, b: np.log(z) - sps.digamma(a) + sps.digamma(a + b),
                        lambda z, a, b: np.log1p(-z) - sps.digamma(b) + sps.digamma(a + b)),
                       (None, None)),
    "vonmises": Continuous(("kappa",), lambda z, kappa: -kappa * np.sin(z),
                           (lambda z, kappa: np.cos(z) - sps.i1e(kappa) / sps.i0e(kappa),),
                           (_vonmises_dcdf_dkappa,)),
    "truncnorm": Continuous(
        ("a", "b"), lambda z, a, b: -z,
        (lambda z, a, b: _phi(a) / _truncnorm_mass(a, b),
         lambda z, a, b: -_phi(b) / _truncnorm_mass(a, b)),
        (lambda z, a, b: _phi(a) / _truncnorm_mass(a, b) * (_truncnorm_cdf(z, a, b) - 1),
         lambda z, a, b: -_phi(b) / _truncnorm_mass(a, b) * _truncnorm_cdf(z, a, b))),
    "gennorm": Continuous(("beta",),
                          lambda z, beta: -beta * np.abs(z) ** (beta - 1) * np.sign(z),
                          (_gennorm_dlogf_dbeta,), (None,)),
    "pareto": Continuous(("b",), lambda z, b: -(b + 1) / z,
                         (lambda z, b: 1 / b - np.log(z),),
                         (lambda z, b: np.exp(-b * np.log(z)) * np.log(z),)),
    "gumbel_r": Continuous((), lambda z: np.exp(-z) - 1),
    "gumbel_l": Continuous((), lambda z: 1 - np.exp(z)),
    "halfnorm": Continuous((), lambda z: -z),
    "rayleigh": Continuous((), lambda z: 1 / z - z),
    "lognorm": Continuous(("s",), lambda z, s: -(1 + np.log(z) / (s * s)) / z,
                          (lambda z, s: (np.log(z) ** 2 / (s * s) - 1) / s,),
                          (lambda z, s: -_phi(np.log(z) / s) * np.log(z) / (s * s),)),
    "weibull_min": Continuous(("c",), lambda z, c: (c - 1) / z - c * z ** (c - 1),
                              (lambda z, c: 1 / c + np.log(z) * (1 - z ** c),),
                              (lambda z, c: np.exp(-z ** c) * z ** c * np.log(z),)),
    "invgamma": Continuous(("a",), lambda z, a: (1 / z - a - 1) / z,
                           (lambda z, a: -np.log(z) - sps.digamma(a),), (None,)),
    # log f = log 2 + log phi(z) + log Phi(a z); F = Phi(z) - 2 T(z, a) (Owen's T)
    "skewnorm": Continuous(("a",), lambda z, a: a * _mills(a * z) - z,
                           (lambda z, a: z * _mills(a * z),),
                           (lambda z, a: -np.exp(-z * z * (1 + a * a) / 2)
                            / (np.pi * (1 + a * a)),)),
    # log f = (n log n + m log m)/2 + (n/2 - 1) log z - (n + m)/2 log(m + n z) - log B(n/2, m/2)
    "genextreme": Continuous(("c",), _gev_dlogf_dz, (_gev_dlogf_dc,), (_gev_dcdf_dc,)),
    "f": Continuous(("dfn", "dfd"),
                    lambda z, n, m: (n / 2 - 1) / z - (n + m) / 2 * n / (m + n * z),
                    (lambda z, n, m: (np.log(n * z / (m + n * z)) + 1 - (n + m) * z / (m + n * z)
                                      - sps.digamma(n / 2) + sps.digamma((n + m) / 2)) / 2,
                     lambda z, n, m: (np.log(m / (m + n * z)) + 1 - (n + m) / (m + n * z)
                                      - sps.digamma(m / 2) + sps.digamma((n + m) / 2)) / 2),
                    (None, None)),
    # --- standardized log-densities, as SciPy writes them, in its names of the shapes ---
    # phi(a - 1/z)/(z^2 Phi(a)); F = Phi(a - 1/z)/Phi(a)
    "alpha": Continuous(("a",), lambda z, a: -2 / z - (a - 1 / z) / (z * z),
                        (lambda z, a: 1 / z - a - _mills(a),),
                        (lambda z, a: (_phi(a - 1 / z) - sps.ndtr(a - 1 / z) * _mills(a))
                         / sps.ndtr(a),)),
    "anglit": Continuous((), lambda z: -2 * np.tan(2 * z)),                 # cos(2z)
    "arcsine": Continuous((), lambda z: (2 * z - 1) / (2 * z * (1 - z))),   # 1/(pi sqrt(z(1 - z)))
    "argus": Continuous(("chi",), lambda z, chi: 1 / z - z / (1 - z * z) + chi * chi * z,
                        (lambda z, chi: 3 / chi - chi * chi * _phi(chi) / _argus_psi(chi)
                         - chi * (1 - z * z),), (_argus_dcdf,)),
    # z^(a-1) (1 + z)^(-a-b)/B(a, b); F = I_{z/(1+z)}(a, b)
    "betaprime": Continuous(("a", "b"), lambda z, a, b: (a - 1) / z - (a + b) / (1 + z),
                            (lambda z, a, b: np.log(z) - np.log1p(z) - sps.digamma(a)
                             + sps.digamma(a + b),
                             lambda z, a, b: -np.log1p(z) - sps.digamma(b) + sps.digamma(a + b)),
                            (None, None)),
    "bradford": Continuous(("c",), lambda z, c: -c / (1 + c * z),           # c/(log1p(c)(1 + cz))
                           (lambda z, c: 1 / c - 1 / ((1 + c) * np.log1p(c)) - z / (1 + c * z),),
                           (lambda z, c: (z / (1 + c * z) - np.log1p(c * z)
                                          / ((1 + c) * np.log1p(c))) / np.log1p(c),)),
    # Burr III: c d z^(-c-1) (1 + z^-c)^(-d-1); F = (1 + z^-c)^-d
    "burr": Continuous(("c", "d"),
                       lambda z, c, d: (-(c + 1) + (d + 1) * c / (1 + z ** c)) / z,
                       (lambda z, c, d: 1 / c - np.log(z) + (d + 1) * np.log(z) / (1 + z ** c),
                        lambda z, c, d: 1 / d - np.log1p(z ** -c)),
                       (lambda z, c, d: d * np.log(z) * z ** -c * (1 + z ** -c) ** (-d - 1),
                        lambda z, c, d: -np.log1p(z ** -c) * (1 + z ** -c) ** -d)),
    # Burr XII: c d z^(c-1) (1 + z^c)^(-d-1); F = 1 - (1 + z^c)^-d
    "burr12": Continuous(("c", "d"),
                         lambda z, c, d: ((c - 1) - (d + 1) * c * z ** c / (1 + z ** c)) / z,
                         (lambda z, c, d: 1 / c + np.log(z) - (d + 1) * z ** c * np.log(z)
                          / (1 + z ** c),
                          lambda z, c, d: 1 / d - np.log1p(z ** c)),
                         (lambda z, c, d: d * (1 + z ** c) ** (-d - 1) * z ** c * np.log(z),
                          lambda z, c, d: (1 + z ** c) ** -d * np.log1p(z ** c))),
    "chi": Continuous(("df",), lambda z, df: (df - 1) / z - z,              # F = P(df/2, z^2/2)
                      (lambda z, df: np.log(z) - 0.5 * np.log(2) - 0.5 * sps.digamma(df / 2),),
                      (None,)),
    "cosine": Continuous((), lambda z: -np.tan(z / 2)),                     # (1 + cos z)/(2 pi)
    # |z|^(a-1) e^-|z| / (2 Gamma(a)); F = 1/2 + sign(z)/2 P(a, |z|)
    "dgamma": Continuous(("a",), lambda z, a: np.sign(z) * ((a - 1) / np.abs(z) - 1),
                         (lambda z, a: np.log(np.abs(z)) - sps.digamma(a),), (None,)),
    "dweibull": Continuous(("c",),                             # c/2 |z|^(c-1) e^(-|z|^c)
                           lambda z, c: np.sign(z) * ((c - 1) / np.abs(z)
                                                      - c * np.abs(z) ** (c - 1)),
                           (lambda z, c: 1 / c + np.log(np.abs(z)) * (1 - np.abs(z) ** c),),
                           (lambda z, c: np.sign(z) * np.exp(-np.abs(z) ** c) * np.abs(z) ** c
                            * np.log(np.abs(z)) / 2,)),
    "erlang": Continuous(("a",), lambda z, a: (a - 1) / z - 1,              # gamma's
                         (lambda z, a: np.log(z) - sps.digamma(a),), (None,)),
    # exp((1/(2K) - z)/K) Phi(z - 1/K)/K; F = Phi(z) - that exponent's exp
    "exponnorm": Continuous(("K",), lambda z, k: _mills(z - 1 / k) - 1 / k,
                            (lambda z, k: _exponnorm_dexponent_dk(z, k) - 1 / k,),
                            (lambda z, k: -np.exp(_exponnorm_exponent(z, k))
                             * _exponnorm_dexponent_dk(z, k),)),
    # b z^(b-1) exp(1 + z^b - e^(z^b)); F = 1 - exp(1 - e^(z^b))
    "exponpow": Continuous(("b",), lambda z, b: ((b - 1) + b * z ** b * (1 - np.exp(z ** b))) / z,
                           (lambda z, b: 1 / b + np.log(z) * (1 + z ** b * (1 - np.exp(z ** b))),),
                           (lambda z, b: np.exp(1 - np.exp(z ** b) + z ** b) * z ** b
                            * np.log(z),)),
    # a c (1 - e^(-z^c))^(a-1) e^(-z^c) z^(c-1); F = (1 - e^(-z^c))^a
    "exponweib": Continuous(
        ("a", "c"),
        lambda z, a, c: ((a - 1) * c * z ** c / np.expm1(z ** c) - c * z ** c + c - 1) / z,
        (lambda z, a, c: 1 / a + np.log(-np.expm1(-z ** c)),
         lambda z, a, c: 1 / c + np.log(z) * ((a - 1) * z ** c / np.expm1(z ** c) - z ** c + 1)),
        (lambda z, a, c: (-np.expm1(-z ** c)) ** a * np.log(-np.expm1(-z ** c)),
         lambda z, a, c: a * (-np.expm1(-z ** c)) ** (a - 1) * np.exp(-z ** c) * z ** c
         * np.log(z))),
    # Birnbaum-Saunders: F = Phi((sqrt z - 1/sqrt z)/c)
    "fatiguelife": Continuous(("c",),
                              lambda z, c: 1 / (z + 1) - 1.5 / z
                              - (z * z - 1) / (2 * z * z * c * c),
                              (lambda z, c: -1 / c + (z - 1) ** 2 / (z * c ** 3),),
                              (lambda z, c: -_phi((np.sqrt(z) - 1 / np.sqrt(z)) / c)
                               * (np.sqrt(z) - 1 / np.sqrt(z)) / (c * c),)),
    # log-logistic, burr with d = 1: F = 1/(1 + z^-c)
    "fisk": Continuous(("c",), lambda z, c: (-(c + 1) + 2 * c / (1 + z ** c)) / z,
                       (lambda z, c: 1 / c - np.log(z) + 2 * np.log(z) / (1 + z ** c),),
                       (lambda z, c: np.log(z) * z ** -c / (1 + z ** -c) ** 2,)),
    "foldcauchy": Continuous(
        ("c",),
        lambda z, c: -2 * ((z - c) / (1 + (z - c) ** 2) ** 2 + (z + c) / (1 + (z + c) ** 2) ** 2)
        / (1 / (1 + (z - c) ** 2) + 1 / (1 + (z + c) ** 2)),
        (lambda z, c: 2 * ((z - c) / (1 + (z - c) ** 2) ** 2 - (z + c) / (1 + (z + c) ** 2) ** 2)
         / (1 / (1 + (z - c) ** 2) + 1 / (1 + (z + c) ** 2)),),
        (lambda z, c: (1 / (1 + (z + c) ** 2) - 1 / (1 + (z - c) ** 2)) / np.pi,)),
    # phi(z - c) + phi(z + c); F = Phi(z - c) + Phi(z + c) - 1
    "foldnorm": Continuous(("c",),
                           lambda z, c: (c - z - (z + c) * _foldnorm_ratio(z, c))
                           / (1 + _foldnorm_ratio(z, c)),
                           (lambda z, c: (z - c - (z + c) * _foldnorm_ratio(z, c))
                            / (1 + _foldnorm_ratio(z, c)),),
                           (lambda z, c: _phi(z + c) - _phi(z - c),)),
    # (a + b e) exp(-(a + b) z + b e/c), e = 1 - exp(-c z)
    "genexpon": Continuous(
        ("a", "b", "c"),
        lambda z, a, b, c: b * c * (1 - _genexpon_parts(z, a, b, c)[0])
        / _genexpon_parts(z, a, b, c)[1] - a - b * _genexpon_parts(z, a, b, c)[0],
        (lambda z, a, b, c: 1 / _genexpon_parts(z, a, b, c)[1] - z,
         lambda z, a, b, c: _genexpon_parts(z, a, b, c)[0] / _genexpon_parts(z, a, b, c)[1] - z
         + _genexpon_parts(z, a, b, c)[0] / c,
         _genexpon_dlogf_dc),
        (_genexpon_dcdf(0), _genexpon_dcdf(1), _genexpon_dcdf(2))),
    # |c| z^(c a - 1) e^(-z^c)/Gamma(a); F = P(a, z^c) (c > 0), Q(a, z^c) (c < 0)
    "gengamma": Continuous(("a", "c"), lambda z, a, c: (c * a - 1) / z - c * z ** (c - 1),
                           (lambda z, a, c: c * np.log(z) - sps.digamma(a),
                            lambda z, a, c: 1 / c + np.log(z) * (a - z ** c)),
                           (None, _gengamma_dcdf_dc)),
    "genhalflogistic": Continuous(
        ("c",),
        lambda z, c: (2 * _genhalflogistic_t(z, c)[0] / (1 + _genhalflogistic_t(z, c)[0])
                      - (1 - c)) / (1 - c * z),
        (_genhalflogistic_dlogf_dc,), (_genhalflogistic_dcdf_dc,)),
    # c e^-z (1 + e^-z)^(-c-1); F = (1 + e^-z)^-c
    "genlogistic": Continuous(("c",), lambda z, c: (c + 1) * sps.expit(-z) - 1,
                              (lambda z, c: 1 / c - np.logaddexp(0, -z),),
                              (lambda z, c: -np.logaddexp(0, -z)
                               * np.exp(-c * np.logaddexp(0, -z)),)),
    "genpareto": Continuous(("c",), lambda z, c: -(c + 1) / (1 + c * z),    # (1 + cz)^(-1 - 1/c)
                            (_genpareto_dlogf_dc,), (_genpareto_dcdf_dc,)),
    "gibrat": Continuous((), lambda z: -(1 + np.log(z)) / z),               # lognorm, s = 1
    # c e^z exp(-c (e^z - 1)); F = 1 - exp(-c expm1(z))
    "gompertz": Continuous(("c",), lambda z, c: 1 - c * np.exp(z),
                           (lambda z, c: 1 / c - np.expm1(z),),
                           (lambda z, c: np.exp(-c * np.expm1(z)) * np.expm1(z),)),
    "halfcauchy": Continuous((), lambda z: -2 * z / (1 + z * z)),
    "halflogistic": Continuous((), lambda z: -np.tanh(z / 2)),
    # beta/Gamma(1/beta) e^(-z^beta); F = P(1/beta, z^beta)
    "halfgennorm": Continuous(("beta",), lambda z, beta: -beta * z ** (beta - 1),
                              (lambda z, beta: 1 / beta + sps.digamma(1 / beta) / (beta * beta)
                               - z ** beta * np.log(z),), (None,)),
    "hypsecant": Continuous((), lambda z: -np.tanh(z)),
    # exp(-(z - mu)^2/(2 z mu^2))/sqrt(2 pi z^3)
    "invgauss": Continuous(("mu",), lambda z, mu: -1.5 / z - 1 / (2 * mu * mu) + 1 / (2 * z * z),
                           (lambda z, mu: (z - mu) / mu ** 3,), (_invgauss_dcdf_dmu,)),
    # c z^(-c-1) e^(-z^-c); F = exp(-z^-c)
    "invweibull": Continuous(("c",), lambda z, c: (c * z ** -c - c - 1) / z,
                             (lambda z, c: 1 / c - np.log(z) * (1 - z ** -c),),
                             (lambda z, c: np.exp(-z ** -c) * z ** -c * np.log(z),)),
    # b/(z (1 - z)) phi(a + b logit z); F = Phi(a + b logit z)
    "johnsonsb": Continuous(
        ("a", "b"),
        lambda z, a, b: (2 * z - 1 - b * (a + b * sps.logit(z))) / (z * (1 - z)),
        (lambda z, a, b: -(a + b * sps.logit(z)),
         lambda z, a, b: 1 / b - (a + b * sps.logit(z)) * sps.logit(z)),
        (lambda z, a, b: _phi(a + b * sps.logit(z)),
         lambda z, a, b: _phi(a + b * sps.logit(z)) * sps.logit(z))),
    # b/sqrt(z^2 + 1) phi(a + b asinh z); F = Phi(a + b asinh z)
    "johnsonsu": Continuous(
        ("a", "b"),
        lambda z, a, b: -z / (z * z + 1) - (a + b * np.arcsinh(z)) * b / np.sqrt(z * z + 1),
        (lambda z, a, b: -(a + b * np.arcsinh(z)),
         lambda z, a, b: 1 / b - (a + b * np.arcsinh(z)) * np.arcsinh(z)),
        (lambda z, a, b: _phi(a + b * np.arcsinh(z)),
         lambda z, a, b: _phi(a + b * np.arcsinh(z)) * np.arcsinh(z))),
    # a (a + z^a)^(-(a + 1)/a); F = z (a + z^a)^(-1/a)
    "kappa3": Continuous(("a",), lambda z, a: -(a + 1) * z ** (a - 1) / (a + z ** a),
                         (lambda z, a: 1 / a + np.log(a + z ** a) / (a * a)
                          - (a + 1) * (1 + z ** a * np.log(z)) / (a * (a + z ** a)),),
                         (lambda z, a: z * (a + z ** a) ** (-1 / a) * _kappa3_dlogcdf_da(z, a),)),
    # exp(-z kappa) (z >= 0), exp(z/kappa) (z < 0), over kappa + 1/kappa
    "laplace_asymmetric": Continuous(
        ("kappa",), lambda z, kappa: np.where(z >= 0, -kappa, 1 / kappa),
        (lambda z, kappa: (1 / (kappa * kappa) - 1) / (kappa + 1 / kappa)
         - np.where(z >= 0, z, z / (kappa * kappa)),), (_asymmetric_laplace_dcdf,)),
    "levy": Continuous((), lambda z: (0.5 / z - 1.5) / z),    # e^(-1/(2z))/sqrt(2 pi z^3)
    "levy_l": Continuous((), lambda z: -(0.5 / z + 1.5) / z),
    "loggamma": Continuous(("c",), lambda z, c: c - np.exp(z),             # F = P(c, e^z)
                           (lambda z, c: z - sps.digamma(c),), (None,)),
    # c/2 z^(c-1) (z < 1), c/2 z^(-c-1) (z >= 1)
    "loglaplace": Continuous(("c",), lambda z, c: np.where(z < 1, c - 1, -c - 1) / z,
                             (lambda z, c: 1 / c - np.abs(np.log(z)),),
                             (lambda z, c: np.exp(-c * np.abs(np.log(z))) * np.log(z) / 2,)),
    # 1/(z log(b/a)) on [a, b]; F = log(z/a)/log(b/a)
    "loguniform": Continuous(("a", "b"), lambda z, a, b: -1 / z,
                             (lambda z, a, b: 1 / (a * np.log(b / a)) + 0 * z,
                              lambda z, a, b: -1 / (b * np.log(b / a)) + 0 * z),
                             (lambda z, a, b: (np.log(z / a) / np.log(b / a) - 1)
                              / (a * np.log(b / a)),
                              lambda z, a, b: -np.log(z / a) / (b * np.log(b / a) ** 2))),
    # Pareto II: c/(1 + z)^(c+1); F = 1 - (1 + z)^-c
    "lomax": Continuous(("c",), lambda z, c: -(c + 1) / (1 + z),
                        (lambda z, c: 1 / c - np.log1p(z),),
                        (lambda z, c: np.exp(-c * np.log1p(z)) * np.log1p(z),)),
    "maxwell": Continuous((), lambda z: 2 / z - z),
    # k z^(k-1)/(1 + z^s)^(1 + k/s); F = z^k/(1 + z^s)^(k/s)
    "mielke": Continuous(
        ("k", "s"), lambda z, k, s: ((k - 1) - (s + k) * z ** s / (1 + z ** s)) / z,
        (lambda z, k, s: 1 / k + _mielke_dlogcdf(0)(z, k, s),
         lambda z, k, s: k * np.log1p(z ** s) / (s * s) - (1 + k / s) * z ** s * np.log(z)
         / (1 + z ** s)),
        (lambda z, k, s: np.exp(k * np.log(z) - k / s * np.log1p(z ** s))
         * _mielke_dlogcdf(0)(z, k, s),
         lambda z, k, s: np.exp(k * np.log(z) - k / s * np.log1p(z ** s))
         * _mielke_dlogcdf(1)(z, k, s))),
    "moyal": Continuous((), lambda z: (np.exp(-z) - 1) / 2),
    # 2 nu^nu/Gamma(nu) z^(2 nu - 1) e^(-nu z^2); F = P(nu, nu z^2)
    "nakagami": Continuous(("nu",), lambda z, nu: (2 * nu - 1) / z - 2 * nu * z,
                           (lambda z, nu: np.log(nu) + 1 - sps.digamma(nu) + 2 * np.log(z)
                            - z * z,),
                           (None,)),
    # a K1(a q)/(pi q) exp(sqrt(a^2 - b^2) + b z), q = sqrt(1 + z^2); its cdf is an integral
    "norminvgauss": Continuous(
        ("a", "b"), _norminvgauss_dlogf_dz,
        (lambda z, a, b: 1 / a + np.sqrt(1 + z * z) * _log_bessel_k1_slope(a * np.sqrt(1 + z * z))
         + a / np.sqrt(a * a - b * b),
         lambda z, a, b: z - b / np.sqrt(a * a - b * b)),
        (None, None)),
    "powerlaw": Continuous(("a",), lambda z, a: (a - 1) / z,                # a z^(a-1); F = z^a
                           (lambda z, a: 1 / a + np.log(z),),
                           (lambda z, a: z ** a * np.log(z),)),
    # c/(z s) phi(u) Phi(-u)^(c-1), u = log(z)/s; F = 1 - Phi(-u)^c
    "powerlognorm": Continuous(
        ("c", "s"), _powerlognorm_dlogf_dz,
        (lambda z, c, s: 1 / c + sps.log_ndtr(-np.log(z) / s), _powerlognorm_dlogf_ds),
        (lambda z, c, s: -np.exp(c * sps.log_ndtr(-np.log(z) / s)) * sps.log_ndtr(-np.log(z) / s),
         _powerlognorm_dcdf_ds)),
    # c phi(z) Phi(-z)^(c-1); F = 1 - Phi(-z)^c
    "powernorm": Continuous(("c",), lambda z, c: -z - (c - 1) * _mills(-z),
                            (lambda z, c: 1 / c + sps.log_ndtr(-z),),
                            (lambda z, c: -np.exp(c * sps.log_ndtr(-z)) * sps.log_ndtr(-z),)),
    # (1 - z^2)^(c/2 - 1)/B(1/2, c/2): a symmetric beta on [-1, 1]
    "rdist": Continuous(("c",), lambda z, c: -(c - 2) * z / (1 - z * z),
                        (lambda z, c: (np.log1p(-z * z) - sps.digamma(c / 2)
                                       + sps.digamma((c + 1) / 2)) / 2,), (None,)),
    # exp(-(1 - mu z)^2/(2 z mu^2))/sqrt(2 pi z)
    "recipinvgauss": Continuous(("mu",), lambda z, mu: -0.5 / z + 0.5 / (z * z * mu * mu) - 0.5,
                                (lambda z, mu: (1 - mu * z) / (z * mu ** 3),),
                                (_recipinvgauss_dcdf_dmu,)),
    # z exp(-(z^2 + b^2)/2) I0(z b); F = 1 - Q1(b, z) (Marcum's Q: dQ1(b, z)/db =
    # z exp(-(b^2 + z^2)/2) I1(b z))
    "rice": Continuous(("b",), lambda z, b: 1 / z - z + b * sps.i1e(z * b) / sps.i0e(z * b),
                       (lambda z, b: z * sps.i1e(z * b) / sps.i0e(z * b) - b,),
                       (lambda z, b: -z * np.exp(-(b - z) ** 2 / 2) * sps.i1e(b * z),)),
    "semicircular": Continuous((), lambda z: -z / (1 - z * z)),
    # 1/(pi (z^2/(a sign(z) + 1)^2 + 1))
    "skewcauchy": Continuous(
        ("a",), lambda z, a: -2 * z / ((a * np.sign(z) + 1) ** 2 + z * z),
        (lambda z, a: 2 * z * z * np.sign(z) / ((a * np.sign(z) + 1)
                                              * ((a * np.sign(z) + 1) ** 2 + z * z)),),
        (_skewcauchy_dcdf_da,)),
    "trapezoid": Continuous(("c", "d"),
                            lambda z, c, d: np.where(z < c, 1 / z,
                                                     np.where(z > d, 1 / (z - 1), 0.0)),
                            (_trapezoid_dlogf(0), _trapezoid_dlogf(1)),
                            (_trapezoid_dcdf(0), _trapezoid_dcdf(1))),
    # 2z/c (z < c), 2(1 - z)/(1 - c); F = z^2/c, 1 - (1 - z)^2/(1 - c)
    "triang": Continuous(("c",), lambda z, c: np.where(z < c, 1 / z, 1 / (z - 1)),
                         (lambda z, c: np.where(z < c, -1 / c, 1 / (1 - c)),),
                         (lambda z, c: np.where(z < c, -z * z / (c * c),
                                                -(1 - z) * (1 - z) / ((1 - c) * (1 - c))),)),
    # e^-z/(1 - e^-b) on [0, b]; F = (1 - e^-z)/(1 - e^-b)
    "truncexpon": Continuous(("b",), lambda z, b: 0 * z - 1 + 0 * b,
                             (lambda z, b: -1 / np.expm1(b) + 0 * z,),
                             (lambda z, b: -np.expm1(-z) / np.expm1(-b) / np.expm1(b),)),
    # b z^(-b-1)/(1 - c^-b) on [1, c]
    "truncpareto": Continuous(("b", "c"), lambda z, b, c: -(b + 1) / z,
                              (_truncpareto_dlogf_db,
                               lambda z, b, c: b * c ** (-b - 1) / np.expm1(-b * np.log(c))
                               + 0 * z),
                              (_truncpareto_dcdf(0), _truncpareto_dcdf(1))),
    # c z^(c-1) e^(-z^c)/(e^(-a^c) - e^(-b^c)) on [a, b]
    "truncweibull_min": Continuous(("c", "a", "b"),
                                   lambda z, c, a, b: (c - 1) / z - c * z ** (c - 1),
                                   (_truncweibull_dlogf(0), _truncweibull_dlogf(1),
                                    _truncweibull_dlogf(2)),
                                   (_truncweibull_dcdf(0), _truncweibull_dcdf(1),
                                    _truncweibull_dcdf(2))),
    "vonmises_line": Continuous(("kappa",), lambda z, kappa: -kappa * np.sin(z),   # vonmises'
                                (lambda z, kappa: np.cos(z) - sps.i1e(kappa) / sps.i0e(kappa),),
                                (_vonmises_dcdf_dkappa,)),
    "wald": Continuous((), lambda z: -1.5 / z - 0.5 + 0.5 / (z * z)),      # invgauss, mu = 1
    # c (-z)^(c-1) e^(-(-z)^c) (z < 0); F = exp(-(-z)^c)
    "weibull_max": Continuous(("c",), lambda z, c: (c - 1) / z + c * (-z) ** (c - 1),
                              (lambda z, c: 1 / c + np.log(-z) * (1 - (-z) ** c),),
                              (lambda z, c: -np.exp(-(-z) ** c) * (-z) ** c * np.log(-z),)),
    # (1 - c^2)/(2 pi (1 + c^2 - 2 c cos z)); F = atan(r tan(z/2))/pi on [0, pi),
    # r = (1 + c)/(1 - c), and its mirror image on [pi, 2 pi]: one partial in c on both
    "wrapcauchy": Continuous(("c",),
                             lambda z, c: -2 * c * np.sin(z) / (1 + c * c - 2 * c * np.cos(z)),
                             (lambda z, c: -2 * c / (1 - c * c)
                              - 2 * (c - np.cos(z)) / (1 + c * c - 2 * c * np.cos(z)),),
                             (lambda z, c: np.sin(z)
                              / (np.pi * (1 + c * c - 2 * c * np.cos(z))),)),
    # noncentral chi-squared: f = e^(-(z + nc)/2) (z/nc)^(v/2) I_v(sqrt(nc z))/2, v = df/2 - 1,
    # and d/dnc of f or F(z; df, nc) = (that at df + 2, less that at df)/2; no derivative in df
    "ncx2": Continuous(("df", "nc"), _ncx2_dlogf_dz,
                       (None, lambda z, df, nc: (np.exp(_ncx2_logpdf(z, df + 2, nc)
                                                        - _ncx2_logpdf(z, df, nc)) - 1) / 2),
                       (None, lambda z, df, nc: (_ncx2_cdf(z, df + 2, nc)
                                                 - _ncx2_cdf(z, df, nc)) / 2)),
    # z^(p-1) e^(-b (z + 1/z)/2)/(2 K_p(b)); K_p's derivative in its order p is not known here
    "geninvgauss": Continuous(("p", "b"), lambda z, p, b: (p - 1) / z - b * (1 - 1 / (z * z)) / 2,
                              (None, lambda z, p, b: (sps.kve(p - 1, b) + sps.kve(p + 1, b))
                               / (2 * sps.kve(p, b)) - (z + 1 / z) / 2),
                              (None, None)),
    # SciPy's cdf is P(a, t) or Q(a, t) of a shape a = 4/skew^2 beyond gammainc_da's series
    "pearson3": Continuous(("skew",), lambda z, skew: -(z + skew / 2) / (1 + skew * z / 2),
                           (_pearson3_dlogf_ds,), (None,)),
    # a Gaussian core and a power-law tail below -beta (crystalball's two parts above)
    "crystalball": Continuous(("beta", "m"),
                              lambda z, beta, m: np.where(
                                  z > -beta, -z, m / _crystalball_tail(z, beta, m)),
                              (_crystalball_dlogf(0), _crystalball_dlogf(1)),
                              (_crystalball_dcdf(0), _crystalball_dcdf(1))),
    # Jones and Faddy's skew t: (1 + r)^(a + 1/2) (1 - r)^(b + 1/2)/C, r = z/sqrt(a + b + z^2)
    "jf_skew_t": Continuous(("a", "b"), _jf_skew_t_dlogf_dz,
                            (_jf_skew_t_dlogf(0), _jf_skew_t_dlogf(1)), (None, None)),
}
CONTINUOUS["reciprocal"] = CONTINUOUS["loguniform"]  # one distribution, two names

# Only the distributions of the installed SciPy (jf_skew_t and truncweibull_min are newer than
# some releases chainrules admits).
CONTINUOUS = {name: table for name, table in CONTINUOUS.items() if hasattr(st, name)}


# (distribution, parameter) -> the cdf partial from ``chainrules.rules.scipy.special.parameters``
# (``special``): derivatives of gammainc in a and betainc in a, b, computed by converged series
# there.
CDF_VIA_SPECIAL: dict = {
    ("gamma", "a"): lambda special: lambda z, a: special.gammainc_da(a, z),
    ("erlang", "a"): lambda special: lambda z, a: special.gammainc_da(a, z),
    ("invgamma", "a"): lambda special: lambda z, a: special.gammaincc_da(a, 1 / z),
    ("chi2", "df"): lambda special: lambda z, df: 0.5 * special.gammainc_da(df / 2, z / 2),
    ("chi", "df"): lambda special: lambda z, df: 0.5 * special.gammainc_da(df / 2, z * z / 2),
    ("nakagami", "nu"): lambda special: lambda z, nu: (special.gammainc_da(nu, nu * z * z)
                                                       + _gamma_density(nu, nu * z * z) * z * z),
    ("loggamma", "c"): lambda special: lambda z, c: special.gammainc_da(c, np.exp(z)),
    ("dgamma", "a"): lambda special: lambda z, a: np.sign(z) * special.gammainc_da(
        a, np.abs(z)) / 2,
    ("gengamma", "a"): lambda special: lambda z, a, c: np.where(
        c > 0, special.gammainc_da(a, z ** c), special.gammaincc_da(a, z ** c)),
    ("halfgennorm", "beta"): lambda special: lambda z, beta: (
        -special.gammainc_da(1 / beta, z ** beta) / (beta * beta)
        + _gamma_density(1 / beta, z ** beta) * sps.xlogy(z ** beta, z)),
    ("beta", "a"): lambda special: lambda z, a, b: special.betainc_da(a, b, z),
    ("beta", "b"): lambda special: lambda z, a, b: special.betainc_db(a, b, z),
    ("betaprime", "a"): lambda special: lambda z, a, b: special.betainc_da(a, b, z / (1 + z)),
    ("betaprime", "b"): lambda special: lambda z, a, b: special.betainc_db(a, b, z / (1 + z)),
    ("rdist", "c"): lambda special: lambda z, c: 0.5 * (
        special.betainc_da(c / 2, c / 2, (z + 1) / 2)
        + special.betainc_db(c / 2, c / 2, (z + 1) / 2)),
    ("jf_skew_t", "a"): lambda special: lambda z, a, b: _jf_skew_t_dcdf(special, z, a, b, 0),
    ("jf_skew_t", "b"): lambda special: lambda z, a, b: _jf_skew_t_dcdf(special, z, a, b, 1),
    ("t", "df"): lambda special: lambda z, df: _t_dcdf_ddf(special, z, df),
    ("gennorm", "beta"): lambda special: lambda z, beta: _gennorm_dcdf_dbeta(special, z, beta),
    ("f", "dfn"): lambda special: lambda z, n, m: _f_dcdf(special, z, n, m, True),
    ("f", "dfd"): lambda special: lambda z, n, m: _f_dcdf(special, z, n, m, False),
}


def _jf_skew_t_dcdf(special: Any, z: Any, a: Any, b: Any, which: int) -> Any:
    """F = I_w(a, b), w = (1 + r)/2."""
    r, dr, _ = _jf_skew_t_parts(z, a, b)
    w = (1 + r) / 2
    own = special.betainc_da(a, b, w) if which == 0 else special.betainc_db(a, b, w)
    return own + _beta_density(a, b, w) * dr / 2
