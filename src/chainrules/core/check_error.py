"""The error of the checking mode (`chainrules.core.checking`), below every module that checks.

>>> issubclass(CheckError, AssertionError)
True
"""

from __future__ import annotations

__all__ = ["CheckError"]


class CheckError(AssertionError):
    """A check of `chainrules.checking` failed: a wrong accumulation, cotangent or gradient."""
