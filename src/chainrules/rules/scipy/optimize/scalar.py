"""Rules for SciPy's scalar solvers: the roots of ``f(x) = 0`` that ``brentq``, ``brenth``,
``ridder``, ``bisect``, ``toms748``, ``root_scalar`` and ``newton`` find (``newton`` from an
array ``x0`` too: elementwise roots of a vectorized ``f``), and the minimizers of a function
of one variable that ``minimize_scalar``, ``golden``, ``brent`` and ``fminbound`` find.

Their iterations are not differentiated: a bracketing step depends on the function only
through comparisons (traced through, golden-section search gives a zero gradient at every
point, and the C root finders cannot run on traced values at all). The solution's derivative
comes from the implicit function theorem at it, by the machinery of ``root`` and ``minimize``
(`chainrules.rules.scipy.optimize.implicit`), with ``F = f`` for a root and ``F = ∂f/∂x``
for a minimum:

    dx*/dθ = -(∂F/∂θ) / (∂F/∂x)

and, for a minimizer's value, the envelope theorem ``d f(x*, θ)/dθ = ∂f/∂θ``. The parameters
``θ`` are what ``f`` captures (a closure over traced values, a callable object's attributes)
or receives in ``args``.

Decisions:
- The bracket, bounds, starting points and options get no cotangent: the solution does not
  depend on them (where it is unique in the bracket and the solver converges).
- The solver runs with ``full_output=True`` (its output is given back as the caller asked for
  it), so that a root solve that did not converge (``disp=False``) raises when differentiated;
  a minimizer reporting a failure (``fminbound``'s evaluation limit) warns, as ``minimize``.
- ``fminbound`` and ``minimize_scalar`` with ``bounds`` are refused by name when the minimum
  is within three tolerances (``xtol``, ``xatol``) of a bound: there it may be the bound
  itself, where ``∂f/∂x`` is not zero and the formula does not hold.
- ``root_scalar``'s and ``newton``'s ``fprime`` and ``fprime2`` (functions, or ``True`` when
  ``f`` returns its derivatives too) serve the solver only; the derivatives of the solution come from the AD
  system running the rule.
- Differentiable outputs: the root (``x``, ``RootResults.root``), the minimizer and the
  minimum (``x``/``.x``, ``fval``/``.fun``); counts, flags and messages are constants.

>>> import numpy as np, scipy.optimize, chainrules
>>> def cube_root(t):
...     return scipy.optimize.brentq(lambda x: x ** 3 - t, 0.0, 10.0, xtol=1e-14)
>>> round(float(chainrules.grad(cube_root)(8.0)), 9)   # x* = t^(1/3): dx*/dt = 1/12
0.083333333
"""

from __future__ import annotations

import numbers
from typing import Any, Callable

import numpy as np
import scipy.optimize

from ....core.accumulate import accumulate
from ....core.config import RuleConfig
from ....core.registry import frule, rrule
from ....core.tangents import AbstractZero, Tangent, ZeroTangent
from ....core.thunks import unthunk
from ...define import _output_cotangents, _output_tangent
from .implicit import (_minimize_pullback, _minimize_push, _only_fields, _root_pullback,
                       _root_push)

__all__: list = []

_BRACKETING = ("a", "b", "args", "xtol", "rtol", "maxiter", "full_output", "disp")

# Each solver's positional parameters after the function, as SciPy names them.
ROOT_FINDERS = {
    "brentq": _BRACKETING, "brenth": _BRACKETING, "ridder": _BRACKETING,
    "bisect": _BRACKETING,
    "toms748": ("a", "b", "args", "k", "xtol", "rtol", "maxiter", "full_output", "disp"),
    "root_scalar": ("args", "method", "bracket", "fprime", "fprime2", "x0", "x1", "xtol",
                    "rtol", "maxiter", "options"),
    "newton": ("x0", "fprime", "args", "tol", "maxiter", "fprime2", "x1", "rtol",
               "full_output", "disp"),
}
MINIMIZERS = {
    "minimize_scalar": ("bracket", "bounds", "args", "method", "tol", "options"),
    "golden": ("args", "brack", "tol", "full_output", "maxiter"),
    "brent": ("args", "brack", "tol", "full_output", "maxiter"),
    "fminbound": ("x1", "x2", "args", "xtol", "maxfun", "full_output", "disp"),
}
_RESULT_OBJECTS = ("root_scalar", "minimize_scalar")  # return a result object, not a value


def _real(x: Any) -> Any:
    """A solution that the solver returned as an integer (a bracket's point given as one,
    ``brack=(-2, 0, 2)``, that is the minimum: Python's int from ``brent``, NumPy's int64
    from ``minimize_scalar``) as a float: an integer output is a constant to the engine, and
    its derivative would be lost without a word."""
    return float(x) if issubclass(type(x), numbers.Integral) else x


