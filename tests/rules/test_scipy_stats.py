"""The rules of src/chainrules/rules/scipy/stats/univariate.py: ``scipy.stats`` univariate distributions.

Skipped when SciPy is not installed. Every (distribution, method) stand-in goes through the
kit (finite differences) with respect to every differentiable argument: ``x`` (continuous),
``loc``, ``scale`` and the shape parameters; a shape parameter whose cdf derivative is not
wired yet is passed as an integer there (no tangent), and the refusal itself is tested by name.
Then the user's view: plain calls (positional, keywords), frozen distributions, gradients and
hessians through ``chainrules.grad``/``hessian`` against finite differences of SciPy itself.
"""

from __future__ import annotations

import numpy as np
import pytest

st = pytest.importorskip("scipy.stats")

import chainrules as cr  # noqa: E402
from chainrules.rules.scipy.stats.univariate import (CONTINUOUS, CONTINUOUS_METHODS,  # noqa: E402
                                          DISCRETE, DISCRETE_METHODS, PENDING, stand_in)
from chainrules.testing import case, check_case, test_frule_order2, test_rrule_order2  # noqa: E402

# name -> (x points, loc, scale, differentiable shapes, the same shapes as integers where
# their cdf derivative is refused)
POINTS = {
    "norm": ([-0.7, 0.3, 1.6], 0.2, 1.3, (), ()),
    "expon": ([0.3, 1.1, 2.5], 0.1, 1.4, (), ()),
    "laplace": ([-0.7, 0.4, 1.6], 0.2, 1.3, (), ()),
    "cauchy": ([-0.7, 0.3, 1.6], 0.2, 1.3, (), ()),
    "logistic": ([-0.7, 0.3, 1.6], 0.2, 1.3, (), ()),
    "uniform": ([0.4, 1.1, 1.9], 0.1, 2.0, (), ()),
    "t": ([-0.7, 0.3, 1.6], 0.2, 1.3, (4.5,), (4,)),
    "gamma": ([0.4, 1.1, 2.5], 0.1, 1.4, (2.5,), (2,)),
    "chi2": ([0.4, 1.1, 2.5], 0.1, 1.4, (3.5,), (3,)),
    "beta": ([0.3, 0.6, 1.0], 0.1, 1.2, (2.5, 3.5), (2, 3)),
    "vonmises": ([-1.0, 0.3, 1.2], 0.1, 1.0, (1.7,), (2,)),
    "truncnorm": ([-0.5, 0.4, 1.5], 0.2, 1.3, (-1.0, 1.5), (-1.0, 1.5)),
    "gennorm": ([-0.7, 0.4, 1.6], 0.2, 1.3, (1.5,), (2,)),
    "pareto": ([1.5, 2.0, 3.5], 0.1, 1.2, (2.5,), (2.5,)),
    "gumbel_r": ([-0.7, 0.3, 1.6], 0.2, 1.3, (), ()),
    "gumbel_l": ([-0.7, 0.3, 1.6], 0.2, 1.3, (), ()),
    "halfnorm": ([0.4, 1.1, 2.5], 0.1, 1.4, (), ()),
    "rayleigh": ([0.4, 1.1, 2.5], 0.1, 1.4, (), ()),
    "lognorm": ([0.4, 1.1, 2.5], 0.1, 1.4, (0.7,), (0.7,)),
    "weibull_min": ([0.4, 1.1, 2.5], 0.1, 1.4, (1.7,), (1.7,)),
    "invgamma": ([0.4, 1.1, 2.5], 0.1, 1.4, (2.5,), (2,)),
    "skewnorm": ([-0.7, 0.3, 1.6], 0.2, 1.3, (1.5,), (1.5,)),
    "f": ([0.4, 1.1, 2.5], 0.1, 1.4, (3.5, 7.5), (3, 7)),
    "genextreme": ([-0.7, 0.3, 1.6], 0.2, 1.3, (0.3,), (0.3,)),
}
QUANTILES = [0.2, 0.4, 0.8]  # not the median: laplace's quantile has a kink in curvature

