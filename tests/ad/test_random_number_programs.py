"""Random scalar-loop programs: numbers read from arrays (``x[i]``, ``u[k, i]``), combined
by every operation the engine records as a `NumberForm` (and some it does not), with
constants of every kind, written into arrays (one and two dimensions, with a row's view alive or
none) and read back: ``grad``, grad of grad,
``hvp``, ``hessian`` and ``jacfwd`` against central differences, in float64 and float32.

These are the engine's fastest paths (records of plain numbers, backward computed inline,
writes of one number done by the engine itself, hvp by the forms' partials), so each
example also runs with the dual forms turned off (the general path) and must agree.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import chainrules as cr
from tests.ad.finite_differences import numerical_gradient
from tests.ad.test_dual_forms import generic_path

INPUTS = 6  # x; u is x.reshape(2, 3)
SLOTS = 4   # the array the program writes numbers into

# Unary functions with the argument each is applied to, inside its domain and away from its
# poles (the arguments are numbers too, so those operations are recorded as well).
UNARY = {
    "sin": lambda r: np.sin(r), "cos": lambda r: np.cos(r), "tan": lambda r: np.tan(0.5 * r),
    "sinh": lambda r: np.sinh(0.5 * r), "cosh": lambda r: np.cosh(0.5 * r),
    "tanh": lambda r: np.tanh(r), "arctan": lambda r: np.arctan(r),
    "arcsinh": lambda r: np.arcsinh(r), "arcsin": lambda r: np.arcsin(0.5 * np.tanh(r)),
    "arccos": lambda r: np.arccos(0.5 * np.tanh(r)),
    "arctanh": lambda r: np.arctanh(0.5 * np.tanh(r)),
    "arccosh": lambda r: np.arccosh(r * r + 1.5), "exp": lambda r: np.exp(np.tanh(r)),
    "exp2": lambda r: np.exp2(np.tanh(r)), "expm1": lambda r: np.expm1(np.tanh(r)),
    "log": lambda r: np.log(r * r + 0.5), "log2": lambda r: np.log2(r * r + 0.5),
    "log10": lambda r: np.log10(r * r + 0.5), "log1p": lambda r: np.log1p(r * r),
    "sqrt": lambda r: np.sqrt(r * r + 0.5), "cbrt": lambda r: np.cbrt(r * r + 0.5),
    "reciprocal": lambda r: np.reciprocal(r * r + 0.5), "square": lambda r: np.square(r),
    "negative": lambda r: -r, "positive": lambda r: +r, "sinc": lambda r: np.sinc(r),
    "degrees": lambda r: np.degrees(r), "radians": lambda r: np.radians(r),
    "deg2rad": lambda r: np.deg2rad(r), "rad2deg": lambda r: np.rad2deg(r) / 50.0,
    "abs": lambda r: abs(r + 3.0),  # not a form: away from its kink
    "math.sin": lambda r: math.sin(r), "math.exp": lambda r: math.exp(math.tanh(r)),
}

# Binary operations on two numbers (each a register or a constant).
BINARY = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / (b * b + 0.5),
    "**": lambda a, b: (a * a + 0.5) ** b,  # a traced or constant exponent of a positive base
    "np.add": np.add, "np.multiply": np.multiply,
    "np.subtract": lambda a, b: np.subtract(b, a),
    "np.maximum": lambda a, b: np.maximum(a, b + 0.125),  # not forms: other records between
    "np.hypot": lambda a, b: np.hypot(a, b + 2.0),
}

# Constants of each kind a number meets: Python int and float (weak types), NumPy scalars of
# either precision (float64 makes a float32 program's numbers float64 on NumPy 2), bool.
CONSTANTS = [2, 3, 0, 1, -1, 0.75, -1.5, np.float64(0.75), np.float32(1.25), True]

_register = st.integers(0, 63)  # taken modulo the registers there are
_steps = st.one_of(
    st.tuples(st.just("read"), st.integers(0, INPUTS - 1)),
    st.tuples(st.just("read_2d"), st.integers(0, 1), st.integers(0, 2)),
    st.tuples(st.just("unary"), st.sampled_from(sorted(UNARY)), _register),
    st.tuples(st.just("binary"), st.sampled_from(sorted(BINARY)), _register, _register),
    st.tuples(st.just("constant_left"), st.sampled_from(sorted(BINARY)),
              st.integers(0, len(CONSTANTS) - 1), _register),
    st.tuples(st.just("constant_right"), st.sampled_from(sorted(BINARY)), _register,
              st.integers(0, len(CONSTANTS) - 1)),
    st.tuples(st.just("write"), st.integers(0, SLOTS - 1), _register),
    st.tuples(st.just("add_into"), st.integers(0, SLOTS - 1), _register),
    st.tuples(st.just("read_back"), st.integers(0, SLOTS - 1)),
    st.tuples(st.just("write_2d"), st.integers(0, 1), st.integers(0, SLOTS - 1), _register),
    st.tuples(st.just("add_into_2d"), st.integers(0, 1), st.integers(0, SLOTS - 1), _register),
    st.tuples(st.just("write_under_a_row"), st.integers(0, 1), st.integers(0, SLOTS - 1),
              _register, st.integers(0, SLOTS - 1)),
    st.tuples(st.just("read_back_2d"), st.integers(0, 1), st.integers(0, SLOTS - 1)),
    st.tuples(st.just("python_sum"), st.integers(2, 4)),
)
programs = st.lists(_steps, min_size=2, max_size=12)


def run(program: list, x) -> list:
    """The program's numbers, then its two arrays (plain NumPy or traced alike)."""
    u = x.reshape(2, 3)
    out = np.zeros(SLOTS, x.dtype)
    grid = np.zeros((2, SLOTS), x.dtype)  # written a number at a time, as a stencil loop's
    registers = [x[0]]
    for step in program:
        kind = step[0]
        pick = (lambda k: registers[k % len(registers)])
        if kind == "read":
            registers.append(x[step[1]])
        elif kind == "read_2d":
            registers.append(u[step[1], step[2]])
        elif kind == "unary":
            registers.append(UNARY[step[1]](pick(step[2])))
        elif kind == "binary":
            registers.append(BINARY[step[1]](pick(step[2]), pick(step[3])))
        elif kind == "constant_left":
            registers.append(BINARY[step[1]](CONSTANTS[step[2]], pick(step[3])))
        elif kind == "constant_right":
            registers.append(BINARY[step[1]](pick(step[2]), CONSTANTS[step[3]]))
        elif kind == "write":
            out[step[1]] = pick(step[2])
        elif kind == "add_into":
            out[step[1]] += pick(step[2])
        elif kind == "read_back":
            registers.append(out[step[1]])
        elif kind == "python_sum":
            registers.append(sum(registers[-step[1]:]))
        elif kind == "write_2d":
            grid[step[1], step[2]] = pick(step[3])
        elif kind == "add_into_2d":
            grid[step[1], step[2]] += 0.5 * pick(step[3])
        elif kind == "write_under_a_row":  # a view alive: the general write, followed
            row = grid[step[1]]
            grid[step[1], step[2]] = pick(step[3])
            registers.append(row[step[4]])
        elif kind == "read_back_2d":
            registers.append(grid[step[1], step[2]])
    return registers + [out, grid]


