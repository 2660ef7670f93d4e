"""Building and reading history event attributes (JSON, snake_case, see docs/history-events.md)."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import duration_pb2

from flowforge.api.v1 import common_pb2
from flowforge.converter import json_dict_to_message, message_to_json_dict

__all__ = ["dumps", "duration_s", "failure_from_json", "failure_json", "payloads_from_json", "payloads_json"]


def dumps(attributes: dict[str, Any]) -> str:
    """Canonical JSON for attributes: byte-identical whenever the content is."""
    return json.dumps(attributes, sort_keys=True, separators=(",", ":"))


def duration_s(duration: duration_pb2.Duration) -> float:
    return duration.seconds + duration.nanos / 1e9


def payloads_json(payloads: common_pb2.Payloads) -> dict[str, Any]:
    return message_to_json_dict(payloads)


def payloads_from_json(value: dict[str, Any] | None) -> common_pb2.Payloads:
    return json_dict_to_message(value, common_pb2.Payloads)


def failure_json(failure: common_pb2.Failure) -> dict[str, Any]:
    return message_to_json_dict(failure)


def failure_from_json(value: dict[str, Any] | None) -> common_pb2.Failure:
    return json_dict_to_message(value, common_pb2.Failure)
