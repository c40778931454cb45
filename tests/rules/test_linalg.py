"""Rules for linear algebra (chainrules.rules.numpy.linalg): every registered function checked by the
rule-testing kit against finite differences (float64, float32, complex; several shapes and
options), gauge-dependent outputs (eigenvectors, singular vectors) through gauge-invariant
functions of them, then closed forms, lazy cotangents and refused options."""

from __future__ import annotations

import numpy as np
import pytest

from chainrules import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk
from chainrules.core import AbstractZero, Thunk
from chainrules.testing import case, check_case, rand_primal, test_frule, test_rrule
from tests.numpy_features import accepted

_rng = np.random.default_rng(20240611)
F64, F32, C128, C64 = np.float64, np.float32, np.complex128, np.complex64


def normal(*shape, dtype=F64):
    """Random values of ``dtype`` (complex ones have a random imaginary part too)."""
    return rand_primal("array", _rng, dtype, shape)


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def well_conditioned(n, *batch, dtype=F64):
    """A matrix (stack) with singular values near 2..4: inverses and solves stay accurate."""
    return (normal(*batch, n, n, dtype=dtype) * 0.3 + 3 * np.eye(n)).astype(dtype)


def positive_definite(n, *batch, dtype=F64):
    b = normal(*batch, n, n, dtype=dtype)
    return (b @ H(b) / n + np.eye(n)).astype(dtype)


def hermitian_distinct(n, *batch, dtype=F64):
    """A Hermitian matrix (stack) with eigenvalues 1.5 apart, in a random basis."""
    q = np.linalg.qr(normal(*batch, n, n, dtype=dtype))[0]
    return ((q * (1.5 * np.arange(n) - 2.0)) @ H(q)).astype(dtype)


def distinct_singular(m, n, *batch, dtype=F64):
    """A matrix (stack) with singular values 1, 2, ... min(m, n), in random bases."""
    k = min(m, n)
    u = np.linalg.qr(normal(*batch, m, k, dtype=dtype))[0]
    v = np.linalg.qr(normal(*batch, n, k, dtype=dtype))[0]
    return ((u * np.arange(1.0, k + 1)) @ H(v)).astype(dtype)


TYPES = (F64, F32, C128)
LOOSE = dict(rtol=1e-4, atol=1e-6)   # float32 factorizations

