"""The user-facing operators: ``grad``, ``value_and_grad``, ``vjp``, ``jacobian``.

Arguments may be arrays, Python or NumPy scalars, or any structure (dict, list, tuple,
namedtuple, dataclass, plain object, closure, bound method). Gradients mirror the input:

- a float or complex array or scalar gets an array or scalar of the same shape and dtype;
- integers, bools, strings and other non-differentiable leaves get `NoTangent()`;
- lists, tuples, namedtuples and dicts get the same container type;
- dataclasses, other objects and closures get a `Tangent` with attribute access (``g.w``).
"""

from __future__ import annotations

import collections.abc
import contextlib
import functools
import math
import types
from typing import Any, Callable, Sequence

import numpy as np

from ...core.accumulate import owned_copy
from ...core.checking import checks_directions
from ...core.config import RuleConfig
from ...core.duck_arrays import compute_all, is_duck_array, is_lazy
from ...core.naming import function_name
from ...core.projection import NO_TANGENT_PROJECTOR, ProjectTo
from ...core.registry import load_lazy_rules, recorded_whole, rrule
from ...core.tangent_checks import check_tangent
from ...core.tangents import AbstractZero, NoTangent, Tangent, ZeroTangent
from ...core.thunks import unthunk
from .directional_check import check_direction
from .reverse import backward
from .unchanged_inputs import InputFingerprints
from ...core.containers import as_tangent
from ...core.structure import (fields, get_at, is_structure, leaves, replace_at, replace_leaves,
                              replace_paths, tangent_at, tangent_from_paths)
from ..dispatch import writes
from ..dispatch.dask_arrays import lazy_guard
from .batching import BatchedForwardTrace
from .batching import lift as batched_lift
from .batching import output_tangent as batched_output_tangent
from .forward import ForwardTrace, output_tangent
from .forward import lift as forward_lift
from ..dispatch.routing import routing_held, tracing
from ..trace.tape import Tape, no_garbage_collection, record
from ..trace.traced import Traced
from ..trace.values import FLOAT_SCALARS, is_differentiable

__all__ = ["grad", "value_and_grad", "vjp", "jacobian", "jacrev", "jacfwd", "jvp", "hessian",
           "hvp", "elementwise_grad", "EngineConfig", "primal", "primitive"]


class EngineConfig(RuleConfig):
    """The config of chainrules' reverse-mode engine: ``rrule_via_ad`` differentiates any
    Python function by tracing it (closures and callable objects included)."""

    has_reverse_mode = True

    def rrule_via_ad(self, f: Callable, *args: Any, **kwargs: Any):
        entry = rrule.lookup(f)
        if entry is not None:
            rule, needs_config = entry
            result = rule(self, *args, **kwargs) if needs_config else rule(*args, **kwargs)
            if result is not None:
                return result
        return _vjp(f, args, kwargs, differentiate_function=True, materialize=False)


ENGINE_CONFIG = EngineConfig()


def primal(x: Any) -> Any:
    """The value of ``x`` without its tracing (for logging, or for non-differentiated use).

    >>> primal(3.0)
    3.0
    """
    while type(x) is Traced:
        x = x.primal
    return x


def primitive(function: Callable) -> Callable:
    """Make calls of ``function`` on traced values use its registered rule, not its body.

    NumPy's functions reach the engine through NumPy's own protocols; a Python function of
    yours is normally traced through, operation by operation. Decorate it to have the engine
    record it as one operation and use the ``rrule`` you register for it (for speed, for
    numerical stability, or for code the engine cannot trace). Register the rule on the
    decorated function:

    >>> import numpy as np
    >>> @primitive
    ... def softplus(x):
    ...     return np.log1p(np.exp(x))
    >>> @rrule.register(softplus)
    ... def _softplus_rule(x):
    ...     return softplus(x), lambda dy: (NoTangent(), dy / (1 + np.exp(-x)))
    >>> grad(lambda x: np.sum(softplus(x)))(np.zeros(2))
    array([0.5, 0.5])
    """
    @functools.wraps(function)
    def routed(*args: Any, **kwargs: Any):
        if any(type(a) is Traced or (is_structure(a) and any(True for _ in leaves(
                a, lambda v: type(v) is Traced))) for a in args):
            return record(routed, args, kwargs)
        return function(*args, **kwargs)

    return recorded_whole(routed)


def wraps_callable(f: Any) -> Callable[[Callable], Callable]:
    """`functools.wraps`, for any callable: an object whose ``__getattr__`` answers every name
    (a mock, a proxy) gives its attributes where they are strings, and no more."""
    def decorate(wrapper: Callable) -> Callable:
        for name in functools.WRAPPER_ASSIGNMENTS:
            try:
                value = getattr(f, name)
            except Exception:  # noqa: BLE001 - any attribute error: leave the wrapper's own
                continue
            if name in ("__module__", "__name__", "__qualname__", "__doc__") and \
                    value is not None and not issubclass(type(value), str):
                continue
            try:
                setattr(wrapper, name, value)
            except (AttributeError, TypeError):
                pass
        wrapper.__wrapped__ = f
        return wrapper

    return decorate


class Transformed:
    """A function a transform made of ``f`` (``grad(f)``): it calls ``call``, reads as ``f``
    (name, docstring, signature: `wraps_callable`), and pickles as ``transform(*arguments)``,
    so it goes to other processes (dask.distributed's workers) whenever ``f`` does.

    >>> import pickle, numpy as np
    >>> g = pickle.loads(pickle.dumps(grad(np.sum)))
    >>> g(np.ones(2))
    array([1., 1.])
    """

    def __init__(self, call: Callable, transform: Callable, arguments: tuple):
        self._call, self._transform, self._arguments = call, transform, arguments

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        # a class attribute (``loss_grad = grad(loss)``) binds as a method, as a function does
        return self if instance is None else types.MethodType(self, instance)

    def __reduce__(self) -> tuple:
        return (self._transform, self._arguments)


