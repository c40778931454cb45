"""``scipy.stats.multivariate_normal``, ``dirichlet`` and ``multinomial``
(src/chainrules/rules/scipy/stats/multivariate.py): the kit on the registered functions (order
1 and 2, against finite differences), then SciPy's own methods, plain and frozen, through the
engine: values against SciPy, gradients and Hessians against finite differences of SciPy
(symmetric perturbations for a covariance, perturbations along the simplex for Dirichlet
points and multinomial probabilities) and closed forms; refusals by their messages.
"""

from __future__ import annotations

import numpy as np
import pytest

st = pytest.importorskip("scipy.stats")

import chainrules  # noqa: E402
from chainrules.rules.scipy.stats.multivariate import (  # noqa: E402
    dirichlet_logpdf, dirichlet_pdf, multinomial_logpmf, multinomial_pmf,
    multivariate_normal_logpdf, multivariate_normal_pdf)
from chainrules.testing import case, check_case  # noqa: E402
from chainrules.testing import test_frule_order2, test_rrule_order2  # noqa: E402

X = np.array([[0.3, -0.2, 0.5], [1.0, 0.5, -0.4], [0.1, 0.1, 0.2], [-0.6, 0.4, 0.0]])
MEAN = np.array([0.1, 0.2, -0.1])
COV = np.array([[2.0, 0.3, -0.2], [0.3, 1.0, 0.1], [-0.2, 0.1, 1.5]])
DIAG = np.array([2.0, 1.0, 0.7])
ALPHA = np.array([1.5, 2.0, 0.7])
POINTS = np.array([[0.2, 0.3], [0.3, 0.3], [0.5, 0.4]])  # a column per point
COUNTS = np.array([[1, 2, 3], [2, 2, 2], [0, 1, 5]])
P = np.array([0.2, 0.3, 0.5])

CASES = [
    case(multivariate_normal_logpdf, X, MEAN, COV),
    case(multivariate_normal_logpdf, X[0], MEAN, COV),
    case(multivariate_normal_logpdf, X[:, 0], 0.2, 2.0),
    case(multivariate_normal_logpdf, X, MEAN, DIAG),
    case(multivariate_normal_logpdf, X, MEAN, 1.7),
    case(multivariate_normal_logpdf, X.reshape(2, 2, 3), MEAN, COV, allow_singular=True),
    case(multivariate_normal_logpdf, X.astype(np.float32), MEAN, COV, rtol=1e-4),
    case(multivariate_normal_pdf, X, MEAN, COV),
    case(multivariate_normal_pdf, X[1], MEAN, DIAG),
    case(dirichlet_logpdf, POINTS, ALPHA),
    case(dirichlet_logpdf, POINTS[:, 0], ALPHA),
    case(dirichlet_logpdf, POINTS[:2], ALPHA),          # K - 1 rows: the last one completes
    case(dirichlet_pdf, POINTS, ALPHA),
    case(dirichlet_pdf, POINTS[:2, 1], ALPHA),
    case(multinomial_logpmf, COUNTS, 6, P),
    case(multinomial_logpmf, COUNTS[0], 6, P),
    case(multinomial_logpmf, COUNTS, np.array([6, 6, 6]), np.array([P, [0.3, 0.3, 0.4],
                                                                   P])),
    case(multinomial_pmf, COUNTS, 6, P),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_multivariate_rule(rule_case):
    check_case(rule_case)


ORDER2 = [
    case(multivariate_normal_logpdf, X, MEAN, COV),
    case(multivariate_normal_logpdf, X[:, 0], 0.2, 2.0),
    case(multivariate_normal_logpdf, X, MEAN, DIAG),
    case(multivariate_normal_pdf, X[0], MEAN, COV),
    case(dirichlet_logpdf, POINTS, ALPHA),
    case(dirichlet_pdf, POINTS[:2], ALPHA),
    case(multinomial_logpmf, COUNTS, 6, P),
    case(multinomial_pmf, COUNTS[1], 6, P),
]


@pytest.mark.parametrize("rule_case", ORDER2, ids=lambda c: c.id)
def test_order2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args, **rule_case.fkwargs)
    test_frule_order2(rule_case.function, *rule_case.args, **rule_case.fkwargs)


