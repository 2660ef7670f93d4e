"""appended_events, over the wire (no SDK): a workflow task completion from a worker
that keeps the run cached (``cached_event_id`` set) answers with the events it
appended after the task's WorkflowTaskStarted, exactly as GetWorkflowExecutionHistory
returns them afterwards, so the worker's instance stands at the run's last event
without a read. Without ``cached_event_id`` the answer carries none.
"""

from __future__ import annotations

from flowforge.api.v1 import common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from tests.integration._protocol import NS, Wire, complete_workflow, schedule_activity, start_timer
from tests.integration._stream_client import WORKFLOW, RawWorkerStream, credit


async def _history(wire: Wire, workflow_id: str) -> list[common_pb2.HistoryEvent]:
    response = await wire.stub.GetWorkflowExecutionHistory(
        pb.GetWorkflowExecutionHistoryRequest(
            namespace=NS, execution=common_pb2.WorkflowExecution(workflow_id=workflow_id)
        )
    )
    return list(response.events)


def _completion(
    token: bytes, *commands: object, cached_event_id: int, **extra: object
) -> pb.RespondWorkflowTaskCompletedRequest:
    return pb.RespondWorkflowTaskCompletedRequest(
        namespace=NS,
        task_token=token,
        commands=list(commands),
        identity="sticky",
        cached_event_id=cached_event_id,
        **extra,
    )


async def test_a_sticky_completion_answers_with_the_events_it_appended(wire: Wire) -> None:
    await wire.start("appended-1")
    task = await wire.poll_workflow_task()
    started_id = task.history[-1].event_id
    response = await wire.stub.RespondWorkflowTaskCompleted(
        _completion(
            task.task_token,
            schedule_activity("a"),
            start_timer("t", 3600),
            cached_event_id=started_id,
            eager_activity_slots=1,
        )
    )
    history = await _history(wire, "appended-1")
    assert [e.event_type for e in response.appended_events] == [
        "WorkflowTaskCompleted",
        "ActivityTaskScheduled",
        "TimerStarted",
    ]
    assert list(response.appended_events) == history[started_id:]

    # Closing the run: the close event is among them.
    (activity,) = response.activity_tasks
    task = (
        await wire.stub.RespondActivityTaskCompleted(
            pb.RespondActivityTaskCompletedRequest(
                namespace=NS, task_token=activity.task_token, identity="sticky", eager_workflow_task_queue="q"
            )
        )
    ).workflow_task
    started_id = task.history[-1].event_id
    response = await wire.stub.RespondWorkflowTaskCompleted(
        _completion(task.task_token, complete_workflow("ok"), cached_event_id=started_id)
    )
    history = await _history(wire, "appended-1")
    assert [e.event_type for e in response.appended_events] == ["WorkflowTaskCompleted", "WorkflowExecutionCompleted"]
    assert list(response.appended_events) == history[started_id:]


async def test_without_cached_event_id_the_answer_carries_no_events(wire: Wire) -> None:
    await wire.start("appended-2")
    task = await wire.poll_workflow_task()
    response = await wire.stub.RespondWorkflowTaskCompleted(
        _completion(task.task_token, start_timer("t", 3600), cached_event_id=0)
    )
    assert not response.appended_events
    assert [e.event_type for e in await _history(wire, "appended-2")][-2:] == ["WorkflowTaskCompleted", "TimerStarted"]


async def test_a_retried_task_answers_from_its_own_started_event_on(wire: Wire) -> None:
    """A retried task's Scheduled/Started are written when it completes, but the worker
    was handed them already (transient): the answer starts after them."""
    await wire.start("appended-3")
    first = await wire.poll_workflow_task()
    await wire.stub.RespondWorkflowTaskFailed(
        pb.RespondWorkflowTaskFailedRequest(
            namespace=NS, task_token=first.task_token, identity="sticky", failure=common_pb2.Failure(message="bug")
        )
    )
    retried = await wire.poll_workflow_task()
    assert retried.attempt == 2
    started_id = retried.history[-1].event_id
    response = await wire.stub.RespondWorkflowTaskCompleted(
        _completion(retried.task_token, start_timer("t", 3600), cached_event_id=started_id)
    )
    history = await _history(wire, "appended-3")
    assert [e.event_type for e in history[started_id - 2 : started_id]] == [
        "WorkflowTaskScheduled",
        "WorkflowTaskStarted",
    ]
    assert [e.event_type for e in response.appended_events] == ["WorkflowTaskCompleted", "TimerStarted"]
    assert list(response.appended_events) == history[started_id:]


async def test_on_the_worker_stream_the_answer_is_the_same(wire: Wire) -> None:
    await wire.start("appended-4")
    stream = RawWorkerStream(wire.channel)
    try:
        await stream.hello("default", credit("q", WORKFLOW))
        (pushed,) = await stream.tasks(1)
        task = pushed.workflow_task
        started_id = task.history[-1].event_id
        report = stream.report(
            workflow_task_completed=_completion(task.task_token, start_timer("t", 3600), cached_event_id=started_id)
        )
        await stream.send(reports=[report])
        result = (await stream.results(1))[report.id]
        assert not result.status_code, result.status_message
        history = await _history(wire, "appended-4")
        appended = list(result.workflow_task_completed.appended_events)
        assert [e.event_type for e in appended] == ["WorkflowTaskCompleted", "TimerStarted"]
        assert appended == history[started_id:]
    finally:
        stream.cancel()
