"""Benchmark of the checking mode's cost: each gradient off, with ``chainrules.checking()`` and
with ``checking(directional=True)``, timed interleaved in one process, best of the repeats.

    python benchmarks/checking.py            # the workloads at their sizes
    python benchmarks/checking.py --quick    # small sizes, few repeats (a smoke run)

The ratios to the same gradient with the mode off are what to read (the machine is shared:
absolute times move, ratios measured side by side much less). Results go to
results/checking.md (kept out of git: run it to see).
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np

import chainrules as cr

HERE = Path(__file__).resolve().parent


def scalar_loop(x):
    total = 0.0
    for i in range(len(x)):
        total = total + x[i] ** 2
    return total


def rnn(params):
    W, U = params
    h = np.zeros(W.shape[0])
    for t in range(U.shape[1]):
        h = np.tanh(W @ h + U[:, t])
    return np.sum(h)


def vectorized(X):
    return np.sum(np.sin(X) * X)


def workloads(quick: bool) -> list:
    rng = np.random.default_rng(0)
    n, steps, size = (200, 20, 10_000) if quick else (10_000, 300, 1_000_000)
    return [
        (f"scalar loop, n={n}", scalar_loop, rng.standard_normal(n)),
        (f"RNN, H=32, T={steps}", rnn, (rng.standard_normal((32, 32)) * 0.1,
                                         rng.standard_normal((32, steps)))),
        (f"vectorized sin(X) * X, n={size}", vectorized,
         rng.standard_normal((size // 1000, 1000))),
    ]


def timed(gradient, x) -> float:
    start = time.perf_counter()
    gradient(x)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    repeats = 2 if options.quick else 5
    modes = {"off": lambda: _Off(), "checking()": lambda: cr.checking(),
             "checking(directional=True)": lambda: cr.checking(directional=True)}
    lines = [f"# The checking mode's cost ({platform.processor() or platform.machine()}, "
             f"NumPy {np.__version__})", "",
             "Best of the repeats, interleaved; ratio to the same gradient with the mode off.",
             "", "| workload | off | checking() | checking(directional=True) |",
             "|---|---|---|---|"]
    for name, f, x in workloads(options.quick):
        gradient = cr.grad(f)
        best = {mode: float("inf") for mode in modes}
        for _ in range(repeats):
            for mode, context in modes.items():
                with context():
                    best[mode] = min(best[mode], timed(gradient, x))
        off = best["off"]
        cells = [f"{off * 1e3:.1f} ms"] + [f"{best[m] * 1e3:.1f} ms ({best[m] / off:.2f}x)"
                                             for m in list(modes)[1:]]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    out = HERE / "results" / "checking.md"
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


class _Off:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


if __name__ == "__main__":
    main()
