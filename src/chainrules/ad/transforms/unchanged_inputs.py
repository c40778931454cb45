"""A pullback that outlives its call refuses to run on arrays changed under it.

``y, pullback = vjp(f, x)`` records ``f`` reading ``x``'s buffer; the rules' pullbacks read it
again when ``pullback`` is called (``sin``'s derivative is ``cos(x)``). If the caller writes
into ``x`` in between (``x[:] = 0``, an optimiser's in-place step), the pullback would return
the gradient at other values, silently. JAX avoids this by copying every input; PyTorch counts
the versions of each tensor and raises. NumPy arrays have no version counter, so `vjp` takes a
checksum (CRC-32) of every float or complex array among the arguments and the function's
closure once the forward pass is over, and the pullback compares them before it runs: O(size)
time at each end, no copy, and a loud error naming the argument and the path when one changed.

Arrays that ``f`` reaches by other roads (module globals, attributes of objects that are not
arguments) are not checked: copy them, or change them only after the last pullback call.
``grad``, ``value_and_grad`` and ``jacobian`` run their pullbacks before returning, so nothing can
change in between and they check nothing.

>>> import numpy as np
>>> guard = InputFingerprints(lambda x: x, (np.ones(2),))
>>> guard.check("vjp")
"""

from __future__ import annotations

import zlib
from typing import Any, Callable, Sequence

import numpy as np

from ...core.naming import function_name
from ...core.structure import leaves

__all__ = ["InputFingerprints"]


def _is_checked_array(value: Any) -> bool:
    return type(value) is np.ndarray and value.dtype.kind in "fc"


def _checksum(array: np.ndarray) -> int:
    data = array if array.flags.c_contiguous else np.ascontiguousarray(array)
    return zlib.crc32(data.reshape(-1).view(np.uint8)) if data.size else 0


def _describe(where: Any, path: tuple) -> str:
    return f"{where}" + "".join(f"[{key!r}]" for key in path)


class InputFingerprints:
    """Checksums of the float and complex arrays of ``f`` (its closure, its attributes) and of
    ``args``, taken now, compared by `check`."""

    __slots__ = ("_function", "_entries")

    def __init__(self, f: Callable, args: Sequence):
        self._function = f
        self._entries: list = []
        for where, value in [("the function's closure", f)] + \
                [(f"argument {position}", arg) for position, arg in enumerate(args)]:
            for path, array in leaves(value, _is_checked_array):
                self._entries.append((where, path, array, array.shape, array.dtype,
                                      _checksum(array)))

    def check(self, transform: str) -> None:
        """Raise ``ValueError`` if an array changed since the fingerprints were taken."""
        for where, path, array, shape, dtype, checksum in self._entries:
            if array.shape != shape or array.dtype != dtype or _checksum(array) != checksum:
                raise ValueError(
                    f"{transform}: {_describe(where, path)} of "
                    f"{function_name(self._function)} changed after {transform} returned, and "
                    f"its pullback reads it: the cotangents would be those at other values. "
                    f"Change a copy (x = x.copy() before writing into it), or call {transform} "
                    f"again after the change.")
