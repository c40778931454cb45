"""Derivatives of ``scipy.special`` functions in the parameters that have no closed form:
``gammainc``/``gammaincc`` in ``a``, ``betainc`` in ``a`` and ``b``, ``zeta(x, q)`` in ``x``,
to first and second order.

Each is an elementwise function of its own, vectorised over broadcast arrays, importable by
name (the ``scipy.stats`` rules use them for the shape parameters of distribution functions):

- `gammainc_da` ``(a, x)`` = dP/da, `gammaincc_da` = dQ/da = -dP/da, and `gammainc_daa`,
  `gammaincc_daa` the second derivatives;
- `betainc_da`, `betainc_db` ``(a, b, x)`` = dI_x(a, b)/da, /db; `betainc_daa`,
  `betainc_dab`, `betainc_dbb` the second derivatives;
- `zeta_dx` ``(x, q)`` = d zeta(x, q)/dx = -sum_n log(n + q) (n + q)^-x, and `zeta_dxx`.

The methods are converged expansions differentiated exactly in the parameters, not finite
differences: every quantity of the recurrence is a `_Jet` (its value, gradient and Hessian
in the parameters, forward mode), so each term carries its derivatives.

- ``gammainc``: where ``x <= max(a, 1)``, the series P = x^a e^-x / Gamma(a+1) S,
  S = sum_n x^n / ((a+1)...(a+n)); elsewhere Legendre's continued fraction
  Q = x^a e^-x / Gamma(a) F(a, x) (the choice Cephes makes for P and Q themselves). The terms
  of S and their derivatives in ``a`` each have one sign: no cancellation in the sums.
- ``betainc``: the continued fraction I_x(a, b) = x^a (1-x)^b / (a B(a, b)) F(a, b, x) where
  ``x < (a+1) / (a+b+2)``, and I_x(a, b) = 1 - I_{1-x}(b, a) elsewhere.
- ``zeta``: Euler-Maclaurin summation of sum (n+q)^-x: ``N = 16`` terms summed directly, the
  tail as the integral, the half term and eight Bernoulli corrections, each term a jet in x.

Continued fractions are evaluated by their convergents, rescaled as they go; series and
fractions stop when the last step changed no component of the jet by more than 4e-16 of its
largest component (the rounding level), at most ``_MAX_TERMS`` terms: an element that has
not converged by then is NaN, never a silently wrong number.

Accuracy (first derivatives): about 1e-13 relative for parameters up to a few hundred
(tests: 1e-10 against Richardson-extrapolated differences of SciPy's functions, closed forms
and recurrences). It degrades where the result is a small difference of large numbers: the
prefactor x^a e^-x / Gamma(a) is ``exp(a log x - x - gammaln(a))``, whose exponent loses
about ``1e-16 * a log a`` (``1e-11`` at ``a = 1e4``); ``psi(a+b) - psi(a)`` in ``betainc``
loses ``1e-16 a / b`` relative when ``b << a``; the terms needed grow like ``sqrt(a)`` near
``x = a``. Second derivatives are accurate to about 1e-13 of the first derivatives' scale;
where they pass through zero (near ``x = a``) their relative error is larger. Outside the
functions' domains (``a <= 0``, ``x < 0``, ``x > 1`` for ``betainc``, ``x <= 1`` or
``q <= 0`` for ``zeta``) the result is NaN, as SciPy's value is.

Their derivatives in ``x`` are closed forms (the density times powers of logarithms), so
all of them can be differentiated again in ``x``; the first derivatives' derivatives in the
parameters are the second derivatives, and the third derivative in the parameters is
refused by name (``NotImplementedError``).

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

from ....core.dtypes import is_plain
from ....core.registry import first_order_only, recorded_whole
from ....core.scalar_rule import scalar_rule
from ...refused_arguments import scalar_rule_deferring, scalar_rule_refusing

__all__ = ["gammainc_da", "gammaincc_da", "betainc_da", "betainc_db", "zeta_dx",
           "riemann_zeta_dx", "riemann_zeta_dxx",
           "gammainc_daa", "gammaincc_daa", "betainc_daa", "betainc_dab", "betainc_dbb",
           "zeta_dxx"]

_MAX_TERMS = 100_000
_TOLERANCE = 4e-16  # two units in the last place: converged to rounding
# The Euler-Maclaurin remainder after N direct terms and eight corrections is, relative to the
# result, about (q / (N+q))^x (x / (2 pi (N+q)))^16: below 1e-15 for every x > 1, q > 0 with
# N = 16 (a large x that makes the second factor big makes the first one vanish).
_ZETA_DIRECT_TERMS = 16
# B_2k / (2k)! for k = 1..8: the Euler-Maclaurin corrections
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
    args = tuple(arg if issubclass(type(arg), (int, float, np.generic, np.ndarray))
                 else np.asarray(arg) for arg in args)
    dtype = np.result_type(*args)
    if dtype.kind in "biu":
        dtype = np.dtype(np.float64)
    elif dtype.kind != "f":
        raise TypeError(f"chainrules.rules.scipy.special.parameters: the parameter derivatives "
                        f"of gammainc, betainc and zeta take real numbers, got {dtype}")
    arrays = np.broadcast_arrays(*[np.asarray(arg, np.float64) for arg in args])
    return tuple(np.array(array) for array in arrays), dtype


def _result(values: np.ndarray, dtype: np.dtype) -> Any:
    """``values`` in the result dtype; a 0-d result as a NumPy scalar, as a ufunc gives it."""
    return values.astype(dtype, copy=False)[()]


class _Jet:
    """A value with its gradient and (for ``order`` 2) Hessian in ``k`` parameters, elementwise:
    forward-mode differentiation of the series and continued fractions, term by term.
    ``value`` has shape (n,), ``gradient`` (k, n), ``hessian`` (k, k, n) or None."""

    __slots__ = ("value", "gradient", "hessian")
    __array_ufunc__ = None  # ndarray op jet: NumPy defers to the jet's reflected operator

    def __init__(self, value: np.ndarray, gradient: np.ndarray, hessian: np.ndarray | None):
        self.value, self.gradient, self.hessian = value, gradient, hessian

    @staticmethod
    def variable(value: np.ndarray, position: int, count: int, order: int) -> _Jet:
        gradient = np.zeros((count,) + value.shape)
        gradient[position] = 1.0
        hessian = np.zeros((count, count) + value.shape) if order == 2 else None
        return _Jet(value, gradient, hessian)

    @staticmethod
    def constant(value: np.ndarray, count: int, order: int) -> _Jet:
        return _Jet(value, np.zeros((count,) + value.shape),
                    np.zeros((count, count) + value.shape) if order == 2 else None)

    def __add__(self, other: Any) -> _Jet:
        if isinstance(other, _Jet):
            return _Jet(self.value + other.value, self.gradient + other.gradient,
                        None if self.hessian is None else self.hessian + other.hessian)
        return _Jet(self.value + other, self.gradient, self.hessian)

    __radd__ = __add__

    def __neg__(self) -> _Jet:
        return _Jet(-self.value, -self.gradient, None if self.hessian is None else -self.hessian)

    def __sub__(self, other: Any) -> _Jet:
        return self + (-other)

    def __rsub__(self, other: Any) -> _Jet:
        return (-self) + other

    def __mul__(self, other: Any) -> _Jet:
        if not isinstance(other, _Jet):
            return _Jet(self.value * other, self.gradient * other,
                        None if self.hessian is None else self.hessian * other)
        hessian = None
        if self.hessian is not None:
            cross = self.gradient[:, None] * other.gradient[None, :]
            hessian = (self.hessian * other.value + self.value * other.hessian
                       + cross + np.swapaxes(cross, 0, 1))
        return _Jet(self.value * other.value,
                    self.gradient * other.value + self.value * other.gradient, hessian)

    __rmul__ = __mul__

    def reciprocal(self) -> _Jet:
        inverse = 1 / self.value
        return self.apply(inverse, -inverse * inverse, 2 * inverse ** 3)

    def __truediv__(self, other: Any) -> _Jet:
        return self * (other.reciprocal() if isinstance(other, _Jet) else 1 / other)

    def __rtruediv__(self, other: Any) -> _Jet:
        return self.reciprocal() * other

    def apply(self, value: np.ndarray, first: np.ndarray, second: np.ndarray | None) -> _Jet:
        """f(self), given f, f' and f'' at ``self.value`` (the chain rule)."""
        hessian = None
        if self.hessian is not None:
            hessian = first * self.hessian + second * (
                self.gradient[:, None] * self.gradient[None, :])
        return _Jet(value, first * self.gradient, hessian)

    def exp(self) -> _Jet:
        value = np.exp(self.value)
        return self.apply(value, value, value)

    def gammaln(self) -> _Jet:
        return self.apply(sps.gammaln(self.value), sps.digamma(self.value),
                          None if self.hessian is None else sps.polygamma(1, self.value))

    def parts(self) -> list:
        return [self.value, self.gradient] + ([] if self.hessian is None else [self.hessian])

    def take(self, keep: np.ndarray) -> _Jet:
        return _Jet(self.value[keep], self.gradient[..., keep],
                    None if self.hessian is None else self.hessian[..., keep])

    def converged(self, step: _Jet) -> np.ndarray:
        """Whether adding ``step`` changed no component by more than `_TOLERANCE` times the
        largest component: the rounding level of the recurrences, which carry all components
        together (a small derivative jitters at the last digits of the large ones)."""
        parts = [np.abs(part).reshape(-1, part.shape[-1]) for part in self.parts()]
        scale = np.max(np.concatenate(parts), axis=0)
        changes = np.concatenate([np.abs(part).reshape(-1, part.shape[-1])
                                  for part in step.parts()])
        return np.all(changes <= _TOLERANCE * scale, axis=0)


