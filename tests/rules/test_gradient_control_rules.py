"""The rules of `stop_gradient` and of `checkpoint`'s recorded call (``checkpointed_call``)
through the rule-testing kit (finite differences, accumulation, order 2): the engine-level
behaviour is tested in tests/ad/test_gradient_control.py."""

from __future__ import annotations

import numpy as np
import pytest

from chainrules import EngineConfig, stop_gradient
from chainrules.ad.transforms.gradient_control import checkpointed_call
from chainrules.testing import case, check_case

x = np.array([0.5, -1.0, 2.0])
ENGINE = EngineConfig()


def _steps(v, c):
    for _ in range(3):
        v = np.sin(v) * c + 0.1 * v
    return v


CASES = [
    case(checkpointed_call, np.sin, x),
    case(checkpointed_call, np.sin, x.astype(np.float32)),
    case(checkpointed_call, np.multiply, x, 2.0),
    case(checkpointed_call, np.exp, x * (1 + 1j)),
    case(checkpointed_call, _steps, x, 0.7, config=ENGINE),   # traced by the engine
    case(stop_gradient, x, non_differentiable=True),
    case(stop_gradient, 1.5, non_differentiable=True),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_gradient_control_rule(rule_case):
    check_case(rule_case)
