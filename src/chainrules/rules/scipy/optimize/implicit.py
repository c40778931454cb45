"""Rules for ``scipy.optimize.root``, ``fsolve`` and ``minimize``: implicit gradients.

The solution ``x*`` of ``F(x, θ) = 0`` (for ``minimize``, ``F = ∇_x f``) depends on the
parameters ``θ`` that the objective captures (a closure over traced values, a callable
object's attributes) or receives in ``args``. Its derivative comes from the implicit function
theorem at the solution, never from the solver's iterations (as in jaxopt):

    dx*/dθ = -(∂F/∂x)^{-1} ∂F/∂θ

The pullback solves ``(∂F/∂x)^T w = -x̄`` and returns the cotangent of ``θ`` as the VJP of
``F`` with ``w``; the pushforward solves ``(∂F/∂x) ẋ = -(∂F/∂θ θ̇)``. ``∂F/∂x`` is built
densely from ``n`` VJPs of ``F`` (``rrule_via_ad``), so the cost is ``n`` pullbacks of the
objective plus one ``n x n`` solve: meant for the small and medium ``n`` of inner problems
(hyperparameters, equilibria, bilevel models). For ``minimize`` the gradient ``∇_x f`` and its
derivatives (Hessian-vector products) come from the AD system running the rule, so ``jac``
and ``hess`` need not be given (if given, the solver uses them; derivatives do not).

Decisions:
- ``x0`` gets no tangent: the solution does not depend on the starting point (where the
  solution is unique and the solver converges).
- ``.x`` of the result is differentiable, and for ``minimize`` also ``.fun`` (envelope
  theorem: ``d f(x*, θ)/dθ = ∂f/∂θ``). ``root``'s ``.fun`` and ``minimize``'s ``.jac`` are
  zero at every solution (constant). The engine traces every float field of the result; a
  cotangent reaching any other one (``.hess_inv``, ``.fjac``...) raises.
- A root solve that failed (``success`` false; ``fsolve``'s failure warning) raises when its
  derivative is asked for: the formula holds only at a solution. ``minimize`` reporting a
  failure warns instead (BFGS's "precision loss" often comes at a minimum all the same).
- ``root`` with more residuals than unknowns (``method='lm'`` least squares) is refused: the
  solution is not a zero of ``F`` there.
- ``minimize`` with ``bounds``: the components on an active bound stay on it (the bound is a
  constant), the others follow the implicit formula on the free components (the KKT
  conditions' derivative, where the gradient pushes against each active bound: strict
  complementarity; a bound active with a zero gradient component raises by name).
  ``constraints`` (dicts, ``'eq'`` or ``'ineq'``, not depending on the differentiated values)
  active at the solution, with the active bounds, enter the KKT conditions: the unknowns are
  ``x`` and the multipliers (by least squares at ``x``), and the implicit formula runs on
  ``(∇f - J^T λ, c_A)``; dependent active constraints, a weakly active inequality (its
  multiplier not positive) or conditions that do not hold to 1e-5 raise by name;
  ``LinearConstraint``/``NonlinearConstraint`` objects are refused (give them as dicts).
- ``fsolve(..., full_output=True)`` is refused (its info dict holds solver internals).

The forward solve runs through ``scipy.optimize`` at each call, so that inside an outer trace
(a rule differentiated again: a Hessian of an outer loss in ``θ``) it is recorded there too;
the pullback and pushforward use only operations with rules (VJPs of ``F``, ``np.stack``,
``np.linalg.solve``), so they can be differentiated again.

>>> import numpy as np, scipy.optimize, chainrules
>>> def cube_root(t):
...     return scipy.optimize.root(lambda x: x ** 3 - t, np.ones(1), tol=1e-12).x[0]
>>> round(float(chainrules.grad(cube_root)(8.0)), 9)   # x* = t^(1/3): dx*/dt = 1/12
0.083333333
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Callable

import numpy as np
import scipy.optimize

from ....core.accumulate import accumulate
from ....core.config import RuleConfig, rrule_via_ad
from ....core.projection import ProjectTo
from ....core.registry import frule, recorded_whole, rrule
from ....core.tangents import AbstractZero, NoTangent, Tangent, ZeroTangent
from ....core.thunks import unthunk

__all__ = ["minimizer_at"]

# The functions as SciPy defines them (rules are keyed by these); the calls below go through
# the module, which a trace may have routed.
_ROOT = scipy.optimize.root
_FSOLVE = scipy.optimize.fsolve
_MINIMIZE = scipy.optimize.minimize


def _solver(name: str) -> Callable:
    return getattr(scipy.optimize, name)


# --- the implicit function theorem --------------------------------------------------------------

_MINIMIZERS = ("minimize", "minimize_scalar", "golden", "brent", "fminbound", "least_squares",
               "curve_fit")


def _check_converged(name: str, success: Any, message: Any) -> None:
    """A root solve that failed has no solution to differentiate at: raise. A minimizer that
    reports a failure is often at a minimum all the same (BFGS's "precision loss" at tight
    tolerances): warn, since the gradient assumes a stationary point."""
    if bool(success):
        return
    if name in _MINIMIZERS:
        warnings.warn(
            f"scipy.optimize.{name} reported a failure ({message}); its derivative by the "
            f"implicit function theorem assumes that .x is a stationary point. Check "
            f"result.jac, give jac=, or change tol/options.", RuntimeWarning, stacklevel=2)
        return
    raise RuntimeError(
        f"scipy.optimize.{name} did not converge ({message}); its derivative by the "
        f"implicit function theorem holds only at a solution. Give a better x0 or raise the "
        f"iteration limit (options=...).")


def _as_args(args: Any) -> tuple:
    return args if isinstance(args, tuple) else (args,)


def _args_cotangent(args: Any, cotangents: tuple) -> Any:
    """The cotangent of the ``args`` argument as given (a tuple, or one value SciPy wraps)."""
    if not isinstance(args, tuple):
        return cotangents[0]
    if all(isinstance(unthunk(c), AbstractZero) for c in cotangents):
        return ZeroTangent()
    return Tangent(tuple, dict(enumerate(cotangents)))


class _Implicit:
    """``F(x, *args)`` at a solution ``x*``: the ``n`` VJPs ``J^T e_i`` (cotangents of the
    function, ``x`` and ``args``) give the Jacobian ``∂F/∂x`` (row ``i`` is the ``x`` part)
    and, for forward mode, ``∂F/∂θ θ̇`` (entry ``i`` is the rest paired with ``θ̇``)."""

    def __init__(self, config: RuleConfig, residual: Callable, x: Any, args: tuple):
        self.x, self.n = x, int(np.size(x))
        value, self.pullback = rrule_via_ad(config, residual, x, *args)
        self.shape = np.shape(value)  # () for a scalar solver's f(x)
        if np.size(value) != self.n:
            raise NotImplementedError(
                f"scipy.optimize.root: {np.size(value)} residuals for {self.n} unknowns (a "
                f"least-squares solve, method='lm'?); the implicit gradient needs as many "
                f"residuals as unknowns, F(x*) = 0. For least squares, minimize the sum of "
                f"squares with scipy.optimize.minimize.")
        self.rows = [self.pullback(_unit(i, self.shape)) for i in range(self.n)]
        self.jacobian = np.stack([_dense(row[1], self.n) for row in self.rows])

    def pull(self, dx: Any) -> tuple:
        """``(function cotangent, args cotangents)`` of ``x*`` for its cotangent ``dx``."""
        w = np.linalg.solve(np.transpose(self.jacobian), -np.reshape(dx, (self.n,)))
        cotangents = self.pullback(np.reshape(w, self.shape))
        return cotangents[0], tuple(cotangents[2:])

    def push(self, function_tangent: Any, arg_tangents: tuple) -> Any:
        """The tangent of ``x*`` for tangents of the function and of ``args``."""
        tangents = (function_tangent, ZeroTangent(), *arg_tangents)
        dF = np.stack([sum((_inner(c, t) for c, t in zip(row, tangents)), np.float64(0.0))
                       for row in self.rows])
        return np.reshape(np.linalg.solve(self.jacobian, -dF), np.shape(self.x))


def _unit(i: int, shape: tuple) -> np.ndarray:
    unit = np.zeros(int(np.prod(shape)))
    unit[i] = 1.0
    return np.reshape(unit, shape)


def _dense(row: Any, n: int) -> Any:
    row = unthunk(row)
    return np.zeros(n) if isinstance(row, AbstractZero) else np.reshape(np.asarray(row), (n,))


def _inner(cotangent: Any, tangent: Any) -> Any:
    """``Re <cotangent, tangent>`` over structures (closure and tuple tangents), written in
    operations with rules so that a pushforward built on it can be differentiated again."""
    cotangent, tangent = unthunk(cotangent), unthunk(tangent)
    if isinstance(cotangent, AbstractZero) or isinstance(tangent, AbstractZero):
        return np.float64(0.0)
    if isinstance(cotangent, (Tangent, tuple, list)):
        keys = cotangent.keys() if isinstance(cotangent, Tangent) else range(len(cotangent))
        return sum((_inner(cotangent[key], tangent[key]) for key in keys), np.float64(0.0))
    return np.sum(np.real(np.conj(np.asarray(cotangent)) * tangent))


def _arg_tangents(args: Any, tangent: Any) -> tuple:
    """The tangents of the entries of ``args`` from the tangent of the ``args`` argument."""
    count = len(_as_args(args))
    if isinstance(tangent, AbstractZero):
        return (ZeroTangent(),) * count
    return tuple(tangent[i] for i in range(count)) if isinstance(args, tuple) else (tangent,)


def _given_tangents(tangents: tuple, args_at: int) -> tuple:
    """``(tangent of the function, tangent of args)`` from a solver's positional tangents,
    where ``args`` is argument ``args_at`` (the function is argument 1, after the solver)."""
    given = [unthunk(t) for t in tangents]
    given += [ZeroTangent()] * (args_at + 1 - len(given))
    return given[1], given[args_at]


def _positional(count: int, function_cotangent: Any, args_at: int, args_cotangent: Any
                ) -> tuple:
    """The cotangents of a solver's ``count`` positional arguments (the solver first): the
    function's and ``args``' (argument ``args_at``, if given by position); none for the
    starting point, bracket, bounds and options, which the solution does not depend on."""
    cotangents = [NoTangent()] * count
    cotangents[1] = function_cotangent
    if args_at < count:
        cotangents[args_at] = args_cotangent
    return tuple(cotangents)


def _value_of(fun: Callable, jac: Any) -> Callable:
    """The function whose value the solver uses: ``fun`` itself, or its first output when
    ``jac=True`` (``fun`` returns the value and its derivative, for the solver only)."""
    if jac is True:
        def first(x: Any, *args: Any) -> Any:
            return fun(x, *args)[0]
        return first
    return fun


def _function_tangent(wrapper: Callable, fun: Callable, tangent: Any) -> Any:
    """The tangent of the user's ``fun`` from that of `_value_of`'s wrapper around it."""
    if wrapper is fun:
        return tangent
    tangent = unthunk(tangent)
    return tangent if isinstance(tangent, AbstractZero) else tangent.fun


def _wrapper_tangent(wrapper: Callable, fun: Callable, tangent: Any) -> Any:
    """The tangent of `_value_of`'s wrapper from that of the user's ``fun``."""
    tangent = unthunk(tangent)
    if wrapper is fun or isinstance(tangent, AbstractZero):
        return tangent
    return Tangent(type(wrapper), {"fun": tangent})


# --- root and fsolve ----------------------------------------------------------------------------

def _root_pullback(config: RuleConfig, fun: Callable, jac: Any, x: Any, args: Any,
                   count: int, converged: tuple, name: str, args_at: int = 3) -> Callable:
    """The pullback of a root solve's ``x``: cotangents for ``count`` positional arguments
    (the solver, ``fun``, ``x0``, ``args``, then options; ``args`` is argument ``args_at``)."""
    residual = _value_of(fun, jac)
    project = ProjectTo(x)
    args_tuple = _as_args(args)

    def pullback(dx: Any) -> tuple:
        dx = unthunk(dx)
        if isinstance(dx, AbstractZero):
            return (NoTangent(),) * count
        _check_converged(name, *converged)
        implicit = _Implicit(config, residual, x, args_tuple)
        function_cotangent, arg_cotangents = implicit.pull(project(dx))
        return _positional(count, _function_tangent(residual, fun, function_cotangent),
                           args_at, _args_cotangent(args, arg_cotangents))

    return pullback


def _root_push(config: RuleConfig, tangents: tuple, fun: Callable, jac: Any, x: Any,
               args: Any, converged: tuple, name: str, args_at: int = 3) -> Any:
    fun_tangent, args_tangent = _given_tangents(tangents, args_at)
    residual = _value_of(fun, jac)
    args_tuple = _as_args(args)
    arg_tangents = _arg_tangents(args, args_tangent)
    fun_tangent = _wrapper_tangent(residual, fun, fun_tangent)
    if isinstance(fun_tangent, AbstractZero) and all(
            isinstance(unthunk(t), AbstractZero) for t in arg_tangents):
        return ZeroTangent()
    _check_converged(name, *converged)
    return _Implicit(config, residual, x, args_tuple).push(fun_tangent, arg_tangents)


def _root_call(fun: Callable, x0: Any, args: Any, options: dict) -> Any:
    """``scipy.optimize.root`` through the module (recorded in an outer trace)."""
    return _solver("root")(fun, x0, args=args, **options)


_ROOT_OPTIONS = ("args", "method", "jac", "tol", "callback", "options")


def _bind(names: tuple, rest: tuple, options: dict) -> tuple:
    """``(args, other options)`` from a solver's positional arguments after ``x0``."""
    options = {**dict(zip(names, rest)), **options}
    return options.pop("args", ()), options


