"""The engine is linear: cost at n and 8n compared in one run, never absolute times.

Three measures, from the most to the least reliable: the number of operations recorded on the
tape (exact, whatever the machine), the tracemalloc peak (deterministic), and CPU time, the
best of interleaved repeats, against a wide bound: linear code stays under 12x for 8x the input
even with every core busy, while a computation whose quadratic part dominates grows about 64x
(`test_a_deliberately_quadratic_gradient_fails_the_check` shows that it does fail). Gradients
are checked against closed forms on the way.
"""

from __future__ import annotations

import contextlib
import resource
import time

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import peak_memory
from chainrules.ad.trace.tape import Tape

TIME_BOUND = 24  # for 8x the input: linear ~8x (12x seen under load), quadratic ~64x




@contextlib.contextmanager
def _recording_counts():
    """Collect ``len(tape.records)`` of every trace that ends inside the block."""
    counts: list = []
    exit_tape = Tape.__exit__

    def counting_exit(self, *exc):
        counts.append(len(self.records))
        return exit_tape(self, *exc)

    Tape.__exit__ = counting_exit
    try:
        yield counts
    finally:
        Tape.__exit__ = exit_tape


def _operations(call) -> int:
    with _recording_counts() as counts:
        call()
    return sum(counts)


def _best_times(call_small, call_large, repeats: int) -> tuple[float, float]:
    """Best CPU time of each size, measured alternately (so load hits both sizes alike)."""
    call_small(), call_large()  # warm up
    best_small = best_large = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        call_small()
        best_small = min(best_small, time.process_time() - start)
        start = time.process_time()
        call_large()
        best_large = min(best_large, time.process_time() - start)
    return best_small, best_large


def _assert_linear(make_call, small: int, large: int, bound: float = TIME_BOUND,
                   repeats: int = 5):
    """Recorded operations grow at most ``1.25 * large / small`` (exact counts), and the
    tracemalloc peak and the best CPU time at most ``bound``."""
    factor = large // small
    call_small, call_large = make_call(small), make_call(large)
    operations_ratio = _operations(call_large) / _operations(call_small)
    assert operations_ratio <= 1.25 * factor, \
        f"recorded operations grew {operations_ratio:.2f}x for {factor}x the input"
    peak_ratio = peak_memory(call_large) / peak_memory(call_small)
    assert peak_ratio <= bound, f"memory grew {peak_ratio:.1f}x for {factor}x the input"
    best_small, best_large = _best_times(call_small, call_large, repeats)
    time_ratio = best_large / best_small
    print(f"ratios for {factor}x: operations {operations_ratio:.2f}, peak {peak_ratio:.1f}, "
          f"time {time_ratio:.1f}")  # shown by pytest -s
    assert time_ratio <= bound, f"time grew {time_ratio:.1f}x for {factor}x the input"
    return operations_ratio, peak_ratio, time_ratio


def _scalar_loop(x):
    return sum(x[i] ** 2 for i in range(len(x)))


def _vectorized_closure(x):
    return np.vectorize(lambda i: x[i] ** 2)(np.arange(len(x))).sum()


# np.vectorize costs ~50 us per element: smaller sizes keep the test short.
@pytest.mark.parametrize("loss, n", [(_scalar_loop, 4000), (_vectorized_closure, 2000)])
def test_seed_loops_are_exact_and_linear(loss, n):
    def make_call(n):
        x = np.random.default_rng(n).normal(size=n)

        def call():
            gradient = cr.grad(loss)(x)
            np.testing.assert_array_equal(gradient, 2 * x)  # exact: 2 * x[i] each
        return call

    # Quiet runs give 7-9 (the scalar loop's tape leaves the L2 cache at n=32000), runs with
    # both cores busy up to 12: far under the bound, far from a quadratic 64.
    operations, _, _ = _assert_linear(make_call, n, 8 * n)
    assert 7.9 < operations < 8.1  # a fixed number of operations per element


def _column_loop(X):
    return sum(np.sum(np.sin(X[:, j]) * X[:, j]) for j in range(X.shape[1]))


def test_column_loop_is_linear_and_small():
    def make_call(m):
        X = np.random.default_rng(m).uniform(size=(100, m))

        def call():
            gradient = cr.grad(_column_loop)(X)
            np.testing.assert_allclose(gradient, np.cos(X) * X + np.sin(X), rtol=1e-12)
        return call

    _assert_linear(make_call, 250, 2000)
    X = np.random.default_rng(0).uniform(size=(100, 1000))
    peak = peak_memory(lambda: cr.grad(_column_loop)(X))
    budget = 4.4 * 2 ** 20 + X.nbytes  # the seed's figure for Zygote after its fix, plus X
    assert peak <= budget, f"peak {peak / 2 ** 20:.2f} MiB > {budget / 2 ** 20:.2f} MiB"


def test_rnn_loop_is_linear():
    def rnn(W, U):
        h = np.zeros(W.shape[0])
        for t in range(U.shape[1]):
            h = np.tanh(W @ h + U[:, t])
        return np.sum(h)

    def make_call(steps):
        rng = np.random.default_rng(steps)
        W, U = rng.normal(size=(16, 16)) * 0.3, rng.normal(size=(16, steps))
        return lambda: cr.grad(rnn, argnums=(0, 1))(W, U)

    _assert_linear(make_call, 100, 800)


WIDTH = 1024  # elements of x per loop step: the copies, not the steps, dominate the cost


def _adds_x_n_times(x):
    total = x
    for _ in range(len(x) // WIDTH - 1):
        # a new array of x's whole size per step, which sin's record keeps (its derivative
        # reads its input): O(n * size of x) time and memory. (0.0 * cos is exactly 0.)
        total = total + np.sin(total) * 0.0 + x
    return np.sum(total)


def test_a_deliberately_quadratic_gradient_fails_the_check():
    """The check separates: n steps each making an array of WIDTH * n elements is quadratic
    work, with a linear number of recorded operations; the memory and the time ratios both
    catch it, each on its own."""
    def make_call(n):
        x = np.random.default_rng(n).normal(size=WIDTH * n)

        def call():
            np.testing.assert_array_equal(cr.grad(_adds_x_n_times)(x), np.full(x.shape, n))
        return call

    with pytest.raises(AssertionError, match="memory grew"):
        _assert_linear(make_call, 25, 200)
    best_small, best_large = _best_times(make_call(25), make_call(200), repeats=3)
    print(f"quadratic time ratio for 8x: {best_large / best_small:.1f}")
    assert best_large / best_small > TIME_BOUND