def require_callable(transform: str, f: Any) -> None:
    """Refuse a function argument that cannot be called, naming the transform."""
    if not callable(f):
        raise TypeError(
            f"{transform}: expected a function to differentiate, got {type(f).__name__} "
            f"{f!r:.60}. Pass the function itself (f), not its value (f(x)).")


def _lift(x: Any, tape: Tape, function: Callable, position: Any) -> tuple[Any, list, list]:
    """``x`` with every differentiable leaf replaced by an input tracer of ``tape``; the
    tracers, and their paths in ``x``."""
    if type(x) in FLOAT_SCALARS or type(x) is np.ndarray and x.dtype.kind in "fc":
        traced = tape.leaf(x)  # a plain array or number: nothing to check or search
        return traced, [traced], [()]
    if type(x) is _FUNCTION and x.__closure__ is None:
        return x, [], []  # a function without a closure (rrule_via_ad's f): no fields
    found = list(leaves(x, _input_selector(function, position)))
    inputs = [tape.leaf(_as_plain_input(value)) for _, value in found]
    paths = [path for path, _ in found]
    return replace_paths(x, dict(zip(paths, inputs))), inputs, paths


def _plain_inputs(x: Any, function: Callable, position: Any) -> Any:
    """``x`` with its input leaves checked (`_input_selector`) and given as plain ndarrays and
    numbers (what the forward engines lift)."""
    plain = {path: _as_plain_input(value)
             for path, value in leaves(x, _input_selector(function, position))
             if type(value) is not np.ndarray and type(value) not in FLOAT_SCALARS}
    return replace_paths(x, plain) if plain else x


def _as_plain_input(value: Any) -> Any:
    """An input leaf as the engine computes on it: a plain ndarray subclass as its data (see
    `_check_input`), a float or complex subclass as its number."""
    kind = type(value)
    if kind is not np.ndarray and issubclass(kind, np.ndarray):
        return value.view(np.ndarray)
    if kind not in FLOAT_SCALARS and issubclass(kind, (float, complex)) and \
            not issubclass(kind, np.generic):
        return complex(value) if issubclass(type(value), complex) else float(value)
    return value


def _input_selector(function: Callable, position: Any) -> Callable[[Any], bool]:
    """Selects the input leaves of argument ``position``, refusing on the way the values whose
    gradient would be silently wrong or missing."""
    def select(value):
        kind = type(value)
        if issubclass(kind, np.ndarray) and kind is not np.ndarray or \
                kind is np.ndarray and value.dtype.kind in "OV":
            _check_input(value, function, position)
        elif kind not in FLOAT_SCALARS and kind not in _PLAIN_LEAVES:
            _check_unordered(value, function, position)
            if issubclass(kind, (float, complex)) and not issubclass(kind, np.generic):
                _check_number_subclass(value, function, position)
        return _is_input_leaf(value)

    return select


def _is_input_leaf(x: Any) -> bool:
    """A differentiable leaf of an input: float or complex numbers (subclasses of float and
    complex included) and arrays (ndarray subclasses without arithmetic of their own included:
    `_check_input` lets them through)."""
    return is_differentiable(x) or (issubclass(type(x), np.ndarray) and x.dtype.kind in "fc") \
        or issubclass(type(x), (float, complex))


_PLAIN_LEAVES = frozenset({int, bool, str, bytes, type(None), np.ndarray})
_FUNCTION = types.FunctionType


def _check_unordered(x: Any, function: Callable, position: Any) -> None:
    """Refuse sets and one-shot iterators: their elements have no path a gradient could have."""
    if isinstance(x, (set, frozenset)) and any(_is_input_leaf(element) for element in x):
        where = f"{function_name(function)}: argument {position} holds"
        raise TypeError(f"{where} a {type(x).__name__} of numbers; a set has no order, so its "
                        f"elements cannot be given gradients. Pass a list or a tuple "
                        f"(sorted(s)), or a dict keyed by what the set held.")
    if isinstance(x, collections.abc.Iterator) and not is_structure(x):
        where = f"{function_name(function)}: argument {position} holds"
        raise TypeError(f"{where} a {type(x).__name__} (an iterator, consumed once); its values "
                        f"cannot be given gradients. Pass a list: list(values).")


def _check_number_subclass(x: Any, function: Callable, position: Any) -> None:
    """A float or complex subclass is differentiated as its number unless it changes the
    arithmetic (a unit type's ``*``), which the engine would not follow."""
    kind = type(x)
    own = [name for name in _OWN_BEHAVIOUR
           if any(name in base.__dict__ for base in kind.__mro__[:-2]
                  if base not in (float, complex))]
    if own:
        raise TypeError(f"{function_name(function)}: argument {position} is a {kind.__name__}, "
                        f"a {kind.__mro__[-2].__name__} subclass that defines "
                        f"{', '.join(own)}; the engine differentiates the number and would not "
                        f"follow them. Pass float(x).")


# Methods through which an ndarray subclass changes what operations mean (np.matrix's `*`,
# masked arrays' masks): the engine computes on the plain data, so it would not follow them.
_OWN_BEHAVIOUR = ("__array_ufunc__", "__array_function__", "__array_wrap__", "__getitem__",
                  "__setitem__", "__getattribute__", "__add__", "__sub__", "__mul__",
                  "__truediv__", "__pow__", "__matmul__", "__neg__")


