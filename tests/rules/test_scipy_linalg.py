"""The rule-testing kit on the ``scipy.linalg`` rules of src/chainrules/rules/scipy/linalg/factorizations.py.

Every case is checked against finite differences (float64, float32 where SciPy keeps it,
complex where SciPy supports it). Matrices that SciPy reads in one triangle carry other values
in the other one: finite differences see that their cotangent is 0 there. ``eigh``'s
eigenvectors are checked through a gauge-invariant function of them. Gradients through the
engine (``chainrules.grad`` on code that calls ``scipy.linalg.solve(...)``) are checked
against finite differences, at order 1 and 2, and refused options by their messages.
"""

from __future__ import annotations

import numpy as np
import pytest

sla = pytest.importorskip("scipy.linalg")

import scipy  # noqa: E402

import chainrules  # noqa: E402
from chainrules import rrule  # noqa: E402
from chainrules.testing import case, check_case  # noqa: E402
from chainrules.testing import test_frule_order2, test_rrule_order2  # noqa: E402
from tests.numpy_features import accepted  # noqa: E402

STACKS = "stacks of matrices (SciPy 1.16)"

A = np.array([[2.0, 0.7, -0.4], [0.9, 1.5, 0.3], [-0.6, 0.8, 1.8]])
A_C = A + 1j * np.array([[0.2, -0.3, 0.5], [0.4, -0.1, 0.6], [0.3, 0.7, 0.25]])
B3 = np.array([0.5, -1.2, 0.8])
B32 = np.array([[0.5, 1.0], [-1.2, 0.3], [0.8, -0.6]])
# Positive definite from its lower triangle (A's upper values in the other one) and from its
# upper triangle.
SPD = A @ A.T + np.eye(3)
SPD_LOWER = np.tril(SPD) + np.triu(A, 1)
SPD_UPPER = np.triu(SPD) + np.tril(A, -1)
HPD = A_C @ A_C.conj().T + np.eye(3)
HPD_LOWER = np.tril(HPD) + np.triu(A_C, 1)
HPD_UPPER = np.triu(HPD) + np.tril(A_C, -1)
# A second positive definite matrix, the b of eigh's generalized problem (A's values in the
# triangle not read), and a symmetric indefinite a.
SPD_B = np.array([[2.0, 0.3, -0.2], [0.3, 1.5, 0.4], [-0.2, 0.4, 1.2]])
SPD_B_LOWER = np.tril(SPD_B) + np.triu(A, 1)
SYM_LOWER = np.tril(A + A.T) + np.triu(A_C.real, 1)

# Banded storage (rows: superdiagonals, diagonal, subdiagonals); corner entries are not read.
BANDED_11 = np.array([[9.0, 0.5, -0.3], [2.0, 2.5, 1.8], [0.4, -0.6, 9.0]])
BANDED_12 = np.array([[9.0, 9.0, 0.2], [9.0, 0.5, -0.3], [2.0, 2.5, 1.8], [0.4, -0.6, 9.0]])
BANDED_01 = np.array([[9.0, 0.5, -0.3], [2.0, 2.5, 1.8]])


def _eigenvector_invariant(a, **kwargs):
    """A gauge-invariant function of eigh's eigenvectors: sum_j w_j^0 |v_j|^4 entries."""
    w, v = sla.eigh(a, **kwargs)
    return np.sum(np.abs(v) ** 4 * np.arange(1.0, 4.0), axis=0) + w


def _lu_solve_of(a, b, trans=0):
    return sla.lu_solve(sla.lu_factor(a), b, trans=trans)


