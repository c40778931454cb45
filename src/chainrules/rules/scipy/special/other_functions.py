"""Rules for more of ``scipy.special``, beyond what jax.scipy.special and autograd have:
exponential integrals (``exp1``, ``expi``, ``expn``), divergences (``kl_div``,
``rel_entr``), ``poch``, ``spence``, ``hyp1f1`` (in ``x``), ``hyp0f1`` (in ``z``), ``hyperu``
and ``wright_bessel`` (in ``x``), Box-Cox
transforms (``boxcox``, ``boxcox1p``, ``inv_boxcox``, ``inv_boxcox1p``), the normal's parameters
from a quantile (``nrdtrimn``, ``nrdtrisd``), Owen's T, ``exprel``, the elliptic integrals (``ellipk``,
``ellipe``, ``ellipkm1``, the incomplete ``ellipkinc`` and ``ellipeinc``), the Faddeeva
function ``wofz`` and the Voigt profile, ``hyp2f1`` (in ``z``), the robust losses ``huber``
and ``pseudo_huber``, ``erfi``, ``wrightomega``, ``powm1``, ``cosm1``, ``exp2``, ``exp10``,
the degree-argument ``sindg``, ``cosdg``, ``tandg``, ``cotdg``, ``radian``, the
arithmetic-geometric mean ``agm``, and the functions of several outputs ``sici``, ``shichi``,
``fresnel``, ``airy`` and ``ellipj`` (in ``u``; its ``m`` is refused by name) (registered
when SciPy is installed).

Each is one `scalar_rule` line: its partials are functions of ``(y, *args)`` written with
calls that have rules themselves, so every rule here can be differentiated again. Where SciPy
has a complex loop (``exp1``, ``expi``, ``spence``, ``hyp1f1``, ``hyp2f1``, ``wofz``,
``erfi``, ``wrightomega``) the partial is the holomorphic derivative. Integer orders
(``expn``'s ``n``) have no tangent; the parameters of ``hyp1f1`` and ``hyp2f1`` have no
practical derivative and are refused by name when differentiated. Where a partial has a
removable singularity (``ellipk`` at m = 0, ``spence`` at z = 1) it takes its series there, so
that second derivatives are right at the point as well (``ellipk`` and ``ellipe`` for
``|m| < 1e-3``, where the closed form loses digits to cancellation).

>>> import numpy as np, scipy.special
>>> from chainrules import rrule
>>> y, pullback = rrule(scipy.special.exp1, 1.0)
>>> bool(np.isclose(pullback(1.0)[1], -np.exp(-1.0)))     # d/dx E1(x) = -exp(-x)/x
True
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import scipy.special as sps

from ....core.scalar_rule import scalar_rule
from ....core.tangents import AbstractZero
from ...define import Call, define
from ...refused_arguments import scalar_rule_refusing

__all__: list = []

_SQRT_PI = float(np.sqrt(np.pi))
_DEGREE = np.pi / 180


def _expn_x(y: Any, n: Any, x: Any) -> Any:
    """d/dx E_n(x) = -E_{n-1}(x); for n = 0, E_0(x) = exp(-x)/x."""
    previous = sps.expn(np.maximum(n - 1, 0), x)
    return np.where(n > 0, -previous, -y * (1 + 1 / x))


def _spence(y: Any, z: Any) -> Any:
    """d/dz spence(z) = log(z) / (1 - z) (SciPy's convention); at z = 1 its series
    -1 + (z - 1) / 2, so that the second derivative is right there too."""
    at_one = z == 1
    safe = np.where(at_one, 2.0, z)
    return np.where(at_one, -1.0 + (z - 1) / 2, np.log(safe) / (1 - safe))


def _boxcox_lambda(y: Any, x: Any, lmbda: Any) -> Any:
    """d/dλ (x^λ - 1)/λ = (x^λ log x - y)/λ; near λ = 0, where that cancels, its series
    L^2/2 + λ L^3/3 + λ^2 L^4/8 + λ^3 L^5/30 (L = log x), which is also right to
    differentiate again at λ = 0."""
    small = np.abs(lmbda) < 1e-3
    safe = np.where(small, 1.0, lmbda)
    log_x = np.log(x)
    series = log_x * log_x * (0.5 + lmbda * log_x * (1 / 3 + lmbda * log_x * (
        1 / 8 + lmbda * log_x / 30)))
    return np.where(small, series, (np.exp(safe * log_x) * log_x - y) / safe)


def _boxcox1p_lambda(y: Any, x: Any, lmbda: Any) -> Any:
    return _boxcox_lambda(y, 1 + x, lmbda)


def _inv_boxcox_y(x: Any, y: Any, lmbda: Any) -> Any:
    """d/dy (λy + 1)^(1/λ) = x / (λy + 1)."""
    return x / (lmbda * y + 1)


def _inv_boxcox_lambda(x: Any, y: Any, lmbda: Any) -> Any:
    """d/dλ (λy + 1)^(1/λ) = x (y / (λ(λy + 1)) - log(λy + 1)/λ^2); near λ = 0, where that
    cancels, x (-y^2/2 + 2λ y^3/3 - 3λ^2 y^4/4 + 4λ^3 y^5/5) from the series of
    log(1 + λy)/λ."""
    small = np.abs(lmbda) < 1e-3
    safe = np.where(small, 1.0, lmbda)
    base = safe * y + 1
    series = x * y * y * (-0.5 + lmbda * y * (2 / 3 + lmbda * y * (-0.75 + lmbda * y * 0.8)))
    return np.where(small, series, x * (y / (safe * base) - np.log(base) / (safe * safe)))


def _owens_t_h(y: Any, h: Any, a: Any) -> Any:
    """dT/dh = -φ(h) erf(a h / √2) / 2."""
    return -np.exp(-h * h / 2) / np.sqrt(2 * np.pi) * sps.erf(a * h / np.sqrt(2)) / 2


def _owens_t_a(y: Any, h: Any, a: Any) -> Any:
    """dT/da = exp(-h^2 (1 + a^2) / 2) / (2π (1 + a^2))."""
    return np.exp(-h * h * (1 + a * a) / 2) / (2 * np.pi * (1 + a * a))


def _exprel(y: Any, x: Any) -> Any:
    """d/dx (e^x - 1)/x = (e^x - y)/x, by its series 1/2 + x/3 + x^2/8 near 0."""
    small = np.abs(x) < 1e-3
    safe = np.where(small, 1.0, x)
    return np.where(small, 0.5 + x / 3 + x * x / 8, (np.exp(safe) - y) / safe)


# dK/dm and dE/dm as power series in m (coefficients n c_n and -n c_n / (2n - 1), c_n the
# squared central binomial coefficient over 4^n): near m = 0 the closed forms below lose
# eps/m of their digits to cancellation; below |m| = 1e-3 seven terms are exact to rounding,
# and their derivatives are right too (at m = 0 as well).
_K_SLOPE = (1 / 4, 9 / 32, 75 / 256, 1225 / 4096, 19845 / 65536, 160083 / 524288,
            1288287 / 4194304)
_E_SLOPE = (-1 / 4, -3 / 32, -15 / 256, -175 / 4096, -2205 / 65536, -14553 / 524288,
            -99099 / 4194304)


def _series(coefficients: tuple, m: Any) -> Any:
    total: Any = 0 * m + coefficients[-1]
    for coefficient in coefficients[-2::-1]:
        total = total * m + coefficient
    return np.pi / 2 * total


def _ellipk(y: Any, m: Any) -> Any:
    """dK/dm = (E - (1 - m) K) / (2 m (1 - m)); its series near m = 0."""
    small = np.abs(m) < 1e-3
    safe = np.where(small, 0.5, m)
    return np.where(small, _series(_K_SLOPE, m),
                    (sps.ellipe(safe) - (1 - safe) * y) / (2 * safe * (1 - safe)))


def _ellipe(y: Any, m: Any) -> Any:
    """dE/dm = (E - K) / (2 m); its series near m = 0."""
    small = np.abs(m) < 1e-3
    safe = np.where(small, 0.5, m)
    return np.where(small, _series(_E_SLOPE, m),
                    (sps.ellipe(safe) - sps.ellipk(safe)) / (2 * safe))


# --- the table ----------------------------------------------------------------------------------

scalar_rule(sps.exp1, lambda y, x: -np.exp(-x) / x)
scalar_rule(sps.expi, lambda y, x: np.exp(x) / x)
if hasattr(sps._ufuncs, "_scaled_exp1"):  # x e^x E1(x), of gompertz's and invgauss' entropy
    scalar_rule(sps._ufuncs._scaled_exp1, lambda y, x: y * (1 + x) / x - 1)
scalar_rule(sps.expn, None, _expn_x)
scalar_rule(sps.kl_div, lambda y, x, t: np.log(x / t), lambda y, x, t: 1 - x / t)
scalar_rule(sps.rel_entr, lambda y, x, t: np.log(x / t) + 1, lambda y, x, t: -x / t)
scalar_rule(sps.poch, lambda y, z, m: y * (sps.digamma(z + m) - sps.digamma(z)),
            lambda y, z, m: y * sps.digamma(z + m))
scalar_rule(sps.spence, _spence)
scalar_rule_refusing(sps.hyp1f1, "scipy.special.hyp1f1",
                     (None, None, lambda y, a, b, x: a / b * sps.hyp1f1(a + 1, b + 1, x)),
                     {0: ("a", "no closed form (a double series in a)"),
                      1: ("b", "no closed form (a double series in b)")})
scalar_rule(sps.boxcox, lambda y, x, lmbda: np.power(x, lmbda - 1), _boxcox_lambda)
scalar_rule(sps.boxcox1p, lambda y, x, lmbda: np.power(1 + x, lmbda - 1), _boxcox1p_lambda)
scalar_rule(sps.inv_boxcox, _inv_boxcox_y, _inv_boxcox_lambda)
scalar_rule(sps.inv_boxcox1p, lambda y, x, lmbda: _inv_boxcox_y(y + 1, x, lmbda),  # inv_boxcox - 1
            lambda y, x, lmbda: _inv_boxcox_lambda(y + 1, x, lmbda))
# d/dx of Tricomi's U and Wright's generalized Bessel function, in their own family
scalar_rule_refusing(sps.hyperu, "scipy.special.hyperu",
                     (None, None, lambda y, a, b, x: -a * sps.hyperu(a + 1, b + 1, x)),
                     {0: ("a", "no closed form (an integral in a)"),
                      1: ("b", "no closed form (an integral in b)")})
scalar_rule_refusing(sps.wright_bessel, "scipy.special.wright_bessel",
                     (None, None, lambda y, a, b, x: sps.wright_bessel(a, a + b, x)),
                     {0: ("a", "no closed form (a series in a)"),
                      1: ("b", "no closed form (a series in b)")})
# SciPy 1.14 has it, and wrong: log_wright_bessel(1, 2, 1.5) = 1.96, not log(wright_bessel(...))
# = 0.674 (1.15 has it right); its rule is registered where the two agree
if hasattr(sps, "log_wright_bessel") and abs(
        sps.log_wright_bessel(1.0, 2.0, 1.5) - np.log(sps.wright_bessel(1.0, 2.0, 1.5))) < 1e-12:
    scalar_rule_refusing(sps.log_wright_bessel, "scipy.special.log_wright_bessel",
                         (None, None, lambda y, a, b, x: np.exp(
                             sps.log_wright_bessel(a, a + b, x) - y)),
                         {0: ("a", "no closed form (a series in a)"),
                          1: ("b", "no closed form (a series in b)")})
scalar_rule_refusing(sps.hyp0f1, "scipy.special.hyp0f1",
                     (None, lambda y, v, z: sps.hyp0f1(v + 1, z) / v),
                     {0: ("v", "no closed form (a series in v)")})
# the normal distribution's mean and standard deviation from a quantile: x - std ndtri(p) and
# (x - mn)/ndtri(p); d ndtri(p)/dp = sqrt(2 pi) exp(ndtri(p)^2 / 2)
scalar_rule(sps.nrdtrimn,
            lambda y, p, std, x: -std * np.sqrt(2 * np.pi) * np.exp(sps.ndtri(p) ** 2 / 2),
            lambda y, p, std, x: -sps.ndtri(p), lambda y, p, std, x: 1 + 0 * y)
scalar_rule(sps.nrdtrisd, lambda y, mn, p, x: -1 / sps.ndtri(p),
            lambda y, mn, p, x: -y / sps.ndtri(p) * np.sqrt(2 * np.pi)
            * np.exp(sps.ndtri(p) ** 2 / 2),
            lambda y, mn, p, x: 1 / sps.ndtri(p))
scalar_rule(sps.owens_t, _owens_t_h, _owens_t_a)
scalar_rule(sps.exprel, _exprel)
scalar_rule(sps.ellipk, _ellipk)
scalar_rule(sps.ellipe, _ellipe)
scalar_rule(sps.wofz, lambda y, z: -2 * z * y + 2j / _SQRT_PI)
# lambertw(z, k, tol): SciPy's Python function calls this ufunc, so its rule serves it.
# z = W e^W, so dW/dz = 1 / (e^W (1 + W)): finite at z = 0 (1), on every branch k.
scalar_rule(sps._ufuncs._lambertw, lambda y, z, k, tol: 1 / (np.exp(y) * (1 + y)), None, None)
scalar_rule(sps.sindg, lambda y, x: _DEGREE * sps.cosdg(x))
scalar_rule(sps.cosdg, lambda y, x: -_DEGREE * sps.sindg(x))


# --- robust losses, exponentials, angles --------------------------------------------------------

def _huber_delta(y: Any, delta: Any, r: Any) -> Any:
    """d/ddelta: 0 inside |r| <= delta (r^2/2), |r| - delta outside (delta (|r| - delta/2))."""
    return np.where(np.abs(r) <= delta, 0.0 * r, np.abs(r) - delta)


def _huber_r(y: Any, delta: Any, r: Any) -> Any:
    return np.where(np.abs(r) <= delta, r, delta * np.sign(r))


def _pseudo_huber_delta(y: Any, delta: Any, r: Any) -> Any:
    """delta^2 (s - 1), s = sqrt(1 + (r/delta)^2): d/ddelta = 2 delta (s - 1) - r^2 / (delta s)."""
    s = np.sqrt(1 + (r / delta) ** 2)
    return 2 * delta * (s - 1) - r * r / (delta * s)


# --- incomplete elliptic integrals, hypergeometric 2F1, Voigt profile --------------------------

def _sine_powers(phi: Any) -> tuple:
    """``(int_0^phi sin^2, int_0^phi sin^4)``: the coefficients of m in the series of the
    incomplete elliptic integrals at m = 0."""
    return ((2 * phi - np.sin(2 * phi)) / 4,
            3 * phi / 8 - np.sin(2 * phi) / 4 + np.sin(4 * phi) / 32)


def _ellipkinc_m(y: Any, phi: Any, m: Any) -> Any:
    """dF/dm = E / (2 m (1 - m)) - F / (2 m) - sin(2 phi) / (4 (1 - m) D), D = sqrt(1 -
    m sin^2 phi); at m = 0 the series S2 / 2 + 3 m S4 / 4 (S_k = int_0^phi sin^k), whose
    derivative in m is right there too."""
    at_zero = m == 0
    safe = np.where(at_zero, 0.5, m)
    root = np.sqrt(1 - safe * np.sin(phi) ** 2)
    general = (sps.ellipeinc(phi, safe) / (2 * safe * (1 - safe)) - y / (2 * safe)
               - np.sin(2 * phi) / (4 * (1 - safe) * root))
    squares, fourths = _sine_powers(phi)
    return np.where(at_zero, squares / 2 + 0.75 * m * fourths, general)


def _ellipeinc_m(y: Any, phi: Any, m: Any) -> Any:
    """dE/dm = (E - F) / (2 m); at m = 0 the series -S2 / 2 - m S4 / 4."""
    at_zero = m == 0
    safe = np.where(at_zero, 0.5, m)
    squares, fourths = _sine_powers(phi)
    return np.where(at_zero, -squares / 2 - 0.25 * m * fourths,
                    (y - sps.ellipkinc(phi, safe)) / (2 * safe))


def _ellipkm1(y: Any, p: Any) -> Any:
    """K(1 - p): -dK/dm at m = 1 - p, -(E - p K) / (2 p (1 - p)) with K = y to full accuracy
    near p = 0 (where 1 - p would round); the series near p = 1."""
    small = np.abs(1 - p) < 1e-3
    safe = np.where(small, 0.5, p)
    return np.where(small, -_series(_K_SLOPE, 1 - p),
                    -(sps.ellipe(1 - safe) - safe * y) / (2 * safe * (1 - safe)))


_SQRT_2 = float(np.sqrt(2.0))


def _voigt_parts(x: Any, sigma: Any, gamma: Any) -> tuple:
    """``(z, w'(z), scale)``: V = Re w(z) * scale, z = (x + i gamma) / (sigma sqrt 2),
    scale = 1 / (sigma sqrt(2 pi)), w' = -2 z w + 2i / sqrt(pi)."""
    z = (x + 1j * gamma) / (sigma * _SQRT_2)
    return z, -2 * z * sps.wofz(z) + 2j / _SQRT_PI, 1 / (sigma * _SQRT_2 * _SQRT_PI)


def _voigt_x(y: Any, x: Any, sigma: Any, gamma: Any) -> Any:
    z, slope, scale = _voigt_parts(x, sigma, gamma)
    return np.real(slope) * scale / (sigma * _SQRT_2)


def _voigt_sigma(y: Any, x: Any, sigma: Any, gamma: Any) -> Any:
    z, slope, scale = _voigt_parts(x, sigma, gamma)
    return -y / sigma - np.real(slope * z) * scale / sigma


def _voigt_gamma(y: Any, x: Any, sigma: Any, gamma: Any) -> Any:
    z, slope, scale = _voigt_parts(x, sigma, gamma)
    return -np.imag(slope) * scale / (sigma * _SQRT_2)


scalar_rule(sps.huber, _huber_delta, _huber_r)
scalar_rule(sps.pseudo_huber, _pseudo_huber_delta,
            lambda y, delta, r: r / np.sqrt(1 + (r / delta) ** 2))
scalar_rule(sps.powm1, lambda y, x, p: p * np.power(x, p - 1),
            lambda y, x, p: (y + 1) * np.log(x))
scalar_rule(sps.cosm1, lambda y, x: -np.sin(x))
scalar_rule(sps.exp2, lambda y, x: np.log(2.0) * sps.exp2(x))
scalar_rule(sps.exp10, lambda y, x: np.log(10.0) * sps.exp10(x))
scalar_rule(sps.radian, lambda y, d, m, s: _DEGREE + 0 * d, lambda y, d, m, s: _DEGREE / 60 + 0 * m,
            lambda y, d, m, s: _DEGREE / 3600 + 0 * s)
scalar_rule(sps.tandg, lambda y, x: _DEGREE * (1 + sps.tandg(x) ** 2))
scalar_rule(sps.cotdg, lambda y, x: -_DEGREE * (1 + sps.cotdg(x) ** 2))
scalar_rule(sps.erfi, lambda y, z: 2 / _SQRT_PI * np.exp(z * z))
scalar_rule(sps.wrightomega, lambda y, z: sps.wrightomega(z) / (1 + sps.wrightomega(z)))
scalar_rule(sps.ellipkinc, lambda y, phi, m: 1 / np.sqrt(1 - m * np.sin(phi) ** 2),
            _ellipkinc_m)
scalar_rule(sps.ellipeinc, lambda y, phi, m: np.sqrt(1 - m * np.sin(phi) ** 2), _ellipeinc_m)
scalar_rule(sps.ellipkm1, _ellipkm1)
scalar_rule(sps.voigt_profile, _voigt_x, _voigt_sigma, _voigt_gamma)
scalar_rule_refusing(sps.hyp2f1, "scipy.special.hyp2f1",
                     (None, None, None,
                      lambda y, a, b, c, z: a * b / c * sps.hyp2f1(a + 1, b + 1, c + 1, z)),
                     {0: ("a", "no closed form (a double series in a)"),
                      1: ("b", "no closed form (a double series in b)"),
                      2: ("c", "no closed form (a double series in c)")})


# --- functions with several outputs, each a function of x: sici, shichi, fresnel, airy -------

def _several_outputs(f: Any, slopes: Callable) -> None:
    """Register ``f(x) -> (y_1, ..., y_k)`` whose derivatives ``slopes(x, ys)`` (one per output,
    holomorphic) are written in operations that have rules: ``dx = sum_k conj(y_k') dy_k``."""
    def back(call: Call, dys: list) -> Any:
        total: Any = 0
        for slope, dy in zip(slopes(call.a, call.y), dys):
            if not isinstance(dy, AbstractZero):
                total = total + np.conj(slope) * dy
        return total

    define(f, back, pushforward=lambda call, dx: tuple(
        slope * dx for slope in slopes(call.a, call.y)))


def _over_x(odd: Any, x: Any, at_zero_value: float = 1.0) -> Any:
    """``odd(x) / x``, ``at_zero_value`` (its limit: 1 for sin and sinh) at x = 0."""
    at_zero = x == 0
    safe = np.where(at_zero, 1.0, x)
    return np.where(at_zero, at_zero_value + 0 * x, odd(safe) / safe)


_several_outputs(sps.sici, lambda x, y: (_over_x(np.sin, x), np.cos(x) / x))
_several_outputs(sps.shichi, lambda x, y: (_over_x(np.sinh, x), np.cosh(x) / x))
_several_outputs(sps.fresnel, lambda x, y: (np.sin(np.pi / 2 * x * x), np.cos(np.pi / 2 * x * x)))
_several_outputs(sps.airy, lambda x, y: (y[1], x * y[0], y[3], x * y[2]))
# integrals from 0 to x (and from x to infinity: minus) of Bessel functions, whose
# derivatives are their integrands; (1 - J0(t))/t and (I0(t) - 1)/t tend to 0 at t = 0
_several_outputs(sps.itj0y0, lambda x, y: (sps.j0(x), sps.y0(x)))
_several_outputs(sps.iti0k0, lambda x, y: (sps.i0(x), sps.k0(x)))
_several_outputs(sps.it2j0y0, lambda x, y: (_over_x(lambda t: 1 - sps.j0(t), x, 0.0),
                                            -sps.y0(x) / x))
_several_outputs(sps.it2i0k0, lambda x, y: (_over_x(lambda t: sps.i0(t) - 1, x, 0.0),
                                            -sps.k0(x) / x))
# Kelvin functions as complex pairs, (Be, Ke, Be', Ke'): Be'' = -Be'/x + i Be (the same for Ke)
_several_outputs(sps.kelvin, lambda x, y: (y[2], y[3], -y[2] / x + 1j * y[0],
                                           -y[3] / x + 1j * y[1]))


# --- the arithmetic-geometric mean and Jacobi's elliptic functions ------------------------------

def _agm_slope(of_b: bool) -> Callable:
    """agm(a, b) = pi s / (4 K(k^2)), s = a + b, k = (a - b) / s: dM = pi / (4 K) ds -
    pi s K'(m) / (4 K^2) dm, with dm/da = 4 k b / s^2 and dm/db = -4 k a / s^2."""
    def slope(y: Any, a: Any, b: Any) -> Any:
        total = a + b
        k = (a - b) / total
        m = k * k
        elliptic = sps.ellipk(m)
        dm = (-4 * k * a if of_b else 4 * k * b) / (total * total)
        return np.pi / (4 * elliptic) - np.pi * total * _ellipk(elliptic, m) / (
            4 * elliptic * elliptic) * dm
    return slope


def _ellipj_u(call: Call, dys: list) -> Any:
    sn, cn, dn, _ = call.y
    m = call.args[1]
    total: Any = 0
    for slope, dy in zip((cn * dn, -sn * dn, -m * sn * cn, dn), dys):
        if not isinstance(dy, AbstractZero):
            total = total + slope * dy
    return total


def _ellipj_refused(*args: Any) -> Any:
    raise NotImplementedError(
        "scipy.special.ellipj: the derivative with respect to m (argument 2) is not "
        "implemented. Hold m constant (a number that is not differentiated); the derivative "
        "with respect to u is exact.")


def _ellipj_forward(call: Call, du: Any, dm: Any) -> tuple:
    if not isinstance(dm, AbstractZero):
        _ellipj_refused()
    sn, cn, dn, _ = call.y
    m = call.args[1]
    return tuple(slope * du for slope in (cn * dn, -sn * dn, -m * sn * cn, dn))


scalar_rule(sps.agm, _agm_slope(of_b=False), _agm_slope(of_b=True))
define(sps.ellipj, _ellipj_u, lambda call, dys: _ellipj_refused(), pushforward=_ellipj_forward)

