"""Traced: a value being differentiated, standing in for an ndarray or a float.

NumPy routes ufuncs (``__array_ufunc__``) and array functions (``__array_function__``) on a
traced value to `record`; Python's operators, indexing, iteration and the common ndarray
methods do the same. Everything else reads the primal: shape, dtype, comparisons, ``bool(t)``
(so Python control flow follows the primal values).
"""

from __future__ import annotations

import dis
import linecache
import operator
import sys
from typing import Any

import numpy as np

from ..core.config import _name

__all__ = ["Traced"]


class Traced:
    """A traced array or scalar: ``primal`` is its value, ``node`` its place on ``tape``."""

    __slots__ = ("primal", "tape", "node")
    __array_priority__ = 1000

    def __init__(self, primal: Any, tape: Any, node: int):
        self.primal = primal
        self.tape = tape
        self.node = node

    # --- NumPy protocols ----------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            if any(type(out) is Traced for out in kwargs["out"]):
                return writes.ufunc_out(ufunc, method, inputs, kwargs)
            if writes.augmented_subscript(ufunc, method, inputs, kwargs, sys._getframe(1)):
                # `a[i] op= t` where a[i] is a plain view: a new value, which Python then
                # stores with `a[i] = value` (recorded if `a` is traced, an error if not)
                return self.__array_ufunc__(ufunc, method, *inputs)
            raise TracingError(_out_message(ufunc, inputs, kwargs["out"]))
        if method == "at":
            return writes.ufunc_at(ufunc, inputs, kwargs)
        if method == "__call__":
            if not kwargs and len(inputs) == 1:
                return record_unary(ufunc, self)
            if not kwargs and len(inputs) == 2:
                return record_binary(ufunc, inputs[0], inputs[1])
            return record(ufunc, inputs, kwargs)
        reduction = _UFUNC_METHODS.get((ufunc, method))
        if reduction is not None:
            return record(reduction, inputs, kwargs)
        raise TracingError(
            f"np.{ufunc.__name__}.{method} is not supported on traced values"
            + (" (it updates an array in place)" if method == "at" else "")
            + "; use np.sum, np.prod, np.max, np.cumsum, ... instead.")

    def __array_function__(self, function, types, args, kwargs):
        if function in writes.IN_PLACE:  # np.fill_diagonal, np.copyto: array writes
            return writes.IN_PLACE[function](*args, **kwargs)
        return record(function, args, kwargs)

    def __array__(self, dtype=None, copy=None):
        if self.tape.finished or writes.is_constant(self):
            # escaped its trace (a loss kept for plotting), or an array the function created
            # and wrote no traced value into: a plain value
            return np.asarray(primal_value(self), dtype)
        raise TracingError(
            "a traced value was converted to a plain NumPy array, which would silently cut it "
            "out of the gradient. This happens with `out[a:b] = t` where `out` is a plain "
            "array (made by a name imported before differentiating, such as `from numpy "
            "import zeros`: call np.zeros(...) instead, which the engine follows), "
            "np.asarray/np.array imported as `from numpy import array`, or C extensions. "
            "Create arrays with np.* inside the function, or build a list and np.stack it; "
            "for a view of such an array (`v = out[2:]; v[:2] = t`), write into the array "
            "itself with the combined index (`out[2 + i] = t`).")

    def __float__(self):
        return _to_number(self, float)

    def __complex__(self):
        return _to_number(self, complex)

    def __format__(self, spec: str) -> str:
        # Printing a loss inside the function is common: format the value it holds.
        return format(primal_value(self), spec)

    def __str__(self) -> str:
        return str(primal_value(self))

    def __round__(self, ndigits=None):
        # round() is piecewise constant: its derivative is zero, so the constant is exact.
        return round(primal_value(self), ndigits)

    def __int__(self):
        return int(self.primal)

    def __index__(self):
        return operator.index(self.primal)

    def __bool__(self):
        return bool(self.primal)

    # --- properties read from the primal ----------------------------------------------
    @property
    def shape(self):
        return np.shape(self.primal)

    @property
    def dtype(self):
        primal = self.primal
        dtype = getattr(primal, "dtype", None)
        return np.dtype(type(primal)) if dtype is None else dtype

    @property
    def ndim(self):
        return np.ndim(self.primal)

    @property
    def size(self):
        return np.size(self.primal)

    def __len__(self):
        return len(self.primal)

    def __iter__(self):
        for position in range(len(self.primal)):
            yield record_binary(operator.getitem, self, position)

    def __repr__(self):
        return f"Traced({self.primal!r}, node={self.node})"

    # --- operators --------------------------------------------------------------------
    def __add__(self, other): return record_binary(np.add, self, other)
    def __radd__(self, other): return record_binary(np.add, other, self)
    def __sub__(self, other): return record_binary(np.subtract, self, other)
    def __rsub__(self, other): return record_binary(np.subtract, other, self)
    def __mul__(self, other): return record_binary(np.multiply, self, other)
    def __rmul__(self, other): return record_binary(np.multiply, other, self)
    def __truediv__(self, other): return record_binary(np.divide, self, other)
    def __rtruediv__(self, other): return record_binary(np.divide, other, self)
    def __pow__(self, other): return record_binary(np.power, self, other)
    def __rpow__(self, other): return record_binary(np.power, other, self)
    def __matmul__(self, other): return record_binary(np.matmul, self, other)
    def __rmatmul__(self, other): return record_binary(np.matmul, other, self)
    def __floordiv__(self, other): return record_binary(np.floor_divide, self, other)
    def __rfloordiv__(self, other): return record_binary(np.floor_divide, other, self)
    def __mod__(self, other): return record_binary(np.remainder, self, other)
    def __rmod__(self, other): return record_binary(np.remainder, other, self)
    def __neg__(self): return record_unary(np.negative, self)
    def __pos__(self): return self
    def __abs__(self): return record_unary(np.abs, self)
    def __lt__(self, other): return record_binary(np.less, self, other)
    def __le__(self, other): return record_binary(np.less_equal, self, other)
    def __gt__(self, other): return record_binary(np.greater, self, other)
    def __ge__(self, other): return record_binary(np.greater_equal, self, other)
    def __eq__(self, other): return record_binary(np.equal, self, other)
    def __ne__(self, other): return record_binary(np.not_equal, self, other)
    __hash__ = object.__hash__

    def __getitem__(self, index):
        y = record_binary(operator.getitem, self, index)
        if type(y) is Traced and type(y.primal) is np.ndarray and y.primal.base is not None:
            writes.read_view(self, y)  # a view of an array that may be written
        return y

    def __setitem__(self, index, value):
        writes.write(self, index, value)

    # In-place arithmetic writes into the array, as NumPy does (see ad/writes.py).
    def __iadd__(self, other): return writes.augmented(self, np.add, other)
    def __isub__(self, other): return writes.augmented(self, np.subtract, other)
    def __imul__(self, other): return writes.augmented(self, np.multiply, other)
    def __itruediv__(self, other): return writes.augmented(self, np.true_divide, other)
    def __ipow__(self, other): return writes.augmented(self, np.power, other)

    def fill(self, value):
        writes.write(self, Ellipsis, value)

    # --- ndarray methods, mapped onto the NumPy functions that have rules ---------------
    def sum(self, *args, **kwargs): return record(np.sum, (self,) + args, kwargs)
    def mean(self, *args, **kwargs): return record(np.mean, (self,) + args, kwargs)
    def prod(self, *args, **kwargs): return record(np.prod, (self,) + args, kwargs)
    def max(self, *args, **kwargs): return record(np.max, (self,) + args, kwargs)
    def min(self, *args, **kwargs): return record(np.min, (self,) + args, kwargs)
    def std(self, *args, **kwargs): return record(np.std, (self,) + args, kwargs)
    def var(self, *args, **kwargs): return record(np.var, (self,) + args, kwargs)
    def cumsum(self, *args, **kwargs): return record(np.cumsum, (self,) + args, kwargs)
    def cumprod(self, *args, **kwargs): return record(np.cumprod, (self,) + args, kwargs)
    def dot(self, other): return record_binary(np.dot, self, other)
    def ravel(self, *args, **kwargs): return record(np.ravel, (self,) + args, kwargs)
    def flatten(self): return record_unary(np.ravel, self)
    def squeeze(self, *args, **kwargs): return record(np.squeeze, (self,) + args, kwargs)
    def swapaxes(self, a, b): return record(np.swapaxes, (self, a, b), {})
    def clip(self, *args, **kwargs): return record(np.clip, (self,) + args, kwargs)
    def trace(self, *args, **kwargs): return record(np.trace, (self,) + args, kwargs)
    def diagonal(self, *args, **kwargs): return record(np.diagonal, (self,) + args, kwargs)
    def take(self, *args, **kwargs): return record(np.take, (self,) + args, kwargs)
    def repeat(self, *args, **kwargs): return record(np.repeat, (self,) + args, kwargs)
    def argmax(self, *args, **kwargs): return np.argmax(self.primal, *args, **kwargs)
    def argmin(self, *args, **kwargs): return np.argmin(self.primal, *args, **kwargs)
    def argsort(self, *args, **kwargs): return np.argsort(self.primal, *args, **kwargs)
    def nonzero(self): return np.nonzero(self.primal)
    def tolist(self): return [self[i] for i in range(len(self))] if self.ndim else self
    def item(self, *args):
        raise TracingError("t.item() cuts a traced value out of the gradient; use t[()] or "
                           "t[index] instead (or chainrules.primal(t) to read the number).")

    def reshape(self, *shape, **kwargs):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return record(np.reshape, (self, shape), kwargs)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return record(np.transpose, (self, axes or None), {})

    @property
    def T(self):
        return record_unary(np.transpose, self)

    @property
    def real(self):
        return record_unary(np.real, self)

    @property
    def imag(self):
        return record_unary(np.imag, self)

    def conj(self):
        return record_unary(np.conj, self)

    conjugate = conj

    def copy(self):
        return record_unary(_NP_COPY, self)

    def astype(self, dtype, *args, **kwargs):
        return record(_astype(), (self, dtype), {})

    def __copy__(self):
        # arrays can be written in place: a copy is a new array; numbers are immutable
        return self.copy() if isinstance(primal_value(self), np.ndarray) else self

    def __deepcopy__(self, memo):
        return self.__copy__()


