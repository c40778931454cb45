"""Linear algebra rules: products (``matmul``, ``dot``, ``einsum``...) and ``np.linalg``.

The table at the end has one `define` line per function (see `chainrules.rules.define`): the cotangent
formula of each positional argument, then the pushforward of those that are not linear in
each argument separately:

    define(np.linalg.inv, lambda call, dy: -H(call.y) @ dy @ H(call.y),
           pushforward=lambda call, da: -call.y @ da @ call.y)

Eigenvectors (``eig``, ``eigh``) and singular vectors (``svd``) have a free phase each (a sign
for real ones): NumPy scales them to unit norm and LAPACK picks the phase, which is not a
smooth function of the matrix. Their tangents keep the norm and fix the phase one way (for
``eig``: ``Re(v_j^H dv_j) = 0``, ``dV = V (F * V^-1 da V)`` corrected so); the gradients are
right for every function of the outputs that does not depend on the phases (eigenvalues,
``|V|^2``, eigenprojectors), the only well-defined ones. ``eig`` of a real matrix with complex
eigenvalues has complex outputs and a real gradient.

Complex convention: the cotangent of an argument is ``conj(d y / d arg)`` applied to ``dy``, so
for ``y = a @ b``: ``da = dy @ b^H`` and ``db = a^H @ dy``. Broadcast batch dimensions are
summed out with `unbroadcast` before projecting.

What each pullback costs, in flops, against its forward (n x n matrices, k right-hand sides);
triangular factors are solved with, never inverted generally (`triangular_solve`, LAPACK's
triangular routines when SciPy is imported); `benchmarks/linalg_pullbacks.py` times them:

    function     forward              pullback
    matmul       2nmp                 2nmp per argument (dy @ b^H, a^H @ dy)
    inv          2n^3                 4n^3: two products with the output
    solve        2n^3/3 + 2n^2k       2n^3/3 + 2n^2k (a^-H dy: NumPy keeps no LU) + 2n^2k
    det          2n^3/3               2n^3: the inverse (an SVD where a is singular)
    slogdet      2n^3/3               2n^3: the inverse
    cholesky     n^3/3                3.3n^3: triangular inverse, three triangular products
                                      (with SciPy); else one product, two triangular solves
    eigh         ~9n^3                4n^3: two products with the eigenvectors
    eigvalsh     ~4n^3/3              ~9n^3 + 2n^3: the eigenvectors, then one product
    svd          ~12n^3               ~8n^3: products with U and V
    qr           4n^3/3               ~6n^3: three products, a triangular solve with R
    pinv, lstsq  an SVD (~12n^3)      ~8n^3: products with the pseudo-inverse
    matrix_power log2(p) products     one product per product of the forward, twice
"""

from __future__ import annotations

import math
import string
import sys
from collections import Counter
from typing import Any

import numpy as np

from ...core.accumulate import accumulate
from ...core.broadcast import unbroadcast
from ...core.dtypes import as_array
from ...core.registry import PRODUCT_FORMS, ProductForm, rrule
from ...core.tangents import AbstractZero, Tangent, ZeroTangent
from ..define import Call, define, dense_tangent
from .indexing import _is_traced_array

inv, solve = np.linalg.inv, np.linalg.solve
# SciPy's triangular solve is used for matrices of this order or more: below it, NumPy's
# general solve was as fast in the benchmarks (benchmarks/linalg_pullbacks.py, QR at n=100),
# SciPy's BLAS being a library of its own whose start after NumPy's costs about as much as
# the flops it saves.
LAPACK_SIZE = 256


def conj(x):
    """``np.conj(x)`` for complex values, ``x`` itself (no copy) for real ones."""
    return np.conj(x) if np.iscomplexobj(x) else x


def H(x):
    """The conjugate transpose of (a stack of) matrices: the last two axes swapped."""
    return conj(np.swapaxes(x, -1, -2))


def triangular_solve(t, b, lower: bool, adjoint: bool = False):
    """``op(t)^-1 b`` for a triangular matrix ``t`` (op: ``t`` itself, or ``t^H`` when
    ``adjoint``): LAPACK's triangular solve, n^2 flops per column of ``b``, through SciPy when
    the program has imported it (``scipy.linalg.solve_triangular``, which has a rule, so the
    engine traces it at order 2) for a matrix of order `LAPACK_SIZE` or more; else, and for
    stacks, NumPy's general solve (an LU first: 2n^3/3 flops more).

    >>> t = np.array([[2.0, 0.0], [1.0, 4.0]])
    >>> triangular_solve(t, np.array([[2.0], [9.0]]), lower=True)
    array([[1.],
           [2.]])
    """
    scipy_linalg = sys.modules.get("scipy.linalg")
    if scipy_linalg is not None and np.ndim(t) == 2 and np.ndim(b) == 2 and \
            np.shape(t)[0] >= LAPACK_SIZE:
        return scipy_linalg.solve_triangular(t, b, lower=lower, trans=2 if adjoint else 0,
                                             check_finite=False)
    return solve(H(t) if adjoint else t, b)


# --- matmul: 1-d operands are promoted to matrices, then un-promoted -------------------------


def _matmul_dy(dy, a_ndim: int, b_ndim: int):
    """``dy`` with the axes that matmul dropped for 1-d operands put back (as size 1)."""
    if b_ndim == 1:
        dy = np.expand_dims(dy, -1)   # expand_dims, not dy[..., None]: dy may be a traced 0-d
    if a_ndim == 1:
        dy = np.expand_dims(dy, -2)
    return dy


def _is_array(x: Any) -> bool:
    """An ndarray, or an engine's traced array (at order 2): one that has ``ndim``, ``.T``."""
    return type(x) is np.ndarray or _is_traced_array(x)


def _outer(left, right):
    # np.outer is np.multiply.outer of vectors; traced values have the function only
    return np.multiply.outer(left, right) if type(left) is np.ndarray and \
        type(right) is np.ndarray else np.outer(left, right)


def _matrix_product_da(a, b, dy):
    """The cotangent of ``a`` in ``a @ b``, a matrix times a real vector or matrix, or a
    vector times a real matrix."""
    if a.ndim == 1:
        return b @ dy
    if b.ndim == 2:
        return dy @ b.T
    return _outer(dy, b)


def _matrix_product_db(a, b, dy):
    """The cotangent of ``b`` in ``a @ b``, a real matrix times a vector or matrix, or a
    real vector times a matrix."""
    if a.ndim == 1:
        return _outer(a, dy)
    return a.T @ dy


def _is_matrix_product(a, b) -> bool:
    """Whether ``a @ b`` is a real matrix times a vector or a matrix of its dtype, or a real
    vector times such a matrix: the products of `_matrix_product_da`, `_matrix_product_db`
    and of matmul's `ProductForm`."""
    return (a.ndim == 2 and 1 <= b.ndim <= 2 or a.ndim == 1 and b.ndim == 2) and \
        a.dtype == b.dtype and a.dtype.kind == "f"