def _until_converged(state: dict, step: Callable, result: str, size: int,
                     count: int, order: int) -> _Jet:
    """Run ``step(state, n)`` for n = 1, 2, ... (it returns the new state and which elements
    have converged) on the elements not yet converged; ``state`` holds 1-d arrays and jets, one
    entry per running element. Returns the jet ``state[result]`` of every element, NaN for
    those that did not converge within `_MAX_TERMS` terms."""
    out = _Jet(np.full(size, np.nan), np.full((count, size), np.nan),
               np.full((count, count, size), np.nan) if order == 2 else None)
    active = np.arange(size)
    for n in range(1, _MAX_TERMS + 1):
        if not active.size:
            break
        state, finished = step(state, n)
        if finished.any():
            done = state[result].take(finished)
            index = active[finished]
            out.value[index] = done.value
            out.gradient[..., index] = done.gradient
            if order == 2:
                out.hessian[..., index] = done.hessian
            keep = ~finished
            active = active[keep]
            state = {key: value.take(keep) if isinstance(value, _Jet) else value[keep]
                     for key, value in state.items()}
    return out


def _continued_fraction(coefficients: Callable, size: int, count: int, order: int) -> _Jet:
    """``F = alpha_1 / (beta_1 + alpha_2 / (beta_2 + ...))`` as a jet, elementwise;
    ``coefficients(n, active)`` gives the jets ``(alpha_n, beta_n)`` of the still running
    elements ``active`` (indices).

    The convergents A_n / B_n follow A_n = beta_n A_(n-1) + alpha_n A_(n-2) (and B_n alike),
    all four rescaled by 1 / |B_n| at each step (a constant factor changes neither A/B nor its
    derivatives)."""
    def constant(value: float) -> _Jet:
        return _Jet.constant(np.full(size, value), count, order)

    state = {"index": np.arange(size), "a_prev": constant(1.0), "a": constant(0.0),
             "b_prev": constant(0.0), "b": constant(1.0), "f": constant(0.0)}

    def step(s: dict, n: int) -> tuple:
        alpha, beta = coefficients(n, s["index"])
        a = beta * s["a"] + alpha * s["a_prev"]
        b = beta * s["b"] + alpha * s["b_prev"]
        scale = np.abs(b.value)
        scale[scale == 0] = 1.0
        a, b = a / scale, b / scale
        with np.errstate(divide="ignore", invalid="ignore"):
            f = a / b
            finished = f.converged(f - s["f"])
        return ({"index": s["index"], "a_prev": s["a"] / scale, "a": a,
                 "b_prev": s["b"] / scale, "b": b, "f": f}, finished)

    return _until_converged(state, step, "f", size, count, order)


