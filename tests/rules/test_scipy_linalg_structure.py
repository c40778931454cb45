"""``scipy.linalg``'s structure queries (src/chainrules/rules/scipy/linalg/structure.py):
``bandwidth``, ``issymmetric``, ``ishermitian`` answer on the plain values of a traced
matrix. Before, each raised "No matching signature found" (SciPy's compiled code)."""

from __future__ import annotations

import numpy as np
import pytest

sla = pytest.importorskip("scipy.linalg")

import chainrules as cr  # noqa: E402
from chainrules import rrule  # noqa: E402
from chainrules.rules.scipy.linalg import structure  # noqa: E402,F401  (its rules)
from chainrules.testing import case, check_case  # noqa: E402

A = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 1.0]])

# SciPy 1.11 compiles them without signatures: no rules there (a traced matrix raises)
RULED = rrule.lookup(sla.issymmetric) is not None
CASES = [case(sla.bandwidth, A, non_differentiable=True),
         case(sla.issymmetric, A, non_differentiable=True),
         case(sla.ishermitian, A + 0j, non_differentiable=True)] if RULED else []
pytestmark = pytest.mark.skipif(not RULED, reason="SciPy 1.11's are compiled, without "
                                                   "signatures")


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_the_queries_are_not_differentiated(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("matrix", [A, np.triu(A), np.tril(A, -1) + np.eye(3)],
                         ids=["symmetric", "upper", "lower"])
def test_a_function_that_asks_about_its_matrix(matrix):
    def loss(a):   # the answers scale a differentiable function of the matrix
        lower, upper = sla.bandwidth(a)
        symmetric = sla.issymmetric(a) + sla.ishermitian(a, atol=1e-12)
        return np.sum(a ** 2) * (1.0 + lower + 2.0 * upper + 4.0 * symmetric)

    lower, upper = sla.bandwidth(matrix)
    symmetric = sla.issymmetric(matrix) + sla.ishermitian(matrix, atol=1e-12)
    factor = 1.0 + lower + 2.0 * upper + 4.0 * symmetric
    value, gradient = cr.value_and_grad(loss)(matrix)
    assert value == pytest.approx(np.sum(matrix ** 2) * factor, rel=1e-14)
    np.testing.assert_allclose(gradient, 2 * matrix * factor, rtol=1e-14)
