"""The kit's order-2 checks: `test_rrule_order2` over a sample of the CASES of the indexing,
reduction, shape and selection rule modules (tests/rules/test_order2_registry.py holds the
whole registry to both checks), both checks' failures on rules that are wrong at order 2 or
not traceable, the jvp/vjp consistency at order 2, list and tuple arguments."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from chainrules import NoTangent, frule, primal, rrule
from chainrules.core.registry import recorded_whole
from chainrules.testing import (FIRST_ORDER_ONLY, first_order_only, test_frule_order2,
                                test_rrule_order2)
from tests.numpy_features import running


def _rule_module(name: str):
    path = Path(__file__).resolve().parents[1] / "rules" / f"test_{name}.py"
    spec = importlib.util.spec_from_file_location(f"_order2_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


test_indexing, test_reductions, test_selection, test_shape = (
    _rule_module(name) for name in ("indexing", "reductions", "selection", "shape"))


def _float_case(c) -> bool:
    return any(isinstance(a, (np.ndarray, float, np.floating, np.complexfloating))
               and np.result_type(a).kind in "fc" for a in c.args) \
        and not c.options.get("non_differentiable") and rrule.lookup(c.function) is not None


def _sample(module, every: int):
    cases = [c for c in running(module.CASES) if _float_case(c)]
    return cases[::every]


SAMPLED = (_sample(test_indexing, 6) + _sample(test_reductions, 4) + _sample(test_shape, 4)
           + _sample(test_selection, 3))


# Cases where finite differences of the pullback are not a reference, or known gaps:
_KINKS = (np.max, np.min, np.amax, np.amin, np.ptp)  # the sample data has ties: the
# pullback's weights jump there, so its own derivative does not exist
_KNOWN_GAPS = {
    np.cumprod: "second derivatives raise NotImplementedError where a slice holds an exact "
                "zero before its end; correct elsewhere (tests/ad/test_order2.py)",
}


@pytest.mark.parametrize("rule_case", SAMPLED, ids=lambda c: c.id)
def test_rule_is_differentiable_at_order_2(rule_case):
    f = rule_case.function
    if f in FIRST_ORDER_ONLY:
        pytest.skip(FIRST_ORDER_ONLY[f])
    if f in _KNOWN_GAPS:
        pytest.skip(_KNOWN_GAPS[f])
    if f in _KINKS and any(np.size(np.unique(a)) < np.size(a) for a in rule_case.args
                           if isinstance(a, np.ndarray)):
        pytest.skip("ties in the data: the pullback is not differentiable there")
    test_rrule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)


@recorded_whole
def cube(x):
    return x ** 3


def test_order2_check_fails_on_a_wrong_second_derivative():
    # The pullback is right at order 1 (3 x^2 dy), but reads x's plain value, which cuts it
    # out of an outer trace: its derivative by x is lost.
    def rule(x):
        slope = 3.0 * primal(x) ** 2
        return cube(x), lambda dy: (NoTangent(), slope * dy)

    rrule.register(cube)(rule)
    try:
        with pytest.raises(AssertionError, match="pullback's own derivative is wrong"):
            test_rrule_order2(cube, np.ones(3))
    finally:
        rrule._rules.pop(cube, None)


def test_first_order_only_is_reported():
    def op(x):
        return x

    first_order_only(op, "its pullback calls a C extension")
    try:
        with pytest.raises(AssertionError, match="declared first-order only: its pullback"):
            test_rrule_order2(op, np.ones(2))
    finally:
        FIRST_ORDER_ONLY.pop(op)


def _register_cube(rrule_slope, frule_slope):
    """Rules for `cube` whose pullback and pushforward multiply by the given slopes."""
    def reverse(x):
        slope = rrule_slope(x)
        return cube(x), lambda dy: (NoTangent(), slope * dy)

    def forward(tangents, x):
        return cube(x), frule_slope(x) * tangents[1]

    rrule.register(cube, replace=True)(reverse)
    frule.register(cube, replace=True)(forward)


def _unregister_cube():
    rrule._rules.pop(cube, None)
    frule._rules.pop(cube, None)


def traced_slope(x):
    return 3.0 * x ** 2


def frozen_slope(x):  # right values, but cut out of an outer trace
    return 3.0 * primal(x) ** 2


def test_frule_order2_passes_a_differentiable_pushforward():
    _register_cube(traced_slope, traced_slope)
    try:
        test_frule_order2(cube, np.array([0.5, -1.0, 2.0]))
        test_frule_order2(cube, np.array([0.5, -1.0], np.float32))
    finally:
        _unregister_cube()


def test_frule_order2_fails_on_a_wrong_second_derivative():
    _register_cube(traced_slope, frozen_slope)
    try:
        with pytest.raises(AssertionError, match="pushforward's own derivative is wrong"):
            test_frule_order2(cube, np.array([0.5, -1.0, 2.0]))
    finally:
        _unregister_cube()


def test_frule_order2_checks_the_jvp_vjp_consistency_at_order_2():
    # The pushforward is right at order 2, the pullback is not: only the consistency check
    # of test_frule_order2 compares the two.
    _register_cube(frozen_slope, traced_slope)
    try:
        with pytest.raises(AssertionError, match="jvp/vjp consistency at order 2, argument 1"):
            test_frule_order2(cube, np.array([0.5, -1.0, 2.0]))
        test_frule_order2(cube, np.array([0.5, -1.0, 2.0]), check_consistency=False)
    finally:
        _unregister_cube()


def test_order2_checks_take_arrays_inside_lists_and_tuples():
    a, b = np.array([0.5, -1.0]), np.array([[2.0, 0.25]])
    test_rrule_order2(np.concatenate, [a[None], b])
    test_frule_order2(np.concatenate, (a[None], b), axis=0)
    test_rrule_order2(np.stack, [a, b[0]], axis=1)
    test_frule_order2(np.stack, [a, b[0]])


def test_a_declared_rule_is_refused_by_the_frule_check_too():
    def op(x):
        return x

    first_order_only(op, "its pushforward calls a C extension")
    try:
        with pytest.raises(AssertionError, match="declared first-order only: its pushforward"):
            test_frule_order2(op, np.ones(2))
    finally:
        FIRST_ORDER_ONLY.pop(op)
