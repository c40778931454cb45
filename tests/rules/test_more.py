"""Rules of chainrules.rules.more (array-API spellings of products, matrix transposes,
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
    case(np.copysign, away_from_zero(5), away_from_zero(5)),
    case(np.copysign, away_from_zero(2, 3, dtype=F32), away_from_zero(3, dtype=F32)),
    case(np.copysign, away_from_zero(3), -1.0),
    case(np.ldexp, normal(4), np.array([0, 1, -2, 3])),
    case(np.ldexp, normal(2, 3, dtype=F32), 2),
]


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_kit(c):
    check_case(c)


@pytest.mark.parametrize("c", running(CASES)[::2], ids=lambda c: c.id)
def test_order2(c):
    test_rrule_order2(c.function, *c.args, fkwargs=c.fkwargs)
