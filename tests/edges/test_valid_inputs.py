"""Rules that failed on valid input ("never silent at the edges", rules part): each checked by
the rule-testing kit at orders 1 and 2 where it is a rule, or against finite differences."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import case, check_case, test_frule_order2, test_rrule_order2

sla = pytest.importorskip("scipy.linalg")
sps = pytest.importorskip("scipy.special")

CASES = [
    case(np.triu, np.array([1.0, 2.0, 3.0])), case(np.triu, np.array([1.0, 2.0, 3.0]), -1),
    case(np.tril, np.array([1.0, 2.0, 3.0])), case(np.tril, np.array([1.0, 2.0, 3.0]), 1),
    case(np.tril, np.array([1.0, 2.0], np.float32)),
    case(sla.solve, np.array(4.0), np.array(2.0)), case(sla.solve, np.array(4.0), np.ones(1)),
    case(sla.solve, np.eye(1) * 3.0, np.array(2.0)),
    case(sla.cholesky, np.array(4.0)), case(sla.cholesky, np.array(4.0), lower=True),
]


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_rules_on_valid_input(c):
    check_case(c)


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_rules_on_valid_input_order_2(c):
    if np.result_type(*[a for a in c.args if not isinstance(a, int)]) == np.float32:
        pytest.skip("order 2 is checked in float64")
    test_rrule_order2(c.function, *c.args, **c.fkwargs)
    test_frule_order2(c.function, *c.args, **c.fkwargs)


def test_cho_factor_of_a_0d_array():
    g = cr.grad(lambda a: np.sum(sla.cho_factor(a)[0]))(np.array(4.0))
    assert np.shape(g) == () and g == pytest.approx(0.25)


def test_a_size_one_output_is_a_scalar_output():
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(cr.grad(lambda a: a[None, :] @ a[:, None])(x), 2 * x)


def test_np_ma_shape_helpers_work_on_the_first_trace_of_a_process():
    code = ("import numpy as np, chainrules as cr\n"
            "print(cr.grad(lambda a: np.sum(np.ma.atleast_2d(a) ** 2))(np.ones(3)))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[2. 2. 2.]"
