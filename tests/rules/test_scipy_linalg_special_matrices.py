"""The rule-testing kit on ``scipy.linalg.toeplitz``, ``circulant`` and ``hankel``
(src/chainrules/rules/scipy/linalg/special_matrices.py): orders 1 and 2 against finite
differences (float64, float32, complex: ``toeplitz(c)`` conjugates ``c`` above the diagonal),
closed forms of their cotangents, and gradients through the engine. Before, each raised
"'Traced' object has no attribute 'strides'"."""

from __future__ import annotations

import numpy as np
import pytest

sla = pytest.importorskip("scipy.linalg")

import chainrules as cr  # noqa: E402
from chainrules import rrule  # noqa: E402
from chainrules.testing import case, check_case  # noqa: E402
from chainrules.testing import test_frule_order2, test_rrule_order2  # noqa: E402
from tests.ad.finite_differences import numerical_gradient  # noqa: E402

_rng = np.random.default_rng(7)


def normal(*shape, dtype=np.float64):
    x = _rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * _rng.standard_normal(shape)
    return x.astype(dtype)


CASES = [
    case(sla.toeplitz, normal(3)),
    case(sla.toeplitz, normal(3, dtype=np.complex128)),   # conj(c) above the diagonal
    case(sla.toeplitz, normal(3), normal(4)),             # r[0] is not read
    case(sla.toeplitz, normal(2, dtype=np.float32), normal(3, dtype=np.float32)),
    case(sla.toeplitz, normal(4, dtype=np.complex128), normal(2, dtype=np.complex128)),
    case(sla.circulant, normal(4)),
    case(sla.circulant, normal(2, 3)),                    # a batch (SciPy 1.17), or ravelled
    case(sla.circulant, normal(3, dtype=np.complex64)),
    case(sla.hankel, normal(3)),                          # zeros below the anti-diagonal
    case(sla.hankel, normal(3), normal(4)),               # r[0] is not read
    case(sla.hankel, normal(2, dtype=np.complex128), normal(3, dtype=np.complex128)),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("rule_case", CASES[::2], ids=lambda c: c.id)
def test_rule_at_order_2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args)
    test_frule_order2(rule_case.function, *rule_case.args)


def test_cotangents_sum_the_diagonals_that_read_each_element():
    ones = np.ones((3, 4))
    # toeplitz(c, r): c[k] fills the k-th subdiagonal, r[k] (k >= 1) the k-th superdiagonal
    _, pullback = rrule(sla.toeplitz, np.arange(3.0), np.arange(4.0))
    dc, dr = pullback(ones)[1:]
    np.testing.assert_array_equal(dc, [3.0, 2.0, 1.0])
    np.testing.assert_array_equal(dr, [0.0, 3.0, 2.0, 1.0])
    # toeplitz(c) of complex c: the upper triangle reads conj(c), so its cotangent is conj(dy)
    _, pullback = rrule(sla.toeplitz, np.array([1.0, 2j]))
    np.testing.assert_array_equal(pullback(np.full((2, 2), 1j))[1], [2j, 1j - 1j])
    # hankel(c): c[k] fills the anti-diagonal k, to the first row's end (k + 1 elements)
    _, pullback = rrule(sla.hankel, np.arange(3.0))
    np.testing.assert_array_equal(pullback(np.ones((3, 3)))[1], [1.0, 2.0, 3.0])
    _, pullback = rrule(sla.circulant, np.arange(3.0))
    np.testing.assert_array_equal(pullback(np.ones((3, 3)))[1], [3.0, 3.0, 3.0])


@pytest.mark.parametrize("loss", [
    lambda v: np.sum(sla.toeplitz(v[:3], v[2:]) @ v[:3]),
    lambda v: np.linalg.slogdet(sla.toeplitz(v) + 4 * np.eye(5))[1],
    lambda v: np.sum(sla.circulant(v) @ np.cos(v)),
    lambda v: np.sum(sla.hankel(v[:3]) ** 3),
], ids=["toeplitz matvec", "toeplitz logdet", "circulant", "hankel"])
def test_through_the_engine_at_orders_1_and_2(loss):
    v = np.array([0.3, -1.1, 0.8, 1.7, -0.4])
    np.testing.assert_allclose(cr.grad(loss)(v), numerical_gradient(loss, v), rtol=1e-6,
                               atol=1e-8)
    step = 1e-5
    fd = np.array([(cr.grad(loss)(v + step * e) - cr.grad(loss)(v - step * e)) / (2 * step)
                   for e in np.eye(5)])
    np.testing.assert_allclose(cr.hessian(loss)(v), fd, rtol=1e-5, atol=1e-7)