def _cases():
    solve, f32 = sla.solve, np.float32
    return [
        case(solve, A, B3),
        case(solve, A, B32),
        case(solve, A, B32, transposed=True),
        case(solve, A, B3, assume_a="gen"),
        case(solve, A.astype(f32), B3.astype(f32)),
        case(solve, A_C, B32 * (1 + 0.5j)),
        case(solve, A, B3 * (1 - 1j)),
        case(solve, SPD_UPPER, B32, assume_a="sym"),
        case(solve, SPD_LOWER, B3, lower=True, assume_a="sym"),
        case(solve, SPD_UPPER, B3, assume_a="pos"),
        case(solve, SPD_LOWER, B32, True, assume_a="pos"),
        case(solve, HPD_LOWER, B3 + 0.2j, lower=True, assume_a="pos"),
        case(solve, HPD_UPPER, B32, assume_a="her"),
        case(solve, A_C, B3, assume_a="sym", lower=True),   # complex symmetric: no conj
        case(sla.pinv, A),
        case(sla.pinv, B32),  # rectangular, full rank
        case(sla.pinv, A_C[:, :2]),
        case(sla.inv, A),
        case(sla.inv, A.astype(f32)),
        case(sla.inv, A_C),
        case(sla.det, A),
        case(sla.det, A.astype(f32)),
        case(sla.det, A_C),
        case(sla.cholesky, SPD_UPPER),
        case(sla.cholesky, SPD_LOWER, lower=True),
        case(sla.cholesky, SPD_LOWER, True),
        case(sla.cholesky, SPD_UPPER.astype(f32)),
        case(sla.cholesky, HPD_UPPER),
        case(sla.cholesky, HPD_LOWER, lower=True),
        case(sla.eigh, SPD_LOWER, eigvals_only=True),
        case(sla.eigh, SPD_UPPER, lower=False, eigvals_only=True),
        case(sla.eigh, HPD_LOWER, eigvals_only=True),
        case(sla.eigh, SPD_LOWER.astype(f32), eigvals_only=True),
        case(sla.eigh, SPD_LOWER),                      # real eigenvectors: signs stable
        case(sla.eigh, SPD_UPPER, lower=False),
        # the generalized problem a v = w b v (V^H b V = I), in a and b; ranges of eigenpairs
        case(sla.eigh, SYM_LOWER, SPD_B_LOWER),
        case(sla.eigh, SYM_LOWER, SPD_B_LOWER, eigvals_only=True),
        case(sla.eigh, SYM_LOWER.T, SPD_B_LOWER.T, lower=False),
        case(sla.eigh, HPD_LOWER, SPD_B_LOWER + 0.2j * np.triu(A, 1), eigvals_only=True),
        case(sla.eigh, SYM_LOWER, subset_by_index=[1, 2]),
        case(sla.eigh, SYM_LOWER, SPD_B_LOWER, subset_by_index=[0, 1]),
        case(sla.eigh, SYM_LOWER, subset_by_index=[0, 0], eigvals_only=True),
        case(sla.eigh, SYM_LOWER, SPD_B_LOWER, subset_by_value=[-1.0, 10.0],
             eigvals_only=True),
        case(sla.eigh, SYM_LOWER, subset_by_value=[-1.0, 10.0]),
        case(sla.block_diag, A[:2, :2], B3, np.array(0.7)),
        case(sla.block_diag, A_C, B32),
        case(sla.block_diag, A.astype(f32)),
        case(sla.lu_solve, sla.lu_factor(A), B3),
        case(sla.lu_solve, sla.lu_factor(A), B32, trans=1),
        case(sla.lu_solve, sla.lu_factor(A), B32, 2),
        case(sla.lu_solve, sla.lu_factor(A_C), B3 * (1 + 1j), trans=1),
        case(sla.lu_solve, sla.lu_factor(A_C), B32, trans=2),
        case(sla.lu_solve, sla.lu_factor(A.astype(f32)), B3.astype(f32)),
        case(sla.cho_factor, SPD_UPPER),
        case(sla.cho_factor, SPD_LOWER, lower=True),
        case(sla.cho_factor, SPD_UPPER.astype(f32)),
        case(sla.cho_factor, HPD_LOWER, True),
        case(sla.lu_factor, A),
        case(sla.lu_factor, A.T),                       # other pivots
        case(sla.lu_factor, A_C),
        case(sla.lu_factor, A.astype(f32)),
        case(sla.lu, A),
        case(sla.lu, A.T),
        case(sla.lu, A_C),
        case(sla.solve_sylvester, A, A.T + np.eye(3), B32 @ B32.T),
        case(sla.solve_sylvester, A[:2, :2], A, B32.T),
        case(sla.solve_sylvester, A_C, A, B32 @ B32.T * (1 + 1j)),
        case(sla.sqrtm, SPD),
        case(sla.sqrtm, A + 2 * np.eye(3)),
        case(sla.sqrtm, HPD),
        case(sla.logm, SPD),
        case(sla.logm, A + 2 * np.eye(3)),
        case(sla.logm, A_C + 2 * np.eye(3)),
        case(sla.solve_banded, (1, 1), BANDED_11, B3),
        case(sla.solve_banded, (1, 2), BANDED_12, B32),
        case(sla.solve_banded, (0, 1), BANDED_01 * (1 + 0.3j), B3),
        case(sla.solve_banded, (1, 1), BANDED_11.astype(f32), B3.astype(f32)),
        *[accepted(c, STACKS) for c in (
            case(solve, np.stack([A, A.T]), B32),
            case(solve, np.stack([A, A.T]), np.stack([B32, -B32]), transposed=True),
            case(solve, np.stack([SPD_LOWER, SPD_LOWER.T]), B3, lower=True, assume_a="pos"),
            case(sla.inv, np.stack([A, A.T])),
            case(sla.det, np.stack([A, A_C])),
            case(sla.cholesky, np.stack([SPD_UPPER, 2 * SPD_UPPER])),
            case(sla.eigh, np.stack([SPD_LOWER, HPD_LOWER]), eigvals_only=True),
            case(sla.eigh, np.stack([SYM_LOWER, SPD_LOWER]), np.stack([SPD_B_LOWER, 2 * SPD_B]),
                 subset_by_index=[1, 2]),
        )],
    ]


