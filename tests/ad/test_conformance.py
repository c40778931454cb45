"""A traced array looks like an ndarray to the code that receives it (issue 16).

Each probe runs twice on the same value: on the plain value, and inside a trace on the traced
value (``vjp`` of a function that hands it to the probe). Both must give the same answer, or
raise the same exception type. Integer arrays are never traced (they have no tangent): for them
the probe checks that the trace hands over NumPy's own value.
"""

from __future__ import annotations

import ast
import math
import numbers
import pathlib
import re
import warnings

import numpy as np
import pytest

import chainrules as cr
from chainrules.ad.trace.traced import Traced, primal_value

from .finite_differences import numerical_gradient

SHAPES = [(), (3,), (2, 3)]
DTYPES = [np.float32, np.float64, np.complex128, np.int64]


def _value(shape: tuple, dtype: type) -> np.ndarray:
    values = np.arange(1, 1 + math.prod(shape)).reshape(shape) * 0.75
    if dtype is np.complex128:
        values = values + 0.5j * values
    return np.asarray(values).astype(dtype)


def _plain(result):
    """A result as plain values, for comparison (traced values by their values)."""
    if type(result) is Traced:
        return primal_value(result)
    if type(result) in (list, tuple):
        return type(result)(_plain(part) for part in result)
    if isinstance(result, np.ma.MaskedArray):
        return np.asarray(result.data)
    return result


