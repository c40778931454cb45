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
from typing import Any, Callable, Sequence

import numpy as np

from ..core.config import DEFAULT_CONFIG, RuleConfig

from ..core.naming import function_name
from ..core.projection import ProjectTo
from ..core.registry import (FIRST_ORDER_ONLY, STANDS_FOR, first_order_only, frule,  # noqa: F401
                             rrule)
from ..core.structure import tangent_at
from ..core.tangents import (AbstractZero, NoTangent, Tangent, ZeroTangent, is_zero_tangent)
from ..core.thunks import Thunk, unthunk
from .finite_differences import (FiniteDifferenceJacobian, fd_jacobian, format_path,
                                 perturbable_leaves)
from .strategies import rand_tangent
from .check_accumulation import (Seed, attempt, check_accumulation_into, deepcopy_or_none,
                                 kind_problems, primal_problem, same_primal, seeds_for)
from .reports import (LOW_PRECISION, Naming, Report, TestConfig, Tolerance, describe, dtype_of,
                      exact_mismatch, has_lazy, is_structural_tangent, materialize, norm_of,
                      real_inner, show)


__all__ = [
    "TestConfig", "test_rrule", "test_frule", "test_scalar", "test_non_differentiable",
    "RuleCase", "case", "check_case", "Tolerance",
]

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
                f"test_{table.kind}({function_name(f)}): no {table.kind} is registered for "
                f"{function_name(f)}. Register one with @chainrules.{table.kind}.register({function_name(f)}) "
                f"or pass the rule to check with rule=...")
        rule, rule_takes_config = entry
    if rule_takes_config:
        def call(config, *a, **k):
            return rule(config, *a, **k)
    else:
        def call(config, *a, **k):
            return rule(*a, **k)
    report = Report(_title(kind, f, function_name(rule), args, fkwargs))
    return call, rule_takes_config, report, Naming(f, len(args))


def _reference(f: Callable, args: tuple, fkwargs: dict) -> tuple[Any, Any]:
    """``(a deep copy of args or None, f(*args))``. ``f`` runs on another copy when the
    arguments can be copied, so the first copy shows later whether the rule mutated them."""
    before = deepcopy_or_none(args)
    if before is None:
        return None, f(*args, **fkwargs)
    return before, f(*copy.deepcopy(args), **fkwargs)


def _title(kind: str, f: Callable, rule_name: str, args: tuple, fkwargs: dict) -> str:
    shown = ", ".join(describe(a) for a in args)
    if fkwargs:
        shown += ", " + ", ".join(f"{k}={v!r}" for k, v in fkwargs.items())
    return f"test_{kind}({function_name(f)}) with rule {rule_name}, at ({shown})"


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
                             f"got {describe(result)}")
    y, pullback = result[0], _CountedPullback(result[1])
    jacobian = _jacobian or fd_jacobian(f, *args, fkwargs=fkwargs, step=step)
    tolerance = Tolerance.for_values(rtol, atol, args, expected_y, f)
    problem = primal_problem(expected_y, y, tolerance)
    if problem:
        report.add("primal", f"the rule's primal {problem}")

    seeds = seeds_for(y, output_tangent, seed)
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
    if before is not None and not same_primal(before, args):
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


def _call_pullback(report: Report, pullback: Callable, seed: Seed, count: int):
    dy = seed.make()
    before = materialize(dy) if issubclass(type(unthunk(dy)), (np.ndarray, Tangent)) else None
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
    if before is not None and exact_mismatch(before, dy) is not None:
        report.add("mutated dy", f"the pullback modified the output tangent it was given "
                                 f"(pullbacks must not mutate dy: the engine may share it)\n"
                                 f"for {seed.description}")
    if not isinstance(cotangents, tuple) or len(cotangents) != count:
        report.add("arity", f"the pullback must return a tuple of {count} cotangents (one for "
                            f"the function itself, then one per positional argument); got "
                            f"{describe(cotangents)} of length "
                            f"{len(cotangents) if hasattr(cotangents, '__len__') else '?'}")
        return None
    return cotangents


