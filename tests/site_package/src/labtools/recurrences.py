"""Recurrences filled into preallocated arrays, as packages write them (the same loops as
chainrules' benchmarks/writes.py writes in user code, to compare their cost)."""

import numpy as np


def fill(params, n):
    """out[0] = p0, out[i] = out[i - 1] exp(-p1) + p2 sin(i); the sum of squares."""
    out = np.zeros(n)
    out[0] = params[0]
    for i in range(1, n):
        out[i] = out[i - 1] * np.exp(-params[1]) + params[2] * np.sin(i)
    return np.sum(out ** 2)


def smoothed_grid(params, n):
    """Operations on arrays the package creates, with no write into them."""
    grid = np.linspace(0.0, 1.0, 8)
    weights = np.exp(-grid) / np.sum(np.exp(-grid))
    total = 0.0
    for i in range(n):
        total = total + np.sum(weights * np.sin(grid * params[0] + i * 0.01))
    return total