CASES = _cases()


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_scipy_linalg_rule(rule_case):
    check_case(rule_case)


ORDER2 = [
    case(sla.solve, A, B32), case(sla.solve, A, B3, transposed=True),
    case(sla.solve, SPD_LOWER, B3, lower=True, assume_a="sym"),
    case(sla.solve, HPD_UPPER, B32, assume_a="pos"),
    case(sla.inv, A), case(sla.det, A_C), case(sla.cholesky, SPD_UPPER), case(sla.pinv, A_C[:, :2]),
    case(sla.cholesky, HPD_LOWER, lower=True), case(sla.eigh, SPD_LOWER, eigvals_only=True),
    case(sla.eigh, SPD_UPPER, lower=False), case(sla.eigh, SYM_LOWER, SPD_B_LOWER),
    case(sla.eigh, SYM_LOWER, SPD_B_LOWER, subset_by_value=[-1.0, 10.0], eigvals_only=True),
    case(sla.eigh, SYM_LOWER, subset_by_index=[1, 2]),
    case(sla.block_diag, A[:2, :2], B3), case(sla.lu_solve, sla.lu_factor(A), B3),
    case(sla.lu_solve, sla.lu_factor(A_C), B32, trans=1),
    case(sla.cho_factor, SPD_LOWER, lower=True), case(sla.lu_factor, A.T), case(sla.lu, A_C),
    case(sla.solve_sylvester, A, A.T + np.eye(3), B32 @ B32.T), case(sla.sqrtm, SPD),
    case(sla.logm, A + 2 * np.eye(3)), case(sla.solve_banded, (1, 2), BANDED_12, B32),
    # cho_solve with one column: the factor's cotangent kept rank-1 (2k < n), at order 2
    case(sla.cho_solve, (np.linalg.cholesky(SPD), True), B3),
    case(sla.cho_solve, (np.linalg.cholesky(SPD).T, False), B3),
]


@pytest.mark.parametrize("rule_case", ORDER2, ids=lambda c: c.id)
def test_order2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args, **rule_case.fkwargs)
    test_frule_order2(rule_case.function, *rule_case.args, **rule_case.fkwargs)


# --- through the engine, as users write it ----------------------------------------------------

def _fd_grad(f, x, step=1e-6):
    g = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[index] = step
        g[index] = (f(x + e) - f(x - e)) / (2 * step)
    return g


def _loss(a):
    x = scipy.linalg.solve(a, B32, assume_a="gen")
    c = scipy.linalg.cholesky(a @ a.T + np.eye(3), lower=True)
    w = scipy.linalg.eigh(a + a.T, eigvals_only=True)
    y = scipy.linalg.lu_solve(scipy.linalg.lu_factor(A), x)
    big = scipy.linalg.block_diag(a, scipy.linalg.inv(a))
    return (np.sum(x ** 2) + np.sum(c * A) + w @ np.array([1.0, -0.5, 0.3])
            + np.sum(y * B32) + np.sum(np.sin(big)) + scipy.linalg.det(a))


def test_grad_through_the_engine_matches_finite_differences():
    g = chainrules.grad(_loss)(A)
    np.testing.assert_allclose(g, _fd_grad(_loss, A), rtol=1e-6, atol=1e-7)


def test_second_derivative_through_the_engine():
    direction = np.array([[0.3, -0.2, 0.1], [0.0, 0.5, -0.4], [0.2, 0.1, -0.3]])

    def derivative(a):
        return np.sum(chainrules.grad(_loss)(a) * direction)

    second = chainrules.grad(derivative)(A)
    expected = _fd_grad(lambda a: np.sum(chainrules.grad(_loss)(a) * direction), A, step=1e-5)
    np.testing.assert_allclose(second, expected, rtol=1e-5, atol=1e-6)


