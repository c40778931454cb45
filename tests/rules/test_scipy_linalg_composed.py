"""``scipy.linalg`` functions traced through NumPy versions built on functions with rules
(src/chainrules/rules/scipy/linalg/composed.py): ``solve_continuous_lyapunov`` (and its alias
``solve_lyapunov``), ``solve_discrete_lyapunov`` (both methods), ``expm_frechet``,
``companion``, ``solve_toeplitz``, ``matmul_toeplitz``, ``fractional_matrix_power``, ``funm``,
``signm``, ``solveh_banded``, ``rq``, ``matrix_balance``, ``solve_continuous_are``,
``solve_discrete_are``. Values against SciPy's own, gradients
and Hessian-vector products against central differences. Before, each raised from SciPy's
compiled code (a traced value converted, or a LAPACK wrapper's "No matching signature")."""

from __future__ import annotations

import numpy as np
import pytest

sla = pytest.importorskip("scipy.linalg")

import chainrules as cr  # noqa: E402
from chainrules.rules.scipy.linalg.composed import (  # noqa: E402
    balancing, riccati_solution, rq_phases)
from chainrules.testing import case, check_case  # noqa: E402
from tests.ad.finite_differences import numerical_gradient  # noqa: E402

# No rules of their own (the kit's cases are those of the rules they are built on), but for
# rq's phases, not differentiable (an engine computes them on plain values).
CASES = [case(rq_phases, np.array([[2.0, 1.0, 0.5], [0.3, 3.0, 1.0]]), "economic",
              non_differentiable=True),
         case(balancing, np.array([[1.0, 100.0], [0.01, 2.0]]), non_differentiable=True),
         case(riccati_solution, "continuous", np.array([[-1.0]]), np.array([[1.0]]),
              np.array([[1.0]]), np.array([[2.0]]), non_differentiable=True)]

W = np.arange(1.0, 10.0).reshape(3, 3)


def stable(v):
    return v[:9].reshape(3, 3) - 3 * np.eye(3)


FUNCTIONS = {
    "solve_continuous_lyapunov": lambda v: sla.solve_continuous_lyapunov(
        stable(v), np.outer(v[:3], v[:3]) + np.eye(3)),
    "solve_lyapunov": lambda v: sla.solve_lyapunov(stable(v), np.eye(3)),
    "solve_discrete_lyapunov direct": lambda v: sla.solve_discrete_lyapunov(
        0.1 * stable(v), np.outer(v[:3], v[3:6])),
    "solve_discrete_lyapunov bilinear": lambda v: sla.solve_discrete_lyapunov(
        0.1 * stable(v), np.eye(3) + np.diag(v[:3]), method="bilinear"),
    "expm_frechet": lambda v: sla.expm_frechet(0.3 * stable(v), np.outer(v[:3], v[3:6]))[1],
    "expm_frechet, expm": lambda v: sla.expm_frechet(0.3 * stable(v), np.eye(3))[0],
    "companion": lambda v: sla.companion(v[:4]),
    "solve_toeplitz": lambda v: np.diag(sla.solve_toeplitz(
        (v[:3] + [3.0, 0.0, 0.0], v[3:6] + [3.0, 0.0, 0.0]), v[6:9])),
    "matmul_toeplitz": lambda v: np.diag(sla.matmul_toeplitz((v[:3], v[3:6]), v[6:9])),
    # before: "No matching signature found" (fractional_matrix_power), a pythran TypeError
    # (funm, signm)
    "fractional_matrix_power": lambda v: sla.fractional_matrix_power(
        spd(v), 0.37),
    "fractional_matrix_power, nonsymmetric": lambda v: sla.fractional_matrix_power(
        np.eye(3) * 4 + 0.5 * stable(v), -1.5),
    "fractional_matrix_power, integer": lambda v: sla.fractional_matrix_power(stable(v), 3),
    "funm": lambda v: sla.funm(0.5 * stable(v), np.exp),
    "funm, complex eigenvalues": lambda v: sla.funm(
        np.array([[0.5, 1.5, 0.0], [-1.5, 0.5, 0.0], [0.0, 0.0, 1.0]]) + 0.1 * stable(v),
        lambda w: np.sin(w) + w ** 2),
    "signm": lambda v: sla.signm(stable(v) + np.diag([4.0, 0.0, 0.0])),
}


