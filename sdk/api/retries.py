"""Activity retry decisions (rule 5: the server decides, from the policy recorded in the
ActivityTaskScheduled event). The worker applies the same decision to local activities, which
retry inside the worker, so the rule lives here, beside the API, where both can import it
without loading the server."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from flowforge.api.schema import RetryPolicyJSON, RetryState, duration_s
from flowforge.api.v1 import common_pb2

__all__ = ["RETRYING", "RetryDecision", "StoredRetryPolicy", "decide_retry"]

#: The retry state of a decision to retry (Temporal's RETRY_STATE_IN_PROGRESS); it is never
#: written to history, where a retry state says why retrying stopped (a :class:`RetryState`).
RETRYING = "IN_PROGRESS"


@dataclasses.dataclass(frozen=True)
class StoredRetryPolicy:
    """A RetryPolicy with the defaults filled in, as recorded in history."""

    initial_interval: float = 1.0
    backoff_coefficient: float = 2.0
    maximum_interval: float = 100.0
    maximum_attempts: int = 0
    non_retryable_error_types: tuple[str, ...] = ()
    full_jitter: bool = False

    @classmethod
    def from_proto(cls, proto: common_pb2.RetryPolicy | None) -> StoredRetryPolicy:
        if proto is None:
            return cls()
        initial = duration_s(proto.initial_interval) if proto.HasField("initial_interval") else 1.0
        return cls(
            initial_interval=initial,
            backoff_coefficient=proto.backoff_coefficient or 2.0,
            maximum_interval=(
                duration_s(proto.maximum_interval) if proto.HasField("maximum_interval") else 100.0 * initial
            ),
            maximum_attempts=proto.maximum_attempts,
            non_retryable_error_types=tuple(proto.non_retryable_error_types),
            full_jitter=proto.full_jitter,
        )

    def to_json(self) -> RetryPolicyJSON:
        """The policy as history records it."""
        return {
            "initial_interval": self.initial_interval,
            "backoff_coefficient": self.backoff_coefficient,
            "maximum_interval": self.maximum_interval,
            "maximum_attempts": self.maximum_attempts,
            "non_retryable_error_types": list(self.non_retryable_error_types),
            "full_jitter": self.full_jitter,
        }

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> StoredRetryPolicy:
        return cls(**{**value, "non_retryable_error_types": tuple(value.get("non_retryable_error_types", ()))})


@dataclasses.dataclass(frozen=True)
class RetryDecision:
    """Either retry after ``delay_s``, or stop with ``retry_state``."""

    delay_s: float | None
    retry_state: str


def decide_retry(
    policy: StoredRetryPolicy,
    *,
    attempt: int,
    failure: common_pb2.Failure,
    now_us: int,
    schedule_to_close_deadline_us: int | None,
    rng: random.Random,
) -> RetryDecision:
    """Whether the attempt that just failed (number ``attempt``) is retried, and when."""
    if failure.non_retryable or failure.type in policy.non_retryable_error_types:
        return RetryDecision(None, RetryState.NON_RETRYABLE_FAILURE)
    if policy.maximum_attempts and attempt >= policy.maximum_attempts:
        return RetryDecision(None, RetryState.MAXIMUM_ATTEMPTS_REACHED)
    if failure.HasField("next_retry_delay"):
        # ApplicationError(next_retry_delay=...): the activity knows better than the backoff.
        delay = max(0.0, duration_s(failure.next_retry_delay))
    else:
        delay = _backoff(policy, attempt, rng)
    if schedule_to_close_deadline_us is not None and now_us + int(delay * 1e6) >= schedule_to_close_deadline_us:
        return RetryDecision(None, RetryState.TIMEOUT)
    return RetryDecision(delay, RETRYING)


def _backoff(policy: StoredRetryPolicy, attempt: int, rng: random.Random) -> float:
    """The retry policy's delay after failed attempt number ``attempt``."""
    # min() first: coefficient ** attempt overflows float long before any cap matters.
    exponent = min(attempt - 1, 1000)
    try:
        delay = policy.initial_interval * policy.backoff_coefficient**exponent
    except OverflowError:
        delay = policy.maximum_interval
    delay = min(delay, policy.maximum_interval)
    if policy.full_jitter:
        delay = rng.uniform(0.0, delay)
    return delay