CASES = [
    # matmul: matrices, vectors on either side, batches that broadcast, mixed dtypes
    *[case(np.matmul, normal(3, 4, dtype=t), normal(4, 2, dtype=t)) for t in TYPES],
    case(np.matmul, normal(3, 4), normal(4, 2, dtype=C128)),
    case(np.matmul, normal(3, 4, dtype=F32), normal(4, 2)),
    case(np.matmul, normal(4), normal(4, 2)),
    case(np.matmul, normal(2, 3, 4, dtype=C128), normal(4)),
    case(np.matmul, normal(4, dtype=C128), normal(4, dtype=C128)),
    case(np.matmul, normal(4), normal(2, 4, 3)),
    case(np.matmul, normal(2, 1, 2, 3), normal(3, 3, 2)),
    case(np.matmul, normal(1, 2, 3, dtype=C128), normal(2, 3, 2, dtype=C128)),
    # dot: matrix, vector, scalar and n-d forms
    *[case(np.dot, normal(3, 4, dtype=t), normal(4, 2, dtype=t)) for t in TYPES],
    case(np.dot, normal(4, dtype=C128), normal(4, dtype=C128)),
    case(np.dot, normal(3, 4), normal(4)),
    case(np.dot, 2.5, normal(3, dtype=C128)),
    case(np.dot, normal(2, 3), np.float32(1.5)),
    case(np.dot, normal(2, 2, 3), normal(2, 3, 2)),
    # two vectors (a number: dy times the other), mixed dtypes projected
    case(np.dot, normal(4, dtype=F32), normal(4)),
    case(np.dot, normal(4), normal(4, dtype=C128)),
    case(np.matmul, normal(5), normal(5)),
    case(np.matmul, normal(5, dtype=F32), normal(5, dtype=C128)),
    case(np.inner, normal(3, dtype=C128), normal(3)),
    # vdot, inner, outer: conjugate-linear, last-axis and flattened products
    case(np.vdot, normal(2, 3, dtype=C128), normal(3, 2, dtype=C128)),
    case(np.vdot, normal(4), normal(4, dtype=C128)),
    case(np.vdot, normal(4, dtype=F32), normal(4, dtype=F32)),
    case(np.inner, normal(2, 3, dtype=C128), normal(4, 3, dtype=C128)),
    case(np.inner, normal(3), normal(3)),
    case(np.inner, 2.0, normal(3)),
    case(np.outer, normal(2, 3, dtype=C128), normal(4)),
    case(np.outer, normal(3, dtype=F32), normal(2, dtype=F32)),
    # tensordot: axes as an int, as pairs, in a different order, none
    case(np.tensordot, normal(2, 3, 4), normal(3, 4, 2)),
    case(np.tensordot, normal(2, 3, 4, dtype=C128), normal(4, 2, 2, dtype=C128), ([2, 0], [0, 1])),
    case(np.tensordot, normal(2, 3, 4), normal(2, 4, 3), ([1, 2], [2, 1])),
    case(np.tensordot, normal(2, 3), normal(3, 2), 0),
    case(np.tensordot, normal(3), normal(2), 0),  # two vectors, no axis: their outer product
    case(np.tensordot, normal(3), normal(3), 1),
    case(np.tensordot, normal(2, 3, dtype=F32), normal(3, 2, dtype=F32), axes=1),
    case(np.tensordot, normal(2, 3), normal(3, 4), (-1, 0)),
    # einsum: explicit and implicit outputs, ellipsis, repeated labels, traces, sublists
    case(np.einsum, "ij,jk->ik", normal(2, 3), normal(3, 4)),
    case(np.einsum, "ij,jk", normal(2, 3, dtype=C128), normal(3, 4, dtype=C128)),
    case(np.einsum, "ii->i", normal(3, 3, dtype=C128)),
    case(np.einsum, "ii", normal(3, 3)),
    case(np.einsum, "iij->j", normal(3, 3, 2)),
    case(np.einsum, "ij->", normal(2, 3, dtype=F32)),
    case(np.einsum, "ij->i", normal(2, 3)),
    case(np.einsum, "ji", normal(2, 3)),
    case(np.einsum, "i,i,i->", normal(3), normal(3), normal(3, dtype=C128)),
    case(np.einsum, "...ij,...jk->...ik", normal(2, 2, 3, dtype=C128), normal(3, 4, dtype=C128)),
    case(np.einsum, "...i,...i", normal(2, 3), normal(3)),
    case(np.einsum, "bij,bjk->bik", normal(1, 2, 3), normal(3, 3, 2)),
    case(np.einsum, "Ba,aC", normal(2, 3), normal(3, 2)),
    case(np.einsum, "i,j->ij", normal(2), normal(3), optimize=True),
    case(np.einsum, normal(2, 3), [0, 1], normal(3, 2), [1, 2], [0, 2]),
    case(np.einsum, normal(2, 3), [0, Ellipsis], normal(3), [Ellipsis]),
    # kron
    case(np.kron, normal(2, 3), normal(3, 2, dtype=C128)),
    case(np.kron, normal(3), normal(2, 2)),
    case(np.kron, normal(2, 2, dtype=F32), normal(2, dtype=F32)),
    # inverse, solve, determinants
    *[case(np.linalg.inv, well_conditioned(3, dtype=t)) for t in TYPES],
    case(np.linalg.inv, well_conditioned(3, 2, dtype=C128)),
    case(np.linalg.solve, well_conditioned(3), normal(3)),
    case(np.linalg.solve, well_conditioned(3, dtype=C128), normal(3, 2, dtype=C128)),
    accepted(case(np.linalg.solve, well_conditioned(3, 2), normal(3)),
             "a 1-d b against a stack of matrices (NumPy 2.0)"),
    # b of one dimension less than a: a stack of vectors on NumPy 1, a matrix on NumPy 2
    case(np.linalg.solve, well_conditioned(3, 3), normal(3, 3)),
    case(np.linalg.solve, well_conditioned(3), normal(2, 3, 2)),
    case(np.linalg.solve, well_conditioned(3, dtype=F32), normal(3, 2, dtype=F32)),
    *[case(np.linalg.det, well_conditioned(3, dtype=t)) for t in TYPES],
    case(np.linalg.det, well_conditioned(3, 2, dtype=C128)),
    case(np.linalg.det, np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])),
    case(np.linalg.det, np.array([[1.0, 1j], [1j, -1.0]])),       # singular, complex
    *[case(np.linalg.slogdet, well_conditioned(3, dtype=t)) for t in TYPES],
    case(np.linalg.slogdet, -well_conditioned(3)),
    case(np.linalg.slogdet, well_conditioned(3, 2, dtype=C128)),
    case(np.linalg.slogdet, well_conditioned(3, dtype=C128),
         output_tangent=Tangent(np.linalg.slogdet(np.eye(1)).__class__, sign=0.3 - 0.2j)),
    case(np.linalg.slogdet, well_conditioned(3),
         output_tangent=Tangent(np.linalg.slogdet(np.eye(1)).__class__, logabsdet=1.0)),
    # Hermitian inputs: NumPy reads one triangle, and the gradient says so
    *[case(np.linalg.cholesky, positive_definite(3, dtype=t), **(LOOSE if t == F32 else {}))
      for t in TYPES],
    case(np.linalg.cholesky, positive_definite(3, 2, dtype=C128)),
    *[accepted(case(np.linalg.cholesky, positive_definite(3, dtype=t), upper=True),
               "np.linalg.cholesky(upper=) (NumPy 2.0)") for t in (F64, C128)],
    *[case(np.linalg.eigvalsh, hermitian_distinct(3, dtype=t), **(LOOSE if t == F32 else {}))
      for t in TYPES],
    case(np.linalg.eigvalsh, hermitian_distinct(3, dtype=C128), "U"),
    case(np.linalg.eigvalsh, hermitian_distinct(3, 2), UPLO="U"),
    case(np.linalg.eigvalsh, normal(3, 3)),     # not symmetric: only the lower triangle counts
    # singular values
    *[case(np.linalg.svd, distinct_singular(3, 4, dtype=t), compute_uv=False,
           **(LOOSE if t == F32 else {})) for t in TYPES],
    case(np.linalg.svd, distinct_singular(4, 2, 2, dtype=C128), False, False),
    # qr: the reduced factors are unique (R's diagonal is real), so they are checked directly
    *[case(np.linalg.qr, normal(4, 3, dtype=t), **(LOOSE if t == F32 else {})) for t in TYPES],
    case(np.linalg.qr, normal(3, 3)),
    case(np.linalg.qr, normal(2, 3, 5, dtype=C128)),
    case(np.linalg.qr, normal(3, 5), "r"),
    case(np.linalg.qr, normal(3, 4, dtype=C128), mode="complete"),
    # pseudo-inverse (full rank), with rcond and for Hermitian matrices (lower triangle read)
    case(np.linalg.pinv, distinct_singular(4, 3)),
    case(np.linalg.pinv, distinct_singular(3, 4, dtype=C128)),
    case(np.linalg.pinv, distinct_singular(3, 3, 2), 1e-10),
    case(np.linalg.pinv, positive_definite(3), hermitian=True),
    case(np.linalg.pinv, positive_definite(3, dtype=C128), hermitian=True),
    case(np.linalg.pinv, distinct_singular(3, 2, dtype=F32), **LOOSE),
    # matrix powers, positive, negative and zero; batched
    case(np.linalg.matrix_power, normal(3, 3) / 2, 3),
    case(np.linalg.matrix_power, normal(3, 3, dtype=C128) / 2, 2),
    case(np.linalg.matrix_power, well_conditioned(3), -2),
    case(np.linalg.matrix_power, normal(2, 3, 3), 1),
    case(np.linalg.matrix_power, normal(3, 3), 0),
    case(np.linalg.matrix_power, normal(3, 3, dtype=F32) / 2, 2),
    # multi_dot: a sequence argument (its cotangent is a Tangent of the list or tuple)
    case(np.linalg.multi_dot, [normal(2, 3), normal(3, 4), normal(4, 2)]),
    case(np.linalg.multi_dot, [normal(3, dtype=C128), normal(3, 4, dtype=C128), normal(4, 2),
                               normal(2, dtype=C128)]),
    case(np.linalg.multi_dot, (normal(3), normal(3, 2))),
    # least squares: solution, residuals (full column rank, tall), singular values
    case(np.linalg.lstsq, distinct_singular(5, 3), normal(5)),
    case(np.linalg.lstsq, distinct_singular(5, 3, dtype=C128), normal(5, 2, dtype=C128)),
    case(np.linalg.lstsq, distinct_singular(3, 5), normal(3, 2)),
    case(np.linalg.lstsq, distinct_singular(4, 3), normal(4), None),
    # eigh with real eigenvectors (their sign does not flip under finite-difference steps);
    # complex ones have a free phase: see test_gauge_invariant_functions_of_factorizations
    case(np.linalg.eigh, hermitian_distinct(3)),
    case(np.linalg.eigh, hermitian_distinct(3, dtype=F32), **LOOSE),
    case(np.linalg.eigh, hermitian_distinct(3, 2), "U"),
    case(np.linalg.eigh, normal(3, 3)),          # not symmetric: only the lower triangle counts
    # tensorsolve and tensorinv: solve and inv of the tensor as a square matrix
    case(np.linalg.tensorsolve, well_conditioned(6).reshape(2, 3, 6), normal(2, 3)),
    case(np.linalg.tensorsolve, np.moveaxis(well_conditioned(6).reshape(2, 3, 2, 3), 2, 0),
         normal(2, 3), axes=(0, 3)),
    case(np.linalg.tensorsolve, well_conditioned(4, dtype=C128), normal(4, dtype=C128)),
    case(np.linalg.tensorinv, well_conditioned(6).reshape(2, 3, 6)),
    case(np.linalg.tensorinv, well_conditioned(6, dtype=C128).reshape(6, 2, 3), ind=1),
    case(np.linalg.tensorinv, well_conditioned(4, dtype=F32).reshape(2, 2, 2, 2), **LOOSE),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_linalg_rule(rule_case):
    check_case(rule_case)


