"""Maximum-likelihood fits of scipy.stats distributions on traced data
(src/chainrules/rules/scipy/stats/fits.py): expon.fit and uniform.fit in closed form, with and
without fixed parameters, against central finite differences and SciPy's values; SciPy's own
errors; the moment method refused by name (before, SciPy's `float(loc)` raised "float() of a
traced value"); the numerical fits (SciPy's generic one and the special ones that convert the
data: before, "a traced value was converted to a plain NumPy array") against central
differences of the optimum re-solved by Newton's method to machine precision, at second order
and in forward mode, their refusals (no strict minimum, an optimum at infinity), and nnlf;
theilslopes' slope, intercept and confidence bounds (ties counted on a sorted copy);
siegelslopes (repeated medians in NumPy operations) in y and x."""

from __future__ import annotations

import numpy as np
import pytest

stats = pytest.importorskip("scipy.stats")
optimize = pytest.importorskip("scipy.optimize")

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


# --- numerical fits: the implicit derivative at SciPy's estimate -----------------------------------

def _tight(func, x0, args=(), disp=0):
    """SciPy's default optimizer, to tight tolerances: the estimate (and so the implicit
    derivative at it) within rounding of the optimum."""
    return optimize.fmin(func, x0, args=args, disp=0, xtol=1e-13, ftol=1e-14, maxiter=20000,
                         maxfun=40000)


SAMPLES = {  # (distribution, data, fixed parameters: {index in (shapes, loc, scale): value})
    "gamma": (stats.gamma, stats.gamma.rvs(2.0, size=30, random_state=1), {}),
    "t": (stats.t, stats.t.rvs(4.0, size=30, random_state=2), {}),
    "genextreme": (stats.genextreme, stats.genextreme.rvs(-0.1, size=30, random_state=3), {}),
    "logistic": (stats.logistic, stats.logistic.rvs(size=30, random_state=4), {}),
    "lognorm": (stats.lognorm, stats.lognorm.rvs(0.5, size=30, random_state=5), {}),
    "rayleigh": (stats.rayleigh, stats.rayleigh.rvs(size=30, random_state=6), {}),
    "weibull_min, floc": (stats.weibull_min, stats.weibull_min.rvs(1.8, size=30,
                                                                    random_state=7), {1: 0.0}),
    # distributions whose logpdf rules came later (rules/scipy/stats/continuous.py); invgauss
    # has a fit of its own, a closed form for a fixed loc
    "genpareto, floc": (stats.genpareto, stats.genpareto.rvs(0.2, size=30, random_state=8),
                        {1: 0.0}),
    "gompertz, floc": (stats.gompertz, stats.gompertz.rvs(1.5, size=30, random_state=9),
                       {1: 0.0}),
    "invgauss, floc": (stats.invgauss, stats.invgauss.rvs(0.5, size=30, random_state=10),
                       {1: 0.0}),
}
_KEYWORD = {0: "f0", 1: "floc", 2: "fscale"}


def _newton_optimum(distribution, data, start, fixed):
    """The free parameters at the likelihood's optimum, by Newton's method from ``start``
    (gradient and Hessian of SciPy's nnlf by chainrules, plain values; only the fixed point
    matters, where the gradient is zero)."""
    free = [i for i in range(len(start)) if i not in fixed]

    def nnlf(theta):
        full = list(start)
        for k, i in enumerate(free):
            full[i] = theta[k]
        for i, value in fixed.items():
            full[i] = value
        return distribution.nnlf(full, data)

    theta = np.array([start[i] for i in free])
    for _ in range(12):
        theta = theta - np.linalg.solve(cr.hessian(nnlf)(theta), cr.grad(nnlf)(theta))
    return theta


@pytest.mark.parametrize("name", SAMPLES)
def test_numerical_fits_in_the_data(name):
    distribution, data, fixed = SAMPLES[name]
    keywords = {_KEYWORD[i] if i > 0 or distribution.shapes is None else "f0": value
                for i, value in fixed.items()}
    if distribution.numargs == 0:
        keywords = {("floc", "fscale")[i]: v for i, v in fixed.items()}
    start = distribution.fit(data, optimizer=_tight, **keywords)
    weights = np.arange(1.0, len(start) + 1.0)
    weights[list(fixed)] = 0.0

    def loss(x):
        return np.sum(np.array(distribution.fit(x, optimizer=_tight, **keywords)) * weights)

    value, gradient = cr.value_and_grad(loss)(data)
    assert value == pytest.approx(np.sum(np.array(start) * weights), rel=1e-13)  # SciPy's
    free_weights = np.delete(weights, list(fixed))
    step = 1e-6
    expected = np.zeros(5)
    for i in range(5):
        e = np.zeros_like(data)
        e[i] = step
        expected[i] = free_weights @ (
            _newton_optimum(distribution, data + e, start, fixed)
            - _newton_optimum(distribution, data - e, start, fixed)) / (2 * step)
    np.testing.assert_allclose(gradient[:5], expected, rtol=1e-5, atol=1e-8)


