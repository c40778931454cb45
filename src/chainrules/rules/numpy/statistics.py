"""Rules for order statistics and second moments: ``median``, ``percentile``, ``quantile``
(and their NaN-ignoring forms), ``cov``, ``corrcoef``, and ``histogram`` and ``bincount``
with weights.

Every pullback and pushforward is written in NumPy operations that have rules themselves, so
each is differentiable again (order 2).

- Quantiles: along the reduced axes, the ``q``-quantile is ``(1 - g) s[k] + g s[k + 1]``, ``s``
  the sorted slice and ``k + g = q (n - 1)`` (``method='linear'``, NumPy's default). Its
  cotangent goes to the two elements of rank ``k`` and ``k + 1`` (a sparse cotangent), and
  ``q`` is differentiable too (``dy/dq = (n - 1)(s[k + 1] - s[k])``, divided by 100 for
  ``percentile``). Ties give the whole weight to the element the sort puts at that rank.
  ``method`` ``'lower'``, ``'higher'`` and ``'midpoint'`` are supported too (piecewise
  constant in ``q``); the other methods, ``weights=`` and ``overwrite_input=True`` are
  refused with an error that names them. The NaN-ignoring forms count only the non-NaN
  elements of each slice (a slice of NaNs gives zero cotangents); the plain forms give NaN
  outputs for slices with a NaN, as NumPy does.
- ``cov(m, y, rowvar, bias, ddof)``: ``C = Xc Xc^H / (N - ddof)`` with ``Xc`` the centred
  variables, so ``dXc = (dC + dC^H) Xc / (N - ddof)``, centred again. ``fweights`` and
  ``aweights`` are refused. ``corrcoef`` is ``C / (s s^T)`` with ``s = sqrt(Re diag C)``,
  pulled back through ``cov``'s rule (NumPy's final clip to [-1, 1] only removes rounding
  and is not differentiated).
- ``histogram(a, bins, range, density, weights)``: the counts are linear in ``weights``
  (each weight's cotangent is the cotangent of its bin; 0 outside the range) and piecewise
  constant in ``a`` (zero derivative). The bin edges are differentiable in ``bins`` when
  it is an array of edges; edges that NumPy computes from the data (an integer ``bins``
  without ``range=``) are not differentiated: a nonzero cotangent for them raises.
- ``bincount(x, weights, minlength)``: the sums are linear in ``weights`` (each weight's
  cotangent is the cotangent of its bin, ``dy[x]``); ``x`` holds integers (no derivative).

>>> import chainrules as cr
>>> cr.grad(lambda a: np.median(a))(np.array([3.0, 1.0, 2.0, 5.0]))
array([0.5, 0. , 0.5, 0. ])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...core.dtypes import tangent_dtype
from ...core.sparse import SparseCotangent, scatter_sum
from ...core.tangents import AbstractZero, ZeroTangent
from ..define import Call, define, normalize_axis_tuple, unsupported

__all__: list[str] = []


def _H(x: Any) -> Any:
    return np.conj(np.swapaxes(x, -1, -2))


# --- quantiles -----------------------------------------------------------------------------------

_METHODS = ("linear", "lower", "higher", "midpoint")


def _method(call: Call) -> str:
    method = call["interpolation"] or call["method"] or "linear"
    return method


def _quantile_check(call: Call) -> None:
    method = _method(call)
    if method not in _METHODS:
        raise unsupported(call.name, "method", method, ", ".join(map(repr, _METHODS)))
    if call["overwrite_input"]:
        raise unsupported(call.name, "overwrite_input", True,
                          "False (the rule reads the input after the call)")
    if call["weights"] is not None:
        raise unsupported(call.name, "weights", "<array>", "None")


class _Ranks:
    """Where each output reads the input: ``index`` (a tuple of index arrays into ``a``, the
    two ranks of every output stacked first), the weights ``low`` and ``high`` of the two
    ranks, the slope in ``q`` of each output, in the shape ``q.shape + kept`` (``kept``:
    the shape of the axes that are not reduced)."""

    __slots__ = ("index", "low", "high", "slope", "shape")


def _ranks(call: Call, scale: float, ignore_nan: bool) -> _Ranks:
    a = np.asarray(call.args[0])
    axis = call["axis"]
    if np.ndim(a) == 0:  # a number: its own median, read as a 1-element array
        a, axis = np.reshape(a, (1,)), None
    ndim, shape = np.ndim(a), np.shape(a)
    axes = tuple(range(ndim)) if axis is None else normalize_axis_tuple(axis, ndim)
    others = tuple(i for i in range(ndim) if i not in axes)
    kept = tuple(shape[i] for i in others)
    length = math.prod(shape[i] for i in axes)
    rows = np.reshape(np.transpose(a, others + axes), kept + (length,))
    order = np.argsort(rows, axis=-1)  # NaNs last
    count = np.sum(~np.isnan(rows), axis=-1) if ignore_nan else np.full(kept, length)
    q = np.asarray(call.args[1]) / scale if scale else np.asarray(0.5)
    q = np.reshape(q, np.shape(q) + (1,) * len(kept))
    position = q * (count - 1)  # traced at order 2 when q is: g below carries dq
    out_shape = np.broadcast_shapes(np.shape(position), kept)
    floor = np.broadcast_to(np.floor(position), out_shape)
    last = np.maximum(count - 1, 0)
    method = _method(call)
    ranks = _Ranks()
    if method == "linear":
        g = position - floor
        low_rank, high_rank = floor, np.minimum(floor + 1, last)
        ranks.low, ranks.high = 1 - g, g
    elif method == "midpoint":
        low_rank, high_rank = floor, np.minimum(np.ceil(np.broadcast_to(position, out_shape)),
                                                last)
        ranks.low = ranks.high = np.full(out_shape, 0.5)
    else:
        rank = floor if method == "lower" else np.ceil(np.broadcast_to(position, out_shape))
        low_rank = high_rank = rank
        ranks.low, ranks.high = np.ones(out_shape), np.zeros(out_shape)
    present = np.broadcast_to(count > 0, out_shape)
    ranks.low = np.where(present, ranks.low, 0)
    ranks.high = np.where(present, ranks.high, 0)
    index = []
    full_order = np.broadcast_to(order, out_shape + (length,))
    positions = [np.take_along_axis(full_order, np.clip(r, 0, last).astype(np.intp)[..., None],
                                    -1)[..., 0] for r in (low_rank, high_rank)]
    positions = np.stack(positions)  # (2,) + out_shape: rank k, then rank k + 1
    reduced = np.unravel_index(positions, tuple(shape[i] for i in axes))
    for i in range(ndim):
        if i in axes:
            index.append(reduced[axes.index(i)])
        else:
            along = [1] * (1 + len(out_shape))
            along[1 + len(out_shape) - len(kept) + others.index(i)] = shape[i]
            index.append(np.broadcast_to(np.reshape(np.arange(shape[i]), along),
                                         positions.shape))
    ranks.index, ranks.shape = tuple(index), out_shape
    ranks.slope = 0
    if method == "linear" and scale:
        values = a[ranks.index]
        ranks.slope = np.where(present, (values[1] - values[0]) * (count - 1) / scale, 0)
    return ranks


def _quantile_rule(f: Any, scale: float, ignore_nan: bool) -> None:
    """Register ``f``: ``scale`` divides ``q`` (100 for percentiles; 0: a median, no ``q``)."""
    def ranks(call: Call) -> _Ranks:
        return _ranks(call, scale, ignore_nan)

    def back_a(call: Call, dy: Any) -> Any:
        r = call.memo(ranks)
        dy = np.reshape(dy, r.shape)
        values = np.stack([np.conj(r.low) * dy, np.conj(r.high) * dy])
        a = call.args[0]
        if np.ndim(a) == 0:
            return np.sum(values)
        sparse = SparseCotangent(r.index, values, np.shape(a),
                                 tangent_dtype(np.asarray(a).dtype) or np.float64)
        return sparse if issubclass(type(a), np.ndarray) else sparse.unthunk()

    def back_q(call: Call, dy: Any) -> Any:
        r = call.memo(ranks)
        q_ndim = np.ndim(call.args[1])
        by_output = np.conj(r.slope) * np.reshape(dy, r.shape)
        return np.sum(by_output, axis=tuple(range(q_ndim, len(r.shape))))

    def forward(call: Call, da: Any, dq: Any = ZeroTangent()) -> Any:
        r = call.memo(ranks)
        total: Any = 0
        if not isinstance(da, AbstractZero):
            read = np.reshape(da, (-1,))[r.index] if np.ndim(da) == 0 else \
                np.asarray(da)[r.index]
            total = r.low * read[0] + r.high * read[1]
        if not isinstance(dq, AbstractZero):
            dq = np.reshape(dq, np.shape(dq) + (1,) * (len(r.shape) - np.ndim(dq)))
            total = total + r.slope * dq
        return np.reshape(total + np.zeros(r.shape), np.shape(call.y))

    cotangents = (back_a, back_q) if scale else (back_a,)
    define(f, *cotangents, pushforward=forward, check=_quantile_check)


_quantile_rule(np.median, 0, ignore_nan=False)
_quantile_rule(np.nanmedian, 0, ignore_nan=True)
_quantile_rule(np.quantile, 1, ignore_nan=False)
_quantile_rule(np.nanquantile, 1, ignore_nan=True)
_quantile_rule(np.percentile, 100, ignore_nan=False)
_quantile_rule(np.nanpercentile, 100, ignore_nan=True)


# --- cov, corrcoef -------------------------------------------------------------------------------

def _variables(call: Call) -> tuple:
    """``X`` (variables by observations, ``m``'s rows then ``y``'s) and ``m``'s row count."""
    m, y, rowvar = call.args[0], call["y"], call["rowvar"]
    X = np.atleast_2d(m)
    if not rowvar and np.ndim(m) != 1:
        X = np.transpose(X)
    rows = np.shape(X)[0]
    if y is not None:
        Y = np.atleast_2d(y)
        if not rowvar and np.shape(Y)[0] != 1:
            Y = np.transpose(Y)
        X = np.concatenate([X, Y], axis=0)
    return X, rows