def test_generalized_eigh_of_complex_matrices_through_a_gauge_invariant_function():
    """a v = w b v for Hermitian a and b: |v|^4 does not depend on the phases, so finite
    differences see the eigenvectors' tangent through it, in a and in b."""
    b = HPD_LOWER * 0.5 + 2 * np.eye(3)

    def loss(a_re, a_im, b_re, b_im):
        return np.sum(_eigenvector_invariant(a_re + 1j * a_im, b=b_re + 1j * b_im))

    parts = [np.real(A_C + A_C.T.conj()), np.imag(A_C + A_C.T.conj()), b.real, b.imag]
    gradients = chainrules.grad(loss, argnums=(0, 1, 2, 3))(*parts)
    for position, gradient in enumerate(gradients):
        def partial(x, position=position):
            return loss(*parts[:position], x, *parts[position + 1:])
        np.testing.assert_allclose(gradient, _fd_grad(partial, parts[position]), rtol=1e-6,
                                   atol=1e-7)


def test_generalized_eigh_closed_form():
    """For diagonal a and b the eigenvalues are a_ii / b_ii: dw_i/da_ii = 1 / b_ii and
    dw_i/db_ii = -a_ii / b_ii^2; the eigenvector e_i / sqrt(b_ii) has d/db_ii -1/2 b_ii^-3/2."""
    a, b = np.diag([1.0, 4.0, 9.0]), np.diag([2.0, 1.0, 0.5])
    da, db = chainrules.grad(lambda a, b: np.sum(sla.eigh(a, b, eigvals_only=True)),
                             argnums=(0, 1))(a, b)
    np.testing.assert_allclose(np.diag(da), 1 / np.diag(b), rtol=1e-12)
    np.testing.assert_allclose(np.diag(db), -np.diag(a) / np.diag(b) ** 2, rtol=1e-12)
    db = chainrules.grad(lambda b: np.sum(np.abs(sla.eigh(a, b)[1])))(b)
    np.testing.assert_allclose(np.diag(db), -0.5 * np.diag(b) ** -1.5, rtol=1e-12)


def test_an_eigh_range_has_the_gradient_of_the_full_problem_selected():
    """subset_by_index / subset_by_value: the same gradient as eigh of every eigenpair with the
    range selected after (what the refusal used to ask users to write)."""
    weights = np.array([0.3, -1.2])

    def ranged(a, b):
        w, v = sla.eigh(a, b, subset_by_index=[1, 2])
        return weights @ w + np.sum(v ** 4 @ weights)

    def selected(a, b):
        w, v = sla.eigh(a, b)
        return weights @ w[1:] + np.sum(v[:, 1:] ** 4 @ weights)

    for x in ranged, selected:
        assert chainrules.vjp(x, SYM_LOWER, SPD_B_LOWER)[0] == pytest.approx(
            selected(SYM_LOWER, SPD_B_LOWER), rel=1e-12)
    got = chainrules.grad(ranged, argnums=(0, 1))(SYM_LOWER, SPD_B_LOWER)
    expected = chainrules.grad(selected, argnums=(0, 1))(SYM_LOWER, SPD_B_LOWER)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[1], _fd_grad(lambda b: ranged(SYM_LOWER, b), SPD_B_LOWER),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("a", [SPD_LOWER, HPD_LOWER], ids=["real", "complex"])
def test_eigh_eigenvectors_through_a_gauge_invariant_function(a):
    """Complex eigenvectors have a free phase, so finite differences see them through
    |v|^4, which does not depend on it."""
    def loss(re, im):
        return np.sum(_eigenvector_invariant(re + 1j * im if np.iscomplexobj(a) else re))

    re, im = np.real(a).copy(), np.imag(a).copy()
    g_re, g_im = chainrules.grad(loss, argnums=(0, 1))(re, im)
    np.testing.assert_allclose(g_re, _fd_grad(lambda r: loss(r, im), re), rtol=1e-6, atol=1e-7)
    if np.iscomplexobj(a):
        np.testing.assert_allclose(g_im, _fd_grad(lambda i: loss(re, i), im), rtol=1e-6,
                                   atol=1e-7)


@pytest.mark.parametrize("trans", [0, 1, 2])
def test_lu_solve_of_lu_factor_has_the_gradient_of_solve(trans):
    """Both factorization rules chained: the gradient in A of lu_solve(lu_factor(A), b)
    against finite differences, and the same through cho_factor and cho_solve."""
    b = B32 * (1 + 0.5j) if trans else B32

    def loss(a):
        x = scipy.linalg.lu_solve(scipy.linalg.lu_factor(a), b, trans=trans)
        return np.sum(np.abs(x) ** 2)

    np.testing.assert_allclose(chainrules.grad(loss)(A), _fd_grad(loss, A), rtol=1e-6,
                               atol=1e-7)

    def cho_loss(a):
        return np.sum(scipy.linalg.cho_solve(scipy.linalg.cho_factor(a @ a.T), B32) ** 2)

    np.testing.assert_allclose(chainrules.grad(cho_loss)(A), _fd_grad(cho_loss, A),
                               rtol=1e-6, atol=1e-7)


