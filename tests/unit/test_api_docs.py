"""docs/api.md is generated from the protos, and every element of the protos is commented."""

from __future__ import annotations

from scripts.generate_api_docs import DOC, descriptors, missing_comments, render


def test_docs_api_md_matches_the_protos() -> None:
    assert DOC.read_text() == render(), "docs/api.md is stale: run python -m scripts.generate_api_docs"


def test_every_service_rpc_message_field_and_enum_value_is_commented() -> None:
    assert missing_comments(descriptors()) == []
