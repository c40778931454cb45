"""A checking mode: what is too slow to do always, turned on while looking for a wrong gradient.

``with chainrules.checking():`` (or ``CHAINRULES_CHECK=1`` in the environment, for a whole run;
``CHAINRULES_CHECK=directional`` adds the directional check) makes the engines check, at every
step of every transform inside it:

- every in-place accumulation against the eager sum it stands for (``acc + unthunk(t)``): an
  `InplaceableThunk` whose ``add`` disagrees with its value, a sparse cotangent that adds
  itself wrongly (ChainRules.jl's getindex defect) is caught where it happens;
- every cotangent a rule's pullback returns against its primal's shape and dtype (lazy ones
  computed to be checked) and its kind (a tuple of one per argument);
- the first NaN or infinity a pullback makes from a finite cotangent, reported with the
  operation and the line of the user's code that recorded it;
- with ``directional=True``, each gradient (``grad``, ``value_and_grad``) against a central
  finite difference of the function along one random direction: two more evaluations, which
  catch what no structural check can (a library returning a value it cached from an untraced
  call, a wrong user rule).

A failed check raises `CheckError`. Off by default; off, it costs one flag test per owned
accumulation and per backward pass. The mode is process-wide (all threads), like NumPy's
print options.

>>> import numpy as np
>>> import chainrules as cr
>>> with cr.checking():
...     try:
...         cr.grad(lambda x: np.sum(np.sqrt(x)))(np.array([1.0, 0.0]))
...     except cr.CheckError as error:
...         print(str(error).splitlines()[0])
checking: the pullback of numpy.sqrt made inf from a finite cotangent (argument 0):
"""

from __future__ import annotations

import os
from typing import Any

from .accumulate import check_in_place
from .check_error import CheckError

__all__ = ["CheckError", "checking", "is_checking", "checks_directions"]


class _State:
    __slots__ = ("on", "directional")

    def __init__(self) -> None:
        self.on = False
        self.directional = False


_STATE = _State()


def _set(on: bool, directional: bool) -> None:
    _STATE.on, _STATE.directional = on, directional
    check_in_place(on)


def is_checking() -> bool:
    """Whether the checking mode is on.

    >>> is_checking()
    False
    """
    return _STATE.on


def checks_directions() -> bool:
    """Whether the checking mode compares gradients with finite differences.

    >>> with checking(directional=True):
    ...     checks_directions()
    True
    """
    return _STATE.on and _STATE.directional


class checking:  # noqa: N801 - used as a function: ``with chainrules.checking():``
    """Turn the checking mode on inside a ``with`` block (see the module's docstring).

    >>> with checking():
    ...     is_checking()
    True
    >>> is_checking()
    False
    """

    def __init__(self, directional: bool = False):
        self.directional = bool(directional)
        self._saved: tuple = ()

    def __enter__(self) -> "checking":
        self._saved = (_STATE.on, _STATE.directional)
        _set(True, self.directional or _STATE.directional)
        return self

    def __exit__(self, *exc: Any) -> None:
        _set(*self._saved)


_ENVIRONMENT = os.environ.get("CHAINRULES_CHECK", "").strip().lower()
if _ENVIRONMENT not in ("", "0", "false", "no", "off"):
    _set(True, _ENVIRONMENT == "directional")
