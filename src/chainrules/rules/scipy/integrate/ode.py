"""Rules for ``scipy.integrate.odeint`` and ``scipy.integrate.solve_ivp`` (registered when SciPy
is installed): gradients with respect to the initial state, the parameters passed in ``args``,
the values the right-hand side closes over (the function's own tangent) and the output times.

Reverse mode is the adjoint method. For outputs ``Y_k = y(t_k)`` with cotangents ``G_k``, the
adjoint ``a(t) = dL/dy(t)`` obeys ``a' = -a^H df/dy`` and jumps by ``G_k`` at each output time;
the parameter gradient is ``int a^H df/dp dt``. The pullback solves the augmented system
``[y, a, g]`` backward from each output time to the previous one with the same SciPy solver
(same method, ``rtol``, ``atol``), restarting ``y`` from the stored output ``Y_k``; each
evaluation of its right-hand side is one ``rrule_via_ad(config, f, y, t, *args)`` whose pullback
is called at once and dropped, so memory grows with the number of output times, not with the
number of solver steps. Output times: ``dL/dt_k = Re <G_k, f(Y_k, t_k)>`` and, for the start
time, ``dL/dt_0 = -Re <a(t_0), f(y_0, t_0)>``.

Forward mode solves the tangent ODE ``s' = df/dy s + df/dp dp`` jointly with the state
(``frule_via_ad`` per evaluation), from ``s(t_0) = dy_0 - f(y_0, t_0) dt_0``, and adds
``f(Y_k, t_k) dt_k`` at each output time.

``solve_ivp`` returns an ``OdeResult``: ``sol.y`` is differentiable, and ``sol.t`` when
``t_eval`` is given (it is ``t_eval``); without ``t_eval``, ``sol.t`` holds the solver's own
steps, which are treated as fixed times except for the two ends, which are ``t_span``.
``dense_output=True``, ``events`` and odeint's ``full_output`` are refused by name.

Higher orders: the rules call the solvers through ``scipy.integrate`` (where a trace puts its
routing wrappers) and build their results without writes, so inside an outer trace every solve
they make (the primal one, each adjoint piece, the tangent solve) is recorded there as a call
of the routed solver on a closure: ``grad`` of ``grad``, ``hessian`` and ``jvp`` of ``grad``
work, each level solving its own adjoint or tangent ODE.

>>> import numpy as np, scipy.integrate
>>> import chainrules as cr
>>> decay = lambda y, t, k: -k * y
>>> g = cr.grad(lambda k: scipy.integrate.odeint(decay, np.array([1.0]), [0.0, 1.0],
...                                               args=(k,), rtol=1e-10, atol=1e-12)[-1, 0])
>>> bool(np.isclose(g(0.5), -np.exp(-0.5), rtol=1e-6))   # d/dk exp(-k)
True
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable

import numpy as np
import scipy.integrate as sint
from scipy.integrate._odepack_py import ODEintWarning  # public in scipy.integrate from 1.12

from ....core.accumulate import accumulate
from ....core.config import RuleConfig, frule_via_ad, rrule_via_ad
from ....core.projection import ProjectTo
from ....core.registry import frule, rrule
from ....core.structure import leaves, tangent_at, tangent_from_paths
from ....core.tangents import AbstractZero, NoTangent, Tangent, ZeroTangent
from ....core.thunks import unthunk
from ...numpy.indexing import _is_traced_array

__all__: list[str] = []

# The functions themselves, taken at import: the rules are registered for these.
odeint, solve_ivp = sint.odeint, sint.solve_ivp
_ODEINT = inspect.signature(odeint)
_SOLVE_IVP = inspect.signature(solve_ivp)


def _is_parameter(value: Any) -> bool:
    """A differentiable leaf: a float or complex number or array."""
    if issubclass(type(value), (bool, np.bool_)):
        return False
    if issubclass(type(value), (float, complex)):
        return True
    return (issubclass(type(value), (np.ndarray, np.generic)) or _is_traced_array(value)) and \
        value.dtype.kind in "fc"


def _computed(value: Any) -> Any:
    """``value * 1.0`` (exact): an array that the right-hand side creates while a trace is
    active may be an engine's traced constant, which arithmetic turns into a plain array
    (joined with others by np.concatenate, it would be recorded); values that depend on the
    outer trace's inputs (order 2) stay traced."""
    return value * 1.0


