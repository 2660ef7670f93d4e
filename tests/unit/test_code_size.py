"""Size guard: no hand-written module or class grows past what a reader takes in at one sitting.

Issue 11 split the engine into rooms because one 1,800-line class was hard to live in; this test
keeps that true as features land. Code lines are lines that are not blank, not comment-only and
not part of a docstring. The generated API (`sdk/api/v1`) and symlinked paths (`sdk/server`,
`sdk/worker`, which point at the real folders checked on their own) are not counted.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("server", "sdk", "worker")
GENERATED = ROOT / "sdk" / "api" / "v1"
MAX_MODULE_CODE_LINES = 650
MAX_CLASS_CODE_LINES = 400


def _hand_written_modules() -> list[Path]:
    """Lists the .py files under the three package folders, skipping generated code and symlinks."""
    modules: list[Path] = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            crossed = [ROOT.joinpath(*relative.parts[: i + 1]) for i in range(len(relative.parts))]
            if any(part.is_symlink() for part in crossed) or path.is_relative_to(GENERATED):
                continue
            modules.append(path)
    return modules


def _docstring_lines(tree: ast.Module) -> set[int]:
    """Returns the line numbers covered by module, class and function docstrings."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = node.body[0] if node.body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def _code_lines(source: str, tree: ast.Module) -> set[int]:
    """Returns the line numbers that carry code (tokens other than comments, newlines, indents)."""
    skipped = {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skipped:
            lines.update(range(token.start[0], token.end[0] + 1))
    return lines - _docstring_lines(tree)


def _measure() -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """Returns (module, code lines) and (module::Class, code lines) for every hand-written module."""
    modules: list[tuple[str, int]] = []
    classes: list[tuple[str, int]] = []
    for path in _hand_written_modules():
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=str(path))
        code = _code_lines(source, tree)
        name = str(path.relative_to(ROOT))
        modules.append((name, len(code)))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                span = range(node.lineno, (node.end_lineno or node.lineno) + 1)
                classes.append((f"{name}::{node.name}", len(code.intersection(span))))
    return modules, classes


def test_no_module_or_class_over_the_size_limit() -> None:
    """Every module stays within 650 code lines and every class within 400 (issue 11)."""
    modules, classes = _measure()
    assert modules, "no modules found: the package folders moved?"
    big_modules = [(name, n) for name, n in modules if n > MAX_MODULE_CODE_LINES]
    big_classes = [(name, n) for name, n in classes if n > MAX_CLASS_CODE_LINES]
    report = [f"module {name}: {n} code lines (max {MAX_MODULE_CODE_LINES})" for name, n in big_modules]
    report += [f"class {name}: {n} code lines (max {MAX_CLASS_CODE_LINES})" for name, n in big_classes]
    print("\n".join(report))
    assert not report, "split along concept lines:\n" + "\n".join(report)
