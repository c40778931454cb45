"""Rules for polynomials: ``polyval`` and the least-squares fit ``polyfit``.

- ``polyval(p, x)`` (highest power first) is linear in ``p`` (``dp[k] = sum conj(x^(N-1-k))
  dy``) and smooth in ``x`` (``dx = conj(polyval(p', x)) dy``, ``p'`` the derivative's
  coefficients, evaluated with ``polyval`` itself, so order 2 works).
- ``polyfit(x, y, deg, w=w)`` is the least-squares solution ``c`` of ``A c = b`` with
  ``A = w * vander(x, deg + 1)`` and ``b = w * y``; it is differentiable in ``y``, in ``x``
  and in ``w``, through the normal equations ``G = A^H A``: for a cotangent ``dc``,
  ``z = G^-1 dc``, ``db = A z`` and ``dA = r z^H - A z c^H`` (``r = b - A c``). This needs
  ``A`` of full column rank (at least ``deg + 1`` distinct ``x``); ``full=True`` and
  ``cov=True`` are refused.
- ``roots(p)``: each simple root ``r`` moves as ``dr = -sum_j dp_j r^(N-j) / p'(r)``
  (implicit differentiation of ``p(r) = 0``); multiple roots have no derivative (it is
  infinite). The roots come in NumPy's order, which stays put under small perturbations.
- ``numpy.polynomial``: the ``*val`` functions (``polynomial.polyval``, ``chebval``,
  ``legval``, ``hermval``, ...) and the convenience classes' ``__call__`` (``Polynomial(c)(x)``)
  are plain Python over NumPy operations, so the engine traces through them, in ``x`` and in
  the coefficients; ``np.common_type``, which the classes call on their coefficients, is
  declared non-differentiable (it returns a type).

>>> import chainrules as cr
>>> cr.grad(lambda x: np.polyval(np.array([1.0, 0.0, 0.0]), x))(3.0)
6.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.registry import non_differentiable
from ...core.tangents import AbstractZero
from ..define import Call, define, unsupported

__all__: list[str] = []


def _H(x: Any) -> Any:
    return np.conj(np.swapaxes(x, -1, -2))


# --- polyval -------------------------------------------------------------------------------------

def _powers(x: Any, count: int) -> Any:
    """``x[..., None] ** [count - 1, ..., 1, 0]``: the monomials polyval multiplies."""
    return np.power(np.expand_dims(x, -1), np.arange(count - 1, -1, -1))


def _derivative(p: Any) -> Any:
    """The coefficients of ``p``'s derivative (highest power first)."""
    count = np.shape(p)[0]
    if count <= 1:
        return np.zeros(1)
    return p[:-1] * np.arange(count - 1, 0, -1)


def _polyval_p(call: Call, dy: Any) -> Any:
    p, x = np.asarray(call.args[0]), call.args[1]
    count = np.shape(p)[0]
    terms = np.conj(_powers(x, count)) * np.expand_dims(dy, -1)
    return np.sum(np.reshape(terms, (-1, count)), axis=0)


def _polyval_x(call: Call, dy: Any) -> Any:
    return np.conj(np.polyval(_derivative(np.asarray(call.args[0])), call.args[1])) * dy


def _polyval_forward(call: Call, dp: Any, dx: Any) -> Any:
    p, x = np.asarray(call.args[0]), call.args[1]
    total: Any = 0
    if not isinstance(dp, AbstractZero):
        total = total + np.polyval(np.asarray(dp), x)
    if not isinstance(dx, AbstractZero):
        total = total + np.polyval(_derivative(p), x) * dx
    return total


define(np.polyval, _polyval_p, _polyval_x, pushforward=_polyval_forward)


# --- roots -------------------------------------------------------------------------------------

def _roots_jacobian(call: Call) -> Any:
    """``J[k, j] = d r_k / d p_j = -r_k^(N - j) / p'(r_k)`` (implicit differentiation of
    ``p(r_k) = 0``; simple roots), zero for the leading zero coefficients that np.roots
    drops. Written in NumPy operations, so that order 2 traces it."""
    p, roots = np.asarray(call.args[0]), call.y
    nonzero = np.flatnonzero(p != 0)  # (a comparison: plain values at every order)
    lead = int(nonzero[0]) if nonzero.size else 0
    kept = p[lead:]
    degree = np.shape(kept)[0] - 1
    powers = _powers(roots, degree + 1)  # r^degree, ..., r, 1
    slopes = powers[:, 1:] @ (kept[:-1] * np.arange(degree, 0, -1))  # p'(r_k)
    jacobian = -powers / slopes[:, None]
    if lead:
        jacobian = np.concatenate([np.zeros((np.shape(roots)[0], lead)), jacobian], axis=1)
    return jacobian


