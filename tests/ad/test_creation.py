"""Array creation while tracing (issue 11, item 3): ``np.array``, ``np.asarray``,
``np.asanyarray``, ``np.ascontiguousarray``, ``np.asfortranarray``, ``np.atleast_1d/2d/3d`` and
``np.copy`` honour every keyword (``dtype``, ``ndmin``, ``copy``, ``order``, ``subok``,
``like``, and whatever else the installed NumPy accepts) or raise NumPy's own error.

Every value is compared with plain NumPy on the primal (shape, dtype, values, memory layout);
every gradient with a closed form (a creation function copies values: the cotangent is the
output cotangent reshaped back and cast onto the input's dtype, zero for an integer or boolean
result) and, in double precision, with central finite differences of the plain NumPy function.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import chainrules as cr
from chainrules.ad.dispatch import routes

from .finite_differences import numerical_gradient

CREATION = ["array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "copy",
            "atleast_1d", "atleast_2d", "atleast_3d"]

# The keyword family: each function gets each of these; where the installed NumPy refuses one
# (a keyword the function does not have, an invalid value, a copy that copy=False forbids), the
# traced call must raise NumPy's own error.
KEYWORDS = [
    {},
    {"dtype": np.float32}, {"dtype": np.float64}, {"dtype": np.complex64},
    {"dtype": np.complex128}, {"dtype": np.int64}, {"dtype": bool}, {"dtype": "f4"},
    {"dtype": None},
    {"ndmin": 0}, {"ndmin": 1}, {"ndmin": 2}, {"ndmin": 4},
    {"copy": True}, {"copy": False}, {"copy": None},
    {"order": "C"}, {"order": "F"}, {"order": "A"}, {"order": "K"}, {"order": None},
    {"order": "Q"},
    {"subok": True}, {"subok": False},
    {"like": None}, {"like": np.empty(0)},
    {"dtype": np.float32, "ndmin": 3}, {"dtype": np.complex128, "ndmin": 2, "order": "F"},
    {"copy": False, "dtype": np.float32}, {"copy": False, "dtype": np.complex128},
    {"copy": True, "dtype": np.int64, "ndmin": 2}, {"copy": False, "order": "F", "ndmin": 2},
    {"subok": True, "ndmin": 2, "like": np.empty(0), "order": "C"},
    {"not_a_keyword": 1},
]

DTYPES = [np.float32, np.float64, np.complex128]
SHAPES = [(), (3,), (2, 3)]


def _sample(shape: tuple, dtype: type, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return np.asarray(x, dtype=dtype)


def _numpy(name: str, x, kwargs: dict):
    """NumPy's own answer on plain values: the result, or the exception it raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # complex -> real casts warn
        try:
            return getattr(np, name)(x, **kwargs), None
        except Exception as error:  # noqa: BLE001 - any error NumPy raises is the expectation
            return None, error


def _loss_weights(y: np.ndarray, seed: int = 1) -> np.ndarray:
    """Random weights of the output's shape (complex for a complex output)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=y.shape)
    return w + 1j * rng.normal(size=y.shape) if y.dtype.kind == "c" else w


def _weighted(y, w):
    """The real loss ``Re(sum(conj(w) * y))``, written with NumPy calls the tracer follows."""
    return np.sum(np.real(np.conj(w) * y))


def _expected_gradient(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The closed form: ``w`` reshaped to ``x`` (cast to the output's dtype on the way, as the
    output cotangent is), cast onto ``x``'s dtype; zero where the output is not float."""
    if y.dtype.kind not in "fc":
        return np.zeros(x.shape, x.dtype)
    dy = w.astype(y.dtype) if y.dtype.kind == "c" else np.real(w).astype(y.dtype)
    dy = dy.reshape(x.shape)
    return (dy if x.dtype.kind == "c" else np.real(dy)).astype(x.dtype)


def _traced_value_and_gradient(function, x: np.ndarray, w: np.ndarray):
    """The value ``function`` computes while traced, and the gradient of its weighted sum."""
    seen = []

    def loss(x):
        y = function(x)
        seen.append(cr.primal(y))
        return _weighted(y, w)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = cr.grad(loss)(x)
    (y,) = seen
    return y, gradient


