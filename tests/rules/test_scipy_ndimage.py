"""scipy.ndimage on traced values: the NumPy versions (src/chainrules/rules/scipy/ndimage/)
equal SciPy's values for every mode, origin and kernel parity; gradients through the engine, in
the input, the weights and the coordinates, against central finite differences; a Hessian and a
forward-mode derivative; the refusals by name."""

from __future__ import annotations

import numpy as np
import pytest

ndimage = pytest.importorskip("scipy.ndimage")

import chainrules as cr  # noqa: E402
from chainrules.rules.scipy.ndimage import filters, interpolation  # noqa: E402
from tests.ad.finite_differences import numerical_gradient  # noqa: E402

_rng = np.random.default_rng(7)
IMAGE = _rng.normal(size=(6, 5))
EVEN, ODD = _rng.normal(size=4), _rng.normal(size=3)
KERNEL = _rng.normal(size=(3, 2))
COORDINATES = _rng.uniform(-1.3, 6.2, size=(2, 9))
FILTER_MODES = ["reflect", "mirror", "nearest", "wrap", "constant", "grid-wrap", "grid-mirror",
                "grid-constant"]
CASES: list = []  # no rules here: NumPy versions that the engine traces (tests below)
MAP_MODES = ["constant", "grid-constant", "nearest", "reflect", "grid-mirror", "mirror",
             "grid-wrap"]


