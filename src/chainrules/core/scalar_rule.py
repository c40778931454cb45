"""scalar_rule: an elementwise rule (rrule and frule) from its partial derivatives, in one line.

``scalar_rule(np.sin, lambda y, x: np.cos(x))`` registers both rules for ``np.sin``. Each
partial is a function of the output and the arguments, or an integer constant (``1`` for
``add``); ``None`` marks an argument that is not differentiable. Broadcasting, complex numbers and projection are handled here, once:

- reverse: ``cotangent_i = project_i(unbroadcast(conj(partial_i) * dy))``;
- forward: ``dy = project_y(sum_i partial_i * dx_i)``.

That is the convention under which ``grad(abs2)(3+4j) == 6+8j`` (the gradient of a real loss
is ``dL/dRe(z) + i dL/dIm(z)``).
"""

from __future__ import annotations

import dis
import functools
import sys
from typing import Any, Callable

import numpy as np

from .._compat import signature
from .accumulate import accumulate
from .broadcast import shape_of, unbroadcast
from .naming import function_name
from .projection import _ARRAY_LIKE_TYPES, _SCALAR_PROJECTORS, NO_TANGENT_PROJECTOR, ProjectTo
from .registry import NUMBER_FORMS, NumberForm, dual_form, frule, rrule
from .tangents import AbstractZero, NoTangent, ZeroTangent
from .thunks import Thunk, unthunk

__all__ = ["scalar_rule", "reads", "number_pairs", "STAND_IN_SIZE"]

Partial = Callable[..., Any] | int | None

_REFUSED_KEYWORDS = ("out", "where")


# Scalars whose conjugate is themselves, and all scalar types: fast paths skip NumPy calls.
_REAL_SCALARS = frozenset({int, float, np.float64, np.float32, np.float16, np.longdouble})
_SCALARS = _REAL_SCALARS | {complex, np.complex128, np.complex64, np.clongdouble}


_NUMPY_SCALARS = frozenset(kind for kind in _SCALARS if issubclass(kind, np.generic))
# Number types that have tangents (not int or bool).
_INEXACT_NUMBERS = frozenset(kind for kind in _SCALARS if kind is not int)
_FLOAT64, _COMPLEX128 = np.dtype(np.float64), np.dtype(np.complex128)
# Python numbers whose arithmetic differs from NumPy's (`as_numpy`).
_PYTHON_NUMBERS = frozenset({bool, float, complex})
_NO_TANGENT = NoTangent()


def _numpy_scalars(args: tuple) -> bool:
    """All arguments scalars, at least one a NumPy scalar (so operators act as the ufunc)."""
    numpy_scalar = False
    for arg in args:
        kind = type(arg)
        if kind in _NUMPY_SCALARS:
            numpy_scalar = True
        elif kind not in _SCALARS:
            return False
    return numpy_scalar


# The pairs of argument types for which `_numpy_scalars` holds, each with whether `as_numpy`
# leaves them as they are (no Python float or complex number, no two NumPy types of which
# the ufunc casts one to the other): one lookup in the hot path.
_NUMPY_SCALAR_PAIRS = {(a, b): a not in _PYTHON_NUMBERS and b not in _PYTHON_NUMBERS and (
                           a is b or a not in _INEXACT_NUMBERS or b not in _INEXACT_NUMBERS)
                       for a in _SCALARS for b in _SCALARS
                       if a in _NUMPY_SCALARS or b in _NUMPY_SCALARS}


def as_numpy(args: tuple, y: Any) -> tuple:
    """The arguments as the ufunc saw them, for the partials: each Python number becomes a
    NumPy scalar of the output's (inexact) dtype, which is what the ufunc cast it to, and so
    does a NumPy number or array of a dtype the ufunc cast to the output's (float32 meeting
    float64, a real array meeting a complex one).

    So partials compute with NumPy semantics: ``1 / x`` at ``x == 0.0`` is ``inf`` with
    NumPy's RuntimeWarning, as on an array, not Python's ZeroDivisionError; in the precision
    of the computation (the ``0.5`` of ``x ** 0.5`` on float32 ``x`` is a float32; the
    ``log(a)`` of ``a ** b`` with float32 ``a`` and float64 ``b`` is a float64), and in its
    domain (the ``log(a)`` of a negative real ``a`` raised to a complex ``b`` is complex). A
    nonzero Python int stays one: its arithmetic is exact in Python and NumPy alike (only
    ``1 / 0`` differs), and the 2 of ``x[i] ** 2`` in scalar loops stays cheap.

    >>> as_numpy((0.0, 2, 0), np.float32(1.0))
    (np.float32(0.0), 2, np.float32(0.0))
    >>> as_numpy((np.float32(0.5), np.float64(2.0)), np.float64(0.7))
    (np.float64(0.5), np.float64(2.0))
    """
    computed = None
    if len(args) == 1:
        # one argument: computed in its own dtype (an integer's float casts nothing inexact)
        kind = type(args[0])
        if kind not in _PYTHON_NUMBERS and (kind is not int or args[0] != 0):
            return args
    else:
        computed = y.dtype if type(y) is _ndarray else _NUMBER_DTYPES.get(type(y))
        if computed is None:  # a duck array's (a Dask array: np.asarray would compute it)
            computed = getattr(y, "dtype", None)
        for arg in args:
            kind = type(arg)
            if kind is _ndarray:
                if arg.dtype is not computed:
                    break
            elif kind in _NUMBER_DTYPES:
                if _NUMBER_DTYPES[kind] is not computed:
                    break
            elif kind in _PYTHON_NUMBERS or (kind is int and arg == 0) or (
                    kind is not int and getattr(arg, "dtype", computed) is not computed):
                break  # (the last: a traced value, of second derivatives, or a duck array)
        else:
            return args  # nothing to convert
    kind = computed if computed is not None else np.asarray(y).dtype
    if kind.kind not in "fc":
        return args  # no tangents to compute (integer or boolean output)
    if kind == _FLOAT64 or kind == _COMPLEX128:
        # NumPy 1 also makes a double when a float32 number meets a Python float: compute in
        # the NumPy arguments' own precision then, as NumPy 2 does.
        for arg in args:
            dtype = getattr(arg, "dtype", None)
            if dtype is not None and dtype.kind in "fc" and dtype.itemsize < kind.itemsize:
                found = np.result_type(*[a.dtype for a in args if hasattr(a, "dtype")])
                if found.kind == kind.kind or found.kind == "c":
                    kind = found
                break
    number = kind.type
    return tuple(number(arg) if type(arg) in _PYTHON_NUMBERS or (type(arg) is int and arg == 0)
                 else arg if type(arg) is int else _cast(arg, kind) for arg in args)


