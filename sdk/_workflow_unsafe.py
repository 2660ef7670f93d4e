"""``workflow.unsafe``: Temporal's escape hatches, for code written against its sandbox.

FlowForge has no import sandbox, so passing imports through is a no-op; what the sandbox's
restrictions do is done by the determinism guard (``flowforge._determinism``), which
:meth:`unsafe.sandbox_unrestricted` suspends.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from flowforge._workflow_runtime import _Runtime

__all__ = ["unsafe"]


class unsafe:
    """Calls that step outside workflow determinism; each is safe to call outside workflow code too."""

    @staticmethod
    def in_sandbox() -> bool:
        """Always ``False``: workflow code is not run in an import sandbox."""
        return False

    @staticmethod
    def is_replaying() -> bool:
        """Whether the workflow code now running is replaying history already recorded
        (e.g. to skip a side effect such as a metric); ``False`` outside workflow code."""
        runtime = _Runtime.current_or_none()
        return runtime is not None and runtime.workflow_is_replaying()

    @staticmethod
    def is_replaying_history_events() -> bool:
        """The same as :meth:`is_replaying` (Temporal separates query handlers; FlowForge answers
        queries by replaying, so they replay too)."""
        return unsafe.is_replaying()

    @staticmethod
    def is_sandbox_unrestricted() -> bool:
        """Whether the determinism guard is suspended in this thread (inside :meth:`sandbox_unrestricted`,
        or outside workflow code)."""
        return sys.getprofile() is None

    @staticmethod
    @contextmanager
    def sandbox_unrestricted() -> Iterator[None]:
        """Suspends the determinism guard for the code in the block, in this thread.

        Calls the guard would reject (clock, global ``random``, I/O, threads) are then allowed:
        whatever they return must not change the workflow's commands, or replay fails.
        """
        hook = sys.getprofile()
        sys.setprofile(None)
        try:
            yield
        finally:
            sys.setprofile(hook)

    @staticmethod
    @contextmanager
    def imports_passed_through() -> Iterator[None]:
        """A no-op: there is no import sandbox, so every import already is the real module."""
        yield