def test_numerical_fit_at_second_order_and_in_forward_mode():
    distribution, data, _ = SAMPLES["t"]

    def loss(x):
        return np.sum(np.array(distribution.fit(x, optimizer=_tight)) ** 2)

    gradient = cr.grad(loss)
    v = np.random.default_rng(0).normal(size=data.size)
    # differences of gradients at re-solved estimates: a smaller step meets the optimizer's
    # rounding (relative error 3e-5 at 1e-3, 3e-3 at 1e-4, 1e-2 at 1e-5)
    step = 1e-3
    expected = (gradient(data + step * v) - gradient(data - step * v)) / (2 * step)
    np.testing.assert_allclose(cr.hvp(loss, data, v), expected, rtol=0,
                               atol=3e-4 * np.max(np.abs(expected)))
    assert cr.jvp(loss, (data,), (v,))[1] == pytest.approx(gradient(data) @ v, rel=1e-10)


def test_fixed_parameters_that_are_traced():
    # lognorm's loc fixed to a function of the data: its derivative flows through the fit
    data = SAMPLES["lognorm"][1] + 1.0

    def loss(x):
        shape, loc, scale = stats.lognorm.fit(x, floc=0.5 * np.min(x) - 0.1)
        return shape + 2.0 * loc + 3.0 * scale

    def plain(x):  # lognorm's own closed form for a fixed loc
        shape, loc, scale = stats.lognorm.fit(x, floc=0.5 * np.min(x) - 0.1)
        return shape + 2.0 * loc + 3.0 * scale

    np.testing.assert_allclose(cr.grad(loss)(data), numerical_gradient(plain, data),
                               rtol=1e-6, atol=1e-8)


def test_fits_without_a_derivative_are_refused_by_name():
    data = stats.beta.rvs(2.3, 0.6, size=30, random_state=1)
    with pytest.raises(ValueError, match="scipy.stats.beta.fit: .* not a strict minimum"), \
            np.errstate(invalid="ignore"):  # SciPy's own start, on the plain data
        cr.grad(lambda x: stats.beta.fit(x)[0])(data)   # loc at the edge of the support
    data = stats.f.rvs(29, 18, size=30, random_state=np.random.default_rng(1))
    with pytest.raises(ValueError, match="scipy.stats.f.fit: .* at infinity"):
        cr.grad(lambda x: stats.f.fit(x)[0])(data)      # dfn runs away
    with pytest.raises(ValueError, match="method='MM'"):
        cr.grad(lambda x: stats.logistic.fit(x, method="MM")[0])(SAMPLES["logistic"][1])
    with pytest.raises(NotImplementedError, match="scipy.stats.kstwobign.logpdf"):
        cr.grad(lambda x: stats.kstwobign.fit(x)[0])(stats.kstwobign.rvs(size=20,
                                                                          random_state=1))


def test_powerlaw_fit_of_its_own_in_the_data():
    # SciPy's powerlaw.fit converts the data (routed to the implicit derivative); with loc
    # and scale fixed, the estimate is a = -n / sum(log x)
    data = stats.powerlaw.rvs(2.0, size=25, random_state=1)
    gradient = cr.grad(lambda x: stats.powerlaw.fit(x, floc=0, fscale=1)[0])(data)
    expected = data.size / np.sum(np.log(data)) ** 2 / data
    np.testing.assert_allclose(gradient, expected, rtol=1e-6)


def test_nnlf_in_the_data_and_the_parameters():
    data = SAMPLES["gamma"][1]

    def loss(x, theta):
        return stats.gamma.nnlf(theta, x)

    theta = np.array([2.0, -0.1, 1.3])
    assert cr.value_and_grad(loss)(data, theta)[0] == pytest.approx(loss(data, theta),
                                                                   rel=1e-13)
    np.testing.assert_allclose(cr.grad(loss, argnums=1)(data, theta),
                               numerical_gradient(lambda t: loss(data, t), theta), rtol=1e-6)
    np.testing.assert_allclose(cr.grad(loss)(data, theta),
                               numerical_gradient(lambda x: loss(x, theta), data), rtol=1e-6,
                               atol=1e-8)
    # outside the support and the parameter space: inf, as SciPy's
    assert cr.value_and_grad(loss)(data, np.array([2.0, 5.0, 1.0]))[0] == np.inf
    assert cr.value_and_grad(loss)(data, np.array([-2.0, 0.0, 1.0]))[0] == np.inf
