"""NumPy entry points that NumPy's dispatch protocols cannot route to traced values.

``np.array``/``np.asarray``/``np.ascontiguousarray``... do not dispatch on their argument;
``np.vectorize(f)(i)``, ``np.apply_along_axis(f, 0, a)`` and ``np.piecewise`` with plain array
arguments never see the traced values that ``f`` captures; and SciPy's Python-level functions
(``logsumexp``, ``expm``, ...) convert their arguments with ``np.asarray`` before anything can
dispatch. While at least one trace is active, these names are replaced in the ``numpy``
namespace (and ``np.vectorize.__call__`` on the class, so vectorized functions
made before the trace are covered too) by versions that look for traced values and, if they
find some, hand the call to the engine. When no trace is active, NumPy is untouched: there is no
cost at all.

Array creation (``np.array``, ``np.asarray``, ``np.asanyarray``, ``np.ascontiguousarray``,
``np.asfortranarray``) of an argument holding traced values (a traced array, or nested lists
and tuples mixing traced values with plain numbers and arrays) is recorded as one call of
NumPy's own function on the primal values, every argument passed as given: every keyword
(``dtype``, ``ndmin``, ``copy``, ``order``, ``subok``, ``like``, and whatever the installed
NumPy adds) does exactly what NumPy does, and a refused one raises NumPy's own error
(``copy=False`` where a copy is needed: NumPy decides, so NumPy 1.x and 2.x each behave as
themselves; ``order`` lays out the primal, as NumPy would). The rule
(`chainrules.rules.numpy.shape`) reshapes the cotangent back and projects it onto the argument's
dtype: an integer or boolean result is a constant (zero gradient). It computes the value
through NumPy's namespace, so that inside an outer trace (second derivatives) the call is
recorded there too; a list whose traced values are themselves traced is stacked first (its
cotangent could not be taken apart without indexing traced values). Decisions of our own:
``like=`` a traced value passes its primal (the result is a plain, constant ndarray);
``like=`` another library's array raises a TypeError naming ``like=`` when traced values are
involved; a ``dtype=object`` result raises TracingError (it would hide the traced values).
Without traced values, every argument goes to NumPy unchanged.

    >>> import chainrules as cr
    >>> cr.grad(lambda x: np.sum(np.array(x, ndmin=2).T * np.arange(2.0)))(np.ones(2))
    array([1., 1.])

SciPy's Python-level functions with rules (`ROUTED`) and NumPy's creation functions written in
Python are rerouted in place (`_Rerouted`), so a name imported before the trace
(``from scipy.special import logsumexp``) reaches the engine too; compiled extension modules
see NumPy's own functions (`_PLAIN_NUMPY`). Not covered: NumPy's C functions imported by name
before the trace (``from numpy import asarray``: an error says to call ``np.asarray``), and
threads other than the tracing one running NumPy code at the same time.

This module is the top of the dispatch layer: `enter` and `exit` install and remove every
replacement that its parts make (`creation`, `array_likes`, `masked`, `scalar_types`, the
routes of `routes`), and `tracing` runs a level of tracing with them in place, for the
transforms (`chainrules.ad.transforms`). The methods of traced values
(`chainrules.ad.dispatch.methods`) are installed on `Traced` when this module is imported.
"""

from __future__ import annotations

import builtins
import sys
import threading
import types
from typing import Any

import numpy as np

from ...core.registry import add_lazy_loader, load_lazy_rules
from ...rules.numpy.callables import vectorized_call
from ..trace.tape import Level, record
from ..trace.values import holds_traced
from . import array_likes, dask_arrays, interpolants, kernel_densities, masked, math_functions  # noqa: F401
from . import array_api_updates, rotations, spatial_structures
from . import fitpack_splines, scattered_interpolants
from . import sparse_factors
from . import methods, writes  # noqa: F401
from .bound_names import scan, scan_namespace, stdlib_namespace
from .creation import NUMPY_REROUTED, REPLACEMENTS
from .routes import (INHERITED, KEPT, ORIGINALS, REROUTED, ROUTED, ROUTED_METHODS, TRACED_PATHS,
                     Rerouted, Swap, add_loaded_method_lists, loaded_module, routed, routed_method,
                     traced_path)

