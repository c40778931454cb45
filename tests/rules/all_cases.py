"""Every kit case of the rule tests, by function: the ``CASES`` lists of
tests/rules/test_*.py (those the installed NumPy and SciPy accept), cheapest first (fewest
elements, double precision first). The order-2 sweep and the import-style test pick from it.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np

from chainrules.testing import RuleCase, perturbable_leaves
from tests.numpy_features import running

RULE_TESTS = Path(__file__).resolve().parent


def double_precision(c: RuleCase) -> bool:
    """Whether every perturbable argument of ``c`` is float64 or complex128."""
    return all(np.result_type(leaf.value) in (np.float64, np.complex128)
               for leaf in perturbable_leaves(c.args))


def _cost(c: RuleCase) -> tuple:
    return (sum(np.size(leaf.value) for leaf in perturbable_leaves(c.args)),
            not double_precision(c), c.id)


def cases_by_function(exclude: tuple = (), covered: bool = False) -> dict:
    """``{function: [cases, cheapest first]}`` over the differentiable cases (a float or
    complex argument, not declared non-differentiable) of every rule test module but
    test_coverage and those named in ``exclude``. With ``covered``, a function also gets the
    cases of wrappers that cover it (``case(wrapper, ..., covers=f)``: its rule run through
    the wrapper's), after its own."""
    found: dict = {}
    for path in sorted(RULE_TESTS.glob("test_*.py")):
        if path.stem == "test_coverage" or path.stem in exclude:
            continue
        module = importlib.import_module(f"tests.rules.{path.stem}")
        for c in running(getattr(module, "CASES", ())):
            if c.options.get("non_differentiable") or not any(
                    np.result_type(leaf.value).kind in "fc"
                    for leaf in perturbable_leaves(c.args)):
                continue
            for function in c.functions if covered else (c.function,):
                found.setdefault(function, []).append(c)
    # a function's own cases first, then the wrappers that cover it, cheapest first in each
    return {f: sorted(cases, key=lambda c: (c.function is not f, _cost(c)))
            for f, cases in found.items()}