def _flat(values: list) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in values])


def _loss(program: list, weights: np.ndarray):
    def loss(x):
        values = run(program, x)
        total = 0.0
        for weight, value in zip(weights, values[:-2]):
            total = total + weight * value + value * value / 8.0
        return total + np.sum(weights[-SLOTS:] * values[-2]) + np.sum(
            weights[-3 * SLOTS:-SLOTS].reshape(2, SLOTS) * values[-1])
    return loss


def _moderate(program: list, x: np.ndarray) -> bool:
    """Whether every value stays where central differences keep their accuracy: finite,
    not large, and none a float32 number (a Python float, such as ``math.exp``'s, times a
    float32 constant is one on NumPy 2: its rounding is larger than a difference's step)."""
    with np.errstate(all="ignore"):
        values = run(program, x)
    flat = _flat(values)
    return bool(np.all(np.isfinite(flat)) and np.all(np.abs(flat) < 1e3)) and not any(
        np.asarray(value).dtype == np.float32 for value in values)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, st.integers(0, 2 ** 16))
def test_random_number_programs_at_orders_1_and_2(program, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, INPUTS)
    v = rng.normal(size=INPUTS)
    assume(_moderate(program, x))
    loss = _loss(program, rng.normal(size=64))
    gradient = cr.grad(loss)
    g = gradient(x)
    assert type(g) is np.ndarray and g.dtype == np.float64 and g.shape == x.shape
    np.testing.assert_allclose(g, numerical_gradient(loss, x), rtol=1e-5, atol=1e-6)
    hessian_v = numerical_gradient(lambda x: np.dot(gradient(x), v), x)
    # the differences' rounding grows with the largest entry (3.5e6 beside -0.176, off by
    # 1.3e-4, for degrees(degrees(x)): found on NumPy 1.26)
    atol = 1e-5 + 1e-9 * np.max(np.abs(hessian_v))
    hvp = cr.jvp(gradient, (x,), (v,))[1]
    np.testing.assert_allclose(hvp, hessian_v, rtol=1e-4, atol=atol)
    np.testing.assert_allclose(cr.grad(lambda x: np.dot(gradient(x), v))(x), hessian_v,
                               rtol=1e-4, atol=atol)
    np.testing.assert_allclose(cr.hessian(loss)(x) @ v, hessian_v, rtol=1e-4, atol=atol)
    np.testing.assert_allclose(cr.jvp(loss, (x,), (v,))[1], g @ v, rtol=1e-8, atol=1e-10)
    with generic_path():  # the rules traced at order 2, no number forms: the same values
        np.testing.assert_allclose(cr.jvp(gradient, (x,), (v,))[1], hvp, rtol=1e-9,
                                   atol=1e-12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, st.integers(0, 2 ** 16))
