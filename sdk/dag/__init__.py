"""Declarative DAGs: definitions as data, validated, content-addressed, run by the server.

A definition (JSON or YAML, schema in ``dag.schema.json``, format in docs/dags.md) names
activities, their dependencies and input expressions; the server runs it without a workflow
worker. This package needs no server: ``flowforge dag validate FILE`` uses it locally.

Example:
    >>> spec = parse_dag('{"name": "d", "tasks": [{"id": "a", "activity": "A", "start_to_close_timeout": "10s"}]}')
    >>> len(spec.digest)
    64
"""

from flowforge.dag._expressions import ExpressionError, Reference, evaluate, references
from flowforge.dag._loading import MAX_DOCUMENT_BYTES, load_dag, parse_dag, read_document
from flowforge.dag._spec import TIMEOUT_FIELDS, DagSpec, DagTask, parse_duration
from flowforge.dag._validation import (
    MAX_NODES,
    MAX_TASKS,
    DagValidationError,
    Violation,
    find_cycles,
    schema,
    validate_document,
)

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_NODES",
    "MAX_TASKS",
    "TIMEOUT_FIELDS",
    "DagSpec",
    "DagTask",
    "DagValidationError",
    "ExpressionError",
    "Reference",
    "Violation",
    "evaluate",
    "find_cycles",
    "load_dag",
    "parse_dag",
    "parse_duration",
    "read_document",
    "references",
    "schema",
    "validate_document",
]
