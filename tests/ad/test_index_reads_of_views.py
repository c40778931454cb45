"""Index reads of a moved view, ``U.T[t]`` in a loop: the cotangent stays sparse through the
view's pullback (`chainrules.core.sparse.through_view`, `through_reshape`, the ``sparse=``
formula of `define`), so each step costs O(len(U.T[t])) backward, not O(len(U)).

Before, the transpose's pullback made the index read's cotangent dense: a loop over
``U.T[t]`` cost O(T * len(U)) (4,000 steps: 82 us per step against 34 us at 1,000). The
values are checked against central differences and against the scatter into a view of zeros
(``np.add.at(view(zeros), index, values)``), built with NumPy alone; the cost by counting the
dense arrays the pass builds, a count no machine changes. Below `SPARSE_FROM` elements (1,024)
the view's pullback makes the cotangent dense instead, which costs less there.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.core import NoTangent, SparseCotangent, accumulate, rrule, unthunk
from chainrules.core.sparse import through_reshape, through_view
from chainrules.rules.define import SPARSE_FROM

from .finite_differences import numerical_gradient

RNG = np.random.default_rng(0)
U = RNG.normal(size=(4, 5, 3))
W = RNG.normal(size=(5, 4, 3))

LOOPS = {
    "x.T[t]": lambda U: sum(np.sum(np.sin(U.T[t])) for t in range(3)),
    "x.T[t, i, j]": lambda U: sum(U.T[t, 1, 2] ** 2 for t in range(3)),
    "transpose(axes)": lambda U: sum(np.sum(np.transpose(U, (1, 0, 2))[t] ** 2)
                                     for t in range(5)),
    "swapaxes": lambda U: sum(np.sum(np.swapaxes(U, 0, 2)[t, ::2] * W[0, :, t])
                              for t in range(3)),
    "moveaxis": lambda U: sum(np.sum(np.moveaxis(U, 0, -1)[..., t] ** 3) for t in range(4)),
    "rollaxis": lambda U: sum(np.sum(np.rollaxis(U, 2)[t][None] ** 2) for t in range(3)),
    "flip": lambda U: sum(np.sum(np.flip(U, 1)[:, t] * t) for t in range(5)),
    "flipud, repeated rows": lambda U: np.sum(np.flipud(U)[np.array([0, 0, 3])] ** 2),
    "reshape": lambda U: sum(np.sum(U.reshape(20, -1)[t] ** 2) for t in range(0, 20, 3)),
    "reshape, order F (dense)": lambda U: sum(np.sum(U.reshape((20, -1), order="F")[t] ** 2)
                                              for t in range(0, 20, 3)),
    "ravel": lambda U: sum(np.ravel(U)[k] ** 2 for k in (0, 7, 7, 59)),
    "squeeze": lambda U: sum(np.sum(np.squeeze(U[None])[t] ** 2) for t in range(4)),
    "expand_dims": lambda U: sum(np.sum(np.expand_dims(U, 1)[t, 0, 2:] ** 2)
                                 for t in range(4)),
    "mask": lambda U: np.sum(U.T[U.T > 0] ** 2),
}
if hasattr(np.ndarray, "mT"):  # NumPy 2.0
    LOOPS["x.mT[t]"] = lambda U: sum(np.sum(U.mT[t] ** 2) for t in range(2))
if hasattr(np, "matrix_transpose"):  # NumPy 2.0
    LOOPS["matrix_transpose"] = lambda U: sum(np.sum(np.matrix_transpose(U)[t, 1] ** 2)
                                              for t in range(4))


@pytest.mark.parametrize("name", list(LOOPS))
def test_gradients_of_index_reads_of_views(name):
    loss = LOOPS[name]
    np.testing.assert_allclose(cr.grad(loss)(U), numerical_gradient(loss, U),
                               rtol=1e-6, atol=1e-8)


# U's shape, with its last axis long enough for SPARSE_FROM elements: the loops' indices fit
LARGE_U = RNG.normal(size=(4, 5, 3 * (SPARSE_FROM // 60 + 1)))


def _moved_sparsely(monkeypatch) -> list:
    """The sparse cotangents the views' ``sparse`` formulas return, recorded."""
    reached: list = []
    import chainrules.rules.numpy.shape as shape_rules
    for rule_name in ("through_view", "through_reshape"):
        original = getattr(shape_rules, rule_name)
        monkeypatch.setattr(shape_rules, rule_name,
                            lambda *args, original=original: reached.append(
                                original(*args)) or reached[-1])
    return reached


