"""Rules for the remainder family: ``np.remainder`` (``np.mod``, the ``%`` operator),
``np.fmod`` and ``np.divmod`` (Python's ``divmod(a, b)`` on traced values).

``a % b = a - b * n`` with the integer ``n`` constant between the jumps, so the partials are
``1`` for ``a`` and ``-n`` for ``b`` (``n = floor(a / b)`` for ``remainder``, ``trunc(a / b)``
for ``fmod``). ``n`` is read back from the output, ``(a - y) / b`` rounded, so the partial
agrees with the value NumPy computed at every point, also next to a jump. At a jump the
function is not differentiable; the one-sided derivative on NumPy's side is returned, as for
``np.floor``'s zero.

``divmod(a, b) = (a // b, a % b)``: the quotient is piecewise constant (no tangent, as
``np.floor_divide`` and ``//``, declared non-differentiable in `elementwise`); the remainder is
differentiable as above.

>>> import chainrules as cr
>>> float(cr.grad(lambda b: np.sum(np.remainder(7.5, b)))(2.0))
-3.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.broadcast import unbroadcast
from ...core.scalar_rule import scalar_rule
from ...core.tangents import AbstractZero, ZeroTangent
from ..define import Call, define

__all__: list[str] = []


def _multiple(y: Any, a: Any, b: Any) -> Any:
    """The integer ``n`` in ``y = a - b * n``, as the computed remainder says."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.round(np.divide(np.subtract(a, y), b))


def _minus_multiple(y: Any, a: Any, b: Any) -> Any:
    return -_multiple(y, a, b)


scalar_rule(np.remainder, 1, _minus_multiple)
scalar_rule(np.fmod, 1, _minus_multiple)


# --- divmod: (quotient, remainder); only the remainder has a tangent ----------------------------

def _remainder_cotangent(call: Call, dy: list) -> Any:
    return dy[1]


def _divmod_a(call: Call, dy: list) -> Any:
    d_remainder = _remainder_cotangent(call, dy)
    if isinstance(d_remainder, AbstractZero):
        return d_remainder
    return unbroadcast(d_remainder, np.shape(call.args[0]))


def _divmod_b(call: Call, dy: list) -> Any:
    d_remainder = _remainder_cotangent(call, dy)
    if isinstance(d_remainder, AbstractZero):
        return d_remainder
    quotient = call.y[0]  # real: divmod takes no complex numbers
    return unbroadcast(-quotient * d_remainder, np.shape(call.args[1]))


def _divmod_pushforward(call: Call, da: Any, db: Any) -> tuple:
    quotient = call.y[0]
    d_remainder: Any = 0
    if not isinstance(da, AbstractZero):
        d_remainder = d_remainder + da
    if not isinstance(db, AbstractZero):
        d_remainder = d_remainder - quotient * db
    return ZeroTangent(), np.broadcast_to(d_remainder, np.shape(call.y[1]))


define(np.divmod, _divmod_a, _divmod_b, pushforward=_divmod_pushforward)
