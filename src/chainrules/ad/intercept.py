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
(`chainrules.rules.shape`) reshapes the cotangent back and projects it onto the argument's
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
"""

from __future__ import annotations

import builtins
import inspect
import sys
import threading
import types
from typing import Any

import numpy as np

from ..core.registry import add_lazy_loader, load_lazy_rules
from . import array_likes, masked
from .scalar_types import stand_ins

__all__ = ["enter", "exit", "CREATION", "ORIGINALS"]

_lock = threading.Lock()
_depth = 0

ORIGINALS = {
    "array": np.array,
    "asarray": np.asarray,
    "asanyarray": np.asanyarray,
    "ascontiguousarray": np.ascontiguousarray,
    "asfortranarray": np.asfortranarray,
    "vectorize.__call__": np.vectorize.__call__,
}


def _holds_traced(x: Any) -> bool:
    if type(x) in _PLAIN:  # the common case, decided before any import
        return False
    from ..core.structure import is_structure, leaves
    from .tracer import Traced

    if type(x) is Traced:
        return True
    return is_structure(x) and any(True for _ in leaves(x, lambda v: type(v) is Traced))


_PLAIN = frozenset({np.ndarray, float, int, complex, bool, str, type(None), np.float64,
                    np.float32, np.complex128, np.int64})


# --- array creation: np.array, np.asarray, ... of traced values -----------------------------------

CREATION = ("array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray")
_FIRST_PARAMETER = {"array": "object"}  # the others call it ``a``


def _creation(name: str) -> Any:
    """The replacement of ``np.<name>``: NumPy itself for plain arguments (every argument
    passed on unchanged), the engine when the array argument holds traced values."""
    original = ORIGINALS[name]
    first = _FIRST_PARAMETER.get(name, "a")

    def create(*args: Any, **kwargs: Any) -> Any:
        if args:
            if _holds_traced(args[0]):
                return _create_traced(name, args, kwargs)
        elif first in kwargs and _holds_traced(kwargs[first]):  # passed by keyword
            kwargs = dict(kwargs)
            return _create_traced(name, (kwargs.pop(first),), kwargs)
        if kwargs and kwargs.get("like") is not None:
            kwargs = {**kwargs, "like": _like(name, kwargs["like"], strict=False)}
        result = original(*args, **kwargs)
        if name == "array" and type(result) is np.ndarray and result.base is None and \
                (not args or result is not args[0]):
            # a new array: the function may write traced values into it (ad/writes.py)
            return _writes().created(result)
        return result

    create.__name__ = create.__qualname__ = name
    create.__doc__ = original.__doc__
    create.__wrapped__ = original
    return create


def _create_traced(name: str, args: tuple, kwargs: dict) -> Any:
    """``np.<name>(*args, **kwargs)`` where ``args[0]`` holds traced values: recorded as one
    call of NumPy's own function, whose rule (`chainrules.rules.shape`) reshapes the cotangent
    back to the argument's shape and projects it onto the argument's dtype."""
    from .tape import TracingError, record
    from .tracer import Traced

    obj = args[0]
    if type(obj) is Traced and name in _SAME_VALUES and _keeps_dtype(obj, args, kwargs):
        # The same values, shape and dtype, and traced values are immutable: nothing to record
        # (a number stays a number rather than becoming a 0-d array: scalar code stays fast).
        return obj
    if "like" in kwargs:
        kwargs = {**kwargs, "like": _like(name, kwargs["like"])}
    if type(obj) is not Traced and _inside_outer_trace(obj):
        return _create_nested(name, args, kwargs)
    return _no_objects(name, record(ORIGINALS[name], args, kwargs))


def _no_objects(name: str, result: Any) -> Any:
    from .tape import TracingError

    if getattr(result, "dtype", None) == object:
        raise TracingError(
            f"np.{name}: the result would be an array of Python objects (dtype=object), "
            f"which cuts the traced values it holds out of the gradient. Give a float or "
            f"complex dtype, or build the array with np.stack.")
    return result


def _inside_outer_trace(obj: Any) -> bool:
    """Whether a list or tuple holds traced values whose own values are traced (a rule
    differentiated again: second derivatives)."""
    from ..core.structure import leaves
    from .tracer import Traced

    return any(_holds_traced(leaf.primal)
               for _, leaf in leaves(obj, lambda v: type(v) is Traced))


def _create_nested(name: str, args: tuple, kwargs: dict) -> Any:
    """`_create_traced` for a list or tuple inside an outer trace, where a list's cotangent
    cannot be taken apart without indexing traced values: its traced elements are stacked
    (``np.stack``, differentiable at every order), and the stack is converted to what NumPy
    makes of the list. NumPy decides what that is, and its errors, on a stand-in list with
    zeros in place of the traced values."""
    from ..core.structure import replace_leaves
    from .tape import record
    from .tracer import Traced

    def is_traced(value: Any) -> bool:
        return type(value) is Traced

    stand_in = replace_leaves(args[0], lambda t: np.zeros(t.shape, t.dtype), is_traced)
    expected = _no_objects(name, ORIGINALS[name](stand_in, *args[1:], **kwargs))
    fortran = expected.flags.f_contiguous and not expected.flags.c_contiguous
    return record(ORIGINALS["array"], (_stacked(args[0]),),
                  {"dtype": expected.dtype, "ndmin": expected.ndim, "order": "F" if fortran
                   else "K"})


def _stacked(obj: Any) -> Any:
    """The list or tuple ``obj`` holding traced values as one traced array (``np.stack`` of
    its elements, recursively); plain elements as NumPy makes them."""
    if not isinstance(obj, (list, tuple)):
        return obj
    if not _holds_traced(obj):
        return ORIGINALS["array"](obj)
    return np.stack([_stacked(element) for element in obj])


# np.array copies: traced arrays can be written in place, so it must give a new one.
_SAME_VALUES = frozenset({"asarray", "asanyarray"})


def _keeps_dtype(obj: Any, args: tuple, kwargs: dict) -> bool:
    """Whether the call passes no option but a ``dtype`` that is ``obj``'s own."""
    if len(args) > 2 or (kwargs and (len(kwargs) > 1 or "dtype" not in kwargs)):
        return False
    dtype = args[1] if len(args) == 2 else kwargs.get("dtype")
    if dtype is None:
        return True
    try:
        return np.dtype(dtype) == obj.dtype
    except TypeError:
        return False  # not a dtype: NumPy says so


