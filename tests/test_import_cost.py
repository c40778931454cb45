"""``import chainrules`` imports nothing it does not need (issue 17): no SciPy (its rules are
registered when the program imports SciPy), no test tools. Counted in a fresh interpreter, not
timed: benchmarks/import_time.py times it (``make bench``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_MODULES_AFTER = r"""
import json, sys
import chainrules
print(json.dumps(sorted(sys.modules)))
"""

# Top-level packages that `import chainrules` must not import: SciPy (lazy rules), and the
# test tools (the kit, chainrules.testing, imports them when it is imported itself).
NOT_IMPORTED = ("scipy", "hypothesis", "pytest", "_pytest", "unittest", "doctest", "pandas",
                "matplotlib", "torch", "jax", "autograd")


def _modules_after(script: str) -> set:
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_chainrules_imports_neither_scipy_nor_test_tools():
    modules = _modules_after(_MODULES_AFTER)
    assert "chainrules" in modules and "chainrules.rules.numpy.elementwise" in modules
    found = sorted(m for m in modules if m.split(".")[0] in NOT_IMPORTED)
    assert found == [], f"import chainrules imported {found[:10]}"
    lazy = sorted(m for m in modules if m.startswith("chainrules.rules.scipy"))
    assert lazy == [], f"SciPy's rule modules were imported eagerly: {lazy}"


def test_a_trace_without_scipy_imports_no_scipy():
    modules = _modules_after(r"""
import json, sys
import numpy as np
import chainrules as cr
assert cr.grad(lambda x: np.sum(np.sin(x) ** 2))(np.ones(3)).shape == (3,)
assert cr.jvp(np.exp, (np.ones(2),), (np.ones(2),))[1].shape == (2,)
print(json.dumps(sorted(sys.modules)))
""")
    assert not [m for m in modules if m.split(".")[0] == "scipy"]


def test_importing_scipy_loads_only_the_rules_of_what_was_imported():
    pytest.importorskip("scipy")
    modules = _modules_after(r"""
import json, sys
import numpy as np
import chainrules as cr
import scipy.signal
assert cr.rrule.lookup(scipy.signal.convolve) is not None
print(json.dumps(sorted(sys.modules)))
""")
    assert "chainrules.rules.scipy.signal.convolution" in modules
    # scipy.signal may import other SciPy modules: their rules come with them, no others
    from chainrules.rules import SCIPY_RULES
    for scipy_module, rule_modules in SCIPY_RULES.items():
        for rule_module in rule_modules:
            if f"chainrules.rules.{rule_module}" in modules:
                assert scipy_module in modules, (scipy_module, rule_module)