def _dense(cotangent: Any, shape: tuple, dtype: Any) -> np.ndarray:
    """A cotangent (zero, thunk, sparse, array) as a dense array of ``shape``."""
    cotangent = unthunk(cotangent)
    if type(cotangent) is np.ndarray and cotangent.shape == shape and (
            cotangent.dtype == dtype or np.result_type(dtype, cotangent.dtype) == cotangent.dtype):
        return cotangent  # already dense (callers compute new arrays from it, never write it)
    if isinstance(cotangent, AbstractZero):
        return np.zeros(shape, dtype)
    if isinstance(cotangent, (list, tuple, Tangent)):  # a list output's tangent
        return np.asarray([_dense(tangent_at(cotangent, (i,)), (), dtype)
                           for i in range(int(np.prod(shape)))]).reshape(shape)
    dense = accumulate(np.zeros(shape, np.result_type(dtype, _dtype_of(cotangent))),
                       cotangent, owned=True)
    return np.reshape(dense, shape)


def _in_output_space(cotangent: np.ndarray, output: np.ndarray) -> np.ndarray:
    """A complex cotangent of a real output: its real part (the output's tangent space)."""
    return np.real(cotangent) if output.dtype.kind == "f" else cotangent


def _dtype_of(value: Any) -> Any:
    dtype = getattr(value, "dtype", None)
    return np.asarray(value).dtype if dtype is None else dtype


def _flat(value: Any, like: Any, dtype: Any) -> np.ndarray:
    """The tangent ``value`` of a right-hand side's output ``like`` (an array or a list of
    numbers or arrays) as one flat array."""
    value = unthunk(value)
    if type(value) in (list, tuple) and value is like and _plain_numbers(value):
        # a right-hand side's own output, a list of numbers (the common case: one array, at
        # the cost of one call)
        return np.fromiter(value, np.result_type(dtype, *{type(part) for part in value}),
                           len(value))
    if isinstance(like, (list, tuple)) and not isinstance(value, (list, tuple, Tangent,
                                                                  AbstractZero)):
        return np.ravel(_dense(value, np.shape(value), dtype))  # stacked (a pushforward's)
    if isinstance(like, (list, tuple)):
        parts = [_flat(tangent_at(value, (i,)), part, dtype) for i, part in enumerate(like)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype)
    return np.ravel(_dense(value, np.shape(like), dtype))


_INEXACT_NUMBERS = frozenset({float, complex, np.float64, np.float32, np.float16,
                              np.complex128, np.complex64})


def _plain_numbers(values: Any) -> bool:
    """Whether ``values`` (a list or tuple) holds only plain float and complex numbers."""
    return all(type(value) in _INEXACT_NUMBERS for value in values)


def _shaped_like(flat: np.ndarray, like: Any) -> Any:
    """A cotangent of the output ``like`` (an array, or a list of numbers or arrays) from the
    flat array ``flat``."""
    if not isinstance(like, (list, tuple)):
        return np.reshape(flat, np.shape(like))
    if type(flat) is np.ndarray and type(like) in (list, tuple) and len(flat) == len(like) \
            and _plain_numbers(like):
        return type(like)(flat)  # NumPy numbers of its dtype
    parts, start = [], 0
    for part in like:
        size = int(np.size(part))
        parts.append(np.reshape(flat[start:start + size], np.shape(part)))
        start += size
    return type(like)(parts) if type(like) in (list, tuple) else parts