def _roots_p(call: Call, dy: Any) -> Any:
    return _H(call.memo(_roots_jacobian)) @ dy


def _roots_forward(call: Call, dp: Any) -> Any:
    tangent = call.memo(_roots_jacobian) @ dp
    return tangent if np.iscomplexobj(call.y) else np.real(tangent)


define(np.roots, _roots_p, pushforward=_roots_forward)


# --- polyfit -------------------------------------------------------------------------------------

def _polyfit_check(call: Call) -> None:
    for option in ("full", "cov"):
        if call[option]:
            raise unsupported(call.name, option, call[option], f"{option}=False")


class _Fit:
    """The pieces of a fit: the exponents ``e``, the monomials ``V`` and the design matrix
    ``A`` (rows weighted), the weights ``w`` (None: unweighted), the right-hand side ``b``
    and coefficients ``c`` as columns, the residual ``r`` and ``G = A^H A``."""

    __slots__ = ("e", "V", "A", "w", "b", "c", "r", "G")


def _fit(call: Call) -> _Fit:
    x, y, deg, w = call.args[0], call.args[1], int(call["deg"]), call["w"]
    fit = _Fit()
    fit.e = np.arange(deg, -1, -1)
    fit.V = np.power(np.expand_dims(x, -1), fit.e)
    fit.w = None if w is None else np.expand_dims(w, -1)
    fit.A = fit.V if w is None else fit.V * fit.w
    columns = np.reshape(y, (np.shape(y)[0], -1))
    fit.b = columns if w is None else columns * fit.w
    fit.c = np.reshape(call.y, (deg + 1, -1))
    fit.r = fit.b - fit.A @ fit.c
    fit.G = _H(fit.A) @ fit.A
    return fit


def _solved(call: Call, dc: Any) -> Any:
    fit = call.memo(_fit)
    return np.linalg.solve(fit.G, np.reshape(dc, np.shape(fit.c)))


def _by_design(call: Call, dc: Any) -> Any:
    """The cotangent of the design matrix ``A``."""
    fit, z = call.memo(_fit), _solved(call, dc)
    return fit.r @ _H(z) - fit.A @ z @ _H(fit.c)


def _slopes(fit: _Fit, x: Any) -> Any:
    """dV/dx, row by row: ``e x^(e - 1)`` (0 for the constant column)."""
    return fit.e * np.power(np.expand_dims(x, -1), np.maximum(fit.e - 1, 0))


def _polyfit_x(call: Call, dc: Any) -> Any:
    fit = call.memo(_fit)
    dA = _by_design(call, dc)
    dV = dA if fit.w is None else dA * np.conj(fit.w)
    return np.sum(np.conj(_slopes(fit, call.args[0])) * dV, axis=-1)


def _polyfit_y(call: Call, dc: Any) -> Any:
    fit = call.memo(_fit)
    db = fit.A @ _solved(call, dc)
    dy = db if fit.w is None else db * np.conj(fit.w)
    return np.reshape(dy, np.shape(call.args[1]))


def _polyfit_w(call: Call, dc: Any) -> Any:
    fit = call.memo(_fit)
    db = fit.A @ _solved(call, dc)
    columns = np.reshape(call.args[1], np.shape(fit.b))
    return np.sum(np.conj(fit.V) * _by_design(call, dc), axis=-1) + \
        np.sum(np.conj(columns) * db, axis=-1)


def _polyfit_forward(call: Call, dx: Any, dy: Any, ddeg: Any, drcond: Any, dfull: Any,
                     dw: Any = None, *rest: Any) -> Any:
    fit = call.memo(_fit)
    dA: Any = 0
    db: Any = 0
    if not isinstance(dx, AbstractZero):
        dV = _slopes(fit, call.args[0]) * np.expand_dims(dx, -1)
        dA = dA + (dV if fit.w is None else dV * fit.w)
    if not isinstance(dy, AbstractZero):
        columns = np.reshape(dy, np.shape(fit.b))
        db = db + (columns if fit.w is None else columns * fit.w)
    if dw is not None and not isinstance(dw, AbstractZero):
        dw = np.expand_dims(dw, -1)
        dA = dA + fit.V * dw
        db = db + np.reshape(call.args[1], np.shape(fit.b)) * dw
    rhs = _H(fit.A) @ (db - dA @ fit.c) + _H(dA) @ fit.r if not issubclass(type(dA), int) \
        else _H(fit.A) @ db
    return np.reshape(np.linalg.solve(fit.G, rhs), np.shape(call.y))


define(np.polyfit, _polyfit_x, _polyfit_y, None, None, None, _polyfit_w,
       pushforward=_polyfit_forward, check=_polyfit_check)

# The numpy.polynomial classes check their coefficients' common type before anything else.
non_differentiable(np.common_type)
