"""The rule-testing kit on src/chainrules/rules/scipy/sparse/: a sparse matrix times a dense
array (``matmul``), ``spsolve``, ``expm_multiply`` and the iterative solvers, at order 1 and 2; then gradients through
the engine (``A @ x``, ``x @ A``, ``A.dot(x)`` on every format, as users write them) against
finite differences and closed forms, and the refused uses.

Before: ``A @ x`` with traced ``x`` raised "a traced value was converted to a plain NumPy
array" (SciPy's compiled product), ``x @ A`` a matmul ValueError.

Skipped when SciPy is not installed.
"""

from __future__ import annotations

import numpy as np
import pytest

sparse = pytest.importorskip("scipy.sparse")

import scipy.sparse.linalg as spla  # noqa: E402

import chainrules as cr  # noqa: E402
from chainrules.rules.scipy.sparse.linalg import factor_solve  # noqa: E402
from chainrules.rules.scipy.sparse.products import matmul  # noqa: E402
from chainrules.testing import (case, check_case, test_frule_order2,  # noqa: E402
                                test_rrule_order2)

_rng = np.random.default_rng(20261206)
A = (sparse.random(5, 5, density=0.5, random_state=2) + 3 * sparse.eye(5)).tocsr()
A_COMPLEX = (A + 1j * sparse.random(5, 5, density=0.3, random_state=3)).tocsr()
X = _rng.standard_normal(5)
X2 = _rng.standard_normal((5, 2))

import inspect  # noqa: E402

# the iterative solvers' relative tolerance: rtol (SciPy 1.12), tol before (passed as fkwargs:
# the kit has an rtol of its own)
TIGHT = {"rtol" if "rtol" in inspect.signature(spla.cg).parameters else "tol": 1e-13}
SYMMETRIC = (A + A.T).tocsr()
DENSE_SYMMETRIC = SYMMETRIC.toarray()

CASES = [
    case(matmul, A, X), case(matmul, A, X2), case(matmul, A_COMPLEX, X),
    case(matmul, A, X + 0.5j), case(matmul, A.tocoo(), X), case(matmul, A.tocsc(), X2),
    case(matmul, A[:3], X),  # rectangular
    case(spla.spsolve, A.tocsc(), X), case(spla.spsolve, A_COMPLEX.tocsc(), X),
    case(spla.spsolve, A.tocsc(), X2), case(spla.spsolve, A.tocsc(), X[:, None]),
    case(spla.expm_multiply, 0.2 * A, X), case(spla.expm_multiply, 0.1 * A_COMPLEX, X2),
    # a dense A is differentiable too (expm's Frechet derivative)
    case(spla.expm_multiply, 0.2 * A.toarray(), X),
    case(spla.expm_multiply, 0.1 * A_COMPLEX.toarray(), X2),
    # iterative solvers, to a tight tolerance: in b, and in a dense A
    case(spla.cg, SYMMETRIC, X, fkwargs=TIGHT), case(spla.minres, SYMMETRIC, X, fkwargs=TIGHT),
    case(spla.gmres, A, X, fkwargs={"atol": 0.0, **TIGHT}),
    case(spla.bicgstab, A, X, fkwargs=TIGHT), case(spla.cg, DENSE_SYMMETRIC, X, fkwargs=TIGHT),
    case(spla.gmres, A.toarray(), X, fkwargs={"atol": 0.0, **TIGHT}),
    *[case(getattr(spla, name), A, X, fkwargs=TIGHT)
      for name in ("bicg", "cgs", "lgmres", "qmr", "tfqmr")],
    # a factorization's solves, every transpose, real and complex
    *[case(factor_solve, spla.splu(matrix.tocsc()), rhs, trans)
      for matrix, rhs in ((A, X), (A, X2), (A_COMPLEX, X + 0.5j))
      for trans in ("N", "T", "H")],
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("rule_case", CASES[::2], ids=lambda c: c.id)
def test_rule_at_order_2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)
    test_frule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)


def _central(f, x, eps=1e-6):
    return np.reshape([(f(x + eps * e.reshape(x.shape)) - f(x - eps * e.reshape(x.shape)))
                       / (2 * eps) for e in np.eye(x.size)], x.shape)