def _check_input(x: np.ndarray, function: Callable, position: Any) -> None:
    """Refuse array inputs whose gradient would be silently wrong or silently missing."""
    where = f"{function_name(function)}: argument {position} is"
    if issubclass(type(x), np.matrix):
        raise TypeError(f"{where} an np.matrix, whose `*` and `**` are matrix operations; the "
                        f"engine differentiates ndarray code. Pass np.asarray(m) and write "
                        f"`@` for matrix products.")
    if issubclass(type(x), np.ma.MaskedArray):
        raise TypeError(f"{where} a masked array (np.ma); the engine would ignore its mask. "
                        f"Pass its data (np.ma.getdata(x), or x.filled(value)) and apply the "
                        f"mask with np.where(mask, ..., ...) inside the function.")
    if x.dtype.names is not None:
        raise TypeError(f"{where} an array of structured dtype {x.dtype} (a record array); "
                        f"its fields cannot be differentiated as one array. Pass the fields "
                        f"as a dict: {{name: x[name] for name in x.dtype.names}}.")
    if x.dtype.kind == "O":
        if any(_is_input_leaf(element) for element in x.flat):
            raise TypeError(f"{where} an object-dtype array holding numbers; convert it with "
                            f"x.astype(float) (or complex), or pass a list of its elements.")
        return
    kind = type(x)
    own = [name for name in _OWN_BEHAVIOUR
           if any(name in base.__dict__ for base in kind.__mro__[:kind.__mro__.index(np.ndarray)])]
    if own:
        raise TypeError(f"{where} a {kind.__name__}, an ndarray subclass that defines "
                        f"{', '.join(own)}; the engine differentiates plain ndarray code and "
                        f"would not follow them. Pass np.asarray(x).")


def _leaf_cotangent(slots: list, owned: bytearray, leaf: tuple, materialize: bool) -> Any:
    node, primal = leaf
    cotangent = slots[node]
    if cotangent is None:
        return ZeroTangent()
    if materialize and not owned[node]:
        cotangent = owned_copy(cotangent)  # never hand out memory a rule may share
    project = ProjectTo(primal)
    return project(unthunk(cotangent) if materialize else cotangent)


def _zeros_like(x: Any) -> Any:
    x = primal(x)  # a value of an outer trace: its zero is a constant
    if issubclass(type(x), np.ndarray):
        return np.zeros(x.shape, x.dtype)
    if issubclass(type(x), np.generic):
        return x.dtype.type(0)
    if is_duck_array(x):
        return np.zeros_like(x)
    return type(x)(0)


def _leaf_gradient(x: Any, value: Any, materialize: bool) -> Any:
    """The gradient of the input leaf ``x``: ``value``, in ``x``'s array type, zeros
    materialized when asked."""
    if not _is_input_leaf(x):
        return NoTangent()
    if isinstance(value, AbstractZero):
        return _zeros_like(x) if materialize else value
    if type(x) is not np.ndarray and issubclass(type(x), np.ndarray) and type(value) is np.ndarray:
        return value.view(type(x))  # a plain ndarray subclass gets its own type back
    return value


def _gradient_structure(x: Any, gradients: dict, materialize: bool) -> Any:
    """The gradient of input ``x``, mirroring its structure (``gradients``: path -> value)."""
    if not is_structure(x):
        return _leaf_gradient(x, gradients.get((), ZeroTangent()), materialize)
    if not materialize:
        return tangent_from_paths(x, gradients)
    return as_tangent(_mirror(x, gradients, ()))  # `params - lr * g` is a step


def _mirror(x: Any, gradients: dict, path: tuple, active: dict | None = None) -> Any:
    """The gradient of ``x`` with ``x``'s structure, at any depth; a field that refers back to
    a structure on its own path (``d["self"] is d``) refers back to that structure's gradient
    (whose leaves hold the gradients of every path, the cycle's included)."""
    if not is_structure(x):
        return _leaf_gradient(x, gradients.get(path, ZeroTangent()), True)
    active = {} if active is None else active
    if id(x) in active:  # a cycle: its gradient is being built (a tuple's is not yet: zero)
        return active[id(x)] if active[id(x)] is not None else ZeroTangent()
    items = fields(x).items()
    if isinstance(x, dict) or isinstance(x, list) and not hasattr(type(x), "_fields"):
        mirrored: Any = {} if isinstance(x, dict) else []
        active[id(x)] = mirrored
        for key, value in items:
            child = _mirror(value, gradients, path + (key,), active)
            if isinstance(mirrored, dict):
                mirrored[key] = child
            else:
                mirrored.append(child)
    elif isinstance(x, tuple):
        active[id(x)] = None
        children = {key: _mirror(value, gradients, path + (key,), active) for key, value in items}
        mirrored = type(x)(**children) if hasattr(type(x), "_fields") else \
            type(x)(children[i] for i in range(len(x)))
    else:
        backing: dict = {}
        mirrored = active[id(x)] = Tangent(type(x), backing)
        for key, value in items:
            backing[key] = _mirror(value, gradients, path + (key,), active)
    del active[id(x)]
    if type(x) is not list and type(mirrored) is list:
        return type(x)(mirrored)  # a list subclass keeps its type
    return mirrored