# --- gauge-dependent outputs, through gauge-invariant functions of them ----------------------
#
# Eigenvectors and singular vectors are defined up to a phase (sign) per vector, and the extra
# columns of svd's full U and V up to a rotation. Each wrapper below is a function of the
# outputs that does not depend on those choices, with a rule made of the registered rule and
# the closed form of the rest; the kit checks the composition against finite differences.

WEIGHTS = np.array([0.3, -1.2, 2.0, 0.7])


def eigh_projection(a, uplo="L"):
    """(w, V diag(WEIGHTS) V^H): eigenvalues and a weighted sum of eigenprojectors."""
    w, v = np.linalg.eigh(a, uplo)
    return w, (v * WEIGHTS[:w.shape[-1]]) @ H(v)


def _eigh_projection_rrule(a, uplo="L"):
    (w, v), pullback = rrule(np.linalg.eigh, a, uplo)
    d = WEIGHTS[:w.shape[-1]]

    def projection_pullback(dy):
        dw, dp = (ZeroTangent(), ZeroTangent()) if isinstance(dy, AbstractZero) else \
            (unthunk(dy[0]), unthunk(dy[1]))
        dv = ZeroTangent() if isinstance(dp, AbstractZero) else (dp + H(dp)) @ v * d
        return NoTangent(), pullback((dw, dv))[1], NoTangent()

    return (w, (v * d) @ H(v)), projection_pullback


