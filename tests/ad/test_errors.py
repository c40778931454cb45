"""Loud errors: each names what went wrong and where, and says what to do instead."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules import NoTangent
from tests.numpy_features import CLIP_MIN_MAX, needs


def test_function_without_rule_names_itself_and_how_to_register():
    def unknown(x):
        return np.partition(x, 1)[0]  # np.partition has no rule

    with pytest.raises(cr.NoRuleError) as error:
        cr.grad(unknown)(np.array([3.0, 1.0, 2.0]))
    message = str(error.value)
    assert "numpy.partition" in message and "rrule.register" in message
    assert "non_differentiable" in message


def test_grad_of_non_scalar_output_points_to_vjp_and_jacobian():
    with pytest.raises(TypeError, match=r"shape \(2,\).*vjp.*jacobian"):
        cr.grad(lambda x: x * 2)(np.ones(2))


def test_grad_of_complex_output_is_refused():
    with pytest.raises(TypeError, match="complex"):
        cr.grad(lambda z: z * 2)(1.0 + 1.0j)


def test_writing_a_traced_value_into_a_plain_array():
    def f(x):
        out = np.zeros(2)
        out[0] = x[0] * 2
        return np.sum(out)

    # NumPy re-raises our error as a ValueError whose cause is ours: the user sees both.
    with pytest.raises((cr.TracingError, ValueError)) as error:
        cr.grad(f)(np.ones(2))
    cause = error.value if isinstance(error.value, cr.TracingError) else error.value.__cause__
    assert isinstance(cause, cr.TracingError) and "np.stack" in str(cause)


def test_float_of_a_traced_value():
    with pytest.raises(cr.TracingError, match="float"):
        cr.grad(lambda x: float(x[0]) * 2)(np.ones(2))


def test_item_assignment_into_a_traced_array():
    def f(x):
        x[0] = 1.0
        return np.sum(x)

    with pytest.raises(cr.TracingError, match="np.where"):
        cr.grad(f)(np.ones(2))


def test_out_argument_is_refused():
    with pytest.raises(cr.TracingError, match="out="):
        cr.grad(lambda x: np.sum(np.sin(x, out=np.empty(2))))(np.ones(2))


def _primitive_with_pullback(pullback):
    """A primitive function (the engine records it whole) with a rule returning ``pullback``."""
    @cr.primitive
    def function(x):
        return x * 2.0

    @cr.rrule.register(function)
    def rule(x):
        return function(x), pullback

    return function


def test_pullback_with_wrong_number_of_cotangents():
    bad_count = _primitive_with_pullback(lambda dy: (NoTangent(),))
    with pytest.raises(cr.RuleError, match=r"function.*returned 1 cotangents; expected 2"):
        cr.grad(lambda x: np.sum(bad_count(x)))(np.ones(3))


def test_pullback_with_wrong_shape_names_rule_argument_and_shapes():
    bad_shape = _primitive_with_pullback(lambda dy: (NoTangent(), np.ones(2)))
    with pytest.raises(cr.RuleError) as error:
        cr.grad(lambda x: np.sum(bad_shape(x)))(np.ones(3))
    message = str(error.value)
    assert "_primitive_with_pullback.<locals>.function" in message and "argument 0" in message
    assert "(2,)" in message and "(3,)" in message


def test_pullback_with_wrong_dtype_names_both_dtypes():
    bad_dtype = _primitive_with_pullback(lambda dy: (NoTangent(), np.ones(3, np.float64)))
    with pytest.raises(cr.RuleError, match="float64.*float32"):
        cr.grad(lambda x: np.sum(bad_dtype(x)))(np.ones(3, np.float32))


def test_wrong_cotangent_for_a_traced_value_inside_a_list_names_its_place():
    @cr.primitive
    def total(values):
        return values[0] + values[1]

    @cr.rrule.register(total)
    def rule(values):  # wrong: the second element's cotangent has the wrong shape
        return total(values), lambda dy: (NoTangent(), [dy, np.ones(5)])

    with pytest.raises(cr.RuleError) as error:
        cr.grad(lambda x: np.sum(total([x, 2.0 * x])))(np.ones(3))
    message = str(error.value)
    assert "total" in message and "[1] in argument 0" in message
    assert "(5,)" in message and "(3,)" in message


def test_keyword_traced_argument_is_moved_to_its_position():
    x = np.array([1.0, 2.0, 4.0])
    w = np.array([1.0, 1.0, 2.0])
    g = cr.grad(lambda w: np.average(x, weights=w))(w)
    total = np.sum(w)
    np.testing.assert_allclose(g, (x * total - np.sum(w * x)) / total ** 2)


@needs(CLIP_MIN_MAX, "np.clip(min=, max=) (NumPy 2.1)")
def test_keyword_only_traced_argument_is_refused():
    # np.clip's min= is keyword-only: it cannot be moved to a position.
    with pytest.raises(cr.TracingError, match="min="):
        cr.grad(lambda lo: np.sum(np.clip(np.arange(3.0), min=lo)))(1.0)
