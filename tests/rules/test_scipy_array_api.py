"""SciPy's vendored array-API layer (``scipy._lib.array_api_compat.numpy``): its ``clip`` and
``linalg.solve``, which SciPy's functions call and an engine cannot trace as written, run as
their versions in NumPy operations (src/chainrules/rules/scipy/array_api.py). Gradients
through the SciPy functions that call them, against finite differences; the versions' values
against the layer's own.

Skipped when SciPy is not installed.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

stats = pytest.importorskip("scipy.stats")

import chainrules as cr  # noqa: E402
from chainrules.ad import TracingError  # noqa: E402
from chainrules.rules.scipy.array_api import (apply_where, clip, lazyselect,  # noqa: E402
                                             lazywhere, solve)

CASES: list = []  # versions an engine traces, not rules

# SciPy before its array-API pearsonr (1.11) computes in ``dtype = type(1.0 + x[0] + y[0])``,
# which for traced data is chainrules' Traced class: as a dtype, Python objects. That cast is
# refused by name (before: a silently zero gradient).
OLD_PEARSONR = "dtype = type(1.0" in inspect.getsource(stats.pearsonr)

_rng = np.random.default_rng(20261206)


def _central(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


@pytest.mark.parametrize("part", ["statistic", "pvalue"])
def test_pearsonr(part):
    # before: "`out[()] = x` writes a traced value into a plain NumPy array" (the layer's clip)
    x, y = _rng.normal(size=12), _rng.normal(size=12)

    def loss(v):
        return getattr(stats.pearsonr(v, y), part)

    if OLD_PEARSONR:
        with pytest.raises(TracingError, match=r"astype\(type\(t\)\).*Write t.dtype"):
            cr.grad(loss)(x)
        return
    assert cr.vjp(loss, x)[0] == pytest.approx(loss(x), rel=1e-13)
    np.testing.assert_allclose(cr.grad(loss)(x), _central(loss, x), rtol=1e-6, atol=1e-9)


def test_pearsonr_closed_form():
    # r = x.y / (|x| |y|) for centred data: dr/dx = y/(|x||y|) - r x/|x|^2
    x = np.array([1.0, -2.0, 0.5, 0.5])
    y = np.array([0.3, 0.1, -1.0, 0.6])
    if OLD_PEARSONR:
        pytest.skip("SciPy's pearsonr casts to type(1.0 + x[0]): refused (test_pearsonr)")
    r = x @ y / np.linalg.norm(x) / np.linalg.norm(y)
    expected = y / np.linalg.norm(x) / np.linalg.norm(y) - r * x / (x @ x)
    got = cr.grad(lambda v: stats.pearsonr(v, y)[0])(x)
    np.testing.assert_allclose(got, expected - expected.mean(), rtol=1e-12, atol=1e-14)


def test_clip_is_the_array_api_clip():
    compat = pytest.importorskip("scipy._lib.array_api_compat.numpy")
    x = np.array([-2.0, 0.25, 3.0], dtype=np.float32)
    for low, high in ((-1.0, 1.0), (None, 0.5), (np.array([[0.0], [1.0]]), None),
                      (np.nan, None), (None, None)):
        try:
            theirs = compat.clip(x, low, high)
        except ValueError:  # no bound: SciPy 1.14's layer hands it to NumPy 2.0, which refuses
            continue
        ours = clip(x, low, high)
        assert ours.dtype == np.float32  # x's dtype, as the array API says (SciPy 1.14's
        np.testing.assert_array_equal(ours, theirs)  # layer promoted to an array bound's)
    # a 0-d input gives a 0-d array, which SciPy may write into (it writes into the layer's
    # result where it is writeable)
    assert np.shape(clip(np.float64(2.0), -1.0, 1.0)) == ()
    with pytest.raises(NotImplementedError, match="out="):
        clip(x, 0.0, 1.0, out=np.empty(3))


def test_solve_takes_a_stack_of_matrices_unless_one_dimensional():
    linalg = pytest.importorskip("scipy._lib.array_api_compat.numpy.linalg")
    a = _rng.normal(size=(3, 4, 4)) + 4 * np.eye(4)
    for b in (_rng.normal(size=4), _rng.normal(size=(4, 2)), _rng.normal(size=(3, 4)),
              _rng.normal(size=(3, 4, 2))):
        if np.ndim(b) == 2 and b.shape[0] == 3:  # (3, 4): a stack of one (3, 4) matrix?
            with pytest.raises(Exception):  # noqa: B017 - NumPy's and the layer's errors
                linalg.solve(a, b)
            continue
        np.testing.assert_allclose(solve(a, b), linalg.solve(a, b), rtol=1e-12)
    # through the engine, in both arguments, against finite differences
    b = _rng.normal(size=(4, 2))

    def loss(flat):
        return np.sum(solve(flat[:48].reshape(3, 4, 4), flat[48:].reshape(4, 2)) ** 2)

    flat = np.concatenate([a.ravel(), b.ravel()])
    np.testing.assert_allclose(cr.grad(loss)(flat), _central(loss, flat), rtol=1e-5, atol=1e-8)


def test_where_helpers_match_scipys_and_differentiate():
    # SciPy's helpers evaluate each function on its own elements and write the results into
    # an array they make (before: "np.place(a, ...) writes a traced value into the plain
    # NumPy array"); the versions join the pieces by a gather
    import scipy._lib._util as util

    x = np.array([[-1.0, 0.5], [3.0, 0.0]])
    y = np.array([2.0, 0.25])

    def where(v):
        return apply_where(v > 0, np.sqrt, lambda t: -t, None, v)

    def select(v):
        return lazyselect([v < 0, v > 1], [np.negative, np.sqrt], (v, y), np.nan)

    np.testing.assert_array_equal(where(x), [[1.0, np.sqrt(0.5)], [np.sqrt(3.0), -0.0]])
    np.testing.assert_array_equal(select(x), util._lazyselect([x < 0, x > 1],
                                                              [np.negative, np.sqrt], (x, y),
                                                              np.nan))
    if hasattr(util, "_lazywhere"):
        np.testing.assert_array_equal(lazywhere(x > 0, (x, y), np.multiply, np.nan),
                                      util._lazywhere(x > 0, (x, y), np.multiply, np.nan))
    # the gradient of each piece lands on its own elements
    np.testing.assert_allclose(cr.grad(lambda v: np.sum(where(v)))(x),
                               [[-1.0, 0.5 / np.sqrt(0.5)], [0.5 / np.sqrt(3.0), -1.0]])
    np.testing.assert_allclose(cr.grad(lambda v: np.nansum(select(v)))(x),
                               [[-1.0, 0.0], [0.5 / np.sqrt(3.0), 0.0]])
    np.testing.assert_allclose(
        cr.grad(lambda v: np.sum(lazywhere(v > 0, (v,), np.square, 7.0)))(x),
        [[0.0, 1.0], [6.0, 0.0]])


def test_lazyselect_with_a_number_for_its_elements():
    # a choice that returns a number (trapezoid's moments: lambda d: 1.0 where d == 0, of no
    # element here) fills its elements as np.place repeats it; before, its one element
    # shifted every later piece
    d = np.array([0.8, 0.5, 1.0])

    def select(v):
        return lazyselect([v == 0.0, (0.0 < v) & (v < 1.0), v == 1.0],
                          [lambda t: 1.0, lambda t: t ** 2 + t + 1, lambda t: 3], (v,))

    np.testing.assert_array_equal(select(d), [0.8 ** 2 + 1.8, 0.5 ** 2 + 1.5, 3.0])
    np.testing.assert_allclose(cr.grad(lambda v: np.sum(select(v)))(d), [2.6, 2.0, 0.0])