__all__ = ["enter", "exit", "routing_held", "tracing"]

_lock = threading.Lock()
_depth = 0  # traces running, in all threads


def _function_route(module: Any, name: str) -> Any:
    """How ``module.name`` of `ROUTED` reaches the engine: a Python function in place (every
    reference to it), anything else (NumPy's dispatchers) in the module namespace."""
    original = getattr(module, name, None)
    if original is None:
        return None
    if type(original) is types.FunctionType:
        rerouted = REROUTED.get(original)
        if rerouted is None:
            rerouted = REROUTED[original] = Rerouted(
                original, lambda own: routed(own, recorded=original))
        return rerouted
    return Swap(module, name, routed(original), original)


def _method_route(module: Any, class_name: str, name: str, redirect: Any) -> Any:
    """How a method of `ROUTED_METHODS` reaches the engine: a function that the class defines
    is rerouted in place, so that bound methods taken before the trace (``logpdf =
    st.norm.logpdf``) reach it too; an inherited one is replaced on the class."""
    cls = getattr(module, class_name, None)
    if cls is None or not hasattr(cls, name):
        return None
    own = cls.__dict__.get(name, INHERITED)
    if type(own) is types.FunctionType:
        rerouted = REROUTED.get(own)
        if rerouted is None:
            rerouted = REROUTED[own] = Rerouted(
                own, lambda copy: routed_method(copy, redirect))
        return rerouted
    return Swap(cls, name, routed_method(getattr(cls, name), redirect), own)


_plan: list = []      # what enter() installs: extension shields, routed functions and methods
_plan_key: tuple = ()  # (len(sys.modules), len(ROUTED), len(ROUTED_METHODS)) it was made for


def _routing_plan() -> list:
    """The swaps for the modules imported so far, made again only when that changes."""
    global _plan, _plan_key
    key = (len(sys.modules), len(ROUTED), len(ROUTED_METHODS))
    if key != _plan_key:
        add_loaded_method_lists()
        key = (len(sys.modules), len(ROUTED), len(ROUTED_METHODS))
        _seen_routes.clear()
        _plan, _plan_key = _new_routes() + masked.swaps() + interpolants.swaps() + \
            scattered_interpolants.swaps() + fitpack_splines.swaps() + \
            kernel_densities.swaps() + sparse_factors.swaps() + dask_arrays.swaps() + \
            rotations.swaps() + array_api_updates.swaps() + spatial_structures.swaps(), key
    return _plan


# `_plan` as enter() and exit() apply it: [the plan, its length then, per module (namespace,
# installs, uninstalls), the other swaps, the rerouted functions' `Rerouted.applied`]
_batches: list = [None, 0, (), (), ()]


def _plan_in_batches() -> list:
    """`_routing_plan` with its swaps of module attributes (the compiled modules' shields)
    grouped into one dictionary update per module each way, which is what the swaps one by one
    would do (a module's attributes are its dictionary); the rerouted functions as the
    attributes their swaps set (applied in one loop: no call per function); methods on classes
    as they are. Made again when the plan changes."""
    plan = _routing_plan()
    if _batches[0] is not plan or _batches[1] != len(plan):
        modules: dict = {}
        others, rerouted = [], []
        for swap in plan:
            if _module_swap(swap):
                modules.setdefault(id(swap.owner), (vars(swap.owner), {}, {}))[1][swap.name] = \
                    swap.replacement
            elif type(swap) is Rerouted:
                rerouted.append(swap.applied())
            else:
                others.append(swap)
        for swap in reversed(plan):  # undone last to first, as one by one
            if _module_swap(swap):
                modules[id(swap.owner)][2][swap.name] = swap.original
        _batches[:] = [plan, len(plan), tuple(modules.values()), tuple(others), tuple(rerouted)]
    return _batches


def _install_rerouted(applied: tuple) -> None:
    for function, trampoline, _, signature in applied:
        if signature is not KEPT:  # inspect.signature(function) still reads the original
            function.__signature__ = signature
        function.__code__ = trampoline


