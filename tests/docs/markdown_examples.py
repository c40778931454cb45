"""The Python examples of the documentation, as a reader sees them: every ```python block of
README.md, DEVELOPERS.md and docs/, each a program of its own, pasteable at the plain Python prompt.

A block is written as a session at the prompt would show it, without the prompts: after an
expression, the lines of comments that follow it are what the prompt displays (its ``repr``
and anything it prints), so the reader can compare. ``...`` in them stands for any text, and a
``# Traceback (most recent call last):`` comment says the statement raises, with the last line
naming the exception and its message.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The statements the plain prompt reads until an empty line.
COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor,
            ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)


@dataclass(frozen=True)
class Example:
    """One ```python block: the page it is on, its first line there, its source."""

    page: Path
    line: int
    source: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """Every page of the documentation: README.md, DEVELOPERS.md and the Markdown under docs/."""
    return [ROOT / "README.md", ROOT / "DEVELOPERS.md", *sorted((ROOT / "docs").rglob("*.md"))]


def examples(page: Path) -> list[Example]:
    """The ```python blocks of a page, in order."""
    found = []
    lines = page.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = re.fullmatch(r"( *)```python\s*", lines[index])
        if opening:
            indent = len(opening.group(1))
            start = index + 1
            index = start
            while lines[index].strip() != "```":
                index += 1
            body = "\n".join(line[indent:] for line in lines[start:index])
            found.append(Example(page, start + 1, body + "\n"))
        index += 1
    return found


def statement_start(statement: ast.stmt) -> int:
    """The first line of a statement, its decorators included (1-based)."""
    decorators = getattr(statement, "decorator_list", [])
    return min([statement.lineno] + [d.lineno for d in decorators])


def paste_problems(source: str) -> list[str]:
    """Why pasting this block at the plain Python prompt would fail: the prompt ends a
    compound statement (def, for, class, ...) at its first empty line, and needs one after it."""
    lines = source.splitlines()
    problems = []
    for statement in ast.parse(source).body:
        if not isinstance(statement, COMPOUND):
            continue
        start, end = statement_start(statement), statement.end_lineno
        strings = {line for node in ast.walk(statement)
                   if isinstance(node, ast.Constant) and isinstance(node.value, str)
                   for line in range(node.lineno, node.end_lineno + 1)}
        for number in range(start, end + 1):
            if not lines[number - 1].strip() and number not in strings:
                problems.append(f"line {number}: an empty line inside the statement of line "
                                f"{start} ends it at the prompt")
        if end < len(lines) and lines[end].strip():
            problems.append(f"line {end + 1}: the statement of line {start} needs an empty "
                            "line after it at the prompt")
    return problems
