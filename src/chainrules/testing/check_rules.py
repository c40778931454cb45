"""Checking rules: `test_rrule`, `test_frule`, `test_scalar`, and declarative `RuleCase`s.

Each check raises `AssertionError` (pytest shows it as a test failure) listing every problem
found, each naming the rule, the argument (by position, parameter name and field path), what
was expected and what was got.

What `test_rrule` checks, beyond ChainRulesTestUtils:

- the primal output equals ``f(*args)``;
- every cotangent matches finite differences (projected onto the argument), for seeds in the
  output's own space *and outside it*: complex for a real output, float64 for a float32
  output, a zero, lazy seeds (`Thunk`, `InplaceableThunk`, `SparseCotangent`), partial and
  natural structural seeds. ChainRules' seeds were always of the output's own type, which is
  why its getindex ``add!`` could disagree with ``val`` with every test green;
- cotangent kinds: `NoTangent` for arguments that cannot be perturbed and for a function that
  captures nothing; the primal's shape and dtype for the others (float32 stays float32, real
  stays real), structural arguments get a `Tangent`; lazy cotangents declare the shape and
  dtype of their value;
- accumulation: every cotangent is accumulated with `chainrules.core.accumulate` into owned
  and unowned accumulators of many kinds (same dtype, float32, float64, complex128, zero,
  thunk, sparse, in-place-addable, structural, partial), once and repeatedly into the same
  buffer, and must equal ``acc + unthunk(t)`` exactly, in value and dtype; unowned
  accumulators must be left unmutated.

`test_frule` checks the output tangent against finite differences and, where an rrule exists
too, that both rules agree: ``<dy_bar, J dx> == <J^T dy_bar, dx>`` (real inner products).
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from typing import Any, Callable, Sequence

import numpy as np

from .._compat import signature
from ..core.accumulate import accumulate, owned_copy
from ..core.config import DEFAULT_CONFIG, RuleConfig, _name
from ..core.projection import ProjectTo, _ProjectToNumeric
from ..core.registry import (FIRST_ORDER_ONLY, STANDS_FOR, first_order_only, frule,  # noqa: F401
                             rrule)
from ..core.sparse import SparseCotangent
from ..core.structure import get_at, replace_paths, tangent_at, tangent_from_paths
from ..core.tangents import (AbstractZero, NoTangent, Tangent, ZeroTangent, is_zero_tangent,
                              structural_fields)
from ..core.thunks import AbstractThunk, InplaceableThunk, Thunk, unthunk
from .finite_differences import (FiniteDifferenceJacobian, fd_jacobian, format_path,
                                 perturbable_leaves)
from .strategies import inplaceable, make_tangent, rand_tangent

__all__ = [
    "TestConfig", "test_rrule", "test_frule", "test_scalar", "test_non_differentiable",
    "RuleCase", "case", "check_case", "Tolerance", "test_rrule_order2", "test_frule_order2",
]

_LOW_PRECISION = {np.dtype(np.float16): (1e-2, 1e-3), np.dtype(np.float32): (1e-4, 1e-5),
                  np.dtype(np.complex64): (1e-4, 1e-5)}
_DEFAULT_RTOL, _DEFAULT_ATOL = 1e-6, 1e-8
_REPEATS = 3          # accumulations of the same cotangent into the same buffer
_MAX_REPORTED = 12    # problems printed in one failure message


# --------------------------------------------------------------------------------------------
# The config higher-order rules receive
# --------------------------------------------------------------------------------------------

def _engine_config() -> RuleConfig | None:
    """The chainrules engine's config, when the engine is installed."""
    try:
        from .. import ad
    except Exception:  # the engine is optional for the kit
        return None
    config = getattr(ad, "EngineConfig", None)
    if config is None:
        config = getattr(getattr(ad, "api", None), "EngineConfig", None)
    return config() if isinstance(config, type) else None


class TestConfig(RuleConfig):
    """The `RuleConfig` the kit passes to rules registered with ``config=True``.

    ``rrule_via_ad(f, *args)`` uses, in order: a rule given in ``rules`` (a dict from
    functions to rrules, for functions that should not be registered globally, such as a
    test's closures), a registered rule, chainrules' own engine (``chainrules.ad``) when it is
    importable; otherwise it raises `NotImplementedError` saying so.

    >>> import numpy as np
    >>> y, pullback = TestConfig().rrule_via_ad(np.sin, np.float64(0.0))
    >>> pullback(1.0)
    (NoTangent(), np.float64(1.0))
    """

    __test__ = False  # not a pytest test class
    has_reverse_mode = True

    def __init__(self, rules: dict | None = None):
        self.rules = dict(rules or {})

    def rrule_via_ad(self, f: Callable, *args: Any, **kwargs: Any):
        rule = self._given(f)
        if rule is not None:
            return rule(*args, **kwargs)
        result = rrule(self, f, *args, **kwargs)
        if result is not None:
            return result
        engine = _engine_config()
        if engine is not None and getattr(engine, "has_reverse_mode", False):
            return engine.rrule_via_ad(f, *args, **kwargs)
        raise NotImplementedError(
            f"TestConfig.rrule_via_ad: no rule for {_name(f)} (none given in "
            f"TestConfig(rules=...), none registered) and the chainrules engine "
            f"(chainrules.ad) is not available to differentiate it. Give the rule to the "
            f"config: TestConfig(rules={{f: rule}}).")

    def _given(self, f: Callable):
        try:
            return self.rules.get(f)
        except TypeError:  # unhashable callables
            return None


# --------------------------------------------------------------------------------------------
# Describing values and arguments in messages
# --------------------------------------------------------------------------------------------

def _dtype_of(value: Any) -> np.dtype | None:
    try:
        return np.asarray(value).dtype
    except Exception:
        return None


def _describe(value: Any) -> str:
    """A short description of a value's kind, shape and dtype."""
    if isinstance(value, AbstractZero):
        return f"{type(value).__name__}()"
    if isinstance(value, SparseCotangent):
        return f"a SparseCotangent (shape {value.shape}, dtype {value.dtype})"
    if isinstance(value, InplaceableThunk):
        return f"an InplaceableThunk (declared shape {value.shape}, dtype {value.dtype})"
    if isinstance(value, AbstractThunk):
        return "a Thunk"
    if isinstance(value, Tangent):
        name = getattr(value.primal_type, "__qualname__", None) if value.primal_type else None
        return f"a Tangent[{name or 'Any'}]"
    if issubclass(type(value), np.ndarray):
        return f"a {value.dtype} array of shape {value.shape}"
    if issubclass(type(value), np.generic):
        return f"a {value.dtype} scalar"
    if issubclass(type(value), bool):
        return "a bool"
    if issubclass(type(value), (int, float, complex)):
        return f"a Python {type(value).__name__}"
    if callable(value) and not getattr(value, "__closure__", None) and not isinstance(
            value, (list, tuple, dict)):
        return f"the function {_name(value)}"
    return f"a {type(value).__qualname__}"


def _show(value: Any) -> str:
    """A value as printed in messages (arrays truncated)."""
    try:
        value = unthunk(value)
    except Exception as error:  # noqa: BLE001
        return f"<unthunk raised {type(error).__name__}: {error}>"
    if issubclass(type(value), np.ndarray):
        text = np.array2string(value, precision=8, threshold=24, separator=", ",
                               max_line_width=96)
        return f"{text} ({value.dtype})"
    if issubclass(type(value), np.generic):
        return f"{value} ({value.dtype})"
    if issubclass(type(value), (float, complex)):
        return f"{value!r} (Python {type(value).__name__})"
    text = repr(value)
    return text if len(text) <= 400 else text[:400] + "..."


def _parameter_names(f: Callable, count: int) -> list[str | None]:
    """The names of ``f``'s first ``count`` positional parameters (None where unknown)."""
    names: list[str | None] = []
    try:
        parameters = list(signature(f).parameters.values())
    except (TypeError, ValueError):
        return [None] * count
    for parameter in parameters:
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            names.append(parameter.name)
        elif parameter.kind is parameter.VAR_POSITIONAL:
            names += [f"{parameter.name}[{i}]" for i in range(count - len(names))]
            break
    return (names + [None] * count)[:count]


class _Naming:
    """How arguments are named: ``argument 1 (x), field .w[2]``; position 0 is ``f`` itself."""

    def __init__(self, f: Callable, nargs: int):
        self.names = _parameter_names(f, nargs)

    def __call__(self, position: int, path: Sequence = ()) -> str:
        if position == 0:
            text = "the function itself (cotangent 0)"
        else:
            name = self.names[position - 1]
            text = f"argument {position}" + (f" ({name})" if name else "")
        if path:
            text += f", field {format_path(path)}"
        return text


class _Report:
    """Problems found by one check; the same problem for several seeds is reported once."""

    def __init__(self, title: str):
        self.title = title
        self.problems: dict = {}

    def add(self, key: Any, message: str, case: str | None = None) -> None:
        """Record a problem; ``case`` (an accumulator, say) is listed when the problem recurs
        for other cases than the first one reported."""
        if key in self.problems:
            self.problems[key][1] += 1
        else:
            self.problems[key] = [message, 1, []]
        if case is not None and case not in self.problems[key][2]:
            self.problems[key][2].append(case)

    def __bool__(self) -> bool:
        return bool(self.problems)

    def raise_if_failed(self) -> None:
        if not self.problems:
            return
        entries = list(self.problems.values())
        lines = [f"{self.title}: {len(entries)} problem(s)"]
        for number, (message, count, cases) in enumerate(entries[:_MAX_REPORTED], 1):
            others = f": {', '.join(cases[1:])}" if len(cases) > 1 else ""
            again = f"\n   (the same problem occurred {count - 1} more time(s), for other " \
                    f"seeds or accumulators{others})" if count > 1 else ""
            lines.append(f"{number}. " + message.replace("\n", "\n   ") + again)
        if len(entries) > _MAX_REPORTED:
            lines.append(f"... and {len(entries) - _MAX_REPORTED} more problem(s)")
        raise AssertionError("\n\n".join(lines))


