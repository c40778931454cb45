"""Traced values as NumPy sees them: their NumPy protocols, Python's operators, indexing,
array writes and the ndarray methods, each recorded on the tape (`chainrules.ad.trace.tape`)
or handed to the array writes (`chainrules.ad.dispatch.writes`).

They are written as the body of `_ArrayInterface` and installed on `Traced` when this module is
imported (`install`; the engine imports it with ``chainrules.ad``): the routing of NumPy's API
sits above the traced value it routes, as JAX's array methods sit above its tracers. Reading a
method off the class costs what it would had the class body defined it.

NumPy routes ufuncs (``__array_ufunc__``) and array functions (``__array_function__``) on a
traced value to `record`; Python's operators, indexing, iteration and the common ndarray
methods do the same. In-place and memory methods are refused by name (`REFUSED_METHODS`).

>>> import numpy as np, chainrules as cr
>>> cr.grad(lambda x: (x.T @ x).sum() + x.reshape(-1)[0])(np.ones((2, 2)))
array([[5., 4.],
       [4., 4.]])
"""

from __future__ import annotations

import dis
import linecache
import operator
from operator import itemgetter as _item
import re
import sys
from typing import Any

import numpy as np

from ...core.registry import PRIMITIVE_MARK
from ...core.vector_spaces import VECTOR_SPACES
from ...rules.numpy.shape import astype
from ..trace.errors import ArrayConversionError, MemoryAttributeError, TracingError
from ..trace.tape import record, record_binary, record_unary
from ..trace.traced import Traced, primal_value
from ..trace.values import SCALAR_META
from . import masked, writes
from .ufunc_methods import ufunc_method

__all__ = ["REFUSED_METHODS", "install"]


# NumPy's functions that methods and properties record, bound at import: during a trace,
# NumPy's namespace holds the wrappers of `array_likes`, which have no rules of their own.
_FUNCTIONS = {name: getattr(np, name) for name in (
    "compress", "ravel", "reshape", "transpose", "swapaxes", "real", "imag", "copy", "sort",
    "partition")}


def _method(function: Any) -> Any:
    """The ndarray method that is ``function(self, *args, **kwargs)``."""
    def method(self, *args, **kwargs):
        y = record(function, (self,) + args, kwargs)
        return _followed(self, y, lambda base: method(base, *args, **kwargs))

    method.__name__ = method.__qualname__ = function.__name__
    method.__doc__ = f"``np.{function.__name__}(self, ...)``."
    return method


def _one_sequence(arguments: tuple) -> bool:
    """Whether ``x.reshape(*arguments)`` (or ``transpose``) got its shape as one sequence: a
    tuple, a list or a 1-D integer array (``x.reshape(np.append(1, counts))``), as NumPy
    takes it."""
    return len(arguments) == 1 and (isinstance(arguments[0], (tuple, list)) or (
        type(arguments[0]) is np.ndarray and arguments[0].ndim == 1))


def _followed(source: "Traced", y: Any, redo: Any) -> Any:
    """``y``, computed from ``source`` (``redo(source)`` computes it again: it must not hold
    ``source`` itself, which the registry of views keeps weakly), followed as a view of
    ``source`` when it is one (ad/dispatch/writes.py): each part of a tuple or list result too."""
    kind = type(y)
    if kind is Traced or kind is np.ndarray:
        return writes.track_view(source, y, redo)
    if kind in (tuple, list) and y and type(y[0]) in (Traced, np.ndarray):
        return kind(writes.track_view(source, part, lambda base, k=k: redo(base)[k])
                    for k, part in enumerate(y))
    return y


def _refused(name: str, why: str) -> str:
    return (f"x.{name}() on a traced array is not supported: it {why}. Use "
            f"chainrules.primal(x).{name}(...) for the plain value.")


def _refusing(name: str, why: str) -> Any:
    """An ndarray method that raises TracingError saying ``why``."""
    def method(self, *args, **kwargs):
        raise TracingError(_refused(name, why))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Refused: it {why}."
    return method


