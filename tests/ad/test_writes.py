"""Arrays written in place (ad/dispatch/writes.py): item, slice, mask and integer-array assignment,
augmented assignment, np.add.at, ufunc out=, at order 1 and 2, against finite differences;
linear cost; the errors for writes the engine cannot follow."""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from chainrules.testing import check_linear
from tests.ad.finite_differences import numerical_gradient

DTYPES = [np.float64, np.float32, np.complex128]
_RNG = np.random.default_rng(15)


def simulate(params, n):
    """The issue's example: preallocate and fill, reading what was written."""
    out = np.zeros(n)
    out[0] = params[0]
    for i in range(1, n):
        out[i] = out[i - 1] * np.exp(-params[1]) + params[2] * np.sin(i)
    return out


def _weights(n, dtype):
    w = _RNG.normal(size=n)
    return w + 1j * _RNG.normal(size=n) if np.dtype(dtype).kind == "c" else w


def _real_loss(out, weights):
    """A real scalar of every element (complex ones through both parts)."""
    return np.sum(np.real(out * weights)) + np.sum(np.abs(out) ** 2) / 7.0


# Each form takes x (of the dtype under test, 6 elements) and returns an array.
def item_into_zeros(x):
    out = np.zeros(4, x.dtype)
    out[1] = x[0] * x[1]
    out[3] = np.sin(x[2])
    out[1] = out[1] + x[3]  # read after write sees the write
    return out


def slice_into_ones(x):
    out = np.ones(6, x.dtype)
    out[2:5] = x[:3] * 2.0
    out[:2] = x[4]  # broadcast: both get x[4]
    return out


def mask_into_full(x):
    out = np.full(6, 0.5, x.dtype)
    out[np.array([True, False, True, False, False, True])] = x[:3] ** 2
    return out


def integer_array_with_repeats(x):
    out = np.zeros_like(x)
    out[np.array([0, 2, 0, 5])] = x[:4]  # position 0 written twice: the last value wins
    out[[1, 3]] = x[4]
    return out


def into_np_array_and_copy(x):
    a = np.array([1.0, 2.0, 3.0], x.dtype)
    a[1] = x[0] * x[5]
    y = x.copy()
    y[0] = 5.0  # an overwritten value gets no gradient
    y[2:4] = a[:2]
    return np.concatenate([a, y])


def two_d_rows_columns_blocks(x):
    out = np.zeros((4, 3), x.dtype)
    for j in range(3):
        out[:, j] = x[j:j + 4] * (j + 1.0)  # columns
    out[0] = x[3:]  # a row
    out[2:, 1:] = np.reshape(x[:4], (2, 2)) ** 2  # a block
    out[1, 1] = out[0, 0] * out[3, 2]
    return out


def augmented_assignment(x):
    y = x.copy()
    y[1:] *= 2.0
    y[0] += x[3]
    out = np.zeros((2, 3), x.dtype)
    for i in range(2):
        out[i] += x[3 * i:3 * i + 3]  # a[i] op= t: a row
        out[i, i] -= x[i] ** 2
    y /= 3.0
    y -= x[0]
    return np.concatenate([y, out.ravel()])


def add_at_and_other_ufunc_at(x):
    out = np.zeros(5, x.dtype)
    np.add.at(out, np.array([0, 1, 1, 4, 1]), x[:5])  # repeats add up
    np.subtract.at(out, [2, 2], x[5])
    np.multiply.at(out, np.array([0, 4]), x[1:3])
    out[3] = x[4]  # written before a slice add: its backward zeroes the cotangent later
    np.add.at(out, slice(2, 4), x[2:4])
    return out


def ufunc_out(x):
    buf = np.empty(6, x.dtype)
    np.multiply(x, x, out=buf)
    np.sin(buf, out=buf)
    res = np.empty_like(x)
    np.add(buf, x, out=res)
    return res * buf


def captured_then_written(x):
    """Rules keep their inputs for the backward pass: a write after a use must not change
    what they see (copy on write)."""
    out = np.zeros(6, x.dtype)
    out[:] = x
    s = np.sin(out) * out
    out[0] = 7.0
    row = out[1:4]  # a view of the array, kept by the multiply below
    t = row * x[:3]
    out[2] = x[5] ** 3
    return np.concatenate([s, t, out])