def spd(v):
    m = v[:9].reshape(3, 3)
    return m @ m.T + np.eye(3)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_values_and_derivatives(name):
    f = FUNCTIONS[name]
    v = np.cos(np.arange(9.0)) + 0.5
    np.testing.assert_allclose(cr.vjp(f, v)[0], f(v), rtol=1e-10, atol=1e-12)  # SciPy's

    def loss(x):
        return np.sum(W * f(x) ** 2)

    np.testing.assert_allclose(cr.grad(loss)(v), numerical_gradient(loss, v), rtol=1e-6,
                               atol=1e-8)
    direction = np.sin(np.arange(9.0))
    step = 1e-5
    fd = (cr.grad(loss)(v + step * direction) - cr.grad(loss)(v - step * direction)) / (2 * step)
    np.testing.assert_allclose(cr.hvp(loss, v, direction), fd, rtol=1e-5, atol=1e-7)


def test_errors_are_scipys():
    with pytest.raises(ValueError, match="at least 2"):
        cr.grad(lambda v: np.sum(sla.companion(v[:1])))(np.ones(3))
    with pytest.raises(ValueError, match="Unknown solver"):
        cr.grad(lambda v: np.sum(sla.solve_discrete_lyapunov(np.diag(v) * 0.1, np.eye(3),
                                                             method="other")))(np.ones(3))
    with pytest.raises(ValueError, match="disp=False"):
        cr.grad(lambda v: np.sum(sla.funm(np.diag(v), np.exp, disp=False)[0]))(np.ones(3))


@pytest.mark.parametrize("lower", [False, True])
def test_solveh_banded_in_the_band_and_the_right_hand_side(lower):
    # before: a traced value reached LAPACK's pbtrf. The Whittaker smoother: (I + lam D^T D) z
    # = y, a pentadiagonal positive definite system
    n = 8
    rng = np.random.default_rng(4)
    upper = np.vstack([np.r_[0.0, 0.0, rng.normal(size=n - 2) * 0.3],
                       np.r_[0.0, rng.normal(size=n - 1) * 0.5], 4.0 + rng.uniform(size=n)])
    band = np.vstack([upper[2], np.r_[upper[1, 1:], 0.0], np.r_[upper[0, 2:], 0.0, 0.0]]) \
        if lower else upper
    b = rng.normal(size=(n, 2))
    unused = np.zeros_like(band, dtype=bool)  # the storage's corners LAPACK never reads
    if lower:
        unused[1, -1:] = unused[2, -2:] = True
    else:
        unused[0, :2] = unused[1, :1] = True

    def loss(ab, rhs):
        return np.sum(W[:1, :2] * sla.solveh_banded(ab, rhs, lower=lower) ** 2)

    assert cr.value_and_grad(loss)(band, b)[0] == pytest.approx(loss(band, b), rel=1e-12)
    in_band, in_rhs = cr.grad(loss, argnums=(0, 1))(band, b)
    expected = numerical_gradient(lambda ab: loss(ab, b), band)
    np.testing.assert_allclose(in_band, np.where(unused, 0.0, expected), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(in_rhs, numerical_gradient(lambda r: loss(band, r), b),
                               rtol=1e-6, atol=1e-9)
    # Hermitian: the diagonal's imaginary part is not read (LAPACK's), so it gets no gradient
    hermitian = band.astype(complex)
    off = slice(1, 3) if lower else slice(0, 2)
    hermitian[off] += 0.2j * rng.normal(size=(2, n))

    def complex_loss(ab):
        return np.sum(np.abs(sla.solveh_banded(ab, b, lower=lower)) ** 2)

    expected = numerical_gradient(complex_loss, hermitian)
    np.testing.assert_allclose(cr.grad(complex_loss)(hermitian), np.where(unused, 0, expected),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rq_phases_are_not_differentiated(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3)], ids=str)
