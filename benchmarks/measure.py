"""Measure one benchmark point (library, workload, size) in this fresh process.

Run by benchmarks/run.py, once per point, as

    python benchmarks/measure.py WORKLOAD LIBRARY SIZE --repeats 3 --budget 20 --gradients-out g.npz

It prints one line ``RESULT {json}`` on stdout: the time of each gradient call (forward pass
included; at least --repeats calls, more for cheap points until --min-time seconds are spent;
the reported time is their median), the peak RSS growth of the first call in this
warm-up-free process, the tracemalloc peak of one more call (NumPy-based libraries only), the
compile time (jax.jit) and the library's version.  The gradients go to ``--gradients-out`` for
the driver to check.  A first call (or a compilation) that runs past ``--budget`` seconds of CPU
time is abandoned: status ``over_budget``.  Times are wall-clock; CPU times are recorded too.
"""

from __future__ import annotations

import os

# Single-threaded BLAS and XLA, set before NumPy (or anything that loads a BLAS) is imported.
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import argparse          # noqa: E402
import gc                # noqa: E402
import importlib         # noqa: E402
import importlib.metadata  # noqa: E402
import json              # noqa: E402
import resource          # noqa: E402
import signal            # noqa: E402
import statistics        # noqa: E402
import sys               # noqa: E402
import time              # noqa: E402
import tracemalloc       # noqa: E402
import traceback         # noqa: E402

import numpy as np       # noqa: E402

import workloads         # noqa: E402

# A tracemalloc'd call runs slower than a plain one (every allocation is traced: 3 to 6 times
# here); the extra call is made only when TRACEMALLOC_SLOWDOWN times the time fits the budget.
TRACEMALLOC_SLOWDOWN = 6.0
# Cheap points get more calls (until --min-time seconds are spent), at most this many.
MAX_REPEATS = 10


class OverBudget(Exception):
    """The first call (or the compilation) ran past the time budget."""


def _alarm(signum, frame):
    raise OverBudget()


class TimeLimit:
    """Raise OverBudget inside the block once it has used `seconds` of CPU time (checked between
    bytecodes).  CPU time, not wall time: the budget then does not depend on what else the
    machine is running."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def __enter__(self):
        signal.signal(signal.SIGPROF, _alarm)
        signal.setitimer(signal.ITIMER_PROF, self.seconds)

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_PROF, 0)
        return False


# ------------------------------------------------------------------------------------------
# Resident set size: reset the high-water mark, then read it after the call
# ------------------------------------------------------------------------------------------

def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def _reset_high_water_mark() -> bool:
    """Linux >= 4.0: writing 5 to clear_refs resets VmHWM to the current VmRSS."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


class PeakRSS:
    """Peak RSS growth over a block, in bytes: VmHWM after minus VmRSS before (HWM reset first);
    falls back to the ru_maxrss delta when the high-water mark cannot be reset."""

    def __enter__(self):
        self.method = "VmHWM-VmRSS" if _reset_high_water_mark() else "ru_maxrss delta"
        self.before_kib = (_status_kib("VmRSS") if self.method == "VmHWM-VmRSS"
                           else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        return self

    def __exit__(self, *exc):
        after_kib = (_status_kib("VmHWM") if self.method == "VmHWM-VmRSS"
                     else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        self.growth = max(0, after_kib - self.before_kib) * 1024
        self.before = self.before_kib * 1024
        return False


# ------------------------------------------------------------------------------------------
# The measurement
# ------------------------------------------------------------------------------------------

def _version(distribution: str, module) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return getattr(module, "__version__", "?")


def timed(call):
    """(wall seconds, CPU seconds of this process, result) of one call."""
    gc.collect()
    start, start_cpu = time.perf_counter(), time.process_time()
    out = call()
    return time.perf_counter() - start, time.process_time() - start_cpu, out


def measure(workload_name: str, library: str, size: int, repeats: int, budget: float,
            gradients_out: str | None, min_time: float = 0.0) -> dict:
    workload = workloads.WORKLOADS[workload_name]
    result: dict = {"workload": workload_name, "library": library, "size": size,
                    "status": "ok", "budget": budget}
    module = importlib.import_module(workloads.IMPORT_NAME[library])
    if library.startswith("jax"):
        importlib.import_module("jax.numpy")
    result["version"] = _version(workloads.IMPORT_NAME[library], module)
    result["module_path"] = getattr(module, "__file__", None)

    inputs = workload.make_inputs(size)
    prepare = workloads.implementation(workload, library)
    start_cpu = time.process_time()
    with TimeLimit(budget):
        call, compile_seconds = prepare(*inputs, **workload.options(size))
    result["compile"] = compile_seconds
    result["compile_cpu"] = time.process_time() - start_cpu if compile_seconds else None

    with TimeLimit(budget), PeakRSS() as rss:
        first_time, first_cpu, first_out = timed(call)
    result["rss_growth"], result["rss_method"], result["rss_before"] = \
        rss.growth, rss.method, rss.before
    times, cpu_times = [first_time], [first_cpu]
    while len(times) < repeats or (sum(times) < min_time and len(times) < MAX_REPEATS):
        wall, cpu, _ = timed(call)
        times.append(wall)
        cpu_times.append(cpu)
    result["times"], result["cpu_times"] = times, cpu_times
    result["first_call"], result["first_call_cpu"] = first_time, first_cpu
    result["time"], result["cpu_time"] = statistics.median(times), statistics.median(cpu_times)

    result["tracemalloc_peak"] = None
    if library not in workloads.TRACEMALLOC_VISIBLE:
        result["tracemalloc_note"] = "allocations invisible to tracemalloc"
    elif result["cpu_time"] * TRACEMALLOC_SLOWDOWN > budget:
        result["tracemalloc_note"] = "skipped: the traced call would exceed the time budget"
    else:
        gc.collect()
        tracemalloc.start()
        try:
            call()
            result["tracemalloc_peak"] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    if library != "numpy":   # the plain forward pass has no gradient
        gradients = workloads.to_numpy(first_out)
        result["gradient_dtypes"] = [str(g.dtype) for g in gradients]
        result["gradient_shapes"] = [list(g.shape) for g in gradients]
        if gradients_out:
            np.savez(gradients_out, *gradients)
    result["load_average"] = os.getloadavg()[0]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=sorted(workloads.WORKLOADS))
    parser.add_argument("library", choices=workloads.LIBRARIES)
    parser.add_argument("size", type=int)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget", type=float, default=15.0,
                        help="CPU seconds allowed for the first gradient call (and for compiling)")
    parser.add_argument("--min-time", type=float, default=0.0,
                        help=f"make more calls (up to {MAX_REPEATS}) until this many seconds")
    parser.add_argument("--gradients-out", default=None)
    args = parser.parse_args(argv)
    try:
        result = measure(args.workload, args.library, args.size, args.repeats, args.budget,
                         args.gradients_out, args.min_time)
    except OverBudget:
        result = {"workload": args.workload, "library": args.library, "size": args.size,
                  "status": "over_budget",
                  "error": f"one call took more than {args.budget:g} s of CPU time"}
    except Exception as exc:  # reported in the table, traceback in the raw log
        traceback.print_exc()
        result = {"workload": args.workload, "library": args.library, "size": args.size,
                  "status": "error", "error": f"{type(exc).__name__}: {exc}"[:500]}
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    # Skip interpreter teardown: it is slow for torch and JAX, and a compilation abandoned by
    # the budget alarm can leave XLA in a state that crashes at exit.
    os._exit(code)
