"""The aliasing contract of every registered rule (docs/engine-authors.md, "Aliasing"): an
engine other than chainrules' may add cotangents in place, so what a pullback returns must
never let such an add change something else silently.

Over the cheapest cases of every ``CASES`` list of tests/rules, with the output cotangent
``dy`` given read-only (as chainrules' engine gives it):

- no cotangent shares memory with an argument of the function or with its output;
- a cotangent that shares memory with ``dy`` or with another cotangent is read-only, so an
  in-place add into it raises instead of changing ``dy`` or the other cotangent;
- ``dy`` is not written (it could not be: it is read-only).
"""

from __future__ import annotations

import numpy as np
import pytest

from chainrules import Tangent, unthunk
from chainrules.core.naming import function_name
from chainrules.core.registry import rrule
from chainrules.testing import TestConfig, rand_tangent
from tests.rules.all_cases import cases_by_function

CASES: list = []  # this module checks the others' cases
_PER_FUNCTION = 3


def _arrays(value, found: list) -> list:
    """The ndarrays inside ``value`` (thunks computed; refused derivatives skipped)."""
    try:
        value = unthunk(value)
    except NotImplementedError:
        return found
    if isinstance(value, np.ndarray):
        found.append(value)
    elif isinstance(value, (tuple, list)):
        for item in value:
            _arrays(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _arrays(item, found)
    elif isinstance(value, Tangent):
        for _, item in value.items():
            _arrays(item, found)
    return found


def _read_only(value):
    for array in _arrays(value, []):
        array.setflags(write=False)
    return value


def aliasing_problems(c) -> list[str]:
    result = rrule.with_constants(TestConfig(), c.function, *c.args, **c.fkwargs)
    if result is None:
        return []
    y, pullback = result
    dy = rand_tangent(y, 0)
    if isinstance(dy, np.ndarray):
        dy = dy.copy()
    _read_only(dy)
    cotangents = [_arrays(t, []) for t in pullback(dy)[1:]]
    primals = _arrays(list(c.args), []) + _arrays(y, [])
    shared = _arrays(dy, [])
    problems = []
    for position, arrays in enumerate(cotangents, start=1):
        for array in arrays:
            if any(np.shares_memory(array, p) for p in primals):
                problems.append(f"the cotangent of argument {position} shares memory with an "
                                f"argument or the output")
            others = [a for k, other in enumerate(cotangents, start=1) if k != position
                      for a in other] + shared
            if array.flags.writeable and any(np.shares_memory(array, o) for o in others):
                problems.append(f"the cotangent of argument {position} shares memory with dy "
                                f"or another cotangent and is writable")
    return problems


def _functions() -> list:
    found = cases_by_function()
    return [pytest.param(cases[:_PER_FUNCTION], id=function_name(f))
            for f, cases in sorted(found.items(), key=lambda item: function_name(item[0]))]


def test_the_sweep_reaches_the_registry():
    assert len(_functions()) > 400


@pytest.mark.parametrize("cases", _functions())
def test_pullbacks_never_alias_writably(cases):
    for c in cases:
        problems = aliasing_problems(c)
        assert not problems, f"{c.id}: " + "; ".join(problems)


def test_a_writable_dy_shows_what_the_contract_guards_against():
    # np.add's pullback returns dy itself for both arguments: read-only when dy is
    cotangents = rrule(np.add, np.ones(2), np.ones(2))[1](_read_only(np.ones(2)))
    with pytest.raises(ValueError, match="read-only"):
        np.add(unthunk(cotangents[1]), 1.0, out=unthunk(cotangents[1]))


def test_the_check_finds_both_kinds_of_aliasing():
    import chainrules as cr
    from chainrules import NoTangent
    from chainrules.testing import case

    @cr.primitive
    def shared_sum(x, y):
        return x + y

    @cr.primitive
    def returns_input(x):
        return 2 * x

    @cr.rrule.register(shared_sum)
    def _shared(x, y):
        def pullback(dy):
            g = np.array(dy, copy=True)  # a writable array, returned for both arguments
            return NoTangent(), g, g
        return shared_sum(x, y), pullback

    @cr.rrule.register(returns_input)
    def _input(x):
        return returns_input(x), lambda dy: (NoTangent(), x)

    shared = aliasing_problems(case(shared_sum, np.ones(2), np.ones(2)))
    assert any("another cotangent and is writable" in p for p in shared)
    assert any("argument or the output" in p
               for p in aliasing_problems(case(returns_input, np.ones(2))))