def numpy_in_place_functions(x):
    a = np.full(3, x[0])  # a traced fill value
    b = np.full_like(x[:2], x[1] * 2.0)
    m = np.zeros((3, 3), x.dtype)
    np.fill_diagonal(m, x[2:5])
    c = np.ones(4, x.dtype)
    np.copyto(c, x[1:5], where=np.array([True, False, True, True]))
    d = np.zeros(2, x.dtype)
    d.fill(x[5])
    return np.concatenate([a, b, m.ravel(), c, d])


def number_writes_in_a_loop(x):
    """Numbers written one element at a time (the backward pass reads their cotangents
    inline), next to the cases it must leave to the general pullback."""
    grid = np.zeros((3, 4), x.dtype)
    for k in range(2):
        for i in range(1, 4):
            grid[k + 1, i] = grid[k, i] + 0.5 * (grid[k, i - 1] - x[i]) * x[k]
    grid[np.int64(2), -1] = grid[2, 1] * x[5]  # NumPy integers, a negative index
    grid[1, 2] = x[4] ** 2  # an overwrite: the first value gets no gradient
    grid[0] = x[3]  # a number broadcast to a row: the general pullback
    row = grid[2]  # a live view: the next write takes the general path
    grid[2, 0] = x[0] * 3.0
    return np.concatenate([grid.ravel(), row])


FORMS = [number_writes_in_a_loop, item_into_zeros, slice_into_ones, mask_into_full, integer_array_with_repeats,
         into_np_array_and_copy, two_d_rows_columns_blocks, augmented_assignment,
         add_at_and_other_ufunc_at, ufunc_out, captured_then_written, numpy_in_place_functions]


def _plain(form, x):
    """What NumPy computes, with no trace active."""
    return np.asarray(form(x))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.__name__)
def test_writes_at_order_1_against_finite_differences(form, dtype):
    x = _RNG.normal(size=6).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * _RNG.normal(size=6)
    out = _plain(form, x)
    weights = _weights(out.size, dtype).reshape(out.shape)

    def loss(x):
        return _real_loss(form(x), weights)

    value, gradient = cr.value_and_grad(loss)(x)
    assert gradient.dtype == x.dtype and gradient.shape == x.shape
    np.testing.assert_allclose(value, _real_loss(out, weights), rtol=1e-5, atol=1e-6)
    if dtype == np.float32:  # the reference: the same function in float64
        wide = x.astype(np.float64)
        expected = numerical_gradient(lambda x: _real_loss(form(x), weights), wide)
        np.testing.assert_allclose(gradient, expected, rtol=2e-3, atol=2e-3)
    else:
        expected = numerical_gradient(loss, x)
        np.testing.assert_allclose(gradient, expected, rtol=1e-6, atol=1e-6)


def test_number_writes_take_the_inline_backward_and_match_the_pullback(monkeypatch):
    """``u[k, i] = t`` of a traced number: the backward pass reads and zeroes the cotangent
    itself (no pullback call), with the gradient the pullback gives."""
    from chainrules.ad.dispatch.writes import WritePullback

    x = _RNG.normal(size=6)
    weights = _weights(_plain(number_writes_in_a_loop, x).size, np.float64)

    def loss(x):
        return _real_loss(number_writes_in_a_loop(x), weights)

    calls, call = [], WritePullback.__call__
    monkeypatch.setattr(WritePullback, "__call__",
                        lambda self, dy: calls.append(self.reads_number) or call(self, dy))
    gradient = cr.grad(loss)(x)
    np.testing.assert_allclose(gradient, numerical_gradient(loss, x), rtol=1e-6, atol=1e-6)
    # the broadcast row goes to the pullback; of the eight element writes, at most the first
    # met (if its cotangent buffer is not the engine's own yet) does
    assert calls.count(False) == 1 and calls.count(True) <= 1, calls


@pytest.mark.parametrize("dtype", [np.float32, np.complex128], ids=lambda d: np.dtype(d).name)
def test_float64_numbers_written_into_other_dtypes_get_projected_cotangents(dtype):
    """A float64 number written into a float32 or complex array: its cotangent is the
    buffer's number projected back onto float64 (exactly, for this linear loss)."""
    weights = _RNG.normal(size=4)

    def loss(x):
        buffer = np.zeros(4, dtype)
        for i in range(4):
            buffer[i] = x[i] * x[4]
        return np.real(np.dot(weights, buffer))

    x = _RNG.normal(size=5)
    gradient = cr.grad(loss)(x)
    expected = np.append(weights * x[4], np.dot(weights, x[:4]))
    assert gradient.dtype == np.float64
    np.testing.assert_allclose(gradient, expected, rtol=1e-6)


