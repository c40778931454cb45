"""Rules for public NumPy functions that the namespace walk found without one and that are
short: the array-API spellings of existing products (``np.linalg.matmul``, ``outer``,
``tensordot``; each reuses the formulas of the rule it restates), matrix transposes, traces
and diagonals, ``np.linalg.vector_norm`` and ``svdvals``, ``np.vecdot``, ``matvec``, ``vecmat``, the scans ``np.cumulative_sum`` and
``np.nancumsum``, ``np.unstack``, ``np.broadcast_arrays``, ``np.sort_complex``, and the
elementwise ``copysign``, ``ldexp``, ``nextafter`` and the two-output ``modf`` and ``frexp``
(the integral part and the exponent get no tangent). Every formula is made of differentiable NumPy calls,
so the rules work at order 2.

    >>> import numpy as np
    >>> from chainrules import rrule, unthunk
    >>> y, pullback = rrule(np.copysign, np.array([2.0, -3.0]), np.array([-1.0, 1.0]))
    >>> unthunk(pullback(np.ones(2))[1])
    array([-1., -1.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.broadcast import unbroadcast
from ...core.scalar_rule import scalar_rule
from ...core.tangents import AbstractZero, ZeroTangent
from . import linalg
from ..define import define, dense_tangent, linear, normalize_axis_tuple, unsupported
from .shape import moved_by_strides

__all__: list[str] = []


def _array_api_tensordot_axes(call):
    """np.linalg.tensordot names its operands x1, x2 (np.tensordot's are a, b)."""
    return linalg._contracted_axes(np.ndim(call.args[0]), np.ndim(call.args[1]), call["axes"])


def _transpose_back(call, dy):
    return np.swapaxes(dy, -1, -2)


# np.linalg's array-API functions take the positional arguments of np.matmul, np.outer (1-D
# only, which NumPy checks when computing the value) and np.tensordot (axes=).
if hasattr(np.linalg, "matmul"):  # NumPy 2.0
    define(np.linalg.matmul, linalg._matmul_da, linalg._matmul_db)
    define(np.linalg.outer, linalg._outer_da, linalg._outer_db)
    define(np.linalg.tensordot, linalg._product(_array_api_tensordot_axes, of_b=False),
           linalg._product(_array_api_tensordot_axes, of_b=True))
for _transpose in (getattr(np, "matrix_transpose", None),
                   getattr(np.linalg, "matrix_transpose", None)):
    if _transpose is not None:
        define(_transpose, _transpose_back, sparse=moved_by_strides)



# --- the last two axes: trace and diagonal of np.linalg (offset=, axes -2 and -1) ----------------

def _diagonal_selector(call) -> np.ndarray:
    """E[l, i, j] = 1 where (i, j) is the l-th element of the offset diagonal."""
    n, m = call.shape[-2:]
    offset = int(call["offset"])
    length = max(0, min(n + min(offset, 0), m - max(offset, 0)))
    selector = np.zeros((length, n, m))
    steps = np.arange(length)
    selector[steps, steps - min(offset, 0), steps + max(offset, 0)] = 1.0
    return selector


if hasattr(np.linalg, "trace"):  # NumPy 2.0
    define(np.linalg.trace, lambda call, dy: np.expand_dims(dy, (-2, -1)) * np.eye(
        *call.shape[-2:], k=int(call["offset"])))
    define(np.linalg.diagonal,
           lambda call, dy: np.einsum("...l,lij->...ij", dy, _diagonal_selector(call)))


# --- norms and singular values ---------------------------------------------------------------------

def _vector_norm_check(call) -> None:
    if call["ord"] not in (2, 2.0):
        raise unsupported("numpy.linalg.vector_norm", "ord", call["ord"], "2 (np.linalg.norm "
                          "differentiates the other orders: flatten or pick the axis first)")


def _vector_norm_back(call, dy):
    x = call.a
    axis = None if call["axis"] is None else normalize_axis_tuple(call["axis"], x.ndim)
    norm, dy = call.y, np.asarray(dy)
    if not call["keepdims"]:
        kept = tuple(range(x.ndim)) if axis is None else axis
        norm, dy = np.expand_dims(norm, kept), np.expand_dims(dy, kept)
    with np.errstate(invalid="ignore", divide="ignore"):  # the norm's kink at 0: gradient 0
        return np.where(norm == 0, 0.0, x * (dy / np.where(norm == 0, 1.0, norm)))


def _vector_norm_forward(call, dx):
    x = call.a
    axis = None if call["axis"] is None else normalize_axis_tuple(call["axis"], x.ndim)
    dnorm_times_norm = np.real(np.sum(np.conj(x) * dense_tangent(x, dx), axis=axis,
                                      keepdims=call["keepdims"]))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(call.y == 0, 0.0, dnorm_times_norm / np.where(call.y == 0, 1.0, call.y))


def _svdvals_back(call, dy):
    u, _, vh = call.memo(lambda call: np.linalg.svd(call.a, full_matrices=False))
    return (u * np.expand_dims(dy, -2)) @ vh


def _svdvals_forward(call, dx):
    u, _, vh = call.memo(lambda call: np.linalg.svd(call.a, full_matrices=False))
    # ds_j = Re (u^H dx v)_jj
    return np.real(np.sum(np.conj(u) * (dense_tangent(call.a, dx) @ linalg.H(vh)), axis=-2))


if hasattr(np.linalg, "vector_norm"):  # NumPy 2.0
    define(np.linalg.vector_norm, _vector_norm_back, check=_vector_norm_check,
           pushforward=_vector_norm_forward)
    define(np.linalg.svdvals, _svdvals_back, pushforward=_svdvals_forward)


# --- vecdot: sum(conj(x1) * x2, axis), the core axes broadcast against each other ------------------

def _vecdot_cotangent(of_x2: bool):
    def cotangent(call, dy):
        x1, x2 = (np.asarray(x) for x in call.args[:2])
        axis = call.kwargs.get("axis", -1)
        a, b = np.moveaxis(x1, axis, -1), np.moveaxis(x2, axis, -1)
        dy = np.expand_dims(dy, -1)
        if of_x2:  # linear in x2
            return np.moveaxis(unbroadcast(a * dy, b.shape), -1, axis)
        return np.moveaxis(unbroadcast(b * np.conj(dy), a.shape), -1, axis)  # antilinear in x1
    return cotangent


for _vecdot in (getattr(np, "vecdot", None), getattr(np.linalg, "vecdot", None)):  # NumPy 2.0
    if _vecdot is not None:
        define(_vecdot, _vecdot_cotangent(of_x2=False), _vecdot_cotangent(of_x2=True),
               refused=("out", "axes"))


# matvec(A, v) = A @ v and vecmat(v, A) = conj(v) @ A (NumPy 2.2), on their default axes.
def _matvec_da(call, dy):
    a, v = (np.asarray(x) for x in call.args[:2])
    return unbroadcast(np.expand_dims(dy, -1) * np.expand_dims(np.conj(v), -2), a.shape)


def _matvec_dv(call, dy):
    a, v = (np.asarray(x) for x in call.args[:2])
    return unbroadcast(np.sum(np.conj(a) * np.expand_dims(dy, -1), axis=-2), v.shape)


def _vecmat_dv(call, dy):
    v, a = (np.asarray(x) for x in call.args[:2])
    return unbroadcast(np.sum(a * np.expand_dims(np.conj(dy), -2), axis=-1), v.shape)


def _vecmat_da(call, dy):
    v, a = (np.asarray(x) for x in call.args[:2])
    return unbroadcast(np.expand_dims(v, -1) * np.expand_dims(dy, -2), a.shape)


if hasattr(np, "matvec"):
    define(np.matvec, _matvec_da, _matvec_dv, refused=("out", "axes", "axis"))
    define(np.vecmat, _vecmat_dv, _vecmat_da, refused=("out", "axes", "axis"))


# --- scans ---------------------------------------------------------------------------------------

def _reverse_cumsum(dy, axis: int):
    return np.flip(np.cumsum(np.flip(dy, axis), axis), axis)


def _cumulative_sum_back(call, dy):
    axis = 0 if call["axis"] is None else normalize_axis_tuple(call["axis"], call.a.ndim)[0]
    if call["include_initial"]:  # the leading zero depends on nothing
        dy = np.take(dy, np.arange(1, np.shape(dy)[axis]), axis=axis)
    return _reverse_cumsum(dy, axis)


def _nancumsum_back(call, dy):
    a = call.a
    if call["axis"] is None:
        back = np.reshape(_reverse_cumsum(np.ravel(dy), 0), a.shape)
    else:
        back = _reverse_cumsum(dy, normalize_axis_tuple(call["axis"], a.ndim)[0])
    return np.where(np.isnan(a), 0.0, back)  # a NaN counts as zero: no gradient


if hasattr(np, "cumulative_sum"):  # NumPy 2.1
    define(np.cumulative_sum, _cumulative_sum_back)
define(np.nancumsum, _nancumsum_back, pushforward=lambda call, dx: np.nancumsum(
    np.where(np.isnan(call.a), 0.0, dense_tangent(call.a, dx)), call["axis"]))


# --- splitting and broadcasting into several arrays ----------------------------------------------

def _unstack_back(call, dy):
    axis = normalize_axis_tuple(call["axis"], call.a.ndim)[0]
    piece_shape = call.shape[:axis] + call.shape[axis + 1:]
    return np.stack([np.zeros(piece_shape, call.dtype) if isinstance(d, AbstractZero) else d
                     for d in dy], axis=axis)


def _broadcast_back(call, dy, i):
    dy_i = dy[i]
    return dy_i if isinstance(dy_i, AbstractZero) else unbroadcast(dy_i, np.shape(call.args[i]))


if hasattr(np, "unstack"):  # NumPy 2.1
    define(np.unstack, _unstack_back, pushforward=linear)
define(np.broadcast_arrays, every=_broadcast_back, pushforward=linear)


# --- sort_complex: np.sort's permutation, the result complex --------------------------------------

def _sort_complex_back(call, dy):
    order = np.argsort(call.a, axis=-1)
    return np.take_along_axis(dy, np.argsort(order, axis=-1), axis=-1)


def _sort_complex_forward(call, dx):
    moved = np.take_along_axis(dense_tangent(call.a, dx), np.argsort(call.a, axis=-1), axis=-1)
    return moved.astype(np.result_type(moved, 1j))


define(np.sort_complex, _sort_complex_back, pushforward=_sort_complex_forward)


# --- elementwise ----------------------------------------------------------------------------------

# copysign(a, b) = |a| with b's sign: slope +-1 in a (the sign of a times that of b), 0 in b.
scalar_rule(np.copysign, lambda y, a, b: np.where(np.signbit(a) == np.signbit(b), 1.0, -1.0),
            lambda y, a, b: 0 * b)
# ldexp(a, n) = a * 2**n, n an integer.
scalar_rule(np.ldexp, lambda y, a, n: np.ldexp(np.ones_like(a), n), None)
# nextafter(a, b): the next float after a towards b, a step of one ulp: slope 1 in a, 0 in b.
scalar_rule(np.nextafter, lambda y, a, b: np.ones_like(a), lambda y, a, b: 0 * b)


# modf(x) = (fractional part, integral part): slope 1 and 0 (the integral part is piecewise
# constant). frexp(x) = (mantissa, exponent), x = mantissa * 2**exponent: the mantissa has
# slope 2**-exponent, the exponent is an integer.
def _part(dy: Any, shape: tuple, dtype: Any) -> Any:
    """The cotangent of the first output as an array (zeros for a zero one)."""
    return np.zeros(shape, dtype) if isinstance(dy, AbstractZero) else dy


define(np.modf, lambda call, dy: _part(dy[0], call.shape, call.dtype),
       pushforward=lambda call, dx: (dx, np.zeros_like(call.y[1])))
define(np.frexp, lambda call, dy: np.ldexp(_part(dy[0], call.shape, call.dtype), -call.y[1]),
       pushforward=lambda call, dx: (np.ldexp(dx, -call.y[1]), ZeroTangent()))
