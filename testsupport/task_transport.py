"""Which task transport workers started by the tests use (``Worker(task_transport=...)``).

Worker apps that run in their own processes (tests/integration/_worker_app.py,
tests/chaos/_chaos_app.py, tests/integration/test_replicas.py) take it from
``FLOWFORGE_TEST_TASK_TRANSPORT``; the ``task_transport`` fixture (tests/conftest.py) sets
it, so the kill -9, chaos and replica tests that request the fixture run on both paths.
"""

from __future__ import annotations

import os
from typing import cast

from flowforge.worker._worker import TaskTransport

ENV = "FLOWFORGE_TEST_TASK_TRANSPORT"
TRANSPORTS: tuple[TaskTransport, ...] = ("stream", "unary")


def task_transport() -> TaskTransport:
    """The transport named by ``FLOWFORGE_TEST_TASK_TRANSPORT``; the Worker's default ("stream") without it."""
    value = os.environ.get(ENV) or "stream"
    if value not in TRANSPORTS:
        raise ValueError(f"{ENV} must be one of {', '.join(TRANSPORTS)}, not {value!r}")
    return cast(TaskTransport, value)