def _uninstall_rerouted(applied: tuple) -> None:
    for function, _, code, signature in reversed(applied):
        function.__code__ = code
        if signature is not KEPT:
            del function.__signature__


_numpy_rerouted: list = []  # `Rerouted.applied` of NUMPY_REROUTED, made at the first trace


def _module_swap(swap: Any) -> bool:
    return type(swap) is Swap and type(swap.owner) is types.ModuleType and \
        swap.original is not INHERITED


_seen_routes: set = set()  # the entries of ROUTED and ROUTED_METHODS that `_plan` has seen


def _new_routes() -> list:
    """The swaps for the modules imported so far, leaving out the entries in `_seen_routes`
    (which it adds to): extension shields, routed functions, routed methods."""
    plan = [Swap(module, name, _PLAIN_NUMPY, np)
            for module, name in _numpy_references_of_extensions()]
    for entry in TRACED_PATHS:
        module = loaded_module(entry[0])
        if entry in _seen_routes or module is None:
            continue
        _seen_routes.add(entry)
        function = _traced_path_target(module, entry[1])
        if function is not None and type(function) is not types.FunctionType:
            # a compiled callable (scipy.fft's uarray functions): in the module namespace,
            # and wherever the program bound it to a name (`from scipy.fft import rfft`)
            replacement = traced_path(function, entry[2], _version_name(entry))
            plan.append(Swap(module, entry[1], replacement, function))
            _add_bound(function, replacement)
        elif type(function) is types.FunctionType:
            rerouted = REROUTED.get(function)
            if rerouted is None:
                rerouted = REROUTED[function] = Rerouted(
                    function, lambda own, entry=entry, function=function: traced_path(
                        own, entry[2], _version_name(entry), recorded=function))
            if all(swap is not rerouted for swap in plan):  # an alias: one function, once
                plan.append(rerouted)
    for entry in ROUTED + ROUTED_METHODS:
        module = loaded_module(entry[0])  # only modules the program imported
        if entry in _seen_routes or module is None:
            continue
        _seen_routes.add(entry)
        plan.append(_function_route(module, entry[1]) if len(entry) == 2
                    else _method_route(module, *entry[1:]))
    return [swap for swap in plan if swap is not None]


def _traced_path_target(module: Any, name: str) -> Any:
    """``module.name``, or for ``"Class.method"`` the function the class defines (a static
    method's function)."""
    owner_name, _, attribute = name.rpartition(".")
    if not owner_name:
        return getattr(module, name, None)
    found = vars(getattr(module, owner_name, type)).get(attribute)
    return found.__func__ if type(found) is staticmethod else found


def _version_name(entry: tuple) -> str:
    """The name of a `TRACED_PATHS` entry's version: given, or the function's (a method's)."""
    return entry[3] if len(entry) > 3 else entry[1].rpartition(".")[2]


def _route_imports_while_tracing() -> None:
    """A lazy loader (chainrules.core.registry): modules imported while a trace is active
    (``import scipy.special`` inside the differentiated function) are routed at once."""
    if _depth == 0:
        return
    add_loaded_method_lists()
    installed = {id(swap) for swap in _plan}
    for swap in _new_routes():
        if id(swap) not in installed:  # a rerouted function is one object, however reached
            swap.install()
            _plan.append(swap)


add_lazy_loader(_route_imports_while_tracing)
_import = builtins.__import__
_importing = 0  # nested import statements running under `_import_while_tracing`


def _import_while_tracing(*args: Any, **kwargs: Any) -> Any:
    """Python's ``__import__`` while a trace is active: after an outermost import statement
    the rules and routes of what it imported are in place (`load_lazy_rules`)."""
    global _importing
    _importing += 1
    try:
        module = _import(*args, **kwargs)
    finally:
        _importing -= 1
    if _importing == 0:
        load_lazy_rules()
    return module


def _vectorize_call(self: np.vectorize, *args: Any, **kwargs: Any) -> Any:
    if holds_traced(self.pyfunc) or any(holds_traced(a) for a in args) or any(
            holds_traced(v) for v in kwargs.values()):
        options = {"otypes": self.otypes, "excluded": self.excluded,
                   "signature": self.signature}
        return record(vectorized_call, (self.pyfunc,) + args, {**kwargs, **options})
    return ORIGINALS["vectorize.__call__"](self, *args, **kwargs)