# In place or about memory: refused, each with the reason and what to write instead.
REFUSED_METHODS = {
    "itemset": "writes into the array (use np.where)",
    "resize": "resizes the array in place (use np.resize(x, shape))",
    "setfield": "writes into the array's memory",
    "setflags": "changes the array's memory flags",
    "byteswap": "reinterprets the array's bytes",
    "newbyteorder": "reinterprets the array's bytes",
    "getfield": "reinterprets the array's memory",
    "tobytes": "returns raw bytes",
    "tostring": "returns raw bytes",
    "tofile": "writes raw bytes to a file",
    "dump": "pickles the array to a file",
    "dumps": "pickles the array",
}


# The functions of Python's operators, as names of this module: a lookup fewer per operation
# than ``np.add`` (a scalar loop's gradient is made of these calls).
(_ABS, _ADD, _CONJ, _DIVIDE, _DIVMOD, _EQUAL, _FLOOR_DIVIDE, _GREATER, _GREATER_EQUAL, _LESS,
 _LESS_EQUAL, _MATMUL, _MULTIPLY, _NEGATIVE, _NOT_EQUAL, _POWER, _REMAINDER, _SUBTRACT) = (
    np.abs, np.add, np.conj, np.divide, np.divmod, np.equal, np.floor_divide, np.greater,
    np.greater_equal, np.less, np.less_equal, np.matmul, np.multiply, np.negative, np.not_equal,
    np.power, np.remainder, np.subtract)
_GETITEM = operator.getitem
_PUT = writes.IN_PLACE[np.put]  # keyed by NumPy's own np.put (a trace swaps the namespace's)


