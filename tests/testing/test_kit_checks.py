"""What each check of test_rrule / test_frule catches, and how the failure reads.

Rules here are handed to the kit with ``rule=`` (nothing is registered globally), each broken
in one way; the assertion is on the message naming that problem.
"""

from __future__ import annotations

import dataclasses
import operator

import numpy as np
import pytest

from chainrules import (InplaceableThunk, NoTangent, ProjectTo, RuleConfig, Tangent, Thunk,
                        ZeroTangent, unthunk)
from chainrules.core import AbstractZero
from chainrules.testing import (RuleCase, TestConfig, Tolerance, case, check_case, test_frule,
                                test_rrule, test_scalar)
from chainrules.testing import reports


def scale(x, n):
    """x * n for an integer n (n is not perturbable)."""
    return x * n


def scale_rule(x, n):
    project = ProjectTo(x)

    def pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return NoTangent(), ZeroTangent(), NoTangent()
        return NoTangent(), project(dy * n), NoTangent()

    return x * n, pullback


def test_an_unprojected_rule_fails():
    def rule(x, n):
        return x * n, lambda dy: (NoTangent(), unthunk(dy) * n, NoTangent())

    with pytest.raises(AssertionError, match="cotangent has dtype complex128"):
        test_rrule(scale, np.array([1.0, 2.0]), 3, rule=rule)


def test_a_correct_rule_passes():
    test_rrule(scale, np.array([1.0, 2.0]), 3, rule=scale_rule)


def test_zero_tangent_for_a_non_perturbable_argument_fails():
    def rule(x, n):
        return x * n, lambda dy: (NoTangent(), unthunk(dy) * n, ZeroTangent())

    with pytest.raises(AssertionError, match=r"argument 2 \(n\) is a Python int, which cannot "
                                             r"be perturbed: its cotangent must be NoTangent\(\), "
                                             r"got ZeroTangent\(\)"):
        test_rrule(scale, np.array([1.0, 2.0]), 3, rule=rule)


def test_a_cotangent_for_an_integer_fails():
    def rule(x, n):
        return x * n, lambda dy: (NoTangent(), unthunk(dy) * n, float(np.sum(x * unthunk(dy))))

    with pytest.raises(AssertionError, match=r"argument 2 \(n\) is a Python int.*must be "
                                             r"NoTangent\(\).*got a Python float"):
        test_rrule(scale, np.array([1.0, 2.0]), 3, rule=rule)


def test_wrong_shape_fails():
    def rule(x, n):
        return x * n, lambda dy: (NoTangent(), np.sum(unthunk(dy)) * n, NoTangent())

    with pytest.raises(AssertionError, match=r"argument 1 \(x\): cotangent has shape \(\), "
                                             r"expected the primal's shape \(2,\)"):
        test_rrule(scale, np.array([1.0, 2.0]), 3, rule=rule)


def test_complex_cotangent_for_a_real_argument_fails():
    def rule(x, n):  # forgets to project: a complex seed gives a complex cotangent
        return x * n, lambda dy: (NoTangent(), np.asarray(unthunk(dy)) * n, NoTangent())

    with pytest.raises(AssertionError, match=r"cotangent has dtype complex128, expected the "
                                             r"primal's tangent dtype float64") as failure:
        test_rrule(scale, np.array([1.0, 2.0]), 3, rule=rule)
    assert "complex128 output tangent for an output of dtype float64" in str(failure.value)


def test_a_pullback_that_rejects_a_zero_seed_fails():
    def rule(x, n):
        return x * n, lambda dy: (NoTangent(), np.multiply(unthunk(dy), n), NoTangent())

    with pytest.raises(AssertionError, match=r"the pullback raised .*\n\s*for ZeroTangent\(\)"):
        test_rrule(scale, np.array([1.0, 2.0]), 3, rule=rule)


def test_wrong_number_of_cotangents_fails():
    def rule(x, n):
        return x * n, lambda dy: (unthunk(dy) * n,)

    with pytest.raises(AssertionError, match="must return a tuple of 3 cotangents"):
        test_rrule(scale, np.array([1.0, 2.0]), 3, rule=rule)


def test_wrong_primal_fails():
    def rule(x, n):
        return x * (n + 1), lambda dy: (NoTangent(), unthunk(dy) * n, NoTangent())

    with pytest.raises(AssertionError, match="the rule's primal output differs from f"):
        test_rrule(scale, np.array([1.0, 2.0]), 3, rule=rule)


def test_primal_of_the_wrong_dtype_fails():
    def rule(x, n):
        return (x * n).astype(np.float64), lambda dy: (NoTangent(), ProjectTo(x)(
            unthunk(dy) * n) if not isinstance(unthunk(dy), AbstractZero) else ZeroTangent(),
            NoTangent())

    with pytest.raises(AssertionError, match="output has dtype float64, expected float32"):
        test_rrule(scale, np.array([1.0, 2.0], np.float32), 3, rule=rule)