# The distributions of chainrules/rules/scipy/stats/continuous.py's second part: x at the
# quantiles 0.15, 0.4 and 0.85 (no kink there, nor at QUANTILES: dgamma's and dweibull's 0,
# loglaplace's 1, triang's c, trapezoid's c and d), loc 0.1, scale 1.3. Name -> (shapes, the
# same as integers where a cdf shape partial is numerical or refused). Their variants
# (scalar, float32, broadcast) are sampled: parameters broadcast against x, in logpdf.
MORE = {
    "alpha": ((1.7,), (1.7,)), "anglit": ((), ()), "arcsine": ((), ()),
    "argus": ((1.3,), (1.3,)), "betaprime": ((2.5, 3.5), (2, 3)),
    "bradford": ((0.7,), (0.7,)), "burr": ((3.5, 2.5), (3.5, 2.5)),
    "burr12": ((2.5, 1.5), (2.5, 1.5)), "chi": ((3.5,), (3,)), "cosine": ((), ()),
    "dgamma": ((1.7,), (2,)), "dweibull": ((1.7,), (1.7,)), "erlang": ((3,), (3,)),
    "exponnorm": ((1.5,), (1.5,)), "exponpow": ((2.5,), (2.5,)),
    "exponweib": ((2.5, 1.5), (2.5, 1.5)), "fatiguelife": ((0.8,), (0.8,)),
    "fisk": ((3.5,), (3.5,)), "foldcauchy": ((1.5,), (1.5,)), "foldnorm": ((1.3,), (1.3,)),
    "genexpon": ((1.5, 2.5, 1.2), (1.5, 2.5, 1.2)), "gengamma": ((2.5, 1.5), (2, 1.5)),
    "genhalflogistic": ((0.6,), (0.6,)), "genlogistic": ((1.5,), (1.5,)),
    "genpareto": ((0.3,), (0.3,)), "gibrat": ((), ()), "gompertz": ((0.9,), (0.9,)),
    "halfcauchy": ((), ()), "halflogistic": ((), ()), "halfgennorm": ((1.5,), (2,)),
    "hypsecant": ((), ()), "invgauss": ((0.7,), (0.7,)), "invweibull": ((2.5,), (2.5,)),
    "johnsonsb": ((0.5, 1.5), (0.5, 1.5)), "johnsonsu": ((0.5, 1.5), (0.5, 1.5)),
    "kappa3": ((1.5,), (1.5,)), "laplace_asymmetric": ((1.5,), (1.5,)),
    "levy": ((), ()), "levy_l": ((), ()), "loggamma": ((1.5,), (2,)),
    "loglaplace": ((3.5,), (3.5,)), "loguniform": ((0.5, 3.5), (0.5, 3.5)),
    "reciprocal": ((0.5, 3.5), (0.5, 3.5)), "lomax": ((1.9,), (1.9,)), "maxwell": ((), ()),
    "mielke": ((3.5, 2.5), (3.5, 2.5)), "moyal": ((), ()), "nakagami": ((1.5,), (2,)),
    "norminvgauss": ((1.5, 0.5), (2, 1)), "powerlaw": ((1.7,), (1.7,)),
    "powerlognorm": ((2.1, 0.45), (2.1, 0.45)), "powernorm": ((2.1,), (2.1,)),
    "rdist": ((2.5,), (3,)), "recipinvgauss": ((0.6,), (0.6,)), "rice": ((0.8,), (0.8,)),
    "semicircular": ((), ()), "skewcauchy": ((0.5,), (0.5,)),
    "trapezoid": ((0.2, 0.75), (0.2, 0.75)), "triang": ((0.3,), (0.3,)),
    "truncexpon": ((2.5,), (2.5,)), "truncpareto": ((1.8, 3.5), (1.8, 3.5)),
    "truncweibull_min": ((2.5, 0.25, 1.75), (2.5, 0.25, 1.75)),
    "vonmises_line": ((1.7,), (1.7,)), "wald": ((), ()), "weibull_max": ((1.7,), (1.7,)),
    "wrapcauchy": ((0.5,), (0.5,)), "jf_skew_t": ((2.5, 3.5), (2, 3)),
    # a shape without a derivative anywhere (ncx2's df, geninvgauss' p): an integer throughout
    "ncx2": ((3, 1.5), (3, 1.5)), "geninvgauss": ((2, 1.5), (2, 2)),
    "crystalball": ((2.0, 3.0), (2.0, 3.0)), "pearson3": ((0.8,), (1,)),
}
MORE = {name: shapes for name, shapes in MORE.items() if name in CONTINUOUS}  # this SciPy's
for _name, (_shapes, _integers) in MORE.items():
    POINTS[_name] = (list(getattr(st, _name).ppf([0.15, 0.4, 0.85], *_shapes, loc=0.1,
                                                 scale=1.3)), 0.1, 1.3, _shapes, _integers)
if "crystalball" in POINTS:  # a point in its power-law tail (below loc - beta scale), two in
    POINTS["crystalball"] = ([-3.5, -1.0, 0.8], *POINTS["crystalball"][1:])  # its core