def test_random_number_programs_jacobians(program, seed):
    """``jacobian`` (reverse, a row at a time) and ``jacfwd`` of every number the program
    makes and of its array."""
    x = np.random.default_rng(seed).uniform(-1.0, 1.0, INPUTS)
    assume(_moderate(program, x))

    def f(x):
        values = run(program, x)
        return np.concatenate([np.stack([np.asarray(v, dtype=x.dtype) for v in values[:-2]]),
                               values[-2], np.ravel(values[-1])])

    expected = np.stack([(f(x + 1e-6 * e) - f(x - 1e-6 * e)) / 2e-6 for e in np.eye(INPUTS)],
                        axis=1)
    np.testing.assert_allclose(cr.jacobian(f)(x), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cr.jacfwd(f)(x), expected, rtol=1e-5, atol=1e-6)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs, st.integers(0, 2 ** 16))
def test_random_number_programs_in_float32(program, seed):
    """A float32 input has a float32 gradient (whatever precision its numbers took on the
    way: a float64 constant makes them float64 on NumPy 2), close to the float64 one; its
    hvp is float32 too."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, INPUTS)
    assume(_moderate(program, x))
    loss = _loss(program, rng.normal(size=64))
    with np.errstate(all="ignore"):  # float32 overflow of an intermediate: compared below
        gradient = cr.grad(loss)(x.astype(np.float32))
        hvp = cr.jvp(cr.grad(loss), (x.astype(np.float32),), (np.ones(INPUTS, np.float32),))[1]
    assert gradient.dtype == np.float32 and hvp.dtype == np.float32
    expected = numerical_gradient(loss, x)
    assume(np.all(np.isfinite(gradient)))
    np.testing.assert_allclose(gradient, expected, rtol=2e-3, atol=2e-3 * (
        1 + np.max(np.abs(expected))))