# --- gammainc ------------------------------------------------------------------------------------

def _gammainc_series(a: np.ndarray, x: np.ndarray, order: int) -> _Jet:
    """The jet of P in a from P = x^a e^-x / Gamma(a+1) sum_n t_n, t_n = x^n / ((a+1)...(a+n)),
    where x <= max(a, 1) (the terms shrink from the first one on)."""
    size = a.size
    state = {"index": np.arange(size), "t": _Jet.constant(np.ones(size), 1, order),
             "s": _Jet.constant(np.ones(size), 1, order)}

    def step(st: dict, n: int) -> tuple:
        i = st["index"]
        t = st["t"] * x[i] / (_Jet.variable(a[i], 0, 1, order) + n)
        total = st["s"] + t
        return {"index": i, "t": t, "s": total}, total.converged(t)

    total = _until_converged(state, step, "s", size, 1, order)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        parameter = _Jet.variable(a, 0, 1, order)
        prefactor = (parameter * np.log(x) - x - (parameter + 1).gammaln()).exp()
        return prefactor * total


def _gammaincc_fraction(a: np.ndarray, x: np.ndarray, order: int) -> _Jet:
    """The jet of Q in a from Legendre's continued fraction Q = x^a e^-x / Gamma(a) F,
    F = 1 / (x+1-a - 1(1-a) / (x+3-a - 2(2-a) / (x+5-a - ...))), where x > max(a, 1)."""
    def coefficients(n: int, i: np.ndarray) -> tuple:
        parameter = _Jet.variable(a[i], 0, 1, order)
        alpha = (_Jet.constant(np.ones(i.size), 1, order) if n == 1
                 else (parameter - (n - 1)) * (n - 1))
        return alpha, x[i] + (2 * n - 1) - parameter

    fraction = _continued_fraction(coefficients, a.size, 1, order)
    parameter = _Jet.variable(a, 0, 1, order)
    prefactor = (parameter * np.log(x) - x - parameter.gammaln()).exp()
    return prefactor * fraction