def _vjp(f: Callable, args: Sequence, kwargs: dict, *, argnums: Sequence[int] | None = None,
         differentiate_function: bool = False, materialize: bool = True, has_aux: bool = False):
    """Trace ``f(*args)``; return ``(y, pullback)`` (and aux). The pullback maps an output
    cotangent to ``(d f, d arg for each differentiated argument)``."""
    tape = Tape(ENGINE_CONFIG)
    argnums = range(len(args)) if argnums is None else argnums
    lifted = list(args)
    inputs: dict = {}
    paths: dict = {}  # key -> the paths of its input leaves
    with tracing(tape), no_garbage_collection():
        if differentiate_function:
            f_lifted, inputs["f"], paths["f"] = _lift(f, tape, f, "f (the function itself)")
        else:
            f_lifted = f
        for position in argnums:
            lifted[position], inputs[position], paths[position] = _lift(args[position], tape,
                                                                        f, position)
        # Each input's node and value as lifted (the function may write into its inputs,
        # which changes what their traced values stand for: ad/dispatch/writes.py).
        inputs = {key: [(traced.node, traced.primal) for traced in values]
                  for key, values in inputs.items()}
        try:
            out = f_lifted(*lifted, **kwargs)
        except Exception as error:
            if tape.deferred:  # the first cause, not what followed from it
                raise tape.deferred[0] from error
            raise
        tape.raise_deferred()
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"{function_name(f)} was differentiated with has_aux=True, so it must return "
                            f"a pair (output, aux); it returned a {type(out).__name__}.")
        out, aux = out
        aux = replace_leaves(aux, _unwrap, _is_own(tape))
    outputs = list(leaves(out, _is_own(tape)))
    # Only this trace's level is removed: values of outer traces stay traced (the value of an
    # inner vjp or value_and_grad is an ordinary value of the outer trace).
    y = replace_paths(out, {path: traced.primal for path, traced in outputs})
    records = tape.records

    def pullback(dy: Any, retain: bool = True, value: list | None = None) -> tuple:
        """Cotangents for ``dy``; callable any number of times, unless ``retain=False``
        (then the tape is freed during the pass: ``grad`` uses that, for memory). ``value``:
        a one-element list holding the output, computed along with the gradients when they
        are computed (`_compute_lazy_gradients`)."""
        if isinstance(dy, tuple) and not hasattr(type(dy), "_fields") and \
                hasattr(type(out), "_fields"):
            dy = type(out)(*dy)  # a plain tuple for a namedtuple output
        seeds = []
        for path, traced in outputs:
            seed = unthunk(tangent_at(dy, path))
            if not isinstance(seed, AbstractZero) and traced.node >= 0:  # -1: a constant
                output = traced.primal
                if type(output) is Traced and type(seed) is not Traced:
                    # a plain seed for a value of an outer trace (grad's 1.0 under hvp): of
                    # the plain value's kind (a float64, not a 0-d array: the records'
                    # number forms take it as they take one at order 1)
                    output = primal(output)
                seeds.append((traced.node, ProjectTo(output)(seed)))
        keys = (["f"] if differentiate_function else []) + list(argnums)
        with lazy_guard():  # pullbacks never compute a Dask array
            # pullbacks that call back into the engine: the routing entered once for them all
            with no_garbage_collection(), \
                    routing_held() if tape.calls_back else _NOTHING_HELD:
                slots, owned = backward(records, seeds, retain=retain)
            with np.errstate(all="ignore"):  # lazy cotangents computed here: rules' work
                per_key = [{path: _leaf_cotangent(slots, owned, leaf, materialize)
                            for path, leaf in zip(paths[key], inputs[key])} for key in keys]
        if materialize:
            _compute_lazy_gradients(per_key, [inputs[key] for key in keys], value)
        results = [_NO_TANGENT if key == "f" and not paths["f"] else  # nothing in f to perturb
                   _gradient_structure(f if key == "f" else args[key], gradients, materialize)
                   for key, gradients in zip(keys, per_key)]
        if not differentiate_function:
            results.insert(0, NoTangent())
        elif isinstance(results[0], AbstractZero):
            results[0] = NoTangent() if not paths["f"] else ZeroTangent()
        return tuple(results)

    if has_aux:
        return y, pullback, aux
    return y, pullback


_NOTHING_HELD = contextlib.nullcontext()
_NO_TANGENT = NoTangent()


def _compute_lazy_gradients(per_key: list, inputs: list, value: list | None) -> None:
    """A NumPy input gets a NumPy gradient: the lazy (Dask) gradients of inputs that are not
    lazy are computed here, all in one ``dask.compute`` with ``value[0]`` when it is lazy (one
    pass over the data they share). Gradients of Dask inputs stay lazy."""
    found = [(gradients, path, x) for gradients, leaves_of_key in zip(per_key, inputs)
             for (path, gradient), (_, x) in zip(gradients.items(), leaves_of_key)
             if is_lazy(gradient) and not is_duck_array(x)]
    if not found:
        return
    lazy_value = value is not None and is_lazy(value[0])
    computed = compute_all([gradients[path] for gradients, path, _ in found] +
                           ([value[0]] if lazy_value else []))
    for (gradients, path, x), result in zip(found, computed):
        gradients[path] = ProjectTo(x)(result)  # a float's gradient is a float again
    if lazy_value:
        value[0] = computed[-1]


def _unwrap(traced: Traced) -> Any:
    return traced.primal


def _is_own(tape: Tape):
    return lambda v: type(v) is Traced and v.tape is tape


