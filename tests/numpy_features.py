"""The newer NumPy and SciPy features that some tests use, found by trying them: on a release
without one (NumPy 1.26 has no ``np.clip(min=)``), those tests are skipped, saying why, and
they run everywhere else."""

from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest

from chainrules.testing import RuleCase

try:
    from scipy import __version__ as _scipy
except ImportError:
    _scipy = "not installed"
RELEASES = f"NumPy {np.__version__}, SciPy {_scipy}"

# np.clip(x, min=, max=), keyword-only (NumPy 2.1).
CLIP_MIN_MAX = "min" in inspect.signature(np.clip).parameters
# np.fft keeps complex64 for float32 and complex64 input (NumPy 2.0).
SINGLE_PRECISION_FFT = np.fft.fft(np.ones(2, np.float32)).dtype == np.complex64


def needs(available: bool, feature: str) -> pytest.MarkDecorator:
    """Skip the test where ``feature`` is not ``available``."""
    return pytest.mark.skipif(not available, reason=f"{feature}: not in {RELEASES}")


def accepted(case: RuleCase, feature: str):
    """``case`` as a test parameter, skipped where the installed releases refuse its call
    because they lack ``feature`` (``np.var(correction=)``, NumPy 2.0)."""
    try:
        case.function(*copy.deepcopy(case.args), **case.fkwargs)
        refused = ""
    except (TypeError, ValueError) as error:
        refused = f"{type(error).__name__}: {error}"
    return pytest.param(case, id=case.id, marks=pytest.mark.skipif(
        bool(refused), reason=f"{feature}: not in {RELEASES} ({refused})"))


def running(cases: list) -> list[RuleCase]:
    """The cases of a ``CASES`` list that run on the installed releases (not skipped)."""
    return [getattr(c, "values", (c,))[0] for c in cases
            if not any(m.name == "skipif" and m.args[0] for m in getattr(c, "marks", ()))]