# --- SciPy's methods through the engine ---------------------------------------------------------

def _symmetric_basis(d):
    """Symmetric unit perturbations E_ij = e_i e_j^T + e_j e_i^T (i < j), E_ii = e_i e_i^T."""
    for i in range(d):
        for j in range(i, d):
            e = np.zeros((d, d))
            e[i, j] = e[j, i] = 1.0
            yield (i, j), e


def _fd(f, x, direction, step=1e-6):
    return (f(x + step * direction) - f(x - step * direction)) / (2 * step)


def _mvn_loss(mean, cov):
    return np.sum(st.multivariate_normal.logpdf(X, mean, cov) * np.array([1.0, 0.5, -0.3, 2.0]))


def _mvn_frozen_loss(mean, cov):
    frozen = st.multivariate_normal(mean, cov)
    return np.sum(frozen.logpdf(X) * np.array([1.0, 0.5, -0.3, 2.0]))


@pytest.mark.parametrize("loss", [_mvn_loss, _mvn_frozen_loss], ids=["plain", "frozen"])
def test_multivariate_normal_gradient_matches_scipy_finite_differences(loss):
    gm, gc = chainrules.grad(loss, argnums=(0, 1))(MEAN, COV)
    np.testing.assert_allclose(gc, gc.T)    # the symmetric convention
    for k in range(3):
        e = np.eye(3)[k]
        np.testing.assert_allclose(gm[k], _fd(lambda m: _mvn_loss(m, COV), MEAN, e),
                                   rtol=1e-6)
    for (i, j), e in _symmetric_basis(3):
        expected = _fd(lambda c: _mvn_loss(MEAN, c), COV, e)
        np.testing.assert_allclose(np.sum(gc * e), expected, rtol=1e-6, atol=1e-9)


def test_multivariate_normal_gradient_closed_form():
    # d/dmean sum_n logpdf = sum_n cov^-1 (x_n - mean); d/dcov = (S - n cov)/2 in cov^-1 terms
    inverse = np.linalg.inv(COV)
    dev = X - MEAN
    loss = lambda m, c: np.sum(st.multivariate_normal.logpdf(X, m, c))  # noqa: E731
    gm, gc = chainrules.grad(loss, argnums=(0, 1))(MEAN, COV)
    np.testing.assert_allclose(gm, inverse @ dev.sum(axis=0))
    expected = 0.5 * (inverse @ dev.T @ dev @ inverse - len(X) * inverse)
    np.testing.assert_allclose(gc, expected, rtol=1e-12, atol=1e-14)


def test_multivariate_normal_x_gradient_and_scalar_and_diagonal_cov():
    def loss(x, c):
        return np.sum(st.multivariate_normal(MEAN, c).pdf(x))

    for c, direction in ((1.3, 1.0), (DIAG, np.array([0.3, -1.0, 0.5]))):
        gx, gc = chainrules.grad(loss, argnums=(0, 1))(X, c)
        direction_x = np.sin(np.arange(X.size)).reshape(X.shape)
        np.testing.assert_allclose(np.sum(gx * direction_x),
                                   _fd(lambda x: loss(x, c), X, direction_x), rtol=1e-6)
        np.testing.assert_allclose(np.sum(gc * direction),
                                   _fd(lambda v: loss(X, v), c, direction), rtol=1e-6)


