"""Our own code prints no warning a user did not cause (the "our own noise" part of "never
silent at the edges"): the examples run under ``python -W error`` (the docs' examples do too: tests/docs), and
the engine's derivatives do not trip the user's ``np.errstate(all="raise")``: an infinite
derivative is ``inf``, as in JAX, while the user's own floating-point errors still raise."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import chainrules as cr

ROOT = Path(__file__).resolve().parents[2]
# The bridges to other engines need those engines (tests/examples runs them too).
NEEDS = {"torch_bridge.py": "torch", "jax_bridge.py": "jax"}
EXAMPLES = [pytest.param(path, marks=pytest.mark.skipif(
                NEEDS.get(path.name) is not None and
                importlib.util.find_spec(NEEDS[path.name]) is None,
                reason=f"{NEEDS.get(path.name)} is not installed"))
            for path in sorted((ROOT / "examples").rglob("*.py"))]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_run_with_warnings_as_errors(path):
    done = subprocess.run([sys.executable, "-W", "error", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Warning" not in done.stderr


def test_importing_scipy_and_differentiating_warns_nothing():
    code = ("import warnings; warnings.simplefilter('error')\n"
            "import numpy as np, scipy.stats, scipy.integrate, chainrules as cr\n"
            "print(cr.grad(lambda x: np.sum(scipy.stats.norm.logpdf(x)))(np.ones(2)))\n"
            "print(cr.grad(lambda a: scipy.integrate.simpson(np.sin(a * np.linspace(0, 1, 5)),"
            " x=np.linspace(0, 1, 5)))(1.0))\n")
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == ""


@pytest.mark.parametrize("transform", [
    lambda f, x: cr.grad(f)(x),
    lambda f, x: cr.jvp(f, (x,), (1.0,))[1],
    lambda f, x: cr.jacfwd(f)(x),
    lambda f, x: cr.jacobian(f)(x),
])
def test_an_infinite_derivative_is_inf_under_the_users_errstate(transform):
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert transform(np.sqrt, 0.0) == np.inf
        assert transform(lambda x: np.arcsin(x), 1.0) == np.inf


def test_second_order_under_the_users_errstate():
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cr.hvp(np.sqrt, 0.0, 1.0) == -np.inf
        np.testing.assert_array_equal(
            cr.hvp(lambda x: np.sum(np.sqrt(x)), np.zeros(2), np.ones(2)), [-np.inf] * 2)
        assert cr.grad(cr.grad(np.sqrt))(0.0) == -np.inf


@pytest.mark.parametrize("transform", [
    lambda f, x: cr.grad(f)(x),
    lambda f, x: cr.jvp(f, (x,), (1.0,)),
    lambda f, x: cr.hvp(f, x, 1.0),
])
def test_the_users_own_floating_point_errors_still_raise(transform):
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError, match="invalid value encountered in log"):
            transform(np.log, -1.0)


def test_the_users_own_error_in_a_checkpointed_function_raises():
    def f(x):
        return np.log(x - 1.0)  # x = 1: the user's own divide by zero

    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            cr.grad(cr.checkpoint(f))(1.0)
