"""Rules for SciPy's Bessel functions (``scipy.special``), differentiable to any order.

Derivatives with respect to the argument ``x`` come from the recurrences

- ``J_v' = (J_{v-1} - J_{v+1}) / 2`` (and the same for ``Y_v``),
- ``I_v' = (I_{v-1} + I_{v+1}) / 2``, ``K_v' = -(K_{v-1} + K_{v+1}) / 2``,

written with the Bessel functions themselves (each has a rule here), so that the partials
can be differentiated again. The exponentially scaled forms add the derivative of their scale:
``ive = iv exp(-|x|)`` gains ``-sign(x) ive``, ``kve = kv exp(x)`` gains ``+kve``.
``j0, j1, y0, y1, i0, i1, i0e, i1e, k0, k1, k0e, k1e`` are the orders 0 and 1 of these
(``scipy.special.jn`` is ``jv`` itself; ``yn`` is ``yv`` for an integer order).

The Kelvin functions (``ber``, ``bei``, ``ker``, ``kei``, their derivatives ``berp``...,
``kelvin``) differentiate by their differential equation; the integrals of Bessel and Struve
functions (``itj0y0``, ``iti0k0``, ``it2j0y0``, ``it2i0k0``, ``itstruve0``, ``it2struve0``,
``itmodstruve0``) to their integrands; ``hankel1e``, ``hankel2e`` and ``besselpoly`` (in
``a``) by the recurrences.

The order ``v`` has no derivative here (``d/dv`` has no closed form): an integer order has no
tangent, and a float order is taken as a constant; differentiating with respect to it (a
traced order) raises `NotImplementedError` naming the function and the argument, never a
silent zero. ``jv, yv, iv, kv, kve`` are holomorphic in ``x``, so complex ``x`` is
differentiated as every holomorphic rule is; ``ive`` scales by ``exp(-|Re x|)``, which is not
holomorphic, and is differentiated for real ``x`` only (complex ``x`` is refused by name).

>>> import numpy as np, scipy.special
>>> from chainrules import rrule
>>> y, pullback = rrule(scipy.special.j0, 1.5)
>>> bool(np.isclose(pullback(1.0)[1], -scipy.special.j1(1.5)))
True
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import scipy.special as sps

from ....core.broadcast import unbroadcast
from ....core.projection import _has_tangent
from ....core.registry import rrule
from ....core.scalar_rule import scalar_rule
from ....core.tangents import NoTangent
from ...define import define
from ...refused_arguments import scalar_rule_refusing
from ....core.thunks import NotImplementedCotangent

__all__: list = []

# Partials call the functions through ``sps`` (not names bound here): while a trace runs,
# chainrules.ad.dispatch.routing routes the module's attributes, so traced arguments are recorded
# (second derivatives).


# --- the order: not differentiable, refused when it is traced ----------------------------------

def _order_error(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"{name}: the derivative with respect to the order v (argument 0) is not implemented "
        f"(it has no closed form). Pass the order as a constant (a number or an array that "
        f"is not differentiated); derivatives with respect to x are supported.")


def _order_refused(name: str) -> Callable:
    """The partial for the order: raises, so a tangent of the order (forward mode) is refused."""
    def order_partial(y: Any, v: Any, x: Any) -> Any:
        raise _order_error(name)
    return order_partial


class _RefusedOrder:
    """A pullback of ``f(v, x)`` whose float order ``v`` gets a cotangent that raises when it
    is used (only a traced ``v``'s is): constants are never asked for theirs."""

    __slots__ = ("pullback", "name")

    def __init__(self, pullback: Callable, name: str):
        self.pullback, self.name = pullback, name

    def __call__(self, dy: Any) -> tuple:
        df, dv, dx = self.pullback(dy)
        if isinstance(dv, NoTangent):
            dv = NotImplementedCotangent(str(_order_error(self.name)))
        return df, dv, dx


def _with_order(f: Any, dx: Callable) -> None:
    """Register the rules of ``f(v, x)`` from ``dx(y, v, x)``, the partial in ``x``; the
    order ``v`` is refused when differentiated (`_RefusedOrder`, `_order_refused`)."""
    name = f"scipy.special.{f.__name__}"

    def x_partial(y: Any, v: Any, x: Any) -> Any:
        # scalar_rule hands a Python 0 over as the output's dtype: complex for complex x
        return dx(y, np.real(v) if np.iscomplexobj(v) else v, x)

    scalar_rule(f, None, x_partial)
    reverse = rrule.lookup(f)[0]        # NoTangent for v, read before the frule's version
    scalar_rule(f, _order_refused(name), x_partial)

    def order_reverse(*args: Any, **kwargs: Any):
        y, pullback = reverse(*args, **kwargs)
        if len(args) == 2 and _has_tangent(args[0]):
            return y, _RefusedOrder(pullback, name)
        return y, pullback

    order_reverse.__qualname__ = order_reverse.__name__ = f"{f.__name__}_rrule"
    rrule.register(f, replace=True)(order_reverse)


# --- partials ----------------------------------------------------------------------------------

def _real_only(name: str, x: Any) -> None:
    if np.iscomplexobj(x):
        raise NotImplementedError(
            f"{name}: complex x is not supported in differentiated code: its scale "
            f"exp(-|Re x|) is not holomorphic. Use scipy.special.iv(v, x) * np.exp(-abs(x.real)) "
            f"written out, or real x.")


def _ive_dx(y: Any, v: Any, x: Any) -> Any:
    _real_only("scipy.special.ive", x)
    return (sps.ive(v - 1, x) + sps.ive(v + 1, x)) / 2 - np.sign(x) * sps.ive(v, x)


# Orders 0 and 1: I1(0)' = 1/2 and the like come out of the recurrences without a 1/x.
scalar_rule(sps.j0, lambda y, x: -sps.j1(x))
scalar_rule(sps.j1, lambda y, x: (sps.j0(x) - sps.jv(2, x)) / 2)
scalar_rule(sps.y0, lambda y, x: -sps.y1(x))
scalar_rule(sps.y1, lambda y, x: (sps.y0(x) - sps.yv(2, x)) / 2)
scalar_rule(sps.i0, lambda y, x: sps.i1(x))
scalar_rule(sps.i1, lambda y, x: (sps.i0(x) + sps.iv(2, x)) / 2)
scalar_rule(sps.i0e, lambda y, x: sps.i1e(x) - np.sign(x) * sps.i0e(x))
scalar_rule(sps.i1e, lambda y, x: (sps.i0e(x) + sps.ive(2, x)) / 2 - np.sign(x) * sps.i1e(x))
scalar_rule(sps.k0, lambda y, x: -sps.k1(x))
scalar_rule(sps.k1, lambda y, x: -(sps.k0(x) + sps.kv(2, x)) / 2)
scalar_rule(sps.k0e, lambda y, x: sps.k0e(x) - sps.k1e(x))
scalar_rule(sps.k1e, lambda y, x: sps.k1e(x) - (sps.k0e(x) + sps.kve(2, x)) / 2)

# Any order v (jn is jv itself).
_with_order(sps.jv, lambda y, v, x: (sps.jv(v - 1, x) - sps.jv(v + 1, x)) / 2)
_with_order(sps.yv, lambda y, v, x: (sps.yv(v - 1, x) - sps.yv(v + 1, x)) / 2)
_with_order(sps.yn, lambda y, n, x: (sps.yn(n - 1, x) - sps.yn(n + 1, x)) / 2)
_with_order(sps.iv, lambda y, v, x: (sps.iv(v - 1, x) + sps.iv(v + 1, x)) / 2)
_with_order(sps.ive, _ive_dx)
_with_order(sps.kv, lambda y, v, x: -(sps.kv(v - 1, x) + sps.kv(v + 1, x)) / 2)
_with_order(sps.kve, lambda y, v, x: sps.kve(v, x) - (sps.kve(v - 1, x) + sps.kve(v + 1, x)) / 2)

# Integer order n (kn's n has no tangent), the Hankel functions (holomorphic in z), and jve,
# yve: jv, yv scaled by exp(-|Im z|), which is 1 on the real line (complex z refused: the
# scale is not holomorphic).
_with_order(sps.kn, lambda y, n, x: -(sps.kn(n - 1, x) + sps.kn(n + 1, x)) / 2)
_with_order(sps.hankel1, lambda y, v, z: (sps.hankel1(v - 1, z) - sps.hankel1(v + 1, z)) / 2)
_with_order(sps.hankel2, lambda y, v, z: (sps.hankel2(v - 1, z) - sps.hankel2(v + 1, z)) / 2)


def _on_the_real_line(name: str, f: Any) -> Callable:
    def dx(y: Any, v: Any, x: Any) -> Any:
        if np.iscomplexobj(x):
            raise NotImplementedError(
                f"{name}: complex z is not supported in differentiated code: its scale "
                f"exp(-|Im z|) is not holomorphic. Use the unscaled function times "
                f"np.exp(-abs(z.imag)) written out, or real z.")
        return (f(v - 1, x) - f(v + 1, x)) / 2
    return dx


_with_order(sps.jve, _on_the_real_line("scipy.special.jve", sps.jve))
_with_order(sps.yve, _on_the_real_line("scipy.special.yve", sps.yve))
# hankel1e = hankel1 exp(-i z), hankel2e = hankel2 exp(i z): holomorphic, their scale's
# derivative added
_with_order(sps.hankel1e, lambda y, v, z: (sps.hankel1e(v - 1, z) - sps.hankel1e(v + 1, z)) / 2
            - 1j * y)
_with_order(sps.hankel2e, lambda y, v, z: (sps.hankel2e(v - 1, z) - sps.hankel2e(v + 1, z)) / 2
            + 1j * y)


# Struve functions: H_v' = (H_{v-1} - H_{v+1} + c) / 2 and L_v' = (L_{v-1} + L_{v+1} + c) / 2,
# c = (x/2)^v / (sqrt(pi) Gamma(v + 3/2)) (no 1/x: finite at x = 0).
def _struve_term(v: Any, x: Any) -> Any:
    return np.power(x / 2, v) / (np.sqrt(np.pi) * sps.gamma(v + 1.5))


_with_order(sps.struve, lambda y, v, x: (sps.struve(v - 1, x) - sps.struve(v + 1, x)
                                         + _struve_term(v, x)) / 2)
_with_order(sps.modstruve, lambda y, v, x: (sps.modstruve(v - 1, x) + sps.modstruve(v + 1, x)
                                            + _struve_term(v, x)) / 2)


# Kelvin functions, ber + i bei = J0(x e^(3 pi i/4)) (ker + i kei likewise of K0): their
# derivatives are SciPy's berp, beip, kerp, keip, and those of the derivatives come from
# the differential equation f'' = -f'/x -+ g (g the other of the pair; at x = 0, where f'/x
# tends to f''(0), f''(0) = -+g(0)/2).
def _kelvin_second(first: Any, other: Any, sign: float) -> Callable:
    def second(y: Any, x: Any) -> Any:
        at_zero = x == 0
        safe = np.where(at_zero, 1.0, x)
        return np.where(at_zero, sign * other(x) / 2, -y / safe + sign * other(x))
    return second


scalar_rule(sps.ber, lambda y, x: sps.berp(x))
scalar_rule(sps.bei, lambda y, x: sps.beip(x))
scalar_rule(sps.ker, lambda y, x: sps.kerp(x))
scalar_rule(sps.kei, lambda y, x: sps.keip(x))
scalar_rule(sps.berp, _kelvin_second(sps.berp, sps.bei, -1.0))
scalar_rule(sps.beip, _kelvin_second(sps.beip, sps.ber, 1.0))
scalar_rule(sps.kerp, _kelvin_second(sps.kerp, sps.kei, -1.0))
scalar_rule(sps.keip, _kelvin_second(sps.keip, sps.ker, 1.0))
# integrals of Bessel and Struve functions: their derivative is the integrand
scalar_rule(sps.itstruve0, lambda y, x: sps.struve(0, x))
scalar_rule(sps.it2struve0, lambda y, x: -sps.struve(0, x) / x)       # int_x^inf H0(t)/t dt
scalar_rule(sps.itmodstruve0, lambda y, x: sps.modstruve(0, x))
# besselpoly(a, lmb, nu) = int_0^1 t^lmb J_nu(2 a t) dt: in a, from J's recurrence
scalar_rule_refusing(sps.besselpoly, "scipy.special.besselpoly",
                     (lambda y, a, lmb, nu: sps.besselpoly(a, lmb + 1, nu - 1)
                      - sps.besselpoly(a, lmb + 1, nu + 1), None, None),
                     {1: ("lmb", "no closed form (t^lmb log t under the integral)"),
                      2: ("nu", "no closed form (the derivative of J in its order)")})


# Spherical Bessel functions spherical_jn(n, z, derivative=False), yn, in, kn (Python
# functions, recorded whole: ROUTED in chainrules.ad.dispatch.routes): the derivative in z is
# the function with derivative=True; that one's derivative comes from the differential
# equation z^2 f'' + 2 z f' + (s z^2 - n(n + 1)) f = 0, s = 1 for j, y and -1 for i, k.
def _spherical_slope(sign: float) -> Callable:
    def slope(call: Any) -> Any:
        f, n, z = call.rule.f, call.args[0], call.args[1]
        if not call["derivative"]:
            return f(n, z, True)
        return -2 / z * f(n, z, True) - (sign - n * (n + 1) / (z * z)) * f(n, z)
    return slope


for _name, _sign in (("spherical_jn", 1.0), ("spherical_yn", 1.0), ("spherical_in", -1.0),
                     ("spherical_kn", -1.0)):
    _slope = _spherical_slope(_sign)
    define(getattr(sps, _name), None,
           lambda call, dy, slope=_slope: unbroadcast(np.conj(slope(call)) * dy,
                                                      np.shape(call.args[1])),
           pushforward=lambda call, dn, dz, *rest, slope=_slope: slope(call) * dz)