@pytest.mark.parametrize("loss", [_mvn_loss, _mvn_frozen_loss], ids=["plain", "frozen"])
def test_multivariate_normal_hessian_in_mean_and_cov(loss):
    """Second derivatives: the directional derivative of the gradient (mean, cov) along a
    (mean, symmetric cov) direction, against finite differences of the gradient."""
    dm = np.array([0.3, -0.5, 0.2])
    dc = np.array([[0.2, 0.1, 0.0], [0.1, -0.3, 0.05], [0.0, 0.05, 0.1]])

    def directional(m, c):
        gm, gc = chainrules.grad(loss, argnums=(0, 1))(m, c)
        return np.sum(gm * dm) + np.sum(gc * dc)

    hm, hc = chainrules.grad(directional, argnums=(0, 1))(MEAN, COV)
    step = 1e-5
    for k in range(3):
        e = np.eye(3)[k]
        expected = (directional(MEAN + step * e, COV) - directional(MEAN - step * e, COV)) / (
            2 * step)
        np.testing.assert_allclose(hm[k], expected, rtol=1e-5, atol=1e-8)
    for (i, j), e in _symmetric_basis(3):
        expected = (directional(MEAN, COV + step * e) - directional(MEAN, COV - step * e)) / (
            2 * step)
        np.testing.assert_allclose(np.sum(hc * e), expected, rtol=1e-5, atol=1e-8)


def test_multivariate_normal_from_import_and_keywords():
    from scipy.stats import multivariate_normal

    g = chainrules.grad(lambda m: multivariate_normal.logpdf(X[0], mean=m, cov=COV))(MEAN)
    np.testing.assert_allclose(g, np.linalg.solve(COV, X[0] - MEAN))


def test_frozen_outside_the_trace_differentiates_in_x():
    frozen = st.multivariate_normal(MEAN, COV)
    g = chainrules.grad(lambda x: frozen.logpdf(x))(X[2])
    np.testing.assert_allclose(g, -np.linalg.solve(COV, X[2] - MEAN))


def test_multivariate_normal_refusals_name_the_problem():
    with pytest.raises(NotImplementedError, match="multivariate_normal.cdf"):
        chainrules.grad(lambda m: st.multivariate_normal.cdf(X[0], m, COV))(MEAN)
    with pytest.raises(NotImplementedError, match="multivariate_normal.logcdf"):
        chainrules.grad(lambda m: st.multivariate_normal(m, COV).logcdf(X[0]))(MEAN)
    singular = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(ValueError, match="not positive definite"):
        chainrules.grad(lambda m: st.multivariate_normal.logpdf(X[0], m, singular,
                                                                allow_singular=True))(MEAN)
    with pytest.raises(TypeError, match="must be real"):
        multivariate_normal_logpdf(X[0] + 1j, MEAN, COV)


# --- dirichlet, multinomial through SciPy's methods ----------------------------------------------

def test_dirichlet_gradients_plain_and_frozen():
    x = POINTS[:, 0]

    def plain(x, a):
        return st.dirichlet.logpdf(x, a)

    def frozen(x, a):
        return st.dirichlet(a).pdf(x)

    for loss in (plain, frozen):
        gx, ga = chainrules.grad(loss, argnums=(0, 1))(x, ALPHA)
        for k in range(3):
            e = np.eye(3)[k]
            np.testing.assert_allclose(ga[k], _fd(lambda a: loss(x, a), ALPHA, e), rtol=1e-6)
        along = np.array([0.5, -1.0, 0.5])   # stays on the simplex: SciPy accepts it
        np.testing.assert_allclose(gx @ along, _fd(lambda v: loss(v, ALPHA), x, along),
                                   rtol=1e-6)
    gx = chainrules.grad(plain)(x, ALPHA)
    np.testing.assert_allclose(gx, (ALPHA - 1) / x)   # the formula, off the simplex too


def test_dirichlet_hessian_in_alpha():
    def gradient_along(a):
        return chainrules.grad(lambda b: st.dirichlet.logpdf(POINTS, b).sum())(a) @ ALPHA

    h = chainrules.grad(gradient_along)(ALPHA)
    step = 1e-5
    expected = [(gradient_along(ALPHA + step * e) - gradient_along(ALPHA - step * e)) / (2 * step)
                for e in np.eye(3)]
    np.testing.assert_allclose(h, expected, rtol=1e-5)


