"""Rules of chainrules.rules.numpy.array_api (array-API spellings of products, matrix transposes,
copysign, ldexp): each through the kit against finite differences, float32 and complex where
NumPy takes them, and its pullback differentiated again (order 2)."""

from __future__ import annotations

import numpy as np
import pytest

from chainrules.testing import case, check_case, rand_primal, test_rrule_order2
from tests.numpy_features import running

_rng = np.random.default_rng(1313)
F64, F32, C128 = np.float64, np.float32, np.complex128


def normal(*shape, dtype=F64):
    return rand_primal("array", _rng, dtype, shape)


def away_from_zero(*shape, dtype=F64):
    """Magnitudes in [0.5, 1.5] with random signs: copysign's kink at 0 stays out of reach of
    finite differences."""
    return (_rng.choice([-1.0, 1.0], shape) * _rng.uniform(0.5, 1.5, shape)).astype(dtype)


def _where_exists(namespace, name, *args, **kwargs):
    f = getattr(namespace, name, None)
    return [] if f is None else [case(f, *args, **kwargs)]


CASES = [
    *_where_exists(np.linalg, "matmul", normal(3, 4), normal(4, 2)),
    *_where_exists(np.linalg, "matmul", normal(2, 3, 4, dtype=C128), normal(4, dtype=C128)),
    *_where_exists(np.linalg, "matmul", normal(3, dtype=F32), normal(2, 3, 4, dtype=F32)),
    *_where_exists(np.linalg, "outer", normal(3), normal(2, dtype=C128)),
    *_where_exists(np.linalg, "outer", normal(3, dtype=F32), normal(4, dtype=F32)),
    *_where_exists(np.linalg, "tensordot", normal(2, 3, 4), normal(3, 4, 2)),
    *_where_exists(np.linalg, "tensordot", normal(2, 3, dtype=C128), normal(3, 2), axes=1),
    *_where_exists(np.linalg, "tensordot", normal(2, 3), normal(2, 3, dtype=F32),
                   axes=([0, 1], [0, 1])),
    *_where_exists(np, "matrix_transpose", normal(2, 3, 4)),
    *_where_exists(np, "matrix_transpose", normal(3, 2, dtype=C128)),
    *_where_exists(np.linalg, "matrix_transpose", normal(4, 3, dtype=F32)),
    *_where_exists(np.linalg, "trace", normal(3, 4)),
    *_where_exists(np.linalg, "trace", normal(2, 3, 3, dtype=C128), offset=1),
    *_where_exists(np.linalg, "trace", normal(4, 3, dtype=F32), offset=-2),
    *_where_exists(np.linalg, "diagonal", normal(3, 4)),
    *_where_exists(np.linalg, "diagonal", normal(2, 4, 3, dtype=C128), offset=-1),
    *_where_exists(np.linalg, "diagonal", normal(3, 3, dtype=F32), offset=2),
    *_where_exists(np.linalg, "vector_norm", normal(5)),
    *_where_exists(np.linalg, "vector_norm", normal(3, 4, dtype=C128), axis=1),
    *_where_exists(np.linalg, "vector_norm", normal(2, 3, 2, dtype=F32), axis=(0, 2),
                   keepdims=True),
    *_where_exists(np.linalg, "svdvals", normal(3, 4)),
    *_where_exists(np.linalg, "svdvals", normal(2, 3, 2, dtype=C128)),
    *_where_exists(np, "cumulative_sum", normal(5)),
    *_where_exists(np, "cumulative_sum", normal(3, 4, dtype=C128), axis=1, include_initial=True),
    *_where_exists(np, "cumulative_sum", normal(3, 4, dtype=F32), axis=0),
    case(np.nancumsum, normal(4)),  # NaNs: test_nancumsum_skips_nans (no finite differences)
    case(np.nancumsum, normal(2, 2, dtype=F32), 0),
    case(np.nancumsum, normal(2, 3, dtype=C128), axis=1),
    *_where_exists(np, "unstack", normal(3, 2)),
    *_where_exists(np, "unstack", normal(2, 3, dtype=C128), axis=1),
    case(np.broadcast_arrays, normal(3, 1), normal(4)),
    case(np.broadcast_arrays, normal(2, dtype=F32), 1.5, normal(3, 1, dtype=C128)),
    case(np.sort_complex, np.array([0.3, -1.2, 2.5, 0.9])),
    case(np.sort_complex, np.array([[1 + 2j, 0.2 - 1j, -0.5j], [2.0, 1.1 + 0.4j, -1.0]])),
    *_where_exists(np, "vecdot", normal(3, 4), normal(4)),
    *_where_exists(np, "vecdot", normal(2, 3, dtype=C128), normal(4, 1, 3, dtype=C128)),
    *_where_exists(np, "vecdot", normal(3, 2, dtype=F32), normal(3, 1, dtype=F32), axis=0),
    *_where_exists(np.linalg, "vecdot", normal(4, dtype=C128), normal(2, 4)),
    *_where_exists(np.linalg, "vecdot", normal(3, 2), normal(3, 2), axis=0),
    *_where_exists(np, "matvec", normal(3, 4), normal(4)),
    *_where_exists(np, "matvec", normal(2, 3, 4, dtype=C128), normal(4, dtype=C128)),
    *_where_exists(np, "matvec", normal(3, 2, dtype=F32), normal(4, 2, dtype=F32)[:, None]),
    *_where_exists(np, "vecmat", normal(3), normal(3, 4)),
    *_where_exists(np, "vecmat", normal(2, 3, dtype=C128), normal(3, 2, dtype=C128)),
    *_where_exists(np, "vecmat", normal(3, dtype=F32), normal(2, 3, 4, dtype=F32)),
    case(np.copysign, away_from_zero(5), away_from_zero(5)),
    case(np.copysign, away_from_zero(2, 3, dtype=F32), away_from_zero(3, dtype=F32)),
    case(np.copysign, away_from_zero(3), -1.0),
    case(np.ldexp, normal(4), np.array([0, 1, -2, 3])),
    case(np.ldexp, normal(2, 3, dtype=F32), 2),
    # nextafter (one ulp towards b), modf's fractional part, frexp's mantissa
    case(np.nextafter, normal(4), normal(4)),
    case(np.nextafter, normal(3, dtype=F32), np.float32(0.0)),
    case(np.modf, away_from_zero(5) * 3),
    case(np.modf, away_from_zero(2, 3, dtype=F32) * 3),
    case(np.frexp, away_from_zero(5) * 3),
    case(np.frexp, away_from_zero(3, dtype=F32) * 3),
]


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_kit(c):
    check_case(c)


