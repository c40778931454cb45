"""Rules for ``scipy.linalg``'s matrices built from the elements of vectors: ``toeplitz``,
``circulant`` and ``hankel``.

Each output element is an element of an input (or its conjugate: ``toeplitz(c)`` puts
``conj(c)`` above the diagonal; or a zero: ``hankel(c)``'s lower right triangle), so the
functions are linear and their pushforward is the function of the tangents. Where each output
reads is found by calling the SciPy function itself on integer positions (each input's
elements numbered one after another, ``-1`` for the zeros SciPy puts), which follows whatever
the installed SciPy does with several dimensions (SciPy 1.17 reads them as a batch, older
releases ravel them). The cotangent of an input sums the output cotangents of the elements
that read it (conjugated where the output is a conjugate).

>>> import numpy as np, scipy.linalg
>>> from chainrules import rrule
>>> y, pullback = rrule(scipy.linalg.toeplitz, np.array([1.0, 2.0, 3.0]))
>>> pullback(np.ones((3, 3)))[1]
array([3., 4., 2.])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sla

from ....core.dtypes import tangent_dtype
from ....core.sparse import scatter_sum
from ...define import Call, define, linear

__all__: list = []


class _Reads:
    """Where each output element of a call reads its inputs: ``index`` (positions in the
    inputs laid end to end, ravelled; -1: a zero), ``conjugated`` (a mask, or None), and each
    input's ``(start, shape)``."""

    __slots__ = ("index", "conjugated", "parts")


def _reads(call: Call) -> _Reads:
    name = call.rule.f.__name__
    arrays = [np.asarray(argument) for argument in call.args[:2] if argument is not None]
    reads, start, numbered = _Reads(), 0, []
    reads.parts = []
    for array in arrays:
        numbered.append(start + np.arange(array.size).reshape(array.shape))
        reads.parts.append((start, array.shape))
        start += array.size
    reads.conjugated = None
    if len(arrays) == 1 and name == "toeplitz":  # r = conj(c): numbered apart, read back
        size = arrays[0].size
        index = sla.toeplitz(numbered[0], numbered[0] + size)
        reads.conjugated = index >= size
        index = np.where(reads.conjugated, index - size, index)
    elif len(arrays) == 1 and name == "hankel":  # r = zeros
        index = sla.hankel(numbered[0], np.full(arrays[0].shape, -1))
    else:
        index = getattr(sla, name)(*numbered)
    reads.index = index
    return reads


def _gathered(call: Call, dy: Any) -> Any:
    """The output cotangent summed onto the inputs laid end to end."""
    reads = call.memo(_reads)
    if reads.conjugated is not None:
        dy = np.where(reads.conjugated, np.conj(dy), dy)
    index, values = np.ravel(reads.index), np.ravel(dy)
    kept = index >= 0
    size = sum(int(np.prod(shape)) for _, shape in reads.parts)
    dtype = tangent_dtype(np.result_type(call.y.dtype, np.result_type(dy))) or np.float64
    return scatter_sum((size,), dtype, (index[kept],), values[kept])


def _input_cotangent(call: Call, gathered: Any, position: int) -> Any:
    start, shape = call.memo(_reads).parts[position]
    return np.reshape(gathered[start:start + int(np.prod(shape))], shape)


for _function in (sla.toeplitz, sla.circulant, sla.hankel):
    define(_function, every=_input_cotangent, prepare=_gathered, pushforward=linear,
           refused=())
