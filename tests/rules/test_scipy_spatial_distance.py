"""The rule-testing kit on ``scipy.spatial.distance.cdist``, ``pdist`` and ``squareform``
(src/chainrules/rules/scipy/spatial/distance.py): every supported metric at orders 1 and 2
against finite differences, float32 kept, pairs of equal points (no NaN), a kernel through the
engine, and refused options by their messages. Before, cdist raised ArrayConversionError from
SciPy's C code and pdist and squareform did the same."""

from __future__ import annotations

import numpy as np
import pytest

distance = pytest.importorskip("scipy.spatial.distance")

import chainrules as cr  # noqa: E402
from chainrules.testing import case, check_case  # noqa: E402
from chainrules.testing import test_frule_order2, test_rrule_order2  # noqa: E402
from tests.ad.finite_differences import numerical_gradient  # noqa: E402

_rng = np.random.default_rng(5)
A = _rng.standard_normal((4, 3))
B = _rng.standard_normal((3, 3))
V = np.array([0.5, 1.3, 2.0])

METRICS = [("euclidean", {}), ("sqeuclidean", {}), ("seuclidean", {"V": V}),
           ("cityblock", {}), ("minkowski", {"p": 3.0}), ("chebyshev", {}), ("cosine", {}),
           ("correlation", {})]

CASES = [
    *[case(distance.cdist, A, B, metric, **options) for metric, options in METRICS],
    case(distance.cdist, A, B),                                   # euclidean by default
    case(distance.cdist, A.astype(np.float32), B.astype(np.float32), "sqeuclidean",
         rtol=1e-3, atol=1e-3),
    *[case(distance.pdist, A, metric, **options) for metric, options in METRICS],
    case(distance.squareform, _rng.standard_normal(6)),
    # a matrix's upper triangle (SciPy reads no other element: finite differences of the others
    # and of the diagonal see no change, with checks=False)
    case(distance.squareform, _rng.standard_normal((4, 4)), checks=False),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("rule_case", [c for c in CASES if c.args[0].dtype != np.float32][::2],
                         ids=lambda c: c.id)
def test_rule_at_order_2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)
    test_frule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)


def test_equal_points_have_a_zero_cotangent_not_nan():
    # d(a, a) = 0 has no derivative in euclidean, minkowski, cosine: a subgradient, 0
    X = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 1.0]])
    for metric in ("euclidean", "minkowski", "cosine"):
        gradient = cr.grad(lambda x: np.sum(distance.pdist(x, metric)))(X)
        assert np.all(np.isfinite(gradient)), metric
    gradient = cr.grad(lambda x: np.sum(distance.cdist(x, x)))(X)
    # each row moves away from the others: (x_i - x_j) / |x_i - x_j| summed, twice (i, j), (j, i)
    expected = np.zeros_like(X)
    for i in range(3):
        for j in range(3):
            d = np.linalg.norm(X[i] - X[j])
            if d > 0:
                expected[i] += 2 * (X[i] - X[j]) / d
    np.testing.assert_allclose(gradient, expected)


def test_a_gaussian_kernel_fit_through_the_engine():
    # kernel ridge regression: the length scale and the points, at orders 1 and 2
    y = np.sin(np.arange(5.0))

    def loss(v):
        points, scale = v[:10].reshape(5, 2), v[10]
        K = np.exp(-distance.squareform(distance.pdist(points, "sqeuclidean")) / scale ** 2)
        alpha = np.linalg.solve(K + 0.1 * np.eye(5), y)
        return y @ alpha

    v = np.concatenate([np.cos(np.arange(10.0)), [1.3]])
    np.testing.assert_allclose(cr.grad(loss)(v), numerical_gradient(loss, v), rtol=1e-6,
                               atol=1e-8)
    direction = np.sin(np.arange(11.0))
    step = 1e-5
    fd = (cr.grad(loss)(v + step * direction) - cr.grad(loss)(v - step * direction)) / (2 * step)
    np.testing.assert_allclose(cr.hvp(loss, v, direction), fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("call, match", [
    (lambda x: distance.cdist(x, x, "hamming"), "metric='hamming'"),
    (lambda x: distance.cdist(x, x, lambda u, v: np.sum(u * v)), "callable metric"),
    (lambda x: distance.pdist(x, "seuclidean"), "V=np.var"),
    (lambda x: distance.pdist(x, "minkowski", w=[1.0, 2.0, 1.0]), "w="),
], ids=["other metric", "callable", "seuclidean without V", "weights"])
def test_refused_options_name_themselves(call, match):
    with pytest.raises((NotImplementedError, TypeError), match=match):
        cr.grad(lambda x: np.sum(call(x)))(A)
