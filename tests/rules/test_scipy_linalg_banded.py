"""``scipy.linalg``'s Hermitian band and tridiagonal functions, traced through NumPy versions
built on functions with rules (src/chainrules/rules/scipy/linalg/banded.py):
``cholesky_banded`` (by blocks, several of them), ``cho_solve_banded``, ``eig_banded``,
``eigvals_banded``, ``eigh_tridiagonal``, ``eigvalsh_tridiagonal``. Values against SciPy's own,
gradients against central differences, Hessian-vector products against differences of
gradients. Before, each raised from LAPACK's wrappers ("a traced value was converted to a
plain NumPy array")."""

from __future__ import annotations

import numpy as np
import pytest

sla = pytest.importorskip("scipy.linalg")

import chainrules as cr  # noqa: E402
from chainrules.rules.scipy.linalg.banded import (  # noqa: E402
    band_eigen_phases, reference_eigenvectors)
from chainrules.testing import case, check_case  # noqa: E402
from tests.ad.finite_differences import numerical_gradient  # noqa: E402

# No rules of their own, but for two helpers that are not differentiable (an engine computes
# them on plain values).
CASES = [case(band_eigen_phases, np.array([[2.0, 1.0], [1.0, 2.0]]), None, "a", None,
              non_differentiable=True),
         case(reference_eigenvectors, sla.eigh_tridiagonal, np.array([1.0, 2.0]),
              np.array([0.5]), non_differentiable=True)]


def band(n, bands, lower, complex_values=False, seed=0):
    """A positive definite Hermitian band matrix in SciPy's storage (upper or lower form)."""
    rng = np.random.default_rng(seed)
    ab = 0.3 * rng.normal(size=(bands + 1, n))
    if complex_values:
        ab = ab + 0.3j * rng.normal(size=(bands + 1, n))
    ab[0 if lower else bands] = 3.0 + bands + np.abs(ab[0 if lower else bands])
    return ab


def _check(loss, x, rtol=1e-6):
    value, gradient = cr.value_and_grad(loss)(x)
    assert value == pytest.approx(loss(x), rel=1e-10)
    np.testing.assert_allclose(gradient, numerical_gradient(loss, x), rtol=rtol,
                               atol=1e-9 * max(1.0, np.max(np.abs(gradient))))


# (n, bands): one block, and 300 rows (ten blocks of 32 rows in the factorization)
SHAPES = [(6, 1), (7, 2), (300, 3)]