def _divisor(call: Call, observations: int) -> Any:
    ddof = call["ddof"]
    if ddof is None:
        ddof = 0 if call["bias"] else 1
    return observations - ddof


def _centred(call: Call) -> tuple:
    X, rows = _variables(call)
    return X - np.mean(X, axis=1, keepdims=True), rows, _divisor(call, np.shape(X)[1])


def _cov_check(call: Call) -> None:
    for option in ("fweights", "aweights"):
        if call[option] is not None:
            raise unsupported(call.name, option, "<array>",
                              f"{option}=None; weight the observations yourself, e.g. with "
                              f"np.average")


def _cov_back(call: Call, dC: Any) -> tuple:
    """The cotangents of ``m`` and ``y`` for the cotangent ``dC`` of the covariance."""
    Xc, rows, divisor = call.memo(_centred)
    p = np.shape(Xc)[0]
    dC = np.reshape(dC, (p, p))
    dXc = (dC + _H(dC)) @ Xc / divisor
    dX = dXc - np.mean(dXc, axis=1, keepdims=True)
    parts = []
    for part, value in ((dX[:rows], call.args[0]), (dX[rows:], call["y"])):
        if value is not None and not call["rowvar"] and np.shape(part)[0] != 1:
            part = np.transpose(part)
        parts.append(None if value is None else np.reshape(part, np.shape(value)))
    return tuple(parts)


