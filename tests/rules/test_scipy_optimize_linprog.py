"""``scipy.optimize.linprog`` of traced data (src/chainrules/rules/scipy/optimize/
linear_programs.py): the solution, the objective and the duals through the active
constraints, against finite differences of SciPy's own solution (the active set does not
change under the small steps) and against SciPy's own duals; a degenerate vertex and a face
of optima refused by name."""

from __future__ import annotations

import numpy as np
import pytest

optimize = pytest.importorskip("scipy.optimize")

import chainrules as cr  # noqa: E402
from chainrules.rules.scipy.optimize.linear_programs import (  # noqa: E402
    active_constraints, plain_linprog)
from chainrules.testing import case  # noqa: E402

C = np.array([-1.0, -2.0])
A_UB = np.array([[1.0, 1.0], [1.0, -1.0], [0.0, 1.0]])
B_UB = np.array([4.0, 1.0, 3.0])

# plain values only: an engine computes them without differentiating
CASES = [case(plain_linprog, C, A_UB, B_UB, None, None, (0, None), "highs", None, None,
              non_differentiable=True),
         case(active_constraints, np.array([1.0, 3.0]), np.array([0.0, 3.0, 0.0]), B_UB,
              (0, None), A_UB, None, non_differentiable=True)]


def _central(f, x, step=1e-6):
    x = np.asarray(x, float)
    gradient = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = step
        gradient.flat[i] = (f(x + e) - f(x - e)) / (2 * step)
    return gradient


WEIGHTS = np.array([0.3, 0.7])
LOSSES = {  # a function of the data, which SciPy's solution reaches through linprog
    "x in b_ub": (lambda b: optimize.linprog(C, A_ub=A_UB, b_ub=b).x @ WEIGHTS, B_UB),
    "x in A_ub": (lambda a: optimize.linprog(C, A_ub=a, b_ub=B_UB).x @ WEIGHTS, A_UB),
    "fun in c": (lambda c: optimize.linprog(c, A_ub=A_UB, b_ub=B_UB).fun, C),
    "slack in b_ub": (lambda b: np.sum(optimize.linprog(C, A_ub=A_UB, b_ub=b).slack ** 2),
                      B_UB),
    # an equality row and bounds, traced: x = (0.5, 2, 0.5) on x0 <= u1, x1 <= 2, x2 >= 0.1
    "x in b_eq and a bound": (
        lambda u: optimize.linprog(np.array([-1.0, -1.0, 0.5]), A_eq=np.ones((1, 3)),
                                   b_eq=u[:1], bounds=[(0, u[1]), (0, 2.0), (0.1, None)]).x
        @ np.array([1.0, 2.0, 3.0]), np.array([3.0, 0.5])),
    "x in b_ub, sparse A_ub": (lambda b: optimize.linprog(
        C, A_ub=pytest.importorskip("scipy.sparse").csr_matrix(A_UB), b_ub=b).x @ WEIGHTS,
        B_UB),
    "duals in c": (lambda c: np.sum(optimize.linprog(c, A_ub=A_UB, b_ub=B_UB).ineqlin
                                    .marginals * np.array([1.0, 2.0, 3.0])), C),
}


@pytest.mark.parametrize("name", LOSSES)
def test_linprog_against_finite_differences(name):
    loss, value = LOSSES[name]
    result, gradient = cr.value_and_grad(loss)(value)
    assert result == pytest.approx(loss(value), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(gradient, _central(loss, value), rtol=1e-6, atol=1e-9)


def test_objective_slopes_are_scipys_duals_and_solution():
    # d fun/d b_ub = SciPy's ineqlin.marginals; d fun/d c = x; the bounds' and the equality
    # rows' likewise
    plain = optimize.linprog(C, A_ub=A_UB, b_ub=B_UB)
    gradient = cr.grad(lambda b: optimize.linprog(C, A_ub=A_UB, b_ub=b).fun)(B_UB)
    np.testing.assert_allclose(gradient, plain.ineqlin.marginals, atol=1e-12)
    np.testing.assert_allclose(cr.grad(lambda c: optimize.linprog(c, A_ub=A_UB, b_ub=B_UB).fun)(C),
                               plain.x, atol=1e-12)
    c = np.array([-1.0, -1.0, 0.5])
    bounds = [(0, 0.5), (0, 2.0), (0.1, None)]
    plain = optimize.linprog(c, A_eq=np.ones((1, 3)), b_eq=[3.0], bounds=bounds)

    def traced(b_eq):
        result = optimize.linprog(c, A_eq=np.ones((1, 3)), b_eq=b_eq, bounds=bounds)
        return result, result.eqlin.marginals, result.upper.marginals, result.lower.marginals

    (result, *duals), _ = cr.vjp(traced, np.array([3.0]))[0], None
    for ours, scipys in zip(duals, (plain.eqlin.marginals, plain.upper.marginals,
                                    plain.lower.marginals)):
        np.testing.assert_allclose(cr.primal(ours), scipys, atol=1e-12)
    assert cr.grad(lambda b: optimize.linprog(c, A_eq=np.ones((1, 3)), b_eq=b,
                                              bounds=bounds).fun)(np.array([3.0]))[0] == \
        pytest.approx(plain.eqlin.marginals[0])


def test_no_unique_derivative_is_refused_by_name():
    # a fourth row through the vertex (1, 3): degenerate
    degenerate = np.vstack([A_UB, [[1.0, 0.0]]])
    with pytest.raises(ValueError, match="linprog .* degenerate vertex"):
        cr.grad(lambda b: optimize.linprog(C, A_ub=degenerate, b_ub=b).fun)(
            np.append(B_UB, 1.0))
    # a free variable of zero cost: every value of it is optimal (a line of optima)
    with pytest.raises(ValueError, match="linprog .* not a vertex"):
        cr.grad(lambda b: optimize.linprog(np.array([0.0, -1.0]), A_ub=np.array([[0.0, 1.0]]),
                                           b_ub=b, bounds=(None, None)).fun)(np.array([1.0]))
    with pytest.raises(NotImplementedError, match="integrality"):
        cr.grad(lambda b: optimize.linprog(C, A_ub=A_UB, b_ub=b, integrality=[1, 1]).fun)(B_UB)
    # infeasible: SciPy's result, with no solution
    result = cr.vjp(lambda b: optimize.linprog(C, A_ub=A_UB, b_ub=b), -B_UB)[0]
    assert result.status == 2 and result.x is None


def test_second_order_in_the_constraint_matrix():
    # x = M^-1 r is not linear in M: the hessian against differences of gradients
    loss, value = LOSSES["x in A_ub"]
    flat = value.ravel()

    def of_flat(v):
        return loss(np.reshape(v, value.shape))

    gradient = cr.grad(of_flat)
    expected = np.array([(gradient(flat + 1e-5 * e) - gradient(flat - 1e-5 * e)) / 2e-5
                         for e in np.eye(flat.size)])
    np.testing.assert_allclose(cr.hessian(of_flat)(flat), expected, rtol=1e-5, atol=1e-8)