def _like(name: str, like: Any, strict: bool = True) -> Any:
    """The ``like=`` argument to pass on: a traced value as its primal (traced values stand in
    for ndarrays: the result is a plain ndarray, a constant), anything else as it is; with
    ``strict`` (the array argument holds traced values), only None and NumPy's arrays."""
    from .tracer import Traced

    if type(like) is Traced:
        return like.primal
    if not strict or like is None or \
            getattr(type(like), "__array_function__", None) is np.ndarray.__array_function__:
        return like
    raise TypeError(
        f"np.{name}: like= must be None, a NumPy array or a traced value when the array "
        f"argument holds traced values (got {type(like).__name__}): another array library's "
        f"array creation cannot record on the trace. Drop like=, or convert with that library "
        f"outside the differentiated function.")


def _routed(original: Any, recorded: Any = None) -> Any:
    """``original``, handed to the engine (as a call of ``recorded``, by default ``original``
    itself) when an argument holds a traced value."""
    recorded = original if recorded is None else recorded

    def routed(*args: Any, **kwargs: Any) -> Any:
        if any(_holds_traced(a) for a in args) or any(
                _holds_traced(v) for v in kwargs.values()):
            from .tape import record

            return record(recorded, args, kwargs)
        return original(*args, **kwargs)

    routed.__wrapped__ = original
    return routed


