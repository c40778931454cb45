"""Elementwise rules: one line per ufunc, the derivative formula as a function of (y, *args).

Holomorphic functions use `scalar_rule` (which applies ``conj`` to the partial in the pullback).
Functions that are not holomorphic on complex inputs (``abs``, ``real``, ``imag``, ``conj``,
``angle``) have their own short rules below.
"""

from __future__ import annotations

import operator

import numpy as np

from ...core.broadcast import unbroadcast
from ...core.dtypes import as_array
from ...core.projection import ProjectTo
from ...core.registry import (NUMBER_FORMS, NumberForm, dual_form, frule, non_differentiable,
                              rrule)
from ...core.scalar_rule import number_pairs, scalar_rule
from ...core.tangents import AbstractZero, NoTangent, ZeroTangent
from ...core.thunks import unthunk


def _safe_log(a):
    """log(a), with 0 where a == 0 (the limit that d(a**b)/db = a**b log(a) takes there)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(np.where(np.asarray(a) == 0, 1, a))


def _sinc_derivative(y, x):
    """d sinc(x)/dx = (cos(pi x) - sinc(x)) / x; its Taylor series near 0, where that cancels
    (so the derivative is 0 at x == 0 and accurate next to it)."""
    t = np.pi * np.asarray(x)
    near_zero = np.abs(t) < 0.1
    # The quotient divides by 1 where the series is taken: finite there, so its derivative
    # (second derivatives, where np.where's pullback multiplies it by 0) is no NaN either.
    quotient = (np.cos(t) - y) / np.where(near_zero, np.ones_like(x), x)
    t2 = t * t
    series = -np.pi * t / 3 * (1 - t2 / 10 * (1 - t2 / 28 * (1 - t2 / 54 * (1 - t2 / 88))))
    return np.where(near_zero, series, quotient)


def _power_base(y, a, b):
    """d(a ** b)/da: `_power_derivative`, with the x ** 2 of scalar loops first."""
    if type(b) is int and b > 0:
        return a + a if b == 2 else b * a ** (b - 1)  # a + a == 2 * a exactly, and faster
    return _power_derivative(a, b, operator.pow)


def _power_derivative(a, b, power):
    """d power(a, b)/da = b power(a, b - 1), and exactly 0 where b == 0 (as in JAX).

    That is the derivative of the function NumPy computes, in its precision and with its
    warnings: 1 for ``x ** 1`` and ``x ** 1.0`` at ``x == 0``, 0 for ``x ** 2`` and ``x ** 0``
    there, ``inf`` with NumPy's RuntimeWarning for ``x ** 0.5``. scalar_rule passes Python
    floats as NumPy scalars, so this is NumPy's arithmetic throughout.
    """
    if getattr(b, "ndim", 0) == 0:  # one exponent (b may be traced: second derivatives)
        if b == 0:  # b * power(a, -1) would be 0 * inf at a == 0
            return np.zeros(np.shape(a), np.result_type(a, b))[()]
        # b - 1 in b's own type: a float32 exponent minus a Python int is float64 on NumPy 1
        return b * power(a, b - (type(b)(1) if issubclass(type(b), np.generic) else 1))
    zero = b == 0
    if not zero.any():
        # b - 1 in b's own type: a float32 exponent minus a Python int is float64 on NumPy 1
        return b * power(a, b - (type(b)(1) if issubclass(type(b), np.generic) else 1))
    return np.where(zero, 0, b * power(a, np.where(zero, 1, b - 1)))


def _power_base_base(y, a, b):
    """d2(a ** b)/da2 = b d(a ** (b - 1))/da: 0 where b == 1 (the first derivative's
    convention), and exactly 0 where b == 0, where the first derivative is 0 for every a
    (not 0 * inf at a == 0: ``x ** 0`` in a polynomial evaluated at 0)."""
    if type(b) is int and 0 <= b <= 3:  # x ** 2 and x ** 3: constants, without a power
        return (0, 0, 2)[b] if b < 3 else 6 * a
    one = type(b)(1) if issubclass(type(b), np.generic) else 1
    if getattr(b, "ndim", 0) == 0:
        if b == 0:
            return np.zeros(np.shape(a), np.result_type(a, b))[()]
        return b * _power_base(None, a, b - one)
    zero = b == 0
    if not zero.any():
        return b * _power_base(None, a, b - one)
    return np.where(zero, 0, b * _power_base(None, a, np.where(zero, 2, b) - one))


def _power_base_exponent(y, a, b):
    """d2(a ** b)/da db = a ** (b - 1) (1 + b log a); 0 where a == 0, where the derivative
    in b, ``y log a``, is taken as 0 (`_safe_log`), as the traced rule gives."""
    one = type(b)(1) if issubclass(type(b), np.generic) else 1
    zero = np.asarray(a) == 0
    if not zero.any():
        return a ** (b - one) * (1 + b * _safe_log(a))
    return np.where(zero, 0, np.where(zero, 1, a) ** (b - one) * (1 + b * _safe_log(a)))[()]


# --- the table: function, then d/d(argument) for each argument; second= the second partials,
# which forward over reverse (hvp) uses to run each rule once on values and tangents ----------

scalar_rule(np.add, 1, 1, on_scalars=operator.add)
scalar_rule(np.subtract, 1, -1, on_scalars=operator.sub)
scalar_rule(np.multiply, lambda y, a, b: b, lambda y, a, b: a, on_scalars=operator.mul,
            second=(0, 1, 0))
scalar_rule(np.divide, lambda y, a, b: 1 / b, lambda y, a, b: -y / b,
            on_scalars=operator.truediv,
            second=(0, lambda y, a, b: -1 / (b * b), lambda y, a, b: 2 * y / (b * b)))
scalar_rule(np.power, _power_base, lambda y, a, b: y * _safe_log(a), on_scalars=operator.pow,
            second=(_power_base_base, _power_base_exponent,
                    lambda y, a, b: y * _safe_log(a) ** 2))
scalar_rule(np.float_power, lambda y, a, b: _power_derivative(a, b, np.float_power),
            lambda y, a, b: y * _safe_log(a))
scalar_rule(np.negative, -1, on_scalars=operator.neg)
scalar_rule(np.positive, 1)
scalar_rule(np.reciprocal, lambda y, x: -y * y, second=lambda y, x: 2 * y * y * y)
scalar_rule(np.square, lambda y, x: 2 * x, second=2)
scalar_rule(np.sqrt, lambda y, x: 0.5 / y, second=lambda y, x: -0.25 / (y * y * y))
scalar_rule(np.cbrt, lambda y, x: 1 / (3 * y * y))
scalar_rule(np.exp, lambda y, x: y, second=lambda y, x: y)
scalar_rule(np.exp2, lambda y, x: y * np.log(2))
scalar_rule(np.expm1, lambda y, x: y + 1, second=lambda y, x: y + 1)
scalar_rule(np.log, lambda y, x: 1 / x, second=lambda y, x: -1 / (x * x))
scalar_rule(np.log2, lambda y, x: 1 / (x * np.log(2)))
scalar_rule(np.log10, lambda y, x: 1 / (x * np.log(10)))
scalar_rule(np.log1p, lambda y, x: 1 / (1 + x), second=lambda y, x: -1 / ((1 + x) * (1 + x)))
scalar_rule(np.logaddexp, lambda y, a, b: _in_place(np.exp, a - y),
            lambda y, a, b: _in_place(np.exp, b - y))
scalar_rule(np.logaddexp2, lambda y, a, b: _in_place(np.exp2, a - y),
            lambda y, a, b: _in_place(np.exp2, b - y))
scalar_rule(np.sin, lambda y, x: np.cos(x), second=lambda y, x: -y)
scalar_rule(np.cos, lambda y, x: -np.sin(x), second=lambda y, x: -y)
scalar_rule(np.tan, lambda y, x: 1 + y * y, second=lambda y, x: 2 * y * (1 + y * y))
scalar_rule(np.arcsin, lambda y, x: 1 / np.sqrt(1 - x * x))
scalar_rule(np.arccos, lambda y, x: -1 / np.sqrt(1 - x * x))
scalar_rule(np.arctan, lambda y, x: 1 / (1 + x * x),
            second=lambda y, x: -2 * x / ((1 + x * x) * (1 + x * x)))
scalar_rule(np.sinc, _sinc_derivative)
scalar_rule(np.sinh, lambda y, x: np.cosh(x), second=lambda y, x: y)
scalar_rule(np.cosh, lambda y, x: np.sinh(x), second=lambda y, x: y)
scalar_rule(np.tanh, lambda y, x: 1 - y * y, second=lambda y, x: -2 * y * (1 - y * y))
scalar_rule(np.arcsinh, lambda y, x: 1 / np.sqrt(x * x + 1))
scalar_rule(np.arccosh, lambda y, x: 1 / np.sqrt(x * x - 1))
scalar_rule(np.arctanh, lambda y, x: 1 / (1 - x * x))
scalar_rule(np.arctan2, lambda y, a, b: b / (a * a + b * b), lambda y, a, b: -a / (a * a + b * b))
scalar_rule(np.hypot, lambda y, a, b: a / y, lambda y, a, b: b / y)
scalar_rule(np.deg2rad, lambda y, x: np.pi / 180, second=0)
scalar_rule(np.radians, lambda y, x: np.pi / 180, second=0)
scalar_rule(np.rad2deg, lambda y, x: 180 / np.pi, second=0)
scalar_rule(np.degrees, lambda y, x: 180 / np.pi, second=0)
scalar_rule(np.heaviside, lambda y, a, b: 0 * a, lambda y, a, b: np.where(np.asarray(a) == 0, 1.0, 0.0))
# on_scalars: the ufunc itself (NaNs and signed zeros as NumPy treats them), so that numbers
# take the NumberForm path of scalar loops (np.maximum(x[i], 0.0))
scalar_rule(np.maximum, lambda y, a, b: _ties(a, b, np.greater), lambda y, a, b: _ties(b, a, np.greater),
            second=(0, 0, 0), on_scalars=np.maximum)
scalar_rule(np.minimum, lambda y, a, b: _ties(a, b, np.less), lambda y, a, b: _ties(b, a, np.less),
            second=(0, 0, 0), on_scalars=np.minimum)
scalar_rule(np.fmax, lambda y, a, b: _ties(a, b, np.greater), lambda y, a, b: _ties(b, a, np.greater),
            on_scalars=np.fmax)
scalar_rule(np.fmin, lambda y, a, b: _ties(a, b, np.less), lambda y, a, b: _ties(b, a, np.less),
            on_scalars=np.fmin)


def _in_place(ufunc, temporary):
    """``ufunc(temporary)`` computed into ``temporary`` when it is a float array the partial
    just made (one allocation fewer); else as it is (numbers, traced values at order 2)."""
    if type(temporary) is np.ndarray and temporary.dtype.kind in "fc":
        return ufunc(temporary, out=temporary)
    return ufunc(temporary)


def _ties(a, b, better):
    """1 where ``a`` wins, 1/2 where they tie (the gradient is split evenly), else 0."""
    kind = type(a) if type(a) in _REAL_NUMBERS else type(b) if type(b) in _REAL_NUMBERS \
        else None
    if kind is not None and type(a) in _PYTHON_OR_REAL and type(b) in _PYTHON_OR_REAL:
        # two numbers (a scalar loop's): a number of their NumPy type, without array calls
        wins = a > b if better is np.greater else a < b
        return kind(1.0 if wins else 0.5 if a == b else 0.0)
    return np.where(better(a, b), 1.0, np.where(as_array(a) == b, 0.5, 0.0))


_REAL_NUMBERS = frozenset({np.float64, np.float32, np.float16})
_PYTHON_OR_REAL = _REAL_NUMBERS | {float, int}


# --- non-holomorphic functions of complex numbers --------------------------------------------

def _unary_rule(f, pullback_of):
    """Register ``rrule(f, x)`` whose cotangent is ``pullback_of(x, y, dy)``, projected."""
    def reverse(x, **kwargs):
        y = f(x, **kwargs)
        project = ProjectTo(x)

        def pullback(dy):
            dy = unthunk(dy)
            if isinstance(dy, AbstractZero):
                return NoTangent(), ZeroTangent()
            return NoTangent(), project(pullback_of(x, y, dy))

        return y, pullback

    rrule.register(f, replace=True)(reverse)


def _unary_frule(f, pushforward_of):
    """Register ``frule(f, x)`` whose tangent is ``pushforward_of(x, y, dx)``, projected."""
    def forward(tangents, x, **kwargs):
        y = f(x, **kwargs)
        dx = unthunk(tangents[1])
        if isinstance(dx, AbstractZero):
            return y, ZeroTangent()
        return y, ProjectTo(y)(pushforward_of(x, y, dx))

    forward.elementwise_pushforward = pushforward_of  # broadcasts a batch of tangents too
    frule.register(f, replace=True)(forward)


def _abs_pullback(x, y, dy):
    with np.errstate(invalid="ignore", divide="ignore"):
        if np.iscomplexobj(x):
            return np.where(y == 0, 0, np.real(dy) * x / np.where(y == 0, 1, y))
        return np.real(dy) * np.sign(x)


def _abs_pushforward(x, y, dx):
    with np.errstate(invalid="ignore", divide="ignore"):
        if np.iscomplexobj(x):
            return np.where(y == 0, 0, np.real(np.conj(x) * dx) / np.where(y == 0, 1, y))
        return np.real(np.sign(x) * dx)


for _f in (np.abs, np.absolute, np.fabs):
    _unary_rule(_f, _abs_pullback)
    _unary_frule(_f, _abs_pushforward)


def _abs_partial(y, x):
    """d|x|/dx on real values, as the rule's pullback reads it: sign(x) (0 at 0, NaN at NaN);
    on two numbers without a ufunc call, of the number's own type."""
    if type(x) is np.ndarray:
        return np.sign(x)
    signs = _SIGNS.get(type(x))
    if signs is None:
        return np.sign(x)
    return signs[0] if x > 0 else signs[1] if x < 0 else x - x


