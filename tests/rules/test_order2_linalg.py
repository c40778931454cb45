"""Second derivatives (reverse over reverse) through the linear-algebra, FFT, SciPy and
higher-order rules (rules/numpy/linalg.py, fft.py, scipy/, callables.py).

Each case is a real scalar function ``f`` of one array. The check differentiates
``x -> Re<w, grad f(x)>`` with ``cr.grad`` (the inner pullbacks run on traced values) and
compares its directional derivative along ``v`` with the central finite difference of the
first-order ``cr.grad f`` (trusted: the rule kit checks it against finite differences) along
``v``, in float64. Float32 and complex inputs are checked where NumPy takes them: the second
derivative keeps the input's dtype and matches the float64 (or complex128) finite difference.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrules as cr
from tests.numpy_features import RELEASES

sp = pytest.importorskip("scipy.special")
sla = pytest.importorskip("scipy.linalg")

_rng = np.random.default_rng(20240612)


def normal(*shape, complex_=False):
    x = _rng.standard_normal(shape)
    return x + 1j * _rng.standard_normal(shape) if complex_ else x


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def abs2(z):
    return np.real(z * np.conj(z))


def _inner(a, b) -> float:
    return float(np.real(np.vdot(a, b)))


def assert_second_order(f, x, dtype=None, eps=1e-5, rtol=1e-5, atol=1e-8, seed=0):
    """d/dt Re<w, grad f(x + t v)> at 0 equals Re<grad_x Re<w, grad f(x)>, v>."""
    rng = np.random.default_rng(seed)
    x64 = np.asarray(x)
    complex_ = np.iscomplexobj(x64)

    def direction():
        r = rng.standard_normal(x64.shape)
        return r + 1j * rng.standard_normal(x64.shape) if complex_ else r

    w, v = direction(), direction()
    first = cr.grad(f)
    x_in = x64.astype(dtype) if dtype is not None else x64
    w_in = w.astype(x_in.dtype)
    second = cr.grad(lambda y: np.sum(np.real(np.conj(w_in) * first(y))))(x_in)
    assert np.shape(second) == x64.shape
    assert np.asarray(second).dtype == x_in.dtype
    expected = (_inner(w, first(x64 + eps * v)) - _inner(w, first(x64 - eps * v))) / (2 * eps)
    got = _inner(second, v)
    assert abs(got - expected) <= atol + rtol * abs(expected), (got, expected)


A = normal(3, 3) * 0.3 + 3 * np.eye(3)
A_C = normal(3, 3, complex_=True) * 0.3 + 3 * np.eye(3)
P = A @ A.T / 3 + np.eye(3)
P_C = A_C @ H(A_C) / 3 + np.eye(3)
B, B_C = normal(3, 2), normal(3, 2, complex_=True)
b, b_C = normal(3), normal(3, complex_=True)
M, M_C = normal(4, 3), normal(4, 3, complex_=True)
W = normal(4, 3)
STACK = np.stack([A, A.T])
RHS = normal(2, 3, 2)
T3 = normal(4, 2, 5)
x4, x4_C = normal(4), normal(4, complex_=True)
SINGULAR = np.outer(b, b) + np.outer(B[:, 0], B[:, 1])   # rank 2
L_P = np.linalg.cholesky(P)

# name: (f, x, dtypes to check besides float64 / complex128)
LINALG = {
    "matmul": (lambda a: np.sum((a @ B) ** 2), A, [np.float32]),
    "matmul vector": (lambda a: np.sum((a @ b) ** 3), A, [np.float32]),
    "matmul vector vector": (lambda a: (a @ a) ** 2, b, []),
    "matmul batch": (lambda a: np.sum((a @ STACK) ** 2), normal(2, 3, 3), []),
    "matmul complex": (lambda a: np.sum(abs2(a @ B_C)), A_C, [np.complex64]),
    "dot": (lambda a: np.sum(np.dot(a, B) ** 2), A, [np.float32]),
    "dot scalar": (lambda a: np.sum(np.dot(a, 2.0) ** 3), b, []),
    "inner": (lambda a: np.sum(np.inner(a, a) ** 2), A, []),
    "outer": (lambda a: np.sum(np.outer(a, b) ** 2 * np.outer(a, a)), b, []),
    "vdot complex": (lambda a: np.real(np.vdot(a, b_C)) ** 2, b_C, []),
    "kron complex": (lambda a: np.sum(abs2(np.kron(a, A_C))), A_C, []),
    "tensordot": (lambda a: np.sum(np.tensordot(a, T3, axes=([0, 1], [1, 0])) ** 2),
                  normal(2, 4, 3), []),
    "einsum": (lambda a: np.sum(np.einsum("ij,jk->ik", a, B) ** 2), A, [np.float32]),
    "einsum diagonal": (lambda a: np.sum(np.einsum("ii->i", a) ** 3), A, []),
    "einsum trace": (lambda a: np.einsum("ii", a @ a) ** 2, A, []),
    "einsum ellipsis": (lambda a: np.sum(np.einsum("...ij,...jk", a, a) ** 2), STACK, []),
    "solve": (lambda a: np.sum(np.linalg.solve(a, b) ** 2), A, [np.float32]),
    "solve matrix": (lambda a: np.sum(np.linalg.solve(a, B) ** 2), A, []),
    "solve rhs": (lambda c: np.sum(np.linalg.solve(A, c) ** 3), b, []),
    "solve batch": (lambda a: np.sum(np.linalg.solve(a, RHS) ** 2), STACK, []),
    "solve complex": (lambda a: np.sum(abs2(np.linalg.solve(a, b_C))), A_C, []),
    "inv": (lambda a: np.sum(np.linalg.inv(a) ** 2), A, [np.float32]),
    "inv complex": (lambda a: np.sum(abs2(np.linalg.inv(a))), A_C, []),
    "det": (lambda a: np.linalg.det(a), A, [np.float32]),
    "det batch": (lambda a: np.sum(np.linalg.det(a) ** 2), STACK, []),
    "det complex": (lambda a: abs2(np.linalg.det(a)), A_C, []),
    "det singular": (lambda a: np.linalg.det(a), SINGULAR, []),
    "slogdet": (lambda a: np.linalg.slogdet(a)[1], A, [np.float32]),
    "slogdet complex": (lambda a: np.linalg.slogdet(a)[1], A_C, []),
    "slogdet sign complex": (lambda a: np.real(np.linalg.slogdet(a)[0]), A_C, []),
    "cholesky": (lambda a: np.sum(np.linalg.cholesky(a) ** 3), P, [np.float32]),
    "cholesky upper": (lambda a: np.sum(np.linalg.cholesky(a, upper=True) ** 3), P, []),
    "cholesky complex": (lambda a: np.sum(np.real(np.linalg.cholesky(a) * W[:3]) ** 2), P_C,
                         []),
    "qr": (lambda a: np.sum(np.linalg.qr(a)[0] * M ** 2) + np.sum(np.linalg.qr(a)[1] ** 3), M,
           []),
    "qr wide": (lambda a: np.sum(np.linalg.qr(a)[0] * A ** 2)
                + np.sum(np.linalg.qr(a)[1] ** 3), M.T, []),
    "qr r": (lambda a: np.sum(np.linalg.qr(a, mode="r") ** 3), M, []),
    "qr complex": (lambda a: np.sum(abs2(np.linalg.qr(a)[1]) ** 2), M_C, []),
    "eigh": (lambda a: np.sum(np.linalg.eigh(a)[0] ** 3)
             + np.sum(np.linalg.eigh(a)[1] ** 2 * W[:3]), P, []),
    "eigh upper": (lambda a: np.sum(np.linalg.eigh(a, "U")[0] ** 3), P, []),
    "eigh complex": (lambda a: np.sum(np.linalg.eigh(a)[0] ** 3)
                     + np.sum(abs2(np.linalg.eigh(a)[1]) * W[:3]), P_C, []),
    "eigvalsh": (lambda a: np.sum(np.linalg.eigvalsh(a) ** 3), P, []),
    "svd": (lambda a: np.sum(np.linalg.svd(a)[1] ** 3)
            + np.sum(np.linalg.svd(a, full_matrices=False)[0] ** 2 * M), M, []),
    "svd full": (lambda a: np.sum(np.linalg.svd(a)[2] ** 2 * A), M, []),
    "svd values": (lambda a: np.sum(np.linalg.svd(a, compute_uv=False) ** 3), M, []),
    "svd complex": (lambda a: np.sum(np.linalg.svd(a)[1] ** 3), M_C, []),
    "pinv": (lambda a: np.sum(np.linalg.pinv(a) ** 2), M, []),
    "pinv wide": (lambda a: np.sum(np.linalg.pinv(a) ** 2), M.T, []),
    "pinv hermitian": (lambda a: np.sum(np.linalg.pinv(a, hermitian=True) ** 2), P, []),
    "pinv complex": (lambda a: np.sum(abs2(np.linalg.pinv(a))), M_C, []),
    "matrix_power": (lambda a: np.sum(np.linalg.matrix_power(a, 3) ** 2), A, []),
    "matrix_power negative": (lambda a: np.sum(np.linalg.matrix_power(a, -2) ** 2), A, []),
    "multi_dot": (lambda a: np.sum(np.linalg.multi_dot([a, A, a]) ** 2), A, []),
    "lstsq": (lambda a: np.sum(np.linalg.lstsq(a, np.ones(4), rcond=None)[0] ** 2), M, []),
    "lstsq rhs": (lambda c: np.sum(np.linalg.lstsq(M, c, rcond=None)[0] ** 3), x4, []),
    "lstsq singular values": (
        lambda a: np.sum(np.linalg.lstsq(a, np.ones(4), rcond=None)[3] ** 3), M, []),
    "norm vector complex": (lambda a: np.linalg.norm(a) ** 3, M_C, []),
    "norm axis": (lambda a: np.sum(np.linalg.norm(a, axis=1) ** 3), M, [np.float32]),
}
NORMS = {
    **{f"norm matrix {order}": (lambda a, order=order: np.linalg.norm(a, order) ** 3, M, [])
       for order in [None, "fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf]},
    **{f"norm vector {order}": (lambda a, order=order: np.linalg.norm(a, order) ** 3, x4, [])
       for order in [None, 1, 2, 3, 0.5, np.inf, -np.inf]},
}
SCIPY_LINALG = {
    "expm": (lambda a: np.sum(sla.expm(a) ** 2), A / 3, []),
    "expm complex": (lambda a: np.sum(abs2(sla.expm(a))), A_C / 3, []),
    "expm batch": (lambda a: np.sum(sla.expm(a) ** 2), STACK / 3, []),
    "solve_triangular": (lambda a: np.sum(sla.solve_triangular(a, b, lower=True) ** 2), A, []),
    "solve_triangular rhs": (lambda c: np.sum(sla.solve_triangular(A, c) ** 3), b, []),
    "solve_triangular trans": (lambda a: np.sum(sla.solve_triangular(
        a, B, trans=1, unit_diagonal=True) ** 2), A, []),
    "solve_triangular complex": (lambda a: np.sum(abs2(sla.solve_triangular(
        a, b_C, trans="C"))), A_C, []),
    "cho_solve": (lambda c: np.sum(sla.cho_solve((c, True), b) ** 2), L_P, []),
    "cho_solve upper": (lambda c: np.sum(sla.cho_solve((c, False), B) ** 2), L_P.T, []),
    "cho_solve rhs": (lambda c: np.sum(sla.cho_solve((L_P, True), c) ** 3), b, []),
}
FFT = {
    **{kind: (lambda a, kind=kind: np.sum(np.abs(getattr(np.fft, kind)(a)) ** 3), x4,
              [np.float32]) for kind in ["fft", "ifft", "rfft"]},
    **{kind + " complex n": (lambda a, kind=kind: np.sum(np.abs(getattr(np.fft, kind)(
        a, n=6, norm="ortho")) ** 3), x4_C, []) for kind in ["fft", "ifft"]},
    "rfft cut": (lambda a: np.sum(np.abs(np.fft.rfft(a, n=3, norm="forward")) ** 3), x4, []),
    "irfft": (lambda a: np.sum(np.fft.irfft(a) ** 3), x4_C, []),
    "irfft n": (lambda a: np.sum(np.fft.irfft(a, n=7, norm="forward") ** 3), x4_C, []),
    "fft2": (lambda a: np.sum(np.abs(np.fft.fft2(a)) ** 3), M, []),
    "ifft2": (lambda a: np.sum(np.abs(np.fft.ifft2(a)) ** 3), M_C, []),
    "fftn s": (lambda a: np.sum(np.abs(np.fft.fftn(a, s=(3, 4), axes=(0, 1))) ** 3), M_C, []),
    "rfft2": (lambda a: np.sum(np.abs(np.fft.rfft2(a)) ** 3), M, []),
    "rfftn": (lambda a: np.sum(np.abs(np.fft.rfftn(a)) ** 3), M, []),
    "irfft2": (lambda a: np.sum(np.fft.irfft2(a) ** 3), M_C, []),
    "irfftn axes": (lambda a: np.sum(np.fft.irfftn(a, axes=(0, 1)) ** 3), M_C, []),
}
SPECIAL = {
    "gammaln": (lambda a: np.sum(sp.gammaln(a + 5) ** 2), x4, [np.float32]),
    "digamma": (lambda a: np.sum(sp.digamma(a + 5) ** 2), x4, []),
    "digamma complex": (lambda a: np.sum(abs2(sp.digamma(a + 5))), x4_C, []),
    "polygamma": (lambda a: np.sum(sp.polygamma(2, a + 5) ** 2), x4, []),
    "erf": (lambda a: np.sum(sp.erf(a) ** 2), x4, [np.float32]),
    "erfc": (lambda a: np.sum(sp.erfc(a) ** 2), x4, []),
    "expit": (lambda a: np.sum(sp.expit(a) ** 2), x4, [np.float32]),
    "logit": (lambda a: np.sum(sp.logit(a) ** 3), np.array([0.2, 0.4, 0.6, 0.7]), []),
    "xlogy": (lambda a: np.sum(sp.xlogy(a, a + 5) ** 2), x4, []),
    "xlogy zeros": (lambda a: np.sum(sp.xlogy(np.array([0.0, 1, 2, 0]), a + 5) ** 2), x4, []),
    "logsumexp": (lambda a: sp.logsumexp(a) ** 2, x4, [np.float32]),
    "logsumexp axis b": (lambda a: np.sum(sp.logsumexp(a, axis=0, b=np.arange(1.0, 4.0)) ** 2),
                         M, []),
    "logsumexp weights": (lambda c: sp.logsumexp(x4, b=c + 3) ** 2, x4, []),
    "logsumexp keepdims": (lambda a: np.sum(sp.logsumexp(a, axis=1, keepdims=True) ** 3), M,
                           []),
    "logsumexp complex": (lambda a: abs2(sp.logsumexp(a)), x4_C, []),
    # log|s| and the sign: a negative sum, and (complex s) the phase
    "logsumexp signed": (lambda a: _signed_log_sum(a, np.array([1.0, -3.0, 0.5, 1.0])), x4,
                         [np.float32]),
    "logsumexp phase": (lambda a: _signed_log_sum(a, None), x4_C, []),
    "softmax": (lambda a: np.sum(sp.softmax(a) ** 3), x4, [np.float32]),
    "softmax axis": (lambda a: np.sum(sp.softmax(a, axis=0) ** 3), M, []),
    "softmax complex": (lambda a: np.sum(abs2(sp.softmax(a))), x4_C, []),
    "log_softmax": (lambda a: np.sum(sp.log_softmax(a, axis=1) ** 3), M, [np.float32]),
}


def _signed_log_sum(a, b):
    """A real function of logsumexp(..., return_sign=True)'s two outputs (SciPy 1.11 returns
    the complex log of a complex sum, and a sign of 1, where later releases return log|s|)."""
    log_magnitude, sign = sp.logsumexp(a, b=b, return_sign=True)
    return abs2(log_magnitude) + np.real(sign * (0.3 - 0.7j)) * np.real(log_magnitude)


HIGHER_ORDER = {
    "piecewise": (lambda a: np.sum(np.piecewise(a, [a < 0], [lambda t: t ** 3,
                                                             lambda t: np.sin(t) * t])), x4, []),
    "piecewise constant and default": (lambda a: np.sum(np.piecewise(
        a, [a < -0.5, a > 0.5], [2.0, lambda t: np.exp(t) ** 2]) * a ** 2), x4, []),
}
# Every rule here is run through the kit (first order) by its family's test module.
CASES: list = []
ALL = {**LINALG, **NORMS, **SCIPY_LINALG, **FFT, **SPECIAL, **HIGHER_ORDER}


def _skip_if_refused(f, x):
    """Skip where the installed NumPy/SciPy refuses the plain call (a newer keyword such as
    cholesky(upper=), SciPy's stacks of matrices before 1.16), saying why."""
    try:
        f(np.array(x, copy=True))
    except (TypeError, ValueError) as error:
        pytest.skip(f"not in {RELEASES}: {type(error).__name__}: {error}")


@pytest.mark.parametrize("name", list(ALL))
def test_reverse_over_reverse(name):
    f, x, _ = ALL[name]
    _skip_if_refused(f, x)
    assert_second_order(f, x)


@pytest.mark.parametrize("name", [name for name, (_, _, dtypes) in ALL.items() if dtypes])
def test_reverse_over_reverse_single_precision(name):
    f, x, dtypes = ALL[name]
    _skip_if_refused(f, x)
    for dtype in dtypes:
        assert_second_order(f, x, dtype=dtype, rtol=3e-3, atol=1e-4)


@pytest.mark.parametrize("x", [0.7, 2.5, -1.5, 12.0])
def test_gammaln_third_and_fourth_derivatives(x):
    # log|Gamma|''' = polygamma(2, x), '''' = polygamma(3, x) (SciPy's values, not ours).
    third = cr.grad(cr.grad(cr.grad(sp.gammaln)))
    fourth = cr.grad(third)
    assert np.isclose(third(x), sp.polygamma(2, x), rtol=1e-10)
    assert np.isclose(fourth(x), sp.polygamma(3, x), rtol=1e-10)


def test_digamma_second_derivative_array():
    x = np.array([0.3, 1.7, 4.0, -2.5])
    hessian_diagonal = cr.grad(lambda y: np.sum(cr.grad(lambda z: np.sum(sp.digamma(z)))(y)))
    assert np.allclose(hessian_diagonal(x), sp.polygamma(2, x), rtol=1e-10)


def test_polygamma_derivative_is_next_order():
    x = np.array([0.6, 2.0, 5.5])
    for n in range(4):
        assert np.allclose(cr.grad(lambda y: np.sum(sp.polygamma(n, y)))(x),
                           sp.polygamma(n + 1, x), rtol=1e-10)


def test_logsumexp_hessian_closed_form():
    # The Hessian of logsumexp is diag(s) - s s^T with s = softmax(x).
    x = np.array([0.1, -1.2, 0.7])
    s = np.exp(x - sp.logsumexp(x))
    rows = [cr.grad(lambda y, i=i: cr.grad(sp.logsumexp)(y)[i])(x) for i in range(3)]
    assert np.allclose(np.stack(rows), np.diag(s) - np.outer(s, s), rtol=1e-12)


def test_log_det_hessian_closed_form():
    # d^2 log det(a) [u, v] = -tr(a^-1 u a^-1 v).
    u, v = normal(3, 3), normal(3, 3)
    second = cr.grad(lambda a: np.sum(cr.grad(lambda c: np.linalg.slogdet(c)[1])(a) * u))(A)
    a_inv = np.linalg.inv(A)
    assert np.isclose(np.sum(second * v), -np.trace(a_inv @ u @ a_inv @ v), rtol=1e-10)
