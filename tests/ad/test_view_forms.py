"""View forms (`chainrules.core.registry.ViewForm`): ``x.T``, ``np.transpose(x)``,
``x.reshape(...)``, ``np.reshape(x, ...)``, ``x.ravel()`` and ``np.ravel(x)`` of a small
float64 or float32 array recorded as the argument's shape, whose cotangent the backward pass
computes as a view of ``dy`` (`_record_view` in ad/trace/tape.py, `_pull_view` in
ad/transforms/reverse.py): in a loop, ``np.sum(u.reshape(4, 4))`` 19 -> 12 us per step.

Gradients against central differences and closed forms; what the path leaves to the rule
(axes, order F, large arrays, complex and integer arrays); cotangents that are lazy, sparse or
summed from several uses; writes seen through a followed view; second derivatives and the
checking mode."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.ad.trace import tape as tape_module
from chainrules.core.scalar_rule import STAND_IN_SIZE

from .finite_differences import numerical_gradient

RNG = np.random.default_rng(21)
X = RNG.normal(size=(3, 4))
WEIGHTS = RNG.normal(size=12)


def _records(f, *args):
    """(function, whether recorded by a form) for each record of tracing ``f(*args)``."""
    made = []
    original = tape_module.Tape.__init__

    def remember(self, *a, **k):
        original(self, *a, **k)
        made.append(self)

    tape_module.Tape.__init__ = remember
    try:
        cr.vjp(f, *args)
    finally:
        tape_module.Tape.__init__ = original
    return [(record[1], type(record[0]) is tuple) for record in made[-1].records
            if record[0] is not None]


def _by_view_form(f, x) -> list:
    return [by for function, by in _records(f, x)
            if function in (np.transpose, np.reshape, np.ravel)]


VIEWS = {  # name: the view of a (3, 4) array, as 12 numbers in some order
    "x.T": lambda x: x.T,
    "np.transpose": lambda x: np.transpose(x),
    "x.transpose()": lambda x: x.transpose(),
    "x.reshape(4, 3)": lambda x: x.reshape(4, 3),
    "x.reshape((2, -1))": lambda x: x.reshape((2, -1)),
    "np.reshape": lambda x: np.reshape(x, (6, 2)),
    "x.ravel()": lambda x: x.ravel(),
    "np.ravel": lambda x: np.ravel(x),
    "a view of a view": lambda x: x.T.reshape(2, 6).T,
}


@pytest.mark.parametrize("name", list(VIEWS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_views_against_closed_forms(name, dtype):
    view = VIEWS[name]
    x = X.astype(dtype)

    def f(x):  # sum(w * view(x)) + sum(view(x) ** 2): d/dx = view^-1(w) + 2 x
        v = view(x)
        return np.sum(WEIGHTS.astype(dtype).reshape(v.shape) * v) + np.sum(v ** 2)

    gradient = cr.grad(f)(x)
    assert gradient.dtype == dtype and gradient.shape == x.shape
    expected = np.zeros(12)
    positions = view(np.arange(12.0).reshape(3, 4)).ravel().astype(int)
    expected[positions] = WEIGHTS
    expected = expected.reshape(3, 4) + 2 * X
    np.testing.assert_allclose(gradient, expected, rtol=1e-12 if dtype == np.float64 else 1e-5)
    assert all(_by_view_form(f, x))


@pytest.mark.parametrize("case", ["axes", "order F", "large", "complex", "integers"])
def test_what_the_view_form_leaves_to_the_rule(case):
    x = {"large": RNG.normal(size=(2, STAND_IN_SIZE // 2)), "complex": X + 0.5j,
         "integers": np.arange(12).reshape(3, 4)}.get(case, X)
    if case == "integers":  # an integer array is a constant: its view too, no record
        assert cr.grad(lambda s: np.sum(x.T * s))(2.0) == np.sum(x)
        return
    view = {"axes": lambda x: np.transpose(x, (1, 0)),
            "order F": lambda x: x.reshape(-1, order="F")}.get(case, lambda x: x.T)

    def f(x):
        return np.real(np.sum(np.sin(view(x)) * (1 - 1j)))

    np.testing.assert_allclose(cr.grad(f)(x), numerical_gradient(f, x) if case != "complex"
                               else np.cos(np.conj(x)) * (1 + 1j), rtol=1e-6, atol=1e-8)
    assert _by_view_form(f, x) == [False]


def test_lazy_sparse_and_several_cotangents():
    # the view read by an index (a sparse cotangent, made dense), by a sum (lazy), by two
    # products (their cotangents added into the view's buffer), and x used directly too
    def f(x):
        v = x.T
        return v[1, 2] * 3.0 + np.sum(v) + np.sum(v * v) + np.sum(np.tanh(v)) + x[0, 0]

    expected = 1.0 + 2 * X + (1 - np.tanh(X) ** 2)
    expected[2, 1] += 3.0
    expected[0, 0] += 1.0
    np.testing.assert_allclose(cr.grad(f)(X), expected, rtol=1e-12)
    with cr.checking():
        np.testing.assert_allclose(cr.grad(f)(X), expected, rtol=1e-12)


def test_the_input_and_its_buffers_are_not_written():
    x = X.copy()

    def f(x):
        v = x.reshape(12)
        return np.sum(v * WEIGHTS) + np.sum(x * x) + np.sum(x.T[0])

    gradient = cr.grad(f)(x)
    expected = WEIGHTS.reshape(3, 4) + 2 * X
    expected[:, 0] += 1.0
    np.testing.assert_allclose(gradient, expected, rtol=1e-12)
    assert np.array_equal(x, X)


def test_a_loop_of_views_against_central_differences():
    def f(x):
        total = 0.0
        for k in range(x.shape[1]):
            column = x[:, k]
            total = total + np.sum(np.sin(column.reshape(-1, 1) * column) @ x.T[k])
        return total

    np.testing.assert_allclose(cr.grad(f)(X), numerical_gradient(f, X), rtol=1e-6,
                               atol=1e-8)


def test_a_write_is_seen_through_a_view_made_before_it():
    def f(x):
        out = np.zeros((2, 4))
        out[0] = x[0]
        view = out.T  # followed: the write below shows through it, as in NumPy
        out[1] = 2 * x[1]
        return np.sum(view * WEIGHTS[:8].reshape(4, 2))

    expected = np.zeros_like(X)
    expected[0] = WEIGHTS[:8].reshape(4, 2)[:, 0]
    expected[1] = 2 * WEIGHTS[:8].reshape(4, 2)[:, 1]
    np.testing.assert_allclose(cr.grad(f)(X), expected, rtol=1e-12)


@pytest.mark.parametrize("order", ["hvp", "grad of grad", "jvp"])
def test_second_derivatives_and_forward_mode_through_views(order):
    def f(x):
        return np.sum(np.sin(x.T.reshape(2, 6)) * WEIGHTS.reshape(2, 6)) + np.sum(x.ravel() ** 3)

    v = RNG.normal(size=X.shape)
    w = WEIGHTS.reshape(2, 6)
    hessian_v = -np.sin(X) * w.reshape(4, 3).T * v + 6 * X * v  # diagonal Hessian
    if order == "hvp":
        np.testing.assert_allclose(cr.hvp(f, X, v), hessian_v, rtol=1e-10)
    elif order == "grad of grad":
        np.testing.assert_allclose(cr.grad(lambda x: np.sum(cr.grad(f)(x) * v))(X),
                                   hessian_v, rtol=1e-10)
    else:
        gradient = np.cos(X) * w.reshape(4, 3).T + 3 * X ** 2
        np.testing.assert_allclose(cr.jvp(f, (X,), (v,))[1], np.sum(gradient * v),
                                   rtol=1e-10)


def _hvp_recording_views(f, x, v) -> tuple:
    """``hvp(f, x, v)``, and how many views `ForwardTrace.record_view` recorded."""
    from chainrules.ad.transforms.forward import ForwardTrace

    original = ForwardTrace.record_view
    made = [0]

    def counting(self, *args):
        recorded = original(self, *args)
        made[0] += recorded is not None
        return recorded

    ForwardTrace.record_view = counting
    try:
        return cr.hvp(f, x, v), made[0]
    finally:
        ForwardTrace.record_view = original


@pytest.mark.parametrize("name", list(VIEWS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_views_under_hvp_against_closed_forms(name, dtype):
    # sum(w * sin(view(x))) + sum(view(x) ** 3): a diagonal Hessian,
    # -sin(x) * view^-1(w) + 6 x; under hvp each view is recorded by its form (record_view),
    # its cotangent and the cotangent's tangent moved back by the form's own formula
    view = VIEWS[name]
    x, v = X.astype(dtype), RNG.normal(size=X.shape).astype(dtype)

    def f(x):
        u = view(x)
        return np.sum(WEIGHTS.astype(dtype).reshape(u.shape) * np.sin(u)) + np.sum(u ** 3)

    got, recorded = _hvp_recording_views(f, x, v)
    assert got.dtype == dtype and got.shape == x.shape
    weights = np.zeros(12)
    weights[view(np.arange(12.0).reshape(3, 4)).ravel().astype(int)] = WEIGHTS
    expected = (-np.sin(X) * weights.reshape(3, 4) + 6 * X) * v
    np.testing.assert_allclose(got, expected, rtol=1e-11 if dtype == np.float64 else 2e-4,
                               atol=0 if dtype == np.float64 else 1e-5)
    assert recorded == {"a view of a view": 3}.get(name, 1)


def test_views_under_hvp_as_the_general_path_gives_them():
    from chainrules.core.registry import VIEW_FORMS

    def f(x):  # a view used twice: its cotangents summed, one of them with a tangent
        u = x.T.reshape(2, 6)
        return np.sum(np.tanh(u) * u) + np.sum(u[0] * u[1])

    v = RNG.normal(size=X.shape)
    got, recorded = _hvp_recording_views(f, X, v)
    saved = dict(VIEW_FORMS)
    VIEW_FORMS.clear()
    try:
        general, none = _hvp_recording_views(f, X, v)
    finally:
        VIEW_FORMS.update(saved)
    np.testing.assert_allclose(got, general, rtol=1e-13)
    assert recorded == 2 and none == 0
