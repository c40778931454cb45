"""Rules for more of ``scipy.special``, beyond what jax.scipy.special and autograd have:
exponential integrals (``exp1``, ``expi``, ``expn``), divergences (``kl_div``,
``rel_entr``), ``poch``, ``spence``, ``hyp1f1`` (in ``x``), Box-Cox transforms (``boxcox``,
``boxcox1p``, ``inv_boxcox``), Owen's T, ``exprel``, the complete elliptic integrals
(``ellipk``, ``ellipe``), the Faddeeva function ``wofz`` and the degree-argument ``sindg`` /
``cosdg`` (registered when SciPy is installed).

Each is one `scalar_rule` line: its partials are functions of ``(y, *args)`` written with
calls that have rules themselves, so every rule here can be differentiated again. Where SciPy
has a complex loop (``exp1``, ``expi``, ``spence``, ``hyp1f1``, ``wofz``) the partial is the
holomorphic derivative. Integer orders (``expn``'s ``n``) have no tangent; ``hyp1f1``'s
parameters ``a`` and ``b`` have no practical derivative and are refused by name when
differentiated.

>>> import numpy as np, scipy.special
>>> from chainrules import rrule
>>> y, pullback = rrule(scipy.special.exp1, 1.0)
>>> bool(np.isclose(pullback(1.0)[1], -np.exp(-1.0)))     # d/dx E1(x) = -exp(-x)/x
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.special as sps

from ....core.scalar_rule import scalar_rule
from ...refused_arguments import scalar_rule_refusing

__all__: list = []

_SQRT_PI = float(np.sqrt(np.pi))
_DEGREE = np.pi / 180


def _expn_x(y: Any, n: Any, x: Any) -> Any:
    """d/dx E_n(x) = -E_{n-1}(x); for n = 0, E_0(x) = exp(-x)/x."""
    previous = sps.expn(np.maximum(n - 1, 0), x)
    return np.where(n > 0, -previous, -y * (1 + 1 / x))


def _spence(y: Any, z: Any) -> Any:
    """d/dz spence(z) = log(z) / (1 - z) (SciPy's convention), -1 at z = 1."""
    at_one = z == 1
    safe = np.where(at_one, 2.0, z)
    return np.where(at_one, -1.0, np.log(safe) / (1 - safe))


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


def _ellipk(y: Any, m: Any) -> Any:
    """dK/dm = (E - (1 - m) K) / (2 m (1 - m)), π/8 at m = 0."""
    at_zero = m == 0
    safe = np.where(at_zero, 0.5, m)
    return np.where(at_zero, np.pi / 8,
                    (sps.ellipe(safe) - (1 - safe) * y) / (2 * safe * (1 - safe)))


def _ellipe(y: Any, m: Any) -> Any:
    """dE/dm = (E - K) / (2 m), -π/8 at m = 0."""
    at_zero = m == 0
    safe = np.where(at_zero, 0.5, m)
    return np.where(at_zero, -np.pi / 8, (y - sps.ellipk(safe)) / (2 * safe))


# --- the table ----------------------------------------------------------------------------------

scalar_rule(sps.exp1, lambda y, x: -np.exp(-x) / x)
scalar_rule(sps.expi, lambda y, x: np.exp(x) / x)
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
