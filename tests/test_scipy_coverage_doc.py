"""docs/scipy-coverage.md is what ``python -m chainrules.coverage --scipy`` prints from the
registry: regenerate it when rules change (`make scipy-coverage`). Checked with the SciPy the
file was generated with (another release may list other names)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

scipy = pytest.importorskip("scipy")

from chainrules.coverage import scipy_coverage_markdown  # noqa: E402

DOC = Path(__file__).resolve().parents[1] / "docs" / "scipy-coverage.md"


def test_the_scipy_coverage_table_is_generated_from_the_registry():
    text = DOC.read_text()
    version = re.search(r"\(SciPy ([0-9.]+)\)", text)
    assert version, "docs/scipy-coverage.md names the SciPy it was generated with"
    if version.group(1) != scipy.__version__:
        pytest.skip(f"generated with SciPy {version.group(1)}, {scipy.__version__} installed")
    assert text == scipy_coverage_markdown(), (
        "docs/scipy-coverage.md is out of date: run `make scipy-coverage`")


def test_chainrules_covers_more_than_both_peers():
    table = scipy_coverage_markdown()
    special = int(re.search(r"\| special functions \| (\d+) \| (\d+) \| (\d+) \|",
                            table).group(1))
    distributions = re.search(r"\| stats distributions \(methods\) \| (\d+) \((\d+)\) \|",
                              table)
    assert special > 53 and int(distributions.group(1)) > 26 and \
        int(distributions.group(2)) > 112
