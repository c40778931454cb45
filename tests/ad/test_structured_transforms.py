"""jacobian, vjp and value_and_grad take structured inputs and outputs, as grad does.

The Jacobian of a structured function has the output's structure, and at each output leaf the
input's structure (a tuple of them for a tuple ``argnums``), holding blocks of shape
``y_leaf.shape + x_leaf.shape``, as in JAX. Checked against closed forms and finite differences.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np
import pytest

import chainrules as cr

from .finite_differences import numerical_gradient


def numerical_jacobian(f, x):
    """Rows: the gradient of each output element (central differences)."""
    y = np.asarray(f(x))
    rows = [numerical_gradient(lambda v, k=k: np.asarray(f(v)).reshape(-1)[k], x)
            for k in range(y.size)]
    return np.stack(rows).reshape(y.shape + np.shape(x))


def test_a_dict_output_gives_a_dict_of_jacobians():
    x = np.array([0.3, -1.1])
    J = cr.jacobian(lambda a: {"s": np.sin(a), "p": a[0] * a[1]})(x)
    assert set(J) == {"s", "p"}
    np.testing.assert_allclose(J["s"], np.diag(np.cos(x)), rtol=1e-12)
    np.testing.assert_allclose(J["p"], [x[1], x[0]], rtol=1e-12)


def test_a_dict_input_gives_blocks_per_input_leaf():
    params = {"a": np.array([1.0, 2.0]), "b": np.array([0.5, -0.5, 3.0])}

    def f(p):
        return np.concatenate([p["a"] ** 2, np.exp(p["b"])])

    J = cr.jacobian(f)(params)
    assert isinstance(J, dict) and J["a"].shape == (5, 2) and J["b"].shape == (5, 3)
    np.testing.assert_allclose(J["a"], numerical_jacobian(lambda a: f({**params, "a": a}),
                                                          params["a"]), rtol=1e-7)
    np.testing.assert_allclose(J["b"], numerical_jacobian(lambda b: f({**params, "b": b}),
                                                          params["b"]), rtol=1e-7)


def test_structured_outputs_and_inputs_together_with_tuple_argnums():
    Pair = namedtuple("Pair", "first second")
    x, y = np.array([1.0, 2.0]), 3.0

    def f(x, y):
        return Pair(x * y, [np.sum(x) ** 2])

    J = cr.jacobian(f, argnums=(0, 1))(x, y)
    assert isinstance(J, Pair) and isinstance(J.second, list)
    np.testing.assert_allclose(J.first[0], y * np.eye(2))
    np.testing.assert_allclose(J.first[1], x)
    np.testing.assert_allclose(J.second[0][0], 2 * np.sum(x) * np.ones(2))
    assert J.second[0][1] == 0.0 and isinstance(J.second[0][1], float)


def test_a_dataclass_input_and_an_integer_field():
    @dataclass
    class Model:
        w: np.ndarray
        n: int

    J = cr.jacobian(lambda m: m.w * m.n)(Model(np.array([1.0, 2.0]), 3))
    np.testing.assert_allclose(J.w, 3 * np.eye(2))
    assert J.n is cr.NoTangent()


def test_plain_arrays_are_unchanged():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(cr.jacobian(lambda x: x ** 2)(x), np.diag(2 * x))
    Jx, Jy = cr.jacobian(lambda x, y: x * y, argnums=(0, 1))(x, 2.0)
    np.testing.assert_allclose(Jx, 2 * np.eye(2))
    np.testing.assert_allclose(Jy, x)
    z = np.array([1.0 + 2.0j])
    np.testing.assert_allclose(cr.jacobian(lambda z: np.abs(z) ** 2)(z), [[2 * z[0]]])


def test_vjp_and_value_and_grad_of_structures():
    params = {"w": np.array([1.0, -2.0]), "b": 0.5}

    def f(p):
        return {"y": p["w"] * p["b"], "z": [np.sum(p["w"] ** 2)]}

    y, pullback = cr.vjp(f, params)
    np.testing.assert_allclose(y["y"], [0.5, -1.0])
    (g,) = pullback({"y": np.ones(2), "z": [1.0]})
    np.testing.assert_allclose(g["w"], 0.5 + 2 * params["w"])
    assert g["b"] == pytest.approx(np.sum(params["w"]))
    value, g = cr.value_and_grad(lambda p: np.sum(f(p)["y"]) + f(p)["z"][0])(params)
    assert value == pytest.approx(-0.5 + 5.0)
    np.testing.assert_allclose(g["w"], 0.5 + 2 * params["w"])
    with pytest.raises(TypeError, match="real scalar"):
        cr.value_and_grad(f)(params)


class _Report(dict):
    """A result object as SciPy's RootResults: a dict whose __init__ takes its fields, so the
    engine cannot rebuild it by calling its type on a dict."""

    def __init__(self, value, count):
        super().__init__(value=value, count=count)


@cr.primitive
def _solve_and_report(t):
    return 2.0 * t, _Report(t ** 3, 7)


@cr.rrule.register(_solve_and_report)
def _solve_and_report_rrule(t):
    def pullback(dy):
        dy = cr.unthunk(dy)
        first = cr.unthunk(dy[0])
        report = cr.unthunk(dy[1])
        value = 0.0 if isinstance(report, (cr.ZeroTangent, cr.NoTangent)) else cr.unthunk(report["value"])
        first = 0.0 if isinstance(first, (cr.ZeroTangent, cr.NoTangent)) else first
        return cr.NoTangent(), 2.0 * first + 3 * t ** 2 * value
    return _solve_and_report(t), pullback


@cr.frule.register(_solve_and_report)
def _solve_and_report_frule(tangents, t):
    y = _solve_and_report(t)
    dt = tangents[1]
    return y, cr.Tangent(tuple, {0: 2.0 * dt, 1: cr.Tangent(_Report, {"value": 3 * t ** 2 * dt})})


def test_a_result_object_inside_a_tuple_output_is_traced_in_every_mode():
    # (x, RootResults) from brentq(..., full_output=True): the object's float fields carry
    # derivatives, its other fields stay plain; before, reverse mode refused the output and
    # forward mode could not rebuild the object
    def f(t):
        x, report = _solve_and_report(t)
        assert report["count"] == 7
        return x + report["value"]

    t = 1.5
    expected = 2.0 + 3 * t ** 2
    assert cr.grad(f)(t) == pytest.approx(expected)
    assert cr.jvp(f, (t,), (1.0,))[1] == pytest.approx(expected)
    assert cr.hvp(f, t, 1.0) == pytest.approx(6 * t)
    np.testing.assert_allclose(cr.jacfwd(lambda v: f(v[0]) * v)(np.array([t])),
                               [[f(t) + t * expected]])


def test_a_list_inside_a_tuple_output_is_traced_in_every_mode():
    # np.histogramdd returns (H, [edges, ...]): the edges in the list move with the data's
    # extrema. Before, forward mode (jvp, hvp, jacfwd) left the list's tangents out: zeros
    # where the derivative is not, without a word.
    x = np.array([0.3, 1.7, 0.9, 2.4, 1.1, 0.2])  # minimum at 5, maximum at 3
    y = np.array([1.3, 0.15, 2.2, 0.7, 1.9, 0.45])
    t = np.arange(4) / 3  # the edges: (1 - t) min + t max
    expected = np.zeros((4, 6))
    expected[:, 5], expected[:, 3] = 1 - t, t

    def edges(x):
        return np.histogramdd(np.stack([x, y], axis=1), 3)[1][0]

    for jacobian in (cr.jacfwd(edges), cr.jacobian(edges)):
        np.testing.assert_allclose(jacobian(x), expected, atol=1e-15)
    v = np.arange(6.0)
    np.testing.assert_allclose(cr.jvp(edges, (x,), (v,))[1], expected @ v)
    w = np.arange(4.0)
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(w * edges(x)))(x), w @ expected)
    np.testing.assert_allclose(cr.hvp(lambda x: np.sum(edges(x) ** 2), x, v),
                               2 * expected.T @ expected @ v)
