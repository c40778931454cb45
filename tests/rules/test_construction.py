"""Rules for building, extending, cutting and resampling arrays (chainrules.rules.numpy.construction):
every function through the kit (finite differences, off-space seeds, accumulators), at order 2
(`test_rrule_order2`, and a jvp of grad against finite differences), then the engine idioms and
decisions: traced fill values and endpoints, non-finite values, nearly real values,
``put_along_axis`` refused, ``argpartition`` non-differentiable."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import chainrules as cr
from chainrules import NoTangent, frule, rrule, unthunk
from chainrules.testing import case, check_case, rand_primal, test_rrule_order2
from tests.ad.finite_differences import numerical_gradient
from tests.numpy_features import accepted, needs, running
from tests.second_order import assert_jvp_of_grad

_rng = np.random.default_rng(20261205)
F64, F32, C128 = np.float64, np.float32, np.complex128
ROW_STACK = getattr(np, "row_stack", None)
ASTYPE = getattr(np, "astype", None)


def normal(*shape, dtype=F64):
    return rand_primal("array", _rng, dtype, shape)


def positive(*shape, dtype=F64):
    return (np.abs(normal(*shape)) + 0.5).astype(dtype)


def _quietly(make):
    """``make()`` with NumPy's deprecation warnings silenced (np.row_stack, NumPy 2)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return make()