class _ArrayInterface:
    """What a traced value does as an ndarray: the methods that `install` puts on `Traced`."""

    # --- NumPy protocols ----------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if "out" in kwargs:
            if any(type(out) is Traced for out in kwargs["out"]):
                return writes.ufunc_out(ufunc, method, inputs, kwargs)
            if writes.augmented_subscript(ufunc, method, inputs, kwargs, sys._getframe(1)):
                # `a[i] op= t` where a[i] is a plain view: a new value, which Python then
                # stores with `a[i] = value` (recorded if `a` is traced, an error if not)
                return self.__array_ufunc__(ufunc, method, *inputs)
            # `a op= t` into a plain `a` held by its name alone: `a` becomes traced
            adopted = writes.augmented_plain(ufunc, method, inputs, kwargs, sys._getframe(1))
            if adopted is not None:
                return adopted
            raise TracingError(_out_message(ufunc, inputs, kwargs["out"]))
        if method == "at":
            return writes.ufunc_at(ufunc, inputs, kwargs)
        if method == "__call__":
            if not kwargs and len(inputs) == 1:
                return record_unary(ufunc, self)
            if not kwargs and len(inputs) == 2:
                return record_binary(ufunc, inputs[0], inputs[1])
            return record(ufunc, inputs, kwargs)
        return ufunc_method(ufunc, method, inputs, kwargs)

    def __array_function__(self, function, types, args, kwargs):
        if function in _QUERIES:  # read the plain value, as the properties do
            return function(*[primal_value(arg) for arg in args], **kwargs)
        if function in writes.IN_PLACE:  # np.fill_diagonal, np.copyto: array writes
            return writes.IN_PLACE[function](*args, **kwargs)
        y = record(function, args, kwargs)
        if args and type(args[0]) is Traced and not (
                type(y) is Traced and type(y.primal) in SCALAR_META):  # a number: no view
            # np.reshape(x), np.ravel(x)...: views followed
            rest = args[1:]  # (not args: the view must not keep its base's traced value)
            y = _followed(args[0], y, lambda base: function(base, *rest, **kwargs))
        return y

    def __array__(self, dtype=None, copy=None):
        if self.tape.finished or writes.is_constant(self):
            # escaped its trace (a loss kept for plotting), or an array the function created
            # and wrote no traced value into: a plain value
            return np.asarray(primal_value(self), dtype)
        frame = sys._getframe(1)  # the Python code whose call converted it
        line = _source_line(frame)
        raise ArrayConversionError(
            f"`{line}` ({frame.f_code.co_filename}, line {frame.f_lineno}): "
            + _conversion_hint(line, frame) +
            "a traced value was converted to a plain NumPy array, which would silently cut it "
            "out of the gradient. This happens with a ufunc given a list of traced values "
            "(np.exp([a, b]): write np.exp(np.array([a, b]))), C extensions, a write through "
            "a view (`v = out[2:]; v[:2] = t`: write into the array itself with the combined "
            "index, `out[2 + i] = t`), and `out[a:b] = t` where `out` is a plain array. "
            + writes.PLAIN_ARRAY_CAUSES)

    def __call__(self, *args, **kwargs):
        # A traced value of a vector space whose class is callable (a function in an RKHS):
        # its __call__ must be a primitive, whose rule says how the call depends on it.
        primal = primal_value(self)
        method = getattr(type(primal), "__call__", None) if type(primal) in VECTOR_SPACES \
            else None
        if method is None:
            raise TypeError(f"'{type(primal).__name__}' object is not callable")
        if not getattr(method, PRIMITIVE_MARK, False):
            raise TracingError(
                f"a traced {type(primal).__name__} (declared a vector space) was called, and "
                f"{type(primal).__name__}.__call__ is not a primitive: the engine cannot see "
                f"how the result depends on the value. Decorate __call__ with "
                f"@chainrules.primitive and register its rule.")
        return method(self, *args, **kwargs)

    def __array_namespace__(self, *, api_version=None):
        """The array-API namespace of the value it holds: what ``array_api_compat``'s
        ``array_namespace`` gives for it (its NumPy wrapper), or NumPy's own."""
        plain = np.asarray(primal_value(self))
        compat = sys.modules.get("array_api_compat")
        if compat is not None:
            return compat.array_namespace(plain, api_version=api_version)
        own = getattr(plain, "__array_namespace__", None)
        return np if own is None else own(api_version=api_version)

    @property
    def flags(self):
        """The flags of the value it holds (``x.flags.c_contiguous``...)."""
        plain = primal_value(self)
        return plain.flags if type(plain) is np.ndarray else np.asarray(plain).flags

    def __float__(self):
        return _to_number(self, float)

    def __complex__(self):
        return _to_number(self, complex)

    def __iter__(self):
        if self.ndim == 0:  # raised by iter(), as NumPy does (np.iterable asks it)
            raise TypeError("iteration over a 0-d array")
        return _elements(self)

    # --- operators --------------------------------------------------------------------
    def __add__(self, other): return record_binary(_ADD, self, other)
    def __radd__(self, other): return record_binary(_ADD, other, self)
    def __sub__(self, other): return record_binary(_SUBTRACT, self, other)
    def __rsub__(self, other): return record_binary(_SUBTRACT, other, self)
    def __mul__(self, other): return record_binary(_MULTIPLY, self, other)
    def __rmul__(self, other): return record_binary(_MULTIPLY, other, self)
    def __truediv__(self, other): return record_binary(_DIVIDE, self, other)
    def __rtruediv__(self, other): return record_binary(_DIVIDE, other, self)
    def __pow__(self, other): return record_binary(_POWER, self, other)
    def __rpow__(self, other): return record_binary(_POWER, other, self)
    def __matmul__(self, other):
        kind = type(other)
        if kind is not np.ndarray and kind is not Traced and _defers_matmul(kind):
            return NotImplemented  # x @ A is the sparse A's __rmatmul__, which the engine routes
        return record_binary(_MATMUL, self, other)
    def __rmatmul__(self, other): return record_binary(_MATMUL, other, self)
    def __floordiv__(self, other): return record_binary(_FLOOR_DIVIDE, self, other)
    def __rfloordiv__(self, other): return record_binary(_FLOOR_DIVIDE, other, self)
    def __mod__(self, other): return record_binary(_REMAINDER, self, other)
    def __rmod__(self, other): return record_binary(_REMAINDER, other, self)
    def __divmod__(self, other): return record(_DIVMOD, (self, other), {})
    def __rdivmod__(self, other): return record(_DIVMOD, (other, self), {})
    def __neg__(self): return record_unary(_NEGATIVE, self)
    def __pos__(self): return self
    def __abs__(self): return record_unary(_ABS, self)
    def __lt__(self, other): return record_binary(_LESS, self, other)
    def __le__(self, other): return record_binary(_LESS_EQUAL, self, other)
    def __gt__(self, other): return record_binary(_GREATER, self, other)
    def __ge__(self, other): return record_binary(_GREATER_EQUAL, self, other)
    def __eq__(self, other):
        if type(other) is str:  # `ord in ("fro", "nuc")`: Python's and ndarray's answer
            return self.primal == other
        return record_binary(_EQUAL, self, other)

    def __ne__(self, other):
        if type(other) is str:
            return self.primal != other
        return record_binary(_NOT_EQUAL, self, other)


    def __getitem__(self, index):
        y = record_binary(_GETITEM, self, index)
        primal = y.primal if type(y) is Traced else y
        if type(primal) is _NDARRAY or type(primal) is Traced and \
                type(primal.primal) is not _F64 and \
                type(primal_value(primal)) is _NDARRAY:  # a view, if basic indexing: followed
            return writes.read_view(self, y, _item(index))
        return y

    def __setitem__(self, index, value):
        writes.write(self, index, value)

    # In-place arithmetic writes into the array, as NumPy does (see ad/dispatch/writes.py).
    def __iadd__(self, other): return writes.augmented(self, np.add, other)
    def __isub__(self, other): return writes.augmented(self, np.subtract, other)
    def __imul__(self, other): return writes.augmented(self, np.multiply, other)
    def __itruediv__(self, other): return writes.augmented(self, np.true_divide, other)
    def __ipow__(self, other): return writes.augmented(self, np.power, other)

    def fill(self, value):
        writes.write(self, Ellipsis, value)

    def put(self, indices, values, mode="raise"):
        _PUT(self, indices, values, mode)

    def sort(self, axis=-1, kind=None, order=None):
        # in place: the sorted values written over the array's (an array write)
        writes.write(self, Ellipsis, _FUNCTIONS["sort"](self, axis, kind, order))

    def partition(self, kth, axis=-1, kind="introselect", order=None):
        writes.write(self, Ellipsis, _FUNCTIONS["partition"](self, kth, axis, kind, order))

    # --- ndarray methods: each one is its NumPy function (bound when this module is imported:
    # during a trace NumPy's namespace holds the wrappers of `array_likes`), reads the primal
    # (index and truth values), or says why it is refused. tests/ad/test_idioms.py walks
    # ndarray's public names.
    sum = _method(np.sum)
    mean = _method(np.mean)
    prod = _method(np.prod)
    max = _method(np.max)
    min = _method(np.min)
    std = _method(np.std)
    var = _method(np.var)
    cumsum = _method(np.cumsum)
    cumprod = _method(np.cumprod)
    dot = _method(np.dot)
    ravel = _method(np.ravel)
    squeeze = _method(np.squeeze)
    swapaxes = _method(np.swapaxes)
    def clip(self, min=None, max=None, *args, **kwargs):  # noqa: A002 - ndarray.clip's names
        """``np.clip(self, min, max)``: either bound may be left out (``x.clip(0)``), as the
        method allows and ``np.clip`` does not."""
        return record(_CLIP, (self, min, max) + args, kwargs)

    trace = _method(np.trace)
    diagonal = _method(np.diagonal)
    take = _method(np.take)
    repeat = _method(np.repeat)
    round = _method(np.round)  # piecewise constant: a constant result
    choose = _method(np.choose)  # x holds the indices: a constant of x
    searchsorted = _method(np.searchsorted)
    argmax = _method(np.argmax)
    argmin = _method(np.argmin)
    argsort = _method(np.argsort)
    nonzero = _method(np.nonzero)
    if hasattr(np.zeros(0), "ptp"):  # NumPy 1.x (2.0 keeps a name that raises AttributeError)
        ptp = _method(np.ptp)

    def compress(self, condition, *args, **kwargs):
        """``np.compress(condition, self, ...)``."""
        return record(_FUNCTIONS["compress"], (condition, self) + args, kwargs)

    def all(self, *args, **kwargs):
        """``np.all`` of the values (a boolean: nothing to differentiate)."""
        return np.all(primal_value(self), *args, **kwargs)

    def any(self, *args, **kwargs):
        """``np.any`` of the values (a boolean: nothing to differentiate)."""
        return np.any(primal_value(self), *args, **kwargs)

    def argpartition(self, *args, **kwargs):
        """``np.argpartition`` of the values (indices: nothing to differentiate)."""
        return np.argpartition(primal_value(self), *args, **kwargs)

    def flatten(self, order="C"):
        """A flat copy: ``np.ravel(self, order)``, not followed as a view (copy on write keeps
        its values when the array is written later)."""
        return record(_FUNCTIONS["ravel"], (self, order), {})

    @property
    def flat(self):
        """``self.ravel()``: indexing and iterating it reads as ``ndarray.flat`` does."""
        return record_unary(_FUNCTIONS["ravel"], self)

    def tolist(self):
        """Nested lists of traced numbers (NumPy's gives Python numbers; these keep the
        gradient, and formatting, comparisons and ``bool()`` read their values)."""
        if self.ndim == 0:
            return self
        return [element.tolist() for element in self]

    def item(self, *args):
        """The element ``x.item(*args)`` reads, still traced (NumPy returns a Python number; a
        traced number keeps the gradient, and formatting, comparisons and ``bool()`` read its
        value; ``chainrules.primal(x).item()`` is the plain number)."""
        if not args:
            if self.size != 1:
                raise ValueError("can only convert an array of size 1 to a Python scalar")
            return self.reshape(())[()] if self.ndim else self[()]
        if len(args) == 1 and not isinstance(args[0], tuple):
            return self.reshape(-1)[args[0]]
        return self[args[0] if len(args) == 1 else args]

    def reshape(self, *shape, **kwargs):
        if _one_sequence(shape):
            shape = tuple(shape[0])
        return _followed(self, record(_FUNCTIONS["reshape"], (self, shape), kwargs),
                         lambda base: base.reshape(shape, **kwargs))

    def transpose(self, *axes):
        if _one_sequence(axes):
            axes = tuple(axes[0])
        return _followed(self, record(_FUNCTIONS["transpose"], (self, axes or None), {}),
                         lambda base: base.transpose(*axes))

    @property
    def T(self):
        return _followed(self, record_unary(_FUNCTIONS["transpose"], self), lambda base: base.T)

    @property
    def mT(self):
        """The transpose of the last two axes, as ``ndarray.mT``."""
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return _followed(self, record(_FUNCTIONS["swapaxes"], (self, -1, -2), {}),
                         lambda base: base.mT)

    @property
    def real(self):
        return _followed(self, record_unary(_FUNCTIONS["real"], self), lambda base: base.real)

    @property
    def imag(self):
        return _followed(self, record_unary(_FUNCTIONS["imag"], self), lambda base: base.imag)

    def conj(self):
        return record_unary(_CONJ, self)

    conjugate = conj

    def copy(self, order="K"):
        return record_unary(_FUNCTIONS["copy"], self) if order == "K" else \
            record(_FUNCTIONS["copy"], (self, order), {})

    def astype(self, dtype, *args, **kwargs):
        if _is_object_dtype(dtype):
            raise TracingError(_object_cast(dtype))
        return record(astype, (self, dtype), {})

    def view(self, *args, **kwargs):
        """``x.view()``: ``x`` itself (traced values are immutable); a view with another dtype
        or type reinterprets memory and is refused."""
        if args or kwargs:
            kind = kwargs.get("type", args[-1] if args else None)
            if isinstance(kind, type) and issubclass(kind, np.ma.MaskedArray):
                raise masked.masked_array_error()
            raise TracingError(_refused("view", "reinterprets the memory of the array"))
        return self

    def __copy__(self):
        # arrays can be written in place: a copy is a new array; numbers are immutable
        return self.copy() if issubclass(type(primal_value(self)), np.ndarray) else self

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __reduce_ex__(self, protocol):
        raise TypeError(
            "cannot pickle a traced value (a value being differentiated): its pickle would "
            "hold the number without its derivative. Pickle outside the differentiated "
            "function, or pickle chainrules.primal(x), the plain value (its derivative is then "
            "not followed).")


