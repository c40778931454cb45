"""Forward over reverse by the rules' dual forms (`chainrules.core.registry.dual_form`).

When a reverse tape records an operation on values of a forward trace outside it (``hvp``,
``jvp`` of ``grad``), the engine runs the rule's dual form once on plain values and tangents
instead of tracing the rule on traced values (the "generic" path). Every check here is against
closed forms or central differences of the gradient (the gradient itself is checked against
finite differences of the function elsewhere), and against the generic path (all dual forms
removed for the comparison): the two agree to rounding. Each test also asserts that the dual
path was taken where it is meant to be, so that agreeing with the generic path is no tautology.
"""

from __future__ import annotations

import collections
import contextlib
import operator
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chainrules as cr
from chainrules.ad.transforms.forward import ForwardTrace
from chainrules.ad.trace.tape import Tape
from chainrules.core.registry import DUAL_FORMS, frule, recorded_whole, rrule
from chainrules.core.scalar_rule import STAND_IN_SIZE, _ElementwiseDual, scalar_rule
from chainrules.core.tangents import AbstractZero
from chainrules.core.thunks import unthunk

# --- tools ---------------------------------------------------------------------------------


@contextlib.contextmanager
def generic_path():
    """Inside the block no rule has a dual form: second derivatives trace the rules."""
    saved = dict(DUAL_FORMS)
    DUAL_FORMS.clear()
    try:
        yield
    finally:
        DUAL_FORMS.clear()
        DUAL_FORMS.update(saved)


@contextlib.contextmanager
def dual_records():
    """A Counter of the functions that forward traces record by their dual forms inside the
    block (`ForwardTrace.record_dual` returning a value, `ForwardTrace.record_numbers` on
    numbers, `ForwardTrace.record_arrays` on small arrays or `ForwardTrace.record_total` for
    ``np.sum``, by the rule's NumberForm, or
    `ForwardTrace.record_product` on arrays, by its ProductForm, or `ForwardTrace.record_view`
    on a small array, by its ViewForm)."""
    used: collections.Counter = collections.Counter()
    originals = {name: getattr(ForwardTrace, name)
                 for name in ("record_dual", "record_numbers", "record_arrays",
                                "record_product", "record_total", "record_view")}

    def counting(original):
        def count(self, tape, function, *rest):
            recorded = original(self, tape, function, *rest)
            if recorded is not None:
                used[function] += 1
            return recorded
        return count

    for name, original in originals.items():
        setattr(ForwardTrace, name, counting(original))
    try:
        yield used
    finally:
        for name, original in originals.items():
            setattr(ForwardTrace, name, original)


def leaves_of(value) -> list:
    """The array leaves of a value, a tuple, list or dict of them (sorted keys), as arrays."""
    if isinstance(value, dict):
        return [np.asarray(value[key]) for key in sorted(value)]
    if isinstance(value, (tuple, list)):
        return [np.asarray(part) for part in value]
    return [np.asarray(value)]


def moved(x, v, step):
    """``x + step * v`` for arrays, numbers and tuples, lists or dicts of them."""
    if isinstance(x, dict):
        return {key: moved(x[key], v[key], step) for key in x}
    if isinstance(x, (tuple, list)):
        return type(x)(moved(a, b, step) for a, b in zip(x, v))
    return x + step * v


def fd_hvp(f, x, v, step: float = 1e-5) -> list:
    """Central difference of ``cr.grad(f)`` along ``v`` at ``x``, per leaf, in double
    precision (float32 points are differentiated at their float64 values)."""
    def wide(value):
        if isinstance(value, dict):
            return {key: wide(part) for key, part in value.items()}
        if isinstance(value, (tuple, list)):
            return type(value)(wide(part) for part in value)
        value = np.asarray(value)
        return value.astype(np.complex128 if value.dtype.kind == "c" else np.float64)

    x, v = wide(x), wide(v)
    gradient = cr.grad(f)
    plus = leaves_of(gradient(moved(x, v, step)))
    minus = leaves_of(gradient(moved(x, v, -step)))
    return [(p - m) / (2 * step) for p, m in zip(plus, minus)]


def hvp_both(f, x, v):
    """``(hvp by dual forms, hvp by the generic path, Counter of dual-form records)``."""
    with dual_records() as used:
        dual = cr.hvp(f, x, v)
    with generic_path():
        generic = cr.hvp(f, x, v)
    return dual, generic, used


def assert_close_leaves(got, expected, rtol, atol, what=""):
    got, expected = leaves_of(got), leaves_of(expected)
    assert len(got) == len(expected), what
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=what)


def assert_same_as_generic(dual, generic, rtol=1e-12, atol=1e-13):
    """Dual and generic paths agree to rounding, leaf by leaf, with the same dtypes."""
    for d, g in zip(leaves_of(dual), leaves_of(generic)):
        assert d.dtype == g.dtype and d.shape == g.shape
        np.testing.assert_allclose(d, g, rtol=rtol, atol=atol)
    assert len(leaves_of(dual)) == len(leaves_of(generic))


# --- 1. every scalar rule with a dual form: hvp of sum(f(...)) -------------------------------

def _scalar_rules_with_dual_forms(arity: int) -> list:
    """NumPy's (SciPy's are registered once a test imports SciPy, so which of them exist
    here would depend on the order the tests run in; the kit checks them at order 2)."""
    found = []
    for f in DUAL_FORMS:
        if getattr(np, getattr(f, "__name__", ""), None) is not f:
            continue
        entry = frule.lookup(f)
        partials = getattr(entry[0], "partials", None) if entry is not None else None
        if partials is not None and len(partials) == arity:
            found.append(f)
    return found


UNARY_RULES = _scalar_rules_with_dual_forms(1)
BINARY_RULES = _scalar_rules_with_dual_forms(2)

# f'' in closed form, written from calculus (not from the rules' tables).
UNARY_SECOND = {
    np.negative: lambda x: 0 * x,
    np.positive: lambda x: 0 * x,
    np.reciprocal: lambda x: 2 / x ** 3,
    np.square: lambda x: 2 + 0 * x,
    np.sqrt: lambda x: -0.25 * x ** -1.5,
    np.exp: np.exp,
    np.expm1: np.exp,
    np.log: lambda x: -1 / x ** 2,
    np.log1p: lambda x: -1 / (1 + x) ** 2,
    np.sin: lambda x: -np.sin(x),
    np.cos: lambda x: -np.cos(x),
    np.tan: lambda x: 2 * np.sin(x) / np.cos(x) ** 3,
    np.arctan: lambda x: -2 * x / (1 + x ** 2) ** 2,
    np.sinh: np.sinh,
    np.cosh: np.cosh,
    np.tanh: lambda x: -2 * np.sinh(x) / np.cosh(x) ** 3,
    np.deg2rad: lambda x: 0 * x,
    np.radians: lambda x: 0 * x,
    np.rad2deg: lambda x: 0 * x,
    np.degrees: lambda x: 0 * x,
}
UNARY_DOMAIN = {np.sqrt: (0.5, 2.0), np.log: (0.5, 2.0), np.log1p: (-0.5, 2.0),
                np.reciprocal: (0.5, 2.0), np.tan: (-1.2, 1.2)}
NOT_HOLOMORPHIC = {np.deg2rad, np.radians, np.rad2deg, np.degrees, np.maximum, np.minimum}


# (f_aa, f_ab, f_bb) in closed form.
BINARY_SECOND = {
    np.add: lambda a, b: (0 * a, 0 * a, 0 * a),
    np.subtract: lambda a, b: (0 * a, 0 * a, 0 * a),
    np.multiply: lambda a, b: (0 * a, 1 + 0 * a, 0 * a),
    np.divide: lambda a, b: (0 * a, -1 / b ** 2, 2 * a / b ** 3),
    np.power: lambda a, b: (b * (b - 1) * a ** (b - 2), a ** (b - 1) * (1 + b * np.log(a)),
                            a ** b * np.log(a) ** 2),
    np.maximum: lambda a, b: (0 * a, 0 * a, 0 * a),
    np.minimum: lambda a, b: (0 * a, 0 * a, 0 * a),
}
BINARY_DOMAIN = {np.divide: ((-2.0, 2.0), (0.5, 2.0)), np.power: ((0.5, 2.0), (-1.5, 2.5))}


def _name(f) -> str:
    return f.__name__


def test_every_scalar_rule_with_a_dual_form_is_covered_here():
    assert set(UNARY_RULES) == set(UNARY_SECOND), "add the new rule's f'' to UNARY_SECOND"
    assert set(BINARY_RULES) == set(BINARY_SECOND), "add the new rule to BINARY_SECOND"


def _unary_point(f, rng, shape=(5,)):
    low, high = UNARY_DOMAIN.get(f, (-1.5, 1.5))
    return rng.uniform(low, high, shape), rng.standard_normal(shape)


def _binary_point(f, rng, shapes=((5,), (5,))):
    (la, ha), (lb, hb) = BINARY_DOMAIN.get(f, ((-1.5, 1.5), (-1.5, 1.5)))
    a, b = rng.uniform(la, ha, shapes[0]), rng.uniform(lb, hb, shapes[1])
    if f is np.divide:
        b = b * rng.choice([-1.0, 1.0], shapes[1])  # both signs, away from zero
    return a, b


