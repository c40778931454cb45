"""Idioms that real programs use (issue 13): lists and tuples of traced values wherever NumPy
takes an array-like, ``np.r_``/``np.c_``, indexing a NumPy scalar, ``grad`` of a size-1 output,
every ndarray method and operator.

Gradients are checked against central finite differences of the same code run by plain NumPy
(first order) and Hessians against second-order central differences (second order).
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

import chainrules as cr
from chainrules.ad.dispatch.methods import REFUSED_METHODS
from chainrules.ad.trace.traced import Traced

from .finite_differences import numerical_gradient

X = np.array([0.7, 1.3, 2.1])


def numerical_hessian(function, x, step: float = 1e-4):
    """Second-order central differences of a real scalar ``function`` of a real array."""
    x = np.asarray(x, float)
    n = x.size
    hessian = np.zeros((n, n))
    unit = np.eye(n) * step
    for i in range(n):
        for j in range(n):
            hessian[i, j] = (function(x + unit[i] + unit[j]) - function(x + unit[i] - unit[j])
                             - function(x - unit[i] + unit[j])
                             + function(x - unit[i] - unit[j])) / (4 * step ** 2)
    return hessian


def check_orders_1_and_2(f, x=X, hessian: bool = True):
    np.testing.assert_allclose(cr.grad(f)(x), numerical_gradient(f, x), rtol=1e-6, atol=1e-8)
    if hessian:
        expected = numerical_hessian(f, x)
        np.testing.assert_allclose(cr.hessian(f)(x), expected, rtol=1e-4, atol=1e-5)
        v = np.array([0.3, -1.1, 0.5])
        np.testing.assert_allclose(cr.hvp(f, x, v), expected @ v, rtol=1e-4, atol=1e-5)


# --- lists and tuples of traced values -------------------------------------------------------

LIST_IDIOMS = {
    "mean": lambda x: np.mean([x[0], x[1] ** 2]),
    "sum with a constant": lambda x: np.sum([x[0], 2.0 * x[1], 3.0]) ** 2,
    "max": lambda x: np.max([x[0], x[2] ** 2]),
    "min of a tuple": lambda x: np.min((x[0] * x[1], x[2])),
    "std": lambda x: np.std([x[0], x[1], x[2] ** 2]),
    "var, axis": lambda x: np.sum(np.var([[x[0], 1.0], [x[1], x[2]]], axis=0)),
    "prod": lambda x: np.prod((x[0], x[1], 2.0)),
    "dot of two lists": lambda x: np.dot([x[0], x[1]], [x[1], x[2]]),
    "norm": lambda x: np.linalg.norm([x[0], x[1] * x[2]]),
    "norm of a tuple with a constant": lambda x: np.linalg.norm((x[0], 1.0, x[2])),
    "array": lambda x: np.sum(np.array([x[0], x[1]]) ** 2),
    "stack of arrays": lambda x: np.sum(np.stack([x, x ** 2]) ** 2),
    "stack of nested lists": lambda x: np.sum(np.stack([[x[0], x[1]], [x[2], 1.0]]) ** 2),
    "nested lists with constants": lambda x: np.sum(
        np.mean([[x[0], 1.0], [x[1], x[2]]], axis=0) ** 2),
    "list of traced and plain arrays": lambda x: np.mean([x ** 2, np.ones(3)]),
    "concatenate mixed": lambda x: np.sum(np.concatenate([[x[0], 2.0], x]) ** 3),
    "cumsum": lambda x: np.sum(np.cumsum([x[0], x[1], x[2]]) ** 2),
    "diff": lambda x: np.sum(np.diff([x[0], x[1] ** 2, x[2]]) ** 2),
    "outer with a tuple": lambda x: np.sum(np.outer([x[0], x[1]], (x[1], 2.0)) ** 2),
    "matmul of a list": lambda x: np.sum(np.matmul([[x[0], x[1]], [x[2], 1.0]], x[:2]) ** 2),
    "einsum": lambda x: np.einsum("i,i", [x[0], x[1]], [x[1], x[2]]),
    "where": lambda x: np.sum(np.where([True, False], [x[0] ** 2, x[1]], [x[2], 0.0])),
    "det": lambda x: np.linalg.det([[x[0], x[1]], [x[2], 1.0]]),
    "solve": lambda x: np.sum(np.linalg.solve([[x[0], 1.0], [0.0, x[1]]], [x[2], 1.0])),
    "fft": lambda x: np.sum(np.abs(np.fft.fft([x[0], x[1], x[2]])) ** 2),
    "average with list weights": lambda x: np.average([x[0], x[1]], weights=[x[2], 1.0]),
    "hstack of numbers": lambda x: np.sum(np.hstack([x[0], x[1]]) ** 3),
    "ufunc: list and array": lambda x: np.sum(np.multiply([x[0], 2.0, x[1]], x) ** 2),
    "operator: list * array": lambda x: np.sum(([x[0], 2.0] * x[:2]) ** 2),
    "operator: array + tuple": lambda x: np.sum((x + (x[1], x[2], 1.0)) ** 2),
}


@pytest.mark.parametrize("name", LIST_IDIOMS)
def test_list_and_tuple_idioms_at_orders_1_and_2(name):
    check_orders_1_and_2(LIST_IDIOMS[name])


def test_lists_under_jvp_and_float32():
    f = LIST_IDIOMS["norm"]
    _, tangent = cr.jvp(f, (X,), (np.array([1.0, 0.0, 0.0]),))
    np.testing.assert_allclose(tangent, numerical_gradient(f, X)[0], rtol=1e-6)
    x32 = X.astype(np.float32)
    g = cr.grad(LIST_IDIOMS["mean"])(x32)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, [0.5, X[1], 0.0], rtol=1e-6)


def test_a_ragged_list_raises_numpys_error():
    with pytest.raises(ValueError, match="inhomogeneous"):
        cr.grad(lambda x: np.mean([x, x[:2]]))(X)


def test_a_ufunc_of_a_list_alone_says_how_to_write_it():
    with pytest.raises(cr.TracingError, match=r"np\.exp\(np\.array\(\[a, b\]\)\)"):
        cr.grad(lambda x: np.sum(np.exp([x[0], x[1]])))(X)


def test_numpy_is_untouched_outside_traces_and_calls_without_lists_record_no_conversion():
    originals = {name: getattr(np, name) for name in ("mean", "dot", "stack")}
    norm = np.linalg.norm
    seen = {}

    def f(x):
        seen["inside"] = np.mean is not originals["mean"]
        return np.mean(x) + np.dot(x, x)

    cr.grad(f)(X)
    assert seen["inside"]  # replaced while tracing...
    assert all(getattr(np, name) is value for name, value in originals.items())  # ...not after
    assert np.linalg.norm is norm and type(norm) is type(originals["mean"])
    # the functions themselves reached the engine: no np.array conversion recorded (np.mean
    # by its expansion: a sum and a division)
    records = _recorded_functions(f)
    assert records.count(np.array) == 0 and np.sum in records and np.dot in records
    assert np.mean in _recorded_functions(lambda x: np.mean(x, axis=0))


def _recorded_functions(f):
    """The functions recorded on the tape when ``f`` is traced at X."""
    from chainrules.ad.trace.tape import Tape
    from chainrules.ad.dispatch.routing import tracing
    from chainrules.ad.transforms.api import ENGINE_CONFIG

    tape = Tape(ENGINE_CONFIG)
    with tracing(tape):
        f(tape.leaf(X))
    return [record[1] for record in tape.records]


def test_a_list_is_converted_once_by_np_array():
    records = _recorded_functions(lambda x: np.mean([x[0], x[1]]))
    # (the mean by its expansion: one sum, one division)
    assert records.count(np.array) == 1 and records.count(np.sum) == 1 and \
        records.count(np.divide) == 1 and len(records) == 6


# --- index tricks ------------------------------------------------------------------------------

INDEX_TRICKS = {
    "r_ of arrays and numbers": lambda x: np.sum(np.r_[x, x[0], 2.0] ** 3),
    "r_ with a constant range": lambda x: np.sum(np.r_[x, 0:3] * np.r_[x, x ** 2]),
    "r_ with an axis directive": lambda x: np.sum(np.r_["0,2", x, x ** 2] ** 2),
    "c_ of arrays": lambda x: np.sum(np.c_[x, x ** 2, np.ones(3)] ** 2),
    "c_ of numbers": lambda x: np.sum(np.c_[x[0], x[1]] ** 3),
}


@pytest.mark.parametrize("name", INDEX_TRICKS)
def test_index_tricks_with_traced_pieces(name):
    check_orders_1_and_2(INDEX_TRICKS[name])


# --- indexing a NumPy scalar -------------------------------------------------------------------

SCALAR_INDEXING = {
    "()": lambda x: x[0][()] ** 3 * x[1],
    "None": lambda x: np.sum(x[0][None] ** 3) + x[1],
    "...": lambda x: np.sum(x[1][...] * x[0] ** 2),
    "None, None, ...": lambda x: np.sum(x[2][None, None, ...] ** 2 * np.ones((2, 2))),
}


@pytest.mark.parametrize("name", SCALAR_INDEXING)
def test_indexing_a_numpy_scalar(name):
    check_orders_1_and_2(SCALAR_INDEXING[name])


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_indexing_a_numpy_scalar_keeps_the_dtype(dtype):
    z = np.array([1.5 + 0.5j, 2.0] if dtype == np.complex128 else [1.5, 2.0], dtype)

    def f(z):
        return np.sum(np.abs(z[0][None]) ** 2) + np.abs(z[1][()]) ** 2

    g = cr.grad(f)(z)
    assert g.dtype == dtype
    np.testing.assert_allclose(g, 2 * z, rtol=1e-6)  # d|z|^2 = 2z (dRe + i dIm)


# --- grad of a size-1 output -------------------------------------------------------------------

A = np.array([[1.0, -2.0, 0.5]])


@pytest.mark.parametrize("f", [lambda w: (A @ w) ** 2,                    # shape (1,)
                               lambda w: (A @ w[:, None]) ** 3,           # shape (1, 1)
                               lambda w: np.sin(w[:1]) * w[2]])            # shape (1,)
def test_grad_takes_a_size_1_output_as_its_scalar(f):
    def scalar(w):
        return f(w).item()

    np.testing.assert_allclose(cr.grad(f)(X), numerical_gradient(scalar, X), rtol=1e-6)
    np.testing.assert_allclose(cr.hessian(f)(X), numerical_hessian(scalar, X), rtol=1e-4,
                               atol=1e-5)
    value, _ = cr.value_and_grad(f)(X)
    assert np.shape(value) == np.shape(f(X))  # the value keeps its shape


def test_grad_of_a_size_1_output_in_float32_and_the_errors_that_remain():
    g = cr.grad(lambda w: A.astype(np.float32) @ w)(X.astype(np.float32))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, A[0])
    with pytest.raises(TypeError, match=r"shape \(2,\)"):
        cr.grad(lambda w: w[:2])(X)
    with pytest.raises(TypeError, match="complex"):
        cr.grad(lambda w: w[:1] * 1j)(X)


# --- ndarray methods ---------------------------------------------------------------------------

M = np.array([[0.3, -1.2, 0.8], [1.1, 0.4, -0.6], [0.9, 1.7, 0.2]])


def _outer(y):
    """A nonlinear scalar of a method's result (so that every element is checked)."""
    return np.sum(np.sin(np.asarray(y) * np.arange(1, np.size(y) + 1).reshape(np.shape(y))))


