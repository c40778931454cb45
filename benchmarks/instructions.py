"""Machine instructions per iteration of the scalar loop, counted by valgrind's callgrind: a
count the machine's load cannot move (unlike a time).

    python benchmarks/instructions.py            # n = 2,000 and 12,000
    python benchmarks/instructions.py --quick    # n = 200 and 1,200 (the smoke test)

Each count runs ``valgrind --tool=callgrind`` on a fresh interpreter that imports chainrules,
warms the gradient up, then runs one more call (``grad``), the plain forward (``plain``) or
nothing (``none``). Start-up, imports and the warm-up are the same in all three, so the
instructions of one iteration are the difference between two sizes, less the ``none``
difference (the inputs and the warm-up), over the difference of the sizes. The children run
with a fixed hash seed and one BLAS thread, so that the counts repeat.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

CHILD = """
import sys
import numpy as np
import chainrules as cr

def scalar_loop(x):
    return sum(x[i] ** 2 for i in range(len(x)))

x = np.random.default_rng(0).standard_normal(int(sys.argv[2]))
gradient = cr.grad(scalar_loop)
gradient(x)
if sys.argv[1] == "grad":
    gradient(x)
elif sys.argv[1] == "plain":
    scalar_loop(x)
"""


def count(mode: str, n: int, script: Path) -> int:
    """The instructions callgrind collects for one child run."""
    completed = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         str(script), mode, str(n)], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"})
    found = re.search(r"Collected\s*:\s*(\d+)", completed.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count:\n{completed.stderr[-2000:]}")
    return int(found.group(1))


def per_iteration(small: int, large: int, script: Path) -> dict:
    """Instructions per iteration of the gradient and of the plain forward."""
    base = count("none", large, script) - count("none", small, script)
    result = {}
    for mode in ("grad", "plain"):
        extra = count(mode, large, script) - count(mode, small, script) - base
        result[mode] = extra / (large - small)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind): nothing counted")
        return 0
    small, large = (200, 1_200) if options.quick else (2_000, 12_000)
    script = Path(__file__).resolve().parent / "results" / "raw" / "instructions_child.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(CHILD)
    result = per_iteration(small, large, script)
    print(f"scalar loop, instructions per iteration (n = {small} to {large}):")
    print(f"  gradient      {result['grad'] / 1e3:8.1f} k")
    print(f"  plain forward {result['plain'] / 1e3:8.2f} k")
    print(f"  ratio         {result['grad'] / result['plain']:8.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