def _check_pullback(report: Report, pullback: Callable, seed: Seed, primals: tuple,
                    naming: Naming, jacobian: FiniteDifferenceJacobian,
                    tolerance: Tolerance, check_accumulation: bool):
    cotangents = _call_pullback(report, pullback, seed, len(primals))
    if cotangents is None:
        return None
    expected, scales = jacobian.vjp_with_scale(seed.make())
    for position, (primal, t) in enumerate(zip(primals, cotangents)):
        where = naming(position)
        kinds = kind_problems(primal, t, where)
        for problem in kinds:
            report.add(("kind", position, problem), f"{problem}\nfor {seed.description}")
        if seed.zero:
            ok, error = attempt(lambda: is_zero_tangent(t))
            if error is not None or not ok:
                report.add(("zero", position),
                           f"{where}: a zero output tangent must give a zero cotangent, got "
                           f"{describe(t)}: {show(t)}")
            continue
        if kinds and not perturbable_leaves(primal):
            continue
        for leaf in perturbable_leaves(primal):
            got, error = attempt(lambda: unthunk(tangent_at(t, leaf.path)))
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
                           f"expected (finite differences, projected): {show(want)}\n"
                           f"got (pullback): {show(got)}\n{problem}")
        if check_accumulation and not isinstance(t, AbstractZero) and \
                perturbable_leaves(primal) and not kinds:
            if has_lazy(t):
                def fresh(position=position):
                    return pullback(seed.make())[position]
            else:
                def fresh(t=t):
                    return t
            check_accumulation_into(report, ("acc", position), where, primal, fresh,
                                seed.description)
    return cotangents


def _compare_cotangents(report: Report, key: str, naming: Naming, first: tuple,
                        second: tuple, tolerance: Tolerance, headline: str) -> None:
    for position, (a, b) in enumerate(zip(first, second)):
        a_value, b_value = materialize(a), materialize(b)
        if isinstance(a_value, AbstractZero) and isinstance(b_value, AbstractZero):
            continue
        problem = None
        if is_structural_tangent(a_value) or is_structural_tangent(b_value):
            problem = exact_mismatch(a_value, b_value)
        else:
            a_value = np.zeros(np.shape(b_value)) if isinstance(a_value, AbstractZero) \
                else a_value
            b_value = np.zeros(np.shape(a_value)) if isinstance(b_value, AbstractZero) \
                else b_value
            problem = tolerance.mismatch(a_value, b_value)
        if problem:
            report.add((key, position), f"{headline}: {naming(position)}\n"
                                        f"first: {show(a)}\nsecond: {show(b)}\n{problem}")


def _check_without_config(report: Report, call: Callable, args: tuple, fkwargs: dict,
                          seed: Seed, with_config: tuple | None, naming: Naming,
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
    if any(dtype_of(leaf.value) in LOW_PRECISION
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
                                 f"{describe(result)}")
        y, dy = result
        problem = primal_problem(expected_y, y, tolerance)
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
    if before is not None and not same_primal(before, args):
        report.add("mutated", "the frule mutated its arguments (rules must not modify their "
                              "inputs)")
    report.raise_if_failed()


test_frule.__test__ = False


def _check_output_tangent(report: Report, y: Any, dy: Any, dxs: tuple, description: str,
                          jacobian: FiniteDifferenceJacobian, tolerance: Tolerance,
                          check_accumulation: bool) -> None:
    where = "the output tangent"
    # An frule may return a tuple of tangents for a tuple output (as NumPy code would).
    kinds = kind_problems(y, dy, where, zero_ok_for_nothing=True, noun="tangent",
                           natural_ok=True)
    for problem in kinds:
        report.add(("kind", problem), f"{problem}\nfor {description}")
    if all(isinstance(t, AbstractZero) for t in dxs):
        ok, error = attempt(lambda: is_zero_tangent(dy))
        if error is not None or not ok:
            report.add("zero", f"zero input tangents must give a zero output tangent, got "
                               f"{describe(dy)}: {show(dy)}")
        return
    expected, scale = jacobian.jvp_with_scale(dxs)
    for leaf in perturbable_leaves(y):
        got, error = attempt(lambda: unthunk(tangent_at(dy, leaf.path)))
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
                       f"{show(want)}\ngot (frule): {show(got)}\n{problem}")
    if check_accumulation and has_lazy(dy) and not kinds:
        check_accumulation_into(report, "acc", where, y, lambda: dy, description)


