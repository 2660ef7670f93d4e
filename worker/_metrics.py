"""A worker's own metrics, recorded through an OpenTelemetry meter (the global meter
provider's unless ``Worker(meter=...)`` names one; without a configured provider the
instruments are no-ops and cost a call each).

- ``flowforge_worker_task_slots_used`` (up-down counter; ``task_queue``, ``kind``): slots
  taken by polls and running tasks;
- ``flowforge_worker_poll_latency`` (histogram, s; ``task_queue``, ``kind``, ``result``:
  ``task``, ``empty`` or ``error``): each long poll (on the worker stream, each wait for a
  pushed task);
- ``flowforge_activity_execution_latency`` (histogram, s; ``task_queue``, ``activity_type``,
  ``outcome``: ``completed``, ``failed``, ``canceled``): each attempt as this worker ran it;
- ``flowforge_workflow_task_execution_latency`` (histogram, s; ``task_queue``,
  ``workflow_type``): replaying and running one workflow task;
- ``flowforge_worker_cache_lookups`` (counter; ``task_queue``, ``result``: ``hit`` or
  ``miss``): workflow tasks that found their run's instance in the cache, or replayed;
- ``flowforge_worker_workflow_task_folds`` (counter; ``task_queue``, ``result``: ``applied``
  or ``ignored``): workflow tasks run ahead and sent folded into an activity's completion,
  and whether the server applied them (docs/worker-stream.md, "Folded workflow tasks");
  ``not_attempted_other_workers``: completions of a cached run sent unfolded because an
  activity the run awaits is not held by this worker (another worker's completion could
  move the run first, and an ignored fold costs a replay of the run's whole history).
"""

from __future__ import annotations

from opentelemetry import metrics
from opentelemetry.metrics import Meter

__all__ = ["WorkerMetrics"]


class WorkerMetrics:
    """The instruments of one worker (one task queue).

    Args:
        task_queue: The worker's task queue, an attribute of every measurement.
        meter: Where to record; the global meter provider's ``flowforge.worker`` meter by default.
    """

    def __init__(self, task_queue: str, meter: Meter | None = None) -> None:
        meter = meter or metrics.get_meter("flowforge.worker")
        self._task_queue = task_queue
        self._slots = meter.create_up_down_counter(
            "flowforge_worker_task_slots_used", description="Task slots taken by polls and running tasks."
        )
        self._poll = meter.create_histogram(
            "flowforge_worker_poll_latency", unit="s", description="How long each long poll took."
        )
        self._activity = meter.create_histogram(
            "flowforge_activity_execution_latency", unit="s", description="How long each activity attempt ran here."
        )
        self._workflow_task = meter.create_histogram(
            "flowforge_workflow_task_execution_latency",
            unit="s",
            description="Replaying and running one workflow task.",
        )
        self._cache = meter.create_counter(
            "flowforge_worker_cache_lookups", description="Workflow tasks whose run was (hit) or was not (miss) cached."
        )
        self._folds = meter.create_counter(
            "flowforge_worker_workflow_task_folds",
            description="Workflow tasks sent folded into an activity's completion, applied or ignored by the server.",
        )

    def slots_changed(self, kind: str, used_delta: int) -> None:
        """Slots of ``kind`` taken (positive) or freed (negative)."""
        self._slots.add(used_delta, {"task_queue": self._task_queue, "kind": kind})

    def polled(self, kind: str, seconds: float, result: str) -> None:
        """A long poll ended with ``result`` (``task``, ``empty`` or ``error``)."""
        self._poll.record(seconds, {"task_queue": self._task_queue, "kind": kind, "result": result})

    def activity_ran(self, activity_type: str, seconds: float, outcome: str) -> None:
        """An activity attempt ended here with ``outcome``."""
        attributes = {"task_queue": self._task_queue, "activity_type": activity_type, "outcome": outcome}
        self._activity.record(seconds, attributes)

    def workflow_task_ran(self, workflow_type: str, seconds: float) -> None:
        """A workflow task was replayed and run."""
        self._workflow_task.record(seconds, {"task_queue": self._task_queue, "workflow_type": workflow_type})

    def cache_lookup(self, hit: bool) -> None:
        """A workflow task found its run's instance cached (or not)."""
        self._cache.add(1, {"task_queue": self._task_queue, "result": "hit" if hit else "miss"})

    def workflow_task_folded(self, applied: bool) -> None:
        """A folded workflow task was answered: applied by the server, or ignored."""
        self._folds.add(1, {"task_queue": self._task_queue, "result": "applied" if applied else "ignored"})

    def workflow_task_fold_not_attempted(self) -> None:
        """A completion of a cached run went unfolded: an activity the run awaits runs elsewhere."""
        self._folds.add(1, {"task_queue": self._task_queue, "result": "not_attempted_other_workers"})
