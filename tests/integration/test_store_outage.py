"""The store briefly unavailable under a running server.

- Callers get UNAVAILABLE (not INTERNAL, and well within their deadline), and the
  server recovers by itself once the store is back: no restart.
- The SDK client and worker retry UNAVAILABLE with backoff, so a workflow started
  during a short outage completes.

The outage is store-specific: on PostgreSQL the server reaches the database through a
``TcpProxy`` that the test cuts (every connection aborted, new ones refused) and
restores; on SQLite another connection holds an exclusive lock on the database file
(``BEGIN EXCLUSIVE``), the way a backup tool or an operator's ``sqlite3`` shell would.
The server runs in its own process, so a server that blocked would block only itself.
Its health (gRPC ``grpc.health.v1.Health`` and ``GET /readyz``) follows the store:
NOT_SERVING during the outage, SERVING again after it.
"""

from __future__ import annotations

import abc
import asyncio
import sqlite3
import time
import urllib.parse
from collections.abc import AsyncIterator, Awaitable
from datetime import timedelta
from pathlib import Path

import aiohttp
import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from flowforge import Client, activity, workflow
from flowforge.client import RPCRetryConfig
from flowforge.exceptions import RPCError
from flowforge.worker import Worker
from tests.integration._processes import ServerProcess
from testsupport.postgres import free_port, with_address
from testsupport.tcp_proxy import TcpProxy
from testsupport.waiting import wait_until

QUEUE = "outage"
# What one RPC attempt of the probing client may take; the server must answer sooner.
PROBE_DEADLINE = timedelta(seconds=8)
# How fast "fast" is for an UNAVAILABLE answer (the server gives up waiting for the store).
ANSWER_BOUND_S = 5.0


class Outage(abc.ABC):
    """Makes the store unreachable for a running server, and reachable again."""

    @abc.abstractmethod
    async def begin(self) -> None: ...

    @abc.abstractmethod
    async def end(self) -> None: ...


class SQLiteExclusiveLock(Outage):
    def __init__(self, path: str) -> None:
        self._path = path
        self._connection: sqlite3.Connection | None = None

    async def begin(self) -> None:
        def lock() -> sqlite3.Connection:
            connection = sqlite3.connect(self._path, isolation_level=None, timeout=10, check_same_thread=False)
            connection.execute("BEGIN EXCLUSIVE")
            return connection

        self._connection = await asyncio.to_thread(lock)

    async def end(self) -> None:
        assert self._connection is not None
        self._connection.execute("ROLLBACK")
        self._connection.close()
        self._connection = None


class PostgresCut(Outage):
    def __init__(self, proxy: TcpProxy) -> None:
        self._proxy = proxy

    async def begin(self) -> None:
        await self._proxy.cut()

    async def end(self) -> None:
        await self._proxy.start()


@pytest.fixture
async def outage_server(store_kind: str, store_url: str, tmp_path: Path) -> AsyncIterator[tuple[ServerProcess, Outage]]:
    """A server process whose store the test can take away (see the module docstring)."""
    proxy: TcpProxy | None = None
    http = ("--http-port", str(free_port()))
    if store_kind == "sqlite":
        process, outage = ServerProcess(store_url, tmp_path, extra_args=http), SQLiteExclusiveLock(store_url)
    else:
        target = urllib.parse.urlsplit(store_url)
        proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 5432)
        await proxy.start()
        process = ServerProcess(with_address(store_url, "127.0.0.1", proxy.port), tmp_path, extra_args=http)
        outage = PostgresCut(proxy)
    # In a thread: the proxy serving the server's connections runs on this loop.
    await asyncio.to_thread(process.start)
    try:
        yield process, outage
    finally:
        await asyncio.to_thread(process.stop)
        if proxy is not None:
            await proxy.cut()


@activity.defn
async def shout(text: str) -> str:
    return text.upper()


@workflow.defn
class Shouts:
    @workflow.run
    async def run(self, text: str) -> str:
        return await workflow.execute_activity(shout, text, start_to_close_timeout=timedelta(seconds=10))


async def probe_start(client: Client, workflow_id: str) -> tuple[RPCError | None, float]:
    """Starts a workflow once (no retries); returns the error, if any, and how long the answer took."""
    began = time.monotonic()
    try:
        await client.start_workflow(Shouts.run, "probe", id=workflow_id, task_queue=QUEUE)
    except RPCError as error:
        return error, time.monotonic() - began
    return None, time.monotonic() - began