_NUMBER_DTYPES = {kind: np.dtype(kind) for kind in _NUMPY_SCALARS}
_ndarray = np.ndarray


def _cast(value: Any, dtype: np.dtype) -> Any:
    """A value of another dtype as a ufunc computing in ``dtype`` saw it (`as_numpy`): cast
    there if it is inexact and the cast loses nothing (never down). A NumPy number or array,
    or a value with a dtype of its own: an engine's traced value (its ``astype`` is recorded,
    so second derivatives see the cast too) or a duck array."""
    found = getattr(value, "dtype", None)
    if not issubclass(type(found), np.dtype) or found == dtype or found.kind not in "fc" or \
            not np.can_cast(found, dtype):
        return value
    return dtype.type(value) if type(value) in _NUMBER_DTYPES else value.astype(dtype)


def _is_complex(value: Any) -> bool:
    """``np.iscomplexobj(value)``, from its dtype when it has one (no function dispatch)."""
    dtype = getattr(value, "dtype", None)
    return np.iscomplexobj(value) if dtype is None else dtype.kind == "c"


def _check_keywords(f: Any, kwargs: dict) -> None:
    for keyword in _REFUSED_KEYWORDS:
        if keyword in kwargs:
            raise TypeError(
                f"{function_name(f)}: the {keyword}= argument is not supported in differentiated code. "
                f"Compute the result without {keyword}= (for where=, use np.where on the "
                f"result).")


def _argument_cotangent(arg: Any, partial: Partial, y: Any, values: tuple, dy: Any) -> Any:
    """``project(unbroadcast(conj(partial) * dy))`` for one argument; ``values`` are all the
    arguments as the partials see them (`as_numpy`)."""
    kind = type(arg)
    project = _SCALAR_PROJECTORS.get(kind)
    number = project is not None
    if not number and not (kind is np.ndarray and arg.dtype.kind in "fc"):
        project = ProjectTo(arg)  # float arrays need none when the cotangent fits (below)
    if partial is None or project is NO_TANGENT_PROJECTOR:
        return _NO_TANGENT
    if type(partial) is int:  # a constant partial: 1 for add, -1 for subtract
        cotangent = dy if partial == 1 else partial * dy
    else:
        derivative = partial(y, *values)
        if type(derivative) is np.ndarray:
            if derivative.dtype.kind == "c":
                derivative = np.conj(derivative)
            if derivative.size >= STAND_IN_SIZE and _is_own_temporary(derivative, dy):
                # computed into: no second array (large arrays: for small ones the checks
                # cost more than an allocation)
                cotangent = np.multiply(derivative, dy, out=derivative)
            else:
                cotangent = derivative * dy
        else:
            if type(derivative) not in _REAL_SCALARS and _is_complex(derivative):
                derivative = np.conj(derivative)
            cotangent = derivative * dy
    if type(cotangent) is kind and number:
        return cotangent  # a number of its primal's own type is in the tangent space
    if type(cotangent) is np.ndarray:
        if project is None and cotangent.dtype is arg.dtype and cotangent.shape == arg.shape:
            return cotangent  # an array argument's cotangent that already fits
        cotangent = unbroadcast(cotangent, () if number else
                                arg.shape if kind is np.ndarray else shape_of(arg))
    elif type(cotangent) not in _SCALARS:  # an engine's traced value (higher order)
        cotangent = unbroadcast(cotangent, () if number else shape_of(arg))
    return (project or ProjectTo(arg))(cotangent)


def _is_own_temporary(derivative: np.ndarray, dy: Any) -> bool:
    """Whether the partial's result is a new array nothing else holds (a reference count of
    two: the caller's name and the call's argument) that ``derivative * dy`` fits: then the
    product is computed into it, the one allocation a pullback of an elementwise rule saves
    (``exp``'s partial returns the output itself, which is held elsewhere: not this)."""
    if sys.getrefcount(derivative) > 3 or derivative.base is not None or \
            not derivative.flags.writeable:
        return False
    kind = type(dy)
    if kind is np.ndarray:
        return dy.shape == derivative.shape and np.promote_types(
            dy.dtype, derivative.dtype) == derivative.dtype
    # a number: the product's dtype as NumPy makes it (NEP 50 on NumPy 2, values on 1)
    return kind in _SCALARS and np.result_type(derivative, dy) == derivative.dtype


def reads(partial: Partial, count: int) -> frozenset:
    """Which parameters ``partial`` reads: 0 for the output ``y``, ``i + 1`` for argument
    ``i`` (of ``count``); every one when unsure (no code to read, ``*args``, a closure cell).
    What an elementwise rule keeps for its pullback follows from this: ``exp``'s partial
    ``lambda y, x: y`` keeps the output, ``sin``'s the argument, ``add``'s nothing.

    >>> sorted(reads(lambda y, x: y, 1)), sorted(reads(lambda y, a, b: b, 2)), reads(1, 2)
    ([0], [2], frozenset())
    """
    if partial is None or type(partial) is int:
        return frozenset()
    everything = frozenset(range(count + 1))
    code = getattr(partial, "__code__", None)
    if code is None or code.co_flags & 0x04 or code.co_argcount != count + 1:  # 0x04: *args
        return everything
    names = code.co_varnames[:count + 1]
    if any(name in code.co_cellvars for name in names):
        return everything
    found = set()
    for instruction in dis.get_instructions(code):
        if instruction.opname.startswith("LOAD_FAST"):
            value = instruction.argval
            for position, name in enumerate(names):
                if value == name or (isinstance(value, tuple) and name in value):
                    found.add(position)
    return frozenset(found)


