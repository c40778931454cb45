"""Closed-form maximum-likelihood fits of scipy.stats distributions on traced data
(src/chainrules/rules/scipy/stats/fits.py): expon.fit and uniform.fit, with and without fixed
parameters, against central finite differences and SciPy's values; SciPy's own errors; the
moment method refused by name (before, SciPy's `float(loc)` raised "float() of a traced
value"); theilslopes' slope, intercept and confidence bounds (ties counted on a sorted copy);
siegelslopes (repeated medians in NumPy operations) in y and x."""

from __future__ import annotations

import numpy as np
import pytest

stats = pytest.importorskip("scipy.stats")

import chainrules as cr  # noqa: E402
from chainrules.rules.scipy.stats.fits import plain_fit  # noqa: E402
from chainrules.testing import case, check_case  # noqa: E402
from tests.ad.finite_differences import numerical_gradient  # noqa: E402

# plain_fit, not differentiable (an engine computes it on plain values), is the only function
# registered here
CASES = [case(plain_fit, stats.norm, np.array([0.5, 1.5, 2.0, 4.0]), non_differentiable=True)]

DATA = np.random.default_rng(2).gamma(3.0, 1.0, 40) + 0.5
FITS = {
    "expon": lambda x: stats.expon.fit(x),
    "expon, floc": lambda x: stats.expon.fit(x, floc=0.1),
    "expon, fscale": lambda x: stats.expon.fit(x, fscale=2.0),
    "uniform": lambda x: stats.uniform.fit(x),
    "uniform, floc": lambda x: stats.uniform.fit(x, floc=0.0),
    "uniform, fscale": lambda x: stats.uniform.fit(x, fscale=20.0),
}


@pytest.mark.parametrize("name", FITS)
def test_fits_in_the_data(name):
    def loss(x):
        loc, scale = FITS[name](x)
        return loc ** 2 + 3.0 * scale ** 2

    value, gradient = cr.value_and_grad(loss)(DATA)
    assert value == pytest.approx(loss(DATA), rel=1e-13)  # SciPy's estimates
    np.testing.assert_allclose(gradient, numerical_gradient(loss, DATA), rtol=1e-6, atol=1e-8)


def test_scipys_errors_and_the_moment_method():
    with pytest.raises(ValueError, match="nothing to optimize"):
        cr.grad(lambda x: stats.expon.fit(x, floc=0.0, fscale=1.0)[0])(DATA)
    with pytest.raises(ValueError, match="method='MM'"):
        cr.grad(lambda x: stats.expon.fit(x, method="MM")[1])(DATA)


@pytest.mark.parametrize("part", ["slope", "intercept", "low_slope", "high_slope"])
def test_theil_sen_slopes_in_the_data(part):
    # before: "writing into a view of another array" (SciPy's _find_repeats sorts a view of
    # its argument in place: src/chainrules/rules/scipy/stats/repeats.py sorts a copy)
    y = np.sin(np.arange(24.0)) + 0.1 * np.arange(24.0)
    x = np.arange(24.0) ** 1.1

    def loss(values):
        return getattr(stats.theilslopes(values, x), part) ** 2

    value, gradient = cr.value_and_grad(loss)(y)
    assert value == pytest.approx(loss(y), rel=1e-13)
    np.testing.assert_allclose(gradient, numerical_gradient(loss, y), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_the_plain_fit_is_not_differentiated(rule_case):
    check_case(rule_case)



@pytest.mark.parametrize("method", ["hierarchical", "separate"])
@pytest.mark.parametrize("part", ["slope", "intercept"])
def test_siegel_repeated_medians_in_y_and_x(method, part):
    # before: "Invalid call to pythranized function" (SciPy's compiled repeated medians)
    rng = np.random.default_rng(3)
    y = np.sin(np.arange(15.0)) + 0.3 * np.arange(15.0)
    x = np.arange(15.0) ** 1.2 + rng.uniform(size=15) * 0.1

    def loss(values, points):
        return getattr(stats.siegelslopes(values, points, method=method), part) ** 2

    value, gradient = cr.value_and_grad(loss)(y, x)
    assert value == pytest.approx(loss(y, x), rel=1e-13)
    np.testing.assert_allclose(gradient, numerical_gradient(lambda v: loss(v, x), y),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.grad(loss, argnums=1)(y, x),
                               numerical_gradient(lambda p: loss(y, p), x), rtol=1e-6,
                               atol=1e-8)