@pytest.mark.parametrize("mode", ["full", "economic", "r"])
def test_rq_in_the_matrix(shape, mode):
    # before: "`.base` of a traced value" (SciPy's LAPACK wrapper)
    size = shape[0] * shape[1]
    a = np.cos(np.arange(float(size))).reshape(shape) + np.eye(*shape)
    if mode == "full" and shape[0] < shape[1]:
        with pytest.raises(NotImplementedError, match="first n - m rows of Q are not unique"):
            cr.grad(lambda m: np.sum(sla.rq(m)[1]))(a)
        return

    def factors(m):
        result = sla.rq(m, mode=mode)
        return (result,) if mode == "r" else result

    for traced, expected in zip(factors(a), cr.vjp(factors, a)[0]):
        np.testing.assert_allclose(expected, traced, atol=1e-12)  # SciPy's signs

    def loss(m):
        return sum(np.sum(np.sin(f) * np.cos(np.arange(f.size)).reshape(f.shape))
                   for f in factors(m))

    np.testing.assert_allclose(cr.grad(loss)(a), numerical_gradient(loss, a), rtol=1e-6,
                               atol=1e-8)
    complex_a = a + 0.5j * np.sin(np.arange(float(size))).reshape(shape)

    def complex_loss(m):
        return sum(np.sum(np.abs(f) ** 2 * np.cos(np.arange(f.size)).reshape(f.shape))
                   for f in factors(m))

    np.testing.assert_allclose(cr.grad(complex_loss)(complex_a),
                               numerical_gradient(complex_loss, complex_a), rtol=1e-6,
                               atol=1e-8)



# rows 0 and 3 are swapped (column 3 isolates an eigenvalue), the others scaled by powers of 2
UNBALANCED = np.array([[1.0, 100.0, 0.01, 0.0], [0.001, 2.0, 3e4, 0.0], [5.0, 0.0, 3.0, 0.0],
                       [1.0, 2.0, 3.0, 4.0]])


@pytest.mark.parametrize("options", [{}, {"permute": False}, {"scale": False},
                                     {"separate": True}], ids=str)
def test_matrix_balance_in_the_matrix(options):
    # before: "No matching signature" (LAPACK's gebal); the permutation and the powers of two
    # are constant where the matrix moves a little (not across a zero entry, which can change
    # the permutation: differences only on the nonzero entries)
    expected_b, expected_t = sla.matrix_balance(UNBALANCED, **options)
    np.testing.assert_array_equal(cr.vjp(lambda a: sla.matrix_balance(a, **options)[0],
                                         UNBALANCED)[0], expected_b)   # LAPACK's values
    weights = np.cos(np.arange(16.0)).reshape(4, 4)

    def loss(a):
        balanced, transform = sla.matrix_balance(a, **options)
        return np.sum(np.sin(balanced / 100) * weights)

    gradient = cr.grad(loss)(UNBALANCED)
    nonzero = UNBALANCED != 0
    np.testing.assert_allclose(gradient[nonzero], numerical_gradient(loss, UNBALANCED)[nonzero],
                               rtol=1e-6, atol=1e-9)
    v = np.sin(np.arange(16.0)).reshape(4, 4) * nonzero
    step = 1e-6
    expected = (cr.grad(loss)(UNBALANCED + step * v) - cr.grad(loss)(UNBALANCED - step * v)) / (
        2 * step)
    np.testing.assert_allclose(cr.hvp(loss, UNBALANCED, v), expected, rtol=1e-5, atol=1e-9)
    if options.get("separate"):
        scale, perm = expected_t
        assert perm.tolist() == [3, 1, 2, 0]


_RNG = np.random.default_rng(0)
RICCATI = {"a": _RNG.normal(size=(4, 4)) - 1.5 * np.eye(4), "b": _RNG.normal(size=(4, 2)),
           "q": np.eye(4) + 0.1 * np.ones((4, 4)), "r": 2.0 * np.eye(2),
           "e": np.eye(4) + 0.1 * _RNG.normal(size=(4, 4)), "s": 0.1 * _RNG.normal(size=(4, 2))}


