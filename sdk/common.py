"""Types shared by workflows, activities, the client and the server."""

from __future__ import annotations

import dataclasses
import enum
from datetime import timedelta
from typing import Optional, Sequence

from flowforge.api.v1 import common_pb2

__all__ = ["RetryPolicy", "WorkflowExecutionStatus"]


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """How the server retries a failed activity. Retries happen on the server
    (rule 5: workers report outcomes, the server decides), from the policy
    recorded in the ``ActivityTaskScheduled`` event."""

    initial_interval: timedelta = timedelta(seconds=1)
    """Delay before the first retry."""

    backoff_coefficient: float = 2.0
    """Each retry waits this many times longer than the previous one."""

    maximum_interval: Optional[timedelta] = None
    """Cap on the delay; ``None`` means 100 x ``initial_interval``."""

    maximum_attempts: int = 0
    """Attempts in all, the first included; 0 means unlimited."""

    non_retryable_error_types: Sequence[str] = ()
    """Error types (``ApplicationError.type`` or the exception class name) that
    fail the activity at once."""

    full_jitter: bool = False
    """Draw each delay uniformly in [0, computed delay] so that many failing
    activities do not retry in lockstep."""

    def __post_init__(self) -> None:
        if self.initial_interval <= timedelta(0):
            raise ValueError("RetryPolicy.initial_interval must be positive")
        if self.backoff_coefficient < 1.0:
            raise ValueError("RetryPolicy.backoff_coefficient must be >= 1.0")
        if self.maximum_attempts < 0:
            raise ValueError("RetryPolicy.maximum_attempts must be >= 0 (0 means unlimited)")
        if self.maximum_interval is not None and self.maximum_interval < self.initial_interval:
            raise ValueError("RetryPolicy.maximum_interval must be >= initial_interval")

    def to_proto(self) -> common_pb2.RetryPolicy:
        """The wire form of this policy."""
        proto = common_pb2.RetryPolicy(
            backoff_coefficient=self.backoff_coefficient,
            maximum_attempts=self.maximum_attempts,
            non_retryable_error_types=list(self.non_retryable_error_types),
            full_jitter=self.full_jitter,
        )
        proto.initial_interval.FromTimedelta(self.initial_interval)
        if self.maximum_interval is not None:
            proto.maximum_interval.FromTimedelta(self.maximum_interval)
        return proto


class WorkflowExecutionStatus(enum.IntEnum):
    """Where an execution is in its life; values match the wire enum."""

    RUNNING = 1
    COMPLETED = 2
    FAILED = 3
    CANCELED = 4
    TERMINATED = 5
    CONTINUED_AS_NEW = 6
    TIMED_OUT = 7