@pytest.mark.parametrize("lower", [False, True], ids=["upper", "lower"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_cholesky_banded_and_its_solve(shape, lower):
    n, bands = shape
    ab = band(n, bands, lower)
    np.testing.assert_allclose(cr.vjp(lambda a: sla.cholesky_banded(a, lower=lower), ab)[0],
                               sla.cholesky_banded(ab, lower=lower), rtol=1e-13, atol=1e-15)
    weights = np.cos(np.arange(ab.size)).reshape(ab.shape)
    b = np.sin(np.arange(2.0 * n)).reshape(n, 2)

    def factor(a):
        return np.sum(np.sin(sla.cholesky_banded(a, lower=lower)) * weights)

    def solution(a, rhs):
        return np.sum(sla.cho_solve_banded((sla.cholesky_banded(a, lower=lower), lower),
                                           rhs) * rhs[::-1])

    if n > 100:  # the differences of a few entries, near each end and across a block edge
        entries = [(bands, 0), (bands, 127), (bands, 128), (0, 129), (bands - 1, n - 1)]
        for loss in (factor, lambda a: solution(a, b)):
            gradient = cr.grad(loss)(ab)
            for index in entries:
                e = np.zeros_like(ab)
                e[index] = 1e-6
                assert gradient[index] == pytest.approx(
                    (loss(ab + e) - loss(ab - e)) / 2e-6, rel=1e-5, abs=1e-8)
        return
    _check(factor, ab)
    _check(lambda a: solution(a, b), ab)
    _check(lambda rhs: solution(ab, rhs), b)
    v = np.cos(np.arange(ab.size) * 0.7).reshape(ab.shape)
    gradient = cr.grad(factor)
    expected = (gradient(ab + 1e-5 * v) - gradient(ab - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(cr.hvp(factor, ab, v), expected, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("lower", [False, True], ids=["upper", "lower"])
def test_complex_cholesky_banded(lower):
    ab = band(7, 2, lower, complex_values=True)
    np.testing.assert_allclose(cr.vjp(lambda a: sla.cholesky_banded(a, lower=lower), ab)[0],
                               sla.cholesky_banded(ab, lower=lower), rtol=1e-13, atol=1e-15)
    weights = np.cos(np.arange(ab.size)).reshape(ab.shape)
    b = np.sin(np.arange(7.0)) + 1j * np.cos(np.arange(7.0))
    _check(lambda a: np.sum(np.abs(sla.cholesky_banded(a, lower=lower)) ** 2 * weights), ab)
    _check(lambda a: np.sum(np.abs(sla.cho_solve_banded(
        (sla.cholesky_banded(a, lower=lower), lower), b)) ** 2), ab)


@pytest.mark.parametrize("lower", [False, True], ids=["upper", "lower"])
def test_band_eigenproblems(lower):
    ab = band(8, 2, lower, seed=1)
    w, v = sla.eig_banded(ab, lower=lower, select="i", select_range=(1, 3))
    traced_w, traced_v = cr.vjp(lambda a: sla.eig_banded(a, lower=lower, select="i",
                                                         select_range=(1, 3)), ab)[0]
    np.testing.assert_allclose(traced_w, w, rtol=1e-12)
    np.testing.assert_allclose(traced_v, v, atol=1e-12)   # LAPACK's signs
    _check(lambda a: np.sum(sla.eigvals_banded(a, lower=lower) ** 2 * np.arange(8.0)), ab)
    _check(lambda a: np.sum(sla.eig_banded(a, lower=lower)[1][:, :2] ** 2
                            * np.arange(8.0)[:, None]), ab)
    _check(lambda a: np.sum(sla.eig_banded(a, lower=lower, select="v",
                                           select_range=(2.0, 5.0))[0] ** 3), ab)


def test_tridiagonal_eigenproblems():
    rng = np.random.default_rng(2)
    d, e = 2 * rng.normal(size=6), rng.normal(size=5)
    w, v = sla.eigh_tridiagonal(d, e)
    traced_w, traced_v = cr.vjp(lambda dd: sla.eigh_tridiagonal(dd, e), d)[0]
    np.testing.assert_allclose(traced_w, w, rtol=1e-12)
    np.testing.assert_allclose(traced_v, v, atol=1e-12)
    _check(lambda dd: np.sum(sla.eigvalsh_tridiagonal(dd, e) ** 3), d)
    _check(lambda ee: np.sum(sla.eigvalsh_tridiagonal(d, ee) ** 3), e)
    _check(lambda ee: np.sum(sla.eigh_tridiagonal(d, ee)[1][:, 0] * np.arange(6.0)), e)
    _check(lambda dd: np.sum(sla.eigh_tridiagonal(dd, e, select="v",
                                                  select_range=(-1.0, 2.0))[0] ** 2), d)
    loss = lambda dd: np.sum(sla.eigvalsh_tridiagonal(dd, e, select="i",  # noqa: E731
                                                      select_range=(0, 2)) ** 3)
    v = np.cos(np.arange(6.0))
    expected = (cr.grad(loss)(d + 1e-5 * v) - cr.grad(loss)(d - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(cr.hvp(loss, d, v), expected, rtol=1e-5, atol=1e-8)


def test_errors():
    ab = band(5, 1, False)
    ab[1, 2] = -1.0   # not positive definite
    with pytest.raises(np.linalg.LinAlgError):
        cr.grad(lambda a: np.sum(sla.cholesky_banded(a)))(ab)
    with pytest.raises(ValueError, match="overwrite_ab=True"):
        cr.grad(lambda a: np.sum(sla.cholesky_banded(a, overwrite_ab=True)))(band(5, 1, False))


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_the_helpers_are_not_differentiated(rule_case):
    check_case(rule_case)
