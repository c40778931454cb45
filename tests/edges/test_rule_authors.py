"""A rule author's slips are refused by name (family 6 of "never silent at the edges"), and the
errors of misuse name the cause: a pullback returning a bare array, one writing into its ``dy``,
an rrule returning no pullback, a scalar_rule of the wrong arity, a non-callable given to a
transform, a traced value pickled, an object with a catch-all ``__getattr__``."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import chainrules as cr
from chainrules.ad import RuleError


def _primitive_with_rule(rule, body=lambda x: x * 1.0):
    @cr.primitive
    def f(x):
        return body(x)

    cr.rrule.register(f)(rule)
    return f


def test_a_pullback_returning_a_bare_array_of_the_right_length():
    f = _primitive_with_rule(lambda x: (x * 1.0, lambda dy: np.array([0.0, dy])))
    with pytest.raises(RuleError, match=r"the pullback of .*\.f returned a value of type "
                                        r"ndarray; a pullback returns a tuple of 2"):
        cr.grad(lambda x: f(x) * 1.0)(2.0)


def test_a_pullback_returning_none():
    f = _primitive_with_rule(lambda x: (x * 1.0, lambda dy: None))
    with pytest.raises(RuleError, match=r"returned a value of type NoneType"):
        cr.grad(lambda x: f(x) * 1.0)(2.0)


def test_a_pullback_returning_a_list_is_accepted():
    f = _primitive_with_rule(lambda x: (x * 3.0, lambda dy: [cr.NoTangent(), 3.0 * dy]))
    assert cr.grad(lambda x: f(x))(2.0) == pytest.approx(3.0)


def test_a_pullback_writing_into_dy_is_refused_and_never_changes_a_sibling():
    def rule(x):
        def pullback(dy):
            dy *= 2
            return cr.NoTangent(), dy
        return x * 1.0, pullback

    f = _primitive_with_rule(rule)
    with pytest.raises(RuleError, match=r"wrote into its cotangent dy, which is read-only.*"
                                        r"dy \* 2, not dy \*= 2"):
        cr.grad(lambda x: np.sum(f(x + 1.0) + x))(np.ones(3))


def test_a_user_seed_is_left_writable():
    dy = np.ones(2)
    _, pullback = cr.vjp(lambda x: np.sin(x) + x, np.array([0.1, 0.2]))
    pullback(dy)
    assert dy.flags.writeable
    dy[0] = 3.0


@pytest.mark.parametrize("result, message", [
    (lambda x: x * 1.0, r"the rrule of .*\.f returned a value of type float; an rrule returns "
                        r"a pair \(y, pullback\)"),
    (lambda x: (x * 1.0, None), r"returned a pair whose pullback is None"),
    (lambda x: (x, x, x), r"returned a tuple of 3"),
])
def test_an_rrule_returning_no_pullback(result, message):
    f = _primitive_with_rule(result)
    with pytest.raises(RuleError, match=message):
        cr.grad(lambda x: f(x) * 1.0)(2.0)


def test_an_frule_returning_no_pair():
    @cr.primitive
    def f(x):
        return x * 2.0

    cr.frule.register(f)(lambda tangents, x: x * 2.0)
    with pytest.raises(RuleError, match=r"the frule of .*\.f returned a value|the frule of "
                                        r".*\.f returned a float"):
        cr.jvp(f, (1.0,), (1.0,))


def test_scalar_rule_of_the_wrong_arity_is_refused_when_registered():
    @cr.primitive
    def h(x, y):
        return x * y

    with pytest.raises(TypeError, match=r"scalar_rule\(.*h\): 1 partial derivative\(s\) given, "
                                        r"but .*h takes 2 positional argument"):
        cr.scalar_rule(h, lambda y, a, b: b)
    with pytest.raises(TypeError, match=r"partial 1 takes 2 positional argument\(s\); each "
                                        r"partial is called with the output and then the 2"):
        cr.scalar_rule(h, lambda y, a, b: b, lambda y, a: a)


@pytest.mark.parametrize("transform, call", [
    ("grad", lambda: cr.grad(3)), ("value_and_grad", lambda: cr.value_and_grad(None)),
    ("vjp", lambda: cr.vjp(3, 1.0)), ("jvp", lambda: cr.jvp(3, (1.0,), (1.0,))),
    ("hvp", lambda: cr.hvp(3, 1.0, 1.0)), ("jacobian", lambda: cr.jacobian(1.5)),
    ("jacfwd", lambda: cr.jacfwd("f")), ("hessian", lambda: cr.hessian(3)),
    ("checkpoint", lambda: cr.checkpoint(3)),
    ("elementwise_grad", lambda: cr.elementwise_grad(3)),
])
def test_a_non_callable_is_refused_by_the_transform(transform, call):
    with pytest.raises(TypeError, match=rf"^{transform}: expected a function to differentiate"):
        call()


def test_pickling_a_traced_value_is_refused_with_the_fix():
    with pytest.raises(TypeError, match=r"cannot pickle a traced value.*chainrules.primal"):
        cr.grad(lambda a: (pickle.dumps(a), a * a)[1])(1.0)


class _CatchAll:
    def __init__(self):
        self.w = 2.0

    def __getattr__(self, name):
        return 1.0

    def __call__(self, a):
        return a * self.w


def test_an_object_with_a_catch_all_getattr_is_an_object():
    assert cr.grad(lambda o: o.w ** 2)(_CatchAll()).w == pytest.approx(4.0)
    assert cr.grad(_CatchAll())(3.0) == pytest.approx(2.0)
    assert cr.grad(lambda a: a * _CatchAll().missing)(2.0) == pytest.approx(1.0)
