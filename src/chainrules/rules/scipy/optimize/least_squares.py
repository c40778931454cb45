"""Rules for ``scipy.optimize.least_squares`` and ``curve_fit``: implicit gradients of fits.

A fit is a minimum: ``least_squares(fun, x0, loss=..., f_scale=...)`` minimizes
``cost(x) = f_scale^2 / 2 sum rho((r(x) / f_scale)^2)``, ``r = fun(x, *args)`` and ``rho`` the
``loss`` (``'linear'``: ``z``; ``'soft_l1'``, ``'huber'``, ``'cauchy'``, ``'arctan'``), and
``curve_fit(f, xdata, ydata, sigma=...)`` minimizes ``1/2 sum ((f(xdata, *p) - ydata) /
sigma)^2``. Their solutions are differentiated as ``minimize``'s are
(`chainrules.rules.scipy.optimize.implicit`): by the implicit function theorem on the
gradient of the cost, in what the residuals capture (a closure, ``args``) and, for
``curve_fit``, in ``xdata``, ``ydata`` and a 1-D ``sigma``; never through the solver's
iterations.

Differentiable fields: ``least_squares``'s ``.x``, ``.cost`` (envelope theorem) and ``.fun``
(the residuals at the solution, through ``x`` and directly), with ``.grad`` and
``.optimality`` zero (constant) at an interior minimum; ``curve_fit``'s ``popt``. A cotangent
reaching any other output (``.jac``, ``pcov``) raises. Bounds are accepted when none is active
at the solution; an active one, a callable ``loss``, a 2-D ``sigma`` and ``full_output=True``
are refused by name. ``x0`` and ``p0`` get no tangent.

>>> import numpy as np, scipy.optimize, chainrules
>>> def slope(y):  # the least-squares slope through the origin: sum(t y) / sum(t^2)
...     t = np.array([1.0, 2.0, 3.0])
...     return scipy.optimize.curve_fit(lambda t, a: a * t, t, y, p0=[1.0])[0][0]
>>> np.round(chainrules.grad(slope)(np.array([1.0, 2.0, 2.5])), 6)
array([0.071429, 0.142857, 0.214286])
"""

from __future__ import annotations

from inspect import signature
from typing import Any, Callable

import numpy as np
import scipy.optimize

from ....core.accumulate import accumulate
from ....core.config import RuleConfig, frule_via_ad, rrule_via_ad
from ....core.registry import frule, rrule
from ....core.tangents import AbstractZero, NoTangent, Tangent, ZeroTangent
from ....core.thunks import unthunk
from .implicit import _minimize_pullback, _minimize_push, _only_fields

__all__: list = []

_LEAST_SQUARES = scipy.optimize.least_squares
_CURVE_FIT = scipy.optimize.curve_fit


def _loss(name: Any) -> Callable:
    """``rho(z)`` of SciPy's named losses, in operations with rules."""
    if name == "linear":
        return lambda z: z
    if name == "soft_l1":
        return lambda z: 2 * (np.sqrt(1 + z) - 1)
    if name == "huber":
        return lambda z: np.where(z <= 1, z, 2 * np.sqrt(np.maximum(z, 1)) - 1)
    if name == "cauchy":
        return np.log1p
    if name == "arctan":
        return np.arctan
    raise NotImplementedError(
        f"scipy.optimize.least_squares: loss={name!r} is not supported in differentiated "
        f"code (a callable loss: its cost is not known here); use one of 'linear', "
        f"'soft_l1', 'huber', 'cauchy', 'arctan'.")


def _bounds(bounds: Any) -> Any:
    """``bounds`` as `minimize`'s checks read them (a ``Bounds``)."""
    if isinstance(bounds, scipy.optimize.Bounds):
        return bounds
    lower, upper = bounds
    return scipy.optimize.Bounds(lower, upper)


# --- least_squares ------------------------------------------------------------------------------

def _bound(rest: tuple, options: dict) -> dict:
    """Every argument of ``least_squares`` after ``x0``, by name, defaults filled in."""
    names = list(signature(_LEAST_SQUARES).parameters)[2:]
    bound = {**dict(zip(names, rest)), **options}
    for name in names:
        if name not in bound:
            bound[name] = signature(_LEAST_SQUARES).parameters[name].default
    return bound


def _cost(fun: Callable, loss: Any, f_scale: Any, kwargs: dict) -> Callable:
    """The cost as a closure over ``fun`` alone (the loss, scale and keywords are defaults,
    which engines do not differentiate: the closure's tangent is ``fun``'s)."""
    def cost(x: Any, *args: Any, _rho: Callable = _loss(loss), _scale: float = float(f_scale),
             _kwargs: dict = kwargs) -> Any:
        residuals = fun(x, *args, **_kwargs)
        return 0.5 * _scale ** 2 * np.sum(_rho((residuals / _scale) ** 2))

    return cost