def _gammainc_jet(a: Any, x: Any, order: int) -> tuple:
    """``(jet of P(a, x) in a, dtype, shape)``, elementwise (flat)."""
    (a, x), dtype = _broadcast(a, x)
    shape = a.shape
    a, x = a.ravel(), x.ravel()
    out = _Jet(np.full(a.size, np.nan), np.full((1, a.size), np.nan),
               np.full((1, 1, a.size), np.nan) if order == 2 else None)
    valid = (a > 0) & (x >= 0)
    edge = valid & ((x == 0) | np.isinf(x))  # P is 0 or 1 there for every a
    for part in out.parts():
        part[..., edge] = 0.0
    interior = valid & ~edge
    fraction = interior & (x > 1) & (x > a)
    series = interior & ~fraction
    for mask, jet in ((series, _gammainc_series(a[series], x[series], order)),
                      (fraction, -_gammaincc_fraction(a[fraction], x[fraction], order))):
        for part, computed in zip(out.parts(), jet.parts()):
            part[..., mask] = computed
    return out, dtype, shape


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
    return _gamma_derivative(a, x, 1)


@_numpy_style
def gammainc_daa(a: Any, x: Any) -> Any:
    """The second derivative of ``P(a, x) = scipy.special.gammainc(a, x)`` with respect to
    ``a``, elementwise (the method of `gammainc_da`, carried to order 2).

    >>> import numpy as np
    >>> h = 1e-4
    >>> slope = (gammainc_da(2.0 + h, 3.0) - gammainc_da(2.0 - h, 3.0)) / (2 * h)
    >>> bool(np.isclose(gammainc_daa(2.0, 3.0), slope, rtol=1e-7))
    True
    """
    return _gamma_derivative(a, x, 2)


def _gamma_derivative(a: Any, x: Any, order: int) -> Any:
    jet, dtype, shape = _gammainc_jet(a, x, order)
    values = jet.gradient[0] if order == 1 else jet.hessian[0, 0]
    return _result(values.reshape(shape), dtype)


@_numpy_style
def gammaincc_da(a: Any, x: Any) -> Any:
    """The derivative of the regularized upper incomplete gamma function
    ``Q(a, x) = scipy.special.gammaincc(a, x)`` with respect to ``a``: ``-gammainc_da``.

    >>> import numpy as np
    >>> bool(gammaincc_da(2.0, 3.0) == -gammainc_da(2.0, 3.0))
    True
    """
    return -gammainc_da(a, x)


@_numpy_style
def gammaincc_daa(a: Any, x: Any) -> Any:
    """The second derivative of ``Q(a, x) = scipy.special.gammaincc(a, x)`` with respect to
    ``a``: ``-gammainc_daa``.

    >>> bool(gammaincc_daa(2.0, 3.0) == -gammainc_daa(2.0, 3.0))
    True
    """
    return -gammainc_daa(a, x)


# --- betainc -------------------------------------------------------------------------------------

