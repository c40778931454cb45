"""Helper of the rule tests for issue 13's statistics, signal and polynomial rules: the
directional derivative of a gradient by forward over reverse (``cr.jvp`` of ``cr.grad``)
against central finite differences of the gradient."""

from __future__ import annotations

import numpy as np

import chainrules as cr


def assert_jvp_of_grad(f, x, seed=0, eps=1e-6, rtol=1e-5, atol=1e-7):
    """``jvp(grad f, x, v)`` equals ``(grad f(x + eps v) - grad f(x - eps v)) / (2 eps)``."""
    rng = np.random.default_rng(seed)
    x = np.asarray(x, dtype=float)
    v = rng.standard_normal(x.shape)
    gradient = cr.grad(f)
    _, got = cr.jvp(gradient, (x,), (v,))
    expected = (gradient(x + eps * v) - gradient(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    assert np.any(np.asarray(expected) != 0) or np.all(np.asarray(got) == 0)