def _stand_in(value: Any) -> Any:
    """What a pullback keeps of an array argument no partial will read: an array of its type,
    shape and dtype that holds no memory (one zero, broadcast; one per shape and dtype,
    shared and read-only), for projecting its cotangent; numbers and other values are small
    and kept as they are."""
    if type(value) is not np.ndarray or value.size < STAND_IN_SIZE:
        return value
    key = (value.shape, value.dtype)
    stand_in = _STAND_INS.get(key)
    if stand_in is None:
        if len(_STAND_INS) > 10_000:  # a bound, for programs that see endless shapes
            _STAND_INS.clear()
        stand_in = _STAND_INS[key] = _broadcast_to(_zeros((), value.dtype), value.shape)
    return stand_in


_STAND_INS: dict = {}
# Arrays smaller than this are kept as they are: for them the bookkeeping costs more time
# than the memory is worth (an RNN's hidden state of 32 numbers, a scalar loop's numbers).
STAND_IN_SIZE = 1024
# NumPy's own: while a trace runs, np.zeros is the engine's stand-in for the program's arrays
_zeros, _broadcast_to = np.zeros, np.broadcast_to


class _ScalarPullback:
    """The pullback of an elementwise rule: ``project_i(unbroadcast(conj(d_i) * dy))``.

    It keeps what the partials read (`reads`), nothing else: each array argument that no
    partial reads is kept as a `_stand_in` (its shape and dtype, no memory), and the output
    only if a partial reads it. `drop_unneeded` narrows that to the partials of the arguments
    whose cotangents an engine will ask for.
    """

    __slots__ = ("partials", "args", "y", "values", "read")

    def __init__(self, partials: tuple, args: tuple, y: Any, values: tuple,
                 read: tuple = ()):
        self.partials = partials
        self.args = args
        self.y = y
        self.values = values  # the arguments as the partials see them (`as_numpy`)
        self.read = read  # per partial: the parameters it reads (`reads`)

    def drop_unneeded(self, needed: tuple) -> None:
        """Forget what only the partials of arguments not ``needed`` read: an engine calls
        it with one bool per argument, whether it will ask for that argument's cotangent
        (``x * c`` with a constant ``c``: ``x`` is not kept)."""
        read = self.read
        if not read:
            return
        kept = set()
        for position, need in enumerate(needed):
            if need:
                kept |= read[position]
        partials = list(self.partials)
        for position, need in enumerate(needed):
            if not need:
                partials[position] = None  # never asked for: its cotangent is NoTangent
        self.partials = tuple(partials)
        if 0 not in kept:
            self.y = None
        self.args = tuple(arg if position + 1 in kept else _stand_in(arg)
                          for position, arg in enumerate(self.args))
        self.values = tuple(value if position + 1 in kept else _stand_in(value)
                            for position, value in enumerate(self.values))

    def __call__(self, dy: Any) -> tuple:
        partials, args, y, values = self.partials, self.args, self.y, self.values
        if type(dy) not in _SCALARS and type(dy) is not np.ndarray:
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return (_NO_TANGENT,) + tuple(
                    _NO_TANGENT if partial is None or ProjectTo(arg) is NO_TANGENT_PROJECTOR
                    else ZeroTangent() for arg, partial in zip(args, partials))
        if len(args) == 1:
            return _NO_TANGENT, _argument_cotangent(args[0], partials[0], y, values, dy)
        if len(args) == 2 and type(args[0]) is not np.ndarray \
                and type(args[1]) is not np.ndarray:  # numbers: nothing worth deferring
            return (_NO_TANGENT, _argument_cotangent(args[0], partials[0], y, values, dy),
                    _argument_cotangent(args[1], partials[1], y, values, dy))
        if len(args) == 2:
            return (_NO_TANGENT, _deferred_cotangent(args[0], partials[0], y, values, dy),
                    _deferred_cotangent(args[1], partials[1], y, values, dy))
        return (_NO_TANGENT,) + tuple(_deferred_cotangent(arg, partial, y, values, dy)
                                      for arg, partial in zip(args, partials))

    def __repr__(self) -> str:
        return f"<pullback of an elementwise rule at {self.args!r}>"


class _LinearPullback:
    """The pullback of a linear rule of two numbers (constant partials: add, subtract).

    It reads no values, only the argument types, so one serves every call with the same
    types; a ``dy`` of the arguments' own type needs no projection at all.
    """

    __slots__ = ("partials", "kind", "project", "general")

    def __init__(self, partials: tuple, args: tuple):
        self.partials = partials
        # ±dy keeps dy's type on every NumPy; -1 * float32 is float64 on NumPy 1 (before NEP 50).
        same = type(args[0]) is type(args[1]) and all(p in (1, -1) for p in partials)
        self.kind = type(args[0]) if same else None
        self.project = _SCALAR_PROJECTORS.get(self.kind)  # None: not two numbers of one type
        self.general = _ScalarPullback(partials, args, None, args)  # constant partials

    def __call__(self, dy: Any) -> tuple:
        if type(dy) is self.kind:
            first, second = self.partials
            return (_NO_TANGENT, dy if first == 1 else -dy, dy if second == 1 else -dy)
        if self.project is not None and type(dy) in _ARRAY_LIKE_TYPES:
            # An engine's traced number (a second derivative: the sum of a scalar loop under
            # hvp): both arguments have one type, so one projection serves both.
            dy = self.project(dy)
            first, second = self.partials
            return (_NO_TANGENT, dy if first == 1 else -dy, dy if second == 1 else -dy)
        return self.general(dy)


