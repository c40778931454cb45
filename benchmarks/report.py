"""Turn benchmark results into results.md (tables, growth exponents) and one PNG per workload.

    python benchmarks/report.py benchmarks/results/results.json   # rebuild the report

``results`` is the dict that benchmarks/run.py writes to results.json: ``meta``, ``workloads``
(title, size name, reference sizes) and ``points`` (one record per library, workload and size).

    >>> round(growth_exponent([10, 100, 1000], [1.0, 100.0, 10000.0]), 6)
    2.0
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

import numpy as np

import workloads

LIBRARY_LABEL = {"chainrules": "chainrules", "numpy": "NumPy forward",
                 "numpy_manual": "NumPy fwd+bwd (hand-written)", "torch": "PyTorch",
                 "autograd": "autograd", "mygrad": "MyGrad", "jax": "JAX eager",
                 "jax_jit": "jax.jit(grad)"}
COLOR = {"chainrules": "#d62728", "numpy": "#000000", "numpy_manual": "#7f7f7f",
         "torch": "#ff7f0e", "autograd": "#1f77b4", "mygrad": "#2ca02c", "jax": "#9467bd",
         "jax_jit": "#8c564b"}
STATUS_TEXT = {"skipped_budget": "skipped (> budget)", "over_budget": "skipped (> budget)",
               "n/a": "n/a", "not_installed": "not installed", "error": "error",
               "mismatch": "FAILED (gradient mismatch)"}


# ------------------------------------------------------------------------------------------
# Numbers
# ------------------------------------------------------------------------------------------

def growth_exponent(sizes, values) -> float | None:
    """Least-squares slope of log(value) against log(size); None with fewer than 2 points."""
    pairs = [(s, v) for s, v in zip(sizes, values) if v is not None and v > 0]
    if len(pairs) < 2 or len({s for s, _ in pairs}) < 2:
        return None
    log_sizes, log_values = np.log([p[0] for p in pairs]), np.log([p[1] for p in pairs])
    return float(np.polyfit(log_sizes, log_values, 1)[0])


def ok_points(results: dict, workload: str, library: str) -> list[dict]:
    return sorted((p for p in results["points"] if p["workload"] == workload
                   and p["library"] == library and p["status"] == "ok"), key=lambda p: p["size"])


def point(results: dict, workload: str, library: str, size: int) -> dict | None:
    for p in results["points"]:
        if p["workload"] == workload and p["library"] == library and p["size"] == size:
            return p
    return None


def memory_of(p: dict) -> tuple[float | None, str]:
    """The memory figure of a point: tracemalloc peak where it sees the arrays, else RSS growth."""
    if p.get("tracemalloc_peak") is not None:
        return p["tracemalloc_peak"], "tracemalloc"
    if p["library"] in workloads.TRACEMALLOC_VISIBLE:
        return None, "tracemalloc"
    return p.get("rss_growth"), "rss"


def exponents(results: dict, workload: str, library: str) -> dict:
    pts = ok_points(results, workload, library)
    sizes = [p["size"] for p in pts]
    return {"time": growth_exponent(sizes, [p["time"] for p in pts]),
            "tracemalloc": growth_exponent(sizes, [p.get("tracemalloc_peak") for p in pts]),
            "rss": growth_exponent(sizes, [p.get("rss_growth") for p in pts]),
            "compile": growth_exponent(sizes, [p.get("compile") for p in pts]),
            "points": len(pts)}


def select_clock(results: dict, clock: str) -> dict:
    """A copy of results whose "time" is the chosen clock's median: wall (measured) or cpu."""
    if clock == "wall":
        return results
    chosen = copy.deepcopy(results)
    for p in chosen["points"]:
        if p.get("cpu_time") is not None:
            p["wall_time"], p["time"] = p["time"], p["cpu_time"]
            if p.get("compile_cpu") is not None:
                p["compile"] = p["compile_cpu"]
    chosen["meta"]["clock"] = clock
    return chosen


def libraries_in(results: dict) -> list[str]:
    present = {p["library"] for p in results["points"]}
    return [lib for lib in workloads.LIBRARIES if lib in present]


# ------------------------------------------------------------------------------------------
# Formatting
# ------------------------------------------------------------------------------------------