_DEFERS_MATMUL: dict = {}  # type -> whether x @ value is the value's own __rmatmul__


def _defers_matmul(kind: type) -> bool:
    """Whether ``kind`` is a SciPy sparse matrix type (its product with a dense array is its
    own, ``_rmatmul_dispatch``; ``_rmul_dispatch`` before SciPy 1.12)."""
    defers = _DEFERS_MATMUL.get(kind)
    if defers is None:
        defers = _DEFERS_MATMUL[kind] = hasattr(kind, "_rmatmul_dispatch") or hasattr(
            kind, "_rmul_dispatch")
    return defers


def _is_object_dtype(dtype: Any) -> bool:
    try:
        return np.dtype(dtype) == object
    except TypeError:  # not a dtype: NumPy's astype says so
        return False


def _object_cast(dtype: Any) -> str:
    """Why ``t.astype(dtype)`` to Python objects is refused, and what to write."""
    if isinstance(dtype, type) and issubclass(dtype, Traced):
        return ("astype(type(t)) of a traced value t: type(t) is chainrules' Traced, not the "
                "NumPy scalar type it stands for, and as a dtype it means Python objects, "
                "which would cut the values out of the gradient. Write t.dtype "
                "(np.result_type(t, 1.0) for 'at least float64').")
    return (f"astype({dtype!r}): an array of Python objects would cut the traced values out "
            "of the gradient. Keep a float or complex dtype, or build a list of the values "
            "(list(t)).")