def _cov_forward(call: Call, dm: Any, dy: Any) -> Any:
    """The tangent of the covariance (a ``(p, p)`` matrix)."""
    Xc, rows, divisor = call.memo(_centred)
    tangents = []
    for d, value, start in ((dm, call.args[0], 0), (dy, call["y"], rows)):
        if value is None:
            continue
        size = rows if start == 0 else np.shape(Xc)[0] - rows
        if isinstance(d, AbstractZero):
            tangents.append(np.zeros((size, np.shape(Xc)[1])))
            continue
        D = np.atleast_2d(d)
        if not call["rowvar"] and (np.ndim(value) != 1 if start == 0 else np.shape(D)[0] != 1):
            D = np.transpose(D)
        tangents.append(D)
    dX = np.concatenate(tangents, axis=0) if len(tangents) > 1 else tangents[0]
    dXc = dX - np.mean(dX, axis=1, keepdims=True)
    product = dXc @ _H(Xc)
    return (product + _H(product)) / divisor


define(np.cov, lambda call, dC: _cov_back(call, dC)[0], lambda call, dC: _cov_back(call, dC)[1],
       pushforward=lambda call, dm, dy=ZeroTangent(), *rest: np.reshape(
           _cov_forward(call, dm, dy), np.shape(call.y)),
       check=_cov_check)