class _RightHandSide:
    """The right-hand side ``f`` of one call, called as ``f(y, t, *args)`` (``f(t, y,
    *args)`` when ``tfirst``), with the float leaves of ``f`` (what a closure captures) and of
    ``args`` (when they are differentiated) as one flat parameter vector."""

    def __init__(self, config: RuleConfig, func: Callable, args: tuple, tfirst: bool,
                 vectorized: bool = False, differentiate_args: bool = True):
        self.config, self.func, self.args = config, func, args
        self.tfirst, self.vectorized = tfirst, vectorized
        found = list(leaves((func, args if differentiate_args else ()), _is_parameter))
        self.paths = [path for path, _ in found]
        self.values = [value for _, value in found]
        self.shapes = [np.shape(value) for value in self.values]
        self.sizes = [int(np.size(value)) for value in self.values]
        self.size = sum(self.sizes)
        self.dtype = np.result_type(float, *[_dtype_of(v) for v in self.values])

    def _arguments(self, y: np.ndarray, t: float) -> tuple:
        y = y[:, None] if self.vectorized else y
        return (t, y) if self.tfirst else (y, t)

    def value(self, y: np.ndarray, t: float) -> np.ndarray:
        return _computed(np.ravel(np.asarray(self.func(*self._arguments(y, t), *self.args))))

    def vjp(self, y: np.ndarray, t: float, a: np.ndarray) -> tuple:
        """``(f(y, t), a^H df/dy, a^H df/dp)``, flat."""
        value, pullback = rrule_via_ad(self.config, self.func, *self._arguments(y, t),
                                       *self.args)
        cotangents = pullback(_shaped_like(a, value))
        dy = _dense(cotangents[2 if self.tfirst else 1], y.shape, a.dtype)
        return (_computed(_flat(value, value, a.dtype)), dy.ravel(),
                self.flat_tangent(cotangents[0], cotangents[3:]))

    def jvp(self, y: np.ndarray, t: float, s: np.ndarray, dp: np.ndarray) -> np.ndarray:
        """``df/dy s + df/dp dp``, flat (``dp`` flat, as `flat_tangent` makes it: captured as
        an array, an outer trace finds it at order 2)."""
        s_in = s[:, None] if self.vectorized else s
        y_in = y[:, None] if self.vectorized else y
        tangents = (ZeroTangent(), s_in) if self.tfirst else (s_in, ZeroTangent())
        function_tangent, args_tangent = self.tangents(dp, self.func, self.args)
        arg_tangents = [tangent_at(args_tangent, (i,)) for i in range(len(self.args))]
        value, tangent = frule_via_ad(self.config, (function_tangent, *tangents,
                                                    *arg_tangents), self.func,
                                      *((t, y_in) if self.tfirst else (y_in, t)), *self.args)
        return _flat(tangent, value, np.result_type(s.dtype, self.dtype))

    def flat_tangent(self, function_tangent: Any, arg_tangents: list) -> np.ndarray:
        """The tangents of the function and of ``args`` as one flat parameter vector."""
        structure = (function_tangent, tuple(arg_tangents))
        parts = [_dense(tangent_at(structure, path), shape, self.dtype).ravel()
                 for path, shape in zip(self.paths, self.shapes)]
        return np.concatenate(parts) if parts else np.zeros(0, self.dtype)

    def tangents(self, flat: np.ndarray, func: Any, args: Any) -> tuple:
        """The function's tangent and the ``args`` tangent, from a flat parameter gradient:
        each part reshaped and projected onto its leaf."""
        parts: dict = {0: {}, 1: {}}
        start = 0
        for path, leaf, size in zip(self.paths, self.values, self.sizes):
            value = np.reshape(flat[start:start + size], np.shape(leaf))
            parts[path[0]][path[1:]] = ProjectTo(leaf)(value if np.ndim(leaf) else value[()])
            start += size
        function_tangent = tangent_from_paths(func, parts[0]) if any(
            path[0] == 0 for path in self.paths) else NoTangent()  # nothing to perturb
        if isinstance(args, tuple):
            args_tangent = tangent_from_paths(args, parts[1])
        else:  # a single argument, not in a tuple
            args_tangent = parts[1].get((0,), ZeroTangent())
        return function_tangent, args_tangent