def _least_squares_call(fun: Callable, x0: Any, rest: tuple, options: dict) -> Any:
    """The solve, its arguments by name (SciPy's own decorator adds ``workers=``)."""
    names = list(signature(_LEAST_SQUARES).parameters)[2:]
    return getattr(scipy.optimize, "least_squares")(fun, x0, **dict(zip(names, rest)),
                                                    **options)


def _least_squares_setup(fun: Callable, rest: tuple, options: dict) -> tuple:
    """``(cost, args, the options minimize's checks read, where args is among the
    positional arguments)``."""
    bound = _bound(rest, options)
    cost = _cost(fun, bound["loss"], bound["f_scale"], bound["kwargs"] or {})
    names = list(signature(_LEAST_SQUARES).parameters)
    return cost, bound["args"], {"bounds": _bounds(bound["bounds"])}, 1 + names.index("args")


@rrule.register(_LEAST_SQUARES, config=True)
def _least_squares_rule(config: RuleConfig, fun: Callable, x0: Any, *rest: Any, **options: Any):
    cost, args, checked, args_at = _least_squares_setup(fun, rest, options)
    result = _least_squares_call(fun, x0, rest, options)
    count = 3 + len(rest)
    pullback_x = _minimize_pullback(config, cost, result.x, args, checked, count,
                                    (result.success, result.message), args_at=args_at,
                                    name="least_squares")
    args_tuple = args if isinstance(args, tuple) else (args,)

    def least_squares_pullback(dresult: Any) -> tuple:
        fields = _only_fields("least_squares", dresult, ("x", "cost", "fun"),
                              ("grad", "optimality"))
        dx, dfun = unthunk(fields["x"]), unthunk(fields["fun"])
        direct: tuple = ()
        if not isinstance(dfun, AbstractZero):  # the residuals: through x* and directly
            _, pullback_r = rrule_via_ad(config, fun, result.x, *args_tuple)
            direct = pullback_r(dfun)
            dx = accumulate(dx, direct[1]) if not isinstance(dx, AbstractZero) else direct[1]
        cotangents = list(pullback_x(dx, fields["cost"]))
        cotangents[1] = _add_function(cotangents[1], direct[0] if direct else ZeroTangent())
        if direct and args_at < count:
            cotangents[args_at] = _add_args(cotangents[args_at], direct[2:], args)
        return tuple(cotangents)

    return result, least_squares_pullback


def _field(tangent: Any, name: str) -> Any:
    """The tangent of the variable ``name`` a closure captures, from the closure's."""
    tangent = unthunk(tangent)
    if isinstance(tangent, AbstractZero) or name not in tangent:
        return ZeroTangent() if not isinstance(tangent, NoTangent) else tangent
    return tangent[name]


def _add_function(of_cost: Any, of_fun: Any) -> Any:
    """The cotangent of the user's ``fun``: from the cost's (a closure over it) and its own."""
    of_cost, of_fun = _field(of_cost, "fun"), unthunk(of_fun)
    if isinstance(of_cost, AbstractZero):
        return of_cost if isinstance(of_fun, AbstractZero) and isinstance(
            of_cost, NoTangent) else of_fun
    return of_cost if isinstance(of_fun, AbstractZero) else accumulate(of_cost, of_fun)


def _add_args(of_cost: Any, of_fun: tuple, args: Any) -> Any:
    direct = Tangent(tuple, dict(enumerate(of_fun))) if isinstance(args, tuple) else of_fun[0]
    of_cost = unthunk(of_cost)
    return direct if isinstance(of_cost, AbstractZero) else accumulate(of_cost, direct)


@frule.register(_LEAST_SQUARES, config=True)
def _least_squares_frule(config: RuleConfig, tangents: tuple, fun: Callable, x0: Any,
                         *rest: Any, **options: Any):
    cost, args, checked, args_at = _least_squares_setup(fun, rest, options)
    result = _least_squares_call(fun, x0, rest, options)
    fun_tangent = unthunk(tangents[1]) if len(tangents) > 1 else ZeroTangent()
    cost_tangent = ZeroTangent() if isinstance(fun_tangent, AbstractZero) else \
        Tangent(type(cost), {"fun": fun_tangent})
    given = list(tangents) + [ZeroTangent()] * (args_at + 1 - len(tangents))
    given[1] = cost_tangent
    dx, dcost = _minimize_push(config, tuple(given), cost, result.x, args, checked,
                               (result.success, result.message), args_at=args_at,
                               name="least_squares")
    args_tuple = args if isinstance(args, tuple) else (args,)
    args_tangent = unthunk(given[args_at])
    arg_tangents = (ZeroTangent(),) * len(args_tuple) if isinstance(
        args_tangent, AbstractZero) else tuple(args_tangent[i] for i in range(len(
            args_tuple))) if isinstance(args, tuple) else (args_tangent,)
    _, dfun = frule_via_ad(config, (fun_tangent, dx, *arg_tangents), fun, result.x,
                           *args_tuple)
    return result, Tangent(type(result), {"x": dx, "cost": dcost, "fun": dfun})