def test_a_rule_returning_none_fails():
    with pytest.raises(AssertionError, match="the rule returned None"):
        test_rrule(scale, np.ones(2), 3, rule=lambda x, n: None)


def test_unregistered_function_fails():
    with pytest.raises(AssertionError, match="no rrule is registered for .*scale"):
        test_rrule(scale, np.ones(2), 3)


def test_a_thunk_seed_treated_differently_fails():
    def rule(x, n):
        def pullback(dy):
            factor = 2 if isinstance(dy, Thunk) else 1
            return NoTangent(), ProjectTo(x)(unthunk(dy) * n) * factor, NoTangent()

        return x * n, pullback

    with pytest.raises(AssertionError, match="a thunked output tangent gives different "
                                             "cotangents"):
        test_rrule(scale, np.array([1.0, 2.0]), 3, rule=rule, check_accumulation=False)


def test_mutating_the_input_fails():
    def mutating(x):
        y = np.sin(x)
        x += 0.0 * x  # "harmless", but in place
        x[0] = x[0] + 1.0
        return y

    def rule(x):
        y = mutating(x)
        return y, lambda dy: (NoTangent(), ProjectTo(x)(np.cos(x - 1.0) * unthunk(dy))
                              if not isinstance(unthunk(dy), AbstractZero) else ZeroTangent())

    with pytest.raises(AssertionError, match="mutated its arguments"):
        test_rrule(mutating, np.array([0.5, 1.5]), rule=rule, check_seeds=False,
                   check_accumulation=False)


# --- lazy cotangents ------------------------------------------------------------------------

def _inplaceable_rule(declared_dtype=None, add_returns_new=False):
    def rule(x, n):
        project = ProjectTo(x)

        def pullback(dy):
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return NoTangent(), ZeroTangent(), NoTangent()
            value = project(np.asarray(dy) * n)

            def add(buffer):
                if add_returns_new:
                    return buffer + value
                buffer += value
                return buffer

            return NoTangent(), InplaceableThunk(add, Thunk(lambda: value), shape=x.shape,
                                                 dtype=declared_dtype or value.dtype), NoTangent()

        return x * n, pullback

    return rule


def test_a_correct_inplaceable_cotangent_passes():
    test_rrule(scale, np.array([1.0, 2.0], np.float32), 3, rule=_inplaceable_rule())


def test_inplaceable_declaring_the_wrong_dtype_fails():
    with pytest.raises(AssertionError, match=r"declares a value outside the primal's tangent "
                                             r"space \(shape \(2,\) and dtype float32\)"):
        test_rrule(scale, np.array([1.0, 2.0], np.float32), 3,
                   rule=_inplaceable_rule(declared_dtype=np.float64))


def test_inplaceable_add_that_is_not_in_place_fails():
    with pytest.raises(AssertionError, match=r"raised TypeError: InplaceableThunk.add "
                                             r"must update the buffer it is given in place"):
        test_rrule(scale, np.array([1.0, 2.0]), 3, rule=_inplaceable_rule(add_returns_new=True))


# --- structured arguments and closures ------------------------------------------------------

@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: float
    steps: int


def affine(params, x):
    return params.w * x + params.b


def affine_rule(wrong_w=False, natural=False):
    def rule(params, x):
        y = affine(params, x)

        def pullback(dy):
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return NoTangent(), ZeroTangent(), ZeroTangent()
            dy = np.real(dy)
            dw = dy * x * (2 if wrong_w else 1)
            if natural:
                return NoTangent(), (dw, float(np.sum(dy))), params.w * dy
            return (NoTangent(), Tangent(Params, w=dw, b=float(np.sum(dy))),
                    params.w * dy)

        return y, pullback

    return rule


PARAMS = Params(np.array([0.5, -1.0]), 0.25, 10)


def test_structured_argument_passes():
    test_rrule(affine, PARAMS, np.array([2.0, 3.0]), rule=affine_rule())


def test_structured_argument_message_names_the_field():
    with pytest.raises(AssertionError, match=r"the cotangent of argument 1 \(params\), field "
                                             r"\.w does not match finite differences"):
        test_rrule(affine, PARAMS, np.array([2.0, 3.0]), rule=affine_rule(wrong_w=True))


def test_structured_argument_needs_a_tangent():
    with pytest.raises(AssertionError, match=r"argument 1 \(params\) is a Params: its cotangent "
                                             r"must be a Tangent"):
        test_rrule(affine, PARAMS, np.array([2.0, 3.0]), rule=affine_rule(natural=True))


def make_model(w):
    def model(x):
        return np.sum(w * x)
    return model