def vjp(f: Callable, *args: Any, has_aux: bool = False):
    """``(y, pullback)``: ``pullback(dy)`` returns one cotangent per argument of ``f``.

    >>> import numpy as np
    >>> y, pullback = vjp(lambda x: x ** 2, np.array([1.0, 2.0]))
    >>> pullback(np.ones(2))
    (array([2., 4.]),)
    """
    require_callable("vjp", f)
    result = _vjp(f, args, {}, has_aux=has_aux)
    pullback = result[1]
    unchanged = InputFingerprints(f, args)  # the pullback may run after the caller's writes

    def user_pullback(dy):
        unchanged.check("vjp")
        check_tangent(result[0], dy, "vjp: the cotangent", "the output")
        return pullback(dy)[1:]

    return (result[0], user_pullback) + result[2:]


def _normalize_argnums(f: Callable, argnums: Any, args: tuple,
                       allow_int: bool = True) -> tuple[tuple, bool]:
    """Positions ``argnums`` of ``args`` as a tuple of non-negative ints, and whether a single
    int was given; with ``allow_int=False``, integer and boolean arguments are refused."""
    def is_position(n):
        return issubclass(type(n), (int, np.integer)) and not issubclass(type(n), (bool, np.bool_))

    single = is_position(argnums)
    if not single and not (isinstance(argnums, (tuple, list)) and all(map(is_position,
                                                                          argnums))):
        raise TypeError(f"{function_name(f)}: argnums must be an int or a tuple of ints (positions of "
                        f"positional arguments), got {argnums!r} "
                        f"({type(argnums).__name__}).")
    numbers = (argnums,) if single else tuple(argnums)
    count = len(args)
    for number in numbers:
        if not -count <= number < count:
            raise ValueError(
                f"{function_name(f)}: argnums={argnums!r} but it was called with {count} positional "
                f"argument(s); argnums counts positional arguments from 0 (keyword arguments "
                f"are not differentiated: pass the argument positionally).")
    numbers = tuple(int(n) % count for n in numbers)
    for number in numbers:
        if not allow_int:
            _refuse_integer(f, number, args[number])
        _refuse_constant(f, number, args[number])
    return numbers, single


def _refuse_constant(f: Callable, position: int, x: Any) -> None:
    """A float value of a type the rules take as a constant (a SciPy sparse matrix,
    `chainrules.core.projection.register_constant_type`) would get NoTangent: say so."""
    value = primal(x)
    if type(value) is np.ndarray or getattr(getattr(value, "dtype", None), "kind", "") not in (
            "f", "c") or is_duck_array(value):
        return
    load_lazy_rules()  # the rules of SciPy's modules register their constant types
    if ProjectTo(value) is NO_TANGENT_PROJECTOR:
        raise TypeError(
            f"{function_name(f)}: argument {position} is a {type(value).__name__} of "
            f"{value.dtype}, which chainrules takes as a constant (SciPy's sparse matrices hold "
            f"plain arrays: their entries are never traced), so it has no gradient. "
            f"Differentiate with respect to a dense array (x.toarray()), or to the values the "
            f"result depends on through products with the matrix (A @ x is differentiable in x).")


def _refuse_integer(f: Callable, position: int, x: Any) -> None:
    """An integer or boolean argument differentiated at the top level is almost always a
    mistake (``grad(f)(np.array([1, 2, 3]))`` would silently give NoTangent)."""
    value = primal(x)
    dtype = value.dtype if issubclass(type(value), (np.ndarray, np.generic)) else \
        np.dtype(type(value)) if issubclass(type(value), (int, bool)) else None
    if dtype is not None and dtype.kind in "iub":
        kind = "a boolean" if dtype.kind == "b" else "an integer"
        described = type(value).__name__ if issubclass(type(value), (int, bool)) else dtype
        raise TypeError(
            f"{function_name(f)}: argument {position} is {kind} ({described}), and gradients are taken "
            f"with respect to floats. Pass floats (np.asarray(x, dtype=float), or 3.0 for 3), "
            f"or pass allow_int=True to get NoTangent() for it.")


def value_and_grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   allow_int: bool = False):
    """A function returning ``(f(*args), gradient)`` (``((f(*args), aux), gradient)`` with
    ``has_aux``). See `grad`.

    >>> import numpy as np
    >>> value_and_grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
    (np.float64(5.0), array([2., 4.]))
    """
    require_callable("value_and_grad", f)
    return wraps_callable(f)(Transformed(_value_and_gradient(f, argnums, has_aux, allow_int),
                                         value_and_grad, (f, argnums, has_aux, allow_int)))


def _value_and_gradient(f: Callable, argnums: int | Sequence[int], has_aux: bool,
                        allow_int: bool) -> Callable:
    """`value_and_grad` without copying ``f``'s name and docstring (``hvp`` makes one per
    call)."""
    def value_and_gradient(*args: Any, **kwargs: Any):
        numbers, single = _normalize_argnums(f, argnums, args, allow_int)
        # lazy_guard: rules never compute a Dask array (entered once for trace and pullback)
        with no_garbage_collection(), lazy_guard():  # the tape is freed by reference counting
            y, pullback, *aux = _vjp(f, args, kwargs, argnums=numbers, has_aux=has_aux)
            _check_scalar(f, y)
            value = [y]
            gradients = pullback(_one_like(y), retain=False, value=value)[1:]
            y = value[0]
            del pullback  # frees the tape while the collector is paused
        if checks_directions():  # chainrules.checking(directional=True)
            check_direction(f, args, kwargs, numbers, gradients, y)
        gradient = gradients[0] if single else tuple(gradients)
        if has_aux:
            return (y, aux[0]), gradient
        return y, gradient

    return value_and_gradient