def _elements(traced: Traced) -> Any:
    for position in range(len(traced.primal)):
        yield record_binary(_GETITEM, traced, position)


# The instructions during which Python converts a value to a number for a reason that is not
# arithmetic: `out[i] = t` (NumPy converts t to store it) and `"%.2f" % t` (string formatting).
_STORE_SUBSCR = dis.opmap["STORE_SUBSCR"]
_NDARRAY = np.ndarray  # a module's name: fewer instructions than np.ndarray per x[i]
_CLIP = np.clip  # NumPy's own, bound at import (a trace puts another in NumPy's namespace)
_F64 = np.float64  # x[i] under hvp: a number of the forward trace, not a view to follow
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
        f"{kind.__name__}(t) and C extensions (math.* functions differentiate while tracing, "
        f"as their NumPy counterparts). Keep values as NumPy values. To read the number "
        f"without differentiating, use chainrules.primal(t).")
    if instruction == _STORE_SUBSCR:
        # NumPy is storing t into a plain array (`out[i] = t`) and would replace an exception
        # raised here by its own "setting an array element with a sequence": store the value,
        # and the trace raises this error when the function returns.
        traced.tape.defer_error(TracingError(
            f"`{_source_line(frame)}` ({frame.f_code.co_filename}, line {frame.f_lineno}) "
            f"writes a traced value into a plain NumPy array, which cuts it out of the "
            f"gradient. " + writes.PLAIN_ARRAY_CAUSES))
        return kind(primal_value(traced))
    raise TracingError(message)


