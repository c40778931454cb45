"""The rule-testing kit on the rules of src/chainrules/rules/scipy/signal/convolution.py: convolve,
correlate, fftconvolve, convolve2d, correlate2d and lfilter, at order 1 and 2, on float64,
float32 and complex input; then gradients through the engine (calls written
``scipy.signal.convolve(...)`` as users write them) against finite differences, closed forms,
and the refused options.

Skipped when SciPy is not installed.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

scipy_signal = pytest.importorskip("scipy.signal")

import chainrules as cr  # noqa: E402
from chainrules.testing import (case, check_case, test_frule_order2,  # noqa: E402
                                test_rrule_order2)
from chainrules.rules.scipy.signal.peaks import peak_search as _peak_search  # noqa: E402
from tests.numpy_features import accepted, running  # noqa: E402

signal = scipy_signal
_rng = np.random.default_rng(20261203)
F32, C128 = np.float32, np.complex128


def normal(*shape, dtype=np.float64):
    x = _rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * _rng.standard_normal(shape)
    return x.astype(dtype)


# A stable denominator (poles inside the unit circle) and a numerator.
A = np.array([1.0, -0.5, 0.2])
B = np.array([0.3, 0.4, -0.1])

CASES = [
    # convolve, correlate: 1-d and n-d, every mode and method, either input the larger
    *[case(f, normal(*n), normal(*m), mode, method)
      for f in (signal.convolve, signal.correlate)
      for n, m in (((5,), (3,)), ((3,), (5,)), ((4, 5), (2, 3)), ((2, 3), (3, 4)))
      for mode in ("full", "same", "valid") for method in ("direct", "fft")],
    case(signal.convolve, normal(3, 4, 2), normal(2, 2, 2), "same"),
    case(signal.correlate, normal(4, 4), normal(4, 4), "valid", "auto"),
    case(signal.convolve, normal(6, dtype=F32), normal(3, dtype=F32), "same", rtol=1e-3,
         atol=1e-3),
    case(signal.correlate, normal(5, dtype=C128), normal(3, dtype=C128), "full"),
    case(signal.correlate, normal(3, 3, dtype=C128), normal(2, 2, dtype=C128), "same",
         "direct"),
    case(signal.convolve, normal(4, dtype=C128), normal(2), "valid"),
    case(signal.correlate, normal(4), normal(2, dtype=C128), "same"),
    # fftconvolve: the same, and axes (broadcasting along the others)
    *[case(signal.fftconvolve, normal(*n), normal(*m), mode)
      for n, m in (((5,), (3,)), ((3, 4), (2, 3)), ((2, 3), (4, 5)))
      for mode in ("full", "same", "valid")],
    case(signal.fftconvolve, normal(3, 5), normal(3, 2), "same", axes=1),
    case(signal.fftconvolve, normal(3, 5), normal(1, 2), "full", axes=[1]),
    case(signal.fftconvolve, normal(1, 6), normal(2, 3), "valid", axes=-1),
    case(signal.fftconvolve, normal(4, 3, dtype=C128), normal(2, 3, dtype=C128), axes=0),
    case(signal.fftconvolve, normal(5, dtype=F32), normal(3, dtype=F32), rtol=1e-3,
         atol=1e-3),
    # convolve2d, correlate2d: fill with 0 in every mode; any boundary in 'valid'
    *[case(f, normal(*n), normal(*m), mode)
      for f in (signal.convolve2d, signal.correlate2d)
      for n, m in (((4, 5), (2, 3)), ((2, 3), (4, 5)), ((4, 4), (3, 2)))
      for mode in ("full", "same", "valid")],
    case(signal.convolve2d, normal(4, 5), normal(3, 2), "same", "fill", 0.0),
    case(signal.correlate2d, normal(4, 5), normal(3, 2), "full", "pad", 0.0),
    case(signal.correlate2d, normal(5, 4), normal(2, 2), "valid", "wrap"),
    case(signal.convolve2d, normal(5, 4), normal(3, 3), "valid", "symm", 2.0),
    case(signal.correlate2d, normal(3, 4, dtype=C128), normal(2, 2, dtype=C128), "same"),
    case(signal.convolve2d, normal(3, 4, dtype=C128), normal(2, 2), "full"),
    case(signal.correlate2d, normal(3, 4, dtype=F32), normal(2, 3, dtype=F32), "same",
         rtol=1e-3, atol=1e-3),
    # lfilter: b, a, x; FIR and IIR; along an axis; a[0] != 1; b longer than x
    case(signal.lfilter, B, A, normal(8)),
    case(signal.lfilter, B, [1.0], normal(6)),
    case(signal.lfilter, B, 1.0, normal(5)),
    accepted(case(signal.lfilter, 2.0, np.array([1.0, -0.4]), normal(5)),
             "lfilter with a scalar b (SciPy 1.12)"),
    case(signal.lfilter, np.array([0.5]), np.array([2.0, -0.6]), normal(7)),
    case(signal.lfilter, B, A, normal(6, 3), axis=0),
    case(signal.lfilter, B, A, normal(2, 5), -1),
    case(signal.lfilter, normal(6), A, normal(4)),
    case(signal.lfilter, B, np.array([1.0, -0.3, 0.1, 0.05, -0.02]), normal(3)),
    case(signal.lfilter, B.astype(C128) + 0.1j, A + 0.05j, normal(6, dtype=C128)),
    case(signal.lfilter, B, A, normal(6, dtype=C128)),
    case(signal.lfilter, B.astype(F32), A.astype(F32), normal(6, dtype=F32), rtol=1e-3,
         atol=1e-3),
    # the peaks' positions: not differentiable (an engine computes them on plain values)
    case(_peak_search, "find_peaks", np.sin(np.arange(12.0)), non_differentiable=True),
]


@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_rule(rule_case):
    check_case(rule_case)


ORDER2 = [c for c in running(CASES) if "float32" not in c.id][::4]


@pytest.mark.parametrize("rule_case", ORDER2, ids=lambda c: c.id)
def test_rule_at_order_2(rule_case):
    test_rrule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)
    test_frule_order2(rule_case.function, *rule_case.args, fkwargs=rule_case.fkwargs)


# --- through the engine, against finite differences -----------------------------------------------

def numeric_gradient(f, x, eps=1e-6):
    x = np.asarray(x, dtype=float)
    gradient = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        gradient[index] = (f(x + step) - f(x - step)) / (2 * eps)
    return gradient


X2, K2 = normal(5, 6), normal(3, 2)
X1, W1 = normal(9), normal(9)
ENGINE = {
    "convolve fft same": (lambda k: np.sum(np.tanh(signal.convolve(X2, k, "same", "fft"))), K2),
    "correlate auto valid": (lambda x: np.sum(signal.correlate(x, K2, "valid") ** 2), X2),
    "fftconvolve axes": (lambda k: np.sum(np.sin(signal.fftconvolve(X2, k[None, :], "same",
                                                                    axes=1))), normal(3)),
    "convolve2d same in both": (lambda k: np.sum(signal.convolve2d(k, k, "same") ** 2), K2),
    "correlate2d same": (lambda x: np.sum(W1[:6] * signal.correlate2d(x, K2, "same")[2]), X2),
    "lfilter in a": (lambda a: np.sum(W1 * signal.lfilter(B, np.concatenate([[1.0], a]), X1)),
                     np.array([-0.4, 0.1])),
    "lfilter in b": (lambda b: np.sum(signal.lfilter(b, A, X1) ** 2), B),
    "lfilter in x": (lambda x: np.sum(W1 * np.cos(signal.lfilter(B, A, x))), X1),
    "lfilter along axis 0": (lambda x: np.sum(signal.lfilter(B, A, x, axis=0)[-1] ** 2), X2),
}


@pytest.mark.parametrize("name", ENGINE)
def test_grad_through_the_engine(name):
    f, x = ENGINE[name]
    np.testing.assert_allclose(cr.grad(f)(x), numeric_gradient(f, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["convolve fft same", "correlate2d same", "lfilter in a",
                                  "lfilter in x"])
def test_second_derivative_through_the_engine(name):
    f, x = ENGINE[name]
    v = normal(*np.shape(x))
    gradient = cr.grad(f)
    _, got = cr.jvp(gradient, (x,), (v,))
    eps = 1e-6
    expected = (gradient(x + eps * v) - gradient(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_every_method_gives_the_same_gradient():
    gradients = [cr.grad(lambda x: np.sum(W1[:7] * signal.convolve(x, K2[:, 0], "same", m)))(
        X1[:7]) for m in ("direct", "fft", "auto")]
    for gradient in gradients[1:]:
        np.testing.assert_allclose(gradient, gradients[0], rtol=1e-10, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)), min_size=1, max_size=2),
       st.sampled_from(["full", "same", "valid"]), st.sampled_from(["direct", "fft"]),
       st.booleans(), st.integers(0, 2**32 - 1))
def test_any_shapes_modes_and_methods(sizes, mode, method, correlation, seed):
    """convolve and correlate of random shapes (either input the larger along each axis, for
    'valid' the larger one on every axis): gradients in both inputs match finite differences."""
    if mode == "valid":  # SciPy requires one input at least as large along every axis
        sizes = [(max(n, m), min(n, m)) for n, m in sizes]
    rng = np.random.default_rng(seed)
    a = rng.standard_normal([n for n, _ in sizes])
    v = rng.standard_normal([m for _, m in sizes])
    name = "correlate" if correlation else "convolve"
    w = rng.standard_normal(np.shape(getattr(signal, name)(a, v, mode)))

    def loss(a, v):  # called through the module, as users write scipy.signal.convolve(...)
        return np.sum(w * getattr(signal, name)(a, v, mode, method) ** 2)

    da, dv = cr.grad(loss, argnums=(0, 1))(a, v)
    np.testing.assert_allclose(da, numeric_gradient(lambda x: loss(x, v), a), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(dv, numeric_gradient(lambda x: loss(a, x), v), rtol=1e-5,
                               atol=1e-7)


# --- closed forms ---------------------------------------------------------------------------------

def test_convolve_closed_form():
    # sum(convolve(a, [1, 2], 'valid')) = a[0] 2 + a[1] 3 + a[2] 1 for a of length 3
    got = cr.grad(lambda a: np.sum(signal.convolve(a, np.array([1.0, 2.0]), "valid")))(
        np.ones(3))
    np.testing.assert_allclose(got, [2.0, 3.0, 1.0])


def test_one_pole_filter_closed_form():
    # y[n] = x[n] + p y[n-1] on an impulse: y[n] = p^n, so d sum(y)/dp = sum n p^(n-1), and
    # a = [1, -p] makes d sum(y)/da[1] its negative
    p, n = 0.6, np.arange(10)
    impulse = np.eye(1, 10)[0]
    got = cr.grad(lambda a: np.sum(signal.lfilter([1.0], a, impulse)))(np.array([1.0, -p]))
    np.testing.assert_allclose(got[1], -np.sum(n[1:] * p ** (n[1:] - 1)), rtol=1e-12)
    # and d sum(y)/da[0]: y[n] = p^n / a0^(n + 1), so the derivative is -sum((n + 1) p^n)
    np.testing.assert_allclose(got[0], -np.sum((n + 1) * p ** n), rtol=1e-12)


def test_lfilter_pullback_in_x_is_the_reversed_filter():
    # the cotangent of x for the output cotangent e_last is the impulse response, reversed
    impulse = np.eye(1, 8)[0]
    response = signal.lfilter(B, A, impulse)
    got = cr.grad(lambda x: signal.lfilter(B, A, x)[-1])(np.zeros(8))
    np.testing.assert_allclose(got, response[::-1], rtol=1e-12, atol=1e-15)


# --- refused options ------------------------------------------------------------------------------

@pytest.mark.parametrize("f, message", [
    (lambda x: signal.convolve2d(x, K2, "same", "wrap"), "convolve2d: boundary='wrap'"),
    (lambda x: signal.correlate2d(x, K2, "full", fillvalue=1.0), "correlate2d: fillvalue=1.0"),
    (lambda x: signal.correlate2d(x[:2, :1] + 0j, K2 + 1j, "valid"), "in2 larger than in1"),
])
def test_refused_options_raise_by_name(f, message):
    with pytest.raises(NotImplementedError, match=message):
        cr.grad(lambda x: np.sum(np.abs(f(x)) ** 2))(X2)


SAVGOL_OPTIONS = [{}, {"deriv": 1}, {"deriv": 2, "delta": 0.5}, {"mode": "mirror"},
                  {"mode": "nearest"}, {"mode": "wrap"}, {"mode": "constant", "cval": 0.3}]


@pytest.mark.parametrize("options", SAVGOL_OPTIONS, ids=str)
def test_savgol_filter_through_its_numpy_version(options):
    # before: AttributeError 'base' from SciPy's convolution; its edges write through views
    import scipy.signal

    samples = np.cos(np.arange(36.0) * 0.7).reshape(9, 4)
    weights = np.arange(36.0).reshape(9, 4)

    def loss(x):
        return np.sum(scipy.signal.savgol_filter(x, 5, 2, axis=0, **options) ** 2 * weights)

    assert cr.vjp(loss, samples)[0] == pytest.approx(loss(samples), rel=1e-13)
    gradient = cr.grad(loss)(samples)
    step = 1e-6
    fd = np.zeros_like(samples)
    for i in range(samples.size):
        e = np.zeros(samples.size)
        e[i] = step
        fd.flat[i] = (loss(samples + e.reshape(9, 4)) - loss(samples - e.reshape(9, 4))) / (
            2 * step)
    np.testing.assert_allclose(gradient, fd, rtol=1e-6, atol=1e-6)
    # affine in x: the Hessian of the weighted square is 2 S^T W S, S the filter's matrix
    flat = lambda v: loss(v.reshape(9, 4))  # noqa: E731
    offset = scipy.signal.savgol_filter(np.zeros((9, 4)), 5, 2, axis=0, **options).ravel()
    columns = np.stack([scipy.signal.savgol_filter(e.reshape(9, 4), 5, 2, axis=0, **options)
                        .ravel() - offset for e in np.eye(36)], axis=1)
    np.testing.assert_allclose(cr.hessian(flat)(samples.ravel()),
                               2 * columns.T @ (weights.ravel()[:, None] * columns),
                               rtol=1e-9, atol=1e-9)


def test_savgol_filter_keeps_single_precision():
    import scipy.signal

    x = np.cos(np.arange(9.0)).astype(np.float32)
    traced = cr.vjp(lambda v: scipy.signal.savgol_filter(v, 5, 2), x)[0]
    assert traced.dtype == np.float32
    np.testing.assert_allclose(traced, scipy.signal.savgol_filter(x, 5, 2), rtol=1e-5,
                               atol=1e-6)


def test_sosfilt_through_its_sections():
    # before: TypeError "a bytes-like object is required, not 'Traced'"
    import scipy.signal

    sos = scipy.signal.butter(4, 0.2, output="sos")
    signal = np.cos(np.arange(20.0) * 0.7)

    def in_signal(x):
        return np.sum(scipy.signal.sosfilt(sos, x) ** 2 * np.arange(20.0))

    assert cr.vjp(in_signal, signal)[0] == pytest.approx(in_signal(signal), rel=1e-13)
    step = 1e-6
    fd = np.array([(in_signal(signal + step * e) - in_signal(signal - step * e)) / (2 * step)
                   for e in np.eye(20)])
    np.testing.assert_allclose(cr.grad(in_signal)(signal), fd, rtol=1e-6, atol=1e-6)
    # in the coefficients (the sections' a0 stay 1, as SciPy requires)
    free = np.ones(sos.shape, bool)
    free[:, 3] = False

    def in_coefficients(c):
        return np.sum(scipy.signal.sosfilt(np.where(free, _placed(c, free), sos), signal) ** 2)

    c = sos[free]
    fd = np.array([(in_coefficients(c + step * e) - in_coefficients(c - step * e)) / (2 * step)
                   for e in np.eye(c.size)])
    np.testing.assert_allclose(cr.grad(in_coefficients)(c), fd, rtol=1e-5, atol=1e-6)
    # with a state per section (before: refused by name), in the signal and the state
    state = np.cos(np.arange(4.0)).reshape(2, 2)

    def with_state(x, zi):
        y, zf = scipy.signal.sosfilt(sos, x, zi=zi)
        return np.sum(np.sin(y) * np.arange(20.0)) + np.sum(zf ** 2)

    for argnum, x in ((0, signal), (1, state)):
        def partial(v, argnum=argnum):
            return with_state(*((v, state) if argnum == 0 else (signal, v)))
        np.testing.assert_allclose(cr.grad(partial)(x), _central(partial, x), rtol=1e-6,
                                   atol=1e-7)


def _placed(values, mask):
    """``values`` at the true entries of ``mask`` (zeros elsewhere), by a gather."""
    order = np.cumsum(mask.ravel()) - 1
    return np.where(mask, np.reshape(values[np.maximum(order, 0)], mask.shape), 0.0)


def _central(f, x, eps=1e-6):
    return np.reshape([(f(x + eps * e.reshape(x.shape)) - f(x - eps * e.reshape(x.shape)))
                       / (2 * eps) for e in np.eye(x.size)], x.shape)


# --- initial conditions: lfilter(zi=), filtfilt, sosfiltfilt ------------------------------------

# Before: lfilter's zi= refused by name, and with it filtfilt and sosfiltfilt (each pass starts
# from a state). Four delays (b longer than a), two (equal lengths), and a FIR filter.
B4, A2 = np.array([0.2, 0.3, -0.1, 0.05, 0.02]), np.array([1.4, -0.5])
LONG, SIGNAL = normal(12), normal(3, 10)
ZI = {
    "zi, b longer, a[0] != 1": (lambda zi: signal.lfilter(B4, A2, LONG, zi=zi), normal(4)),
    "zi, signal shorter than the state": (lambda zi: signal.lfilter(B4, A2, LONG[:2], zi=zi),
                                          normal(4)),
    "zi, FIR": (lambda zi: signal.lfilter(B4, [2.0], LONG[:3], zi=zi), normal(4)),
    "zi broadcast along rows": (lambda zi: signal.lfilter(B, A, SIGNAL, zi=zi), normal(1, 2)),
    "x, with zi, axis 0": (lambda x: signal.lfilter(B, A, x, axis=0, zi=np.ones((2, 3))),
                           SIGNAL.T.copy()),
    "b, with zi": (lambda b: signal.lfilter(b, A2, LONG, zi=np.ones(4)), B4),
    "a, with zi": (lambda a: signal.lfilter(B4, a, LONG[:6], zi=np.ones(4)), A2),
}


def _output_loss(outputs):
    y, zf = outputs
    return np.sum(np.sin(y) * np.arange(np.shape(y)[-1])) + np.sum(np.cos(zf))


@pytest.mark.parametrize("name", ZI)
def test_lfilter_with_initial_conditions(name):
    f, x = ZI[name]
    ours = cr.vjp(f, x)[0]
    for got, expected in zip(ours, f(x)):  # the values are SciPy's: y and the final state
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)

    def loss(v):
        return _output_loss(f(v))

    np.testing.assert_allclose(cr.grad(loss)(x), _central(loss, x), rtol=1e-6, atol=1e-8)


def test_lfilter_with_initial_conditions_at_order_2():
    f, x = ZI["a, with zi"]
    gradient = cr.grad(lambda v: _output_loss(f(v)))
    v = normal(*np.shape(x))
    _, got = cr.jvp(gradient, (x,), (v,))
    eps = 1e-5
    expected = (gradient(x + eps * v) - gradient(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_the_lfilter_rule_itself_refuses_initial_conditions_by_name():
    # an engine runs zi= calls through the version in NumPy operations; the rule (for other
    # engines, as registered on scipy.signal.lfilter) computes the filter from rest only
    with pytest.raises(NotImplementedError, match="lfilter: zi="):
        cr.rrule(signal.lfilter, B, A, LONG, -1, np.zeros(2))


def test_lfilter_initial_conditions_of_the_wrong_shape_are_refused_as_scipy_does():
    for zi in (np.ones(3), np.ones((1, 4))):
        with pytest.raises(ValueError):
            signal.lfilter(B4, A2, LONG, zi=zi)
        with pytest.raises(ValueError, match="zi") as ours:
            cr.grad(lambda x: np.sum(signal.lfilter(B4, A2, x, zi=zi)[0]))(LONG)
        assert str(np.shape(zi)).replace(" ", "") in str(ours.value).replace(" ", "")


FILTFILT = {
    "filtfilt": lambda x: signal.filtfilt(*signal.butter(3, 0.2), x),
    "filtfilt, Gustafsson's method": lambda x: signal.filtfilt(*signal.butter(3, 0.2), x,
                                                               method="gust"),
    "filtfilt along axis 0, padlen": lambda x: signal.filtfilt(*signal.butter(2, 0.3),
                                                               x.reshape(6, 5), axis=0,
                                                               padlen=3),
    "sosfiltfilt": lambda x: signal.sosfiltfilt(signal.butter(4, 0.2, output="sos"), x),
    # the state lfilter_zi computes (by SciPy's array-API solve) times the first sample
    "lfilter from lfilter_zi": lambda x: signal.lfilter(
        B, A, x, zi=signal.lfilter_zi(B, A) * x[0])[0],
}


@pytest.mark.parametrize("name", FILTFILT)
def test_zero_phase_filters(name):
    f = FILTFILT[name]
    x = np.cos(np.arange(30.0) * 0.4) + normal(30)
    np.testing.assert_allclose(cr.vjp(f, x)[0], f(x), rtol=1e-12, atol=1e-13)
    weights = normal(*np.shape(f(x)))

    def loss(v):
        return np.sum(weights * f(v) ** 2)

    np.testing.assert_allclose(cr.grad(loss)(x), _central(loss, x), rtol=1e-6, atol=1e-8)


def test_filtfilt_in_the_denominator():
    # lfilter_zi(b, a) solves (I - companion(a).T) zi = b[1:] - a[1:] b[0] by SciPy's array-API
    # linalg.solve, which calls NumPy's private solver (before: "a traced value was converted")
    b = np.array([0.2, 0.3, 0.1])
    x = np.cos(np.arange(25.0) * 0.5)

    def loss(a_tail):
        return np.sum(signal.filtfilt(b, np.concatenate([[1.0], a_tail]), x) ** 2)

    a_tail = np.array([-0.6, 0.2])
    np.testing.assert_allclose(cr.grad(loss)(a_tail), _central(loss, a_tail), rtol=1e-6,
                               atol=1e-8)


# --- spectral estimates: SciPy fills arrays of its own (its ShortTimeFFT) ----------------------

def _strided_spectra():
    """SciPy before 1.12 cuts segments with as_strided (x.strides): refused by name."""
    import inspect

    helper = getattr(signal._spectral_py, "_fft_helper", None)
    return helper is not None and "x.strides" in inspect.getsource(helper)


SPECTRA = {
    "periodogram": lambda x: signal.periodogram(x)[1],
    "welch": lambda x: signal.welch(x, nperseg=16)[1],
    "welch, median, linear detrend": lambda x: signal.welch(x, nperseg=16, average="median",
                                                            detrend="linear")[1],
    "csd": lambda x: np.abs(signal.csd(x, x[::-1], nperseg=16)[1]),
    "coherence": lambda x: signal.coherence(x, x[::-1] + x, nperseg=16)[1],
    "spectrogram": lambda x: signal.spectrogram(x, nperseg=16)[2],
    "stft": lambda x: np.abs(signal.stft(x, nperseg=16)[2]) ** 2,
}


@pytest.mark.parametrize("name", SPECTRA)
def test_spectral_estimates(name):
    # before: "`S[..., :, p_] = self._fft_func(...)`: a traced value was converted to a plain
    # NumPy array" (SciPy's ShortTimeFFT fills an array it makes), or sliding_window_view's
    # writeable=True refused
    f = SPECTRA[name]
    x = np.cos(np.arange(64.0) * 0.7) + normal(64)
    weights = normal(*np.shape(f(x)))

    def loss(v):
        return np.sum(weights * f(v))

    if _strided_spectra():
        with pytest.raises(cr.TracingError, match="strides"):
            cr.grad(loss)(x)
        return
    assert cr.vjp(loss, x)[0] == pytest.approx(loss(x), rel=1e-12)
    np.testing.assert_allclose(cr.grad(loss)(x), _central(loss, x), rtol=1e-5, atol=1e-8)


def test_periodogram_closed_form():
    # the periodogram of x at a bin k (0 < k < n/2, one-sided, density, fs=1) is
    # 2 |X_k|^2 / n with X the DFT: its gradient is 4 Re(conj(X_k) e^{-2 pi i k m / n}) / n
    if _strided_spectra():
        pytest.skip("SciPy before 1.12: refused by name (test_spectral_estimates)")
    n, k = 16, 3
    x = normal(n)
    X = np.fft.fft(x)[k]
    expected = 4 * np.real(np.conj(X) * np.exp(-2j * np.pi * k * np.arange(n) / n)) / n
    got = cr.grad(lambda v: signal.periodogram(v, detrend=False)[1][k])(x)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


# --- multirate and overlap-add (src/chainrules/rules/scipy/signal/composed.py), the chirp z-
# transform (scipy.fft's backend functions routed) --------------------------------------------

_SIGNAL = np.sin(np.arange(30.0) / 3.0) + 0.1 * np.cos(np.arange(30.0) * 1.7)
_FILTER = np.array([0.3, -0.2, 0.9, 0.4, -0.1])
_BLOCK = np.cos(np.arange(60.0)).reshape(3, 20)
MULTIRATE = {
    # before: "Argument 'data' has incorrect type (expected numpy.ndarray, got Traced)"
    "upfirdn in x": (lambda x: signal.upfirdn(_FILTER, x, 3, 2), _SIGNAL),
    "upfirdn in h": (lambda h: signal.upfirdn(h, _SIGNAL, 2, 3), _FILTER),
    "upfirdn along axis 0": (lambda x: signal.upfirdn(_FILTER, x, 2, 1, axis=0), _BLOCK),
    "resample_poly": (lambda x: signal.resample_poly(x, 2, 3), _SIGNAL),
    "resample_poly along axis 1": (lambda x: signal.resample_poly(x, 3, 2, axis=1), _BLOCK),
    "decimate, FIR": (lambda x: signal.decimate(x, 3, ftype="fir"), _SIGNAL),
    # before: "writing into a view of another array"
    "oaconvolve": (lambda x: signal.oaconvolve(x, _FILTER, mode="same"), _SIGNAL),
    "oaconvolve along axis 1": (lambda x: signal.oaconvolve(x, _BLOCK[:1, :4], axes=1), _BLOCK),
    # before: "`.base` of a traced value" (czt's fft, bound in SciPy's module at import)
    "czt": (lambda x: np.abs(signal.czt(x, 8)), _SIGNAL),
    "zoom_fft": (lambda x: np.abs(signal.zoom_fft(x, [0.1, 0.4])), _SIGNAL),
}


@pytest.mark.parametrize("name", MULTIRATE)
def test_multirate_filters_overlap_add_and_chirp_z(name):
    from tests.ad.finite_differences import numerical_gradient

    function, x = MULTIRATE[name]
    weights = np.cos(np.arange(np.size(function(x)))).reshape(np.shape(function(x)))

    def loss(z):
        return np.sum(weights * function(z) ** 2)

    value, gradient = cr.value_and_grad(loss)(x)
    assert value == pytest.approx(loss(x), rel=1e-10)  # SciPy's values
    np.testing.assert_allclose(gradient, numerical_gradient(loss, x), rtol=1e-6, atol=1e-8)


def test_upfirdn_refuses_other_padding_by_name():
    with pytest.raises(ValueError, match="mode='wrap'"):
        cr.grad(lambda x: np.sum(signal.upfirdn(_FILTER, x, 2, 1, mode="wrap")))(_SIGNAL)


# --- peak finding (src/chainrules/rules/scipy/signal/peaks.py) --------------------------------

_TIME = np.linspace(0.0, 10.0, 200)
_SPECTRUM = np.exp(-(_TIME - 3.0) ** 2) + 0.6 * np.exp(-(_TIME - 6.5) ** 2 / 0.5) + \
    0.05 * np.sin(7 * _TIME)
_PEAKS = signal.find_peaks(_SPECTRUM, prominence=0.1)[0]
PEAK_MEASURES = {
    # before: "a bytes-like object is required, not 'Traced'" (SciPy's Cython)
    "heights": lambda x: signal.find_peaks(x, height=0.2)[1]["peak_heights"],
    "thresholds": lambda x: signal.find_peaks(x, threshold=0.0)[1]["right_thresholds"],
    "prominences": lambda x: signal.find_peaks(x, prominence=0.1)[1]["prominences"],
    "widths": lambda x: signal.find_peaks(x, prominence=0.1, width=1)[1]["widths"],
    "width ends": lambda x: signal.find_peaks(x, prominence=0.1, width=1,
                                              rel_height=0.9)[1]["left_ips"],
    "peak_prominences": lambda x: signal.peak_prominences(x, _PEAKS, wlen=21)[0],
    "peak_widths": lambda x: signal.peak_widths(x, _PEAKS)[0],
    "peak_widths at the base": lambda x: signal.peak_widths(x, _PEAKS, rel_height=1.0)[1],
    "peak_widths, prominences given": lambda x: signal.peak_widths(
        x, _PEAKS, prominence_data=signal.peak_prominences(x, _PEAKS))[3],
}


@pytest.mark.parametrize("name", PEAK_MEASURES)
def test_peak_measures_in_the_signal(name):
    from tests.ad.finite_differences import numerical_gradient

    measure = PEAK_MEASURES[name]

    def loss(x):
        return np.sum(measure(x) ** 2)

    value, gradient = cr.value_and_grad(loss)(_SPECTRUM)
    assert value == pytest.approx(loss(_SPECTRUM), rel=1e-12)  # SciPy's measures
    np.testing.assert_allclose(gradient, numerical_gradient(loss, _SPECTRUM), atol=1e-5)
    peaks = signal.find_peaks(_SPECTRUM, prominence=0.1)[0]
    assert list(peaks) == list(_PEAKS)  # outside a trace: SciPy's own function
