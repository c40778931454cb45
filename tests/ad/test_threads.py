"""Threads: concurrent gradient calls leave the garbage collector exactly as the user had it.

Every ``grad`` pauses the cyclic collector (`no_garbage_collection`). Pauses from several
threads overlap in any order; the collector must stay paused while any of them runs and come
back to the user's state (enabled or disabled) when the last one ends, also when a gradient
raises. Gradients are checked against closed forms.
"""

from __future__ import annotations

import gc
import sys
import threading

import numpy as np
import pytest

from chainrules import grad
from chainrules.ad.trace.tape import no_garbage_collection

THREADS = 8
CALLS = 40


@pytest.fixture
def restore_gc():
    """Whatever a test does to the collector, the next test gets it back as it was."""
    was_enabled = gc.isenabled()
    yield
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


def f(x):
    return np.sum(np.sin(x) * x ** 2)


def df(x):
    return np.cos(x) * x ** 2 + 2 * x * np.sin(x)


@pytest.fixture
def frequent_switches():
    """Switch threads every microsecond, so that the grads' pauses really interleave."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


@pytest.mark.parametrize("user_enabled", [True, False], ids=["gc enabled", "gc disabled"])
def test_concurrent_grads_leave_the_collector_as_the_user_had_it(user_enabled, restore_gc,
                                                                  frequent_switches):
    if user_enabled:
        gc.enable()
    else:
        gc.disable()
    start = threading.Barrier(THREADS + 1)
    failures: list = []
    seen_enabled_inside: list = []

    def observed(x):
        # While this function is traced, this grad's pause is active: the collector is off.
        if gc.isenabled():
            seen_enabled_inside.append(threading.get_ident())
        return f(x)

    def worker(k: int) -> None:
        x = np.linspace(0.1, 2.0, 5) * (k + 1)
        start.wait()
        try:
            for _ in range(CALLS):
                if not np.allclose(grad(observed)(x), df(x), rtol=1e-12, atol=1e-12):
                    failures.append(("wrong gradient", k))
        except BaseException as error:  # noqa: BLE001 - reported by the main thread
            failures.append((repr(error), k))

    def raising_worker() -> None:
        def broken(x):
            y = np.sum(x ** 2)
            raise ValueError("broken on purpose")

        start.wait()
        for _ in range(CALLS):
            try:
                grad(broken)(np.ones(3))
            except ValueError:
                continue
            failures.append(("no error", "raising"))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS - 1)]
    threads.append(threading.Thread(target=raising_worker))
    for thread in threads:
        thread.start()
    start.wait()
    user_state_broken = False
    while any(thread.is_alive() for thread in threads):
        if not user_enabled and gc.isenabled():
            user_state_broken = True  # a disabled collector must never come back on
        threading.Event().wait(0.001)
    for thread in threads:
        thread.join()
    assert failures == []
    assert seen_enabled_inside == []
    assert not user_state_broken
    assert gc.isenabled() is user_enabled
    assert no_garbage_collection._active == 0


def test_overlapping_pauses_in_any_order_in_one_thread(restore_gc):
    gc.enable()
    first, second = no_garbage_collection(), no_garbage_collection()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # not the last one: the collector stays paused
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()
    with no_garbage_collection():
        with no_garbage_collection():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.parametrize("order", ["first ends first", "second ends first"])
def test_two_threads_with_overlapping_grads(order, restore_gc):
    """Thread A pauses (the collector was on), B pauses (sees it off), one ends: still off."""
    gc.enable()
    entered = {name: threading.Event() for name in "AB"}
    leave = {name: threading.Event() for name in "AB"}
    left = {name: threading.Event() for name in "AB"}
    inside: dict = {}

    def body(name: str):
        def g(x):
            entered[name].set()
            leave[name].wait(10)
            inside[name] = gc.isenabled()
            return np.sum(x * x)

        def run():
            inside[name + " grad"] = grad(g)(np.array([1.0, 3.0]))
            left[name].set()

        return threading.Thread(target=run)

    a, b = body("A"), body("B")
    a.start()
    entered["A"].wait(10)
    b.start()
    entered["B"].wait(10)
    first, second = ("A", "B") if order == "first ends first" else ("B", "A")
    leave[first].set()
    left[first].wait(10)
    assert not gc.isenabled()  # the other grad still runs
    leave[second].set()
    left[second].wait(10)
    a.join(10)
    b.join(10)
    assert inside["A"] is False and inside["B"] is False
    assert np.array_equal(inside["A grad"], [2.0, 6.0])
    assert np.array_equal(inside["B grad"], [2.0, 6.0])
    assert gc.isenabled()


def test_a_user_enable_during_a_pause_is_kept(restore_gc):
    gc.disable()
    with no_garbage_collection():
        gc.enable()  # the user turns the collector on while a grad runs
    assert gc.isenabled()

    def turns_it_on(x):
        gc.enable()
        return np.sum(x ** 3)

    gc.disable()
    assert np.array_equal(grad(turns_it_on)(np.array([1.0, 2.0])), [3.0, 12.0])
    assert gc.isenabled()


@pytest.mark.parametrize("user_enabled", [True, False])
def test_a_grad_that_raises_restores_the_collector(user_enabled, restore_gc):
    if user_enabled:
        gc.enable()
    else:
        gc.disable()

    def broken(x):
        raise RuntimeError("no")

    with pytest.raises(RuntimeError, match="no"):
        grad(broken)(np.ones(2))
    assert gc.isenabled() is user_enabled
    assert no_garbage_collection._active == 0
