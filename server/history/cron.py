"""Cron on start (Temporal's ``cron_schedule``): when the next run of a cron execution begins.

Every run of such an execution records the expression in ``WorkflowExecutionStarted``
(``cron_schedule``, carried across runs); its first workflow task waits until the next
matching time. The worker ends each run that completed or failed with a continue-as-new of
the same input, so the chain goes on until the execution is cancelled or terminated.
"""

from __future__ import annotations

from datetime import UTC, datetime

from croniter import croniter

from flowforge.server.errors import InvalidArgument

__all__ = ["check_cron_schedule", "cron_delay_s"]


def check_cron_schedule(expression: str) -> str:
    """The expression, if it is a five-field cron expression (or ``@hourly`` ...); INVALID_ARGUMENT otherwise."""
    fields = expression.split()
    five_fields = len(fields) == 5 or (len(fields) == 1 and fields[0].startswith("@"))
    if not (five_fields and croniter.is_valid(expression)):
        raise InvalidArgument(
            f"cron_schedule {expression!r} is not a five-field cron expression (minute hour day month weekday,"
            " e.g. '*/5 * * * *', or @hourly / @daily ...)"
        )
    return expression


def cron_delay_s(expression: str, now_us: int) -> float:
    """Seconds from ``now_us`` to the next time the expression matches (UTC), strictly after now."""
    now = datetime.fromtimestamp(now_us / 1e6, UTC)
    following: datetime = croniter(expression, now).get_next(datetime)
    return max((following - now).total_seconds(), 0.0)
