"""Rules for polynomials: ``polyval``, coefficient arithmetic, ``roots`` and the least-squares
fit ``polyfit``.

- ``polyval(p, x)`` (highest power first) is linear in ``p`` (``dp[k] = sum conj(x^(N-1-k))
  dy``) and smooth in ``x`` (``dx = conj(polyval(p', x)) dy``, ``p'`` the derivative's
  coefficients, evaluated with ``polyval`` itself, so order 2 works).
- ``polyfit(x, y, deg, w=w)`` is the least-squares solution ``c`` of ``A c = b`` with
  ``A = w * vander(x, deg + 1)`` and ``b = w * y``; it is differentiable in ``y``, in ``x``
  and in ``w``, through the normal equations ``G = A^H A``: for a cotangent ``dc``,
  ``z = G^-1 dc``, ``db = A z`` and ``dA = r z^H - A z c^H`` (``r = b - A c``). This needs
  ``A`` of full column rank (at least ``deg + 1`` distinct ``x``); ``full=True`` and
  ``cov=True`` are refused.
- Coefficient arithmetic: ``polyadd``/``polysub`` (linear: the shorter is padded with leading
  zeros, so its cotangent is the trailing part of ``dy``), ``polymul`` (a convolution of the
  polynomials without their leading zeros, as ``np.poly1d`` keeps them; a dropped zero gets
  no cotangent), ``polyder`` and ``polyint`` (linear: each coefficient, and each integration
  constant ``k``, is scaled by a fixed factor), ``polydiv`` (``u = conv(q, v) + r``
  differentiated with the remainder's dropped leading coefficients held at zero: ``dq`` is a
  division of ``du - conv(q, dv)`` by ``v``) and ``poly`` (the coefficients of
  ``prod (x - r_j)``: ``d a / d r_j`` is minus the product of the other factors, computed from
  running products from both ends; the characteristic polynomial of a matrix is refused with
  its fix, ``np.poly(np.linalg.eigvals(a))``).
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

from ...core.broadcast import unbroadcast
from ...core.registry import non_differentiable
from ...core.tangents import AbstractZero, ZeroTangent
from ..define import Call, define, linear, unsupported

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


# --- coefficient arithmetic: polyadd, polysub, polymul, polyder, polyint, polydiv, poly -------

def _trailing(dy: Any, x: Any) -> Any:
    """The cotangent of ``x`` in a sum that pads the shorter polynomial with leading zeros:
    the last ``len(x)`` coefficients of ``dy``."""
    count = np.shape(np.atleast_1d(x))[0]
    return unbroadcast(dy[np.shape(dy)[0] - count:], np.shape(x))


def _kept(p: Any) -> int:
    """Where ``np.poly1d`` starts ``p``: its first nonzero coefficient (the last one for a
    zero polynomial). np.polymul multiplies the polynomials without their leading zeros."""
    nonzero = np.flatnonzero(np.atleast_1d(p) != 0)  # a comparison: plain at every order
    return int(nonzero[0]) if nonzero.size else np.shape(np.atleast_1d(p))[0] - 1


def _polymul_cotangent(of_second: bool) -> Any:
    def cotangent(call: Call, dy: Any) -> Any:
        x, other = (call.args[1], call.args[0]) if of_second else call.args[:2]
        start = _kept(x)
        other = np.atleast_1d(other)[_kept(other):]
        kept = np.correlate(np.atleast_1d(dy), other, "valid")  # correlate conjugates `other`
        padded = np.concatenate([np.zeros(start, np.result_type(kept)), kept])
        return np.reshape(padded, np.shape(x))
    return cotangent


def _polymul_forward(call: Call, da: Any, db: Any) -> Any:
    a, b = (np.atleast_1d(x) for x in call.args[:2])
    a_start, b_start = _kept(a), _kept(b)
    dy: Any = 0
    if not isinstance(da, AbstractZero):
        dy = dy + np.convolve(np.atleast_1d(da)[a_start:], b[b_start:])
    if not isinstance(db, AbstractZero):
        dy = dy + np.convolve(a[a_start:], np.atleast_1d(db)[b_start:])
    return dy


def _polyder_weights(call: Call) -> Any:
    """``polyder(p, m) = p[:k] * weights``: the falling factorials, as plain numbers."""
    return np.polyder(np.ones(np.shape(call.args[0])), int(call["m"]))


def _polyder_p(call: Call, dy: Any) -> Any:
    weights = _polyder_weights(call)
    shape = np.shape(call.args[0])
    dropped = np.zeros((shape[0] - np.shape(weights)[0],) + shape[1:], np.result_type(dy))
    return np.concatenate([dy * weights, dropped])


def _polyint_weights(call: Call) -> tuple:
    """``polyint(p, m, k) = concatenate([p * weights_p, k[:m] * weights_k])``, the weights
    as plain numbers (the constants of integration are divided like the coefficients)."""
    n, m = np.shape(np.atleast_1d(call.args[0]))[0], int(call["m"])
    return (np.polyint(np.ones(n), m)[:n],
            np.polyint(np.zeros(n), m, np.ones(m))[n:])


def _polyint_p(call: Call, dy: Any) -> Any:
    weights, _ = _polyint_weights(call)
    return np.reshape(dy[:np.shape(weights)[0]] * weights, np.shape(call.args[0]))


def _polyint_k(call: Call, dy: Any) -> Any:
    weights_p, weights_k = _polyint_weights(call)
    k = call["k"]
    part = dy[np.shape(weights_p)[0]:] * weights_k  # one entry per integration
    given = np.shape(np.atleast_1d(k))[0]
    if given == 1:  # a single constant serves every integration
        return np.reshape(np.sum(part), np.shape(k))
    return np.reshape(np.concatenate([part, np.zeros(given - np.shape(part)[0])]), np.shape(k))


class _Division:
    """The pieces of ``q, r = polydiv(u, v)``: ``u = conv(q, v) + r``, with ``q`` the first
    ``K = len(u) - len(v) + 1`` coefficients (none when ``u`` is the shorter: then ``q = 0``)
    and ``r`` the last ``len(r)`` of ``u - conv(q, v)`` (NumPy drops the leading ones,
    zero to rounding). Differentiating ``u = conv(q, v) + r`` with ``r``'s leading ``K``
    coefficients fixed at zero gives ``T dq = w[:K]`` and ``dr = (w - conv(dq, v))[-len(r):]``
    for ``w = du - conv(q, dv)``, ``T`` the lower-triangular Toeplitz matrix of ``v``
    (applying ``T^-1`` is dividing by ``v`` again)."""

    __slots__ = ("u", "v", "q", "count", "size", "remainder")

    def __init__(self, call: Call):
        self.u, self.v = (np.atleast_1d(x) for x in call.args[:2])
        self.q = call.y[0]
        self.size = np.shape(self.u)[0]
        self.count = max(self.size - np.shape(self.v)[0] + 1, 0)  # K
        self.remainder = np.shape(call.y[1])[0]

    def divide(self, b: Any) -> Any:
        """``T^-1 b`` (``b`` of length K)."""
        padding = np.zeros(np.shape(self.v)[0] - 1, np.result_type(b))
        return np.polydiv(np.concatenate([b, padding]), self.v)[0]

    def divide_adjoint(self, z: Any) -> Any:
        """``T^-H z``: ``T^T`` is ``T`` reversed on both sides (a Toeplitz matrix)."""
        return np.conj(self.divide(np.conj(z)[::-1]))[::-1]

    def back(self, dq: Any, dr: Any) -> Any:
        """The cotangent of ``w`` for cotangents ``dq`` and ``dr`` (zeros as None)."""
        dtype = np.result_type(self.q, *(d for d in (dq, dr) if d is not None))
        dw = np.zeros(self.size, dtype)
        if dr is not None:
            dw = np.concatenate([np.zeros(self.size - self.remainder, dtype), dr])
        if self.count == 0:
            return dw
        z = dq if dq is not None else np.zeros(self.count, dtype)
        if dr is not None:
            z = z - np.correlate(dw, self.v, "valid")
        solved = self.divide_adjoint(z)
        return dw + np.concatenate([solved, np.zeros(self.size - self.count, np.result_type(
            solved))])

    def forward(self, w: Any) -> tuple:
        if self.count == 0:
            return np.zeros(np.shape(self.q), np.result_type(w)), w[self.size - self.remainder:]
        dq = self.divide(w[:self.count])
        return dq, (w - np.convolve(dq, self.v))[self.size - self.remainder:]


def _cotangents(dy: list) -> tuple:
    return tuple(None if isinstance(d, AbstractZero) else np.asarray(d) for d in dy)


def _polydiv_u(call: Call, dy: list) -> Any:
    return np.reshape(call.memo(_Division).back(*_cotangents(dy)), np.shape(call.args[0]))


def _polydiv_v(call: Call, dy: list) -> Any:
    division = call.memo(_Division)
    if division.count == 0:  # u is the shorter: q = 0, r = u
        return np.zeros(np.shape(call.args[1]), np.result_type(division.q))
    dw = division.back(*_cotangents(dy))
    return np.reshape(-np.correlate(dw, division.q, "valid"), np.shape(call.args[1]))


def _polydiv_forward(call: Call, du: Any, dv: Any) -> tuple:
    division = call.memo(_Division)
    w = np.zeros(division.size, np.result_type(division.q)) if isinstance(du, AbstractZero) \
        else np.atleast_1d(du) + 0.0
    if not isinstance(dv, AbstractZero) and division.count:
        w = w - np.convolve(division.q, np.atleast_1d(dv))
    return division.forward(w)


def _poly_check(call: Call) -> None:
    if np.ndim(call.args[0]) > 1:
        raise NotImplementedError(
            "numpy.poly of a matrix (the characteristic polynomial) is not differentiated "
            "here: pass its eigenvalues, np.poly(np.linalg.eigvals(a)), which is the same "
            "polynomial and differentiable.")


def _others(call: Call) -> Any:
    """Row ``j``: the coefficients of the polynomial with every root but ``j``, from running
    products from the left and from the right (3n convolutions)."""
    roots = np.atleast_1d(call.args[0])
    count = np.shape(roots)[0]
    one = np.ones(1, np.result_type(roots, 1.0))
    left, right = [one], [one]
    for j in range(count - 1):
        left.append(np.convolve(left[-1], np.concatenate([one, -roots[j:j + 1]])))
        right.append(np.convolve(right[-1], np.concatenate([one, -roots[count - 1 - j:count - j]])))
    return np.stack([np.convolve(left[j], right[count - 1 - j]) for j in range(count)])


def _poly_back(call: Call, dy: Any) -> Any:
    if np.shape(np.atleast_1d(call.args[0]))[0] == 0:
        return np.zeros(0)
    # d a[k + 1] / d r_j = -(the product of the other roots' factors)[k]
    return np.reshape(-(np.conj(call.memo(_others)) @ np.asarray(dy)[1:]),
                      np.shape(call.args[0]))


def _poly_forward(call: Call, dr: Any) -> Any:
    if np.shape(np.atleast_1d(call.args[0]))[0] == 0:
        return ZeroTangent()
    tangent = np.concatenate([np.zeros(1), -(np.atleast_1d(dr) @ call.memo(_others))])
    return tangent if np.iscomplexobj(call.y) else np.real(tangent)


define(np.polyadd, lambda call, dy: _trailing(dy, call.args[0]),
       lambda call, dy: _trailing(dy, call.args[1]), pushforward=linear)
define(np.polysub, lambda call, dy: _trailing(dy, call.args[0]),
       lambda call, dy: -_trailing(dy, call.args[1]), pushforward=linear)
define(np.polymul, _polymul_cotangent(of_second=False), _polymul_cotangent(of_second=True),
       pushforward=_polymul_forward)
define(np.polyder, _polyder_p, None, pushforward=linear)
define(np.polyint, _polyint_p, None, _polyint_k, pushforward=linear)
define(np.polydiv, _polydiv_u, _polydiv_v, pushforward=_polydiv_forward)
define(np.poly, _poly_back, pushforward=_poly_forward, check=_poly_check)


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