def _matmul_da(call, dy):
    a, b = call.args[:2]
    if _is_array(a) and _is_array(b) and b.dtype.kind == "f" and \
            (a.ndim == 2 and 1 <= b.ndim <= 2 or a.ndim == 1 and b.ndim == 2):
        # a matrix times a real vector or matrix, a vector times a real matrix
        return _matrix_product_da(a, b, dy)
    if _is_array(a) and _is_array(b) and a.ndim == 1 and b.ndim == 1:
        return dy * conj(b)  # two vectors: a number times the other
    a, b = as_array(a), as_array(b)
    matrix_b = b[:, None] if b.ndim == 1 else b
    da = _matmul_dy(dy, a.ndim, b.ndim) @ H(matrix_b)
    return unbroadcast(da[..., 0, :] if a.ndim == 1 else da, a.shape)


def _matmul_db(call, dy):
    a, b = call.args[:2]
    if _is_array(a) and _is_array(b) and a.dtype.kind == "f" and \
            (a.ndim == 2 and 1 <= b.ndim <= 2 or a.ndim == 1 and b.ndim == 2):
        # a real matrix times a vector or matrix, a real vector times a matrix
        return _matrix_product_db(a, b, dy)
    if _is_array(a) and _is_array(b) and a.ndim == 1 and b.ndim == 1:
        return dy * conj(a)
    a, b = as_array(a), as_array(b)
    matrix_a = a[None, :] if a.ndim == 1 else a
    db = H(matrix_a) @ _matmul_dy(dy, a.ndim, b.ndim)
    return unbroadcast(db[..., 0] if b.ndim == 1 else db, b.shape)


# --- tensordot, and the products that are tensordots (dot, inner) ----------------------------


def _contracted_axes(a_ndim: int, b_ndim: int, axes) -> tuple[list[int], list[int]]:
    """``axes`` of ``np.tensordot`` as two lists of non-negative axes of a and of b."""
    if issubclass(type(axes), (int, np.integer)):
        return list(range(a_ndim - axes, a_ndim)), list(range(axes))
    a_axes, b_axes = axes
    a_axes = [a_axes] if issubclass(type(a_axes), (int, np.integer)) else list(a_axes)
    b_axes = [b_axes] if issubclass(type(b_axes), (int, np.integer)) else list(b_axes)
    return [int(i) % a_ndim for i in a_axes], [int(i) % b_ndim for i in b_axes]


def _tensordot_cotangent(dy, a, b, a_axes: list[int], b_axes: list[int], of_b: bool):
    """The cotangent of a in ``tensordot(a, b, (a_axes, b_axes))``; that of b is the same with
    the operands swapped (and dy's axes: b's free ones first)."""
    a, b = as_array(a), as_array(b)
    if of_b:
        a_free_count = a.ndim - len(a_axes)
        dy = np.moveaxis(dy, range(a_free_count), range(np.ndim(dy) - a_free_count, np.ndim(dy)))
        a, b, a_axes, b_axes = b, a, b_axes, a_axes
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [i for i in range(b.ndim) if i not in b_axes]
    # Result axes: a's free axes, then b's contracted axes in b's order.
    g = np.tensordot(dy, conj(b), axes=(list(range(len(a_free), np.ndim(dy))), b_free))
    position = {axis: k for k, axis in enumerate(a_free)}
    b_order = sorted(b_axes)
    for axis_a, axis_b in zip(a_axes, b_axes):
        position[axis_a] = len(a_free) + b_order.index(axis_b)
    return np.transpose(g, [position[axis] for axis in range(a.ndim)])


def _tensordot_axes(call):
    return _contracted_axes(np.ndim(call["a"]), np.ndim(call["b"]), call["axes"])


def _dot_axes(call):
    """dot contracts a's last axis with b's second-to-last (its only one if b is 1-d)."""
    return [np.ndim(call["a"]) - 1], [max(np.ndim(call["b"]) - 2, 0)]


def _inner_axes(call):
    return [np.ndim(call["a"]) - 1], [np.ndim(call["b"]) - 1]


def _product(axes_of, of_b: bool):
    """The cotangent of a (of b) in a tensordot-like product; a scalar operand means ``a * b``."""
    def cotangent(call, dy):
        a, b = call.args[:2]
        if np.ndim(a) == 0 or np.ndim(b) == 0:
            own, other = (b, a) if of_b else (a, b)
            return unbroadcast(dy * conj(as_array(other)), np.shape(own))
        if _is_array(a) and _is_array(b) and a.ndim == 1 and b.ndim == 1 and np.ndim(dy) == 0:
            return dy * conj(a if of_b else b)  # two vectors' inner product: dy times the other
        return _tensordot_cotangent(dy, a, b, *axes_of(call), of_b)
    return cotangent


# --- vdot, outer: products of the flattened operands ----------------------------------------


def _vdot_da(call, dy):
    # vdot(a, b) = sum(conj(a) * b) is antilinear in a: da = b * conj(dy).
    a, b = call.args
    return np.reshape(np.ravel(b) * np.conj(dy), np.shape(a))


def _vdot_db(call, dy):
    a, b = call.args
    return np.reshape(np.ravel(a) * dy, np.shape(b))


def _outer_da(call, dy):
    a, b = call.args[:2]
    return np.reshape(as_array(dy) @ conj(np.ravel(b)), np.shape(a))


def _outer_db(call, dy):
    a, b = call.args[:2]
    return np.reshape(conj(np.ravel(a)) @ as_array(dy), np.shape(b))


def _kron_operands(a, b):
    """a and b reshaped to the same number of dimensions, as np.kron does."""
    a, b = as_array(a), as_array(b)
    ndim = max(a.ndim, b.ndim)
    return a.reshape((1,) * (ndim - a.ndim) + a.shape), b.reshape((1,) * (ndim - b.ndim) + b.shape)


def _kron_cotangent(of_b: bool):
    def cotangent(call, dy):
        return _kron_of(dy, *call.args, of_b)
    return cotangent


def _kron_of(dy, a, b, of_b: bool):
    # kron(a, b)[i0*n0 + j0, ...] = a[i0, ...] * b[j0, ...]: dy read as axes (i0, j0, i1, j1...).
    a_, b_ = _kron_operands(a, b)
    pairs = list(range(2 * a_.ndim))
    dy = np.reshape(dy, [n for sizes in zip(a_.shape, b_.shape) for n in sizes])
    other, other_axes, own_axes = (a_, pairs[0::2], pairs[1::2]) if of_b else (
        b_, pairs[1::2], pairs[0::2])
    g = np.einsum(dy, pairs, conj(other), other_axes, own_axes)
    return g.reshape(np.shape(b if of_b else a))


# --- einsum: each operand's cotangent is an einsum of dy and the other operands -------------

_LABELS = string.ascii_uppercase + string.ascii_lowercase  # sublist label k is _LABELS[k]


