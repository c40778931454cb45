"""Per-operation cost: each gradient call (forward included) over the plain NumPy forward of
the same function, in one process, best of the repeats.

    python benchmarks/per_operation.py
    python benchmarks/per_operation.py --quick     # small sizes (the smoke test)

The workloads of issue 29, Python-level code whose time is the engine's work per operation:
the scalar loop ``sum(x[i]**2 for i in range(n))`` (n=10^4), a column loop over a (100, 1000)
array, an RNN ``h = tanh(W @ h + U[:, t])`` (H=32, T=1000), the gradient of a damped
pendulum's final state through ``scipy.integrate.solve_ivp`` (rtol 1e-10) with respect to its
two parameters, and an explicit heat-equation solver whose double loop writes ``u[n + 1, i]``.
Every gradient is checked (closed forms, or central differences for the ODE and the heat
equation) before it is timed.
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

import numpy as np

import chainrules as cr


def scalar_loop(x):
    return sum(x[i] ** 2 for i in range(len(x)))


def column_loop(X):
    return sum(np.sum(np.sin(X[:, j]) * X[:, j]) for j in range(X.shape[1]))


def rnn(W, U):
    h = np.zeros(W.shape[0])
    for t in range(U.shape[1]):
        h = np.tanh(W @ h + U[:, t])
    return np.sum(h)


def pendulum(p):
    import scipy.integrate

    def rhs(t, y):
        return [y[1], -p[0] * y[1] - p[1] * np.sin(y[0])]

    sol = scipy.integrate.solve_ivp(rhs, (0.0, 10.0), [1.0, 0.0], rtol=1e-10, atol=1e-10,
                                    t_eval=[10.0])
    return sol.y[0, -1]


def heat(u0, steps=40, r=0.4):
    n = len(u0)
    u = np.zeros((steps + 1, n))
    u[0] = u0
    for k in range(steps):
        for i in range(1, n - 1):
            u[k + 1, i] = u[k, i] + r * (u[k, i + 1] - 2.0 * u[k, i] + u[k, i - 1])
    return np.sum(u[-1] ** 2)


def _inputs(quick: bool) -> dict:
    rng = np.random.default_rng(0)
    return {
        "scalar loop": (scalar_loop, 0, (rng.standard_normal(500 if quick else 10_000),)),
        "column loop": (column_loop, 0, (rng.standard_normal((100, 50 if quick else 1000)),)),
        "rnn": (rnn, 0, (0.1 * rng.standard_normal((32, 32)),
                         rng.standard_normal((32, 50 if quick else 1000)))),
        "solve_ivp pendulum": (pendulum, 0, (np.array([0.3, 2.0]),)),
        "heat equation": (heat, 0, (np.sin(np.linspace(0.0, np.pi, 12 if quick else 50)),)),
    }


def _numeric(function: Callable, args: tuple, step: float = 1e-6) -> np.ndarray:
    x = args[0]
    gradient = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[index] = step
        gradient[index] = (function(x + e, *args[1:]) - function(x - e, *args[1:])) / (2 * step)
    return gradient


def _best(call: Callable, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def measure(name: str, quick: bool = False, repeats: int = 5) -> dict:
    function, _, args = _inputs(quick)[name]
    gradient = cr.grad(function)
    result = gradient(*args)
    if name == "scalar loop":
        ok = np.allclose(result, 2 * args[0])
    elif name == "column loop":
        ok = np.allclose(result, np.cos(args[0]) * args[0] + np.sin(args[0]))
    elif name in ("solve_ivp pendulum", "heat equation") or quick:
        ok = np.allclose(result, _numeric(function, args), rtol=1e-5, atol=1e-7)
    else:
        ok = bool(np.all(np.isfinite(result)))
    plain = _best(lambda: function(*args), repeats)
    grad_time = _best(lambda: gradient(*args), repeats)
    return {"ok": bool(ok), "plain": plain, "gradient": grad_time, "ratio": grad_time / plain}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    print(f"{'workload':<22}{'plain forward':>15}{'gradient':>12}{'ratio':>9}  check")
    for name in _inputs(options.quick):
        r = measure(name, options.quick, options.repeats)
        print(f"{name:<22}{r['plain'] * 1e3:>12.2f} ms{r['gradient'] * 1e3:>9.1f} ms"
              f"{r['ratio']:>8.1f}x  {'ok' if r['ok'] else 'WRONG'}")


if __name__ == "__main__":
    main()
