"""NumPy's scalar types called on traced values: casts, as ``x.astype(T)``.

``np.float64(t)`` is a call of a C type that converts ``t`` with ``float(t)`` and then
``np.asarray(t)``: both would cut ``t`` out of the gradient, so a traced value refuses them.
While a trace is active, the numpy namespace holds, in place of each floating and complex
scalar type (``np.float64``, ``np.float32``, ``np.complex128``, ``np.double``...), a stand-in
that casts traced values and is the type itself for everything else:

- ``np.float64(t)`` is ``t.astype(np.float64)``: an array for an array (as NumPy gives), a
  number for a 0-d value; the cotangent is cast back onto ``t``'s dtype.
  ``np.complex128(re, im)`` with traced parts is ``re + 1j*im`` (where NumPy takes two
  arguments).
- ``np.float64(1.5)``, class attributes (``np.float64.__name__``), ``isinstance(v,
  np.float64)``, ``issubclass``, ``np.dtype(np.float64)``, ``a.astype(np.float64)``,
  ``dtype == np.float64`` and dictionary keys behave as NumPy's type itself.

What differs while tracing: ``v.dtype.type is np.float64`` is False (NumPy's dtype gives its own
type; compare with ``==``, or the dtype itself), and a type imported by name before the trace
(``from numpy import float64``) is NumPy's own, which refuses traced values loudly. Compiled
extensions see NumPy's own types.

Integer and bool types stay NumPy's own, so that identity checks hold (NumPy's ``np.select``
asks ``cond.dtype.type is not np.bool``): called on a traced value they raise an error that
says to write ``t.astype(np.int64)`` (a constant: a rounding has zero derivative) or
``np.int64(chainrules.primal(t))``.

    >>> import numpy as np, chainrules as cr
    >>> cr.grad(lambda x: np.sum(np.float32(x) * 2))(np.array([1.0, 2.0]))
    array([2., 2.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..trace.traced import Traced
from ..trace.values import holds_traced

__all__ = ["stand_ins"]


class _ScalarType(type):
    """The class of the stand-ins: construction casts traced values; checks and comparisons
    answer for NumPy's type (``cls.numpy_type``)."""

    numpy_type: type

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        numpy_type = cls.numpy_type
        if args and not kwargs and len(args) <= 2 and any(holds_traced(a) for a in args):
            return _cast(numpy_type, args)
        return numpy_type(*args, **kwargs)

    def __instancecheck__(cls, value: Any) -> bool:
        return isinstance(value, cls.numpy_type)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, cls.numpy_type)

    def __eq__(cls, other: Any) -> bool:
        return other is cls or other is cls.numpy_type

    def __hash__(cls) -> int:
        return hash(cls.numpy_type)

    def __repr__(cls) -> str:
        return repr(cls.numpy_type)


def _cast(numpy_type: type, args: tuple) -> Any:
    """``numpy_type(*args)`` for traced ``args``: ``x.astype``, a number for a 0-d value."""
    if len(args) == 2:
        try:  # NumPy's own answer on numbers: complex types take (real, imag) from NumPy 2.0
            numpy_type(0, 0)
        except TypeError:
            raise TypeError(f"{numpy_type.__name__}() takes at most 1 argument (2 given)") \
                from None
        value = np.asarray(args[0]) + 1j * np.asarray(args[1])
    else:
        value = args[0] if type(args[0]) is Traced else np.asarray(args[0])
    result = value.astype(numpy_type)
    if type(result) is Traced and type(result.primal) is np.ndarray and result.ndim == 0:
        return result[()]  # NumPy gives a number for a 0-d array
    return result


def _stand_in(numpy_type: type) -> type:
    """The stand-in for ``numpy_type``: a subclass (so ``np.dtype`` of it and NumPy's own
    subclass checks give ``numpy_type``'s dtype) whose class casts traced values."""
    return _ScalarType(numpy_type.__name__, (numpy_type,),
                       {"numpy_type": numpy_type, "__module__": numpy_type.__module__,
                        "__doc__": numpy_type.__doc__, "__slots__": ()})


_ABSTRACT = (np.inexact, np.floating, np.complexfloating)


def stand_ins() -> dict:
    """``{name: stand-in}`` for every name of the numpy namespace bound to a concrete scalar
    type (aliases such as ``np.double`` share ``np.float64``'s stand-in)."""
    made: dict = {}
    names = {}
    for name, value in list(vars(np).items()):
        if not (isinstance(value, type) and issubclass(value, np.inexact)):
            continue
        # an abstract type (np.floating, np.complexfloating...) has subclasses: not concrete
        # (np.dtype() of one warns on NumPy 1.26 and raises on 2.x)
        concrete = value not in _ABSTRACT and \
            np.dtype(value).type is value and np.dtype(value).kind in "fc"
        if concrete:
            if value not in made:
                made[value] = _stand_in(value)
            names[name] = made[value]
    return names
