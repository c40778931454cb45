"""Griffe extension for the API reference: the ``>>>`` examples of docstrings are shown as
Python console code blocks (a docstring's example runs until its first empty line, as doctest
reads it), not as Markdown text."""

from __future__ import annotations

import griffe


def fence_examples(text: str) -> str:
    """Wrap each run of doctest lines in a ```pycon block."""
    lines = text.splitlines()
    out: list[str] = []
    index = 0
    while index < len(lines):
        if lines[index].lstrip().startswith(">>>"):
            indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
            out.append(f"{indent}```pycon")
            while index < len(lines) and lines[index].strip():
                out.append(lines[index])
                index += 1
            out.append(f"{indent}```")
            continue
        out.append(lines[index])
        index += 1
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    """Fence the doctest examples of every docstring the reference shows."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_examples(obj.docstring.value)