@rrule.register(_ROOT, config=True)
def _root_rule(config: RuleConfig, fun: Callable, x0: Any, *rest: Any, **options: Any):
    args, options = _bind(_ROOT_OPTIONS, rest, options)
    result = _root_call(fun, x0, args, options)
    pullback_x = _root_pullback(config, fun, options.get("jac"), result.x, args,
                                3 + len(rest), (result.success, result.message), "root")

    def root_pullback(dresult: Any) -> tuple:
        return pullback_x(_only_fields("root", dresult, ("x",), ("fun",))["x"])

    return result, root_pullback


@frule.register(_ROOT, config=True)
def _root_frule(config: RuleConfig, tangents: tuple, fun: Callable, x0: Any, *rest: Any,
                **options: Any):
    args, options = _bind(_ROOT_OPTIONS, rest, options)
    result = _root_call(fun, x0, args, options)
    dx = _root_push(config, tangents, fun, options.get("jac"), result.x, args,
                    (result.success, result.message), "root")
    return result, Tangent(type(result), {"x": dx})  # .fun: zero at every root


_FSOLVE_FAILURES = ("not making good progress", "maxfev", "no further improvement",
                    "Improper input")


def _fsolve_call(func: Callable, x0: Any, args: Any, options: dict) -> tuple:
    """``(x, (converged, message))``. SciPy reports a failed ``fsolve`` by a RuntimeWarning
    (without full_output), which is read here and passed on to the caller."""
    if options.get("full_output"):
        raise NotImplementedError(
            "scipy.optimize.fsolve(..., full_output=True) is not differentiable: its info "
            "dict holds solver internals. Call it without full_output (a solve that fails "
            "raises when differentiated), or use scipy.optimize.root, whose result has .x.")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = _solver("fsolve")(func, x0, args=args, **options)
    failures = [w for w in caught if issubclass(w.category, RuntimeWarning) and any(
        word in str(w.message) for word in _FSOLVE_FAILURES)]
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return x, (not failures, "; ".join(str(w.message) for w in failures))