def test_the_issue_example_jacobian_against_finite_differences():
    params = np.array([1.0, 0.5, 2.0])
    jacobian = cr.jacobian(lambda p: simulate(p, 7))(params)
    for k in range(3):
        step = np.zeros(3)
        step[k] = 1e-6
        column = (simulate(params + step, 7) - simulate(params - step, 7)) / 2e-6
        np.testing.assert_allclose(jacobian[:, k], column, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("form", [number_writes_in_a_loop, item_into_zeros,
                                  two_d_rows_columns_blocks,
                                  augmented_assignment, add_at_and_other_ufunc_at, ufunc_out,
                                  captured_then_written, integer_array_with_repeats,
                                  numpy_in_place_functions],
                         ids=lambda f: f.__name__)
def test_writes_at_order_2_hessian_and_jvp_against_finite_differences(form):
    x = _RNG.normal(size=6)
    weights = _weights(_plain(form, x).size, np.float64).reshape(_plain(form, x).shape)

    def loss(x):
        return _real_loss(form(x), weights)

    hessian = cr.hessian(loss)(x)
    gradient = cr.grad(loss)
    expected = np.stack([numerical_gradient(lambda x: gradient(x)[k], x) for k in range(6)])
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-5)
    # grad of grad (reverse over reverse) and jvp (forward) of the writes
    v = _RNG.normal(size=6)
    np.testing.assert_allclose(cr.grad(lambda x: np.dot(gradient(x), v))(x), hessian @ v,
                               rtol=1e-6, atol=1e-6)
    _, tangent = cr.jvp(loss, (x,), (v,))
    np.testing.assert_allclose(tangent, gradient(x) @ v, rtol=1e-8, atol=1e-10)


def test_hessian_of_the_fill_loop():
    params = np.array([0.7, 0.3, 1.5])

    def loss(p):
        return np.sum(simulate(p, 8) ** 2)

    gradient = cr.grad(loss)
    expected = np.stack([numerical_gradient(lambda p: gradient(p)[k], params)
                         for k in range(3)])
    np.testing.assert_allclose(cr.hessian(loss)(params), expected, rtol=1e-5, atol=1e-6)


def test_writing_into_the_input_changes_the_callers_array_as_numpy_does():
    def f(x):
        x[0] = 0.0
        x[2:] *= 3.0
        x += 1.0
        return np.sum(x ** 2)

    x = np.array([1.0, 2.0, 3.0, 4.0])
    expected = x.copy()
    f(expected)  # NumPy: the caller's array is written
    gradient = cr.grad(f)(x)
    np.testing.assert_array_equal(x, expected)
    # d/dx of (0 + 1)^2 + (x1 + 1)^2 + (3 x2 + 1)^2 + (3 x3 + 1)^2
    np.testing.assert_allclose(gradient, [0.0, 6.0, 60.0, 78.0])

    def square_in_place(x):
        x *= x
        return np.sum(x)

    x = np.array([1.5, -2.0])
    np.testing.assert_allclose(cr.grad(square_in_place)(x), [3.0, -4.0])
    np.testing.assert_array_equal(x, [2.25, 4.0])


def test_writing_into_the_input_after_a_rule_kept_it_is_a_clear_error():
    def f(x):
        s = np.sum(np.sin(x))
        x[0] = 0.0
        return s + np.sum(x)

    x = np.ones(3)
    with pytest.raises(cr.TracingError, match=r"x = x.copy\(\)"):
        cr.grad(f)(x)


def test_writing_through_a_view_is_a_clear_error():
    def through_slice(x):
        out = np.zeros(4)
        v = out[2:]
        v[0] = x[0]
        return np.sum(out)

    def chained_index(x):
        out = np.zeros((2, 2))
        out[1][0] = x[0]
        return np.sum(out)

    def augmented_through_a_name(x):
        out = np.zeros((2, 2))
        out[0] = x
        row = out[0]
        row += x  # NumPy would write into out through the view
        return np.sum(out)

    for f in (through_slice, chained_index, augmented_through_a_name):
        with pytest.raises(cr.TracingError, match=r"view.*out\[2 \+ i\] = t"):
            cr.grad(f)(np.ones(2))


