"""scipy.stats' distances between samples (src/chainrules/rules/scipy/stats/distances.py):
wasserstein_distance and energy_distance in the values and the weights of either sample,
against central finite differences and SciPy's values, and the p-distance itself against
SciPy's private function it replaces."""

from __future__ import annotations

import numpy as np
import pytest

stats = pytest.importorskip("scipy.stats")

import chainrules as cr  # noqa: E402
from chainrules.rules.scipy.stats.distances import cdf_distance  # noqa: E402
from tests.ad.finite_differences import numerical_gradient  # noqa: E402

CASES: list = []  # no rule of its own: a NumPy version the engine traces

RNG = np.random.default_rng(0)
U, V = RNG.normal(size=12), RNG.normal(size=9) + 0.5
U_WEIGHTS = RNG.uniform(0.5, 2.0, 12)
LOSSES = {
    # before: "a traced value was converted to a plain NumPy array" at SciPy's
    # `v_values[v_sorter].searchsorted(...)`, v a plain array
    "wasserstein, values": (lambda u: stats.wasserstein_distance(u, V), U),
    "wasserstein, both samples": (lambda u: stats.wasserstein_distance(u, u[:7] ** 2), U),
    "wasserstein, weights": (lambda w: stats.wasserstein_distance(U, V, w), U_WEIGHTS),
    "wasserstein, both weights": (lambda u: stats.wasserstein_distance(U, V, U_WEIGHTS,
                                                                       np.exp(u[:9])), U),
    "energy, values": (lambda u: stats.energy_distance(u, V), U),
    "energy, weights": (lambda w: stats.energy_distance(U, V, w), U_WEIGHTS),
}


@pytest.mark.parametrize("name", LOSSES)
def test_distances_in_values_and_weights(name):
    loss, x = LOSSES[name]
    value, gradient = cr.value_and_grad(loss)(x)
    assert value == pytest.approx(loss(x), rel=1e-13)
    np.testing.assert_allclose(gradient, numerical_gradient(loss, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("p", [1, 2, 3.5])
def test_the_p_distance_is_scipys(p):
    from scipy.stats._stats_py import _cdf_distance

    assert float(cdf_distance(p, U, V, U_WEIGHTS)) == pytest.approx(
        _cdf_distance(p, U, V, U_WEIGHTS), rel=1e-13)
    with pytest.raises(ValueError, match="non-negative"):
        cdf_distance(p, U, V, -U_WEIGHTS)