class _Rerouted:
    """A Python function whose calls reach the engine while tracing, however the program got
    hold of it: ``scipy.special.logsumexp``, ``from scipy.special import logsumexp`` before or
    after ``import chainrules``, an alias. A from-import keeps the function object itself, so
    the object is what changes: while a trace is active its ``__code__`` is a trampoline that
    calls ``replacement`` (made by ``replacement_for(own)``, where ``own`` is a copy of the
    function with its own code, which the replacement and the rules call to compute values).
    Outside a trace the function is exactly as its library made it: no cost.

    The trampoline is compiled once per function (at the first trace), with as many free
    variables as the function's closure, which Python requires of a replacement ``__code__``;
    it reaches the replacement through a constant of its code, not through any namespace.
    """

    def __init__(self, function: Any, replacement_for: Any):
        self.function = function
        self.code = function.__code__
        self.defaults = function.__defaults__
        self.keyword_defaults = function.__kwdefaults__
        self.signature = function.__dict__.get("__signature__", _ABSENT)
        try:  # what inspect.signature says of the function (following __wrapped__)
            self.seen_signature = inspect.signature(function)
        except (TypeError, ValueError):
            self.seen_signature = None
        self.own = types.FunctionType(self.code, function.__globals__, function.__name__,
                                      self.defaults, function.__closure__)
        self.own.__kwdefaults__ = self.keyword_defaults
        self.own.__dict__.update(function.__dict__)
        self.replacement = replacement_for(self.own)
        self.trampoline = _trampoline_code(self, len(self.code.co_freevars),
                                           function.__name__)

    def __call__(self, args: tuple, kwargs: dict) -> Any:
        return self.replacement(*args, **kwargs)

    def install(self) -> None:
        function = self.function
        if self.signature is _ABSENT:  # inspect.signature(function) still reads the original
            function.__signature__ = self.seen_signature
        function.__code__ = self.trampoline
        function.__defaults__ = function.__kwdefaults__ = None

    def uninstall(self) -> None:
        function = self.function
        function.__code__ = self.code
        function.__defaults__, function.__kwdefaults__ = self.defaults, self.keyword_defaults
        if self.signature is _ABSENT:
            del function.__signature__


_ABSENT = object()
_PLACEHOLDER = 0.5772156649015329  # a constant that the trampoline's code holds, then replaced


def _trampoline_code(target: Any, free_variables: int, name: str) -> types.CodeType:
    """The code of ``def name(*args, **kwargs): return target(args, kwargs)`` with
    ``free_variables`` unused free variables."""
    names = [f"_free{i}" for i in range(free_variables)]
    source = ("def _outer():\n"
              + "".join(f"    {n} = None\n" for n in names)
              + "    def trampoline(*args, **kwargs):\n"
              + "".join(f"        {n}\n" for n in names)
              + f"        target = {_PLACEHOLDER!r}\n"
              + "        return target(args, kwargs)\n"
              + "    return trampoline\n")
    namespace: dict = {}
    exec(compile(source, f"<chainrules: {name} while tracing>", "exec"), namespace)
    code = namespace["_outer"].__code__
    inner = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    consts = tuple(target if type(c) is float and c == _PLACEHOLDER else c
                   for c in inner.co_consts)
    return inner.replace(co_consts=consts, co_name=name)


class _Swap:
    """``owner.name`` replaced by ``replacement`` while tracing (a module attribute, or a method
    on its class); ``original`` is `_INHERITED` for a method the class inherits, restored by
    deleting the replacement."""

    __slots__ = ("owner", "name", "replacement", "original")

    def __init__(self, owner: Any, name: str, replacement: Any, original: Any):
        self.owner, self.name = owner, name
        self.replacement, self.original = replacement, original

    def install(self) -> None:
        setattr(self.owner, self.name, self.replacement)

    def uninstall(self) -> None:
        if self.original is _INHERITED:
            delattr(self.owner, self.name)
        else:
            setattr(self.owner, self.name, self.original)


_REROUTED: dict = {}   # function -> its _Rerouted, made when a trace first meets it