# Methods that are their NumPy function: the value and the gradient, by finite differences.
DIFFERENTIABLE_METHODS = {
    "sum": lambda m: m.sum(axis=0), "mean": lambda m: m.mean(1), "prod": lambda m: m.prod(0),
    "max": lambda m: m.max(axis=1), "min": lambda m: m.min(), "std": lambda m: m.std(0),
    "var": lambda m: m.var(ddof=1), "cumsum": lambda m: m.cumsum(1),
    "cumprod": lambda m: m.cumprod(), "dot": lambda m: m.dot(m[0]),
    "ravel": lambda m: m.ravel(), "flatten": lambda m: m.flatten("F"),
    "squeeze": lambda m: m[:1].squeeze(), "swapaxes": lambda m: m.swapaxes(0, 1) * M,
    "clip": lambda m: m.clip(-0.5, 1.0), "trace": lambda m: m.trace(offset=1),
    # one bound, as scipy.stats.spearmanr writes it (before: "clip() missing 1 required
    # positional argument: 'a_max'")
    "clip below": lambda m: m.clip(0), "clip above": lambda m: m.clip(max=0.5),
    "diagonal": lambda m: m.diagonal(), "take": lambda m: m.take([0, 4, 4]),
    "repeat": lambda m: m.repeat(2, axis=0), "reshape": lambda m: m.reshape(9, 1),
    "transpose": lambda m: m.transpose(1, 0) * M, "T": lambda m: m.T * M,
    "mT": lambda m: m.mT * M, "conj": lambda m: m.conj(), "conjugate": lambda m: m.conjugate(),
    "real": lambda m: m.real, "imag": lambda m: m.imag + m, "copy": lambda m: m.copy(),
    "astype": lambda m: m.astype(np.complex128).real,
    "compress": lambda m: m.compress([True, False, True], axis=1),
    "round": lambda m: m.round(1) * m, "ptp": lambda m: m.ptp(axis=0),
    "view": lambda m: m.view(), "flat": lambda m: m.flat[2:5],
    "item": lambda m: m.item(4) * m.item(1, 2), "tolist": lambda m: np.array(m.tolist()),
    "to_device": lambda m: m.to_device("cpu"),
}