_FSOLVE_OPTIONS = ("args", "fprime", "full_output", "col_deriv", "xtol", "maxfev", "band",
                   "epsfcn", "factor", "diag")


@rrule.register(_FSOLVE, config=True)
def _fsolve_rule(config: RuleConfig, func: Callable, x0: Any, *rest: Any, **options: Any):
    args, options = _bind(_FSOLVE_OPTIONS, rest, options)
    x, converged = _fsolve_call(func, x0, args, options)
    return x, _root_pullback(config, func, None, x, args, 3 + len(rest), converged, "fsolve")


@frule.register(_FSOLVE, config=True)
def _fsolve_frule(config: RuleConfig, tangents: tuple, func: Callable, x0: Any,
                  *rest: Any, **options: Any):
    args, options = _bind(_FSOLVE_OPTIONS, rest, options)
    x, converged = _fsolve_call(func, x0, args, options)
    return x, _root_push(config, tangents, func, None, x, args, converged, "fsolve")


def _only_fields(name: str, cotangent: Any, differentiable: tuple, zero: tuple) -> dict:
    """The cotangents of a result's differentiable fields. Fields in ``zero`` are zero at
    every solution (root's ``.fun``, minimize's ``.jac``): constant, their cotangents are
    dropped. A nonzero cotangent on any other field raises."""
    cotangent = unthunk(cotangent)
    if isinstance(cotangent, AbstractZero):
        return {key: ZeroTangent() for key in differentiable}
    for key, value in cotangent.items():
        if key not in differentiable + zero and not isinstance(unthunk(value), AbstractZero):
            raise NotImplementedError(
                f"scipy.optimize.{name}: the result's .{key} is not differentiable (only "
                f"{', '.join('.' + k for k in differentiable + zero)} are); compute what you "
                f"need from .x inside the differentiated function.")
    return {key: cotangent[key] for key in differentiable}