async def test_an_unavailable_store_gives_callers_unavailable_promptly_and_the_server_recovers_by_itself(
    outage_server: tuple[ServerProcess, Outage], store_kind: str
) -> None:
    server, outage = outage_server
    pid = server.process.pid  # type: ignore[union-attr]
    impatient = await Client.connect(
        server.address, rpc_retry=RPCRetryConfig(maximum_elapsed=timedelta(0), rpc_timeout=PROBE_DEADLINE)
    )
    try:
        before = await impatient.start_workflow(Shouts.run, "before", id="before", task_queue=QUEUE)

        await outage.begin()
        try:
            for attempt in range(3):  # every call, not only the first
                error, took = await probe_start(impatient, f"during-{attempt}")
                assert error is not None, "a start succeeded while the store was unavailable"
                assert error.status == grpc.StatusCode.UNAVAILABLE, error
                assert "unavailable" in error.message and "retry" in error.message
                assert took < ANSWER_BOUND_S
            if store_kind == "sqlite":
                # WAL mode: a writer's lock does not stop readers.
                assert (await before.describe()).status.name == "RUNNING"
            else:
                began = time.monotonic()
                with pytest.raises(RPCError) as raised:
                    await before.describe()
                assert raised.value.status == grpc.StatusCode.UNAVAILABLE
                assert time.monotonic() - began < ANSWER_BOUND_S
        finally:
            await outage.end()

        # Back by itself: the same process serves writes and reads again.
        async def recovered() -> bool:
            error, _ = await probe_start(impatient, "after")
            return error is None or error.status == grpc.StatusCode.ALREADY_EXISTS

        await wait_until(recovered, timeout=30, what="the server to recover", interval=0.2)
        assert server.process.poll() is None and server.process.pid == pid  # type: ignore[union-attr]
        assert (await impatient.get_workflow_handle("after").describe()).status.name == "RUNNING"
        assert [e.event_type for e in (await before.fetch_history()).events][:2] == [
            "WorkflowExecutionStarted",
            "WorkflowTaskScheduled",
        ]
        for attempt in range(3):  # the refused starts changed nothing
            with pytest.raises(RPCError) as missing:
                await impatient.get_workflow_handle(f"during-{attempt}").describe()
            assert missing.value.status == grpc.StatusCode.NOT_FOUND
    finally:
        await impatient.close()


async def test_a_workflow_started_during_a_short_outage_completes(outage_server: tuple[ServerProcess, Outage]) -> None:
    server, outage = outage_server
    client = await Client.connect(server.address)  # default retries: backoff, for up to a minute
    impatient = await Client.connect(server.address, rpc_retry=RPCRetryConfig(maximum_elapsed=timedelta(0)))
    try:
        async with Worker(
            client,
            task_queue=QUEUE,
            workflows=[Shouts],
            activities=[shout],
            graceful_shutdown_timeout=timedelta(seconds=0),
        ):
            await outage.begin()
            try:
                starting = asyncio.create_task(
                    client.start_workflow(Shouts.run, "made it", id="started-in-outage", task_queue=QUEUE)
                )
                # The outage is real: a call that may not retry is refused...
                error, _ = await probe_start(impatient, "refused")
                assert error is not None and error.status == grpc.StatusCode.UNAVAILABLE
                # ... while the patient start keeps retrying.
                assert not starting.done()
            except BaseException:
                starting.cancel()
                raise
            finally:
                await outage.end()
            handle = await asyncio.wait_for(starting, 60)
            assert await asyncio.wait_for(handle.result(), 60) == "MADE IT"
        history = (await handle.fetch_history()).events
        assert [e.event_id for e in history] == list(range(1, len(history) + 1))
        assert sum(e.event_type == "WorkflowExecutionStarted" for e in history) == 1
        # The client's retries reused one request id: one execution, not one per attempt.
        runs = [e async for e in client.list_workflows(workflow_id="started-in-outage")]
        assert len(runs) == 1
    finally:
        await client.close()
        await impatient.close()


async def test_health_is_not_serving_during_a_store_outage_and_serving_again_after_it(
    outage_server: tuple[ServerProcess, Outage],
) -> None:
    server, outage = outage_server
    readyz = f"http://127.0.0.1:{server.extra_args[server.extra_args.index('--http-port') + 1]}/readyz"
    async with grpc.aio.insecure_channel(server.address) as channel, aiohttp.ClientSession() as http:
        health = health_pb2_grpc.HealthStub(channel)

        async def state() -> tuple[int, int, int]:
            overall = await health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
            service = await health.Check(
                health_pb2.HealthCheckRequest(service="flowforge.api.v1.WorkflowService"), timeout=10
            )
            async with http.get(readyz) as answer:
                return overall.status, service.status, answer.status

        serving = (health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.SERVING, 200)
        not_serving = (health_pb2.HealthCheckResponse.NOT_SERVING, health_pb2.HealthCheckResponse.NOT_SERVING, 503)
        assert await state() == serving
        await outage.begin()
        try:
            await wait_until(
                lambda: _is(state(), not_serving), timeout=20, what="health to say NOT_SERVING", interval=0.2
            )
            async with http.get(readyz) as answer:
                assert (await answer.json())["reason"].startswith("the store")  # says what is wrong
        finally:
            await outage.end()
        await wait_until(lambda: _is(state(), serving), timeout=30, what="health to say SERVING again", interval=0.2)


async def _is(state: Awaitable[tuple[int, int, int]], expected: tuple[int, int, int]) -> bool:
    return await state == expected
