"""Signals and queries inside the deterministic runtime (no server).

Histories are written by hand as in test_workflow_replay; each test activates a
WorkflowInstance and checks what the handlers did, what a query answers, and when a
cached instance may answer a query without a replay.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from flowforge import workflow
from flowforge._workflow_instance import HistoryContinuityError
from flowforge.converter import default_converter
from flowforge.exceptions import NonDeterminismError
from tests.unit.test_workflow_replay import _History, _instance, _kinds, _payloads, _result


@workflow.defn
class Inbox:
    def __init__(self) -> None:
        self.messages: list[str] = []

    @workflow.run
    async def run(self, wanted: int) -> list[str]:
        await workflow.wait_condition(lambda: len(self.messages) >= wanted)
        return self.messages

    @workflow.signal
    def post(self, text: str) -> None:
        self.messages.append(text)

    @workflow.signal(name="post-twice")
    async def post_twice(self, text: str) -> None:
        self.messages.append(text)
        self.messages.append(text)

    @workflow.query
    def count(self) -> int:
        return len(self.messages)

    @workflow.query
    def sleeps(self) -> None:
        asyncio.ensure_future(self._sleep())  # noqa: RUF006 - schedules workflow code from a query, on purpose

    @workflow.query
    def starts_an_activity(self) -> None:
        workflow.start_activity("audit", start_to_close_timeout=timedelta(seconds=5))

    async def _sleep(self) -> None:
        await asyncio.sleep(5)

    @workflow.query
    def reads_the_clock(self) -> float:
        import time

        return time.time()


def _signal(history: _History, name: str, *args: Any) -> int:
    return history.add("WorkflowExecutionSignaled", signal_name=name, input=_payloads(*args), identity="test")


def _query(instance: Any, name: str, *args: Any) -> Any:
    (value,) = default_converter.from_payloads(instance.query(name, default_converter.to_payloads(args)))
    return value


def test_handlers_run_in_history_order_and_wake_wait_condition() -> None:
    history = _History()
    history.started("Inbox", 4)
    _signal(history, "post", "a")
    _signal(history, "post-twice", "b")
    _signal(history, "post", "c")
    history.workflow_task()
    instance = _instance(Inbox)
    [complete] = instance.activate(history.events)
    assert _result(complete) == ["a", "b", "b", "c"]


def test_a_query_reads_state_and_the_determinism_guard_watches_it() -> None:
    history = _History()
    history.started("Inbox", 2)
    history.workflow_task()
    instance = _instance(Inbox)
    assert instance.activate(history.events) == []
    history.add("WorkflowTaskCompleted")
    _signal(history, "post", "x")
    history.workflow_task()
    assert instance.activate(history.events) == []
    assert _query(instance, "count") == 1
    with pytest.raises(
        KeyError, match=r"no query 'nope' \(queries: count, reads_the_clock, sleeps, starts_an_activity\)"
    ):
        _query(instance, "nope")
    with pytest.raises(NonDeterminismError, match=r"time\.time\(\)"):
        _query(instance, "reads_the_clock")
    # Refused queries leave the instance usable.
    history.add("WorkflowTaskCompleted")
    _signal(history, "post", "y")
    history.workflow_task()
    [complete] = instance.activate(history.events)
    assert _result(complete) == ["x", "y"]


def test_a_cached_instance_is_current_until_an_event_it_has_not_seen_arrives() -> None:
    history = _History()
    history.started("Inbox", 2)
    history.workflow_task()
    instance = _instance(Inbox)
    instance.activate(history.events)
    history.add("WorkflowTaskCompleted")
    assert instance.is_current(history.events)
    _signal(history, "post", "late")
    history.add("WorkflowTaskScheduled", task_queue="q", attempt=1)
    assert not instance.is_current(history.events)
    # A throw-away replay runs the unprocessed signal, so a query sees it.
    fresh = _instance(Inbox)
    fresh.activate(history.events)
    assert _query(fresh, "count") == 0
    fresh.run_pending_events()
    assert _query(fresh, "count") == 1


def test_an_unknown_signal_is_dropped_and_the_run_goes_on() -> None:
    history = _History()
    history.started("Inbox", 1)
    _signal(history, "no-such-signal", "ignored")
    _signal(history, "post", "kept")
    history.workflow_task()
    [complete] = _instance(Inbox).activate(history.events)
    assert _kinds([complete]) == ["complete_workflow_execution"] and _result(complete) == ["kept"]


@pytest.mark.parametrize("query", ["sleeps", "starts_an_activity"])
def test_a_query_that_tries_to_change_the_workflow_fails_and_retires_the_instance(query: str) -> None:
    history = _History()
    history.started("Inbox", 1)
    history.workflow_task()
    instance = _instance(Inbox)
    instance.activate(history.events)
    history.add("WorkflowTaskCompleted")
    with pytest.raises(RuntimeError, match="only reads state"):
        _query(instance, query)
    # Half of what it started is undone: the worker must replay rather than reuse it.
    assert not instance.is_current(history.events)
    _signal(history, "post", "z")
    history.workflow_task()
    with pytest.raises(HistoryContinuityError):
        instance.activate(history.events)
    [complete] = _instance(Inbox).activate(history.events)
    assert _result(complete) == ["z"]


@workflow.defn
class EarlyBird:
    def __init__(self) -> None:
        self.greeting = ""

    @workflow.run
    async def run(self) -> str:
        return self.greeting or "no signal yet"  # reads state before its first await

    @workflow.signal
    def greet(self, text: str) -> None:
        self.greeting = text


def test_signals_that_came_with_the_start_are_handled_before_the_run_method_begins() -> None:
    history = _History()
    history.started("EarlyBird")
    _signal(history, "greet", "hello")
    _signal(history, "greet", "hello again")
    history.workflow_task()
    [complete] = _instance(EarlyBird).activate(history.events)
    assert _result(complete) == "hello again"