CASES = [
    # routing: append, insert, delete (one labels mechanism)
    case(np.append, normal(3), normal(2)),
    case(np.append, normal(2, 3, dtype=F32), normal(1, 3, dtype=F32), axis=0),
    case(np.append, normal(2, 2, dtype=C128), normal(3)),
    case(np.append, normal(3), values=normal(2)),
    case(np.insert, normal(4), 1, 2.5),
    case(np.insert, normal(4, dtype=C128), [1, 3], normal(2, dtype=C128)),
    case(np.insert, normal(2, 3), 1, normal(3), axis=0),
    case(np.insert, normal(2, 3, dtype=F32), [0, 2], 5.0, axis=1),   # one value, copied
    case(np.insert, normal(2, 3), slice(0, 2), normal(2, 1), 1),
    case(np.delete, normal(5), [0, 3]),
    case(np.delete, normal(3, 4, dtype=F32), 1, axis=1),
    case(np.delete, normal(3, 4, dtype=C128), np.arange(12) % 3 == 1),  # a mask, flattened
    # axes
    case(np.rollaxis, normal(2, 3, 4), 2),
    case(np.rollaxis, normal(2, 3, 4, dtype=C128), 0, 2),
    case(np.rollaxis, normal(2, 3, 4, dtype=F32), -1, -2),
    *_quietly(lambda: [accepted(case(ROW_STACK, [normal(3), normal(2, 3)]), "np.row_stack")]),
    # cross products: 3- and 2-vectors, axes, broadcasting, complex
    case(np.cross, normal(3), normal(3)),
    case(np.cross, normal(4, 3), normal(3)),
    case(np.cross, normal(3, 4), normal(4, 3), axisa=0),
    case(np.cross, normal(2, 3, dtype=C128), normal(3, dtype=C128), axis=-1),
    case(np.cross, normal(5, 3, dtype=F32), normal(5, 3, dtype=F32)),
    *_quietly(lambda: [accepted(case(np.cross, normal(3, 2), normal(3, 2, 3), axisc=0, axisb=1,
                                     axisa=1), "np.cross of 2-vectors (deprecated in NumPy 2)")]),
    # differences
    case(np.gradient, normal(5)),
    case(np.gradient, normal(4, 5), 0.5),
    case(np.gradient, normal(4, 5, dtype=C128), 2.0, 0.5, edge_order=2),
    case(np.gradient, normal(6), np.array([0, 1, 3, 4, 7, 8]), edge_order=2),
    case(np.gradient, normal(3, 4, dtype=F32), axis=1),
    case(np.gradient, normal(2, 3, 4), axis=(0, 2)),
    case(np.gradient, normal(2)),
    case(np.ediff1d, normal(5)),
    case(np.ediff1d, normal(2, 3), normal(2), 1.5),
    case(np.ediff1d, normal(4, dtype=C128), to_begin=normal(2, dtype=C128)),
    case(np.ediff1d, normal(4, dtype=F32), to_end=2.0),
    # non-finite and nearly real values (finite, resp. clearly complex, points: see below)
    case(np.nan_to_num, normal(4)),
    case(np.nan_to_num, normal(2, 2, dtype=C128), True, 2.0),
    case(np.nan_to_num, normal(3, dtype=F32)),
    case(np.real_if_close, normal(3)),
    case(np.real_if_close, normal(3, dtype=C128)),
    # ranges with traced endpoints
    case(np.linspace, 0.5, 2.0, 5),
    case(np.linspace, normal(2), normal(3, 1), 4, axis=-1),
    case(np.linspace, 0.5, normal(2), 4, endpoint=False, retstep=True),
    case(np.linspace, 1.0 + 2.0j, normal(2, dtype=C128), 3),
    case(np.linspace, 0.5, 2.0, 4, dtype=F32),
    case(np.linspace, normal(2), 2.0, 1),
    case(np.logspace, 0.5, 2.0, 5),
    case(np.logspace, normal(2), 1.0, 4, True, 2.5),
    case(np.logspace, 0.3, normal(2), 3, base=positive(2), axis=-1),
    case(np.logspace, 1.0 + 0.5j, 0.5, 3),
    case(np.geomspace, 0.5, 2.0, 5),
    case(np.geomspace, positive(2), 3.0, 4, axis=1),
    case(np.geomspace, -positive(2), -positive(2) - 1.0, 3, endpoint=False),  # same shapes:
    # NumPy 1.26 cannot mix a negative scalar and array
    case(np.geomspace, 1.0 + 1.0j, normal(2, dtype=C128), 4),
    case(np.geomspace, np.float32(0.5), np.float32(2.0), 4),
    # filled arrays
    case(np.full, (2, 3), 1.5),
    case(np.full, (2, 3), normal(3)),
    case(np.full, (2,), normal(1, dtype=C128), C128),
    case(np.full, (3,), np.float32(2.0)),
    # the function form of astype (NumPy 2.1)
    accepted(case(ASTYPE, normal(3), C128), "np.astype (NumPy 2.1)"),
    accepted(case(ASTYPE, normal(3), F32), "np.astype (NumPy 2.1)"),
    accepted(case(ASTYPE, normal(2, 3, dtype=C128), np.complex64), "np.astype (NumPy 2.1)"),
    accepted(case(ASTYPE, normal(3, dtype=F32), C128), "np.astype (NumPy 2.1)"),
    # partition: a permutation of each slice
    case(np.partition, normal(6), 2),
    case(np.partition, normal(3, 5, dtype=F32), [0, 2], axis=0),
    case(np.partition, normal(3, 4), 5, axis=None),
    case(np.partition, normal(5, dtype=C128), 1),
    case(np.argpartition, normal(5), 2),
    # Vandermonde matrices
    case(np.vander, normal(4)),
    case(np.vander, normal(3, dtype=C128), 5, True),
    case(np.vander, normal(3, dtype=F32), 2),
    case(np.vander, np.array([0.0, 1.5]), 3),
    # np.linalg.cross (NumPy 2.0): np.cross of 3-vectors along axis=
    *([case(np.linalg.cross, normal(4, 3), normal(3)),
       case(np.linalg.cross, normal(3, 2), normal(3, 2), axis=0),
       case(np.linalg.cross, normal(3, dtype=C128), normal(3))]
      if hasattr(np.linalg, "cross") else []),
]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # np.row_stack, 2-vector np.cross
@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: getattr(c, "id", None) or c.values[0].id)
def test_rule(rule_case):
    check_case(rule_case)


ORDER2 = [c for c in running(CASES) if c.function is not np.argpartition
          and any(isinstance(a, (np.ndarray, float, np.floating, complex)) for a in c.args)]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("rule_case", ORDER2, ids=lambda c: c.id)
