"""Run one documentation example as the plain Python prompt would, in this (fresh) interpreter:
statement by statement, each expression's value displayed, and compare what is displayed with
the comments after the statement (tests/docs/markdown_examples.py says how examples are
written). Reads the example from stdin; exits 1 with a report when they differ."""

from __future__ import annotations

import ast
import contextlib
import doctest
import io
import sys

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
TRACEBACK = "Traceback (most recent call last):"


def expected_after(lines: list[str], end: int, compound: bool) -> list[str] | None:
    """The comment lines right after line `end` (1-based): what the statement displays. After a
    compound statement they follow its empty line, as the prompt shows them."""
    index = end
    if compound and index < len(lines) and not lines[index].strip():
        index += 1
    comments = []
    while index < len(lines) and lines[index].startswith("#"):
        comments.append(lines[index][2:] if lines[index].startswith("# ") else lines[index][1:])
        index += 1
    return comments or None


def exception_line(error: BaseException) -> list[str]:
    """The last line of a traceback, with and without the exception's module."""
    kind = type(error)
    message = str(error)
    short = f"{kind.__qualname__}: {message}" if message else kind.__qualname__
    if kind.__module__ == "builtins":
        return [short]
    return [short, f"{kind.__module__}.{short}"]


def matches(expected: str, got: str) -> bool:
    return doctest.OutputChecker().check_output(expected, got, FLAGS)


def main() -> int:
    source = sys.stdin.read()
    lines = source.splitlines()
    tree = ast.parse(source, "<example>")
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    compound = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor,
                ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)
    for statement in tree.body:
        code = compile(ast.Interactive(body=[statement]), "<example>", "single")
        shown = io.StringIO()
        raised = None
        with contextlib.redirect_stdout(shown):
            try:
                exec(code, namespace)
            except Exception as error:  # the example may say it raises
                raised = error
        expected = expected_after(lines, statement.end_lineno, isinstance(statement, compound))
        where = f"line {statement.lineno}: {lines[statement.lineno - 1].strip()}"
        if raised is not None:
            if expected is None or expected[0] != TRACEBACK:
                import traceback
                traceback.print_exception(raised)
                print(f"\n{where}: raised {exception_line(raised)[-1]}", file=sys.stderr)
                return 1
            wanted = expected[1:]
            while wanted and (wanted[0].strip() == "..." or wanted[0].startswith(" ")):
                wanted = wanted[1:]  # the traceback's frames
            if not any(matches("\n".join(wanted) + "\n", got + "\n")
                       for got in exception_line(raised)):
                print(f"{where}: expected\n  {' '.join(wanted)}\nraised\n  "
                      f"{exception_line(raised)[-1]}", file=sys.stderr)
                return 1
            continue
        got = shown.getvalue()
        if expected is not None and expected[0] == TRACEBACK:
            print(f"{where}: expected it to raise; it displayed\n{got}", file=sys.stderr)
            return 1
        if expected is None:
            if got:
                print(f"{where}: displays\n{got}but the example shows nothing: add it as "
                      "comments after the statement", file=sys.stderr)
                return 1
            continue
        if not got and not isinstance(statement, ast.Expr):
            continue  # an ordinary comment after a statement that displays nothing
        if not matches("\n".join(expected) + "\n", got):
            print(f"{where}: the example shows\n" + "\n".join(expected) +
                  f"\nbut it displays\n{got}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