# --- minimize -----------------------------------------------------------------------------------

def _gradient_of(config: RuleConfig, objective: Callable) -> Callable:
    """``∇_x f`` as a function of ``(x, *args)``, by the AD system behind ``config``; its own
    derivatives (Hessian-vector products) come from the same system."""
    def gradient(x: Any, *args: Any) -> Any:
        _, pullback = rrule_via_ad(config, objective, x, *args)
        g = unthunk(pullback(1.0)[1])
        return np.zeros(np.shape(x)) if isinstance(g, AbstractZero) else g

    return gradient


def _at_bounds(x: Any, options: dict) -> tuple:
    """Where ``x`` sits on the lower and on the upper bounds of ``options`` (within
    ``options["bounds_slack"]``, for solvers that stop within a tolerance of a bound, or
    ``1e-6 (1 + |x|)``), and the bounds, in ``x``'s shape; ``None`` without bounds."""
    bounds = options.get("bounds")
    if bounds is None:
        return None
    if isinstance(bounds, scipy.optimize.Bounds):
        lower, upper = bounds.lb, bounds.ub
    else:
        pairs = [(-np.inf if lo is None else lo, np.inf if hi is None else hi)
                 for lo, hi in bounds]
        lower, upper = [p[0] for p in pairs], [p[1] for p in pairs]
    lower, upper = _shaped_like(lower, x), _shaped_like(upper, x)
    slack = np.maximum(1e-6 * (1.0 + np.abs(x)), options.get("bounds_slack", 0.0))
    return x - lower <= slack, upper - x <= slack, lower, upper


def _active_bounds(name: str, gradient: Callable, x: Any, args: tuple, options: dict
                   ) -> tuple | None:
    """``(active, values)``: the components of the minimizer ``x`` on a bound of
    ``options``, and those bounds, which the solution keeps as its data move (the bound is
    a constant), or ``None`` where no bound is active. Raises, naming the solver, where a
    bound is active but the gradient does not push against it (strict complementarity: a
    component of the gradient of zero, or of the wrong sign, has no unique derivative)."""
    found = _at_bounds(x, options)
    if found is None:
        return None
    at_lower, at_upper, lower, upper = found
    active = at_lower | at_upper
    if not np.any(active):
        return None
    slope = np.reshape(np.asarray(gradient(x, *args), float), np.shape(x))
    threshold = 1e-6 * (1.0 + np.max(np.abs(slope)))  # (a solver's accuracy, about 1e-8)
    weak = active & ~((at_lower & (slope > threshold)) | (at_upper & (slope < -threshold)))
    if np.any(weak):
        raise NotImplementedError(
            f"scipy.optimize.{name}: bounds active at the solution where the gradient does not "
            f"push against them (components {np.flatnonzero(weak).tolist()}, gradient "
            f"{slope[weak].tolist()}): the solution has no unique derivative there. "
            f"Reparameterise (e.g. x = exp(z) for x > 0) or drop the bound.")
    return active, np.where(at_lower, lower, upper)


