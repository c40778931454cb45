"""Run the benchmark: every (workload, size, library) point in a fresh process, then the report.

    python benchmarks/run.py            # chainrules, the NumPy baselines and every installed peer
    python benchmarks/run.py --peers    # the same, and say loudly which peers are missing
    python benchmarks/run.py --quick    # a few small sizes, one repeat (a smoke run)

Each point is measured by benchmarks/measure.py in a subprocess with single-threaded BLAS.
Sizes run in increasing order; a library whose next point is predicted (from the growth of its
previous points) to take more than --budget CPU seconds per call, or whose call ran past the
budget, is capped: its larger sizes are reported as "skipped (> budget)".  The budget counts
CPU time so that capping does not depend on what else the (shared) machine is running.

The gradients of every point are checked against the closed form and against chainrules'
gradient; a mismatch is printed loudly and marks the point as failed; a failed chainrules
point makes the exit status 1 (a peer's wrong gradient is reported, not a failure of the run).
Results go to --out (default benchmarks/results/): results.json, results.md and one PNG per
workload; the raw log of each child process goes to <out>/raw/ (kept out of git).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import report
import workloads

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results"
QUICK_OUT = HERE / "results" / "raw" / "quick"   # quick runs never overwrite the real results

THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
              "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "2"}
# Relative tolerance of a gradient check: max |g - reference| / max |reference|.
TOLERANCE = {"float64": 1e-8, "float32": 1e-4}


# ------------------------------------------------------------------------------------------
# Which libraries can run
# ------------------------------------------------------------------------------------------

def chainrules_missing_reason() -> str | None:
    """None if chainrules.grad exists, else why not."""
    try:
        import chainrules
    except Exception as exc:  # noqa: BLE001 - the reason is reported
        return f"import chainrules failed: {type(exc).__name__}: {exc}"
    return None if hasattr(chainrules, "grad") else "chainrules.grad does not exist yet"


def missing_reason(library: str) -> str | None:
    if library == "chainrules":
        return chainrules_missing_reason()
    if importlib.util.find_spec(workloads.IMPORT_NAME[library]) is None:
        return f"{workloads.IMPORT_NAME[library]} is not installed (make bench-peers installs it)"
    return None


# ------------------------------------------------------------------------------------------
# One point
# ------------------------------------------------------------------------------------------

def run_point(workload: workloads.Workload, library: str, size: int, args,
              raw_dir: Path) -> dict:
    """Measure one point in a fresh child process; returns its result record."""
    stem = f"{workload.name}-{library}-{size}"
    gradients_file = raw_dir / f"{stem}.npz"
    command = [sys.executable, str(HERE / "measure.py"), workload.name, library, str(size),
               "--repeats", str(args.repeats),
               "--min-time", str(args.min_time if args.quick else max(args.min_time,
                                                                      workload.min_time)),
               "--budget", str(args.budget),
               "--gradients-out", str(gradients_file)]
    env = {**os.environ, **THREAD_ENV}
    hard_limit = 180 + 2 * args.budget * (args.repeats + 6)   # wall seconds; budget is CPU
    started = time.perf_counter()
    try:
        child = subprocess.run(command, env=env, capture_output=True, text=True,
                               timeout=hard_limit, cwd=HERE)
    except subprocess.TimeoutExpired as exc:
        (raw_dir / f"{stem}.log").write_text(f"killed after {hard_limit:.0f} s\n{exc.stderr}")
        return {"workload": workload.name, "library": library, "size": size,
                "status": "over_budget", "error": f"killed after {hard_limit:.0f} s"}
    (raw_dir / f"{stem}.log").write_text(f"$ {' '.join(command)}\n--- stdout\n{child.stdout}"
                                         f"--- stderr\n{child.stderr}")
    lines = [line for line in child.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        tail = (child.stderr.strip().splitlines() or ["no output"])[-1]
        return {"workload": workload.name, "library": library, "size": size,
                "status": "error", "error": f"child exited with {child.returncode}: {tail}"}
    result = json.loads(lines[-1][len("RESULT "):])
    result["wall"] = time.perf_counter() - started
    if gradients_file.exists():
        result["gradients_file"] = str(gradients_file)
    return result


def skipped(workload: workloads.Workload, library: str, size: int, status: str,
            reason: str) -> dict:
    return {"workload": workload.name, "library": library, "size": size, "status": status,
            "error": reason}


# ------------------------------------------------------------------------------------------
# The time budget: cap a library once its next point would run past it
# ------------------------------------------------------------------------------------------

def call_cost(result: dict) -> float:
    """CPU seconds of the most expensive single step of a point: first call, median call or
    compilation (CPU time, like the budget, so that capping does not depend on the load)."""
    return max(result.get("first_call_cpu") or 0.0, result.get("cpu_time") or 0.0,
               result.get("compile_cpu") or 0.0)


def predicted_cost(history: list[tuple[int, float]], size: int) -> float:
    """Extrapolate the cost of the next size from the last two points (growth at least linear)."""
    (n1, c1) = history[-1]
    slope = 1.0
    if len(history) >= 2:
        (n0, c0) = history[-2]
        if c0 > 0 and c1 > 0 and n1 > n0:
            slope = min(3.0, max(1.0, math.log(c1 / c0) / math.log(n1 / n0)))
    return c1 * (size / n1) ** slope


# ------------------------------------------------------------------------------------------
# Gradient checks
# ------------------------------------------------------------------------------------------

def relative_error(got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...]) -> float:
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
        return math.inf
    errors = []
    for g, w in zip(got, want):
        scale = float(np.max(np.abs(w))) if w.size else 0.0
        diff = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))) if w.size else 0.0
        errors.append(diff / scale if scale > 0 else diff)
    return max(errors)


def shout(message: str) -> None:
    bar = "!" * 100
    print(f"\n{bar}\n!!! {message}\n{bar}\n", file=sys.stderr, flush=True)


def check_gradients(workload: workloads.Workload, size: int, point: list[dict],
                    keep_files: bool) -> None:
    """Compare every library's gradient with the closed form and with chainrules' gradient."""
    inputs = workload.make_inputs(size)
    closed = tuple(np.asarray(g) for g in workload.closed_form(*inputs, **workload.options(size)))
    dtype = str(inputs[0].dtype)
    tolerance = workload.tolerance or TOLERANCE.get(dtype, 1e-8)
    gradients = {}
    for result in point:
        path = result.pop("gradients_file", None)
        if path is None or result["status"] != "ok":
            continue
        with np.load(path) as archive:
            gradients[result["library"]] = tuple(archive[f"arr_{i}"] for i in range(len(archive.files)))
        if not keep_files:
            os.remove(path)
    for result in point:
        library = result["library"]
        if library not in gradients:
            continue
        got = gradients[library]
        problems = []
        result["error_vs_closed_form"] = relative_error(got, closed)
        if result["error_vs_closed_form"] > tolerance:
            problems.append(f"relative error {result['error_vs_closed_form']:.3g} against the "
                            f"closed form (tolerance {tolerance:g})")
        if library != "chainrules" and "chainrules" in gradients:
            result["error_vs_chainrules"] = relative_error(got, gradients["chainrules"])
            if result["error_vs_chainrules"] > tolerance:
                problems.append(f"relative error {result['error_vs_chainrules']:.3g} against "
                                f"chainrules' gradient")
        wrong_dtype = [str(g.dtype) for g in got if str(g.dtype) != dtype]
        if wrong_dtype:
            note = f"gradient dtype {wrong_dtype[0]} for {dtype} input"
            if library == "chainrules":   # the projection invariant: float32 stays float32
                problems.append(note)
            else:
                result["note"] = note
        if problems:
            result["status"] = "mismatch"
            result["error"] = "; ".join(problems)
            shout(f"GRADIENT MISMATCH: {library} on {workload.name} {workload.size_name}={size}: "
                  + result["error"])


# ------------------------------------------------------------------------------------------
# The driver
# ------------------------------------------------------------------------------------------

def describe(result: dict) -> str:
    status = result["status"]
    if status != "ok":
        return f"{status}: {result.get('error', '')}"
    parts = [f"{result['time'] * 1e3:10.2f} ms", f"cpu {result['cpu_time'] * 1e3:.2f} ms",
             f"first {result['first_call'] * 1e3:.1f} ms"]
    if result.get("compile"):
        parts.append(f"compile {result['compile']:.2f} s")
    parts.append(f"rss +{result['rss_growth'] / 2**20:.1f} MB")
    if result.get("tracemalloc_peak") is not None:
        parts.append(f"tracemalloc {result['tracemalloc_peak'] / 2**20:.2f} MB")
    return ", ".join(parts)


def machine_description() -> dict:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            cpu = next(line.split(":", 1)[1].strip() for line in cpuinfo
                       if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    def git(*words: str) -> str:
        try:
            return subprocess.run(["git", *words], cwd=HERE, capture_output=True,
                                  text=True).stdout.strip()
        except OSError:
            return "?"
    commit = git("rev-parse", "--short", "HEAD")
    if git("status", "--porcelain", "--", str(HERE.parent / "src")):
        commit += " (src/ has uncommitted changes)"
    return {"date": datetime.datetime.now().isoformat(timespec="seconds"),
            "python": platform.python_version(), "numpy": np.__version__,
            "platform": platform.platform(), "cpu": cpu, "cores": os.cpu_count(),
            "load_average_at_start": os.getloadavg(), "commit": commit}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", action="store_true",
                        help="expect every peer to be installed; report the missing ones loudly")
    parser.add_argument("--no-peers", action="store_true",
                        help="only chainrules and the NumPy baselines")
    parser.add_argument("--quick", action="store_true",
                        help="a few small sizes, one repeat, output under results/raw/quick")
    parser.add_argument("--libraries", help="comma-separated subset of " + ",".join(workloads.LIBRARIES))
    parser.add_argument("--workloads", help="comma-separated subset of " + ",".join(workloads.WORKLOADS))
    parser.add_argument("--sizes-per-workload", type=int, default=None,
                        help="only the first K sizes of each workload")
    parser.add_argument("--repeats", type=int, default=None,
                        help="gradient calls per point, median reported (default 3, quick 1)")
    parser.add_argument("--min-time", type=float, default=None,
                        help="cheap points make more calls (at most 10) until this many "
                             "seconds are spent (default 2, quick 0; the vectorized workload 5)")
    parser.add_argument("--budget", type=float, default=15.0,
                        help="CPU seconds one gradient call (or a compilation) may take; a "
                             "library is capped beyond (default 15)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="which time the report shows (both are in results.json)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--keep-gradients", action="store_true",
                        help="keep each point's gradients (.npz) in <out>/raw")
    args = parser.parse_args(argv)
    args.repeats = args.repeats or (1 if args.quick else 3)
    if args.min_time is None:
        args.min_time = 0.0 if args.quick else 2.0
    args.out = args.out or (QUICK_OUT if args.quick else DEFAULT_OUT)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    names = args.workloads.split(",") if args.workloads else list(workloads.WORKLOADS)
    selected = [workloads.WORKLOADS[name] for name in names]
    libraries = args.libraries.split(",") if args.libraries else list(workloads.LIBRARIES)
    if args.no_peers:
        libraries = [lib for lib in libraries if lib not in workloads.PEERS]
    missing = {lib: reason for lib in libraries if (reason := missing_reason(lib))}
    for library, reason in missing.items():
        if library == "chainrules":
            shout(f"chainrules is not measured: {reason}")
        elif args.peers:
            shout(f"peer {library} is not measured: {reason}")
        else:
            print(f"note: {library} is not measured: {reason}", file=sys.stderr)

    args.out.mkdir(parents=True, exist_ok=True)
    raw_dir = args.out / "raw"
    raw_dir.mkdir(exist_ok=True)
    results = {"meta": {**machine_description(), "repeats": args.repeats,
                        "min_time": args.min_time, "budget": args.budget, "clock": args.clock,
                        "quick": args.quick, "libraries": libraries,
                        "missing": missing, "tolerance": TOLERANCE},
               "workloads": {w.name: {"title": w.title, "size_name": w.size_name,
                                      "reference_sizes": list(w.reference_sizes)}
                             for w in selected},
               "points": []}
    started = time.perf_counter()
    for workload in selected:
        sizes = workload.quick_sizes if args.quick else workload.sizes
        sizes = sizes[:args.sizes_per_workload] if args.sizes_per_workload else sizes
        history: dict[str, list[tuple[int, float]]] = {lib: [] for lib in libraries}
        capped: dict[str, str] = {}
        for size in sizes:
            print(f"== {workload.name} {workload.size_name}={size}", flush=True)
            point = []
            for library in libraries:
                if library in missing:
                    result = skipped(workload, library, size, "not_installed", missing[library])
                elif (workload.kernel, library) in workloads.NOT_EXPRESSIBLE:
                    result = skipped(workload, library, size, "n/a",
                                     workloads.NOT_EXPRESSIBLE[(workload.kernel, library)])
                elif library in capped:
                    result = skipped(workload, library, size, "skipped_budget", capped[library])
                elif history[library] and \
                        (guess := predicted_cost(history[library], size)) > args.budget:
                    capped[library] = (f"predicted {guess:.0f} s per call > budget "
                                       f"{args.budget:g} s (CPU)")
                    result = skipped(workload, library, size, "skipped_budget", capped[library])
                else:
                    result = run_point(workload, library, size, args, raw_dir)
                    if result["status"] == "ok":
                        history[library].append((size, call_cost(result)))
                    elif result["status"] == "over_budget":
                        capped[library] = (f"a call at {workload.size_name}={size} took more "
                                           f"than {args.budget:g} s (CPU)")
                    elif library in workloads.PEERS:
                        capped[library] = f"failed at {workload.size_name}={size}"
                point.append(result)
            check_gradients(workload, size, point, args.keep_gradients)
            for result in point:
                if result["status"] not in ("not_installed", "n/a"):
                    print(f"   {result['library']:<13} {describe(result)}", flush=True)
            results["points"].extend(point)
            (args.out / "results.json").write_text(json.dumps(results, indent=1))
    results["meta"]["seconds"] = time.perf_counter() - started
    results["meta"]["load_average_at_end"] = os.getloadavg()
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    report.write_report(results, args.out)
    print(f"wrote {args.out / 'results.md'}, results.json and PNGs "
          f"in {results['meta']['seconds']:.0f} s", flush=True)

    # A peer's wrong gradient is its own finding (shouted above, and in the report's problems);
    # only chainrules' make the run fail.
    failed = [p for p in results["points"] if p["library"] == "chainrules"
              and p["status"] in ("mismatch", "error")]
    for p in failed:
        shout(f"FAILED: {p['library']} {p['workload']} size {p['size']}: {p.get('error')}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