def test_arrays_computed_from_created_arrays_take_writes():
    # operations on constants alone give constants (docs/mutation.md): the program can write
    # traced values into the result, its copies, and arrays made from lists
    def derived(x):
        out = np.zeros(3) + 1.0
        out[0] = x[0]
        copied = np.zeros(3).copy()
        copied[1] = x[1]
        listed = np.asarray([0.0] * 3)
        listed[2] = x[2] ** 2
        return np.sum(out * x) + np.sum(copied) + np.sum(listed)

    # x0 ** 2 + x1 + x2 + x1 + x2 ** 2
    x = np.array([1.0, 2.0, 3.0])
    assert np.allclose(cr.grad(derived)(x), [2.0, 2.0, 7.0])
    # at order 2 too: the result of constants is a constant of every level (it was once left
    # a value of the outer level, which the inner one refused to write into)
    hessian = np.diag([2.0, 0.0, 2.0])
    gradient = cr.grad(derived)
    for k in range(3):
        np.testing.assert_allclose(cr.grad(lambda x: gradient(x)[k])(x), hessian[k])
    np.testing.assert_allclose(cr.hessian(derived)(x), hessian)


def test_aliases_see_writes_and_np_array_copies():
    def f(x):
        out = np.zeros(3)
        alias = out
        alias[0] = x[0]  # the same array
        copied = np.array(out)
        copied[1] = 100.0 * x[1]  # a new array: `out` keeps its values
        out += x
        return np.sum(out * np.arange(1.0, 4.0)) + np.sum(copied) * 0.0

    x = np.array([2.0, 3.0, 4.0])
    assert cr.grad(f)(x).tolist() == [2.0, 2.0, 3.0]
    assert f(x.copy()) == cr.value_and_grad(f)(x)[0]


def test_no_trace_numpy_is_untouched():
    originals = (np.zeros, np.ones, np.empty, np.full, np.copy, np.array, np.eye)
    cr.grad(lambda x: np.sum(simulate(x, 3)))(np.ones(3))
    assert (np.zeros, np.ones, np.empty, np.full, np.copy, np.array, np.eye) == originals
    assert type(np.zeros(2)) is np.ndarray


def test_write_forms_cost_no_copy_of_the_array_per_write(monkeypatch):
    """A fill loop and a 2-D column fill: copies of whole arrays do not grow with the number
    of writes (counted, so load cannot change it), and time and memory are linear."""
    from chainrules.ad.dispatch import writes
    from chainrules.ad.transforms import reverse

    copied = [0]

    def counting(function):
        def counted(value, *more):
            copied[0] += int(np.prod(np.shape(cr.primal(value)), dtype=np.int64))
            return function(value, *more)
        return counted

    # the engine's ways of copying an array: copy on write, and owned cotangent buffers
    monkeypatch.setattr(writes, "_copy", counting(writes._copy))
    monkeypatch.setattr(reverse, "owned_copy", counting(reverse.owned_copy))
    monkeypatch.setattr(reverse, "owned_sum", counting(reverse.owned_sum))

    def fill(n):
        params = np.array([1.0, 0.3, 0.5])
        return lambda: cr.grad(lambda p: np.sum(simulate(p, n)))(params)

    def columns(n):
        # (16 rows: `out ** 2` is one rule's call at both sizes; below 1,024 elements it is
        # an array form, whose cotangent is a buffer of the pass's own: no copy at all)
        x = np.linspace(0.0, 1.0, 16)

        def loss(x):
            out = np.zeros((16, n))
            for j in range(n):
                out[:, j] = np.sin(x * j)
                out[0, j] += out[1, j - 1] * 0.5 if j else 0.0
            return np.sum(out ** 2)
        return lambda: cr.grad(loss)(x)

    def copies(run):
        before = copied[0]
        run()
        return copied[0] - before + 1

    def rows(n):
        # (8 columns: `out ** 2` is one rule's call at both sizes, as in `columns`)
        a = 0.9 * np.eye(8) + 0.05 * np.sin(np.arange(64.0)).reshape(8, 8)
        x0 = np.linspace(1.0, 0.5, 8)

        def loss(x0):
            out = np.zeros((n, 8))
            out[0] = x0
            for i in range(1, n):
                out[i] = out[i - 1] @ a  # a rule keeps the row it reads
            return np.sum(out ** 2)
        return lambda: cr.grad(loss)(x0)

    def hvp_of_fill(n):
        params = np.array([1.0, 0.3, 0.5])
        return lambda: cr.hvp(lambda p: np.sum(simulate(p, n) ** 2), params, np.ones(3))

    for case, n in ((fill, 300), (columns, 120), (rows, 200), (hvp_of_fill, 60)):
        measured = check_linear(case, n, count=copies, name=case.__name__)
        small, large = measured.counts
        assert large <= 8 * small + 8, measured
        check_linear(case, n, memory=True, name=case.__name__ + " (time, memory)")


