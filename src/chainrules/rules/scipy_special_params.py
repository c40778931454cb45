"""Derivatives of ``scipy.special`` functions in the parameters that have no closed form:
``gammainc``/``gammaincc`` in ``a``, ``betainc`` in ``a`` and ``b``, ``zeta(x, q)`` in ``x``.

Each is an elementwise function of its own, vectorised over broadcast arrays, importable by
name (the ``scipy.stats`` rules use them for the shape parameters of distribution functions):

- `gammainc_da` ``(a, x)`` = dP/da, `gammaincc_da` = dQ/da = -dP/da;
- `betainc_da`, `betainc_db` ``(a, b, x)`` = dI_x(a, b)/da, /db;
- `zeta_dx` ``(x, q)`` = d zeta(x, q)/dx = -sum_n log(n + q) (n + q)^-x.

The methods are converged expansions differentiated exactly in the parameter (forward mode
through the recurrence: each term carries its derivative), not finite differences:

- ``gammainc``: where ``x <= max(a, 1)``, the series P = x^a e^-x / Gamma(a+1) S with
  S = sum_n x^n / ((a+1)...(a+n)), so dP/da = x^a e^-x / Gamma(a+1) (S (log x - psi(a+1)) +
  dS/da); elsewhere Legendre's continued fraction Q = x^a e^-x / Gamma(a) F(a, x), so
  dQ/da = x^a e^-x / Gamma(a) (F (log x - psi(a)) + dF/da) (the choice Cephes makes for P
  and Q themselves). Both sums are of terms of one sign: no cancellation.
- ``betainc``: the continued fraction I_x(a, b) = x^a (1-x)^b / (a B(a, b)) F(a, b, x) where
  ``x < (a+1) / (a+b+2)``, and I_x(a, b) = 1 - I_{1-x}(b, a) elsewhere, differentiated in
  ``a`` and ``b`` the same way.
- ``zeta``: Euler-Maclaurin summation of -sum log(n+q) (n+q)^-x: ``N = 16`` terms
  summed directly, the tail as the integral, the half term and eight Bernoulli corrections
  (each the derivative in x of the corresponding term for zeta itself).

Continued fractions are evaluated by their convergents, rescaled as they go, until the value
and its derivatives change by less than 1e-16 relative (at most ``_MAX_TERMS`` terms; an
element that has not converged by then is NaN, never a silently wrong number).

Accuracy: about 1e-13 relative for parameters up to a few hundred (tests: 1e-10 against
Richardson-extrapolated finite differences and closed forms). It degrades where the result
is a small difference of large numbers: the prefactor x^a e^-x / Gamma(a) is computed as
``exp(a log x - x - gammaln(a))``, whose exponent loses about ``1e-16 * a log a``
(``1e-11`` at ``a = 1e4``); ``psi(a+b) - psi(a)`` in ``betainc`` loses ``1e-16 a / b``
relative when ``b << a``; the number of terms grows like ``sqrt(a)`` near ``x = a``. Outside
the functions' domains (``a <= 0``, ``x < 0``, ``x > 1`` for ``betainc``, ``x < 1`` or
``q <= 0`` for ``zeta``) the result is NaN, as SciPy's value is.

Their derivatives in ``x`` are closed forms (the density times a logarithm), with rules, so
the parameter derivatives can be differentiated again in ``x``; their derivatives in the
parameter itself (the second derivative in ``a``, ``b`` or the zeta order) are refused by
name (``NotImplementedError``).

They are NumPy-style functions: called on an engine's traced values, they hand themselves to
the values' ``__array_function__`` (NEP 18), so an engine records each call as one operation
and uses its rule, whatever the import style.

>>> import numpy as np
>>> float(np.round(zeta_dx(2.0, 1.0), 12))     # zeta'(2)
-0.937548254316
>>> import scipy.special as sps
>>> x = np.array([0.5, 2.0])     # P(1, x) = 1 - e^-x: dP/da = -e^-x (log x + gamma) - E1(x)
>>> expected = -np.exp(-x) * (np.log(x) + np.euler_gamma) - sps.exp1(x)
>>> bool(np.allclose(gammainc_da(1.0, x), expected, rtol=1e-13, atol=0))
True
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np
import scipy.special as sps

from ..core.dtypes import is_plain
from ..core.registry import recorded_whole
from ._refusing import scalar_rule_refusing

__all__ = ["gammainc_da", "gammaincc_da", "betainc_da", "betainc_db", "zeta_dx"]

_MAX_TERMS = 100_000
_TOLERANCE = 4e-16  # two units in the last place: converged to rounding
# B_2k / (2k)! for k = 1..8: the Euler-Maclaurin corrections
# The Euler-Maclaurin remainder after N direct terms and eight corrections is, relative to the
# result, about (q / (N+q))^x (x / (2 pi (N+q)))^16: below 1e-15 for every x > 1, q > 0 with
# N = 16 (a large x that makes the second factor big makes the first one vanish).
_ZETA_DIRECT_TERMS = 16
_BERNOULLI_OVER_FACTORIAL = (1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160,
                             -691 / 1307674368000, 1 / 74724249600,
                             -3617 / 10670622842880000)


# --- shared machinery ----------------------------------------------------------------------------

def _numpy_style(function: Callable) -> Callable:
    """``function`` made a NumPy-style function: given an argument that is not a plain number
    or array but has ``__array_function__`` (an engine's traced value), it hands the call to
    that (NEP 18), which records it as one operation; a primitive for engines otherwise."""
    @functools.wraps(function)
    def dispatching(*args: Any) -> Any:
        for value in args:
            if not is_plain(value):
                dispatch = getattr(type(value), "__array_function__", None)
                if dispatch is not None and dispatch is not np.ndarray.__array_function__:
                    return dispatch(value, dispatching, (type(value),), args, {})
        return function(*args)

    return recorded_whole(dispatching)


def _broadcast(*args: Any) -> tuple:
    """The arguments as float64 arrays of one broadcast shape, and the dtype of the result:
    what SciPy's ufunc gives (float32 stays float32, integers and Python numbers give
    float64)."""
    args = tuple(arg if isinstance(arg, (int, float, np.generic, np.ndarray))
                 else np.asarray(arg) for arg in args)
    dtype = np.result_type(*args)
    if dtype.kind in "biu":
        dtype = np.dtype(np.float64)
    elif dtype.kind != "f":
        raise TypeError(f"the arguments must be real numbers, got {dtype}")
    arrays = np.broadcast_arrays(*[np.asarray(arg, np.float64) for arg in args])
    return tuple(np.array(array) for array in arrays), dtype


def _result(values: np.ndarray, dtype: np.dtype) -> Any:
    """``values`` in the result dtype; a 0-d result as a NumPy scalar, as a ufunc gives it."""
    return values.astype(dtype, copy=False)[()]


def _until_converged(state: dict, step: Callable, done: Callable, size: int) -> dict:
    """Run ``step(state, n)`` for n = 1, 2, ... on the elements not yet ``done``; each array
    of ``state`` (1-d, one entry per element, or with a leading axis of derivatives) is
    updated in place of the elements it still runs. Returns the final states, elements that
    did not converge within `_MAX_TERMS` terms set to NaN."""
    final = {key: np.full_like(value, np.nan) for key, value in state.items()}
    active = np.arange(size)
    for n in range(1, _MAX_TERMS + 1):
        if not active.size:
            break
        state = step(state, n)
        finished = done(state)
        if finished.any():
            for key, value in state.items():
                final[key][..., active[finished]] = value[..., finished]
            keep = ~finished
            active = active[keep]
            state = {key: value[..., keep] for key, value in state.items()}
    return final


def _continued_fraction(coefficients: Callable, count: int, size: int) -> tuple:
    """``F = alpha_1 / (beta_1 + alpha_2 / (beta_2 + ...))`` and its derivatives in
    ``count`` parameters, elementwise; ``coefficients(n, active)`` gives ``(alpha_n,
    dalpha_n, beta_n, dbeta_n)`` for the still running elements ``active`` (derivatives with
    a leading axis of length ``count``).

    The convergents A_n / B_n follow A_n = beta_n A_(n-1) + alpha_n A_(n-2) (and B_n alike),
    their derivatives by the product rule, all four rescaled by 1 / |B_n| at each step (a
    constant factor changes neither A/B nor its derivatives)."""
    state = {
        "index": np.arange(size).astype(np.float64),
        "a_prev": np.ones(size), "a": np.zeros(size),            # A_(-1), A_0
        "b_prev": np.zeros(size), "b": np.ones(size),            # B_(-1), B_0
        "da_prev": np.zeros((count, size)), "da": np.zeros((count, size)),
        "db_prev": np.zeros((count, size)), "db": np.zeros((count, size)),
        "f": np.zeros(size), "df": np.zeros((count, size)),
        "converged": np.zeros(size, bool),
    }

    def step(s: dict, n: int) -> dict:
        alpha, dalpha, beta, dbeta = coefficients(n, s["index"].astype(np.intp))
        a = beta * s["a"] + alpha * s["a_prev"]
        b = beta * s["b"] + alpha * s["b_prev"]
        da = dbeta * s["a"] + beta * s["da"] + dalpha * s["a_prev"] + alpha * s["da_prev"]
        db = dbeta * s["b"] + beta * s["db"] + dalpha * s["b_prev"] + alpha * s["db_prev"]
        scale = np.abs(b)
        scale[scale == 0] = 1.0
        a, b, da, db = a / scale, b / scale, da / scale, db / scale
        with np.errstate(divide="ignore", invalid="ignore"):
            f = a / b
            df = (da - f * db) / b
            # (comparisons, not ratios: a value that stays exactly 0 has converged)
            converged = (np.abs(f - s["f"]) <= _TOLERANCE * np.abs(f)) & np.all(
                np.abs(df - s["df"]) <= _TOLERANCE * np.abs(df), axis=0)
        return {"index": s["index"], "a_prev": s["a"] / scale, "a": a,
                "b_prev": s["b"] / scale, "b": b, "da_prev": s["da"] / scale, "da": da,
                "db_prev": s["db"] / scale, "db": db, "f": f, "df": df, "converged": converged}

    final = _until_converged(state, step, lambda s: s["converged"], size)
    return final["f"], final["df"]


# --- gammainc ------------------------------------------------------------------------------------

def _gammainc_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dP/da from P = x^a e^-x / Gamma(a+1) sum_n t_n, t_n = x^n / ((a+1)...(a+n)), where
    x <= max(a, 1) (the terms shrink from the first one on)."""
    size = a.size
    state = {"index": np.arange(size).astype(np.float64), "t": np.ones(size),
             "dt": np.zeros(size), "s": np.ones(size), "ds": np.zeros(size)}

    def step(st: dict, n: int) -> dict:
        i = st["index"].astype(np.intp)
        denominator = a[i] + n
        t = st["t"] * x[i] / denominator
        dt = (st["dt"] * x[i] - t) / denominator     # d/da of t_(n-1) x / (a + n)
        return {"index": st["index"], "t": t, "dt": dt, "s": st["s"] + t, "ds": st["ds"] + dt}

    def done(st: dict) -> np.ndarray:
        return (st["t"] <= _TOLERANCE * st["s"]) & (np.abs(st["dt"]) <= _TOLERANCE
                                                     * np.abs(st["ds"]))

    final = _until_converged(state, step, done, size)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_x = np.log(x)
        prefactor = np.exp(a * log_x - x - sps.gammaln(a + 1))
        return prefactor * (final["s"] * (log_x - sps.digamma(a + 1)) + final["ds"])


