"""``scipy.linalg.schur`` (src/chainrules/rules/scipy/linalg/factorizations.py): ``A = Z T Z^H``.

The real Schur form of a matrix with distinct real eigenvalues is unique up to the signs of
Z's columns, so the kit checks it directly against finite differences. Elsewhere (the phases
of the complex form's Schur vectors, the rotation inside a 2x2 block of the real form) the
factors are fixed by a gauge, and the kit checks gauge-invariant functions built on the rule:
the eigenvalues on T's diagonal (the trace and determinant of a 2x2 block), the projectors
onto the leading invariant subspaces ``Z[:, :k] Z[:, :k]^H``, and ``Z T Z^H``. Orders 1 and
2; through the engine; refusals (``sort=``, repeated eigenvalues) by their messages.
"""

from __future__ import annotations

import numpy as np
import pytest

sla = pytest.importorskip("scipy.linalg")

import chainrules  # noqa: E402
from chainrules import frule, rrule  # noqa: E402
from chainrules.core.config import frule_via_ad, rrule_via_ad  # noqa: E402
from chainrules.core.registry import recorded_whole  # noqa: E402
from chainrules.testing import case, check_case  # noqa: E402
from chainrules.testing import test_frule_order2, test_rrule_order2  # noqa: E402

REAL = np.array([[3.0, 1.0, 0.2], [0.5, 1.0, -0.3], [0.1, 0.4, -1.0]])  # eigenvalues real
PAIR = np.array([[1.0, -2.0, 0.3], [1.5, 0.5, 0.2], [0.1, 0.4, -1.0]])  # a complex pair
# A real 5x5 matrix with two complex pairs and a real eigenvalue, in a random basis.
_BASIS = np.eye(5) + 0.3 * np.cos(np.arange(25.0)).reshape(5, 5)
PAIRS = _BASIS @ np.array([[0.5, 1.2, 0, 0, 0], [-1.2, 0.5, 0, 0, 0], [0, 0, 2.0, 0, 0],
                           [0, 0, 0, -1.0, 0.4], [0, 0, 0, -0.4, -1.0]]) @ np.linalg.inv(_BASIS)
COMPLEX = REAL + 1j * np.array([[0.2, -0.3, 0.5], [0.4, -0.1, 0.6], [0.3, 0.7, 0.25]])


def _projectors(z, ks):
    return [z[:, :k] @ z[:, :k].conj().T for k in ks]


def _invariants(a, output="real"):
    """Gauge-invariant functions of ``schur(a, output)`` for a matrix with distinct
    eigenvalues: per diagonal block of T its eigenvalue, or a 2x2 block's trace and
    determinant; the projectors onto the invariant subspaces that end at each block; and the
    reconstruction Z T Z^H."""
    t, z = sla.schur(a, output=output)
    n = t.shape[0]
    starts = [0] + [i + 1 for i in range(n - 1) if t[i + 1, i] == 0]
    values, ends = [], []
    for start, stop in zip(starts, starts[1:] + [n]):
        block = t[start:stop, start:stop]
        if stop - start == 1:
            values.append(block[0, 0])
        else:
            values += [np.trace(block), block[0, 0] * block[1, 1] - block[0, 1] * block[1, 0]]
        ends.append(stop)
    parts = [np.ravel(p) for p in _projectors(z, ends[:-1])] + [np.ravel(z @ t @ z.conj().T)]
    return np.concatenate([np.stack(values)] + parts)


@recorded_whole
def schur_invariants(a, output="real"):
    """`_invariants`, recorded whole: its rules differentiate it through the engine (so
    through schur's rule)."""
    return _invariants(a, output)


@rrule.register(schur_invariants, config=True)
def _schur_invariants_rrule(config, a, output="real"):
    return rrule_via_ad(config, _invariants, a, output=output)


@frule.register(schur_invariants, config=True)
def _schur_invariants_frule(config, tangents, a, output="real"):
    return frule_via_ad(config, tuple(tangents[:2]), _invariants, a, output=output)


CASES = [
    case(sla.schur, REAL),
    case(sla.schur, REAL.T, output="real"),
    case(schur_invariants, REAL, output="complex", covers=sla.schur),
    case(schur_invariants, PAIR, covers=sla.schur),
    case(schur_invariants, PAIR, output="complex", covers=sla.schur),
    case(schur_invariants, COMPLEX, covers=sla.schur),
    case(schur_invariants, PAIRS, covers=sla.schur),
    case(schur_invariants, PAIRS, output="complex", covers=sla.schur),
    # float32: LAPACK's single-precision signs differ from double's, so invariants only
    case(schur_invariants, REAL.astype(np.float32), rtol=2e-2, atol=2e-2, covers=sla.schur),
    case(schur_invariants, PAIRS.astype(np.float32), rtol=2e-2, atol=2e-2, covers=sla.schur),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_schur_rule(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("rule_case", [CASES[0], CASES[3], CASES[5], CASES[6]], ids=lambda c: c.id)
def test_schur_order2(rule_case):
    f, args, kwargs = rule_case.function, rule_case.args, rule_case.fkwargs
    if f is sla.schur:
        test_rrule_order2(f, *args, **kwargs)
        test_frule_order2(f, *args, **kwargs)
    else:   # through the engine: the invariants' Hessian along a direction, against FD
        n = args[0].shape[0]
        direction = np.cos(np.arange(n * n * 1.0)).reshape(n, n)
        weights = np.sin(np.arange(1.0, 1.0 + _invariants(*args, **kwargs).size))

        def loss(a):
            return np.sum(np.real(_invariants(a, **kwargs) * weights))

        def directional(a):
            return np.sum(np.real(chainrules.grad(loss)(a)) * direction)

        h = chainrules.grad(directional)(args[0])
        step = 1e-5
        for index in np.ndindex(n, n):
            e = np.zeros((n, n), args[0].dtype)
            e[index] = 1
            expected = (directional(args[0] + step * e) - directional(args[0] - step * e)) / (
                2 * step)
            np.testing.assert_allclose(h[index].real, expected.real, rtol=1e-4, atol=1e-6)


def test_schur_diagonal_gradient_through_the_engine():
    """d lambda_k / dA = u_k v_k^T / (v_k^T u_k) (left and right eigenvectors)."""
    t, _ = sla.schur(REAL)
    g = chainrules.grad(lambda a: sla.schur(a)[0][0, 0])(REAL)
    w, vl, vr = sla.eig(REAL, left=True)
    k = int(np.argmin(np.abs(w - t[0, 0])))
    expected = np.outer(vl[:, k].conj(), vr[:, k]) / (vl[:, k].conj() @ vr[:, k])
    np.testing.assert_allclose(g, expected.real, rtol=1e-8, atol=1e-12)


def test_schur_refusals_name_the_problem():
    with pytest.raises(NotImplementedError, match="sort="):
        chainrules.grad(lambda a: sla.schur(a, sort="lhp")[0][0, 0])(REAL)
    with pytest.raises(ValueError, match="repeated eigenvalues"):
        chainrules.grad(lambda a: np.sum(sla.schur(a)[0]))(np.eye(3))