class _Call:
    """One call of a scalar solver: its arguments bound by name, its output as the caller asked
    for it, the solution ``x`` and whether the solver converged."""

    def __init__(self, name: str, function: Callable, rest: tuple, options: dict):
        self.name, self.function = name, function
        parameters = ROOT_FINDERS.get(name) or MINIMIZERS[name]
        self.bound = {**dict(zip(parameters, rest)), **options}
        self.args = self.bound.get("args", ())
        self.count = 2 + len(rest)  # positional arguments, the solver first
        self.args_at = 2 + parameters.index("args")
        solver = getattr(scipy.optimize, name)  # through the module: an outer trace records it
        self.elementwise = False
        if name in _RESULT_OBJECTS:
            self.output = result = solver(function, **self.bound)
            field = "root" if name == "root_scalar" else "x"
            self.x = result[field] = _real(result[field])
            self.converged = (result.converged, result.flag) if name == "root_scalar" else \
                (result.success, result.message)
            return
        full = solver(function, **{**self.bound, "full_output": True})
        self.x = _real(full[0])
        self.elementwise = np.ndim(self.x) > 0  # newton from an array x0: (x, converged, zero_der)
        if self.elementwise:
            self.output = full if self.bound.get("full_output") else self.x
            failed = int(np.sum(~np.asarray(full[1])))
            self.converged = (failed == 0, f"{failed} of {np.size(full[1])} elements failed")
            return
        full = (self.x, *full[1:])
        self.output = full if self.bound.get("full_output") else self.x
        if name in ROOT_FINDERS:
            self.converged = (full[1].converged, full[1].flag)
        elif name == "fminbound":
            self.converged = (full[2] == 0, "maximum number of function evaluations reached")
        else:
            self.converged = (True, "")

    def residual_takes_first(self) -> Any:
        """``True`` when ``f`` returns its derivatives after its value (root_scalar's
        ``fprime=True``): the residual is its first output."""
        return True if self.bound.get("fprime") is True else None

    def bounds(self) -> dict:
        """The bounds a minimizer kept to, for `_check_inactive`: with a slack of three
        tolerances, since a minimum at a bound is found within the tolerance of it."""
        if self.name == "fminbound":
            lower, upper, tolerance = self.bound["x1"], self.bound["x2"], \
                self.bound.get("xtol", 1e-5)
        elif self.name == "minimize_scalar" and self.bound.get("bounds") is not None:
            (lower, upper), tolerance = self.bound["bounds"], \
                (self.bound.get("options") or {}).get("xatol", 1e-5)
        else:
            return {}
        return {"bounds": scipy.optimize.Bounds(lower, upper), "bounds_slack": 3 * tolerance}

    def split(self, cotangent: Any) -> tuple:
        """``(cotangent of x*, cotangent of f(x*))`` from the output's cotangent."""
        name = self.name
        if name == "root_scalar":
            return _only_fields(name, cotangent, ("root",), ())["root"], ZeroTangent()
        if name == "minimize_scalar":
            fields = _only_fields(name, cotangent, ("x", "fun"), ())
            return fields["x"], fields["fun"]
        if not self.bound.get("full_output"):
            return cotangent, ZeroTangent()
        parts = _output_cotangents(cotangent, self.output)
        if self.elementwise:  # (x, converged, zero_der): flags, no tangents
            return parts[0], ZeroTangent()
        if name in ROOT_FINDERS:  # (x, RootResults): its .root is x too
            root = _only_fields(name, parts[1], ("root",), ())["root"]
            return accumulate(parts[0], root), ZeroTangent()
        return parts[0], parts[1]

    def tangent(self, dx: Any, dfun: Any) -> Any:
        """The output's tangent from those of ``x*`` and ``f(x*)``."""
        if isinstance(dx, AbstractZero) and isinstance(dfun, AbstractZero):
            return ZeroTangent()
        output = self.output
        if self.name == "root_scalar":
            return Tangent(type(output), {"root": dx})
        if self.name == "minimize_scalar":
            return Tangent(type(output), {"x": dx, "fun": dfun})
        if not self.bound.get("full_output"):
            return dx
        if self.elementwise:
            return _output_tangent(output, (dx, ZeroTangent(), ZeroTangent()))
        if self.name in ROOT_FINDERS:
            return _output_tangent(output, (dx, Tangent(type(output[1]), {"root": dx})))
        return _output_tangent(output, (dx, dfun))


def _root_rule(name: str) -> None:
    solver = getattr(scipy.optimize, name)

    @rrule.register(solver, config=True)
    def rule(config: RuleConfig, f: Callable, *rest: Any, **options: Any) -> tuple:
        call = _Call(name, f, rest, options)
        pullback_x = _root_pullback(config, f, call.residual_takes_first(), call.x, call.args,
                                    call.count, call.converged, name, call.args_at)

        def pullback(dy: Any) -> tuple:
            return pullback_x(call.split(dy)[0])

        return call.output, pullback

    @frule.register(solver, config=True)
    def push(config: RuleConfig, tangents: tuple, f: Callable, *rest: Any,
             **options: Any) -> tuple:
        call = _Call(name, f, rest, options)
        dx = _root_push(config, tangents, f, call.residual_takes_first(), call.x, call.args,
                        call.converged, name, call.args_at)
        return call.output, call.tangent(dx, ZeroTangent())


def _minimizer_rule(name: str) -> None:
    solver = getattr(scipy.optimize, name)

    @rrule.register(solver, config=True)
    def rule(config: RuleConfig, f: Callable, *rest: Any, **options: Any) -> tuple:
        call = _Call(name, f, rest, options)
        pullback_x = _minimize_pullback(config, f, call.x, call.args, call.bounds(),
                                        call.count, call.converged, call.args_at, name)

        def pullback(dy: Any) -> tuple:
            return pullback_x(*call.split(unthunk(dy)))

        return call.output, pullback

    @frule.register(solver, config=True)
    def push(config: RuleConfig, tangents: tuple, f: Callable, *rest: Any,
             **options: Any) -> tuple:
        call = _Call(name, f, rest, options)
        dx, dfun = _minimize_push(config, tangents, f, call.x, call.args, call.bounds(),
                                  call.converged, call.args_at, name)
        return call.output, call.tangent(dx, dfun)


for _name in ROOT_FINDERS:
    _root_rule(_name)
for _name in MINIMIZERS:
    _minimizer_rule(_name)