def model_rule(model, with_function_tangent=True):
    w = model.__closure__[0].cell_contents

    def rule(x):
        def pullback(dy):
            dy = np.real(unthunk(dy)) if not isinstance(unthunk(dy), AbstractZero) else 0.0
            df = Tangent(type(model), w=dy * x) if with_function_tangent else NoTangent()
            return df, dy * w

        return model(x), pullback

    return rule


def test_closure_tangent_passes():
    model = make_model(np.array([1.0, 2.0]))
    test_rrule(model, np.array([0.5, -0.5]), rule=model_rule(model))


def test_closure_without_its_tangent_fails():
    model = make_model(np.array([1.0, 2.0]))
    with pytest.raises(AssertionError, match=r"the cotangent of the function itself \(cotangent "
                                             r"0\), field \.w does not match"):
        test_rrule(model, np.array([0.5, -0.5]), rule=model_rule(model, False))


def test_getitem_on_containers_passes():
    test_rrule(operator.getitem, {"w": np.ones(2), "n": 3}, "w")
    test_rrule(operator.getitem, [1.5, np.ones(2), "s"], slice(0, 2))


# --- configs -------------------------------------------------------------------------------

def twice(f, x):
    return f(f(x))


def twice_rule(config, f, x):
    if not config.has_reverse_mode:
        return None  # cannot call back into AD: decline
    y1, back1 = config.rrule_via_ad(f, x)
    y2, back2 = config.rrule_via_ad(f, y1)

    def pullback(dy):
        df2, dy1 = back2(dy)
        df1, dx = back1(dy1)
        return NoTangent(), NoTangent(), dx

    return y2, pullback


def test_config_rules_are_checked_with_and_without_a_config():
    test_rrule(twice, np.sin, np.array([0.3, 0.6]), rule=twice_rule, rule_takes_config=True)


def test_config_rule_raising_without_a_config_fails():
    def rule(config, f, x):
        if not config.has_reverse_mode:
            raise ValueError("needs AD")
        return twice_rule(config, f, x)

    with pytest.raises(AssertionError, match="called with the default RuleConfig .* the rule "
                                             "raised ValueError: needs AD"):
        test_rrule(twice, np.sin, np.array([0.3, 0.6]), rule=rule, rule_takes_config=True)


def test_test_config_uses_given_then_registered_rules():
    def cube(x):
        return x ** 3

    def cube_rule(x):
        return cube(x), lambda dy: (NoTangent(), 3 * x ** 2 * unthunk(dy))

    config = TestConfig(rules={cube: cube_rule})
    assert config.has_reverse_mode
    y, pullback = config.rrule_via_ad(cube, 2.0)
    assert (y, pullback(1.0)[1]) == (8.0, 12.0)
    y, pullback = config.rrule_via_ad(np.sin, np.float64(0.0))
    assert pullback(1.0)[1] == 1.0


def test_test_config_without_a_rule_or_engine_says_so(monkeypatch):
    monkeypatch.setattr(reports, "_engine_config", lambda: None)
    with pytest.raises(NotImplementedError, match="no rule for .*and the chainrules engine"):
        TestConfig().rrule_via_ad(lambda x: x * 2.0, 1.0)


def test_test_config_falls_back_to_the_engine():
    if reports._engine_config() is None:
        pytest.skip("chainrules.ad is not available")
    weights = np.array([1.0, -2.0, 0.5])

    def model(i):
        return weights[i] ** 2

    y, pullback = TestConfig().rrule_via_ad(model, 1)
    df, di = pullback(1.0)
    assert y == 4.0 and di is NoTangent()
    np.testing.assert_array_equal(unthunk(df.weights), [0.0, -4.0, 0.0])


def test_base_rule_config_is_accepted():
    test_rrule(twice, np.sin, np.array([0.3]), rule=twice_rule, rule_takes_config=True,
               config=TestConfig())
    assert isinstance(TestConfig(), RuleConfig)


# --- frule ---------------------------------------------------------------------------------

def test_frule_of_a_registered_function_passes():
    test_frule(np.sin, np.array([0.3, 0.4], np.float32))
    test_frule(operator.getitem, np.array([1.0, 2.0, 3.0]), np.array([2, 2]))


def test_frule_returning_float64_for_float32_fails():
    def rule(tangents, x):
        return np.exp(x), np.exp(x.astype(np.float64)) * unthunk(tangents[1])

    with pytest.raises(AssertionError, match="the output tangent: tangent has dtype float64, "
                                             "expected the primal's tangent dtype float32"):
        test_frule(np.exp, np.array([0.5, 1.0], np.float32), rule=rule)