# Methods whose result does not depend differentiably on the values: equal to NumPy's.
VALUE_METHODS = {
    "argmax": lambda m: m.argmax(1), "argmin": lambda m: m.argmin(), "argsort": lambda m:
    m.argsort(0), "argpartition": lambda m: np.sort(m.ravel().argpartition(3)[:3]), "nonzero": lambda m: m.nonzero(),
    "searchsorted": lambda m: np.sort(m.ravel()).searchsorted(0.5),
    "all": lambda m: m.all(axis=0), "any": lambda m: m.any(),
}

# Properties read from the value.
ATTRIBUTES = {"shape", "dtype", "ndim", "size", "itemsize", "nbytes", "device"}

# Not provided on traced arrays, and why.
LISTED = {
    "base": "the array owning the memory: traced values own none",
    "ctypes": "a pointer to the memory: would cut the value out of the gradient",
    "data": "the memory buffer: would cut the value out of the gradient",
    "flags": "memory layout flags of a buffer: traced values have none",
    "strides": "memory layout of a buffer: traced values have none",
    "fill": "an array write (ad/dispatch/writes.py): tested in tests/ad/test_writes.py",
    "put": "an array write (ad/dispatch/writes.py): tested in tests/ad/test_writes.py",
    "sort": "an array write of np.sort's values: tested in tests/ad/test_writes.py",
    "partition": "an array write of np.partition's values: tested in tests/ad/test_writes.py",
}