@pytest.mark.parametrize("kind", ["continuous", "discrete"])
@pytest.mark.parametrize("options", ["", "e", "s", "es"], ids=["plain", "e", "s", "e and s"])
def test_riccati_equations_in_every_matrix(kind, options):
    # before: "a traced value was converted" (SciPy's H[:m, :m] = a); the solution moves with
    # every matrix, checked against differences of SciPy's solutions
    solver = getattr(sla, f"solve_{kind}_are")
    given = dict(RICCATI)
    if kind == "discrete":
        given["a"] = given["a"] / 3
    keywords = {name: given[name] for name in options}
    weights = np.cos(np.arange(16.0)).reshape(4, 4)
    expected = solver(given["a"], given["b"], given["q"], given["r"], balanced=False,
                      **keywords)
    for name in ["a", "b", "q", "r", *options]:
        symmetric = name in ("q", "r")

        def loss(x, name=name, symmetric=symmetric):
            arguments = {**given, name: (x + x.T) / 2 if symmetric else x}
            extra = {key: arguments[key] for key in options}
            return np.sum(solver(arguments["a"], arguments["b"], arguments["q"],
                                 arguments["r"], balanced=False, **extra) * weights)

        value, gradient = cr.value_and_grad(loss)(given[name])
        assert value == pytest.approx(np.sum(expected * weights), rel=1e-12)
        np.testing.assert_allclose(gradient, numerical_gradient(loss, given[name]),
                                   rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("kind", ["continuous", "discrete"])
def test_riccati_second_order_and_forward_mode(kind):
    solver = getattr(sla, f"solve_{kind}_are")
    a = RICCATI["a"] if kind == "continuous" else RICCATI["a"] / 3

    def loss(m):
        return np.sum(solver(m, RICCATI["b"], RICCATI["q"], RICCATI["r"], s=RICCATI["s"]) ** 2)

    v = np.sin(np.arange(16.0)).reshape(4, 4)
    gradient = cr.grad(loss)
    expected = (gradient(a + 1e-5 * v) - gradient(a - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(cr.hvp(loss, a, v), expected, rtol=1e-6, atol=1e-9)
    assert cr.jvp(loss, (a,), (v,))[1] == pytest.approx(np.sum(gradient(a) * v), rel=1e-10)


def test_riccati_solution_that_is_not_one_is_refused():
    # SciPy's balancing with this descriptor matrix returns X with residual 0.09 (SciPy 1.11
    # to 1.17): its value has no derivative, and saying so beats differentiating it
    a, b, q, r, e = (RICCATI[name] for name in "abqre")
    x = sla.solve_continuous_are(a, b, q, r, e=e)
    residual = a.T @ x @ e + e.T @ x @ a - e.T @ x @ b @ np.linalg.solve(r, b.T @ x @ e) + q
    if np.max(np.abs(residual)) < 1e-8:
        pytest.skip("this SciPy solves the descriptor equation accurately")
    with pytest.raises(ValueError, match="SciPy's solution does not satisfy the equation"):
        cr.grad(lambda a: np.sum(sla.solve_continuous_are(a, RICCATI["b"], RICCATI["q"],
                                                          RICCATI["r"], e=RICCATI["e"])))(
            RICCATI["a"])


@pytest.mark.parametrize("options", [{}, {"ord": 1}, {"axis": 0}, {"ord": "fro"},
                                     {"ord": 2, "keepdims": True}], ids=str)
def test_norm_is_numpys(options):
    # before (a vector, the default order): "a traced value was converted" (BLAS's nrm2)
    a = np.arange(6.0).reshape(2, 3) + 1.0
    for x in (a, a[0]):
        if x.ndim == 1 and options.get("ord") in ("fro", 2) and "keepdims" not in options:
            continue

        def loss(m):
            return np.sum(sla.norm(m, **options) ** 2)

        value, gradient = cr.value_and_grad(loss)(x)
        assert value == pytest.approx(loss(x), rel=1e-14)
        np.testing.assert_allclose(gradient, numerical_gradient(loss, x), rtol=1e-7)
