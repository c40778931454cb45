"""The functions declared non-differentiable in chainrules.rules.numpy.non_differentiable: each through the
kit's `test_non_differentiable` (primal as NumPy's, NoTangent for every argument and seed,
zero forward tangent), and the engine differentiating code that uses them as NumPy would."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.rules.numpy.non_differentiable import DECLARED
from chainrules.testing import case, check_case

pytestmark = pytest.mark.filterwarnings("ignore:`in1d` is deprecated:DeprecationWarning")

_rng = np.random.default_rng(13)
X = np.array([[0.5, -1.0, np.inf], [2.0, -np.inf, 0.0]])
V = _rng.standard_normal(6)
F32 = V.astype(np.float32)
C = V[:3] + 1j * V[3:]
INTS = np.array([12, 18, 7, 0])


def _declared(f, *args, **kwargs):
    return case(f, *args, non_differentiable=True, **kwargs)


def _where_exists(namespace, name, *args, **kwargs):
    """A case for ``namespace.name`` where the installed NumPy has it."""
    f = getattr(namespace, name, None)
    return [] if f is None else [_declared(f, *args, **kwargs)]


CASES = [
    _declared(np.all, V > 0), _declared(np.all, X, axis=1), _declared(np.any, F32),
    _declared(np.any, C, keepdims=True),
    _declared(np.array_equiv, V, V[None]), _declared(np.array_equiv, F32, 1.0),
    _declared(np.isneginf, X), _declared(np.isposinf, X.astype(np.float32)),
    _declared(np.isin, V, V[::2]), *_where_exists(np, "in1d", V, V[:2]),
    _declared(np.may_share_memory, V, F32), _declared(np.shares_memory, V, X),
    _declared(np.argwhere, X), _declared(np.argwhere, C),
    _declared(np.digitize, V, np.array([-1.0, 0.0, 1.0])),
    _declared(np.digitize, F32, np.array([1.0, 0.0]), right=True),
    _declared(np.lexsort, (V, V[::-1])),
    _declared(np.nanargmax, np.array([np.nan, 1.0, 3.0])), _declared(np.nanargmin, X, 0),
    _declared(np.ravel_multi_index, (np.array([0, 1]), np.array([2, 1])), (2, 3)),
    _declared(np.unravel_index, np.array([3, 5]), (2, 3)),
    _declared(np.diag_indices_from, X[:, :2]), _declared(np.tril_indices_from, X),
    _declared(np.triu_indices_from, X, 1),
    _declared(np.can_cast, np.float32, np.float64), _declared(np.common_type, V, F32),
    _declared(np.min_scalar_type, 3.5),
    _declared(np.gcd, INTS, 6), _declared(np.lcm, INTS, 4),
    *_where_exists(np, "bitwise_count", INTS),
    _declared(np.spacing, V), _declared(np.spacing, F32),
    _declared(np.packbits, INTS > 5), _declared(np.unpackbits, np.array([3, 250], np.uint8)),
    _declared(np.linalg.matrix_rank, _rng.standard_normal((3, 4))),
    _declared(np.einsum_path, "ij,jk->ik", X, X.T, optimize="greedy"),
]


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_declared_through_the_kit(c):
    check_case(c)


def test_every_declaration_has_a_case():
    assert {id(f) for f in DECLARED} <= {id(c.function) for c in CASES}


def test_code_using_them_differentiates_like_numpy():
    """Predicates and indices steer the computation; the gradient is that of the branch taken
    (here d/dx of sum(x[x > 0]**2) where any element is positive: 2x on positive elements)."""
    def f(x):
        chosen = x[np.argwhere(x > 0)[:, 0]]
        scale = 3.0 if np.all(np.isposinf(x) == False) and np.any(x > 1) else 1.0  # noqa: E712
        return scale * np.sum(chosen ** 2) + np.digitize(x, [0.0]).sum()

    x = np.array([0.5, -1.0, 2.0, 0.25])
    np.testing.assert_allclose(cr.grad(f)(x), 3.0 * np.where(x > 0, 2 * x, 0.0))


def test_forward_mode_sees_a_constant():
    y, dy = cr.jvp(lambda x: x * np.count_nonzero(np.isin(x, [2.0])), (np.array([1.0, 2.0]),),
                   (np.array([1.0, 1.0]),))
    np.testing.assert_allclose(dy, [1.0, 1.0])