def _einsum_spec(call) -> tuple[list[str], str, list, list[int]]:
    """``(input subscripts, output subscripts, operands, operand positions in args)``.

    Both call forms are read (``'ij,jk->ik', a, b`` and ``a, [0, 1], b, [1, 2]``); ellipses
    are replaced by labels of their own, and an implicit output is made explicit (ellipsis
    labels first, then the labels used once, in alphabetical order, as NumPy does).
    """
    args = call.args
    if isinstance(args[0], str):
        subscripts = args[0].replace(" ", "")
        lhs, output = subscripts.split("->") if "->" in subscripts else (subscripts, None)
        inputs, positions = lhs.split(","), list(range(1, len(args)))
    else:
        def text(sublist):
            return "".join("..." if k is Ellipsis else _LABELS[k] for k in sublist)
        pairs = len(args) // 2
        inputs = [text(args[2 * k + 1]) for k in range(pairs)]
        output = text(args[-1]) if len(args) % 2 else None
        positions = [2 * k for k in range(pairs)]
    operands = [args[k] for k in positions]
    explicit = [sub.replace("...", "") for sub in inputs]
    free = [c for c in _LABELS if c not in set("".join(inputs) + (output or ""))]
    ellipsis_ndims = [np.ndim(op) - len(sub) if "..." in full else 0
                      for op, sub, full in zip(operands, explicit, inputs)]
    ellipsis = "".join(free[:max(ellipsis_ndims, default=0)])
    inputs = [sub.replace("...", ellipsis[len(ellipsis) - n:] if n else "")
              for sub, n in zip(inputs, ellipsis_ndims)]
    if output is None:
        counts = Counter("".join(explicit))
        output = ellipsis + "".join(sorted(c for c, n in counts.items() if n == 1))
    else:
        output = output.replace("...", ellipsis)
    return inputs, output, operands, positions


def _einsum_cotangent(call, dy, position: int):
    """The cotangent of operand i: ``einsum(dy, conj(other operands)) -> operand i's labels``.

    Labels that only operand i has (summed away in the forward pass) are broadcast back by a
    vector of ones; repeated labels (``'ii'``) put the result on the diagonal; dimensions of
    size 1 that were broadcast are summed.
    """
    inputs, output, operands, positions = call.memo(_einsum_spec)
    i = positions.index(position)
    sizes: dict[str, int] = {}
    for op, sub in zip(operands, inputs):
        for label, size in zip(sub, np.shape(op)):
            sizes[label] = max(sizes.get(label, 1), size)
    own = inputs[i]
    labels = "".join(dict.fromkeys(own))
    dy = as_array(dy)
    terms = [(dy, output)] + [(conj(as_array(op)), sub) for j, (op, sub) in
                              enumerate(zip(operands, inputs)) if j != i]
    present = set("".join(sub for _, sub in terms))
    terms += [(np.ones(sizes[c], dy.real.dtype), c) for c in labels if c not in present]
    g = np.einsum(",".join(sub for _, sub in terms) + "->" + labels, *(t for t, _ in terms),
                  optimize=len(terms) > 1)
    if len(labels) < len(own):
        g = _on_diagonals(g, labels, own, sizes)
    broadcast = tuple(k for k, (n, m) in enumerate(zip(np.shape(operands[i]), g.shape))
                      if n == 1 and m != 1)
    return g.sum(axis=broadcast, keepdims=True) if broadcast else g


def _on_diagonals(g, labels: str, own: str, sizes: dict):
    """The array of subscripts ``own`` (a label repeated: a diagonal) that is ``g`` (subscripts
    ``labels``, each once) on its diagonals and 0 elsewhere."""
    if type(g) is np.ndarray:
        full = np.zeros([sizes[c] for c in own], g.dtype)
        np.einsum(own + "->" + labels, full)[...] = g  # a writeable view of the diagonal
        return full
    # g may be traced (a pullback differentiated again): no writes, an einsum with identities.
    free = iter(c for c in _LABELS if c not in own)
    renamed, deltas, seen = "", [], set()
    for c in own:
        if c in seen:
            fresh = next(free)
            renamed += fresh
            deltas.append((np.eye(sizes[c], dtype=g.real.dtype), c + fresh))
        else:
            renamed += c
            seen.add(c)
    return np.einsum(",".join([labels] + [sub for _, sub in deltas]) + "->" + renamed, g,
                     *(delta for delta, _ in deltas))


# --- inverse, solve, determinants ------------------------------------------------------------


def _trace(x):
    return np.trace(x, axis1=-2, axis2=-1)


# NumPy 1 reads a b of one dimension less than a as a stack of vectors; NumPy 2, only a 1-d b.
_SOLVE_STACKS_VECTORS = np.linalg.solve(np.ones((1, 1, 1)), np.ones((1, 1))).shape == (1, 1)


def _vectors(a, b) -> bool:
    """Whether ``solve(a, b)`` reads ``b`` as a vector (or a stack of vectors)."""
    return np.ndim(b) == 1 or (_SOLVE_STACKS_VECTORS and np.ndim(b) == np.ndim(a) - 1)


def _solve_shared(call, dy):
    """``a^-H dy``, shared by both cotangents of ``x = solve(a, b)`` (as a stack of matrices)."""
    a, b = call.args
    return np.linalg.solve(H(a), np.asarray(dy)[..., None] if _vectors(a, b) else dy)


def _solve_da(call, g):
    a, b = call.args
    x = call.y[..., None] if _vectors(a, b) else call.y
    return unbroadcast(-g @ H(x), np.shape(a))


def _solve_db(call, g):
    a, b = call.args
    return unbroadcast(g[..., 0] if _vectors(a, b) else g, np.shape(b))


def _solve_pushforward(call, da, db):
    a, b = call.args
    vector = _vectors(a, b)
    x = call.y[..., None] if vector else call.y
    rhs = dense_tangent(b, db)
    rhs = np.asarray(rhs)[..., None] if vector else rhs
    if not isinstance(da, AbstractZero):
        rhs = rhs - da @ x
    dx = np.linalg.solve(a, np.broadcast_to(rhs, np.broadcast_shapes(np.shape(rhs), x.shape)))
    return dx[..., 0] if vector else dx


def _adjugate(a, det):
    """adj(a) = det(a) a^-1, also for singular matrices (where d det / da = adj(a)^T is
    finite): through the SVD a = U S Vh, adj(a) = det(U) det(Vh) V diag(prod_{j != i} s_j) U^H.
    On traced values (the pullback differentiated again) a singular or nearly singular
    matrix takes the cofactors instead, whose derivative is finite and accurate there.
    """
    try:
        inverse = inv(a)
    except np.linalg.LinAlgError:
        if type(a) is not np.ndarray:  # traced: the SVD's derivative is infinite at S = 0
            return _cofactor_adjugate(a)
    else:
        if type(a) is np.ndarray or not np.any(_ill_conditioned(a, inverse)):
            return np.expand_dims(det, (-2, -1)) * inverse
        # Traced and nearly singular: the derivative of det * inv(a) is a difference of
        # terms of size det * cond(a)^2 that cancel; the cofactors' derivative does not.
        return _cofactor_adjugate(a)
    U, S, Vh = np.linalg.svd(a)
    others = np.prod(np.where(np.eye(S.shape[-1], dtype=bool), 1, S[..., None, :]), axis=-1)
    phase = np.linalg.det(U) * np.linalg.det(Vh)
    return np.expand_dims(phase, (-2, -1)) * (H(Vh) * others[..., None, :]) @ H(U)


