"""Benchmark of ``import chainrules``: best of 5 fresh interpreters, against NumPy alone.

    python benchmarks/import_time.py             # best of 5
    python benchmarks/import_time.py --runs 10

Each run starts a fresh interpreter that times one import statement with
``time.perf_counter`` (the interpreter's own start-up is not counted): ``import numpy`` alone,
``import chainrules`` (NumPy included), and, for reference, ``import chainrules`` followed by
``import scipy.special, scipy.linalg`` (what a program using SciPy pays anyway; chainrules
registers SciPy's rules when it meets them). Bytecode caches are used, as by an installed
package (a first, uncounted run writes them, even if ``PYTHONDONTWRITEBYTECODE`` is set
here). The target of issue 17 is at most 0.2 s for ``import chainrules``; the script says
whether the best run meets it, and lists the modules that ``import chainrules`` adds to
NumPy's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.2  # seconds, best of the runs

_TIMED = r"""
import json, sys, time
before = set(sys.modules)
start = time.perf_counter()
exec(sys.argv[1])
elapsed = time.perf_counter() - start
print(json.dumps({"seconds": elapsed, "modules": sorted(set(sys.modules) - before)}))
"""

STATEMENTS = {
    "numpy": "import numpy",
    "chainrules": "import chainrules",
    "chainrules + scipy.special, scipy.linalg": "import chainrules, scipy.special, scipy.linalg",
}


# As installed programs run: with bytecode caches (written by a first, uncounted run).
_ENVIRONMENT = {name: value for name, value in os.environ.items()
                if name != "PYTHONDONTWRITEBYTECODE"}


def timed_import(statement: str) -> dict:
    """Seconds and new modules of ``statement`` in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", _TIMED, statement], cwd=ROOT,
                          capture_output=True, text=True, check=True, env=_ENVIRONMENT)
    return json.loads(done.stdout.strip().splitlines()[-1])


def best_of(statement: str, runs: int) -> dict:
    """The fastest of ``runs`` fresh-interpreter imports, after one that writes the caches."""
    timed_import(statement)
    return min((timed_import(statement) for _ in range(runs)), key=lambda r: r["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    arguments = parser.parse_args()
    results = {name: best_of(statement, arguments.runs) for name, statement in STATEMENTS.items()}
    print(f"import time, best of {arguments.runs} fresh interpreters")
    for name, result in results.items():
        print(f"  {name:45s} {result['seconds']:7.3f} s")
    numpy, chainrules = results["numpy"], results["chainrules"]
    print(f"  {'chainrules on top of numpy':45s} "
          f"{chainrules['seconds'] - numpy['seconds']:7.3f} s")
    added = sorted(set(chainrules["modules"]) - set(numpy["modules"]))
    outside = [m for m in added if not m.startswith("chainrules")]
    shown = ", ".join(outside[:20]) + (f", ... ({len(outside)} in all)" if len(outside) > 20
                                       else "")
    print(f"modules chainrules imports besides NumPy's and its own: {shown}")
    scipy = [m for m in added if m.split(".")[0] == "scipy"]
    verdict = "meets" if chainrules["seconds"] <= TARGET else "misses"
    print(f"import chainrules {verdict} the {TARGET} s target"
          f"{'; it imported SciPy: ' + ', '.join(scipy[:5]) if scipy else ''}")


if __name__ == "__main__":
    main()
