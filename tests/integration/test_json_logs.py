"""JSON logs: every line of ``flowforge server start --log-format json`` parses as one
JSON object with time, level, logger and message, and the lines an RPC causes carry
its namespace and workflow id; in a worker, ``flowforge.logging`` lines logged inside
an activity or a workflow carry namespace, workflow_id, run_id (and activity_id,
attempt), and trace_id/span_id inside an OpenTelemetry span. No payload is logged."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

import flowforge.logging
from flowforge import Client, activity, workflow
from tests.integration._processes import ServerProcess
from tests.integration._reliability import DEADLINE_S, fast_worker

QUEUE = "json-logs"
SECRET_INPUT = "payload-that-must-not-be-logged"


def parse(text: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    for line in lines:
        assert isinstance(line, dict)
        assert {"time", "level", "logger", "message"} <= line.keys(), line
        assert line["time"].endswith("+00:00")
    return lines


async def test_every_server_line_is_json_and_an_rpcs_lines_carry_its_ids(tmp_path: Path) -> None:
    server = ServerProcess(str(tmp_path / "logs.db"), tmp_path, extra_args=("--log-format", "json"), log_level="DEBUG")
    await asyncio.to_thread(server.start)
    try:
        client = await Client.connect(server.address)
        await client.start_workflow("Anything", SECRET_INPUT, id="logged-1", task_queue=QUEUE)
        await client.close()
    finally:
        await asyncio.to_thread(server.stop)
    text = (tmp_path / "server.log").read_text()
    assert SECRET_INPUT not in text
    lines = parse(text)
    assert any(line["message"].startswith("FlowForge server listening on") for line in lines)
    (start,) = [line for line in lines if line["message"].startswith("StartWorkflowExecution answered OK")]
    assert start["logger"] == "flowforge.server.rpc"
    assert start["level"] == "DEBUG"
    assert start["namespace"] == "default"
    assert start["workflow_id"] == "logged-1"


@activity.defn
async def logs_in_activity(text: str) -> str:
    activity.logger.info("activity ran")
    with TracerProvider().get_tracer("test").start_as_current_span("inside"):
        logging.getLogger("app").warning("plain logger inside a span")
    return text


@workflow.defn
class LogsInWorkflow:
    @workflow.run
    async def run(self, text: str) -> str:
        workflow.logger.info("workflow ran")
        return await workflow.execute_activity(logs_in_activity, text, start_to_close_timeout=timedelta(seconds=10))


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """The process's log records as JSON lines, beside pytest's own handlers."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(flowforge.logging.JsonFormatter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield stream
    root.removeHandler(handler)
    root.setLevel(level)


async def test_worker_lines_carry_the_ids_of_the_activity_and_the_workflow(
    sdk_client: Client, json_lines: io.StringIO
) -> None:
    async with fast_worker(sdk_client, QUEUE, workflows=[LogsInWorkflow], activities=[logs_in_activity]):
        handle = await sdk_client.start_workflow(LogsInWorkflow.run, SECRET_INPUT, id="logged-2", task_queue=QUEUE)
        assert await asyncio.wait_for(handle.result(), DEADLINE_S) == SECRET_INPUT
    text = json_lines.getvalue()
    assert SECRET_INPUT not in text
    lines = parse(text)
    run_id = handle.run_id
    ids = {"namespace": "default", "workflow_id": "logged-2", "run_id": run_id}

    (in_workflow,) = [line for line in lines if line["message"].startswith("workflow ran")]
    assert in_workflow["logger"] == "flowforge.workflow"
    assert ids.items() <= in_workflow.items()
    (in_activity,) = [line for line in lines if line["message"].startswith("activity ran")]
    assert {**ids, "activity_id": "1", "attempt": 1}.items() <= in_activity.items()
    (in_span,) = [line for line in lines if line["message"] == "plain logger inside a span"]
    assert {**ids, "activity_id": "1", "attempt": 1}.items() <= in_span.items()
    assert len(in_span["trace_id"]) == 32 and len(in_span["span_id"]) == 16
    assert "trace_id" not in in_activity  # no span: no made-up trace
