"""A pullback that outlives its call never reads arrays changed under it (issue: never silent
at the edges, family 2): `vjp` checksums the arrays of its arguments and of the function's
closure, and the pullback refuses to run if one changed."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.autograd import make_vjp


def test_a_changed_argument_is_refused_by_name():
    x = np.array([0.5, 1.0])
    _, pullback = cr.vjp(np.sin, x)
    np.testing.assert_allclose(pullback(np.ones(2))[0], np.cos([0.5, 1.0]))
    x[:] = 0
    with pytest.raises(ValueError, match=r"vjp: argument 0 of numpy.sin changed after vjp "
                                         r"returned.*x.copy\(\)"):
        pullback(np.ones(2))


def test_a_changed_array_inside_a_structure_names_its_path():
    params = {"w": np.array([1.0, 2.0]), "b": 0.5}
    _, pullback = cr.vjp(lambda p: np.sum(np.exp(p["w"])) * p["b"], params)
    params["w"][1] = 5.0
    with pytest.raises(ValueError, match=r"argument 0\['w'\]"):
        pullback(1.0)


def test_a_changed_array_of_the_closure_is_refused():
    weights = np.array([1.0, 2.0])

    def f(x):
        return np.sum(np.sin(x * weights))

    _, pullback = cr.vjp(f, np.array([0.3, 0.4]))
    weights *= 2
    with pytest.raises(ValueError, match="the function's closure"):
        pullback(1.0)


def test_a_copy_changed_instead_leaves_the_pullback_right():
    x = np.array([0.5, 1.0])
    _, pullback = cr.vjp(np.sin, x)
    step = x.copy()
    step[:] = 0
    np.testing.assert_allclose(pullback(np.ones(2))[0], np.cos([0.5, 1.0]), rtol=1e-15)


def test_writes_by_the_function_itself_are_its_forward_pass():
    def f(x):
        x[0] = x[1] * 3
        return np.sum(x ** 2)

    x = np.array([1.0, 2.0])
    _, pullback = cr.vjp(f, x)
    np.testing.assert_allclose(x, [6.0, 2.0])  # the caller sees the write, as in NumPy
    np.testing.assert_allclose(pullback(1.0)[0], [0.0, 2 * 2.0 + 2 * 6.0 * 3])


def test_autograd_make_vjp_is_checked_too():
    x = np.array([0.5, 1.0])
    vjp, _ = make_vjp(np.sin)(x)
    x[0] = 2.0
    with pytest.raises(ValueError, match="changed after vjp returned"):
        vjp(np.ones(2))