def _function_route(module: Any, name: str) -> Any:
    """How ``module.name`` of `ROUTED` reaches the engine: a Python function in place (every
    reference to it), anything else (NumPy's dispatchers) in the module namespace."""
    original = getattr(module, name, None)
    if original is None:
        return None
    if type(original) is types.FunctionType:
        rerouted = _REROUTED.get(original)
        if rerouted is None:
            rerouted = _REROUTED[original] = _Rerouted(
                original, lambda own: _routed(own, recorded=original))
        return rerouted
    return _Swap(module, name, _routed(original), original)


def _method_route(module: Any, class_name: str, name: str, redirect: Any) -> Any:
    """How a method of `ROUTED_METHODS` reaches the engine: a function that the class defines
    is rerouted in place, so that bound methods taken before the trace (``logpdf =
    st.norm.logpdf``) reach it too; an inherited one is replaced on the class."""
    cls = getattr(module, class_name, None)
    if cls is None or not hasattr(cls, name):
        return None
    own = cls.__dict__.get(name, _INHERITED)
    if type(own) is types.FunctionType:
        rerouted = _REROUTED.get(own)
        if rerouted is None:
            rerouted = _REROUTED[own] = _Rerouted(
                own, lambda copy: _routed_method(copy, redirect))
        return rerouted
    return _Swap(cls, name, _routed_method(getattr(cls, name), redirect), own)


_plan: list = []      # what enter() installs: extension shields, routed functions and methods
_plan_key: tuple = ()  # (len(sys.modules), len(ROUTED), len(ROUTED_METHODS)) it was made for


def _routing_plan() -> list:
    """The swaps for the modules imported so far, made again only when that changes."""
    global _plan, _plan_key
    key = (len(sys.modules), len(ROUTED), len(ROUTED_METHODS))
    if key != _plan_key:
        _add_loaded_method_lists()
        key = (len(sys.modules), len(ROUTED), len(ROUTED_METHODS))
        _seen_routes.clear()
        _plan, _plan_key = _new_routes() + masked.swaps(), key  # np.ma: ad/masked.py
    return _plan


_seen_routes: set = set()  # the entries of ROUTED and ROUTED_METHODS that `_plan` has seen


def _new_routes() -> list:
    """The swaps for the modules imported so far, leaving out the entries in `_seen_routes`
    (which it adds to): extension shields, routed functions, routed methods."""
    plan = [_Swap(module, name, _PLAIN_NUMPY, np)
            for module, name in _numpy_references_of_extensions()]
    for entry in ROUTED + ROUTED_METHODS:
        module = sys.modules.get(entry[0])  # only modules the program imported
        if entry in _seen_routes or module is None or getattr(
                getattr(module, "__spec__", None), "_initializing", False):
            continue
        _seen_routes.add(entry)
        plan.append(_function_route(module, entry[1]) if len(entry) == 2
                    else _method_route(module, *entry[1:]))
    return [swap for swap in plan if swap is not None]


def _route_imports_while_tracing() -> None:
    """A lazy loader (chainrules.core.registry): modules imported while a trace is active
    (``import scipy.special`` inside the differentiated function) are routed at once."""
    if _depth == 0:
        return
    _add_loaded_method_lists()
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


# Functions written in Python that convert their arguments with np.asarray (so traced values
# never reach __array_function__), or that take a callable: (module, name).
ROUTED = [("numpy", "apply_along_axis"), ("numpy", "piecewise"),
          ("numpy", "nan_to_num"),  # np.copyto (np.full, np.full_like: WRITABLE below)
          ("numpy", "asarray_chkfinite"), ("numpy", "require"),  # np.asarray(a) first
          ("scipy.special", "logsumexp"), ("scipy.special", "softmax"),
          ("scipy.special", "log_softmax"), ("scipy.special", "polygamma"),
          ("scipy.special", "multigammaln"),
          ("scipy.linalg", "solve_triangular"),
          ("scipy.linalg", "expm"), ("scipy.linalg", "cho_solve"),
          *[("scipy.signal", name) for name in ("convolve", "correlate", "fftconvolve",
                                                "convolve2d", "correlate2d", "lfilter")],
          *[("scipy.linalg", name) for name in ("solve", "inv", "det", "cholesky", "eigh",
                                                "block_diag", "lu_solve", "cho_factor",
                                                "lu_factor", "lu", "solve_sylvester",
                                                "sqrtm", "logm", "solve_banded",
                                                "schur")],
          *[("scipy.optimize", name) for name in ("root", "fsolve", "minimize")],
          *[("scipy.integrate", name) for name in ("quad", "quad_vec", "trapezoid",
                                                   "cumulative_trapezoid", "simpson",
                                                   "odeint", "solve_ivp")]]

