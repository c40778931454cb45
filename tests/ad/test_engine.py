"""The reverse-mode engine on ordinary NumPy code: values checked against closed forms and
central finite differences, never against the engine itself."""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections import namedtuple

import numpy as np
import pytest

import chainrules as cr
from chainrules import NoTangent, Tangent

from .finite_differences import numerical_gradient


def test_issue_example_scalar_loop():
    def loss(x):
        return sum(x[i] ** 2 for i in range(len(x)))

    np.testing.assert_array_equal(cr.grad(loss)(np.arange(3.0)), [0.0, 2.0, 4.0])


def test_complex_convention_abs2():
    assert cr.grad(lambda z: np.abs(z) ** 2)(3 + 4j) == 6 + 8j
    assert cr.grad(lambda z: (z * np.conj(z)).real)(np.complex128(3 + 4j)) == 6 + 8j


@pytest.mark.parametrize("function", [
    lambda x: np.sum(np.sin(x) * x),
    lambda x: np.sum(np.exp(x) / (1 + x ** 2)),
    lambda x: np.sum(np.tanh(x @ x.T)),
    lambda x: np.mean(x.reshape(-1) ** 3) + x[0, 1] * x[1, 0],
    lambda x: np.sum(np.stack([x[0], x[1] * 2.0])) + np.sum(np.concatenate([x, x], axis=1)),
    lambda x: max(x[0, 0], x[1, 1]) + abs(x[0, 1]) + np.sum(x.T[1]),
    lambda x: sum(row @ row for row in x),
    lambda x: np.sum(np.array([x[0, 0], x[1, 1] ** 2, 3.0])),
    lambda x: np.sum(np.maximum(x, 0.5) - np.minimum(x, 0.1)),
    lambda x: np.sum(np.where(x > 0.5, x ** 2, -x)),
])
def test_gradients_match_finite_differences(function):
    x = np.random.default_rng(0).uniform(0.1, 0.9, (2, 3))
    np.testing.assert_allclose(cr.grad(function)(x), numerical_gradient(function, x),
                               rtol=1e-6, atol=1e-8)


def test_control_flow_follows_the_primal():
    def f(x):
        total = 0.0
        for value in x:
            total = total + (value ** 2 if value > 0 else -value)
        return total

    x = np.array([1.0, -2.0, 3.0])
    np.testing.assert_array_equal(cr.grad(f)(x), [2.0, -1.0, 6.0])


def test_repeated_and_fancy_indexing():
    x = np.arange(5.0)
    np.testing.assert_array_equal(cr.grad(lambda x: np.sum(x[[0, 0, 3]] * 2))(x),
                                  [4.0, 0, 0, 2.0, 0])
    np.testing.assert_array_equal(cr.grad(lambda x: np.sum(x[x > 2.5] ** 2))(x),
                                  [0, 0, 0, 6.0, 8.0])


def test_python_float_and_argnums():
    f = lambda a, b: a * b ** 2 + np.sin(a)  # noqa: E731
    da, db = cr.grad(f, argnums=(0, 1))(2.0, 3.0)
    assert type(da) is float and type(db) is float
    assert da == pytest.approx(9 + np.cos(2.0)) and db == pytest.approx(12.0)


def test_value_and_grad_and_has_aux():
    value, gradient = cr.value_and_grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
    assert value == 5.0
    np.testing.assert_array_equal(gradient, [2.0, 4.0])
    gradient, aux = cr.grad(lambda x: (np.sum(x ** 2), {"norm": np.sqrt(np.sum(x ** 2))}),
                            has_aux=True)(np.array([3.0, 4.0]))
    np.testing.assert_array_equal(gradient, [6.0, 8.0])
    assert aux["norm"] == 5.0 and not isinstance(aux["norm"], cr.ad.Traced)


def test_vjp_and_jacobian():
    x = np.array([1.0, 2.0, 3.0])
    y, pullback = cr.vjp(lambda x: np.sin(x) * x[0], x)
    (dx,) = pullback(np.array([1.0, 0.0, 2.0]))
    jac = np.diag(np.cos(x) * x[0])
    jac[:, 0] += np.sin(x)
    np.testing.assert_allclose(dx, np.array([1.0, 0.0, 2.0]) @ jac)
    np.testing.assert_allclose(cr.jacobian(lambda x: np.sin(x) * x[0])(x), jac)


# --- projected gradients: float32, complex intermediates, integers ---------------------------