class _NumbersPullback:
    """The pullback of an elementwise rule of two numbers (NumPy scalars: no arrays, nothing
    broadcast): `_argument_cotangent` for each, with what numbers make simple done inline,
    since scalar loops spend their time here."""

    __slots__ = ("partials", "a", "b", "y", "values")

    def __init__(self, partials: tuple, args: tuple, y: Any, values: tuple | None = None):
        self.partials = partials
        self.a, self.b = args
        self.y = y
        # the arguments as the partials see them (`as_numpy`): a Python float among NumPy
        # numbers becomes a NumPy number of the output's type (2.0 * x[i] in a stencil loop)
        self.values = args if values is None else values

    def drop_unneeded(self, needed: tuple) -> None:
        """No cotangent for an argument an engine will not ask for (a constant)."""
        first, second = self.partials
        self.partials = (first if needed[0] else None, second if needed[1] else None)

    def __call__(self, dy: Any) -> tuple:
        a, b, y = self.a, self.b, self.y
        if type(dy) not in _SCALARS:
            return _ScalarPullback(self.partials, (a, b), y, self.values)(dy)
        first, second = self.partials
        va, vb = self.values
        # An integer argument (the 2 of x ** 2) has no tangent: no call for it.
        return (_NO_TANGENT,
                _number_cotangent(first, a, y, va, vb, dy) if type(a) in _INEXACT_NUMBERS
                else _NO_TANGENT,
                _number_cotangent(second, b, y, va, vb, dy) if type(b) in _INEXACT_NUMBERS
                else _NO_TANGENT)


def _numbers_pullback(partials: tuple) -> Callable:
    """A `NumberForm`'s pullback: the rule's own pullback of two float64 numbers (or of
    arrays of one shape and dtype), from the payload ``(form, a, b, y)`` an engine
    recorded."""
    def pullback(payload: tuple) -> _NumbersPullback:
        return _NumbersPullback(partials, payload[1:3], payload[3])

    return pullback


_FORM_TYPES = (np.float64, np.float32)  # the number types engines record by NumberForms


def _number_pullback(partial: Partial) -> Callable:
    """`_numbers_pullback` of a rule of one argument, from the payload ``(form, x, None, y)``."""
    def pullback(payload: tuple) -> _ScalarPullback:
        x = payload[1]
        return _ScalarPullback((partial,), (x,), payload[3], (x,))

    return pullback


def _linear_pullback(partials: tuple) -> Callable:
    """`_numbers_pullback` of a linear rule, whose pullback reads no values: one serves every
    call with the same number type (its payload's stand-in ones have that type)."""
    shared: dict = {}

    def pullback(payload: tuple) -> _LinearPullback | _ScalarPullback:
        kind = type(payload[1])
        if kind is np.ndarray or type(payload[2]) is np.ndarray:  # an engine's small arrays
            return _ScalarPullback(partials, payload[1:3], None, payload[1:3])
        found = shared.get(kind)
        if found is None:
            found = shared[kind] = _LinearPullback(partials, payload[1:3])
        return found

    return pullback


def _number_cotangent(partial: Partial, arg: Any, y: Any, a: Any, b: Any, dy: Any) -> Any:
    """``conj(partial(y, a, b)) * dy`` for the float or complex number ``arg``, projected onto
    its type."""
    if partial is None:
        return _NO_TANGENT
    kind = type(arg)
    derivative = partial if type(partial) is int else partial(y, a, b)
    if type(derivative) not in _REAL_SCALARS and _is_complex(derivative):
        derivative = np.conj(derivative)
    cotangent = derivative * dy
    return cotangent if type(cotangent) is kind else _SCALAR_PROJECTORS[kind](cotangent)


def _deferred_cotangent(arg: Any, partial: Partial, y: Any, values: tuple, dy: Any) -> Any:
    """The cotangent of one of several arguments; an array's is thunked, since the engine
    does not need the cotangents of constant arguments, unless it costs nothing to make (a
    constant partial and nothing to sum: ``dy`` itself for ``add``); so is a float's next
    to an array (``np.maximum(h, 0.0)``: its partial over the array, then summed)."""
    if partial is None:
        return _argument_cotangent(arg, partial, y, values, dy)
    if type(arg) is np.ndarray:
        if arg.ndim and (type(partial) is not int or type(dy) is not np.ndarray or
                         arg.shape != dy.shape) and (
                arg.dtype.kind in "fc" or ProjectTo(arg) is not NO_TANGENT_PROJECTOR):
            return Thunk(lambda: _argument_cotangent(arg, partial, y, values, dy))
    elif type(dy) is np.ndarray and dy.ndim and type(arg) in _INEXACT_NUMBERS:
        return Thunk(lambda: _argument_cotangent(arg, partial, y, values, dy))
    return _argument_cotangent(arg, partial, y, values, dy)


def _in_tangent_space(y: Any, dy: Any) -> Any:
    """The output tangent ``dy`` broadcast to ``y``'s shape and projected (at no cost when it
    already fits)."""
    kind = type(y)
    if type(dy) is kind and (kind in _INEXACT_NUMBERS or (
            kind is np.ndarray and dy.dtype == y.dtype and dy.shape == y.shape
            and y.dtype.kind in "fc")):
        return dy  # what ProjectTo(y) returns
    if shape_of(dy) != shape_of(y):
        dy = np.broadcast_to(dy, shape_of(y))
    return ProjectTo(y)(dy)


def _positional_range(function: Any) -> tuple[int, float] | None:
    """How many positional arguments ``function`` takes: (required, at most); None if unknown."""
    if issubclass(type(function), np.ufunc):
        return function.nin, function.nin
    try:
        parameters = signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return sum(p.default is p.empty for p in positional), float("inf")
    return sum(p.default is p.empty for p in positional), len(positional)