# --------------------------------------------------------------------------------------------
# Tolerances and comparisons
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Tolerance:
    """``|got - expected| <= atol + rtol * scale`` elementwise, where ``scale`` is the size of
    the expected value or of the terms summed to build it (whichever is larger)."""

    rtol: float
    atol: float

    @classmethod
    def for_values(cls, rtol: float | None, atol: float | None, *values: Any) -> "Tolerance":
        """Defaults by precision: 1e-6/1e-8 for float64, 1e-4/1e-5 if anything is float32."""
        default_rtol, default_atol = _DEFAULT_RTOL, _DEFAULT_ATOL
        for value in values:
            for leaf in perturbable_leaves(value):
                low = _LOW_PRECISION.get(_dtype_of(leaf.value))
                if low:
                    default_rtol = max(default_rtol, low[0])
                    default_atol = max(default_atol, low[1])
        return cls(default_rtol if rtol is None else rtol,
                   default_atol if atol is None else atol)

    def mismatch(self, expected: Any, got: Any, scale: Any = None) -> str | None:
        """None when close; otherwise the max abs and rel errors, as text."""
        e = np.asarray(expected, dtype=np.complex128)
        g = np.asarray(got, dtype=np.complex128)
        if e.shape != g.shape:
            return f"shapes differ: {e.shape} vs {g.shape}"
        magnitude = np.abs(e)
        if scale is not None:
            magnitude = np.maximum(magnitude, np.abs(np.asarray(scale, dtype=np.float64)))
        with np.errstate(invalid="ignore"):
            error = np.abs(e - g)
            both_nan = np.isnan(e) & np.isnan(g)
            bad = ~((error <= self.atol + self.rtol * magnitude) | both_nan)
        if not np.any(bad):
            return None
        worst = float(np.max(np.where(bad, error, 0))) if np.size(error) else 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = np.where(bad, error / np.maximum(np.abs(e), 1e-300), 0)
        return (f"max abs error {worst:.3g}, max rel error {float(np.max(relative)):.3g} "
                f"(rtol {self.rtol:g}, atol {self.atol:g}); {int(np.sum(bad))} of "
                f"{e.size} element(s) off")


def _is_structural_tangent(value: Any) -> bool:
    return isinstance(value, (Tangent, tuple, list, dict))


def _fields_of(value: Any) -> dict:
    if isinstance(value, Tangent):
        return dict(value.backing)
    if isinstance(value, dict):
        return dict(value)
    return dict(enumerate(value))


def _exact_mismatch(expected: Any, got: Any, path: tuple = ()) -> str | None:
    """Exact comparison of two tangents: values (nan == nan), shape and dtype; zeros and
    missing fields are equal to all-zero values."""
    expected, got = unthunk(expected), unthunk(got)
    where = f" at {format_path(path)}" if path else ""
    if isinstance(expected, AbstractZero) or isinstance(got, AbstractZero):
        if is_zero_tangent(expected) and is_zero_tangent(got):
            return None
        return f"one is zero and the other is not{where}"
    if _is_structural_tangent(expected) or _is_structural_tangent(got):
        if not (_is_structural_tangent(expected) and _is_structural_tangent(got)):
            return f"{_describe(expected)} vs {_describe(got)}{where}"
        a, b = _fields_of(expected), _fields_of(got)
        for key in list(a) + [k for k in b if k not in a]:
            problem = _exact_mismatch(a.get(key, ZeroTangent()), b.get(key, ZeroTangent()),
                                      path + (key,))
            if problem:
                return problem
        return None
    e_dtype, g_dtype = _dtype_of(expected), _dtype_of(got)
    if np.shape(expected) != np.shape(got):
        return f"shape {np.shape(got)} instead of {np.shape(expected)}{where}"
    if e_dtype != g_dtype:
        return f"dtype {g_dtype} instead of {e_dtype}{where}"
    if not np.array_equal(expected, got, equal_nan=e_dtype is not None and e_dtype.kind in "fc"):
        difference = np.max(np.abs(np.asarray(expected) - np.asarray(got)))
        return f"values differ by up to {difference:.3g}{where}"
    return None


def _materialize(value: Any) -> Any:
    """A plain copy of a tangent's value (thunks evaluated, arrays copied)."""
    value = unthunk(value)
    if isinstance(value, Tangent):
        return Tangent(value.primal_type, {k: _materialize(v) for k, v in value.items()})
    if isinstance(value, (tuple, list)):
        return type(value)(_materialize(v) for v in value) if type(value) in (tuple, list) \
            else Tangent(type(value), {k: _materialize(v) for k, v in enumerate(value)})
    if isinstance(value, dict):
        return {k: _materialize(v) for k, v in value.items()}
    if issubclass(type(value), np.ndarray):
        return value.copy()
    return value


def _eager_sum(acc: Any, t: Any) -> Any:
    """The specification of accumulation, written independently of `accumulate`:
    ``unthunk(acc) + unthunk(t)`` with zeros as identities and structures field by field."""
    acc, t = unthunk(acc), unthunk(t)
    if isinstance(acc, AbstractZero) and isinstance(t, AbstractZero):
        return NoTangent() if NoTangent() in (acc, t) else ZeroTangent()
    if isinstance(acc, AbstractZero):
        return t
    if isinstance(t, AbstractZero):
        return acc
    if _is_structural_tangent(acc) or _is_structural_tangent(t):
        if not (_is_structural_tangent(acc) and _is_structural_tangent(t)):
            raise TypeError(f"cannot add {_describe(acc)} and {_describe(t)}")
        a, b = _fields_of(acc), _fields_of(t)
        fields = {key: _eager_sum(a.get(key, ZeroTangent()), b.get(key, ZeroTangent()))
                  for key in list(a) + [k for k in b if k not in a]}
        primal_type = acc.primal_type if isinstance(acc, Tangent) else type(acc)
        return Tangent(primal_type, fields)
    return acc + t


def _inner(a: Any, b: Any) -> float:
    """The real inner product ``Re(vdot(a, b))`` of two tangents, field by field."""
    a, b = unthunk(a), unthunk(b)
    if isinstance(a, AbstractZero) or isinstance(b, AbstractZero):
        return 0.0
    if _is_structural_tangent(a) or _is_structural_tangent(b):
        fa, fb = _fields_of(a), _fields_of(b)
        return sum(_inner(fa[k], fb[k]) for k in fa if k in fb)
    return float(np.real(np.vdot(np.asarray(a), np.asarray(b))))


def _norm(a: Any) -> float:
    return float(np.sqrt(max(_inner(a, a), 0.0)))


def _has_lazy(value: Any) -> bool:
    if isinstance(value, AbstractThunk):
        return True
    return _is_structural_tangent(value) and any(
        _has_lazy(v) for v in _fields_of(value).values())


# --------------------------------------------------------------------------------------------
# Kinds of cotangents
# --------------------------------------------------------------------------------------------

def _kind_problems(primal: Any, t: Any, where: str, *, zero_ok_for_nothing: bool = False,
                   noun: str = "cotangent", natural_ok: bool = False) -> list[str]:
    """Why ``t`` is not a tangent of ``primal``'s kind (empty list when it is).

    Structural cotangents must be `Tangent`s (the rule convention); with ``natural_ok`` a
    container of the primal's own type (a tuple of tangents for a tuple) is accepted too.
    """
    if isinstance(t, NoTangent):
        return []
    if not perturbable_leaves(primal):
        if isinstance(t, ZeroTangent):
            if zero_ok_for_nothing:
                return []
            return [f"{where} is {_describe(primal)}, which cannot be perturbed: its {noun} "
                    f"must be NoTangent(), got ZeroTangent()"]
        return [f"{where} is {_describe(primal)}, which cannot be perturbed: its {noun} "
                f"must be NoTangent() (ints, bools, strings, index arrays and functions that "
                f"capture nothing get NoTangent()), got {_describe(t)}: {_show(t)}"]
    if isinstance(t, ZeroTangent):
        return []
    problems = []
    projector = ProjectTo(primal)
    if isinstance(projector, _ProjectToNumeric):
        space = f"shape {projector.shape} and dtype {projector.dtype}"
        if isinstance(t, (InplaceableThunk, SparseCotangent)) and (
                t.shape is not None and tuple(t.shape) != projector.shape
                or t.dtype is not None and t.dtype != projector.dtype):
            problems.append(f"{where}: {_describe(t)} declares a value outside the primal's "
                            f"tangent space ({space}); float32 stays float32, real stays real")
        try:
            value = unthunk(t)
        except Exception as error:  # noqa: BLE001
            return problems + [f"{where}: unthunk of {_describe(t)} raised "
                               f"{type(error).__name__}: {error}"]
        if isinstance(value, AbstractZero):
            return problems
        if isinstance(t, InplaceableThunk) and (
                t.shape is not None and np.shape(value) != t.shape
                or t.dtype is not None and _dtype_of(value) != t.dtype):
            problems.append(
                f"{where}: {_describe(t)} has a value of shape {np.shape(value)} and dtype "
                f"{_dtype_of(value)}; an InplaceableThunk's declared shape and dtype must be "
                f"those of its value (accumulate relies on them)")
        if issubclass(type(value), (bool, np.bool_)) or not issubclass(
                type(value), (np.ndarray, np.generic, int, float, complex)):
            return problems + [f"{where}: expected a number or array ({space}), got "
                               f"{_describe(value)}"]
        if np.shape(value) != projector.shape:
            problems.append(f"{where}: {noun} has shape {np.shape(value)}, expected the "
                            f"primal's shape {projector.shape}")
        if _dtype_of(value) != projector.dtype:
            problems.append(
                f"{where}: {noun} has dtype {_dtype_of(value)}, expected the primal's "
                f"tangent dtype {projector.dtype} (float32 stays float32, real stays real: "
                f"project with ProjectTo(x))")
        return problems
    try:
        value = unthunk(t)
    except Exception as error:  # noqa: BLE001
        return [f"{where}: unthunk raised {type(error).__name__}: {error}"]
    if isinstance(value, AbstractZero):
        return []
    if issubclass(type(primal), np.ndarray):  # object arrays: elements are checked by projection
        return []
    natural = natural_ok and type(value) is type(primal) and type(value) in (tuple, list, dict)
    if not isinstance(value, Tangent) and not natural:
        return [f"{where} is {_describe(primal)}: its {noun} must be a Tangent "
                f"(Tangent({type(primal).__name__}, {{field: cotangent}})), got "
                f"{_describe(value)}"]
    if natural:
        if len(value) != len(primal):
            return [f"{where}: the {noun} is a {type(value).__name__} of length {len(value)}; "
                    f"the primal has length {len(primal)}"]
        value = Tangent(type(primal), _fields_of(value))
    if value.primal_type is not None and value.primal_type is not type(primal):
        problems.append(f"{where}: a Tangent for {value.primal_type.__qualname__}, but the "
                        f"primal is {_describe(primal)}")
    for key, sub in value.items():
        try:
            field = get_at(primal, (key,))
        except (AttributeError, KeyError, IndexError, TypeError, ValueError):
            problems.append(f"{where}: the {noun} has a field {key!r} that the primal "
                            f"({_describe(primal)}) does not have")
            continue
        problems += _kind_problems(field, sub, f"{where}{format_path((key,))}",
                                   zero_ok_for_nothing=True, noun=noun,
                                   natural_ok=natural_ok)
    return problems


