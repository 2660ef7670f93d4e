"""The exceptions of the storage contract; the engine maps each onto a gRPC status."""

from __future__ import annotations

__all__ = ["ConcurrencyConflict", "DuplicateRunningExecution", "FencingTokenRejected", "StoreUnavailable"]


class StoreUnavailable(Exception):
    """The database cannot be reached or is locked; callers get UNAVAILABLE."""


class ConcurrencyConflict(Exception):
    """Another transaction changed the execution first; retry the whole transaction."""


class DuplicateRunningExecution(Exception):
    """insert_execution found a running execution with the same workflow id."""


class FencingTokenRejected(Exception):
    """A scheduler write carried a fencing token lower than the highest the store has
    seen: another replica took the lease over. The writer must stop acting as leader."""
