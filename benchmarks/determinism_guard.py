"""What the determinism guard costs, outside and inside workflow code.

    python -m benchmarks.determinism_guard [--repeat 7]

The guard is a ``sys.setprofile`` hook installed only in the thread running a
workflow activation, and only while it runs. This measures, as the median of
``--repeat`` rounds (µs per call of an activity-like function: JSON, hashing and
about 2,000 small Python calls):

- ``activity_alone_us``: in a thread where no workflow code ever ran;
- ``activity_after_activations_us``: in the thread that has just run 200
  guarded workflow activations (the hook is gone once an activation returns);
- ``activity_beside_a_guarded_thread_us``: while another thread is inside an
  activation with the guard installed (blocked there, so the two threads do
  not compete for the GIL and only the hook's reach is measured);
- ``activity_under_a_hook_us``: the same function with a profile hook like the
  guard's installed in its own thread: what the guard would cost if it were
  process-wide;
- ``activation_guarded_us`` / ``activation_unguarded_us``: one workflow
  activation running the same function as workflow code, with and without the
  guard: its cost where it does work.

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, Self

from benchmarks.onboarding import load_average, machine
from flowforge import workflow
from flowforge._determinism import DeterminismGuard
from flowforge._workflow_instance import WorkflowInstance
from flowforge.api.v1 import common_pb2
from testsupport.activations import guard_replaced

CALLS_PER_ROUND = 200


def _fib(n: int) -> int:
    return n if n < 2 else _fib(n - 1) + _fib(n - 2)


def activity_like_work() -> str:
    """JSON round trips, hashing and ~2,000 small Python calls, like a busy activity."""
    records = [{"id": i, "name": f"customer-{i}", "tags": ["a", "b", str(i)]} for i in range(100)]
    text = json.dumps(json.loads(json.dumps(records)), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest() + str(_fib(15))


@workflow.defn
class BusyWorkflow:
    @workflow.run
    async def run(self) -> str:
        return activity_like_work()


def _history() -> list[common_pb2.HistoryEvent]:
    events = []
    for event_id, (event_type, attributes) in enumerate(
        [
            ("WorkflowExecutionStarted", {"workflow_type": "BusyWorkflow", "task_queue": "bench"}),
            ("WorkflowTaskScheduled", {"task_queue": "bench", "attempt": 1}),
            ("WorkflowTaskStarted", {"scheduled_event_id": 2}),
        ],
        start=1,
    ):
        event = common_pb2.HistoryEvent(
            event_id=event_id, event_type=event_type, attributes_json=json.dumps(attributes)
        )
        event.event_time.FromDatetime(datetime(2024, 5, 1, tzinfo=UTC))
        events.append(event)
    return events


HISTORY = _history()
DEFINITION = workflow._Definition.from_class(BusyWorkflow)


def activate_once() -> None:
    instance = WorkflowInstance(DEFINITION, namespace="bench", workflow_id="bench", run_id="bench", task_queue="bench")
    (command,) = instance.activate(HISTORY)
    assert command.WhichOneof("attributes") == "complete_workflow_execution"


class _NoGuard:
    """Stands in for DeterminismGuard to measure runs without it."""

    violation = None

    def __init__(self, **_: Any) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None: ...


def guard_disabled() -> contextlib.AbstractContextManager[None]:
    """Workflow instances run without the guard meanwhile."""
    return guard_replaced(_NoGuard)


def per_call_us(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    for _ in range(CALLS_PER_ROUND):
        fn()
    return (time.perf_counter() - started) / CALLS_PER_ROUND * 1e6


@contextlib.contextmanager
def guard_installed_in_another_thread() -> Iterator[None]:
    installed, release = threading.Event(), threading.Event()

    def hold() -> None:
        with DeterminismGuard(boundary=hold.__code__):
            installed.set()
            release.wait()

    thread = threading.Thread(target=hold, name="guarded")
    thread.start()
    installed.wait()
    try:
        yield
    finally:
        release.set()
        thread.join()


def measure_round() -> dict[str, float]:
    figures: dict[str, float] = {"activity_alone_us": per_call_us(activity_like_work)}
    for _ in range(CALLS_PER_ROUND):
        activate_once()
    assert sys.getprofile() is None
    figures["activity_after_activations_us"] = per_call_us(activity_like_work)
    with guard_installed_in_another_thread():
        figures["activity_beside_a_guarded_thread_us"] = per_call_us(activity_like_work)
    hook = DeterminismGuard(boundary=measure_round.__code__)
    with hook:
        figures["activity_under_a_hook_us"] = per_call_us(activity_like_work)
    figures["activation_guarded_us"] = per_call_us(activate_once)
    with guard_disabled():
        figures["activation_unguarded_us"] = per_call_us(activate_once)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="rounds; the median is reported")
    options = parser.parse_args()
    rounds = [measure_round() for _ in range(options.repeat)]
    result: dict[str, Any] = {key: round(statistics.median(r[key] for r in rounds), 1) for key in rounds[0]}
    result.update(machine=machine(), load_average=load_average(), repeat=options.repeat)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