def test_every_public_ndarray_name_is_routed_read_refused_or_listed():
    names = {name for name in dir(np.ndarray) if not name.startswith("_")}
    known = set(DIFFERENTIABLE_METHODS) | set(VALUE_METHODS) | ATTRIBUTES | set(LISTED) | \
        set(REFUSED_METHODS) | {"choose"}
    assert names <= known, f"unclassified ndarray names: {sorted(names - known)}"
    for name in names - set(LISTED):
        assert hasattr(Traced, name) or not hasattr(M, name), name


@pytest.mark.parametrize("name", DIFFERENTIABLE_METHODS)
def test_differentiable_method(name):
    if not hasattr(M, name):  # NumPy 2.0 keeps removed names that raise AttributeError
        pytest.skip(f"ndarray.{name} is not in this NumPy")
    method = DIFFERENTIABLE_METHODS[name]

    def f(m):
        return _outer(method(m))

    def traced_value(m):
        seen["value"] = cr.primal(method(m))
        return f(m)

    seen = {}
    gradient = cr.grad(traced_value)(M)
    np.testing.assert_allclose(np.asarray(seen["value"]), np.asarray(method(M)), rtol=1e-6)
    np.testing.assert_allclose(gradient, numerical_gradient(f, M), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["real", "imag", "conj", "copy", "astype"])
