"""Per-execution limits (server/history/execution_limits.py), with small limits to reach them.

- A completion that would take the history past its event limit terminates the run
  with a reason naming the limit (it is not left to wedge); likewise past the byte limit.
- Past the signal limit, a signal is RESOURCE_EXHAUSTED and changes nothing.
- A completion that would leave too many activities or children pending fails its
  workflow task (retried), and a smaller one then goes through.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.history import EngineConfig
from flowforge.server.history.execution_limits import ExecutionLimits
from tests.integration._protocol import NS, Wire, complete_workflow, event_types, schedule_activity
from tests.integration.test_folded_workflow_tasks import _activity_completion, _fold, _started_with_activities

LIMITS = ExecutionLimits(
    max_history_events=40,
    warn_history_events=20,
    max_history_bytes=6000,
    warn_history_bytes=3000,
    max_signals=3,
    max_pending_activities=2,
    max_pending_children=1,
    size_check_every=5,
)


@pytest.fixture
async def limited(store_url: str) -> AsyncIterator[Wire]:
    server = FlowForgeServer(ServerConfig(store=store_url, port=0, engine=EngineConfig(limits=LIMITS)))
    await server.start()
    wire = Wire(f"127.0.0.1:{server.port}")
    yield wire
    await wire.close()
    await server.stop()


def _marker(index: int) -> command_pb2.Command:
    return command_pb2.Command(record_marker=command_pb2.RecordMarkerCommandAttributes(marker_name=f"m{index}"))


def _child(workflow_id: str) -> command_pb2.Command:
    return command_pb2.Command(
        start_child_workflow_execution=command_pb2.StartChildWorkflowExecutionCommandAttributes(
            workflow_id=workflow_id, workflow_type="child", task_queue="q"
        )
    )


async def _first_task(wire: Wire, workflow_id: str, payload: bytes = b"") -> bytes:
    await wire.stub.StartWorkflowExecution(
        pb.StartWorkflowExecutionRequest(
            namespace=NS,
            workflow_id=workflow_id,
            workflow_type="wf",
            task_queue="q",
            input=common_pb2.Payloads(payloads=[common_pb2.Payload(data=payload)]),
        )
    )
    task = await wire.poll_workflow_task()
    assert task.workflow_execution.workflow_id == workflow_id
    return task.task_token


async def _status(wire: Wire, workflow_id: str) -> int:
    return (await wire.describe(workflow_id)).status


async def test_a_history_past_its_event_limit_terminates_the_run(limited: Wire) -> None:
    token = await _first_task(limited, "long")
    await limited.complete_workflow_task(token, *[_marker(i) for i in range(50)])
    history = await limited.history("long")
    assert event_types(history)[-1] == "WorkflowExecutionTerminated"
    reason = history[-1][2]["reason"]
    assert "over the limit of 40 per run" in reason and "continue as new" in reason
    assert not any(t == "MarkerRecorded" for t in event_types(history)), "nothing of the refused completion applied"
    assert await _status(limited, "long") == common_pb2.WORKFLOW_EXECUTION_STATUS_TERMINATED


async def test_a_history_past_its_byte_limit_terminates_the_run(limited: Wire) -> None:
    token = await _first_task(limited, "heavy", payload=b"x" * 5000)
    await limited.complete_workflow_task(token, *[_marker(i) for i in range(4)])
    history = await limited.history("heavy")
    assert event_types(history)[-1] == "WorkflowExecutionTerminated"
    assert "bytes, over the limit of 6000 per run" in history[-1][2]["reason"]


async def test_signals_past_the_limit_are_refused(limited: Wire) -> None:
    token = await _first_task(limited, "chatty")
    # Enough events that the signal count is checked (it cannot pass the limit before).
    await limited.complete_workflow_task(token, _marker(0), _marker(1))

    async def signal() -> None:
        await limited.stub.SignalWorkflowExecution(
            pb.SignalWorkflowExecutionRequest(
                namespace=NS, execution=common_pb2.WorkflowExecution(workflow_id="chatty"), signal_name="s"
            )
        )

    for _ in range(3):
        await signal()
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await signal()
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "3 signals, the limit per execution" in (refused.value.details() or "")
    assert event_types(await limited.history("chatty")).count("WorkflowExecutionSignaled") == 3


async def test_too_many_pending_activities_or_children_fail_the_workflow_task(limited: Wire) -> None:
    token = await _first_task(limited, "fan-out")
    await limited.complete_workflow_task(token, *[schedule_activity(f"a{i}") for i in range(3)])
    history = await limited.history("fan-out")
    assert event_types(history)[-1] == "WorkflowTaskFailed"
    assert "3 pending activities, over the limit of 2" in str(history[-1][2])
    assert "ActivityTaskScheduled" not in event_types(history)
    retry = await limited.poll_workflow_task()  # retried after its backoff
    await limited.complete_workflow_task(
        retry.task_token, *[schedule_activity(f"a{i}") for i in range(2)], _child("c1"), _child("c2")
    )
    # A repeated failure of the same workflow task is not written to history again (as
    # in Temporal); the run shows it as its last workflow task failure.
    described = await limited.describe("fan-out")
    assert "2 pending child workflows, over the limit of 1" in str(described)
    assert "StartChildWorkflowExecutionInitiated" not in event_types(await limited.history("fan-out"))
    retry = await limited.poll_workflow_task()
    await limited.complete_workflow_task(
        retry.task_token, *[schedule_activity(f"a{i}") for i in range(2)], _child("c1")
    )
    assert event_types(await limited.history("fan-out")).count("ActivityTaskScheduled") == 2


@pytest.mark.parametrize("folded", [False, True], ids=["unfolded", "folded"])
async def test_an_activity_result_past_the_byte_limit_terminates_the_run_folded_or_not(
    limited: Wire, folded: bool
) -> None:
    """The fold appends the activity's events (its result) and runs the completion in one
    transaction: the size check counts them, as the unfolded path, which wrote them a
    transaction earlier, does."""
    workflow_id = f"heavy-result-{folded}"
    (token,), last = await _started_with_activities(limited, workflow_id, "a")
    if folded:
        fold = _fold(last, complete_workflow("done"))
        response = await limited.stub.RespondActivityTaskCompleted(_activity_completion(token, "x" * 8000, fold))
        assert response.workflow_task_folded
    else:
        response = await limited.stub.RespondActivityTaskCompleted(_activity_completion(token, "x" * 8000, None))
        await limited.stub.RespondWorkflowTaskCompleted(
            pb.RespondWorkflowTaskCompletedRequest(
                namespace=NS, task_token=response.workflow_task.task_token, commands=[complete_workflow("done")]
            )
        )
    history = await limited.history(workflow_id)
    assert event_types(history)[-1] == "WorkflowExecutionTerminated", event_types(history)
    assert "bytes, over the limit of 6000 per run" in history[-1][2]["reason"]
