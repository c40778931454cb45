"""Every differentiable positional argument of a NumPy function with a rule reaches the engine
when it alone holds a traced value. NumPy dispatches a function on some of its arguments only
(``np.interp`` on x, xp and fp; ``np.polyint`` on p; ``np.kaiser`` on none), so a traced value
in another (``left=``, ``k``, ``beta``) runs NumPy's own code, which refuses it: such functions
are routed to the engine while tracing (``ROUTED`` in chainrules.ad.dispatch.routes). For each
rule test case of tests/rules and each float argument with a cotangent formula: jvp in that
argument alone, called through NumPy's namespace as a program calls it, against finite
differences."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import chainrules as cr
from chainrules.core.registry import rrule
from tests.rules.all_cases import cases_by_function, double_precision


def _arguments() -> list:
    """``(module, name, case, position)``: the first double-precision case of each NumPy
    function giving a float array or number at each position its rule differentiates."""
    found = []
    for f, cases in cases_by_function().items():
        module = sys.modules.get(getattr(f, "__module__", None) or "")
        if module is None or not module.__name__.startswith("numpy") or \
                getattr(module, getattr(f, "__name__", ""), None) is not f:
            continue
        entry = rrule.lookup(f)
        rule = getattr(entry[0] if isinstance(entry, tuple) else entry, "__self__", None)
        if not hasattr(rule, "differentiable"):
            continue  # a rule written by hand (getitem, the higher-order ones)
        seen = set()
        for c in filter(double_precision, cases):
            if "float32" in c.id:  # a single-precision output: too coarse for the differences
                continue
            for position, value in enumerate(c.args):
                if position in seen or not isinstance(value, (np.ndarray, float, np.floating)) \
                        or np.result_type(value).kind != "f" \
                        or not rule.differentiable(position):
                    continue
                seen.add(position)
                found.append(pytest.param(module, f.__name__, c, position,
                                          id=f"{c.id}-argument-{position}"))
    return found


@pytest.mark.parametrize("module, name, c, position", _arguments())
def test_an_argument_traced_alone_reaches_the_engine(module, name, c, position):
    def alone(value):
        args = list(c.args)
        args[position] = value
        return getattr(module, name)(*args, **c.fkwargs)  # looked up as a program does

    value = c.args[position]
    direction = np.linspace(0.5, 1.5, np.size(value)).reshape(np.shape(value))
    direction = direction.astype(np.result_type(value)) if np.ndim(value) else float(direction)
    y, tangent = cr.jvp(alone, (value,), (direction,))
    step = 1e-6
    expected = (_leaves(alone(value + step * direction)) -
                _leaves(alone(value - step * direction))) / (2 * step)
    np.testing.assert_allclose(_leaves(tangent, like=y), expected, rtol=1e-4, atol=1e-5)


def _leaves(value, like=None):
    """The float leaves of an output (or of its tangent, shaped ``like`` the output: zeros for
    a zero tangent) flattened into one vector; integer outputs are left out."""
    like = value if like is None else like
    if isinstance(like, (tuple, list)):
        parts = [_leaves(value[i] if isinstance(value, (tuple, list)) else cr.ZeroTangent(),
                         like[i]) for i in range(len(like))]
        return np.concatenate([np.zeros(0)] + parts)
    if np.result_type(like).kind not in "fc":
        return np.zeros(0)
    value = cr.unthunk(value)
    if isinstance(value, (cr.ZeroTangent, cr.NoTangent)):
        return np.zeros(np.size(like), np.result_type(like))
    return np.ravel(np.asarray(value))