def _binary_closed_form(f, a, b, va, vb):
    """hvp of sum(f(a, b)) along (va, vb) in closed form, reduced over broadcasting."""
    aa, ab, bb = BINARY_SECOND[f](a, b)
    ha, hb = aa * va + ab * vb, ab * va + bb * vb
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    return (_reduce_to(np.broadcast_to(ha, shape), np.shape(a)),
            _reduce_to(np.broadcast_to(hb, shape), np.shape(b)))


def _reduce_to(value, shape):
    while value.ndim > len(shape):
        value = value.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1 and value.shape[axis] != 1:
            value = value.sum(axis=axis, keepdims=True)
    return value


@pytest.mark.parametrize("f", UNARY_RULES, ids=_name)
@pytest.mark.parametrize("seed", [0, 1])
def test_unary_hvp_of_float64_arrays(f, seed):
    x, v = _unary_point(f, np.random.default_rng(seed))
    loss = lambda x: np.sum(f(x))  # noqa: E731
    dual, generic, used = hvp_both(loss, x, v)
    assert used[f] >= 1
    np.testing.assert_allclose(dual, UNARY_SECOND[f](x) * v, rtol=1e-12, atol=1e-12)
    assert_close_leaves(dual, fd_hvp(loss, x, v), rtol=1e-6, atol=1e-8)
    assert_same_as_generic(dual, generic)


@pytest.mark.parametrize("f", UNARY_RULES, ids=_name)
def test_unary_hvp_of_float32_arrays_is_float32(f):
    x, v = _unary_point(f, np.random.default_rng(2))
    x32, v32 = x.astype(np.float32), v.astype(np.float32)
    loss = lambda x: np.sum(f(x) * x)  # noqa: E731
    dual, generic, used = hvp_both(loss, x32, v32)
    assert used[f] >= 1
    assert dual.dtype == np.float32
    expected = fd_hvp(loss, x32, v32)[0]
    np.testing.assert_allclose(dual, expected, rtol=2e-4, atol=1e-4 * (1 + np.abs(expected).max()))
    assert generic.dtype == np.float32
    np.testing.assert_allclose(dual, generic, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", UNARY_RULES, ids=_name)
def test_unary_hvp_of_numpy_scalars_in_a_scalar_loop(f):
    x, v = _unary_point(f, np.random.default_rng(3), (4,))
    loss = lambda x: sum(f(x[i]) * x[i] for i in range(len(x)))  # noqa: E731
    dual, generic, used = hvp_both(loss, x, v)
    assert used[f] >= 4 and used[np.multiply] == 4
    # (x f)'' = 2 f' + x f''; f' by a central difference of f (its own closed form is the
    # first-order tests' business)
    h = 1e-6
    first = (f(x + h) - f(x - h)) / (2 * h)
    np.testing.assert_allclose(dual, (2 * first + x * UNARY_SECOND[f](x)) * v,
                               rtol=1e-7, atol=1e-8)
    assert_close_leaves(dual, fd_hvp(loss, x, v), rtol=1e-6, atol=1e-8)
    assert_same_as_generic(dual, generic)


@pytest.mark.parametrize("f", UNARY_RULES, ids=_name)
def test_unary_hvp_at_numpy_and_python_scalars(f):
    x, v = _unary_point(f, np.random.default_rng(4), (3,))
    # a NumPy scalar input
    dual, generic, used = hvp_both(lambda t: f(t), np.float64(x[0]), np.float64(v[0]))
    assert used[f] >= 1
    np.testing.assert_allclose(dual, UNARY_SECOND[f](x[0]) * v[0], rtol=1e-12, atol=1e-12)
    assert_same_as_generic(dual, generic)
    # Python floats: a list of them, summed in a scalar loop
    xs, vs = [float(t) for t in x], [float(t) for t in v]
    loss = lambda xs: sum(f(xs[i]) for i in range(len(xs)))  # noqa: E731
    dual, generic, used = hvp_both(loss, xs, vs)
    assert used[f] >= 3
    np.testing.assert_allclose(np.array(dual, float), UNARY_SECOND[f](x) * v, rtol=1e-12,
                               atol=1e-12)
    assert_close_leaves(dual, fd_hvp(loss, xs, vs), rtol=1e-6, atol=1e-8)
    assert_same_as_generic(dual, generic)


@pytest.mark.parametrize("f", sorted(set(UNARY_RULES) - NOT_HOLOMORPHIC, key=_name), ids=_name)
def test_unary_hvp_of_complex_inputs(f):
    rng = np.random.default_rng(5)
    x, _ = _unary_point(f, rng, (3,))
    z = x + 0.3j * rng.standard_normal(3)  # Re z stays in the real domain: no branch cut
    v = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    loss = lambda z: np.sum(np.abs(f(z)) ** 2)  # noqa: E731  # real, of a holomorphic f
    dual, generic, used = hvp_both(loss, z, v)
    assert used[f] >= 1
    assert dual.dtype == np.complex128
    assert_close_leaves(dual, fd_hvp(loss, z, v), rtol=1e-6, atol=1e-8)
    assert_same_as_generic(dual, generic)


@pytest.mark.parametrize("f", BINARY_RULES, ids=_name)
@pytest.mark.parametrize("seed", [0, 1])
def test_binary_hvp_of_float64_arrays(f, seed):
    rng = np.random.default_rng(seed)
    a, b = _binary_point(f, rng)
    va, vb = rng.standard_normal(5), rng.standard_normal(5)
    loss = lambda p: np.sum(f(p[0], p[1]))  # noqa: E731
    dual, generic, used = hvp_both(loss, (a, b), (va, vb))
    assert used[f] >= 1
    assert_close_leaves(dual, _binary_closed_form(f, a, b, va, vb), rtol=1e-10, atol=1e-12)
    assert_close_leaves(dual, fd_hvp(loss, (a, b), (va, vb)), rtol=1e-6, atol=1e-8)
    assert_same_as_generic(dual, generic)


@pytest.mark.parametrize("f", BINARY_RULES, ids=_name)
def test_binary_hvp_of_float32_arrays_is_float32(f):
    rng = np.random.default_rng(6)
    a, b = (t.astype(np.float32) for t in _binary_point(f, rng))
    va, vb = (rng.standard_normal(5).astype(np.float32) for _ in range(2))
    loss = lambda p: np.sum(f(p[0], p[1]) * p[0])  # noqa: E731
    dual, generic, used = hvp_both(loss, (a, b), (va, vb))
    assert used[f] >= 1
    assert all(t.dtype == np.float32 for t in leaves_of(dual))
    expected = fd_hvp(loss, (a, b), (va, vb))
    scale = 1 + max(np.abs(e).max() for e in expected)
    assert_close_leaves(dual, expected, rtol=2e-4, atol=1e-4 * scale)
    assert all(t.dtype == np.float32 for t in leaves_of(generic))
    assert_close_leaves(dual, generic, rtol=1e-5, atol=1e-6 * scale)


@pytest.mark.parametrize("f", BINARY_RULES, ids=_name)
def test_binary_hvp_of_numpy_scalars_and_python_floats_in_scalar_loops(f):
    rng = np.random.default_rng(7)
    a, b = _binary_point(f, rng, ((3,), (3,)))
    va, vb = rng.standard_normal(3), rng.standard_normal(3)
    expected = _binary_closed_form(f, a, b, va, vb)
    # NumPy scalars: x[i] of arrays
    loss = lambda p: sum(f(p[0][i], p[1][i]) for i in range(3))  # noqa: E731
    dual, generic, used = hvp_both(loss, (a, b), (va, vb))
    assert used[f] >= 3
    assert_close_leaves(dual, expected, rtol=1e-10, atol=1e-12)
    assert_same_as_generic(dual, generic)
    # Python floats
    floats = ([float(t) for t in a], [float(t) for t in b])
    directions = ([float(t) for t in va], [float(t) for t in vb])
    dual, generic, used = hvp_both(loss, floats, directions)
    assert used[f] >= 3
    assert_close_leaves([np.array(part, float) for part in dual], expected, rtol=1e-10,
                        atol=1e-12)
    assert_close_leaves([np.array(part, float) for part in dual], fd_hvp(loss, floats,
                        directions), rtol=1e-6, atol=1e-8)
    assert_same_as_generic([np.array(part) for part in dual],
                           [np.array(part) for part in generic])


@pytest.mark.parametrize("f", BINARY_RULES, ids=_name)
def test_binary_hvp_with_broadcasting(f):
    rng = np.random.default_rng(8)
    a, b = _binary_point(f, rng, ((3, 1), (4,)))
    va, vb = rng.standard_normal((3, 1)), rng.standard_normal(4)
    loss = lambda p: np.sum(f(p[0], p[1]))  # noqa: E731
    dual, generic, used = hvp_both(loss, (a, b), (va, vb))
    assert used[f] >= 1
    assert [t.shape for t in leaves_of(dual)] == [(3, 1), (4,)]
    assert_close_leaves(dual, _binary_closed_form(f, a, b, va, vb), rtol=1e-10, atol=1e-12)
    assert_close_leaves(dual, fd_hvp(loss, (a, b), (va, vb)), rtol=1e-6, atol=1e-8)
    assert_same_as_generic(dual, generic)


@pytest.mark.parametrize("f", BINARY_RULES, ids=_name)
@pytest.mark.parametrize("which", ["first", "second"])
def test_binary_hvp_with_a_constant_argument(f, which):
    rng = np.random.default_rng(9)
    a, b = _binary_point(f, rng)
    v = rng.standard_normal(5)
    if which == "first":
        loss = lambda x: np.sum(f(x, b))  # noqa: E731
        expected = BINARY_SECOND[f](a, b)[0] * v
        x = a
    else:
        loss = lambda x: np.sum(f(a, x))  # noqa: E731
        expected = BINARY_SECOND[f](a, b)[2] * v
        x = b
    dual, generic, used = hvp_both(loss, x, v)
    assert used[f] >= 1
    np.testing.assert_allclose(dual, expected, rtol=1e-10, atol=1e-12)
    assert_close_leaves(dual, fd_hvp(loss, x, v), rtol=1e-6, atol=1e-8)
    assert_same_as_generic(dual, generic)


@pytest.mark.parametrize("exponent", [3, 2, 1, 0, 3.0, 0.5])
def test_power_with_a_constant_python_exponent(exponent):
    x = np.array([0.4, 1.3, 2.2])
    v = np.array([1.0, -2.0, 0.5])
    loss = lambda x: np.sum(x ** exponent)  # noqa: E731
    dual, generic, used = hvp_both(loss, x, v)
    assert used[np.power] == 1
    np.testing.assert_allclose(dual, exponent * (exponent - 1) * x ** (exponent - 2) * v,
                               rtol=1e-12, atol=1e-12)
    assert_same_as_generic(dual, generic)
    # and in a scalar loop, where x[i] ** 3 takes the numbers' fast paths
    loop = lambda x: sum(x[i] ** exponent for i in range(3))  # noqa: E731
    dual, generic, used = hvp_both(loop, x, v)
    assert used[np.power] == 3
    np.testing.assert_allclose(dual, exponent * (exponent - 1) * x ** (exponent - 2) * v,
                               rtol=1e-12, atol=1e-12)
    assert_same_as_generic(dual, generic)


@pytest.mark.parametrize("f", sorted(set(BINARY_RULES) - NOT_HOLOMORPHIC, key=_name), ids=_name)
def test_binary_hvp_of_complex_inputs(f):
    rng = np.random.default_rng(10)
    a, b = _binary_point(f, rng, ((3,), (3,)))
    a = a + 0.3j * rng.standard_normal(3)
    b = b + 0.3j * rng.standard_normal(3)
    va, vb = (rng.standard_normal(3) + 1j * rng.standard_normal(3) for _ in range(2))
    loss = lambda p: np.sum(np.abs(f(p[0], p[1])) ** 2)  # noqa: E731
    dual, generic, used = hvp_both(loss, (a, b), (va, vb))
    assert used[f] >= 1
    assert all(t.dtype == np.complex128 for t in leaves_of(dual))
    assert_close_leaves(dual, fd_hvp(loss, (a, b), (va, vb)), rtol=1e-6, atol=1e-8)
    assert_same_as_generic(dual, generic)


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(UNARY_RULES), st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=6),
       st.integers(0, 2 ** 16))
