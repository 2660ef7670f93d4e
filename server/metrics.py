"""The server's metrics, served as Prometheus text at ``GET /metrics``.

``prometheus_client`` rather than the OpenTelemetry metrics SDK with its Prometheus
exporter: the families are Prometheus-first (an autoscaler and Grafana read them,
docs/observability.md), ``prometheus_client`` writes exactly the names docs/architecture.md
fixes (a counter ``x`` is exposed as ``x_total``), it is one stable dependency
instead of the SDK plus a pre-release exporter, and recording is a lock and an add
on the hot path. Each server has its own registry, so several servers in one
process (tests, the testing environment) never share counts.

Counters of what the engine decided (closed workflows, activity attempts, started
tasks, fired timers) are fed :mod:`observations <flowforge.server.observations>`
after their transaction committed: each change is counted once, never per retried
attempt. The task-queue gauges are read from the store when scraped.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics import MetricWrapperBase

from flowforge.server.http import HttpListener
from flowforge.server.observations import (
    ActivityAttemptEnded,
    Observation,
    ScheduleFired,
    TaskStarted,
    TimerFired,
    WorkflowClosed,
    WorkflowTaskFolded,
)

__all__ = ["ServerMetrics"]

log = logging.getLogger("flowforge.server.metrics")

_QUEUE_LABELS = ("namespace", "task_queue", "kind")
# Waits span a millisecond (a hot queue) to a poll's minute.
_WAIT_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


# The value of flowforge_breaker_state for each state of a circuit breaker.
_BREAKER_STATE_VALUES = {"closed": 0, "open": 1, "half_open": 2}


class ServerMetrics:
    """Every metric family of one server, in its own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.rpc_requests = Counter(
            "flowforge_rpc_requests", "RPCs answered, by method and gRPC status code.", ("method", "code"), registry=r
        )
        self.rpc_latency = Histogram(
            "flowforge_rpc_latency_seconds", "Time to answer an RPC (long polls included).", ("method",), registry=r
        )
        self.task_queue_backlog = Gauge(
            "flowforge_task_queue_backlog",
            "Tasks ready for a worker and not yet taken (at scrape time).",
            _QUEUE_LABELS,
            registry=r,
        )
        self.task_queue_oldest_task_age = Gauge(
            "flowforge_task_queue_oldest_task_age_seconds",
            "How long the oldest ready task of the queue has waited (at scrape time).",
            _QUEUE_LABELS,
            registry=r,
        )
        self.schedule_to_start = Histogram(
            "flowforge_task_schedule_to_start_seconds",
            "From a task becoming ready on its queue to a poll leasing it.",
            _QUEUE_LABELS,
            buckets=_WAIT_BUCKETS,
            registry=r,
        )
        self.held_items = Gauge(
            "flowforge_held_items",
            "Items a background loop holds aside because handling them failed (server/quarantine.py), by loop.",
            ("loop",),
            registry=r,
        )
        self.workflow_closed = Counter(
            "flowforge_workflow_closed",
            "Runs closed, by workflow type and WorkflowExecutionStatus name.",
            ("namespace", "workflow_type", "status"),
            registry=r,
        )
        self.activity_attempts = Counter(
            "flowforge_activity_attempts",
            "Activity attempts ended, by outcome: completed, failed, timed_out, canceled.",
            ("namespace", "activity_type", "outcome"),
            registry=r,
        )
        self.folded_workflow_tasks = Counter(
            "flowforge_folded_workflow_tasks",
            "Workflow tasks folded into an activity completion, by outcome: applied, or why ignored.",
            ("namespace", "outcome"),
            registry=r,
        )
        self.store_transaction_latency = Histogram(
            "flowforge_store_transaction_seconds",
            "One attempt of a store transaction, by outcome: committed, conflict, unavailable, rolled_back (the operation refused).",
            ("outcome",),
            registry=r,
        )
        self.store_conflicts = Counter(
            "flowforge_store_conflicts", "Transaction attempts run again after a concurrency conflict.", registry=r
        )
        self.poll_wait = Histogram(
            "flowforge_poll_wait_seconds",
            "How long a long poll waited, by kind and whether it got a task.",
            ("kind", "result"),
            buckets=_WAIT_BUCKETS,
            registry=r,
        )
        self.empty_polls = Counter(
            "flowforge_empty_polls", "Long polls that ended without a task.", _QUEUE_LABELS, registry=r
        )
        self.worker_streams = Gauge(
            "flowforge_worker_streams", "Worker streams (StreamWorkerTasks) open now.", registry=r
        )
        self.worker_stream_messages = Counter(
            "flowforge_worker_stream_messages",
            "Messages on worker streams, by direction: received (from workers) or sent.",
            ("direction",),
            registry=r,
        )
        self.timers_fired = Counter("flowforge_timers_fired", "Durable timers fired.", registry=r)
        self.timer_lateness = Histogram(
            "flowforge_timer_fire_lateness_seconds",
            "How long after its due time a durable timer fired.",
            buckets=_WAIT_BUCKETS,
            registry=r,
        )
        self.dead_letters = Gauge(
            "flowforge_dead_letters",
            "Activities parked in the dead-letter store, waiting for a retry or a discard (at scrape time).",
            ("namespace", "activity_type"),
            registry=r,
        )
        self.breaker_state = Gauge(
            "flowforge_breaker_state",
            "Each circuit breaker's state at scrape time: 0 closed, 1 open, 2 half_open.",
            ("namespace", "activity_type"),
            registry=r,
        )
        self.schedule_fire_lateness = Histogram(
            "flowforge_schedule_fire_lateness_seconds",
            "How long after its nominal time a schedule started its run (catch-up and backfill runs not counted).",
            ("namespace",),
            buckets=_WAIT_BUCKETS,
            registry=r,
        )
        self.quota_refusals = Counter(
            "flowforge_quota_refusals",
            "Starts refused at admission (RESOURCE_EXHAUSTED), by quota.",
            ("namespace", "quota"),
            registry=r,
        )
        # Queues a scrape reported, so one that emptied reads 0 instead of vanishing.
        self._reported_queues: set[tuple[str, str, str]] = set()
        self._reported_dead_letters: set[tuple[str, str]] = set()
        self._series: dict[tuple[int, tuple[str, ...]], Any] = {}

    def series(self, family: MetricWrapperBase, *labels: str) -> Any:
        """``family.labels(*labels)``, looked up once: labels() takes a lock and builds
        a key on every call, and the hot path records several series per activity.
        (No series is ever removed, so a kept one stays the registry's.)"""
        key = (id(family), labels)
        child = self._series.get(key)
        if child is None:
            child = self._series[key] = family.labels(*labels)
        return child

    def record(self, observations: Iterable[Observation]) -> None:
        """Counts what a committed transaction did."""
        for o in observations:
            if isinstance(o, WorkflowClosed):
                self.series(self.workflow_closed, o.namespace, o.workflow_type, o.status).inc()
            elif isinstance(o, ActivityAttemptEnded):
                self.series(self.activity_attempts, o.namespace, o.activity_type, o.outcome).inc()
            elif isinstance(o, TaskStarted):
                self.series(self.schedule_to_start, o.namespace, o.task_queue, o.kind).observe(o.wait_s)
            elif isinstance(o, TimerFired):
                self.timers_fired.inc()
                self.timer_lateness.observe(o.late_s)
            elif isinstance(o, ScheduleFired):
                self.schedule_fire_lateness.labels(o.namespace).observe(o.late_s)
            elif isinstance(o, WorkflowTaskFolded):
                self.series(self.folded_workflow_tasks, o.namespace, o.outcome).inc()

    def set_backlogs(self, backlogs: Iterable[tuple[str, str, str, int, float]]) -> None:
        """Sets the queue gauges from ``(namespace, task_queue, kind, ready tasks, oldest age s)``."""
        seen = set()
        for namespace, task_queue, kind, ready, oldest_age_s in backlogs:
            key = (namespace, task_queue, kind)
            seen.add(key)
            self.task_queue_backlog.labels(*key).set(ready)
            self.task_queue_oldest_task_age.labels(*key).set(oldest_age_s)
        for key in self._reported_queues - seen:
            self.task_queue_backlog.labels(*key).set(0)
            self.task_queue_oldest_task_age.labels(*key).set(0)
        self._reported_queues |= seen

    def set_dead_letter_depths(self, depths: Iterable[tuple[str, str, int]]) -> None:
        """Sets the dead-letter gauge from ``(namespace, activity_type, count)``; emptied ones read 0."""
        seen = set()
        for namespace, activity_type, count in depths:
            seen.add((namespace, activity_type))
            self.dead_letters.labels(namespace, activity_type).set(count)
        for key in self._reported_dead_letters - seen:
            self.dead_letters.labels(*key).set(0)
        self._reported_dead_letters |= seen

    def set_breaker_states(self, states: Iterable[tuple[str, str, str]]) -> None:
        """Sets the breaker gauge from ``(namespace, activity_type, state)``."""
        for namespace, activity_type, state in states:
            self.breaker_state.labels(namespace, activity_type).set(_BREAKER_STATE_VALUES[state])

    def render(self) -> bytes:
        """The Prometheus text exposition of every family."""
        return generate_latest(self.registry)

    def attach(self, listener: HttpListener, before_scrape: Callable[[], Awaitable[None]]) -> None:
        """Serves ``GET /metrics`` on ``listener``; ``before_scrape`` refreshes the gauges read
        from the store (a store outage leaves them as they were: the rest still scrapes)."""

        async def scrape(_request: web.Request) -> web.Response:
            try:
                await before_scrape()
            except Exception:
                log.warning("/metrics: the task-queue gauges could not be refreshed", exc_info=True)
            response = web.Response(body=self.render())
            response.content_type = CONTENT_TYPE_LATEST.split(";")[0]
            response.charset = "utf-8"
            return response

        listener.add_route("GET", "/metrics", scrape, what="metrics")