def test_complex_methods(name):
    z = M + 1j * M[::-1]
    method = {"astype": lambda m: m.astype(np.complex128)}.get(
        name, DIFFERENTIABLE_METHODS[name])

    def f(z):
        return np.sum(np.abs(method(z) * np.arange(1, 10).reshape(3, 3)) ** 2)

    np.testing.assert_allclose(cr.grad(f)(z), numerical_gradient(f, z), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", VALUE_METHODS)
def test_value_method(name):
    if not hasattr(np.ndarray, name):
        pytest.skip(f"ndarray.{name} is not in this NumPy")
    seen = {}

    def f(m):
        seen["value"] = cr.primal(VALUE_METHODS[name](m))
        return np.sum(m)

    cr.grad(f)(M)
    expected = VALUE_METHODS[name](M)
    for got, want in zip(np.atleast_1d(seen["value"]), np.atleast_1d(expected)):
        np.testing.assert_array_equal(got, want)


def test_choose_routes_to_np_choose_which_refuses_float_indices_as_numpy_does():
    # x.choose(choices) reads x as indices: a float array (all that is traced) is NumPy's
    # TypeError; np.choose with traced choices is differentiable (tests/rules).
    with pytest.raises(TypeError, match="Cannot cast"):
        M.choose([M, M])
    with pytest.raises(TypeError, match="Cannot cast"):
        cr.grad(lambda m: np.sum(m.choose([m, m])))(M)


def test_attributes_are_read_from_the_value():
    def f(m):
        for name in ATTRIBUTES:
            if hasattr(M, name):
                assert getattr(m, name) == getattr(M, name), name
        return np.sum(m)

    cr.grad(f)(M)


@pytest.mark.parametrize("name", sorted(REFUSED_METHODS))
def test_refused_methods_say_why(name):
    def f(m):
        getattr(m, name)(0)
        return np.sum(m)

    with pytest.raises(cr.TracingError, match=rf"x\.{name}\(\).*{REFUSED_METHODS[name][:12]}"):
        cr.grad(f)(M)


def test_item_is_the_traced_element_and_checks_the_size():
    np.testing.assert_allclose(cr.grad(lambda x: x[1:2].item() ** 2)(X), [0, 2 * X[1], 0])
    with pytest.raises(ValueError, match="size 1"):
        cr.grad(lambda x: x.item())(X)


def test_tolist_nests_like_numpy():
    def f(m):
        rows = m.tolist()
        assert isinstance(rows, list) and len(rows) == 3 and len(rows[0]) == 3
        return rows[1][2] * rows[0][0]

    np.testing.assert_allclose(cr.grad(f)(M), [[M[1, 2], 0, 0], [0, 0, M[0, 0]], [0, 0, 0]])


# --- operators ---------------------------------------------------------------------------------

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
          operator.matmul]
COMPARISONS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]
UNARY = [operator.neg, operator.pos, operator.abs]


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.__name__)
@pytest.mark.parametrize("side", ["traced left", "traced right", "both"])
def test_binary_operators_and_reflected_forms(op, side):
    y = np.array([1.5, 0.6, 1.2])

    def f(x):
        a, b = {"traced left": (x, y), "traced right": (y, x), "both": (x, x[::-1])}[side]
        return np.sum(np.sin(op(a, b)))

    check_orders_1_and_2(f, hessian=op is operator.pow)


@pytest.mark.parametrize("op", COMPARISONS, ids=lambda op: op.__name__)
def test_comparisons_are_numpys(op):
    y = np.array([0.7, 0.6, 3.0])
    seen = {}

    def f(x):
        seen["left"], seen["right"] = op(x, y), op(y, x)
        return np.sum(x)

    cr.grad(f)(X)
    np.testing.assert_array_equal(seen["left"], op(X, y))
    np.testing.assert_array_equal(seen["right"], op(y, X))


