"""Executions for the console's benchmark and screenshots: a DAG of parallel chains
(``Chains``), a run that waits for signals (``Inbox``, made long by sending it many),
and a server with its console on a free port."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.exceptions import ApplicationError
from flowforge.server import FlowForgeServer, ServerConfig

QUEUE = "console-demo"
_TIMEOUT = timedelta(seconds=30)
_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=100), maximum_attempts=3)


@activity.defn
async def transform(value: str) -> str:
    if value.endswith("!") and activity.info().attempt == 1:
        raise ApplicationError("the upstream API answered 503", type="Unavailable")
    return value.rstrip("!") + "."


@workflow.defn
class Chains:
    """``prepare``, then ``width`` chains of ``depth`` steps in parallel, then ``merge``."""

    @workflow.run
    async def run(self, width: int, depth: int) -> str:
        seed = await workflow.execute_activity(transform, "seed", start_to_close_timeout=_TIMEOUT)

        async def chain(index: int) -> str:
            value = f"{seed}{index}"
            for step in range(depth):
                flaky = "!" if (index, step) == (1, 1) else ""
                value = await workflow.execute_activity(
                    transform, value[-20:] + flaky, start_to_close_timeout=_TIMEOUT, retry_policy=_RETRY
                )
            return value

        ends = await asyncio.gather(*(chain(i) for i in range(width)))
        await workflow.sleep(timedelta(milliseconds=50))
        return await workflow.execute_activity(transform, "".join(ends)[-40:], start_to_close_timeout=_TIMEOUT)


@workflow.defn
class Inbox:
    """Waits for a ``close`` signal, keeping every message it is sent."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    @workflow.signal
    def message(self, text: str) -> None:
        self.messages.append(text)

    @workflow.signal
    def close(self) -> None:
        self.messages.append("")

    @workflow.run
    async def run(self) -> int:
        await workflow.wait_condition(lambda: "" in self.messages)
        return len(self.messages) - 1


async def start_server(store: str = ":memory:") -> FlowForgeServer:
    """A server without authentication, the console on a free HTTP port."""
    server = FlowForgeServer(ServerConfig(store=store, port=0, http_port=0, poll_recheck_interval_s=0.2))
    await server.start()
    return server


async def long_history(client: Client, workflow_id: str, events: int) -> None:
    """An ``Inbox`` run with ``events`` events, made without a worker: the start, its
    workflow task, then a signal per event (sent 50 at a time)."""
    handle = await client.start_workflow(Inbox.run, id=workflow_id, task_queue=QUEUE + "-idle")
    remaining = events - 2
    while remaining > 0:
        batch = min(50, remaining)
        await asyncio.gather(*(handle.signal(Inbox.message, f"message {remaining - i}") for i in range(batch)))
        remaining -= batch