def _check_against_numpy(function, x: np.ndarray, expected, error, *, seed: int = 1):
    """``function(x)`` traced: NumPy's value (shape, dtype, values, layout) and the
    closed-form gradient of a weighted sum, or NumPy's error."""
    if error is not None:
        with pytest.raises(type(error), match=re.escape(str(error).splitlines()[0])):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cr.grad(lambda x: _weighted(function(x), 1.0))(x)
        return
    w = _loss_weights(np.asarray(expected), seed)
    y, gradient = _traced_value_and_gradient(function, x, w)
    assert type(y) is np.ndarray
    assert y.shape == expected.shape and y.dtype == expected.dtype
    np.testing.assert_array_equal(y, expected)
    assert (y.flags.c_contiguous, y.flags.f_contiguous) == (
        expected.flags.c_contiguous, expected.flags.f_contiguous)
    assert np.asarray(gradient).dtype == x.dtype and np.shape(gradient) == x.shape
    tolerance = 1e-6 if np.finfo(x.dtype).bits >= 64 and expected.dtype.itemsize >= 8 else 1e-5
    np.testing.assert_allclose(gradient, _expected_gradient(x, expected, w), rtol=tolerance,
                               atol=tolerance)
    if x.dtype in (np.float64, np.complex128) and expected.dtype in (np.float64, np.complex128):
        def plain_loss(x_plain):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return _weighted(function(x_plain), w)
        np.testing.assert_allclose(gradient, numerical_gradient(plain_loss, x), atol=1e-6)


def _keyword_id(kwargs: dict) -> str:
    def show(v):
        return "ndarray" if isinstance(v, np.ndarray) else getattr(v, "__name__", v)
    return ",".join(f"{k}={show(v)}" for k, v in kwargs.items()) or "no-keywords"


# --- every function x every keyword x dtype x shape ---------------------------------------------

@pytest.mark.parametrize("kwargs", KEYWORDS, ids=_keyword_id)
@pytest.mark.parametrize("name", CREATION)
def test_every_creation_function_and_keyword_matches_numpy(name, kwargs):
    for dtype in DTYPES:
        for shape in SHAPES:
            x = _sample(shape, dtype)
            expected, error = _numpy(name, x, kwargs)
            _check_against_numpy(lambda x: getattr(np, name)(x, **kwargs), x, expected, error)


@pytest.mark.parametrize("name", ["array", "asarray", "asanyarray", "ascontiguousarray",
                                  "asfortranarray"])
def test_dtype_and_order_passed_by_position(name):
    x = _sample((2, 3), np.float64)
    for args in [(np.float32,), (np.complex128,), (None,), (np.float32, "F"), (None, "C")]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                expected, error = getattr(np, name)(x, *args), None
            except Exception as caught:  # noqa: BLE001
                expected, error = None, caught
        _check_against_numpy(lambda x: getattr(np, name)(x, *args), x, expected, error)


@pytest.mark.parametrize("name,parameter", [("array", "object"), ("asarray", "a"),
                                            ("asanyarray", "a"), ("ascontiguousarray", "a"),
                                            ("asfortranarray", "a"), ("copy", "a")])
def test_array_argument_passed_by_keyword(name, parameter):
    x = _sample((3,), np.float64)
    expected, error = _numpy(name, x, {})
    assert error is None
    _check_against_numpy(lambda x: getattr(np, name)(**{parameter: x, "dtype": np.complex128}
                                                      if name != "copy" else {parameter: x}),
                         x, getattr(np, name)(**{parameter: x, "dtype": np.complex128}
                                              if name != "copy" else {parameter: x}), None)


# --- the issue's reproducer: ndmin changes broadcasting ------------------------------------------

def test_ndmin_reproducer_value_and_gradient():
    x = np.array([1.0, 2.0])
    # (2, 1) * (2,) -> (2, 2): each x_i meets 0 and 1; without ndmin it would meet only one.
    value, gradient = cr.value_and_grad(
        lambda x: np.sum(np.array(x, ndmin=2).T * np.arange(2.0)))(x)
    assert value == pytest.approx(3.0)
    np.testing.assert_array_equal(gradient, [1.0, 1.0])
    # 0-d: ndmin=2 gives a (1, 1) array, broadcast against (2,).
    value, gradient = cr.value_and_grad(
        lambda x: np.sum(np.array(x, ndmin=2) * np.arange(2.0)))(np.array(3.0))
    assert value == pytest.approx(3.0) and gradient == pytest.approx(1.0)