# Methods of classes whose instances hold the parameters (``scipy.stats`` distributions, plain
# and frozen): (module, class, method, redirect). While a trace is active the method is
# rerouted in place when the class defines it (`_method_route`: bound methods taken before the
# trace reach it too), else replaced on the class, so every instance and every import style
# reaches it; a call whose
# arguments hold traced values is recorded as ``record(*redirect(self, args, kwargs))``:
# ``redirect`` names the registered function to record and its arguments (the instance's own
# parameters resolved, so that the recorded arguments are arrays and numbers).
ROUTED_METHODS: list = []
# The rule modules that list their distributions' methods (their own ``ROUTED_METHODS``),
# added above once loaded: they are, lazily, when the program imports scipy.stats
# (chainrules.rules.load_scipy_rules).
_METHOD_LISTS = [f"{__package__.rpartition('.')[0]}.rules.{name}"
                 for name in ("scipy_stats", "scipy_stats_multivariate")]


def _add_loaded_method_lists() -> None:
    for name in list(_METHOD_LISTS):
        routes = getattr(sys.modules.get(name), "ROUTED_METHODS", None)
        if routes is not None:
            ROUTED_METHODS.extend(routes)
            _METHOD_LISTS.remove(name)


_INHERITED = object()  # a replaced method that the class inherits


def _routed_method(original: Any, redirect: Any) -> Any:
    """The replacement of a method in `ROUTED_METHODS`: ``original`` for plain arguments."""
    def routed(self: Any, *args: Any, **kwargs: Any) -> Any:
        if any(_holds_traced(a) for a in args) or any(
                _holds_traced(v) for v in kwargs.values()) or _holds_traced_parameters(self):
            from .tape import record

            function, args, kwargs = redirect(self, args, kwargs)
            return record(function, args, kwargs)
        return original(self, *args, **kwargs)

    routed.__wrapped__ = original
    routed.__name__ = getattr(original, "__name__", "routed")
    return routed


def _holds_traced_parameters(instance: Any) -> bool:
    """Whether an instance keeps traced parameters (a frozen distribution: ``args``/``kwds``)."""
    return any(_holds_traced(getattr(instance, name, None)) for name in ("args", "kwds"))


def _vectorize_call(self: np.vectorize, *args: Any, **kwargs: Any) -> Any:
    if _holds_traced(self.pyfunc) or any(_holds_traced(a) for a in args) or any(
            _holds_traced(v) for v in kwargs.values()):
        from ..rules.higher_order import vectorized_call
        from .tape import record

        options = {"otypes": self.otypes, "excluded": self.excluded,
                   "signature": self.signature}
        return record(vectorized_call, (self.pyfunc,) + args, {**kwargs, **options})
    return ORIGINALS["vectorize.__call__"](self, *args, **kwargs)


def _writable(name: str, original: Any, frames: int = 0) -> Any:
    """The replacement of a creation function (``np.zeros``...), calling ``original``: an array
    that the differentiated function creates is a traced constant, into which it can write
    traced values (ad/writes.py). ``frames``: how many frames the call passes through between
    the caller and the replacement (a rerouted function's trampoline)."""

    def create(*args: Any, **kwargs: Any) -> Any:
        writes = _writes()
        if name in ("full", "full_like"):  # a traced fill value is written into the array
            result = writes.full(original, args, kwargs)
            if result is not None:
                return result
        return writes.created(original(*args, **kwargs), depth=1 + frames)

    create.__name__ = create.__qualname__ = name
    create.__doc__ = original.__doc__
    create.__wrapped__ = original
    return create