def _correlation_parts(call: Call) -> tuple:
    """``(C, s, R)`` with ``C`` the covariance (p, p), ``s = sqrt(Re diag C)``, ``R``."""
    C = np.cov(call.args[0], call["y"], call["rowvar"])
    C = np.reshape(C, (int(round(math.sqrt(np.size(C)))),) * 2)
    s = np.sqrt(np.real(np.diagonal(C)))
    return C, s, C / (s[:, None] * s[None, :])


class _AsCov:
    """The record of ``cov(m, y, rowvar)`` for a ``corrcoef`` call: its formulas reuse cov's."""

    def __init__(self, call: Call):
        self.call = call
        self.args = call.args[:1]
        self._memo: dict = {}

    def __getitem__(self, name: str) -> Any:
        return {"bias": False, "ddof": None}.get(name, None) if name in ("bias", "ddof") \
            else self.call[name]

    def memo(self, compute: Any) -> Any:
        if compute not in self._memo:
            self._memo[compute] = compute(self)
        return self._memo[compute]


def _corrcoef_dC(call: Call, dR: Any) -> Any:
    C, s, R = call.memo(_correlation_parts)
    G = np.reshape(dR, np.shape(C))
    scale = s[:, None] * s[None, :]
    through_s = -np.sum(np.real(np.conj(G) * R), axis=1) - np.sum(np.real(np.conj(G) * R),
                                                                   axis=0)
    return G / scale + np.diag(through_s / (2 * s * s))


def _corrcoef_back(call: Call, dR: Any, position: int) -> Any:
    return _cov_back(call.memo(_AsCov), _corrcoef_dC(call, dR))[position]


def _corrcoef_forward(call: Call, dx: Any, dy: Any = ZeroTangent(), *rest: Any) -> Any:
    C, s, R = call.memo(_correlation_parts)
    dC = _cov_forward(call.memo(_AsCov), dx, dy)
    u = np.real(np.diagonal(dC)) / (2 * s * s)
    dR = dC / (s[:, None] * s[None, :]) - R * (u[:, None] + u[None, :])
    return np.reshape(dR, np.shape(call.y))


define(np.corrcoef, lambda call, dR: _corrcoef_back(call, dR, 0),
       lambda call, dR: _corrcoef_back(call, dR, 1), pushforward=_corrcoef_forward,
       refused=("out", "bias", "ddof"))


# --- histogram -----------------------------------------------------------------------------------

def _edges_from_data(call: Call) -> bool:
    return np.ndim(call["bins"]) == 0 and call["range"] is None


def _histogram_a(call: Call, dy: list) -> Any:
    if not isinstance(dy[1], AbstractZero) and _edges_from_data(call):
        raise NotImplementedError(
            f"{call.name}: the bin edges computed from the traced data are not "
            f"differentiated; pass range=(low, high) or the bin edges as bins= (the counts "
            f"have a zero derivative in the data).")
    return ZeroTangent()