def _primal_problem(expected: Any, got: Any, tolerance: Tolerance, path: tuple = ()
                    ) -> str | None:
    where = format_path(path) if path else ""
    numeric = (np.ndarray, np.generic, int, float, complex)
    if isinstance(expected, numeric) and isinstance(got, numeric):
        if np.shape(expected) != np.shape(got):
            return f"output{where} has shape {np.shape(got)}, expected {np.shape(expected)}"
        if _dtype_of(expected) != _dtype_of(got):
            return f"output{where} has dtype {_dtype_of(got)}, expected {_dtype_of(expected)}"
        if _dtype_of(expected).kind in "fc":
            problem = tolerance.mismatch(expected, got)
            if problem:
                return (f"output{where} differs from f(*args): expected {_show(expected)}, "
                        f"got {_show(got)}; {problem}")
            return None
        if not np.array_equal(expected, got):
            return f"output{where} differs from f(*args): expected {_show(expected)}, got " \
                   f"{_show(got)}"
        return None
    if type(expected) is not type(got):
        return f"output{where} is {_describe(got)}, expected {_describe(expected)}"
    if isinstance(expected, (tuple, list, dict)) or perturbable_leaves(expected):
        a, b = structural_fields(expected), structural_fields(got)
        if list(a) != list(b):
            return f"output{where} has fields {list(b)}, expected {list(a)}"
        for key in a:
            problem = _primal_problem(a[key], b[key], tolerance, path + (key,))
            if problem:
                return problem
        return None
    try:
        equal = bool(expected == got)
    except Exception:  # noqa: BLE001
        equal = expected is got
    return None if equal else f"output{where} is {_show(got)}, expected {_show(expected)}"


def _deepcopy_or_none(value: Any) -> Any:
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001
        return None


def _same_primal(a: Any, b: Any) -> bool:
    return _primal_problem(a, b, Tolerance(0.0, 0.0)) is None


# --------------------------------------------------------------------------------------------
# Seeds: output tangents inside and outside the output's space
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass
class _Seed:
    description: str
    make: Callable[[], Any]
    zero: bool = False
    thunk_of_primary: bool = False


def _seeds(y: Any, output_tangent: Any, seed: int) -> list[_Seed]:
    leaves = perturbable_leaves(y)
    if output_tangent is None:
        primary = rand_tangent(y, seed)
        label = "a random output tangent in the output's own space"
    else:
        primary = output_tangent
        label = "the output tangent given"
    label += f" ({_describe(primary)})"
    seeds = [_Seed(label, lambda: primary)]
    if not leaves:
        seeds.append(_Seed("ZeroTangent()", lambda: ZeroTangent(), zero=True))
        return seeds
    seeds.append(_Seed("the same output tangent, thunked", lambda: Thunk(lambda: primary),
                       thunk_of_primary=True))
    real = [leaf for leaf in leaves if not leaf.is_complex]
    low = [leaf for leaf in leaves if _dtype_of(leaf.value) in _LOW_PRECISION]
    if real:
        value = rand_tangent(y, seed + 1, dtype=np.complex128)
        seeds.append(_Seed(f"a complex128 output tangent for an output of dtype "
                           f"{_dtype_of(real[0].value)} (outside the output's space)",
                           lambda: value))
    if low:
        value = rand_tangent(y, seed + 2, dtype=lambda d: np.promote_types(d, np.float64))
        seeds.append(_Seed(f"a float64/complex128 output tangent for an output of dtype "
                           f"{_dtype_of(low[0].value)} (outside the output's space)",
                           lambda: value))
    dense = rand_tangent(y, seed) if output_tangent is None else primary
    if issubclass(type(y), np.ndarray) and y.ndim >= 1 and \
            issubclass(type(unthunk(dense)), np.ndarray):
        dense = unthunk(dense)
        seeds.append(_Seed(f"an InplaceableThunk output tangent ({dense.dtype})",
                           lambda: inplaceable(dense)))
        if y.shape[0] > 0:
            seeds.append(_Seed(
                f"a SparseCotangent output tangent (nonzero at index 0 only, {dense.dtype})",
                lambda: SparseCotangent(0, dense[0], y.shape, dense.dtype)))
    if isinstance(primary, Tangent) and len(primary.backing) > 1:
        first = next(iter(primary.keys()))
        partial = Tangent(primary.primal_type, {first: primary[first]})
        seeds.append(_Seed(f"a partial Tangent output tangent (only field {first!r}; the "
                           f"missing fields are zero)", lambda: partial))
    if isinstance(primary, Tangent) and isinstance(y, (list, tuple, dict)) and \
            type(y) in (list, tuple, dict):
        natural = make_tangent(y, "container", seed)
        seeds.append(_Seed(f"a plain {type(y).__name__} output tangent (the natural form of "
                           f"a structural tangent)", lambda: natural))
    seeds.append(_Seed("ZeroTangent()", lambda: ZeroTangent(), zero=True))
    return seeds


# --------------------------------------------------------------------------------------------
# Accumulation
# --------------------------------------------------------------------------------------------

_ACCUMULATOR_LABELS = {
    "natural": "{own}", "float32": "float32", "float64": "float64", "complex": "complex128",
    "zero": "ZeroTangent()", "thunk": "a Thunk of a {own} value",
    "inplaceable": "an InplaceableThunk ({own})", "sparse": "a SparseCotangent ({own})",
    "partial": "a Tangent with one field (the others missing)",
    "container": "a plain container",
}


def _accumulators(primal: Any) -> list[tuple[str, Callable[[], Any]]]:
    projector = ProjectTo(primal)
    own = str(getattr(projector, "dtype", "its own dtype"))
    if isinstance(projector, _ProjectToNumeric):
        what = "array" if issubclass(type(primal), np.ndarray) else "scalar"
    else:
        what = "Tangent"
    kinds = ["natural", "float32", "float64", "complex", "zero", "thunk"]
    if issubclass(type(primal), np.ndarray) and primal.ndim >= 1 and primal.size:
        kinds += ["inplaceable", "sparse"]
    if what == "Tangent":
        kinds.append("partial")
        if type(primal) in (list, tuple, dict):
            kinds.append("container")
    out = []
    for number, kind in enumerate(kinds):
        label = _ACCUMULATOR_LABELS[kind].format(own=own)
        if kind in ("natural", "float32", "float64", "complex"):
            label = f"a {label} {what}" if what != "Tangent" else \
                f"a Tangent with {label} fields"
        out.append((label, lambda kind=kind, number=number: make_tangent(primal, kind,
                                                                         1000 + number)))
    if issubclass(type(primal), np.ndarray) and primal.ndim >= 1:
        out.append(("a 0-d float64 array (the sum broadcasts)",
                    lambda: np.array(0.75)))
    return out