def _on_bounds(gradient: Callable, active: Any, values: Any) -> Callable:
    """The residual whose zero is a minimizer with the ``active`` components on their bound
    ``values``: the gradient in the free components, the distance to the bound in the active
    ones."""
    def projected(x: Any, *args: Any) -> Any:
        return np.where(active, x - values, gradient(x, *args))

    return projected


def _check_inactive(name: str, x: Any, options: dict, args: tuple) -> None:
    """Refuse, by name, a bound or constraint of ``options`` that is active at the solution
    ``x``: one within ``options["bounds_slack"]`` (for solvers that stop within a tolerance
    of a bound) or ``1e-6 (1 + |x|)`` of it."""
    bounds, constraints = options.get("bounds"), options.get("constraints")
    if bounds is not None:
        at_lower, at_upper, _, _ = _at_bounds(x, options)
        active = np.flatnonzero(at_lower | at_upper)
        if active.size:
            raise NotImplementedError(
                f"scipy.optimize.{name}: bounds active at the solution (components "
                f"{active.tolist()}); the implicit gradient is implemented for solutions "
                f"strictly inside the bounds only. Reparameterise (e.g. x = exp(z) for x > 0) "
                f"or drop the bound.")
    for constraint in ([constraints] if isinstance(constraints, dict) else constraints or ()):
        if not isinstance(constraint, dict) or constraint.get("type") != "ineq":
            raise NotImplementedError(
                f"scipy.optimize.minimize: constraint {constraint!r} is not differentiable "
                f"(only inequality constraints given as dicts, inactive at the solution, "
                f"are accepted). Reparameterise to an unconstrained problem.")
        value = np.asarray(constraint["fun"](x, *constraint.get("args", ())), float)
        if np.any(value <= 1e-6 * (1.0 + np.abs(value))):
            raise NotImplementedError(
                "scipy.optimize.minimize: an inequality constraint is active at the solution; "
                "the implicit gradient is implemented for inactive constraints only.")


def _shaped_like(bound: Any, x: Any) -> np.ndarray:
    """A bound, one per component of ``x`` or one for all, in ``x``'s shape."""
    bound = np.asarray(bound, float)
    if bound.size == np.size(x):
        return np.reshape(bound, np.shape(x))
    return np.broadcast_to(bound, np.shape(x))


def _minimize_call(fun: Callable, x0: Any, args: Any, options: dict) -> Any:
    return _solver("minimize")(fun, x0, args=args, **options)


_MINIMIZE_OPTIONS = ("args", "method", "jac", "hess", "hessp", "bounds", "constraints", "tol",
                     "callback", "options")


def _minimize_setup(config: RuleConfig, fun: Callable, options: dict) -> tuple:
    """The objective ``f`` and ``F = ∇_x f``."""
    objective = _value_of(fun, options.get("jac"))
    return objective, _gradient_of(config, objective)


def _minimize_pullback(config: RuleConfig, fun: Callable, x: Any, args: Any, options: dict,
                       count: int, converged: tuple, args_at: int = 3,
                       name: str = "minimize") -> Callable:
    """The pullback of ``(x*, f(x*))`` for ``count`` positional arguments (``args`` is
    argument ``args_at``)."""
    objective, gradient = _minimize_setup(config, fun, options)
    args_tuple = _as_args(args)
    project = ProjectTo(x)

    def pullback(dx: Any, dfun: Any) -> tuple:
        dx, dfun = unthunk(dx), unthunk(dfun)
        if isinstance(dx, AbstractZero) and isinstance(dfun, AbstractZero):
            return (NoTangent(),) * count
        _check_converged(name, *converged)
        residual, point, bounded = _residual(config, name, gradient, x, args_tuple, options)
        function_cotangent: Any = ZeroTangent()
        arg_cotangents: tuple = (ZeroTangent(),) * len(args_tuple)
        if not isinstance(dx, AbstractZero):
            implicit = _Implicit(config, residual, point, args_tuple)
            residual_cotangent, arg_cotangents = implicit.pull(_padded(project(dx), point))
            if bounded:
                residual_cotangent = _captured(residual_cotangent, "gradient")
            function_cotangent = _function_tangent(objective, fun,
                                                   _captured(residual_cotangent))
        if not isinstance(dfun, AbstractZero):  # envelope theorem: ∂f/∂θ at x*
            _, pullback_f = rrule_via_ad(config, objective, x, *args_tuple)
            cotangents = pullback_f(dfun)
            function_cotangent = accumulate(function_cotangent, _function_tangent(
                objective, fun, cotangents[0]))
            arg_cotangents = tuple(accumulate(a, b)
                                   for a, b in zip(arg_cotangents, cotangents[2:]))
        return _positional(count, function_cotangent, args_at,
                           _args_cotangent(args, arg_cotangents))

    return pullback


