"""Rules for ``np.linalg.eig`` and ``np.linalg.eigvals`` (chainrules.rules.numpy.linalg).

Eigenvectors are defined up to a phase each (a sign for real ones; NumPy scales them to unit
norm): the kit checks ``eig`` directly where the vectors are real and LAPACK's signs do not
flip under small steps, and otherwise through gauge-invariant functions of the outputs
(eigenvalues, and ``|V|^2`` elementwise) whose rules are built on ``eig``'s. Matrices have
distinct eigenvalues (a real one with a complex pair among them, complex ones, float32).
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk
from chainrules.core.registry import recorded_whole
from chainrules.core.tangents import AbstractZero
from chainrules.testing import case, check_case, test_rrule_order2
from tests.ad.finite_differences import numerical_gradient
from tests.second_order import assert_jvp_of_grad

F32, C64, C128 = np.float32, np.complex64, np.complex128
_rng = np.random.default_rng(20261204)


def with_eigenvalues(values, dtype=np.float64):
    """A matrix with the given eigenvalues (a conjugate pair among real ones for a real
    matrix), in a random, well-conditioned basis."""
    n = len(values)
    basis = np.eye(n) + 0.3 * _rng.standard_normal((n, n))
    if np.dtype(dtype).kind == "c":
        basis = basis + 0.3j * _rng.standard_normal((n, n))
        block = np.diag(values)
    else:
        block = np.diag(np.real(values)).astype(float)
        for i in range(n - 1):
            if np.imag(values[i]) != 0 and values[i + 1] == np.conj(values[i]):
                re, im = np.real(values[i]), np.imag(values[i])
                block[i:i + 2, i:i + 2] = [[re, im], [-im, re]]
    return (basis @ block @ np.linalg.inv(basis)).astype(dtype)


REAL = with_eigenvalues([3.0, -1.0, 0.5])
PAIR = with_eigenvalues([2.0, 0.5 + 1.2j, 0.5 - 1.2j, -1.5])
COMPLEX = with_eigenvalues([1.0 + 1.0j, -0.5j, 2.0, -1.0 + 0.3j], C128)


@recorded_whole
def eig_invariants(a):
    """(w, |V|^2): the eigenvalues and the squared moduli of the unit eigenvectors, which do
    not depend on the eigenvectors' phases."""
    w, v = np.linalg.eig(a)
    return w, np.real(v * np.conj(v))


@rrule.register(eig_invariants)
def _eig_invariants_rrule(a):
    (w, v), pullback = rrule(np.linalg.eig, a)

    def invariants_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return NoTangent(), ZeroTangent()
        dw, d_moduli = unthunk(dy[0]), unthunk(dy[1])
        dv = ZeroTangent() if isinstance(d_moduli, AbstractZero) else 2 * np.real(d_moduli) * v
        return NoTangent(), unthunk(pullback((dw, dv))[1])

    return (w, np.real(v * np.conj(v))), invariants_pullback


@frule.register(eig_invariants)
def _eig_invariants_frule(tangents, a):
    (w, v), t = frule((NoTangent(), tangents[1]), np.linalg.eig, a)
    y = (w, np.real(v * np.conj(v)))
    if isinstance(t, AbstractZero):
        return y, ZeroTangent()
    return y, Tangent(tuple, {0: t.eigenvalues, 1: 2 * np.real(np.conj(v) * t.eigenvectors)})


CASES = [
    case(np.linalg.eig, REAL),                       # real eigenvectors, signs stable
    case(np.linalg.eigvals, REAL),
    case(np.linalg.eigvals, PAIR),                   # real matrix, complex eigenvalues
    case(np.linalg.eigvals, COMPLEX),
    case(np.linalg.eigvals, PAIR.astype(F32), rtol=2e-2, atol=2e-2),
    case(np.linalg.eigvals, np.stack([REAL, REAL.T])),   # a stack
    case(eig_invariants, REAL, covers=np.linalg.eig),
    case(eig_invariants, PAIR, covers=np.linalg.eig),
    case(eig_invariants, COMPLEX, covers=np.linalg.eig),
    case(eig_invariants, COMPLEX.astype(C64), rtol=2e-2, atol=2e-2, covers=np.linalg.eig),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("a", [REAL, PAIR, COMPLEX], ids=["real", "pair", "complex"])
def test_order2(a):
    test_rrule_order2(np.linalg.eigvals, a)
    test_rrule_order2(eig_invariants, a)


WEIGHTS = np.array([0.3, -1.2, 2.0, 0.7])


def spectral_loss(a):
    """A real, gauge-invariant function of eig's outputs, written with NumPy calls."""
    w, v = np.linalg.eig(a)
    n = w.shape[-1]
    moduli = np.real(v * np.conj(v))
    return np.sum(np.real(w * w) + np.imag(w) ** 2 * WEIGHTS[:n]) + np.sum(
        moduli * np.outer(WEIGHTS[:n], WEIGHTS[::-1][:n]))


@pytest.mark.parametrize("a", [REAL, PAIR, COMPLEX], ids=["real", "pair", "complex"])
def test_engine_gradient_and_second_order(a):
    np.testing.assert_allclose(cr.grad(spectral_loss)(a), numerical_gradient(spectral_loss, a),
                               rtol=1e-6, atol=1e-6)
    assert_jvp_of_grad(spectral_loss, a, rtol=1e-4, atol=1e-6)


def test_eigvals_gradient_closed_form():
    # d(sum w) = trace(da): the gradient of sum Re(w) is the identity
    np.testing.assert_allclose(cr.grad(lambda a: np.sum(np.real(np.linalg.eigvals(a))))(PAIR),
                               np.eye(4), atol=1e-12)


def test_float32_stays_float32():
    gradient = cr.grad(lambda a: np.sum(np.abs(np.linalg.eigvals(a)) ** 2))(PAIR.astype(F32))
    assert gradient.dtype == F32