def primal_value(x: Any) -> Any:
    """The plain value under every level of tracing of ``x``."""
    while type(x) is Traced:
        x = x.primal
    return x


# The instructions during which Python converts a value to a number for a reason that is not
# arithmetic: `out[i] = t` (NumPy converts t to store it) and `"%.2f" % t` (string formatting).
_STORE_SUBSCR = dis.opmap["STORE_SUBSCR"]
_FORMATTING = {(dis.opmap[name], 0) for name in ("BINARY_MODULO", "INPLACE_MODULO")
               if name in dis.opmap}  # Python 3.10
if "BINARY_OP" in dis.opmap:  # Python 3.11+: one opcode, the operator in its argument
    _FORMATTING |= {(dis.opmap["BINARY_OP"], position)
                    for position, (name, _) in enumerate(getattr(dis, "_nb_ops", ()))
                    if name in ("NB_REMAINDER", "NB_INPLACE_REMAINDER")}


def _to_number(traced: Traced, kind: type) -> Any:
    """``float(t)``/``complex(t)``: the value once the trace has ended or inside string
    formatting; while tracing, anything else would cut ``t`` out of the gradient."""
    if traced.tape.finished or writes.is_constant(traced):
        return kind(primal_value(traced))
    frame = sys._getframe(2)  # the code that asked: _to_number <- __float__ <- caller
    code, offset = frame.f_code.co_code, frame.f_lasti
    instruction = code[offset]
    if (instruction, code[offset + 1] if instruction >= dis.HAVE_ARGUMENT else 0) in \
            _FORMATTING:
        return kind(primal_value(traced))
    message = (
        f"{kind.__name__}() of a traced value cuts it out of the gradient. It happens with "
        f"{kind.__name__}(t), math.* functions and C extensions. Keep values as NumPy values "
        f"(np.* instead of math.*). To read the number without differentiating, use "
        f"chainrules.primal(t).")
    if instruction == _STORE_SUBSCR:
        # NumPy is storing t into a plain array (`out[i] = t`) and would replace an exception
        # raised here by its own "setting an array element with a sequence": store the value,
        # and the trace raises this error when the function returns.
        traced.tape.defer_error(TracingError(
            f"`{_source_line(frame)}` ({frame.f_code.co_filename}, line {frame.f_lineno}) "
            f"writes a traced value into a plain NumPy array, which cuts it out of the "
            f"gradient. Create the array inside the differentiated function by calling "
            f"np.zeros/np.empty/np.array/... through the numpy module (a name imported "
            f"before differentiating, such as `from numpy import zeros`, makes a plain "
            f"array), or build the values in a list and np.stack(values) them. For a view "
            f"of such an array (`v = out[2:]; v[i] = t`), write into the array itself with "
            f"the combined index (`out[2 + i] = t`)."))
        return kind(primal_value(traced))
    raise TracingError(message)