def _captured(gradient_cotangent: Any, name: str = "objective") -> Any:
    """The objective's tangent inside the tangent of `_gradient_of`'s closure (or another
    closure's captured ``name``: the gradient inside `_on_bounds`')."""
    gradient_cotangent = unthunk(gradient_cotangent)
    if isinstance(gradient_cotangent, AbstractZero):
        return gradient_cotangent
    return getattr(gradient_cotangent, name)


def _residual(config: RuleConfig, name: str, gradient: Callable, x: Any, args: tuple,
              options: dict) -> tuple:
    """``(F, z, wrapped)``: the residual ``F(z, *args)`` whose zero ``z`` is: ``x`` itself
    for ``F = ∇_x f``, or for ``minimize`` with bounds active at ``x`` `_on_bounds`', or, with
    constraints active there, ``x`` and the multipliers for the KKT conditions' (`_kkt`);
    ``wrapped`` where ``F`` captures the gradient. ``least_squares``' and ``curve_fit``'s
    active bounds are `_on_bounds`' too; the scalar minimizers' (which stop within tolerances
    of a bound) are refused (`_check_inactive`)."""
    if name == "minimize" and _constraint_list(options.get("constraints")):
        found = _kkt(config, gradient, x, args, options)
        if found is not None:
            return (*found, True)
        return gradient, x, False
    if name in ("minimize", "least_squares", "curve_fit"):
        found = _active_bounds(name, gradient, x, args, options)
        if found is not None:
            return _on_bounds(gradient, *found), x, True
        return gradient, x, False
    _check_inactive(name, x, options, args)
    return gradient, x, False


def _padded(dx: Any, point: Any) -> Any:
    """The cotangent of the unknown ``point`` from that of ``x``, its leading part (the KKT
    system's multipliers get none)."""
    if np.size(point) == np.size(dx):
        return dx
    return np.concatenate([np.reshape(dx, -1), np.zeros(np.size(point) - np.size(dx))])


def _constraint_list(constraints: Any) -> list:
    return [constraints] if isinstance(constraints, dict) else list(constraints or ())


def _kkt(config: RuleConfig, gradient: Callable, x: Any, args: tuple, options: dict
         ) -> tuple | None:
    """``(F, z)`` for ``minimize``'s constraints (dicts, ``c(x) = 0`` or ``c(x) >= 0``) and
    bounds active at ``x``, ``None`` if none is: ``z = (x, λ)`` and ``F(z) = (∇f(x) -
    J(x)^T λ, c_A(x))``, the KKT conditions on the active constraints ``c_A`` (which do not
    depend on the differentiated values), their multipliers ``λ`` by least squares at ``x``.
    Raises, naming minimize, where those conditions do not hold to the solver's accuracy, the
    active constraints are dependent, or an active inequality's multiplier is not positive
    (weakly active: no unique derivative)."""
    pieces = []
    for constraint in _constraint_list(options.get("constraints")):
        if not isinstance(constraint, dict) or constraint.get("type") not in ("eq", "ineq"):
            raise NotImplementedError(
                f"scipy.optimize.minimize: constraint {constraint!r} is not differentiable "
                f"(constraints are followed as dicts {{'type': 'eq' or 'ineq', 'fun': ...}}). "
                f"Write it as one.")
        function, constants = constraint["fun"], tuple(constraint.get("args", ()))
        value = np.reshape(np.asarray(function(x, *constants), float), -1)
        equality = constraint["type"] == "eq"
        active = np.ones(value.size, bool) if equality else \
            value <= 1e-6 * (1.0 + np.abs(value))
        if np.any(active):
            pieces.append((lambda point, f=function, a=constants: f(point, *a), active, equality))
    found = _at_bounds(x, options)
    if found is not None and np.any(found[0] | found[1]):
        at_lower, at_upper, lower, upper = found
        pieces.append((lambda point: np.concatenate([np.reshape(point - lower, -1),
                                                     np.reshape(upper - point, -1)]),
                       np.concatenate([np.reshape(at_lower, -1), np.reshape(at_upper, -1)]),
                       False))
    if not pieces:
        return None

    def active_values(point: Any) -> Any:
        return np.concatenate([np.reshape(f(point), -1)[mask] for f, mask, _ in pieces])

    n, shape = int(np.size(x)), np.shape(x)
    equality = np.concatenate([np.full(int(np.sum(mask)), eq) for _, mask, eq in pieces])
    m = equality.size
    _, pullback = rrule_via_ad(config, active_values, x)
    jacobian = np.stack([_dense(pullback(_unit(i, (m,)))[1], n) for i in range(m)])
    slope = np.reshape(np.asarray(gradient(x, *args), float), -1)
    if np.linalg.matrix_rank(jacobian) < m:
        raise NotImplementedError(
            f"scipy.optimize.minimize: {m} constraints active at the solution are dependent "
            f"(their Jacobian has rank {np.linalg.matrix_rank(jacobian)}): the multipliers, "
            f"and the derivative, are not unique.")
    multipliers = np.linalg.lstsq(jacobian.T, slope, rcond=None)[0]
    scale = 1.0 + np.max(np.abs(slope))
    if np.max(np.abs(slope - jacobian.T @ multipliers)) > 1e-5 * scale:
        raise NotImplementedError(
            "scipy.optimize.minimize: the KKT conditions do not hold at the solution to 1e-5 "
            "(the gradient is not a combination of the active constraints' gradients): "
            "solve more tightly (tol=...), or check that it converged.")
    weak = ~equality & (multipliers <= 1e-6 * scale)  # (a solver's accuracy, about 1e-8)
    if np.any(weak):
        raise NotImplementedError(
            f"scipy.optimize.minimize: inequality constraints or bounds active at the solution "
            f"with multipliers {multipliers[weak].tolist()} (not positive: weakly active), "
            f"where the solution has no unique derivative.")
    constraint_gradient = _gradient_of(config, lambda point, weights: weights @ active_values(
        point))

    def kkt(z: Any, *arguments: Any) -> Any:
        point = np.reshape(z[:n], shape)
        stationary = gradient(point, *arguments) - constraint_gradient(point, z[n:])
        return np.concatenate([np.reshape(stationary, -1), active_values(point)])

    return kkt, np.concatenate([np.reshape(x, -1), multipliers])


