"""The ``math`` module on traced numbers: ``math.sqrt(t)``, ``math.exp(t)``, ``math.atan2(y,
x)``... differentiate as their NumPy counterparts while a trace is active.

``math.sqrt`` is a C function that converts its argument with ``float()``, which would cut a
traced value out of the gradient. While a trace runs, the ``math`` module holds, in place of
each function below, a replacement that computes NumPy's counterpart when an argument is traced
(after calling the ``math`` function itself on the plain values, so that its errors, such as
``ValueError: math domain error`` for ``math.sqrt(-1.0)``, are raised as ``math`` raises them),
and is the ``math`` function for anything else. Names bound before the trace (``from math import
sqrt``) are covered by `chainrules.ad.dispatch.bound_names`. Functions that read a value
without a derivative to follow (``math.isfinite``, ``math.floor``, ``math.isclose``...) read the
plain value. ``math.erf``, ``erfc``, ``gamma`` and ``lgamma`` use ``scipy.special`` (an error
says so when SciPy is not installed).

>>> import math, numpy as np, chainrules as cr
>>> float(cr.grad(lambda t: math.sin(t) * math.sqrt(t))(1.0))  # cos(1) + sin(1) / 2
0.961037798272088
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..trace.errors import TracingError
from ..trace.traced import Traced, primal_value

__all__ = ["REPLACED", "install", "uninstall"]


def _log(x: Any, base: Any = None) -> Any:
    return np.log(x) if base is None else np.log(x) / np.log(base)


def _ldexp(x: Any, exponent: Any) -> Any:
    return x * 2.0 ** primal_value(exponent)


def _dist(p: Any, q: Any) -> Any:
    return np.sqrt(sum((a - b) ** 2 for a, b in zip(p, q)))


def _fsum(values: Any) -> Any:
    return sum(values, 0.0)


def _prod(values: Any, *, start: Any = 1) -> Any:
    result = start
    for value in values:
        result = result * value
    return result


def _sumprod(p: Any, q: Any) -> Any:
    return sum((a * b for a, b in zip(p, q)), 0.0)


def _special(name: str) -> Any:
    """``scipy.special.<name>``, whose rules differentiate it, imported when first needed."""
    def compute(*args: Any) -> Any:
        try:
            import scipy.special
        except ImportError:
            raise TracingError(
                f"math.{_SPECIAL_NAMES[name]} of a traced value is differentiated as "
                f"scipy.special.{name}, and SciPy is not installed: pip install scipy, or "
                f"write the function with NumPy.") from None
        return getattr(scipy.special, name)(*args)
    return compute


_SPECIAL_NAMES = {"erf": "erf", "erfc": "erfc", "gamma": "gamma", "gammaln": "lgamma"}

# math's name -> the NumPy (or SciPy) function it differentiates as
_COUNTERPARTS = {
    "sqrt": np.sqrt, "exp": np.exp, "expm1": np.expm1, "log": _log, "log1p": np.log1p,
    "log2": np.log2, "log10": np.log10, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "atan2": np.arctan2,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "hypot": np.hypot, "pow": np.power,
    "fabs": np.abs, "copysign": np.copysign, "fmod": np.fmod, "degrees": np.degrees,
    "radians": np.radians, "ldexp": _ldexp, "dist": _dist, "fsum": _fsum, "prod": _prod,
    "cbrt": np.cbrt, "exp2": np.exp2, "sumprod": _sumprod,
    "erf": _special("erf"), "erfc": _special("erfc"), "gamma": _special("gamma"),
    "lgamma": _special("gammaln"),
}

# Functions of the values only (no derivative to follow: a test, a rounding, an integer).
_READ_VALUES = ("isfinite", "isnan", "isinf", "isclose", "floor", "ceil", "trunc",
                "factorial", "comb", "perm", "gcd", "lcm", "isqrt", "frexp", "modf")


def _holds_traced(value: Any) -> bool:
    if type(value) is Traced:
        return True
    return isinstance(value, (list, tuple)) and any(type(v) is Traced for v in value)


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [primal_value(v) for v in value]
    return primal_value(value)


def _differentiable(name: str, original: Any, counterpart: Any) -> Any:
    takes_iterables = name in ("fsum", "prod", "sumprod", "dist")

    def replacement(*args: Any, **kwargs: Any) -> Any:
        if takes_iterables:  # a generator is read once: here
            args = tuple(a if isinstance(a, (list, tuple)) else list(a) for a in args)
        for argument in args:
            if _holds_traced(argument):
                break
        else:
            return original(*args, **kwargs)
        original(*[_plain(a) for a in args], **kwargs)  # math's own errors, on the values
        return counterpart(*args, **kwargs)

    return _named(replacement, original)


def _reading(original: Any) -> Any:
    def replacement(*args: Any, **kwargs: Any) -> Any:
        return original(*[primal_value(a) for a in args],
                        **{k: primal_value(v) for k, v in kwargs.items()})

    return _named(replacement, original)


def _named(replacement: Any, original: Any) -> Any:
    replacement.__name__ = replacement.__qualname__ = original.__name__
    replacement.__doc__ = original.__doc__
    replacement.__wrapped__ = original
    return replacement


# original math function -> its replacement while tracing
REPLACED: dict = {}
for _name, _counterpart in _COUNTERPARTS.items():
    if hasattr(math, _name):
        REPLACED[getattr(math, _name)] = _differentiable(_name, getattr(math, _name),
                                                         _counterpart)
for _name in _READ_VALUES:
    if hasattr(math, _name):
        REPLACED[getattr(math, _name)] = _reading(getattr(math, _name))


_ON = {original.__name__: replacement for original, replacement in REPLACED.items()}
_OFF = {original.__name__: original for original in REPLACED}


def install() -> None:
    """Put the replacements in the ``math`` module (one dictionary update: every trace)."""
    vars(math).update(_ON)


def uninstall() -> None:
    """Give the ``math`` module its own functions back."""
    vars(math).update(_OFF)