def test_lu_solve_gradient_in_the_matrix_matches_solve():
    """d/dA of lu_solve(lu_factor(A), b) through the factor's cotangent: lu_factor has no rule
    here, so the chain is checked on the factor by the kit and, in closed form, here:
    the cotangent of A in solve(A, b) pulled through lu = L + U - I."""
    lu, piv = sla.lu_factor(A)
    _, pullback = rrule(sla.lu_solve, (lu, piv), B3)
    dy = np.array([0.3, -0.1, 0.7])
    dlu = pullback(dy)[1][0]
    _, solve_pullback = rrule(sla.solve, A, B3)
    da = solve_pullback(dy)[1]
    # dA = P (dL U + L dU) with dL = tril(dlu, -1), dU = triu(dlu): <da, dA> = <dlu, dlu_dir>
    rng = np.random.default_rng(0)
    direction = rng.standard_normal((3, 3))
    L, U = np.tril(lu, -1) + np.eye(3), np.triu(lu)
    perm = np.arange(3)
    for i, p in enumerate(piv):
        perm[i], perm[p] = perm[p], perm[i]
    d_a = np.empty((3, 3))
    d_a[perm] = np.tril(direction, -1) @ U + L @ np.triu(direction)
    np.testing.assert_allclose(np.sum(da * d_a), np.sum(dlu * direction), rtol=1e-10)


@pytest.mark.parametrize("call, message", [
    (lambda: rrule(sla.solve, A, B3.copy(), overwrite_b=True), "scipy.linalg.solve: overwrite_b"),
    (lambda: rrule(sla.solve, A.copy(), B3, overwrite_a=True), "scipy.linalg.solve: overwrite_a"),
    (lambda: rrule(sla.solve, A, B3, assume_a="banded"), "scipy.linalg.solve: assume_a='banded'"),
    (lambda: rrule(sla.inv, A.copy(), True), "scipy.linalg.inv: overwrite_a"),
    (lambda: rrule(sla.inv, A, assume_a="pos"), "scipy.linalg.inv: assume_a='pos'"),
    (lambda: rrule(sla.det, A.copy(), overwrite_a=True), "scipy.linalg.det: overwrite_a"),
    (lambda: rrule(sla.cholesky, SPD.copy(), overwrite_a=True),
     "scipy.linalg.cholesky: overwrite_a"),
    (lambda: rrule(sla.eigh, SPD, SPD, type=2), "scipy.linalg.eigh: type=2"),
    (lambda: rrule(sla.eigh, SPD, SPD.copy(), overwrite_b=True), "scipy.linalg.eigh: overwrite_b"),
    (lambda: rrule(sla.lu_solve, sla.lu_factor(A), B3.copy(), overwrite_b=True),
     "scipy.linalg.lu_solve: overwrite_b"),
    (lambda: rrule(sla.lu_solve, A, B3), "scipy.linalg.lu_solve: the first argument"),
    (lambda: rrule(sla.lu_factor, A[:2]), "scipy.linalg.lu_factor: differentiating needs"),
    (lambda: rrule(sla.lu, A, permute_l=True), "scipy.linalg.lu: permute_l=True"),
    (lambda: rrule(sla.lu, A, p_indices=True), "scipy.linalg.lu: p_indices=True"),
    (lambda: rrule(sla.solve_banded, (1, 1), BANDED_11.copy(), B3, overwrite_ab=True),
     "scipy.linalg.solve_banded: overwrite_ab"),
    (lambda: rrule(sla.cho_factor, SPD.copy(), overwrite_a=True),
     "scipy.linalg.cho_factor: overwrite_a"),
])
def test_refused_options_name_the_function_and_option(call, message):
    with pytest.raises((ValueError, TypeError, NotImplementedError), match=message.replace(
            "(", r"\(").replace("[", r"\[")):
        call()


def test_solve_sym_gradient_lies_in_the_read_triangle():
    _, pullback = rrule(sla.solve, SPD_LOWER, B3, lower=True, assume_a="sym")
    da = pullback(np.ones(3))[1]
    assert np.all(np.triu(da, 1) == 0) and np.any(np.tril(da, -1) != 0)