def _check_arity(f: Any, partials: tuple, name: str) -> None:
    """A rule author's slip caught when the rule is registered, not when it is first used: one
    partial per positional argument of ``f``, each a function of ``(y, *args)``."""
    taken = _positional_range(f)
    if taken is not None and not taken[0] <= len(partials) <= taken[1]:
        expected = taken[0] if taken[0] == taken[1] else f"{taken[0]} to {taken[1]}"
        raise TypeError(
            f"scalar_rule({name}): {len(partials)} partial derivative(s) given, but {name} "
            f"takes {expected} positional argument(s); give one partial per argument, in "
            f"order (None for an argument that is not differentiated).")
    for position, partial in enumerate(partials):
        if partial is None or not callable(partial):
            continue
        takes = _positional_range(partial)
        if takes is not None and not takes[0] <= 1 + len(partials) <= takes[1]:
            raise TypeError(
                f"scalar_rule({name}): partial {position} takes {takes[0]} positional "
                f"argument(s); each partial is called with the output and then the "
                f"{len(partials)} argument(s): partial(y, {', '.join(['x'] * len(partials))}).")


def scalar_rule(f: Any, *partials: Partial, on_scalars: Callable | None = None,
                second: Any = None) -> None:
    """Register the rrule and frule of the elementwise function ``f`` from its partials.

    ``on_scalars`` is the same function for NumPy scalars, when a faster one gives identical
    results: Python's ``operator.pow`` on NumPy scalars runs NumPy's scalar arithmetic in a
    tenth of the time of calling the ufunc ``np.power``, which matters in scalar loops.

    ``second`` gives the second partials, for forward over reverse (``hvp``, ``jvp`` of
    ``grad``): for one argument, ``d2f/dx2`` as a function of ``(y, x)``; for two, the triple
    ``(d2f/da2, d2f/da db, d2f/db2)``; each a function, an integer constant, or ``None`` for
    zero. The rule then has a dual form (`chainrules.core.registry.dual_form`): the engine runs
    it once on primal values and tangents, instead of tracing the pullback. Rules with
    constant partials (``add``) need none; without ``second``, second derivatives trace the
    pullback, which is exact too.

    >>> import numpy as np
    >>> from chainrules.core.registry import recorded_whole
    >>> @recorded_whole      # an engine's primitive (chainrules.primitive), so rules are used
    ... def cube(x):
    ...     return x ** 3
    >>> scalar_rule(cube, lambda y, x: 3 * x ** 2)
    >>> y, pullback = rrule(cube, np.float32(2.0))
    >>> pullback(1.0)          # float32 primal, float32 cotangent
    (NoTangent(), np.float32(12.0))
    >>> frule((NoTangent(), 1.0), cube, 2.0)
    (8.0, 12.0)
    """
    count = len(partials)
    name = function_name(f)
    _check_arity(f, partials, name)
    read = tuple(reads(partial, count) for partial in partials)
    keeps_output = any(0 in parameters for parameters in read)
    unread = tuple(position + 1 not in frozenset().union(*read) for position in range(count))
    reads_arguments = False in unread  # else the partials see no argument (add, exp's y)

    # A linear rule (constant partials: add, subtract) reads no values in its pullback, so on
    # two NumPy numbers one pullback serves every call with the same argument types.
    linear = count == 2 and all(type(partial) is int for partial in partials)
    shared_pullbacks: dict = {}
    numbers_fast_path = count == 2 and on_scalars is not None

    def reverse(*args: Any, **kwargs: Any):
        if len(args) != count:
            raise TypeError(f"{name} takes {count} differentiable argument(s), got {len(args)}")
        if kwargs:
            _check_keywords(f, kwargs)
            y = f(*args, **kwargs)
        elif numbers_fast_path:
            kinds = (type(args[0]), type(args[1]))
            if linear:
                pullback = shared_pullbacks.get(kinds)
                if pullback is not None:
                    return on_scalars(*args), pullback
            plain = _NUMPY_SCALAR_PAIRS.get(kinds)
            if plain is None:
                y = f(*args)
            elif linear:
                pullback = shared_pullbacks[kinds] = _LinearPullback(partials, args)
                return on_scalars(*args), pullback
            else:
                y = on_scalars(*args)
                # Only where `as_numpy` changes nothing (as for the 2 of x[i] ** 2): else
                # the general pullback below.
                if plain and args[0] and args[1]:
                    return y, _NumbersPullback(partials, args, y if keeps_output else None)
                if plain is False and type(y) in _NUMPY_SCALARS:  # a Python number too
                    values = as_numpy(args, y)
                    if type(values[0]) in _NUMPY_SCALARS and type(values[1]) in _NUMPY_SCALARS:
                        return y, _NumbersPullback(partials, args,
                                                   y if keeps_output else None, values)
        elif on_scalars is not None and _numpy_scalars(args):
            y = on_scalars(*args)
        else:
            y = f(*args)
        # The output is kept for the pullback only if a partial reads it, an array argument
        # only if a partial reads it (memory: a chain of exp keeps outputs, not inputs).
        values = as_numpy(args, y) if reads_arguments else args
        if values is not args and type(y) is np.ndarray and y.size >= STAND_IN_SIZE:
            # an array the ufunc cast (float32 meeting float64): the partials read the cast
            # copy, the projection only the original's shape and dtype
            args = tuple(arg if value is arg else _stand_in(arg)
                         for arg, value in zip(args, values))
        if True in unread and type(y) is np.ndarray and y.size >= STAND_IN_SIZE:
            args = tuple(_stand_in(arg) if unused else arg for arg, unused in zip(args, unread))
            values = tuple(_stand_in(value) if unused else value
                           for value, unused in zip(values, unread))
        return y, _ScalarPullback(partials, args, y if keeps_output else None, values, read)

    def push(args: tuple, tangents: tuple, kwargs: dict):
        """``(y, dy)`` from plain tangents, one per argument, ``None`` for a zero: the frule
        once its tangents are unthunked (forward mode calls it directly, without them)."""
        if kwargs or len(args) != count:
            y = f(*args, **kwargs)
        elif on_scalars is not None and (_NUMPY_SCALAR_PAIRS.get((type(args[0]), type(args[1])))
                                         is not None if count == 2 else _numpy_scalars(args)):
            y = on_scalars(*args)  # identical results, without a ufunc call (scalar loops)
        else:
            y = f(*args)
        return y, output_tangent(y, as_numpy(args, y), tangents)

    def output_tangent(y: Any, values: tuple, tangents: tuple) -> Any:
        """``sum_i partial_i * dx_i``, projected onto ``y``; ``ZeroTangent()`` for none."""
        if count == 2 and len(tangents) == 2:  # binary: the loop below, unrolled
            first, second = partials
            da, db = tangents
            if first is None or da is None:
                dy = None
            elif type(first) is int:
                dy = da if first == 1 else first * da  # 1 * da is da exactly
            else:
                dy = first(y, *values) * da
            if second is not None and db is not None:
                term = (db if second == 1 else second * db) if type(second) is int else \
                    second(y, *values) * db
                dy = term if dy is None else accumulate(dy, term)
            return ZeroTangent() if dy is None else _in_tangent_space(y, dy)
        dy: Any = None
        for darg, partial in zip(tangents, partials):
            if partial is None or darg is None:
                continue
            if type(partial) is int:
                term = darg if partial == 1 else partial * darg  # 1 * darg is darg exactly
            else:
                term = partial(y, *values) * darg
            dy = term if dy is None else accumulate(dy, term)
        return ZeroTangent() if dy is None else _in_tangent_space(y, dy)

    def forward(tangents: tuple, *args: Any, **kwargs: Any):
        if len(tangents) != count + 1:
            raise TypeError(f"{name}: expected {count + 1} tangents (for the function and each "
                            f"argument), got {len(tangents)}")
        _check_keywords(f, kwargs)
        plain = []
        for darg in tangents[1:]:
            darg = unthunk(darg)
            plain.append(None if isinstance(darg, AbstractZero) else darg)
        return push(args, tuple(plain), kwargs)

    forward.push = push  # type: ignore[attr-defined]
    forward.partials = partials  # read by the batched forward trace (chainrules.ad.transforms.batching)
    rrule.register(f, replace=True)(reverse)
    frule.register(f, replace=True)(forward)
    if numbers_fast_path:
        NUMBER_FORMS[f] = NumberForm(reverse, on_scalars, partials, keeps_output,
                                     _linear_pullback(partials) if linear else
                                     _numbers_pullback(partials), _FORM_TYPES)
    elif count == 1:
        NUMBER_FORMS[f] = NumberForm(reverse, on_scalars or f, partials, keeps_output,
                                     _number_pullback(partials[0]), _FORM_TYPES)

    table = _second_partials(name, count, second)
    if table is None and not all(type(p) is int or p is None for p in partials):
        return  # no second partials: second derivatives trace the pullback
    if table is not None and all(h is None for row in table for h in row):
        table = None  # piecewise-constant partials (maximum): a zero second derivative

    def dual(args: tuple, tangents: tuple, kwargs: dict):
        """The dual form: ``(y, dy, pullback, pullback_dual)`` on plain values and tangents."""
        if kwargs or len(args) != count:
            return None
        if numbers_fast_path and not linear and _NUMPY_SCALAR_PAIRS.get(
                (type(args[0]), type(args[1]))) and args[0] and args[1] \
                and type(args[0]) in _REAL_SCALARS and type(args[1]) in _REAL_SCALARS:
            # two real numbers, as the 2 of x[i] ** 2 (the condition of `_NumbersPullback`):
            # `pullback_dual` serves every cotangent, so no order-1 pullback is made
            y = on_scalars(*args)
            if type(y) in _REAL_SCALARS:
                pair = _NumbersDual(partials, table, args, y, tangents)
                return y, pair.dy, None, pair
        for arg in args:
            if type(arg) is np.ndarray:
                # arrays: `pullback_dual` serves every cotangent, so the order-1 pullback
                # (reverse's) is not made
                y = f(*args)
                pair = _ElementwiseDual(partials, table, args, y, as_numpy(args, y), tangents)
                return y, pair.output_tangent(), None, pair
        y, pullback = reverse(*args)
        if type(pullback) is _LinearPullback:  # numbers: the pullback takes a traced dy
            dy = None
            for partial, dx in zip(partials, tangents):
                if dx is not None:
                    term = dx if partial == 1 else -dx if partial == -1 else partial * dx
                    dy = term if dy is None else dy + term
            if dy is None:
                return y, ZeroTangent(), pullback, None
            return y, dy if type(dy) is type(y) else _SCALAR_PROJECTORS[type(y)](dy), \
                pullback, None
        values = pullback.values if type(pullback) is _NumbersPullback else as_numpy(args, y)
        if values is args and type(y) in _REAL_SCALARS:
            for arg in args:
                if type(arg) not in _REAL_SCALARS:
                    break
            else:  # real numbers (scalar loops)
                pair = _NumbersDual(partials, table, args, y, tangents)
                return y, pair.dy, pullback, pair
        pair = _ElementwiseDual(partials, table, args, y, values, tangents)
        return y, pair.output_tangent(), pullback, pair

    dual_form(f, reverse, dual)
    form = NUMBER_FORMS.get(f)
    if form is not None and form.rule is reverse:
        # (args, y, tangents, derivatives, dy, ddy, needed) -> pairs
        form.pullback_dual = functools.partial(_number_pairs, partials, table)
        form.second_partials = () if table is None else table