def _check_scalar(f: Callable, y: Any) -> None:
    value = primal(y)
    if is_duck_array(value) and math.prod(value.shape) == 1 and value.dtype.kind in "fiub":
        return  # a 0-d Dask array (or one of one element), not computed here
    if not (issubclass(type(value), (float, np.floating, np.ndarray)) and np.size(value) == 1
            and np.isrealobj(value)):
        plain = issubclass(type(value), (np.ndarray, np.generic, float, complex))
        shape = np.shape(value) if plain else None
        if shape not in (None, ()) and np.size(value) != 1:
            raise TypeError(
                f"grad requires {function_name(f)} to return a real scalar; it returned an array of "
                f"shape {shape}. Use chainrules.vjp(f, x) for vector-Jacobian products or "
                f"chainrules.jacobian(f)(x) for the full Jacobian (or reduce the output, e.g. "
                f"with np.sum).")
        if np.iscomplexobj(value):
            raise TypeError(
                f"grad requires {function_name(f)} to return a real scalar; it returned a complex one. "
                f"Differentiate a real function of it (np.abs(z)**2, np.real(z)), or use "
                f"chainrules.vjp for complex outputs.")
        if issubclass(type(value), (int, np.integer, bool, np.bool_)):
            return  # an integer output does not depend on the inputs: zero gradient
        raise TypeError(f"grad requires {function_name(f)} to return a real scalar; it returned a "
                        f"{type(value).__name__}.")


def _one_like(y: Any) -> Any:
    value = primal(y)
    if issubclass(type(value), np.ndarray):
        return np.ones(value.shape, value.dtype)  # shape (1,) or (1, 1) too: see `grad`
    if issubclass(type(value), np.generic):
        return value.dtype.type(1)
    if is_duck_array(value):
        return np.ones_like(value)
    return 1.0


def grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         allow_int: bool = False):
    """The gradient of a real scalar function, with respect to argument(s) ``argnums``.

    An integer or boolean argument in ``argnums`` is a ``TypeError`` (its gradient would be
    ``NoTangent()`` and a descent loop would silently not move); ``allow_int=True`` allows it.
    An output of one element in an array (shape ``(1,)`` or ``(1, 1)``, common after
    ``X @ w``) is taken as the real scalar it holds, as in autograd; the value that
    `value_and_grad` returns keeps its shape.

    >>> import numpy as np
    >>> def loss(x):
    ...     return sum(x[i] ** 2 for i in range(len(x)))
    >>> grad(loss)(np.arange(3.0))
    array([0., 2., 4.])
    >>> grad(lambda z: np.abs(z) ** 2)(3 + 4j)    # complex convention: dRe + i dIm
    (6+8j)
    >>> grad(lambda w: np.ones((1, 2)) @ w ** 2)(np.array([1.0, 3.0]))   # shape (1,)
    array([2., 6.])
    """
    require_callable("grad", f)
    value_and_gradient = value_and_grad(f, argnums, has_aux, allow_int)

    def gradient(*args: Any, **kwargs: Any):
        value, gradient = value_and_gradient(*args, **kwargs)
        if has_aux:
            return gradient, value[1]
        return gradient

    return wraps_callable(f)(Transformed(gradient, grad, (f, argnums, has_aux, allow_int)))


def jacobian(f: Callable, argnums: int | Sequence[int] = 0, allow_int: bool = False):
    """The Jacobian of ``f`` by reverse mode: shape ``y.shape + x.shape`` for array ``x``.

    Outputs and inputs may be structures (dicts, lists, tuples, dataclasses...), as in JAX:
    the result has the output's structure, and at each of its leaves the input's structure
    (a tuple of them for a tuple ``argnums``) holding the blocks ``y_leaf.shape +
    x_leaf.shape``. Complex convention: row ``k`` is the gradient of ``Re(y[k])``.

    >>> import numpy as np
    >>> jacobian(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    >>> jacobian(lambda p: {"s": p["a"] * p["b"]})({"a": 2.0, "b": 3.0})
    {'s': {'a': 3.0, 'b': 2.0}}
    """
    require_callable("jacobian", f)
    @wraps_callable(f)
    def jacobian_of(*args: Any, **kwargs: Any):
        numbers, single = _normalize_argnums(f, argnums, args, allow_int)
        y, pullback = _vjp(f, args, kwargs, argnums=numbers)
        _refuse_integer_outputs("jacobian", f, y)
        inputs = [(number, [path for path, _ in leaves(args[number], _is_input_leaf)])
                  for number in numbers]
        result = y
        for out_path, out_leaf in list(leaves(y, _is_output_leaf)):
            if is_lazy(primal(out_leaf)) or any(is_lazy(args[number]) for number in numbers):
                raise TypeError(
                    f"jacobian of {function_name(f)}: a Dask array among its inputs or "
                    f"outputs; the Jacobian is built one dense row at a time, which would "
                    f"compute it. Use grad, vjp or jvp (they stay lazy), or compute the "
                    f"arrays first (x.compute()).")
            value = np.asarray(primal(out_leaf))
            rows = []
            for k in range(value.size):
                seed = np.zeros(value.size, value.dtype)
                seed[k] = 1
                rows.append(pullback(_seed_at(out_path, seed.reshape(value.shape)),
                                     retain=True)[1:])
            per_argument = []
            for i, (number, paths) in enumerate(inputs):
                blocks = {}
                for path in paths:
                    x = np.asarray(get_at(args[number], path))
                    parts = [np.asarray(unthunk(tangent_at(row[i], path))) for row in rows]
                    stacked = np.stack(parts) if parts else np.zeros((0,) + x.shape, x.dtype)
                    blocks[path] = _as_leaf(stacked.reshape(value.shape + x.shape),
                                            get_at(args[number], path))
                per_argument.append(_gradient_structure(args[number], blocks, True))
            block = per_argument[0] if single else tuple(per_argument)
            result = replace_at(result, out_path, block)
        return result

    return jacobian_of