def _conversion_hint(line: str, frame: Any) -> str:
    """What to write instead when ``line`` converts a traced value by a call that cannot
    dispatch to it: a method of a plain ndarray (``a.dot(t)``), or a NumPy scalar type that
    is not a cast while tracing (``np.int64(t)``, ``float64(t)`` imported by name)."""
    for receiver, name in re.findall(r"(?<![\w.])([A-Za-z_]\w*)(?:\.(\w+))?\s*\(", line):
        value = frame.f_locals.get(receiver, frame.f_globals.get(receiver))
        if name and value is np:
            value, receiver = getattr(np, name, None), f"np.{name}"
        elif name and type(value) is np.ndarray and hasattr(np.ndarray, name):
            instead = f"`{receiver} @ t` or `np.dot({receiver}, t)`" if name == "dot" else \
                f"`np.{name}({receiver}, ...)`" if hasattr(np, name) else "a numpy function"
            return (f"`{receiver}.{name}(...)` is a method of the plain ndarray `{receiver}`: "
                    f"ndarray methods convert a traced argument `t` without dispatching to "
                    f"it; write {instead} instead. In general, ")
        elif name:
            continue
        if isinstance(value, type) and issubclass(value, np.generic):
            kind = value.__name__
            if issubclass(value, np.inexact):  # held where the trace does not rebind it
                return (f"`{receiver}(t)`: NumPy's scalar types cast traced values when "
                        f"called through the numpy module (`np.{kind}(t)`) or a module-level "
                        f"name; this one is held elsewhere (an attribute, a default argument, "
                        f"a container): write `t.astype(np.{kind})`. In general, ")
            return (f"`{receiver}(t)` of a traced value: integer and bool types are not "
                    f"differentiable casts; write `t.astype(np.{kind})` (a constant) or "
                    f"`np.{kind}(chainrules.primal(t))`. In general, ")
    return ""