def test_float32_inputs_get_float32_gradients():
    x = np.linspace(0.1, 1.0, 4, dtype=np.float32)
    g = cr.grad(lambda x: np.sum(np.sin(x) * np.float64(2.0)) + sum(x[i] ** 2 for i in range(4)))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * np.cos(x.astype(float)) + 2 * x, rtol=1e-6)


def test_real_input_through_complex_intermediate_gives_real_gradient():
    def f(x):
        z = np.exp(1j * x) * (1 + 2j)
        return np.sum(np.real(z) * x)

    x = np.array([0.3, 1.2])
    g = cr.grad(f)(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, numerical_gradient(f, x), rtol=1e-6)


def test_integer_inputs_are_refused_at_the_top_level_unless_allowed():
    # A gradient-descent loop on an integer array would silently do nothing: refuse it.
    for f, args in [(lambda n, x: x * n, (3, 2.0)),
                    (lambda x: np.sum(x * 2.0), (np.arange(3),)),
                    (lambda x: np.sum(x * 2.0), (np.array([True, False]),)),
                    (lambda x: x * 2.0, (np.int32(4),)),
                    (lambda x: x * 2.0, (True,))]:
        with pytest.raises(TypeError, match=r"argument 0 is an? (integer|boolean).*floats"
                                            r".*allow_int=True"):
            cr.grad(f)(*args)
        with pytest.raises(TypeError, match="allow_int"):
            cr.value_and_grad(f)(*args)
        assert cr.grad(f, allow_int=True)(*args) is NoTangent()
    with pytest.raises(TypeError, match="argument 1 is an integer"):
        cr.grad(lambda x, n: x * n, argnums=(0, 1))(2.0, 3)
    # Integer fields inside structures keep NoTangent().
    g = cr.grad(lambda d: d["w"] * d["n"])({"w": 2.0, "n": 3})
    assert g == {"w": 3.0, "n": NoTangent()}


def test_complex_input_gradient_against_finite_differences():
    def f(z):
        return np.sum(np.abs(z * z + 1j) ** 2)

    z = np.array([0.5 + 0.2j, -0.3 + 1.0j])
    np.testing.assert_allclose(cr.grad(f)(z), numerical_gradient(f, z), rtol=1e-6)


# --- structures --------------------------------------------------------------------------------

@dataclasses.dataclass
class Linear:
    w: np.ndarray
    b: np.ndarray
    name: str = "layer"
    scale: int = 2


def _model_loss(model: Linear, x: np.ndarray) -> float:
    return np.sum(np.tanh(x @ model.w + model.b) ** 2) * model.scale


def test_gradient_with_respect_to_a_dataclass():
    rng = np.random.default_rng(1)
    model = Linear(rng.normal(size=(3, 2)), rng.normal(size=2))
    x = rng.normal(size=(4, 3))
    g = cr.grad(_model_loss)(model, x)
    assert isinstance(g, Tangent) and g.primal_type is Linear
    assert g.name is NoTangent() and g.scale is NoTangent()
    np.testing.assert_allclose(
        g.w, numerical_gradient(lambda w: _model_loss(Linear(w, model.b), x), model.w), rtol=1e-6)
    np.testing.assert_allclose(
        g.b, numerical_gradient(lambda b: _model_loss(Linear(model.w, b), x), model.b), rtol=1e-6)


def test_gradient_with_respect_to_dict_list_tuple_namedtuple():
    Pair = namedtuple("Pair", "a b")
    params = {"a": np.array([1.0, 2.0]), "rest": [np.array(3.0), (0.5, "tag")],
              "p": Pair(np.array([0.2]), 4)}

    def loss(p):
        return (np.sum(p["a"] ** 2) * p["rest"][0] + p["rest"][1][0] ** 3
                + np.sum(np.exp(p["p"].a)) * p["p"].b)

    g = cr.grad(loss)(params)
    assert isinstance(g, dict) and type(g["rest"]) is list and type(g["rest"][1]) is tuple
    assert type(g["p"]) is Pair and g["p"].b is NoTangent() and g["rest"][1][1] is NoTangent()
    np.testing.assert_allclose(g["a"], 2 * params["a"] * 3.0)
    np.testing.assert_allclose(g["rest"][0], np.sum(params["a"] ** 2))
    assert g["rest"][1][0] == pytest.approx(3 * 0.5 ** 2)
    np.testing.assert_allclose(g["p"].a, np.exp(0.2) * 4)