def _as_leaf(block: np.ndarray, x: Any) -> Any:
    """A 0-d Jacobian block as a number of ``x``'s type (a Python float for a float)."""
    if block.ndim or issubclass(type(x), np.ndarray):
        return block
    return type(x)(block[()]) if issubclass(type(x), (float, complex)) else block[()]


def _refuse_integer_outputs(transform: str, f: Callable, y: Any) -> None:
    """An integer or bool output has no derivative: its Jacobian is not the value itself."""
    def integral(v):
        kind = getattr(primal(v), "dtype", None)
        kind = kind.kind if kind is not None else ("b" if issubclass(type(v), bool) else
                                                   "i" if issubclass(type(v), int) else None)
        return kind in ("i", "u", "b")

    for path, value in leaves(y, integral):
        at = "".join(f"[{key!r}]" for key in path)
        raise TypeError(
            f"{transform}({function_name(f)}): the output{at} is {type(value).__name__} "
            f"{value!r}, which has no derivative; {transform} needs float or complex outputs. "
            f"Return float(...) of it if it should be differentiated, or leave it out of the "
            f"differentiated function.")


def _is_output_leaf(x: Any) -> bool:
    return is_differentiable(primal(x))


def _seed_at(path: tuple, seed: Any) -> Any:
    """A structural cotangent that is ``seed`` at ``path`` and zero elsewhere."""
    for key in reversed(path):
        seed = {key: seed}
    return seed


def jvp(f: Callable, primals: Sequence, tangents: Sequence):
    """``(f(*primals), J v)``: the Jacobian-vector product in forward mode, as in JAX.

    ``tangents`` has one entry per primal, of the same structure (missing leaves of a
    structure are zero); the output tangent has the output's structure. Forward mode runs
    each operation's ``frule`` as it goes, so its cost is that of one evaluation with
    tangents, whatever the number of outputs.

    >>> import numpy as np
    >>> jvp(lambda x: np.sin(x) * 2.0, (np.array([0.0, 1.0]),), (np.array([1.0, 0.0]),))
    (array([0.        , 1.68294197]), array([2., 0.]))
    """
    require_callable("jvp", f)
    return run_jvp(f, primals, tangents, lend=True)


def run_jvp(f: Callable, primals: Sequence, tangents: Sequence, lend: bool,
            names: Sequence[str] | None = None):
    """`jvp`; with ``lend``, writes into an input reach the caller's array (one evaluation of
    ``f`` by the user's call), else they happen in a copy (``hvp``: the reverse pass inside
    keeps the input's values). ``names`` name the tangents in errors (``"hvp: v"``)."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"jvp({function_name(f)}): {len(primals)} primal(s) but {len(tangents)} "
                         f"tangent(s); give one tangent per primal, of the same structure.")
    for position, (x, t) in enumerate(zip(primals, tangents)):
        check_tangent(primal(x) if not is_structure(x) else x, t,
                      names[position] if names else f"jvp: tangents[{position}]")
    primals = tuple(_plain_inputs(x, f, position) for position, x in enumerate(primals))
    trace = ForwardTrace(ENGINE_CONFIG)
    with tracing(trace):
        lifted = [forward_lift(x, t, trace, _is_input_leaf) for x, t in zip(primals, tangents)]
        for arg in lifted if lend else ():  # writes into an input reach the caller's array
            for _, value in leaves(arg, lambda v: type(v) is Traced and v.tape is trace):
                writes.lend_input(trace, value)
        out = _run_forward(trace, f, lifted, {})
    own = _is_own(trace)
    y = replace_leaves(out, _unwrap, own)
    y_dot = replace_leaves(out, lambda v: output_tangent(v, trace) if own(v) or
                           _is_output_leaf(v) else NoTangent(), lambda v: not is_structure(v))
    return y, y_dot


# The directions pushed through one batched trace by `jacfwd`: all of them up to this many
# input elements, else chunks of it. Memory grows with it (each traced value carries a tangent
# of CHUNK_SIZE times its size; under `hessian`, the gradient's whole tape does), and time per
# column falls with it until NumPy's per-call cost is amortized.
JACFWD_CHUNK_SIZE = 128


def jacfwd(f: Callable, argnums: int | Sequence[int] = 0, allow_int: bool = False,
           chunk_size: int | None = JACFWD_CHUNK_SIZE):
    """The Jacobian of ``f`` by forward mode: the cheaper way for functions with fewer inputs
    than outputs. Same layout as `jacrev`.

    The basis vectors of all the inputs are pushed through ``f`` together, as one batch of
    tangents (`chainrules.ad.transforms.batching`), ``chunk_size`` at a time (None: all at once);
    memory grows with the chunk.

    >>> import numpy as np
    >>> jacfwd(lambda x: x ** 2)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    require_callable("jacfwd", f)
    if chunk_size is not None and (not issubclass(type(chunk_size), (int, np.integer))
                                   or chunk_size < 1):
        raise ValueError(f"jacfwd({function_name(f)}): chunk_size must be a positive int or None, got "
                         f"{chunk_size!r}.")

    @wraps_callable(f)
    def jacobian_of(*args: Any, **kwargs: Any):
        numbers, single = _normalize_argnums(f, argnums, args, allow_int)
        args = tuple(_plain_inputs(x, f, n) if n in numbers else x for n, x in enumerate(args))
        inputs = []  # (argument, input path, value, offset of its first column)
        total = 0
        for number in numbers:
            for path, leaf in leaves(args[number], _is_input_leaf):
                value = np.asarray(primal(leaf))
                if value.dtype.kind == "c":
                    raise TypeError(
                        f"jacfwd({function_name(f)}): argument {number} is complex; forward mode gives "
                        f"J v, not the gradient convention of reverse mode. Use jacrev.")
                inputs.append((number, path, value, total))
                total += value.size
        if total == 0:  # no differentiable input: evaluate once for the output's structure
            y = f(*args, **kwargs)
            chunks: list = []
        else:
            chunk = total if chunk_size is None else min(int(chunk_size), total)
            chunks = [_jacfwd_columns(f, args, kwargs, numbers, inputs, start,
                                      min(start + chunk, total))
                      for start in range(0, total, chunk)]
            y = chunks[0][0]
        _refuse_integer_outputs("jacfwd", f, y)
        result = y
        for out_path, out_leaf in list(leaves(y, _is_output_leaf)):
            out_shape = np.shape(primal(out_leaf))
            parts = [columns[out_path] for _, columns in chunks]
            stacked = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else \
                np.zeros((0,) + out_shape)
            per_argument = []
            for number in numbers:
                blocks = {}
                for n, path, value, offset in inputs:
                    if n != number:
                        continue
                    block = np.moveaxis(stacked[offset:offset + value.size], 0, -1)
                    blocks[path] = _as_leaf(np.array(block.reshape(out_shape + value.shape)),
                                            get_at(args[number], path))
                per_argument.append(_gradient_structure(args[number], blocks, True))
            result = replace_at(result, out_path, per_argument[0] if single else
                                tuple(per_argument))
        return result

    return jacobian_of