def _try(function: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    try:
        return function(), None
    except Exception as error:  # noqa: BLE001
        return None, error


def _check_accumulation(report: _Report, key: Any, where: str, primal: Any,
                        fresh: Callable[[], Any], seed_description: str) -> None:
    """accumulate(acc, t) == acc + unthunk(t), exactly, for accumulators of many kinds."""
    sample = fresh()
    if isinstance(sample, AbstractZero):
        return
    reference, error = _try(lambda: _materialize(fresh()))
    if error is not None:
        report.add((key, "unthunk"), f"{where}: unthunk of the cotangent raised "
                                     f"{type(error).__name__}: {error}")
        return
    cotangent = f"the cotangent of {where} ({_describe(sample)}), for {seed_description}"

    def fail(kind: str, accumulator: str, detail: str) -> None:
        report.add((key, "accumulate"),
                   f"in-place accumulation disagrees with the eager sum: accumulate(acc, t) "
                   f"!= acc + unthunk(t)\n"
                   f"t: {cotangent}\n"
                   f"acc: {accumulator} ({kind})\n{detail}", case=f"{accumulator} ({kind})")

    # The first contribution an engine stores: owned_copy(t) must be unthunk(t), unaliased.
    first, error = _try(lambda: owned_copy(fresh()))
    if error is not None:
        fail("owned_copy", "none", f"owned_copy(t) raised {type(error).__name__}: {error}")
    else:
        problem = _exact_mismatch(reference, first)
        if problem:
            fail("owned_copy", "none", f"owned_copy(t) != unthunk(t): {problem}\n"
                                       f"expected: {_show(reference)}\ngot: {_show(first)}")
    for label, make in _accumulators(primal):
        expected, eager_error = _try(lambda: _eager_sum(make(), reference))
        repeated, _ = _try(lambda: _repeat_eager(make(), reference, _REPEATS))

        def compare(kind: str, got: Any, got_error: BaseException | None, want: Any) -> None:
            if got_error is not None and eager_error is None:
                fail(kind, label, f"accumulate raised {type(got_error).__name__}: {got_error}\n"
                                  f"where the eager sum gives {_show(want)}")
            elif got_error is None and eager_error is None:
                problem = _exact_mismatch(want, got)
                if problem:
                    fail(kind, label, f"{problem}\nexpected (eager sum): {_show(want)}\n"
                                      f"got (accumulate): {_show(got)}")

        # Owned: the accumulator may be updated in place.
        t = fresh()
        got, got_error = _try(lambda: accumulate(owned_copy(make()), t, owned=True))
        compare("owned", got, got_error, expected)
        # Owned, the same cotangent added repeatedly into the same buffer.
        t = fresh()

        def repeat():
            buffer = owned_copy(make())
            for _ in range(_REPEATS):
                buffer = accumulate(buffer, t, owned=True)
            return buffer

        got, got_error = _try(repeat)
        compare(f"owned, {_REPEATS} times into the same buffer", got, got_error, repeated)
        problem = _exact_mismatch(reference, t) if got_error is None else None
        if problem:
            fail("owned", label, f"accumulating t changed t's own value: {problem}")
        # Unowned: nothing may be mutated.
        acc = make()
        before = _materialize(acc)
        t = fresh()
        got, got_error = _try(lambda: accumulate(acc, t))
        compare("unowned", got, got_error, expected)
        problem = _exact_mismatch(before, acc)
        if problem:
            fail("unowned", label, f"the unowned accumulator was mutated: {problem}")


def _repeat_eager(acc: Any, t: Any, times: int) -> Any:
    for _ in range(times):
        acc = _eager_sum(acc, t)
    return acc


# --------------------------------------------------------------------------------------------
# test_rrule
# --------------------------------------------------------------------------------------------

def _start(table, kind: str, f: Callable, args: tuple, fkwargs: dict,
           rule: Callable | None = None, rule_takes_config: bool = False) -> tuple:
    """``(call(config, *args, **kwargs), takes_config, report, naming)`` for the check
    ``test_<kind>`` of ``f``'s rule (``rule``, else the one registered in ``table``) at
    ``args``; raise `AssertionError` if there is no rule."""
    if rule is None:
        entry = table.lookup(f)
        if entry is None:
            raise AssertionError(
                f"test_{table.kind}({_name(f)}): no {table.kind} is registered for "
                f"{_name(f)}. Register one with @chainrules.{table.kind}.register({_name(f)}) "
                f"or pass the rule to check with rule=...")
        rule, rule_takes_config = entry
    if rule_takes_config:
        def call(config, *a, **k):
            return rule(config, *a, **k)
    else:
        def call(config, *a, **k):
            return rule(*a, **k)
    report = _Report(_title(kind, f, _name(rule), args, fkwargs))
    return call, rule_takes_config, report, _Naming(f, len(args))


def _reference(f: Callable, args: tuple, fkwargs: dict) -> tuple[Any, Any]:
    """``(a deep copy of args or None, f(*args))``. ``f`` runs on another copy when the
    arguments can be copied, so the first copy shows later whether the rule mutated them."""
    before = _deepcopy_or_none(args)
    if before is None:
        return None, f(*args, **fkwargs)
    return before, f(*copy.deepcopy(args), **fkwargs)


def _title(kind: str, f: Callable, rule_name: str, args: tuple, fkwargs: dict) -> str:
    shown = ", ".join(_describe(a) for a in args)
    if fkwargs:
        shown += ", " + ", ".join(f"{k}={v!r}" for k, v in fkwargs.items())
    return f"test_{kind}({_name(f)}) with rule {rule_name}, at ({shown})"


def test_rrule(f: Callable, *args: Any, output_tangent: Any = None, rtol: float | None = None,
               atol: float | None = None, fkwargs: dict | None = None,
               config: RuleConfig | None = None, rule: Callable | None = None,
               rule_takes_config: bool = False, check_accumulation: bool = True,
               check_seeds: bool = True, step: float = 0.05, seed: int = 0,
               _jacobian: FiniteDifferenceJacobian | None = None, **kwargs: Any) -> None:
    """Check the reverse rule of ``f`` at ``args``; raise `AssertionError` listing problems.

    Keyword arguments not named here are passed to ``f`` (as are ``fkwargs``, for names that
    clash with the kit's). The rule is the registered one unless ``rule`` is given
    (``rule_takes_config=True`` if it takes a `RuleConfig` first). Rules registered with
    ``config=True`` are called with ``config`` (a `TestConfig` by default) and also with the
    default config, which may make them return ``None``.

    ``output_tangent`` is the primary seed (random in the output's space by default); seeds
    outside the output's space are always tried too unless ``check_seeds=False``.
    Tolerances default to 1e-6 relative (1e-4 when float32 is involved).

    >>> import numpy as np
    >>> test_rrule(np.sin, np.array([0.1, 0.2]))          # passes: returns None
    >>> def wrong_sin(x):
    ...     return np.sin(x), lambda dy: (NoTangent(), -np.cos(x) * dy)
    >>> test_rrule(np.sin, 0.5, rule=wrong_sin)
    Traceback (most recent call last):
    ...
    AssertionError: test_rrule(numpy.sin) with rule ...wrong_sin, at (a Python float): ...
    ...
    """
    fkwargs = {**(fkwargs or {}), **kwargs}
    call, takes_config, report, naming = _start(rrule, "rrule", f, args, fkwargs, rule,
                                                rule_takes_config)
    config = config if config is not None else TestConfig()
    primals = (f, *args)
    before, expected_y = _reference(f, args, fkwargs)

    try:
        result = call(config, *args, **fkwargs)
    except Exception as error:
        raise AssertionError(f"{report.title}: the rule raised {type(error).__name__}: "
                             f"{error}") from error
    if result is None:
        raise AssertionError(f"{report.title}: the rule returned None (it declined these "
                             f"arguments); expected (y, pullback)")
    if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
        raise AssertionError(f"{report.title}: the rule must return a tuple (y, pullback); "
                             f"got {_describe(result)}")
    y, pullback = result[0], _CountedPullback(result[1])
    jacobian = _jacobian or fd_jacobian(f, *args, fkwargs=fkwargs, step=step)
    tolerance = Tolerance.for_values(rtol, atol, args, expected_y, f)
    problem = _primal_problem(expected_y, y, tolerance)
    if problem:
        report.add("primal", f"the rule's primal {problem}")

    seeds = _seeds(y, output_tangent, seed)
    if not check_seeds:
        seeds = seeds[:1]
    primary_cotangents = None
    for seed_spec in seeds:
        cotangents = _check_pullback(report, pullback, seed_spec, primals, naming, jacobian,
                                     tolerance, check_accumulation)
        if primary_cotangents is None:
            primary_cotangents = cotangents
        elif seed_spec.thunk_of_primary and cotangents is not None:
            _compare_cotangents(report, "thunked", naming, primary_cotangents, cotangents,
                                Tolerance(min(tolerance.rtol, 1e-12), 0.0),
                                "a thunked output tangent gives different cotangents from "
                                "the same output tangent unthunked")

    if takes_config:
        _check_without_config(report, call, args, fkwargs, seeds[0], primary_cotangents,
                              naming, tolerance)
    if before is not None and not _same_primal(before, args):
        report.add("mutated", "the rule or its pullback mutated its arguments "
                              "(rules must not modify their inputs)")
    report.raise_if_failed()


test_rrule.__test__ = False  # a library function, not a pytest test


class _CountedPullback:
    """The rule's pullback, counting its successful calls (for a clearer message when it
    works once and then fails)."""

    def __init__(self, pullback: Callable):
        self.pullback, self.calls = pullback, 0

    def __call__(self, dy: Any) -> Any:
        result = self.pullback(dy)
        self.calls += 1
        return result


def _call_pullback(report: _Report, pullback: Callable, seed: _Seed, count: int):
    dy = seed.make()
    before = _materialize(dy) if issubclass(type(unthunk(dy)), (np.ndarray, Tangent)) else None
    try:
        cotangents = pullback(dy)
    except Exception as error:  # noqa: BLE001
        hint = ""
        if getattr(pullback, "calls", 0):
            hint = ("\n(the same pullback worked when called before: pullbacks must be "
                    "callable more than once, as engines computing Jacobians and the kit do)")
        report.add(("pullback raised", type(error)),
                   f"the pullback raised {type(error).__name__}: {error}\n"
                   f"for {seed.description}{hint}")
        return None
    if before is not None and _exact_mismatch(before, dy) is not None:
        report.add("mutated dy", f"the pullback modified the output tangent it was given "
                                 f"(pullbacks must not mutate dy: the engine may share it)\n"
                                 f"for {seed.description}")
    if not isinstance(cotangents, tuple) or len(cotangents) != count:
        report.add("arity", f"the pullback must return a tuple of {count} cotangents (one for "
                            f"the function itself, then one per positional argument); got "
                            f"{_describe(cotangents)} of length "
                            f"{len(cotangents) if hasattr(cotangents, '__len__') else '?'}")
        return None
    return cotangents


def _check_pullback(report: _Report, pullback: Callable, seed: _Seed, primals: tuple,
                    naming: _Naming, jacobian: FiniteDifferenceJacobian,
                    tolerance: Tolerance, check_accumulation: bool):
    cotangents = _call_pullback(report, pullback, seed, len(primals))
    if cotangents is None:
        return None
    expected, scales = jacobian.vjp_with_scale(seed.make())
    for position, (primal, t) in enumerate(zip(primals, cotangents)):
        where = naming(position)
        kinds = _kind_problems(primal, t, where)
        for problem in kinds:
            report.add(("kind", position, problem), f"{problem}\nfor {seed.description}")
        if seed.zero:
            ok, error = _try(lambda: is_zero_tangent(t))
            if error is not None or not ok:
                report.add(("zero", position),
                           f"{where}: a zero output tangent must give a zero cotangent, got "
                           f"{_describe(t)}: {_show(t)}")
            continue
        if kinds and not perturbable_leaves(primal):
            continue
        for leaf in perturbable_leaves(primal):
            got, error = _try(lambda: unthunk(tangent_at(t, leaf.path)))
            if error is not None:
                continue  # a kind problem, reported above
            if isinstance(got, AbstractZero):
                got = np.zeros(np.shape(leaf.value))
            want = unthunk(tangent_at(expected[position], leaf.path))
            if isinstance(want, AbstractZero):
                want = np.zeros(np.shape(leaf.value))
            scale = tangent_at(scales[position], leaf.path)
            scale = None if isinstance(scale, AbstractZero) else scale
            if np.shape(got) != np.shape(want):
                continue  # a kind problem, reported above
            problem = tolerance.mismatch(want, got, scale)
            if problem:
                report.add(("value", position, leaf.path),
                           f"the cotangent of {naming(position, leaf.path)} does not match "
                           f"finite differences\nfor {seed.description}\n"
                           f"expected (finite differences, projected): {_show(want)}\n"
                           f"got (pullback): {_show(got)}\n{problem}")
        if check_accumulation and not isinstance(t, AbstractZero) and \
                perturbable_leaves(primal) and not kinds:
            if _has_lazy(t):
                def fresh(position=position):
                    return pullback(seed.make())[position]
            else:
                def fresh(t=t):
                    return t
            _check_accumulation(report, ("acc", position), where, primal, fresh,
                                seed.description)
    return cotangents


def _compare_cotangents(report: _Report, key: str, naming: _Naming, first: tuple,
                        second: tuple, tolerance: Tolerance, headline: str) -> None:
    for position, (a, b) in enumerate(zip(first, second)):
        a_value, b_value = _materialize(a), _materialize(b)
        if isinstance(a_value, AbstractZero) and isinstance(b_value, AbstractZero):
            continue
        problem = None
        if _is_structural_tangent(a_value) or _is_structural_tangent(b_value):
            problem = _exact_mismatch(a_value, b_value)
        else:
            a_value = np.zeros(np.shape(b_value)) if isinstance(a_value, AbstractZero) \
                else a_value
            b_value = np.zeros(np.shape(a_value)) if isinstance(b_value, AbstractZero) \
                else b_value
            problem = tolerance.mismatch(a_value, b_value)
        if problem:
            report.add((key, position), f"{headline}: {naming(position)}\n"
                                        f"first: {_show(a)}\nsecond: {_show(b)}\n{problem}")


def _check_without_config(report: _Report, call: Callable, args: tuple, fkwargs: dict,
                          seed: _Seed, with_config: tuple | None, naming: _Naming,
                          tolerance: Tolerance) -> None:
    """A config rule called with the default config must work or decline (return None)."""
    try:
        result = call(DEFAULT_CONFIG, *args, **fkwargs)
    except NotImplementedError:
        return  # the default config cannot differentiate what the rule needs: allowed
    except Exception as error:  # noqa: BLE001
        report.add("no config", f"called with the default RuleConfig (no AD), the rule raised "
                                f"{type(error).__name__}: {error}; it should return None or "
                                f"work")
        return
    if result is None or with_config is None:
        return
    try:
        cotangents = result[1](seed.make())
    except NotImplementedError:
        return
    except Exception as error:  # noqa: BLE001
        report.add("no config", f"with the default RuleConfig the pullback raised "
                                f"{type(error).__name__}: {error}")
        return
    _compare_cotangents(report, "no config", naming, with_config, cotangents, tolerance,
                        "the rule gives different cotangents with and without a config")


# --------------------------------------------------------------------------------------------
# test_frule
# --------------------------------------------------------------------------------------------

def test_frule(f: Callable, *args: Any, tangents: Sequence | None = None,
               rtol: float | None = None, atol: float | None = None,
               fkwargs: dict | None = None, config: RuleConfig | None = None,
               rule: Callable | None = None, rule_takes_config: bool = False,
               reverse_rule: Callable | None = None, check_consistency: bool = True,
               check_accumulation: bool = True, step: float = 0.05, seed: int = 0,
               _jacobian: FiniteDifferenceJacobian | None = None, **kwargs: Any) -> None:
    """Check the forward rule of ``f`` at ``args``; raise `AssertionError` listing problems.

    ``tangents`` are ``(df, dx1, dx2, ...)`` (random by default); variants (thunked, float64
    for float32 arguments, all zero) are tried too. Where an rrule exists as well (the
    registered one, or ``reverse_rule``, called like ``rule``), both must agree:
    ``<dy_bar, frule's dy> == sum_i <pullback(dy_bar)[i], dx_i>``.

    >>> import numpy as np
    >>> test_frule(np.exp, np.array([0.5, 1.0], np.float32))
    """
    fkwargs = {**(fkwargs or {}), **kwargs}
    call, takes_config, report, naming = _start(frule, "frule", f, args, fkwargs, rule,
                                                rule_takes_config)
    config = config if config is not None else TestConfig()
    primals = (f, *args)
    before, expected_y = _reference(f, args, fkwargs)
    jacobian = _jacobian or fd_jacobian(f, *args, fkwargs=fkwargs, step=step)
    tolerance = Tolerance.for_values(rtol, atol, args, expected_y, f)

    if tangents is None:
        primary = tuple(rand_tangent(p, seed + 10 + i) for i, p in enumerate(primals))
        label = "random input tangents in the inputs' own spaces"
    else:
        primary = tuple(tangents)
        label = "the input tangents given"
        if len(primary) != len(primals):
            raise AssertionError(f"{report.title}: expected {len(primals)} tangents (the "
                                 f"function's, then one per argument), got {len(primary)}")
    variants = [(label, primary)]
    variants.append(("the same input tangents, thunked",
                     tuple(t if isinstance(t, AbstractZero) else Thunk(lambda t=t: t)
                           for t in primary)))
    if any(_dtype_of(leaf.value) in _LOW_PRECISION
           for p in primals for leaf in perturbable_leaves(p)):
        variants.append(("float64/complex128 input tangents for float32 inputs (outside the "
                         "inputs' spaces)",
                         tuple(rand_tangent(p, seed + 20 + i,
                                            dtype=lambda d: np.promote_types(d, np.float64))
                               for i, p in enumerate(primals))))
    variants.append(("zero input tangents", tuple(ZeroTangent() if perturbable_leaves(p)
                                                  else NoTangent() for p in primals)))

    primary_dy = None
    for description, dxs in variants:
        try:
            result = call(config, dxs, *args, **fkwargs)
        except Exception as error:  # noqa: BLE001
            report.add(("raised", type(error)), f"the frule raised {type(error).__name__}: "
                                                f"{error}\nfor {description}")
            continue
        if result is None:
            raise AssertionError(f"{report.title}: the frule returned None (it declined these "
                                 f"arguments); expected (y, dy)")
        if not (isinstance(result, tuple) and len(result) == 2):
            raise AssertionError(f"{report.title}: the frule must return (y, dy); got "
                                 f"{_describe(result)}")
        y, dy = result
        problem = _primal_problem(expected_y, y, tolerance)
        if problem:
            report.add("primal", f"the frule's primal {problem}")
        if description == label:
            primary_dy = dy
        _check_output_tangent(report, y, dy, dxs, description, jacobian, tolerance,
                              check_accumulation)
    reverse = None
    if reverse_rule is not None:
        reverse = (reverse_rule, rule_takes_config)
    elif rule is None:
        reverse = rrule.lookup(f)
    if check_consistency and primary_dy is not None and reverse is not None:
        _check_consistency(report, reverse, args, fkwargs, config, primary, primary_dy,
                           naming, tolerance, seed)
    if before is not None and not _same_primal(before, args):
        report.add("mutated", "the frule mutated its arguments (rules must not modify their "
                              "inputs)")
    report.raise_if_failed()


test_frule.__test__ = False


def _check_output_tangent(report: _Report, y: Any, dy: Any, dxs: tuple, description: str,
                          jacobian: FiniteDifferenceJacobian, tolerance: Tolerance,
                          check_accumulation: bool) -> None:
    where = "the output tangent"
    # An frule may return a tuple of tangents for a tuple output (as NumPy code would).
    kinds = _kind_problems(y, dy, where, zero_ok_for_nothing=True, noun="tangent",
                           natural_ok=True)
    for problem in kinds:
        report.add(("kind", problem), f"{problem}\nfor {description}")
    if all(isinstance(t, AbstractZero) for t in dxs):
        ok, error = _try(lambda: is_zero_tangent(dy))
        if error is not None or not ok:
            report.add("zero", f"zero input tangents must give a zero output tangent, got "
                               f"{_describe(dy)}: {_show(dy)}")
        return
    expected, scale = jacobian.jvp_with_scale(dxs)
    for leaf in perturbable_leaves(y):
        got, error = _try(lambda: unthunk(tangent_at(dy, leaf.path)))
        if error is not None:
            continue
        if isinstance(got, AbstractZero):
            got = np.zeros(np.shape(leaf.value))
        want = unthunk(tangent_at(expected, leaf.path))
        if isinstance(want, AbstractZero):
            want = np.zeros(np.shape(leaf.value))
        leaf_scale = tangent_at(scale, leaf.path)
        if np.shape(got) != np.shape(want):
            continue
        problem = tolerance.mismatch(want, got,
                                     None if isinstance(leaf_scale, AbstractZero) else leaf_scale)
        if problem:
            path = f", field {format_path(leaf.path)}" if leaf.path else ""
            report.add(("value", leaf.path),
                       f"the output tangent{path} does not match finite differences\n"
                       f"for {description}\nexpected (finite differences, projected): "
                       f"{_show(want)}\ngot (frule): {_show(got)}\n{problem}")
    if check_accumulation and _has_lazy(dy) and not kinds:
        _check_accumulation(report, "acc", where, y, lambda: dy, description)


def _check_consistency(report: _Report, reverse: tuple, args: tuple, fkwargs: dict,
                       config: RuleConfig, dxs: tuple, dy: Any, naming: _Naming,
                       tolerance: Tolerance, seed: int) -> None:
    """<dy_bar, J dx> (frule) == sum_i <(J^T dy_bar)_i, dx_i> (rrule), real inner products."""
    rule, takes_config = reverse
    try:
        result = rule(config, *args, **fkwargs) if takes_config else rule(*args, **fkwargs)
        if result is None:
            return
        dy_bar = rand_tangent(result[0], seed + 30)
        cotangents = result[1](dy_bar)
    except Exception as error:  # noqa: BLE001
        report.add("consistency", f"frule/rrule consistency: the rrule raised "
                                  f"{type(error).__name__}: {error}")
        return
    forward = _inner(dy_bar, dy)
    terms = [_inner(c, dx) for c, dx in zip(cotangents, dxs)]
    reverse = sum(terms)
    scale = _norm(dy_bar) * _norm(dy) + sum(_norm(c) * _norm(dx)
                                             for c, dx in zip(cotangents, dxs))
    if abs(forward - reverse) > tolerance.atol + tolerance.rtol * max(scale, abs(forward)):
        report.add("consistency",
                   f"the frule and the rrule disagree: <dy_bar, J dx> = {forward!r} (frule) "
                   f"but sum_i <J^T dy_bar, dx>_i = {reverse!r} (rrule); per argument: "
                   + ", ".join(f"{naming(i)}: {term:.6g}" for i, term in enumerate(terms)))


# --------------------------------------------------------------------------------------------
# test_scalar
# --------------------------------------------------------------------------------------------

def test_scalar(f: Callable, x: Any, *, rtol: float | None = None, atol: float | None = None,
                fkwargs: dict | None = None, **options: Any) -> None:
    """Check the rules of a scalar function at the number ``x`` with unit seeds.

    The rrule is seeded with 1 (and 1j when the output is complex), the frule with 1 (and 1j
    when ``x`` is complex); each call also runs every other check of `test_rrule` /
    `test_frule`.

    >>> import numpy as np
    >>> test_scalar(np.sin, 0.5)
    >>> test_scalar(np.exp, 0.5 + 0.25j)
    """
    if np.ndim(x) != 0:
        raise ValueError(f"test_scalar: x must be a number, got {_describe(x)}")
    has_rrule, has_frule = rrule.lookup(f) is not None, frule.lookup(f) is not None
    if not (has_rrule or has_frule):
        raise AssertionError(f"test_scalar({_name(f)}): no rrule or frule is registered")
    common = dict(rtol=rtol, atol=atol, fkwargs=fkwargs, **options)
    y = f(x, **(fkwargs or {}))
    jacobian = fd_jacobian(f, x, fkwargs=fkwargs, step=options.get("step", 0.05))
    if has_rrule:
        test_rrule(f, x, output_tangent=_unit(y, 1.0), _jacobian=jacobian, **common)
        if np.iscomplexobj(y):
            test_rrule(f, x, output_tangent=_unit(y, 1j), _jacobian=jacobian, **common)
    if has_frule:
        test_frule(f, x, tangents=(NoTangent(), _unit(x, 1.0)), _jacobian=jacobian, **common)
        if np.iscomplexobj(x):
            test_frule(f, x, tangents=(NoTangent(), _unit(x, 1j)), _jacobian=jacobian,
                       **common)


test_scalar.__test__ = False


def _unit(like: Any, value: complex) -> Any:
    dtype = np.asarray(like).dtype
    if dtype.kind not in "fc":
        return NoTangent()
    return ProjectTo(like)(np.asarray(value).astype(np.promote_types(dtype, np.asarray(
        value).dtype))[()])


# --------------------------------------------------------------------------------------------
# Declarative cases
# --------------------------------------------------------------------------------------------

_OPTIONS = ("rtol", "atol", "tangents", "config", "step", "seed", "check_accumulation",
            "check_seeds", "check_consistency", "fkwargs", "non_differentiable")
_RRULE_ONLY = ("check_seeds",)
_FRULE_ONLY = ("tangents", "check_consistency")


def _short(value: Any) -> str:
    if issubclass(type(value), np.ndarray):
        return f"{value.dtype}{list(value.shape)}"
    if issubclass(type(value), np.generic):
        return f"{value.dtype}"
    if issubclass(type(value), (bool, int)):
        return repr(value)
    if issubclass(type(value), (float, complex)):
        return type(value).__name__
    if isinstance(value, slice):
        return ":".join("" if v is None else str(v) for v in (value.start, value.stop,
                                                             value.step)).rstrip(":") or ":"
    if value is Ellipsis:
        return "..."
    if value is None:
        return "None"
    if isinstance(value, tuple):
        return "(" + ",".join(_short(v) for v in value) + ")"
    if isinstance(value, list):
        return "[" + ",".join(_short(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_short(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str):
        return repr(value)
    if callable(value) and getattr(value, "__name__", None):
        return value.__name__
    return type(value).__name__


@dataclasses.dataclass(frozen=True, eq=False)
class RuleCase:
    """One rule check, as data: ``function`` at ``args`` (keyword arguments ``fkwargs``), with
    kit ``options``. Run it with `check_case` (or ``case.run()``). ``covers`` lists other
    functions whose rules the case exercises through ``function`` (a wrapper)."""

    function: Callable
    args: tuple
    fkwargs: dict
    output_tangent: Any
    options: dict
    id: str
    covers: tuple = ()

    @property
    def functions(self) -> tuple:
        """``function`` and the functions it ``covers``: what coverage counts."""
        return (self.function, *self.covers)

    def run(self) -> None:
        """Run the kit on this case (`check_case`)."""
        check_case(self)

    def __repr__(self) -> str:
        return f"RuleCase({self.id})"


def case(f: Callable, *args: Any, output_tangent: Any = None, id: str | None = None,
         covers: Any = (), **kwargs: Any) -> RuleCase:
    """A rule case: ``case(np.sum, x, axis=0)``, ``case(np.sin, 0.3, rtol=1e-5)``.

    Keyword arguments named like the kit's options (``rtol``, ``atol``, ``tangents``,
    ``config``, ``step``, ``seed``, ``check_accumulation``, ``check_seeds``,
    ``check_consistency``, ``non_differentiable``) configure the check; the others are passed
    to ``f`` (use ``fkwargs={...}`` for a keyword of ``f`` that clashes with an option name).
    ``non_differentiable=True`` checks with `test_non_differentiable` instead (no finite
    differences: for ``np.empty_like`` and the like). ``covers=g`` (or a tuple) records that
    the case exercises ``g``'s rule through ``f``, a wrapper: for rules that finite
    differences cannot check directly, such as ``np.linalg.eigh`` whose eigenvectors are
    defined up to sign or phase (test a gauge-invariant function of them built on its rule).

    >>> import numpy as np
    >>> c = case(np.sum, np.ones((2, 3)), axis=0)
    >>> c.id, c.fkwargs
    ('sum-float64[2, 3]-axis=0', {'axis': 0})
    """
    options = {k: kwargs.pop(k) for k in list(kwargs) if k in _OPTIONS and k != "fkwargs"}
    fkwargs = {**kwargs.pop("fkwargs", {}), **kwargs}
    name = getattr(f, "__name__", None) or type(f).__name__
    if id is None:
        id = "-".join([name] + [_short(a) for a in args]
                      + [f"{k}={_short(v)}" for k, v in fkwargs.items()])
    covers = tuple(covers) if isinstance(covers, (tuple, list)) else (covers,)
    return RuleCase(f, tuple(args), fkwargs, output_tangent, options, id, covers)


def check_case(c: RuleCase) -> None:
    """Run `test_rrule` and `test_frule` (whichever rules are registered) on a case, or
    `test_non_differentiable` for a case made with ``non_differentiable=True``."""
    options = dict(c.options)
    if options.pop("non_differentiable", False):
        test_non_differentiable(c.function, *c.args, fkwargs=c.fkwargs,
                                **{k: v for k, v in options.items() if k == "seed"})
        return
    has_rrule = rrule.lookup(c.function) is not None
    has_frule = frule.lookup(c.function) is not None
    if not (has_rrule or has_frule):
        raise AssertionError(f"case {c.id}: no rrule or frule is registered for "
                             f"{_name(c.function)}")
    jacobian = fd_jacobian(c.function, *c.args, fkwargs=c.fkwargs,
                           step=options.get("step", 0.05))
    if has_rrule:
        test_rrule(c.function, *c.args, output_tangent=c.output_tangent, fkwargs=c.fkwargs,
                   _jacobian=jacobian,
                   **{k: v for k, v in options.items() if k not in _FRULE_ONLY})
    if has_frule:
        test_frule(c.function, *c.args, fkwargs=c.fkwargs, _jacobian=jacobian,
                   **{k: v for k, v in options.items() if k not in _RRULE_ONLY})


# --------------------------------------------------------------------------------------------
# Non-differentiable functions
# --------------------------------------------------------------------------------------------

def test_non_differentiable(f: Callable, *args: Any, fkwargs: dict | None = None,
                            seed: int = 0, **kwargs: Any) -> None:
    """Check the rules of a function declared non-differentiable, without finite differences.

    For functions whose output does not depend differentiably on the inputs *and* cannot be
    compared with finite differences (``np.empty_like``: its values are whatever memory held;
    functions of random numbers). The rrule's output must match ``f(*args)`` in type, shape
    and dtype (and in value when two calls of ``f`` agree); its pullback must give
    `NoTangent` (or a zero) for every argument, for seeds of every kind; the frule, if any,
    a zero output tangent. Deterministic non-differentiable functions (``np.floor``) are
    better checked by `test_rrule`, which also compares with finite differences.

    >>> import numpy as np
    >>> test_non_differentiable(np.empty_like, np.ones(3))
    """
    fkwargs = {**(fkwargs or {}), **kwargs}
    call, _, report, naming = _start(rrule, "non_differentiable", f, args, fkwargs)
    expected = f(*copy.deepcopy(args), **fkwargs)
    again = f(*copy.deepcopy(args), **fkwargs)
    deterministic = _same_primal(expected, again)
    tolerance = Tolerance.for_values(None, None, args, expected)
    result = call(TestConfig(), *args, **fkwargs)
    if result is None:
        raise AssertionError(f"{report.title}: the rule returned None (it declined these "
                             f"arguments); expected (y, pullback)")
    y, pullback = result[0], _CountedPullback(result[1])
    problem = _primal_problem(expected, y, tolerance) if deterministic else _shape_problem(
        expected, y)
    if problem:
        report.add("primal", f"the rule's primal {problem}")
    seeds = [_Seed(description, make) for description, make in [
        ("a random output tangent", lambda: rand_tangent(y, seed)),
        ("a complex128 output tangent", lambda: rand_tangent(y, seed, dtype=np.complex128)),
        ("ZeroTangent()", lambda: ZeroTangent()),
    ]]
    primals = (f, *args)
    for seed_spec in seeds:
        cotangents = _call_pullback(report, pullback, seed_spec, len(primals))
        for position, t in enumerate(cotangents or ()):
            if not isinstance(t, AbstractZero):
                report.add(("nonzero", position),
                           f"{naming(position)}: a non-differentiable function must give "
                           f"NoTangent(), got {_describe(t)}\nfor {seed_spec.description}")
            elif isinstance(t, ZeroTangent) and not perturbable_leaves(primals[position]):
                report.add(("zero", position),
                           f"{naming(position)} cannot be perturbed: its cotangent must be "
                           f"NoTangent(), got ZeroTangent()")
    if frule.lookup(f) is not None:
        dxs = tuple(rand_tangent(p, seed + 1 + i) for i, p in enumerate(primals))
        try:
            forward = frule(TestConfig(), dxs, f, *args, **fkwargs)
        except Exception as error:  # noqa: BLE001
            report.add("frule", f"the frule raised {type(error).__name__}: {error}")
        else:
            if forward is None or not (isinstance(forward, tuple) and len(forward) == 2):
                report.add("frule", f"the frule must return (y, dy); got {_describe(forward)}")
            elif not is_zero_tangent(forward[1]):
                report.add("frule", f"the frule of a non-differentiable function must give a "
                                    f"zero output tangent, got {_describe(forward[1])}")
    report.raise_if_failed()


test_non_differentiable.__test__ = False


def _shape_problem(expected: Any, got: Any) -> str | None:
    if type(expected) is not type(got) and not (
            issubclass(type(expected), (np.ndarray, np.generic)) and issubclass(type(got), (
                np.ndarray, np.generic))):
        return f"output is {_describe(got)}, expected {_describe(expected)}"
    if np.shape(expected) != np.shape(got) or _dtype_of(expected) != _dtype_of(got):
        return (f"output has shape {np.shape(got)} and dtype {_dtype_of(got)}, expected "
                f"{np.shape(expected)} and {_dtype_of(expected)}")
    return None


# --------------------------------------------------------------------------------------------
# Order 2: the rules' own derivatives
# --------------------------------------------------------------------------------------------

def _is_float_value(x: Any) -> bool:
    if issubclass(type(x), (float, complex)) and not issubclass(type(x), bool):
        return True
    return issubclass(type(x), (np.ndarray, np.generic)) and x.dtype.kind in "fc"


def _float_leaves(value: Any) -> list:
    """The float and complex leaves of ``value`` (arguments, or a list of arrays given to
    ``np.concatenate``), with their paths; functions' captured values are left alone."""
    found = []
    for leaf in perturbable_leaves(value):
        if not _is_float_value(leaf.value):
            continue
        container, inside_callable = value, False
        for key in leaf.path[:-1]:
            container = get_at(container, (key,))
            if callable(container) and not issubclass(type(container), (np.ndarray, np.generic)):
                inside_callable = True
                break
        if not inside_callable:
            found.append(leaf)
    return found


class _Order2:
    """What both order-2 checks share: the rule's float leaves, tolerances, random vectors,
    the engine's gradient of a scalar ``phi(*points)`` and its check against central finite
    differences along random directions."""

    def __init__(self, check: str, f: Callable, args: tuple, fkwargs: dict,
                 rtol: float | None, atol: float | None, seed: int):
        self.f, self.args, self.fkwargs = f, tuple(args), fkwargs
        self.title = f"{check}({_name(f)}) at ({', '.join(_describe(a) for a in args)})"
        if f in FIRST_ORDER_ONLY:
            raise AssertionError(f"{check}({_name(f)}): declared first-order only: "
                                 f"{FIRST_ORDER_ONLY[f]}")
        self.rng = np.random.default_rng(seed)
        self.leaves = _float_leaves(self.args)
        if not self.leaves:
            raise AssertionError(f"{check}({_name(f)}): no float argument to differentiate")
        self.low = any(np.result_type(leaf.value) in (np.float32, np.complex64)
                       for leaf in self.leaves)
        self.rtol, self.atol = rtol, atol

    def tolerances(self, y: Any) -> None:
        low = self.low or any(np.result_type(leaf.value) in (np.float32, np.complex64)
                              for leaf in _float_leaves(y))
        self.low = low
        self.rtol = self.rtol if self.rtol is not None else (2e-2 if low else 1e-5)
        self.atol = self.atol if self.atol is not None else (2e-2 if low else 1e-6)

    def with_leaves(self, values: Sequence) -> tuple:
        """The arguments with the float leaves replaced by ``values`` (traced ones, say)."""
        return replace_paths(self.args, {leaf.path: v for leaf, v in zip(self.leaves, values)})

    def gradients(self, phi: Callable, points: list) -> list:
        from ..ad.api import grad  # the kit may use every layer; the engine checks the rule
        try:
            return list(grad(phi, argnums=tuple(range(len(points))))(*points))
        except Exception as error:
            raise AssertionError(f"{self.title}: differentiating the rule with the engine "
                                 f"raised {type(error).__name__}: {error}") from error

    def compare_with_fd(self, phi: Callable, points: list, gradients: list,
                        directions: int, what: str) -> list[str]:
        def value_at(direction: list, scale: float) -> float:
            moved = [_shift(p, d, scale) for p, d in zip(points, direction)]
            return float(np.real(phi(*moved)))

        problems = []
        h = 1e-3 if self.low else 1e-5
        for k in range(directions):
            direction = [rand_tangent(point, self.rng) for point in points]
            predicted = sum(_inner(g, d) for g, d in zip(gradients, direction))
            fd = (8 * (value_at(direction, h) - value_at(direction, -h))
                  - (value_at(direction, 2 * h) - value_at(direction, -2 * h))) / (12 * h)
            if not abs(predicted - fd) <= self.atol + self.rtol * max(abs(fd), abs(predicted)):
                problems.append(f"direction {k}: the engine's derivative of {what} gives "
                                f"{predicted!r}, finite differences {fd!r}")
        return problems


def _leaf_inner(weights: Any, tangent: Any, paths: Sequence) -> Any:
    """``sum_path Re <weights[path], tangent[path]>``, traceable (no float() of values)."""
    total = 0.0
    for path in paths:
        t = unthunk(tangent_at(tangent, path)) if path else unthunk(tangent)
        if isinstance(t, AbstractZero):
            continue
        w = unthunk(tangent_at(weights, path)) if path else unthunk(weights)
        if isinstance(w, AbstractZero):
            continue
        total = total + np.sum(np.real(np.conj(w) * t))
    return total


def _pullback_phi(order2: "_Order2", dy0: Any, vary_dy: bool, vs: list) -> Callable:
    """``phi(dy, *x_leaves) = Re <pullback(dy) at x, v>`` (``dy`` left out when fixed)."""
    def phi(*points: Any) -> Any:
        dy, xs = (points[0], points[1:]) if vary_dy else (dy0, points)
        args = order2.with_leaves(xs)
        _, pullback = _call_rule(order2.f, args, order2.fkwargs)
        cotangents = pullback(dy)
        total = 0.0
        for leaf, v in zip(order2.leaves, vs):
            position, path = leaf.path[0], leaf.path[1:]
            total = total + _leaf_inner(v, tangent_at(cotangents[position + 1], path)
                                        if path else cotangents[position + 1], [()])
        return total

    return phi


def test_rrule_order2(f: Callable, *args: Any, fkwargs: dict | None = None,
                      rtol: float | None = None, atol: float | None = None,
                      directions: int = 2, seed: int = 0, forward_over_reverse: bool = True,
                      **kwargs: Any) -> None:
    """Check that the registered pullback of ``f`` is itself differentiable, and correctly.

    For a random output cotangent ``dy`` and random ``v``, the scalar
    ``phi(x, dy) = Re <pullback(dy)[x], v>`` (summed over the float arguments, and over the
    float arrays inside list and tuple arguments) is differentiated by the engine
    (``chainrules.grad``: the pullback runs on traced values, as in ``grad`` of ``grad``) with
    respect to every float argument and ``dy``, and compared with central finite differences
    of ``phi`` along random directions. Raises `AssertionError` naming the function and the
    directional derivatives that differ. A structured output's ``dy`` stays fixed.

    With ``forward_over_reverse``, also the engine's ``jvp`` of the gradient of
    ``Re <w, f(x)>`` (as in ``hvp``, where the rule runs on values and tangents together, by
    its dual form when it declares one: `chainrules.core.registry.dual_form`) against central
    finite differences of that gradient.

    >>> import numpy as np
    >>> test_rrule_order2(np.sum, np.array([1.0, 2.0, 3.0]))
    >>> test_rrule_order2(np.sort, np.array([3.0, 1.0, 2.0]))
    >>> test_rrule_order2(np.concatenate, [np.ones(2), np.array([0.5])])
    """
    fkwargs = {**(fkwargs or {}), **kwargs}
    if rrule.lookup(f) is None and f not in FIRST_ORDER_ONLY:
        raise AssertionError(f"test_rrule_order2({_name(f)}): no rrule is registered")
    order2 = _Order2("test_rrule_order2", f, args, fkwargs, rtol, atol, seed)
    y, _ = _call_rule(f, order2.args, fkwargs)
    order2.tolerances(y)
    dy0 = rand_tangent(y, order2.rng)
    vs = [rand_tangent(leaf.value, order2.rng) for leaf in order2.leaves]
    vary_dy = _is_float_value(dy0)
    phi = _pullback_phi(order2, dy0, vary_dy, vs)
    points = ([dy0] if vary_dy else []) + [leaf.value for leaf in order2.leaves]
    gradients = order2.gradients(phi, points)
    problems = order2.compare_with_fd(phi, points, gradients, directions, "the pullback")
    if problems:
        raise AssertionError(f"{order2.title}: the pullback's own derivative is wrong:\n  "
                             + "\n  ".join(problems))
    if forward_over_reverse:
        problems = _forward_over_reverse(order2, y, directions)
        if problems:
            raise AssertionError(f"{order2.title}: forward over reverse (jvp of grad, hvp) "
                                 f"is wrong:\n  " + "\n  ".join(problems))


test_rrule_order2.__test__ = False


def _as_reached(f: Callable) -> Callable:
    """``f`` as a program reaches it by name while a trace runs (NumPy's namespace holds the
    engine's stand-ins then: ``np.array`` of traced values is followed only through them)."""
    module = sys.modules.get(getattr(f, "__module__", None) or "")
    found = getattr(module, getattr(f, "__name__", ""), None) if module is not None else None
    if found is not None and found is not f and (
            getattr(found, STANDS_FOR, None) is f or getattr(found, "__wrapped__", None) is f):
        return found
    return f


def _forward_over_reverse(order2: _Order2, y: Any, directions: int) -> list[str]:
    """The engine's jvp of the gradient of ``Re <w, f(x)>`` (forward over reverse, as in
    ``hvp``: the rule runs on values and tangents together, by its dual form if it has one)
    against central finite differences of that gradient, along random directions."""
    from ..ad.api import grad, jvp  # the kit may use every layer; the engine checks the rule
    out_paths = [leaf.path for leaf in _float_leaves(y)]
    if not out_paths:
        return []
    w = rand_tangent(y, order2.rng)

    def psi(*xs: Any) -> Any:
        f = _as_reached(order2.f)
        return _leaf_inner(w, f(*order2.with_leaves(xs), **order2.fkwargs), out_paths)

    points = [leaf.value for leaf in order2.leaves]
    gradient = grad(psi, argnums=tuple(range(len(points))))

    def dense(values: Any) -> list:
        return [np.zeros(np.shape(p)) if isinstance(unthunk(g), AbstractZero) else unthunk(g)
                for p, g in zip(points, values)]

    h = 1e-3 if order2.low else 1e-5
    problems = []
    for k in range(directions):
        v = [rand_tangent(p, order2.rng) for p in points]
        try:
            predicted = dense(jvp(gradient, points, v)[1])
        except Exception as error:
            return [f"jvp of grad raised {type(error).__name__}: {error}"]
        moved = {scale: dense(gradient(*[_shift(p, d, scale) for p, d in zip(points, v)]))
                 for scale in (h, -h, 2 * h, -2 * h)}
        for i, leaf in enumerate(order2.leaves):
            fd = (8 * (moved[h][i] - moved[-h][i]) - (moved[2 * h][i] - moved[-2 * h][i])) \
                / (12 * h)
            problem = Tolerance(order2.rtol, order2.atol).mismatch(
                fd, predicted[i], np.max(np.abs(np.asarray(fd, dtype=np.complex128)),
                                         initial=0.0))
            if problem:
                problems.append(f"direction {k}, {_leaf_name(leaf)}: the jvp of the gradient is "
                                f"{_show(predicted[i])}, finite differences {_show(fd)}; "
                                f"{problem}")
    return problems


def test_frule_order2(f: Callable, *args: Any, fkwargs: dict | None = None,
                      rtol: float | None = None, atol: float | None = None,
                      directions: int = 2, seed: int = 0, check_consistency: bool = True,
                      **kwargs: Any) -> None:
    """Check that the registered pushforward of ``f`` is itself differentiable, and correctly.

    Reverse over forward: for random input tangents ``dx`` and a random output weight ``w``,
    the scalar ``psi(x, dx) = Re <w, frule((NoTangent(), *dx), f, *x)[1]>`` (summed over the
    float leaves of the output) is differentiated by the engine (``chainrules.grad``: the
    frule runs on traced values) with respect to every float argument ``x`` and every input
    tangent ``dx``, and compared with central finite differences of ``psi`` along random
    directions. Its derivative in ``x`` is the second derivative of ``f`` contracted with
    ``w`` and ``dx``; in ``dx`` it is the vjp ``J^T w``.

    With ``check_consistency`` and an rrule registered (not declared first-order only), the
    jvp/vjp consistency at order 2: ``Re <w, J(x) dx>`` is also ``Re <J(x)^T w, dx>``, so the
    engine's gradient in ``x`` through the frule must equal its gradient in ``x`` through the
    pullback (both differentiated rules, same ``w`` and ``dx``).

    >>> import numpy as np
    >>> test_frule_order2(np.sin, np.array([0.5, 1.0]))
    >>> test_frule_order2(np.stack, [np.ones(2), np.array([0.5, 2.0])])
    """
    fkwargs = {**(fkwargs or {}), **kwargs}
    if frule.lookup(f) is None and f not in FIRST_ORDER_ONLY:
        raise AssertionError(f"test_frule_order2({_name(f)}): no frule is registered")
    order2 = _Order2("test_frule_order2", f, args, fkwargs, rtol, atol, seed)
    dxs0 = [rand_tangent(leaf.value, order2.rng) for leaf in order2.leaves]
    y, _ = _call_frule(order2, order2.args, dxs0)
    order2.tolerances(y)
    out_paths = [leaf.path for leaf in _float_leaves(y)]
    if not out_paths:
        return  # an integer or boolean output: no derivative at any order
    w = rand_tangent(y, order2.rng)
    count = len(order2.leaves)

    def psi(*points: Any) -> Any:
        xs, dxs = points[:count], points[count:]
        _, dy = _call_frule(order2, order2.with_leaves(xs), dxs)
        return _leaf_inner(w, dy, out_paths)

    points = [leaf.value for leaf in order2.leaves] + dxs0
    gradients = order2.gradients(psi, points)
    problems = order2.compare_with_fd(psi, points, gradients, directions, "the pushforward")
    reverse = rrule.lookup(f)
    if check_consistency and not problems and reverse is not None and \
            f not in FIRST_ORDER_ONLY:
        problems += _order2_consistency(order2, w, dxs0, gradients[:count])
    if problems:
        raise AssertionError(f"{order2.title}: the pushforward's own derivative is wrong:\n  "
                             + "\n  ".join(problems))


test_frule_order2.__test__ = False


def _order2_consistency(order2: _Order2, w: Any, dxs: list, through_frule: list) -> list[str]:
    """The gradient in ``x`` of ``Re <J(x)^T w, dx>`` (pullback) equals that of
    ``Re <w, J(x) dx>`` (pushforward)."""
    phi = _pullback_phi(order2, w, False, dxs)
    points = [leaf.value for leaf in order2.leaves]
    through_rrule = order2.gradients(phi, points)
    problems = []
    for leaf, a, b in zip(order2.leaves, through_frule, through_rrule):
        a = np.zeros(np.shape(leaf.value)) if isinstance(unthunk(a), AbstractZero) else unthunk(a)
        b = np.zeros(np.shape(leaf.value)) if isinstance(unthunk(b), AbstractZero) else unthunk(b)
        problem = Tolerance(order2.rtol, order2.atol).mismatch(
            b, a, np.max(np.abs(np.asarray(b, dtype=np.complex128)), initial=0.0))
        if problem:
            problems.append(f"jvp/vjp consistency at order 2, {_leaf_name(leaf)}: "
                            f"d/dx Re<w, J dx> "
                            f"through the frule is {_show(a)}, through the pullback "
                            f"{_show(b)}; {problem}")
    return problems


def _leaf_name(leaf: Any) -> str:
    """``argument k`` and the path inside it of a float leaf, for messages."""
    return f"argument {leaf.path[0] + 1}" + (format_path(leaf.path[1:])
                                             if len(leaf.path) > 1 else "")


def _call_rule(f: Callable, args: tuple, fkwargs: dict) -> tuple:
    rule, needs_config = rrule.lookup(f)
    result = rule(TestConfig(), *args, **fkwargs) if needs_config else rule(*args, **fkwargs)
    if result is None:
        raise AssertionError(f"test_rrule_order2({_name(f)}): the rule declined the arguments")
    return result


def _call_frule(order2: _Order2, args: tuple, dxs: Sequence) -> tuple:
    """The frule at ``args`` with the float leaves' tangents ``dxs`` (zero elsewhere)."""
    by_position: dict = {}
    for leaf, dx in zip(order2.leaves, dxs):
        by_position.setdefault(leaf.path[0], {})[leaf.path[1:]] = dx
    tangents = [NoTangent()]
    for position, arg in enumerate(args):
        parts = by_position.get(position)
        if parts is None:
            tangents.append(NoTangent() if not perturbable_leaves(arg) else ZeroTangent())
        elif () in parts:
            tangents.append(parts[()])
        else:
            tangents.append(tangent_from_paths(arg, parts))
    rule, needs_config = frule.lookup(order2.f)
    fkwargs = order2.fkwargs
    result = rule(TestConfig(), tuple(tangents), *args, **fkwargs) if needs_config else \
        rule(tuple(tangents), *args, **fkwargs)
    if result is None:
        raise AssertionError(f"test_frule_order2({_name(order2.f)}): the frule declined the "
                             f"arguments")
    return result


def _shift(point: Any, direction: Any, scale: float) -> Any:
    value = np.asarray(point) + scale * np.asarray(unthunk(direction))
    if issubclass(type(point), np.ndarray):
        return value.astype(point.dtype)
    if issubclass(type(point), np.generic):
        return point.dtype.type(value)
    return type(point)(value)