def _histogram_bins(call: Call, dy: list) -> Any:
    """The cotangent of bin edges given as an array: the edges' own, and with
    ``density=True`` the counts' through the bin widths (``hist = counts / (widths S)``)."""
    dh, dedges = dy
    total: Any = ZeroTangent() if isinstance(dedges, AbstractZero) else dedges
    if call["density"] and not isinstance(dh, AbstractZero):
        hist, edges = call.y
        by_width = -np.conj(hist / np.diff(np.asarray(edges))) * dh
        total = total + (np.pad(by_width, (1, 0)) - np.pad(by_width, (0, 1)))
    return total


def _bins_of(call: Call) -> tuple:
    """The bin of each element of ``a`` (flattened) and whether it falls in the range."""
    a, edges = np.ravel(np.asarray(call.args[0])), np.asarray(call.y[1])
    inside = np.greater_equal(a, edges[0]) & np.less_equal(a, edges[-1])
    bins = np.clip(np.searchsorted(edges, a, "right") - 1, 0, np.shape(edges)[0] - 2)
    return bins, inside


def _weight_total(call: Call) -> Any:
    """The sum of the weights that fall in the range (what ``density=True`` divides by)."""
    bins, inside = call.memo(_bins_of)
    return np.sum(np.where(inside, np.ravel(call["weights"]), 0))


def _histogram_weights(call: Call, dy: list) -> Any:
    dh = dy[0]
    if isinstance(dh, AbstractZero):
        return ZeroTangent()
    if call["density"]:  # hist = counts / (widths * S), S the total weight in the range
        hist, edges = call.y
        total = np.conj(call.memo(_weight_total))
        dh = (dh / np.diff(np.asarray(edges)) - np.sum(np.conj(hist) * dh)) / total
    bins, inside = call.memo(_bins_of)
    return np.reshape(np.where(inside, dh[bins], 0), np.shape(call["weights"]))


def _histogram_forward(call: Call, da: Any, dbins: Any, drange: Any, ddensity: Any,
                       dweights: Any = ZeroTangent()) -> list:
    dh: Any = ZeroTangent()
    if not isinstance(dweights, AbstractZero):
        bins, inside = call.memo(_bins_of)
        edges = np.asarray(call.y[1])
        dweights = np.ravel(dweights)
        dh = scatter_sum((np.shape(edges)[0] - 1,), np.asarray(dweights).dtype,
                         (bins[inside],), dweights[inside])
        if call["density"]:
            total = call.memo(_weight_total)
            dh = dh / (np.diff(edges) * total) - call.y[0] * np.sum(dh) / total
    dedges: Any = ZeroTangent()
    if not isinstance(dbins, AbstractZero) and np.ndim(call["bins"]) == 1:
        dedges = dbins
        if call["density"]:
            hist, edges = call.y
            dh = (0 if isinstance(dh, AbstractZero) else dh) - hist * np.diff(dbins) / \
                np.diff(np.asarray(edges))
    return [dh, dedges]


define(np.histogram, _histogram_a, _histogram_bins, None, None, _histogram_weights,
       pushforward=_histogram_forward)


# --- bincount ------------------------------------------------------------------------------------

def _bincount_weights(call: Call, dy: Any) -> Any:
    """Each weight's cotangent is that of its bin."""
    return np.reshape(dy[np.asarray(call.args[0])], np.shape(call["weights"]))


def _bincount_forward(call: Call, dx: Any, dweights: Any = ZeroTangent(),
                      dminlength: Any = ZeroTangent()) -> Any:
    if isinstance(dweights, AbstractZero):
        return ZeroTangent()
    return scatter_sum(np.shape(call.y), np.asarray(dweights).dtype,
                       (np.ravel(np.asarray(call.args[0])),), np.ravel(dweights))


define(np.bincount, None, _bincount_weights, None, pushforward=_bincount_forward)
