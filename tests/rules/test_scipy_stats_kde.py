"""``scipy.stats.gaussian_kde`` through the engine (src/chainrules/ad/dispatch/kernel_densities.py,
src/chainrules/rules/scipy/stats/kernel_density.py): its density in the data, the weights,
the bandwidth rule and the points, against SciPy's values and central differences, at orders
1 and 2; refusals by name. Before: "a traced value was converted to a plain NumPy array" at
``self.dataset = atleast_2d(asarray(dataset))``."""

from __future__ import annotations

import numpy as np
import pytest

stats = pytest.importorskip("scipy.stats")

import chainrules as cr  # noqa: E402
from tests.ad.finite_differences import numerical_gradient  # noqa: E402

# No rules of their own: the density is computed with functions that have them.
CASES: list = []

DATA_1D = np.array([0.1, 0.7, 1.3, 2.0, 2.2])
DATA_2D = np.cos(np.arange(12.0)).reshape(2, 6)
POINTS_2D = np.array([[0.1, 0.5, -0.3], [0.2, -0.4, 0.6]])
WEIGHTS = np.array([1.0, 2.0, 0.5, 1.5, 1.0])

LOSSES = {
    "in the data (Scott)": (lambda x: stats.gaussian_kde(x).logpdf(0.9)[0], DATA_1D),
    "in the data (Silverman), called": (
        lambda x: np.sum(stats.gaussian_kde(x, "silverman")(np.array([0.3, 1.1]))), DATA_1D),
    "in the weights": (lambda v: stats.gaussian_kde(DATA_1D, weights=v).logpdf(0.9)[0],
                       WEIGHTS),
    "a fixed bandwidth, evaluate": (
        lambda x: stats.gaussian_kde(x, 0.4).evaluate(np.array([0.3, 1.1]))[1], DATA_1D),
    "2-D data": (lambda x: np.sum(stats.gaussian_kde(x.reshape(2, 6)).logpdf(POINTS_2D)),
                 DATA_2D.ravel()),
    "2-D points, plain data": (lambda p: np.sum(stats.gaussian_kde(DATA_2D).pdf(
        p.reshape(2, 3))), POINTS_2D.ravel()),
}


@pytest.mark.parametrize("name", LOSSES)
def test_density_values_gradients_and_hessians(name):
    loss, x = LOSSES[name]
    assert cr.vjp(loss, x)[0] == pytest.approx(loss(x), rel=1e-12)
    np.testing.assert_allclose(cr.grad(loss)(x), numerical_gradient(loss, x), rtol=1e-6,
                               atol=1e-8)
    step = 1e-5
    fd = np.array([(cr.grad(loss)(x + step * e) - cr.grad(loss)(x - step * e)) / (2 * step)
                   for e in np.eye(x.size)])
    np.testing.assert_allclose(cr.hessian(loss)(x), fd, rtol=1e-5, atol=1e-6)


def test_refusals_name_what_is_not_followed():
    with pytest.raises(cr.TracingError, match="callable bw_method"):
        cr.grad(lambda x: stats.gaussian_kde(x, lambda kde: 0.5).logpdf(0.9)[0])(DATA_1D)
    with pytest.raises(cr.TracingError, match="gaussian_kde.resample"):
        cr.grad(lambda x: np.sum(stats.gaussian_kde(x).resample(3, seed=0)))(DATA_1D)
    with pytest.raises(ValueError, match="points have dimension 3"):
        cr.grad(lambda x: np.sum(stats.gaussian_kde(x.reshape(2, 6)).pdf(np.ones((3, 2)))))(
            DATA_2D.ravel())
    # outside a trace, SciPy's own
    assert stats.gaussian_kde(DATA_1D).logpdf(0.9)[0] == pytest.approx(
        np.log(stats.gaussian_kde(DATA_1D)(0.9)[0]))
