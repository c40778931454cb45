"""The functions of SciPy's vendored array-API layers (``scipy._lib.array_api_compat.numpy``,
``scipy._lib.array_api_extra``) that SciPy's own functions call and that an engine cannot
trace as they are written, in NumPy's public functions, which have rules: ``clip`` fills an
array it makes itself (``scipy.stats.pearsonr`` clips its coefficient with it),
``linalg.solve`` calls NumPy's private solver on arrays it converts itself
(``scipy.signal.lfilter_zi``, which ``filtfilt`` calls), and ``apply_where`` (``f1`` where a
condition holds, ``f2`` elsewhere, each on its own elements only: SciPy's distributions'
formulas) writes both into an array it makes, as do SciPy's older helpers ``_lazywhere`` and
``_lazyselect`` (``scipy._lib._util``). An engine runs these versions while it traces
(``TRACED_PATHS`` in `chainrules.ad.dispatch.routes`). ``at_update`` is ``array_api_extra``'s
``at(x)[idx].multiply(y)`` and the like without an operation in place on a view of ``x``
(``x[idx] *= y``), which an engine cannot follow: an engine calls it where ``x`` or ``y``
holds traced values (`chainrules.ad.dispatch.array_api_updates`).

>>> import numpy as np
>>> clip(np.array([-2.0, 0.5, 3.0]), -1.0, 1.0).tolist()
[-1.0, 0.5, 1.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["apply_where", "at_update", "clip", "lazyselect", "lazywhere", "solve"]


def clip(x: Any, /, min: Any = None, max: Any = None, out: Any = None) -> Any:  # noqa: A002
    """The array API's ``clip``: ``np.clip`` in ``x``'s dtype (a NaN bound gives NaN, as
    NumPy's), broadcast to the shapes of the bounds.

    >>> clip(np.ones(2, dtype=np.float32), 0.0, np.array([0.5, 2.0])).dtype
    dtype('float32')
    """
    if out is not None:
        raise NotImplementedError("clip: out= is not supported in differentiated code; use "
                                  "the returned array.")
    shape = np.broadcast_shapes(*(np.shape(v) for v in (x, min, max) if v is not None))
    clipped = np.copy(x) if min is None and max is None else np.clip(x, min, max)
    if np.shape(clipped) != shape or not shape:
        # a new array, not a view; a 0-d array rather than the array API's number: SciPy
        # writes into the result where it is writeable, which it takes a traced number to be
        clipped = np.array(np.broadcast_to(clipped, shape))
    return clipped if clipped.dtype == x.dtype else clipped.astype(x.dtype)


def solve(x1: Any, x2: Any, /) -> Any:
    """The array API's ``linalg.solve``: ``x2`` a vector only when it is 1-d, else a stack of
    matrices (NumPy 2's rule; NumPy 1.26's ``np.linalg.solve`` takes a ``x2`` of one
    dimension fewer than ``x1`` as vectors, so the matrices are broadcast to one stack here).

    >>> solve(np.eye(2) * 2.0, np.array([2.0, 4.0])).tolist()
    [1.0, 2.0]
    """
    if np.ndim(x2) == 1:
        return np.linalg.solve(x1, x2)
    batch = np.broadcast_shapes(np.shape(x1)[:-2], np.shape(x2)[:-2])
    return np.linalg.solve(np.broadcast_to(x1, batch + np.shape(x1)[-2:]),
                           np.broadcast_to(x2, batch + np.shape(x2)[-2:]))


def apply_where(cond: Any, f1: Any, f2: Any, fill_value: Any, *args: Any, xp: Any = None) -> Any:
    """The array API extra's ``apply_where`` on arguments already broadcast to ``cond``'s
    shape: ``f1`` of the elements where ``cond`` holds, ``f2`` of the others (or
    ``fill_value``), each called on its own elements only, as SciPy's; the two results joined
    by a gather (differentiable), not written into an array.

    >>> apply_where(np.array([True, False, True]), np.sqrt, None, -1.0,
    ...             np.array([4.0, -1.0, 9.0])).tolist()
    [2.0, -1.0, 3.0]
    """
    cond = np.asarray(cond)
    shape = np.shape(cond)
    inside, outside = np.flatnonzero(cond), np.flatnonzero(~cond)
    flat = [np.reshape(arg, (-1,)) for arg in args]
    first = f1(*(arg[inside] for arg in flat))
    if f2 is not None:
        second = f2(*(arg[outside] for arg in flat))
    else:
        second = np.reshape(fill_value, (-1,))[outside] if np.ndim(fill_value) else \
            np.full(outside.shape, fill_value, dtype=np.result_type(first.dtype, fill_value))
    joined = np.concatenate([np.reshape(first, (-1,)), np.reshape(second, (-1,))])
    return np.reshape(joined[np.argsort(np.concatenate([inside, outside]), kind="stable")],
                      shape)


def lazywhere(cond: Any, arrays: Any, f: Any, fillvalue: Any = None, f2: Any = None) -> Any:
    """SciPy's ``_lazywhere``: `apply_where` on ``cond`` and ``arrays`` broadcast together.

    >>> lazywhere(np.array([1.0, 4.0]) > 2, (np.array([1.0, 4.0]),), np.sqrt, 0.0).tolist()
    [0.0, 2.0]
    """
    if fillvalue is None and f2 is None:
        raise ValueError("One of (fillvalue, f2) must be given.")
    if fillvalue is not None and f2 is not None:
        raise ValueError("Only one of (fillvalue, f2) can be given.")
    cond, *arrays = np.broadcast_arrays(cond, *arrays)
    return apply_where(cond, f, f2, fillvalue, *arrays)


def lazyselect(condlist: Any, choicelist: Any, arrays: Any, default: Any = 0) -> Any:
    """SciPy's ``_lazyselect``: each ``choicelist[i]`` of the elements where ``condlist[i]``
    holds (a later condition over an earlier one, as SciPy's writes in turn), ``default``
    elsewhere; the pieces joined by a gather.

    >>> x = np.array([-1.0, 0.5, 3.0])
    >>> lazyselect([x < 0, x > 1], [np.negative, np.sqrt], (x,), np.nan).tolist()
    [1.0, nan, 1.7320508075688772]
    """
    arrays = np.broadcast_arrays(*arrays)
    shape = np.shape(arrays[0])
    flat = [np.reshape(array, (-1,)) for array in arrays]
    count = flat[0].shape[0]
    dtype = np.mintypecode([np.dtype(array.dtype).char for array in arrays])
    pieces = [np.full(count, default, dtype=dtype)]
    source, offset = np.arange(count), count
    for func, cond in zip(choicelist, condlist):
        if np.all(cond is False):
            continue
        chosen = np.flatnonzero(np.broadcast_to(cond, shape))
        piece = np.reshape(func(*(array[chosen] for array in flat)), (-1,))
        if piece.shape[0] != chosen.size:  # a number (often of no element), repeated as
            piece = piece[np.arange(chosen.size) % piece.shape[0]]  # np.place repeats it
        pieces.append(piece)
        source[chosen] = offset + np.arange(chosen.size)
        offset += chosen.size
    return np.reshape(np.concatenate(pieces)[source], shape)


def at_update(x: Any, index: Any, operation: Any, y: Any, copy: Any = None) -> Any:
    """``x`` with its entries ``index`` set to ``y``, or to ``operation(x[index], y)``: a copy
    (``x`` itself for ``copy=False``), written once, never through a view.

    >>> import operator
    >>> at_update(np.ones(3), slice(1, None), operator.mul, -1.0).tolist()
    [1.0, -1.0, -1.0]
    """
    updated = x if copy is False else np.array(x, copy=True)
    updated[index] = y if operation is None else operation(updated[index], y)
    return updated