def test_arrays_the_function_creates_are_constants_until_written():
    """A created array that takes no traced value behaves as NumPy's: float() and math.*
    give its numbers, and operations on it alone give constants, whose numbers are NumPy's."""
    import math

    def f(x):
        grid = np.linspace(0.0, 1.0, 3)
        scale = math.exp(grid[1]) + float(np.sum(grid))
        # (a view, grid[1:], is a constant too: followed, should grid be written later)
        assert cr.primal(np.sin(grid)).tolist() == np.sin(np.linspace(0.0, 1.0, 3)).tolist()
        assert type(np.sum(grid[1:])) == np.float64
        out = np.zeros(3)
        out[1] = x[0] * scale  # now traced
        return np.sum(out * grid)

    expected = 0.5 * (math.exp(0.5) + 1.5)
    np.testing.assert_allclose(cr.grad(f)(np.ones(2)), [expected, 0.0])
    np.testing.assert_allclose(cr.hessian(lambda x: f(x) * x[0])(np.ones(2)),
                               [[2 * expected, 0.0], [0.0, 0.0]])


def test_a_vjp_of_writes_leaves_the_given_cotangent_alone_and_can_be_repeated():
    def f(x):
        out = np.empty(4)
        out[:] = 0.0
        out[1:3] = x * x
        out[0] = out[1] + out[2]
        return out

    x = np.array([1.5, -2.0])
    _, pullback = cr.vjp(f, x)
    dy = np.array([1.0, 2.0, 3.0, 4.0])
    first = pullback(dy)[0]
    second = pullback(dy)[0]
    np.testing.assert_array_equal(dy, [1.0, 2.0, 3.0, 4.0])  # the engine wrote into its own copy
    np.testing.assert_allclose(first, [2 * 1.5 * (1.0 + 2.0), 2 * -2.0 * (1.0 + 3.0)])
    np.testing.assert_array_equal(first, second)


# --- views taken before a write see it, as NumPy's do -----------------------------------------

def _view_of_a_created_array(x):
    out = np.zeros(4, x.dtype)
    v = out[2:]
    out[2] = x[0] * x[1]
    return v * x[1]


def _view_of_a_written_array(x):
    out = np.zeros(4, x.dtype)
    out[0] = x[1]
    v = out[1:]
    out[2] = x[0] ** 2
    out[3] += x[1]
    return v * out[0]


def _transpose_and_reshape(x):
    out = np.zeros((2, 2), x.dtype)
    t, r, m = out.T, out.reshape(4), np.reshape(out, (4, 1))
    out[0, 1] = x[0]
    out[1] = x * x[1]
    return np.concatenate([t.ravel(), r * x[0], m[:, 0]])


def _view_of_a_view(x):
    out = np.zeros(6, x.dtype)
    v = out[1:]
    w = v[::2]
    out[3] = x[0] * x[1]
    np.add.at(out, [1, 1], x[1])
    return w * x[0]


def _view_of_a_temporary_view(x):
    out = np.zeros(4, x.dtype)
    v = out.reshape(2, 2)[1]  # the reshape between them is gone after this line
    out[2] = x[0] * x[1]
    out[3] += x[1]
    return v * x[0]


def _view_of_a_view_of_a_written_array(x):
    out = np.zeros(4, x.dtype)
    out[0] = x[1]
    v = out[1:]  # out was written: the engine holds v as a snapshot, followed as a view
    w = v[1:]
    del v
    out[3] = x[0] * x[1]
    return w * x[0]


def _split_and_diagonal(x):
    out = np.ones((2, 2), x.dtype)
    top, bottom = np.split(out, 2)
    d = np.diagonal(out)
    out[1, 1] = x[0] * x[1]
    out[0] = x
    return np.concatenate([top.ravel(), bottom.ravel(), d])


def _view_of_the_input(x):
    x = x.copy()
    v = x[1:]
    x[1] = x[0] ** 3
    return v * x[0]


VIEW_PROGRAMS = [_view_of_a_created_array, _view_of_a_written_array, _transpose_and_reshape,
                 _view_of_a_temporary_view, _view_of_a_view_of_a_written_array,
                 _view_of_a_view, _split_and_diagonal, _view_of_the_input]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("program", VIEW_PROGRAMS, ids=lambda f: f.__name__[1:])
