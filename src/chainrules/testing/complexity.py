"""check_linear: fail when a computation's cost grows superlinearly with its size.

Complexity is tested by comparing cost at ``n`` and ``8 n`` in one process: for a linear
computation cost grows about 8x, for a quadratic one up to 64x. Three costs can be compared:

- a count the caller supplies (``count=``: operations recorded, calls made, elements copied):
  it does not depend on the machine or its load, so it is the most reliable measure;
- the ``tracemalloc`` peak of one run of each size (NumPy reports its array allocations to
  tracemalloc): also independent of load;
- CPU time: the best of several measurements of each size, taken alternately after a warm-up,
  so a busy machine inflates it as little as possible; a linear computation on a machine whose
  cores are all busy was seen to reach 12x for 8x the input (caches shared with the other
  processes), hence the default bound of 24: a linear computation passes with a wide margin
  and one whose quadratic part dominates (about 64x) cannot.

This is how ChainRules' ``sum(f, xs)`` defect shows: adding closure tangents with ``+`` copies
the captured array once per element, so its cost grows ~64x for 8x the elements.

>>> def make_case(n):
...     values = [float(i) for i in range(n)]
...     def run():
...         total = 0.0
...         for v in values:
...             total += v * v
...         return total
...     return run
>>> result = check_linear(make_case, 20_000)
>>> result.time_ratio < 24
True
"""

from __future__ import annotations

import dataclasses
import gc
import math
import time
import tracemalloc
from typing import Any, Callable

__all__ = ["Complexity", "check_linear", "peak_memory"]


@dataclasses.dataclass(frozen=True)
class Complexity:
    """What `check_linear` measured at ``n`` and ``factor * n``: CPU seconds per run (``nan``
    when a count was used instead), tracemalloc peaks in bytes (0 when not measured), the
    caller's counts (``None`` without ``count=``), and their ratios."""

    n: int
    factor: int
    times: tuple[float, float]
    peaks: tuple[int, int]
    bound: float
    counts: tuple[float, float] | None = None

    @property
    def time_ratio(self) -> float:
        return self.times[1] / max(self.times[0], 1e-9)

    @property
    def memory_ratio(self) -> float:
        return self.peaks[1] / max(self.peaks[0], 1)

    @property
    def count_ratio(self) -> float:
        """The ratio of the counts (``nan`` without ``count=``)."""
        if self.counts is None:
            return math.nan
        return self.counts[1] / max(self.counts[0], 1e-9)

    def __str__(self) -> str:
        n, m = self.n, self.n * self.factor
        parts = []
        if self.counts is not None:
            parts.append(f"count {self.counts[0]:g} at n={n}, {self.counts[1]:g} at n={m} "
                         f"(ratio {self.count_ratio:.1f})")
        if not math.isnan(self.times[0]):
            parts.append(f"CPU time {self.times[0]:.4g} s at n={n}, {self.times[1]:.4g} s at "
                         f"n={m} (ratio {self.time_ratio:.1f})")
        if self.peaks != (0, 0):
            parts.append(f"tracemalloc peak {_bytes(self.peaks[0])} at n={n}, "
                         f"{_bytes(self.peaks[1])} at n={m} (ratio {self.memory_ratio:.1f})")
        return "; ".join(parts + [f"bound {self.bound:g} for a {self.factor}x larger input"])


