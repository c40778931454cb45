"""Shared by every test and doctest (tests/, README.md, docs/, src/): this folder is on
sys.path, so tests import their helpers as ``tests.numpy_features``.

The doctests show NumPy scalars as NumPy 2 prints them, ``np.float64(5.0)``. NumPy 1 prints the
same value as ``5.0``: there, each expected output is read the NumPy 1 way before it is
compared (the value compared is the same; only its spelling differs).
"""

from __future__ import annotations

import re

import numpy as np

# The library-like package that the tests use installed (under site-packages, by `make test`),
# never from its source folder.
collect_ignore = ["tests/site_package"]

_TYPED_SCALAR_REPR = repr(np.float64(0.5)) != "0.5"
_SCALAR = re.compile(r"np\.(True_|False_|[a-z_]+[0-9]*)(?:\(([^()]*)\))?")


def _numpy_1_spelling(match: re.Match) -> str:
    """``np.float64(5.0)`` -> ``5.0``, ``np.complex128(1+2j)`` -> ``(1+2j)``,
    ``np.True_`` -> ``True``; any other ``np.`` name is left as it is."""
    name, inner = match.group(1), match.group(2)
    kind = getattr(np, name, None)
    if name in ("True_", "False_") and inner is None:
        return name[:-1]
    if inner is None or not (isinstance(kind, type) and issubclass(kind, np.generic)):
        return match.group(0)
    if issubclass(kind, np.complexfloating):
        return repr(complex(inner))
    return inner


def pytest_collection_modifyitems(items: list) -> None:
    if _TYPED_SCALAR_REPR:
        return
    for item in items:
        for example in getattr(getattr(item, "dtest", None), "examples", ()):
            example.want = _SCALAR.sub(_numpy_1_spelling, example.want)