def test_ndmin_outer_product_gradient():
    x = np.array([0.5, -1.0, 2.0])

    def loss(x):  # (3, 1) @ (1, 3): the outer product, whose sum is sum(x) ** 2
        row = np.array(x, ndmin=2)
        return np.sum(row.T @ row)

    value, gradient = cr.value_and_grad(loss)(x)
    assert value == pytest.approx(np.sum(x) ** 2)
    np.testing.assert_allclose(gradient, 2 * np.sum(x) * np.ones(3))
    np.testing.assert_allclose(gradient, numerical_gradient(
        lambda x: np.sum(np.array(x, ndmin=2).T @ np.array(x, ndmin=2)), x), atol=1e-6)


# --- nested lists mixing traced values and plain numbers or arrays -------------------------------

NESTED_KEYWORDS = [{}, {"dtype": np.float32}, {"dtype": np.complex128}, {"ndmin": 3},
                   {"dtype": np.complex64, "ndmin": 4}, {"dtype": np.int64}, {"order": "F"},
                   {"copy": True}, {"copy": False}, {"dtype": np.float32, "copy": False}]


def _numpy_has_ndmax() -> bool:
    try:
        np.array([[1.0]], ndmax=2)
    except TypeError:
        return False
    return True


if _numpy_has_ndmax():  # NumPy >= 2.4; ndmax=1 is below the list's depth: NumPy's ValueError
    NESTED_KEYWORDS += [{"ndmax": 2}, {"ndmax": 2, "ndmin": 3}, {"ndmax": 1}]