@pytest.mark.parametrize("op", UNARY, ids=lambda op: op.__name__)
def test_unary_operators(op):
    check_orders_1_and_2(lambda x: np.sum(op(x - 1.0) ** 3))


@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.xor, operator.lshift,
                                operator.rshift], ids=lambda op: op.__name__)
def test_integer_operators_on_floats_raise_typeerror_as_numpy_does(op):
    with pytest.raises(TypeError):
        op(X, X)
    with pytest.raises(TypeError):
        cr.grad(lambda x: np.sum(op(x, x)))(X)


def test_rules_of_numpy_names_are_found_while_a_trace_wraps_them():
    """While tracing, NumPy's namespace holds wrappers that accept lists; a rule looked up by
    the name then (a user's pullback calling `rrule(np.sum, ...)`) is still the original's, and
    rules that compare functions (np.correlate's window) still see which function ran."""
    from chainrules import rrule

    seen = []

    def f(x):
        seen.append(rrule(np.sum, np.ones(2)) is not None)
        return np.sum(np.correlate(x[:2], x, "same") ** 2)

    x = np.array([0.3, -1.2, 2.0, 0.7])
    h = cr.hessian(f)(x)  # the pullback runs inside the outer trace, with the names wrapped
    assert seen and all(seen)
    step = 1e-6
    fd = [(cr.grad(f)(x + step * e) - cr.grad(f)(x - step * e)) / (2 * step) for e in np.eye(4)]
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-8)


UFUNC_METHODS = [(np.add, "reduce"), (np.multiply, "reduce"), (np.maximum, "reduce"),
                 (np.minimum, "reduce"), (np.add, "accumulate"), (np.multiply, "accumulate")]


@pytest.mark.parametrize("ufunc, method", UFUNC_METHODS,
                         ids=lambda v: getattr(v, "__name__", v))
@pytest.mark.parametrize("axis", ["default", 0, 1, -1])
def test_ufunc_reduce_and_accumulate_run_along_numpy_axes(ufunc, method, axis):
    # np.add.reduce(m) reduces axis 0, as np.sum(m, axis=0): a traced m was summed over every
    # axis (a number where NumPy gives a row), np.add.accumulate(m) flattened
    m = np.array([[0.7, 1.3, 2.1], [1.9, 0.4, 1.1]])
    call = getattr(ufunc, method)
    kwargs = {} if axis == "default" else {"axis": axis}

    def loss(a):
        y = call(a, **kwargs)
        return np.sum(y * np.arange(1.0, 1.0 + np.size(y)).reshape(np.shape(y)))

    traced = cr.vjp(lambda a: call(a, **kwargs), m)[0]
    np.testing.assert_allclose(traced, call(m, **kwargs))
    np.testing.assert_allclose(cr.grad(loss)(m), numerical_gradient(loss, m), rtol=1e-6,
                               atol=1e-8)


COMPOSITE_METHODS = [(np.maximum, "accumulate"), (np.minimum, "accumulate"),
                     (np.fmax, "accumulate"), (np.fmin, "accumulate"),
                     (np.logaddexp, "reduce"), (np.logaddexp2, "reduce")]


@pytest.mark.parametrize("ufunc, method", COMPOSITE_METHODS,
                         ids=lambda v: getattr(v, "__name__", v))
@pytest.mark.parametrize("axis", ["default", 1, -1])
def test_running_extrema_and_log_sums_at_orders_1_and_2(ufunc, method, axis):
    # before: "np.maximum.accumulate is not supported on traced values"
    m = np.array([[0.3, 2.0, 1.0, 2.5], [1.5, -1.0, 3.0, 0.2], [0.1, 0.4, -2.0, 5.0]])
    call = getattr(ufunc, method)
    kwargs = {} if axis == "default" else {"axis": axis}

    def loss(a):
        y = call(a, **kwargs)
        return np.sum(y ** 2 * np.arange(1.0, 1.0 + np.size(y)).reshape(np.shape(y)))

    np.testing.assert_allclose(cr.vjp(lambda a: call(a, **kwargs), m)[0], call(m, **kwargs))
    gradient = cr.grad(loss)
    np.testing.assert_allclose(gradient(m), numerical_gradient(loss, m), rtol=1e-6,
                               atol=1e-8)
    flat = lambda v: loss(v.reshape(3, 4))  # noqa: E731
    np.testing.assert_allclose(cr.hessian(flat)(m.ravel()), numerical_hessian(flat, m.ravel()),
                               rtol=1e-4, atol=1e-5)