def _bytes(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return str(count)


def _seconds(run: Callable[[], Any], loops: int) -> float:
    enabled = gc.isenabled()
    gc.disable()
    try:
        # CPU time, not wall time: the time this process waits while others run is not counted.
        start = time.process_time()
        for _ in range(loops):
            run()
        return (time.process_time() - start) / loops
    finally:
        if enabled:
            gc.enable()


def _loops(run: Callable[[], Any], min_time: float) -> int:
    """How many calls make one measurement last at least ``min_time`` seconds."""
    return max(1, math.ceil(min_time / max(_seconds(run, 1), 1e-7)))


def peak_memory(run: Callable[[], Any]) -> int:
    """The peak of memory allocated while ``run()`` runs, in bytes above what was allocated
    before (``tracemalloc``; garbage collected first). A count the machine's load does not
    change, for tests of how memory grows.

    >>> peak_memory(lambda: bytearray(10 ** 6)) >= 10 ** 6
    True
    """
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        gc.collect()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        run()
        return max(tracemalloc.get_traced_memory()[1] - base, 0)
    finally:
        if not was_tracing:
            tracemalloc.stop()


def check_linear(make_case: Callable[[int], Callable[[], Any]], n: int, *, factor: int = 8,
                 bound: float = 24.0, repeats: int = 5, memory: bool = True,
                 min_time: float = 0.02, min_peak: int = 256 * 1024, budget: float = 6.0,
                 name: str | None = None,
                 count: Callable[[Callable[[], Any]], float] | None = None) -> Complexity:
    """Run ``make_case(n)()`` and ``make_case(factor * n)()`` and fail on superlinear growth.

    ``make_case(size)`` builds the inputs (not timed) and returns a function of no arguments
    that does the work (for instance a gradient).

    With ``count``, the cost of a run is ``count(run)``: a function that calls ``run`` once
    and returns a number that does not depend on the machine (calls to a function, operations
    recorded, elements copied). Counts are compared as they are, once, and time is not
    measured: the check cannot be disturbed by load. Without ``count``, the cost is CPU time
    (`time.process_time`, gc off): after a warm-up, the two sizes are timed in alternation
    (each measurement at least ``min_time`` seconds), ``repeats`` rounds, and the best time of
    each size is kept: the least disturbed by other processes. When the ratio is over
    ``bound`` but under twice that, more rounds are measured (within ``budget`` seconds)
    before concluding. The tracemalloc peak of one run of each size is measured too (unless
    ``memory=False``).

    Fails with `AssertionError` when the count or time ratio, or the memory ratio (when the
    larger peak exceeds ``min_peak`` bytes), exceeds ``bound``; returns the `Complexity`
    measured.

    The default ``bound`` of 24 for ``factor=8`` is wide on purpose: linear code on a loaded
    machine was measured at up to 12x, quadratic code is up to 64x. Quadratic code gets near
    64x only when its quadratic part dominates at size ``n``: choose ``n`` so that it would
    (a copy of the whole input per element costs more than the per-element work), and so
    that the steps being counted dominate (Python-level loops, recorded operations): one
    vectorized NumPy call on arrays that outgrow the CPU caches between ``n`` and ``8 n`` can
    look superlinear by itself. When the cost can be counted, pass ``count``:

    >>> def make_case(n):
    ...     calls = []
    ...     def step(i):
    ...         calls.append(i)
    ...     def run():
    ...         calls.clear()
    ...         for i in range(n):
    ...             step(i)
    ...         return len(calls)
    ...     return run
    >>> check_linear(make_case, 100, count=lambda run: run()).counts
    (100, 800)
    """
    label = name or getattr(make_case, "__qualname__", repr(make_case))
    small, large = make_case(n), make_case(factor * n)
    counts = None
    if count is not None:
        counts = (count(small), count(large))
        ratio = counts[1] / max(counts[0], 1e-9)
        best = [math.nan, math.nan]
    else:
        small(), large()  # warm up: imports, caches, first-call costs
        loops = (_loops(small, min_time), _loops(large, min_time))
        best = [math.inf, math.inf]
        start = time.perf_counter()
        rounds = 0
        while True:
            for which, run in enumerate((small, large)):
                best[which] = min(best[which], _seconds(run, loops[which]))
            rounds += 1
            ratio = best[1] / max(best[0], 1e-9)
            if rounds < repeats:
                continue
            if ratio <= bound or ratio > 2 * bound or time.perf_counter() - start > budget:
                break
    peaks = (peak_memory(small), peak_memory(large)) if memory else (0, 0)
    result = Complexity(n, factor, (best[0], best[1]), peaks, bound, counts)
    problems = []
    if counts is not None and result.count_ratio > bound:
        problems.append(f"the count grew {result.count_ratio:.1f}x")
    if counts is None and result.time_ratio > bound:
        problems.append(f"time grew {result.time_ratio:.1f}x")
    if memory and peaks[1] > min_peak and result.memory_ratio > bound:
        problems.append(f"tracemalloc peak memory grew {result.memory_ratio:.1f}x")
    if problems:
        raise AssertionError(
            f"check_linear({label}): superlinear growth: {' and '.join(problems)} from n={n} "
            f"to n={factor * n} (bound {bound:g}x; linear would be about {factor}x, "
            f"quadratic {factor * factor}x).\nMeasured: {result}")
    return result