def _gammaincc_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dQ/da from Legendre's continued fraction Q = x^a e^-x / Gamma(a) F, F =
    1 / (x+1-a - 1(1-a) / (x+3-a - 2(2-a) / (x+5-a - ...))), where x > max(a, 1)."""
    def coefficients(n: int, i: np.ndarray) -> tuple:
        ai, xi = a[i], x[i]
        if n == 1:
            alpha, dalpha = np.ones_like(ai), np.zeros((1, ai.size))
        else:
            alpha, dalpha = -(n - 1) * (n - 1 - ai), np.full((1, ai.size), n - 1.0)
        return alpha, dalpha, xi + 2 * n - 1 - ai, np.full((1, ai.size), -1.0)

    f, df = _continued_fraction(coefficients, 1, a.size)
    log_x = np.log(x)
    prefactor = np.exp(a * log_x - x - sps.gammaln(a))
    return prefactor * (f * (log_x - sps.digamma(a)) + df[0])


@_numpy_style
def gammainc_da(a: Any, x: Any) -> Any:
    """The derivative of the regularized lower incomplete gamma function
    ``P(a, x) = scipy.special.gammainc(a, x)`` with respect to ``a``, elementwise.

    A converged series (x <= max(a, 1)) or continued fraction, differentiated term by term
    (see the module's docstring for the method and its accuracy). ``a > 0``, ``x >= 0``.

    >>> import numpy as np, scipy.special as sps
    >>> x = 1.5          # P(1, x) = 1 - e^-x: dP/da = -e^-x (log x + gamma) - E1(x) at a = 1
    >>> expected = -np.exp(-x) * (np.log(x) + np.euler_gamma) - sps.exp1(x)
    >>> bool(np.isclose(gammainc_da(1.0, x), expected, rtol=1e-13, atol=0))
    True
    """
    (a, x), dtype = _broadcast(a, x)
    out = np.full(a.shape, np.nan)
    valid = (a > 0) & (x >= 0)
    edge = valid & ((x == 0) | np.isinf(x))  # P is 0 or 1 there for every a
    out[edge] = 0.0
    interior = valid & ~edge
    fraction = interior & (x > 1) & (x > a)
    series = interior & ~fraction
    out[series] = _gammainc_series(a[series], x[series])
    out[fraction] = -_gammaincc_fraction(a[fraction], x[fraction])
    return _result(out, dtype)


@_numpy_style
def gammaincc_da(a: Any, x: Any) -> Any:
    """The derivative of the regularized upper incomplete gamma function
    ``Q(a, x) = scipy.special.gammaincc(a, x)`` with respect to ``a``: ``-gammainc_da``.

    >>> import numpy as np
    >>> bool(gammaincc_da(2.0, 3.0) == -gammainc_da(2.0, 3.0))
    True
    """
    return -gammainc_da(a, x)


# --- betainc -------------------------------------------------------------------------------------

def _betainc_fraction(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> tuple:
    """dI/da and dI/db from I_x(a, b) = x^a (1-x)^b / (a B(a, b)) F, where
    F = 1 / (1 + d_1 / (1 + d_2 / (1 + ...))), d_2m+1 = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1)),
    d_2m = m (b-m) x / ((a+2m-1)(a+2m)); for x < (a+1) / (a+b+2)."""
    def coefficients(n: int, i: np.ndarray) -> tuple:
        ai, bi, xi = a[i], b[i], x[i]
        beta, dbeta = np.ones_like(ai), np.zeros((2, ai.size))
        if n == 1:
            return np.ones_like(ai), np.zeros((2, ai.size)), beta, dbeta
        k = n - 1  # alpha_n = d_k
        m = k // 2
        if k % 2:  # odd: d_2m+1
            low, high = ai + 2 * m, ai + 2 * m + 1
            alpha = -(ai + m) * (ai + bi + m) * xi / (low * high)
            dalpha = np.stack([
                -xi * ((ai + bi + m) + (ai + m)) / (low * high) - alpha * (1 / low + 1 / high),
                -xi * (ai + m) / (low * high)])
        else:      # even: d_2m
            low, high = ai + 2 * m - 1, ai + 2 * m
            alpha = m * (bi - m) * xi / (low * high)
            dalpha = np.stack([-alpha * (1 / low + 1 / high), m * xi / (low * high)])
        return alpha, dalpha, beta, dbeta

    f, df = _continued_fraction(coefficients, 2, a.size)
    log_x, log_1mx = np.log(x), np.log1p(-x)
    psi_ab = sps.digamma(a + b)
    prefactor = np.exp(a * log_x + b * log_1mx - np.log(a) - sps.betaln(a, b))
    da = prefactor * (f * (log_x - 1 / a - sps.digamma(a) + psi_ab) + df[0])
    db = prefactor * (f * (log_1mx - sps.digamma(b) + psi_ab) + df[1])
    return da, db


def _betainc_gradient(a: Any, b: Any, x: Any) -> tuple:
    """``(dI/da, dI/db, dtype)`` elementwise, as float64 arrays."""
    (a, b, x), dtype = _broadcast(a, b, x)
    da, db = np.full(a.shape, np.nan), np.full(a.shape, np.nan)
    valid = (a > 0) & (b > 0) & (x >= 0) & (x <= 1)
    edge = valid & ((x == 0) | (x == 1))  # I is 0 or 1 there for every a, b
    da[edge] = db[edge] = 0.0
    interior = valid & ~edge
    direct = interior & (x < (a + 1) / (a + b + 2))
    da[direct], db[direct] = _betainc_fraction(a[direct], b[direct], x[direct])
    swapped = interior & ~direct  # I_x(a, b) = 1 - I_(1-x)(b, a)
    d_second, d_first = _betainc_fraction(b[swapped], a[swapped], 1 - x[swapped])
    da[swapped], db[swapped] = -d_first, -d_second
    return da, db, dtype


@_numpy_style
def betainc_da(a: Any, b: Any, x: Any) -> Any:
    """The derivative of the regularized incomplete beta function
    ``I_x(a, b) = scipy.special.betainc(a, b, x)`` with respect to ``a``, elementwise.

    A converged continued fraction differentiated term by term (see the module's docstring).
    ``a, b > 0``, ``0 <= x <= 1``.

    >>> import numpy as np
    >>> x = 0.3          # I_x(a, 1) = x^a: the derivative is x^a log x
    >>> bool(np.isclose(betainc_da(2.5, 1.0, x), x ** 2.5 * np.log(x), rtol=1e-13))
    True
    """
    da, _, dtype = _betainc_gradient(a, b, x)
    return _result(da, dtype)


@_numpy_style
def betainc_db(a: Any, b: Any, x: Any) -> Any:
    """The derivative of ``I_x(a, b) = scipy.special.betainc(a, b, x)`` with respect to ``b``,
    elementwise (see `betainc_da`).

    >>> import numpy as np
    >>> x = 0.3          # I_x(1, b) = 1 - (1-x)^b: the derivative is -(1-x)^b log(1-x)
    >>> bool(np.isclose(betainc_db(1.0, 2.5, x), -(1 - x) ** 2.5 * np.log1p(-x), rtol=1e-13))
    True
    """
    _, db, dtype = _betainc_gradient(a, b, x)
    return _result(db, dtype)


# --- zeta ----------------------------------------------------------------------------------------

@_numpy_style
def zeta_dx(x: Any, q: Any = 1.0) -> Any:
    """The derivative of the Hurwitz zeta function ``scipy.special.zeta(x, q)`` with respect
    to its order ``x``: ``-sum_(n >= 0) log(n + q) / (n + q)^x``, by Euler-Maclaurin
    summation (see the module's docstring). ``x > 1``, ``q > 0``.

    >>> import numpy as np
    >>> float(np.round(zeta_dx(2.0), 12))     # the Riemann zeta function: zeta'(2)
    -0.937548254316
    """
    (s, q), dtype = _broadcast(x, q)
    valid = (s > 1) & (q > 0)
    s_ok, q_ok = np.where(valid, s, 2.0), np.where(valid, q, 1.0)
    count = _ZETA_DIRECT_TERMS
    with np.errstate(over="ignore", under="ignore"):
        total = np.zeros(s.shape)
        for n in range(count):  # the first terms, summed directly
            u = n + q_ok
            total -= np.log(u) * u ** -s_ok
        # the tail sum_(n >= N) (n+q)^-s ~ w^(1-s)/(s-1) + w^-s/2 + sum_k c_k P_k(s) w^(-s-2k+1),
        # P_k(s) = s (s+1) ... (s+2k-2): each term differentiated in s
        w = count + q_ok
        log_w = np.log(w)
        power = w ** -s_ok
        total += -log_w * w * power / (s_ok - 1) - w * power / (s_ok - 1) ** 2
        total += -log_w * power / 2
        product, dproduct = s_ok, np.ones(s.shape)    # P_1 = s and its derivative
        term_power = power / w                        # w^(-s-1)
        for k, coefficient in enumerate(_BERNOULLI_OVER_FACTORIAL, start=1):
            total += coefficient * term_power * (dproduct - product * log_w)
            for j in (2 * k - 1, 2 * k):              # P_(k+1) = P_k (s+2k-1) (s+2k)
                dproduct = dproduct * (s_ok + j) + product
                product = product * (s_ok + j)
            term_power = term_power / (w * w)
    return _result(np.where(valid, total, np.nan), dtype)


# --- rules: the derivatives in x are closed forms, in the parameter refused ----------------------

def _gammainc_density(a: Any, x: Any) -> Any:
    return np.exp(sps.xlogy(a - 1, x) - x - sps.gammaln(a))


def _gammainc_da_x(y: Any, a: Any, x: Any) -> Any:
    """d/dx dP/da = d/da of the density x^(a-1) e^-x / Gamma(a) = density (log x - psi(a))."""
    density = _gammainc_density(a, x)
    return sps.xlogy(density, x) - density * sps.digamma(a)


def _betainc_density(a: Any, b: Any, x: Any) -> Any:
    return np.exp(sps.xlogy(a - 1, x) + sps.xlog1py(b - 1, -x) - sps.betaln(a, b))


def _betainc_da_x(y: Any, a: Any, b: Any, x: Any) -> Any:
    """density (log x - psi(a) + psi(a+b))."""
    density = _betainc_density(a, b, x)
    return sps.xlogy(density, x) - density * (sps.digamma(a) - sps.digamma(a + b))


def _betainc_db_x(y: Any, a: Any, b: Any, x: Any) -> Any:
    """density (log(1-x) - psi(b) + psi(a+b))."""
    density = _betainc_density(a, b, x)
    return sps.xlog1py(density, -x) - density * (sps.digamma(b) - sps.digamma(a + b))


def _zeta_dx_q(y: Any, s: Any, q: Any) -> Any:
    """d/dq d zeta(s, q)/ds = d/ds (-s zeta(s+1, q)) = -zeta(s+1, q) - s zeta_dx(s+1, q)."""
    return -sps.zeta(s + 1, q) - s * zeta_dx(s + 1, q)


_SECOND = "the second derivative in the parameter is not computed (only the first, by a "\
          "differentiated series or continued fraction)"
_HERE = "chainrules.rules.scipy_special_params."
scalar_rule_refusing(gammainc_da, _HERE + "gammainc_da", (None, _gammainc_da_x),
                     {0: ("a", _SECOND)})
scalar_rule_refusing(gammaincc_da, _HERE + "gammaincc_da",
                     (None, lambda y, a, x: -_gammainc_da_x(y, a, x)), {0: ("a", _SECOND)})
scalar_rule_refusing(betainc_da, _HERE + "betainc_da", (None, None, _betainc_da_x),
                     {0: ("a", _SECOND), 1: ("b", _SECOND)})
scalar_rule_refusing(betainc_db, _HERE + "betainc_db", (None, None, _betainc_db_x),
                     {0: ("a", _SECOND), 1: ("b", _SECOND)})
scalar_rule_refusing(zeta_dx, _HERE + "zeta_dx", (None, _zeta_dx_q),
                     {0: ("x", "the second derivative in the order is not computed (only the "
                                "first, by Euler-Maclaurin summation)")})
