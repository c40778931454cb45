"""The hand-written gradients and Hessian-vector products that benchmarks/higher_order.py
times as the arithmetic floor of hvp: each against central differences of the workload
itself (the gradient) and of the hand-written gradient (the hvp)."""

import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import hand_written  # noqa: E402
import higher_order  # noqa: E402


@pytest.mark.parametrize("name", sorted(hand_written.HAND_WRITTEN))
def test_hand_written_gradient_and_hvp_against_finite_differences(name):
    size = higher_order.SIZES[name][1]
    (x,), constants = higher_order.inputs(name, size)
    f = getattr(higher_order, name)
    gradient, product = hand_written.HAND_WRITTEN[name]
    v = np.random.default_rng(1).normal(size=x.shape)
    step = 1e-6

    def along(g, direction):
        return (g(x + step * direction) - g(x - step * direction)) / (2 * step)

    basis = np.eye(x.size)
    numeric = np.array([along(lambda z: f(np, z, **constants), e) for e in basis])
    np.testing.assert_allclose(gradient(x, **constants), numeric, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(product(x, v, **constants),
                               along(lambda z: gradient(z, **constants), v),
                               rtol=1e-6, atol=1e-6)