def test_nancumsum_skips_nans():
    """d/dx sum(w * nancumsum(x)) = reverse cumsum of w, 0 where x is NaN (a NaN counts as 0)."""
    import chainrules as cr
    x, w = np.array([1.0, np.nan, 2.0, -0.5]), np.array([0.5, 1.0, -2.0, 3.0])
    expected = np.array([2.5, 0.0, 1.0, 3.0])
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(w * np.nancumsum(x)))(x), expected)
    _, tangent = cr.jvp(lambda x: np.nancumsum(x), (x,), (np.ones(4),))
    np.testing.assert_allclose(tangent, [1.0, 1.0, 2.0, 3.0])


def test_vector_norm_refuses_other_orders():
    import chainrules as cr
    if not hasattr(np.linalg, "vector_norm"):
        pytest.skip("np.linalg.vector_norm: NumPy 2.0")
    with pytest.raises(NotImplementedError, match="ord=1"):
        cr.grad(lambda x: np.linalg.vector_norm(x, ord=1))(np.ones(3))


@pytest.mark.parametrize("c", running(CASES)[::2], ids=lambda c: c.id)
def test_order2(c):
    test_rrule_order2(c.function, *c.args, fkwargs=c.fkwargs)


def test_modf_and_frexp_closed_forms():
    """modf's fractional part has slope 1, its integral part none; frexp's mantissa
    x 2**-e has slope 2**-e, its exponent none."""
    import chainrules as cr
    x = np.array([-2.7, 0.3, 5.5, 9.0 + 1e-3])
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(np.modf(x)[0] ** 2))(x),
                               2 * np.modf(x)[0])
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(np.modf(x)[1] * x))(x), np.modf(x)[1])
    mantissa, exponent = np.frexp(x)
    np.testing.assert_allclose(cr.grad(lambda x: np.sum(np.frexp(x)[0]))(x), 2.0 ** -exponent)
    _, tangent = cr.jvp(lambda x: np.frexp(x)[0], (x,), (np.ones(4),))
    np.testing.assert_allclose(tangent, 2.0 ** -exponent)
