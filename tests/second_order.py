"""Second-derivative checks shared by the rule tests of issue 13: forward over reverse (a jvp of
``cr.grad f``) against central differences of the first-order gradient, which the rule kit
checks against finite differences of ``f`` itself."""

from __future__ import annotations

import numpy as np

import chainrules as cr


def direction(x, seed: int = 0):
    """A random direction in ``x``'s space (complex for complex ``x``)."""
    rng = np.random.default_rng(seed)
    d = rng.standard_normal(np.shape(x))
    if np.iscomplexobj(x):
        d = d + 1j * rng.standard_normal(np.shape(x))
    return d.astype(np.result_type(x)) if isinstance(x, np.ndarray) else d


def assert_jvp_of_grad(f, x, step: float = 1e-5, rtol: float = 1e-5, atol: float = 1e-7,
                       seed: int = 0):
    """``jvp(grad f)(x; v)`` (forward over reverse) equals the central difference of
    ``grad f`` along ``v``; and ``grad`` of ``<w, grad f>`` (reverse over reverse) agrees."""
    v, w = direction(x, seed), direction(x, seed + 1)
    first = cr.grad(f)
    _, hv = cr.jvp(first, (x,), (v,))
    expected = (np.asarray(first(x + step * v)) - np.asarray(first(x - step * v))) / (2 * step)
    np.testing.assert_allclose(hv, expected, rtol=rtol, atol=atol)
    reverse = cr.grad(lambda y: np.sum(np.real(np.conj(w) * first(y))))(x)
    np.testing.assert_allclose(np.real(np.vdot(reverse, v)), np.real(np.vdot(w, expected)),
                               rtol=rtol, atol=atol)
