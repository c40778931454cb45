"""Every registered rule has a test that runs the kit on it.

Rule test modules (tests/rules/test_*.py) declare module-level ``CASES`` lists of
`chainrules.testing.case` records and run them with `check_case`. This test collects the
functions of every ``CASES`` list (a case's ``function`` and the functions it ``covers``) and
fails, listing them, when a function with an rrule or an frule registered by chainrules is in
none.

It runs in a fresh interpreter so the answer depends on nothing pytest did before (test
ordering, rules that test modules register for their own local functions): the registry is
read right after importing chainrules and every module of chainrules.rules, and only then
are the test modules imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

RULE_TESTS = Path(__file__).resolve().parent
ROOT = RULE_TESTS.parents[1]

_SCRIPT = r"""
import importlib, importlib.util, json, pkgutil, sys, traceback
from pathlib import Path

import chainrules
import chainrules.rules
for module in pkgutil.walk_packages(chainrules.rules.__path__, "chainrules.rules."):
    importlib.import_module(module.name)
from chainrules.core import frule, rrule
from chainrules.core.naming import function_name as _name

registered = {"rrule": list(rrule.functions()), "frule": list(frule.functions())}

folder = Path(sys.argv[1])
sys.path[:0] = [str(folder), str(folder.parents[1])]
from tests.numpy_features import running  # cases skipped on these releases cover nothing
covered, errors, modules = set(), [], []
for path in sorted(folder.glob("test_*.py")):
    if path.name == "test_coverage.py":
        continue
    try:
        spec = importlib.util.spec_from_file_location(f"_rule_coverage_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception:
        errors.append(f"{path.name}: import failed:\n{traceback.format_exc()}")
        continue
    cases = getattr(module, "CASES", None)
    if cases is None:
        errors.append(f"{path.name} has no module-level CASES list")
        continue
    modules.append(path.name)
    covered |= {id(f) for c in running(cases) for f in getattr(c, "functions", (c.function,))}

print(json.dumps({
    "modules": modules,
    "errors": errors,
    "uncovered": {kind: sorted({_name(f) for f in functions if id(f) not in covered})
                  for kind, functions in registered.items()},
    "counts": {kind: len(functions) for kind, functions in registered.items()},
}))
"""


def _coverage() -> dict:
    done = subprocess.run([sys.executable, "-c", _SCRIPT, str(RULE_TESTS)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"the coverage script failed:\n{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_registered_rule_is_run_through_the_kit():
    report = _coverage()
    assert not report["errors"], "\n".join(report["errors"])
    assert "test_indexing.py" in report["modules"] and "test_elementwise.py" in report["modules"]
    lines = []
    for kind in ("rrule", "frule"):
        uncovered = report["uncovered"][kind]
        if uncovered:
            lines.append(f"{len(uncovered)} of {report['counts'][kind]} functions with a "
                         f"registered {kind} are in no CASES list of tests/rules/test_*.py: "
                         + ", ".join(uncovered))
    assert not lines, ("\n".join(lines) + "\nAdd case(f, *args) entries for them to the CASES "
                       "of the rule test module of their area (see "
                       "docs/testing-your-own-rules.md).")