def _betainc_fraction(p: _Jet, q: _Jet, y: np.ndarray, order: int) -> _Jet:
    """The jet of I_y(p, q) = y^p (1-y)^q / (p B(p, q)) F, where F = 1 / (1 + d_1 / (1 + d_2 /
    (1 + ...))), d_2m+1 = -(p+m)(p+q+m) y / ((p+2m)(p+2m+1)), d_2m = m (q-m) y /
    ((p+2m-1)(p+2m)); for y < (p+1) / (p+q+2). ``p`` and ``q`` are jets in (a, b)."""
    def coefficients(n: int, i: np.ndarray) -> tuple:
        pi, qi, yi = p.take(i), q.take(i), y[i]
        one = _Jet.constant(np.ones(i.size), 2, order)
        if n == 1:
            return one, one
        k = n - 1  # alpha_n = d_k
        m = k // 2
        if k % 2:
            alpha = -(pi + m) * (pi + qi + m) * yi / ((pi + 2 * m) * (pi + 2 * m + 1))
        else:
            alpha = m * (qi - m) * yi / ((pi + 2 * m - 1) * (pi + 2 * m))
        return alpha, one

    fraction = _continued_fraction(coefficients, y.size, 2, order)
    log_beta = p.gammaln() + q.gammaln() - (p + q).gammaln()
    logarithm = p.apply(np.log(p.value), 1 / p.value, -1 / p.value ** 2)
    prefactor = (p * np.log(y) + q * np.log1p(-y) - logarithm - log_beta).exp()
    return prefactor * fraction


def _betainc_jet(a: Any, b: Any, x: Any, order: int) -> tuple:
    """``(jet of I_x(a, b) in (a, b), dtype, shape)``, elementwise (flat)."""
    (a, b, x), dtype = _broadcast(a, b, x)
    shape = a.shape
    a, b, x = a.ravel(), b.ravel(), x.ravel()
    out = _Jet(np.full(a.size, np.nan), np.full((2, a.size), np.nan),
               np.full((2, 2, a.size), np.nan) if order == 2 else None)
    valid = (a > 0) & (b > 0) & (x >= 0) & (x <= 1)
    edge = valid & ((x == 0) | (x == 1))  # I is 0 or 1 there for every a, b
    for part in out.parts():
        part[..., edge] = 0.0
    interior = valid & ~edge
    direct = interior & (x < (a + 1) / (a + b + 2))
    swapped = interior & ~direct

    def variables(mask: np.ndarray) -> tuple:
        return (_Jet.variable(a[mask], 0, 2, order), _Jet.variable(b[mask], 1, 2, order))

    first, second = variables(direct)
    jets = [(direct, _betainc_fraction(first, second, x[direct], order))]
    first, second = variables(swapped)   # I_x(a, b) = 1 - I_(1-x)(b, a)
    jets.append((swapped, -_betainc_fraction(second, first, 1 - x[swapped], order)))
    for mask, jet in jets:
        for part, computed in zip(out.parts(), jet.parts()):
            part[..., mask] = computed
    return out, dtype, shape


def _beta_derivative(a: Any, b: Any, x: Any, first: int, second: int | None = None) -> Any:
    jet, dtype, shape = _betainc_jet(a, b, x, 1 if second is None else 2)
    values = jet.gradient[first] if second is None else jet.hessian[first, second]
    return _result(values.reshape(shape), dtype)


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
    return _beta_derivative(a, b, x, 0)


@_numpy_style
def betainc_db(a: Any, b: Any, x: Any) -> Any:
    """The derivative of ``I_x(a, b) = scipy.special.betainc(a, b, x)`` with respect to ``b``,
    elementwise (see `betainc_da`).

    >>> import numpy as np
    >>> x = 0.3          # I_x(1, b) = 1 - (1-x)^b: the derivative is -(1-x)^b log(1-x)
    >>> bool(np.isclose(betainc_db(1.0, 2.5, x), -(1 - x) ** 2.5 * np.log1p(-x), rtol=1e-13))
    True
    """
    return _beta_derivative(a, b, x, 1)


@_numpy_style
def betainc_daa(a: Any, b: Any, x: Any) -> Any:
    """The second derivative of ``I_x(a, b)`` with respect to ``a`` (see `betainc_da`).

    >>> import numpy as np
    >>> x = 0.3          # I_x(a, 1) = x^a: the second derivative is x^a log(x)^2
    >>> bool(np.isclose(betainc_daa(2.5, 1.0, x), x ** 2.5 * np.log(x) ** 2, rtol=1e-13))
    True
    """
    return _beta_derivative(a, b, x, 0, 0)


@_numpy_style
def betainc_dab(a: Any, b: Any, x: Any) -> Any:
    """The mixed second derivative of ``I_x(a, b)`` with respect to ``a`` and ``b``.

    >>> import numpy as np
    >>> h = 1e-4
    >>> slope = (betainc_db(2.0 + h, 3.0, 0.4) - betainc_db(2.0 - h, 3.0, 0.4)) / (2 * h)
    >>> bool(np.isclose(betainc_dab(2.0, 3.0, 0.4), slope, rtol=1e-7))
    True
    """
    return _beta_derivative(a, b, x, 0, 1)