def test_unary_hvp_at_sampled_points(f, offsets, seed):
    low, high = UNARY_DOMAIN.get(f, (-1.5, 1.5))
    x = (low + high) / 2 + (high - low) / 2 * 0.95 * np.array(offsets)
    v = np.random.default_rng(seed).standard_normal(x.shape)
    dual, generic, used = hvp_both(lambda x: np.sum(f(x)), x, v)
    assert used[f] >= 1
    np.testing.assert_allclose(dual, UNARY_SECOND[f](x) * v, rtol=1e-12, atol=1e-12)
    assert_same_as_generic(dual, generic)


# --- 2. the second-partials tables, one rule at a time ---------------------------------------

def _pullback_cotangents(f, args, dy) -> list:
    """The plain pullback's cotangents (no second derivatives involved)."""
    return [unthunk(c) for c in rrule(f, *args)[1](dy)[1:]]


def check_elementwise_dual(f, args, tangents, dy, ddy, step: float = 1e-6,
                           rtol: float = 1e-6, atol: float = 1e-8) -> None:
    """The dual form of the elementwise rule ``f`` at ``args`` (with ``tangents``, ``None``
    for a constant) against central differences of its plain rule: the output tangent along
    the tangents; each cotangent; each cotangent's tangent along the tangents and along ``ddy``
    (the tangent of ``dy``). Fails naming the argument whose tangent is wrong."""
    name = f.__name__
    y, out_tangent, _, pair = DUAL_FORMS[f][1](args, tangents, {})
    assert type(pair) is _ElementwiseDual

    def shifted(t):
        return tuple(a if da is None else a + t * da for a, da in zip(args, tangents))

    np.testing.assert_allclose(
        0 if isinstance(out_tangent, AbstractZero) else out_tangent,
        (f(*shifted(step)) - f(*shifted(-step))) / (2 * step), rtol=rtol, atol=atol,
        err_msg=f"{name}: output tangent")
    pairs = pair(dy, ddy, (True,) * len(args))
    moved_dy = 0 if ddy is None else step * ddy
    plus = _pullback_cotangents(f, shifted(step), dy + moved_dy)
    minus = _pullback_cotangents(f, shifted(-step), dy - moved_dy)
    for k, (cotangent, tangent) in enumerate(pairs):
        np.testing.assert_allclose(cotangent, _pullback_cotangents(f, args, dy)[k],
                                   rtol=1e-14, atol=0, err_msg=f"{name}: cotangent {k}")
        expected = (plus[k] - minus[k]) / (2 * step)
        np.testing.assert_allclose(0 * expected if tangent is None else tangent, expected,
                                   rtol=rtol, atol=atol,
                                   err_msg=f"{name}: tangent of the cotangent of argument {k}")


def _table_cases():
    cases = []
    for f in UNARY_RULES:
        for case in ("dx", "ddy", "dx and ddy"):
            cases.append(pytest.param(f, case, False, id=f"{f.__name__}-{case}"))
        if f not in NOT_HOLOMORPHIC:
            cases.append(pytest.param(f, "dx and ddy", True, id=f"{f.__name__}-complex"))
    for f in BINARY_RULES:
        for case in ("da", "db", "ddy", "da db ddy"):
            cases.append(pytest.param(f, case, False, id=f"{f.__name__}-{case}"))
        if f not in NOT_HOLOMORPHIC:
            cases.append(pytest.param(f, "da db ddy", True, id=f"{f.__name__}-complex"))
    return cases


@pytest.mark.parametrize("f, case, complex_point", _table_cases())
def test_second_partials_table(f, case, complex_point):
    rng = np.random.default_rng(11)
    shape = (4,)

    def normal():
        value = rng.standard_normal(shape)
        return value + 1j * rng.standard_normal(shape) if complex_point else value

    if f in UNARY_RULES:
        args = (_unary_point(f, rng, shape)[0],)
    else:
        args = _binary_point(f, rng, (shape, shape))
    if complex_point:
        args = tuple(a + 0.3j * rng.standard_normal(shape) for a in args)
    tangents = tuple(normal() if name in case else None
                     for name in (("dx",) if len(args) == 1 else ("da", "db")))
    ddy = normal() if "ddy" in case else None
    check_elementwise_dual(f, args, tangents, normal(), ddy)


def test_a_wrong_second_partial_is_caught_by_the_table_check():
    @recorded_whole
    def cube(x):
        return x ** 3

    scalar_rule(cube, lambda y, x: 3 * x * x, second=lambda y, x: 3 * x)  # should be 6 x
    try:
        x, dx, dy = np.array([0.5, 1.5]), np.array([1.0, -1.0]), np.array([1.0, 2.0])
        with pytest.raises(AssertionError, match="cube: tangent of the cotangent of argument 0"):
            check_elementwise_dual(cube, (x,), (dx,), dy, None)
        check_elementwise_dual(cube, (x,), (None,), dy, dx)  # the table is not used: right
    finally:
        DUAL_FORMS.pop(cube, None)
        rrule._rules.pop(cube, None)
        frule._rules.pop(cube, None)


# --- 3. define'd multilinear and linear rules ------------------------------------------------

_R = np.random.default_rng(12)
A34, B42, C24 = _R.standard_normal((3, 4)), _R.standard_normal((4, 2)), _R.standard_normal((2, 4))
U4, W4, W3 = _R.standard_normal(4), _R.standard_normal(4), _R.standard_normal(3)
T234, T242 = _R.standard_normal((2, 3, 4)), _R.standard_normal((2, 4, 2))
CONDITION = _R.standard_normal((3, 4)) > 0


def _direction_like(x, seed):
    rng = np.random.default_rng(seed)
    if isinstance(x, tuple):
        return tuple(rng.standard_normal(np.shape(part)) for part in x)
    return rng.standard_normal(np.shape(x))


