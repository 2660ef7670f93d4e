"""docs/cli.md is generated from the command tree: it must be what the generator renders now."""

from __future__ import annotations

from scripts.generate_cli_docs import DOC, render


def test_docs_cli_md_matches_the_command_tree() -> None:
    assert DOC.read_text() == render(), "docs/cli.md is stale: run python -m scripts.generate_cli_docs"
