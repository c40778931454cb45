"""The forward engine on every registered rule: ``cr.jvp`` of each function of the rule test
modules' ``CASES`` (one case per function) against finite differences.

The kit checks each frule directly (and that it agrees with the rrule); this checks the
engine's plumbing around them: lifting arguments and structures, handing tangents to the rule,
functions whose pushforward is derived from their pullback, and tuple outputs.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

import chainrules as cr
from chainrules.ad.dispatch import creation, routes
from chainrules.core.structure import get_at, leaves, tangent_at
from chainrules.core.tangents import AbstractZero, NoTangent
from chainrules.core.thunks import unthunk
from chainrules.testing import fd_jacobian, rand_tangent
from tests.numpy_features import running

RULE_TESTS = Path(__file__).resolve().parents[1] / "rules"


def _cases() -> list:
    chosen: dict = {}
    for path in sorted(RULE_TESTS.glob("test_*.py")):
        if path.stem == "test_coverage":
            continue
        module = importlib.import_module(f"tests.rules.{path.stem}")
        for c in running(getattr(module, "CASES", ())):
            if c.options.get("non_differentiable") or "tangents" in c.options:
                continue
            chosen.setdefault(id(c.function), c)
    return sorted(chosen.values(), key=lambda c: c.id)


CASES = _cases()


def _numeric_leaves(x, primal):
    """The numeric leaves of the tangent ``x`` of ``primal``, in the primal's leaf order."""
    paths = [path for path, _ in leaves(primal, lambda v: isinstance(
        v, (np.ndarray, np.generic, float, complex)) and not isinstance(v, (bool, np.bool_)))]
    values = []
    for path in paths:
        value = unthunk(tangent_at(x, path))
        if isinstance(value, AbstractZero):
            value = np.zeros(np.shape(get_at(primal, path)))
        values.append(np.asarray(value))
    return values


def _live(function):
    """``function`` as user code reaches it while a trace is active: through its module's
    attribute (the engine routes np.array, scipy.special.logsumexp, ... there)."""
    for module_name, name in [("numpy", n) for n in creation.CREATION + creation.WRITABLE] \
            + routes.ROUTED:
        module = sys.modules.get(module_name)
        if module is not None and getattr(module, name, None) is function:
            return lambda *args, **kwargs: getattr(module, name)(*args, **kwargs)
    return function


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_jvp_of_every_rule_matches_finite_differences(c):
    rng = np.random.default_rng(7)
    tangents = tuple(rand_tangent(arg, rng) for arg in c.args)
    tangents = tuple(cr.ZeroTangent() if isinstance(t, NoTangent) else t for t in tangents)

    live = _live(c.function)

    def f(*args):
        return live(*args, **c.fkwargs)

    y, y_dot = cr.jvp(f, c.args, tangents)
    expected = fd_jacobian(c.function, *c.args, fkwargs=c.fkwargs,
                           step=c.options.get("step", 0.05)).jvp((NoTangent(),) + tangents)
    got, want = _numeric_leaves(y_dot, y), _numeric_leaves(expected, y)
    rtol = max(c.options.get("rtol", 1e-6), 1e-6)
    atol = max(c.options.get("atol", 1e-8), 1e-8)
    if any(np.asarray(a).dtype == np.float32 for a in c.args if hasattr(a, "dtype")):
        rtol, atol = max(rtol, 1e-4), max(atol, 1e-5)
    for g, w in zip(got, want):
        scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * scale)
