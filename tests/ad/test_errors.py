"""Loud errors: each names what went wrong and where, and says what to do instead."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules import NoTangent
from numpy import empty as imported_empty, zeros as imported_zeros
from tests.numpy_features import CLIP_MIN_MAX, needs


@cr.primitive
def _no_rule_op(x):  # recorded whole, and no rule is registered for it
    return np.sort(x)


def test_function_without_rule_names_itself_and_how_to_register():
    def unknown(x):
        return _no_rule_op(x)[0]

    with pytest.raises(cr.NoRuleError) as error:
        cr.grad(unknown)(np.array([3.0, 1.0, 2.0]))
    message = str(error.value)
    assert "_no_rule_op" in message and "rrule.register" in message
    assert "non_differentiable" in message


def test_grad_of_non_scalar_output_points_to_vjp_and_jacobian():
    with pytest.raises(TypeError, match=r"shape \(2,\).*vjp.*jacobian"):
        cr.grad(lambda x: x * 2)(np.ones(2))


def test_grad_of_complex_output_is_refused():
    with pytest.raises(TypeError, match="complex"):
        cr.grad(lambda z: z * 2)(1.0 + 1.0j)


def _plain_zeros(n, dtype=np.float64):
    """A float array the engine does not follow: computed from an integer array."""
    return (np.arange(n) * 0).astype(dtype)


def test_names_imported_before_the_trace_make_arrays_the_engine_follows():
    def f(x):
        out = imported_zeros(2)  # `from numpy import zeros` at the top of this module
        out[0] = x[0] ** 2
        buffer = imported_empty(2)
        np.sin(x, out=buffer)
        return np.sum(out) + np.sum(buffer)

    np.testing.assert_allclose(cr.grad(f)(np.array([3.0, 1.0])), [6.0 + np.cos(3.0),
                                                                  np.cos(1.0)])


def test_writing_a_traced_value_into_a_plain_array_is_a_tracing_error():
    def f(x):
        out = _plain_zeros(2)
        out[0] = x[0] ** 2
        return np.sum(out)

    # NumPy would replace an error raised during the write by "setting an array element with
    # a sequence"; the engine raises its own, naming the line, when the function returns.
    with pytest.raises(cr.TracingError) as error:
        cr.grad(f)(np.ones(2))
    message = str(error.value)
    assert "out[0] = x[0] ** 2" in message and "test_errors.py" in message
    assert "np.stack" in message and "sequence" not in message
    assert "np.arange(n) * 1.0" in message and "before the differentiated function" in message


def test_writing_then_failing_raises_the_write_as_the_cause():
    def f(x):
        out = _plain_zeros(2)
        out[1] = x[0] * 3.0
        raise KeyError("later")

    with pytest.raises(cr.TracingError, match=r"out\[1\] = x\[0\] \* 3.0") as error:
        cr.grad(f)(np.ones(2))
    assert isinstance(error.value.__cause__, KeyError)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_writing_into_a_plain_array_of_any_float_dtype_and_a_slice(dtype):
    def item(x):
        out = _plain_zeros(3, dtype)
        out[2] = x[1]
        return np.sum(np.abs(out))

    def block(x):
        out = _plain_zeros(3, dtype)
        out[1:] = x
        return np.sum(np.abs(out))

    for f in (item, block):
        with pytest.raises(cr.TracingError, match="plain"):
            cr.grad(f)(np.ones(2))


@pytest.mark.parametrize("operation, symbol", [
    (lambda F, x: F.__iadd__(x), "+="), (lambda F, x: F.__isub__(x), "-="),
    (lambda F, x: F.__imul__(x), "*="), (lambda F, x: F.__itruediv__(x), "/=")])
def test_augmented_assignment_into_a_plain_array_speaks_of_what_the_user_wrote(operation,
                                                                               symbol):
    def f(x):
        F = _plain_zeros(2) + 1.0  # a plain array
        operation(F, x)  # (the method called: not an assignment that rebinds F)
        return np.sum(F)

    with pytest.raises(cr.TracingError) as error:
        cr.grad(f)(np.ones(2))
    message = str(error.value)
    assert f"a {symbol} t" in message and f"a = a {symbol[0]} t" in message
    assert "out=" not in message


def test_float_of_a_traced_value():
    with pytest.raises(cr.TracingError, match="float"):
        cr.grad(lambda x: float(x[0]) * 2)(np.ones(2))


def test_out_argument_into_a_plain_array_is_refused():
    with pytest.raises(cr.TracingError, match="out=") as error:
        cr.grad(lambda x: np.sum(np.sin(x, out=_plain_zeros(2))))(np.ones(2))
    assert "np.zeros" in str(error.value)


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


@pytest.mark.parametrize("argnums", [1.5, "0", [0.0], (0, 1.0), True, None])
def test_argnums_of_a_wrong_type_says_what_it_takes(argnums):
    for transform in (cr.grad, cr.value_and_grad, cr.jacobian):
        with pytest.raises(TypeError, match=r"argnums must be an int or a tuple of ints.*got"):
            transform(lambda x: x * 2.0, argnums=argnums)(1.0)


@pytest.mark.parametrize("argnums", [1, -2, (0, 3)])
def test_argnums_out_of_range_names_the_count(argnums):
    for transform in (cr.grad, cr.value_and_grad, cr.jacobian):
        with pytest.raises(ValueError, match=r"argnums=.*called with 1 positional argument"):
            transform(lambda x: x * 2.0, argnums=argnums)(1.0)


def test_jacobian_of_an_integer_input_says_to_pass_floats():
    with pytest.raises(TypeError, match=r"argument 0 is an integer \(int64\).*floats"):
        cr.jacobian(lambda x: x * 2.0)(np.array([1, 2]))
    np.testing.assert_array_equal(cr.jacobian(lambda x: x * 2.0)(np.array([1.0, 2.0])),
                                  2.0 * np.eye(2))


def test_formatting_a_traced_value_shows_its_value(capsys):
    def loss(x):
        value = np.sum(x ** 2)
        print(f"{value:.3f}", "{:.2f}".format(value), "%.2f" % value, "%s" % value,
              "%.1f %d" % (value, 3), round(value, 1), str(value), f"{value}")
        return value

    g = cr.grad(loss)(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [2.0, 4.0])  # formatting cuts nothing
    assert capsys.readouterr().out.split() == ["5.000", "5.00", "5.00", "5.0", "5.0", "3",
                                               "5.0", "5.0", "5.0"]


def test_round_of_a_traced_value_is_a_constant():
    # round() is piecewise constant: d round(x)/dx = 0, so the constant is the exact answer.
    assert cr.grad(lambda x: round(x, 1) * 0.0 + x * round(x))(2.3) == 2.0


def test_float_of_a_traced_value_is_still_refused():
    import math

    with pytest.raises(cr.TracingError, match="float"):
        cr.grad(lambda x: float(x) * math.sin(x))(1.0)
    with pytest.raises(cr.TracingError, match="complex"):
        cr.grad(lambda x: abs(complex(x)))(1.0)


def test_traced_values_that_outlive_their_trace_convert_to_their_values():
    losses = []

    def loss(x):
        value = np.sum(x ** 2)
        losses.append(value)  # kept for plotting
        return value

    for step in range(3):
        cr.grad(loss)(np.array([1.0, float(step)]))
    np.testing.assert_array_equal(np.array(losses), [1.0, 2.0, 5.0])
    assert [float(v) for v in losses] == [1.0, 2.0, 5.0]
    assert f"{losses[2]:.1f}" == "5.0" and complex(losses[1]) == 2.0
    with pytest.raises(cr.TracingError, match="already returned"):
        losses[0] * 2.0  # arithmetic on it would silently lose the trace: still an error


def test_a_frompyfunc_ufunc_on_traced_values_says_to_use_vectorize():
    square = np.frompyfunc(lambda a: a * a, 1, 1)
    with pytest.raises(cr.NoRuleError, match=r"np.frompyfunc.*np.vectorize\(f\)"):
        cr.grad(lambda x: np.sum(square(x).astype(float)))(np.array([1.0, 2.0]))
    # the advice works
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(np.vectorize(lambda a: a * a)(x)))(
        np.array([1.0, 2.0])), [2.0, 4.0])


def _reads_memory(x, name):
    return getattr(x, name)


@pytest.mark.parametrize("name", ["strides", "base", "ctypes", "data"])
def test_reading_an_arrays_memory_names_the_attribute_the_line_and_the_fix(name):
    # before: AttributeError: 'Traced' object has no attribute 'strides' (scipy.linalg.toeplitz
    # and svd, np.lib.stride_tricks users), with nothing to say what to do
    with pytest.raises(cr.TracingError) as raised:
        cr.grad(lambda x: np.sum(_reads_memory(x, name)))(np.ones(3))
    message = str(raised.value)
    assert f"`.{name}` of a traced value" in message
    assert "return getattr(x, name)" in message and "_reads_memory" in message
    assert "chainrules.primal(x)" in message and "rrule.register" in message
    assert isinstance(raised.value, AttributeError)  # hasattr and getattr(x, n, d) still work
    seen = []
    cr.grad(lambda x: seen.append((hasattr(x, name), getattr(x, name, "none"))) or np.sum(x))(
        np.ones(3))
    assert seen == [(False, "none")]


def test_a_library_reading_memory_is_named_by_the_call_that_entered_it():
    pytest.importorskip("scipy")
    import scipy.linalg

    # scipy.linalg.hessenberg reads .base in a helper of SciPy's: the message points at the
    # line that called SciPy
    with pytest.raises(AttributeError, match=r"the scipy function called at `return "
                                             r"linalg.hessenberg\(a\)` \(.*test_errors.py"):
        cr.grad(lambda a: np.sum(_hessenberg(scipy.linalg, a)))(np.eye(3))


def _hessenberg(linalg, a):
    return linalg.hessenberg(a)