@pytest.mark.parametrize("name", [name for name in LOOPS if "dense" not in name])
def test_the_sparse_cotangent_goes_through_the_view(name, monkeypatch):
    """Every view's pullback keeps its index read's cotangent sparse on an array of
    `SPARSE_FROM` elements or more (reshape in F order is the control: it goes dense); the
    gradient against a central difference along a random direction."""
    assert LARGE_U.size >= SPARSE_FROM
    reached = _moved_sparsely(monkeypatch)
    loss = LOOPS[name]
    gradient = cr.grad(loss)(LARGE_U)
    assert reached and all(type(moved) is SparseCotangent for moved in reached)
    direction = np.random.default_rng(5).normal(size=LARGE_U.shape)
    step = 1e-6
    central = (loss(LARGE_U + step * direction) - loss(LARGE_U - step * direction)) / (2 * step)
    np.testing.assert_allclose(np.vdot(gradient, direction), central, rtol=1e-6)


@pytest.mark.parametrize("name", ["x.T[t]", "reshape", "ravel"])
def test_a_small_arrays_cotangent_is_made_dense(name, monkeypatch):
    """Below `SPARSE_FROM` elements the view's pullback makes its cotangent dense (moving the
    index costs more there): the ``sparse`` formula is not reached, the gradient is exact."""
    assert U.size < SPARSE_FROM
    reached = _moved_sparsely(monkeypatch)
    np.testing.assert_allclose(cr.grad(LOOPS[name])(U), numerical_gradient(LOOPS[name], U),
                               rtol=1e-6, atol=1e-8)
    assert reached == []


def _count_dense(monkeypatch) -> list:
    """Record the size of every dense array a SparseCotangent builds."""
    sizes: list = []
    dense = SparseCotangent.dense
    monkeypatch.setattr(SparseCotangent, "dense",
                        lambda self: sizes.append(int(np.prod(self.shape))) or dense(self))
    return sizes


def _transposed_rows(U):
    h = np.zeros(U.shape[0])
    for t in range(U.shape[1]):
        h = 0.5 * h + U.T[t]
    return np.sum(h)