WEIGHTS = _rng.standard_normal(5)
ENGINE = {
    "csr @ x": lambda x: A @ x,
    "csc @ x": lambda x: A.tocsc() @ x,
    "coo @ x": lambda x: A.tocoo() @ x,
    "dia @ x": lambda x: sparse.diags([1.0, -2.0, 3.0], [-1, 0, 1], shape=(5, 5)) @ x,
    "csr_array @ x": lambda x: sparse.csr_array(A) @ x,
    "A.dot(x)": lambda x: A.dot(x),
    "A * x (a sparse matrix's *)": lambda x: A * x,
    "x @ A": lambda x: x @ A,
    "A.T @ x": lambda x: A.T @ x,
    "A @ (A @ x)": lambda x: A @ np.tanh(A @ x),
    "spsolve": lambda x: spla.spsolve(A.tocsc(), x),
    "expm_multiply": lambda x: spla.expm_multiply(-0.3 * A, x),
    "cg": lambda x: spla.cg(SYMMETRIC, x, **TIGHT)[0],
    "gmres on a LinearOperator": lambda x: spla.gmres(spla.aslinearoperator(A), x, atol=0.0,
                                                      **TIGHT)[0],
    "bicgstab": lambda x: spla.bicgstab(A, x, **TIGHT)[0],
    # factorizations made inside the function: their solves are recorded
    "splu(A).solve": lambda x: spla.splu(A.tocsc()).solve(x),
    "splu(A).solve, transposed": lambda x: spla.splu(A.tocsc()).solve(x, trans="T"),
    "spilu(A).solve": lambda x: spla.spilu(A.tocsc(), drop_tol=0.0).solve(x),
    "factorized(A)": lambda x: spla.factorized(A.tocsc())(x),
}


@pytest.mark.parametrize("name", ENGINE)
def test_gradient_through_the_engine(name):
    f = ENGINE[name]

    def loss(x):
        return np.sum(WEIGHTS * f(x) ** 2)

    assert cr.vjp(loss, X)[0] == pytest.approx(loss(X), rel=1e-12)
    np.testing.assert_allclose(cr.grad(loss)(X), _central(loss, X), rtol=1e-6, atol=1e-8)


def test_second_order_through_the_engine():
    def loss(x):
        return np.sum(np.sin(A @ x) * (x @ A))

    v = _rng.standard_normal(5)
    gradient = cr.grad(loss)
    eps = 1e-5
    expected = (gradient(X + eps * v) - gradient(X - eps * v)) / (2 * eps)
    np.testing.assert_allclose(cr.hvp(loss, X, v), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.jvp(loss, (X,), (v,))[1], _central(loss, X) @ v, rtol=1e-6)


def test_graph_laplacian_closed_form():
    # the Dirichlet energy x^T L x / 2 of a path graph has gradient L x
    n = 6
    laplacian = sparse.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    x = np.cos(np.arange(n) * 0.4)
    np.testing.assert_allclose(cr.grad(lambda v: v @ (laplacian @ v) / 2)(x), laplacian @ x,
                               rtol=1e-14)


def test_expm_multiply_in_a_dense_matrix():
    dense = 0.2 * A.toarray()

    def loss(a):
        return np.sum(WEIGHTS * spla.expm_multiply(a, X))

    np.testing.assert_allclose(cr.grad(loss)(dense), _central(loss, dense), rtol=1e-6,
                               atol=1e-8)


def test_the_sparse_matrix_is_a_constant():
    # its projector gives no tangent, and the kit leaves it out of its perturbations; asked
    # for its gradient, grad says so rather than give NoTangent
    assert isinstance(cr.ProjectTo(A)(np.ones((5, 5))), cr.NoTangent)
    with pytest.raises(TypeError, match="argument 0 is a csr_matrix of float64.*constant"):
        cr.grad(lambda matrix: np.sum(matrix @ X))(A)


def test_refused_uses_name_the_function():
    with pytest.raises(NotImplementedError, match="spsolve: A of type ndarray"):
        cr.grad(lambda a: np.sum(spla.spsolve(a, X)))(A.toarray())
    with pytest.raises(NotImplementedError, match="expm_multiply: start=0"):
        cr.grad(lambda x: np.sum(spla.expm_multiply(A * 0.1, x, start=0, stop=1, num=3)))(X)


def test_an_adjoint_solve_that_does_not_converge_raises():
    def loss(x):
        return np.sum(spla.cg(SYMMETRIC, x, maxiter=1, **TIGHT)[0])

    with pytest.raises(RuntimeError, match="cg: the solve for the derivative did not converge"):
        cr.grad(loss)(X)


def test_a_factor_made_before_the_trace_refuses_traced_values():
    # SciPy's own SuperLU (a compiled class): its solve cannot take traced values, loudly
    lu = spla.splu(A.tocsc())
    with pytest.raises(TypeError):
        cr.grad(lambda x: np.sum(lu.solve(x)))(X)
    # outside a trace splu is SciPy's own
    assert type(spla.splu(A.tocsc())).__name__ == "SuperLU"