def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    if n < 2**20:
        return f"{n / 2**10:.0f} KiB"
    if n < 2**30:
        return f"{n / 2**20:.3g} MiB"
    return f"{n / 2**30:.3g} GiB"


def fmt_size(n: float) -> str:
    """250, 1k, 30k, 1M, 10M."""
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:g}{suffix}"
    return f"{n:g}"


def fmt_exponent(e: float | None) -> str:
    return "-" if e is None else f"{e:.2f}"


def fmt_ratio(numerator: float | None, denominator: float | None) -> str:
    if not numerator or not denominator:
        return "-"
    return f"{numerator / denominator:.3g}×"


def status_text(p: dict | None) -> str:
    if p is None:
        return "-"
    return STATUS_TEXT.get(p["status"], p["status"])


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines + [""]


# ------------------------------------------------------------------------------------------
# results.md
# ------------------------------------------------------------------------------------------

def summary_section(results: dict, peers: list[str]) -> list[str]:
    clock = results["meta"].get("clock", "wall")
    header = (["workload", "size", f"chainrules time ({clock})", "chainrules CPU time",
               "tracemalloc peak", "RSS growth",
               "NumPy forward", "chainrules / NumPy fwd", "chainrules / hand-written fwd+bwd"]
              + [f"{LIBRARY_LABEL[lib]} / chainrules" for lib in peers]
              + ["chainrules time exponent"])
    rows = []
    for name, info in results["workloads"].items():
        measured = sorted({p["size"] for p in results["points"] if p["workload"] == name})
        reference = [s for s in info["reference_sizes"] if s in measured] or measured[-1:]
        for size in reference:
            cr = point(results, name, "chainrules", size)
            if cr is None:
                continue
            forward = point(results, name, "numpy", size)
            manual = point(results, name, "numpy_manual", size)
            cr_time = cr.get("time") if cr["status"] == "ok" else None
            row = [name, f"{info['size_name']}={size:,}",
                   fmt_time(cr_time) if cr_time else status_text(cr),
                   fmt_time(cr.get("cpu_time")) if (cr.get("cpu_time") or 0) >= 0.05 else "-",
                   fmt_bytes(cr.get("tracemalloc_peak")), fmt_bytes(cr.get("rss_growth")),
                   fmt_time(forward.get("time")) if forward and forward["status"] == "ok" else "-",
                   fmt_ratio(cr_time, forward.get("time") if forward else None),
                   fmt_ratio(cr_time, manual.get("time") if manual and manual["status"] == "ok"
                             else None)]
            for lib in peers:
                p = point(results, name, lib, size)
                if p is not None and p["status"] == "ok":
                    row.append(fmt_ratio(p["time"], cr_time) if cr_time else fmt_time(p["time"]))
                    if lib == "jax_jit" and p.get("compile"):
                        row[-1] += f" (+{fmt_time(p['compile'])} compile)"
                else:
                    row.append(status_text(p))
            row.append(fmt_exponent(exponents(results, name, "chainrules")["time"]))
            rows.append(row)
    return (["## Summary at the reference sizes", "",
             f"Times are {clock}-clock medians (the process's CPU time is shown from 50 ms on; "
             "below, the CPU clock can be as coarse as the scheduler tick). Peer columns: the "
             "peer's time divided by "
             "chainrules' time (above 1: chainrules is faster). jax.jit's compile time is not "
             "in its ratio.", ""]
            + table(header, rows))


def forward_ratio_section(results: dict, libraries: list[str]) -> list[str]:
    """Each library's gradient over the plain NumPy forward, at the reference sizes: what a
    gradient costs against the program without one, for every library in one table."""
    shown = [lib for lib in libraries if lib not in workloads.BASELINES]
    header = ["workload", "size"] + [LIBRARY_LABEL[lib] for lib in shown]
    rows = []
    for name, info in results["workloads"].items():
        measured = sorted({p["size"] for p in results["points"] if p["workload"] == name})
        reference = [s for s in info["reference_sizes"] if s in measured] or measured[-1:]
        for size in reference:
            forward = point(results, name, "numpy", size)
            if forward is None or forward["status"] != "ok":
                continue
            row = [name, f"{info['size_name']}={size:,}"]
            for lib in shown:
                p = point(results, name, lib, size)
                row.append(fmt_ratio(p["time"], forward["time"]) if p is not None and
                           p["status"] == "ok" else status_text(p))
            rows.append(row)
    return (["## Gradient over the plain forward", "",
             "One gradient call (forward included) divided by the same program's NumPy "
             "forward without derivatives, at the reference sizes (jax.jit: without its "
             "compilation).", ""]
            + table(header, rows))