def _second_partials(name: str, count: int, second: Any) -> tuple | None:
    """``second`` as a symmetric table ``H[i][j] = d2f/dx_i dx_j`` (``None`` for zero)."""
    if second is None:
        return None
    if count == 1:
        entries = (second,)
    elif count == 2 and isinstance(second, tuple) and len(second) == 3:
        entries = second
    else:
        raise TypeError(f"scalar_rule({name}): second= takes one formula for a function of one "
                        f"argument, or (d2/da2, d2/da db, d2/db2) for two; got {second!r}.")
    entries = tuple(None if type(h) is int and h == 0 else h for h in entries)
    if count == 1:
        return ((entries[0],),)
    aa, ab, bb = entries
    return ((aa, ab), (ab, bb))


class _ElementwiseDual:
    """An elementwise rule on values and tangents (its dual form,
    `chainrules.core.registry.dual_form`): the partials are computed once, for the output's
    tangent ``sum_i partial_i dx_i`` and for the pullback, which maps a cotangent ``dy`` with
    its tangent ``ddy`` to each argument's ``conj(partial_i) dy`` and its tangent
    ``conj(partial_i) ddy + conj(sum_j H_ij dx_j) dy`` (``H``: the second partials), reduced
    over broadcast dimensions and projected."""

    __slots__ = ("partials", "table", "args", "y", "values", "tangents", "derivatives")

    def __init__(self, partials: tuple, table: tuple | None, args: tuple, y: Any, values: tuple,
                 tangents: tuple):
        self.partials, self.table, self.args, self.y, self.values, self.tangents = \
            partials, table, args, y, values, tangents
        self.derivatives: list = [_UNKNOWN] * len(args)

    def derivative(self, i: int) -> Any:
        """``partial_i(y, *args)`` (an int for a constant partial), computed once."""
        derivative = self.derivatives[i]
        if derivative is _UNKNOWN:
            partial = self.partials[i]
            derivative = partial if type(partial) is int else partial(self.y, *self.values)
            self.derivatives[i] = derivative
        return derivative

    def output_tangent(self) -> Any:
        dy = None
        for i, dx in enumerate(self.tangents):
            if dx is None or self.partials[i] is None:
                continue
            derivative = self.derivative(i)
            term = (dx if derivative == 1 else derivative * dx) if type(derivative) is int \
                else derivative * dx
            dy = term if dy is None else accumulate(dy, term)
        return ZeroTangent() if dy is None else _in_tangent_space(self.y, dy)

    def second(self, i: int) -> Any:
        """``sum_j H_ij dx_j``: how partial ``i`` moves along the tangents; None for zero."""
        if self.table is None:
            return None
        change = None
        for h, dx in zip(self.table[i], self.tangents):
            if h is None or dx is None:
                continue
            term = (dx if h == 1 else h * dx) if type(h) is int else h(self.y, *self.values) * dx
            change = term if change is None else accumulate(change, term)
        return change

    def __call__(self, dy: Any, ddy: Any, needed: tuple) -> tuple:
        pairs = []
        for i, arg in enumerate(self.args):
            if not needed[i] or self.partials[i] is None or type(arg) is int:
                pairs.append(None)
                continue
            derivative = self.derivative(i)
            if _fits_real(arg, self.y, dy, ddy, derivative):
                pairs.append(self._real_array(i, derivative, dy, ddy))
                continue
            partial = derivative if type(derivative) is int else \
                (lambda *_, d=derivative: d)
            cotangent = _argument_cotangent(arg, partial, self.y, self.values, dy)
            if cotangent is _NO_TANGENT:
                pairs.append(None)
                continue
            tangent = None if ddy is None else \
                _argument_cotangent(arg, partial, self.y, self.values, ddy)
            change = self.second(i)
            if change is not None:
                term = _argument_cotangent(arg, lambda *_: change, self.y, self.values, dy)
                tangent = term if tangent is None else accumulate(tangent, term)
            pairs.append((cotangent, tangent))
        return tuple(pairs)

    def _real_array(self, i: int, derivative: Any, dy: np.ndarray, ddy: Any) -> tuple:
        """The pair of a real array argument of the output's shape and dtype, when the
        cotangent and the products fit it too (`_fits_real`): no broadcasting to undo, no
        conjugate, nothing to project."""
        one = type(derivative) is int and derivative == 1
        cotangent = dy if one else derivative * dy
        tangent = None if ddy is None else ddy if one else derivative * ddy
        change = self.second(i)
        if change is not None:
            term = change * dy
            tangent = term if tangent is None else tangent + term
        if tangent is not None and (type(tangent) is not np.ndarray
                                    or tangent.dtype is not dy.dtype
                                    or tangent.shape != dy.shape):
            tangent = _argument_cotangent(self.args[i], lambda *_: tangent, self.y, self.values,
                                          1)  # projected (a change of another dtype or shape)
        if type(cotangent) is not np.ndarray or cotangent.dtype is not dy.dtype:
            cotangent = _argument_cotangent(self.args[i], lambda *_: cotangent, self.y,
                                            self.values, 1)
        return cotangent, tangent


