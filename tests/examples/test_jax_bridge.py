"""examples/jax_bridge.py, the second reference bridge of docs/engine-authors.md: chainrules'
rules as ``jax.custom_vjp`` functions pass ``jax.test_util.check_grads`` (NumPy, an operator,
SciPy, a scipy.stats method, a constant keyword, linear algebra) and work under ``jax.jit``.
Run where JAX is installed (`make bench-peers` installs it), in a fresh interpreter."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

BRIDGE = Path(__file__).resolve().parents[2] / "examples" / "jax_bridge.py"

pytestmark = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                                reason="JAX is not installed")


def _run(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-W", "error", *arguments], capture_output=True,
                          text=True, timeout=600, cwd=BRIDGE.parent)


def test_the_bridge_passes_check_grads_and_jit():
    done = _run(str(BRIDGE))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("check_grads passed") == 7
    assert "jit(grad) passed" in done.stdout


def test_the_bridge_docstring_example():
    done = _run("-m", "doctest", BRIDGE.name)
    assert done.returncode == 0, done.stdout + done.stderr
