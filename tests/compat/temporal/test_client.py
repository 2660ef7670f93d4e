"""Connecting and running a workflow the way Temporal's samples do."""

from __future__ import annotations

import uuid
from pathlib import Path

from temporalio.client import Client
from temporalio.envconfig import ClientConfig
from temporalio.worker import Worker

from .hello import GreetingWorkflow, compose_greeting


async def test_connect_with_an_envconfig_profile(target_host: str, tmp_path: Path) -> None:
    config_file = tmp_path / "temporal.toml"
    config_file.write_text(f'[profile.default]\naddress = "{target_host}"\nnamespace = "default"\n')
    config = ClientConfig.load_client_connect_config(config_file=str(config_file))
    config.setdefault("target_host", "localhost:7233")
    client = await Client.connect(**config)
    assert client.namespace == "default"
    await run_greeting(client)


async def test_connect_by_target_host_keyword(target_host: str) -> None:
    client = await Client.connect(target_host=target_host, namespace="default")
    await run_greeting(client)


async def run_greeting(client: Client) -> None:
    task_queue = f"hello-{uuid.uuid4()}"
    async with Worker(client, task_queue=task_queue, workflows=[GreetingWorkflow], activities=[compose_greeting]):
        result = await client.execute_workflow(
            GreetingWorkflow.run, "World", id=f"hello-{uuid.uuid4()}", task_queue=task_queue
        )
    assert result == "Hello, World!"


async def test_execute_workflow_by_name_with_result_type(client: Client) -> None:
    task_queue = f"hello-{uuid.uuid4()}"
    async with Worker(client, task_queue=task_queue, workflows=[GreetingWorkflow], activities=[compose_greeting]):
        handle = await client.start_workflow(
            "GreetingWorkflow", "Ada", id=f"hello-{uuid.uuid4()}", task_queue=task_queue, result_type=str
        )
        assert await handle.result() == "Hello, Ada!"


async def test_fetch_history_events_pages_through_the_history(client: Client) -> None:
    task_queue = f"hello-{uuid.uuid4()}"
    async with Worker(client, task_queue=task_queue, workflows=[GreetingWorkflow], activities=[compose_greeting]):
        handle = await client.start_workflow(
            GreetingWorkflow.run, "Ada", id=f"hello-{uuid.uuid4()}", task_queue=task_queue
        )
        await handle.result()
    events = [event async for event in handle.fetch_history_events(page_size=2)]
    assert events[0].event_type == "WorkflowExecutionStarted" and events[-1].event_type == "WorkflowExecutionCompleted"
    assert [e.event_id for e in events] == list(range(1, len(events) + 1))