def _ill_conditioned(a, inverse):
    """Whether ||a|| ||a^-1|| (Frobenius) exceeds 1 / sqrt(eps), for each matrix."""
    size = np.sqrt(np.sum(np.abs(a) ** 2, axis=(-2, -1)) *
                   np.sum(np.abs(inverse) ** 2, axis=(-2, -1)))
    return size > 1 / np.sqrt(np.finfo(np.result_type(a.dtype, np.float32)).eps)


def _cofactor_adjugate(a):
    """adj(a)[j, i] = (-1)^(i+j) det(a without row i and column j): a polynomial in a's
    entries, so it can be differentiated again where a is singular (O(n^5); used only there)."""
    n = np.shape(a)[-1]
    if n == 1:
        return np.ones(np.shape(a), np.result_type(a.dtype, np.float64))
    keep = np.array([[k for k in range(n) if k != i] for i in range(n)])  # (n, n - 1)
    minors = a[..., keep[:, None, :, None], keep[None, :, None, :]]      # (..., n, n, n-1, n-1)
    signs = (-1.0) ** np.add.outer(np.arange(n), np.arange(n))
    return np.swapaxes(signs * np.linalg.det(minors), -1, -2)


def _adjugate_of(call):
    return _adjugate(call.x, call.y)


def _slogdet_da(call, dy):
    # log det a = logabsdet + i*theta, sign = exp(i*theta); d(log det a) = tr(a^-1 da).
    (d_sign, d_logabsdet), y, a = dy, call.y, call.x
    weight = np.real(dense_tangent(y.logabsdet, d_logabsdet))
    if np.iscomplexobj(a) and not isinstance(d_sign, AbstractZero):
        weight = weight - 1j * np.imag(np.conj(d_sign) * y.sign)
    return np.expand_dims(weight, (-2, -1)) * H(inv(a))


def _slogdet_pushforward(call, da):
    tau = _trace(solve(call.x, da))
    sign = call.y.sign
    return 1j * sign * np.imag(tau) if np.iscomplexobj(sign) else ZeroTangent(), np.real(tau)


# --- Hermitian inputs: NumPy reads one triangle (and the real part of the diagonal) ----------


def _hermitian_part(x):
    return (x + H(x)) / 2


def _from_triangle(x, lower: bool):
    """The Hermitian matrix that NumPy builds from ``x``'s lower (or upper) triangle."""
    triangle = np.tril(x, -1) if lower else np.triu(x, 1)
    diagonal = np.real(np.diagonal(x, axis1=-2, axis2=-1))
    return triangle + H(triangle) + _diag(diagonal)


def _to_triangle(g, lower: bool):
    """The adjoint of `_from_triangle`: a Hermitian-input gradient onto the entries read."""
    if type(g) is np.ndarray:  # in two passes over g: g + g^H, masked, diagonal set
        out = g + H(g)
        np.multiply(out, _triangle_mask(g.shape[-1], lower), out=out)
        diagonal = np.einsum("...ii->...i", out)
        diagonal[...] = np.real(np.einsum("...ii->...i", g))
        return out
    g = _hermitian_part(g)
    triangle = 2 * (np.tril(g, -1) if lower else np.triu(g, 1))
    return triangle + _diag(np.real(np.diagonal(g, axis1=-2, axis2=-1)))


_MASKS: dict = {}


def _triangle_mask(n: int, lower: bool) -> np.ndarray:
    """The (cached, read-only) 0/1 mask of the lower or upper triangle of an n x n matrix."""
    mask = _MASKS.get((n, lower))
    if mask is None:
        if len(_MASKS) > 64:
            _MASKS.clear()
        mask = np.tril(np.ones((n, n), bool)) if lower else np.triu(np.ones((n, n), bool))
        mask.setflags(write=False)
        _MASKS[(n, lower)] = mask
    return mask


def _diag(d):
    """A stack of diagonal matrices from a stack of diagonals."""
    d = np.asarray(d)
    return d[..., :, None] * np.eye(d.shape[-1], dtype=d.real.dtype)


def _lower_half(x):
    """The lower triangle with the diagonal halved (Phi in the Cholesky and QR formulas)."""
    if type(x) is np.ndarray:  # one pass, and the diagonal in place
        out = np.tril(x)
        np.einsum("...ii->...i", out)[...] *= 0.5
        return out
    return np.tril(x, -1) + _diag(np.diagonal(x, axis1=-2, axis2=-1) / 2)


def _inverse_gaps(w):
    """F[..., i, j] = 1 / (w_j - w_i) off the diagonal; 0 on it and where w_i and w_j are
    equal up to rounding (ties).

    Zero at ties is the gradient of every function that does not depend on the choice of
    basis inside a degenerate eigenspace (the only well-defined ones): their tie block of
    V^H dV is Hermitian, so it contributes nothing in exact arithmetic, but 1 / (rounding
    error) times a rounding error would.
    """
    gaps = w[..., None, :] - w[..., :, None]
    scale = np.max(np.abs(w), axis=-1, keepdims=True)[..., None]
    tie = np.abs(gaps) <= 8 * w.shape[-1] * np.finfo(w.dtype).eps * scale
    return np.where(tie, 0.0, 1.0 / np.where(tie, 1.0, gaps))


# --- cholesky --------------------------------------------------------------------------------


def cholesky_gradient(L, dL):
    """The gradient of the Hermitian ``a = L L^H`` from that of its lower factor:
    ``L^-H Phi(L^H dL) L^-1`` (Phi: the lower triangle, the diagonal halved).

    Cost against the factorization's n^3/3 flops: on plain matrices with SciPy imported,
    LAPACK's triangular inverse (n^3/3) and three triangular products (n^3 each): 3.3n^3;
    otherwise one product and two triangular solves (4n^3). (A general inverse and three
    dense products took 8n^3.)"""
    if _has_lapack(L, dL):
        return _cholesky_gradient_lapack(L, dL)
    inner = _lower_half(H(L) @ dL)
    left = triangular_solve(L, inner, lower=True, adjoint=True)             # L^-H Phi
    return H(triangular_solve(L, H(left), lower=True, adjoint=True))         # ... L^-1


