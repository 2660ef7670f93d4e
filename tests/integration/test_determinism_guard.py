"""Each nondeterministic call in workflow code fails the workflow task with an error
naming the call and the line, end to end: a real server, a real worker, both stores.

One worker serves every workflow below for the whole module (per store); each test
starts one execution, reads the ``WorkflowTaskFailed`` event the server recorded, and
terminates the execution.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import os
import random
import socket
import threading
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from flowforge import Client, workflow
from flowforge.client import HistoryEvent, WorkflowHandle
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.worker import Worker
from tests.conftest import STORE_KINDS
from tests.integration import _shortid
from tests.integration._reliability import DEADLINE_S, events, of_type
from testsupport.waiting import wait_until

TASK_QUEUE = "determinism-guard"
# A port nothing listens on: the calls below fail after the guard has seen them.
CLOSED_PORT = 9
_preopened_socket: list[socket.socket] = []


def _forbidden(name: str, call: Callable[[], object]) -> type:
    """A workflow whose run method makes ``call`` (and awaits what it returns, if anything)."""

    @workflow.defn(name=f"Forbidden-{name}")
    class Forbidden:
        @workflow.run
        async def run(self) -> None:
            result = call()
            if inspect.isawaitable(result):
                await result  # forbidden: awaited

    return Forbidden


# Each lambda is the workflow code that makes the call; the tests find its line by the comment.
CASES = {
    "time.time": (lambda: time.time(), "time.time()"),  # forbidden: time.time
    "time.time_ns": (lambda: time.time_ns(), "time.time_ns()"),  # forbidden: time.time_ns
    "datetime.now": (lambda: dt.datetime.now(), "datetime.datetime.now()"),  # forbidden: datetime.now
    "datetime.utcnow": (lambda: dt.datetime.utcnow(), "datetime.datetime.utcnow()"),  # forbidden: datetime.utcnow
    "date.today": (lambda: dt.date.today(), "datetime.date.today()"),  # forbidden: date.today
    "time.sleep": (lambda: time.sleep(0.001), "time.sleep()"),  # forbidden: time.sleep
    "random.random": (lambda: random.random(), "random.random()"),  # forbidden: random.random
    "random.randint": (
        lambda: random.randint(1, 6),  # forbidden: random.randint
        "random.randint() (which calls random.getrandbits())",
    ),
    "random.shuffle": (
        lambda: random.shuffle([1, 2, 3]),  # forbidden: random.shuffle
        "random.shuffle() (which calls random.getrandbits())",
    ),
    "uuid.uuid4": (lambda: uuid.uuid4(), "uuid.uuid4()"),  # forbidden: uuid.uuid4
    "socket.socket": (lambda: socket.socket().close(), "socket.socket()"),  # forbidden: socket.socket
    "socket.connect": (
        lambda: _preopened_socket[0].connect_ex(("127.0.0.1", CLOSED_PORT)),  # forbidden: socket.connect
        "socket.socket.connect_ex()",
    ),
    "socket.create_connection": (
        lambda: socket.create_connection(("127.0.0.1", CLOSED_PORT)),  # forbidden: socket.create_connection
        "socket.create_connection() (which calls socket.getaddrinfo())",
    ),
    "urlopen": (
        lambda: urllib.request.urlopen(f"http://127.0.0.1:{CLOSED_PORT}/", timeout=1),  # forbidden: urlopen
        "urllib.request.urlopen() (which calls socket.getaddrinfo())",
    ),
    "open": (lambda: open(__file__).close(), "open()"),  # forbidden: open
    "os.listdir": (lambda: os.listdir("."), "os.listdir()"),  # forbidden: os.listdir
    "os.path.exists": (
        lambda: os.path.exists("/nonexistent"),  # forbidden: os.path.exists
        "genericpath.exists() (which calls os.stat())",
    ),
    "thread": (lambda: threading.Thread(target=print).start(), "threading.Thread.start()"),  # forbidden: thread
    "asyncio.to_thread": (
        lambda: asyncio.to_thread(print),  # forbidden: asyncio.to_thread
        "asyncio.threads.to_thread() (which calls loop.run_in_executor())",
    ),
    "asyncio.open_connection": (
        lambda: asyncio.open_connection("127.0.0.1", CLOSED_PORT),  # forbidden: asyncio.open_connection
        "asyncio.streams.open_connection() (which calls loop.create_connection())",
    ),
}
# Coroutines make their call where the workflow awaits them.
AWAITED = {"asyncio.to_thread", "asyncio.open_connection"}
WORKFLOWS = {name: _forbidden(name, call) for name, (call, _) in CASES.items()}


@workflow.defn(name="Forbidden-library")
class UsesARandomLibrary:
    @workflow.run
    async def run(self) -> str:
        return _shortid.short_id()  # forbidden: library


def _line_of(marker: str) -> int:
    return _line_ending_with(Path(__file__), f"# forbidden: {marker}")


def _line_ending_with(path: Path, comment: str) -> int:
    lines = path.read_text().splitlines()
    return next(number for number, line in enumerate(lines, start=1) if line.endswith(comment))


@pytest.fixture(scope="module", params=STORE_KINDS)
async def guarded_client(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Client]:
    """A server on a fresh store of each kind, with a worker running every workflow above."""
    if request.param == "sqlite":
        server = FlowForgeServer(ServerConfig(store=str(tmp_path_factory.mktemp("guard") / "ff.db"), port=0))
        async with _serving(server) as client:
            yield client
        return
    async with request.getfixturevalue("postgres").database() as dsn:
        async with _serving(FlowForgeServer(ServerConfig(store=dsn, port=0))) as client:
            yield client


class _serving:
    """Runs a server, a client and the worker for the module's tests."""

    def __init__(self, server: FlowForgeServer) -> None:
        self._server = server

    async def __aenter__(self) -> Client:
        await self._server.start()
        self._client = await Client.connect(f"127.0.0.1:{self._server.port}")
        self._worker = Worker(self._client, task_queue=TASK_QUEUE, workflows=[*WORKFLOWS.values(), UsesARandomLibrary])
        await self._worker.__aenter__()
        _preopened_socket.append(socket.socket())
        return self._client

    async def __aexit__(self, *exc_info: object) -> None:
        _preopened_socket.pop().close()
        await self._worker.shutdown()
        await self._client.close()
        await self._server.stop()


