"""Gradients through an installed package written as other people write them: the cost of
``grad`` over the plain forward for twenty functions of ``labtools`` (tests/site_package, which
``make test`` and ``make bench`` install under site-packages, non-editable), and the median.

    python benchmarks/installed_package.py            # every function, best of 15
    python benchmarks/installed_package.py --quick    # best of 3 (the smoke test)

The functions fill preallocated arrays element by element, bind NumPy's and math's names at
import time, cast with ``float64(t)``, update class attributes in place, call SciPy (pinv,
interpolators, image filters) and generated code: what a gradient through a third-party
package meets. Each loss is a real scalar of the package's output; each gradient is checked
against a central difference of the loss along a random direction before it is timed. The
plain forward and the gradient are timed interleaved in one process (best of the repeats),
so that the machine's load affects both alike. Peers cannot run this code unmodified (it is
written for NumPy), so there is no peer column. Results: results/installed_package.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def workloads() -> dict:
    """name -> (loss of one array, its input): twenty functions of the installed package."""
    from labtools import checks, codegen, filters, fitting, geometry, integrators, models
    from labtools import recurrences

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((200, 10)), rng.standard_normal(200)
    labels = (y > 0).astype(float)
    nodes = np.linspace(0.0, 1.0, 12)
    points = np.linspace(0.05, 0.95, 40)
    image = rng.standard_normal((16, 16))
    rows, cols = rng.uniform(1, 14, 30), rng.uniform(1, 14, 30)
    design = rng.standard_normal((20, 4))
    return {
        "moving_average": (lambda x: np.sum(filters.moving_average(x, 5) ** 2),
                           rng.standard_normal(200)),
        "exponential_smoothing": (lambda x: np.sum(filters.exponential_smoothing(x, 0.3) ** 2),
                                  rng.standard_normal(200)),
        "cumulative_maximum_envelope": (
            lambda x: np.sum(filters.cumulative_maximum_envelope(x) ** 2),
            rng.standard_normal(200)),
        "gains": (lambda x: np.sum(filters.gains(x)), rng.uniform(0.1, 0.5, 10)),
        "least_squares (scipy pinv)": (
            lambda t: np.sum(fitting.least_squares(design, t) ** 2), rng.standard_normal(20)),
        "largest_real_root (np.roots)": (
            lambda c: fitting.largest_real_root(c), np.poly([1.0, 2.0, 3.5, 5.0])),
        "clipped (np.place)": (lambda x: np.sum(fitting.clipped(x, 0.5) ** 2),
                               rng.standard_normal(200)),
        "resample (scipy interp1d)": (
            lambda v: np.sum(fitting.resample(nodes, v, points) ** 2),
            np.sin(3 * nodes)),
        "smoothed_edges (scipy.ndimage)": (
            lambda im: np.sum(fitting.smoothed_edges(im)), image),
        "sample (map_coordinates)": (lambda im: np.sum(fitting.sample(im, rows, cols) ** 2),
                                     image),
        "rotate (math)": (lambda p: sum(geometry.rotate(p[:2], p[2])), np.array([0.3, -1.2, 0.7])),
        "soft_distance (math)": (lambda p: geometry.soft_distance(p[:2], p[2:], 0.5),
                                 np.array([0.3, -1.2, 1.1, 0.4])),
        "euler": (lambda y0: np.sum(integrators.euler(0.7, y0, 0.01, 100) ** 2),
                  rng.standard_normal(10)),
        "running_sums": (lambda x: np.sum(integrators.running_sums(x) ** 2),
                         rng.standard_normal(200)),
        "simulate (in-place attributes)": (
            lambda f: np.sum(integrators.simulate(f, steps=50) ** 2), rng.standard_normal(10)),
        "logistic_loss": (lambda w: models.logistic_loss(w, X, labels), rng.standard_normal(10)),
        "blockwise_sum_of_squares": (lambda x: models.blockwise_sum_of_squares(x, 10),
                                     rng.standard_normal((200, 5))),
        "fill (recurrence)": (lambda p: recurrences.fill(p, 200), np.array([0.5, 0.1, 0.3])),
        "contiguous_norm (flags)": (lambda x: checks.contiguous_norm(x[::2]),
                                    rng.standard_normal(400)),
        "generated code (lambdify-like)": (
            lambda p: np.sum(codegen.model(p[0], p[1]) ** 2), np.array([0.4, -0.8])),
    }


def best_times(calls: list, repeats: int) -> list[float]:
    """Best time of each call, the calls interleaved."""
    import time

    for call in calls:
        call()
    best = [float("inf")] * len(calls)
    for _ in range(repeats):
        for which, call in enumerate(calls):
            start = time.perf_counter()
            call()
            best[which] = min(best[which], time.perf_counter() - start)
    return best


def check_gradient(name: str, loss, x: np.ndarray, gradient: np.ndarray) -> None:
    """The gradient along a random direction against a central difference of the loss."""
    direction = np.random.default_rng(1).standard_normal(x.shape)
    h = 1e-6 * max(1.0, float(np.max(np.abs(x))))
    expected = (loss(x + h * direction) - loss(x - h * direction)) / (2 * h)
    got = float(np.sum(gradient * direction))
    if not abs(got - expected) <= 1e-5 * (1 + abs(expected)):
        raise AssertionError(f"{name}: gradient along a direction {got}, central difference "
                             f"{expected}")


def measure(repeats: int) -> dict:
    import chainrules as cr

    results = {}
    for name, (loss, x) in workloads().items():
        gradient = cr.grad(loss)
        check_gradient(name, loss, x, gradient(x))
        plain, differentiated = best_times([lambda: loss(x), lambda: gradient(x)], repeats)
        results[name] = {"plain_us": plain * 1e6, "grad_us": differentiated * 1e6,
                         "ratio": differentiated / plain}
    results["median"] = statistics.median(r["ratio"] for r in results.values())
    return results


def write_report(results: dict, path: Path) -> None:
    lines = ["# Gradients through an installed package", "",
             "`grad` over the plain forward, best of interleaved calls in one process, for "
             "twenty functions of `labtools` (tests/site_package) installed under "
             "site-packages; each gradient checked against a central difference first.", "",
             "| function | plain | grad | grad / plain |", "|---|---|---|---|"]
    for name, row in results.items():
        if name == "median":
            continue
        lines.append(f"| {name} | {row['plain_us']:.1f} us | {row['grad_us']:.1f} us | "
                     f"{row['ratio']:.1f}x |")
    lines += ["", f"Median: {results['median']:.1f}x.", ""]
    path.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="best of 3 (a smoke run)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "installed_package.md")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = parser.parse_args(argv)
    results = measure(3 if args.quick else 15)
    for name, row in results.items():
        if name != "median":
            print(f"{name:34s} plain {row['plain_us']:9.1f} us  grad {row['grad_us']:10.1f} us"
                  f"  {row['ratio']:6.1f}x")
    print(f"median: {results['median']:.1f}x")
    write_report(results, args.out)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
