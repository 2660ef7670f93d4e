"""The server's retry decision (``flowforge.server.retries.decide_retry``).

The delay before retry ``n`` (after failed attempt ``n``) is
``min(maximum_interval, initial_interval * backoff_coefficient ** (n - 1))``; with
full jitter it is drawn uniformly from ``[0, that]``. No retry for a non-retryable
failure, after ``maximum_attempts``, or when the retry would start at or after the
schedule-to-close deadline.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from flowforge import RetryPolicy
from flowforge.api.v1 import common_pb2
from flowforge.server.retries import RetryDecision, StoredRetryPolicy, decide_retry

NOW_US = 1_700_000_000_000_000
BOOM = common_pb2.Failure(message="boom", type="Boom")


class RecordingRandom(random.Random):
    """Answers ``uniform(a, b)`` with the top of the range and remembers each range."""

    def __init__(self) -> None:
        super().__init__(0)
        self.ranges: list[tuple[float, float]] = []

    def uniform(self, a: float, b: float) -> float:
        self.ranges.append((a, b))
        return b


def decide(
    policy: StoredRetryPolicy,
    attempt: int,
    *,
    failure: common_pb2.Failure = BOOM,
    deadline_us: int | None = None,
    rng: random.Random | None = None,
) -> RetryDecision:
    return decide_retry(
        policy,
        attempt=attempt,
        failure=failure,
        now_us=NOW_US,
        schedule_to_close_deadline_us=deadline_us,
        rng=rng or random.Random(1),
    )


def test_the_delay_grows_by_the_coefficient_from_the_initial_interval_up_to_the_maximum() -> None:
    policy = StoredRetryPolicy(initial_interval=0.5, backoff_coefficient=3.0, maximum_interval=10.0)
    delays = [decide(policy, attempt).delay_s for attempt in range(1, 7)]
    assert delays == [0.5, 1.5, 4.5, 10.0, 10.0, 10.0]
    assert {decide(policy, attempt).retry_state for attempt in range(1, 7)} == {"IN_PROGRESS"}


def test_a_huge_attempt_number_is_capped_not_an_overflow() -> None:
    policy = StoredRetryPolicy(initial_interval=1.0, backoff_coefficient=10.0, maximum_interval=60.0)
    assert decide(policy, 10_000).delay_s == 60.0


def test_the_sdk_defaults_are_one_second_doubling_capped_at_a_hundred_times_the_initial_interval() -> None:
    policy = StoredRetryPolicy.from_proto(RetryPolicy(initial_interval=timedelta(seconds=2)).to_proto())
    assert (policy.initial_interval, policy.backoff_coefficient, policy.maximum_interval) == (2.0, 2.0, 200.0)
    assert StoredRetryPolicy.from_proto(None) == StoredRetryPolicy(1.0, 2.0, 100.0, 0, (), False)
    assert StoredRetryPolicy.from_json(policy.to_json()) == policy  # as recorded in history


def test_full_jitter_draws_uniformly_between_zero_and_the_capped_exponential_delay() -> None:
    policy = StoredRetryPolicy(initial_interval=1.0, backoff_coefficient=2.0, maximum_interval=5.0, full_jitter=True)
    rng = RecordingRandom()
    for attempt in range(1, 6):
        decide(policy, attempt, rng=rng)
    assert rng.ranges == [(0.0, 1.0), (0.0, 2.0), (0.0, 4.0), (0.0, 5.0), (0.0, 5.0)]

    drawn = [decide(policy, 3, rng=random.Random(seed)).delay_s for seed in range(200)]
    assert all(d is not None and 0.0 <= d <= 4.0 for d in drawn)
    # Spread over the whole range, not clustered at the bound.
    assert min(drawn) < 0.5 and max(drawn) > 3.5 and 1.5 < sum(drawn) / len(drawn) < 2.5  # type: ignore[arg-type]


def test_without_jitter_no_random_number_is_drawn() -> None:
    rng = RecordingRandom()
    decide(StoredRetryPolicy(), 3, rng=rng)
    assert rng.ranges == []


@pytest.mark.parametrize(
    "failure",
    [
        common_pb2.Failure(message="no", type="Boom", non_retryable=True),
        common_pb2.Failure(message="no", type="InvalidCard"),
    ],
)
def test_a_non_retryable_failure_is_not_retried(failure: common_pb2.Failure) -> None:
    policy = StoredRetryPolicy(non_retryable_error_types=("InvalidCard",))
    assert decide(policy, 1, failure=failure) == RetryDecision(None, "NON_RETRYABLE_FAILURE")
    assert decide(policy, 1).retry_state == "IN_PROGRESS"  # other types are


def test_maximum_attempts_counts_the_first_attempt_and_zero_means_unlimited() -> None:
    three = StoredRetryPolicy(maximum_attempts=3)
    assert [decide(three, attempt).retry_state for attempt in (1, 2, 3)] == [
        "IN_PROGRESS",
        "IN_PROGRESS",
        "MAXIMUM_ATTEMPTS_REACHED",
    ]
    assert decide(three, 3).delay_s is None
    assert decide(StoredRetryPolicy(maximum_attempts=0, maximum_interval=1.0), 1_000).retry_state == "IN_PROGRESS"
    assert decide(StoredRetryPolicy(maximum_attempts=1), 1) == RetryDecision(None, "MAXIMUM_ATTEMPTS_REACHED")


def test_no_retry_that_would_start_at_or_after_the_schedule_to_close_deadline() -> None:
    policy = StoredRetryPolicy(initial_interval=2.0)  # first delay: 2 s
    assert decide(policy, 1, deadline_us=NOW_US + 2_000_001).delay_s == 2.0
    assert decide(policy, 1, deadline_us=NOW_US + 2_000_000) == RetryDecision(None, "TIMEOUT")
    assert decide(policy, 1, deadline_us=NOW_US - 1) == RetryDecision(None, "TIMEOUT")
    # The cut-off applies to the jittered delay actually chosen.
    jittered = StoredRetryPolicy(initial_interval=2.0, full_jitter=True)
    assert decide(jittered, 1, deadline_us=NOW_US + 1_000_000, rng=RecordingRandom()).retry_state == "TIMEOUT"
    lucky = random.Random()
    lucky.uniform = lambda a, b: 0.25  # type: ignore[method-assign]
    assert decide(jittered, 1, deadline_us=NOW_US + 1_000_000, rng=lucky).delay_s == 0.25


def test_non_retryable_wins_over_maximum_attempts_and_the_deadline() -> None:
    failure = common_pb2.Failure(message="no", non_retryable=True)
    policy = StoredRetryPolicy(maximum_attempts=1)
    assert decide(policy, 1, failure=failure, deadline_us=NOW_US).retry_state == "NON_RETRYABLE_FAILURE"


def test_next_retry_delay_of_the_failure_replaces_the_backoff() -> None:
    failure = common_pb2.Failure(message="not yet", type="NotReady")
    failure.next_retry_delay.FromTimedelta(timedelta(seconds=7))
    policy = StoredRetryPolicy(initial_interval=1.0, maximum_interval=2.0, maximum_attempts=3)
    # Above the policy's maximum interval: the activity's own delay wins.
    assert decide(policy, 1, failure=failure) == RetryDecision(7.0, "IN_PROGRESS")
    # The attempt limit and the schedule-to-close deadline still apply.
    assert decide(policy, 3, failure=failure).retry_state == "MAXIMUM_ATTEMPTS_REACHED"
    assert decide(policy, 1, failure=failure, deadline_us=NOW_US + 5_000_000).retry_state == "TIMEOUT"
