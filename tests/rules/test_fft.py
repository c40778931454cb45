"""Rules for the FFT (chainrules.rules.numpy.fft): every transform checked by the rule-testing kit
against finite differences, for every norm, with cut and padded lengths (``n``/``s``), axes in
any order, real and complex inputs in single and double precision; then closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from chainrules import NoTangent, ZeroTangent, frule, rrule, unthunk
from chainrules.testing import case, check_case, rand_primal
from tests.numpy_features import SINGLE_PRECISION_FFT, needs

_rng = np.random.default_rng(20240612)
F64, F32, C128, C64 = np.float64, np.float32, np.complex128, np.complex64
NORMS = (None, "backward", "ortho", "forward")


def normal(*shape, dtype=F64):
    return rand_primal("array", _rng, dtype, shape)


fft = np.fft
ONE_D = [
    # (function, input dtypes, n values): n shorter, equal, longer, odd and even
    (fft.fft, (F64, C128), (None, 3, 8)),
    (fft.ifft, (F64, C128), (None, 4, 7)),
    (fft.rfft, (F64,), (None, 5, 8, 4)),
    (fft.irfft, (C128, F64), (None, 5, 8, 3)),
]
N_D = [
    # (function, input dtypes, (s, axes) pairs)
    (fft.fftn, (F64, C128), [(None, None), ((3, 4), None), ((5, 2), (0, 1)), (None, (0,)),
                             (None, (1, 0)), ((3, 6), (-1, 0))]),
    (fft.ifftn, (C128,), [(None, None), ((2, 5), (1, 0)), ((3,), (-1,))]),
    (fft.rfftn, (F64,), [(None, None), ((3, 4), (0, 1)), ((5,), (0,)), (None, (1, 0)),
                         ((4, 3), (-1, 0))]),
    (fft.irfftn, (C128, F64), [(None, None), ((3, 4), (0, 1)), ((4,), (0,)), (None, (1, 0)),
                               ((5, 3), (-1, 0))]),
    (fft.fft2, (C128,), [(None, (-2, -1)), ((3, 2), (-2, -1)), (None, (1, 0))]),
    (fft.ifft2, (C128,), [(None, (-2, -1)), ((4, 3), (0, 1))]),
    (fft.rfft2, (F64,), [(None, (-2, -1)), ((3, 5), (-2, -1)), (None, (1, 0))]),
    (fft.irfft2, (C128,), [(None, (-2, -1)), ((3, 4), (-2, -1)), (None, (1, 0))]),
]

CASES = [
    *[case(f, normal(6, dtype=t), n, norm=norm) for f, types, ns in ONE_D for t in types
      for n in ns for norm in NORMS],
    *[case(f, normal(2, 5, dtype=t), n, 0, norm="ortho") for f, types, ns in ONE_D
      for t in types for n in ns[:2]],
    *[case(f, normal(3, 4, dtype=t), s, axes, norm=norm) for f, types, options in N_D
      for t in types for s, axes in options for norm in (None, "ortho", "forward")],
    case(fft.fftn, normal(2, 3, 4, dtype=C128), axes=(0, 2), norm="ortho"),
    case(fft.rfftn, normal(2, 3, 4), s=(3, 2, 6)),
    case(fft.irfftn, normal(2, 3, 4, dtype=C128), (3, 4), (0, 2)),
    # an axis transformed twice (NumPy allows it), with cuts between the passes
    case(fft.fftn, normal(3, 4, dtype=C128), (2, 5), (1, 1)),
    case(fft.irfftn, normal(3, 4, dtype=C128), (4, 5), (1, 1), norm="ortho"),
    # single precision stays single precision
    *[case(f, normal(8, dtype=t)) for f, t in ((fft.fft, F32), (fft.fft, C64), (fft.ifft, C64),
                                              (fft.rfft, F32), (fft.irfft, C64))],
    case(fft.rfft2, normal(4, 4, dtype=F32), norm="ortho"),
    case(fft.irfftn, normal(3, 4, dtype=C64), norm="forward"),
    # keyword-only options
    case(fft.fft, normal(5, dtype=C128), n=6, axis=0),
    case(fft.irfft, normal(2, 4, dtype=C128), axis=0, n=3),
    # shifts: permutations of the frequencies
    case(fft.fftshift, normal(5)),
    case(fft.fftshift, normal(4, 5, dtype=C128), axes=(0, 1)),
    case(fft.ifftshift, normal(4, 5, dtype=F32), 1),
    case(fft.ifftshift, normal(3, dtype=C64)),
    # Hermitian transforms: hfft (Hermitian input, real output) and ihfft (real input)
    case(fft.hfft, normal(5, dtype=C128)),
    case(fft.hfft, normal(5, dtype=C128), 9),
    case(fft.hfft, normal(3, 4, dtype=C128), 7, 0, "ortho"),
    case(fft.hfft, normal(4), norm="forward"),
    case(fft.ihfft, normal(6)),
    case(fft.ihfft, normal(3, 5), 4, norm="ortho"),
    case(fft.ihfft, normal(4, 3), axis=0, norm="forward"),
]


@pytest.mark.filterwarnings("ignore:`axes` should not be `None`:DeprecationWarning")
@pytest.mark.parametrize("rule_case", CASES, ids=lambda c: c.id)
def test_fft_rule(rule_case):
    check_case(rule_case)


@pytest.mark.parametrize("n", [6, 7])
def test_rfft_pullback_closed_form(n):
    # rfft = R F with F the DFT matrix and R keeping the first n//2+1 rows: for a real input
    # the cotangent is Re(F^H R^T dy)
    x = normal(n)
    dy = normal(n // 2 + 1, dtype=C128)
    F = np.exp(-2j * np.pi * np.outer(np.arange(n), np.arange(n)) / n)
    _, pullback = rrule(fft.rfft, x)
    np.testing.assert_allclose(pullback(dy)[1], np.real(F[: n // 2 + 1].conj().T @ dy),
                               atol=1e-12)


@pytest.mark.parametrize("n", [6, 7])
def test_irfft_pullback_closed_form(n):
    # irfft(a)[j] = (1/n) Re(sum_k v_k a_k e^{2 pi i jk/n}), v_k = 1 at 0 (and n/2), else 2:
    # the cotangent of a is v_k (1/n) sum_j dy_j e^{-2 pi i jk/n}
    m = n // 2 + 1
    a, dy = normal(m, dtype=C128), normal(n)
    v = np.full(m, 2.0)
    v[0] = 1.0
    if n % 2 == 0:
        v[-1] = 1.0
    E = np.exp(-2j * np.pi * np.outer(np.arange(m), np.arange(n)) / n)
    _, pullback = rrule(fft.irfft, a, n)
    np.testing.assert_allclose(pullback(dy)[1], v * (E @ dy) / n, atol=1e-12)


@needs(SINGLE_PRECISION_FFT, "single-precision FFTs (NumPy 2.0)")
def test_fft_is_its_own_frule_and_keeps_single_precision():
    x, dx = normal(8, dtype=F32), normal(8, dtype=F32)
    y, dy = frule((NoTangent(), dx, NoTangent()), fft.fft, x, None)
    assert dy.dtype == C64
    np.testing.assert_allclose(dy, fft.fft(dx), rtol=1e-6)


def test_zero_cotangent_short_circuits():
    _, pullback = rrule(fft.rfftn, normal(3, 4), None, (0, 1))
    assert pullback(ZeroTangent()) == (NoTangent(), ZeroTangent(), NoTangent(), NoTangent())


def test_out_is_refused():
    with pytest.raises(TypeError, match="numpy.fft.fft: the out= argument"):
        rrule(fft.fft, normal(4), out=np.zeros(4, C128))
    with pytest.raises(TypeError, match="numpy.fft.irfftn: the out= argument"):
        frule((NoTangent(), normal(4, dtype=C128)), fft.irfftn, normal(4, dtype=C128),
              out=np.zeros(6))


def test_real_input_gets_real_cotangent():
    _, pullback = rrule(fft.fft, normal(4))
    cotangent = unthunk(pullback(normal(4, dtype=C128))[1])
    assert cotangent.dtype == F64


@pytest.mark.parametrize("f", [fft.fftshift, fft.ifftshift])
def test_shifts_at_order_2(f):
    from chainrules.testing import test_rrule_order2
    from tests.second_order import assert_jvp_of_grad

    test_rrule_order2(f, normal(4, 5), axes=0)
    weights = normal(4, 5)
    assert_jvp_of_grad(lambda x: np.sum(weights * f(x) ** 3), normal(4, 5))


def test_hfft_is_irfft_of_the_conjugate():
    """hfft(a, n) = n irfft(conj(a), n): the gradients of w . hfft(a) are the closed form
    n conj(irfft-adjoint(w)), checked against finite differences in Re and Im."""
    from chainrules.testing import fd_vjp
    import chainrules as cr
    a, w = normal(4, dtype=C128), normal(6)
    np.testing.assert_allclose(fft.hfft(a, 6), 6 * fft.irfft(np.conj(a), 6))
    gradient = cr.grad(lambda a: np.sum(w * fft.hfft(a, 6)))(a)
    np.testing.assert_allclose(gradient, fd_vjp(lambda a: np.sum(w * fft.hfft(a, 6)), 1.0, a)[1],
                               atol=1e-7)