@pytest.mark.parametrize("steps", [SPARSE_FROM // 8, 800])
def test_a_loop_over_transposed_rows_builds_one_dense_cotangent(steps, monkeypatch):
    """At most one dense array of U's size whatever the length: the second read's sparse
    cotangent starts U's owned buffer, the others are added into it at their index (before:
    one per step, O(T * len(U)))."""
    U = np.random.default_rng(steps).normal(size=(8, steps))
    sizes = _count_dense(monkeypatch)
    gradient = cr.grad(_transposed_rows)(U)
    np.testing.assert_allclose(gradient, np.broadcast_to(0.5 ** np.arange(steps)[::-1],
                                                         U.shape), rtol=1e-12)
    assert sizes.count(U.size) <= 1, sizes  # (np.sum(h)'s, of h's size, is not U's)


def test_a_loop_over_transposed_rows_is_linear():
    from .test_complexity import _assert_linear

    def make_call(steps):  # 64 rows: a dense cotangent per step would dominate at 4,000
        U = np.random.default_rng(steps).normal(size=(64, steps))
        return lambda: cr.grad(_transposed_rows)(U)

    _assert_linear(make_call, 500, 4000)


def test_second_order_through_a_transposed_loop():
    """Under hvp the cotangents are traced: the view's pullback takes the dense path (exact,
    as before)."""
    loss = LOOPS["x.T[t]"]
    V = np.random.default_rng(1).normal(size=U.shape)
    np.testing.assert_allclose(cr.hvp(loss, U, V), -np.sin(U) * V, rtol=1e-10, atol=1e-12)


# --- the core functions, against the scatter into a view of zeros -------------------------------

INDICES = [1, -1, (slice(None), 2), (slice(None, None, -2), Ellipsis, 0),
           (np.array([0, 2, 0]),), (np.array([[1], [0]]), np.array([0, 3])),
           (None, 1, slice(1, 3)), (Ellipsis, None), ()]
VIEWS = {
    "transpose": np.transpose,
    "swapaxes": lambda a: np.swapaxes(a, 0, 2),
    "moveaxis": lambda a: np.moveaxis(a, 1, 0),
    "flip": lambda a: np.flip(a, (0, 2)),
    "reversed slices": lambda a: a[::-1, :, ::-1],
}


def _scattered(view, shape, index, values):
    out = np.zeros(shape)
    np.add.at(view(out), index, values)  # a view of out: written into out
    return out


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_through_view_scatters_as_the_view_of_zeros_does(view, index):
    shape = (4, 5, 4)
    view = VIEWS[view]
    y_shape = view(np.zeros(shape)).shape
    values = np.random.default_rng(2).normal(size=np.zeros(y_shape)[index].shape)
    sparse = SparseCotangent(index, values, y_shape, np.float64)
    moved = through_view(sparse, shape, view)
    expected = _scattered(view, shape, index, values)
    np.testing.assert_array_equal(moved.unthunk(), expected)
    buffer = np.random.default_rng(3).normal(size=shape)
    eager = buffer + expected
    np.testing.assert_array_equal(accumulate(buffer.copy(), moved, owned=True), eager)


@pytest.mark.parametrize("index", INDICES[:-2] + [np.array([5, 5, 0])], ids=repr)
def test_through_reshape_scatters_as_the_reshaped_zeros_do(index):
    shape, y_shape = (3, 4, 2), (6, 4)
    values = np.random.default_rng(4).normal(size=np.zeros(y_shape)[index].shape)
    sparse = SparseCotangent(index, values, y_shape, np.float32)
    moved = through_reshape(sparse, shape)
    assert moved.dtype == np.float32
    expected = np.zeros(shape, np.float32)
    np.add.at(expected.reshape(y_shape), index, values.astype(np.float32))
    np.testing.assert_array_equal(moved.unthunk(), expected)


def test_a_view_that_copies_is_refused():
    sparse = SparseCotangent(0, np.ones(4), (6, 4), np.float64)
    # reshaping a zero-stride array of coordinates copies: None, the caller goes dense
    assert through_view(sparse, (3, 2, 4), lambda a: np.reshape(a, (6, 4))) is None


def test_the_rules_pullback_answers_a_sparse_cotangent_sparsely():
    x = np.arange(2.0 * SPARSE_FROM, dtype=np.float32).reshape(2, SPARSE_FROM)
    y, pullback = rrule(np.transpose, x)
    cotangents = pullback(SparseCotangent(2, np.array([1.0, 2.0], np.float32),
                                          (SPARSE_FROM, 2), np.float32))
    assert cotangents[0] is NoTangent()
    assert type(cotangents[1]) is SparseCotangent and cotangents[1].dtype == np.float32
    expected = np.zeros(x.shape, np.float32)
    expected[:, 2] = [1, 2]
    np.testing.assert_array_equal(cotangents[1].unthunk(), expected)
    with pytest.raises(Exception, match="shape"):  # a wrong shape is named, not moved
        pullback(SparseCotangent(0, np.ones(2), (2, 2), np.float64))


def test_a_small_arrays_rule_answers_a_sparse_cotangent_densely():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    y, pullback = rrule(np.transpose, x)
    cotangent = unthunk(pullback(SparseCotangent(2, np.array([1.0, 2.0], np.float32), (3, 2),
                                                 np.float32))[1])
    assert type(cotangent) is np.ndarray and cotangent.dtype == np.float32
    np.testing.assert_array_equal(cotangent, [[0, 0, 1], [0, 0, 2]])
