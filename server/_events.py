"""The history protocol's JSON helpers, now in :mod:`flowforge.api.schema` (re-exported
here until the engine imports them from there)."""

from __future__ import annotations

from flowforge.api.schema import (
    dumps,
    duration_s,
    failure_from_json,
    failure_json,
    payloads_from_json,
    payloads_json,
)

__all__ = ["dumps", "duration_s", "failure_from_json", "failure_json", "payloads_from_json", "payloads_json"]