# (id, loss, point, the functions that must take the dual path). Each loss is nonlinear
# around the multilinear operation, so that its second derivative is not zero.
MULTILINEAR = [
    ("matrix@matrix", lambda p: np.sum(np.tanh(p[0] @ p[1])), (A34, B42), {np.matmul}),
    ("matrix@vector", lambda p: np.sum(np.sin(p[0] @ p[1])), (A34, U4), {np.matmul}),
    ("vector@matrix", lambda p: np.sum(np.sin(p[0] @ p[1])), (U4, B42), {np.matmul}),
    ("batched matmul", lambda p: np.sum(np.tanh(np.matmul(p[0], p[1]))), (T234, T242),
     {np.matmul}),
    ("x @ x.T", lambda x: np.sum(np.tanh(x @ x.T)), A34, {np.matmul, np.transpose}),
    ("constant @ x", lambda x: np.sum(np.exp(0.3 * (A34 @ x))), B42, {np.matmul}),
    ("x @ constant", lambda x: np.sum(np.sin(x @ B42) ** 2), A34, {np.matmul}),
    ("dot matrices", lambda p: np.sum(np.sin(np.dot(p[0], p[1]))), (A34, B42), {np.dot}),
    ("dot vectors", lambda p: np.sin(np.dot(p[0], p[1])), (U4, W4), {np.dot}),
    ("dot x x", lambda x: np.dot(x, x) ** 2, U4, {np.dot}),
    ("outer", lambda p: np.sum(np.tanh(np.outer(p[0], p[1]))), (U4, W3), {np.outer}),
    ("einsum ij,jk", lambda p: np.sum(np.sin(np.einsum("ij,jk->ik", p[0], p[1]))), (A34, B42),
     {np.einsum}),
    ("einsum i,i", lambda x: np.sin(np.einsum("i,i->", x, x)), U4, {np.einsum}),
    ("tensordot", lambda p: np.sum(np.tanh(np.tensordot(p[0], p[1], axes=([1], [0])))),
     (A34, B42), {np.tensordot}),
    ("tensordot axes=2", lambda p: np.sin(np.tensordot(p[0], p[1], axes=2)), (A34, A34[::-1]),
     {np.tensordot}),
    ("sum axis keepdims", lambda x: np.sum(np.sum(x, axis=1, keepdims=True) ** 3), A34,
     {np.sum}),
    ("sum axis", lambda x: np.sum(np.sin(np.sum(x, axis=0))), A34, {np.sum}),
    ("mean axis", lambda x: np.sum(np.mean(x, axis=0) ** 3), A34, {np.mean}),
    ("mean keepdims", lambda x: np.sum(np.exp(np.mean(x, axis=(0, 2), keepdims=True))), T234,
     {np.mean}),
    ("transpose", lambda x: np.sum(np.sin(np.transpose(x, (1, 0, 2))) * T234.transpose(1, 0, 2)),
     T234 * 0.5, {np.transpose}),
    ("where", lambda p: np.sum(np.where(CONDITION, p[0], p[1]) ** 3), (A34, A34 + 1),
     {np.where}),
    ("where one constant", lambda x: np.sum(np.sin(np.where(CONDITION, x, 2.0) * x)), A34,
     {np.where}),
    ("reshape", lambda x: np.sum(np.sin(x.reshape(4, 3)) * x.reshape(4, 3)), A34,
     {np.reshape}),
    # No dual path for these (yet): recorded by tracing their rules, exactly.
    ("concatenate", lambda x: np.sum(np.concatenate([x, x ** 2]) ** 3), U4, set()),
    ("stack", lambda p: np.sum(np.sin(np.stack([p[0], p[1] * p[0]]))), (U4, W4), set()),
]


@pytest.mark.parametrize("loss, point, dual_functions",
                         [pytest.param(*case[1:], id=case[0]) for case in MULTILINEAR])
def test_hvp_through_multilinear_rules(loss, point, dual_functions):
    direction = _direction_like(point, 13)
    dual, generic, used = hvp_both(loss, point, direction)
    for function in dual_functions:
        assert used[function] >= 1, f"{function.__name__} did not take the dual path"
    assert_close_leaves(dual, fd_hvp(loss, point, direction), rtol=1e-6, atol=1e-8)
    assert_same_as_generic(dual, generic, rtol=1e-11, atol=1e-12)
    assert [t.shape for t in leaves_of(dual)] == [np.shape(t) for t in leaves_of(point)]


def test_hvp_of_a_quadratic_form_in_closed_form():
    # f(x) = x^T M x: H = M + M^T, whatever the direction; matmul with x on both sides
    M = A34[:, :3] @ A34[:, :3].T + np.eye(3)
    x, v = W3, np.array([1.0, -2.0, 0.5])
    dual, generic, used = hvp_both(lambda x: x @ M @ x, x, v)
    assert used[np.matmul] == 2
    np.testing.assert_allclose(dual, (M + M.T) @ v, rtol=1e-13)
    assert_same_as_generic(dual, generic)


# --- 4. getitem ------------------------------------------------------------------------------

X6 = np.linspace(0.4, 1.6, 6)
A34_POSITIVE = np.abs(A34) + 0.5

GETITEM = [
    ("x[i] loop", lambda x: sum(x[i] ** 3 * x[(i + 1) % 6] for i in range(6)), X6, True),
    ("x[i] read twice", lambda x: sum(np.sin(x[i]) * x[i] for i in range(6)) + x[2] ** 4, X6,
     True),
    ("A[i, j] loop", lambda a: sum(np.log(a[i, j]) * a[i, (j + 1) % 4]
                                   for i in range(3) for j in range(4)), A34_POSITIVE, True),
    ("A[i] rows", lambda a: sum(np.sum(np.tanh(a[i]) * a[i]) for i in range(3)), A34, True),
    ("slices", lambda x: np.sum(np.sin(x[1:4]) * x[::2]) + np.sum(x[-2:] ** 3), X6, True),
    ("2-d slices", lambda a: np.sum(np.exp(a[:, 1:3]) * a[:, ::2][:, :2]), A34 * 0.5, True),
    ("fancy index with repeats", lambda x: np.sum(x[np.array([0, 0, 2, 5, 2, 2])] ** 3), X6,
     True),
    ("fancy list index with repeats", lambda x: np.sum(np.sin(x[[1, 1, 3]]) * x[[1, 3, 3]]), X6,
     False),
    ("boolean mask", lambda x: np.sum(x[x > 0.9] ** 3) + np.sum(np.sin(x[X6 < 1.0])), X6, True),
    ("2-d boolean mask", lambda a: np.sum(np.exp(a[CONDITION]) * a[CONDITION]), A34 * 0.5, True),
]


@pytest.mark.parametrize("loss, point, dual_getitem",
                         [pytest.param(*case[1:], id=case[0]) for case in GETITEM])
def test_hvp_through_indexing(loss, point, dual_getitem):
    direction = _direction_like(point, 14)
    dual, generic, used = hvp_both(loss, point, direction)
    if dual_getitem:
        assert used[operator.getitem] >= 1
    assert_close_leaves(dual, fd_hvp(loss, point, direction), rtol=1e-6, atol=1e-8)
    assert_same_as_generic(dual, generic, rtol=1e-11, atol=1e-12)


def test_hvp_of_a_scalar_index_loop_in_closed_form():
    x = np.linspace(-1.0, 2.0, 7)
    v = np.arange(7.0) - 3
    dual, generic, used = hvp_both(lambda x: sum(x[i] ** 3 for i in range(7)), x, v)
    assert used[operator.getitem] == 7 and used[np.power] == 7
    np.testing.assert_allclose(dual, 6 * x * v, rtol=1e-14)  # H = diag(6 x)
    assert_same_as_generic(dual, generic)


def _size(value) -> int:
    """The elements of a value, a tuple or list of them (0 for tangent types, thunks...)."""
    from chainrules.ad.trace.traced import primal_value

    if isinstance(value, (tuple, list)):
        return sum(_size(part) for part in value)
    value = primal_value(value)
    return np.size(value) if type(value) is np.ndarray or np.isscalar(value) else 0


def _second_order_work(run) -> int:
    """What ``run()`` costs at order 2, counted (load cannot change it): operations recorded
    on reverse tapes; operations forward traces run, by frules, by dual forms or by the
    number and product forms, and the elements of their outputs; the elements of the
    cotangents that dual pullbacks return (a dense array per element read would show in
    these)."""
    from chainrules.ad.trace import dual_pullbacks

    total = [0]
    tape_exit, apply, record_dual = Tape.__exit__, ForwardTrace.apply, ForwardTrace.record_dual
    dual_pullback = dual_pullbacks.DualPullback.__call__
    forms = {name: getattr(ForwardTrace, name)
             for name in ("record_numbers", "record_arrays", "record_product",
                          "record_total")}

    def counting_form(original):
        def count(self, *args):
            out = original(self, *args)
            if out is not None:
                total[0] += 1 + _size(out)
            return out
        return count

    def counting_exit(self, *exc):
        total[0] += len(self.records)
        return tape_exit(self, *exc)

    def counting_apply(self, *args):
        out = apply(self, *args)
        total[0] += 1 + _size(out)
        return out

    def counting_record_dual(self, *args):
        out = record_dual(self, *args)
        total[0] += 1 + _size(out)
        return out

    def counting_pullback(self, dy):
        out = dual_pullback(self, dy)
        total[0] += _size(out)
        return out

    Tape.__exit__, ForwardTrace.apply, ForwardTrace.record_dual = \
        counting_exit, counting_apply, counting_record_dual
    dual_pullbacks.DualPullback.__call__ = counting_pullback
    for name, original in forms.items():
        setattr(ForwardTrace, name, counting_form(original))
    try:
        run()
    finally:
        Tape.__exit__, ForwardTrace.apply, ForwardTrace.record_dual = \
            tape_exit, apply, record_dual
        dual_pullbacks.DualPullback.__call__ = dual_pullback
        for name, original in forms.items():
            setattr(ForwardTrace, name, original)
    return total[0]