def test_rule_order2(rule_case):
    args = rule_case.args
    if isinstance(args[0], list):  # row_stack: the kit's order-2 check takes arrays
        pytest.skip("a list argument")
    test_rrule_order2(rule_case.function, *args, fkwargs=rule_case.fkwargs)


# --- second order through the engine: jvp of grad against finite differences -------------------

W = normal(6)


def _sum3(y):
    y = np.ravel(y)
    return np.sum(np.real(y * np.conj(y)) * np.resize(W, y.shape) * y.real)


SECOND_ORDER = {
    "append": lambda x: _sum3(np.append(x[:2], x[2:] * 2)),
    "insert": lambda x: _sum3(np.insert(x[:4], [1, 1], x[4:])),
    "delete": lambda x: _sum3(np.delete(x, [0, 4])),
    "rollaxis": lambda x: _sum3(np.rollaxis(np.reshape(x, (1, 2, 3)), 2)),
    "cross": lambda x: _sum3(np.cross(x[:3], x[3:])),
    "gradient": lambda x: _sum3(np.gradient(x, 0.7, edge_order=2)),
    "gradient-spacing": lambda x: _sum3(np.gradient(x[1:], x[0] + 2.0)),
    "ediff1d": lambda x: _sum3(np.ediff1d(x[:4], to_end=x[4:])),
    "nan_to_num": lambda x: _sum3(np.nan_to_num(x)),
    "real_if_close": lambda x: _sum3(np.real_if_close(x + 0j)),
    "linspace": lambda x: _sum3(np.linspace(x[0], x[1:3], 4)),
    "logspace": lambda x: _sum3(np.logspace(x[0], x[1:3], 4, base=x[3] + 3.0)),
    "geomspace": lambda x: _sum3(np.geomspace(x[0] + 3.0, x[1:3] + 3.0, 4)),
    "full": lambda x: _sum3(np.full((2, 2), x[:2])),
    "full_like": lambda x: _sum3(np.full_like(np.zeros((2, 2)), x[:2])),
    "partition": lambda x: _sum3(np.partition(x, 3)),
    "vander": lambda x: _sum3(np.vander(x[:3], 4)),
}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", list(SECOND_ORDER))
def test_second_order_through_the_engine(name):
    x = np.array([0.3, -0.8, 1.1, 0.45, -1.3, 0.9])
    assert_jvp_of_grad(SECOND_ORDER[name], x, rtol=1e-5, atol=1e-6)


# --- decisions and idioms --------------------------------------------------------------------

def test_traced_fill_values_and_endpoints_match_finite_differences():
    def f(x):
        return np.sum(np.full((2, 3), x[0]) * np.full_like(np.ones((2, 3)), x[1:4])
                      * np.linspace(x[4], x[5], 6).reshape(2, 3))

    x = normal(6)
    np.testing.assert_allclose(cr.grad(f)(x), numerical_gradient(f, x), rtol=1e-6, atol=1e-8)


def test_full_like_is_differentiable_twice():
    x = 0.7
    hessian = cr.hessian(lambda x: np.sum(np.full_like(np.ones(3), x) ** 3))(np.array([x]))
    np.testing.assert_allclose(hessian, [[18 * x]])
    assert np.full_like not in cr.testing.FIRST_ORDER_ONLY


def test_nan_to_num_gradient_at_non_finite_values():
    x = np.array([1.0, np.nan, np.inf, -np.inf, 2.0])
    gradient = cr.grad(lambda x: np.sum(np.nan_to_num(x, posinf=9.0, neginf=-9.0)
                                        * np.arange(1.0, 6.0)))(x)
    np.testing.assert_array_equal(gradient, [1.0, 0.0, 0.0, 0.0, 5.0])
    replacements = cr.grad(lambda v: np.sum(np.nan_to_num(x, nan=v[0], posinf=v[1],
                                                          neginf=v[2]) * np.arange(1.0, 6.0)))
    np.testing.assert_array_equal(replacements(np.array([0.5, 9.0, -9.0])), [2.0, 3.0, 4.0])
    z = np.array([complex(1.0, np.nan), complex(np.inf, 2.0)])
    _, pullback = rrule(np.nan_to_num, z, True, 0.0)
    dz, _, dnan = (unthunk(t) for t in pullback(np.array([1.0 + 1.0j, 1.0 + 1.0j]))[1:4])
    np.testing.assert_array_equal(dz, [1.0 + 0.0j, 0.0 + 1.0j])  # the finite parts only
    assert dnan == 1.0