# name -> (k points, differentiable shapes, the same with refused cdf shapes as integers)
DISCRETE_POINTS = {
    "poisson": ([0, 1, 3], (2.3,), (2.3,)),
    "binom": ([0, 2, 5], (7, 0.35), (7, 0.35)),
    "nbinom": ([0, 2, 5], (2.5, 0.4), (3, 0.4)),
    "bernoulli": ([0, 1, 1], (0.3,), (0.3,)),
    "geom": ([1, 2, 4], (0.3,), (0.3,)),
    "betabinom": ([0, 2, 5], (7, 2.5, 3.5), (7, 2.5, 3.5)),
    "betanbinom": ([0, 2, 5], (5, 2.3, 1.6), (5, 2.3, 1.6)),
    "logser": ([1, 2, 4], (0.6,), (0.6,)),
    "planck": ([0, 1, 3], (0.51,), (0.51,)),
    "boltzmann": ([0, 2, 5], (1.4, 19), (1.4, 19)),
    "dlaplace": ([-2, 0, 3], (0.8,), (0.8,)),
    "yulesimon": ([1, 2, 5], (2.5,), (2.5,)),
    "zipf": ([1, 2, 5], (2.6,), (2.6,)),
    "skellam": ([-2, 0, 3], (1.5, 2.5), (1.5, 2.5)),
}
DISCRETE_POINTS = {name: points for name, points in DISCRETE_POINTS.items() if name in DISCRETE}


def _refused_in_cdf(name: str) -> bool:
    """Whether the cdf shape partials of ``name`` are refused (not wired: `PENDING`)."""
    return any(entry[0] == name for entry in PENDING)


def _numerical_in_cdf(name: str) -> bool:
    """Whether they come from the numerical parameter derivatives of gammainc/betainc, whose
    own derivative in the parameter is refused (so not at order 2)."""
    return any(partial is None for partial in CONTINUOUS[name].dcdf)


def _continuous_cases() -> list:
    cases = []
    for name, (xs, loc, scale, shapes, integers) in POINTS.items():
        for method in CONTINUOUS_METHODS:
            f = stand_in(name, method)
            density = method in ("logpdf", "pdf")
            used = shapes if density or not _refused_in_cdf(name) else integers
            x = np.array(QUANTILES if method in ("ppf", "isf") else xs)
            # the accumulation checks (the cotangent kinds, added in place) test scalar_rule's
            # one mechanism: a MORE distribution's broadcast case runs them, its others not
            options = {"check_accumulation": False} if name in MORE else {}
            cases.append(case(f, x, *used, loc, scale, id=f"{name}.{method}", **options))
            if used is not integers and not density and _numerical_in_cdf(name):
                # numerical shape partials are first order in the shape: a case without
                # them for the order-2 sweep (tests/rules/test_order2_registry.py)
                cases.append(case(f, x[:2], *integers, loc, scale, id=f"{name}.{method}-int",
                                  **options))
            if name in MORE and method == "logpdf":
                cases.append(case(f, x.reshape(3, 1), *used, np.array([loc, loc + 0.05]),
                                  scale, id=f"{name}.{method}-broadcast"))
            elif method in ("logpdf", "cdf", "ppf") and name not in MORE:
                # Python numbers, float32 arguments (SciPy computes in float64: the
                # cotangents are projected) and parameters broadcast against x
                cases.append(case(f, float(x[1]), *used, loc, scale,
                                  id=f"{name}.{method}-scalar"))
                cases.append(case(f, x.astype(np.float32), *used, np.float32(loc),
                                  np.float32(scale), id=f"{name}.{method}-float32"))
                cases.append(case(f, x.reshape(3, 1), *used, np.array([loc, loc + 0.05]),
                                  scale, id=f"{name}.{method}-broadcast"))
    return cases


def _discrete_cases() -> list:
    cases = []
    for name, (ks, shapes, integers) in DISCRETE_POINTS.items():
        for method in DISCRETE_METHODS:
            f = stand_in(name, method)
            if method in ("ppf", "isf"):
                cases.append(case(f, np.array(QUANTILES), *shapes, 0, non_differentiable=True,
                                  id=f"{name}.{method}"))
                continue
            used = shapes if method in ("logpmf", "pmf") else integers
            if (name, method) == ("bernoulli", "logsf"):
                ks = [0, 0, 0]  # sf(1) = 0
            cases.append(case(f, np.array(ks), *used, 0, id=f"{name}.{method}"))
            cases.append(case(f, np.array(ks) + 1, *used, 1, id=f"{name}.{method}-loc"))
    return cases