def _source_line(frame: Any) -> str:
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return line or "an item assignment"


def _out_message(ufunc: Any, inputs: tuple, out: tuple) -> str:
    symbol = _AUGMENTED.get(ufunc.__name__)
    if symbol and len(out) == 1 and inputs and out[0] is inputs[0]:  # Python's `a += t`
        return (f"`a {symbol} t` writes a traced value into the plain array `a` in place, "
                f"which cuts it out of the gradient. Create `a` inside the differentiated "
                f"function with np.zeros/np.ones/... (through the numpy module, not a name "
                f"imported before differentiating), or write `a = a {symbol[:-1]} t` (a new "
                f"value, not an update).")
    return (f"np.{ufunc.__name__}(..., out=a) writes a traced value into the plain NumPy "
            f"array `a`, which the engine cannot follow. Create `a` inside the differentiated "
            f"function with np.zeros/np.empty/... (through the numpy module, not a name "
            f"imported before differentiating), or use the returned value instead.")


_AUGMENTED = {"add": "+=", "subtract": "-=", "multiply": "*=", "divide": "/=",
              "true_divide": "/=", "power": "**=", "floor_divide": "//=", "remainder": "%=",
              "matmul": "@="}


_NP_COPY = np.copy  # NumPy's own (while tracing, np.copy is the engine's replacement)


def _astype():
    from ..rules.shape import astype

    return astype


_UFUNC_METHODS = {
    (np.add, "reduce"): np.sum,
    (np.multiply, "reduce"): np.prod,
    (np.maximum, "reduce"): np.max,
    (np.minimum, "reduce"): np.min,
    (np.add, "accumulate"): np.cumsum,
    (np.multiply, "accumulate"): np.cumprod,
}

from ..core.structure import register_leaf_type  # noqa: E402
from .tape import TracingError, record, record_binary, record_unary  # noqa: E402
from . import writes  # noqa: E402

register_leaf_type(Traced)
