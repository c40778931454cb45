"""Every Python example of the documentation (README.md and docs/) runs on its own in a fresh
interpreter, under ``-W error``, displays what the page shows, and can be pasted at the plain
Python prompt (tests/docs/markdown_examples.py says how examples are written)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.docs.markdown_examples import examples, pages, paste_problems

# The pages show what NumPy 2 displays (np.float64(1.0), where NumPy 1 displays 1.0).
pytestmark = pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.0.0",
                                reason="the documentation shows NumPy 2's reprs")

RUNNER = Path(__file__).with_name("run_example.py")
EXAMPLES = [example for page in pages() for example in examples(page)]


def test_every_page_is_found_and_the_pages_have_examples():
    assert len(pages()) > 15
    assert len(EXAMPLES) > 60


WIDTH = 85  # what the site's code boxes show without scrolling


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.name)
def test_example_lines_fit_the_page(example):
    wide = [line for line in example.source.splitlines()
            if len(line) > WIDTH and not line.lstrip().startswith("#")]
    assert not wide, f"{example.name}: lines wider than {WIDTH} characters: {wide}"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.name)
def test_example_runs_on_its_own_and_shows_what_it_displays(example, tmp_path):
    problems = paste_problems(example.source)
    assert not problems, f"{example.name} cannot be pasted at the prompt:\n" + "\n".join(problems)
    result = subprocess.run([sys.executable, "-W", "error", str(RUNNER)], input=example.source,
                            capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, f"{example.name}:\n{result.stderr}"