def test_running_maximum_propagates_nan_and_log_sum_of_minus_infinity():
    x = np.array([1.0, np.nan, 3.0])
    y, pullback = cr.vjp(np.maximum.accumulate, x)
    np.testing.assert_array_equal(y, [1.0, np.nan, np.nan])
    np.testing.assert_array_equal(pullback(np.array([1.0, 1.0, 1.0]))[0], [1.0, 2.0, 0.0])
    assert cr.vjp(np.logaddexp.reduce, np.array([-np.inf, -np.inf]))[0] == -np.inf


STATISTICS = ["mean", "fmean", "geometric_mean", "harmonic_mean", "variance", "stdev",
              "pvariance", "pstdev"]


@pytest.mark.parametrize("name", STATISTICS)
def test_python_statistics_of_traced_numbers(name):
    # before: "can't convert type 'Traced' to numerator/denominator" (exact fractions)
    import statistics

    function = getattr(statistics, name)

    def loss(x):
        return function([x[0], x[1] ** 2, 3.0 * x[2]])

    x = np.array([0.7, 1.3, 2.1])
    assert loss(x) == pytest.approx(function([0.7, 1.3 ** 2, 6.3]), rel=1e-12)
    check_orders_1_and_2(loss, x)
    # data as a generator, read once; a name bound before the trace
    generated = cr.grad(lambda v: function(v[i] * (i + 1.0) for i in range(3)))(x)
    np.testing.assert_allclose(generated, numerical_gradient(
        lambda v: function(v[i] * (i + 1.0) for i in range(3)), x), rtol=1e-6, atol=1e-8)


def test_python_statistics_centers_weights_and_errors():
    import statistics
    from statistics import variance  # bound before the trace

    x = np.array([1.0, 2.0, 5.0])
    # variance about a given center: sum((x - c)^2) / (n - 1), c traced too
    np.testing.assert_allclose(cr.grad(lambda v: variance([v[0], v[1], 5.0], v[2]))(
        np.array([1.0, 2.0, 4.0])), [-3.0, -2.0, 4.0])
    check_orders_1_and_2(lambda v: statistics.harmonic_mean([v[0], v[1]], weights=[v[2], 1.0]),
                         x)
    with pytest.raises(statistics.StatisticsError, match="at least two"):
        cr.grad(lambda v: statistics.variance([v[0]]))(x)
    with pytest.raises(statistics.StatisticsError, match="positive"):
        cr.grad(lambda v: statistics.geometric_mean([v[0], -v[1]]))(x)


@pytest.mark.parametrize("indices, axis", [([0, 2, 3], "default"), ([2, 0, 1], 1),
                                           ([1, 1, 0], -1)])
def test_add_reduceat_segment_sums_at_orders_1_and_2(indices, axis):
    # before: "np.add.reduceat is not supported on traced values"
    m = np.array([[0.7, 1.3, 2.1], [1.9, 0.4, 1.1], [0.3, -0.8, 1.6], [1.2, 0.9, -0.4]])
    kwargs = {} if axis == "default" else {"axis": axis}

    def loss(a):
        y = np.add.reduceat(a, indices, **kwargs)
        return np.sum(y ** 2 * np.arange(1.0, 1.0 + np.size(y)).reshape(np.shape(y)))

    np.testing.assert_allclose(cr.vjp(lambda a: np.add.reduceat(a, indices, **kwargs), m)[0],
                               np.add.reduceat(m, indices, **kwargs))
    np.testing.assert_allclose(cr.grad(loss)(m), numerical_gradient(loss, m), rtol=1e-6,
                               atol=1e-8)
    flat = lambda v: loss(v.reshape(4, 3))  # noqa: E731
    np.testing.assert_allclose(cr.hessian(flat)(m.ravel()), numerical_hessian(flat, m.ravel()),
                               rtol=1e-4, atol=1e-5)