def _memory_attribute(name: str) -> property:
    """ndarray's attribute ``name`` about its memory, which a traced value does not have (code
    working on an array's memory reads it: compiled code, np.lib.stride_tricks): a property
    that raises `MemoryAttributeError`, an AttributeError (``hasattr`` answers False). A
    property, not ``__getattr__``, which would slow every attribute read of a traced value."""
    def read(self):
        frame = sys._getframe(1)
        package, caller = _caller_of_package(frame)
        called = f"the {package} function called at {_place(caller)}" if caller else \
            f"{frame.f_code.co_name}"
        raise MemoryAttributeError(
            f"`.{name}` of a traced value, read at {_place(frame)}: "
            f"{called} works on the memory of its argument (`.strides`, `.base`, `.ctypes`, "
            f"`.data`: compiled code or np.lib.stride_tricks), which a traced value does not "
            f"have and the engine cannot follow, and it has no rule. Pass it "
            f"chainrules.primal(x) where its result needs no derivative, write the "
            f"computation with NumPy functions, or register a rule for that function "
            f"(@chainrules.rrule.register(f); docs/writing-rules.md).")

    read.__name__ = name
    return property(read, doc=f"Not available: ``.{name}`` of a traced value raises an error.")


def _place(frame: Any) -> str:
    """Where ``frame`` runs: its line of source (when there is one), file, line and function."""
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return (f"`{line}` " if line else "") + \
        f"({frame.f_code.co_filename}, line {frame.f_lineno}, in {frame.f_code.co_name})"


def _caller_of_package(frame: Any) -> tuple:
    """``(package, frame)``: the top-level package of the code running in ``frame`` and the
    frame that called into that package (``None`` if none did: the program's own code)."""
    def package_of(f: Any) -> str:
        return str(f.f_globals.get("__name__", "")).split(".")[0]

    package = package_of(frame)
    while frame.f_back is not None and package_of(frame.f_back) == package:
        frame = frame.f_back
    caller = frame.f_back
    if caller is None or package in ("__main__", "") or package_of(caller) == "chainrules":
        return package, None
    return package, caller


def _source_line(frame: Any) -> str:
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return line or "an item assignment"


def _out_message(ufunc: Any, inputs: tuple, out: tuple) -> str:
    symbol = _AUGMENTED.get(ufunc.__name__)
    if symbol and len(out) == 1 and inputs and out[0] is inputs[0]:  # Python's `a += t`
        return (f"`a {symbol} t` writes a traced value into the plain array `a` in place, "
                f"which cuts it out of the gradient (`a op= t` on a plain array is followed "
                f"when the name assigned is all that holds `a`; here something else holds it "
                f"too, or `a` is not a float array). Write `a = a {symbol[:-1]} t` (a new "
                f"value, not an update), or make `a` an array the engine follows. "
                + writes.PLAIN_ARRAY_CAUSES)
    return (f"np.{ufunc.__name__}(..., out=a) writes a traced value into the plain NumPy "
            f"array `a`, which the engine cannot follow: use the returned value, or write "
            f"into an array the engine follows. " + writes.PLAIN_ARRAY_CAUSES)


_AUGMENTED = {"add": "+=", "subtract": "-=", "multiply": "*=", "divide": "/=",
              "true_divide": "/=", "power": "**=", "floor_divide": "//=", "remainder": "%=",
              "matmul": "@="}


# Questions about shape and dtype that rules ask of their arguments (at order 2, of traced
# values): answered from the plain value, not dispatched to a trace as an operation.
_QUERIES = frozenset({np.shape, np.ndim, np.size, np.iscomplexobj, np.isrealobj})


def install(cls: type = Traced) -> None:
    """Put the methods and properties of `_ArrayInterface`, and the refused ones, on the traced
    value's class (not the interface's own bookkeeping: its ``__dict__``, ``__doc__``, and the
    ``__hash__ = None`` that defining ``__eq__`` implies; `Traced` hashes by identity)."""
    for name, value in vars(_ArrayInterface).items():
        if callable(value) or type(value) is property:
            setattr(cls, name, value)
    for name, why in REFUSED_METHODS.items():
        setattr(cls, name, _refusing(name, why))
    for name in ("strides", "base", "ctypes", "data"):  # ndarray's memory
        setattr(cls, name, _memory_attribute(name))


install()