async def _first_workflow_task_failure(handle: WorkflowHandle) -> HistoryEvent:
    async def failures() -> list[HistoryEvent]:
        return of_type(await events(handle), "WorkflowTaskFailed")

    return (await wait_until(failures, timeout=DEADLINE_S, what=f"a WorkflowTaskFailed event in {handle}"))[0]


@pytest.mark.parametrize("name", list(CASES))
async def test_a_forbidden_call_fails_the_workflow_task_naming_the_call_and_the_line(
    guarded_client: Client, name: str
) -> None:
    handle = await guarded_client.start_workflow(WORKFLOWS[name], id=f"forbidden-{name}", task_queue=TASK_QUEUE)
    try:
        failed = await _first_workflow_task_failure(handle)
    finally:
        await handle.terminate(reason="test done")

    _, called = CASES[name]
    assert failed.attributes["cause"] == "NON_DETERMINISTIC_ERROR"
    message = failed.attributes["failure"]["message"]
    where = (
        f"{_line_of('awaited')} in _forbidden.<locals>.Forbidden.run"
        if name in AWAITED
        else f"{_line_of(name)} in <lambda>"
    )
    assert message.startswith(f"workflow code called {called} at {Path(__file__).name}:{where};")
    assert "workflow code must be deterministic" in message


async def test_a_library_drawing_from_random_is_named_with_the_workflow_line_that_called_it(
    guarded_client: Client,
) -> None:
    handle = await guarded_client.start_workflow(UsesARandomLibrary.run, id="forbidden-library", task_queue=TASK_QUEUE)
    try:
        failed = await _first_workflow_task_failure(handle)
        description = await handle.describe()
    finally:
        await handle.terminate(reason="test done")

    library_line = _line_ending_with(Path(_shortid.__file__), "# the library's own call")
    message = failed.attributes["failure"]["message"]
    assert message == (
        f"workflow code called random.choice() (which calls random.getrandbits()) at _shortid.py:"
        f"{library_line} in short_id.<locals>.<genexpr> (reached from {Path(__file__).name}:"
        f"{_line_of('library')} in UsesARandomLibrary.run); workflow code must be deterministic: "
        "use workflow.random()"
    )
    assert description.pending_workflow_task is not None
    assert description.pending_workflow_task.last_failure == f"[NON_DETERMINISTIC_ERROR] {message}"