def _run_forward(trace: Any, f: Callable, lifted: list, kwargs: dict) -> Any:
    """``f(*lifted, **kwargs)`` inside the forward ``trace``; an error the trace deferred
    (a traced value converted where it could not be followed) is raised as the cause."""
    try:
        out = f(*lifted, **kwargs)
    except Exception as error:
        if trace.deferred:
            raise trace.deferred[0] from error
        raise
    trace.raise_deferred()
    return out


def _jacfwd_columns(f: Callable, args: tuple, kwargs: dict, numbers: tuple, inputs: list,
                    start: int, stop: int) -> tuple[Any, dict]:
    """``f(*args)`` and, for each output leaf by path, the columns ``start:stop`` of its
    Jacobian (over all the inputs' elements in order) as an array ``(stop - start, *shape)``:
    one batched forward trace of the basis vectors ``e_start ... e_stop-1``."""
    size = stop - start
    parts: dict = {number: {} for number in numbers}  # argument -> input path -> tangents
    for number, path, value, offset in inputs:
        first, last = max(start, offset), min(stop, offset + value.size)
        if first < last:
            basis = np.zeros((size, value.size), value.dtype)
            basis[np.arange(first - start, last - start),
                  np.arange(first - offset, last - offset)] = 1
            parts[number][path] = basis.reshape((size,) + value.shape)
    tangents = {number: paths[()] if () in paths else tangent_from_paths(args[number], paths)
                for number, paths in parts.items()}
    trace = BatchedForwardTrace(ENGINE_CONFIG, size)
    with tracing(trace):
        out = _run_forward(trace, f, [batched_lift(x, tangents[n], trace, _is_input_leaf)
                                      if n in tangents else x for n, x in enumerate(args)],
                           kwargs)
    own = _is_own(trace)
    y = replace_leaves(out, _unwrap, own)
    columns = {path: batched_output_tangent(leaf, trace)
               for path, leaf in leaves(out, lambda v: own(v) or _is_output_leaf(v))}
    return y, columns


jacrev = jacobian


def hessian(f: Callable, argnums: int | Sequence[int] = 0,
            chunk_size: int | None = JACFWD_CHUNK_SIZE):
    """The Hessian of a real scalar ``f``: forward over reverse (``jacfwd(grad(f))``), the
    gradient traced once per chunk of ``chunk_size`` basis vectors (see `jacfwd`).

    >>> import numpy as np
    >>> hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    require_callable("hessian", f)
    return jacfwd(grad(f, argnums), argnums, chunk_size=chunk_size)


def hvp(f: Callable, x: Any, v: Any) -> Any:
    """The Hessian-vector product ``H v`` of a real scalar ``f`` at ``x``, by forward over
    reverse: the cost of a few gradients, never forming the Hessian. ``x`` and ``v`` may be
    structures alike.

    >>> import numpy as np
    >>> hvp(lambda x: np.sum(x ** 3), np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([ 6., 12.])
    """
    require_callable("hvp", f)
    value_and_gradient = _value_and_gradient(f, 0, False, False)
    return run_jvp(lambda x: value_and_gradient(x)[1], (x,), (v,), lend=False,
                   names=("hvp: v",))[1]


def elementwise_grad(f: Callable, argnums: int | Sequence[int] = 0):
    """The gradient of ``sum(f(x))``, as in autograd: for an elementwise ``f``, its
    derivative at each element.

    >>> import numpy as np
    >>> elementwise_grad(np.sin)(np.array([0.0, np.pi]))
    array([ 1., -1.])
    """
    require_callable("elementwise_grad", f)
    def summed(*args: Any, **kwargs: Any):
        out = f(*args, **kwargs)
        return np.sum(np.real(out)) if np.iscomplexobj(primal(out)) else np.sum(out)

    return wraps_callable(f)(grad(summed, argnums))