def _has_lapack(*matrices) -> bool:
    """Whether SciPy's BLAS and LAPACK can take ``matrices``: the program imported SciPy, and
    they are plain 2-D arrays of one float or complex dtype (traced ones, at order 2, take the
    path of operations the engine records)."""
    if "scipy.linalg" not in sys.modules:
        return False
    dtype = matrices[0].dtype if type(matrices[0]) is np.ndarray else None
    return all(type(m) is np.ndarray and m.ndim == 2 and m.dtype == dtype for m in matrices) \
        and dtype.char in "fdFD"


def _cholesky_gradient_lapack(L, dL):
    from scipy.linalg import get_blas_funcs, get_lapack_funcs

    trmm = get_blas_funcs("trmm", (L,))
    L_inv, info = get_lapack_funcs("trtri", (L,))(L, lower=1)
    if info != 0:  # a singular factor (info > 0): the generic path says so as NumPy would
        raise np.linalg.LinAlgError(f"cholesky: the factor is singular (LAPACK trtri: {info})")
    adjoint = 2 if L.dtype.kind == "c" else 1
    inner = _lower_half(trmm(1.0, L, dL, lower=1, trans_a=adjoint))           # Phi(L^H dL)
    left = trmm(1.0, L_inv, inner, lower=1, trans_a=adjoint, overwrite_b=1)   # L^-H Phi
    return trmm(1.0, L_inv, left, lower=1, side=1, overwrite_b=1)             # ... L^-1


def cholesky_tangent(L, da):
    """The tangent of the lower factor of ``a = L L^H`` for a Hermitian tangent ``da``:
    ``L Phi(L^-1 da L^-H)``, by two triangular solves and one product (4n^3 flops)."""
    right = triangular_solve(L, da, lower=True)                               # L^-1 da
    inner = H(triangular_solve(L, H(right), lower=True))                      # ... L^-H
    return L @ _lower_half(inner)


def _cholesky_da(call, dy):
    # a = L L^H; dL = L Phi(L^-1 da L^-H)  =>  the Hermitian gradient L^-H Phi(L^H dL) L^-1.
    upper = call["upper"]
    L, dL = (H(call.y), H(dy)) if upper else (call.y, dy)
    return _to_triangle(cholesky_gradient(L, dL), lower=not upper)


def _cholesky_pushforward(call, da):
    upper = call["upper"]
    L = H(call.y) if upper else call.y
    dL = cholesky_tangent(L, _from_triangle(da, lower=not upper))
    return H(dL) if upper else dL


# --- eigh, eigvalsh --------------------------------------------------------------------------


def _eigh_gradient(w, V, dw, dV):
    """The Hermitian-input gradient of (w, V) = eigh: V (diag(dw) + F * (V^H dV)) V^H."""
    inner = _diag(dense_tangent(w, dw)).astype(np.result_type(V, w))
    if not isinstance(dV, AbstractZero):
        inner = inner + _inverse_gaps(w) * (H(V) @ dV)
    return V @ inner @ H(V)


def _lower(call) -> bool:
    """Whether eigh/eigvalsh read the lower triangle."""
    return call["UPLO"].upper() == "L"


def _eigh_da(call, dy):
    w, V = call.y
    return _to_triangle(_eigh_gradient(w, V, *dy), _lower(call))


def _eigh_pushforward(call, da):
    w, V = call.y
    K = H(V) @ _from_triangle(da, _lower(call)) @ V
    return np.real(np.diagonal(K, axis1=-2, axis2=-1)), V @ (_inverse_gaps(w) * K)


def _eigenvectors(call):
    return np.linalg.eigh(call.x, call["UPLO"])[1]


def _eigvalsh_da(call, dy):
    V = _eigenvectors(call)
    return _to_triangle(_eigh_gradient(call.y, V, dy, ZeroTangent()), _lower(call))


def _eigvalsh_pushforward(call, da):
    V = _eigenvectors(call)
    K = H(V) @ _from_triangle(da, _lower(call)) @ V
    return np.real(np.diagonal(K, axis1=-2, axis2=-1))


# --- svd -------------------------------------------------------------------------------------


def _svd_gradient(U, S, Vh, dU, dS, dVh):
    """The gradient of a = U diag(S) Vh through (U, S, Vh); U and Vh may be full (square).

    With k = len(S), U1 = U[:, :k], V1 = Vh[:k]^H, J = U1^H dU1, K = V1^H dV1 and
    F = 1/(S_j^2 - S_i^2):
      U1 [diag(dS) + F*(J - J^H) S + S F*(K - K^H) + i Im(diag J)/S] V1^H
      + (dU1 - U1 J) S^-1 V1^H + U1 S^-1 (dV1 - V1 K)^H
      - U2 dU2^H U1 S^-1 V1^H - U1 S^-1 V1^H dV2 V2^H      (extra columns of full U, V).
    The result is the gradient of every function of the outputs that does not depend on the
    phase (sign) of each singular pair, nor on the basis chosen for the extra columns.
    """
    k = S.shape[-1]
    U1, Vh1 = U[..., :k], Vh[..., :k, :]
    V1 = H(Vh1)
    inner = _diag(dense_tangent(S, dS)).astype(np.result_type(U, S))
    scaled = 1 / S
    outer = 0
    gaps = _inverse_gaps(S * S)
    if not isinstance(dU, AbstractZero):
        dU1 = dU[..., :k]
        J = H(U1) @ dU1
        inner = inner + gaps * (J - H(J)) * S[..., None, :]
        if np.iscomplexobj(J):
            inner = inner + _diag(1j * np.imag(np.diagonal(J, axis1=-2, axis2=-1)) * scaled)
        outer = outer + (dU1 - U1 @ J) * scaled[..., None, :] @ Vh1
        if U.shape[-1] > k:
            U2 = U[..., k:]
            outer = outer - U2 @ (H(dU[..., k:]) @ U1) * scaled[..., None, :] @ Vh1
    if not isinstance(dVh, AbstractZero):
        dV = H(dVh)
        dV1 = dV[..., :k]
        K = H(V1) @ dV1
        inner = inner + S[..., :, None] * (gaps * (K - H(K)))
        outer = outer + U1 @ (scaled[..., :, None] * H(dV1 - V1 @ K))
        if Vh.shape[-2] > k:
            outer = outer - (U1 * scaled[..., None, :]) @ (Vh1 @ dV[..., k:]) @ Vh[..., k:, :]
    return U1 @ inner @ Vh1 + outer


def _svd_check(call):
    if call["hermitian"]:
        raise TypeError(
            "numpy.linalg.svd: hermitian=True is not supported in differentiated code; call "
            "svd without it (or use numpy.linalg.eigh for a Hermitian matrix).")


def _svd_da(call, dy):
    if not call["compute_uv"]:
        U, S, Vh = np.linalg.svd(call.x, full_matrices=False)
        return _svd_gradient(U, S, Vh, ZeroTangent(), dy, ZeroTangent())
    return _svd_gradient(*call.y, *dy)


def _svd_pushforward(call, da):
    if not call["compute_uv"]:
        U, S, Vh = np.linalg.svd(call.x, full_matrices=False)
        k = S.shape[-1]
        dP = H(U[..., :k]) @ da @ H(Vh[..., :k, :])
        return np.real(np.diagonal(dP, axis1=-2, axis2=-1))
    return _svd_tangent(*call.y, da)


