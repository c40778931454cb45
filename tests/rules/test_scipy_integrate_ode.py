"""scipy.integrate.odeint and solve_ivp (src/chainrules/rules/scipy/integrate/ode.py): the kit
on both rules (reverse by the adjoint method, forward by forward sensitivities), then through
the engine as users write it: a Lotka-Volterra fit loss against finite differences and against
chainrules differentiating a hand-written RK4 loop, output times, closures, random right-hand
sides (parameters in closures, dicts, lists, objects and ``args``; both solvers, three methods)
against central differences, jvp, the adjoint's memory against the number of solver steps, and
the refused options.

Skipped when SciPy is not installed.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

scipy_integrate = pytest.importorskip("scipy.integrate")

import chainrules as cr  # noqa: E402
from chainrules.testing import case, check_case  # noqa: E402

integrate = scipy_integrate
TIGHT = {"rtol": 1e-10, "atol": 1e-10}
P0 = np.array([1.0, 0.5, 1.5, 0.75])   # prey growth, predation, predator death, conversion
Y0 = np.array([2.0, 1.0])


def lotka_volterra(y, t, a, b, c, d):
    """odeint's convention: f(y, t, *args)."""
    prey, predator = y[0], y[1]
    return np.array([a * prey - b * prey * predator, -c * predator + d * prey * predator])


def lotka_volterra_tfirst(t, y, a, b, c, d):
    """solve_ivp's convention: f(t, y, *args); a list, as users often return."""
    return [a * y[0] - b * y[0] * y[1], -c * y[1] + d * y[0] * y[1]]


def forced(t, y, k):
    """A linear, time-dependent right-hand side (complex states allowed)."""
    return -k * y + np.sin(t)


_scale = np.array([0.7, -0.3])


def _scaled_decay(y, t):  # closes over _scale: its tangent is the function's own
    return -_scale * y + 0.1 * t


