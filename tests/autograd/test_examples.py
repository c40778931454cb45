"""The programs of docs/migrating-from-autograd.md (examples/autograd/) run, give the right
numbers, and differ from their autograd form only in import lines."""

import pathlib
import runpy

import numpy as np
import pytest

from chainrules.testing import fd_jacobian

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "autograd"
NAMES = ["tanh", "logistic_regression", "neural_net", "fixed_point"]


def run(name):
    return runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="example")


@pytest.mark.parametrize("name", NAMES)
def test_only_import_lines_differ_from_autograd(name):
    source = (EXAMPLES / f"{name}.py").read_text()
    for line in source.splitlines():
        if "chainrules" in line:
            assert line.startswith(("import chainrules.autograd", "from chainrules.autograd")), \
                line
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert all(line.startswith(("import chainrules.autograd", "from chainrules.autograd"))
               for line in imports), imports
    assert "chainrules" not in source.replace("chainrules.autograd", "autograd")


def test_tanh_derivatives_against_closed_forms():
    module = run("tanh")
    x = module["x"]
    t = np.tanh(x)
    s = 1 - t ** 2
    closed = [t, s, -2 * t * s, s * (6 * t ** 2 - 2), 8 * t * s * (2 - 3 * t ** 2)]
    for order, (curve, expected) in enumerate(zip(module["curves"], closed)):
        np.testing.assert_allclose(curve, expected, atol=1e-9, err_msg=f"order {order}")


def test_logistic_regression_descends_along_the_finite_difference_gradient():
    module = run("logistic_regression")
    loss = module["negative_log_likelihood"]
    w = np.array([0.3, -0.2, 0.5])
    np.testing.assert_allclose(module["gradient"](w), fd_jacobian(loss, w).vjp(1.0)[1],
                               rtol=1e-8)
    assert module["final_loss"] < 0.5 * module["initial_loss"]


def test_neural_net_trains():
    module = run("neural_net")
    params = module["params"]
    assert isinstance(params, list) and isinstance(params[0], tuple)
    assert len(module["losses"]) == 300
    assert module["final_loss"] < 0.05 * module["losses"][0]
    objective = module["objective"]
    small = module["init_params"](0.5, [1, 3, 1], np.random.RandomState(1))
    g = module["grad"](objective)(small, 0)
    W0 = small[0][0]
    reference = fd_jacobian(lambda W: objective([(W, small[0][1]), small[1]], 0), W0).vjp(1.0)[1]
    np.testing.assert_allclose(g[0][0], reference, rtol=1e-7)


def test_fixed_point_derivatives():
    module = run("fixed_point")
    assert module["root"] == pytest.approx(5 ** (1 / 3), rel=1e-12)
    assert module["slope"] == pytest.approx(5 ** (-2 / 3) / 3, rel=1e-9)
    assert module["curvature"] == pytest.approx(-2 / 9 * 5 ** (-5 / 3), rel=1e-7)
    reference = fd_jacobian(module["equilibrium"], module["u"])
    rows = [reference.vjp(e)[1] for e in np.eye(2)]
    np.testing.assert_allclose(module["sensitivity"], rows, rtol=1e-7)
