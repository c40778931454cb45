"""examples/torch_bridge.py, the reference bridge of docs/engine-authors.md: chainrules' rules
as PyTorch autograd Functions pass ``torch.autograd.gradcheck`` (NumPy, an operator, SciPy, a
scipy.stats method, keyword arguments, linear algebra), and a refused derivative raises by
name. Run where PyTorch is installed (`make bench-peers` installs it), in a fresh interpreter:
importing PyTorch changes NumPy's threading for the rest of a process."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

BRIDGE = Path(__file__).resolve().parents[2] / "examples" / "torch_bridge.py"

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="PyTorch is not installed")


def _run(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-W", "error", *arguments], capture_output=True,
                          text=True, timeout=600, cwd=BRIDGE.parent)


def test_the_bridge_passes_gradcheck_and_refuses_by_name():
    done = _run(str(BRIDGE))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("gradcheck passed") == 7
    assert "refused by name: scipy.special.jv: the derivative with respect to the order v" \
        in done.stdout


def test_the_bridge_docstring_example():
    done = _run("-m", "doctest", BRIDGE.name)
    assert done.returncode == 0, done.stdout + done.stderr