def test_dirichlet_scipy_checks_stay():
    with pytest.raises(ValueError, match="simplex"):
        chainrules.grad(lambda a: st.dirichlet.logpdf(np.array([0.2, 0.3, 0.6]), a))(ALPHA)


def test_multinomial_gradient_plain_and_frozen():
    weights = np.array([1.0, -0.5, 2.0])

    def plain(p):
        return np.sum(st.multinomial.logpmf(COUNTS, 6, p) * weights)

    def frozen(p):
        return np.sum(st.multinomial(6, p).pmf(COUNTS) * weights)

    for loss in (plain, frozen):
        g = chainrules.grad(loss)(P)
        along = np.array([0.5, -1.0, 0.5])
        np.testing.assert_allclose(g @ along, _fd(loss, P, along), rtol=1e-6)
    np.testing.assert_allclose(chainrules.grad(plain)(P), weights @ COUNTS / P)


def test_multinomial_refuses_unnormalized_p():
    with pytest.raises(ValueError, match="sum to 1"):
        chainrules.grad(lambda p: st.multinomial.logpmf(COUNTS[0], 6, p))(np.array([0.2, 0.3,
                                                                                    0.6]))


def test_multinomial_outside_the_support_is_constant():
    g = chainrules.grad(lambda p: np.sum(np.exp(st.multinomial.logpmf(
        np.array([[1, 2, 3], [1, 1, 1]]), 6, p))))(P)
    expected = st.multinomial.pmf(COUNTS[0], 6, P) * COUNTS[0] / P
    np.testing.assert_allclose(g, expected)


# --- random shapes and covariance forms ----------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(hs.integers(1, 4), hs.sampled_from(["matrix", "diagonal", "scalar"]),
       hs.sampled_from([(), (1,), (3,), (2, 2)]), hs.booleans(), hs.integers(0, 2**32 - 1))
def test_multivariate_normal_matches_scipy_and_closed_forms(dim, form, batch, frozen, seed):
    """Values against SciPy; gradients against the closed forms
    d/dx = -cov^-1 (x - mean), d/dmean = cov^-1 (x - mean) summed over points,
    d/dcov = (a a^T - cov^-1) / 2 summed (the trace for a scalar, the diagonal for a vector)."""
    rng = np.random.default_rng(seed)
    root = rng.standard_normal((dim, dim))
    full = {"matrix": root @ root.T + dim * np.eye(dim),
            "diagonal": np.diag(rng.uniform(0.5, 2.0, dim)),
            "scalar": rng.uniform(0.5, 2.0) * np.eye(dim)}[form]
    cov = {"matrix": full, "diagonal": np.diagonal(full).copy(), "scalar": full[0, 0]}[form]
    mean = rng.standard_normal(dim)
    x = rng.standard_normal(batch + (dim,))
    weights = rng.standard_normal(batch)

    def loss(x, mean, cov):
        logpdf = st.multivariate_normal(mean, cov).logpdf if frozen else (
            lambda x: st.multivariate_normal.logpdf(x, mean, cov))
        return np.sum(logpdf(x) * weights)

    np.testing.assert_allclose(multivariate_normal_logpdf(x, mean, cov),
                               st.multivariate_normal.logpdf(x, mean, cov), rtol=1e-12)
    gx, gm, gc = chainrules.grad(loss, argnums=(0, 1, 2))(x, mean, cov)
    inverse = np.linalg.inv(full)
    a = (x - mean) @ inverse
    w = np.broadcast_to(weights, batch)[..., None]
    np.testing.assert_allclose(gx, -w * a, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gm, np.sum(w * a, axis=tuple(range(len(batch)))),
                               rtol=1e-9, atol=1e-12)
    a2, w2 = a.reshape(-1, dim), w.reshape(-1)
    g = 0.5 * (a2.T @ (w2[:, None] * a2) - np.sum(w2) * inverse)
    expected = {"matrix": g, "diagonal": np.diagonal(g), "scalar": np.trace(g)}[form]
    np.testing.assert_allclose(gc, expected, rtol=1e-9, atol=1e-12)