def _fits_real(arg: Any, y: Any, dy: Any, ddy: Any, derivative: Any) -> bool:
    """Whether ``arg``, ``y``, ``dy`` and ``ddy`` are real float arrays of one shape and dtype
    and the derivative is an int or such an array (then `_ElementwiseDual._real_array`)."""
    if type(arg) is not np.ndarray or type(y) is not np.ndarray or type(dy) is not np.ndarray:
        return False
    dtype, shape = arg.dtype, arg.shape
    if dtype.kind != "f" or y.dtype is not dtype or dy.dtype is not dtype or \
            y.shape != shape or dy.shape != shape:
        return False
    if ddy is not None and (type(ddy) is not np.ndarray or ddy.dtype is not dtype
                            or ddy.shape != shape):
        return False
    return type(derivative) is int or (type(derivative) is np.ndarray and
                                       derivative.dtype is dtype and derivative.shape == shape)


class _NumbersDual:
    """`_ElementwiseDual` for real numbers (scalar loops): no broadcasting, no conjugation,
    and the partials computed at once."""

    __slots__ = ("partials", "table", "args", "y", "tangents", "derivatives", "dy")

    def __init__(self, partials: tuple, table: tuple | None, args: tuple, y: Any,
                 tangents: tuple):
        self.partials, self.table, self.args, self.y, self.tangents = \
            partials, table, args, y, tangents
        derivatives = []
        dy = None
        for partial, arg, dx in zip(partials, args, tangents):
            if partial is None or type(arg) is int:
                derivatives.append(None)
                continue
            derivative = partial if type(partial) is int else partial(y, *args)
            derivatives.append(derivative)
            if dx is not None:
                term = (dx if derivative == 1 else derivative * dx) \
                    if type(derivative) is int else derivative * dx
                dy = term if dy is None else dy + term
        self.derivatives = derivatives
        kind = type(y)
        self.dy = ZeroTangent() if dy is None else dy if type(dy) is kind else \
            _SCALAR_PROJECTORS[kind](dy)

    def __call__(self, dy: Any, ddy: Any, needed: tuple) -> tuple:
        return _number_pairs(self.partials, self.table, self.args, self.y, self.tangents,
                             self.derivatives, dy, ddy, needed)