def _minimize_push(config: RuleConfig, tangents: tuple, fun: Callable, x: Any, args: Any,
                   options: dict, converged: tuple, args_at: int = 3,
                   name: str = "minimize") -> tuple:
    """``(ẋ*, ḟ(x*))`` for the tangents of ``fun`` and ``args`` (argument ``args_at``)."""
    fun_tangent, args_tangent = _given_tangents(tangents, args_at)
    objective, gradient = _minimize_setup(config, fun, options)
    args_tuple = _as_args(args)
    arg_tangents = _arg_tangents(args, args_tangent)
    objective_tangent = _wrapper_tangent(objective, fun, fun_tangent)
    if isinstance(objective_tangent, AbstractZero) and all(
            isinstance(unthunk(t), AbstractZero) for t in arg_tangents):
        return ZeroTangent(), ZeroTangent()
    _check_converged(name, *converged)
    residual, point, bounded = _residual(config, name, gradient, x, args_tuple, options)
    residual_tangent = ZeroTangent() if isinstance(objective_tangent, AbstractZero) else \
        Tangent(type(gradient), {"objective": objective_tangent})
    if bounded and not isinstance(residual_tangent, AbstractZero):
        residual_tangent = Tangent(type(residual), {"gradient": residual_tangent})
    dz = _Implicit(config, residual, point, args_tuple).push(residual_tangent, arg_tangents)
    dx = dz if point is x else np.reshape(dz[:np.size(x)], np.shape(x))
    # envelope theorem: ḟ(x*) = ∂f/∂θ θ̇, from one VJP of f
    _, pullback_f = rrule_via_ad(config, objective, x, *args_tuple)
    tangents = (objective_tangent, ZeroTangent(), *arg_tangents)
    dfun = sum((_inner(c, t) for c, t in zip(pullback_f(1.0), tangents)), np.float64(0.0))
    return dx, dfun


@rrule.register(_MINIMIZE, config=True)
def _minimize_rule(config: RuleConfig, fun: Callable, x0: Any, *rest: Any, **options: Any):
    args, options = _bind(_MINIMIZE_OPTIONS, rest, options)
    result = _minimize_call(fun, x0, args, options)
    pullback_x = _minimize_pullback(config, fun, result.x, args, options, 3 + len(rest),
                                    (result.success, result.message))

    def minimize_pullback(dresult: Any) -> tuple:
        fields = _only_fields("minimize", dresult, ("x", "fun"), ("jac",))
        return pullback_x(fields["x"], fields["fun"])

    return result, minimize_pullback


@frule.register(_MINIMIZE, config=True)
def _minimize_frule(config: RuleConfig, tangents: tuple, fun: Callable, x0: Any,
                    *rest: Any, **options: Any):
    args, options = _bind(_MINIMIZE_OPTIONS, rest, options)
    result = _minimize_call(fun, x0, args, options)
    dx, dfun = _minimize_push(config, tangents, fun, result.x, args, options,
                              (result.success, result.message))
    return result, Tangent(type(result), {"x": dx, "fun": dfun})  # .jac: zero




# --- a minimizer found elsewhere ----------------------------------------------------------------

