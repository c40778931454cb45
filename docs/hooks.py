"""MkDocs hook: the benchmark plots that `make bench` writes into benchmarks/results/ are
served as images/<name>.png, so the performance page shows the latest run without a copy."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def on_files(files, config):
    for plot in sorted(RESULTS.glob("*.png")):
        files.append(File.generated(config, f"images/{plot.name}", abs_src_path=str(plot)))
    return files