def _args_tuple(args: Any) -> tuple:
    if args is None:
        return ()
    return args if isinstance(args, tuple) else (args,)


def _augmented_atol(atol: Any, n: int, extra: int) -> Any:
    """``atol`` for ``[y, a, g]``: a per-component ``atol`` repeated for ``a``, its smallest
    value for the parameter integrals ``g``."""
    if atol is None or np.ndim(atol) == 0:
        return atol
    atol = np.ravel(atol)
    return np.concatenate([atol, atol, np.full(extra, atol.min())])


def _adjoint(rhs: _RightHandSide, segment: Callable, t0: float, y0: np.ndarray,
             times: np.ndarray, Y: np.ndarray, G: np.ndarray) -> tuple:
    """The backward pass: ``(dL/dy0, dL/dp, dL/dtimes, dL/dt0)`` for outputs ``Y[k] =
    y(times[k])`` with cotangents ``G[k]``; ``segment(rhs, state, start, end)`` solves
    ``state' = rhs(state, t)`` from ``start`` to ``end`` with the caller's solver."""
    n = Y.shape[1]
    dtype = np.result_type(Y.dtype, G.dtype, rhs.dtype)
    a = np.zeros(n, dtype)
    g = np.zeros(rhs.size, dtype)
    dtimes: list = [0.0] * len(times)  # a list, stacked at the end: no writes (order 2)

    def augmented(state: np.ndarray, t: float) -> np.ndarray:
        value, dy, dp = rhs.vjp(state[:n], t, state[n:2 * n])
        return np.concatenate([value, -dy, -dp])

    for k in range(len(times) - 1, -1, -1):
        if G[k].any():
            a = a + G[k]
            dtimes[k] = np.real(np.vdot(G[k], rhs.value(Y[k], times[k])))
        end = times[k - 1] if k else t0
        if a.any() and not _too_short(times[k], end):
            state = segment(augmented, np.concatenate([Y[k].astype(dtype), a, g]), times[k],
                            end)
            a, g = state[n:2 * n], state[2 * n:]
    dt0 = -np.real(np.vdot(a, rhs.value(y0, t0))) if a.any() else 0.0
    return a, g, np.stack([np.asarray(d, float) if issubclass(type(d), float) else d
                           for d in dtimes]), dt0


def _too_short(start: float, end: float) -> bool:
    """Whether the adjoint does not change over ``[end, start]`` to rounding: an empty
    interval, or one of a few units in the last place of its ends (output times such as
    ``0.2`` and ``0.20000000000000004``), which LSODA (odeint's, solve_ivp's) refuses to
    start on (shorter than ``2 eps max(|start|, |end|)``); the change over it,
    ``|a df/dy| dt``, is below the rounding of the times themselves."""
    return abs(end - start) <= 4 * _EPS * max(abs(start), abs(end))


_EPS = np.finfo(float).eps


def _project(x: Any, value: Any) -> Any:
    """``value`` (an array) as the cotangent of ``x`` (an array, a number, or a list or tuple
    of numbers such as ``t_span``)."""
    if isinstance(x, (list, tuple)):
        return tangent_from_paths(x, {(i,): ProjectTo(x[i])(value[i]) for i in range(len(x))})
    return ProjectTo(x)(np.reshape(value, np.shape(x)) if np.ndim(x) else value.reshape(())[()])


def _unsupported(name: str, option: str, why: str) -> NotImplementedError:
    return NotImplementedError(
        f"{name}: {option} is not differentiable yet ({why}). Call it without {option} in "
        f"differentiated code.")


# --- odeint -------------------------------------------------------------------------------------