@pytest.mark.parametrize("kwargs", NESTED_KEYWORDS, ids=_keyword_id)
@pytest.mark.parametrize("name", ["array", "asarray", "asanyarray", "ascontiguousarray",
                                  "asfortranarray"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_nested_list_of_traced_and_plain_numbers(name, kwargs, dtype):
    x = _sample((2,), dtype)

    def build(x):
        return getattr(np, name)([[x[0], 1.0], [2.0, x[1]]], **kwargs)

    def build_plain(x):
        return getattr(np, name)([[x[0], 1.0], [2.0, x[1]]], **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected, error = build_plain(x), None
        except Exception as caught:  # noqa: BLE001
            expected, error = None, caught
    if error is not None:
        with pytest.raises(type(error), match=re.escape(str(error).splitlines()[0])):
            cr.grad(lambda x: _weighted(build(x), 1.0))(x)
        return
    w = _loss_weights(expected)
    y, gradient = _traced_value_and_gradient(build, x, w)
    assert y.shape == expected.shape and y.dtype == expected.dtype
    np.testing.assert_array_equal(y, expected)
    # Closed form: x[0] sits at [0, 0] and x[1] at [1, 1] of the (unpadded) 2x2 block.
    if expected.dtype.kind in "fc":
        dy = w.astype(expected.dtype) if expected.dtype.kind == "c" else \
            np.real(w).astype(expected.dtype)
        block = dy.reshape(dy.shape[-2:])
        closed = np.array([block[0, 0], block[1, 1]])
        closed = (closed if x.dtype.kind == "c" else np.real(closed)).astype(x.dtype)
    else:
        closed = np.zeros(2, x.dtype)
    assert gradient.dtype == x.dtype
    np.testing.assert_allclose(gradient, closed, rtol=1e-5, atol=1e-6)
    if x.dtype != np.float32 and expected.dtype in (np.float64, np.complex128):
        np.testing.assert_allclose(gradient, numerical_gradient(
            lambda x: _weighted(build_plain(x), w), x), atol=1e-6)


def test_nested_rows_of_traced_and_plain_arrays():
    x = _sample((3,), np.float64)
    c = np.array([0.5, -1.0, 4.0])

    def loss(x):
        m = np.array((x, c, [1.0, 2.0, 3.0], 2.0 * x), dtype=np.complex128, ndmin=3)
        assert m.shape == (1, 4, 3) and m.dtype == np.complex128
        return np.sum(np.abs(m) ** 2)

    value, gradient = cr.value_and_grad(loss)(x)
    assert value == pytest.approx(5 * np.sum(x ** 2) + np.sum(c ** 2) + 14.0)
    np.testing.assert_allclose(gradient, 10 * x)
    assert gradient.dtype == np.float64


def test_list_of_traced_scalars_with_dtype_and_ndmin():
    def loss(x):
        v = np.array([x, x ** 2, 3.0], dtype=np.float32, ndmin=2)
        assert v.shape == (1, 3) and v.dtype == np.float32
        return np.sum(v * np.array([1.0, 2.0, 3.0], dtype=np.float32))

    value, gradient = cr.value_and_grad(loss)(np.float64(1.5))
    assert value == pytest.approx(1.5 + 2 * 2.25 + 9.0)
    assert gradient == pytest.approx(1.0 + 4 * 1.5)


# --- dtype: float32 keeps the input's gradient dtype; integers give zero, not an error ------------

def test_integer_and_bool_dtype_is_a_constant_with_zero_gradient():
    x = np.array([1.7, -2.2])
    for dtype in (np.int64, np.int8, bool, np.uint8, "U8"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            constant = np.array(x, dtype=dtype)
        seen = []

        def loss(x):
            c = np.array(x, dtype=dtype)
            seen.append(c)
            return np.sum(x) * 0.0 + (np.sum(c.astype(float) * x) if dtype != "U8" else 0.0)

        gradient = cr.grad(loss)(x)
        assert type(seen[-1]) is np.ndarray  # a constant, as NumPy made it
        np.testing.assert_array_equal(seen[-1], constant)
        expected = np.zeros(2) if dtype == "U8" else constant.astype(float)
        np.testing.assert_allclose(gradient, expected)  # d/dx sum(c * x) = c: c is constant
    gradient = cr.grad(lambda x: np.sum(np.asarray(x, dtype=np.int64) * 1.0) + 0.0 * x[0])(x)
    np.testing.assert_array_equal(gradient, [0.0, 0.0])


def test_float32_dtype_from_float64_input_keeps_float64_gradient():
    x = np.array([1.0, 2.0, 3.0])
    gradient = cr.grad(lambda x: np.sum(np.asarray(x, dtype=np.float32) ** 2))(x)
    assert gradient.dtype == np.float64
    np.testing.assert_allclose(gradient, 2 * x, rtol=1e-6)


def test_complex_dtype_from_real_input_gives_real_gradient():
    x = np.array([1.0, -2.0])
    # |x * (1 + 2j)|^2 = 5 x^2: the gradient is real, 10 x.
    gradient = cr.grad(lambda x: np.sum(np.abs(np.array(x, dtype=complex) * (1 + 2j)) ** 2))(x)
    assert gradient.dtype == np.float64
    np.testing.assert_allclose(gradient, 10 * x)


def test_real_dtype_from_complex_input_keeps_only_the_real_part():
    z = np.array([1.0 + 2.0j, -0.5 + 1.0j])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = cr.grad(lambda z: np.sum(np.array(z, dtype=np.float64) ** 2))(z)
    np.testing.assert_allclose(gradient, 2 * z.real + 0j)  # d/dIm is zero


def test_object_results_are_refused_loudly():
    x = np.array([1.0, 2.0])
    with pytest.raises(cr.TracingError, match=r"np\.array.*dtype=object"):
        cr.grad(lambda x: np.sum(np.array(x, dtype=object)))(x)
    with pytest.raises(cr.TracingError, match=r"np\.asarray.*Python objects"):
        cr.grad(lambda x: np.sum(np.asarray([x[0], x[1]], dtype=object)))(x)
    # the same by the method: before, an object array of the primal values and a silently
    # zero gradient (SciPy 1.11's pearsonr casts to dtype = type(1.0 + x[0]), the Traced class)
    for dtype in (object, "O", np.dtype(object)):
        with pytest.raises(cr.TracingError, match=r"astype.*Python objects"):
            cr.grad(lambda x: np.sum(x.astype(dtype) ** 2))(x)
    with pytest.raises(cr.TracingError, match=r"astype\(type\(t\)\).*Write t\.dtype"):
        cr.grad(lambda x: np.sum(x.astype(type(1.0 + x[0])) ** 2))(x)


# --- copy: value semantics; copy=False errors are NumPy's on the primal --------------------------

def test_copy_false_decision_is_numpys():
    x = np.array([1.0, 2.0])
    for build in (lambda x: np.array(x, copy=False, dtype=np.float32),
                  lambda x: np.asarray(x, copy=False, dtype=np.complex128),
                  lambda x: np.array([x[0], x[1]], copy=False)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected, error = build(x), None
        except Exception as caught:  # noqa: BLE001 - NumPy 2: a copy is needed; NumPy 1:
            expected, error = None, caught  # asarray has no copy=; whatever NumPy says
        _check_against_numpy(build, x, expected, error)


def test_copies_are_independent_values():
    def loss(x):
        a = np.array(x, copy=True)
        b = np.array(x, copy=False)  # no copy needed: allowed by NumPy 1 and 2
        c = np.copy(x)
        return np.sum(a * 1.0 + b * 2.0 + c * 3.0)

    np.testing.assert_array_equal(cr.grad(loss)(np.ones(3)), [6.0, 6.0, 6.0])


# --- order: applied to the primal, so its layout is NumPy's ---------------------------------------

@pytest.mark.parametrize("build,f_order", [
    (lambda x: np.asfortranarray(x), True), (lambda x: np.array(x, order="F"), True),
    (lambda x: np.asarray(x.T, order="C"), False), (lambda x: np.ascontiguousarray(x.T), False),
    (lambda x: np.copy(x.T, order="K"), True), (lambda x: np.copy(x.T, order="C"), False)])
def test_order_sets_the_layout_of_the_primal(build, f_order):
    x = _sample((2, 3), np.float64)
    layouts = []

    def loss(x):
        y = build(x)
        layouts.append(cr.primal(y).flags.f_contiguous and not cr.primal(y).flags.c_contiguous)
        return np.sum(y * y)

    np.testing.assert_allclose(cr.grad(loss)(x), 2 * x)
    assert layouts == [f_order]


# --- like: None, NumPy arrays and traced values; other array types are named -------------------

class _DuckArray:
    """Another library's array type (it implements __array_function__)."""

    def __array_function__(self, function, types, args, kwargs):
        return "duck"


@pytest.mark.parametrize("name", ["array", "asarray", "asanyarray", "ascontiguousarray",
                                  "asfortranarray"])
def test_like(name):
    x = _sample((3,), np.float64)
    create = lambda *args, **kwargs: getattr(np, name)(*args, **kwargs)  # noqa: E731
    for like in (None, np.empty(0), np.empty((2, 2), np.float32)):
        expected, _ = _numpy(name, x, {"like": like})
        _check_against_numpy(lambda x: create(x, like=like), x, expected, None)
    # like= a traced value: the result is a plain array (a constant), as NumPy makes it.
    seen = []

    def loss(x):
        c = create([1.0, 2.0, 3.0], like=x)
        seen.append(c)
        return np.sum(c * x) + np.sum(create(x, like=x) * 2.0)

    np.testing.assert_allclose(cr.grad(loss)(x), [3.0, 4.0, 5.0])
    # A new float array made from a list: a traced constant, which the function may write into
    assert type(seen[0]) is not np.ndarray and type(cr.primal(seen[0])) is np.ndarray
    with pytest.raises(TypeError, match=rf"np\.{name}: like= .*_DuckArray"):
        cr.grad(lambda x: np.sum(create(x, like=_DuckArray())))(x)
    # Without traced values, like= another array type is NumPy's business (it dispatches).
    assert cr.grad(lambda x: np.sum(x) + (create([1.0], like=_DuckArray()) == "duck"))(x)[0] \
        == 1.0


# --- atleast_nd: several arguments, mixed traced and plain ---------------------------------------

@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast_several_arguments(name):
    x = _sample((), np.float64)
    v = _sample((3,), np.complex128, seed=2)
    m = np.ones((2, 2))

    def loss(x, v):
        a, b, c = getattr(np, name)(x, v, m)
        return np.sum(a * 2.0) + np.sum(np.abs(b) ** 2) + np.sum(c)

    shapes = [np.shape(part) for part in getattr(np, name)(x, v, m)]
    seen = []
    dx, dv = cr.grad(lambda x, v: (seen.append(tuple(
        np.shape(cr.primal(p)) for p in getattr(np, name)(x, v, m))), loss(x, v))[1],
        argnums=(0, 1))(x, v)
    assert seen == [tuple(shapes)]
    assert dx == pytest.approx(2.0)
    np.testing.assert_allclose(dv, 2 * v)


# --- NumPy untouched outside a trace, arguments passed through inside one -----------------------

def test_numpy_is_untouched_outside_a_trace():
    names = ["array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray"]
    assert all(getattr(np, name) is routes.ORIGINALS[name] for name in names)
    inside = []
    cr.grad(lambda x: (inside.extend(getattr(np, name) is routes.ORIGINALS[name]
                                     for name in names), np.sum(x))[1])(np.ones(2))
    assert inside == [False] * len(names)
    assert all(getattr(np, name) is routes.ORIGINALS[name] for name in names)
    with pytest.raises(ValueError):
        cr.grad(lambda x: np.array(x, order="Q"))(np.ones(2))
    assert all(getattr(np, name) is routes.ORIGINALS[name] for name in names)


@pytest.mark.parametrize("name", ["array", "asarray", "asanyarray", "ascontiguousarray",
                                  "asfortranarray"])
def test_plain_arguments_are_passed_through_unchanged(name):
    data = [[1, 2], [3, 4]]
    calls = [((data,), {}), ((data, np.float32), {}), ((data,), {"dtype": complex}),
             ((data,), {"like": np.empty(0)}), ((data,), {"ndmin": 3, "order": "F"}),
             ((data,), {"copy": False}), ((np.arange(4.0),), {"copy": False}),
             ((data,), {"bogus": 1}), ((data,), {"order": "Q"})]
    for args, kwargs in calls:
        expected, error = None, None
        try:
            expected = getattr(np, name)(*args, **kwargs)
        except Exception as caught:  # noqa: BLE001
            error = caught
        got = []

        def f(x):
            try:
                got.append(getattr(np, name)(*args, **kwargs))
            except Exception as caught:  # noqa: BLE001
                got.append(caught)
            return np.sum(x)

        cr.grad(f)(np.ones(2))
        got[0] = cr.primal(got[0])  # a new float array is a traced constant (ad/dispatch/writes.py)
        if error is not None:
            assert type(got[0]) is type(error) and str(got[0]) == str(error)
        else:
            assert type(got[0]) is type(expected) and got[0].dtype == expected.dtype
            np.testing.assert_array_equal(got[0], expected)
            assert got[0].flags.f_contiguous == expected.flags.f_contiguous
            if args[0] is not data and kwargs.get("copy") is False:
                assert np.shares_memory(got[0], args[0])


# --- second derivatives: the creation inside a rule differentiated again ------------------------

@pytest.mark.parametrize("build", [
    lambda y: np.array(y, ndmin=3),
    lambda y: np.asarray(y, dtype=np.float32),
    lambda y: np.ascontiguousarray(y, dtype=np.complex128),
    lambda y: np.asfortranarray(y),
    lambda y: np.array([y, [1.0, 3.0]]),
    lambda y: np.asarray((y, np.ones(2)), dtype=np.complex64),
    lambda y: np.array([[y], [[2.0, 0.5]]], ndmin=4, order="F", dtype=np.float32),
], ids=["ndmin", "float32", "ascontiguous-complex", "asfortran", "nested-list",
        "tuple-complex64", "nested-ndmin-order-float32"])
def test_second_derivatives_through_creation(build):
    x = np.array([1.0, 2.0])
    weights = np.array([1.0, 10.0])

    def first(y):  # sum of the cubes of the created entries, plus constants
        return np.sum(np.real(build(y) ** 3))

    # d/dx sum(w * 3 x^2) = 6 w x: the constants add nothing.
    gradient = cr.grad(lambda x: np.sum(cr.grad(first)(x) * weights))(x)
    np.testing.assert_allclose(gradient, 6 * weights * x, rtol=1e-5)


# --- np.array([a, b, c]) of traced numbers: one record, no structure walk ------------------------

def _stacking(monkeypatch) -> list:
    """Calls of `_stacked_numbers` that recorded (``True``) or left the call to the general
    path (``False``)."""
    from chainrules.ad.dispatch import creation

    taken: list = []
    original = creation._stacked_numbers

    def spy(*args):
        result = original(*args)
        taken.append(result is not None)
        return result

    monkeypatch.setattr(creation, "_stacked_numbers", spy)
    return taken


@pytest.mark.parametrize("name", ["array", "asarray", "ascontiguousarray"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_list_of_traced_numbers_is_one_record(monkeypatch, name, dtype):
    taken = _stacking(monkeypatch)
    x = np.array([0.3, -1.2, 2.0], dtype=dtype)

    def f(x):
        # (np.array looked up while traced; x[2] * x[2], not x[2] ** 2, which NumPy 1.x
        # makes a float64 number)
        v = getattr(np, name)([x[0] * x[1], x[2] * x[2], x[0]])
        return np.sum(v * np.arange(1.0, 4.0, dtype=dtype))

    gradient = cr.grad(f)(x)
    a, b, c = x.astype(np.float64)
    np.testing.assert_allclose(gradient, [b + 3, a, 4 * c], rtol=1e-6)
    assert gradient.dtype == dtype and taken == [True]


def test_stacked_numbers_with_constants_a_dtype_and_a_tuple(monkeypatch):
    taken = _stacking(monkeypatch)
    x = np.array([0.5, 2.0])
    f = lambda x: np.sum(np.asarray((x[0], 2.0, x[1] * x[0], 3), dtype=float) ** 2)  # noqa
    a, b = x
    np.testing.assert_allclose(cr.grad(f)(x), [2 * a + 2 * a * b * b, 2 * a * a * b], rtol=1e-12)
    assert taken == [True]
    np.testing.assert_allclose(cr.grad(f)(x), numerical_gradient(f, x), rtol=1e-7)


@pytest.mark.parametrize("build, expected, why", [
    (lambda x: np.array([x[0].astype(np.float32), 1.5]), [0.75, 0.0],
     "a Python float widens float32"),
    (lambda x: np.array([x[0], x[1]], dtype=np.float32), [0.75, 12.0], "another dtype asked for"),
    (lambda x: np.array([x[0], np.float32(x[1])]), [0.75, 12.0], "numbers of two types"),
    (lambda x: np.array([[x[0]], [x[1]]]), [0.75, 12.0], "nested lists"),
    (lambda x: np.array([x[0], x[1]], ndmin=2), [0.75, 12.0], "another keyword"),
])
def test_what_the_stacked_numbers_leave_to_the_general_path(monkeypatch, build, expected, why):
    taken = _stacking(monkeypatch)
    x = np.array([0.5, 2.0])  # (exact in float32)
    f = lambda x: np.sum(np.asarray(build(x), dtype=np.float64) ** 3)  # noqa: E731
    np.testing.assert_allclose(cr.grad(f)(x), expected, rtol=1e-12)  # 3 x^2 where read
    assert True not in taken[:1], why


def test_stacked_numbers_at_order_2():
    x, v = np.array([0.7, -0.4, 1.3]), np.array([1.0, -2.0, 0.5])
    f = lambda x: np.sum(np.array([x[0] * x[1], x[2] ** 3]) ** 2)  # noqa: E731
    a, b, c = x
    H = np.array([[2 * b * b, 4 * a * b, 0], [4 * a * b, 2 * a * a, 0], [0, 0, 30 * c ** 4]])
    np.testing.assert_allclose(cr.hvp(f, x, v), H @ v, rtol=1e-12)
    np.testing.assert_allclose(cr.hessian(f)(x), H, rtol=1e-12)
    # a cotangent that is traced by an outer level (grad of a vjp in the cotangent)
    def inner(w):
        return np.sum(cr.vjp(lambda x: np.array([x[0] * x[1], x[2] ** 3]), x)[1](w)[0] ** 2)
    w = np.array([0.5, -1.5])
    jacobian = np.array([[b, a, 0], [0, 0, 3 * c * c]])
    np.testing.assert_allclose(cr.grad(inner)(w), 2 * jacobian @ (jacobian.T @ w), rtol=1e-12)


@pytest.mark.parametrize("join", ["stack", "concatenate", "vstack"])
def test_a_flat_list_is_read_without_a_structure_walk(monkeypatch, join):
    # np.stack([a, b]) of traced arrays: the list's traced values found by position (one
    # pass), not by the general walk of structures (three passes, the cost of a join)
    from chainrules.ad.trace import tape as tape_module

    walks = []
    original = tape_module.leaves

    def counting(*args, **kwargs):
        walks.append(args[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(tape_module, "leaves", counting)
    x = np.array([0.5, -1.0, 2.0, 3.0])
    f = lambda x: np.sum(getattr(np, join)([x[:2], 2.0 * x[2:], np.ones(2)]) ** 2)  # noqa
    np.testing.assert_allclose(cr.grad(f)(x), [1.0, -2.0, 16.0, 24.0], rtol=1e-12)
    assert not [arg for arg in walks if type(arg) is list], walks
    nested = lambda x: np.sum(np.stack([[x[0], x[1]], [x[2], 1.0]]) ** 2)  # noqa: E731
    np.testing.assert_allclose(cr.grad(nested)(x), [1.0, -2.0, 4.0, 0.0], rtol=1e-12)