@recorded_whole
def minimizer_at(fun: Callable, x: Any, *args: Any, name: str = "minimizer_at",
                 step_within: float | None = None) -> Any:
    """``x``, a minimizer of ``fun(x, *args)`` that another solver found (a library's own
    optimizer: ``scipy.stats``' fits): returned as it is, with the implicit derivatives in
    ``args`` and in what ``fun`` captures, as `scipy.optimize.minimize`'s rule gives them
    (``x`` itself gets none). The formula holds at a minimum where the gradient is zero: the
    derivative is as accurate as the solver that found ``x``. With ``step_within``, the
    derivatives first check that ``x`` is a strict minimum (a positive definite Hessian) from
    which a Newton step moves no component by more than ``step_within`` times the largest
    ``|x|`` (or 1, if larger), and raise naming ``name`` if not.

    >>> import numpy as np, chainrules
    >>> def mean(data):   # the minimizer of sum((x - data)^2), found by hand
    ...     return minimizer_at(lambda x, d: np.sum((x - d) ** 2), np.array([2.0]), data)[0]
    >>> chainrules.grad(mean)(np.array([1.0, 3.0]))
    array([0.5, 0.5])
    """
    return x


class _Minimum:
    """The implicit derivatives of the minimizer ``x`` of ``fun(·, *args)``, checked first
    (`minimizer_at`'s ``step_within``)."""

    def __init__(self, config: RuleConfig, fun: Callable, x: Any, args: tuple, name: str,
                 step_within: float | None):
        self.gradient = _gradient_of(config, fun)
        self.implicit = _Implicit(config, self.gradient, x, args)
        if step_within is not None:
            self._check(x, args, name, step_within)

    def _check(self, x: Any, args: tuple, name: str, step_within: float) -> None:
        hessian = self.implicit.jacobian
        hessian = (hessian + np.transpose(hessian)) / 2
        eigenvalues = np.linalg.eigvalsh(hessian)
        if not np.all(eigenvalues > 0):
            raise ValueError(
                f"{name}: the estimate {np.round(np.ravel(x), 6).tolist()} is not a strict "
                f"minimum (the Hessian there has eigenvalues "
                f"{np.round(eigenvalues, 6).tolist()}): a parameter that the data do not "
                f"determine, or an optimum on the edge of the parameter space or of the "
                f"support, where the implicit derivative does not hold. Fix that parameter "
                f"(as a keyword of the fit) or reparameterise.")
        g = np.reshape(self.gradient(x, *args), (self.implicit.n,))
        step = np.max(np.abs(np.linalg.solve(hessian, g)))
        allowed = step_within * max(1.0, np.max(np.abs(np.ravel(x))))
        if step > allowed:
            raise ValueError(
                f"{name}: the estimate {np.round(np.ravel(x), 6).tolist()} is not a "
                f"stationary point (a Newton step from it moves a component by "
                f"{float(step):.3g}; the implicit derivative needs at most {allowed:.3g}): the "
                f"optimizer stopped early, or the optimum is at infinity (a parameter "
                f"growing without bound) or on the edge of the support. Pass a more accurate "
                f"optimizer, or fix the parameter that runs away.")


def _minimizer_at(fun: Callable, x: Any, args: tuple, name: str,
                  step_within: float | None) -> Any:
    """`minimizer_at` through this module, where an engine routes it while a trace runs:
    inside an outer trace (a rule differentiated again) ``x`` then depends on ``args`` there
    as the minimizer does, so that the derivatives of the pullback see it move."""
    return sys.modules[__name__].minimizer_at(fun, x, *args, name=name,
                                              step_within=step_within)


@rrule.register(minimizer_at, config=True)
def _minimizer_at_rule(config: RuleConfig, fun: Callable, x: Any, *args: Any,
                       name: str = "minimizer_at", step_within: float | None = None):
    x = _minimizer_at(fun, x, args, name, step_within)
    project = ProjectTo(x)

    def minimizer_at_pullback(dx: Any) -> tuple:
        dx = unthunk(dx)
        if isinstance(dx, AbstractZero):
            return (NoTangent(),) * (3 + len(args))
        minimum = _Minimum(config, fun, x, args, name, step_within)
        gradient_cotangent, arg_cotangents = minimum.implicit.pull(project(dx))
        return (NoTangent(), _captured(gradient_cotangent), NoTangent(), *arg_cotangents)

    return x, minimizer_at_pullback


@frule.register(minimizer_at, config=True)
def _minimizer_at_frule(config: RuleConfig, tangents: tuple, fun: Callable, x: Any,
                        *args: Any, name: str = "minimizer_at",
                        step_within: float | None = None):
    given = [unthunk(t) for t in tangents] + [ZeroTangent()] * (3 + len(args) - len(tangents))
    fun_tangent, arg_tangents = given[1], tuple(given[3:])
    x = _minimizer_at(fun, x, args, name, step_within)
    if isinstance(fun_tangent, AbstractZero) and all(
            isinstance(t, AbstractZero) for t in arg_tangents):
        return x, ZeroTangent()
    minimum = _Minimum(config, fun, x, args, name, step_within)
    gradient_tangent = ZeroTangent() if isinstance(fun_tangent, AbstractZero) else \
        Tangent(type(minimum.gradient), {"objective": fun_tangent})
    return x, minimum.implicit.push(gradient_tangent, arg_tangents)