def test_gradient_with_respect_to_a_closure_and_a_bound_method():
    w = np.array([0.5, -1.0, 2.0])

    def predict(x):
        return np.sum(np.sin(w * x))

    g = cr.grad(lambda f: f(1.5))(predict)
    assert isinstance(g, Tangent)
    np.testing.assert_allclose(g.w, numerical_gradient(lambda w_: np.sum(np.sin(w_ * 1.5)), w),
                               rtol=1e-6)

    class Model:
        def __init__(self):
            self.w = np.array([1.0, 2.0])

        def __call__(self, x):
            return np.sum(self.w ** 2) * x

    model = Model()
    g = cr.grad(lambda m: m(3.0))(model)
    np.testing.assert_allclose(g.w, 6.0 * model.w)
    g = cr.grad(lambda method: method(3.0))(model.__call__)
    np.testing.assert_allclose(g.__self__.w, 6.0 * model.w)


def test_closure_captured_array_through_vectorize():
    x = np.linspace(0.1, 1.0, 7)

    def loss(x):
        return np.sum(np.vectorize(lambda i: x[i] ** 2 + np.sin(x[i]))(np.arange(len(x))))

    np.testing.assert_allclose(cr.grad(loss)(x), 2 * x + np.cos(x), rtol=1e-12)


def test_vectorize_made_before_the_trace_and_over_traced_arguments():
    square_sin = np.vectorize(lambda a, b: a * np.sin(b))
    x = np.array([0.3, 0.7])
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(square_sin(x, 2.0)))(x),
                               np.full(2, np.sin(2.0)))
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(square_sin(1.5, x)))(x),
                               1.5 * np.cos(x))


def test_apply_along_axis_and_piecewise():
    X = np.random.default_rng(2).uniform(0.5, 1.5, (3, 4))
    c = np.array([1.0, -2.0, 0.5])

    def loss(X):
        rows = np.apply_along_axis(lambda r: np.sum(np.sin(r) * c[0]), 1, X)
        cols = np.apply_along_axis(lambda col: col * c, 0, X)
        return np.sum(rows) + np.sum(cols ** 2)

    np.testing.assert_allclose(cr.grad(loss)(X), numerical_gradient(loss, X), rtol=1e-6)

    def piecewise_loss(x):
        y = np.piecewise(x, [x < 0.5, x >= 0.5], [lambda v: v ** 2 * c[0], lambda v: np.exp(v)])
        return np.sum(y)

    x = np.array([0.1, 0.4, 0.6, 2.0])
    np.testing.assert_allclose(cr.grad(piecewise_loss)(x), [0.2, 0.8, np.exp(0.6), np.exp(2.0)])


def test_closure_tangent_flows_back_through_higher_order_functions():
    w = np.array([2.0, 3.0])

    def outer(w):
        scale = lambda v: v * w[0] + w[1]  # noqa: E731
        return np.sum(np.apply_along_axis(scale, 0, np.ones((2, 2))))

    np.testing.assert_allclose(cr.grad(outer)(w), [4.0, 4.0])


def test_functools_reduce_map_and_builtins():
    x = np.array([1.0, 2.0, 3.0])
    f = lambda x: functools.reduce(operator.mul, map(lambda v: v + 1.0, x))  # noqa: E731
    np.testing.assert_allclose(cr.grad(f)(x), numerical_gradient(f, x), rtol=1e-6)
    g = lambda x: max(x[0], x[2]) - min(x[1], x[0]) + abs(x[1] - 5.0)  # noqa: E731
    np.testing.assert_array_equal(cr.grad(g)(x), [-1.0, -1.0, 1.0])


def test_nested_traces_do_not_confuse_each_other():
    def inner(a, b):
        return cr.grad(lambda y: np.sin(y) * b)(a)

    # The inner gradient treats b (an outer traced value) as a constant of its own trace.
    np.testing.assert_allclose(cr.grad(lambda b: inner(0.3, b))(2.0), np.cos(0.3))


def test_escaped_tracer_is_a_clear_error():
    leaked = []
    cr.grad(lambda x: leaked.append(x) or np.sum(x))(np.ones(2))
    with pytest.raises(cr.TracingError, match="already returned"):
        np.sin(leaked[0])


