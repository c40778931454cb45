"""RuleConfig.frule_via_ad derives a pushforward from reverse mode when there is no frule."""

from __future__ import annotations

import numpy as np

from chainrules import NoTangent, RuleConfig, rrule
from chainrules.core.config import frule_via_ad
from chainrules.core.registry import recorded_whole


@recorded_whole


def _square_plus_conj(z):
    """Not holomorphic: z**2 + 3 conj(z)."""
    return z ** 2 + 3 * np.conj(z)


@rrule.register(_square_plus_conj)
def _square_plus_conj_rule(z):
    def pullback(dy):
        # J^H dy for f(z) = z^2 + 3 conj(z): conj(2z) dy + 3 conj(dy)
        return NoTangent(), np.conj(2 * z) * dy + 3 * np.conj(dy)

    return _square_plus_conj(z), pullback


def test_pushforward_from_pullbacks_matches_the_directional_derivative():
    z = np.array([0.5 + 1.0j, -2.0 + 0.25j])
    dz = np.array([0.3 - 0.7j, 1.1 + 0.2j])
    y, dy = frule_via_ad(RuleConfig(), (NoTangent(), dz), _square_plus_conj, z)
    step = 1e-7
    expected = (_square_plus_conj(z + step * dz) - _square_plus_conj(z - step * dz)) / (2 * step)
    np.testing.assert_allclose(y, _square_plus_conj(z))
    np.testing.assert_allclose(dy, expected, rtol=1e-7)
    assert dy.dtype == np.complex128