def _plain_numpy() -> types.ModuleType:
    """A stand-in for the ``numpy`` module with NumPy's own functions: what compiled extension
    modules (Cython's ``np.empty(size)`` in ``numpy.random``, SciPy's compiled helpers) see
    while a trace is active. They cast what ``np.empty`` returns to an ndarray without a
    check, so a traced constant (dispatch/writes.py) would crash the interpreter; and they cannot
    take traced values anyway."""
    plain = types.ModuleType("numpy", np.__doc__)
    plain.__dict__.update(vars(np))
    plain.__dict__["__getattr__"] = lambda name: getattr(np, name)  # names NumPy adds lazily
    return plain


_PLAIN_NUMPY = _plain_numpy()


def _numpy_references_of_extensions() -> list:
    """Where compiled extension modules hold the ``numpy`` module (``import numpy as np`` in a
    Cython module): ``(module, global name)``."""
    found = []
    for module in list(sys.modules.values()):
        if str(getattr(module, "__file__", "")).endswith((".so", ".pyd")):
            found += [(module, name) for name, value in list(vars(module).items())
                      if value is np]
    return found


# NumPy's C functions and scalar types, and math's functions, that a program may have bound
# to names of its own before the trace: id -> (original, replacement) (dispatch/bound_names.py)
_BOUND = {id(ORIGINALS[name]): (ORIGINALS[name], replacement)
          for name, replacement in REPLACEMENTS.items()}
_BOUND.update({id(original): (original, replacement)
               for original, replacement in math_functions.REPLACED.items()})
_REPLACED_ORIGINALS = {name: ORIGINALS[name] for name in REPLACEMENTS}


def _add_bound(original: Any, replacement: Any) -> None:
    """Look for names bound to ``original`` too (scanned again at the next trace)."""
    global _bound_key
    if id(original) not in _BOUND:
        _BOUND[id(original)] = (original, replacement)
        _bound_key = -1
        _scans.clear()
_bound_plan: list = []
_bound_key = -1  # len(sys.modules) that `_bound_plan` was made for
_installed_bound: list = []


def _bound_names() -> list:
    """The program's module globals bound to NumPy's or math's objects that a trace replaces:
    all modules, scanned again when more are imported; every time, ``__main__`` and the
    globals of the code calling the transform (a notebook, a doctest, ``exec``'d code), whose
    names change between calls."""
    global _bound_plan, _bound_key
    main = sys.modules.get("__main__")
    if len(sys.modules) != _bound_key:
        _bound_key = len(sys.modules)
        _bound_plan = [entry for entry in scan(_BOUND, writes.LIBRARIES)
                       if entry.namespace is not getattr(main, "__dict__", None)]
    seen = {id(entry.namespace) for entry in _bound_plan}
    found = list(_bound_plan)
    namespaces = [vars(main)] if main is not None else []
    frame = sys._getframe(2)
    while frame is not None:
        namespaces.append(frame.f_globals)
        frame = frame.f_back
    foreign: list = []
    for namespace in namespaces:
        if id(namespace) in seen:
            continue
        seen.add(id(namespace))
        found += _scanned(namespace, foreign)
    for namespace in foreign:  # generated functions' own globals (sympy.lambdify's)
        if id(namespace) not in seen and namespace.get("__name__") not in sys.modules:
            seen.add(id(namespace))
            found += _scanned(namespace, None)
    return found


_scans: dict = {}  # id(namespace) -> (namespace, its size when scanned, entries, foreign)


def _scanned(namespace: dict, foreign: list | None) -> list:
    """`scan_namespace` of a namespace met at every trace (``__main__``, the caller's
    globals), kept while its size stays the same: a name bound since (``from numpy import
    zeros`` typed in a notebook) changes it."""
    kept = _scans.get(id(namespace))
    if kept is None or kept[0] is not namespace or kept[1] != len(namespace):
        if writes.library_namespace(namespace) or stdlib_namespace(namespace):
            entries, found_foreign = [], []
        else:
            found_foreign = []
            entries = scan_namespace(namespace, _BOUND, found_foreign)
        if len(_scans) > 1000:
            _scans.clear()
        kept = _scans[id(namespace)] = (namespace, len(namespace), entries, found_foreign)
    if foreign is not None:
        foreign += kept[3]
    return kept[2]