def test_views_taken_before_a_write_see_it_as_numpy_views_do(program, dtype):
    x = np.array([0.7, -1.3], dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * np.array([0.4, 0.9])
    weights = _weights(np.size(program(x.copy())), dtype).reshape(np.shape(program(x.copy())))

    def loss(x):
        return _real_loss(program(x), weights)

    value, gradient = cr.value_and_grad(loss)(x)
    np.testing.assert_allclose(value, _real_loss(program(x.copy()), weights), rtol=1e-5,
                               atol=1e-6)  # the value NumPy computes, views and all
    assert gradient.dtype == x.dtype
    if dtype == np.float32:
        wide = x.astype(np.float64)
        expected = numerical_gradient(lambda x: _real_loss(program(x), weights), wide)
        np.testing.assert_allclose(gradient, expected, rtol=2e-3, atol=2e-3)
    else:
        np.testing.assert_allclose(gradient, numerical_gradient(loss, x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("program", VIEW_PROGRAMS, ids=lambda f: f.__name__[1:])
def test_views_taken_before_a_write_at_order_2(program):
    x = np.array([0.7, -1.3])
    weights = _weights(np.size(program(x.copy())), np.float64)

    def loss(x):
        return _real_loss(np.ravel(program(x)), weights)

    gradient = cr.grad(loss)
    expected = np.stack([numerical_gradient(lambda x: gradient(x)[k], x) for k in range(2)])
    np.testing.assert_allclose(cr.hessian(loss)(x), expected, rtol=1e-5, atol=1e-6)
    v = np.array([0.3, -0.8])
    np.testing.assert_allclose(cr.jvp(loss, (x,), (v,))[1], gradient(x) @ v, rtol=1e-8)
    # reverse over reverse: the outer level's read of the written array must not hide from
    # the inner level that the slice is a view (it once made a snapshot there)
    np.testing.assert_allclose(cr.grad(lambda x: np.dot(gradient(x), v))(x), expected @ v,
                               rtol=1e-5, atol=1e-6)


def test_a_row_view_kept_through_a_fill_loop_stays_linear():
    def fill(x):
        out = np.zeros((len(x), 3))
        first = out[0]  # alive through the loop: followed at each write
        for i in range(len(x)):
            out[i] = x[i] * np.arange(3.0) + first
        return np.sum(out ** 2)

    def constant_fill(x):  # constants written: the array stays a constant, its view a view
        out = np.zeros(len(x))
        tail = out[1:]
        for i in range(len(x)):
            out[i] = float(i)
        return np.sum(tail * x[1:])

    for f in (fill, constant_fill):
        check_linear(lambda n: (lambda: cr.grad(f)(np.linspace(0.1, 1.0, n))), 100,
                     name=f.__name__)
    np.testing.assert_allclose(cr.grad(constant_fill)(np.ones(4)), [0.0, 1.0, 2.0, 3.0])


def test_jvp_writes_into_the_input_as_numpy_does_and_transforms_of_grad_use_it_as_given():
    def f(x):
        x[0] = 0.0
        x[1:] *= 2.0
        return np.sum(x ** 2)

    expected = np.array([1.0, 2.0, 3.0])
    f(expected)  # NumPy: [0, 4, 6]
    x = np.array([1.0, 2.0, 3.0])
    cr.jvp(f, (x,), (np.ones(3),))
    np.testing.assert_array_equal(x, expected)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(cr.hvp(f, x, np.ones(3)), [0.0, 8.0, 8.0])
    _, tangent = cr.jvp(f, (x.copy(),), (np.ones(3),))
    assert tangent == 2 * 4 * 2 + 2 * 6 * 2  # d/dt of (2(x1+t))^2 + (2(x2+t))^2
    # hvp and hessian run a reverse pass inside, which needs the input's values: they (and
    # jacfwd, once per chunk of directions) see the input as given and leave it
    np.testing.assert_allclose(cr.hessian(f)(x), np.diag([0.0, 8.0, 8.0]))
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("ufunc", [np.multiply, np.maximum, np.power, np.negative])
def test_ufunc_at_with_repeated_positions_applies_in_turn_as_numpy_does(ufunc):
    index = np.array([1, 3, 1, 1, 0])

    def f(x):
        out = x[:4] * 1.5
        if ufunc.nin == 1:
            ufunc.at(out, index)
        else:
            ufunc.at(out, index, x[4:] if ufunc is not np.power else 2.0)
        return out

    x = np.array([0.8, -1.1, 0.6, 1.3, 0.9, -0.7, 1.2, 0.5, 1.1])
    np.testing.assert_allclose(cr.value_and_grad(lambda x: np.sum(f(x) ** 2))(x)[0],
                               np.sum(f(x.copy()) ** 2))
    loss = lambda x: np.sum(f(x) * np.arange(1.0, 5.0))  # noqa: E731
    np.testing.assert_allclose(cr.grad(loss)(x), numerical_gradient(loss, x), rtol=1e-6,
                               atol=1e-8)
    gradient = cr.grad(loss)
    expected = np.stack([numerical_gradient(lambda x: gradient(x)[k], x) for k in range(9)])
    np.testing.assert_allclose(cr.hessian(loss)(x), expected, rtol=1e-5, atol=1e-5)


def _put_program(mode):
    def program(x):
        a = (x[:6] * 1.0).reshape(2, 3)  # an array the engine follows
        # index 4 twice (the last write stays), -1 and 7 (wrapped or clipped by mode)
        np.put(a, [0, 4, -1, 4, 7] if mode != "raise" else [0, 4, -1, 4], x[6:8] ** 2,
               mode=mode)
        return np.sum(a ** 2 * np.arange(1.0, 7.0).reshape(2, 3))
    return program


@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_np_put_into_a_traced_array_at_orders_1_and_2(mode):
    # before: NoRuleError for np.put. Values repeat cyclically, as NumPy's do
    program = _put_program(mode)
    x = np.arange(1.0, 9.0) / 3
    np.testing.assert_allclose(cr.grad(program)(x), numerical_gradient(program, x),
                               rtol=1e-6, atol=1e-8)
    v = np.linspace(-1.0, 1.0, 8)
    gradient = cr.grad(program)
    expected = (gradient(x + 1e-5 * v) - gradient(x - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(cr.hvp(program, x, v), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(cr.jvp(program, (x,), (v,))[1], gradient(x) @ v, rtol=1e-9)


OUTSIDE = np.zeros(3)  # made before the trace: a plain array the engine cannot follow


def test_np_put_refusals_are_numpys_and_the_engines():
    def out_of_bounds(x):
        a = x * 1.0
        np.put(a, [9], 1.0)
        return np.sum(a)

    with pytest.raises(IndexError):  # NumPy's own check, on the values
        cr.grad(out_of_bounds)(np.ones(3))

    def into_plain(x):
        np.put(OUTSIDE, [0], x[0])
        return np.sum(OUTSIDE)

    with pytest.raises(cr.TracingError, match=r"np.put\(a, ...\)"):
        cr.grad(into_plain)(np.ones(3))
    assert not OUTSIDE.any()


def test_np_put_into_an_array_made_inside():
    def program(x):
        a = np.zeros(4)
        np.put(a, [3, 1], x)
        return np.sum(a * np.arange(4.0))

    np.testing.assert_allclose(cr.grad(program)(np.array([2.0, 5.0])), [3.0, 1.0])


def _putmask_program(x):
    a = x[:12].reshape(3, 4) * 1.0
    np.putmask(a, a > 0.5, x[12:15] ** 2)  # values by flat position, cyclically
    return np.sum(a ** 2 * np.arange(1.0, 13.0).reshape(3, 4))


def _put_along_axis_program(x):
    a = x[:12].reshape(3, 4) * 1.0
    # row 1 writes column 3 twice (the last stays); -1 counts from the end
    np.put_along_axis(a, np.array([[0, 2], [3, 3], [1, -1]]), x[12:15, None] ** 2, axis=1)
    np.put_along_axis(a, np.array([[0, 2, 1, 0]]), x[12:16] * 3.0, axis=0)
    return np.sum(a ** 2 * np.arange(1.0, 13.0).reshape(3, 4))


def _put_method_program(x):
    a = x[:12] * 1.0
    a.put([1, 5, 1], x[12:14])
    return np.sum(a ** 2 * np.arange(1.0, 13.0))


@pytest.mark.parametrize("program", [_putmask_program, _put_along_axis_program,
                                     _put_method_program], ids=lambda f: f.__name__)
def test_putmask_put_along_axis_and_the_put_method_at_orders_1_and_2(program):
    # before: TracingError (refused as writes the engine did not follow)
    x = np.random.default_rng(3).uniform(0.0, 1.0, 16)
    gradient = cr.grad(program)
    np.testing.assert_allclose(gradient(x), numerical_gradient(program, x), rtol=1e-6,
                               atol=1e-8)
    v = np.random.default_rng(4).normal(size=16)
    expected = (gradient(x + 1e-5 * v) - gradient(x - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(cr.hvp(program, x, v), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(cr.jvp(program, (x,), (v,))[1], gradient(x) @ v, rtol=1e-9)


def _row_of_a_reshaped_temporary(write):
    def program(x):
        m = (x * 1.0).reshape(3, 4)  # a view of a temporary, held by the program
        write(m, x)
        return np.sum(m ** 2 * np.arange(1.0, 13.0).reshape(3, 4))
    return program


VIEW_OF_A_VIEW_WRITES = {
    "mask": lambda m, x: m[1].__setitem__(m[1] > 0.5, -x[0]),
    "integer array": lambda m, x: m[1].__setitem__(np.array([1, 2]), -x[0]),
    "item": lambda m, x: m[1].__setitem__(1, -x[0]),
    "transpose": lambda m, x: m.T.__setitem__((np.array([0, 1]), np.array([1, 0])), x[:2]),
    "putmask": lambda m, x: np.putmask(m[1], m[1] > 0.5, -x[0]),
}


@pytest.mark.parametrize("name", VIEW_OF_A_VIEW_WRITES)
def test_a_write_into_a_view_of_a_held_view_of_a_temporary_is_refused(name):
    # m = temporary.reshape(3, 4); m[1][i] = t: NumPy gives m[1] the temporary as its base, so
    # the engine did not see that m (held) shares it, wrote into a copy, and m kept its old
    # values: a wrong value and gradient without a word. Refused now, as other view writes
    program = _row_of_a_reshaped_temporary(VIEW_OF_A_VIEW_WRITES[name])
    with pytest.raises(cr.TracingError, match="writing into a view of another array"):
        cr.grad(program)(np.linspace(0.1, 1.2, 12))


def test_a_write_into_a_view_of_a_temporary_nothing_holds_is_allowed():
    def program(x):
        row = np.reshape(x * 2.0, (3, 4))[1]  # nothing else sees the temporary
        row[0] = x[0]
        return np.sum(row ** 2)

    x = np.linspace(0.1, 1.2, 12)
    np.testing.assert_allclose(cr.grad(program)(x), numerical_gradient(program, x),
                               rtol=1e-6, atol=1e-8)


def test_writes_into_a_held_view_of_a_temporary_with_views_alive():
    # the write is into m itself (a view of a temporary that nothing else holds): allowed,
    # and m's live views see it, as in NumPy
    def program(x):
        m = (x * 1.0).reshape(3, 4)
        flat, row = m.ravel(), m[1]
        m[0, 0] = x[1] ** 3
        m[1] += x[:4]
        m[:, 2] *= x[4:7]
        return np.sum(flat ** 2 * np.arange(1.0, 13.0)) + np.sum(row ** 3)

    x = np.linspace(0.1, 1.2, 12)
    np.testing.assert_allclose(cr.grad(program)(x), numerical_gradient(program, x),
                               rtol=1e-6, atol=1e-8)


def test_sort_and_partition_methods_write_in_place():
    # before: "x.sort() on a traced array is not supported: it sorts the array in place"
    x = np.array([0.3, 1.2, -0.5, 0.8])

    def sorted_in_place(v):
        y = v * 1.0
        y.sort()
        return np.sum(y * np.arange(1.0, 5.0))

    # each element's weight is its rank's
    np.testing.assert_allclose(cr.grad(sorted_in_place)(x), np.argsort(np.argsort(x)) + 1.0)

    def columns_sorted(v):
        y = v.reshape(2, 2) ** 2
        y.sort(axis=0)
        return np.sum(y * np.array([[1.0, 2.0], [3.0, 4.0]]))

    expected = numerical_gradient(columns_sorted, x)
    np.testing.assert_allclose(cr.grad(columns_sorted)(x), expected, rtol=1e-6, atol=1e-8)

    def partitioned(v):
        y = v ** 2
        y.partition(2)
        return y[2] + np.sum(y[:2])

    np.testing.assert_allclose(cr.grad(partitioned)(x), numerical_gradient(partitioned, x),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(cr.hessian(partitioned)(x), np.diag([2.0, 0.0, 2.0, 2.0]),
                               atol=1e-12)


def test_refused_writes_name_the_line_that_wrote():
    # before: the message said what to do but not where (a write inside a library's code,
    # `arr.sort()` in scipy.stats.theilslopes, left the user searching)
    def program(x):
        row = x[2:]
        row[0] = 1.0  # the write: into a view of the input
        return np.sum(x)

    with pytest.raises(cr.TracingError, match=r"`row\[0\] = 1.0  # the write.*test_writes\.py, "
                                              r"line \d+\): writing into a view"):
        cr.grad(program)(np.linspace(0.1, 1.2, 12))