def _outside_support_cases() -> list:
    # x outside the support: the pdf and the cdf are constant there, their partials 0
    return [
        case(stand_in("gamma", "pdf"), np.array([-0.5, 0.7, 3.0]), 2.5, 0.0, 1.0,
             id="gamma.pdf-outside"),
        case(stand_in("pareto", "cdf"), np.array([0.5, 2.0]), 2.5, 0.0, 1.0,
             id="pareto.cdf-outside"),
        case(stand_in("truncnorm", "cdf"), np.array([-2.0, 0.3, 2.0]), -1.0, 1.5, 0.0, 1.0,
             id="truncnorm.cdf-outside"),
        case(stand_in("uniform", "sf"), np.array([-1.0, 0.5, 3.0]), 0.0, 2.0,
             id="uniform.sf-outside"),
        case(stand_in("beta", "pdf"), np.array([-0.2, 0.4, 1.5]), 2.5, 1.7, 0.0, 1.0,
             id="beta.pdf-outside"),
    ]


CASES = _continuous_cases() + _discrete_cases() + _outside_support_cases()


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_stats_rule(rule_case):
    check_case(rule_case)


def test_every_distribution_and_method_has_a_case():
    covered = {c.function for c in CASES}
    for name in CONTINUOUS:
        assert all(stand_in(name, m) in covered for m in CONTINUOUS_METHODS), name
    for name in DISCRETE:
        assert all(stand_in(name, m) in covered for m in DISCRETE_METHODS), name


# --- order 2 ---------------------------------------------------------------------------------

def _second_order_cases() -> list:
    cases = []
    for name, (xs, loc, scale, shapes, integers) in POINTS.items():
        # a MORE distribution's three formulas (density, cdf, quantile); the registry's sweep
        # (tests/rules/test_order2_registry.py) takes every method at order 2
        for method in ("logpdf", "cdf", "ppf") if name in MORE else CONTINUOUS_METHODS:
            density = method in ("logpdf", "pdf")
            used = shapes if density or not _numerical_in_cdf(name) else integers
            x = np.array(QUANTILES[:2] if method in ("ppf", "isf") else xs[:2])
            cases.append(case(stand_in(name, method), x, *used, loc, scale,
                              id=f"{name}.{method}"))
    for name, (ks, shapes, integers) in DISCRETE_POINTS.items():
        for method in ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"):
            used = shapes if method in ("logpmf", "pmf") else integers
            if (name, method) == ("bernoulli", "logsf"):
                ks = [0, 0, 0]  # sf(1) = 0
            cases.append(case(stand_in(name, method), np.array(ks), *used, 0,
                              id=f"{name}.{method}"))
    return cases


@pytest.mark.parametrize("rule_case", _second_order_cases(), ids=lambda c: c.id)
def test_second_order(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args)
    test_frule_order2(rule_case.function, *rule_case.args)


# --- the user's view: plain and frozen calls through grad and hessian ---------------------------

def _fd_gradient(f, v, step=1e-5):
    v = np.asarray(v, float)
    g = np.zeros_like(v)
    for i in range(v.size):
        e = np.zeros_like(v)
        e[i] = step
        g[i] = (f(v + e) - f(v - e)) / (2 * step)
    return g


def _fd_hessian(f, v, step=1e-3):
    v = np.asarray(v, float)
    n = v.size
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            ei, ej = np.zeros(n), np.zeros(n)
            ei[i], ej[j] = step, step
            h[i, j] = (f(v + ei + ej) - f(v + ei - ej) - f(v - ei + ej) + f(v - ei - ej)) \
                / (4 * step * step)
    return h


