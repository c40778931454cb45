"""The common ground of the rule checks: the config that rules receive, how values and
arguments are named in failure messages, the report that collects problems, tolerances and
exact comparisons.

>>> Tolerance(rtol=1e-6, atol=1e-8).rtol
1e-06
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np

from .._compat import signature
from ..core.config import RuleConfig
from ..core.naming import function_name
from ..core.registry import rrule
from ..core.sparse import SparseCotangent
from ..core.tangents import (AbstractZero, NoTangent, Tangent, ZeroTangent, is_zero_tangent)
from ..core.thunks import AbstractThunk, InplaceableThunk, unthunk
from .finite_differences import (format_path,
                                 perturbable_leaves)


LOW_PRECISION = {np.dtype(np.float16): (1e-2, 1e-3), np.dtype(np.float32): (1e-4, 1e-5),
                  np.dtype(np.complex64): (1e-4, 1e-5)}
_DEFAULT_RTOL, _DEFAULT_ATOL = 1e-6, 1e-8
REPEATS = 3          # accumulations of the same cotangent into the same buffer
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
        result = rrule.with_constants(self, f, *args, **kwargs)
        if result is not None:
            return result
        engine = _engine_config()
        if engine is not None and getattr(engine, "has_reverse_mode", False):
            return engine.rrule_via_ad(f, *args, **kwargs)
        raise NotImplementedError(
            f"TestConfig.rrule_via_ad: no rule for {function_name(f)} (none given in "
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

def dtype_of(value: Any) -> np.dtype | None:
    try:
        return np.asarray(value).dtype
    except Exception:
        return None


def describe(value: Any) -> str:
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
        return f"the function {function_name(value)}"
    return f"a {type(value).__qualname__}"


def show(value: Any) -> str:
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


class Naming:
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


class Report:
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
                low = LOW_PRECISION.get(dtype_of(leaf.value))
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


def is_structural_tangent(value: Any) -> bool:
    return isinstance(value, (Tangent, tuple, list, dict))


def fields_of(value: Any) -> dict:
    if isinstance(value, Tangent):
        return dict(value.backing)
    if isinstance(value, dict):
        return dict(value)
    return dict(enumerate(value))


def exact_mismatch(expected: Any, got: Any, path: tuple = ()) -> str | None:
    """Exact comparison of two tangents: values (nan == nan), shape and dtype; zeros and
    missing fields are equal to all-zero values."""
    expected, got = unthunk(expected), unthunk(got)
    where = f" at {format_path(path)}" if path else ""
    if isinstance(expected, AbstractZero) or isinstance(got, AbstractZero):
        if is_zero_tangent(expected) and is_zero_tangent(got):
            return None
        return f"one is zero and the other is not{where}"
    if is_structural_tangent(expected) or is_structural_tangent(got):
        if not (is_structural_tangent(expected) and is_structural_tangent(got)):
            return f"{describe(expected)} vs {describe(got)}{where}"
        a, b = fields_of(expected), fields_of(got)
        for key in list(a) + [k for k in b if k not in a]:
            problem = exact_mismatch(a.get(key, ZeroTangent()), b.get(key, ZeroTangent()),
                                      path + (key,))
            if problem:
                return problem
        return None
    e_dtype, g_dtype = dtype_of(expected), dtype_of(got)
    if np.shape(expected) != np.shape(got):
        return f"shape {np.shape(got)} instead of {np.shape(expected)}{where}"
    if e_dtype != g_dtype:
        return f"dtype {g_dtype} instead of {e_dtype}{where}"
    if not np.array_equal(expected, got, equal_nan=e_dtype is not None and e_dtype.kind in "fc"):
        difference = np.max(np.abs(np.asarray(expected) - np.asarray(got)))
        return f"values differ by up to {difference:.3g}{where}"
    return None


def materialize(value: Any) -> Any:
    """A plain copy of a tangent's value (thunks evaluated, arrays copied)."""
    value = unthunk(value)
    if isinstance(value, Tangent):
        return Tangent(value.primal_type, {k: materialize(v) for k, v in value.items()})
    if isinstance(value, (tuple, list)):
        return type(value)(materialize(v) for v in value) if type(value) in (tuple, list) \
            else Tangent(type(value), {k: materialize(v) for k, v in enumerate(value)})
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    if issubclass(type(value), np.ndarray):
        return value.copy()
    return value


def eager_sum(acc: Any, t: Any) -> Any:
    """The specification of accumulation, written independently of `accumulate`:
    ``unthunk(acc) + unthunk(t)`` with zeros as identities and structures field by field."""
    acc, t = unthunk(acc), unthunk(t)
    if isinstance(acc, AbstractZero) and isinstance(t, AbstractZero):
        return NoTangent() if NoTangent() in (acc, t) else ZeroTangent()
    if isinstance(acc, AbstractZero):
        return t
    if isinstance(t, AbstractZero):
        return acc
    if is_structural_tangent(acc) or is_structural_tangent(t):
        if not (is_structural_tangent(acc) and is_structural_tangent(t)):
            raise TypeError(f"cannot add {describe(acc)} and {describe(t)}")
        a, b = fields_of(acc), fields_of(t)
        fields = {key: eager_sum(a.get(key, ZeroTangent()), b.get(key, ZeroTangent()))
                  for key in list(a) + [k for k in b if k not in a]}
        primal_type = acc.primal_type if isinstance(acc, Tangent) else type(acc)
        return Tangent(primal_type, fields)
    return acc + t


def real_inner(a: Any, b: Any) -> float:
    """The real inner product ``Re(vdot(a, b))`` of two tangents, field by field."""
    a, b = unthunk(a), unthunk(b)
    if isinstance(a, AbstractZero) or isinstance(b, AbstractZero):
        return 0.0
    if is_structural_tangent(a) or is_structural_tangent(b):
        fa, fb = fields_of(a), fields_of(b)
        return sum(real_inner(fa[k], fb[k]) for k in fa if k in fb)
    return float(np.real(np.vdot(np.asarray(a), np.asarray(b))))


def norm_of(a: Any) -> float:
    return float(np.sqrt(max(real_inner(a, a), 0.0)))


def has_lazy(value: Any) -> bool:
    if isinstance(value, AbstractThunk):
        return True
    return is_structural_tangent(value) and any(
        has_lazy(v) for v in fields_of(value).values())