# Creation functions whose float or complex arrays, made by the differentiated function, can
# take traced values (ad/writes.py).
WRITABLE = ("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
            "full_like", "eye", "identity", "copy", "linspace", "arange")
ORIGINALS.update({name: getattr(np, name) for name in WRITABLE})
_REPLACEMENTS = {name: _creation(name) for name in CREATION}
_NUMPY_REROUTED: list = []  # filled below

# NumPy's creation functions written in Python (np.ones, np.full, np.eye, np.identity) are
# rerouted in place, as SciPy's are, so that `from numpy import ones` creates writable arrays
# too; the others (written in C) are replaced in the numpy namespace.
_REROUTED.update({ORIGINALS[name]: _Rerouted(ORIGINALS[name],
                                             lambda own, name=name: _writable(name, own, 2))
                  for name in WRITABLE if type(ORIGINALS[name]) is types.FunctionType})
_REPLACEMENTS.update({name: _writable(name, ORIGINALS[name]) for name in WRITABLE
                      if ORIGINALS[name] not in _REROUTED})
_NUMPY_REROUTED[:] = [_REROUTED[ORIGINALS[name]] for name in WRITABLE
                      if ORIGINALS[name] in _REROUTED]

# NumPy's scalar types: np.float64(t) casts as t.astype(np.float64) (ad/scalar_types.py).
_SCALAR_TYPES = stand_ins()
ORIGINALS.update({name: getattr(np, name) for name in _SCALAR_TYPES})
_REPLACEMENTS.update(_SCALAR_TYPES)


# --- compiled extensions see NumPy as it is ----------------------------------------------------

def _plain_numpy() -> types.ModuleType:
    """A stand-in for the ``numpy`` module with NumPy's own functions: what compiled extension
    modules (Cython's ``np.empty(size)`` in ``numpy.random``, SciPy's compiled helpers) see
    while a trace is active. They cast what ``np.empty`` returns to an ndarray without a
    check, so a traced constant (ad/writes.py) would crash the interpreter; and they cannot
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


_WRITES: list = []


def _writes() -> Any:
    """The module ad/writes.py, imported at its first use (it imports this one) and once: an
    import statement run while tracing goes through the import hook."""
    if not _WRITES:
        from . import writes

        _WRITES.append(writes)
    return _WRITES[0]


def enter(level: Any = None) -> None:
    """A trace starts: route the entry points above to the engine (first trace only)."""
    global _depth
    if level is not None:
        _writes().enter_level(level)
    global _import
    with _lock:
        if _depth == 0:
            load_lazy_rules()  # SciPy's rules, for the modules imported before the trace
        _depth += 1
        if _depth == 1:
            if builtins.__import__ is not _import_while_tracing:
                _import, builtins.__import__ = builtins.__import__, _import_while_tracing
            array_likes.install()  # first: the replacements below take precedence
            for name in _REPLACEMENTS:
                setattr(np, name, _REPLACEMENTS[name])
            np.vectorize.__call__ = _vectorize_call
            for swap in _NUMPY_REROUTED:
                swap.install()
            for swap in _routing_plan():
                swap.install()


def exit(level: Any = None) -> None:
    """A trace ends: restore NumPy when no trace is left."""
    global _depth
    if level is not None:
        _writes().exit_level(level)
    with _lock:
        _depth -= 1
        if _depth == 0:
            for name in _REPLACEMENTS:
                setattr(np, name, ORIGINALS[name])
            np.vectorize.__call__ = ORIGINALS["vectorize.__call__"]
            for swap in reversed(_plan):
                swap.uninstall()
            for swap in _NUMPY_REROUTED:
                swap.uninstall()
            array_likes.uninstall()
            builtins.__import__ = _import
