"""When a schedule fires: cron expressions in an IANA time zone and fixed intervals.

Cron expressions are evaluated on the zone's wall clock, and every wall-clock time
a cron expression names fires exactly once (docs/schedules.md, "DST"):

- a time that does not exist (skipped by a spring-forward change, e.g. 02:30 in
  Europe/Stockholm on the last Sunday of March) fires at the instant the clocks
  jump (03:00 local), so a daily 02:30 schedule still runs that day, once;
- a time that exists twice (repeated by a fall-back change) fires at its first
  occurrence only.

Intervals are counted from the Unix epoch (plus an offset), in absolute time, so
they ignore the time zone. All times are integer microseconds since the epoch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

__all__ = ["ScheduleSpecError", "SpecRule", "parse_spec"]

_SECOND_US = 1_000_000
# A cron expression's next fire more than this far away counts as "never".
_HORIZON = timedelta(days=5 * 366)


class ScheduleSpecError(ValueError):
    """The spec cannot be evaluated (bad cron expression, unknown zone, bad interval)."""


def _us(moment: datetime) -> int:
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * _SECOND_US + delta.microseconds


def _utc(us: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)


def _local_to_us(naive: datetime, zone: ZoneInfo) -> int:
    """The instant a wall-clock time names: its first occurrence if repeated, the
    moment the clocks jumped if it was skipped."""
    first = naive.replace(tzinfo=zone, fold=0)
    instant = _us(first)
    if _utc(instant).astimezone(zone).replace(tzinfo=None) == naive:
        return instant
    # Skipped: fold=0 reads it with the offset before the jump, which lands after
    # the jump; fold=1 reads it with the offset after, which lands before. The jump
    # lies between; find it to the second.
    low, high = _us(naive.replace(tzinfo=zone, fold=1)), instant
    offset_before = _utc(low).astimezone(zone).utcoffset()
    while high - low > _SECOND_US:
        middle = (low + high) // 2 // _SECOND_US * _SECOND_US
        if _utc(middle).astimezone(zone).utcoffset() == offset_before:
            low = middle
        else:
            high = middle
    return high


@dataclasses.dataclass(frozen=True)
class SpecRule:
    """A validated schedule spec (the JSON stored in ``schedules.spec``)."""

    cron_expressions: tuple[str, ...]
    intervals: tuple[tuple[int, int], ...]
    """(every_us, offset_us) pairs."""
    zone: ZoneInfo

    def _cron_after(self, expression: str, after_us: int) -> int | None:
        # Iterate on the naive wall clock (croniter then knows nothing of DST) and map
        # each wall-clock time to its instant; skip those not after ``after_us``
        # (a repeated hour maps back to its first occurrence).
        local = _utc(after_us).astimezone(self.zone).replace(tzinfo=None)
        iterator = croniter(expression, local)
        limit = local + _HORIZON
        while True:
            candidate: datetime = iterator.get_next(datetime)
            if candidate > limit:
                return None
            instant = _local_to_us(candidate, self.zone)
            if instant > after_us:
                return instant

    @staticmethod
    def _interval_after(every_us: int, offset_us: int, after_us: int) -> int:
        return ((after_us - offset_us) // every_us + 1) * every_us + offset_us

    def next_after(self, after_us: int) -> int | None:
        """The first nominal fire time strictly after ``after_us``; None if none."""
        candidates = [self._cron_after(e, after_us) for e in self.cron_expressions]
        candidates += [self._interval_after(every, offset, after_us) for every, offset in self.intervals]
        found = [c for c in candidates if c is not None]
        return min(found) if found else None

    def times(self, after_us: int, until_us: int) -> Iterator[int]:
        """Nominal fire times in ``(after_us, until_us]``, in order."""
        current = self.next_after(after_us)
        while current is not None and current <= until_us:
            yield current
            current = self.next_after(current)


def _is_five_field_cron(expression: str) -> bool:
    fields = expression.split()
    return (len(fields) == 5 or (len(fields) == 1 and fields[0].startswith("@"))) and croniter.is_valid(expression)


def parse_spec(spec: dict[str, Any]) -> SpecRule:
    """Validates a spec document; raises :class:`ScheduleSpecError` naming the problem."""
    zone_name = spec.get("time_zone_name") or "UTC"
    try:
        zone = ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleSpecError(
            f"unknown time zone {zone_name!r}; use an IANA name such as 'Europe/Stockholm' or 'UTC'"
        ) from None
    expressions = tuple(spec.get("cron_expressions", []))
    for expression in expressions:
        if not isinstance(expression, str) or not _is_five_field_cron(expression):
            raise ScheduleSpecError(
                f"invalid cron expression {expression!r}; expected five fields"
                " 'minute hour day-of-month month day-of-week', e.g. '30 2 * * *'"
            )
    intervals = []
    for interval in spec.get("intervals", []):
        every_us = round(float(interval.get("every_s", 0)) * _SECOND_US)
        offset_us = round(float(interval.get("offset_s", 0)) * _SECOND_US)
        if every_us < _SECOND_US:
            raise ScheduleSpecError("an interval's every must be at least 1 second")
        if not 0 <= offset_us < every_us:
            raise ScheduleSpecError("an interval's offset must be at least 0 and less than its every")
        intervals.append((every_us, offset_us))
    if not expressions and not intervals:
        raise ScheduleSpecError("a schedule spec needs at least one cron expression or interval")
    return SpecRule(expressions, tuple(intervals), zone)