def test_covariance_object_is_read_as_its_matrix():
    cov = st.Covariance.from_diagonal(DIAG)
    g = chainrules.grad(lambda m: st.multivariate_normal.logpdf(X[0], m, cov))(MEAN)
    np.testing.assert_allclose(g, (X[0] - MEAN) / DIAG)
    g = chainrules.grad(lambda m: st.multivariate_normal(m, cov).pdf(X[0]))(MEAN)
    np.testing.assert_allclose(g, st.multivariate_normal.pdf(X[0], MEAN, DIAG) * (X[0] - MEAN)
                               / DIAG)


def test_wishart_logpdf_in_its_point_degrees_of_freedom_and_scale():
    # SciPy fills arrays of its own in wishart's _logpdf (before: "a traced value was
    # converted to a plain NumPy array"); the engine follows them as a program's
    point = np.array([[2.0, 0.3], [0.3, 1.5]])

    def loss(p):
        scale = np.array([[p[1], 0.2], [0.2, 1.0]])
        x = point + p[2] * np.eye(2)
        return st.wishart.logpdf(x, df=3 + p[0], scale=scale)

    p, step = np.array([0.5, 1.3, 0.2]), 1e-6
    expected = [(loss(p + step * e) - loss(p - step * e)) / (2 * step) for e in np.eye(3)]
    np.testing.assert_allclose(chainrules.grad(loss)(p), expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("points", [1, 2])
def test_invwishart_logpdf_in_its_points_degrees_of_freedom_and_scale(points):
    # SciPy's invwishart._logpdf solves with a BLAS trsm (before: "a traced value was
    # converted to a plain NumPy array"): a version in NumPy operations is traced
    point = np.array([[2.0, 0.3], [0.3, 1.5]])

    def loss(p):
        scale = np.array([[p[1], 0.2], [0.2, 1.0]])
        x = point + p[2] * np.eye(2)
        if points == 2:
            x = np.stack([x, 1.2 * x], axis=-1)  # SciPy's points along the last axis
        return np.sum(st.invwishart.logpdf(x, df=3 + p[0], scale=scale))

    p, step = np.array([0.5, 1.3, 0.2]), 1e-6
    expected = [(loss(p + step * e) - loss(p - step * e)) / (2 * step) for e in np.eye(3)]
    assert chainrules.vjp(loss, p)[0] == pytest.approx(loss(p), rel=1e-13)
    np.testing.assert_allclose(chainrules.grad(loss)(p), expected, rtol=1e-6, atol=1e-9)
    # one dimension: x and the scale are numbers
    f = lambda v: st.invwishart.logpdf(v[0], df=4.5, scale=v[1])  # noqa: E731
    v = np.array([1.3, 2.0])
    expected = [(f(v + step * e) - f(v - step * e)) / (2 * step) for e in np.eye(2)]
    np.testing.assert_allclose(chainrules.grad(f)(v), expected, rtol=1e-6)


def test_vonmises_fisher_in_its_concentration():
    # SciPy checks kappa with float(kappa) (before: "float() of a traced value"); log f =
    # kappa mu.x + log C(kappa), C the normalization, here in 2 dimensions C = 1/(2 pi I0)
    if not hasattr(st, "vonmises_fisher"):
        pytest.skip("scipy.stats.vonmises_fisher: SciPy 1.11")
    x, mu = np.array([0.6, 0.8]), np.array([1.0, 0.0])
    g = chainrules.grad(lambda k: st.vonmises_fisher.logpdf(x, mu, k))(2.0)
    from scipy.special import i0e, i1e
    assert g == pytest.approx(mu @ x - i1e(2.0) / i0e(2.0), rel=1e-10)
    with pytest.raises(ValueError, match="positive scalar"):
        chainrules.grad(lambda k: st.vonmises_fisher.logpdf(x, mu, k))(-1.0)