SEQUENTIAL = [(np.logaddexp, "accumulate"), (np.logaddexp2, "accumulate"),
              (np.subtract, "reduce"), (np.subtract, "accumulate"), (np.hypot, "accumulate"),
              (np.divide, "reduce"), (np.fmod, "accumulate")]


@pytest.mark.parametrize("ufunc, method", SEQUENTIAL, ids=lambda v: getattr(v, "__name__", v))
@pytest.mark.parametrize("axis", ["default", 1])
def test_other_binary_ufunc_reductions_run_as_numpy_does(ufunc, method, axis):
    # before: "np.logaddexp.accumulate is not supported on traced values"
    m = np.array([[0.7, 1.3, 2.1], [1.9, 0.4, 1.1], [0.3, 0.8, 1.6]])
    call = getattr(ufunc, method)
    kwargs = {} if axis == "default" else {"axis": axis}

    def loss(a):
        y = call(a, **kwargs)
        return np.sum(y ** 2 * np.arange(1.0, 1.0 + np.size(y)).reshape(np.shape(y)))

    np.testing.assert_allclose(cr.vjp(lambda a: call(a, **kwargs), m)[0], call(m, **kwargs),
                               rtol=1e-13)
    np.testing.assert_allclose(cr.grad(loss)(m), numerical_gradient(loss, m), rtol=1e-6,
                               atol=1e-8)
    flat = lambda v: loss(v.reshape(3, 3))  # noqa: E731
    np.testing.assert_allclose(cr.hessian(flat)(m.ravel()), numerical_hessian(flat, m.ravel()),
                               rtol=1e-4, atol=1e-5)


def test_reductions_numpy_does_not_compute_in_order_stay_refused():
    # np.arctan2.reduce of a contiguous row is not arctan2 applied in order (NumPy's inner
    # loop), so a sequential version would disagree with NumPy's value: refused, by name
    with pytest.raises(cr.TracingError, match="np.arctan2.reduce is not supported"):
        cr.grad(lambda a: np.sum(np.arctan2.reduce(a, axis=1)))(np.ones((2, 3)))
    # an empty axis: NumPy's identity, or NumPy's error
    assert cr.vjp(np.logaddexp.reduce, np.ones(0))[0] == -np.inf
    with pytest.raises(ValueError, match="identity"):
        cr.vjp(np.subtract.reduce, np.ones(0))


def test_a_traced_value_compared_with_a_string_answers_as_numpy_does():
    """``ord in ("f", "fro")`` (np.linalg.norm with a traced order) compares a traced number
    with strings: False, as Python and ndarray answer; before, np.equal raised
    UFuncNoLoopError. And the norm's derivative in its order, against central differences."""
    x = np.array([1.0, -2.0, 0.5, 3.0, 1.5])

    def check(v):
        assert np.all(np.asarray(v == "fro") == False) and np.all(np.asarray(v != "nuc"))  # noqa: E712
        assert (v[0] == "f") is False or not np.asarray(v[0] == "f")
        return np.sum(v * v)

    np.testing.assert_allclose(cr.grad(check)(x), 2 * x)

    def norm(order):
        return np.linalg.norm(x, order)

    step = 1e-6
    assert cr.grad(norm)(3.0) == pytest.approx(
        (norm(3.0 + step) - norm(3.0 - step)) / (2 * step), rel=1e-7)


def test_ndenumerate_of_a_traced_array():
    # before: AttributeError: 'Traced' object has no attribute 'coords'
    m = np.arange(6.0).reshape(2, 3) + 0.5

    def loss(v):
        return sum(value ** 2 * (i + 2 * j) for (i, j), value in np.ndenumerate(v))

    weights = np.add.outer(np.arange(2.0), 2 * np.arange(3.0))
    np.testing.assert_allclose(cr.grad(loss)(m), 2 * m * weights)
    seen = []
    cr.grad(lambda v: seen.extend(i for i, _ in np.ndenumerate(v)) or np.sum(v))(m)
    assert seen == [index for index, _ in np.ndenumerate(m)]  # NumPy's order
