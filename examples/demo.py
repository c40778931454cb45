"""The chainrules demonstration: what it is for, in under a minute.

1. The seed defects of ChainRules, and what chainrules gives instead.
2. A small dataclass model trained by gradient descent.
3. The scalar loop at three sizes, with its growth exponent (and any installed peers).

Run it with ``make demo``.
"""

from __future__ import annotations

import dataclasses
import operator
import time

import numpy as np

import chainrules as cr
from chainrules import accumulate, owned_copy, rrule, unthunk


def heading(text: str) -> None:
    print(f"\n{text}\n{'-' * len(text)}")


def show(label: str, value) -> None:
    dtype = getattr(value, "dtype", type(value).__name__)
    print(f"  {label:<58} {value!r}  [{dtype}]")


def seed_case_in_place_equals_projected_value() -> None:
    heading("1. In-place add equals the projected value (ChainRules issue #863, case 1)")
    x = np.array([1.0, 2.0, 3.0])
    dx = rrule(operator.getitem, x, 0)[1](1 + 2j)[1]
    print("x = [1., 2., 3.], x[0], cotangent 1+2j  (Julia: add! threw InexactError)")
    show("unthunk(dx)", unthunk(dx))
    show("accumulate(owned zeros(3), dx)", accumulate(owned_copy(np.zeros(3)), dx, owned=True))
    show("accumulate(owned zeros(3, complex), dx)",
         accumulate(owned_copy(np.zeros(3, complex)), dx, owned=True))

    dx = rrule(operator.getitem, x, slice(0, 2))[1](np.array([1j, 2j]))[1]
    print("x[0:2], cotangent [1j, 2j]  (Julia: add! threw, though unthunk(dx) == zeros(3))")
    show("unthunk(dx)", unthunk(dx))
    show("accumulate(owned zeros(3), dx)", accumulate(owned_copy(np.zeros(3)), dx, owned=True))

    x32 = np.array([1, 2, 3], np.float32)
    dx = rrule(operator.getitem, x32, 1)[1](0.1)[1]
    print("float32 x, x[1], cotangent 0.1  (Julia: add! gave 0.1, val gave Float32(0.1))")
    show("unthunk(dx)", unthunk(dx))
    in_place = accumulate(owned_copy(np.zeros(3)), dx, owned=True)
    eager = np.zeros(3) + unthunk(dx)
    show("accumulate(owned zeros(3) float64, dx)", in_place)
    print(f"  in place == eager, bit for bit: {np.array_equal(in_place, eager)}"
          f" (index 1 holds float(np.float32(0.1)) = {in_place[1]!r})")


def _timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def seed_case_linear_loops() -> None:
    heading("2. Closure tangents accumulate in place (ChainRules issue #863, case 2)")
    print("  Julia's sum(i -> x[i]^2, eachindex(x)) was O(n^2): 766 MiB at n = 10^4.")

    def scalar_loop(x):
        return sum(x[i] ** 2 for i in range(len(x)))

    def vectorized_closure(x):
        return np.vectorize(lambda i: x[i] ** 2)(np.arange(len(x))).sum()

    for name, loss in [("sum(x[i]**2 for i in range(n))", scalar_loop),
                       ("np.vectorize(lambda i: x[i]**2)(arange(n)).sum()", vectorized_closure)]:
        times = {}
        for n in (2000, 16000):
            x = np.random.default_rng(n).normal(size=n)
            gradient = cr.grad(loss)
            gradient(x[:10])
            times[n] = min(_timed(lambda: gradient(x)) for _ in range(2))
            assert np.array_equal(gradient(x), 2 * x)
        exponent = np.log(times[16000] / times[2000]) / np.log(8)
        print(f"  {name:<50} n=2000: {times[2000]:.3f}s  n=16000: {times[16000]:.3f}s"
              f"  growth exponent {exponent:.2f}  (exact: grad == 2x)")


@dataclasses.dataclass
class Model:
    """A two-layer perceptron; ``activation`` is not differentiated (NoTangent)."""

    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    activation: str = "tanh"


def predict(model: Model, x: np.ndarray) -> np.ndarray:
    return np.tanh(x @ model.w1 + model.b1) @ model.w2


def loss(model: Model, x: np.ndarray, y: np.ndarray) -> float:
    return np.mean((predict(model, x) - y) ** 2)


def train_a_dataclass_model() -> None:
    heading("3. A dataclass model trained by gradient descent")
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, size=(64, 1))
    y = np.sin(2 * x[:, 0])
    model = Model(rng.normal(size=(1, 16)), np.zeros(16), rng.normal(size=16) * 0.1)
    value_and_gradient = cr.value_and_grad(loss)
    for step in range(301):
        value, gradient = value_and_gradient(model, x, y)
        if step % 60 == 0:
            print(f"  step {step:3d}  loss {value:.4f}   (gradient: {type(gradient).__name__}"
                  f"[{Model.__name__}], activation -> {gradient.activation!r})")
        model = Model(*(getattr(model, f) - 0.1 * getattr(gradient, f)
                        for f in ("w1", "b1", "w2")))


def scalar_loop_table() -> None:
    heading("4. The scalar loop sum(x[i]**2 for i in range(n)): one gradient call")

    def loss(x):
        return sum(x[i] ** 2 for i in range(len(x)))

    rows = []
    sizes = (1000, 4000, 16000)
    for n in sizes:
        x = np.random.default_rng(n).normal(size=n)
        gradient = cr.grad(loss)
        gradient(x[:10])
        rows.append((n, min(_timed(lambda: gradient(x)) for _ in range(3)),
                     min(_timed(lambda: loss(x)) for _ in range(3))))
    exponent = np.polyfit(np.log([r[0] for r in rows]), np.log([r[1] for r in rows]), 1)[0]
    print(f"  {'n':>7} {'chainrules':>12} {'numpy forward':>14}")
    for n, t, forward in rows:
        print(f"  {n:>7} {t * 1e3:>10.1f}ms {forward * 1e3:>12.2f}ms")
    print(f"  growth exponent: {exponent:.2f}")
    _peers(sizes)


def _peers(sizes) -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        torch = None
    try:
        import autograd  # noqa: F401
        import autograd.numpy as anp  # noqa: F401
    except ImportError:
        autograd = None
    if torch is None and autograd is None:
        print("  (no peers installed; `make bench-peers` installs PyTorch, autograd, MyGrad, JAX)")
        return
    for n in sizes:
        x = np.random.default_rng(n).normal(size=n)
        line = f"  {n:>7}"
        if torch is not None:
            torch.set_num_threads(1)

            def torch_grad():
                t = torch.tensor(x, requires_grad=True)
                sum(t[i] ** 2 for i in range(n)).backward()
            line += f"  pytorch {min(_timed(torch_grad) for _ in range(2)) * 1e3:8.1f}ms"
        if autograd is not None:
            g = autograd.grad(lambda v: sum(v[i] ** 2 for i in range(n)))
            line += f"  autograd {min(_timed(lambda: g(x)) for _ in range(2)) * 1e3:8.1f}ms"
        print(line)


if __name__ == "__main__":
    print("chainrules: exact, fast gradients of ordinary NumPy code")
    seed_case_in_place_equals_projected_value()
    seed_case_linear_loops()
    train_a_dataclass_model()
    scalar_loop_table()