@pytest.mark.parametrize("loop", ["x[i] ** 3", "x[i] * x[i + 1]", "A[i, j] ** 2"])
def test_index_loops_stay_linear_at_order_2(loop):
    from chainrules.testing import check_linear

    def make(n):
        if loop == "A[i, j] ** 2":
            x = np.linspace(0.5, 1.5, 2 * n).reshape(2, n)
            f = lambda a: sum(a[i, j] ** 2 * a[i, j] for i in range(2) for j in range(n))  # noqa
            expected = lambda x, v: 6 * x * v  # noqa: E731
        elif loop == "x[i] ** 3":
            x = np.linspace(0.5, 1.5, n)
            f = lambda x: sum(x[i] ** 3 for i in range(n))  # noqa: E731
            expected = lambda x, v: 6 * x * v  # noqa: E731
        else:
            x = np.linspace(0.5, 1.5, n)
            f = lambda x: sum(x[i] * x[i + 1] for i in range(n - 1))  # noqa: E731
            # H is 1 next to the diagonal: (H v)_i = v_{i-1} + v_{i+1}
            expected = lambda x, v: np.append(v[1:], 0) + np.insert(v[:-1], 0, 0)  # noqa: E731
        v = np.cos(np.arange(x.size)).reshape(x.shape)

        def run():
            with dual_records() as used:
                result = cr.hvp(f, x, v)
            assert used[operator.getitem] >= x.size  # the dual path, all the way
            np.testing.assert_allclose(result, expected(x, v), rtol=1e-12, atol=1e-12)
        return run

    result = check_linear(make, 40, count=_second_order_work, bound=8 * 1.25)
    assert result.counts[1] > 7 * result.counts[0]  # the count does see the work


def test_the_order_2_count_sees_a_quadratic_loop():
    from chainrules.testing import check_linear

    def make(n):
        x = np.linspace(0.5, 1.5, n)

        def run():  # reads a prefix of growing length: quadratic, on the dual path too
            cr.hvp(lambda x: sum(np.sum(x[:i + 1]) ** 2 for i in range(n)), x, np.ones(n))
        return run

    with pytest.raises(AssertionError, match="superlinear"):
        check_linear(make, 40, count=_second_order_work, bound=8 * 1.25, memory=False)


# --- 5. fallbacks are exact ------------------------------------------------------------------

def test_a_users_rrule_replaces_the_dual_form():
    from chainrules.core.tangents import NoTangent

    calls = [0]
    saved = rrule._rules[np.tanh]

    def counting_tanh_rule(x):
        calls[0] += 1
        y = np.tanh(x)
        return y, lambda dy: (NoTangent(), dy * (1 - y * y))

    x, v = np.array([-0.7, 0.2, 1.1]), np.array([1.0, 2.0, -1.0])
    loss = lambda x: np.sum(np.tanh(x) * x)  # noqa: E731
    # (x tanh x)'' = 2 sech^2 x - 2 x tanh x sech^2 x
    expected = (2 - 2 * x * np.tanh(x)) / np.cosh(x) ** 2 * v
    rrule.register(np.tanh, replace=True)(counting_tanh_rule)
    try:
        with dual_records() as used:
            result = cr.hvp(loss, x, v)
        assert calls[0] >= 1, "the user's rule was not used"
        assert used[np.tanh] == 0 and used[np.multiply] >= 1  # others keep their dual forms
        np.testing.assert_allclose(result, expected, rtol=1e-12)
        np.testing.assert_allclose(result, fd_hvp(loss, x, v)[0], rtol=1e-6, atol=1e-8)
    finally:
        rrule._rules[np.tanh] = saved
    with dual_records() as used:
        np.testing.assert_allclose(cr.hvp(loss, x, v), expected, rtol=1e-12)
    assert used[np.tanh] == 1  # restored: the dual form is back


def test_a_zero_direction_gives_a_zero_hvp():
    x = np.array([0.3, -1.2, 2.0])
    loss = lambda x: np.sum(np.sin(x) * x ** 3) + x[1] ** 2  # noqa: E731
    dual, generic, _ = hvp_both(loss, x, np.zeros(3))
    np.testing.assert_array_equal(dual, np.zeros(3))
    assert dual.dtype == np.float64
    assert_same_as_generic(dual, generic)


def test_a_structure_with_a_zero_tangent_leaf_falls_back_exactly():
    # the direction has no "b": b's values carry a zero tangent, whose operations take the
    # generic path, mixed in one computation with operations that take the dual path
    p = {"a": np.array([0.3, 0.8, -0.4]), "b": np.array([1.5, 0.7, 1.1])}
    loss = lambda p: np.sum(np.sin(p["a"] * p["b"]) * p["b"] ** 2)  # noqa: E731
    direction = {"a": np.array([1.0, -1.0, 0.5])}
    dual, generic, used = hvp_both(loss, p, direction)
    assert used[np.sin] == 1
    full = {"a": direction["a"], "b": np.zeros(3)}
    assert_close_leaves(dual, fd_hvp(loss, p, full), rtol=1e-6, atol=1e-8)
    assert_same_as_generic(dual, generic)


def test_grad_of_hvp_third_order():
    x = np.array([0.5, -1.0, 1.5])
    v, w = np.array([1.0, 2.0, -1.0]), np.array([0.5, -1.0, 2.0])
    # f = sum(x^4): H v = 12 x^2 v, and grad <w, H v> = 24 x v w
    third = cr.grad(lambda x: np.sum(w * cr.hvp(lambda y: np.sum(y ** 4), x, v)))(x)
    np.testing.assert_allclose(third, 24 * x * v * w, rtol=1e-12)

    def contracted(x):
        return np.sum(w * cr.hvp(lambda y: np.sum(np.sin(y) * np.exp(y[0] * y)), x, v))

    from .finite_differences import numerical_gradient

    with dual_records() as used:
        result = cr.grad(contracted)(x)
    assert used[np.sin] == 0  # values of a third level: the generic path
    np.testing.assert_allclose(result, numerical_gradient(contracted, x, step=1e-5),
                               rtol=1e-6, atol=1e-8)
    with generic_path():
        assert_same_as_generic(result, cr.grad(contracted)(x))


def test_jvp_of_grad_with_dict_parameters():
    rng = np.random.default_rng(15)
    p = {"W": rng.standard_normal((2, 3)), "b": rng.standard_normal(2), "x": rng.standard_normal(3)}
    t = {key: rng.standard_normal(np.shape(value)) for key, value in p.items()}
    loss = lambda p: np.sum(np.tanh(p["W"] @ p["x"] + p["b"]) ** 2)  # noqa: E731
    with dual_records() as used:
        _, dual = cr.jvp(cr.grad(loss), (p,), (t,))
    assert used[np.matmul] == 1 and used[np.tanh] == 1
    assert sorted(dual) == ["W", "b", "x"]
    assert_close_leaves(dual, fd_hvp(loss, p, t), rtol=1e-6, atol=1e-8)
    with generic_path():
        _, generic = cr.jvp(cr.grad(loss), (p,), (t,))
    assert_same_as_generic(dual, generic)


