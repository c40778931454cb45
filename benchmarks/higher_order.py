"""Higher-order benchmark: the cost of hvp, hessian and jvp relative to one gradient call.

    python benchmarks/higher_order.py            # chainrules and every installed peer
    python benchmarks/higher_order.py --quick    # small sizes, few repeats (a smoke run)

Every ratio is measured in one process, chainrules' gradient and its higher-order call
interleaved (best of the repeats of each), so that the machine's load affects both alike; the
peers' ratios (JAX eager forward over reverse, PyTorch double backward, autograd's
hessian_vector_product) are measured the same way in their own processes. Each result is
checked against a closed form or chainrules' own Hessian. Beside them, the same gradient and
hvp written out by hand in NumPy (hand_written.py), timed in chainrules' process: their ratio
is the arithmetic forward over reverse cannot avoid, and chainrules' gradient plus the hand
hvp's extra time is a floor for chainrules' hvp. Results: results/higher_order.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "2"}


# The workloads, written once in NumPy; peers get the same code through their numpy modules.
def rosenbrock(np, x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def mlp(np, w, X, y):
    W1 = w[:320].reshape(10, 32)
    w2 = w[320:]
    return np.mean((np.tanh(X @ W1) @ w2 - y) ** 2)


def rnn(np, w, U):
    W = w.reshape(16, 16)
    h = U[:, 0] * 0.0
    for t in range(U.shape[1]):
        h = np.tanh(W @ h + U[:, t])
    return np.sum(h)


def scalar_loop(np, x):
    return sum(x[i] ** 3 for i in range(x.shape[0]))


def inputs(name: str, size: int):
    rng = np.random.default_rng(0)
    if name == "rosenbrock":
        return (rng.uniform(-1, 1, size),), {}
    if name == "mlp":
        return (rng.normal(size=352) * 0.3,), {"X": rng.normal(size=(size, 10)),
                                               "y": rng.normal(size=size)}
    if name == "rnn":
        return (rng.normal(size=256) * 0.2,), {"U": rng.normal(size=(16, size))}
    return (rng.normal(size=size),), {}


SIZES = {"rosenbrock": (100, 10), "mlp": (64, 8), "rnn": (100, 10), "scalar_loop": (1000, 50)}


def best_times(calls: list, repeats: int) -> list[float]:
    """Best time of each call, the calls interleaved."""
    for call in calls:
        call()
    best = [float("inf")] * len(calls)
    for _ in range(repeats):
        for which, call in enumerate(calls):
            start = time.perf_counter()
            call()
            best[which] = min(best[which], time.perf_counter() - start)
    return best


def best_ratio(first, second, repeats: int) -> tuple[float, float, float]:
    """Best time of each of two calls, interleaved, and their ratio."""
    one, two = best_times([first, second], repeats)
    return one, two, two / one


def _without_dual_forms(call, *args):
    """``call(*args)`` with the rules' dual forms turned off: forward over reverse by the
    general path (docs/engine.md, "Forward over reverse"), for comparison."""
    from chainrules.core.registry import DUAL_FORMS

    saved = dict(DUAL_FORMS)
    DUAL_FORMS.clear()
    try:
        return call(*args)
    finally:
        DUAL_FORMS.update(saved)


def measure_chainrules(name: str, size: int, repeats: int) -> dict:
    import chainrules as cr

    (x,), constants = inputs(name, size)
    f = globals()[name]

    def loss(x):
        return f(np, x, **constants)

    v = np.random.default_rng(1).normal(size=x.shape)
    grad = cr.grad(loss)
    results = {}
    g, h, ratio = best_ratio(lambda: grad(x), lambda: cr.hvp(loss, x, v), repeats)
    results["hvp"] = {"grad_ms": g * 1e3, "ms": h * 1e3, "ratio": ratio}
    g, h, ratio = best_ratio(lambda: grad(x), lambda: _without_dual_forms(cr.hvp, loss, x, v),
                             repeats)
    results["hvp, general path"] = {"grad_ms": g * 1e3, "ms": h * 1e3, "ratio": ratio}
    g, j, ratio = best_ratio(lambda: grad(x), lambda: cr.jvp(loss, (x,), (v,)), repeats)
    results["jvp"] = {"grad_ms": g * 1e3, "ms": j * 1e3, "ratio": ratio}
    if name == "scalar_loop":
        results["rules"] = measure_rule_costs(repeats)
    if name == "scalar_loop":  # linear growth: the same calls at 8 times the size
        (x8,), _ = inputs(name, 8 * size)
        v8 = np.random.default_rng(1).normal(size=x8.shape)
        for kind, small, large in (
                ("jvp", lambda: cr.jvp(loss, (x,), (v,)), lambda: cr.jvp(loss, (x8,), (v8,))),
                ("hvp", lambda: cr.hvp(loss, x, v), lambda: cr.hvp(loss, x8, v8))):
            t, t8, growth = best_ratio(small, large, repeats)
            results[f"{kind} growth"] = {"ms": t * 1e3, "ms8": t8 * 1e3, "growth": growth}
    results.update(measure_hand_written(name, x, v, constants, grad, cr.hvp(loss, x, v),
                                        repeats))
    if name == "rosenbrock":
        g, H, ratio = best_ratio(lambda: grad(x), lambda: cr.hessian(loss)(x),
                                 max(2, repeats // 3))
        results["hessian"] = {"grad_ms": g * 1e3, "ms": H * 1e3, "ratio": ratio}
        hessian = cr.hessian(loss)(x)
        results["check"] = float(np.max(np.abs(hessian @ v - cr.hvp(loss, x, v))))
    return results


def measure_hand_written(name: str, x, v, constants: dict, grad, product, repeats: int) -> dict:
    """The workload's gradient and hvp written by hand in NumPy (hand_written.py), checked
    against chainrules' gradient and hvp, timed interleaved with chainrules' gradient; and the
    floor they give chainrules' hvp: its gradient plus the hvp's extra arithmetic."""
    from hand_written import HAND_WRITTEN

    hand_grad, hand_hvp = HAND_WRITTEN[name]
    assert np.allclose(hand_grad(x, **constants), grad(x), rtol=1e-10, atol=1e-12), name
    assert np.allclose(hand_hvp(x, v, **constants), product, rtol=1e-8, atol=1e-10), name
    g, hg, hh = best_times([lambda: grad(x), lambda: hand_grad(x, **constants),
                            lambda: hand_hvp(x, v, **constants)], 2 * repeats)
    return {"hand-written NumPy": {"grad_ms": hg * 1e3, "ms": hh * 1e3, "ratio": hh / hg},
            "floor": {"grad_ms": g * 1e3, "ms": (g + hh - hg) * 1e3,
                      "ratio": (g + hh - hg) / g}}


def measure_rule_costs(repeats: int) -> dict:
    """What one elementwise rule costs on NumPy numbers (a scalar loop's operations): its
    rrule and pullback, against its dual form and ``pullback_dual`` (forward over reverse)."""
    from chainrules.core.registry import DUAL_FORMS, rrule

    x, dx, g, dg = np.float64(1.3), np.float64(0.7), np.float64(1.0), np.float64(0.5)
    costs = {}
    for function, args, tangents, needed in ((np.power, (x, 3), (dx, None), (True, False)),
                                             (np.multiply, (x, x), (dx, dx), (True, True)),
                                             (np.tanh, (x,), (dx,), (True,))):
        reverse, dual = rrule._rules[function][0], DUAL_FORMS[function][1]

        def order_1():
            for _ in range(100):
                reverse(*args)[1](g)

        def order_2():
            for _ in range(100):
                result = dual(args, tangents, {})
                (result[3] or result[2])(g, dg, needed)

        first, second = best_times([order_1, order_2], repeats)
        costs[function.__name__] = {"ns": first * 1e7, "dual_ns": second * 1e7,
                                    "ratio": second / first}
    return costs


def measure_peer(library: str, name: str, size: int, repeats: int) -> dict:
    (x,), constants = inputs(name, size)
    f = globals()[name]
    v = np.random.default_rng(1).normal(size=x.shape)
    if library == "jax":
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        def loss(x):
            return f(jnp, x, **{k: jnp.asarray(c) for k, c in constants.items()})

        jx, jv = jnp.asarray(x), jnp.asarray(v)
        grad = jax.grad(loss)
        g, h, ratio = best_ratio(lambda: jax.block_until_ready(grad(jx)),
                                 lambda: jax.block_until_ready(jax.jvp(grad, (jx,), (jv,))[1]),
                                 repeats)
    elif library == "torch":
        import torch
        torch.set_num_threads(1)
        tconstants = {k: torch.from_numpy(c) for k, c in constants.items()}

        def loss(x):
            return f(torch, x, **tconstants)

        tx, tv = torch.from_numpy(x), torch.from_numpy(v)

        def grad():
            leaf = tx.detach().requires_grad_()
            return torch.autograd.grad(loss(leaf), leaf)

        def hvp():
            leaf = tx.detach().requires_grad_()
            (gradient,) = torch.autograd.grad(loss(leaf), leaf, create_graph=True)
            return torch.autograd.grad(gradient @ tv, leaf)

        g, h, ratio = best_ratio(grad, hvp, repeats)
    elif library == "autograd":
        import autograd
        import autograd.numpy as anp

        def loss(x):
            return f(anp, x, **constants)

        grad = autograd.grad(loss)
        product = autograd.hessian_vector_product(loss)
        g, h, ratio = best_ratio(lambda: grad(x), lambda: product(x, v), repeats)
    else:
        raise ValueError(library)
    return {"hvp": {"grad_ms": g * 1e3, "ms": h * 1e3, "ratio": ratio}}


def child(arguments: list[str]) -> None:
    library, name, size, repeats = arguments[0], arguments[1], int(arguments[2]), \
        int(arguments[3])
    if library == "chainrules":
        result = measure_chainrules(name, size, repeats)
    else:
        result = measure_peer(library, name, size, repeats)
    print(json.dumps(result))


def available(library: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(library) is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs=4)
    options = parser.parse_args()
    if options.child:
        child(options.child)
        return
    repeats = 3 if options.quick else 15
    libraries = ["chainrules"] + [p for p in ("jax", "torch", "autograd") if available(p)]
    rows = []
    for name, (size, quick_size) in SIZES.items():
        size = quick_size if options.quick else size
        for library in libraries:
            done = subprocess.run(
                [sys.executable, __file__, "--child", library, name, str(size), str(repeats)],
                capture_output=True, text=True, env={**os.environ, **THREADS}, timeout=1800)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["?"])[-1]
                rows.append((name, size, library, "failed", last[:120]))
                print(f"{name} {library}: failed: {last}", flush=True)
                continue
            result = json.loads(done.stdout.strip().splitlines()[-1])
            for kind in ("hvp", "hvp, general path", "jvp", "hessian"):
                if kind in result:
                    r = result[kind]
                    rows.append((name, size, library, kind,
                                 f"{r['ms']:.2f} ms = {r['ratio']:.2f}x grad ({r['grad_ms']:.2f} ms)"))
                    print(name, size, library, kind, rows[-1][-1], flush=True)
            if "floor" in result:
                hand, floor = result["hand-written NumPy"], result["floor"]
                rows.append((name, size, "NumPy by hand", "hvp",
                             f"{hand['ms']:.3f} ms = {hand['ratio']:.2f}x its grad "
                             f"({hand['grad_ms']:.3f} ms)"))
                rows.append((name, size, library, "hvp floor",
                             f"grad + the hvp's extra arithmetic by hand = "
                             f"{floor['ratio']:.2f}x grad ({floor['grad_ms']:.2f} ms)"))
                print(name, size, *rows[-2][2:], flush=True)
                print(name, size, *rows[-1][2:], flush=True)
            for kind in ("jvp growth", "hvp growth"):
                if kind in result:
                    r = result[kind]
                    rows.append((name, f"{size} and {8 * size}", library, kind,
                                 f"{r['ms']:.2f} ms, then {r['ms8']:.2f} ms: {r['growth']:.1f}x "
                                 f"for 8x the size"))
                    print(name, size, library, kind, rows[-1][-1], flush=True)
            for function, r in result.get("rules", {}).items():
                rows.append((name, "numbers", library, f"{function}: dual form / rule",
                             f"{r['dual_ns']:.0f} ns / {r['ns']:.0f} ns = {r['ratio']:.2f}x "
                             f"(with their pullbacks)"))
                print(name, *rows[-1][2:], flush=True)
            if "check" in result:
                print(f"{name}: max |H v - hvp| = {result['check']:.1e}", flush=True)
    out = HERE / "results" / ("raw/higher_order_quick.md" if options.quick else "higher_order.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = ["# Higher order: cost relative to one gradient call", "",
             "Best of interleaved calls in one process per library (single-threaded BLAS).", "",
             "| workload | size | library | what | time |", "|---|---|---|---|---|"]
    lines += [f"| {n} | {s} | {lib} | {kind} | {text} |" for n, s, lib, kind, text in rows]
    out.write_text("\n".join(lines) + "\n")
    print(f"written: {out}")


if __name__ == "__main__":
    main()
