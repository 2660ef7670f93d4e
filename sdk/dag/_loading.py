"""Reading a definition from JSON or YAML text or a file, validated into a :class:`DagSpec`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flowforge.dag._spec import DagSpec
from flowforge.dag._validation import DagValidationError, Violation, validate_document

__all__ = ["MAX_DOCUMENT_BYTES", "load_dag", "parse_dag", "read_document"]

MAX_DOCUMENT_BYTES = 1024 * 1024
"""The largest definition accepted, in bytes of text."""


def read_document(text: str | bytes) -> Any:
    """The JSON or YAML document of ``text`` (JSON is tried first; YAML is its superset).

    Raises:
        DagValidationError: the text is too large or is neither JSON nor YAML.
    """
    size = len(text.encode() if isinstance(text, str) else text)
    if size > MAX_DOCUMENT_BYTES:
        raise DagValidationError([Violation("$", f"{size} bytes, more than the limit of {MAX_DOCUMENT_BYTES}")])
    try:
        return json.loads(text)
    except ValueError:
        pass
    import yaml  # on first use: JSON needs no YAML parser

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise DagValidationError([Violation("$", f"neither JSON nor YAML: {error}")]) from None


def parse_dag(source: str | bytes | Mapping[str, Any]) -> DagSpec:
    """The validated spec of a definition given as JSON/YAML text or as a loaded document.

    Raises:
        DagValidationError: listing every violation, each with its path.
    """
    document = read_document(source) if isinstance(source, str | bytes) else source
    violations = validate_document(document)
    if violations:
        raise DagValidationError(violations)
    return DagSpec.from_document(document)


def load_dag(path: str | Path) -> DagSpec:
    """The validated spec of a ``.json``, ``.yaml`` or ``.yml`` file.

    Raises:
        DagValidationError: listing every violation, each with its path.
        OSError: the file cannot be read.
    """
    return parse_dag(Path(path).read_bytes())