def test_pullbacks_can_be_called_again():
    def main():
        x = np.arange(3.0)
        y, pullback = cr.EngineConfig().rrule_via_ad(lambda i: x[i] ** 2, 1)
        first, second = pullback(1.0), pullback(2.0)
        np.testing.assert_array_equal(cr.unthunk(first[0].x), [0.0, 2.0, 0.0])
        np.testing.assert_array_equal(cr.unthunk(second[0].x), [0.0, 4.0, 0.0])

    main()
    y, pullback = cr.vjp(lambda x: x * 3.0, np.ones(2))
    np.testing.assert_array_equal(pullback(np.ones(2))[0], [3.0, 3.0])
    np.testing.assert_array_equal(pullback(np.ones(2))[0], [3.0, 3.0])


def test_plain_tuple_cotangent_for_a_namedtuple_output():
    Pair = namedtuple("Pair", "a b")
    y, pullback = cr.vjp(lambda x: Pair(x * 2.0, x ** 2), np.array([1.0, 3.0]))
    np.testing.assert_array_equal(pullback((np.ones(2), np.zeros(2)))[0], [2.0, 2.0])
    np.testing.assert_array_equal(pullback(Pair(np.zeros(2), np.ones(2)))[0], [2.0, 6.0])


def test_scipy_functions_written_in_python_reach_their_rules():
    special = pytest.importorskip("scipy.special")
    linalg = pytest.importorskip("scipy.linalg")
    A = np.array([[0.3, 0.2, 0.0], [0.1, 0.5, 0.2], [0.0, 0.4, 0.2]])

    def loss(A):
        x = linalg.solve_triangular(A + np.eye(3), np.ones(3), lower=False)
        return (special.logsumexp(A) + np.sum(special.softmax(A, axis=0) * A)
                + np.sum(linalg.expm(A)) + np.sum(x ** 2) + np.sum(special.erf(A)))

    np.testing.assert_allclose(cr.grad(loss)(A), numerical_gradient(loss, A), rtol=1e-6)
    assert special.logsumexp.__module__.startswith("scipy")  # restored after the trace


def test_engine_skips_declared_functions_and_uses_a_rule_registered_later():
    @cr.primitive
    def rounded(x):
        return np.round(x)

    cr.non_differentiable(rounded)
    x = np.array([0.4, 1.6])
    assert cr.grad(lambda x: np.sum(rounded(x) * x))(x).tolist() == [0.0, 2.0]  # d/dx of r*x

    @cr.rrule.register(rounded, replace=True)
    def straight_through(x):
        return rounded(x), lambda dy: (cr.NoTangent(), dy)

    np.testing.assert_array_equal(cr.grad(lambda x: np.sum(rounded(x) * x))(x),
                                  np.round(x) + x)  # now r' = 1: r + x


def test_defined_pullbacks_compute_every_cotangent_for_the_engine(monkeypatch):
    # A `define`d rule's pullback thunks each of several cotangents for other callers; the
    # engine, which reads them all when no argument is constant, asks for them computed.
    # (np.inner's: A @ b and np.dot(A, b) are recorded by matmul's ProductForm, without one.)
    from chainrules.core.registry import EVERY_COTANGENT_PULLBACKS
    from chainrules.core.thunks import Thunk

    A, b = np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([0.5, -2.0])
    _, pullback = cr.rrule(np.inner, A, b)
    assert type(pullback) in EVERY_COTANGENT_PULLBACKS
    lazy, computed = pullback(np.ones(2)), pullback(np.ones(2), True)
    assert all(type(c) is Thunk for c in lazy[1:])
    assert [type(c) for c in computed[1:]] == [np.ndarray, np.ndarray]
    assert np.array_equal(computed[1], np.outer(np.ones(2), b))
    assert np.array_equal(computed[2], A.T @ np.ones(2))
    asked = []
    kind = type(pullback)
    original = kind.__call__
    monkeypatch.setattr(kind, "__call__", lambda self, dy, every=False: (
        self.rule.f is np.inner and asked.append(every)) or original(self, dy, every))
    w = np.array([1.0, -1.0])
    gA, gb = cr.grad(lambda A, b: np.sum(w * np.inner(A, b) ** 2), argnums=(0, 1))(A, b)
    y = A @ b
    assert np.allclose(gA, np.outer(2 * w * y, b)) and np.allclose(gb, A.T @ (2 * w * y))
    assert asked == [True]
    asked.clear()
    assert np.allclose(cr.grad(lambda b: np.sum(np.inner(A, b)))(b), A.T @ np.ones(2))
    assert asked == [False]  # A a constant: its cotangent is not asked for, so not computed