def _eigh_projection_frule(tangents, a, uplo="L"):
    (w, v), t = frule((NoTangent(), tangents[1], NoTangent()), np.linalg.eigh, a, uplo)
    d = WEIGHTS[:w.shape[-1]]
    if isinstance(t, AbstractZero):
        return (w, (v * d) @ H(v)), ZeroTangent()
    dv = t.eigenvectors
    return (w, (v * d) @ H(v)), Tangent(tuple, {0: t.eigenvalues,
                                               1: (dv * d) @ H(v) + (v * d) @ H(dv)})


def svd_projection(a, full_matrices=True):
    """(U1 diag(WEIGHTS) Vh1, S, U2 U2^H, V2 V2^H): unchanged by the phases of singular pairs
    and by the basis of the extra columns."""
    u, s, vh = np.linalg.svd(a, full_matrices)
    k = s.shape[-1]
    u1, vh1, u2, v2 = u[..., :k], vh[..., :k, :], u[..., k:], H(vh[..., k:, :])
    return (u1 * WEIGHTS[:k]) @ vh1, s, u2 @ H(u2), v2 @ H(v2)


def _svd_projection_rrule(a, full_matrices=True):
    (u, s, vh), pullback = rrule(np.linalg.svd, a, full_matrices)
    k = s.shape[-1]
    d = WEIGHTS[:k]
    u1, vh1, u2, v2 = u[..., :k], vh[..., :k, :], u[..., k:], H(vh[..., k:, :])
    y = ((u1 * d) @ vh1, s, u2 @ H(u2), v2 @ H(v2))

    def projection_pullback(dy):
        if isinstance(dy, AbstractZero):
            return NoTangent(), ZeroTangent(), NoTangent()
        dm, ds, dpu, dpv = (unthunk(dy[i]) for i in range(4))
        dtype = np.result_type(u, *(t for t in (dm, dpu, dpv) if not isinstance(t, AbstractZero)))
        du, dvh = np.zeros(u.shape, dtype), np.zeros(vh.shape, dtype)
        if not isinstance(dm, AbstractZero):
            du[..., :k] = dm @ H(vh1) * d
            dvh[..., :k, :] = d[:, None] * (H(u1) @ dm)
        if not isinstance(dpu, AbstractZero):
            du[..., k:] = (dpu + H(dpu)) @ u2
        if not isinstance(dpv, AbstractZero):
            dvh[..., k:, :] = H((dpv + H(dpv)) @ v2)
        return NoTangent(), pullback((du, ds, dvh))[1], NoTangent()

    return y, projection_pullback


