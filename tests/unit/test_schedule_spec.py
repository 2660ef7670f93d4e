"""When a schedule fires, across DST changes (server/_schedule_spec.py): every
wall-clock time a cron expression names fires exactly once a day."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from flowforge.server._schedule_spec import ScheduleSpecError, parse_spec


def _fires(zone: str, expression: str, start: str, end: str) -> list[str]:
    rule = parse_spec({"cron_expressions": [expression], "time_zone_name": zone})
    start_us = int(datetime.fromisoformat(start).timestamp() * 1_000_000)
    end_us = int(datetime.fromisoformat(end).timestamp() * 1_000_000)
    return [
        datetime.fromtimestamp(t / 1_000_000, UTC).astimezone(ZoneInfo(zone)).isoformat()
        for t in rule.times(start_us, end_us)
    ]


@pytest.mark.parametrize(
    ("zone", "start", "end", "expected"),
    [
        # Spring forward: 02:00 -> 03:00, so 02:30 does not exist; it fires when the clocks jump.
        (
            "Europe/Stockholm",
            "2026-03-28T00:00+00:00",
            "2026-03-30T12:00+00:00",
            ["2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"],
        ),
        (
            "America/New_York",
            "2026-03-07T12:00+00:00",
            "2026-03-09T12:00+00:00",
            ["2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"],
        ),
        # Fall back: 03:00 -> 02:00, so 02:30 happens twice; it fires at the first only.
        (
            "Europe/Stockholm",
            "2026-10-24T00:00+00:00",
            "2026-10-26T12:00+00:00",
            ["2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"],
        ),
    ],
)
def test_a_daily_0230_fires_once_on_every_day_including_dst_changes(
    zone: str, start: str, end: str, expected: list[str]
) -> None:
    assert _fires(zone, "30 2 * * *", start, end) == expected


def test_new_york_fall_back_fires_the_repeated_0130_once() -> None:
    assert _fires("America/New_York", "30 1 * * *", "2026-10-31T12:00+00:00", "2026-11-02T12:00+00:00") == [
        "2026-11-01T01:30:00-04:00",
        "2026-11-02T01:30:00-05:00",
    ]


def test_every_half_hour_keeps_real_time_order_through_both_changes() -> None:
    assert _fires("Europe/Stockholm", "*/30 * * * *", "2026-03-29T00:00+00:00", "2026-03-29T02:00+00:00") == [
        "2026-03-29T01:30:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-29T03:30:00+02:00",
        "2026-03-29T04:00:00+02:00",
    ]
    # The repeated hour (02:00-03:00 CET) fires nothing: its times fired in the first pass.
    assert _fires("Europe/Stockholm", "*/30 * * * *", "2026-10-25T00:00+00:00", "2026-10-25T02:00+00:00") == [
        "2026-10-25T02:30:00+02:00",
        "2026-10-25T03:00:00+01:00",
    ]


def test_intervals_are_aligned_to_the_epoch_and_ignore_the_zone() -> None:
    rule = parse_spec({"intervals": [{"every_s": 3600, "offset_s": 900}], "time_zone_name": "Europe/Stockholm"})
    base = int(datetime(2026, 3, 29, 0, 0, tzinfo=UTC).timestamp() * 1_000_000)
    assert [(t - base) // 60_000_000 for t in rule.times(base, base + 3 * 3_600_000_000)] == [15, 75, 135]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"cron_expressions": ["* * *"]}, "invalid cron expression"),
        ({"cron_expressions": ["0 0 * * * *"]}, "invalid cron expression"),
        ({"cron_expressions": ["0 0 * * *"], "time_zone_name": "Mars/Olympus"}, "unknown time zone"),
        ({"intervals": [{"every_s": 0.5}]}, "at least 1 second"),
        ({"intervals": [{"every_s": 60, "offset_s": 60}]}, "less than its every"),
        ({}, "at least one cron expression or interval"),
    ],
)
def test_invalid_specs_name_the_problem(spec: dict, message: str) -> None:
    with pytest.raises(ScheduleSpecError, match=message):
        parse_spec(spec)