_SIGNS = {kind: (kind(1.0), kind(-1.0)) for kind in (np.float64, np.float32)}


def _abs_form(f):
    """The `NumberForm` of ``abs`` on real numbers and small real arrays (an engine records
    by it only float64 and float32 values: complex ones take the rule), so that ``abs(x[i])``
    in a scalar loop is a record of plain values; its pullback, for any other cotangent, is
    the rule's own."""
    rule = rrule._rules[f][0]
    return NumberForm(rule, abs, (_abs_partial,), False, lambda payload: rule(payload[1])[1],
                      pullback_dual=number_pairs((_abs_partial,)))  # (under hvp)


def _abs_dual(rule):
    """The dual form of ``abs`` on real values (``hvp``): ``sign(x)`` times the cotangent
    and times its tangent (the second derivative is zero wherever it exists); complex values
    take the rule."""
    def dual(args: tuple, tangents: tuple, kwargs: dict):
        if kwargs or len(args) != 1:
            return None
        x = args[0]
        if not (type(x) is np.ndarray and x.dtype.kind == "f" or type(x) in _REAL_FLOATS):
            return None
        y, pullback = rule(x)
        sign = _abs_partial(y, x)
        project = ProjectTo(x)

        def pullback_dual(dy, ddy, needed):
            if not needed[0]:
                return (None,)
            return ((project(sign * dy), None if ddy is None else project(sign * ddy)),)

        dx = tangents[0]
        return y, ZeroTangent() if dx is None else ProjectTo(y)(sign * dx), pullback, \
            pullback_dual

    return dual


