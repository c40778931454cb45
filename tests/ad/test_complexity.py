"""The engine is linear: cost at n and 8n compared in one run (time ratio and tracemalloc peak),
never absolute times. Gradients are checked against closed forms on the way."""

from __future__ import annotations

import gc
import resource
import time
import tracemalloc

import numpy as np
import pytest

import chainrules as cr


def _peak(call) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _assert_linear(make_call, small: int, large: int, bound: float, repeats: int = 3):
    """Cost at ``small`` and ``large`` in one run: the best of interleaved repeats (so load
    from other processes hits both sizes alike), and the tracemalloc peak of each."""
    call_small, call_large = make_call(small), make_call(large)
    call_small(), call_large()  # warm up
    best_small = best_large = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        call_small()
        best_small = min(best_small, time.process_time() - start)
        start = time.process_time()
        call_large()
        best_large = min(best_large, time.process_time() - start)
    time_ratio = best_large / best_small
    peak_ratio = _peak(call_large) / _peak(call_small)
    assert time_ratio <= bound, f"time grew {time_ratio:.1f}x for {large // small}x the input"
    assert peak_ratio <= bound, f"memory grew {peak_ratio:.1f}x for {large // small}x the input"
    return time_ratio, peak_ratio


def _scalar_loop(x):
    return sum(x[i] ** 2 for i in range(len(x)))


def _vectorized_closure(x):
    return np.vectorize(lambda i: x[i] ** 2)(np.arange(len(x))).sum()


@pytest.mark.parametrize("loss", [_scalar_loop, _vectorized_closure])
def test_seed_loops_are_exact_and_linear(loss):
    def make_call(n):
        x = np.random.default_rng(n).normal(size=n)

        def call():
            gradient = cr.grad(loss)(x)
            np.testing.assert_array_equal(gradient, 2 * x)  # exact: 2 * x[i] each
        return call

    # Best of 7: bursts of load on a shared machine once pushed a best-of-3 ratio above 10.
    # Quiet runs give 7-9 (the scalar loop's tape leaves the L2 cache at n=32000).
    _assert_linear(make_call, 4000, 32000, bound=10, repeats=7)


def _column_loop(X):
    return sum(np.sum(np.sin(X[:, j]) * X[:, j]) for j in range(X.shape[1]))


def test_column_loop_is_linear_and_small():
    def make_call(m):
        X = np.random.default_rng(m).uniform(size=(100, m))

        def call():
            gradient = cr.grad(_column_loop)(X)
            np.testing.assert_allclose(gradient, np.cos(X) * X + np.sin(X), rtol=1e-12)
        return call

    _assert_linear(make_call, 250, 2000, bound=10)
    X = np.random.default_rng(0).uniform(size=(100, 1000))
    peak = _peak(lambda: cr.grad(_column_loop)(X))
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

    _assert_linear(make_call, 100, 800, bound=10)


def test_a_million_operation_tape_has_no_recursion_limit():
    def chain(x):
        for _ in range(1_000_000):
            x = x + 1.0
        return x * 2.0

    assert cr.grad(chain)(0.5) == 2.0


def _rss_kib() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() // 1024


def test_memory_is_released_after_each_call():
    x = np.random.default_rng(3).normal(size=2000)
    gradient = cr.grad(_scalar_loop)
    for _ in range(20):
        gradient(x)
    gc.collect()
    before = _rss_kib()
    for _ in range(1000):
        gradient(x[:200])
    gc.collect()
    grown = _rss_kib() - before
    assert grown < 8 * 1024, f"1000 gradient calls grew the process by {grown} KiB"
