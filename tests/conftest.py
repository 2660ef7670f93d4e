"""Fixtures shared by the whole suite.

Running a test against both stores
----------------------------------
Request ``store_url`` (or ``store_factory`` / ``store``) and the test runs twice,
as ``test_x[sqlite]`` and ``test_x[postgresql]``::

    async def test_something(store_url):
        server = FlowForgeServer(ServerConfig(store=store_url, port=0))   # a fresh, empty store

    async def test_other(store_factory):
        store = await store_factory()     # opened now, closed at teardown
        replica = await store_factory()   # a second store on the same database (PostgreSQL
                                          # only: a SQLite file admits one server)

    async def test_third(store):          # one opened store
        async with store.transaction() as tx: ...

``store_kind`` says which of the two is running ("sqlite" or "postgresql"). The
PostgreSQL variant carries the ``postgres`` marker, so ``-m "not postgres"`` runs
SQLite only.

Both worker transports
----------------------
Request ``task_transport`` and the test runs twice, as ``test_x[stream]`` and
``test_x[unary]``, with ``FLOWFORGE_TEST_TASK_TRANSPORT`` set for the worker processes it
starts (:mod:`testsupport.task_transport`); pass the value to in-process workers.

A fake WorkflowService
----------------------
``serve_fake`` serves a servicer (a ``WorkflowServiceServicer`` subclass that answers
as the test wants) on a free local port over real gRPC and returns its address::

    async def test_client(serve_fake):
        address = await serve_fake(ScriptedService())   # stopped at teardown

PostgreSQL
----------
``postgres`` (session) is the server, found or started by :mod:`testsupport.postgres`:
``FLOWFORGE_TEST_POSTGRES_DSN`` if set, else a throwaway cluster from the local
``initdb``/``pg_ctl`` (removed after the session), else ``testcontainers`` if Docker
answers. If none works the PostgreSQL tests are skipped — except with ``CI=true``,
where they fail: CI must never pass by skipping them. ``postgres_dsn`` is a fresh
migrated database per test (copied from a template, so cheap), dropped afterwards;
``await postgres.create_database(migrated=False)`` gives an empty one.

Parallel workers
----------------
The README's test command runs the suite in pytest-xdist worker processes, each taking
whole test files (``--dist loadfile``). Each worker is a session of its own, so it starts
its own PostgreSQL cluster, Azurite and browser (session fixtures), on free ports, with its
own ``tmp_path`` root. A test owns only what it started: its servers listen on free ports,
and it counts, kills and measures its own processes, stores and databases, never the machine's.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from flowforge.api.v1 import workflow_service_pb2_grpc
from flowforge.server.app import open_store
from flowforge.server.stores.base import Store
from testsupport.azurite import AzuriteServer, AzuriteUnavailable, start_azurite
from testsupport.postgres import PostgresServer, PostgresUnavailable, start_postgres
from testsupport.task_transport import ENV as TASK_TRANSPORT_ENV
from testsupport.task_transport import TRANSPORTS

STORE_KINDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """The PostgreSQL server of this session (see the module docstring)."""
    try:
        server = start_postgres()
    except PostgresUnavailable as error:
        if _in_ci():
            pytest.fail(f"CI=true but no PostgreSQL is available: {error}", pytrace=False)
        pytest.skip(f"no PostgreSQL available: {error}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def azurite() -> Iterator[AzuriteServer]:
    """Azurite's blob service for this session, installed from npm on first use
    (:mod:`testsupport.azurite`); skipped without node/npm, but failing with ``CI=true``."""
    try:
        server = start_azurite()
    except AzuriteUnavailable as error:
        if _in_ci():
            pytest.fail(f"CI=true but Azurite could not be started: {error}", pytrace=False)
        pytest.skip(f"Azurite unavailable: {error}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def postgres_dsn(postgres: PostgresServer) -> AsyncIterator[str]:
    """A fresh database with the current schema, dropped after the test."""
    async with postgres.database() as dsn:
        yield dsn


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    """ "sqlite" or "postgresql": the store this run of the test uses."""
    return request.param


@pytest.fixture(params=TRANSPORTS)
def task_transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """ "stream" or "unary": how this run's workers get tasks (set for worker processes too)."""
    monkeypatch.setenv(TASK_TRANSPORT_ENV, request.param)
    return str(request.param)


@pytest.fixture
async def store_url(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A URL (``ServerConfig.store``) naming a fresh, empty store of ``store_kind``."""
    if store_kind == "sqlite":
        yield str(tmp_path / "flowforge.db")
        return
    # Requested here, not as a parameter, so SQLite runs never look for PostgreSQL.
    server: PostgresServer = request.getfixturevalue("postgres")
    async with server.database() as dsn:
        yield dsn


@pytest.fixture
async def store_factory(store_url: str) -> AsyncIterator[Callable[[], Awaitable[Store]]]:
    """``await store_factory()`` opens a store on ``store_url``; all are closed at teardown."""
    opened: list[Store] = []

    async def open_one() -> Store:
        store = open_store(store_url)
        await store.open()
        opened.append(store)
        return store

    yield open_one
    for store in reversed(opened):
        await store.close()


@pytest.fixture
async def store(store_factory: Callable[[], Awaitable[Store]]) -> Store:
    """One opened store of ``store_kind``."""
    return await store_factory()


FakeServer = Callable[..., Awaitable[str]]


@pytest.fixture
async def serve_fake() -> AsyncIterator[FakeServer]:
    """``await serve_fake(servicer, **grpc_options)`` serves ``servicer`` as the
    WorkflowService on a free local port and returns its address; all are stopped at teardown."""
    servers: list[grpc.aio.Server] = []

    async def serve(servicer: workflow_service_pb2_grpc.WorkflowServiceServicer, **grpc_options: int) -> str:
        server = grpc.aio.server(options=list(grpc_options.items()))
        workflow_service_pb2_grpc.add_WorkflowServiceServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        servers.append(server)
        return f"127.0.0.1:{port}"

    yield serve
    for server in servers:
        await server.stop(grace=None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files holding a ``slow`` test go first, the rest keep their order: pytest-xdist hands
    whole files out in this order (``--dist loadfile --no-loadscope-reorder``), so a long file
    never starts last while the other workers have nothing left to run."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # a stable sort


CHAOS_SUMMARY = "chaos summary"
"""The user property under which ``tests/chaos`` records each chaos run's summary line."""


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Prints the chaos runs' summary lines, also when pytest-xdist workers ran them."""
    lines = [
        value
        for reports in terminalreporter.stats.values()
        for report in reports
        if getattr(report, "when", None) == "teardown"
        for name, value in getattr(report, "user_properties", ())
        if name == CHAOS_SUMMARY
    ]
    if lines:
        terminalreporter.section("chaos")
        for line in lines:
            terminalreporter.write_line(line)