def _odeint_call(func: Callable, y0: Any, t: Any, rest: tuple, kwargs: dict) -> dict:
    bound = _ODEINT.bind(func, y0, t, *rest, **kwargs)
    bound.apply_defaults()
    options = dict(bound.arguments)
    if options["full_output"]:
        raise _unsupported("scipy.integrate.odeint", "full_output=True",
                           "its info dictionary is not an array")
    return options


def _odeint_segment(options: dict, n: int, extra: int) -> Callable:
    """Solves one piece of the augmented system with odeint's own options."""
    keep = {k: options[k] for k in ("rtol", "hmax", "hmin", "mxstep", "mxordn", "mxords")}
    keep["atol"] = _augmented_atol(options["atol"], n, extra)

    def segment(rhs: Callable, state: np.ndarray, start: float, end: float) -> np.ndarray:
        return _odeint_solve(rhs, state, [start, end], keep, "adjoint")[-1]

    return segment


def _odeint_solve(rhs: Callable, state: Any, times: Any, keep: dict, what: str) -> Any:
    """``odeint(rhs, state, times, **keep)`` through the module (inside an outer trace, at
    order 2, the routed odeint records it there), its failure warning raised as an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ODEintWarning)
        try:
            return sint.odeint(rhs, state, times, **keep)
        except ODEintWarning as failure:
            raise RuntimeError(f"scipy.integrate.odeint: the {what} solve failed: "
                               f"{failure}") from None


@rrule.register(odeint, config=True)
def _odeint_rule(config: RuleConfig, func: Callable, y0: Any, t: Any, *rest: Any,
                 **kwargs: Any):
    options = _odeint_call(func, y0, t, rest, kwargs)
    Y = sint.odeint(func, y0, t, *rest, **kwargs)
    args = options["args"]
    rhs = _RightHandSide(config, func, _args_tuple(args), options["tfirst"],
                         differentiate_args=bool(rest))
    times = np.asarray(t, float)
    segment = _odeint_segment(options, Y.shape[1], rhs.size)

    def odeint_pullback(dY: Any) -> tuple:
        dY = unthunk(dY)
        if isinstance(dY, AbstractZero):
            return (NoTangent(),) * (4 + len(rest))
        G = _in_output_space(_dense(dY, Y.shape, Y.dtype), Y)
        dy0, dp, dtimes, dt0 = _adjoint(rhs, segment, times[0], Y[0], times, Y, G)
        dtimes = dtimes + np.concatenate([[1.0], np.zeros(len(dtimes) - 1)]) * dt0
        function_tangent, args_tangent = rhs.tangents(dp, func, args)
        rest_cotangents = [args_tangent] + [NoTangent()] * (len(rest) - 1) if rest else []
        return (NoTangent(), function_tangent, _project(y0, dy0), _project(t, dtimes),
                *rest_cotangents)

    return Y, odeint_pullback


@frule.register(odeint, config=True)
def _odeint_frule(config: RuleConfig, tangents: tuple, func: Callable, y0: Any, t: Any,
                  *rest: Any, **kwargs: Any):
    options = _odeint_call(func, y0, t, rest, kwargs)
    Y = sint.odeint(func, y0, t, *rest, **kwargs)
    given = [unthunk(d) for d in tangents[1:]] + [ZeroTangent()] * (4 + len(rest))
    function_tangent, dy0, dt = given[0], given[1], given[2]
    args = _args_tuple(options["args"])
    args_tangent = given[3] if rest else ZeroTangent()
    if isinstance(options["args"], tuple):
        arg_tangents = [tangent_at(args_tangent, (i,)) for i in range(len(args))]
    else:
        arg_tangents = [args_tangent]
    rhs = _RightHandSide(config, func, args, options["tfirst"])
    dp = rhs.flat_tangent(function_tangent, arg_tangents)
    times = np.asarray(t, float)
    n = Y.shape[1]
    dy0 = np.ravel(_dense(dy0, np.shape(y0), Y.dtype))
    dtimes = np.ravel(_dense(dt, np.shape(t), float))

    def joint(state: np.ndarray, time: float) -> np.ndarray:
        y, s = state[:n], state[n:]
        return np.concatenate([rhs.value(y, time),
                               rhs.jvp(y, time, s, dp)])

    s0 = dy0 - rhs.value(Y[0], times[0]) * dtimes[0]
    keep = {k: options[k] for k in ("rtol", "hmax", "hmin", "mxstep", "mxordn", "mxords")}
    keep["atol"] = options["atol"] if np.ndim(options["atol"]) == 0 else \
        np.tile(np.ravel(options["atol"]), 2)
    out = _odeint_solve(joint, np.concatenate([Y[0], s0]), times, keep, "tangent")
    dY = out[:, n:] + np.stack([rhs.value(Y[k], times[k]) * dtimes[k]
                                for k in range(len(times))])
    return Y, ProjectTo(Y)(dY)


# --- solve_ivp ----------------------------------------------------------------------------------

# solve_ivp's options that the adjoint and tangent solves take as they are; the user's ``jac``
# (and its sparsity, bands) is the state's Jacobian, not the augmented system's.
_IVP_KEPT = ("rtol", "max_step", "min_step")


def _ivp_call(fun: Callable, t_span: Any, y0: Any, rest: tuple, kwargs: dict) -> dict:
    bound = _SOLVE_IVP.bind(fun, t_span, y0, *rest, **kwargs)
    bound.apply_defaults()
    call = dict(bound.arguments)
    if call["dense_output"]:
        raise _unsupported("scipy.integrate.solve_ivp", "dense_output=True",
                           "the interpolant sol.sol is not differentiated; pass t_eval")
    if call["events"] is not None:
        raise _unsupported("scipy.integrate.solve_ivp", "events",
                           "event times depend on the solution through a root find")
    return call


def _ivp_solve(rhs: Callable, t_span: tuple, state: np.ndarray, call: dict, atol: Any,
               t_eval: Any = None, what: str = "adjoint") -> Any:
    options = {k: v for k, v in call["options"].items() if k in _IVP_KEPT}
    if atol is not None:
        options["atol"] = atol
    sol = sint.solve_ivp(lambda time, z: rhs(z, time), t_span, state, method=call["method"],
                         t_eval=t_eval, **options)
    if not sol.success:
        raise RuntimeError(f"scipy.integrate.solve_ivp: the {what} solve over {t_span} "
                           f"failed: {sol.message}")
    return sol


@rrule.register(solve_ivp, config=True)
def _solve_ivp_rule(config: RuleConfig, fun: Callable, t_span: Any, y0: Any, *rest: Any,
                    **kwargs: Any):
    call = _ivp_call(fun, t_span, y0, rest, kwargs)
    sol = sint.solve_ivp(fun, t_span, y0, *rest, **kwargs)
    args = call["args"]
    rhs = _RightHandSide(config, fun, _args_tuple(args), True, call["vectorized"],
                         differentiate_args=len(rest) > 5)
    Y = sol.y.T
    times = np.asarray(sol.t, float)
    t0 = np.asarray(t_span)[0]
    atol = _augmented_atol(call["options"].get("atol"), Y.shape[1], rhs.size)
    given_times = call["t_eval"] is not None

    def segment(augmented: Callable, state: np.ndarray, start: float, end: float) -> Any:
        return _ivp_solve(augmented, (start, end), state, call, atol).y[:, -1]

    def solve_ivp_pullback(dsol: Any) -> tuple:
        dsol = unthunk(dsol)
        none = (NoTangent(),) * (4 + len(rest))
        if isinstance(dsol, AbstractZero):
            return none
        if not sol.success:
            raise RuntimeError(f"scipy.integrate.solve_ivp failed ({sol.message}); its "
                               f"solution has no gradient.")
        G = _in_output_space(_dense(tangent_at(dsol, ("y",)), sol.y.shape, Y.dtype), Y).T
        dT = np.real(_dense(tangent_at(dsol, ("t",)), times.shape, float))
        dy0, dp, dtimes, dt0 = _adjoint(rhs, segment, t0, Y[0] if times[0] == t0 else
                                        np.ravel(np.asarray(y0)), times, Y, G)
        function_tangent, args_tangent = rhs.tangents(dp, fun, args)
        if given_times:
            d_span = np.array([dt0, 0.0])
            t_eval_cotangent = _project(call["t_eval"], dtimes + dT)
        else:  # the solver's steps: fixed, but for the ends, which are t_span
            d_span = np.array([dt0 + dtimes[0] + dT[0], dtimes[-1] + dT[-1]])
            t_eval_cotangent = NoTangent()
        rest_cotangents = [NoTangent()] * len(rest)
        if len(rest) > 1:
            rest_cotangents[1] = t_eval_cotangent
        if len(rest) > 5:
            rest_cotangents[5] = args_tangent
        return (NoTangent(), function_tangent, _project(t_span, d_span), _project(y0, dy0),
                *rest_cotangents)

    return sol, solve_ivp_pullback


@frule.register(solve_ivp, config=True)
def _solve_ivp_frule(config: RuleConfig, tangents: tuple, fun: Callable, t_span: Any, y0: Any,
                     *rest: Any, **kwargs: Any):
    call = _ivp_call(fun, t_span, y0, rest, kwargs)
    sol = sint.solve_ivp(fun, t_span, y0, *rest, **kwargs)
    given = [unthunk(d) for d in tangents[1:]] + [ZeroTangent()] * (9 + len(rest))
    function_tangent, d_span, dy0 = given[0], given[1], given[2]
    d_t_eval, args_tangent = given[4], given[8]
    args = _args_tuple(call["args"])
    arg_tangents = [tangent_at(args_tangent, (i,)) for i in range(len(args))]
    rhs = _RightHandSide(config, fun, args, True, call["vectorized"])
    dp = rhs.flat_tangent(function_tangent, arg_tangents)
    Y = sol.y.T
    n = Y.shape[1]
    times = np.asarray(sol.t, float)
    t0 = np.asarray(t_span)[0]
    span = np.real(_flat(d_span, list(np.asarray(t_span, float)), float)) \
        if isinstance(t_span, (list, tuple)) else np.ravel(_dense(d_span, (2,), float))
    if call["t_eval"] is not None:
        dtimes = np.ravel(_dense(d_t_eval, np.shape(call["t_eval"]), float))
    else:  # the solver's steps: fixed, but for the ends, which are t_span
        dtimes: list = [0.0] * len(times)  # a list, stacked at the end: no writes (order 2)
        dtimes[0], dtimes[-1] = span[0], span[1]
    y_start = np.ravel(np.asarray(y0))
    s0 = np.ravel(_dense(dy0, np.shape(y0), Y.dtype)) - rhs.value(y_start, t0) * span[0]

    def joint(state: np.ndarray, time: float) -> np.ndarray:
        y, s = state[:n], state[n:]
        return np.concatenate([rhs.value(y, time),
                               rhs.jvp(y, time, s, dp)])

    atol = call["options"].get("atol")
    atol = atol if atol is None or np.ndim(atol) == 0 else np.tile(np.ravel(atol), 2)
    joint_sol = _ivp_solve(joint, tuple(np.asarray(t_span, float)),
                           np.concatenate([y_start, s0]), call, atol, t_eval=times,
                           what="tangent")
    dY = joint_sol.y[n:].T + np.stack([rhs.value(Y[k], times[k]) * dtimes[k]
                                       for k in range(len(times))])
    fields = {"y": ProjectTo(sol.y)(dY.T)}
    if call["t_eval"] is not None:
        fields["t"] = dtimes
    return sol, Tangent(type(sol), fields)
