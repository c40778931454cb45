"""Benchmark of the linear-algebra rules: each pullback's time over its forward.

    python benchmarks/linalg_pullbacks.py               # n = 100 and 600
    python benchmarks/linalg_pullbacks.py --sizes 50    # other sizes

For each function, the rule is run once (``rrule``: the forward, as the engine runs it) and its
pullback on a random cotangent (every lazy cotangent computed); both are timed, best of the
repeats, and the table gives pullback / forward. Where PyTorch is installed
(``make bench-peers`` installs it), the same ratio for its autograd (``torch.linalg``; the
backward timed with ``torch.autograd.grad``) is beside it. The cost of each pullback in flops
is in the docstring of ``chainrules.rules.numpy.linalg`` and the SciPy rules' formulas.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

import numpy as np
import scipy.linalg as sla

from chainrules import rrule, unthunk


def _spd(n: int, rng) -> np.ndarray:
    a = rng.standard_normal((n, n))
    return a @ a.T / n + np.eye(n)


def _cases(n: int, rng) -> dict[str, tuple[Callable, tuple, dict]]:
    a = rng.standard_normal((n, n)) / n ** 0.5 + np.eye(n)  # det and inverse of moderate size
    spd = _spd(n, rng)
    b = rng.standard_normal((n, 4))
    L = np.linalg.cholesky(spd)
    return {
        "np.linalg.cholesky": (np.linalg.cholesky, (spd,), {}),
        "scipy.linalg.cholesky": (sla.cholesky, (spd,), {"lower": True}),
        "scipy.linalg.cho_solve (4 rhs)": (sla.cho_solve, ((L, True), b), {}),
        "np.linalg.solve (4 rhs)": (np.linalg.solve, (a, b), {}),
        "scipy.linalg.solve_triangular (4 rhs)": (sla.solve_triangular, (L, b),
                                                  {"lower": True}),
        "np.linalg.inv": (np.linalg.inv, (a,), {}),
        "np.linalg.det": (np.linalg.det, (a,), {}),
        "np.linalg.slogdet": (np.linalg.slogdet, (a,), {}),
        "np.linalg.eigh": (np.linalg.eigh, (spd,), {}),
        "np.linalg.eigvalsh": (np.linalg.eigvalsh, (spd,), {}),
        "np.linalg.svd": (np.linalg.svd, (a,), {"full_matrices": False}),
        "np.linalg.qr": (np.linalg.qr, (a,), {}),
        "np.linalg.lstsq (4 rhs)": (np.linalg.lstsq, (a[:, : n // 2], b), {"rcond": None}),
        "np.linalg.pinv": (np.linalg.pinv, (a[:, : n // 2],), {}),
        "scipy.linalg.lu": (sla.lu, (a,), {}),
        "scipy.linalg.lu_solve (4 rhs)": (sla.lu_solve, (sla.lu_factor(a), b), {}),
        "scipy.linalg.expm": (sla.expm, (a / n,), {}),
    }


def _random_like(value: Any, rng) -> Any:
    if isinstance(value, tuple):
        return type(value)(*[_random_like(v, rng) for v in value]) if hasattr(
            type(value), "_fields") else tuple(_random_like(v, rng) for v in value)
    value = np.asarray(value)
    return rng.standard_normal(value.shape).astype(value.dtype) if value.dtype.kind == "f" \
        else value


def _best(call: Callable, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def _compute_all(cotangents: Any) -> Any:
    return [unthunk(c) if not isinstance(c, tuple) else _compute_all(c) for c in cotangents]


def measure(function: Callable, args: tuple, kwargs: dict, repeats: int, rng) -> float:
    y, pullback = rrule(function, *args, **kwargs)
    dy = _random_like(y, rng)
    forward = _best(lambda: rrule(function, *args, **kwargs), repeats)
    backward = _best(lambda: _compute_all(pullback(dy)), repeats)
    return backward / forward


_TORCH = {
    "np.linalg.cholesky": lambda t, a, b: t.linalg.cholesky(a),
    "np.linalg.solve (4 rhs)": lambda t, a, b: t.linalg.solve(a, b),
    "np.linalg.inv": lambda t, a, b: t.linalg.inv(a),
    "np.linalg.det": lambda t, a, b: t.linalg.det(a),
    "np.linalg.slogdet": lambda t, a, b: t.linalg.slogdet(a)[1],
    "np.linalg.eigh": lambda t, a, b: t.linalg.eigh(a)[1],
    "np.linalg.eigvalsh": lambda t, a, b: t.linalg.eigvalsh(a),
    "np.linalg.svd": lambda t, a, b: t.linalg.svd(a, full_matrices=False)[1],
    "np.linalg.qr": lambda t, a, b: t.linalg.qr(a)[0],
    "np.linalg.pinv": lambda t, a, b: t.linalg.pinv(a[:, : a.shape[0] // 2]),
    "scipy.linalg.expm": lambda t, a, b: t.linalg.matrix_exp(a / a.shape[0]),
}


def torch_ratio(name: str, n: int, repeats: int, rng) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    if name not in _TORCH:
        return None
    spd = _spd(n, rng)
    data = spd if any(k in name for k in ("cholesky", "eigh", "eigvalsh")) else \
        rng.standard_normal((n, n)) / n ** 0.5 + np.eye(n)
    a = torch.tensor(data, requires_grad=True)
    b = torch.tensor(rng.standard_normal((n, 4)))
    function = _TORCH[name]
    y = function(torch, a, b)
    dy = torch.randn_like(y)
    forward = _best(lambda: function(torch, a, b), repeats)
    return _best(lambda: torch.autograd.grad(y, a, dy, retain_graph=True), repeats) / forward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 600])
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    rng = np.random.default_rng(0)
    print("pullback time / forward time (best of %d)" % options.repeats)
    names = list(_cases(4, rng))
    ours = {(name, n): measure(*_cases(n, np.random.default_rng(n))[name], options.repeats, rng)
            for n in options.sizes for name in names}
    # PyTorch after every chainrules figure: its idle OpenMP threads slow NumPy's BLAS after
    peers = {(name, n): torch_ratio(name, n, options.repeats, rng)
             for n in options.sizes for name in names}
    header = "".join(f"{'n=%d' % n:>10}{'torch':>8}" for n in options.sizes)
    print(f"{'function':<40}{header}")
    for name in names:
        row = ""
        for n in options.sizes:
            peer = peers[name, n]
            row += f"{ours[name, n]:>9.2f}x" + (f"{peer:>7.2f}x" if peer is not None
                                                else f"{'-':>8}")
        print(f"{name:<40}{row}")

if __name__ == "__main__":
    main()
