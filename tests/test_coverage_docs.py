"""docs/numpy-coverage.md and docs/scipy-coverage.md are what ``python -m chainrules.coverage
--numpy`` and ``--scipy`` print from the registry: regenerate them when rules change
(`make coverage-docs`). Each is checked with the release it was generated with (another
release may list other names)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from chainrules.coverage import numpy_coverage_markdown

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _generated_with(text: str, library: str, page: str) -> str:
    version = re.search(rf"\({library} ([0-9.]+)\)", text)
    assert version, f"docs/{page} names the {library} it was generated with"
    return version.group(1)


def test_the_numpy_coverage_page_is_generated_from_the_registry():
    text = (DOCS / "numpy-coverage.md").read_text()
    version = _generated_with(text, "NumPy", "numpy-coverage.md")
    if version != np.__version__:
        pytest.skip(f"generated with NumPy {version}, {np.__version__} installed")
    assert text == numpy_coverage_markdown(), (
        "docs/numpy-coverage.md is out of date: run `make coverage-docs`")


def test_the_numpy_coverage_page_lists_rules_and_what_is_missing():
    text = numpy_coverage_markdown()
    assert "| `np.sin` | rrule + frule |" in text
    assert "| `np.nonzero` | non-differentiable (declared) |" in text
    assert "## Differentiable, without a rule yet" in text


def test_the_scipy_coverage_table_is_generated_from_the_registry():
    scipy = pytest.importorskip("scipy")
    from chainrules.coverage import scipy_coverage_markdown

    text = (DOCS / "scipy-coverage.md").read_text()
    version = _generated_with(text, "SciPy", "scipy-coverage.md")
    if version != scipy.__version__:
        pytest.skip(f"generated with SciPy {version}, {scipy.__version__} installed")
    assert text == scipy_coverage_markdown(), (
        "docs/scipy-coverage.md is out of date: run `make coverage-docs`")


def test_chainrules_covers_more_than_both_peers():
    pytest.importorskip("scipy")
    from chainrules.coverage import scipy_coverage_markdown

    table = scipy_coverage_markdown()
    special = int(re.search(r"\| special functions \| (\d+) \| (\d+) \| (\d+) \|",
                            table).group(1))
    distributions = re.search(r"\| stats distributions \(methods\) \| (\d+) \((\d+)\) \|",
                              table)
    assert special > 53 and int(distributions.group(1)) > 26 and \
        int(distributions.group(2)) > 112
