"""The checks on a rule's cotangents as values: their kinds and tangent spaces (projection),
the seeds they are pulled back from (inside and outside the output's space), and in-place
accumulation into accumulators of every kind, which must equal the eager sum exactly.

Used by `test_rrule` (chainrules.testing.check_rules); a failure names the rule, the argument
and the accumulator.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Callable

import numpy as np

from ..core.accumulate import accumulate, owned_copy
from ..core.projection import ProjectTo, _ProjectToNumeric
from ..core.sparse import SparseCotangent
from ..core.structure import get_at
from ..core.tangents import (AbstractZero, NoTangent, Tangent, ZeroTangent, structural_fields)
from ..core.thunks import InplaceableThunk, Thunk, unthunk
from .finite_differences import (format_path,
                                 perturbable_leaves)
from .strategies import inplaceable, make_tangent, rand_tangent
from .reports import (LOW_PRECISION, REPEATS, Report, Tolerance, describe, dtype_of, eager_sum,
                      exact_mismatch, fields_of, materialize, show)


# --------------------------------------------------------------------------------------------
# Kinds of cotangents
# --------------------------------------------------------------------------------------------

def kind_problems(primal: Any, t: Any, where: str, *, zero_ok_for_nothing: bool = False,
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
            return [f"{where} is {describe(primal)}, which cannot be perturbed: its {noun} "
                    f"must be NoTangent(), got ZeroTangent()"]
        return [f"{where} is {describe(primal)}, which cannot be perturbed: its {noun} "
                f"must be NoTangent() (ints, bools, strings, index arrays and functions that "
                f"capture nothing get NoTangent()), got {describe(t)}: {show(t)}"]
    if isinstance(t, ZeroTangent):
        return []
    problems = []
    projector = ProjectTo(primal)
    if isinstance(projector, _ProjectToNumeric):
        space = f"shape {projector.shape} and dtype {projector.dtype}"
        if isinstance(t, (InplaceableThunk, SparseCotangent)) and (
                t.shape is not None and tuple(t.shape) != projector.shape
                or t.dtype is not None and t.dtype != projector.dtype):
            problems.append(f"{where}: {describe(t)} declares a value outside the primal's "
                            f"tangent space ({space}); float32 stays float32, real stays real")
        try:
            value = unthunk(t)
        except Exception as error:  # noqa: BLE001
            return problems + [f"{where}: unthunk of {describe(t)} raised "
                               f"{type(error).__name__}: {error}"]
        if isinstance(value, AbstractZero):
            return problems
        if isinstance(t, InplaceableThunk) and (
                t.shape is not None and np.shape(value) != t.shape
                or t.dtype is not None and dtype_of(value) != t.dtype):
            problems.append(
                f"{where}: {describe(t)} has a value of shape {np.shape(value)} and dtype "
                f"{dtype_of(value)}; an InplaceableThunk's declared shape and dtype must be "
                f"those of its value (accumulate relies on them)")
        if issubclass(type(value), (bool, np.bool_)) or not issubclass(
                type(value), (np.ndarray, np.generic, int, float, complex)):
            return problems + [f"{where}: expected a number or array ({space}), got "
                               f"{describe(value)}"]
        if np.shape(value) != projector.shape:
            problems.append(f"{where}: {noun} has shape {np.shape(value)}, expected the "
                            f"primal's shape {projector.shape}")
        if dtype_of(value) != projector.dtype:
            problems.append(
                f"{where}: {noun} has dtype {dtype_of(value)}, expected the primal's "
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
        return [f"{where} is {describe(primal)}: its {noun} must be a Tangent "
                f"(Tangent({type(primal).__name__}, {{field: cotangent}})), got "
                f"{describe(value)}"]
    if natural:
        if len(value) != len(primal):
            return [f"{where}: the {noun} is a {type(value).__name__} of length {len(value)}; "
                    f"the primal has length {len(primal)}"]
        value = Tangent(type(primal), fields_of(value))
    if value.primal_type is not None and value.primal_type is not type(primal):
        problems.append(f"{where}: a Tangent for {value.primal_type.__qualname__}, but the "
                        f"primal is {describe(primal)}")
    for key, sub in value.items():
        try:
            field = get_at(primal, (key,))
        except (AttributeError, KeyError, IndexError, TypeError, ValueError):
            problems.append(f"{where}: the {noun} has a field {key!r} that the primal "
                            f"({describe(primal)}) does not have")
            continue
        problems += kind_problems(field, sub, f"{where}{format_path((key,))}",
                                   zero_ok_for_nothing=True, noun=noun,
                                   natural_ok=natural_ok)
    return problems


def primal_problem(expected: Any, got: Any, tolerance: Tolerance, path: tuple = ()
                    ) -> str | None:
    where = format_path(path) if path else ""
    numeric = (np.ndarray, np.generic, int, float, complex)
    if isinstance(expected, numeric) and isinstance(got, numeric):
        if np.shape(expected) != np.shape(got):
            return f"output{where} has shape {np.shape(got)}, expected {np.shape(expected)}"
        if dtype_of(expected) != dtype_of(got):
            return f"output{where} has dtype {dtype_of(got)}, expected {dtype_of(expected)}"
        if dtype_of(expected).kind in "fc":
            problem = tolerance.mismatch(expected, got)
            if problem:
                return (f"output{where} differs from f(*args): expected {show(expected)}, "
                        f"got {show(got)}; {problem}")
            return None
        if not np.array_equal(expected, got):
            return f"output{where} differs from f(*args): expected {show(expected)}, got " \
                   f"{show(got)}"
        return None
    if type(expected) is not type(got):
        return f"output{where} is {describe(got)}, expected {describe(expected)}"
    if isinstance(expected, (tuple, list, dict)) or perturbable_leaves(expected):
        a, b = structural_fields(expected), structural_fields(got)
        if list(a) != list(b):
            return f"output{where} has fields {list(b)}, expected {list(a)}"
        for key in a:
            problem = primal_problem(a[key], b[key], tolerance, path + (key,))
            if problem:
                return problem
        return None
    if hasattr(expected, "toarray") and hasattr(got, "toarray"):
        # a SciPy sparse matrix, by its values (SciPy sorts its indices in place, which
        # changes none; its == is elementwise and warns)
        return primal_problem(expected.toarray(), got.toarray(), tolerance, path)
    try:
        equal = bool(expected == got)
    except Exception:  # noqa: BLE001 - no truth value: its attributes
        equal = _same_attributes(expected, got, tolerance, path)
    return None if equal else f"output{where} is {show(got)}, expected {show(expected)}"


def _same_attributes(expected: Any, got: Any, tolerance: Tolerance, path: tuple) -> bool:
    """Equal values of an object that has no truth-valued ``==``, by its attributes."""
    fields, other = getattr(expected, "__dict__", None), getattr(got, "__dict__", None)
    if fields is None or other is None or list(fields) != list(other):
        return expected is got
    return all(primal_problem(value, other[key], tolerance, path + (key,)) is None
               for key, value in fields.items())


def deepcopy_or_none(value: Any) -> Any:
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001
        return None


def same_primal(a: Any, b: Any) -> bool:
    return primal_problem(a, b, Tolerance(0.0, 0.0)) is None


# --------------------------------------------------------------------------------------------
# Seeds: output tangents inside and outside the output's space
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Seed:
    description: str
    make: Callable[[], Any]
    zero: bool = False
    thunk_of_primary: bool = False


def seeds_for(y: Any, output_tangent: Any, seed: int) -> list[Seed]:
    leaves = perturbable_leaves(y)
    if output_tangent is None:
        primary = rand_tangent(y, seed)
        label = "a random output tangent in the output's own space"
    else:
        primary = output_tangent
        label = "the output tangent given"
    label += f" ({describe(primary)})"
    seeds = [Seed(label, lambda: primary)]
    if not leaves:
        seeds.append(Seed("ZeroTangent()", lambda: ZeroTangent(), zero=True))
        return seeds
    seeds.append(Seed("the same output tangent, thunked", lambda: Thunk(lambda: primary),
                       thunk_of_primary=True))
    real = [leaf for leaf in leaves if not leaf.is_complex]
    low = [leaf for leaf in leaves if dtype_of(leaf.value) in LOW_PRECISION]
    if real:
        value = rand_tangent(y, seed + 1, dtype=np.complex128)
        seeds.append(Seed(f"a complex128 output tangent for an output of dtype "
                           f"{dtype_of(real[0].value)} (outside the output's space)",
                           lambda: value))
    if low:
        value = rand_tangent(y, seed + 2, dtype=lambda d: np.promote_types(d, np.float64))
        seeds.append(Seed(f"a float64/complex128 output tangent for an output of dtype "
                           f"{dtype_of(low[0].value)} (outside the output's space)",
                           lambda: value))
    dense = rand_tangent(y, seed) if output_tangent is None else primary
    if issubclass(type(y), np.ndarray) and y.ndim >= 1 and \
            issubclass(type(unthunk(dense)), np.ndarray):
        dense = unthunk(dense)
        seeds.append(Seed(f"an InplaceableThunk output tangent ({dense.dtype})",
                           lambda: inplaceable(dense)))
        if y.shape[0] > 0:
            seeds.append(Seed(
                f"a SparseCotangent output tangent (nonzero at index 0 only, {dense.dtype})",
                lambda: SparseCotangent(0, dense[0], y.shape, dense.dtype)))
    if isinstance(primary, Tangent) and len(primary.backing) > 1:
        first = next(iter(primary.keys()))
        partial = Tangent(primary.primal_type, {first: primary[first]})
        seeds.append(Seed(f"a partial Tangent output tangent (only field {first!r}; the "
                           f"missing fields are zero)", lambda: partial))
    if isinstance(primary, Tangent) and isinstance(y, (list, tuple, dict)) and \
            type(y) in (list, tuple, dict):
        natural = make_tangent(y, "container", seed)
        seeds.append(Seed(f"a plain {type(y).__name__} output tangent (the natural form of "
                           f"a structural tangent)", lambda: natural))
    seeds.append(Seed("ZeroTangent()", lambda: ZeroTangent(), zero=True))
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


def attempt(function: Callable[[], Any]) -> tuple[Any, BaseException | None]:
    try:
        return function(), None
    except Exception as error:  # noqa: BLE001
        return None, error


def check_accumulation_into(report: Report, key: Any, where: str, primal: Any,
                        fresh: Callable[[], Any], seed_description: str) -> None:
    """accumulate(acc, t) == acc + unthunk(t), exactly, for accumulators of many kinds."""
    sample = fresh()
    if isinstance(sample, AbstractZero):
        return
    reference, error = attempt(lambda: materialize(fresh()))
    if error is not None:
        report.add((key, "unthunk"), f"{where}: unthunk of the cotangent raised "
                                     f"{type(error).__name__}: {error}")
        return
    cotangent = f"the cotangent of {where} ({describe(sample)}), for {seed_description}"

    def fail(kind: str, accumulator: str, detail: str) -> None:
        report.add((key, "accumulate"),
                   f"in-place accumulation disagrees with the eager sum: accumulate(acc, t) "
                   f"!= acc + unthunk(t)\n"
                   f"t: {cotangent}\n"
                   f"acc: {accumulator} ({kind})\n{detail}", case=f"{accumulator} ({kind})")

    # The first contribution an engine stores: owned_copy(t) must be unthunk(t), unaliased.
    first, error = attempt(lambda: owned_copy(fresh()))
    if error is not None:
        fail("owned_copy", "none", f"owned_copy(t) raised {type(error).__name__}: {error}")
    else:
        problem = exact_mismatch(reference, first)
        if problem:
            fail("owned_copy", "none", f"owned_copy(t) != unthunk(t): {problem}\n"
                                       f"expected: {show(reference)}\ngot: {show(first)}")
    for label, make in _accumulators(primal):
        expected, eager_error = attempt(lambda: eager_sum(make(), reference))
        repeated, _ = attempt(lambda: _repeat_eager(make(), reference, REPEATS))

        def compare(kind: str, got: Any, got_error: BaseException | None, want: Any) -> None:
            if got_error is not None and eager_error is None:
                fail(kind, label, f"accumulate raised {type(got_error).__name__}: {got_error}\n"
                                  f"where the eager sum gives {show(want)}")
            elif got_error is None and eager_error is None:
                problem = exact_mismatch(want, got)
                if problem:
                    fail(kind, label, f"{problem}\nexpected (eager sum): {show(want)}\n"
                                      f"got (accumulate): {show(got)}")

        # Owned: the accumulator may be updated in place.
        t = fresh()
        got, got_error = attempt(lambda: accumulate(owned_copy(make()), t, owned=True))
        compare("owned", got, got_error, expected)
        # Owned, the same cotangent added repeatedly into the same buffer.
        t = fresh()

        def repeat():
            buffer = owned_copy(make())
            for _ in range(REPEATS):
                buffer = accumulate(buffer, t, owned=True)
            return buffer

        got, got_error = attempt(repeat)
        compare(f"owned, {REPEATS} times into the same buffer", got, got_error, repeated)
        problem = exact_mismatch(reference, t) if got_error is None else None
        if problem:
            fail("owned", label, f"accumulating t changed t's own value: {problem}")
        # Unowned: nothing may be mutated.
        acc = make()
        before = materialize(acc)
        t = fresh()
        got, got_error = attempt(lambda: accumulate(acc, t))
        compare("unowned", got, got_error, expected)
        problem = exact_mismatch(before, acc)
        if problem:
            fail("unowned", label, f"the unowned accumulator was mutated: {problem}")


def _repeat_eager(acc: Any, t: Any, times: int) -> Any:
    for _ in range(times):
        acc = eager_sum(acc, t)
    return acc