_REAL_FLOATS = frozenset({float, np.float64, np.float32, np.float16})

for _f in (np.absolute, np.fabs):
    NUMBER_FORMS[_f] = _abs_form(_f)
    dual_form(_f, NUMBER_FORMS[_f].rule, _abs_dual(NUMBER_FORMS[_f].rule))


# NumPy 2 defines sign(z) = z/|z| for complex z; NumPy 1, the sign of Re(z) (locally constant).
_SIGN_IS_PHASE = bool(np.sign(1j) == 1j)


def _sign_derivative(x, y, d):
    # sign(z) = z/|z| is locally constant on reals but not on complex numbers. Its derivative
    # d -> d/|z| - Re(conj(d) z) z/|z|^3 (0 at z == 0, as for reals) is self-adjoint in the
    # real inner product Re(conj(a) b), so it is both the pullback and the pushforward.
    if not (_SIGN_IS_PHASE and np.iscomplexobj(x)):
        return 0 * np.real(d)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.abs(x)
        safe = np.where(r == 0, 1, r)
        return np.where(r == 0, 0, d / safe - np.real(np.conj(d) * x) * x / safe ** 3)


_unary_rule(np.sign, _sign_derivative)
_unary_frule(np.sign, _sign_derivative)
_unary_rule(np.real, lambda x, y, dy: np.real(dy))
_unary_frule(np.real, lambda x, y, dx: np.real(dx))
# L = Re(dy) Im(z): dL/dRe z + i dL/dIm z = i Re(dy)
_unary_rule(np.imag, lambda x, y, dy: 1j * np.real(dy) if np.iscomplexobj(x) else 0 * np.real(dy))
_unary_frule(np.imag, lambda x, y, dx: np.imag(dx))
for _f in (np.conj, np.conjugate):
    _unary_rule(_f, lambda x, y, dy: np.conj(dy))
    _unary_frule(_f, lambda x, y, dx: np.conj(dx))


