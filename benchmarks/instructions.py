"""Machine instructions per iteration of the scalar loop and per grid update of the heat
equation, counted by valgrind's callgrind: a count the machine's load cannot move (unlike a
time), for the gradient, the hvp (forward over reverse) and the plain forward.

    python benchmarks/instructions.py            # scalar loop n = 2,000 to 12,000; heat 20 to 40
    python benchmarks/instructions.py --quick    # scalar loop n = 200 to 1,200; heat 8 to 16

Each count runs ``valgrind --tool=callgrind`` on a fresh interpreter that imports chainrules,
warms the gradient and the hvp up, then runs one more call (``grad``, ``hvp``), the plain
forward (``plain``) or nothing (``none``). Start-up, imports and the warm-up are the same in
all of them, so the instructions of one iteration are the difference between two sizes, less
the ``none`` difference (the inputs and the warm-up), over the difference of the sizes (the
heat equation's size is its grid: ``steps * (n - 2)`` updates). The children run with a fixed
hash seed and one BLAS thread, so that the counts repeat.
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

def heat(u0, steps=%(steps)d, r=0.4):
    n = len(u0)
    u = np.zeros((steps + 1, n), dtype=u0.dtype)
    u[0] = u0
    for k in range(steps):
        for i in range(1, n - 1):
            u[k + 1, i] = u[k, i] + r * (u[k, i + 1] - 2.0 * u[k, i] + u[k, i - 1])
    return np.sum(u[-1] ** 2)

workload, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
f = scalar_loop if workload == "scalar_loop" else heat
x = np.sin(np.linspace(0.0, 3.0, n)) + np.random.default_rng(0).standard_normal(n) * 0.1
v = np.ones(n)
gradient = cr.grad(f)
gradient(x)
cr.hvp(f, x, v)
if mode == "grad":
    gradient(x)
elif mode == "hvp":
    cr.hvp(f, x, v)
elif mode == "plain":
    f(x)
"""
HEAT_STEPS = 40
# workload -> (sizes of the full run, sizes of --quick, iterations at size n)
WORKLOADS = {
    "scalar_loop": ((2_000, 12_000), (200, 1_200), lambda n: n),
    "heat": ((20, 40), (8, 16), lambda n: HEAT_STEPS * (n - 2)),
}


def count(workload: str, mode: str, n: int, script: Path) -> int:
    """The instructions callgrind collects for one child run."""
    completed = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         str(script), workload, mode, str(n)], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"})
    found = re.search(r"Collected\s*:\s*(\d+)", completed.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count:\n{completed.stderr[-2000:]}")
    return int(found.group(1))


def per_iteration(workload: str, small: int, large: int, script: Path) -> dict:
    """Instructions per iteration of the gradient, the hvp and the plain forward."""
    iterations = WORKLOADS[workload][2]
    steps = iterations(large) - iterations(small)
    base = count(workload, "none", large, script) - count(workload, "none", small, script)
    result = {}
    for mode in ("grad", "hvp", "plain"):
        extra = count(workload, mode, large, script) - count(workload, mode, small, script) \
            - base
        result[mode] = extra / steps
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind): nothing counted")
        return 0
    script = Path(__file__).resolve().parent / "results" / "raw" / "instructions_child.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(CHILD % {"steps": HEAT_STEPS})
    for workload, (sizes, quick_sizes, _) in WORKLOADS.items():
        small, large = quick_sizes if options.quick else sizes
        result = per_iteration(workload, small, large, script)
        unit = "iteration" if workload == "scalar_loop" else "grid update"
        print(f"{workload.replace('_', ' ')}, instructions per {unit} (n = {small} to {large}):")
        print(f"  gradient      {result['grad'] / 1e3:8.1f} k")
        print(f"  hvp           {result['hvp'] / 1e3:8.1f} k")
        print(f"  plain forward {result['plain'] / 1e3:8.2f} k")
        print(f"  gradient / plain forward {result['grad'] / result['plain']:6.1f}x")
        print(f"  hvp / gradient           {result['hvp'] / result['grad']:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
