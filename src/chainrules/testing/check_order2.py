"""Order 2: a rule's pullback and pushforward differentiated again by the engine
(`test_rrule_order2`, `test_frule_order2`), against finite differences of the first-order
rule, and forward over reverse (the jvp of the gradient, what ``hvp`` computes).

>>> import numpy as np
>>> test_rrule_order2(np.sin, np.array([0.5, 1.0]))
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

import numpy as np

from ..core.naming import function_name, is_function
from ..core.registry import FIRST_ORDER_ONLY, STANDS_FOR, frule, rrule
from ..core.structure import get_at, replace_paths, tangent_at, tangent_from_paths
from ..core.tangents import (AbstractZero, NoTangent, ZeroTangent)
from ..core.thunks import unthunk
from .finite_differences import (format_path,
                                 perturbable_leaves)
from .strategies import rand_tangent
from .reports import TestConfig, Tolerance, describe, real_inner, show


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
            if is_function(container):
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
        self.title = f"{check}({function_name(f)}) at ({', '.join(describe(a) for a in args)})"
        if f in FIRST_ORDER_ONLY:
            raise AssertionError(f"{check}({function_name(f)}): declared first-order only: "
                                 f"{FIRST_ORDER_ONLY[f]}")
        self.rng = np.random.default_rng(seed)
        self.leaves = _float_leaves(self.args)
        if not self.leaves:
            raise AssertionError(f"{check}({function_name(f)}): no float argument to differentiate")
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
        from ..ad.transforms.api import grad  # the kit may use every layer; the engine checks the rule
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
            predicted = sum(real_inner(g, d) for g, d in zip(gradients, direction))
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
        raise AssertionError(f"test_rrule_order2({function_name(f)}): no rrule is registered")
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
    from ..ad.transforms.api import grad, jvp  # the kit may use every layer; the engine checks the rule
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
                                f"{show(predicted[i])}, finite differences {show(fd)}; "
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
        raise AssertionError(f"test_frule_order2({function_name(f)}): no frule is registered")
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
                            f"through the frule is {show(a)}, through the pullback "
                            f"{show(b)}; {problem}")
    return problems


def _leaf_name(leaf: Any) -> str:
    """``argument k`` and the path inside it of a float leaf, for messages."""
    return f"argument {leaf.path[0] + 1}" + (format_path(leaf.path[1:])
                                             if len(leaf.path) > 1 else "")


def _call_rule(f: Callable, args: tuple, fkwargs: dict) -> tuple:
    rule, needs_config = rrule.lookup(f)
    result = rule(TestConfig(), *args, **fkwargs) if needs_config else rule(*args, **fkwargs)
    if result is None:
        raise AssertionError(f"test_rrule_order2({function_name(f)}): the rule declined the arguments")
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
        raise AssertionError(f"test_frule_order2({function_name(order2.f)}): the frule declined the "
                             f"arguments")
    return result


def _shift(point: Any, direction: Any, scale: float) -> Any:
    value = np.asarray(point) + scale * np.asarray(unthunk(direction))
    if issubclass(type(point), np.ndarray):
        return value.astype(point.dtype)
    if issubclass(type(point), np.generic):
        return point.dtype.type(value)
    return type(point)(value)