def _svd_tangent(U, S, Vh, da):
    """``(dU, dS, dVh)`` of ``a = U diag(S) Vh`` (U and Vh may be full) along ``da``."""
    k = S.shape[-1]
    U1, V1 = U[..., :k], H(Vh[..., :k, :])
    dP = H(U1) @ da @ V1
    dS = np.real(np.diagonal(dP, axis1=-2, axis2=-1))
    gaps = _inverse_gaps(S * S)
    scaled = 1 / S
    dOmega_U = gaps * (dP * S[..., None, :] + S[..., :, None] * H(dP))
    dOmega_V = gaps * (S[..., :, None] * dP + H(dP) * S[..., None, :])
    if np.iscomplexobj(dP):
        dOmega_U = dOmega_U + _diag(1j * np.imag(np.diagonal(dP, axis1=-2, axis2=-1)) * scaled)
    dU = U1 @ dOmega_U + (da @ V1 - U1 @ dP) * scaled[..., None, :]
    dV = V1 @ dOmega_V + (H(da) @ U1 - V1 @ H(dP)) * scaled[..., None, :]
    if U.shape[-1] > k:
        dU = np.concatenate([dU, -(U1 * scaled[..., None, :]) @ H(da @ V1) @ U[..., k:]], -1)
    if Vh.shape[-2] > k:
        V2 = H(Vh[..., k:, :])
        dV = np.concatenate([dV, -(V1 * scaled[..., None, :]) @ H(U1) @ da @ V2], -1)
    return dU, dS, H(dV)


# --- qr (reduced) ----------------------------------------------------------------------------


def _qr_check(call):
    mode, shape = call["mode"], np.shape(call.x)
    if mode not in ("reduced", "r") and not (mode == "complete" and shape[-2] <= shape[-1]):
        raise TypeError(
            f"numpy.linalg.qr: mode={mode!r} is not supported in differentiated code for a "
            f"matrix of shape {shape}; use mode='reduced' (or 'r').")


def _qr_tall_gradient(Q, R, dQ, dR):
    """The gradient of a = Q R (m >= n): (dQ + Q (Phi(N - N^H) - N)) R^-H, N = Q^H dQ - dR R^H."""
    N = H(Q) @ dQ - dR @ H(R)
    X = dQ + Q @ (_lower_half(N - H(N)) - N)
    return H(triangular_solve(R, H(X), lower=False))  # X R^-H: R is triangular


def _qr_da(call, dy):
    a = call.x
    if call["mode"] == "r":
        (Q, R), dQ, dR = np.linalg.qr(a), ZeroTangent(), dy
    else:
        (Q, R), (dQ, dR) = call.y, dy
    return qr_gradient(a, Q, R, dQ, dR)


def qr_gradient(a, Q, R, dQ, dR):
    """The gradient of ``a = Q R`` (reduced: Q of shape (m, k), k = min(m, n)) through the
    cotangents ``dQ`` and ``dR`` (zero ones allowed)."""
    dQ, dR = dense_tangent(Q, dQ), dense_tangent(R, dR)
    m, n = np.shape(a)[-2:]
    if m >= n:
        return _qr_tall_gradient(Q, R, dQ, dR)
    # Wide: a = [a1 a2] = Q [R1 R2] with a1 = Q R1 square and R2 = Q^H a2.
    a2, dR2 = np.asarray(a)[..., m:], dR[..., m:]
    da1 = _qr_tall_gradient(Q, R[..., :m], dQ + a2 @ H(dR2), dR[..., :m])
    return np.concatenate([da1, Q @ dR2], axis=-1)


def _qr_tall_pushforward(Q, R, da):
    # C = Q^H da R^-1; Omega = Q^H dQ is C's skew-Hermitian part below the diagonal.
    da_r = H(triangular_solve(R, H(da), lower=False, adjoint=True))  # da R^-1
    C = H(Q) @ da_r
    lower = np.tril(C, -1)
    omega = lower - H(lower)
    if np.iscomplexobj(C):
        omega = omega + _diag(1j * np.imag(np.diagonal(C, axis1=-2, axis2=-1)))
    return Q @ omega + da_r - Q @ C, (C - omega) @ R


def _qr_pushforward(call, da):
    a, mode = call.x, call["mode"]
    Q, R = np.linalg.qr(a) if mode == "r" else call.y
    dQ, dR = qr_tangent(a, Q, R, da)
    return dR if mode == "r" else (dQ, dR)


def qr_tangent(a, Q, R, da):
    """``(dQ, dR)`` of the reduced ``a = Q R`` along ``da``."""
    m, n = np.shape(a)[-2:]
    if m >= n:
        return _qr_tall_pushforward(Q, R, da)
    dQ, dR1 = _qr_tall_pushforward(Q, R[..., :m], da[..., :m])
    dR2 = H(dQ) @ np.asarray(a)[..., m:] + H(Q) @ da[..., m:]
    return dQ, np.concatenate([dR1, dR2], axis=-1)


# --- pinv, matrix_power, multi_dot, lstsq ----------------------------------------------------


def _pinv_gradient(a, P, dP):
    """-P^H dP P^H + (I - a P) dP^H P P^H + P^H P dP^H (I - P a)   (constant rank)."""
    T = H(dP) @ P @ H(P)
    S = H(P) @ P @ H(dP)
    return -H(P) @ dP @ H(P) + T - a @ (P @ T) + S - (S @ P) @ a


def _pinv_tangent(a, P, da):
    """-P da P + P P^H da^H (I - a P) + (I - P a) da^H P^H P."""
    T = P @ H(P) @ H(da)
    S = H(da) @ H(P) @ P
    return -P @ da @ P + T - (T @ a) @ P + S - P @ (a @ S)


def _pinv_da(call, dy):
    if call["hermitian"]:
        return _to_triangle(_pinv_gradient(_from_triangle(call.x, True), call.y, dy), True)
    return _pinv_gradient(call.a, call.y, dy)


def _pinv_pushforward(call, da):
    if call["hermitian"]:
        return _pinv_tangent(_from_triangle(call.x, True), call.y, _from_triangle(da, True))
    return _pinv_tangent(call.a, call.y, da)


def _powers(base, count: int) -> list:
    """``[base^0 (None: the identity), base^1, ..., base^(count-1)]``."""
    powers: list = [None]
    for _ in range(1, count):
        powers.append(base if powers[-1] is None else powers[-1] @ base)
    return powers


def _times(x, y):
    """``x @ y`` where None stands for the identity."""
    return y if x is None else x if y is None else x @ y


def _matrix_power_da(call, dy):
    a, n = call.args
    if n == 0:
        return np.zeros_like(a)
    base = np.asarray(a) if n > 0 else inv(a)
    m = abs(n)
    powers = [None if p is None else H(p) for p in _powers(base, m)]
    g = sum(_times(_times(powers[k], dy), powers[m - 1 - k]) for k in range(m))
    return g if n > 0 else -H(base) @ g @ H(base)


