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
  Every ``method`` of NumPy's: the other continuous ones (``'hazen'``, ``'weibull'``,
  ``'median_unbiased'``, ``'normal_unbiased'``, ``'interpolated_inverted_cdf'``) put ``k + g``
  at ``n q + alpha + q (1 - alpha - beta) - 1``, clipped to ``[0, n - 1]`` (``dy/dq`` is 0
  where clipped); the discontinuous ones (``'lower'``, ``'higher'``, ``'nearest'``,
  ``'midpoint'``, ``'inverted_cdf'``, ``'averaged_inverted_cdf'``, ``'closest_observation'``)
  read the rank, or the two ranks halved, that NumPy's own quantile of the ranks
  ``0..n-1`` gives (piecewise constant in ``q``). ``weights=`` and ``overwrite_input=True``
  are refused with an error that names them. The NaN-ignoring forms count only the non-NaN
  elements of each slice (a slice of NaNs gives zero cotangents); the plain forms give NaN
  outputs for slices with a NaN, as NumPy does.
- ``cov(m, y, rowvar, bias, ddof)``: ``C = Xc Xc^H / (N - ddof)`` with ``Xc`` the centred
  variables, so ``dXc = (dC + dC^H) Xc / (N - ddof)``, centred again. ``fweights`` and
  ``aweights`` are refused. ``corrcoef`` is ``C / (s s^T)`` with ``s = sqrt(Re diag C)``,
  pulled back through ``cov``'s rule (NumPy's final clip to [-1, 1] only removes rounding
  and is not differentiated).
