"""The rule-testing kit on ``scipy.linalg.svd``, ``svdvals``, ``qr``, ``eig`` and ``eigvals``
(NumPy's formulas with SciPy's options, src/chainrules/rules/scipy/linalg/factorizations.py):
the values and the unique factors (QR's) against finite differences at orders 1 and 2;
singular vectors and eigenvectors, which have a free sign or phase, through functions that do
not depend on it, through the engine; refused options by their messages. Before, each raised
"'Traced' object has no attribute 'base'"."""

from __future__ import annotations

import numpy as np
import pytest

sla = pytest.importorskip("scipy.linalg")

import chainrules as cr  # noqa: E402
from chainrules.testing import case, check_case  # noqa: E402
from chainrules.testing import test_frule_order2, test_rrule_order2  # noqa: E402
from tests.ad.finite_differences import numerical_gradient  # noqa: E402

_rng = np.random.default_rng(11)
C128, F32 = np.complex128, np.float32
LOOSE = {"rtol": 1e-3, "atol": 1e-3}


def normal(*shape, dtype=np.float64):
    x = _rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * _rng.standard_normal(shape)
    return x.astype(dtype)


SQUARE = normal(3, 3) + 3 * np.eye(3)  # distinct real eigenvalues
ROTATION = np.array([[1.0, -2.0, 0.3], [2.0, 1.0, 0.5], [0.1, 0.2, 3.0]])  # a complex pair

CASES = [
    case(sla.svd, normal(4, 3), compute_uv=False),
    case(sla.svd, normal(3, 5, dtype=C128), False, False),
    case(sla.svdvals, normal(4, 3)),
    case(sla.svdvals, normal(3, 4, dtype=F32), **LOOSE),
    case(sla.svdvals, normal(3, 3, dtype=C128)),
    case(sla.qr, normal(4, 3), mode="economic"),
    case(sla.qr, normal(3, 3)),
    case(sla.qr, normal(3, 5, dtype=C128)),               # full Q of a wide matrix: unique
    case(sla.qr, normal(4, 3), mode="r"),                 # R with a zero row
    case(sla.qr, normal(3, 4, dtype=F32), mode="r", **LOOSE),
    case(sla.eigvals, SQUARE),
    case(sla.eigvals, ROTATION),
    case(sla.eigvals, normal(3, 3, dtype=C128)),
    case(sla.eig, SQUARE, right=False),
    # lstsq: the solution, the residues (a number for a vector b), the singular values
    case(sla.lstsq, normal(5, 3), normal(5)),
    case(sla.lstsq, normal(5, 3), normal(5, 2)),
    case(sla.lstsq, normal(3, 4, dtype=C128), normal(3, dtype=C128)),    # no residues
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("rule_case", [c for c in CASES if c.args[0].dtype != F32][::2],
                         ids=lambda c: c.id)
def test_rule_at_order_2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)
    test_frule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)


W = np.arange(1.0, 13.0)

# functions of the vectors that do not depend on their sign or phase
GAUGE_FREE = {
    "svd: |U|^4 and s": lambda v: np.sum(np.abs(sla.svd(v.reshape(4, 3))[0]) ** 4 *
                                         np.arange(16.0).reshape(4, 4)[:, :4]),
    "svd: projector U1 U1^T": lambda v: np.sum(W.reshape(4, 3)[:, :1] * (
        lambda u: u @ u.T)(sla.svd(v.reshape(4, 3), full_matrices=False)[0][:, :2])),
    "svd: V's rows squared": lambda v: np.sum(sla.svd(v.reshape(3, 4))[2] ** 2 *
                                              np.arange(16.0).reshape(4, 4)),
    "eig: |V|^2": lambda v: np.sum(np.abs(sla.eig(v[:9].reshape(3, 3) + 3 * np.eye(3))[1]) **
                                   2 * np.arange(9.0).reshape(3, 3)),
    "eig: complex pair": lambda v: np.sum(np.abs(sla.eig(ROTATION + v[:9].reshape(3, 3) * 0.1)[
        1]) ** 4),
    "qr: Q and R (unique)": lambda v: np.sum(sla.qr(v.reshape(4, 3), mode="economic")[0] ** 3)
    + np.sum(sla.qr(v.reshape(4, 3), mode="economic")[1] ** 2),
}