def _angle_pullback(x, y, dy):
    # angle(z) = atan2(Im z, Re z); gradient dRe + i dIm = (-Im z + i Re z) / |z|^2
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = np.real(x * np.conj(x))
        g = np.where(r2 == 0, 0, (1j * x) / np.where(r2 == 0, 1, r2))
    return np.real(dy) * g


@rrule.register(np.angle, replace=True)
def _angle_rule(z, *args, **kwargs):
    """angle(z, deg=False): deg (positional or keyword) scales the result and the gradient."""
    y = np.angle(z, *args, **kwargs)
    deg = args[0] if args else kwargs.get("deg", False)
    scale = 180 / np.pi if deg else 1.0
    project = ProjectTo(z)
    rest = (NoTangent(),) * len(args)

    def angle_pullback(dy):
        dy = unthunk(dy)
        if isinstance(dy, AbstractZero):
            return (NoTangent(), ZeroTangent()) + rest
        return (NoTangent(), project(_angle_pullback(z, y, np.real(dy) * scale))) + rest

    return y, angle_pullback


non_differentiable(
    np.floor, np.ceil, np.trunc, np.rint, np.fix, np.round, np.around, np.signbit,
    np.isnan, np.isinf, np.isfinite, np.isreal, np.iscomplex, np.equal, np.not_equal, np.less,
    np.less_equal, np.greater, np.greater_equal, np.logical_and, np.logical_or, np.logical_not,
    np.logical_xor, np.floor_divide, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert,
    np.left_shift, np.right_shift,
)
