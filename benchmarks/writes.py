"""Benchmark of arrays written in place: a preallocate-and-fill loop, differentiated.

    python benchmarks/writes.py            # chainrules, its no-mutation baseline, PyTorch if installed
    python benchmarks/writes.py --quick    # small sizes, few repeats (a smoke run)

Three ways to write the issue's recurrence (out[i] = out[i-1] * exp(-p1) + p2 * sin(i)), each
timed for one gradient of sum(out ** 2) (forward and backward), best of the repeats:

- ``fill``: chainrules on ``out = np.zeros(n); out[i] = ...`` (the code as users write it);
- ``stack``: chainrules on the same recurrence written without writes, values kept in a list
  and joined with ``np.stack`` (our own no-mutation baseline);
- ``torch``: PyTorch with ``torch.zeros`` and index writes, in float64 (where it is
  installed; PyTorch refuses an in-place write into a tensor it needs for backward, so the
  PyTorch version reads ``out[i - 1]`` as a clone, which is what its users write);
- ``numpy``: the plain NumPy fill loop, no gradient: the floor.

And a 2-D column fill (``out[:, j] = np.sin(x * j)``) of 4 x n. Every gradient is checked
against the first method's; results go to results/writes.md (kept out of git: run it to see).
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def fill(np, params, n):
    out = np.zeros(n)
    out[0] = params[0]
    for i in range(1, n):
        out[i] = out[i - 1] * np.exp(-params[1]) + params[2] * np.sin(i)
    return np.sum(out ** 2)


def stack(np, params, n):
    values = [params[0]]
    for i in range(1, n):
        values.append(values[-1] * np.exp(-params[1]) + params[2] * np.sin(i))
    return np.sum(np.stack(values) ** 2)


def columns(np, x, n):
    out = np.zeros((x.shape[0], n))
    for j in range(n):
        out[:, j] = np.sin(x * j)
    return np.sum(out ** 2)


def columns_stack(np, x, n):
    return np.sum(np.stack([np.sin(x * j) for j in range(n)], axis=1) ** 2)


def smoothed_grid(np, params, n):
    """Operations on arrays the function creates, with no write into them (labtools has the
    same lines): what treating created arrays as constants costs where nothing is written."""
    grid = np.linspace(0.0, 1.0, 8)
    weights = np.exp(-grid) / np.sum(np.exp(-grid))
    total = 0.0
    for i in range(n):
        total = total + np.sum(weights * np.sin(grid * params[0] + i * 0.01))
    return total


def package_cases():
    """The same loops inside an installed package (tests/site_package: ``labtools``), to
    compare with the user-code ones: None where it is not installed."""
    try:
        from labtools import recurrences
    except ImportError:
        return None
    return recurrences


def best(call, repeats: int) -> float:
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def torch_cases():
    try:
        import torch
    except ImportError:
        return None

    def fill_torch(params, n):
        p = torch.tensor(params, dtype=torch.float64, requires_grad=True)
        out = torch.zeros(n, dtype=torch.float64)
        out[0] = p[0]
        decay = torch.exp(-p[1])
        for i in range(1, n):
            out[i] = out[i - 1].clone() * decay + p[2] * np.sin(i)
        torch.sum(out ** 2).backward()
        return p.grad.numpy()

    def columns_torch(x, n):
        t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        out = torch.zeros((x.shape[0], n), dtype=torch.float64)
        for j in range(n):
            out[:, j] = torch.sin(t * j)
        torch.sum(out ** 2).backward()
        return t.grad.numpy()

    return fill_torch, columns_torch


def main() -> None:
    import chainrules as cr

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "writes.md")
    arguments = parser.parse_args()
    sizes = (100, 1000) if arguments.quick else (1000, 4000, 16000)
    repeats = 2 if arguments.quick else 5
    params = np.array([1.0, 0.01, 0.5])
    x = np.linspace(0.1, 1.0, 4)
    peers = torch_cases()
    rows = []
    for n in sizes:
        for name, f, g, arg, peer in (
                ("fill loop", fill, stack, params, peers and peers[0]),
                ("2-D column fill", columns, columns_stack, x, peers and peers[1])):
            grad_fill = cr.grad(lambda a: f(np, a, n))
            grad_stack = cr.grad(lambda a: g(np, a, n))
            reference = grad_fill(arg)
            error = float(np.max(np.abs(grad_stack(arg) - reference)) /
                          max(np.max(np.abs(reference)), 1e-300))
            row = {"case": name, "n": n,
                   "fill": best(lambda: grad_fill(arg), repeats),
                   "stack": best(lambda: grad_stack(arg), repeats),
                   "numpy": best(lambda: f(np, arg, n), repeats)}
            if peer is not None:
                row["torch"] = best(lambda: peer(arg, n), repeats)
                error = max(error, float(np.max(np.abs(peer(arg, n) - reference)) /
                                         max(np.max(np.abs(reference)), 1e-300)))
            row["error"] = error
            if error > 1e-8:
                print(f"GRADIENT MISMATCH: {name} n={n}: relative error {error:.2e}")
            rows.append(row)
            print(_line(row), flush=True)
    package = package_cases()
    if package is not None:
        lines_package = _package_rows(cr, package, sizes, params, repeats)
    else:
        lines_package = ["(labtools is not installed: `make test` installs it)"]
    lines = [f"# Arrays written in place: gradient of a fill loop ({platform.python_version()}, "
             f"NumPy {np.__version__}, {platform.machine()})", "",
             "Best of %d, milliseconds per gradient (forward + backward)." % repeats, "",
             "| case | n | chainrules fill | chainrules list + np.stack | PyTorch | "
             "NumPy forward only | fill / stack | rel. error |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        torch_ms = f"{row['torch'] * 1e3:.1f}" if "torch" in row else "not installed"
        lines.append(f"| {row['case']} | {row['n']} | {row['fill'] * 1e3:.1f} | "
                     f"{row['stack'] * 1e3:.1f} | {torch_ms} | {row['numpy'] * 1e3:.2f} | "
                     f"{row['fill'] / row['stack']:.2f} | {row['error']:.1e} |")
    lines += ["", "## The same loops inside an installed package", "",
              "Best of %d, milliseconds per gradient; `package / user` near 1 means code "
              "inside a package costs what the same lines cost in user code." % repeats, "",
              "| case | n | user code | installed package | package / user |",
              "|---|---|---|---|---|"] + lines_package
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {arguments.out}")


def _package_rows(cr, package, sizes, params, repeats) -> list:
    """Table rows: the fill loop and the no-write loop, in user code and in the package."""
    rows = []
    for n in sizes:
        for name, user, inside, size in (("fill loop", fill, package.fill, n),
                                         ("no write (created arrays read)", smoothed_grid,
                                          package.smoothed_grid, n // 10)):
            grad_user = cr.grad(lambda a: user(np, a, size))
            grad_package = cr.grad(lambda a: inside(a, size))
            error = float(np.max(np.abs(grad_user(params) - grad_package(params))))
            if error > 1e-10 * (1 + float(np.max(np.abs(grad_user(params))))):
                print(f"GRADIENT MISMATCH: {name} in the package, n={size}")
            user_time = best(lambda: grad_user(params), repeats)
            package_time = best(lambda: grad_package(params), repeats)
            print(f"{name:>31} n={size:>6}: user {user_time * 1e3:8.1f} ms, package "
                  f"{package_time * 1e3:8.1f} ms", flush=True)
            rows.append(f"| {name} | {size} | {user_time * 1e3:.1f} | "
                        f"{package_time * 1e3:.1f} | {package_time / user_time:.2f} |")
    return rows


def _line(row: dict) -> str:
    torch_part = f", torch {row['torch'] * 1e3:.1f} ms" if "torch" in row else ""
    return (f"{row['case']:>16} n={row['n']:>6}: fill {row['fill'] * 1e3:8.1f} ms, stack "
            f"{row['stack'] * 1e3:8.1f} ms{torch_part}, numpy {row['numpy'] * 1e3:7.2f} ms")


if __name__ == "__main__":
    main()
