"""Product forms (`chainrules.core.registry.ProductForm`): ``W @ h``, ``np.matmul(W, H)``
and ``np.dot(W, h)`` of a real matrix and a real vector or matrix of its dtype, and ``h @ W``
of a real vector and matrix, recorded as
the two arguments, whose cotangents the backward pass computes by matmul's own formulas,
without a pullback object per operation (an RNN step's product: 142k -> 78k instructions,
callgrind).

Gradients are checked against central differences and against backpropagation written by
hand; what the path leaves to the rule (complex, mixed dtypes, two vectors, stacks,
lazy and sparse cotangents), sums into owned buffers, repeated passes, second derivatives, the
checking mode and a rule registered over matmul's."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.ad.trace import tape as tape_module
from chainrules.core.registry import PRODUCT_FORMS

from .finite_differences import numerical_gradient

RNG = np.random.default_rng(7)
A = RNG.normal(size=(4, 3))
B = RNG.normal(size=(3, 2))
V = RNG.normal(size=3)


def _records(f, *args):
    """(function, whether recorded by its form) for each record of tracing ``f(*args)``."""
    made = []
    original = tape_module.Tape.__init__

    def remember(self, *a, **k):
        original(self, *a, **k)
        made.append(self)

    tape_module.Tape.__init__ = remember
    try:
        cr.vjp(f, *args)
    finally:
        tape_module.Tape.__init__ = original
    return [(record[1], type(record[0]) is tuple) for record in made[-1].records
            if record[0] is not None]


def _by_form(f, *args) -> bool:
    records = _records(f, *args)
    return (np.matmul, True) in records or (np.dot, True) in records or \
        (np.outer, True) in records


CASES = {  # name: (loss of a and b, a, b, whether the form records it)
    "matrix @ vector": (lambda a, b: np.sum(np.sin(a @ b)), A, V, True),
    "matrix @ matrix": (lambda a, b: np.sum((a @ b) ** 2), A, B, True),
    "np.matmul": (lambda a, b: np.sum(np.cos(np.matmul(a, b))), A, B, True),
    "np.dot": (lambda a, b: np.sum(np.cos(np.dot(a, b))), A, V, True),
    "np.dot of vectors (the rule)": (lambda a, b: np.sin(np.dot(a, b)), V, V[::-1].copy(),
                                     False),
    "float32": (lambda a, b: np.sum(np.sin(a @ b)), A.astype(np.float32),
                V.astype(np.float32), True),
    "vector @ matrix": (lambda a, b: np.sum(np.sin(a @ b)), V, B, True),
    "np.dot of a vector and a matrix": (lambda a, b: np.sum(np.cos(np.dot(a, b))), V, B,
                                        True),
    "vector @ matrix, float32": (lambda a, b: np.sum(np.sin(a @ b)), V.astype(np.float32),
                                 B.astype(np.float32), True),
    "np.outer": (lambda a, b: np.sum(np.sin(np.outer(a, b))), V, B[:, 0].copy(), True),
    "np.outer, float32": (lambda a, b: np.sum(np.sin(np.outer(a, b))), V.astype(np.float32),
                          B[:, 1].astype(np.float32), True),
    "np.outer of matrices (the rule)": (lambda a, b: np.sum(np.sin(np.outer(a, b))), A, B,
                                        False),
    "np.outer, complex (the rule)": (lambda a, b: np.sum(np.abs(np.outer(a, b)) ** 2),
                                     V - 0.5j, V, False),
    "vector @ matrix, mixed dtypes (the rule)": (lambda a, b: np.sum(np.sin(a @ b)),
                                                 V.astype(np.float32), B, False),
    "vector @ complex matrix (the rule)": (lambda a, b: np.sum(np.abs(a @ b) ** 2), V,
                                           B - 0.5j, False),
    "mixed dtypes (the rule)": (lambda a, b: np.sum(np.sin(a @ b)), A,
                                V.astype(np.float32), False),
    "complex (the rule)": (lambda a, b: np.sum(np.abs(a @ b) ** 2), A + 1j * A[::-1],
                           V - 0.5j, False),
    "stacks (the rule)": (lambda a, b: np.sum(np.sin(a @ b)), np.stack([A, 2 * A]), B,
                          False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_products_against_central_differences(name):
    loss, a, b, by_form = CASES[name]
    ga, gb = cr.grad(loss, argnums=(0, 1))(a, b)
    assert ga.dtype == a.dtype and gb.dtype == b.dtype  # float32 stays float32
    # central differences in float64 (a float32 argument's at float32's precision)
    wide_a, wide_b = (x.astype(np.result_type(x.dtype, np.float64)) for x in (a, b))
    single = np.float32 in (a.dtype, b.dtype)
    tolerance = dict(rtol=1e-3, atol=1e-4) if single else dict(rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ga, numerical_gradient(lambda a: loss(a, wide_b), wide_a),
                               **tolerance)
    np.testing.assert_allclose(gb, numerical_gradient(lambda b: loss(wide_a, b), wide_b),
                               **tolerance)
    assert _by_form(loss, a, b) is by_form


def test_a_constant_on_either_side():
    gv = cr.grad(lambda v: np.sum(np.sin(A @ v)))(V)
    np.testing.assert_allclose(gv, A.T @ np.cos(A @ V), rtol=1e-12)
    ga = cr.grad(lambda a: np.sum(np.sin(a @ V)))(A)
    np.testing.assert_allclose(ga, np.outer(np.cos(A @ V), V), rtol=1e-12)
    assert _by_form(lambda v: np.sum(A @ v), V) and _by_form(lambda a: np.sum(a @ V), A)
    # a vector times a matrix: h @ B's cotangents B @ dy and outer(h, dy)
    gv = cr.grad(lambda v: np.sum(np.sin(v @ B)))(V)
    np.testing.assert_allclose(gv, B @ np.cos(V @ B), rtol=1e-12)
    gb = cr.grad(lambda b: np.sum(np.sin(V @ b)))(B)
    np.testing.assert_allclose(gb, np.outer(V, np.cos(V @ B)), rtol=1e-12)
    assert _by_form(lambda v: np.sum(v @ B), V) and _by_form(lambda b: np.sum(V @ b), B)


def test_an_rnn_against_backpropagation_by_hand():
    rng = np.random.default_rng(3)
    W, U = rng.normal(scale=0.4, size=(6, 6)), rng.normal(size=(6, 7))

    def rnn(W, U):
        h = np.zeros(6)
        for t in range(U.shape[1]):
            h = np.tanh(W @ h + U[:, t])
        return np.sum(h * h)

    hs = [np.zeros(6)]
    for t in range(U.shape[1]):
        hs.append(np.tanh(W @ hs[-1] + U[:, t]))
    dW, dU = np.zeros_like(W), np.zeros_like(U)
    dh = 2 * hs[-1]
    for t in reversed(range(U.shape[1])):
        da = dh * (1 - hs[t + 1] ** 2)
        dU[:, t] = da
        dW += np.outer(da, hs[t])
        dh = W.T @ da
    gW, gU = cr.grad(rnn, argnums=(0, 1))(W, U)
    np.testing.assert_allclose(gW, dW, rtol=1e-12)
    np.testing.assert_allclose(gU, dU, rtol=1e-12)
    assert _by_form(rnn, W, U)


def test_one_array_in_several_products_and_a_chain_of_them():
    # W's cotangent: the first product's new array, the others added into it in place
    def chain(W, h):
        for _ in range(4):
            h = W @ h
        return np.sum(h) + np.sum(W @ W)

    W, h = A[:3] / 2, V
    gW, gh = cr.grad(chain, argnums=(0, 1))(W, h)
    np.testing.assert_allclose(gW, numerical_gradient(lambda W: chain(W, h), W), rtol=1e-6)
    np.testing.assert_allclose(gh, np.linalg.matrix_power(W, 4).T @ np.ones(3), rtol=1e-12)
    before = W.copy()
    cr.grad(chain, argnums=(0, 1))(W, h)
    assert np.array_equal(W, before)  # the engine adds only into buffers it owns


def test_repeated_backward_passes_and_lazy_or_sparse_cotangents():
    y, pullback = cr.vjp(lambda a: a @ B, A)
    dy = RNG.normal(size=(4, 2))
    np.testing.assert_allclose(pullback(dy)[0], dy @ B.T, rtol=1e-12)
    np.testing.assert_allclose(pullback(2 * dy)[0], 2 * dy @ B.T, rtol=1e-12)
    # a sparse cotangent (an index read of the product) and a broadcast one: the rule's pullback
    f = lambda a: (a @ B)[1, 0] * 3.0 + np.sum(np.broadcast_to(a @ B, (2, 4, 2)))
    expected = 3.0 * np.outer(np.eye(4)[1], B[:, 0]) + 2 * np.ones((4, 2)) @ B.T
    np.testing.assert_allclose(cr.grad(f)(A), expected, rtol=1e-12)


def test_writes_after_use_do_not_reach_the_arguments_kept():
    # the record keeps b and h as they were multiplied; the writes make new versions
    def f(a):
        h = np.ones(3)
        y = a @ h
        h[0] = 5.0
        b = a * 1.0
        z = V @ b.T
        b[0, 0] = 5.0
        return np.sum(y) + np.sum(z) + np.sum(b @ b.T) + np.sum(a @ h)

    np.testing.assert_allclose(cr.grad(f)(A), numerical_gradient(f, A), rtol=1e-6)


@pytest.mark.parametrize("order", ["hessian", "hvp", "grad of grad"])
def test_second_derivatives_through_products(order):
    def f(a):
        return np.sum(np.sin(a @ V))

    hessian = np.einsum("ik,j,l->ijkl", np.diag(-np.sin(A @ V)), V, V)
    direction = RNG.normal(size=A.shape)
    expected = np.einsum("ijkl,kl->ij", hessian, direction)
    if order == "hessian":
        np.testing.assert_allclose(cr.hessian(f)(A), hessian, rtol=1e-10, atol=1e-12)
    elif order == "hvp":
        np.testing.assert_allclose(cr.hvp(f, A, direction), expected, rtol=1e-10, atol=1e-12)
    else:
        got = cr.grad(lambda a: np.sum(cr.grad(f)(a) * direction))(A)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_the_checking_mode_checks_the_products_records():
    with cr.checking():
        np.testing.assert_allclose(cr.grad(lambda a: np.sum(np.sin(a @ V)))(A),
                                   np.outer(np.cos(A @ V), V), rtol=1e-12)
    big = np.full((2, 2), 1e308)
    with cr.checking(), pytest.raises(cr.CheckError, match="matmul"):
        cr.grad(lambda a: np.sum(a @ big))(np.full((1, 2), 1e-10))  # inf from a finite dy


def test_a_rule_registered_over_matmuls_is_used():
    original = cr.rrule.lookup(np.matmul)[0]
    assert PRODUCT_FORMS[np.matmul].rule is original

    def halved(a, b):
        y, pullback = original(a, b)
        return y, lambda dy: tuple(c if type(c) is cr.NoTangent else 0.5 * cr.unthunk(c)
                                   for c in pullback(dy))

    cr.rrule.register(np.matmul, replace=True)(halved)
    try:
        np.testing.assert_allclose(cr.grad(lambda v: np.sum(A @ v))(V), 0.5 * A.sum(0))
    finally:
        cr.rrule.register(np.matmul, replace=True)(original)
    np.testing.assert_allclose(cr.grad(lambda v: np.sum(A @ v))(V), A.sum(0))


# --- under hvp: the form on pairs (`ForwardTrace.record_product`, `_pull_product_pairs`) --

def _products_on_pairs(f, x, v) -> tuple:
    """``hvp(f, x, v)``, and how many products were recorded by the form on pairs."""
    from chainrules.ad.transforms.forward import ForwardTrace

    original = ForwardTrace.record_product
    made = []

    def counting(self, *args):
        recorded = original(self, *args)
        made.append(recorded is not None)
        return recorded

    ForwardTrace.record_product = counting
    try:
        return cr.hvp(f, x, v), made.count(True)
    finally:
        ForwardTrace.record_product = original


def _rnn(W, U):
    h = np.zeros(W.shape[0], dtype=W.dtype)
    for t in range(U.shape[1]):
        h = np.tanh(W @ h + U[:, t])
    return np.sum(h * h)


def _rnn_in_rows(W, U):
    """The RNN written with row vectors, as many ML codes are: ``h @ W``, ``U[t]``."""
    h = np.zeros(W.shape[0], dtype=W.dtype)
    for t in range(U.shape[0]):
        h = np.tanh(h @ W + U[t])
    return np.sum(h * h)


W6 = np.random.default_rng(11).normal(scale=0.4, size=(6, 6))
U6 = np.random.default_rng(12).normal(size=(6, 5))
HVP_CASES = {  # name: (f, x, products recorded on pairs: an rnn's first, of zeros, is not)
    "an rnn in W": (lambda W: _rnn(W, U6), W6, 4),
    "an rnn in U (W a constant)": (lambda U: _rnn(W6, U), U6, 4),
    "np.dot": (lambda a: np.sum(np.cos(np.dot(a, V)) * np.dot(a, a[0])), A[:3], 2),
    "matrix @ matrix, twice": (lambda a: np.sum(np.sin(a @ B) ** 2) + np.sum(a @ a.T @ a), A,
                               3),
    "a constant on the left": (lambda b: np.sum(np.exp(A @ b)), B, 1),
    "a cotangent without tangent": (lambda a: np.sum(a @ V) + np.sum(np.sin(a) ** 2), A, 1),
    "a sparse cotangent (the rule)": (lambda a: (a @ B)[1, 0] ** 3 + np.sum((a @ B) ** 2), A,
                                      2),
    "float32": (lambda W: _rnn(W, U6.astype(np.float32)), W6.astype(np.float32), 4),
    "an rnn in rows (h @ W)": (lambda W: _rnn_in_rows(W, U6.T.copy()), W6, 4),
    "an rnn in rows, in its inputs": (lambda U: _rnn_in_rows(W6, U), U6.T.copy(), 4),
    "a vector times a matrix": (lambda v: np.sum(np.sin(v @ B) * (v[:2] @ A[:2, :2])), V, 2),
    "np.outer": (lambda v: np.sum(np.cos(np.outer(v, v[::-1])) * A[:3]), V, 1),
}


@pytest.mark.parametrize("name", list(HVP_CASES))
def test_products_under_hvp_against_central_differences_of_the_gradient(name):
    f, x, expected_count = HVP_CASES[name]
    direction = np.random.default_rng(13).normal(size=x.shape).astype(x.dtype)
    got, count = _products_on_pairs(f, x, direction)
    assert got.dtype == x.dtype and got.shape == x.shape
    wide = x.astype(np.float64)
    gradient = cr.grad(f)
    step = 1e-6
    expected = (gradient(wide + step * direction) - gradient(wide - step * direction)) / (
        2 * step)
    single = x.dtype == np.float32
    tolerance = dict(rtol=2e-3, atol=2e-3) if single else dict(rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got, expected, **tolerance)
    assert count == expected_count
    with cr.checking():  # the checking mode's pullbacks agree (W's outer products summed
        # in another order: float32's rounding)
        np.testing.assert_allclose(cr.hvp(f, x, direction), got,
                                   **(dict(rtol=1e-5, atol=1e-6) if single else
                                      dict(rtol=1e-10, atol=1e-12)))


def test_a_hessian_through_products_on_pairs_against_its_closed_form():
    # f(W) = sum(sin(W @ v)): d2f/dW_ij dW_kl = -sin(W v)_i v_j v_l [i == k]
    hessian = np.einsum("ik,j,l->ijkl", np.diag(-np.sin(A @ V)), V, V)
    np.testing.assert_allclose(cr.hessian(lambda a: np.sum(np.sin(a @ V)))(A), hessian,
                               rtol=1e-10, atol=1e-12)
    direction = RNG.normal(size=A.shape)
    got, count = _products_on_pairs(lambda a: np.sum(np.sin(a @ V)), A, direction)
    np.testing.assert_allclose(got, np.einsum("ijkl,kl->ij", hessian, direction), rtol=1e-10,
                               atol=1e-12)
    assert count == 1


# --- W @ h's outer products summed by one matrix product (`_defer_outer` in reverse.py) ----

def _outer_sums(f, *args, hvp=None) -> tuple:
    """The gradient of ``f`` (or ``hvp(f, *hvp)``) and, for each sum of deferred outer
    products, (the number of products, and of the matrix's numbers)."""
    from chainrules.ad.transforms import reverse

    original = reverse._add_outer_sum
    sums = []

    def counting(slots, owned, records, node, entry):
        lefts, rights = entry[1] + entry[3], entry[2] + entry[4]
        sums.append((len(entry[1]), len(lefts) * (lefts[0].size + rights[0].size),
                     lefts[0].size * rights[0].size))
        return original(slots, owned, records, node, entry)

    reverse._add_outer_sum = counting
    try:
        result = cr.hvp(*hvp) if hvp is not None else cr.grad(f, argnums=(0, 1))(*args)
    finally:
        reverse._add_outer_sum = original
    return result, sums


def _rnn_by_hand(W, U):
    hs = [np.zeros(W.shape[0], W.dtype)]
    for t in range(U.shape[1]):
        hs.append(np.tanh(W @ hs[-1] + U[:, t]))
    dW, dU = np.zeros_like(W), np.zeros_like(U)
    dh = 2 * hs[-1]
    for t in reversed(range(U.shape[1])):
        da = dh * (1 - hs[t + 1] ** 2)
        dU[:, t] = da
        dW += np.outer(da, hs[t])
        dh = W.T @ da
    return dW, dU


@pytest.mark.parametrize("shape, steps", [((8, 8), 40), ((3, 3), 1), ((5, 5), 9)])
def test_outer_products_summed_in_batches_no_larger_than_the_matrix(shape, steps):
    rng = np.random.default_rng(5)
    W, U = rng.normal(scale=0.4, size=shape), rng.normal(size=(shape[0], steps))
    (gW, gU), sums = _outer_sums(_rnn, W, U)
    dW, dU = _rnn_by_hand(W, U)
    np.testing.assert_allclose(gW, dW, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gU, dU, rtol=1e-12, atol=1e-14)
    # every step's outer product (the first's, of zeros, too), in batches of
    # rows * columns // (rows + columns): never more numbers than the matrix holds
    batch = max(1, shape[0] * shape[1] // (shape[0] + shape[1]))
    assert sum(count for count, _, _ in sums) == steps
    assert max(count for count, _, _ in sums) == min(batch, steps)
    assert all(kept <= max(matrix, shape[0] + shape[1]) for _, kept, matrix in sums)


def test_a_wide_matrix_in_float32_and_other_cotangents_of_it():
    rng = np.random.default_rng(6)
    W = rng.normal(scale=0.3, size=(3, 7)).astype(np.float32)
    h0 = rng.normal(size=7).astype(np.float32)

    def f(W, h0):  # W read by a product at each step, and by a sum and an index read
        total = np.sum(W ** 2) + W[1, 2] * 3
        for _ in range(6):
            total = total + np.sum(np.sin(W @ h0))
            h0 = np.concatenate([np.tanh(W @ h0), h0[3:]])
        return total

    (gW, gh), sums = _outer_sums(f, W, h0)
    assert gW.dtype == np.float32 and gh.dtype == np.float32 and len(sums) > 1
    wide = W.astype(np.float64), h0.astype(np.float64)
    np.testing.assert_allclose(gW, numerical_gradient(lambda W: f(W, wide[1]), wide[0]),
                               rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(gh, numerical_gradient(lambda h: f(wide[0], h), wide[1]),
                               rtol=1e-3, atol=1e-4)


def test_outer_products_with_their_tangents_under_hvp():
    rng = np.random.default_rng(8)
    W, U = rng.normal(scale=0.4, size=(6, 6)), rng.normal(size=(6, 12))
    direction = rng.normal(size=W.shape)
    f = lambda W: _rnn(W, U)  # noqa: E731
    got, sums = _outer_sums(f, hvp=(f, W, direction))
    step = 1e-6
    gradient = cr.grad(f)
    expected = (gradient(W + step * direction) - gradient(W - step * direction)) / (2 * step)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
    # every step's but the first (W @ h of the zeros the function created: the rule's)
    assert sum(count for count, _, _ in sums) == 11
    # each batch: the values' products and the tangents' (two per step), bounded as above
    assert all(kept <= matrix for _, kept, matrix in sums)


@pytest.mark.parametrize("shape, steps", [((8, 8), 40), ((3, 3), 1), ((4, 6), 9)])
def test_an_rnn_in_rows_against_backpropagation_by_hand(shape, steps):
    """``h @ W``: W's cotangent outer(h, dy) summed in batches as W @ h's is (`outer_of_b`),
    against backpropagation through time written by hand."""
    rng = np.random.default_rng(9)
    W = rng.normal(scale=0.4, size=(shape[0], shape[0]))
    U = rng.normal(size=(steps, shape[0]))
    (gW, gU), sums = _outer_sums(_rnn_in_rows, W, U)
    dW, dU = _rnn_by_hand(W.T, U.T)  # h @ W is W.T @ h
    np.testing.assert_allclose(gW, dW.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gU, dU.T, rtol=1e-12, atol=1e-14)
    assert sum(count for count, _, _ in sums) == steps
    assert all(kept <= max(matrix, 2 * shape[0]) for _, kept, matrix in sums)
    assert _by_form(_rnn_in_rows, W, U)


def test_a_vector_times_a_wide_matrix_in_float32():
    rng = np.random.default_rng(10)
    M = rng.normal(scale=0.3, size=(3, 7)).astype(np.float32)
    h = rng.normal(size=3).astype(np.float32)

    def f(M, h):  # M read by products at each step and by a sum
        total = np.sum(M ** 2)
        for _ in range(5):
            y = np.tanh(h @ M)
            total = total + np.sum(y)
            h = y[:3] + y[3:6]
        return total

    (gM, gh), sums = _outer_sums(f, M, h)
    assert gM.dtype == np.float32 and gh.dtype == np.float32 and sums
    wide = M.astype(np.float64), h.astype(np.float64)
    np.testing.assert_allclose(gM, numerical_gradient(lambda M: f(M, wide[1]), wide[0]),
                               rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(gh, numerical_gradient(lambda h: f(wide[0], h), wide[1]),
                               rtol=1e-3, atol=1e-4)