@_numpy_style
def betainc_dbb(a: Any, b: Any, x: Any) -> Any:
    """The second derivative of ``I_x(a, b)`` with respect to ``b``.

    >>> import numpy as np
    >>> x = 0.3          # I_x(1, b) = 1 - (1-x)^b: -(1-x)^b log(1-x)^2
    >>> bool(np.isclose(betainc_dbb(1.0, 2.5, x), -(1 - x) ** 2.5 * np.log1p(-x) ** 2,
    ...                 rtol=1e-13))
    True
    """
    return _beta_derivative(a, b, x, 1, 1)


# --- zeta ----------------------------------------------------------------------------------------

def _zeta_series(order_: _Jet, q: np.ndarray, count: int, order: int) -> _Jet:
    """The jet of ``zeta(s, q)`` for the jet ``order_`` of ``s``, by Euler-Maclaurin
    summation: right for ``s > 1``, and for the Riemann function (``q = 1``) down to
    ``s = -1/2`` (below, its sum cancels: `_riemann_zeta_derivative` reflects it)."""
    with np.errstate(over="ignore", under="ignore"):
        total = _Jet.constant(np.zeros(q.size), count, order)
        for n in range(_ZETA_DIRECT_TERMS):  # the first terms, summed directly
            total = total + (order_ * -np.log(n + q)).exp()
        # the tail sum_(n >= N) (n+q)^-x ~ w^(1-x)/(x-1) + w^-x/2 + sum_k c_k P_k(x) w^(-x-2k+1),
        # P_k(x) = x (x+1) ... (x+2k-2)
        w = _ZETA_DIRECT_TERMS + q
        power = (order_ * -np.log(w)).exp()                  # w^-x
        total = total + power * w / (order_ - 1) + power * 0.5
        product = order_                                      # P_1
        term_power = power / w                                # w^(-x-1)
        for k, coefficient in enumerate(_BERNOULLI_OVER_FACTORIAL, start=1):
            total = total + product * term_power * coefficient
            product = product * (order_ + (2 * k - 1)) * (order_ + 2 * k)
            term_power = term_power / (w * w)
    return total


def _zeta_jet(x: Any, q: Any, order: int) -> tuple:
    """``(jet of zeta(x, q) in x, dtype, shape, valid)`` by Euler-Maclaurin summation."""
    (s, q), dtype = _broadcast(x, q)
    shape = s.shape
    s, q = s.ravel(), q.ravel()
    valid = (s > 1) & (q > 0)
    s_ok, q_ok = np.where(valid, s, 2.0), np.where(valid, q, 1.0)
    return _zeta_series(_Jet.variable(s_ok, 0, 1, order), q_ok, 1, order), dtype, shape, valid


def _zeta_derivative(x: Any, q: Any, order: int) -> Any:
    jet, dtype, shape, valid = _zeta_jet(x, q, order)
    return _jet_derivative(jet, valid, shape, dtype, order)


def _jet_derivative(jet: _Jet, valid: np.ndarray, shape: tuple, dtype: np.dtype,
                    order: int) -> Any:
    values = jet.gradient[0] if order == 1 else jet.hessian[0, 0]
    return _result(np.where(valid, values, np.nan).reshape(shape), dtype)


_REFLECTED_BELOW = -0.5  # the Riemann zeta function's sum cancels below: its reflection


def _riemann_zeta_derivative(x: Any, order: int) -> Any:
    """The derivative of order 1 or 2 of the Riemann zeta function ``scipy.special.zeta(x)``
    at every real ``x`` but 1: the Euler-Maclaurin sum down to ``x = -1/2``, below it the
    functional equation ``zeta(s) = 2^s pi^(s-1) sin(pi s / 2) Gamma(1 - s) zeta(1 - s)``
    (whose ``zeta(1 - s)`` the sum computes), differentiated as jets."""
    (s,), dtype = _broadcast(x)
    shape = s.shape
    s = s.ravel()
    valid = np.isfinite(s) & (s != 1)
    reflected = valid & (s < _REFLECTED_BELOW)
    ones = np.ones(s.size)
    direct = _Jet.variable(np.where(valid & ~reflected, s, 2.0), 0, 1, order)
    jet = _zeta_series(direct, ones, 1, order)
    if reflected.any():
        at = np.where(reflected, s, 2 * _REFLECTED_BELOW)
        order_ = _Jet.variable(at, 0, 1, order)
        half = np.pi / 2 * at
        sine = order_.apply(np.sin(half), np.pi / 2 * np.cos(half),
                            None if order == 1 else -(np.pi / 2) ** 2 * np.sin(half))
        with np.errstate(over="ignore"):
            factor = (order_ * np.log(2 * np.pi) - np.log(np.pi) + (1 - order_).gammaln()).exp()
            mirrored = factor * sine * _zeta_series(1 - order_, ones, 1, order)
        jet = _Jet(*[np.where(reflected, b, a) for a, b in zip(jet.parts(), mirrored.parts())]
                   + ([] if order == 2 else [None]))
    return _jet_derivative(jet, valid, shape, dtype, order)


