"""Dask arrays while a trace runs: they hand operations with traced values to the engine, they
never hold traced values, and rules never compute them.

The rules are written with NumPy's functions, which Dask implements lazily, so a traced value
whose primal is a Dask array (an input, or the result of an operation on one) flows through the
engine unchanged: each rule builds Dask graph, forward and backward. Three things need help:

- **Delegation.** An operation of a Dask array and a traced value (``X @ w``, with ``X`` the
  data and ``w`` traced) reaches Dask first. Dask hands it on (NEP 13) only to values that are
  not valid chunks, and a traced array says it is an ndarray (``isinstance``), so Dask would
  build a graph holding the traced value, whose derivative nobody records. While a trace runs,
  Dask's test (``dask.array.core.is_valid_array_chunk``) says no for traced values, and the
  operation reaches the engine, which records it with the Dask array as a constant.
- **No traced chunks.** ``da.from_array`` (and so ``da.asarray``, ``da.stack`` of a list,
  writes into a Dask array) of a traced value is refused, naming the call: make the data a Dask
  array before the trace; the parameters stay NumPy values.
- **No silent compute.** While a rule runs on Dask arrays (in the trace, and in the backward
  pass), computing one is refused (`lazy_guard`): a rule that calls a function Dask does not
  implement, which Dask would compute into memory (with a warning), raises instead, naming the
  rule's function and what to do. The program's own computes (``float(loss)``, ``.compute()``
  in the function) run as they would without chainrules.

>>> import numpy as np
>>> with lazy_guard():
...     float(np.sum(np.ones(2)))
2.0
"""

from __future__ import annotations

import sys
import threading
import warnings
from typing import Any

from ..trace.errors import TracingError
from ..trace.traced import Traced
from .routes import REROUTED, Rerouted, Swap, loaded_module

__all__ = ["swaps", "lazy_guard"]

_made: list = []


def swaps() -> list:
    """The replacements to install while tracing, once ``dask.array`` is imported."""
    module = loaded_module("dask.array.core")
    if module is None:
        return []
    if _made:
        return _made
    original = module.is_valid_array_chunk

    def is_valid_array_chunk(array: Any) -> bool:
        return type(array) is not Traced and original(array)

    from_array = module.from_array
    rerouted = REROUTED.get(from_array)
    if rerouted is None:
        rerouted = REROUTED[from_array] = Rerouted(from_array, _refusing_traced)
    _made[:] = [Swap(module, "is_valid_array_chunk", is_valid_array_chunk, original), rerouted]
    return _made


def _refusing_traced(own: Any) -> Any:
    def from_array(x: Any, *args: Any, **kwargs: Any) -> Any:
        if type(x) is Traced:
            raise TracingError(
                "dask.array.from_array (or da.asarray, da.stack of a list, a write into a Dask "
                "array) was given a traced value: a Dask array cannot hold one (its derivative "
                "would be lost). Make the data a Dask array before calling grad, and keep the "
                "parameters you differentiate NumPy arrays (or pass them as Dask arrays).")
        return own(x, *args, **kwargs)

    return from_array


_RULE_MODULES = ("chainrules.rules.", "chainrules.core.")


def _rule_frame() -> Any:
    """The innermost frame of a rule or pullback on the stack (a frame of chainrules' rules or
    core), or None when the program's own code asked for the compute."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name == "chainrules.core.duck_arrays":
            return None  # compute_all: the one compute the engine asks for, at the end
        if name.startswith(_RULE_MODULES):
            return frame
        if name.startswith("chainrules.ad."):
            return None  # the engine called the program's code (a traced function)
        frame = frame.f_back
    return None


def _unimplemented_function() -> str | None:
    """The NumPy function Dask was asked for and does not implement, if that is the cause."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "handle_nonmatching_names" and "func" in frame.f_locals:
            func = frame.f_locals["func"]
            return f"{getattr(func, '__module__', 'numpy')}.{getattr(func, '__name__', func)}"
        frame = frame.f_back
    return None


_lock = threading.Lock()
_thread = threading.local()  # .depth: lazy_guard blocks running in this thread
_guarded_threads = 0  # lazy_guard blocks running, in all threads
_installed: list = []  # while any runs: the config change, the warning filter, the scheduler
# configured before it


class lazy_guard:
    """Refuse to compute Dask arrays from rules while the block runs in this thread (the
    program's own computes, and other threads', go to the scheduler they would have gone to).

    Dask's configuration is process-wide: while any thread runs such a block, Dask's
    scheduler is `_refuse_from_rules`, which refuses only in threads inside a block.
    """

    __slots__ = ("active",)

    def __enter__(self) -> None:
        self.active = "dask.array" in sys.modules
        if self.active:
            _enter()
            _thread.depth = getattr(_thread, "depth", 0) + 1

    def __exit__(self, *exc: Any) -> None:
        if self.active:
            _thread.depth -= 1
            _exit()


def _enter() -> None:
    global _guarded_threads
    with _lock:
        _guarded_threads += 1
        if _guarded_threads > 1:
            return
        import dask.config

        previous = dask.config.get("scheduler", None)
        setting = dask.config.set(scheduler=_refuse_from_rules)
        setting.__enter__()
        # Dask warns before computing a function it lacks; that compute is refused here.
        warnings.filterwarnings("ignore", message=".*is not implemented by Dask array",
                                category=FutureWarning)
        _installed[:] = [setting, warnings.filters[0], previous]


def _exit() -> None:
    global _guarded_threads
    with _lock:
        _guarded_threads -= 1
        if _guarded_threads:
            return
        setting, entry, _ = _installed
        _installed.clear()
        setting.__exit__(None, None, None)
        if entry in warnings.filters:  # removed by identity: other filters are left alone
            warnings.filters.remove(entry)
            getattr(warnings, "_filters_mutated", lambda: None)()


def _unguarded_scheduler() -> Any:
    """The scheduler Dask would use without `_refuse_from_rules`: the configured one, else a
    distributed Client's, else Dask arrays' default (threads)."""
    import dask.base
    import dask.threaded

    previous = _installed[2] if _installed else None
    if previous is not None and previous is not _refuse_from_rules:
        return dask.base.get_scheduler(scheduler=previous)
    try:
        from distributed import get_client

        return get_client().get
    except (ImportError, ValueError):
        return dask.threaded.get


def _refuse_from_rules(graph: Any, keys: Any, **kwargs: Any) -> Any:
    frame = _rule_frame() if getattr(_thread, "depth", 0) else None
    if frame is None:
        return _unguarded_scheduler()(graph, keys, **kwargs)
    missing = _unimplemented_function()
    where = f"{frame.f_globals.get('__name__')}.{frame.f_code.co_name}"
    cause = (f"{missing} was called on a Dask array (by the rule code in {where}), and "
             f"Dask does not implement it" if missing else
             f"a rule (in {where}) converts a Dask array to a NumPy array")
    raise TracingError(
        f"{cause}: that would compute the whole array into memory, and chainrules never "
        f"computes a Dask array behind your back. Call .compute() on the input first if "
        f"it fits in memory (the NumPy path), or write this step with functions that "
        f"dask.array implements.")