def exponent_section(results: dict, libraries: list[str]) -> list[str]:
    header = ["library"] + [f"{name} ({info['size_name']})"
                            for name, info in results["workloads"].items()]
    rows = []
    for lib in libraries:
        row = [LIBRARY_LABEL[lib]]
        for name in results["workloads"]:
            e = exponents(results, name, lib)
            if e["points"] < 2:
                row.append("-")
                continue
            memory = e["tracemalloc"] if e["tracemalloc"] is not None else e["rss"]
            tag = "" if e["tracemalloc"] is not None else " (RSS)"
            cell = f"{fmt_exponent(e['time'])} / {fmt_exponent(memory)}{tag}"
            if e["compile"] is not None:
                cell += f"; compile {fmt_exponent(e['compile'])}"
            row.append(cell)
        rows.append(row)
    return (["## Growth exponents", "",
             "Least-squares slope of log(cost) against log(size) over the measured points: "
             "`time / memory`; memory is the tracemalloc peak, or the peak RSS growth where "
             "marked (RSS). 1 is linear, 2 quadratic.", ""]
            + table(header, rows))


def workload_section(results: dict, name: str, libraries: list[str]) -> list[str]:
    info = results["workloads"][name]
    sizes = sorted({p["size"] for p in results["points"] if p["workload"] == name})
    shown = [lib for lib in libraries
             if any(p["status"] not in ("n/a", "not_installed") for p in results["points"]
                    if p["workload"] == name and p["library"] == lib)]
    time_rows, memory_rows = [], []
    for size in sizes:
        cr = point(results, name, "chainrules", size)
        cr_time = cr["time"] if cr and cr["status"] == "ok" else None
        time_row, memory_row = [f"{size:,}"], [f"{size:,}"]
        for lib in shown:
            p = point(results, name, lib, size)
            if p is None or p["status"] != "ok":
                time_row.append(status_text(p))
                memory_row.append(status_text(p))
                continue
            cell = fmt_time(p["time"])
            if lib in workloads.PEERS and cr_time:
                cell += f" ({fmt_ratio(p['time'], cr_time)})"
            if p.get("compile"):
                cell += f" + {fmt_time(p['compile'])} compile"
            time_row.append(cell)
            memory_row.append(f"{fmt_bytes(p.get('tracemalloc_peak'))} / "
                              f"{fmt_bytes(p.get('rss_growth'))}")
        time_rows.append(time_row)
        memory_rows.append(memory_row)
    header = [info["size_name"]] + [LIBRARY_LABEL[lib] for lib in shown]
    not_shown = [f"{LIBRARY_LABEL[lib]}: {status_text(p)} ({p.get('error', '')})"
                 for lib in libraries if lib not in shown and lib not in workloads.BASELINES
                 for p in [point(results, name, lib, sizes[0]) if sizes else None] if p]
    lines = [f"### {name}: {info['title']}", "", f"![{name}]({name}.png)", "",
             f"Time of one gradient call, forward pass included (median, "
             f"{results['meta'].get('clock', 'wall')} clock); in parentheses the peer's time "
             "over chainrules'.", ""]
    lines += table(header, time_rows)
    lines += ["Peak memory of one call: tracemalloc peak / peak RSS growth of the first call.", ""]
    lines += table(header, memory_rows)
    if not_shown:
        lines += ["Not measured: " + "; ".join(not_shown), ""]
    return lines