def _check_consistency(report: Report, reverse: tuple, args: tuple, fkwargs: dict,
                       config: RuleConfig, dxs: tuple, dy: Any, naming: Naming,
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
    forward = real_inner(dy_bar, dy)
    terms = [real_inner(c, dx) for c, dx in zip(cotangents, dxs)]
    reverse = sum(terms)
    scale = norm_of(dy_bar) * norm_of(dy) + sum(norm_of(c) * norm_of(dx)
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
        raise ValueError(f"test_scalar: x must be a number, got {describe(x)}")
    has_rrule, has_frule = rrule.lookup(f) is not None, frule.lookup(f) is not None
    if not (has_rrule or has_frule):
        raise AssertionError(f"test_scalar({function_name(f)}): no rrule or frule is registered")
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
                             f"{function_name(c.function)}")
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
    deterministic = same_primal(expected, again)
    tolerance = Tolerance.for_values(None, None, args, expected)
    result = call(TestConfig(), *args, **fkwargs)
    if result is None:
        raise AssertionError(f"{report.title}: the rule returned None (it declined these "
                             f"arguments); expected (y, pullback)")
    y, pullback = result[0], _CountedPullback(result[1])
    problem = primal_problem(expected, y, tolerance) if deterministic else _shape_problem(
        expected, y)
    if problem:
        report.add("primal", f"the rule's primal {problem}")
    seeds = [Seed(description, make) for description, make in [
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
                           f"NoTangent(), got {describe(t)}\nfor {seed_spec.description}")
            elif isinstance(t, ZeroTangent) and not perturbable_leaves(primals[position]):
                report.add(("zero", position),
                           f"{naming(position)} cannot be perturbed: its cotangent must be "
                           f"NoTangent(), got ZeroTangent()")
    if frule.lookup(f) is not None:
        dxs = tuple(rand_tangent(p, seed + 1 + i) for i, p in enumerate(primals))
        try:
            forward = frule.with_constants(TestConfig(), dxs, f, *args, **fkwargs)
        except Exception as error:  # noqa: BLE001
            report.add("frule", f"the frule raised {type(error).__name__}: {error}")
        else:
            if forward is None or not (isinstance(forward, tuple) and len(forward) == 2):
                report.add("frule", f"the frule must return (y, dy); got {describe(forward)}")
            elif not is_zero_tangent(forward[1]):
                report.add("frule", f"the frule of a non-differentiable function must give a "
                                    f"zero output tangent, got {describe(forward[1])}")
    report.raise_if_failed()


test_non_differentiable.__test__ = False


def _shape_problem(expected: Any, got: Any) -> str | None:
    if type(expected) is not type(got) and not (
            issubclass(type(expected), (np.ndarray, np.generic)) and issubclass(type(got), (
                np.ndarray, np.generic))):
        return f"output is {describe(got)}, expected {describe(expected)}"
    if np.shape(expected) != np.shape(got) or dtype_of(expected) != dtype_of(got):
        return (f"output has shape {np.shape(got)} and dtype {dtype_of(got)}, expected "
                f"{np.shape(expected)} and {dtype_of(expected)}")
    return None


