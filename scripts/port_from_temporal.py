"""Rewrites code written for Temporal's Python SDK (``temporalio``) to import FlowForge instead.

The rewrite is mechanical: only imports and ``temporalio`` names change, the code itself stays.
Each ``from temporalio.X import a, b`` becomes imports from the FlowForge modules holding ``a``
and ``b`` (``flowforge.X`` unless the table below moves a name, e.g. ``WorkflowFailureError`` lives
in ``flowforge.exceptions``); ``import temporalio.X`` and later ``temporalio.X.name`` references
become ``flowforge.X``. docs/coming-from-temporal.md lists what differs after the rewrite.

Usage::

    python scripts/port_from_temporal.py src/            # rewrites every .py file under src/ in place
    python scripts/port_from_temporal.py src/ --to out/  # writes the rewritten copies under out/
    python scripts/port_from_temporal.py --check src/    # exits 1 and lists the files it would change
"""

from __future__ import annotations

import argparse
import ast
import io
import sys
import tokenize
from collections.abc import Sequence
from pathlib import Path

__all__ = ["MOVED_NAMES", "port_file", "port_source", "port_tree"]

# (Temporal module, name) -> the FlowForge module that holds the name, where that is not
# the module of the same name under flowforge.
MOVED_NAMES: dict[tuple[str, str], str] = {
    ("temporalio.client", "WorkflowFailureError"): "flowforge.exceptions",
    ("temporalio.client", "WorkflowUpdateFailedError"): "flowforge.exceptions",
    ("temporalio.client", "AsyncActivityCancelledError"): "flowforge.exceptions",
    ("temporalio.client", "RPCError"): "flowforge.exceptions",
    ("temporalio.client", "WorkflowExecutionStatus"): "flowforge.common",
    ("temporalio.service", "RPCError"): "flowforge.exceptions",
    ("temporalio.service", "RPCStatusCode"): "flowforge.exceptions",
    ("temporalio.worker", "Replayer"): "flowforge.testing",
    ("temporalio.worker", "WorkflowReplayResult"): "flowforge.testing",
    ("temporalio.worker", "WorkflowReplayResults"): "flowforge.testing",
    ("temporalio.exceptions", "TemporalError"): "flowforge.exceptions",
}
# Temporal names FlowForge spells differently: imported under the Temporal name.
RENAMED: dict[tuple[str, str], str] = {
    ("temporalio.exceptions", "TemporalError"): "FlowForgeError",
}


def _is_temporal(module: str | None) -> bool:
    return module is not None and (module == "temporalio" or module.startswith("temporalio."))


def _module(temporal_module: str) -> str:
    return "flowforge" + temporal_module.removeprefix("temporalio")


def _rewrite_import_from(node: ast.ImportFrom, indent: str) -> list[str]:
    """The FlowForge import lines replacing one ``from temporalio... import ...`` statement."""
    assert node.module is not None
    grouped: dict[str, list[str]] = {}
    for alias in node.names:
        key = (node.module, alias.name)
        target = MOVED_NAMES.get(key, _module(node.module))
        name = RENAMED.get(key, alias.name)
        local = alias.asname or (alias.name if name != alias.name else None)
        grouped.setdefault(target, []).append(f"{name} as {local}" if local and local != name else name)
    return [f"{indent}from {module} import {', '.join(names)}" for module, names in grouped.items()]


def _rename_remaining(source: str) -> str:
    """``temporalio`` -> ``flowforge`` wherever it is still a name (``temporalio.workflow.x``)."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    lines = source.splitlines(keepends=True)
    # Right to left, so earlier columns on the same line stay valid.
    for token in reversed(tokens):
        if token.type == tokenize.NAME and token.string == "temporalio":
            row, col = token.start
            line = lines[row - 1]
            lines[row - 1] = line[:col] + "flowforge" + line[col + len("temporalio") :]
    return "".join(lines)


def port_source(source: str) -> str:
    """The source with its Temporal imports replaced by FlowForge's.

    Args:
        source: Python source that imports ``temporalio``.

    Returns:
        The rewritten source (unchanged when it does not mention ``temporalio``).

    Raises:
        SyntaxError: The source does not parse.
    """
    if "temporalio" not in source:
        return source
    lines = source.splitlines(keepends=True)
    replacements: list[tuple[int, int, list[str]]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _is_temporal(node.module):
            assert node.end_lineno is not None
            line = lines[node.lineno - 1]
            indent = line[: len(line) - len(line.lstrip())]
            replacements.append((node.lineno, node.end_lineno, _rewrite_import_from(node, indent)))
    for start, end, new in sorted(replacements, reverse=True):
        lines[start - 1 : end] = [f"{text}\n" for text in new]
    return _rename_remaining("".join(lines))


def port_file(path: Path, destination: Path | None = None) -> bool:
    """Rewrites one file in place (or into ``destination``); whether its text changed."""
    original = path.read_text()
    ported = port_source(original)
    target = destination or path
    if destination is not None or ported != original:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(ported)
    return ported != original


def port_tree(source: Path, destination: Path | None = None) -> list[Path]:
    """Rewrites every ``.py`` file under ``source`` (a file or folder); the files that changed.

    With ``destination`` the tree is copied there (Python files rewritten) and ``source`` is untouched.
    """
    files = [source] if source.is_file() else sorted(source.rglob("*.py"))
    changed = []
    for path in files:
        relative = path.relative_to(source) if source.is_dir() else Path(path.name)
        if port_file(path, destination / relative if destination is not None else None):
            changed.append(path)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help="files or folders of Temporal code")
    parser.add_argument("--to", type=Path, help="write the rewritten copies here instead of in place")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    options = parser.parse_args(argv)
    changed: list[Path] = []
    for path in options.paths:
        if options.check:
            files = [path] if path.is_file() else sorted(path.rglob("*.py"))
            changed += [f for f in files if port_source(f.read_text()) != f.read_text()]
        else:
            destination = options.to / path.name if options.to is not None and path.is_dir() else options.to
            changed += port_tree(path, destination)
    for path in changed:
        print(f"{'would port' if options.check else 'ported'} {path}")
    return 1 if options.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