# (description, function of a parameter vector v in call styles users write, point)
STYLES = [
    ("norm plain positional", lambda v: st.norm.logpdf(v[0], v[1], v[2]), [0.4, -0.2, 1.3]),
    ("norm plain keywords", lambda v: st.norm.logcdf(v[0], loc=v[1], scale=v[2]),
     [0.4, -0.2, 1.3]),
    ("norm frozen", lambda v: st.norm(v[1], v[2]).pdf(v[0]), [0.4, -0.2, 1.3]),
    ("norm frozen sf", lambda v: st.norm(loc=v[1], scale=v[2]).logsf(v[0]), [0.4, -0.2, 1.3]),
    ("t df by keyword", lambda v: st.t.logpdf(v[0], df=v[1], scale=v[2]), [0.4, 3.5, 1.3]),
    ("gamma frozen scale", lambda v: st.gamma(2.5, scale=v[1]).cdf(v[0]), [1.3, 0.7]),
    ("gamma a", lambda v: st.gamma.logpdf(v[0], v[1], loc=0.1, scale=v[2]), [1.3, 2.2, 0.7]),
    ("beta frozen", lambda v: st.beta(v[1], v[2]).logpdf(v[0]), [0.3, 2.5, 1.7]),
    ("pareto cdf", lambda v: st.pareto.cdf(v[0], v[1], scale=v[2]), [2.0, 2.5, 1.2]),
    ("truncnorm cdf", lambda v: st.truncnorm.cdf(v[0], v[1], v[2], loc=0.1), [0.3, -1.0, 1.5]),
    ("truncnorm frozen ppf", lambda v: st.truncnorm(v[1], v[2]).ppf(v[0]), [0.3, -1.0, 1.5]),
    ("expon ppf", lambda v: st.expon.ppf(v[0], scale=v[1]), [0.3, 1.7]),
    ("laplace isf", lambda v: st.laplace(v[1], v[2]).isf(v[0]), [0.3, 0.2, 1.4]),
    ("vonmises logpdf", lambda v: st.vonmises.logpdf(v[0], v[1]), [0.4, 1.7]),
    ("vonmises cdf", lambda v: st.vonmises.cdf(v[0], v[1], loc=0.2), [-2.5, 1.7]),
    ("vonmises frozen ppf", lambda v: st.vonmises(v[1]).ppf(v[0]), [0.3, 0.8]),
    ("vonmises sf periods", lambda v: st.vonmises.sf(v[0], v[1]), [7.5, 3.2]),
    ("gennorm logpdf", lambda v: st.gennorm.logpdf(v[0], v[1]), [0.4, 1.7]),
    ("logistic frozen cdf", lambda v: st.logistic(v[1], v[2]).cdf(v[0]), [0.4, -0.2, 1.3]),
    ("cauchy sf", lambda v: st.cauchy.sf(v[0], v[1], v[2]), [0.4, -0.2, 1.3]),
    ("uniform logpdf", lambda v: st.uniform.logpdf(0.5, v[0], v[1]), [0.1, 2.0]),
    ("chi2 logpdf", lambda v: st.chi2.logpdf(v[0], v[1]), [1.3, 3.5]),
    ("poisson logpmf", lambda v: st.poisson.logpmf(3, v[0]), [2.3]),
    ("poisson frozen cdf", lambda v: st.poisson(v[0]).cdf(3), [2.3]),
    ("binom pmf", lambda v: st.binom.pmf(2, 7, v[0]), [0.35]),
    ("binom frozen logsf", lambda v: st.binom(7, p=v[0]).logsf(2), [0.35]),
    ("nbinom logpmf", lambda v: st.nbinom.logpmf(4, v[0], v[1]), [2.5, 0.4]),
    ("nbinom cdf in p", lambda v: st.nbinom.cdf(4, 3, v[0]), [0.4]),
    ("bernoulli logpmf", lambda v: st.bernoulli.logpmf(1, v[0]), [0.3]),
    ("geom frozen sf", lambda v: st.geom(p=v[0]).sf(3), [0.3]),
]


@pytest.mark.parametrize("style", STYLES, ids=lambda s: s[0])
def test_gradient_and_hessian_in_every_call_style(style):
    _, f, point = style
    point = np.array(point)
    gradient = cr.grad(f)(point)
    assert np.allclose(gradient, _fd_gradient(f, point), rtol=1e-6, atol=1e-8)
    hessian = cr.hessian(f)(point)
    assert np.allclose(hessian, _fd_hessian(f, point), rtol=1e-4, atol=1e-6)


def test_outside_the_support_the_partials_are_zero():
    x = np.array([-0.5, -0.1])
    with np.errstate(all="raise"):   # no log of a negative number reaches the result
        assert np.all(cr.grad(lambda a: st.gamma.pdf(x, a).sum())(2.5) == 0)
        assert cr.grad(lambda b: st.pareto.cdf(0.5, b, scale=1.0))(2.5) == 0
        assert np.all(cr.grad(lambda v: st.truncnorm.cdf(2.0, v[0], v[1]))(
            np.array([-1.0, 1.5])) == 0)


def test_hessian_vector_product_is_forward_over_reverse():
    # H v of a normal log-likelihood in (mu, log sigma), against the closed form
    data = np.array([0.3, -1.2, 2.5, 0.8])

    def nll(theta):
        return -np.sum(st.norm(theta[0], np.exp(theta[1])).logpdf(data))

    theta, v = np.array([0.4, 0.2]), np.array([1.0, -0.5])
    s2 = np.exp(2 * theta[1])
    r = data - theta[0]
    n = data.size
    hessian = np.array([[n / s2, 2 * np.sum(r) / s2],
                        [2 * np.sum(r) / s2, 2 * np.sum(r * r) / s2]])
    assert np.allclose(cr.hvp(nll, theta, v), hessian @ v, rtol=1e-12)
    assert np.allclose(cr.hessian(nll)(theta), hessian, rtol=1e-12)
    _, tangent = cr.jvp(lambda t: st.norm.logcdf(0.7, t, 1.3), (0.2,), (1.0,))
    assert np.isclose(tangent, -np.exp(st.norm.logpdf(0.7, 0.2, 1.3)
                                       - st.norm.logcdf(0.7, 0.2, 1.3)), rtol=1e-12)


