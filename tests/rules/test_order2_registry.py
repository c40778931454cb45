"""Order 2 over the whole registry: every function that chainrules registers a rule for
passes the kit's order-2 checks (`test_rrule_order2` for its rrule, `test_frule_order2` for
its frule, with the jvp/vjp consistency at order 2) on at least one case of the rule test
modules' ``CASES`` (its own, or those of a wrapper that ``covers`` it, whose rule runs its
rule: a ``least_squares`` result holds ``.jac``, which has no derivative), or is declared `first_order_only` with a reason (which
``python -m chainrules.coverage`` prints).

The sweep samples, it does not enumerate: per function, the cases are tried from the cheapest
(fewest elements, double precision first) and the first one that passes both checks settles
it. A case can fail for want of a derivative where its data sits (ties of ``np.max``, an exact
zero in ``np.cumprod``); the next case is tried then. A function registered later with no
usable case, or whose cases all fail, fails here by name, as tests/rules/test_coverage.py does
at order 1. Functions declared non-differentiable have no derivative at any order and are not
swept.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import chainrules  # noqa: F401  (registers the rules)
from chainrules.core.naming import function_name as _name
from chainrules.core.registry import FIRST_ORDER_ONLY, frule, rrule
from chainrules.rules import load_scipy_rules
from chainrules.testing import (RuleCase, first_order_only,
                                test_frule_order2, test_rrule_order2)
from tests.rules.all_cases import cases_by_function

RULE_TESTS = Path(__file__).resolve().parent
_TRIED = 6  # cases tried per function before it counts as failing

# This module's own cases (the coverage test reads every CASES list): none needed so far.
CASES: list = []


_SCRIPT = r"""
import importlib, json, pkgutil
import chainrules, chainrules.rules
for module in pkgutil.walk_packages(chainrules.rules.__path__, "chainrules.rules."):
    importlib.import_module(module.name)
from chainrules.core.naming import function_name as _name
from chainrules.core.registry import NON_DIFFERENTIABLE, frule, rrule
print(json.dumps(sorted({_name(f) for table in (rrule, frule) for f in table.functions()
                         if f not in NON_DIFFERENTIABLE})))
"""


def _registered_by_chainrules() -> list:
    """The functions whose rrule or frule chainrules registers, minus the non-differentiable
    ones. Read in a fresh interpreter, as tests/rules/test_coverage.py does: test modules
    register rules for their own functions, and declare some, in this one."""
    done = subprocess.run([sys.executable, "-c", _SCRIPT], cwd=RULE_TESTS.parents[1],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"reading the registry failed:\n{done.stderr}"
    names = set(json.loads(done.stdout.strip().splitlines()[-1]))
    load_scipy_rules(everything=True)  # as the fresh interpreter's walk imported them
    here = {_name(f): f for table in (rrule, frule) for f in table.functions()}
    return [here[name] for name in sorted(names)]


def order2_failures(f: Callable, cases: list[RuleCase]) -> list[str] | None:
    """``None`` when ``f`` passes the order-2 checks on one of ``cases`` (tried cheapest
    first) or is declared first-order only; otherwise why not, per case tried."""
    if f in FIRST_ORDER_ONLY:
        return None
    if not cases:
        return [f"{_name(f)} has a registered rule but no case with a float argument in any "
                f"CASES list of tests/rules/test_*.py: add one, or declare it with "
                f"chainrules.core.registry.first_order_only(f, reason)"]
    checks = [check for check, table in ((test_rrule_order2, rrule), (test_frule_order2, frule))
              if table.lookup(f) is not None]
    failures = []
    for c in cases[:_TRIED]:
        errors = []
        for check in checks:
            try:
                check(c.function, *c.args, fkwargs=c.fkwargs)
            except AssertionError as error:
                errors.append(f"case {c.id}: {error}")
        if not errors:
            return None
        failures += errors
    return failures


FUNCTIONS = _registered_by_chainrules()
CASES_BY_FUNCTION = cases_by_function(exclude=(Path(__file__).stem,), covered=True)


@pytest.mark.parametrize("f", FUNCTIONS, ids=[_name(f) for f in FUNCTIONS])
def test_every_registered_rule_is_differentiable_at_order_2_or_declared(f):
    failures = order2_failures(f, CASES_BY_FUNCTION.get(f, []))
    assert failures is None, (
        f"{_name(f)}: no case passes the order-2 checks, and it is not declared "
        f"first-order only (chainrules.core.registry.first_order_only(f, reason)):\n"
        + "\n".join(failures))


def test_the_sweep_covers_every_rule_family():
    names = {_name(f) for f in FUNCTIONS}
    for expected in ("numpy.sin", "numpy.power", "numpy.sum", "_operator.getitem",
                     "numpy.concatenate", "numpy.sort", "numpy.linalg.solve", "numpy.fft.fft",
                     "numpy.piecewise"):
        assert expected in names, expected
    assert len(FUNCTIONS) > 150


def test_declarations_give_a_reason():
    for f, reason in FIRST_ORDER_ONLY.items():
        assert isinstance(reason, str) and len(reason.split()) >= 4, (_name(f), reason)


def test_a_new_rule_without_an_order2_case_fails_until_declared():
    def brand_new(x):
        return x * 2.0

    assert order2_failures(brand_new, []) is not None
    assert "first_order_only" in order2_failures(brand_new, [])[0]
    first_order_only(brand_new, "its pullback calls a compiled kernel")
    try:
        assert order2_failures(brand_new, []) is None
    finally:
        FIRST_ORDER_ONLY.pop(brand_new)


def test_a_case_that_fails_at_order_2_is_reported():
    # np.max at tied data: the pullback's weights jump there, finite differences see it
    from chainrules.testing import case
    tied = case(np.max, np.array([1.0, 3.0, 3.0]))
    failures = order2_failures(np.max, [tied])
    assert failures and "numpy.max" in failures[0] and "direction 0" in failures[0]
    distinct = case(np.max, np.array([1.0, 3.0, 2.0]))
    assert order2_failures(np.max, [tied, distinct]) is None


def test_the_coverage_report_prints_first_order_only_rules_with_their_reasons(capsys):
    from chainrules.coverage import main

    def kernel_op(x):
        return x

    first_order_only(kernel_op, "its pullback calls a compiled kernel in place")
    try:
        assert main([]) == 0
    finally:
        FIRST_ORDER_ONLY.pop(kernel_op)
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "kernel_op" in line)
    assert "first-order only: its pullback calls a compiled kernel in place" in line
    listed = [line for line in out.splitlines() if line.startswith("  ") and
              " first-order only: " in line]
    assert f"; first-order only: {len(listed)}" in out and len(listed) >= 1


def test_sinc_has_its_second_derivative_at_zero():
    # sinc(x) = 1 - (pi x)^2 / 6 + ...: sinc''(0) = -pi^2 / 3 (it was NaN: the quotient
    # branch of the derivative divided by 0 where the series was taken)
    second = chainrules.grad(chainrules.grad(np.sinc))(0.0)
    assert abs(second + np.pi ** 2 / 3) < 1e-9
    hessian = chainrules.hessian(lambda x: np.sum(np.sinc(x)))(np.array([0.0, 0.02]))
    np.testing.assert_allclose(np.diag(hessian), [-np.pi ** 2 / 3, -np.pi ** 2 / 3 *
                                                  (1 - 3 * (np.pi * 0.02) ** 2 / 10)],
                               rtol=1e-6)