@pytest.mark.parametrize("mode", FILTER_MODES)
def test_filters_compute_scipys_values(mode):
    for name in ("correlate1d", "convolve1d"):
        for weights in (EVEN, ODD):
            for origin in range(-(weights.size // 2), (weights.size - 1) // 2 + 1):
                np.testing.assert_allclose(
                    getattr(filters, name)(IMAGE, weights, 0, None, mode, 0.7, origin),
                    getattr(ndimage, name)(IMAGE, weights, 0, None, mode, 0.7, origin),
                    atol=1e-12)
    for name in ("correlate", "convolve"):
        for origin in ([0, 0], [1, 0], [-1, -1]):
            np.testing.assert_allclose(
                getattr(filters, name)(IMAGE, KERNEL, None, mode, 0.3, origin),
                getattr(ndimage, name)(IMAGE, KERNEL, None, mode, 0.3, origin), atol=1e-12)
    for sigma, order in ((0.8, 0), ((1.5, 0.5), 1), (2.0, (0, 2))):
        np.testing.assert_allclose(
            filters.gaussian_filter(IMAGE, sigma, order, mode=mode, cval=0.2),
            ndimage.gaussian_filter(IMAGE, sigma, order, mode=mode, cval=0.2), atol=1e-12)


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("mode", MAP_MODES)
def test_map_coordinates_computes_scipys_values(order, mode):
    np.testing.assert_allclose(
        interpolation.map_coordinates(IMAGE, COORDINATES, order=order, mode=mode, cval=0.4),
        ndimage.map_coordinates(IMAGE, COORDINATES, order=order, mode=mode, cval=0.4),
        atol=1e-12)


def _check(loss, x, atol=1e-6):
    np.testing.assert_allclose(cr.grad(loss)(x), numerical_gradient(loss, x), atol=atol)


@pytest.mark.parametrize("mode", ["reflect", "mirror", "nearest", "wrap", "constant"])
def test_gradients_of_the_filters_in_input_and_weights(mode):
    weight = np.linspace(0.5, 1.5, IMAGE.size).reshape(IMAGE.shape)
    _check(lambda a: np.sum(ndimage.gaussian_filter(a, 1.2, mode=mode) ** 2 * weight), IMAGE)
    _check(lambda a: np.sum(np.sin(ndimage.convolve(a, KERNEL, mode=mode, cval=0.5))), IMAGE)
    _check(lambda w: np.sum(np.sin(ndimage.convolve(IMAGE, w, mode=mode))), KERNEL)
    _check(lambda w: np.sum(ndimage.correlate1d(IMAGE, w, axis=1, mode=mode) ** 2), EVEN)
    _check(lambda a: np.sum(ndimage.gaussian_filter1d(a, 0.9, axis=0, order=1, mode=mode) ** 2),
           IMAGE)


@pytest.mark.parametrize("mode", MAP_MODES)
def test_gradients_of_map_coordinates_in_input_and_coordinates(mode):
    points = COORDINATES + 0.013  # off the cell edges, where order 1 has kinks
    _check(lambda a: np.sum(ndimage.map_coordinates(a, points, order=1, mode=mode) ** 2), IMAGE)
    _check(lambda c: np.sum(ndimage.map_coordinates(IMAGE, c.reshape(2, -1), order=1,
                                                    mode=mode, cval=0.3) ** 2), points.ravel())


def test_second_order_and_forward_mode():
    def loss(a):
        return np.sum(ndimage.gaussian_filter(a * a, 1.0) ** 2)

    small = IMAGE[:3, :3]
    expected = np.array([numerical_gradient(lambda z: cr.grad(loss)(z).ravel()[i], small).ravel()
                         for i in range(small.size)])
    np.testing.assert_allclose(cr.hessian(loss)(small).reshape(9, 9), expected, atol=1e-4)
    _, tangent = cr.jvp(lambda a: ndimage.convolve(a, KERNEL), (IMAGE,), (np.ones_like(IMAGE),))
    np.testing.assert_allclose(tangent, ndimage.convolve(np.ones_like(IMAGE), KERNEL))


def test_refusals_name_what_to_do():
    with pytest.raises(NotImplementedError, match="order=1"):
        cr.grad(lambda a: np.sum(ndimage.map_coordinates(a, COORDINATES)))(IMAGE)
    with pytest.raises(ValueError, match="use the returned value"):
        cr.grad(lambda a: np.sum(ndimage.convolve(a, KERNEL, output=np.empty_like(IMAGE))))(
            IMAGE)
    with pytest.raises(ValueError, match="traced sigma"):
        cr.grad(lambda s: np.sum(ndimage.gaussian_filter(IMAGE, s)))(1.0)
    # outside a trace, SciPy's own functions
    assert ndimage.gaussian_filter.__code__.co_filename.endswith("_filters.py")


def test_single_precision_input_gives_single_precision_output_as_scipy():
    # before: float64 (the float64 weights promoted the traced result; SciPy keeps the input's)
    x = np.cos(np.arange(9.0)).astype(np.float32)
    for call in (lambda v: ndimage.convolve1d(v, [0.25, 0.5, 0.25]),
                 lambda v: ndimage.gaussian_filter(v, 1.0),
                 lambda v: ndimage.correlate(v, np.array([1.0, -1.0]))):
        assert cr.vjp(call, x)[0].dtype == call(x).dtype == np.float32


_IMAGE = np.cos(np.arange(30.0) * 0.8).reshape(5, 6)
MORE_FILTERS = {
    "uniform_filter1d": lambda v: ndimage.uniform_filter1d(v, 4, origin=1, mode="nearest"),
    "uniform_filter": lambda v: ndimage.uniform_filter(v, (2, 3), mode="wrap"),
    "sobel": lambda v: ndimage.sobel(v),
    "sobel constant": lambda v: ndimage.sobel(v, axis=0, mode="constant", cval=0.5),
    "prewitt": lambda v: ndimage.prewitt(v, 1),
    "laplace": lambda v: ndimage.laplace(v, mode="mirror"),
    "gaussian_laplace": lambda v: ndimage.gaussian_laplace(v, 1.2, truncate=3.0),
    "gaussian_gradient_magnitude": lambda v: ndimage.gaussian_gradient_magnitude(
        v, (0.8, 1.1), mode="nearest"),
    "shift": lambda v: ndimage.shift(v, (0.4, -1.2), order=1, mode="nearest"),
    "shift order 0": lambda v: ndimage.shift(v, (1.4, -1.2), order=0, mode="grid-wrap"),
    "zoom": lambda v: ndimage.zoom(v, (1.5, 0.7), order=1),
    "zoom order 0": lambda v: ndimage.zoom(v, 1.7, order=0),
}


@pytest.mark.parametrize("name", MORE_FILTERS)
def test_more_filters_and_resampling_match_scipy_and_differentiate(name):
    # before: ArrayConversionError from SciPy's C code (uniform filters, shift, zoom) or
    # "output=array" (sobel, prewitt, laplace chain correlate1d through an output array)
    call = MORE_FILTERS[name]
    expected = call(_IMAGE)
    np.testing.assert_allclose(cr.vjp(call, _IMAGE)[0], expected, rtol=1e-13, atol=1e-13)
    weights = np.arange(np.size(expected), dtype=float).reshape(np.shape(expected))

    def loss(v):
        return np.sum(call(v) ** 2 * weights)

    np.testing.assert_allclose(cr.grad(loss)(_IMAGE), numerical_gradient(loss, _IMAGE),
                               rtol=1e-6, atol=1e-6)


def test_shift_in_its_shift_and_higher_orders_refused():
    line = np.cos(np.arange(9.0))

    def loss(t):
        return np.sum(ndimage.shift(line, t[0], order=1) ** 2 * np.arange(9.0))

    t = np.array([0.3])
    np.testing.assert_allclose(cr.grad(loss)(t), numerical_gradient(loss, t), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="zoom of order 3"):
        cr.grad(lambda v: np.sum(ndimage.zoom(v, 2)))(_IMAGE)


FOOTPRINT = np.array([[1, 0, 1], [0, 1, 1]], bool)
ORDER_FILTERS = {
    "median": lambda x, **k: ndimage.median_filter(x, **k),
    "rank 1": lambda x, **k: ndimage.rank_filter(x, 1, **k),
    "rank -2": lambda x, **k: ndimage.rank_filter(x, -2, **k),
    "percentile 30": lambda x, **k: ndimage.percentile_filter(x, 30, **k),
    "minimum": lambda x, **k: ndimage.minimum_filter(x, **k),
    "maximum": lambda x, **k: ndimage.maximum_filter(x, **k),
}
ORDER_OPTIONS = [
    {"size": 3}, {"size": (2, 3), "origin": (0, 1), "mode": "nearest"},
    {"size": 4, "origin": -2, "mode": "mirror"}, {"size": 3, "mode": "constant", "cval": 0.3},
    {"footprint": FOOTPRINT, "mode": "wrap", "origin": (0, 1)}, {"size": 3, "axes": (1,)},
]


@pytest.mark.parametrize("options", ORDER_OPTIONS, ids=lambda o: ",".join(o))
@pytest.mark.parametrize("name", sorted(ORDER_FILTERS))
def test_order_statistic_filters_match_scipy_and_differentiate(name, options):
    # before: RuntimeError "Unsupported array type" (SciPy's C code given a traced array)
    image = IMAGE[:, :4] if name == "median" else IMAGE  # an even count for the median: 12
    weights = np.arange(image.size, dtype=float).reshape(image.shape)

    def loss(x):
        return np.sum(np.sin(ORDER_FILTERS[name](x, **options)) * weights)

    value, gradient = cr.value_and_grad(loss)(image)
    assert value == pytest.approx(loss(image), rel=1e-13)  # SciPy's own values, traced
    np.testing.assert_allclose(gradient, numerical_gradient(loss, image), atol=1e-6)


@pytest.mark.parametrize("function", [ndimage.minimum_filter1d, ndimage.maximum_filter1d])
def test_minimum_and_maximum_along_one_axis(function):
    for options in ({"size": 3}, {"size": 4, "origin": 1, "axis": 0},
                    {"size": 2, "mode": "wrap", "origin": -1}):
        def loss(x):
            return np.sum(function(x, **options) ** 3)

        np.testing.assert_allclose(cr.grad(loss)(IMAGE), numerical_gradient(loss, IMAGE),
                                   atol=1e-6)
    with pytest.raises(RuntimeError, match="sequence of modes"):  # as SciPy
        cr.grad(lambda x: np.sum(ndimage.median_filter(x, 3, mode=["reflect", "wrap"])))(IMAGE)