def enter(level: Any = None) -> None:
    """A trace starts: route the entry points above to the engine (first trace only)."""
    global _depth
    if level is not None:
        writes.enter_level(level)
    global _import
    with _lock:
        if _depth == 0:
            load_lazy_rules()  # SciPy's rules, for the modules imported before the trace
        _depth += 1
        if _depth == 1:
            if builtins.__import__ is not _import_while_tracing:
                _import, builtins.__import__ = builtins.__import__, _import_while_tracing
            array_likes.install()  # first: the replacements below take precedence
            vars(np).update(REPLACEMENTS)  # one dictionary update: every outermost trace
            np.vectorize.__call__ = _vectorize_call
            if len(_numpy_rerouted) != len(NUMPY_REROUTED):
                _numpy_rerouted[:] = [swap.applied() for swap in NUMPY_REROUTED]
            _install_rerouted(_numpy_rerouted)
            _, _, modules, others, rerouted = _plan_in_batches()
            for namespace, installs, _ in modules:
                namespace.update(installs)
            _install_rerouted(rerouted)
            for swap in others:
                swap.install()
            math_functions.install()
            _installed_bound[:] = _bound_names()
            for name in _installed_bound:
                name.install()


def exit(level: Any = None) -> None:
    """A trace ends: restore NumPy when no trace is left."""
    global _depth
    if level is not None:
        writes.exit_level(level)
    with _lock:
        _depth -= 1
        if _depth == 0:
            vars(np).update(_REPLACED_ORIGINALS)
            np.vectorize.__call__ = ORIGINALS["vectorize.__call__"]
            for name in _installed_bound:
                name.uninstall()
            math_functions.uninstall()
            plan, installed, modules, others, rerouted = _batches
            for swap in reversed(plan[installed:]):  # routed while tracing (imports)
                swap.uninstall()
            for swap in reversed(others):
                swap.uninstall()
            _uninstall_rerouted(rerouted)
            for namespace, _, uninstalls in modules:
                namespace.update(uninstalls)
            _uninstall_rerouted(_numpy_rerouted)
            array_likes.uninstall()
            builtins.__import__ = _import


class routing_held:
    """NumPy's API routed to the engine while the block runs, without a level: a backward
    pass whose pullbacks call back into the engine many times (an ODE's adjoint traces the
    right-hand side at every solver stage) enters the routing once, not once per call.

    >>> with routing_held():
    ...     pass
    """

    __slots__ = ()

    def __enter__(self) -> None:
        enter()

    def __exit__(self, *exc: Any) -> None:
        exit()


class tracing:
    """Run the level of tracing ``level`` (a reverse `Tape` or a forward trace) with NumPy's
    API routed to the engine: ``with tracing(tape): ...`` enters the level, then `enter`; on
    the way out, the level ends, then `exit`.

    >>> import numpy as np
    >>> from chainrules.ad.trace.tape import Tape
    >>> from chainrules.ad.transforms.api import ENGINE_CONFIG
    >>> with tracing(Tape(ENGINE_CONFIG)) as tape:
    ...     x = tape.leaf(np.ones(2))
    ...     y = np.asarray(x) * 2.0
    >>> type(y).__name__, tape.finished
    ('Traced', True)
    """

    __slots__ = ("level", "guard")

    def __init__(self, level: Level):
        self.level = level
        self.guard = None

    def __enter__(self) -> Level:
        level = self.level.__enter__()
        enter(self.level)
        if "dask.array" in sys.modules:  # rules run in this thread: they never compute Dask
            self.guard = dask_arrays.lazy_guard()
            self.guard.__enter__()
        return level

    def __exit__(self, *exc: Any) -> None:
        if self.guard is not None:
            self.guard.__exit__(None, None, None)
            self.guard = None
        self.level.__exit__(*exc)
        exit(self.level)
