"""Linear algebra rules: products (``matmul``, ``dot``, ``einsum``...) and ``np.linalg``.

Complex convention: the cotangent of an argument is ``conj(d y / d arg)`` applied to ``dy``, so
for ``y = a @ b``: ``da = dy @ b^H`` and ``db = a^H @ dy``. Broadcast batch dimensions are
summed out with `unbroadcast` before projecting.
"""

from __future__ import annotations

import numpy as np

from ..core.broadcast import unbroadcast
from ._define import H, conj, define

# --- matmul: 1-d operands are promoted to matrices, then un-promoted -------------------------


def _matmul_dy(dy, a_ndim: int, b_ndim: int):
    """``dy`` with the axes that matmul dropped for 1-d operands put back (as size 1)."""
    dy = np.asarray(dy)
    if b_ndim == 1:
        dy = dy[..., None]
    if a_ndim == 1:
        dy = dy[..., None, :]
    return dy


def _matmul_da(dy, y, a, b, **kwargs):
    a, b = np.asarray(a), np.asarray(b)
    matrix_b = b[:, None] if b.ndim == 1 else b
    da = _matmul_dy(dy, a.ndim, b.ndim) @ H(matrix_b)
    return unbroadcast(da[..., 0, :] if a.ndim == 1 else da, a.shape)


def _matmul_db(dy, y, a, b, **kwargs):
    a, b = np.asarray(a), np.asarray(b)
    matrix_a = a[None, :] if a.ndim == 1 else a
    db = H(matrix_a) @ _matmul_dy(dy, a.ndim, b.ndim)
    return unbroadcast(db[..., 0] if b.ndim == 1 else db, b.shape)


# --- tensordot, and the products that are tensordots (dot, inner) ----------------------------


def _contracted_axes(a_ndim: int, b_ndim: int, axes) -> tuple[list[int], list[int]]:
    """``axes`` of ``np.tensordot`` as two lists of non-negative axes of a and of b."""
    if isinstance(axes, (int, np.integer)):
        return list(range(a_ndim - axes, a_ndim)), list(range(axes))
    a_axes, b_axes = axes
    a_axes = [a_axes] if isinstance(a_axes, (int, np.integer)) else list(a_axes)
    b_axes = [b_axes] if isinstance(b_axes, (int, np.integer)) else list(b_axes)
    return [int(i) % a_ndim for i in a_axes], [int(i) % b_ndim for i in b_axes]


def _tensordot_da(dy, a, b, a_axes: list[int], b_axes: list[int]):
    a, b = np.asarray(a), np.asarray(b)
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [i for i in range(b.ndim) if i not in b_axes]
    # Result axes: a's free axes, then b's contracted axes in b's order.
    g = np.tensordot(dy, conj(b), axes=(list(range(len(a_free), np.ndim(dy))), b_free))
    position = {axis: k for k, axis in enumerate(a_free)}
    b_order = sorted(b_axes)
    for axis_a, axis_b in zip(a_axes, b_axes):
        position[axis_a] = len(a_free) + b_order.index(axis_b)
    return np.transpose(g, [position[axis] for axis in range(a.ndim)])


def _tensordot_db(dy, a, b, a_axes: list[int], b_axes: list[int]):
    a, b = np.asarray(a), np.asarray(b)
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [i for i in range(b.ndim) if i not in b_axes]
    # Result axes: a's contracted axes in a's order, then b's free axes.
    g = np.tensordot(conj(a), dy, axes=(a_free, list(range(len(a_free)))))
    position = {axis: len(a_axes) + k for k, axis in enumerate(b_free)}
    a_order = sorted(a_axes)
    for axis_a, axis_b in zip(a_axes, b_axes):
        position[axis_b] = a_order.index(axis_a)
    return np.transpose(g, [position[axis] for axis in range(b.ndim)])


def _tensordot_axes(a, b, axes=2):
    return _contracted_axes(np.ndim(a), np.ndim(b), axes)


def _dot_axes(a, b):
    """dot contracts a's last axis with b's second-to-last (its only one if b is 1-d)."""
    return [np.ndim(a) - 1], [max(np.ndim(b) - 2, 0)]


def _inner_axes(a, b):
    return [np.ndim(a) - 1], [np.ndim(b) - 1]


def _scalar_product(a, b) -> bool:
    return np.ndim(a) == 0 or np.ndim(b) == 0


def _product_da(axes_of):
    """The cotangent of a in a tensordot-like product; a scalar operand means ``a * b``."""
    def cotangent(dy, y, a, b, *args, **kwargs):
        if _scalar_product(a, b):
            return unbroadcast(dy * conj(np.asarray(b)), np.shape(a))
        return _tensordot_da(dy, a, b, *axes_of(a, b, *args, **kwargs))
    return cotangent


def _product_db(axes_of):
    def cotangent(dy, y, a, b, *args, **kwargs):
        if _scalar_product(a, b):
            return unbroadcast(conj(np.asarray(a)) * dy, np.shape(b))
        return _tensordot_db(dy, a, b, *axes_of(a, b, *args, **kwargs))
    return cotangent


# --- vdot, outer: products of the flattened operands ----------------------------------------


def _vdot_da(dy, y, a, b):
    # vdot(a, b) = sum(conj(a) * b) is antilinear in a: da = b * conj(dy).
    return np.reshape(np.ravel(b) * np.conj(dy), np.shape(a))


def _vdot_db(dy, y, a, b):
    return np.reshape(np.ravel(a) * dy, np.shape(b))


def _outer_da(dy, y, a, b, **kwargs):
    return np.reshape(np.asarray(dy) @ conj(np.ravel(b)), np.shape(a))


def _outer_db(dy, y, a, b, **kwargs):
    return np.reshape(conj(np.ravel(a)) @ np.asarray(dy), np.shape(b))


# --- the table -------------------------------------------------------------------------------

define(np.matmul, _matmul_da, _matmul_db, refused=("out", "axes", "axis"))
define(np.dot, _product_da(_dot_axes), _product_db(_dot_axes))
define(np.tensordot, _product_da(_tensordot_axes), _product_db(_tensordot_axes), None)
define(np.inner, _product_da(_inner_axes), _product_db(_inner_axes))
define(np.vdot, _vdot_da, _vdot_db)
define(np.outer, _outer_da, _outer_db)
