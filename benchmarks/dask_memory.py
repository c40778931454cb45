"""Benchmark of gradients over Dask arrays: peak memory growth and time against the NumPy path.

    python benchmarks/dask_memory.py               # 400 MB of data
    python benchmarks/dask_memory.py --gigabytes 4 # the large variant (make bench runs both)

The workload: a mean of squared residuals ``np.mean((X @ w - y) ** 2)`` of a linear model, its
value and gradient with respect to the NumPy parameters ``w`` (``cr.value_and_grad``), over
data ``X`` (``n x 10`` float64) and ``y`` generated chunk by chunk by ``dask.array.random``
(chunks of 20 MB), so that the data never exist whole in memory. Each measurement runs in a
fresh interpreter; its peak resident memory (``ru_maxrss``) after the gradient, less that just
before it, is the growth the gradient caused. The goal (issue 28): under 200 MiB for 400 MB of
data.

The NumPy path, on the same amount of data where it fits: the data generated as NumPy arrays,
then the same ``value_and_grad``; its time (generation included, as in the Dask path) is the
reference of the ratio. And with the data already in memory: NumPy arrays, against the same
arrays as Dask chunks (``da.from_array``), the gradient alone timed. Every gradient is checked
against the closed form ``2 X^T r / n``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = 10
CHUNK_BYTES = 20 * 2 ** 20

_MEASURE = r"""
import json, resource, sys, time
import numpy as np
import chainrules as cr

mode, rows = sys.argv[1], int(sys.argv[2])
columns, chunk_rows = int(sys.argv[3]), int(sys.argv[4])
w = np.linspace(-1.0, 1.0, columns)

def loss(w, X, y):
    return np.mean((X @ w - y) ** 2)

if mode == "dask":
    import dask, dask.array as da
    rng = da.random.default_rng(0)
    X = rng.standard_normal((rows, columns), chunks=(chunk_rows, columns))
    y = rng.standard_normal(rows, chunks=chunk_rows)
    cr.value_and_grad(loss)(w, X[:chunk_rows], y[:chunk_rows])  # warm: imports, first calls
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    value, gradient = cr.value_and_grad(loss)(w, X, y)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    expected = dask.compute(2 * X.T @ (X @ w - y) / rows)[0]  # the closed form, by Dask
elif mode == "dask-resident":  # the data in memory, as Dask chunks of NumPy arrays
    import dask.array as da
    rng = np.random.default_rng(0)
    X = da.from_array(rng.standard_normal((rows, columns)), chunks=(chunk_rows, columns))
    y = da.from_array(rng.standard_normal(rows), chunks=chunk_rows)
    cr.value_and_grad(loss)(w, X[:chunk_rows], y[:chunk_rows])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    value, gradient = cr.value_and_grad(loss)(w, X, y)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    X, y = X.compute(), y.compute()
    expected = 2 * X.T @ (X @ w - y) / rows
elif mode == "numpy-resident":  # the data in memory, as NumPy arrays
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, columns))
    y = rng.standard_normal(rows)
    cr.value_and_grad(loss)(w, X[:chunk_rows], y[:chunk_rows])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    value, gradient = cr.value_and_grad(loss)(w, X, y)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    expected = 2 * X.T @ (X @ w - y) / rows
else:
    rng = np.random.default_rng(0)
    cr.value_and_grad(loss)(w, np.ones((4, columns)), np.ones(4))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    X = rng.standard_normal((rows, columns))
    y = rng.standard_normal(rows)
    value, gradient = cr.value_and_grad(loss)(w, X, y)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    expected = 2 * X.T @ (X @ w - y) / rows
print(json.dumps({"seconds": seconds, "growth_mib": (peak - before) / 1024,
                  "gradient_ok": bool(np.allclose(gradient, expected, rtol=1e-9)),
                  "gradient_type": type(gradient).__name__}))
"""


def measure(mode: str, data_bytes: float) -> dict:
    rows = int(data_bytes // (8 * (COLUMNS + 1)))
    chunk_rows = CHUNK_BYTES // (8 * COLUMNS)
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, mode, str(rows), str(COLUMNS), str(chunk_rows)],
        capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gigabytes", type=float, nargs="*", default=[0.4, 4.0])
    parser.add_argument("--numpy-up-to", type=float, default=0.4,
                        help="run the NumPy path for sizes up to this many GB")
    options = parser.parse_args()
    print(f"value_and_grad of mean((X @ w - y)**2) w.r.t. NumPy w, X: n x {COLUMNS} float64 "
          f"generated chunk by chunk ({CHUNK_BYTES // 2 ** 20} MiB chunks)")
    print(f"{'size':>8} {'data':>9} {'path':>6} {'seconds':>9} {'peak growth':>12} "
          f"{'vs NumPy':>9}  check")
    for gigabytes in options.gigabytes:
        fits = gigabytes <= options.numpy_up_to
        rows = [("generated", "numpy", measure("numpy", gigabytes * 1e9) if fits else None),
                ("generated", "dask", measure("dask", gigabytes * 1e9))]
        if fits:
            rows += [("in memory", "numpy", measure("numpy-resident", gigabytes * 1e9)),
                     ("in memory", "dask", measure("dask-resident", gigabytes * 1e9))]
        for data, path, result in rows:
            if result is None:
                continue
            reference = next(r for d, p, r in rows if d == data and p == "numpy")
            ratio = f"{result['seconds'] / reference['seconds']:.2f}x" if reference else "-"
            print(f"{gigabytes * 1000:>6.0f}MB {data:>9} {path:>6} {result['seconds']:>9.2f} "
                  f"{result['growth_mib']:>8.0f} MiB {ratio:>9}  "
                  f"{'ok' if result['gradient_ok'] else 'WRONG'} ({result['gradient_type']})")
        growth = rows[1][2]["growth_mib"]
        if gigabytes <= 0.4 and growth >= 200:
            print(f"  over the goal: {growth:.0f} MiB >= 200 MiB")

if __name__ == "__main__":
    main()
