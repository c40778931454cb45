"""Rules for ``scipy.spatial.distance``: ``cdist`` and ``pdist`` for the metrics
``'euclidean'``, ``'sqeuclidean'``, ``'seuclidean'`` (with ``V``), ``'cityblock'``,
``'minkowski'`` (``p``), ``'chebyshev'``, ``'cosine'`` and ``'correlation'``, and
``squareform`` (linear: a gather).

With ``G`` the cotangent of ``D[i, j] = d(a_i, b_j)``, each row's cotangent is
``sum_j G[i, j] ∂d/∂a_i``:

- ``sqeuclidean``: ``dA = 2 (G 1 * A - G B)``, ``dB = 2 (G^T 1 * B - G^T A)`` (matrix
  products, no ``(mA, mB, n)`` array); ``euclidean`` the same with ``G / (2 D)``,
  ``seuclidean`` with the columns scaled by ``1 / sqrt(V)``;
- ``cosine``: ``D = 1 - S``, ``S = A B^T / (|a| |b|^T)``, so
  ``dA = -(G / |b|^T) B / |a| + ((G S) 1) A / |a|^2``; ``correlation`` is ``cosine`` of the
  rows less their means, and centres its cotangents the same way;
- ``cityblock``, ``minkowski`` and ``chebyshev`` read the signs (and powers) of the pairwise
  differences, an ``(mA, mB, n)`` array in the pullback, as in the forward.

At a pair of equal points, where ``euclidean``, ``minkowski`` and the norms of ``cosine`` have
no derivative, the cotangent is 0 (a subgradient; not NaN). ``pdist(X)`` is the upper triangle
of ``cdist(X, X)``: its cotangent is that of ``cdist`` for the symmetric ``G`` with the
triangle filled in, taken for both arguments. Every formula is written in NumPy operations
that have rules, so the rules can be differentiated again. Other metrics, a callable metric,
weights ``w=`` and ``out=`` are refused by name.

>>> import numpy as np, scipy.spatial.distance as distance
>>> from chainrules import rrule, unthunk
>>> y, pullback = rrule(distance.cdist, np.array([[0.0, 0.0]]), np.array([[3.0, 4.0]]))
>>> unthunk(pullback(np.ones((1, 1)))[1])
array([[-0.6, -0.8]])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.spatial.distance as distance

from ....core.dtypes import tangent_dtype
from ....core.sparse import scatter_sum
from ...define import Call, define, dense_tangent, unsupported

__all__: list = []

_METRICS = ("euclidean", "sqeuclidean", "seuclidean", "cityblock", "minkowski", "chebyshev",
            "cosine", "correlation")
# SciPy's other names for them
_ALIASES = {"euclid": "euclidean", "eu": "euclidean", "e": "euclidean", "sqe": "sqeuclidean",
            "sqeuclid": "sqeuclidean", "cityblock": "cityblock", "cblock": "cityblock",
            "cb": "cityblock", "c": "cityblock", "manhattan": "cityblock",
            "chebychev": "chebyshev", "cheby": "chebyshev", "cheb": "chebyshev",
            "ch": "chebyshev", "cos": "cosine", "co": "correlation", "mi": "minkowski",
            "minkowsky": "minkowski", "m": "minkowski", "pnorm": "minkowski",
            "se": "seuclidean", "s": "seuclidean"}


def _metric(call: Call) -> str:
    metric = call["metric"]
    metric = "euclidean" if metric is None else metric
    return _ALIASES.get(metric, metric) if isinstance(metric, str) else metric


def _check(call: Call) -> None:
    metric = _metric(call)
    if not isinstance(metric, str):
        raise NotImplementedError(
            f"{call.rule.name}: a callable metric is not supported in differentiated code; "
            f"compute the distances with NumPy broadcasting, e.g. "
            f"np.sqrt(np.sum((A[:, None] - B[None]) ** 2, axis=-1)).")
    if metric not in _METRICS:
        raise unsupported(call.rule.name, "metric", metric, ", ".join(map(repr, _METRICS)))
    if metric == "seuclidean" and call.kwargs.get("V") is None:
        raise NotImplementedError(
            f"{call.rule.name}: metric='seuclidean' without V= is not supported in "
            f"differentiated code (V would be the inputs' own variances); pass "
            f"V=np.var(np.vstack([XA, XB]), axis=0, ddof=1).")
    for name in ("XA", "XB", "X"):
        value = call[name]
        if value is not None and np.iscomplexobj(value):
            raise TypeError(f"{call.rule.name}: complex points are not supported (SciPy "
                            f"computes distances of real vectors).")


def _safe_divide(numerator: Any, denominator: Any) -> Any:
    """``numerator / denominator`` where ``denominator > 0``, else 0."""
    positive = denominator > 0
    return np.where(positive, numerator / np.where(positive, denominator, 1.0), 0.0)


def _norms(x: Any) -> Any:
    return np.sqrt(np.sum(x * x, axis=1))


def _centred(x: Any) -> Any:
    return x - np.mean(x, axis=1, keepdims=True)


def _pair_cotangents(metric: str, A: Any, B: Any, D: Any, G: Any, V: Any, p: Any) -> tuple:
    """``(dA, dB)`` for the cotangent ``G`` of ``D = cdist(A, B, metric)``."""
    if metric in ("sqeuclidean", "euclidean", "seuclidean"):
        H = G if metric == "sqeuclidean" else _safe_divide(G, 2 * D)
        scale = 1.0 if metric != "seuclidean" else 1.0 / np.asarray(V)
        dA = 2 * (np.sum(H, axis=1)[:, None] * A - H @ B) * scale
        dB = 2 * (np.sum(H, axis=0)[:, None] * B - H.T @ A) * scale
        return dA, dB
    if metric in ("cosine", "correlation"):
        if metric == "correlation":
            A, B = _centred(A), _centred(B)
        na, nb = _norms(A), _norms(B)
        S = 1 - D
        F = -_safe_divide(G, na[:, None] * nb[None, :])  # G_S / (|a| |b|), G_S = -G
        GS = -G * S
        dA = F @ B - _safe_divide(np.sum(GS, axis=1), na * na)[:, None] * A
        dB = F.T @ A - _safe_divide(np.sum(GS, axis=0), nb * nb)[:, None] * B
        if metric == "correlation":
            dA, dB = _centred(dA), _centred(dB)
        return dA, dB
    difference = A[:, None, :] - B[None, :, :]
    partial = _partial_of_difference(metric, difference, D, p)  # ∂D[i, j] / ∂a_i
    weighted = G[:, :, None] * partial
    return np.sum(weighted, axis=1), -np.sum(weighted, axis=0)


def _partial_of_difference(metric: str, difference: Any, D: Any, p: Any) -> Any:
    """``∂d(a, b)/∂a`` for each pair, from ``a - b`` (an ``(mA, mB, n)`` array)."""
    if metric == "cityblock":
        return np.sign(difference)
    if metric == "chebyshev":
        size = np.abs(difference)
        largest = np.argmax(size, axis=-1)[..., None]
        first = np.arange(size.shape[-1]) == largest  # the first largest, one per pair
        return np.where(first, np.sign(difference), 0.0)
    p = 2.0 if p is None else p
    size = np.abs(difference)
    return np.sign(difference) * _safe_divide(size ** (p - 1), (D ** (p - 1))[..., None])


def _pair_tangent(metric: str, A: Any, B: Any, D: Any, dA: Any, dB: Any, V: Any,
                  p: Any) -> Any:
    """The tangent of ``D = cdist(A, B, metric)`` along ``dA`` and ``dB``."""
    if metric in ("sqeuclidean", "euclidean", "seuclidean"):
        scale = 1.0 if metric != "seuclidean" else 1.0 / np.asarray(V)
        square = 2 * (np.sum(A * dA * scale, axis=1)[:, None] - (dA * scale) @ B.T
                      - (A * scale) @ dB.T + np.sum(B * dB * scale, axis=1)[None, :])
        return square if metric == "sqeuclidean" else _safe_divide(square, 2 * D)
    if metric in ("cosine", "correlation"):
        if metric == "correlation":
            A, B, dA, dB = _centred(A), _centred(B), _centred(dA), _centred(dB)
        na, nb = _norms(A), _norms(B)
        S = 1 - D
        dS = _safe_divide(dA @ B.T + A @ dB.T, na[:, None] * nb[None, :]) \
            - S * _safe_divide(np.sum(A * dA, axis=1), na * na)[:, None] \
            - S * _safe_divide(np.sum(B * dB, axis=1), nb * nb)[None, :]
        return -dS
    difference = A[:, None, :] - B[None, :, :]
    partial = _partial_of_difference(metric, difference, D, p)
    return np.sum(partial * (dA[:, None, :] - dB[None, :, :]), axis=-1)


def _options(call: Call) -> tuple:
    return _metric(call), call.kwargs.get("V"), call.kwargs.get("p")


def _cdist_shared(call: Call, dy: Any) -> tuple:
    metric, V, p = _options(call)
    return _pair_cotangents(metric, call["XA"], call["XB"], call.y, dy, V, p)


def _cdist_forward(call: Call, dA: Any, dB: Any, *rest: Any) -> Any:
    metric, V, p = _options(call)
    A, B = call["XA"], call["XB"]
    return _pair_tangent(metric, A, B, call.y, dense_tangent(A, dA), dense_tangent(B, dB), V, p)


def _upper(m: int) -> tuple:
    return np.triu_indices(m, 1)


def _pdist_cotangent(call: Call, dy: Any) -> Any:
    metric, V, p = _options(call)
    X = call["X"]
    m = np.shape(X)[0]
    square = distance.squareform(call.y) if np.size(call.y) else np.zeros((m, m))
    upper = _upper(m)
    G = scatter_sum((m, m), tangent_dtype(np.result_type(dy)) or np.float64, (upper,), dy)
    dA, dB = _pair_cotangents(metric, X, X, square, G, V, p)
    return dA + dB


def _pdist_forward(call: Call, dX: Any, *rest: Any) -> Any:
    metric, V, p = _options(call)
    X = call["X"]
    m = np.shape(X)[0]
    square = distance.squareform(call.y) if np.size(call.y) else np.zeros((m, m))
    return _pair_tangent(metric, X, X, square, dX, dX, V, p)[_upper(m)]


def _squareform_positions(call: Call) -> Any:
    """Where each output of ``squareform(X)`` reads ``X`` (flat positions; -1: a zero)."""
    X = call["X"]
    numbered = np.arange(np.size(X)).reshape(np.shape(X)) + 1
    return distance.squareform(numbered, checks=False) - 1


def _squareform_cotangent(call: Call, dy: Any) -> Any:
    index = np.ravel(call.memo(_squareform_positions))
    kept = index >= 0
    X = call["X"]
    flat = scatter_sum((np.size(X),), tangent_dtype(np.result_type(dy)) or np.float64,
                       (index[kept],), np.ravel(dy)[kept])
    return np.reshape(flat, np.shape(X))


def _squareform_forward(call: Call, dX: Any, *rest: Any) -> Any:
    return distance.squareform(dX, force=call["force"] or "no", checks=False)


define(distance.cdist, lambda call, shared: shared[0], lambda call, shared: shared[1],
       prepare=_cdist_shared, refused=("out", "w"), check=_check, pushforward=_cdist_forward)
define(distance.pdist, _pdist_cotangent, refused=("out", "w"), check=_check,
       pushforward=_pdist_forward)
define(distance.squareform, _squareform_cotangent, pushforward=_squareform_forward,
       refused=())