@pytest.mark.parametrize("name", GAUGE_FREE)
def test_vectors_through_the_engine_at_orders_1_and_2(name):
    loss = GAUGE_FREE[name]
    v = np.cos(np.arange(12.0)) + np.eye(4, 3).ravel()
    np.testing.assert_allclose(cr.grad(loss)(v), numerical_gradient(loss, v), rtol=1e-6,
                               atol=1e-7)
    direction = np.sin(np.arange(12.0))
    step = 1e-5
    fd = (cr.grad(loss)(v + step * direction) - cr.grad(loss)(v - step * direction)) / (2 * step)
    np.testing.assert_allclose(cr.hvp(loss, v, direction), fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call, match", [
    (lambda a: sla.qr(a, pivoting=True), "pivoting=True"),
    (lambda a: sla.qr(a[:, :2]), "mode='full'.*orthonormal completion.*mode='economic'"),
    (lambda a: sla.qr(a, mode="raw"), "mode='raw'"),
    (lambda a: sla.eig(a, np.eye(3)), r"generalized problem.*eig\(scipy.linalg.solve"),
    (lambda a: sla.eig(a, left=True), "left=True"),
    (lambda a: sla.eigvals(a, homogeneous_eigvals=True), "homogeneous_eigvals=True"),
], ids=["qr pivoting", "qr full tall", "qr raw", "eig b", "eig left",
        "eigvals homogeneous"])
def test_refused_options_name_themselves(call, match):
    with pytest.raises((NotImplementedError, ValueError), match=match):
        cr.grad(lambda a: np.sum(np.abs(call(a)[0])))(SQUARE)


@pytest.mark.parametrize("loss", [
    lambda v: np.sum(sla.pinvh(np.outer(v[:3], v[:3]) + np.diag(v[3:6]) + 2 * np.eye(3))),
    lambda v: np.sum(sla.polar(v[:9].reshape(3, 3) + 3 * np.eye(3))[1] * np.arange(9.0).reshape(
        3, 3)),
    lambda v: np.sum(sla.orth(v[:6].reshape(3, 2)) @ sla.orth(v[:6].reshape(3, 2)).T *
                     np.arange(9.0).reshape(3, 3)),
    lambda v: np.sum(sla.subspace_angles(v[:8].reshape(4, 2), np.array(
        [[1.0, 0.2], [0.3, 1.0], [-0.5, 0.4], [0.2, -0.7]]))),
], ids=["pinvh (eigh, np.max initial=)", "polar (svd)", "orth (svd): its projector",
        "subspace_angles (svdvals with overwrite_a=True on its temporaries)"])
def test_scipy_functions_built_on_these_rules(loss):
    # before: pinvh raised "numpy.max: the initial= argument is not supported", polar and orth
    # AttributeError 'base'
    v = np.cos(np.arange(12.0))
    np.testing.assert_allclose(cr.grad(loss)(v), numerical_gradient(loss, v), rtol=1e-6,
                               atol=1e-7)


def test_overwrite_options_leave_the_inputs_alone():
    # SciPy may reuse an input's memory when told overwrite_a=True; a traced input's value is
    # read again by the pullback, so the rules call SciPy without it (the result is the same)
    a = SQUARE.copy()
    for call in (lambda m: sla.svd(m, overwrite_a=True)[1], lambda m: sla.qr(m, overwrite_a=True)[1],
                 lambda m: sla.eigvals(m, overwrite_a=True),
                 lambda m: sla.lstsq(m, np.ones(3), overwrite_a=True, overwrite_b=True)[0]):
        loss = lambda m: np.sum(np.abs(call(m)) ** 2)  # noqa: E731
        np.testing.assert_allclose(cr.grad(loss)(a), numerical_gradient(loss, a), rtol=1e-6,
                                   atol=1e-7)
        np.testing.assert_array_equal(a, SQUARE)