@_numpy_style
def riemann_zeta_dx(x: Any) -> Any:
    """The derivative of the Riemann zeta function ``scipy.special.zeta(x)`` (and of
    ``zetac``) at every real ``x`` but its pole, 1; the Hurwitz function's `zeta_dx` (like
    SciPy's ``zeta(x, q)``) is for ``x > 1`` only.

    >>> import numpy as np
    >>> float(np.round(riemann_zeta_dx(0.0), 12))    # -log(2 pi) / 2
    -0.918938533205
    """
    return _riemann_zeta_derivative(x, 1)


@_numpy_style
def riemann_zeta_dxx(x: Any) -> Any:
    """The second derivative of the Riemann zeta function (see `riemann_zeta_dx`).

    >>> import numpy as np
    >>> float(np.round(riemann_zeta_dxx(2.0), 12))    # zeta''(2)
    1.989280234299
    """
    return _riemann_zeta_derivative(x, 2)


@_numpy_style
def zeta_dx(x: Any, q: Any = 1.0) -> Any:
    """The derivative of the Hurwitz zeta function ``scipy.special.zeta(x, q)`` with respect
    to its order ``x``: ``-sum_(n >= 0) log(n + q) / (n + q)^x``, by Euler-Maclaurin
    summation (see the module's docstring). ``x > 1``, ``q > 0``.

    >>> import numpy as np
    >>> float(np.round(zeta_dx(2.0), 12))     # the Riemann zeta function: zeta'(2)
    -0.937548254316
    """
    return _zeta_derivative(x, q, 1)


@_numpy_style
def zeta_dxx(x: Any, q: Any = 1.0) -> Any:
    """The second derivative of ``scipy.special.zeta(x, q)`` with respect to ``x``:
    ``sum_(n >= 0) log(n + q)^2 / (n + q)^x`` (see `zeta_dx`).

    >>> import numpy as np
    >>> float(np.round(zeta_dxx(2.0), 12))    # zeta''(2)
    1.989280234299
    """
    return _zeta_derivative(x, q, 2)


# --- rules: the derivatives in x are closed forms; in the parameters, the next function ---------
# (the third derivative in the parameters is refused)

def _gammainc_density(a: Any, x: Any) -> Any:
    return np.exp(sps.xlogy(a - 1, x) - x - sps.gammaln(a))


def _gammainc_da_x(y: Any, a: Any, x: Any) -> Any:
    """d/dx dP/da = d/da of the density x^(a-1) e^-x / Gamma(a) = density (log x - psi(a))
    (xlogy: 0 where the density is, also at x = 0)."""
    density = _gammainc_density(a, x)
    return sps.xlogy(density, x) - density * sps.digamma(a)


def _gammainc_daa_x(y: Any, a: Any, x: Any) -> Any:
    """d/dx d^2P/da^2 = density ((log x - psi(a))^2 - psi'(a))."""
    density = _gammainc_density(a, x)
    first = sps.xlogy(density, x) - density * sps.digamma(a)     # density (log x - psi(a))
    return (sps.xlogy(first, x) - first * sps.digamma(a)) - density * sps.polygamma(1, a)


def _betainc_density(a: Any, b: Any, x: Any) -> Any:
    return np.exp(sps.xlogy(a - 1, x) + sps.xlog1py(b - 1, -x) - sps.betaln(a, b))


def _times_la(value: Any, a: Any, b: Any, x: Any) -> Any:
    """value (log x - psi(a) + psi(a+b)), 0 where value is."""
    return sps.xlogy(value, x) + value * (sps.digamma(a + b) - sps.digamma(a))


def _times_lb(value: Any, a: Any, b: Any, x: Any) -> Any:
    """value (log(1-x) - psi(b) + psi(a+b)), 0 where value is."""
    return sps.xlog1py(value, -x) + value * (sps.digamma(a + b) - sps.digamma(b))


def _betainc_da_x(y: Any, a: Any, b: Any, x: Any) -> Any:
    """d/dx dI/da = d/da of the density = density (log x - psi(a) + psi(a+b))."""
    return _times_la(_betainc_density(a, b, x), a, b, x)


