"""check_linear: fail when a computation's cost grows superlinearly with its size.

Complexity is tested by comparing cost at ``n`` and ``8 n`` in one process: for a linear
computation both time and memory grow about 8x, for a quadratic one about 64x. Timing is the
best of several measurements of each size, taken alternately after a warm-up (so a busy
machine inflates it less); memory is the ``tracemalloc`` peak of one run (NumPy reports its
array allocations to tracemalloc).

This is how ChainRules' ``sum(f, xs)`` defect shows: adding closure tangents with ``+`` copies
the captured array once per element, so time grows ~64x for 8x the elements.

>>> def make_case(n):
...     values = [float(i) for i in range(n)]
...     def run():
...         total = 0.0
...         for v in values:
...             total += v * v
...         return total
...     return run
>>> result = check_linear(make_case, 20_000)
>>> result.time_ratio < 12
True
"""

from __future__ import annotations

import dataclasses
import gc
import math
import time
import tracemalloc
from typing import Any, Callable

__all__ = ["Complexity", "check_linear"]


@dataclasses.dataclass(frozen=True)
class Complexity:
    """What `check_linear` measured: seconds per run and tracemalloc peaks (bytes) at ``n``
    and ``factor * n``, and their ratios."""

    n: int
    factor: int
    times: tuple[float, float]
    peaks: tuple[int, int]
    bound: float

    @property
    def time_ratio(self) -> float:
        return self.times[1] / max(self.times[0], 1e-9)

    @property
    def memory_ratio(self) -> float:
        return self.peaks[1] / max(self.peaks[0], 1)

    def __str__(self) -> str:
        n, m = self.n, self.n * self.factor
        return (f"time {self.times[0]:.4g} s at n={n}, {self.times[1]:.4g} s at n={m} "
                f"(ratio {self.time_ratio:.1f}); tracemalloc peak {_bytes(self.peaks[0])} at "
                f"n={n}, {_bytes(self.peaks[1])} at n={m} (ratio {self.memory_ratio:.1f}); "
                f"bound {self.bound:g} for a {self.factor}x larger input")


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
        start = time.perf_counter()
        for _ in range(loops):
            run()
        return (time.perf_counter() - start) / loops
    finally:
        if enabled:
            gc.enable()


def _loops(run: Callable[[], Any], min_time: float) -> int:
    """How many calls make one measurement last at least ``min_time`` seconds."""
    return max(1, math.ceil(min_time / max(_seconds(run, 1), 1e-7)))


def _peak(run: Callable[[], Any]) -> int:
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
                 bound: float = 12.0, repeats: int = 5, memory: bool = True,
                 min_time: float = 0.02, min_peak: int = 256 * 1024, budget: float = 6.0,
                 name: str | None = None) -> Complexity:
    """Run ``make_case(n)()`` and ``make_case(factor * n)()`` and fail on superlinear growth.

    ``make_case(size)`` builds the inputs (not timed) and returns a function of no arguments
    that does the work (for instance a gradient). After a warm-up, the two sizes are timed in
    alternation (each measurement at least ``min_time`` seconds, gc off), ``repeats`` rounds,
    and the best time of each size is kept: the least disturbed by other processes. When the
    ratio is over ``bound`` but under twice that, more rounds are measured (within ``budget``
    seconds) before concluding, since a shared machine can stall any measurement. The
    tracemalloc peak of one run of each size is measured too.

    Fails with `AssertionError` when the time ratio, or the memory ratio (when the larger peak
    exceeds ``min_peak`` bytes), exceeds ``bound``; returns the `Complexity` measured.

    Choose ``n`` so that the steps being counted dominate (Python-level loops, recorded
    operations): one vectorized NumPy call on arrays that outgrow the CPU caches between ``n``
    and ``8 n`` can look superlinear by itself.
    """
    label = name or getattr(make_case, "__qualname__", repr(make_case))
    small, large = make_case(n), make_case(factor * n)
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
    peaks = (_peak(small), _peak(large)) if memory else (0, 0)
    result = Complexity(n, factor, (best[0], best[1]), peaks, bound)
    problems = []
    if result.time_ratio > bound:
        problems.append(f"time grew {result.time_ratio:.1f}x")
    if memory and peaks[1] > min_peak and result.memory_ratio > bound:
        problems.append(f"tracemalloc peak memory grew {result.memory_ratio:.1f}x")
    if problems:
        raise AssertionError(
            f"check_linear({label}): superlinear growth: {' and '.join(problems)} from n={n} "
            f"to n={factor * n} (bound {bound:g}x; linear would be about {factor}x, "
            f"quadratic {factor * factor}x).\nMeasured: {result}")
    return result