# --- curve_fit ----------------------------------------------------------------------------------

def _curve_fit_call(f: Callable, xdata: Any, ydata: Any, rest: tuple, options: dict) -> Any:
    return getattr(scipy.optimize, "curve_fit")(f, xdata, ydata, *rest, **options)


def _curve_fit_bound(rest: tuple, options: dict) -> dict:
    names = list(signature(_CURVE_FIT).parameters)[3:]
    return {**dict(zip(names, rest)), **options}


def _squares(f: Callable) -> Callable:
    def squares(p: Any, xdata: Any, ydata: Any, sigma: Any) -> Any:
        residuals = f(xdata, *[p[i] for i in range(np.size(p))]) - ydata
        if sigma is not None:
            residuals = residuals / sigma
        return 0.5 * np.sum(residuals ** 2)

    return squares


def _curve_fit_setup(f: Callable, xdata: Any, ydata: Any, rest: tuple, options: dict) -> tuple:
    bound = _curve_fit_bound(rest, options)
    sigma = bound.get("sigma")
    if sigma is not None and np.ndim(sigma) != 1:
        raise NotImplementedError(
            "scipy.optimize.curve_fit: a 2-D sigma (a covariance) is not supported in "
            "differentiated code; whiten the data (solve with its Cholesky factor) and pass "
            "a 1-D sigma or none.")
    if bound.get("full_output"):
        raise NotImplementedError(
            "scipy.optimize.curve_fit: full_output=True is not supported in differentiated "
            "code (its outputs hold solver internals); call it without.")
    bounds = bound.get("bounds", (-np.inf, np.inf))  # (other keywords are the solver's)
    return _squares(f), sigma, {"bounds": _bounds(bounds)}


@rrule.register(_CURVE_FIT, config=True)
def _curve_fit_rule(config: RuleConfig, f: Callable, xdata: Any, ydata: Any, *rest: Any,
                    **options: Any):
    squares, sigma, checked = _curve_fit_setup(f, xdata, ydata, rest, options)
    popt, pcov = _curve_fit_call(f, xdata, ydata, rest, options)
    # minimize's layout: (solver, objective, x0, args); args = (xdata, ydata, sigma)
    pullback_p = _minimize_pullback(config, squares, popt, (xdata, ydata, sigma), checked, 4,
                                    (True, ""), args_at=3, name="curve_fit")
    sigma_at = 1 + list(signature(_CURVE_FIT).parameters).index("sigma")

    def curve_fit_pullback(dresult: Any) -> tuple:
        dresult = unthunk(dresult)
        if isinstance(dresult, AbstractZero):
            return (NoTangent(),) * (4 + len(rest))
        dpopt, dpcov = dresult[0], unthunk(dresult[1])
        if not isinstance(dpcov, AbstractZero):
            raise NotImplementedError(
                "scipy.optimize.curve_fit: pcov is not differentiable (only popt is); "
                "compute what you need from popt inside the differentiated function.")
        _, function, _, data = pullback_p(dpopt, ZeroTangent())
        function, data = unthunk(function), unthunk(data)
        cotangents = [NoTangent()] * (4 + len(rest))
        cotangents[1] = _field(function, "f")
        if not isinstance(data, AbstractZero):
            cotangents[2], cotangents[3] = data[0], data[1]
            if sigma_at < len(cotangents):
                cotangents[sigma_at] = data[2]
        return tuple(cotangents)

    return (popt, pcov), curve_fit_pullback


@frule.register(_CURVE_FIT, config=True)
def _curve_fit_frule(config: RuleConfig, tangents: tuple, f: Callable, xdata: Any, ydata: Any,
                     *rest: Any, **options: Any):
    squares, sigma, checked = _curve_fit_setup(f, xdata, ydata, rest, options)
    popt, pcov = _curve_fit_call(f, xdata, ydata, rest, options)
    given = [unthunk(t) for t in tangents] + [ZeroTangent()] * (7 - len(tangents))
    sigma_at = 1 + list(signature(_CURVE_FIT).parameters).index("sigma")
    function = given[1]
    objective = ZeroTangent() if isinstance(function, AbstractZero) else \
        Tangent(type(squares), {"f": function})
    data = Tangent(tuple, {0: given[2], 1: given[3], 2: given[sigma_at]})
    dpopt, _ = _minimize_push(config, (NoTangent(), objective, ZeroTangent(), data), squares,
                              popt, (xdata, ydata, sigma), checked, (True, ""), args_at=3,
                              name="curve_fit")
    return (popt, pcov), (dpopt, ZeroTangent())