def test_logcdf_and_logsf_far_in_the_tails():
    # d log ndtr(x)/dx = pdf/cdf = 2 / (sqrt(2 pi) erfcx(-x / sqrt 2)): no 0/0 at x = -40
    from scipy.special import erfcx

    x = np.array([-40.0, -20.0, -8.0])
    expected = 2 / (np.sqrt(2 * np.pi) * erfcx(-x / np.sqrt(2)))
    assert np.allclose(cr.grad(lambda v: np.sum(st.norm.logcdf(v)))(x), expected, rtol=1e-10)
    # logsf(-v) = log ndtr(v)
    assert np.allclose(cr.grad(lambda v: np.sum(st.norm.logsf(-v)))(x), expected, rtol=1e-10)


def test_frozen_outside_the_function_and_x_by_keyword():
    frozen = st.gamma(2.5, scale=1.5)           # plain parameters, frozen before the trace
    x = 1.3
    expected = (2.5 - 1) / x - 1 / 1.5           # d/dx log pdf
    assert np.isclose(cr.grad(lambda v: frozen.logpdf(v))(x), expected, rtol=1e-12)
    assert np.isclose(cr.grad(lambda v: st.gamma.logpdf(x=v, a=2.5, scale=1.5))(x), expected,
                      rtol=1e-12)


def test_arrays_of_parameters_broadcast():
    x = np.array([[0.3], [1.1]])
    mu, s = np.array([0.1, -0.2, 0.4]), np.array([1.3, 0.8, 2.0])

    def loss(m):
        return np.sum(st.norm(m, s).logpdf(x))

    expected = np.sum((x - mu) / s ** 2, axis=0)
    assert np.allclose(cr.grad(loss)(mu), expected, rtol=1e-12)


def test_float32_parameters_get_float32_gradients():
    g = cr.grad(lambda s: st.gamma.logpdf(np.float32(1.2), 2.5, scale=s))(np.float32(0.8))
    assert g.dtype == np.float32
    # d/ds [(a-1) log(x/s) - x/s - log s] = -a/s + x/s^2
    assert np.isclose(g, -2.5 / 0.8 + 1.2 / 0.8 ** 2, rtol=1e-6)


# --- closed forms and refusals -------------------------------------------------------------------

def test_poisson_cdf_derivative_is_minus_the_pmf():
    k = np.array([0, 2, 5])
    g = cr.grad(lambda mu: np.sum(st.poisson.cdf(k, mu)))(2.3)
    assert np.isclose(g, -np.sum(st.poisson.pmf(k, 2.3)), rtol=1e-12)


def test_ppf_is_the_inverse_of_the_cdf():
    # d ppf/dq = 1/pdf(ppf(q)); d ppf/dscale = ppf(q)/scale for loc = 0
    q, a, s = 0.3, 2.5, 1.7
    y = st.gamma.ppf(q, a, scale=s)
    assert np.isclose(cr.grad(lambda u: st.gamma.ppf(u, a, scale=s))(q),
                      1 / st.gamma.pdf(y, a, scale=s), rtol=1e-10)
    assert np.isclose(cr.grad(lambda u: st.gamma(a, scale=u).ppf(q))(s), y / s, rtol=1e-10)


def test_discrete_quantiles_have_no_tangent():
    rule = cr.rrule(stand_in("poisson", "ppf"), 0.3, 2.3, 0)
    assert all(isinstance(t, cr.NoTangent) for t in rule[1](1.0))


# The cdf shape partials from the numerical parameter derivatives of gammainc and betainc
# (rules/scipy/special/parameters.py): refused by name while those are not installed.
NUMERICAL = [
    ("gamma", "cdf", "a", lambda a: st.gamma.cdf(1.3, a, scale=1.2), 2.5),
    ("gamma", "logsf", "a", lambda a: st.gamma.logsf(1.3, a), 2.5),
    ("gamma", "ppf", "a", lambda a: st.gamma.ppf(0.3, a), 2.5),
    ("chi2", "sf", "df", lambda df: st.chi2(df).sf(2.3), 3.5),
    ("chi2", "isf", "df", lambda df: st.chi2.isf(0.3, df), 3.5),
    ("beta", "cdf", "a", lambda a: st.beta.cdf(0.3, a, 1.7), 2.5),
    ("beta", "ppf", "b", lambda b: st.beta(2.5, b).ppf(0.6), 1.7),
    ("t", "cdf", "df", lambda df: st.t.cdf(0.8, df), 3.5),
    ("t", "logsf", "df", lambda df: st.t.logsf(-1.3, df, scale=2.0), 3.5),
    ("t", "ppf", "df", lambda df: st.t.ppf(0.2, df), 3.5),
    ("gennorm", "cdf", "beta", lambda b: st.gennorm.cdf(0.8, b), 1.5),
    ("gennorm", "logcdf", "beta", lambda b: st.gennorm.logcdf(-1.3, b), 0.7),
    ("gennorm", "isf", "beta", lambda b: st.gennorm.isf(0.3, b), 1.5),
    ("nbinom", "cdf", "n", lambda n: st.nbinom.cdf(4, n, 0.4), 2.5),
    ("nbinom", "logsf", "n", lambda n: st.nbinom.logsf(4, n, 0.4), 2.5),
]


