"""``scipy.fft`` traced through versions built on functions with rules
(src/chainrules/rules/scipy/fft/transforms.py): every transform's value against SciPy's (in
SciPy's dtype: single precision stays single), its gradient against central differences, its
Hessian-vector product, and functions of scipy.signal built on them. Before, each raised
"r2c(): incompatible function arguments" or AttributeError 'base'."""

from __future__ import annotations

import numpy as np
import pytest

sfft = pytest.importorskip("scipy.fft")

import chainrules as cr  # noqa: E402
from scipy.fft import dct as bound_dct  # noqa: E402  (bound before any trace)
from tests.ad.finite_differences import numerical_gradient  # noqa: E402

# No rules of their own: NumPy's FFT rules and products with matrices do the work.
CASES: list = []

X = np.cos(np.arange(12.0) * 0.9).reshape(3, 4)

CALLS = {
    "fft": lambda x: sfft.fft(x, axis=0),
    "ifft n": lambda x: sfft.ifft(x, n=6),
    "rfft ortho": lambda x: sfft.rfft(x, norm="ortho"),
    "irfft": lambda x: sfft.irfft(x, n=5),
    "hfft": lambda x: sfft.hfft(x, axis=0),
    "ihfft": lambda x: sfft.ihfft(x),
    "fft2": lambda x: sfft.fft2(x),
    "ifft2 s": lambda x: sfft.ifft2(x, s=(4, 4), norm="forward"),
    "rfftn": lambda x: sfft.rfftn(x),
    "irfftn axes": lambda x: sfft.irfftn(x, axes=(1,)),
    "fftshift": lambda x: sfft.fftshift(x, axes=1),
    "ifftshift": lambda x: sfft.ifftshift(x),
    "dct": lambda x: sfft.dct(x),
    "dct type 1 ortho": lambda x: sfft.dct(x, type=1, norm="ortho", axis=0),
    "idct n": lambda x: sfft.idct(x, n=6),
    "dst type 3": lambda x: sfft.dst(x, type=3),
    "idst type 4": lambda x: sfft.idst(x, type=4, norm="ortho"),
    "dctn": lambda x: sfft.dctn(x, norm="ortho"),
    "idctn s": lambda x: sfft.idctn(x, s=(2, 5)),
    "dstn axes": lambda x: sfft.dstn(x, axes=(0,)),
}


def _weights(y):
    return np.arange(1.0, 1.0 + np.size(y)).reshape(np.shape(y))


@pytest.mark.parametrize("name", CALLS)
def test_values_gradients_and_hvp(name):
    call = CALLS[name]
    expected = call(X)
    traced = cr.vjp(call, X)[0]
    assert traced.dtype == expected.dtype
    np.testing.assert_allclose(traced, expected, rtol=1e-12, atol=1e-12)
    weights = _weights(expected)

    def loss(x):
        return np.sum(np.abs(call(x)) ** 2 * weights)

    np.testing.assert_allclose(cr.grad(loss)(X), numerical_gradient(loss, X), rtol=1e-6,
                               atol=1e-8)
    direction = np.sin(np.arange(12.0)).reshape(3, 4)
    step = 1e-5
    fd = (cr.grad(loss)(X + step * direction) - cr.grad(loss)(X - step * direction)) / (2 * step)
    np.testing.assert_allclose(cr.hvp(loss, X, direction), fd, rtol=1e-5, atol=1e-7)


def test_single_precision_stays_single():
    x = X.astype(np.float32)
    for name in ("rfft", "fft", "dct", "irfft"):
        def call(v, name=name):
            return getattr(sfft, name)(v)

        assert cr.vjp(call, x)[0].dtype == call(x).dtype
        assert cr.grad(lambda v: np.sum(np.abs(call(v)) ** 2))(x).dtype == np.float32


def test_a_transform_bound_to_a_name_before_the_trace():
    # `from scipy.fft import dct` at the top of a module: the name is routed too
    loss = lambda v: np.sum(bound_dct(v) ** 2 * np.arange(4.0))  # noqa: E731
    np.testing.assert_allclose(cr.grad(loss)(X[0]), numerical_gradient(loss, X[0]), rtol=1e-6,
                               atol=1e-8)


def test_scipy_signal_built_on_scipy_fft():
    import scipy.signal

    signal = np.cos(np.arange(16.0) * 0.7) + 0.1 * np.arange(16.0)
    # (resample fills an array SciPy makes, on SciPy before 1.13: plain, and refused)
    for loss in (lambda v: np.sum(np.abs(scipy.signal.hilbert(v)) ** 2 * np.arange(16.0)),):
        np.testing.assert_allclose(cr.grad(loss)(signal), numerical_gradient(loss, signal),
                                   rtol=1e-6, atol=1e-7)