def test_nan_to_num_refuses_copy_false():
    with pytest.raises(NotImplementedError, match="numpy.nan_to_num: copy=False"):
        rrule(np.nan_to_num, np.ones(2), False)


def test_real_if_close_of_a_nearly_real_value():
    z = np.array([1.0 + 1e-20j, 2.0 - 1e-20j])
    gradient = cr.grad(lambda z: np.sum(np.real_if_close(z) ** 2))(z)
    assert gradient.dtype == C128
    np.testing.assert_allclose(gradient, 2 * z.real)


def test_put_along_axis_writes_as_index_assignment_does():
    # refused before; now the engine's write (tests/ad/test_writes.py has orders 1 and 2)
    x = normal(4)
    expected = np.concatenate([[0.0], 2 * x[1:]])
    gradient = cr.grad(lambda x: np.put_along_axis(x, np.array([0]), 1.0, 0)
                       or np.sum(x ** 2))(x)
    np.testing.assert_allclose(gradient, expected)
    assert x[0] == 1.0  # the argument is written, as NumPy writes it (and as x[0] = 1.0 does)

    def into_made(v):
        out = np.zeros(4)
        np.put_along_axis(out, np.array([2]), v[:1], 0)
        return np.sum(out * np.arange(4.0))

    np.testing.assert_allclose(cr.grad(into_made)(x), [2.0, 0.0, 0.0, 0.0])


def test_argpartition_and_floor_divide_give_no_tangent():
    _, pullback = rrule(np.argpartition, normal(5), 2)
    assert pullback(np.ones(5)) == (NoTangent(), NoTangent(), NoTangent())


def test_partition_value_and_gradient_use_one_permutation():
    x = np.array([3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.0, 6.0])
    y, pullback = rrule(np.partition, x, 3)
    np.testing.assert_array_equal(np.sort(y[:3]), [1.0, 1.5, 2.0])
    assert y[3] == 3.0
    dx = pullback(np.arange(8.0))[1]
    np.testing.assert_array_equal(dx[np.searchsorted(np.sort(x), x) == 3], [3.0])
    np.testing.assert_array_equal(np.sort(dx), np.arange(8.0))
    np.testing.assert_array_equal(x[np.argsort(dx)], y)   # dy went back where y came from


def test_insert_one_value_in_several_places_sums_its_cotangent():
    _, pullback = rrule(np.insert, np.zeros(3), [0, 2, 3], 7.0)
    assert unthunk(pullback(np.arange(6.0))[3]) == 0.0 + 3.0 + 5.0


def test_vander_derivative_at_zero():
    _, dy = frule((NoTangent(), np.ones(2), NoTangent()), np.vander, np.array([0.0, 2.0]), 3)
    np.testing.assert_array_equal(dy, [[0.0, 1.0, 0.0], [4.0, 1.0, 0.0]])


def test_gradient_coordinate_arrays_are_constants_and_refused_when_traced():
    x = normal(5)
    coordinates = np.array([0.0, 0.5, 1.5, 2.0, 3.5])
    with pytest.raises(NotImplementedError, match="numpy.gradient: differentiating with "
                                                  "respect to coordinate arrays"):
        cr.grad(lambda c: np.sum(np.gradient(x, c)))(coordinates)
    g = cr.grad(lambda x: np.sum(np.gradient(x, coordinates) * W[:5]))(x)
    np.testing.assert_allclose(g, numerical_gradient(
        lambda x: np.sum(np.gradient(x, coordinates) * W[:5]), x), atol=1e-8)


@needs(ROW_STACK is not None, "np.row_stack")
def test_row_stack_of_traced_values():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        g = cr.grad(lambda x: np.sum(np.row_stack([x, 2 * x]) ** 2))(np.array([1.0, -2.0]))
    np.testing.assert_allclose(g, [10.0, -20.0])