def test_hessian_equals_stacked_hvps():
    x = np.array([0.4, -0.3, 1.2, 0.7])
    M = A34[:, :4].T @ A34[:, :4]
    loss = lambda x: np.sum(np.sin(x) * (M @ x)) + x[0] * x[3] ** 3  # noqa: E731
    with dual_records() as used:
        hessian = cr.hessian(loss)(x)
    assert not used  # a batched forward trace: no dual forms
    columns = []
    with dual_records() as used:
        for e in np.eye(4):
            columns.append(cr.hvp(loss, x, e))
    assert used[np.matmul] == 4
    np.testing.assert_allclose(hessian, np.stack(columns, axis=1), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(hessian, hessian.T, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(hessian, np.stack([fd_hvp(loss, x, e)[0] for e in np.eye(4)],
                                                 axis=1), rtol=1e-6, atol=1e-8)


# --- 6. projection on the dual path ----------------------------------------------------------

@pytest.mark.parametrize("loss", [
    pytest.param(lambda x: np.sum(np.tanh(x @ x.T) * 2.0), id="matmul, Python float"),
    pytest.param(lambda x: sum(x[i, 0] ** 3 * 0.5 + np.sin(x[i, 1]) for i in range(3)),
                 id="index loop, Python float"),
    pytest.param(lambda x: np.sum(np.real(np.exp(1j * x) * x ** 2)), id="complex inside"),
    pytest.param(lambda x: np.sum(np.mean(x, axis=0) ** 2 / x), id="mean, divide"),
])
def test_float32_in_float32_hvp_out(loss):
    x = (np.abs(A34[:, :2]) + 0.5).astype(np.float32)
    v = np.cos(np.arange(6.0)).reshape(3, 2).astype(np.float32)
    dual, generic, used = hvp_both(loss, x, v)
    assert used  # some operations took the dual path
    assert dual.dtype == np.float32 and dual.shape == x.shape
    assert generic.dtype == np.float32
    expected = fd_hvp(loss, x, v)[0]
    scale = 1 + np.abs(expected).max()
    np.testing.assert_allclose(dual, expected, rtol=1e-4, atol=1e-4 * scale)
    np.testing.assert_allclose(dual, generic, rtol=1e-5, atol=1e-6 * scale)


def test_real_input_with_complex_intermediates_has_a_real_hvp():
    x = np.array([0.3, -1.1, 2.4])
    v = np.array([1.0, 0.5, -2.0])
    loss = lambda x: np.sum(np.real(np.exp(1j * x) * x ** 2))  # sum(x^2 cos x)  # noqa: E731
    dual, generic, used = hvp_both(loss, x, v)
    assert used[np.exp] == 1 and used[np.multiply] >= 1
    assert dual.dtype == np.float64
    # (x^2 cos x)'' = 2 cos x - 4 x sin x - x^2 cos x
    np.testing.assert_allclose(dual, (2 * np.cos(x) - 4 * x * np.sin(x) - x ** 2 * np.cos(x))
                               * v, rtol=1e-12, atol=1e-13)
    assert_same_as_generic(dual, generic)


def test_real_loop_with_complex_numbers_has_a_real_hvp():
    x = np.array([0.3, -1.1, 2.4])
    v = np.array([1.0, 0.5, -2.0])
    loss = lambda x: sum(abs(np.exp(1j * x[i]) * x[i]) ** 2 for i in range(3))  # sum(x^2)  # noqa
    dual, generic, used = hvp_both(loss, x, v)
    assert used[np.exp] == 3
    assert dual.dtype == np.float64
    np.testing.assert_allclose(dual, 2 * v, rtol=1e-12)
    assert_same_as_generic(dual, generic)


# --- power at the edges of its conventions ---------------------------------------------------

EXPONENTS = np.array([0.0, 1.0, 2.0])  # module level: an array made inside f is a constant
# of both levels (a zero tangent), whose operations take the generic path


@pytest.mark.parametrize("loss, expected", [
    pytest.param(lambda x: np.sum(sum(POLYNOMIAL[k] * x ** k for k in range(4))),
                 lambda x: 2 * POLYNOMIAL[2] + 6 * POLYNOMIAL[3] * x, id="x ** k"),
    pytest.param(lambda x: sum(sum(POLYNOMIAL[k] * x[i] ** k for k in range(4))
                               for i in range(3)),
                 lambda x: 2 * POLYNOMIAL[2] + 6 * POLYNOMIAL[3] * x, id="x[i] ** k"),
    pytest.param(lambda x: np.sum(x ** EXPONENTS), lambda x: np.array([0.0, 0.0, 2.0]),
                 id="x ** array"),
    pytest.param(lambda x: np.sum(x ** 0.0), lambda x: 0 * x, id="x ** 0.0"),
])
def test_hvp_of_powers_at_zero_is_finite(loss, expected):
    # x ** 0 at x == 0: the second derivative is 0 (the first is 0 for every x), not the
    # 0 * inf of b (b - 1) x ** (b - 2); the dual path gave NaN here
    x, v = np.array([0.0, 1.0, -0.5]), np.array([1.0, 2.0, -1.0])
    with np.errstate(all="raise"):
        dual, generic, used = hvp_both(loss, x, v)
    assert used[np.power] >= 1
    np.testing.assert_allclose(dual, expected(x) * v, rtol=1e-14, atol=1e-14)
    assert_same_as_generic(dual, generic)


POLYNOMIAL = np.array([1.5, -2.0, 3.0, 0.5])


def test_hvp_of_a_traced_exponent_at_zero():
    # d2(a ** b)/da db = a ** (b - 1) (1 + b log a) is continuous across b == 0: 1/a there
    a, b = np.array([1.5, 0.7]), np.array([0.0, 2.0])
    va, vb = np.array([0.0, 0.0]), np.array([1.0, 1.0])
    loss = lambda p: np.sum(p[0] ** p[1])  # noqa: E731
    with dual_records() as used:
        dual = cr.hvp(loss, (a, b), (va, vb))
    assert used[np.power] == 1
    mixed = a ** (b - 1) * (1 + b * np.log(a))
    np.testing.assert_allclose(leaves_of(dual)[0], mixed * vb, rtol=1e-14)
    assert_close_leaves(dual, fd_hvp(loss, (a, b), (va, vb)), rtol=1e-6, atol=1e-8)
    # a zero base: the second derivatives are taken finite, as the traced rule takes them
    zero = (np.array([0.0, 0.0, 0.0]), np.array([0.0, 2.0, 3.0]))
    ones = (np.ones(3), np.ones(3))
    dual, generic, used = hvp_both(loss, zero, ones)
    assert used[np.power] == 1
    np.testing.assert_array_equal(np.isfinite(np.concatenate(leaves_of(dual))), True)
    assert_close_leaves(dual, ([0.0, 2.0, 0.0], [0.0, 0.0, 0.0]), rtol=0, atol=0)
    assert_same_as_generic(dual, generic)


# --- 6. cotangent pairs summed in place --------------------------------------------------------

@contextlib.contextmanager
def pair_additions():
    """A list of the in-place additions into cotangent pairs (`add_pair_in_place`) inside the
    block: True for each one done, False for each one refused."""
    from chainrules.ad.transforms import reverse

    done: list = []
    original = reverse.add_pair_in_place

    def counting(total, t):
        added = original(total, t)
        done.append(added)
        return added

    reverse.add_pair_in_place = counting
    try:
        yield done
    finally:
        reverse.add_pair_in_place = original


def rnn_loss(w, steps=12):
    W = w.reshape(4, 4)
    h = np.linspace(-0.5, 0.5, 4)
    for t in range(steps):
        h = np.tanh(W @ h + 0.1 * t)
    return np.sum(h)


def test_a_weight_used_every_step_sums_its_cotangent_pairs_in_place():
    w = np.random.default_rng(3).normal(size=16) * 0.4
    v = np.cos(np.arange(16.0))
    with pair_additions() as done:
        dual, generic, used = hvp_both(rnn_loss, w, v)
    # W's slot receives one contribution per step: the first two make the pair, the other
    # ten are added into its buffers
    assert done.count(True) >= 10 and used[np.matmul] == 12
    np.testing.assert_allclose(dual, fd_hvp(rnn_loss, w, v)[0], rtol=1e-6, atol=1e-8)
    assert_same_as_generic(dual, generic)


def test_summing_pairs_in_place_never_writes_a_shared_cotangent():
    # add's pullback hands the same cotangent to both arguments, and reshape's a view of it:
    # the first contribution to a slot is stored as it is, so only the engine's own sum may
    # be written into
    def loss(x):
        a, b = 3 * x, 2 * x
        m = a ** 2  # recorded before n, so pulled back after it: a's slot then holds n's
        n = a + b  # cotangent, which b's slot holds too, and m's is added to it
        y = x + x
        z = (y + y).reshape(2, 3) + x.reshape(2, 3)
        return np.sum(m) + np.sum(n ** 2) + np.sum(z ** 2) + np.sum(x * y)

    x, v = np.linspace(-1, 1, 6), np.arange(6.0) - 2
    with pair_additions() as done:
        dual, generic, _ = hvp_both(loss, x, v)
    assert True in done
    # loss = (9 + 25 + 25 + 2) sum(x^2): H = 122 I
    np.testing.assert_allclose(dual, 122 * v, rtol=1e-14)
    assert_same_as_generic(dual, generic)


def test_number_cotangent_pairs_in_a_scalar_loop():
    # a = x[0] is read once and used n times: H_00 = 2, H_0i = H_i0 = 1
    def loss(x):
        a = x[0]
        return sum(a * x[i] for i in range(x.shape[0]))

    x, v = np.linspace(0.5, 1.5, 9), np.cos(np.arange(9.0))
    with pair_additions() as done:
        dual, generic, _ = hvp_both(loss, x, v)
    assert done.count(True) >= 7
    expected = np.full(9, v[0])
    expected[0] = v[0] + v.sum()
    np.testing.assert_allclose(dual, expected, rtol=1e-14)
    assert_same_as_generic(dual, generic)


@contextlib.contextmanager
def sparse_sums():
    """A list with an entry per piece added to a lazy sum of traced sparse cotangents
    (`SparseSum`, the general path of ``x[i]``'s cotangents at order 2) inside the block."""
    from chainrules.core.sparse import SparseSum

    added: list = []
    original = SparseSum.add

    def counting(total, t):
        added.append(type(t).__name__)
        return original(total, t)

    SparseSum.add = counting
    try:
        yield added
    finally:
        SparseSum.add = original


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_an_index_loop_sums_its_cotangent_pairs_into_two_buffers(dtype):
    # x[i]'s cotangents under hvp carry tangents: summed into a pair of owned buffers in
    # place (O(1) each), not kept as pieces for one scatter at the end. H = diag(6 x) plus
    # x[0] x[2]'s two entries.
    def loss(x):
        return sum(x[i] ** 3 for i in range(x.shape[0])) + x[0] * x[2]

    x = np.linspace(-1.0, 1.5, 7).astype(dtype)
    v = np.cos(np.arange(7.0)).astype(dtype)
    with sparse_sums() as pieces:
        dual = cr.hvp(loss, x, v)
    expected = 6 * x.astype(np.float64) * v
    expected[0] += v[2]
    expected[2] += v[0]
    assert pieces == [] and dual.dtype == dtype and dual.shape == x.shape
    np.testing.assert_allclose(dual, expected, rtol=1e-14 if dtype == np.float64 else 1e-6)


def test_slices_and_numbers_read_under_hvp_sum_as_pairs():
    # slices, integer arrays with repeats, single numbers and a dense use of x, in every
    # order of arrival at x's slot: loss = sum(x[1:4] ** 2) + sum(x[[0, 0, 3]] ** 2)
    # + x[2] ** 3 + x[4] * sum(x ** 2), whose Hessian is written out below
    def loss(x):
        head = np.sum(x[1:4] ** 2)
        picked = np.sum(x[np.array([0, 0, 3])] ** 2)
        return head + x[2] ** 3 + picked + x[4] * np.sum(x ** 2)

    x, v = np.linspace(0.5, 1.5, 6), np.sin(np.arange(6.0)) + 0.5
    hessian = np.zeros((6, 6))
    hessian[[1, 2, 3], [1, 2, 3]] += 2
    hessian[0, 0] += 4  # x[0] read twice: 2 * (2 x0)'
    hessian[3, 3] += 2
    hessian[2, 2] += 6 * x[2]
    hessian += 2 * x[4] * np.eye(6)
    hessian[4, :] += 2 * x
    hessian[:, 4] += 2 * x
    with pair_additions() as done, sparse_sums() as pieces:
        dual, generic, _ = hvp_both(loss, x, v)
    assert True in done and pieces == []
    np.testing.assert_allclose(dual, hessian @ v, rtol=1e-13)
    assert_same_as_generic(dual, generic)


@contextlib.contextmanager
def write_pullback_calls():
    """A list with an entry per call of a write's pullback (`WritePullback`) inside the block:
    the writes of one number whose cotangent is an owned pair are pulled back without one."""
    from chainrules.ad.dispatch.writes import WritePullback

    calls: list = []
    original = WritePullback.__call__

    def counting(pullback, dy):
        calls.append(pullback.mode)
        return original(pullback, dy)

    WritePullback.__call__ = counting
    try:
        yield calls
    finally:
        WritePullback.__call__ = original


def heat_scheme(u0, steps=4, r=0.3):
    """An explicit heat step written one number at a time, into rows of a grid."""
    n = u0.shape[0]
    u = np.zeros((steps + 1, n), dtype=u0.dtype)
    u[0] = u0
    for k in range(steps):
        for i in range(1, n - 1):
            u[k + 1, i] = u[k, i] + r * (u[k, i + 1] - 2.0 * u[k, i] + u[k, i - 1])
    return np.sum(u[-1] ** 2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_number_writes_under_hvp_pull_back_on_a_pair_of_buffers(dtype):
    # the scheme is linear, u[-1] = A^steps u0 = M u0: the Hessian of sum(u[-1]^2) is 2 M^T M
    n, steps, r = 7, 4, 0.3
    A = np.zeros((n, n))
    for i in range(1, n - 1):
        A[i, i - 1], A[i, i], A[i, i + 1] = r, 1 - 2 * r, r
    M = np.linalg.matrix_power(A, steps)
    u0 = np.sin(np.linspace(0.0, 3.0, n)).astype(dtype)
    v = np.cos(np.arange(n) * 0.7).astype(dtype)
    with write_pullback_calls() as calls, sparse_sums() as pieces, \
            forward_writes() as general:
        dual = cr.hvp(heat_scheme, u0, v)
    # forward mode's general writes: u[0] = u0 while recording (every number then written
    # into u's value and tangent in place), and in the backward pass the two pullbacks
    # called above, which zero their traced cotangent at the index
    assert len(general) == 3
    # two calls: the last number write (its cotangent, from u[-1] ** 2, is not yet the
    # pass's own) and the row write u[0] = u0; every other write, and every read, on the
    # pair's buffers
    assert calls == [2, 0] and pieces == []
    assert dual.dtype == dtype
    np.testing.assert_allclose(dual, 2 * M.T @ (M @ v.astype(np.float64)),
                               rtol=1e-12 if dtype == np.float64 else 1e-5,
                               atol=1e-12 if dtype == np.float64 else 1e-5)


@contextlib.contextmanager
def forward_writes():
    """A list with an entry per write done by forward mode's general path (`_write_forward`)
    inside the block."""
    from chainrules.ad.dispatch import writes

    calls: list = []
    original = writes._write_forward

    def counting(*args):
        calls.append(args[2])
        return original(*args)

    writes._write_forward = counting
    try:
        yield calls
    finally:
        writes._write_forward = original


def test_number_writes_under_hvp_write_in_place_only_storage_of_their_own():
    # u[i] = t under hvp writes u's value and tangent in place (no general write through
    # both traces) while nothing else holds them; after `kept = u * x`, whose record keeps
    # u's value, the next write copies first, so kept's pullback reads u as it was
    def loss(x):
        u = np.zeros(4)
        u[0] = x[0] * x[1]
        u[1] = x[1] ** 2
        u[2] = x[2] - x[0]
        kept = u * x
        u[2] = x[2] ** 3
        u[3] = x[3] * x[0]
        return np.sum(kept ** 2) + np.sum(u ** 2) + u[1] * kept[2]

    x, v = np.array([0.7, -1.1, 0.4, 1.3]), np.array([0.5, 1.0, -1.5, 0.25])
    with forward_writes() as general:
        dual = cr.hvp(loss, x, v)
    assert 0 < len(general) < 7  # the first write (u's tangent was zero), the copy, and
    # the pullbacks of writes whose cotangent was not yet the pass's own
    np.testing.assert_allclose(dual, fd_hvp(loss, x, v)[0], rtol=1e-7, atol=1e-7)


def test_number_writes_under_hvp_overwritten_read_back_and_added_at():
    # an element written twice, reads before and after the writes, np.add.at (whose
    # pullback does not write) on the same storage
    def loss(x):
        y = np.zeros(5)
        for i in range(5):
            y[i] = x[i] * x[(i + 1) % 5] if i % 2 else x[i] ** 2
        y[2] = y[2] * y[1] + x[0] ** 3
        for i in range(3):
            y[i + 1] = y[i] * x[i + 2] + y[i + 1]
        np.add.at(y, [0, 0, 4], x[:3] ** 2)
        return np.sum(y ** 2) + y[3] * y[1]

    x, v = np.linspace(0.4, 1.3, 5), np.sin(np.arange(5.0)) + 0.3
    with write_pullback_calls() as calls:
        dual, generic, _ = hvp_both(loss, x, v)
    assert len(calls) < 2 * 9  # each path: fewer calls than writes
    np.testing.assert_allclose(dual, fd_hvp(loss, x, v)[0], rtol=1e-7, atol=1e-7)
    assert_same_as_generic(dual, generic)


def test_number_writes_under_hvp_across_dtypes():
    # float32 numbers written into float64 storage (their cotangents projected back to
    # float32) and float64 ones into float32 storage: sum(x_i^4) + sum((x_i x_{i+1})^2)
    def loss(x):
        y = np.zeros(4)
        z = np.zeros(3, np.float32)
        for i in range(4):
            y[i] = np.float32(x[i]) ** 2
        for i in range(3):
            z[i] = x[i] * x[i + 1]
        return np.sum(y ** 2) + np.sum(z.astype(np.float64) ** 2)

    x, v = np.array([0.5, -1.25, 0.75, 1.5]), np.array([1.0, -0.5, 0.25, 2.0])
    hessian = np.diag(12 * x ** 2)
    for i in range(3):
        j = i + 1
        hessian[i, i] += 2 * x[j] ** 2
        hessian[j, j] += 2 * x[i] ** 2
        hessian[i, j] += 4 * x[i] * x[j]
        hessian[j, i] += 4 * x[i] * x[j]
    dual = cr.hvp(loss, x, v)
    assert dual.dtype == np.float64
    np.testing.assert_allclose(dual, hessian @ v, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sums_differences_and_negatives_of_numbers_pass_pairs_on_without_a_call(dtype):
    # add, subtract and negative have constant partials: a cotangent with its tangent is
    # handed on by the backward pass itself (or negated), not by their rules' pullbacks.
    # loss = sum((x[i] - x[i-1])^2) + (-x[0] + x[2])^2: H = 2 D^T D + 2 e e^T
    from chainrules.core.registry import NUMBER_FORMS

    def loss(x):
        total = sum((x[i] - x[i - 1]) ** 2 for i in range(1, x.shape[0]))
        return total + (-x[0] + x[2]) ** 2

    n = 6
    D = np.zeros((n - 1, n))
    D[np.arange(n - 1), np.arange(1, n)], D[np.arange(n - 1), np.arange(n - 1)] = 1.0, -1.0
    e = np.zeros(n)
    e[0], e[2] = -1.0, 1.0
    x = np.linspace(-1.0, 1.0, n).astype(dtype)
    v = np.cos(np.arange(n) * 1.3).astype(dtype)
    forms = [NUMBER_FORMS[f] for f in (np.add, np.subtract, np.negative)]
    originals = [form.pullback for form in forms]
    called: list = []

    def counting(original):
        def pullback(payload):
            called.append(payload[0])
            return original(payload)
        return pullback

    for form, original in zip(forms, originals):
        form.pullback = counting(original)
    try:
        dual = cr.hvp(loss, x, v)
    finally:
        for form, original in zip(forms, originals):
            form.pullback = original
    # (one call at most: the last addition's, whose cotangent is the plain seed)
    assert len(called) <= 1 and dual.dtype == dtype
    expected = (2 * D.T @ D + 2 * np.outer(e, e)) @ v.astype(np.float64)
    np.testing.assert_allclose(dual, expected, rtol=1e-13 if dtype == np.float64 else 1e-5,
                               atol=1e-13 if dtype == np.float64 else 1e-5)


def test_float32_pairs_stay_float32():
    w = (np.random.default_rng(4).normal(size=16) * 0.4).astype(np.float32)
    v = np.cos(np.arange(16.0)).astype(np.float32)
    with pair_additions() as done:
        dual = cr.hvp(rnn_loss, w, v)
    assert dual.dtype == np.float32 and done.count(True) >= 10
    np.testing.assert_allclose(dual, fd_hvp(rnn_loss, w, v)[0], rtol=2e-3, atol=2e-3)


def test_a_traced_cotangent_through_sums_of_numbers():
    # the cotangent reaching the additions of a scalar loop carries a tangent when the sum
    # is an argument of something nonlinear: (x0 + x1 - x2) ** 2 has H = 2 a a^T
    def loss(x):
        return (x[0] + x[1] - x[2]) ** 2

    x, v = np.array([0.3, -1.2, 0.8]), np.array([1.0, -2.0, 0.5])
    a = np.array([1.0, 1.0, -1.0])
    dual, generic, used = hvp_both(loss, x, v)
    assert used[np.add] == 1 and used[np.subtract] == 1
    np.testing.assert_allclose(dual, 2 * a * (a @ v), rtol=1e-14)
    assert_same_as_generic(dual, generic)
    x32, v32 = x.astype(np.float32), v.astype(np.float32)
    dual32 = cr.hvp(loss, x32, v32)
    assert dual32.dtype == np.float32
    np.testing.assert_allclose(dual32, 2 * a * (a @ v), rtol=1e-6)


# --- numbers by the rules' NumberForms (`ForwardTrace.record_numbers`) ----------------------

@contextlib.contextmanager
def number_records():
    """A Counter of the functions `ForwardTrace.record_numbers` recorded inside the block."""
    used: collections.Counter = collections.Counter()
    original = ForwardTrace.record_numbers

    def counting(self, tape, function, *rest):
        recorded = original(self, tape, function, *rest)
        if recorded is not None:
            used[function] += 1
        return recorded

    ForwardTrace.record_numbers = counting
    try:
        yield used
    finally:
        ForwardTrace.record_numbers = original


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scalar_loop_numbers_take_the_number_forms(dtype):
    # every operation of the loop on numbers: the index read, the elementwise rules (with a
    # constant Python int, float and int 0), the linear additions; H closed form below
    def loss(x):
        total = 0
        for i in range(x.shape[0]):
            total = total + np.sin(x[i]) * x[i] ** 3 + 0.5 * np.exp(x[i]) - x[i] * 0
        return total

    x = np.linspace(-0.8, 1.1, 6).astype(dtype)
    v = np.cos(np.arange(6.0)).astype(dtype)
    with number_records() as used:
        dual = cr.hvp(loss, x, v)
    n = x.shape[0]
    assert used[operator.getitem] == 4 * n and used[np.sin] == n and used[np.exp] == n
    if type(dtype(1.5) ** 3) is dtype and type(0.5 * dtype(1.5)) is dtype:
        # (NumPy 1 computes float32 ** 3 and 0.5 * float32 in float64: the general path)
        assert used[np.power] == n and used[np.multiply] == 3 * n
        assert used[np.add] == 2 * n and used[np.subtract] == n
    assert dual.dtype == dtype
    x64 = x.astype(np.float64)
    # (sin x x^3)'' = -sin x x^3 + 6 cos x x^2 + 6 sin x x; (0.5 e^x)'' = 0.5 e^x
    second = (-np.sin(x64) * x64 ** 3 + 6 * np.cos(x64) * x64 ** 2 + 6 * np.sin(x64) * x64
              + 0.5 * np.exp(x64))
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(dual, second * v, rtol=rtol, atol=rtol)
    with generic_path(), number_records() as none:
        generic = cr.hvp(loss, x, v)
    assert not none  # no dual form: the NumberForms are not used either
    np.testing.assert_allclose(dual, generic, rtol=rtol, atol=rtol)
    assert generic.dtype == dtype


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_number_pairs_computed_inline_by_the_backward_pass(dtype):
    # the pairs of a number's operation, computed by the pass from the form's second
    # partials (`_pull_number_pairs`), for a plain cotangent (the loop's terms, summed) and one
    # with a tangent (the square of the sum); a constant on either side; abs has a dual of its
    # own (no second_partials): its pullback
    from chainrules.ad.transforms import reverse

    def loss(x):
        s = 0.0
        for i in range(1, x.shape[0]):
            s = s + x[i] * x[i - 1] + np.sin(x[i]) / (2.0 + x[i - 1]) + abs(x[i]) * x[i]
        return s * s

    x = np.linspace(-0.7, 1.2, 5).astype(dtype)
    v = np.sin(np.arange(5.0) + 1.0).astype(dtype)
    taken, original = collections.Counter(), reverse._pull_number_pairs

    def counting(slots, owned, records, record, payload, cotangent):
        done = original(slots, owned, records, record, payload, cotangent)
        taken[record[1], done] += 1
        return done

    reverse._pull_number_pairs = counting
    try:
        got = cr.hvp(loss, x, v)
    finally:
        reverse._pull_number_pairs = original
    assert got.dtype == dtype
    x64, v64, eps = x.astype(np.float64), v.astype(np.float64), 1e-4
    gradient = cr.grad(loss)

    def central(h):
        return (gradient(x64 + h * v64) - gradient(x64 - h * v64)) / (2 * h)

    expected = (4 * central(eps / 2) - central(eps)) / 3  # (Richardson: error O(eps^4))
    rtol = 1e-6 if dtype == np.float64 else 2e-3
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)
    if type(dtype(1.5) * dtype(2.0)) is dtype and type(dtype(1.5) / 2.0) is dtype:
        n = x.shape[0] - 1
        assert taken[np.multiply, True] == 2 * n + 1 and taken[np.sin, True] == n  # (s * s)
        assert taken[np.divide, True] == n
        assert taken[np.absolute, False] == n  # (its own dual: its pullback)
        assert sum(k for (_, done), k in taken.items() if not done) == n


def test_numbers_of_the_tape_without_a_tangent_get_their_cotangent_pairs():
    # jvp of the gradient along (v, 0): y's values are numbers on the tape without a tangent,
    # multiplied by x[i] which has one; grad_y = 2 x y, moved along x by v: 2 v y
    def f(x, y):
        return sum(x[i] * y[i] ** 2 for i in range(3))

    x, y = np.array([0.5, 1.0, 2.0]), np.array([1.5, -1.0, 0.3])
    v = np.array([1.0, 2.0, 3.0])
    with number_records() as used:
        _, (dx, dy) = cr.jvp(cr.grad(f, argnums=(0, 1)), (x, y), (v, cr.ZeroTangent()))
    assert used[np.multiply] == 3
    np.testing.assert_array_equal(dx, np.zeros(3))
    np.testing.assert_allclose(dy, 2 * v * y, rtol=1e-15)


def test_number_forms_under_raising_error_states_and_warnings_as_errors():
    # exp(700) is finite, its tangent along 1e10 overflows: the engine's own arithmetic, not
    # the user's, so it is inf, as NumPy computes it, with no error or warning; the user's
    # own overflow (exp(800)) is the user's error
    def loss(x):
        return sum(np.exp(x[i]) for i in range(x.shape[0]))

    x, v = np.array([1.0, 700.0]), np.array([1.0, 1e10])
    with np.errstate(all="raise"):
        got = cr.hvp(loss, x, v)
    np.testing.assert_allclose(got[0], np.e, rtol=1e-15)
    assert got[1] == np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(cr.hvp(loss, x, v), got)
    with np.errstate(all="raise"), pytest.raises(FloatingPointError):
        cr.hvp(loss, np.array([1.0, 800.0]), v)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("size", [5, STAND_IN_SIZE + 3], ids=["small", "large"])
def test_abs_under_hvp_by_its_dual_form(dtype, size):
    # |x| x^2 = sign(x) x^3 and abs(x) * x = sign(x) x^2: second derivatives 6|x| and
    # 2 sign(x) (0 at 0, where the partial sign(x) is 0); numbers in a loop, arrays whole
    def loss(x):
        total = np.sum(np.abs(x) * x ** 2) + np.sum(np.fabs(x) * x)
        for i in range(3):
            total = total + abs(x[i]) * x[i]
        return total

    x = np.linspace(-1.3, 0.9, size).astype(dtype)
    x[1] = 0.0
    v = np.cos(np.arange(size)).astype(dtype)
    dual, generic, used = hvp_both(loss, x, v)
    expected = (6 * np.abs(x) + 2 * np.sign(x)) * v
    expected[:3] += 2 * np.sign(x[:3]) * v[:3]
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    assert dual.dtype == dtype
    np.testing.assert_allclose(dual, expected, rtol=rtol, atol=rtol)
    assert_same_as_generic(dual, generic, rtol=rtol, atol=rtol)
    if type(dtype(1.5) * dtype(2.0)) is dtype:
        assert used[np.absolute] >= 1 + (dtype == np.float64) * 3  # (the loop's numbers)
    assert used[np.fabs] == 1


def test_abs_of_complex_values_under_hvp_takes_the_rule():
    def loss(x):  # |x (1 + 2i)|^2 = 5 x^2: second derivative 10
        return np.sum(np.abs(x * (1 + 2j)) ** 2)

    x, v = np.array([0.5, -1.5, 2.0]), np.array([1.0, 2.0, -1.0])
    dual, generic, used = hvp_both(loss, x, v)
    np.testing.assert_allclose(dual, 10 * v, rtol=1e-12)
    assert_same_as_generic(dual, generic)
    assert used[np.absolute] == 0