- ``histogram(a, bins, range, density, weights)`` and ``histogram_bin_edges``: the counts
  are linear in ``weights`` (each weight's cotangent is the cotangent of its bin; 0 outside
  the range) and piecewise constant in ``a``. The edges are ``bins`` when it is an array, else
  evenly spaced between ``range`` or the data's minimum and maximum, so they move with those
  (the data's cotangent goes to its extreme elements, ties split evenly); with
  ``density=True`` the counts move with the bin widths too. ``histogram2d`` and
  ``histogramdd``: the same in each dimension (the counts divided by the bins' volumes).
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
from ...core.thunks import unthunk
from ..define import Call, define, normalize_axis_tuple, unsupported

__all__: list[str] = []


def _H(x: Any) -> Any:
    return np.conj(np.swapaxes(x, -1, -2))


# --- quantiles -----------------------------------------------------------------------------------

# NumPy's continuous methods: the virtual index of q among n sorted values is
# n q + alpha + q (1 - alpha - beta) - 1, clipped to [0, n - 1] (Hyndman and Fan's estimators)
_CONTINUOUS = {"linear": (1.0, 1.0), "interpolated_inverted_cdf": (0.0, 1.0),
               "hazen": (0.5, 0.5), "weibull": (0.0, 0.0), "median_unbiased": (1 / 3, 1 / 3),
               "normal_unbiased": (3 / 8, 3 / 8)}
# The others read one rank, or the mean of two, which q selects but does not move.
_METHODS = tuple(_CONTINUOUS) + ("lower", "higher", "midpoint", "nearest", "inverted_cdf",
                                 "averaged_inverted_cdf", "closest_observation")


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
    last = np.maximum(count - 1, 0)
    method = _method(call)
    ranks = _Ranks()
    if method in _CONTINUOUS:
        alpha, beta = _CONTINUOUS[method]
        rate = count - 1 if method == "linear" else count + 1 - alpha - beta
        position = q * rate  # traced at order 2 when q is: g below carries dq
        if method != "linear":  # (linear's stays in [0, n - 1])
            position = position + (alpha - 1)
        # where q moves it (not clipped; at 0, the derivative from the right)
        moves = (position >= 0) & (position < last)
        if method != "linear":
            position = np.clip(position, 0, last)
    else:
        position, rate, moves = _virtual_index(method, q, count), 0, False
    out_shape = np.broadcast_shapes(np.shape(position), kept)
    floor = np.broadcast_to(np.floor(position), out_shape)
    g = position - floor
    low_rank, high_rank = floor, np.minimum(floor + 1, last)
    ranks.low, ranks.high = 1 - g, g
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
    if method in _CONTINUOUS and scale:
        values = a[ranks.index]
        ranks.slope = np.where(present & moves, (values[1] - values[0]) * rate / scale, 0)
    return ranks


def _virtual_index(method: str, q: Any, count: Any) -> Any:
    """Where ``method`` reads the sorted values of each row for ``q`` (an integer rank, or a
    half-way point for a mean of two): NumPy's quantile of the ranks themselves,
    ``np.arange(n)``, once per distinct row length ``n``."""
    position: Any = 0.0
    for n in np.unique(count):
        if n > 0:
            ranks = np.quantile(np.arange(n, dtype=np.float64), q, method=method)
            position = np.where(count == n, ranks, position)
    return position


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


# --- histogram and histogram_bin_edges -----------------------------------------------------------
# The counts are piecewise constant in the data and linear in the weights. The edges are
# ``bins`` itself when it is an array; else evenly spaced from ``lo`` to ``hi``, which are
# ``range`` when given and the data's extrema otherwise (NumPy widens equal ones by 0.5 each
# way): ``d edges = (1 - t) dlo + t dhi``, ``t = k / n``. With ``density=True`` the counts are
# divided by the bin widths, ``d hist = -hist diff(d edges) / widths``.

def _edges_of(call: Call) -> np.ndarray:
    """The bin edges of the call's output (histogram's second output, or bin_edges' own)."""
    return np.asarray(call.y[1] if isinstance(call.y, tuple) else call.y)


def _given_edges(call: Call) -> bool:
    return np.ndim(call["bins"]) == 1


def _ends(edges: Any) -> tuple:
    """``(1 - t, t)``: how evenly spaced edges move with their first and their last."""
    t = np.arange(np.shape(edges)[0]) / (np.shape(edges)[0] - 1)
    return 1 - t, t


def _edge_ends(call: Call) -> tuple:
    return _ends(_edges_of(call))


def _shares(values: Any) -> tuple:
    """Weights on ``values`` of their minimum and of their maximum (ties split evenly)."""
    low, high = values == np.min(values), values == np.max(values)
    return low / np.sum(low), high / np.sum(high)


def _extrema_shares(call: Call) -> tuple:
    return _shares(np.asarray(call.args[0]))


def _histogram_shared(call: Call, dy: Any) -> tuple:
    """``(dh, dedges)``: the counts' cotangent and the edges' whole cotangent (their own, and
    with ``density=True`` the counts' through the bin widths); zeros as None."""
    dh, dedges = dy if isinstance(call.y, tuple) else (ZeroTangent(), dy)
    dh = None if isinstance(dh, AbstractZero) else dh
    total = None if isinstance(dedges, AbstractZero) else dedges
    if call["density"] and dh is not None:
        hist, edges = call.y
        by_width = -np.conj(hist / np.diff(np.asarray(edges))) * dh
        widths = np.pad(by_width, (1, 0)) - np.pad(by_width, (0, 1))
        total = widths if total is None else total + widths
    return dh, total


def _ends_back(call: Call, dedges: Any) -> tuple:
    """The cotangents of ``lo`` and ``hi`` for the edges' cotangent ``dedges``."""
    low, high = _edge_ends(call)
    return np.sum(low * dedges), np.sum(high * dedges)


def _histogram_a(call: Call, shared: tuple) -> Any:
    dedges = shared[1]
    if dedges is None or _given_edges(call) or call["range"] is not None:
        return ZeroTangent()  # the counts: piecewise constant in the data
    to_low, to_high = call.memo(_extrema_shares)
    d_low, d_high = _ends_back(call, dedges)
    return to_low * d_low + to_high * d_high


def _histogram_bins(call: Call, shared: tuple) -> Any:
    dedges = shared[1]
    return dedges if dedges is not None and _given_edges(call) else ZeroTangent()


def _histogram_range(call: Call, shared: tuple) -> Any:
    dedges = shared[1]
    if dedges is None or _given_edges(call) or call["range"] is None:
        return ZeroTangent()
    return list(_ends_back(call, dedges))


def _bins_of(call: Call) -> tuple:
    """The bin of each element of ``a`` (flattened) and whether it falls in the range."""
    a, edges = np.ravel(np.asarray(call.args[0])), _edges_of(call)
    inside = np.greater_equal(a, edges[0]) & np.less_equal(a, edges[-1])
    bins = np.clip(np.searchsorted(edges, a, "right") - 1, 0, np.shape(edges)[0] - 2)
    return bins, inside


def _weight_total(call: Call) -> Any:
    """The sum of the weights that fall in the range (what ``density=True`` divides by)."""
    bins, inside = call.memo(_bins_of)
    return np.sum(np.where(inside, np.ravel(call["weights"]), 0))


def _histogram_weights(call: Call, shared: tuple) -> Any:
    dh = shared[0]
    if dh is None:
        return ZeroTangent()
    if call["density"]:  # hist = counts / (widths * S), S the total weight in the range
        hist, edges = call.y
        total = np.conj(call.memo(_weight_total))
        dh = (dh / np.diff(np.asarray(edges)) - np.sum(np.conj(hist) * dh)) / total
    bins, inside = call.memo(_bins_of)
    return np.reshape(np.where(inside, dh[bins], 0), np.shape(call["weights"]))


def _edges_forward(call: Call, da: Any, dbins: Any, drange: Any) -> Any:
    """The edges' tangent (None for a zero one)."""
    if _given_edges(call):
        return None if isinstance(dbins, AbstractZero) else dbins
    if call["range"] is not None:
        if isinstance(drange, AbstractZero):
            return None
        d_low, d_high = drange
    elif isinstance(da, AbstractZero):
        return None
    else:
        to_low, to_high = call.memo(_extrema_shares)
        d_low, d_high = np.sum(to_low * da), np.sum(to_high * da)
    low, high = _edge_ends(call)
    return low * d_low + high * d_high


def _histogram_forward(call: Call, da: Any, dbins: Any, drange: Any, ddensity: Any = None,
                       dweights: Any = ZeroTangent()) -> Any:
    dedges = _edges_forward(call, da, dbins, drange)
    if not isinstance(call.y, tuple):  # histogram_bin_edges
        return ZeroTangent() if dedges is None else dedges
    dh: Any = ZeroTangent()
    if not isinstance(dweights, AbstractZero):
        bins, inside = call.memo(_bins_of)
        edges = _edges_of(call)
        dweights = np.ravel(dweights)
        dh = scatter_sum((np.shape(edges)[0] - 1,), np.asarray(dweights).dtype,
                         (bins[inside],), dweights[inside])
        if call["density"]:
            total = call.memo(_weight_total)
            dh = dh / (np.diff(edges) * total) - call.y[0] * np.sum(dh) / total
    if dedges is not None and call["density"]:
        hist, edges = call.y
        dh = (0 if isinstance(dh, AbstractZero) else dh) - hist * np.diff(dedges) / np.diff(
            np.asarray(edges))
    return [dh, ZeroTangent() if dedges is None else dedges]


define(np.histogram, _histogram_a, _histogram_bins, _histogram_range, None, _histogram_weights,
       prepare=_histogram_shared, pushforward=_histogram_forward)
define(np.histogram_bin_edges, _histogram_a, _histogram_bins, _histogram_range,
       prepare=_histogram_shared,
       pushforward=lambda call, da, dbins, drange, *weights: _histogram_forward(
           call, da, dbins, drange))


# --- histogram2d and histogramdd: the same, per dimension ----------------------------------------

def _is_2d(call: Call) -> bool:
    """Whether the call is histogram2d's, whose output is ``(H, xedges, yedges)``
    (histogramdd's is ``(H, edges)``)."""
    return len(call.y) == 3


def _shared_edges(call: Call) -> bool:
    """Whether histogram2d's ``bins`` is one array of edges for both dimensions."""
    bins = call["bins"]
    return _is_2d(call) and not isinstance(bins, (list, tuple)) and np.ndim(bins) == 1 and \
        len(bins) not in (1, 2)


class _Grid:
    """A call of histogramdd (or histogram2d) seen per dimension ``d``: the sample as columns
    (N, D), the edges, whether ``bins[d]`` gave them, the range pair (None: the data's
    extrema), each sample's bin (flat index into the counts) and whether it is inside."""

    __slots__ = ("columns", "edges", "given", "ranges", "bins", "inside", "counts")

    def __init__(self, call: Call):
        two = _is_2d(call)
        sample = [call.args[0], call.args[1]] if two else call.args[0]
        columns = np.asarray(sample)
        self.columns = columns if np.ndim(columns) == 2 and not isinstance(
            sample, (list, tuple)) else np.atleast_2d(columns).T
        dimensions = np.shape(self.columns)[1]
        self.counts, self.edges = call.y[0], [np.asarray(e) for e in (
            call.y[1:] if two else call.y[1])]
        bins = call["bins"]
        if _shared_edges(call):
            bins = [bins, bins]
        bins = bins if isinstance(bins, (list, tuple)) or np.ndim(bins) > 0 else \
            [bins] * dimensions
        self.given = [np.ndim(b) == 1 for b in bins]
        ranges = call["range"]
        self.ranges = [None] * dimensions if ranges is None else list(ranges)
        positions, inside = [], np.ones(np.shape(self.columns)[0], bool)
        for d, edges in enumerate(self.edges):
            x = self.columns[:, d]
            position = np.searchsorted(edges, x, "right")
            position[x == edges[-1]] -= 1
            inside &= (position >= 1) & (position < np.shape(edges)[0])
            positions.append(np.clip(position - 1, 0, np.shape(edges)[0] - 2))
        self.bins = np.ravel_multi_index(positions, np.shape(self.counts))
        self.inside = inside

    def widths(self, d: int) -> np.ndarray:
        """Dimension ``d``'s bin widths, shaped to broadcast against the counts."""
        shape = [1] * len(self.edges)
        shape[d] = -1
        return np.reshape(np.diff(self.edges[d]), shape)

    def ends(self, d: int) -> tuple:
        return _ends(self.edges[d])

    def extrema_shares(self, d: int) -> tuple:
        return _shares(self.columns[:, d])


def _dd_shared(call: Call, dy: list) -> tuple:
    """``(dH, [dedges per dimension])``: the counts' cotangent and each dimension's edges'
    whole cotangent (their own and, with density=True, the counts' through the widths)."""
    grid = call.memo(_Grid)
    dH = None if isinstance(dy[0], AbstractZero) else dy[0]
    if _is_2d(call):
        own = list(dy[1:])
    else:  # a list of the edges' cotangents, or a Tangent of the list (missing: zero)
        edges = dy[1]
        own = [edges if isinstance(edges, AbstractZero) else unthunk(edges[d])
               for d in range(len(grid.edges))]
    dedges = [None if isinstance(d, AbstractZero) else d for d in own]
    if call["density"] and dH is not None:
        weighted = np.conj(grid.counts) * dH
        for d in range(len(grid.edges)):
            others = tuple(axis for axis in range(len(grid.edges)) if axis != d)
            by_width = -np.sum(weighted, axis=others) / np.diff(grid.edges[d])
            widths = np.pad(by_width, (1, 0)) - np.pad(by_width, (0, 1))
            dedges[d] = widths if dedges[d] is None else dedges[d] + widths
    return dH, dedges


def _dd_ends(call: Call, dedges: list, d: int) -> tuple:
    low, high = call.memo(_Grid).ends(d)
    return np.sum(low * dedges[d]), np.sum(high * dedges[d])


def _dd_from_data(call: Call, dedges: list) -> list:
    """The cotangent of each column of the sample (None: zero)."""
    grid = call.memo(_Grid)
    columns: list = []
    for d in range(len(grid.edges)):
        if dedges[d] is None or grid.given[d] or grid.ranges[d] is not None:
            columns.append(None)
            continue
        to_low, to_high = grid.extrema_shares(d)
        d_low, d_high = _dd_ends(call, dedges, d)
        columns.append(to_low * d_low + to_high * d_high)
    return columns


def _dense(columns: list, count: int) -> list:
    return [np.zeros(count) if c is None else c for c in columns]


def _histogramdd_sample(call: Call, shared: tuple) -> Any:
    columns = _dd_from_data(call, shared[1])
    if all(c is None for c in columns):
        return ZeroTangent()
    stacked = np.stack(_dense(columns, np.shape(call.memo(_Grid).columns)[0]), axis=-1)
    sample = call.args[0]
    return [stacked[:, d] for d in range(len(columns))] if isinstance(sample, (list, tuple)) \
        else np.reshape(stacked, np.shape(sample))


def _histogram2d_column(d: int) -> Any:
    def cotangent(call: Call, shared: tuple) -> Any:
        column = _dd_from_data(call, shared[1])[d]
        return ZeroTangent() if column is None else column
    return cotangent


def _dd_bins(call: Call, shared: tuple) -> Any:
    grid, dedges = call.memo(_Grid), shared[1]
    given = [dedges[d] if grid.given[d] and dedges[d] is not None else ZeroTangent()
             for d in range(len(grid.edges))]
    if all(isinstance(g, AbstractZero) for g in given):
        return ZeroTangent()
    bins = call["bins"]
    if _shared_edges(call):
        return sum(g for g in given if not isinstance(g, AbstractZero))  # histogram2d, shared
    return given


def _dd_range(call: Call, shared: tuple) -> Any:
    grid, dedges = call.memo(_Grid), shared[1]
    pairs = [list(_dd_ends(call, dedges, d)) if grid.ranges[d] is not None and not grid.given[d]
             and dedges[d] is not None else ZeroTangent() for d in range(len(grid.edges))]
    return ZeroTangent() if all(isinstance(p, AbstractZero) for p in pairs) else pairs


def _dd_weight_total(call: Call) -> Any:
    grid = call.memo(_Grid)
    return np.sum(np.where(grid.inside, np.ravel(call["weights"]), 0))


def _dd_weights(call: Call, shared: tuple) -> Any:
    dH = shared[0]
    if dH is None:
        return ZeroTangent()
    grid = call.memo(_Grid)
    if call["density"]:  # H = counts / (volumes S), S the total weight inside
        volumes = math.prod(grid.widths(d) for d in range(len(grid.edges)))
        total = np.conj(call.memo(_dd_weight_total))
        dH = (dH / volumes - np.sum(np.conj(grid.counts) * dH)) / total
    return np.reshape(np.where(grid.inside, np.ravel(dH)[grid.bins], 0),
                      np.shape(call["weights"]))


def _dd_forward(call: Call, *dargs: Any) -> list:
    grid = call.memo(_Grid)
    two = _is_2d(call)
    dsample = [dargs[0], dargs[1]] if two else dargs[0]
    dbins, drange = dargs[2:4] if two else dargs[1:3]
    dweights = dargs[5] if two and len(dargs) > 5 else (
        dargs[4] if not two and len(dargs) > 4 else ZeroTangent())
    dimensions = len(grid.edges)
    if isinstance(dbins, AbstractZero) or not any(grid.given):
        dbins = [ZeroTangent()] * dimensions
    elif _shared_edges(call):
        dbins = [dbins, dbins]
    if isinstance(drange, AbstractZero):
        drange = [ZeroTangent()] * dimensions
    dedges: list = []
    for d in range(dimensions):
        if grid.given[d]:
            dedges.append(None if isinstance(dbins[d], AbstractZero) else dbins[d])
            continue
        if grid.ranges[d] is not None:
            if isinstance(drange[d], AbstractZero):
                dedges.append(None)
                continue
            d_low, d_high = drange[d]
        else:
            column = dsample[d] if isinstance(dsample, (list, tuple)) else (
                None if isinstance(dsample, AbstractZero) else np.reshape(
                    dsample, np.shape(grid.columns))[:, d])
            if column is None or isinstance(column, AbstractZero):
                dedges.append(None)
                continue
            to_low, to_high = grid.extrema_shares(d)
            d_low, d_high = np.sum(to_low * column), np.sum(to_high * column)
        low, high = grid.ends(d)
        dedges.append(low * d_low + high * d_high)
    dH: Any = ZeroTangent()
    if not isinstance(dweights, AbstractZero):
        dweights = np.ravel(dweights)
        flat = scatter_sum((np.size(grid.counts),), np.asarray(dweights).dtype,
                           (grid.bins[grid.inside],), dweights[grid.inside])
        dH = np.reshape(flat, np.shape(grid.counts))
        if call["density"]:
            volumes = math.prod(grid.widths(d) for d in range(dimensions))
            total = call.memo(_dd_weight_total)
            dH = dH / (volumes * total) - grid.counts * np.sum(dH) / total
    if call["density"]:
        for d in range(dimensions):
            if dedges[d] is not None:
                shape = [1] * dimensions
                shape[d] = -1
                dH = dH - grid.counts * np.reshape(np.diff(dedges[d]), shape) / grid.widths(d)
    tangents = [ZeroTangent() if e is None else e for e in dedges]
    return [dH] + tangents if two else [dH, tangents]


define(np.histogramdd, _histogramdd_sample, _dd_bins, _dd_range, None, _dd_weights,
       prepare=_dd_shared, pushforward=_dd_forward)
define(np.histogram2d, _histogram2d_column(0), _histogram2d_column(1), _dd_bins, _dd_range,
       None, _dd_weights, prepare=_dd_shared, pushforward=_dd_forward)


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