def problems_section(results: dict) -> list[str]:
    lines = ["## Failures, skips and notes", ""]
    seen = set()
    for p in results["points"]:
        if p["status"] in ("ok", "not_installed", "n/a") and not p.get("note"):
            continue
        key = (p["workload"], p["library"], p["status"], p.get("error"), p.get("note"))
        if key in seen:
            continue
        seen.add(key)
        sizes = sorted(q["size"] for q in results["points"]
                       if (q["workload"], q["library"], q["status"], q.get("error"),
                           q.get("note")) == key)
        what = status_text(p) if p["status"] != "ok" else "note"
        lines.append(f"- **{p['library']}**, {p['workload']} at {', '.join(f'{s:,}' for s in sizes)}:"
                     f" {what}: {p.get('error') or p.get('note')}")
    na = sorted({(p["workload"], p["library"], p.get("error", "")) for p in results["points"]
                 if p["status"] == "n/a" and p["library"] not in workloads.BASELINES})
    for workload, library, reason in na:
        lines.append(f"- **{library}**, {workload}: n/a: {reason}")
    missing = results["meta"].get("missing", {})
    for library, reason in missing.items():
        lines.append(f"- **{library}**: not measured: {reason}")
    if len(lines) == 2:
        lines.append("None.")
    return lines + [""]


def method_section(results: dict) -> list[str]:
    meta = results["meta"]
    versions = {}
    for p in results["points"]:
        if p.get("version"):
            versions[p["library"]] = p["version"]
    loads = [p["load_average"] for p in results["points"] if p.get("load_average") is not None]
    load_range = (f" The 1-minute load average seen by the points ranged from {min(loads):.2f} "
                  f"to {max(loads):.2f} on {meta['cores']} cores: above the core count, "
                  "other work was competing and wall times are inflated (the CPU times in "
                  "results.json much less so)." if loads else "")
    return ["## How this was measured", "",
            f"- {meta['date']}, commit {meta['commit']}, {meta['cpu']} ({meta['cores']} cores), "
            f"{meta['platform']}, Python {meta['python']}, NumPy {meta['numpy']}; load average "
            f"{', '.join(f'{x:.2f}' for x in meta['load_average_at_start'])} at the start"
            + (f", {', '.join(f'{x:.2f}' for x in meta['load_average_at_end'])} at the end; "
               f"total {meta['seconds'] / 60:.1f} min." if "seconds" in meta else "."),
            "- Versions: " + ", ".join(f"{LIBRARY_LABEL[lib]} {v}" for lib, v in versions.items()
                                       if lib not in workloads.BASELINES) + ".",
            "- Each point (library, workload, size) runs in a fresh process with "
            "OMP/OPENBLAS/MKL_NUM_THREADS=1 (torch.set_num_threads(1); XLA single-threaded). "
            f"Time: median of at least {meta['repeats']} gradient calls (cheap points: more, "
            f"until {meta.get('min_time', 0):g} s are spent, 5 s for the vectorized workload, "
            "at most 10), each including its "
            "forward pass; the first call is one of them (for JAX eager it includes the per-operation "
            "compilation, and the median is then a warm call). jax.jit's compile time is "
            "measured separately and not included in its run time.",
            "- Memory: peak RSS growth of the first call (VmHWM, reset through "
            "/proc/self/clear_refs, minus VmRSS before the call), for every library; and the "
            "tracemalloc peak of one extra call for the NumPy-based libraries (chainrules, "
            "autograd, MyGrad, NumPy), whose arrays tracemalloc sees.",
            f"- Budget: a library is capped once one call (or compilation) takes, or is "
            f"predicted from its growth to take, more than {meta['budget']:g} s of CPU time: "
            "its larger sizes read \"skipped (> budget)\"." + load_range,
            "- Every gradient is compared with the closed form (hand-written backward pass for "
            "the RNN) and with chainrules' gradient: max |g - ref| / max |ref| must be below "
            f"{meta['tolerance']['float64']:g} (float64) or {meta['tolerance']['float32']:g} "
            "(float32); chainrules' gradient must also keep the input's dtype.",
            ""]


def markdown(results: dict) -> str:
    libraries = libraries_in(results)
    peers = [lib for lib in libraries if lib in workloads.PEERS]
    lines = ["# chainrules benchmark", "",
             "Generated by `make bench` / `make bench-peers` (benchmarks/run.py); "
             "do not edit by hand." + (" **Quick mode: tiny sizes, one repeat.**"
                                       if results["meta"].get("quick") else ""), ""]
    lines += summary_section(results, peers)
    lines += forward_ratio_section(results, libraries)
    lines += exponent_section(results, libraries)
    lines += problems_section(results)
    lines += ["## Per workload", ""]
    for name in results["workloads"]:
        lines += workload_section(results, name, libraries)
    lines += method_section(results)
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# Plots
# ------------------------------------------------------------------------------------------

