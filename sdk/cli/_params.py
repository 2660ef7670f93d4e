"""Parameter types shared by the commands: each turns bad input into one line naming the flag."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import click

__all__ = ["JSON", "MOMENT", "NAME_VALUE"]


class _Json(click.ParamType[Any, str]):
    """A JSON value: ``'"text"'``, ``42``, ``'{"a": 1}'``."""

    name = "json"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except ValueError:
            self.fail(f"{value!r} is not JSON (a string needs double quotes: '\"text\"')", param, ctx)


class _Moment(click.ParamType[datetime, str]):
    """An ISO 8601 time with an offset, e.g. ``2026-03-01T00:00:00+00:00`` (``Z`` works too)."""

    name = "time"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            return value
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            self.fail(f"{value!r} is not an ISO 8601 time, e.g. 2026-03-01T00:00:00+00:00", param, ctx)
        if moment.tzinfo is None:
            self.fail(f"{value!r} needs an offset, e.g. {value}+00:00", param, ctx)
        return moment


class _NameValue(click.ParamType[tuple[str, str], str]):
    """``NAME=VALUE``, split at the first ``=``."""

    name = "name=value"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, str]:
        if isinstance(value, tuple):
            return value  # already converted (a default)
        name, equals, rest = str(value).partition("=")
        if not equals or not name:
            self.fail(f"expected NAME=VALUE, got {value!r}", param, ctx)
        return name, rest


JSON = _Json()
MOMENT = _Moment()
NAME_VALUE = _NameValue()
