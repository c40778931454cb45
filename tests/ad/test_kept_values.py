"""What a tape keeps: each record only what its derivatives read, dropped once its pullback ran.

Counted, not timed: tracemalloc's peak of one gradient call (NumPy reports its buffers to
tracemalloc), in units of the array's size, and weak references to saved arrays.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
import weakref

import numpy as np
import pytest

import chainrules as cr
from chainrules.core.scalar_rule import reads

N = 1_000_000  # 7.6 MiB of float64
X = np.linspace(-1.0, 1.0, N)


def _peak_in_arrays(function, x=X) -> float:
    gradient = cr.grad(function)
    gradient(x)  # a first call: caches, imports
    tracemalloc.start()
    try:
        result = gradient(x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.shape == x.shape
    return peak / x.nbytes


def _chain(step, k):
    def f(y):
        for _ in range(k):
            y = step(y)
        return np.sum(y)
    return f


@pytest.mark.parametrize("step", [lambda y: y + 1.0, lambda y: y * 1.0001,
                                  lambda y: 1.0001 * y - 0.5, lambda y: -y],
                         ids=["add a constant", "times a constant", "affine", "negate"])
def test_a_chain_whose_derivatives_read_nothing_peaks_at_a_few_arrays(step):
    short, long = _peak_in_arrays(_chain(step, 5)), _peak_in_arrays(_chain(step, 40))
    # O(n), not O(k n): forty operations peak where five do (each record kept the input
    # before: 40 arrays), and at a few arrays of the input's size
    assert long <= short + 0.5 and long < 4.5, (short, long)


def test_exp_keeps_its_output_and_sin_its_input_and_nothing_else():
    assert sorted(reads(lambda y, x: y, 1)) == [0]  # exp: the output
    from chainrules.rules.numpy import elementwise  # noqa: F401 - the rules' table
    exp_chain, sin_chain = _peak_in_arrays(_chain(lambda y: np.exp(-y), 20)), \
        _peak_in_arrays(_chain(np.sin, 20))
    # each of the 20 records keeps one array (exp: its output; sin: its input), not two
    assert 19 < exp_chain < 24 and 19 < sin_chain < 24, (exp_chain, sin_chain)


def test_a_product_with_a_constant_keeps_only_the_constant():
    c = np.full(N, 1.0001)
    peak = _peak_in_arrays(_chain(lambda y: y * c, 30))
    assert peak < 4.5, peak  # x * c keeps c (the caller's), never x
    product = cr.grad(lambda x, y: np.sum(x * y), argnums=(0, 1))(X[:5], X[5:10])
    np.testing.assert_array_equal(product[0], X[5:10])  # both traced: each keeps the other
    np.testing.assert_array_equal(product[1], X[:5])


class _Saved:
    """A rule's saved array, whose lifetime a weak reference watches."""


def _watched_primitive(log: list):
    """``scale(x)`` = 2 x, whose pullback keeps a large saved array and, when it runs, records
    which saved arrays of pullbacks that ran before it are still alive."""
    @cr.primitive
    def scale(x):
        return 2.0 * x

    saved_refs: list = []

    @cr.rrule.register(scale)
    def _scale_rule(x):
        saved = (x[:1] * 0.0 + 1.0).repeat(N)  # what a derivative would read
        saved_refs.append(weakref.ref(saved))
        position = len(saved_refs) - 1

        def pullback(dy):
            log.append([ref() is not None for ref in saved_refs[position + 1:]])
            return cr.NoTangent(), 2.0 * dy * saved[0]

        return 2.0 * x, pullback

    return scale


@pytest.mark.parametrize("transform", ["grad", "hvp"])
def test_the_tape_drops_a_records_values_once_its_pullback_has_run(transform):
    log: list = []
    scale = _watched_primitive(log)

    def f(x):
        return np.sum(scale(scale(scale(x))) ** 2)

    x = np.ones(4)
    gc.collect()
    if transform == "grad":
        result = cr.grad(f)(x)
        np.testing.assert_allclose(result, 128 * x)  # f = 64 sum(x^2)
    else:
        result = cr.hvp(f, x, np.ones(4))
        np.testing.assert_allclose(result, 128 * np.ones(4))
    ran = [entry for entry in log if entry is not None]
    assert ran, "the pullbacks ran"
    # when a pullback runs, the saved arrays of the pullbacks that ran before it are gone
    assert all(not any(alive) for alive in ran), log


def test_linear_algebra_rules_keep_no_inverse():
    # the Cholesky pullback's peak: a few n x n arrays, no inverse and three products' worth
    pytest.importorskip("scipy")
    import scipy.linalg as sla

    n = 300
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n))
    spd = a @ a.T / n + np.eye(n)

    def f(spd):
        L = sla.cholesky(spd, lower=True)
        return np.sum(np.log(np.diag(L))) + np.sum(L[:, 0] ** 2)

    peak = _peak_in_arrays(f, spd)
    assert peak < 8, peak
    # and the gradient is right: SciPy reads the lower triangle, so perturb an entry there
    step = 1e-6
    e = np.zeros((n, n))
    e[3, 1] = step
    numeric = (f(spd + e) - f(spd - e)) / (2 * step)
    np.testing.assert_allclose(cr.grad(f)(spd)[3, 1], numeric, rtol=1e-6)