def plot_workload(results: dict, name: str, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    info = results["workloads"][name]
    fig, (ax_time, ax_traced, ax_rss) = plt.subplots(1, 3, figsize=(17, 5.2))
    for lib in libraries_in(results):
        pts = ok_points(results, name, lib)
        if not pts:
            continue
        sizes = [p["size"] for p in pts]
        style = dict(color=COLOR[lib], marker="o", markersize=4,
                     linewidth=2.4 if lib == "chainrules" else 1.6,
                     zorder=5 if lib == "chainrules" else 2,   # chainrules on top
                     linestyle="--" if lib in workloads.BASELINES else "-")
        label = LIBRARY_LABEL[lib]
        capped = [p for p in results["points"] if p["workload"] == name and p["library"] == lib
                  and p["status"] in ("skipped_budget", "over_budget")]
        if capped:
            label += f" (capped after {max(sizes):,})"
        ax_time.plot(sizes, [p["time"] for p in pts], label=label, **style)
        compiles = [(p["size"], p["compile"]) for p in pts if p.get("compile")]
        if compiles:
            ax_time.plot(*zip(*compiles), color=COLOR[lib], marker="x", linestyle=":",
                         label=f"{LIBRARY_LABEL[lib]} compile")
        traced = [(p["size"], p["tracemalloc_peak"]) for p in pts if p.get("tracemalloc_peak")]
        if traced:
            ax_traced.plot([s for s, _ in traced], [m / 2**20 for _, m in traced],
                           label=LIBRARY_LABEL[lib], **style)
        rss = [(p["size"], p["rss_growth"]) for p in pts if p.get("rss_growth")]
        if rss:
            ax_rss.plot([s for s, _ in rss], [m / 2**20 for _, m in rss],
                        label=LIBRARY_LABEL[lib], **style)
    sizes = sorted({p["size"] for p in results["points"] if p["workload"] == name})
    for ax, ylabel, title in [(ax_time, "seconds per gradient call",
                               f"time ({results['meta'].get('clock', 'wall')} clock)"),
                              (ax_traced, "MiB", "tracemalloc peak (NumPy-based libraries)"),
                              (ax_rss, "MiB", "peak RSS growth, first call")]:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(sizes)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_size(v)))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(info["size_name"])
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="major", alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8)
    absent = []
    for lib in libraries_in(results):
        if ok_points(results, name, lib) or lib in workloads.BASELINES:
            continue
        statuses = [p for p in results["points"] if p["workload"] == name and p["library"] == lib]
        if statuses:
            absent.append(f"{LIBRARY_LABEL[lib]}: {status_text(statuses[0])}")
    title = f"{name}: {info['title']}".replace("`", "")
    if absent:
        title += "\nnot shown: " + "; ".join(absent)
    fig.suptitle(title, fontsize=11)
    fig.subplots_adjust(left=0.05, right=0.99, bottom=0.1, top=0.85, wspace=0.22)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_report(results: dict, out_dir: Path, clock: str | None = None) -> None:
    """results.md and <workload>.png under out_dir (PNGs only if matplotlib is installed),
    showing the wall-clock or the CPU time (default: the run's --clock)."""
    results = select_clock(results, clock or results["meta"].get("clock", "wall"))
    out_dir = Path(out_dir)
    (out_dir / "results.md").write_text(markdown(results))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[bench]'): no plots", file=sys.stderr)
        return
    for name in results["workloads"]:
        plot_workload(results, name, out_dir / f"{name}.png")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Rebuild results.md and the PNGs.")
    parser.add_argument("results", type=Path, nargs="?",
                        default=Path(__file__).parent / "results" / "results.json")
    parser.add_argument("--clock", choices=("wall", "cpu"), default=None)
    args = parser.parse_args()
    write_report(json.loads(args.results.read_text()), args.results.parent, args.clock)
    print(f"wrote {args.results.parent / 'results.md'}")