def _outcome(probe, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ComplexWarning of complex-to-real casts, in both
        try:
            return "returned", _plain(probe(x))
        except Exception as error:  # the type is what is compared
            return "raised", type(error)


def _traced_outcome(probe, x):
    seen = []

    def function(v):
        if x.dtype.kind in "fc":
            assert type(v) is Traced
        seen.append(_outcome(probe, v))
        return v

    cr.vjp(function, x)
    return seen[0]


def _same(expected, got) -> bool:
    if type(expected) in (list, tuple):
        return type(got) is type(expected) and len(got) == len(expected) and all(
            _same(e, g) for e, g in zip(expected, got))
    if isinstance(expected, (np.ndarray, np.generic)):
        got = np.asarray(got)
        return got.shape == np.shape(expected) and got.dtype == expected.dtype and \
            bool(np.all(got == expected))
    return type(got) is type(expected) and got == expected


PROBES = {
    # item 1: isinstance answers as for the value
    "isinstance ndarray": lambda x: isinstance(x, np.ndarray),
    "isinstance generic": lambda x: isinstance(x, np.generic),
    "isinstance float": lambda x: isinstance(x, float),
    "isinstance complex": lambda x: isinstance(x, complex),
    "isinstance Number": lambda x: isinstance(x, numbers.Number),
    "isinstance of its scalar type": lambda x: isinstance(x[()], x.dtype.type),
    "issubclass __class__": lambda x: issubclass(x.__class__, np.ndarray),
    # item 2: scalar types are casts
    "np.float64(x)": lambda x: np.float64(x),
    "np.float32(x)": lambda x: np.float32(x),
    "np.complex128(x)": lambda x: np.complex128(x),
    "np.float64(x) type": lambda x: isinstance(np.float64(x), np.ndarray) if np.ndim(x) else
    isinstance(np.float64(x), np.float64),
    "np.float64(x[()])": lambda x: np.float64(x[()]) if np.ndim(x) == 0 else np.float64(x[0]),
    # item 3: np.ma shape helpers
    "np.ma.atleast_2d": lambda x: np.ma.atleast_2d(x),
    "np.ma.atleast_1d": lambda x: np.ma.atleast_1d(x),
    # item 4: conversions that libraries call first
    "np.asarray_chkfinite": lambda x: np.asarray_chkfinite(x),
    "np.asarray_chkfinite of inf": lambda x: np.asarray_chkfinite(x / np.zeros(np.shape(x))),
    "np.require": lambda x: np.require(x, requirements=["C", "A"]),
    "np.require dtype": lambda x: np.require(x, dtype=np.complex128),
    "np.ascontiguousarray": lambda x: np.ascontiguousarray(x),
    "np.asfortranarray": lambda x: np.asfortranarray(x),
    "np.array copy=False": lambda x: np.array(x, copy=False),
    "np.asarray": lambda x: np.asarray(x),
    # item 6: everything else observable
    "shape": lambda x: x.shape,
    "ndim": lambda x: x.ndim,
    "size": lambda x: x.size,
    "dtype": lambda x: x.dtype,
    "itemsize": lambda x: x.itemsize,
    "nbytes": lambda x: x.nbytes,
    "T": lambda x: x.T,
    "len": lambda x: len(x),
    "iteration": lambda x: list(x),
    "bool": lambda x: bool(x),
    "bool of x[:1]": lambda x: bool(x.reshape(-1)[:1]),
    "np.ndim": lambda x: np.ndim(x),
    "np.shape": lambda x: np.shape(x),
    "np.size": lambda x: np.size(x),
    "np.iterable": lambda x: np.iterable(x),
    "np.isscalar": lambda x: np.isscalar(x),
    "np.isscalar of an element": lambda x: np.isscalar(x[()] if np.ndim(x) == 0 else x[0]),
    "np.result_type": lambda x: np.result_type(x),
    "np.result_type with a float": lambda x: np.result_type(x, np.float32),
    "np.can_cast": lambda x: np.can_cast(x, np.float32),
    "np.can_cast dtype": lambda x: np.can_cast(x.dtype, np.int32),
    "index out of range": lambda x: x[10],
    "too many indices": lambda x: x[0, 0, 0],
    "float index": lambda x: x[1.5],
    "string index": lambda x: x["a"],
    "bad reshape": lambda x: x.reshape(7),
    "bad np.reshape": lambda x: np.reshape(x, (5, 7)),
    "bad broadcast": lambda x: x + np.ones(7),
    "bad np.dot": lambda x: np.dot(x, np.ones(7)),
    "bad concatenate": lambda x: np.concatenate([x, np.ones((9, 9, 9, 9))]),
    "bad axis": lambda x: np.sum(x, axis=5),
    "bad transpose": lambda x: x.transpose(2, 0, 1, 3),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", list(PROBES))
def test_traced_value_behaves_as_ndarray(name, shape, dtype):
    x = _value(shape, dtype)
    expected = _outcome(PROBES[name], x)
    got = _traced_outcome(PROBES[name], x)
    assert expected[0] == got[0], f"{name}: NumPy {expected}, traced {got}"
    if expected[0] == "raised":
        assert issubclass(got[1], expected[1]), f"{name}: NumPy raised {expected[1]}, " \
                                                f"traced raised {got[1]}"
    else:
        assert _same(expected[1], got[1]), f"{name}: NumPy {expected[1]!r}, traced {got[1]!r}"


def test_traced_python_float_passes_float_checks():
    seen = []

    def function(x):
        seen.append((isinstance(x, float), isinstance(x, np.generic),
                     isinstance(x, numbers.Real), type(x) is Traced, isinstance(x, Traced)))
        return x * x

    assert cr.grad(function)(3.0) == 6.0
    assert seen == [(True, False, True, True, True)]


def test_type_is_not_ndarray_and_conversions_stay_loud():
    def function(x):
        assert type(x) is not np.ndarray and not issubclass(type(x), np.ndarray)
        assert isinstance(x, np.ndarray) and isinstance(x, Traced)
        return np.sum(float(np.sum(x)) * x)  # float() converts: loud

    with pytest.raises(cr.TracingError):
        cr.grad(function)(np.ones(2))
    # math.fsum differentiates as a sum: d/dx (x0 + x1) * (x0 + x1) = 2 (x0 + x1)
    np.testing.assert_allclose(
        cr.grad(lambda x: math.fsum(x) * math.fsum(x))(np.array([1.0, 2.0])), [6.0, 6.0])


# --- library-like code paths, differentiated against finite differences ----------------------

def _batch_objective(points):
    """An optimisation-benchmark style function: a batch of points or a single point."""
    if not isinstance(points, np.ndarray):
        points = np.asarray(points)[None]
    points = np.atleast_2d(points)
    return np.sum(np.sum((points - 1.0) ** 2, axis=1) * np.arange(1, len(points) + 1))


def _cast_model(theta):
    """A model that casts its parameters to float32 for speed and back to float64."""
    small = np.float32(theta)
    return np.float64(np.sum(np.sin(small) * np.float32(2.0))) + np.sum(np.float64(theta) ** 3)


def _masked_helper(x):
    """A library helper that makes its input 2-d through np.ma, then sums rows."""
    rows = np.ma.atleast_2d(x)
    return np.sum(np.exp(rows) @ np.ones(rows.shape[1]))


def _checked_wrapper(x):
    """A SciPy-style wrapper: check finiteness and layout first, then compute."""
    a = np.asarray_chkfinite(x)
    b = np.require(a, dtype=np.float64, requirements=["C"])
    c = np.ascontiguousarray(b.reshape(2, 2).T)
    return np.sum(np.tanh(c) * np.arange(4.0).reshape(2, 2))


@pytest.mark.parametrize("function", [_batch_objective, _cast_model, _masked_helper,
                                      _checked_wrapper], ids=lambda f: f.__name__)
def test_library_like_code_matches_finite_differences(function):
    x = np.array([0.3, -1.2, 0.7, 2.0])
    if function is _batch_objective:
        x = x.reshape(2, 2)
    got = cr.grad(function)(x)
    low = function is _cast_model  # float32 arithmetic inside: a larger step, a looser check
    expected = numerical_gradient(function, x, step=1e-2 if low else 1e-6)
    tolerance = 1e-3 if low else 1e-6
    np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)


def test_isinstance_branch_keeps_the_batch():
    # with isinstance False, the function would take x[0]: a wrong value and gradient
    def objective(x):
        if not isinstance(x, np.ndarray):
            x = x[0]
        return np.sum(x ** 2)

    np.testing.assert_allclose(cr.grad(objective)(np.array([1.0, 2.0])), [2.0, 4.0])


@pytest.mark.parametrize("function", [
    lambda x: np.sum(np.int64(x) * x),
    lambda x: np.sum(np.bool_(x) * x),
    lambda x: np.uint8(x[0]) * x[1],
], ids=["int64", "bool_", "uint8"])
def test_integer_scalar_types_say_to_write_astype(function):
    with pytest.raises(cr.TracingError, match=r"integer and bool types.*astype"):
        cr.grad(function)(np.array([1.5, 2.5]))


def test_astype_to_integers_gives_constants():
    def function(x):
        return np.sum(x * x.astype(np.int64))

    x = np.array([1.5, 2.5])
    # x.astype(int) is a constant: d/dx (x * trunc(x)) = trunc(x)
    np.testing.assert_allclose(cr.grad(function)(x), [1.0, 2.0])


def test_integer_types_keep_their_identity_while_tracing():
    def function(x):
        assert np.bool_ is np.dtype(bool).type and np.int64 is np.dtype(np.int64).type
        # NumPy's np.select asks `cond.dtype.type is not np.bool`
        return np.sum(np.select([x > 1.0], [x], default=0.0))

    np.testing.assert_allclose(cr.grad(function)(np.array([0.5, 2.0])), [0.0, 1.0])


def test_scalar_types_stay_types_while_tracing():
    def function(x):
        assert np.float64 == np.dtype(np.float64).type
        assert {np.float64: 1}[np.dtype("f8").type] == 1
        assert isinstance(np.float64(1.5), np.float64) and np.float64(1.5) == 1.5
        assert np.zeros(2, np.float32).dtype == np.float32
        assert np.issubdtype(np.float32, np.floating) and issubclass(np.float64, float)
        assert np.finfo(np.float32).eps == np.finfo(np.dtype("f4")).eps
        return np.sum(x)

    cr.grad(function)(np.ones(2))
    assert np.float64 is np.dtype(np.float64).type  # restored


def test_complex_type_with_two_traced_parts():
    function = lambda x: np.abs(np.complex128(x[0], x[1]))  # noqa: E731
    x = np.array([3.0, 4.0])
    try:
        np.complex128(3.0, 4.0)
    except TypeError:  # NumPy before 2.0 takes one argument: so does the stand-in
        with pytest.raises(TypeError):
            cr.grad(function)(x)
        return
    np.testing.assert_allclose(cr.grad(function)(x), x / 5.0)  # d|z|/dx = x/|z|


def test_masked_array_of_traced_values_is_refused_by_name():
    def function(x):
        return np.sum(np.ma.masked_invalid(x).filled(0.0))

    for make in (function, lambda x: np.sum(np.ma.array(x, mask=[0, 1]))):
        with pytest.raises(cr.TracingError, match=r"np\.ma.*np\.where"):
            cr.grad(make)(np.ones(2))
    # plain masked arrays are untouched while tracing
    cr.grad(lambda x: np.sum(x) + np.ma.masked_invalid(np.array([1.0, np.nan])).sum())(
        np.ones(2))


def test_asarray_chkfinite_checks_the_values():
    with pytest.raises(ValueError, match="infs or NaNs"):
        cr.grad(lambda x: np.sum(np.asarray_chkfinite(np.log(x))))(np.array([0.0, 1.0]))


def test_plain_array_method_with_traced_argument_says_what_to_write():
    a = np.eye(2)

    def function(x):
        return np.sum(a.dot(x))

    with pytest.raises(cr.TracingError, match=r"`a @ t` or `np\.dot\(a, t\)`"):
        cr.grad(function)(np.ones(2))


# --- chainrules' own code never asks isinstance of NumPy or number types ----------------------

_NUMERIC_KINDS = re.compile(r"\bnp\.|\bnumpy\.|\bfloat\b|\bint\b|\bcomplex\b|\bbool\b|"
                            r"\bnumbers\.|\bNumber\b|\bReal\b|\bIntegral\b|_PLAIN_NUMBERS")

# Sites allowed to ask isinstance of such types, with the reason. (None so far.)
ALLOWED: dict = {}


def _isinstance_sites():
    source = pathlib.Path(cr.__file__).parent
    for path in sorted(source.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id == "isinstance" and len(node.args) == 2:
                kinds = ast.unparse(node.args[1])
                if _NUMERIC_KINDS.search(kinds):
                    yield f"{path.relative_to(source)}:{node.lineno}", ast.unparse(node)


def test_own_code_asks_type_not_isinstance():
    """A traced value answers ``isinstance`` as the value it holds (``Traced.__class__``), so
    chainrules asks ``type(v)`` (``issubclass(type(v), np.ndarray)``) wherever a traced value
    could arrive: in rules run at order 2, in accumulation, in structure walks..."""
    found = [f"{where}: {code}" for where, code in _isinstance_sites()
             if code not in ALLOWED]
    assert not found, "isinstance of NumPy or number types in chainrules (write " \
                      "issubclass(type(v), ...), or allow the site in ALLOWED with the " \
                      "reason):\n" + "\n".join(found)


def test_the_site_check_sees_isinstance():
    code = "def f(v):\n    return isinstance(v, (np.ndarray, float))\n"
    tree = ast.parse(code)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert _NUMERIC_KINDS.search(ast.unparse(calls[0].args[1]))
    assert not _NUMERIC_KINDS.search(ast.unparse(ast.parse("(Tangent, list)")))


def test_second_derivatives_through_the_library_paths():
    def function(x):
        assert isinstance(x, np.ndarray)
        y = np.require(np.asarray_chkfinite(np.float64(x)), requirements=["C"])
        return np.sum(np.ma.atleast_2d(y) ** 3)

    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(cr.hessian(function)(x), np.diag(6 * x))