def _svd_projection_frule(tangents, a, full_matrices=True):
    (u, s, vh), t = frule((NoTangent(), tangents[1], NoTangent()), np.linalg.svd, a,
                          full_matrices)
    k = s.shape[-1]
    d = WEIGHTS[:k]
    u1, vh1, u2, v2 = u[..., :k], vh[..., :k, :], u[..., k:], H(vh[..., k:, :])
    y = ((u1 * d) @ vh1, s, u2 @ H(u2), v2 @ H(v2))
    if isinstance(t, AbstractZero):
        return y, ZeroTangent()
    du, dvh = t.U, t.Vh
    du1, dvh1, du2, dv2 = du[..., :k], dvh[..., :k, :], du[..., k:], H(dvh[..., k:, :])
    return y, Tangent(tuple, {0: (du1 * d) @ vh1 + (u1 * d) @ dvh1, 1: t.S,
                              2: du2 @ H(u2) + u2 @ H(du2), 3: dv2 @ H(v2) + v2 @ H(dv2)})


GAUGE_CASES = [
    *[(eigh_projection, _eigh_projection_rrule, _eigh_projection_frule,
       (hermitian_distinct(4, dtype=t), uplo)) for t in (F64, C128) for uplo in ("L", "U")],
    (eigh_projection, _eigh_projection_rrule, _eigh_projection_frule,
     (hermitian_distinct(3, 2, dtype=C128), "L")),
    (eigh_projection, _eigh_projection_rrule, _eigh_projection_frule, (normal(3, 3), "U")),
    *[(svd_projection, _svd_projection_rrule, _svd_projection_frule,
       (distinct_singular(*shape, dtype=t), full))
      for t in (F64, C128) for shape in ((4, 2), (2, 4), (3, 3), (2, 4, 3))
      for full in (True, False)],
]


@pytest.mark.parametrize("f, reverse, forward, args", GAUGE_CASES,
                         ids=lambda v: getattr(v, "__name__", None) or "")
def test_gauge_invariant_functions_of_factorizations(f, reverse, forward, args):
    test_rrule(f, *args, rule=reverse)
    test_frule(f, *args, rule=forward)


def test_eigh_weighted_eigenvalues_closed_form():
    # d(sum(c * w))/da = V diag(c) V^H for a Hermitian a (read from its lower triangle)
    a = hermitian_distinct(3, dtype=C128)
    w, v = np.linalg.eigh(a)
    c = np.array([1.0, -2.0, 0.5])
    (_, _), pullback = rrule(np.linalg.eigh, a)
    grad = unthunk(pullback((c, ZeroTangent()))[1])
    full = (v * c) @ H(v)
    expected = 2 * np.tril(full, -1) + np.diag(np.real(np.diag(full)))
    np.testing.assert_allclose(grad, expected, atol=1e-12)


