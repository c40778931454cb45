"""Every rule is reachable by a public key, for engines other than chainrules'
(docs/engine-authors.md): Python's operators, scipy.stats methods (plain and frozen) and bound
methods in general; keyword arguments moved to their positions by `positional_call` or refused
by name; refused derivatives recognisable without computing them. Checked against closed
forms."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules import NoTangent, NotImplementedCotangent, Tangent, unthunk
from chainrules import KeywordArgumentError, positional_call

CASES: list = []  # the rules themselves are checked in their own modules

X = np.array([0.3, -1.2, 2.0])
Y = np.array([1.5, 0.5, -0.25])


@pytest.mark.parametrize("public, function", [
    (operator.add, np.add), (operator.sub, np.subtract), (operator.mul, np.multiply),
    (operator.truediv, np.true_divide), (operator.pow, np.power)])
def test_binary_operators_have_their_ufuncs_rules(public, function):
    x, y = np.abs(X) + 0.5, Y
    value, pullback = cr.rrule(public, x, y)
    assert np.array_equal(value, function(x, y))
    dy = np.array([1.0, 2.0, 3.0])
    _, dx, dyy = map(unthunk, pullback(dy))
    h = 1e-6
    for k in range(3):
        e = np.eye(3)[k] * h
        assert np.isclose(dx[k], np.sum(dy * (public(x + e, y) - public(x - e, y))) / (2 * h))
        assert np.isclose(dyy[k], np.sum(dy * (public(x, y + e) - public(x, y - e))) / (2 * h))
    _, tangent = cr.frule((NoTangent(), np.ones(3), np.zeros(3)), public, x, y)
    assert np.allclose(tangent, dx / dy)


def test_unary_operators_and_matmul():
    assert np.array_equal(unthunk(cr.rrule(operator.neg, X)[1](Y)[1]), -Y)
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    _, da, db = map(unthunk, cr.rrule(operator.matmul, a, X[:2])[1](np.ones(2)))
    assert np.allclose(da, np.outer(np.ones(2), X[:2])) and np.allclose(db, a.T @ np.ones(2))
    assert cr.rrule(operator.lt, X, Y)[1](np.ones(3))[1:] == (NoTangent(), NoTangent())


def test_scipy_stats_methods_are_keys_plain_and_frozen():
    st = pytest.importorskip("scipy.stats")
    m, s = 1.0, 2.0
    value, pullback = cr.rrule(st.norm.logpdf, X, m, s)
    assert np.allclose(value, st.norm.logpdf(X, m, s))
    _, dx, dm, ds = map(unthunk, pullback(np.ones(3)))
    z = (X - m) / s
    assert np.allclose(dx, -z / s) and np.isclose(dm, np.sum(z / s))
    assert np.isclose(ds, np.sum(-1 / s + z ** 2 / s))
    frozen = st.norm(m, scale=s)
    _, pullback = cr.rrule(frozen.logpdf, X)
    own, dx2 = pullback(np.ones(3))
    assert np.allclose(unthunk(dx2), dx)
    assert isinstance(own, Tangent) and np.isclose(own.args[0], dm)
    assert np.isclose(own.kwds["scale"], ds)
    _, tangent = cr.frule((Tangent(type(frozen), args=(1.0,)), np.zeros(3)), frozen.logpdf, X)
    assert np.allclose(tangent, z / s)
    discrete = cr.rrule(st.poisson.logpmf, np.array([0, 2, 5]), 1.5)[1](np.ones(3))
    assert np.isclose(unthunk(discrete[2]), np.sum(np.array([0, 2, 5]) / 1.5 - 1))


def test_positional_call_moves_keywords_that_carry_derivatives():
    f, args, kwargs = positional_call(np.average, (X,), {"weights": Y, "axis": 0})
    assert f is np.average and args[2] is Y and "weights" not in kwargs
    f, args, kwargs = positional_call(np.sum, (X,), {"axis": 0})   # nothing to move
    assert args == (X,) and kwargs == {"axis": 0}
    def scaled(x, *, scale):
        return x * scale

    with pytest.raises(KeywordArgumentError, match=r"scaled: the keyword argument scale= "):
        positional_call(scaled, (X,), {"scale": 2.0})
    assert positional_call(scaled, (X,), {"scale": 2})[2] == {"scale": 2}  # an int: constant
    cotangents = cr.rrule(f := np.average, *positional_call(f, (X,), {"weights": Y})[1])[1](1.0)
    assert np.allclose(unthunk(cotangents[3]), (X - np.average(X, weights=Y)) / np.sum(Y))


def test_refused_derivatives_are_recognisable_without_computing_them():
    special = pytest.importorskip("scipy.special")
    _, pullback = cr.rrule(special.jv, 1.0, 1.5)
    _, dv, dx = pullback(1.0)
    assert isinstance(dv, NotImplementedCotangent) and "order v" in dv.message
    assert np.isclose(unthunk(dx), (special.jv(0, 1.5) - special.jv(2, 1.5)) / 2)
    with pytest.raises(NotImplementedError, match="order v"):
        unthunk(dv)


def test_multivariate_distributions_are_keys():
    st = pytest.importorskip("scipy.stats")
    x, mean = np.array([0.5, -0.2]), np.array([0.1, 0.0])
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    value, pullback = cr.rrule(st.multivariate_normal.logpdf, x, mean, cov)
    assert np.isclose(value, st.multivariate_normal.logpdf(x, mean, cov))
    _, dx, dmean, _ = pullback(1.0)
    assert np.allclose(unthunk(dx), -np.linalg.solve(cov, x - mean))
    assert np.allclose(unthunk(dmean), np.linalg.solve(cov, x - mean))
    special = pytest.importorskip("scipy.special")
    alpha, p = np.array([2.0, 3.0]), np.array([0.3, 0.7])
    _, _, dalpha = cr.rrule(st.dirichlet.logpdf, p, alpha)[1](1.0)
    expected = np.log(p) - special.digamma(alpha) + special.digamma(np.sum(alpha))
    assert np.allclose(unthunk(dalpha), expected)


def test_rules_refuse_keywords_that_carry_derivatives_by_name():
    with pytest.raises(KeywordArgumentError, match=r"rrule\(numpy.average, ...\): the keyword "
                                                   r"argument weights= carries a derivative"):
        cr.rrule(np.average, X, weights=Y)
    with pytest.raises(KeywordArgumentError, match="frule.with_constants"):
        cr.frule((NoTangent(), np.ones(3)), np.clip, X, a_min=0.0, a_max=1.0)
    y, _ = cr.rrule.with_constants(np.clip, X, a_min=0.0, a_max=1.0)   # held constant
    assert np.array_equal(y, np.clip(X, 0.0, 1.0))
    assert cr.rrule(np.sum, X, axis=0)[0] == np.sum(X)                # integers pass