@pytest.mark.parametrize("name, method, parameter, call, point", NUMERICAL,
                         ids=lambda v: v if isinstance(v, str) else "")
def test_shape_derivatives_without_closed_form(name, method, parameter, call, point):
    if (name, method, parameter) in PENDING:
        with pytest.raises(NotImplementedError) as error:
            cr.grad(call)(point)
        message = str(error.value)
        assert f"scipy.stats.{name}.{method}" in message
        assert f"respect to {parameter}" in message
        return
    step = 1e-6
    expected = (call(point + step) - call(point - step)) / (2 * step)
    assert np.isclose(cr.grad(call)(point), expected, rtol=1e-6, atol=1e-9)


def test_pending_is_exactly_the_numerical_shape_partials():
    numerical = {(name, parameter) for name, table in CONTINUOUS.items()
                 for parameter, partial in zip(table.shapes, table.dcdf) if partial is None}
    numerical |= {(name, parameter) for name, table in DISCRETE.items()
                  for parameter, partial, dlog in zip(table.shapes, table.dcdf, table.dlogpmf)
                  if partial is None and dlog is not None}
    assert {(name, parameter) for name, _, parameter in PENDING} <= numerical


def test_refused_parameter_held_constant_is_fine():
    # the same cdf, differentiated in x only: pdf, exactly
    g = cr.grad(lambda x: st.gamma.cdf(x, 2.5, scale=1.5))(1.3)
    assert np.isclose(g, st.gamma.pdf(1.3, 2.5, scale=1.5), rtol=1e-12)


def test_pearson3_near_zero_skew_is_the_edgeworth_slope():
    # d log f/d skew at skew -> 0 is z^3/6 - z/2 (SciPy's own value is the normal's below
    # |skew| 1.6e-5: its differences in skew vanish there; the family's slope does not)
    z = np.array([-1.5, 0.4, 2.0])
    g = cr.grad(lambda s: np.sum(st.pearson3.logpdf(z, s)))(1e-9)
    assert g == pytest.approx(np.sum(z ** 3 / 6 - z / 2), rel=1e-7)
    f = lambda s: np.sum(st.pearson3.logpdf(z, s))  # noqa: E731
    assert cr.grad(f)(0.05) == pytest.approx((f(0.05 + 1e-4) - f(0.05 - 1e-4)) / 2e-4, rel=1e-6)


def test_distribution_without_rules_is_refused_by_name():
    with pytest.raises(NotImplementedError, match="scipy.stats.nct.logpdf"):
        cr.grad(lambda x: st.nct.logpdf(x, 2.5, 1.5))(0.7)


@pytest.mark.parametrize("method", ["logpdf", "cdf"])
def test_a_shape_without_a_density_derivative_is_refused_in_every_method(method):
    # ncx2's degrees of freedom; its noncentrality is differentiable (d/dnc = half the
    # difference with df + 2)
    with pytest.raises(NotImplementedError, match=f"scipy.stats.ncx2.{method}.*respect to df"):
        cr.grad(lambda df: getattr(st.ncx2, method)(1.3, df, 1.5))(3.5)
    f = lambda nc: getattr(st.ncx2, method)(1.3, 3.5, nc)  # noqa: E731
    expected = (f(1.5 + 1e-6) - f(1.5 - 1e-6)) / 2e-6
    assert cr.grad(f)(1.5) == pytest.approx(expected, rel=1e-6)


def test_plain_calls_outside_a_trace_are_untouched():
    from scipy.stats._distn_infrastructure import rv_continuous

    original = rv_continuous.logpdf
    cr.grad(lambda m: st.norm.logpdf(0.3, m))(0.1)
    assert rv_continuous.logpdf is original and "logpdf" not in type(st.norm).__dict__


