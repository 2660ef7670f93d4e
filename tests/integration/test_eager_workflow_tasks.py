"""Eager workflow tasks, over the wire (no SDK).

- An activity completion that asks for it (``eager_workflow_task_queue``) gets the
  workflow task it schedules, leased in the same transaction: the history ends with
  its ``WorkflowTaskStarted``, its token completes it, and no poll can lease it too.
- Without asking, or for another queue, the task stays in its queue for a poll.
- A workflow task completion with ``return_new_workflow_task`` gets the next
  workflow task when events arrived while it ran (they are flushed at once).
"""

from __future__ import annotations

import json

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.converter import default_converter
from tests.integration._protocol import NS, Wire, assert_gapless, complete_workflow, event_types, schedule_activity


async def _workflow_with_activity(wire: Wire, workflow_id: str, *activity_ids: str) -> list[bytes]:
    """Starts a run and schedules ``activity_ids`` eagerly; returns their tokens."""
    await wire.start(workflow_id)
    task = await wire.poll_workflow_task()
    response = await wire.complete_workflow_task(
        task.task_token, *(schedule_activity(a) for a in activity_ids), eager=len(activity_ids)
    )
    assert [t.activity_id for t in response.activity_tasks] == list(activity_ids)
    return [t.task_token for t in response.activity_tasks]


async def _complete_activity(
    wire: Wire, token: bytes, value: object, eager_queue: str = ""
) -> pb.RespondActivityTaskCompletedResponse:
    return await wire.stub.RespondActivityTaskCompleted(
        pb.RespondActivityTaskCompletedRequest(
            namespace=NS,
            task_token=token,
            result=default_converter.to_payloads([value]),
            identity="eager-test",
            eager_workflow_task_queue=eager_queue,
        )
    )


async def test_activity_completion_hands_back_the_workflow_task_it_schedules(wire: Wire) -> None:
    (token,) = await _workflow_with_activity(wire, "eager-1", "a")
    response = await _complete_activity(wire, token, "done", eager_queue="q")
    task = response.workflow_task
    assert task.task_token and task.workflow_execution.workflow_id == "eager-1"
    assert task.workflow_type == "wf" and task.task_queue == "q" and task.attempt == 1
    history = [(e.event_id, e.event_type, json.loads(e.attributes_json)) for e in task.history]
    assert_gapless(history)
    assert event_types(history)[-4:] == [
        "ActivityTaskStarted",
        "ActivityTaskCompleted",
        "WorkflowTaskScheduled",
        "WorkflowTaskStarted",
    ]
    assert history[-1][2]["identity"] == "eager-test"
    # Leased: a poll finds nothing, and the handed-back token completes the run.
    assert not (await wire.poll_workflow_task(timeout=0.3)).task_token
    await wire.complete_workflow_task(task.task_token, complete_workflow("ok"))
    assert event_types(await wire.history("eager-1"))[-2:] == ["WorkflowTaskCompleted", "WorkflowExecutionCompleted"]


async def test_without_asking_or_for_another_queue_the_task_waits_for_a_poll(wire: Wire) -> None:
    first, second = await _workflow_with_activity(wire, "eager-2", "a", "b")
    assert not (await _complete_activity(wire, first, 1)).HasField("workflow_task")
    polled = await wire.poll_workflow_task()
    assert polled.workflow_execution.workflow_id == "eager-2"
    await wire.complete_workflow_task(polled.task_token)
    assert not (await _complete_activity(wire, second, 2, eager_queue="other-queue")).HasField("workflow_task")
    assert (await wire.poll_workflow_task()).workflow_execution.workflow_id == "eager-2"


async def test_workflow_task_completion_returns_the_next_task_for_events_that_arrived(wire: Wire) -> None:
    first, second = await _workflow_with_activity(wire, "eager-3", "a", "b")
    task = (await _complete_activity(wire, first, 1, eager_queue="q")).workflow_task
    assert task.task_token
    # "b" completes while the workflow task runs: its events wait in the buffer.
    assert not (await _complete_activity(wire, second, 2, eager_queue="q")).HasField("workflow_task")
    response = await wire.stub.RespondWorkflowTaskCompleted(
        pb.RespondWorkflowTaskCompletedRequest(
            namespace=NS, task_token=task.task_token, identity="eager-test", return_new_workflow_task=True
        )
    )
    following = response.workflow_task
    assert following.task_token
    types = [e.event_type for e in following.history]
    assert types[-5:] == [
        "WorkflowTaskCompleted",
        "ActivityTaskStarted",
        "ActivityTaskCompleted",
        "WorkflowTaskScheduled",
        "WorkflowTaskStarted",
    ]
    # Nothing arrived during that one: asking again returns no task.
    response = await wire.stub.RespondWorkflowTaskCompleted(
        pb.RespondWorkflowTaskCompletedRequest(
            namespace=NS, task_token=following.task_token, identity="eager-test", return_new_workflow_task=True
        )
    )
    assert not response.HasField("workflow_task")
    assert_gapless(await wire.history("eager-3"))