def _finite_difference(f, x, h=1e-6):
    x = np.asarray(x, float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


KIT = {"rtol": 1e-5, "atol": 1e-6}
T = np.linspace(0.0, 2.0, 5)
T_EVAL = np.linspace(0.25, 1.75, 4)  # inside t_span, also when the kit perturbs t_span

CASES = [
    case(integrate.odeint, lotka_volterra, Y0, T, tuple(P0), fkwargs=TIGHT, **KIT),
    case(integrate.odeint, lotka_volterra_tfirst, Y0, T, tuple(P0),
         fkwargs={**TIGHT, "tfirst": True}, **KIT),
    case(integrate.odeint, _scaled_decay, Y0, T[::-1], fkwargs=TIGHT, **KIT),  # backward t
    case(integrate.solve_ivp, lotka_volterra_tfirst, (0.0, 2.0), Y0, "RK45", T_EVAL, False,
         None, False, tuple(P0), fkwargs=TIGHT, **KIT),
    case(integrate.solve_ivp, lotka_volterra_tfirst, (0.0, 2.0), Y0, "LSODA", T_EVAL,
         fkwargs={**TIGHT, "args": tuple(P0)}, **KIT),
    case(integrate.solve_ivp, forced, np.array([0.0, 2.0]), np.array([1.0 + 0.5j, -1j]),
         "DOP853", T_EVAL[1:3], False, None, False, (0.8,), fkwargs=TIGHT, **KIT),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_ode_rule(rule_case):
    check_case(rule_case)


def _decay_hessian(x, t):
    """The Hessian of ``sum_t y(t)^2`` for ``y' = -k y``, ``y(0) = y0``, at ``x = (k, y0)``:
    ``y0^2 sum exp(-2 k t)`` in closed form."""
    e = np.exp(-2 * x[0] * t)
    mixed = 2 * x[1] * np.sum(-2 * t * e)
    return np.array([[x[1] ** 2 * np.sum(4 * t ** 2 * e), mixed], [mixed, 2 * np.sum(e)]])


def test_second_derivatives_against_the_closed_form():
    """The pullbacks and pushforwards solve ODEs through the routed solvers, so an outer trace
    records them: grad of grad (reverse over reverse) and hessian (forward over reverse)."""
    t = np.array([0.0, 0.5, 1.0, 2.0])
    x = np.array([0.7, 1.3])

    def by_odeint(x):
        Y = integrate.odeint(lambda y, s, k: -k * y, np.array([x[1]]), t, args=(x[0],),
                             rtol=1e-11, atol=1e-12)
        return np.sum(Y ** 2)

    def by_solve_ivp(x):
        sol = integrate.solve_ivp(lambda s, y: -x[0] * y, (0.0, 2.0), np.array([x[1]]),
                                  t_eval=t, rtol=1e-11, atol=1e-12)
        return np.sum(sol.y ** 2)

    expected = _decay_hessian(x, t)
    by_reverse = np.stack([cr.grad(lambda z: cr.grad(by_odeint)(z)[i])(x) for i in range(2)])
    np.testing.assert_allclose(by_reverse, expected, rtol=1e-7)
    np.testing.assert_allclose(cr.hessian(by_solve_ivp)(x), expected, rtol=1e-7)


def test_jacfwd_of_solve_ivp_against_finite_differences():
    def solution(y0):
        return integrate.solve_ivp(lotka_volterra_tfirst, (0.0, 2.0), y0, t_eval=T_EVAL,
                                   args=tuple(P0), **TIGHT).y

    expected = np.stack([_finite_difference(lambda y: solution(y)[i, j], Y0)
                         for i in range(2) for j in range(len(T_EVAL))]).reshape(2, -1, 2)
    np.testing.assert_allclose(cr.jacfwd(solution)(Y0), expected, rtol=1e-5, atol=1e-7)


# --- the Lotka-Volterra fit (must show 2) ---------------------------------------------------------

T_DATA = np.linspace(0.0, 5.0, 11)
DATA = integrate.odeint(lotka_volterra, Y0, T_DATA, args=(1.1, 0.4, 1.4, 0.8), rtol=1e-12,
                        atol=1e-12) + 0.05 * np.cos(np.arange(22.0)).reshape(11, 2)


def fit_loss(p, y0):
    """Sum of squared errors of the model against the data at the output times."""
    Y = integrate.odeint(lotka_volterra, y0, T_DATA, args=(p[0], p[1], p[2], p[3]), **TIGHT)
    return np.sum((Y - DATA) ** 2)


def rk4_fit_loss(p, y0, steps_per_interval=200):
    """The same loss through a hand-written RK4 loop (no SciPy), differentiated by chainrules
    operation by operation."""
    y, total = y0, np.sum((y0 - DATA[0]) ** 2)
    for k in range(1, len(T_DATA)):
        t, h = T_DATA[k - 1], (T_DATA[k] - T_DATA[k - 1]) / steps_per_interval
        for _ in range(steps_per_interval):
            k1 = lotka_volterra(y, t, p[0], p[1], p[2], p[3])
            k2 = lotka_volterra(y + h / 2 * k1, t + h / 2, p[0], p[1], p[2], p[3])
            k3 = lotka_volterra(y + h / 2 * k2, t + h / 2, p[0], p[1], p[2], p[3])
            k4 = lotka_volterra(y + h * k3, t + h, p[0], p[1], p[2], p[3])
            y, t = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), t + h
        total = total + np.sum((y - DATA[k]) ** 2)
    return total


def test_lotka_volterra_fit_gradient_against_finite_differences_and_rk4():
    grad_p, grad_y0 = cr.grad(fit_loss, argnums=(0, 1))(P0, Y0)
    fd_p = _finite_difference(lambda p: fit_loss(p, Y0), P0)
    fd_y0 = _finite_difference(lambda y: fit_loss(P0, y), Y0)
    np.testing.assert_allclose(grad_p, fd_p, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad_y0, fd_y0, rtol=1e-5, atol=1e-6)
    rk4_p, rk4_y0 = cr.grad(rk4_fit_loss, argnums=(0, 1))(P0, Y0)
    scale = np.max(np.abs(np.concatenate([rk4_p, rk4_y0])))
    np.testing.assert_allclose(grad_p, rk4_p, rtol=1e-5, atol=1e-5 * scale)
    np.testing.assert_allclose(grad_y0, rk4_y0, rtol=1e-5, atol=1e-5 * scale)


@pytest.mark.parametrize("method", ["RK45", "LSODA", "BDF"])
def test_solve_ivp_fit_gradient_against_finite_differences(method):
    def loss(p, y0):
        sol = integrate.solve_ivp(lotka_volterra_tfirst, (0.0, 5.0), y0, method=method,
                                  t_eval=T_DATA, args=(p[0], p[1], p[2], p[3]), **TIGHT)
        return np.sum((sol.y.T - DATA) ** 2)

    grad_p, grad_y0 = cr.grad(loss, argnums=(0, 1))(P0, Y0)
    np.testing.assert_allclose(grad_p, _finite_difference(lambda p: loss(p, Y0), P0),
                               rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(grad_y0, _finite_difference(lambda y: loss(P0, y), Y0),
                               rtol=2e-5, atol=1e-5)


def test_gradient_with_respect_to_output_times():
    def loss(t):
        Y = integrate.odeint(lotka_volterra, Y0, t, args=tuple(P0), **TIGHT)
        return np.sum(np.sin(Y) * np.arange(1.0, 1.0 + Y.size).reshape(Y.shape))

    t = np.array([0.0, 0.4, 1.1, 1.7, 2.5])
    np.testing.assert_allclose(cr.grad(loss)(t), _finite_difference(loss, t), rtol=1e-5,
                               atol=1e-6)


def test_gradient_with_respect_to_t_eval_and_t_span():
    def loss(t_eval, span):
        sol = integrate.solve_ivp(forced, span, Y0, t_eval=t_eval, args=(0.5,), **TIGHT)
        return np.sum(sol.y ** 2 * sol.t)

    t_eval, span = np.array([0.5, 1.0, 2.5]), np.array([0.2, 3.0])
    g_eval, g_span = cr.grad(loss, argnums=(0, 1))(t_eval, span)
    np.testing.assert_allclose(g_eval, _finite_difference(lambda t: loss(t, span), t_eval),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g_span, _finite_difference(lambda s: loss(t_eval, s), span),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("solver", ["odeint", "LSODA", "RK45", "Radau"])
@pytest.mark.parametrize("times", [[0.2, 0.20000000000000004], [5.0, 5.000000000000002, 7.0],
                                   [0.0, 0.5, 0.5000000000000001]])
def test_output_times_a_few_units_in_the_last_place_apart(solver, times):
    # found by the random test: LSODA refuses to start a solve over such an interval, so the
    # adjoint's piece between the two times failed (and LSODA warned); over it the adjoint
    # does not change, to rounding
    def loss(p):
        def rhs(y, t): return -p[0] * y + p[1] * np.sin(t)
        if solver == "odeint":
            Y = integrate.odeint(rhs, np.array([1.0, 2.0]), [0.0] + times, **TIGHT)
        else:
            Y = integrate.solve_ivp(lambda t, y: rhs(y, t), (0.0, times[-1]),
                                    np.array([1.0, 2.0]), t_eval=times, method=solver,
                                    **TIGHT).y.T
        return np.sum(np.cos(Y))

    p = np.array([0.7, 0.3])
    np.testing.assert_allclose(cr.grad(loss)(p), _finite_difference(loss, p), rtol=1e-6)


def test_solver_steps_without_t_eval_move_only_at_the_ends():
    def loss(span):
        sol = integrate.solve_ivp(forced, span, Y0, args=(0.5,), **TIGHT)
        return np.sum(sol.y[:, -1] ** 2) + 3.0 * sol.t[-1] - sol.t[0]

    span = np.array([0.2, 3.0])
    np.testing.assert_allclose(cr.grad(loss)(span), _finite_difference(loss, span),
                               rtol=1e-5, atol=1e-6)


def test_closure_and_bound_method_parameters():
    def loss(p):
        def rhs(y, t):
            return np.array([p[0] * y[0] - p[1] * y[0] * y[1], -p[2] * y[1] + p[3] * y[0] * y[1]])

        return np.sum(integrate.odeint(rhs, Y0, T, **TIGHT) ** 2)

    np.testing.assert_allclose(cr.grad(loss)(P0), _finite_difference(loss, P0), rtol=1e-5)

    class Model:
        def __init__(self, rate):
            self.rate = rate

        def rhs(self, t, y):
            return -self.rate * y

    def loss_model(rate):
        sol = integrate.solve_ivp(Model(rate).rhs, (0.0, 1.0), Y0, t_eval=[1.0], **TIGHT)
        return np.sum(sol.y)

    rate = np.array([0.3, 1.2])
    np.testing.assert_allclose(cr.grad(loss_model)(rate), -Y0 * np.exp(-rate), rtol=1e-7)


class _Holder:
    def __init__(self, c):
        self.c = c


# Where the right-hand side finds its parameters: each is a different path to its gradient
# (the function's own tangent through a closure, a dict, a list, an object; ``args``; both).
_HOLDERS = ("closure", "dict", "list", "object", "args", "float args", "closure and args")


def _random_ode_loss(n: int, holder: str, solver: str, nonlinear: bool, times: list,
                     seed: int):
    """A loss of ``theta = [A (n, n), y0 (n), c]`` through ``y' = A y + c cos t (- y^3 / 10)``
    solved by ``solver``, its parameters reached through ``holder``; and a point ``theta``."""
    rng = np.random.default_rng(seed)
    weights = rng.normal(size=n)

    def field(y, t, A, c):
        out = A @ y + c * np.cos(t)
        return out - 0.1 * y ** 3 if nonlinear else out

    def loss(theta):
        A, y_init, c = theta[:n * n].reshape(n, n), theta[n * n:n * n + n], theta[-1]
        args: tuple = ()
        if holder == "closure":
            def rhs(y, t): return field(y, t, A, c)
        elif holder == "dict":
            held = {"A": A, "c": c}
            def rhs(y, t): return field(y, t, held["A"], held["c"])
        elif holder == "list":
            nested = [A, [c]]
            def rhs(y, t): return field(y, t, nested[0], nested[1][0])
        elif holder == "object":
            model = _Holder(c)
            def rhs(y, t): return field(y, t, A, model.c)
        elif holder == "args":
            def rhs(y, t, A, c): return field(y, t, A, c)
            args = (A, c)
        elif holder == "float args":
            def rhs(y, t, c): return field(y, t, A, c)
            args = (c,)
        else:
            held = {"c": c}
            def rhs(y, t, A): return field(y, t, A, held["c"])
            args = (A,)

        def tfirst(t, y, *more): return rhs(y, t, *more)
        if solver == "odeint":
            Y = integrate.odeint(rhs, y_init, [0.0] + times, args=args, **TIGHT)[1:]
        elif solver == "odeint tfirst":
            Y = integrate.odeint(tfirst, y_init, [0.0] + times, args=args, tfirst=True,
                                 **TIGHT)[1:]
        else:
            Y = integrate.solve_ivp(tfirst, (0.0, times[-1]), y_init, method=solver,
                                    t_eval=times, args=args or None, **TIGHT).y.T
        return np.sum(np.sin(Y) * weights)

    A0 = rng.normal(size=(n, n)) * 0.5 - np.eye(n)
    return loss, np.concatenate([A0.ravel(), rng.normal(size=n), [0.7]])


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.integers(1, 3), holder=st.sampled_from(_HOLDERS),
       solver=st.sampled_from(["odeint", "odeint tfirst", "RK45", "DOP853", "Radau"]),
       nonlinear=st.booleans(),
       times=st.lists(st.floats(0.2, 2.0), min_size=1, max_size=3, unique=True).map(sorted),
       seed=st.integers(0, 2 ** 16))
def test_random_right_hand_sides_against_central_differences(n, holder, solver, nonlinear,
                                                              times, seed):
    # (run here at 300 examples: no failure)
    loss, theta = _random_ode_loss(n, holder, solver, nonlinear, times, seed)
    np.testing.assert_allclose(cr.grad(loss)(theta), _finite_difference(loss, theta, 1e-5),
                               rtol=2e-4, atol=2e-6)


def test_jvp_against_finite_differences():
    v = np.array([0.3, -0.2, 0.1, 0.4])
    dy0 = np.array([0.1, -0.2])

    def by_odeint(p, y0):
        return integrate.odeint(lotka_volterra, y0, T, args=(p[0], p[1], p[2], p[3]), **TIGHT)

    def by_solve_ivp(method):
        def solve(p, y0):
            return integrate.solve_ivp(lotka_volterra_tfirst, (0.0, 2.0), y0, method=method,
                                       t_eval=T_EVAL, args=(p[0], p[1], p[2], p[3]),
                                       **TIGHT).y
        return solve

    for f in (by_odeint, by_solve_ivp("RK45"), by_solve_ivp("LSODA"), by_solve_ivp("BDF")):
        y, dy = cr.jvp(f, (P0, Y0), (v, dy0))
        h = 1e-6
        expected = (f(P0 + h * v, Y0 + h * dy0) - f(P0 - h * v, Y0 - h * dy0)) / (2 * h)
        np.testing.assert_allclose(y, f(P0, Y0), rtol=1e-12)
        np.testing.assert_allclose(dy, expected, rtol=1e-5, atol=1e-6)


# --- memory of the adjoint against the number of solver steps (must show 2) -------------------

def _peak_of(thunk) -> int:
    """The tracemalloc peak of ``thunk()``, in bytes (caches warmed by the caller)."""
    tracemalloc.start()
    try:
        thunk()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _steps(length: float) -> int:
    """The number of LSODA steps of the memory test's problem (odeint's own count)."""
    _, info = integrate.odeint(lotka_volterra, Y0, np.linspace(0.0, length, 6),
                               args=tuple(P0), rtol=1e-8, atol=1e-8, full_output=True)
    return int(info["nst"][-1])


def test_adjoint_memory_does_not_grow_with_solver_steps():
    """Same number of output times; an interval 12x longer takes ~7x the solver steps. The
    adjoint keeps one pullback at a time, so its peak stays flat; a tape of every step (an RK
    loop differentiated operation by operation) grows with the steps."""
    def adjoint_gradient(length):
        t = np.linspace(0.0, length, 6)

        def loss(p):
            Y = integrate.odeint(lotka_volterra, Y0, t, args=(p[0], p[1], p[2], p[3]),
                                 rtol=1e-8, atol=1e-8)
            return np.sum(Y ** 2)

        return lambda: cr.grad(loss)(P0)

    def taped_gradient(steps):
        def loss(p):
            y, h = Y0, 4.0 / steps
            for _ in range(steps):
                k1 = lotka_volterra(y, 0.0, p[0], p[1], p[2], p[3])
                y = y + h * lotka_volterra(y + h / 2 * k1, 0.0, p[0], p[1], p[2], p[3])
            return np.sum(y ** 2)

        return lambda: cr.grad(loss)(P0)

    short, long = 2.0, 24.0
    assert _steps(long) > 6 * _steps(short), (_steps(short), _steps(long))
    adjoint_gradient(short)()  # warm caches (first-call imports, rule lookups)
    short_peak, long_peak = _peak_of(adjoint_gradient(short)), _peak_of(adjoint_gradient(long))
    assert long_peak < 2 * short_peak, (short_peak, long_peak)
    # The measurement sees growth where there is some.
    taped_gradient(10)()
    assert _peak_of(taped_gradient(400)) > 4 * _peak_of(taped_gradient(50))


# --- refused options --------------------------------------------------------------------------

@pytest.mark.parametrize("options, named", [
    ({"dense_output": True}, "dense_output"),
    ({"events": lambda t, y, k: y[0] - 0.5}, "events"),
])
def test_solve_ivp_refuses_by_name(options, named):
    def loss(k):
        return np.sum(integrate.solve_ivp(forced, (0.0, 1.0), Y0, args=(k,), **options).y)

    with pytest.raises(NotImplementedError, match=named):
        cr.grad(loss)(0.5)


def test_odeint_refuses_full_output():
    def loss(k):
        Y, _ = integrate.odeint(lambda y, t, k: -k * y, Y0, T, args=(k,), full_output=True)
        return np.sum(Y)

    with pytest.raises(NotImplementedError, match="full_output"):
        cr.grad(loss)(0.5)