@pytest.mark.parametrize("call", [
    lambda p: np.sum(st.norm.cdf(np.array([-np.inf, np.inf]), p[0], p[1])),
    lambda p: st.norm.sf(-np.inf, p[0], p[1]) + st.norm.logcdf(np.inf, p[0], p[1]),
    lambda p: st.gamma.cdf(np.inf, p[0], scale=p[1]) + st.gamma.logsf(np.inf, p[0], 0.0, p[1]),
    lambda p: st.norm.pdf(-np.inf, p[0], p[1]),
], ids=["norm cdf at both ends", "norm sf logcdf", "gamma cdf logsf", "norm pdf"])
def test_partials_at_an_infinite_point_are_zero(call):
    # the cdf is 0 or 1 at x = -inf or +inf whatever the parameters (before: the scale's
    # partial -z pdf(z) gave 0 times infinity, NaN)
    gradient = cr.grad(call)(np.array([0.7, 1.3]))
    np.testing.assert_array_equal(gradient, 0.0)


def test_a_constant_infinite_point_next_to_finite_ones():
    # the masked entries do not change the finite ones' partials
    def loss(p):
        return np.sum(st.norm.cdf(np.array([-np.inf, 0.3, np.inf]), p[0], p[1]))

    p, step = np.array([0.7, 1.3]), 1e-6
    expected = [(loss(p + step * e) - loss(p - step * e)) / (2 * step) for e in np.eye(2)]
    np.testing.assert_allclose(cr.grad(loss)(p), expected, rtol=1e-7)


@pytest.mark.parametrize("c", [0.0, 1e-5, -2e-4, 0.4])
def test_genextreme_at_and_near_gumbel(c):
    # c = 0 is the Gumbel distribution, where the closed form of du/dc is 0/0: its series there
    def loss(p):
        return (st.genextreme.logpdf(0.7, p[0], loc=p[1], scale=p[2])
                + st.genextreme.cdf(-0.4, p[0], loc=p[1], scale=p[2]))

    p, step = np.array([c, 0.2, 1.3]), 1e-6
    expected = [(loss(p + step * e) - loss(p - step * e)) / (2 * step) for e in np.eye(3)]
    np.testing.assert_allclose(cr.grad(loss)(p), expected, rtol=1e-6, atol=1e-9)


def _random_shapes(name, rng):
    """Valid shapes near POINTS' (scaled by 0.4 to 2.5, every third with its sign flipped
    where the distribution allows it), or None."""
    distribution = getattr(st, name)
    base = [float(s) for s in POINTS[name][3]]
    for trial in range(30):
        shapes = [s * rng.uniform(0.4, 2.5) * (-1 if trial % 3 == 2 else 1) for s in base]
        if np.all(distribution._argcheck(*shapes)):
            return shapes
    return None


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_table_at_random_parameters(name):
    # the kit checks each distribution at one point; here the table's partials (the density's
    # in z and in each shape, the cdf's in each shape) at two random parameter sets, against
    # central differences of SciPy's own logpdf and cdf at four quantiles
    from chainrules.rules.scipy.stats.univariate import _cdf_shape_partial

    rng = np.random.default_rng(sorted(CONTINUOUS).index(name))
    table, distribution = CONTINUOUS[name], getattr(st, name)
    for _ in range(2):
        shapes = None if name == "erlang" else _random_shapes(name, rng)  # (integer shape)
        if shapes is None:
            shapes = [float(s) for s in POINTS[name][3]]
        z = distribution.ppf(np.array([0.05, 0.3, 0.6, 0.95]), *shapes)
        step = 1e-6 * max(1.0, np.max(np.abs(z)))
        expected = (distribution.logpdf(z + step, *shapes)
                    - distribution.logpdf(z - step, *shapes)) / (2 * step)
        np.testing.assert_allclose(table.dlogf_dz(z, *shapes), expected, rtol=1e-4, atol=1e-5)
        for i, shape in enumerate(table.shapes if name != "erlang" else ()):  # (gamma's)
            step = 1e-6 * max(1.0, abs(shapes[i]))
            up, down = list(shapes), list(shapes)
            up[i] += step
            down[i] -= step
            if table.dlogf[i] is not None:
                expected = (distribution.logpdf(z, *up) - distribution.logpdf(z, *down)) / (
                    2 * step)
                np.testing.assert_allclose(table.dlogf[i](z, *shapes) + 0 * z, expected,
                                           rtol=1e-4, atol=1e-5, err_msg=f"{name} in {shape}")
            partial = table.dcdf[i] or _cdf_shape_partial(name, shape)
            if partial is not None:
                expected = (distribution.cdf(z, *up) - distribution.cdf(z, *down)) / (2 * step)
                np.testing.assert_allclose(partial(z, *shapes) + 0 * z, expected, rtol=1e-4,
                                           atol=1e-6, err_msg=f"{name}'s cdf in {shape}")