def test_frule_and_rrule_that_disagree_fail():
    """Each rule is self-consistent with a *different* wrong function: values fail, and the
    consistency check names the disagreement."""
    def forward(tangents, x):
        return np.sin(x), np.cos(x) * unthunk(tangents[1])

    def reverse(x):
        return np.sin(x), lambda dy: (NoTangent(), -np.cos(x) * unthunk(dy))

    with pytest.raises(AssertionError, match="the frule and the rrule disagree"):
        test_frule(np.sin, np.array([0.3, 0.4]), rule=forward, reverse_rule=reverse)


def test_frule_zero_tangents_must_give_zero():
    def rule(tangents, x):
        return np.exp(x), np.exp(x)  # ignores the tangent

    with pytest.raises(AssertionError, match="zero input tangents must give a zero output "
                                             "tangent"):
        test_frule(np.exp, np.array([0.5, 1.0]), rule=rule)


# --- test_scalar, cases, tolerances ---------------------------------------------------------

@pytest.mark.parametrize("f, x", [(np.sin, 0.4), (np.exp, 0.3 + 0.2j), (np.log, np.float32(2.0)),
                                  (np.abs, -1.5), (np.abs, 1.0 - 2.0j), (np.sqrt, 4.0 + 1.0j)])
def test_scalar_on_registered_functions(f, x):
    test_scalar(f, x)


def test_scalar_requires_a_number():
    with pytest.raises(ValueError, match="x must be a number"):
        test_scalar(np.sin, np.ones(2))


def test_case_splits_options_from_keyword_arguments():
    c = case(np.sum, np.ones((2, 3)), axis=0, rtol=1e-5, seed=3)
    assert isinstance(c, RuleCase)
    assert c.fkwargs == {"axis": 0} and c.options == {"rtol": 1e-5, "seed": 3}
    assert c.function is np.sum and c.id == "sum-float64[2, 3]-axis=0"
    clashing = case(np.isclose, np.ones(2), np.ones(2), fkwargs={"rtol": 0.1})
    assert clashing.fkwargs == {"rtol": 0.1} and clashing.options == {}


def test_case_ids_describe_the_arguments():
    assert case(operator.getitem, np.ones((3, 4), np.float32), (slice(1, 3), None, Ellipsis),
                ).id == "getitem-float32[3, 4]-(1:3,None,...)"
    assert case(operator.getitem, [1.5, 2], -1, id="custom").id == "custom"


def test_check_case_runs_both_rules_and_fails_without_a_rule():
    check_case(case(np.tanh, np.array([0.1, -0.2])))
    with pytest.raises(AssertionError, match="no rrule or frule is registered"):
        check_case(case(scale, np.ones(2), 3))


def test_tolerance_defaults_follow_precision():
    assert Tolerance.for_values(None, None, np.ones(2)) == Tolerance(1e-6, 1e-8)
    assert Tolerance.for_values(None, None, np.ones(2, np.float32)).rtol == 1e-4
    assert Tolerance.for_values(1e-3, 0.0, np.ones(2)) == Tolerance(1e-3, 0.0)
    assert Tolerance(1e-6, 0.0).mismatch(np.ones(2), np.ones(2) + 1e-9) is None
    assert "max abs error" in Tolerance(1e-6, 0.0).mismatch(np.ones(2), np.array([1.0, 1.1]))


def test_kit_functions_are_not_collected_by_pytest():
    assert test_rrule.__test__ is False and test_frule.__test__ is False
    assert test_scalar.__test__ is False and TestConfig.__test__ is False


# --- non-differentiable functions -----------------------------------------------------------

def test_non_differentiable_function_without_finite_differences():
    from chainrules.testing import test_non_differentiable

    test_non_differentiable(np.empty_like, np.ones((2, 3), np.float32))
    check_case(case(np.empty_like, np.ones(3), non_differentiable=True))
    with pytest.raises(AssertionError, match=r"argument 1 \(x\): a non-differentiable function "
                                             r"must give NoTangent\(\), got a float64 array"):
        test_non_differentiable(np.sin, np.ones(2))


def test_a_pullback_mutating_its_seed_fails():
    def rule(x, n):
        def pullback(dy):
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return NoTangent(), ZeroTangent(), NoTangent()
            if isinstance(dy, np.ndarray) and dy.dtype == np.float64:
                dy *= n  # reuses the caller's buffer
                return NoTangent(), dy, NoTangent()
            return NoTangent(), ProjectTo(x)(dy * n), NoTangent()

        return x * n, pullback

    with pytest.raises(AssertionError, match="the pullback modified the output tangent"):
        test_rrule(scale, np.array([1.0, 2.0]), 3, rule=rule)


def test_case_covers_records_wrapped_functions():
    c = case(np.tanh, np.ones(2), covers=np.sinh)
    assert c.covers == (np.sinh,) and c.functions == (np.tanh, np.sinh)
    assert case(np.tanh, np.ones(2), covers=[np.sinh, np.cosh]).covers == (np.sinh, np.cosh)
    assert case(np.tanh, np.ones(2)).functions == (np.tanh,)
