"""A folded workflow task meets the per-execution limits exactly as the unfolded path does.

The fold appends the activity's events (its result among them) and runs the workflow
task's completion in one transaction, so the limits that completion checks must count
those events as the unfolded path, which committed them a transaction earlier, does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.history import EngineConfig
from flowforge.server.history.execution_limits import ExecutionLimits
from tests.integration._protocol import NS, Wire, complete_workflow, event_types
from tests.integration.test_folded_workflow_tasks import _activity_completion, _fold, _started_with_activities

# The byte size is read at every completion, so the one after the big result reads it.
LIMITS = ExecutionLimits(max_history_bytes=6000, warn_history_bytes=3000, size_check_every=1)
BIG_RESULT = "x" * 8000


@pytest.fixture
async def limited(store_url: str) -> AsyncIterator[Wire]:
    server = FlowForgeServer(ServerConfig(store=store_url, port=0, engine=EngineConfig(limits=LIMITS)))
    await server.start()
    wire = Wire(f"127.0.0.1:{server.port}")
    yield wire
    await wire.close()
    await server.stop()


@pytest.mark.parametrize("folded", [False, True], ids=["unfolded", "folded"])
async def test_an_activity_result_past_the_byte_limit_terminates_the_run_folded_or_not(
    limited: Wire, folded: bool
) -> None:
    workflow_id = f"heavy-result-{folded}"
    (token,), last = await _started_with_activities(limited, workflow_id, "a")
    if folded:
        fold = _fold(last, complete_workflow("done"))
        response = await limited.stub.RespondActivityTaskCompleted(_activity_completion(token, BIG_RESULT, fold))
        assert response.workflow_task_folded
    else:
        response = await limited.stub.RespondActivityTaskCompleted(_activity_completion(token, BIG_RESULT, None))
        await limited.stub.RespondWorkflowTaskCompleted(
            pb.RespondWorkflowTaskCompletedRequest(
                namespace=NS, task_token=response.workflow_task.task_token, commands=[complete_workflow("done")]
            )
        )
    history = await limited.history(workflow_id)
    assert event_types(history)[-1] == "WorkflowExecutionTerminated", event_types(history)
    assert "bytes, over the limit of 6000 per run" in history[-1][2]["reason"]
