"""The server's activity retry decisions: :mod:`flowforge.api.retries` (shared with local activities)."""

from flowforge.api.retries import RETRYING, RetryDecision, StoredRetryPolicy, decide_retry

__all__ = ["RETRYING", "RetryDecision", "StoredRetryPolicy", "decide_retry"]
