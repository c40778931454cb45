"""Tangents and cotangents a user gives are checked against their primal (family 4 of "never
silent at the edges"): a part with no primal, a container of another kind or length, a wrong
shape, a complex tangent for a real primal are refused naming the transform, the argument and
the path; missing parts and zeros stay allowed. And an integer output has no Jacobian
(family 5)."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr


def test_a_misspelled_key_in_jvp_tangents():
    with pytest.raises(ValueError, match=r"^jvp: tangents\[0\]\['v'\] has no primal; the "
                                         r"primal's keys are \['w'\]$"):
        cr.jvp(lambda p: p["w"] ** 2, ({"w": 1.0},), ({"v": 1.0},))


def test_a_misspelled_key_in_hvp_v():
    with pytest.raises(ValueError, match=r"hvp: v\['v'\] has no primal"):
        cr.hvp(lambda p: p["w"] ** 2, {"w": 1.0}, {"v": 1.0})


def test_a_missing_key_is_a_zero_tangent():
    y, y_dot = cr.jvp(lambda p: p["w"] ** 2 + p["b"], ({"w": 3.0, "b": 1.0},), ({"w": 1.0},))
    assert y_dot == pytest.approx(6.0)


@pytest.mark.parametrize("f, dy, message", [
    (lambda a: [a, 2 * a], {"a": 1.0}, r"vjp: the cotangent is a dict; the output is a list"),
    (lambda a: (a, 2 * a), [1.0], r"vjp: the cotangent has 1 element\(s\); the output, a "
                                  r"tuple, has 2"),
    (lambda a: {"u": a}, {"v": 1.0}, r"vjp: the cotangent\['v'\] has no primal; the output's "
                                     r"keys are \['u'\]"),
    (lambda a: np.sin(a), np.ones(2), r"vjp: the cotangent has shape \(2,\); the output's "
                                      r"shape is \(3,\)"),
    (lambda a: np.sin(a), np.ones(3) * 1j, r"vjp: the cotangent is complex; the output is real"),
    (lambda a: [np.sin(a)], [np.ones((3, 1))], r"vjp: the cotangent\[0\] has shape \(3, 1\)"),
])
def test_wrong_cotangents_for_vjp(f, dy, message):
    _, pullback = cr.vjp(f, np.array([0.1, 0.2, 0.3]))
    with pytest.raises((ValueError, TypeError), match=message):
        pullback(dy)


def test_right_cotangents_of_every_kind_are_accepted():
    x = np.array([0.1, 0.2])
    _, pullback = cr.vjp(lambda a: {"s": np.sin(a), "t": (a[0], a[1])}, x)
    (dx,) = pullback({"s": np.ones(2), "t": (1.0, cr.ZeroTangent())})
    np.testing.assert_allclose(dx, np.cos(x) + [1.0, 0.0])
    (dx,) = pullback({"s": np.ones(2)})  # a missing key is zero
    np.testing.assert_allclose(dx, np.cos(x))
    _, pullback = cr.vjp(lambda z: z * 2, np.array([1 + 1j]))
    np.testing.assert_allclose(pullback(np.array([1.0]))[0], [2.0])  # real for complex: fine


@pytest.mark.parametrize("primals, tangents, message", [
    ((1.0,), (1j,), r"jvp: tangents\[0\] is complex; the primal is real"),
    ((np.ones(3),), (np.ones(2),), r"jvp: tangents\[0\] has shape \(2,\); the primal's shape"),
    (([1.0, 2.0],), ([1.0],), r"jvp: tangents\[0\] has 1 element"),
    (({"w": 1.0},), ([1.0],), r"jvp: tangents\[0\] is a list; the primal is a dict"),
    ((1.0,), ("a",), r"jvp: tangents\[0\] is a str"),
])
def test_wrong_tangents_for_jvp(primals, tangents, message):
    with pytest.raises((ValueError, TypeError), match=message):
        cr.jvp(lambda *a: 0.0, primals, tangents)


def test_wrong_shape_v_for_hvp_names_hvp():
    with pytest.raises(ValueError, match=r"hvp: v has shape \(2,\); the primal's shape is \(3,\)"):
        cr.hvp(lambda x: np.sum(x ** 3), np.ones(3), np.ones(2))


def test_a_tangent_of_a_dataclass_with_a_field_it_lacks():
    import dataclasses

    @dataclasses.dataclass
    class P:
        w: float

    with pytest.raises(ValueError, match=r"jvp: tangents\[0\]\['v'\] has no primal; the "
                                         r"primal's fields are \['w'\]"):
        cr.jvp(lambda p: p.w ** 2, (P(1.0),), (cr.Tangent(P, {"v": 1.0}),))
    assert cr.jvp(lambda p: p.w ** 2, (P(3.0),), (cr.Tangent(P, w=1.0),))[1] == pytest.approx(6.0)


@pytest.mark.parametrize("transform", ["jacobian", "jacfwd", "jacrev"])
def test_an_integer_output_has_no_jacobian(transform):
    with pytest.raises(TypeError, match=rf"{transform if transform != 'jacrev' else 'jacobian'}"
                                        rf"\(len\): the output is int 3, which has no derivative"):
        getattr(cr, transform)(len)(np.ones(3))
    with pytest.raises(TypeError, match=r"the output\[1\] is"):
        getattr(cr, transform)(lambda x: (np.sum(x), np.argmax(x)))(np.ones(3))