def number_pairs(partials: tuple) -> Callable:
    """The ``pullback_dual`` of a `NumberForm` (``hvp`` on numbers and small arrays) whose
    partials are ``partials`` and whose second derivatives are zero wherever they exist
    (piecewise-constant partials: ``abs``'s sign), as `scalar_rule` makes it for its rules.

    >>> import numpy as np
    >>> pairs = number_pairs((lambda y, x: np.sign(x),))
    >>> pairs((np.float64(-2.0),), np.float64(2.0), (np.float64(1.0),), None,
    ...       np.float64(3.0), np.float64(0.5), (True,))
    ((np.float64(-3.0), np.float64(-0.5)),)
    """
    return functools.partial(_number_pairs, partials, None)


def _number_pairs(partials: tuple, table: tuple | None, args: tuple, y: Any, tangents: tuple,
                  derivatives: list | None, dy: Any, ddy: Any, needed: tuple) -> tuple:
    """`_NumbersDual`'s ``pullback_dual``: for each argument, ``None`` or the pair (its
    cotangent ``partial * dy``, the tangent of that); ``derivatives`` are the partials'
    values, ``None`` to compute them here."""
    if derivatives is None:
        derivatives = [None if partial is None or type(arg) is int else
                       partial if type(partial) is int else partial(y, *args)
                       for partial, arg in zip(partials, args)]
    if type(dy) not in _REAL_SCALARS or (ddy is not None and type(ddy) not in _REAL_SCALARS):
        if type(dy) is np.ndarray and type(y) is np.ndarray:
            pairs = _array_pairs(table, args, y, tangents, derivatives, dy, ddy, needed)
            if pairs is not None:
                return pairs
        general = _ElementwiseDual(partials, table, args, y, args, tangents)
        general.derivatives = [_UNKNOWN if d is None else d for d in derivatives]
        return general(dy, ddy, needed)  # a cotangent that is an array, or complex
    pairs = []
    for i, derivative in enumerate(derivatives):
        if derivative is None or not needed[i]:
            pairs.append(None)
            continue
        cotangent = derivative * dy
        tangent = None if ddy is None else derivative * ddy
        if table is not None:
            for h, dx in zip(table[i], tangents):
                if h is not None and dx is not None:
                    term = (dx if h == 1 else h * dx) if type(h) is int else \
                        h(y, *args) * dx
                    term = term * dy
                    tangent = term if tangent is None else tangent + term
        kind = type(args[i])
        if type(cotangent) is not kind:
            cotangent = _SCALAR_PROJECTORS[kind](cotangent)
        if tangent is not None and type(tangent) is not kind:
            tangent = _SCALAR_PROJECTORS[kind](tangent)
        pairs.append((cotangent, tangent))
    return tuple(pairs)


def _array_pairs(table: tuple | None, args: tuple, y: np.ndarray, tangents: tuple,
                 derivatives: list, dy: np.ndarray, ddy: Any, needed: tuple) -> tuple | None:
    """`_number_pairs` on real arrays (``np.tanh(h)`` of a small array under ``hvp``): the
    pairs where ``dy``, ``ddy``, each argument differentiated and each product have the
    output's shape and real dtype, so that there is nothing to project, the pair of an
    argument that is a number of the dtype's type next to the array (``h / s``) summed over
    the array, of an array of the dtype broadcast (``u[:, None] * u``) summed to its shape;
    ``None`` otherwise (then `_ElementwiseDual`)."""
    dtype, shape = y.dtype, y.shape
    if dtype.kind != "f" or dy.dtype is not dtype or dy.shape != shape or ddy is not None and (
            type(ddy) is not np.ndarray or ddy.dtype is not dtype or ddy.shape != shape):
        return None
    pairs = []
    for i, derivative in enumerate(derivatives):
        if derivative is None or not needed[i]:
            pairs.append(None)
            continue
        arg = args[i]
        number = type(arg) is dtype.type  # a number next to the array (h / s): its pair summed
        if not number and (type(arg) is not np.ndarray or arg.dtype is not dtype):
            return None
        one = type(derivative) is int and derivative == 1
        cotangent = dy if one else derivative * dy
        tangent = None if ddy is None else ddy if one else derivative * ddy
        if table is not None:
            for h, dx in zip(table[i], tangents):
                if h is not None and dx is not None:
                    term = (dx if h == 1 else h * dx) if type(h) is int else \
                        h(y, *args) * dx
                    term = term * dy
                    tangent = term if tangent is None else tangent + term
        if type(cotangent) is not np.ndarray or cotangent.dtype is not dtype or \
                cotangent.shape != shape or tangent is not None and (
                    type(tangent) is not np.ndarray or tangent.dtype is not dtype
                    or tangent.shape != shape):
            return None  # a partial that casts or broadcasts
        if number:
            cotangent = _add_reduce(cotangent, None)
            if tangent is not None:
                tangent = _add_reduce(tangent, None)
        elif arg.shape != shape:
            cotangent = unbroadcast(cotangent, arg.shape)
            if cotangent.shape != arg.shape:
                return None  # (not a broadcast)
            if tangent is not None:
                tangent = unbroadcast(tangent, arg.shape)
        pairs.append((cotangent, tangent))
    return tuple(pairs)


_add_reduce = np.add.reduce  # (NumPy's own, bound at import)


_UNKNOWN = object()
