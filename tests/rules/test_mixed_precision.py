"""Every elementwise rule of two arguments (`scalar_rule`'s, NumPy's and SciPy's): a float32
argument meeting a float64 one is cast to float64 by the function, so the derivatives are
those of the same values given as float64, to rounding (they were computed in float32 once:
29 derivatives of 20 functions, ``divide``, ``power``, ``arctan2``, ``xlogy``, the Bessel
and incomplete gamma functions, ``boxcox``..., were good to 1e-8 - 3e-6 only)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import chainrules as cr
from chainrules.core.thunks import unthunk

pytest.importorskip("scipy")
import scipy.special  # noqa: E402,F401  (registers SciPy's rules)
import scipy.stats  # noqa: E402,F401


def _binary_elementwise() -> list:
    found = []
    for function in cr.frule.functions():
        rule = cr.frule.lookup(function)
        partials = getattr(rule[0] if rule else None, "partials", None)
        if partials is not None and len(partials) == 2:
            found.append(function)
    return sorted(found, key=lambda f: (getattr(f, "__module__", None) or "",
                                        getattr(f, "__name__", repr(f))))


FUNCTIONS = _binary_elementwise()
CASES: list = []  # no kit cases here (test_coverage.py reads every module's): the rules' own
# modules run each of these functions through the kit


def test_the_family_is_found():
    names = {getattr(f, "__name__", "") for f in FUNCTIONS}
    assert {"divide", "power", "arctan2", "xlogy", "jv", "gammainc", "boxcox"} <= names


@pytest.mark.parametrize("which", [0, 1], ids=["first", "second"])
@pytest.mark.parametrize("function", FUNCTIONS,
                         ids=lambda f: f"{getattr(f, '__module__', '')}.{f.__name__}")
def test_a_float32_argument_is_seen_as_the_function_cast_it(function, which):
    rng = np.random.default_rng(0)
    point = [rng.uniform(0.3, 0.9, 5), rng.uniform(0.3, 0.9, 5)]
    point[1 - which] = point[1 - which].astype(np.float32)  # the other argument: float32
    cast = list(point)
    cast[1 - which] = point[1 - which].astype(np.float64)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # a function's own warnings at these points
        try:
            y, pullback = cr.rrule(function, *point)
            y64, pullback64 = cr.rrule(function, *cast)
            cotangent = unthunk(pullback(np.ones_like(y))[1 + which])
            expected = unthunk(pullback64(np.ones_like(y64))[1 + which])
        except NotImplementedError:
            pytest.skip("a derivative the rule refuses, loudly (tested with the rule)")
        except (TypeError, ValueError):
            pytest.skip("an argument that must be an integer (ldexp, multigammaln)")
    assert np.array_equal(y, y64, equal_nan=True)
    if isinstance(expected, cr.NoTangent):
        assert isinstance(cotangent, cr.NoTangent)
        return
    assert np.asarray(cotangent).dtype == np.float64
    np.testing.assert_allclose(cotangent, expected, rtol=1e-13, atol=0)


def test_second_derivatives_see_the_cast_too():
    """At order 2 the rule meets traced values: a float32 one is cast by a recorded ``astype``
    (it was not: the derivatives of the float64 argument's gradient were good to 3e-8)."""
    a, b = 2.0625, 0.3  # a is exact in float32

    def f(v):
        return v[0].astype(np.float32) ** v[1]

    exact = [a ** (b - 1) * (1 + b * np.log(a)), a ** b * np.log(a) ** 2]
    point = np.array([a, b])
    # (what passes through v[0]'s cotangent is float32: the program cast it)
    hessian = cr.hessian(f)(point)
    np.testing.assert_allclose(hessian[1, 1], exact[1], rtol=1e-14)
    np.testing.assert_allclose(hessian[1, 0], exact[0], rtol=1e-6)
    second = cr.grad(lambda v: cr.grad(f)(v)[1])(point)
    np.testing.assert_allclose(second[1], exact[1], rtol=1e-14)
    np.testing.assert_allclose(second[0], exact[0], rtol=1e-6)
    along_b = cr.jvp(cr.grad(f), (point,), (np.array([0.0, 1.0]),))[1]
    np.testing.assert_allclose(along_b[1], exact[1], rtol=1e-14)
