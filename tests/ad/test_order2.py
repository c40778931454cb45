"""Reverse over reverse through the core mechanism and the indexing, reduction, shape and
selection rules: ``grad`` of a scalar function of ``grad``, against central differences of
the first-order gradient (which is checked against finite differences elsewhere)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import chainrules as cr

RNG = np.random.default_rng(7)
VECTOR = np.array([0.9, 1.7, 2.3, 1.1, 2.9, 1.4])
MATRIX = RNG.uniform(0.5, 2.0, size=(3, 4))
SQUARE = RNG.uniform(0.5, 2.0, size=(3, 3))


def _second_order(f, x):
    """``grad(h)(x)`` and central differences of ``h`` for ``h = sum(sin(grad(f)))``, in
    double precision (float32 results are compared with the float64 reference)."""
    def h(x):
        g = cr.grad(f)(x)
        if np.iscomplexobj(g):
            return np.sum(np.real(g * np.conj(g)))
        return np.sum(np.sin(g))

    got = cr.grad(h)(x)
    step = 1e-6
    work = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    want = np.zeros_like(work)
    for i in np.ndindex(x.shape):
        for unit in ((1.0, 1j) if x.dtype.kind == "c" else (1.0,)):
            d = np.zeros_like(work)
            d[i] = unit * step
            slope = (h(work + d) - h(work - d)) / (2 * step)
            want[i] += unit * slope  # dL/dRe + i dL/dIm
    return got, want


CASES = {
    # indexing
    "int-loop": (lambda y: sum(y[i] ** 3 for i in range(len(y))), VECTOR),
    "slice": (lambda y: np.sum(np.sin(y[1:5:2]) ** 2), VECTOR),
    "mask": (lambda y: np.sum(y[y > 1.5] ** 3), VECTOR),
    "int-array-repeats": (lambda y: np.sum(y[np.array([0, 0, 3, 5])] ** 3), VECTOR),
    "tuple-index": (lambda y: np.sum(y[1:, np.array([0, 2, 2])] ** 3), MATRIX),
    "matrix-loop": (lambda y: sum(y[i, j] ** 3 for i in range(3) for j in range(2)), MATRIX),
    # reductions
    "sum-axis": (lambda y: np.sum(np.sum(np.sin(y), axis=0) ** 2), MATRIX),
    "mean-axis": (lambda y: np.sum(np.mean(y ** 3, axis=1) ** 2), MATRIX),
    "prod": (lambda y: np.prod(y, axis=1).sum(), MATRIX),
    "max": (lambda y: np.sum(np.max(np.sin(y), axis=0) ** 2), MATRIX),
    "min": (lambda y: np.min(y ** 3), VECTOR),
    "std": (lambda y: np.sum(np.std(y, axis=0) ** 2) + np.std(y), MATRIX),
    "var": (lambda y: np.sum(np.var(y, axis=1) ** 2), MATRIX),
    "cumsum": (lambda y: np.sum(np.cumsum(y, axis=1) ** 3), MATRIX),
    "cumprod": (lambda y: np.sum(np.cumprod(y)), VECTOR),
    "trace": (lambda y: np.trace(y) ** 3, SQUARE),
    "sort": (lambda y: np.sum(np.sort(y) ** 3 * np.arange(6.0)), VECTOR),
    "diff": (lambda y: np.sum(np.diff(y, n=2) ** 3), VECTOR),
    # shape
    "reshape-transpose": (lambda y: np.sum(np.sin(y.reshape(2, 3)).T ** 3), VECTOR),
    "concatenate": (lambda y: np.sum(np.concatenate([y, y[:2]]) ** 3), VECTOR),
    "stack": (lambda y: np.sum(np.sin(np.stack([y, y ** 2]))), VECTOR),
    "split": (lambda y: np.sum(np.split(y, 3)[1] ** 3), VECTOR),
    "repeat": (lambda y: np.sum(np.repeat(y, 2) ** 3), VECTOR),
    "repeat-axis": (lambda y: np.sum(np.repeat(y, [1, 0, 2], axis=0) ** 3), MATRIX),
    "tile": (lambda y: np.sum(np.tile(y, 2) ** 3), VECTOR),
    "diag-of-matrix": (lambda y: np.sum(np.diag(y) ** 3), SQUARE),
    "diag-to-matrix": (lambda y: np.sum(np.sin(np.diag(y))), VECTOR),
    "diagonal": (lambda y: np.sum(np.diagonal(y, 1) ** 3), MATRIX),
    "broadcast_to": (lambda y: np.sum(np.broadcast_to(y, (2, 6)) ** 3), VECTOR),
    "squeeze-expand": (lambda y: np.sum(np.squeeze(np.expand_dims(y, 0)) ** 3), VECTOR),
    "pad-reflect": (lambda y: np.sum(np.pad(y, 2, mode="reflect") ** 3), VECTOR),
    # selection
    "where": (lambda y: np.sum(np.where(y > 1.5, y ** 3, np.sin(y))), VECTOR),
    "clip": (lambda y: np.sum(np.clip(y, 1.2, 2.5) ** 3), VECTOR),
    "maximum": (lambda y: np.sum(np.maximum(y, np.flip(y)) ** 3), VECTOR),
    "take": (lambda y: np.sum(np.take(y, [1, 1, 4]) ** 3), VECTOR),
    "take_along_axis": (lambda y: np.sum(np.take_along_axis(
        y, np.argsort(y, axis=1), axis=1) ** 3 * np.arange(4.0)), MATRIX),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_of_grad_against_finite_differences(name, dtype):
    f, x = CASES[name]
    got, want = _second_order(f, x.astype(dtype))
    assert got.dtype == dtype
    tolerance = 1e-5 if dtype == np.float64 else 2e-2
    scale = max(1.0, np.max(np.abs(want)))
    assert np.allclose(got, want, rtol=tolerance, atol=tolerance * scale), (got, want)


COMPLEX = VECTOR[:4] * (1 + 0.5j)


@pytest.mark.parametrize("name,f", [
    ("loop", lambda z: sum(np.abs(z[i]) ** 3 for i in range(4))),
    ("slice-sum", lambda z: np.sum(np.abs(z[1:]) ** 4)),
    ("sort-real", lambda z: np.sum(np.sort(np.real(z)) ** 3 * np.arange(4.0))),
    ("reshape", lambda z: np.sum(np.abs(np.reshape(z, (2, 2)).T) ** 4)),
])
def test_grad_of_grad_complex(name, f):
    got, want = _second_order(f, COMPLEX)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5), (got, want)


def test_issue_reproducers():
    x = np.array([0.3, 0.7, 1.2])
    loop = cr.grad(lambda x: np.sum(cr.grad(lambda y: sum(y[i] ** 3 for i in range(3)))(x)))(x)
    assert np.allclose(loop, 6 * x)
    split = cr.grad(lambda x: np.sum(cr.grad(lambda y: np.sum(np.split(y, 3)[1] ** 3))(x)))(x)
    assert np.allclose(split, [0.0, 6 * 0.7, 0.0])


def _outer_records(n):
    """The records of the outer trace of grad(sum(grad(index loop))) at size n, and the number
    of array elements they produce in all (a quadratic accumulation would make n * n)."""
    counts = []

    def inner(y):
        return sum(y[i] ** 2 for i in range(n))

    def outer(x):
        g = cr.grad(inner)(x)
        records = x.tape.records
        counts.append((len(records), sum(math.prod(r[2][0]) for r in records
                                         if r is not None and r[2][0] is not None)))
        return np.sum(g ** 2)

    x = np.linspace(0.5, 1.5, n)
    gradient = cr.grad(outer)(x)
    assert np.allclose(gradient, 8 * x)  # d/dx sum((2x)^2) = 8x
    return counts[0]


def test_index_loop_stays_linear_at_order_2():
    small_records, small_elements = _outer_records(200)
    large_records, large_elements = _outer_records(1600)
    assert large_records <= 8.5 * small_records
    assert large_elements <= 8.5 * small_elements


def test_index_loop_order_2_memory_is_linear():
    from chainrules.testing import check_linear

    def make(n):
        x = np.linspace(0.5, 1.5, n)
        return lambda: cr.grad(lambda x: np.sum(cr.grad(
            lambda y: sum(y[i] ** 2 for i in range(n)))(x) ** 2))(x)

    check_linear(make, 300, bound=14.0)


def test_cumprod_at_an_exact_zero_is_refused_at_order_two_not_wrong():
    def inner(y):
        return np.sum(np.cumprod(y))

    z = np.array([0.3, 0.0, 1.2])
    np.testing.assert_allclose(cr.grad(inner)(z), [1.0, 0.66, 0.0])  # order 1: exact
    with pytest.raises(NotImplementedError, match="cumprod.*exact zero"):
        cr.grad(lambda x: np.sum(cr.grad(inner)(x)))(z)
    with pytest.raises(NotImplementedError, match="cumprod.*exact zero"):
        cr.hessian(inner)(z)


def test_apply_along_axis_has_second_derivatives():
    def inner(y):
        return np.sum(np.apply_along_axis(lambda row: np.sum(row ** 3), 1, y.reshape(3, 1)))

    x = np.array([0.3, 0.7, 1.2])
    np.testing.assert_allclose(cr.grad(inner)(x), 3 * x ** 2)
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(cr.grad(inner)(x)))(x), 6 * x)
    np.testing.assert_allclose(cr.hessian(inner)(x), np.diag(6 * x))
    np.testing.assert_allclose(cr.hvp(inner, x, x), 6 * x * x)


def test_a_first_order_only_rule_is_refused_inside_a_second_derivative():
    from chainrules.core.registry import FIRST_ORDER_ONLY, first_order_only

    @cr.primitive
    def cube(x):
        return x ** 3

    @cr.rrule.register(cube)
    def _cube_rule(x):
        slope = 3 * x ** 2
        return cube(x), lambda dy: (cr.NoTangent(), slope * dy)

    first_order_only(cube, "its pullback calls a compiled kernel in place")
    try:
        def inner(y):
            return np.sum(cube(y))

        x = np.array([0.3, 0.7, 1.2])
        np.testing.assert_allclose(cr.grad(inner)(x), 3 * x ** 2)  # order 1 works
        for second in (lambda: cr.grad(lambda x: np.sum(cr.grad(inner)(x)))(x),
                       lambda: cr.hessian(inner)(x), lambda: cr.hvp(inner, x, x)):
            with pytest.raises(NotImplementedError, match="cube is differentiable once only"
                                                          ".*compiled kernel"):
                second()
    finally:
        FIRST_ORDER_ONLY.pop(cube)
        cr.rrule._rules.pop(cube)