def _matrix_power_pushforward(call, da):
    a, n = call.args
    if n == 0:
        return ZeroTangent()
    base = np.asarray(a) if n > 0 else inv(a)
    dbase = da if n > 0 else -base @ da @ base
    m = abs(n)
    powers = _powers(base, m)
    return sum(_times(_times(powers[k], dbase), powers[m - 1 - k]) for k in range(m))


def _multi_dot_cotangent(call, dy):
    """Tangent of the sequence: d a_i = (a_0 ... a_{i-1})^H dy (a_{i+1} ... a_last)^H."""
    arrays = call.x
    matrices = [np.asarray(x) for x in arrays]
    if matrices[0].ndim == 1:
        matrices[0] = matrices[0][None, :]
    if matrices[-1].ndim == 1:
        matrices[-1] = matrices[-1][:, None]
    rights: list = [None] * len(matrices)
    for i in range(len(matrices) - 1, 0, -1):
        rights[i - 1] = _times(matrices[i], rights[i])
    left = np.reshape(dy, (matrices[0].shape[0], matrices[-1].shape[1]))
    cotangents = {}
    for i, matrix in enumerate(matrices):
        g = left if rights[i] is None else left @ H(rights[i])
        cotangents[i] = g.reshape(np.shape(arrays[i]))
        left = H(matrix) @ left
    return Tangent(type(arrays), cotangents)


def _multi_dot_pushforward(call, darrays):
    arrays, dy = call.x, ZeroTangent()
    for i, d in enumerate(darrays):
        dy = accumulate(dy, np.linalg.multi_dot([*arrays[:i], d, *arrays[i + 1:]]))
    return dy


def _lstsq_svd(call):
    """The SVD of a and its pseudo-inverse with lstsq's cutoff."""
    a = call.x
    U, S, Vh = np.linalg.svd(a, full_matrices=False)
    rcond, eps = call["rcond"], np.finfo(S.dtype).eps
    if "cond" in call.rule.positions:  # scipy.linalg.lstsq's cond: eps by default
        rcond = eps if call["cond"] is None or call["cond"] <= 0 else call["cond"]
    elif rcond is None:
        rcond = eps * max(np.shape(a))
    elif isinstance(rcond, str) or rcond <= 0:  # NumPy 1's default "warn", or LAPACK's own
        rcond = eps
    cutoff = rcond * S[..., :1]
    inverse = np.where(S > cutoff, 1 / np.where(S > cutoff, S, 1), 0)
    return U, S, Vh, H(Vh) @ (inverse[:, None] * H(U))


def _lstsq_error(call):
    """The residual vectors b - a x."""
    a, b = call.args[:2]
    return np.asarray(b) - np.asarray(a) @ call.y[0]


def _lstsq_da(call, dy):
    (U, S, Vh, P), (a, b), (x, residuals) = call.memo(_lstsq_svd), call.args[:2], call.y[:2]
    dx, dresiduals, _, dS = dy
    as_matrix = (lambda v: v[:, None]) if np.ndim(b) == 1 else (lambda v: v)
    g: Any = ZeroTangent()
    if not isinstance(dx, AbstractZero):
        g = accumulate(g, _pinv_gradient(np.asarray(a), P, as_matrix(dx) @ H(as_matrix(b))))
    if not isinstance(dresiduals, AbstractZero) and np.size(residuals):
        error = as_matrix(call.memo(_lstsq_error))
        g = accumulate(g, -2 * (error * np.real(dresiduals)) @ H(as_matrix(x)))
    if not isinstance(dS, AbstractZero):
        g = accumulate(g, _svd_gradient(U, S, Vh, ZeroTangent(), dS, ZeroTangent()))
    return g


def _lstsq_db(call, dy):
    P, b, residuals = call.memo(_lstsq_svd)[3], call.args[1], call.y[1]
    dx, dresiduals, _, _ = dy
    g: Any = ZeroTangent()
    if not isinstance(dx, AbstractZero):
        g = accumulate(g, H(P) @ dx)
    if not isinstance(dresiduals, AbstractZero) and np.size(residuals):
        g = accumulate(g, 2 * call.memo(_lstsq_error) * np.real(
            dresiduals if np.ndim(b) > 1 else np.reshape(dresiduals, (-1,))[0]))
    return g


def _lstsq_pushforward(call, da, db):
    (a, b), (x, residuals) = call.args[:2], call.y[:2]
    da, db = dense_tangent(a, da), dense_tangent(b, db)
    U, S, Vh, P = call.memo(_lstsq_svd)
    dx = P @ db + _pinv_tangent(np.asarray(a), P, da) @ b
    d_residuals: Any = ZeroTangent()
    if np.size(residuals):
        d_residuals = 2 * np.real(np.sum(np.conj(call.memo(_lstsq_error)) * (db - da @ x),
                                         axis=0))
        d_residuals = np.reshape(d_residuals, np.shape(residuals))
    dS = np.real(np.diagonal(H(U) @ da @ H(Vh), axis1=-2, axis2=-1))
    return dx, d_residuals, ZeroTangent(), dS


# --- tensorsolve and tensorinv: solve and inv of the tensor reshaped to a square matrix -------

def _tensorsolve_matrix(call: Call) -> tuple:
    """``(order, A, x)``: the axes order NumPy moves ``a``'s to (``axes=`` to the end), ``a``
    so ordered as the square matrix ``A`` and the solution as a vector ``x``."""
    a, axes = call.a, call["axes"]
    order = list(range(a.ndim))
    for axis in axes if axes is not None else ():  # as NumPy moves them
        order.remove(axis)
        order.insert(a.ndim, axis)
    size = np.size(call.y)
    return order, np.reshape(np.transpose(a, order), (size, size)), np.ravel(call.y)


def _tensorsolve_shared(call: Call, dy: Any) -> Any:
    """``db = A^-H dy``, as a vector."""
    _, A, _ = call.memo(_tensorsolve_matrix)
    return np.linalg.solve(H(A), np.ravel(dy))


def _tensorsolve_a(call: Call, db: Any) -> Any:
    order, A, x = call.memo(_tensorsolve_matrix)
    dA = -np.outer(db, np.conj(x))
    moved = tuple(np.shape(call.a)[axis] for axis in order)
    return np.transpose(np.reshape(dA, moved), np.argsort(order))


def _tensorsolve_forward(call: Call, da: Any, db: Any, *axes: Any) -> Any:
    order, A, x = call.memo(_tensorsolve_matrix)
    rhs: Any = 0 if isinstance(db, AbstractZero) else np.ravel(db)
    if not isinstance(da, AbstractZero):
        rhs = rhs - np.reshape(np.transpose(da, order), np.shape(A)) @ x
    return np.reshape(np.linalg.solve(A, rhs), np.shape(call.y))