def _betainc_db_x(y: Any, a: Any, b: Any, x: Any) -> Any:
    """density (log(1-x) - psi(b) + psi(a+b))."""
    return _times_lb(_betainc_density(a, b, x), a, b, x)


def _betainc_daa_x(y: Any, a: Any, b: Any, x: Any) -> Any:
    """density (La^2 - psi'(a) + psi'(a+b)), La the factor of `_times_la`."""
    density = _betainc_density(a, b, x)
    return _times_la(_times_la(density, a, b, x), a, b, x) + density * (
        sps.polygamma(1, a + b) - sps.polygamma(1, a))


def _betainc_dab_x(y: Any, a: Any, b: Any, x: Any) -> Any:
    """density (La Lb + psi'(a+b))."""
    density = _betainc_density(a, b, x)
    return _times_lb(_times_la(density, a, b, x), a, b, x) + density * sps.polygamma(1, a + b)


def _betainc_dbb_x(y: Any, a: Any, b: Any, x: Any) -> Any:
    """density (Lb^2 - psi'(b) + psi'(a+b))."""
    density = _betainc_density(a, b, x)
    return _times_lb(_times_lb(density, a, b, x), a, b, x) + density * (
        sps.polygamma(1, a + b) - sps.polygamma(1, b))


def _zeta_dx_q(y: Any, s: Any, q: Any) -> Any:
    """d/dq d zeta(s, q)/ds = d/ds (-s zeta(s+1, q)) = -zeta(s+1, q) - s zeta_dx(s+1, q)."""
    return -sps.zeta(s + 1, q) - s * zeta_dx(s + 1, q)


def _zeta_dxx_q(y: Any, s: Any, q: Any) -> Any:
    """d/dq d^2 zeta(s, q)/ds^2 = -2 zeta_dx(s+1, q) - s zeta_dxx(s+1, q)."""
    return -2 * zeta_dx(s + 1, q) - s * zeta_dxx(s + 1, q)


_THIRD = "the third derivative in the parameters is not computed (the first two are, by a "\
         "differentiated series, continued fraction or Euler-Maclaurin sum)"
_HERE = "chainrules.rules.scipy.special.parameters."

scalar_rule_deferring(gammainc_da, (lambda y, a, x: gammainc_daa(a, x), _gammainc_da_x), (0,))
scalar_rule_deferring(gammaincc_da, (lambda y, a, x: gammaincc_daa(a, x),
                                     lambda y, a, x: -_gammainc_da_x(y, a, x)), (0,))
scalar_rule_deferring(betainc_da, (lambda y, a, b, x: betainc_daa(a, b, x),
                                   lambda y, a, b, x: betainc_dab(a, b, x), _betainc_da_x),
                      (0, 1))
scalar_rule_deferring(betainc_db, (lambda y, a, b, x: betainc_dab(a, b, x),
                                   lambda y, a, b, x: betainc_dbb(a, b, x), _betainc_db_x),
                      (0, 1))
scalar_rule_deferring(zeta_dx, (lambda y, s, q: zeta_dxx(s, q), _zeta_dx_q), (0,))

scalar_rule_refusing(gammainc_daa, _HERE + "gammainc_daa", (None, _gammainc_daa_x),
                     {0: ("a", _THIRD)})
scalar_rule_refusing(gammaincc_daa, _HERE + "gammaincc_daa",
                     (None, lambda y, a, x: -_gammainc_daa_x(y, a, x)), {0: ("a", _THIRD)})
for _function, _partial in ((betainc_daa, _betainc_daa_x), (betainc_dab, _betainc_dab_x),
                            (betainc_dbb, _betainc_dbb_x)):
    scalar_rule_refusing(_function, _HERE + _function.__name__, (None, None, _partial),
                         {0: ("a", _THIRD), 1: ("b", _THIRD)})
scalar_rule_refusing(zeta_dxx, _HERE + "zeta_dxx", (None, _zeta_dxx_q), {0: ("x", _THIRD)})
scalar_rule(riemann_zeta_dx, lambda y, x: riemann_zeta_dxx(x))
scalar_rule_refusing(riemann_zeta_dxx, _HERE + "riemann_zeta_dxx", (None,), {0: ("x", _THIRD)})
for _function in (riemann_zeta_dx, riemann_zeta_dxx):  # (zeta_dx's order 2 is in q)
    first_order_only(_function, "the third derivative of the Riemann zeta function is not "
                                "computed (the first two are, by jets of an Euler-Maclaurin sum)")