def test_eigh_degenerate_eigenvalues_invariant_subspace():
    # a double eigenvalue: a function of the eigenspace's projector still gets a finite,
    # correct gradient (ties contribute nothing)
    q = np.linalg.qr(normal(3, 3))[0]
    a = (q * np.array([1.0, 1.0, 3.0])) @ q.T
    (w, v), pullback = rrule(np.linalg.eigh, a)
    dp = normal(3, 3)
    # L = <dp, P> with P = v[:, :2] v[:, :2]^T, the projector onto the double eigenspace
    dv = np.zeros_like(v)
    dv[:, :2] = (dp + dp.T) @ v[:, :2]
    grad = unthunk(pullback((ZeroTangent(), dv))[1])
    assert np.all(np.isfinite(grad))
    # closed form: dP = -(Q dA P + P dA Q) / (3 - 1) with Q = I - P, so the gradient of
    # <dp, P> w.r.t. a symmetric dA is the symmetric part of -(Q dp P + P dp Q) / 2, read
    # from the lower triangle
    p = v[:, :2] @ v[:, :2].T
    q = np.eye(3) - p
    s = -(q @ dp @ p + p @ dp @ q) / 2
    s = (s + s.T) / 2
    np.testing.assert_allclose(grad, 2 * np.tril(s, -1) + np.diag(np.diag(s)), atol=1e-10)


# --- closed forms and structure ------------------------------------------------------------


def test_matmul_complex_convention():
    a, b = normal(2, 3, dtype=C128), normal(3, 2, dtype=C128)
    dy = normal(2, 2, dtype=C128)
    _, pullback = rrule(np.matmul, a, b)
    _, da, db = pullback(dy)
    np.testing.assert_allclose(unthunk(da), dy @ H(b))
    np.testing.assert_allclose(unthunk(db), H(a) @ dy)


def test_matmul_cotangents_are_lazy_and_projected():
    a, b = normal(3, 3, dtype=F32), normal(3, 3, dtype=C128)
    _, pullback = rrule(np.matmul, a, b)
    _, da, db = pullback(normal(3, 3, dtype=C128))
    assert isinstance(da, Thunk) and isinstance(db, Thunk)
    assert unthunk(da).dtype == F32 and unthunk(db).dtype == C128


def test_integer_arguments_get_no_tangent():
    a = np.arange(6).reshape(2, 3)
    _, pullback = rrule(np.matmul, a, normal(3, 2))
    _, da, db = pullback(normal(2, 2))
    assert da is NoTangent() and unthunk(db).shape == (3, 2)


@pytest.mark.parametrize("f, args", [
    (np.matmul, (normal(2, 2), normal(2, 2))), (np.linalg.inv, (well_conditioned(2),)),
    (np.einsum, ("ij,jk", normal(2, 2), normal(2, 2))), (np.linalg.svd, (normal(2, 2),)),
    (np.linalg.slogdet, (well_conditioned(2),)),
])
def test_zero_cotangent_short_circuits(f, args):
    _, pullback = rrule(f, *args)
    result = pullback(ZeroTangent())
    assert result[0] is NoTangent()
    for arg, cotangent in zip(args, result[1:]):
        assert cotangent is (ZeroTangent() if isinstance(arg, np.ndarray) else NoTangent())


def test_det_closed_form():
    a = well_conditioned(3)
    _, pullback = rrule(np.linalg.det, a)
    np.testing.assert_allclose(pullback(1.0)[1], np.linalg.det(a) * np.linalg.inv(a).T)