def _tensorinv_matrix(call: Call) -> Any:
    """The inverse as the square matrix NumPy computed it."""
    size = math.prod(np.shape(call.a)[int(call["ind"]):])
    return np.reshape(call.y, (size, size))


def _tensorinv_a(call: Call, dy: Any) -> Any:
    inverse = call.memo(_tensorinv_matrix)
    return np.reshape(-H(inverse) @ np.reshape(dy, np.shape(inverse)) @ H(inverse),
                      np.shape(call.a))


def _tensorinv_forward(call: Call, da: Any, *ind: Any) -> Any:
    inverse = call.memo(_tensorinv_matrix)
    return np.reshape(-inverse @ np.reshape(da, np.shape(inverse)) @ inverse,
                      np.shape(call.y))


# --- the table: function, then the cotangent of each positional argument ---------------------

define(np.matmul, _matmul_da, _matmul_db, refused=("out", "axes", "axis"))
define(np.dot, _product(_dot_axes, of_b=False), _product(_dot_axes, of_b=True))
for _product_function in (np.matmul, np.dot):  # of a matrix, np.dot(W, h) is W @ h
    PRODUCT_FORMS[_product_function] = ProductForm(  # recorded as the arguments: core.registry
        rrule.lookup(_product_function)[0], _is_matrix_product,
        (_matrix_product_da, _matrix_product_db),
        lambda payload, rule=rrule.lookup(_product_function)[0]: rule(payload[1],
                                                                      payload[2])[1],
        # W @ h: W's cotangent is np.multiply.outer(dy, h); h @ W: np.multiply.outer(h, dy)
        lambda a, b: 1 if b.ndim == 1 else 2 if a.ndim == 1 else 0)
define(np.tensordot, _product(_tensordot_axes, of_b=False), _product(_tensordot_axes, of_b=True))
define(np.inner, _product(_inner_axes, of_b=False), _product(_inner_axes, of_b=True))
define(np.vdot, _vdot_da, _vdot_db)
define(np.outer, _outer_da, _outer_db)
# np.outer of two real vectors of one dtype: recorded as the arguments (core.registry), their
# cotangents the rule's own formulas on real vectors
PRODUCT_FORMS[np.outer] = ProductForm(
    rrule.lookup(np.outer)[0],
    lambda a, b: a.ndim == 1 and b.ndim == 1 and a.dtype == b.dtype and a.dtype.kind == "f",
    (lambda a, b, dy: dy @ b, lambda a, b, dy: a @ dy),
    lambda payload, rule=rrule.lookup(np.outer)[0]: rule(payload[1], payload[2])[1])
define(np.kron, _kron_cotangent(of_b=False), _kron_cotangent(of_b=True))
define(np.einsum, every=_einsum_cotangent)
define(np.linalg.inv, lambda call, dy: -H(call.y) @ dy @ H(call.y),
       pushforward=lambda call, da: -call.y @ da @ call.y)
define(np.linalg.solve, _solve_da, _solve_db, prepare=_solve_shared,
       pushforward=_solve_pushforward)
define(np.linalg.det, lambda call, dy: np.expand_dims(dy, (-2, -1)) * H(
    call.memo(_adjugate_of)), pushforward=lambda call, da: _trace(call.memo(_adjugate_of) @ da))
define(np.linalg.slogdet, _slogdet_da, pushforward=_slogdet_pushforward)
define(np.linalg.cholesky, _cholesky_da, pushforward=_cholesky_pushforward)
define(np.linalg.eigh, _eigh_da, pushforward=_eigh_pushforward)
define(np.linalg.eigvalsh, _eigvalsh_da, pushforward=_eigvalsh_pushforward)
define(np.linalg.svd, _svd_da, pushforward=_svd_pushforward, check=_svd_check)
define(np.linalg.qr, _qr_da, pushforward=_qr_pushforward, check=_qr_check)
define(np.linalg.pinv, _pinv_da, pushforward=_pinv_pushforward)
define(np.linalg.matrix_power, _matrix_power_da, pushforward=_matrix_power_pushforward)
define(np.linalg.multi_dot, _multi_dot_cotangent, pushforward=_multi_dot_pushforward)
define(np.linalg.lstsq, _lstsq_da, _lstsq_db, pushforward=_lstsq_pushforward)
define(np.linalg.tensorsolve, _tensorsolve_a, lambda call, db: np.reshape(db, np.shape(
    call.args[1])), None, prepare=_tensorsolve_shared, pushforward=_tensorsolve_forward)
define(np.linalg.tensorinv, _tensorinv_a, None, pushforward=_tensorinv_forward)


# --- eig, eigvals: general square matrices -------------------------------------------------------
# a = V diag(w) V^-1, with complex w and V for a real a that has complex eigenvalues. NumPy
# (LAPACK geev) scales each eigenvector to unit norm; its phase (a sign for real ones) is
# LAPACK's choice, not a smooth function of a. The tangent dV below keeps the norm and adds
# V^-1-coordinates F * K; the gradient is right for every function that does not depend on the
# phases (eigenvalues, |V|^2, eigenprojectors...), the only well-defined ones.


def _eig_pushforward(call, da):
    return _eig_tangent(*call.y, da)


def _eig_tangent(w, V, da):
    """``(dw, dV)`` of ``a = V diag(w) V^-1`` along ``da`` (V's columns kept at unit norm)."""
    K = solve(V, da @ V)  # V^-1 da V
    dV = V @ (_inverse_gaps(w) * K)
    dV = dV - V * np.real(np.diagonal(H(V) @ dV, axis1=-2, axis2=-1))[..., None, :]
    return np.diagonal(K, axis1=-2, axis2=-1), dV


def _eig_gradient(w, V, dw, dV):
    """V^-H (diag(dw) + conj(F) * (V^H dV0)) V^H, dV0 = dV - V Re(diag(V^H dV)): the adjoint
    of `_eig_pushforward` (its norm-keeping step is self-adjoint)."""
    inner = _diag(dense_tangent(w, dw)).astype(np.result_type(V, w, np.complex64))
    if not isinstance(dV, AbstractZero):
        kept = dV - V * np.real(np.diagonal(H(V) @ dV, axis1=-2, axis2=-1))[..., None, :]
        inner = inner + np.conj(_inverse_gaps(w)) * (H(V) @ kept)
    return solve(H(V), inner @ H(V))


def _eig_da(call, dy):
    w, V = call.y
    return _eig_gradient(w, V, *dy)


def _eigvals_da(call, dy):
    V = np.linalg.eig(call.x)[1]
    return _eig_gradient(call.y, V, dy, ZeroTangent())


def _eigvals_pushforward(call, da):
    V = np.linalg.eig(call.x)[1]
    return np.diagonal(solve(V, da @ V), axis1=-2, axis2=-1)


define(np.linalg.eig, _eig_da, pushforward=_eig_pushforward)
define(np.linalg.eigvals, _eigvals_da, pushforward=_eigvals_pushforward)