def test_det_of_a_singular_matrix_is_its_cofactor_matrix():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    _, pullback = rrule(np.linalg.det, a)
    np.testing.assert_allclose(pullback(1.0)[1], [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)


def test_cholesky_of_symmetric_perturbation_matches_symmetric_gradient():
    # The honest gradient lives on the lower triangle; on symmetric directions it agrees with
    # the usual symmetric formula.
    a = positive_definite(3)
    _, pullback = rrule(np.linalg.cholesky, a)
    grad = pullback(normal(3, 3))[1]
    assert np.allclose(np.triu(grad, 1), 0)


@pytest.mark.parametrize("call, message", [
    (lambda: rrule(np.matmul, np.ones((2, 2)), np.ones((2, 2)), out=np.ones((2, 2))), "out="),
    (lambda: rrule(np.dot, np.ones(2), np.ones(2), out=np.ones(())), "out="),
    (lambda: rrule(np.einsum, "i->", np.ones(2), out=np.ones(())), "out="),
    (lambda: frule((NoTangent(), np.ones(2)), np.einsum, "i->", np.ones(2), out=np.ones(())),
     "out="),
    (lambda: rrule(np.linalg.svd, np.eye(2), hermitian=True), "hermitian=True"),
    (lambda: rrule(np.linalg.qr, np.ones((3, 2)), mode="complete"), "mode='complete'"),
    (lambda: rrule(np.linalg.qr, np.ones((3, 2)), "raw"), "mode='raw'"),
    (lambda: rrule(np.linalg.multi_dot, [np.eye(2), np.eye(2)], out=np.eye(2)), "out="),
    (lambda: rrule(np.matmul, np.ones((2, 2)), np.ones((2, 2)), axes=[(0, 1)] * 3), "axes="),
])
def test_refused_options_name_the_function(call, message):
    with pytest.raises(TypeError, match="numpy.*" + message.replace("(", r"\(")):
        call()


def test_multi_dot_cotangent_is_a_tangent_of_the_sequence():
    arrays = [normal(2, 3), normal(3, 2)]
    _, pullback = rrule(np.linalg.multi_dot, arrays)
    cotangent = pullback(np.ones((2, 2)))[1]
    assert isinstance(cotangent, Tangent) and cotangent.primal_type is list
    np.testing.assert_allclose(cotangent[0], np.ones((2, 2)) @ arrays[1].T)


def test_lstsq_rank_gets_no_tangent_and_residual_cotangent_alone():
    a, b = distinct_singular(5, 3), normal(5)
    (x, residuals, rank, s), pullback = rrule(np.linalg.lstsq, a, b)
    _, da, db = pullback((ZeroTangent(), np.ones(1), ZeroTangent(), ZeroTangent()))
    error = b - a @ x
    np.testing.assert_allclose(unthunk(db), 2 * error, atol=1e-12)
    np.testing.assert_allclose(unthunk(da), -2 * np.outer(error, x), atol=1e-12)


@pytest.mark.parametrize("dtype", [F64, C128])
@pytest.mark.parametrize("scipy_imported", [True, False], ids=["lapack", "numpy only"])
def test_cholesky_pullback_at_order_1_and_2_with_and_without_scipy(dtype, scipy_imported,
                                                                   monkeypatch):
    """The Cholesky pullback takes LAPACK's triangular routines when the program imported
    SciPy, NumPy's solve otherwise: both against finite differences, at order 1 and 2."""
    import sys

    from chainrules.testing import test_frule_order2, test_rrule_order2

    if scipy_imported:
        pytest.importorskip("scipy.linalg")
    else:
        monkeypatch.delitem(sys.modules, "scipy.linalg", raising=False)
    a = positive_definite(4, dtype=dtype)
    test_rrule(np.linalg.cholesky, a)
    test_frule(np.linalg.cholesky, a)
    test_rrule_order2(np.linalg.cholesky, a)
    test_frule_order2(np.linalg.cholesky, a)


@pytest.mark.parametrize("function, make", [
    (np.linalg.cholesky, lambda: positive_definite(4)),
    (np.linalg.qr, lambda: normal(5, 3)),
    (np.linalg.qr, lambda: normal(3, 3, dtype=C128)),
])
def test_triangular_solves_through_scipy_at_order_1_and_2(function, make, monkeypatch):
    """Large matrices take SciPy's triangular solve (`LAPACK_SIZE`); here every size does:
    the same rules against finite differences, at order 1 and 2."""
    pytest.importorskip("scipy.linalg")
    from chainrules.rules.numpy import linalg
    from chainrules.testing import test_frule_order2, test_rrule_order2

    monkeypatch.setattr(linalg, "LAPACK_SIZE", 1)
    a = make()
    test_rrule(function, a)
    test_frule(function, a)
    test_rrule_order2(function, a)
    test_frule_order2(function, a)


def test_tensorsolve_solves_and_its_gradient_is_solve_s():
    """tensorsolve(a, b) with ``a`` reshaped to the square matrix A: the same gradient as
    np.linalg.solve's on A and b, reshaped."""
    import chainrules as cr
    a, b, w = well_conditioned(6).reshape(2, 3, 2, 3), normal(2, 3), normal(2, 3)
    da, db = cr.grad(lambda a, b: np.sum(w * np.linalg.tensorsolve(a, b)), argnums=(0, 1))(a, b)
    A = a.reshape(6, 6)
    z = np.linalg.solve(A.T, w.ravel())
    np.testing.assert_allclose(db, z.reshape(2, 3))
    np.testing.assert_allclose(da, -np.outer(z, np.linalg.solve(A, b.ravel())).reshape(a.shape))
