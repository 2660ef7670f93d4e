"""Fixtures for integration tests: real servers on free ports, and one SDK client of each.

- ``server``: a server in this process; ``sdk_client`` is an SDK client of it, ``wire``
  raw gRPC stubs (a module may override ``server``, e.g. with the webhook on).
- ``server_process``: ``flowforge server start`` in a child process (kill -9 at will);
  ``client`` is an SDK client of it. ``auth_server_process`` is one with authentication on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from flowforge import Client
from flowforge.server import FlowForgeServer, ServerConfig
from tests.integration._processes import ServerProcess, auth_server
from tests.integration._protocol import Wire


@pytest.fixture
async def server(store_url: str) -> AsyncIterator[FlowForgeServer]:
    """An in-process server on a fresh store (each store kind in turn)."""
    instance = FlowForgeServer(ServerConfig(store=store_url, port=0, poll_recheck_interval_s=0.2))
    await instance.start()
    yield instance
    await instance.stop()


@pytest.fixture
async def sdk_client(server: FlowForgeServer) -> AsyncIterator[Client]:
    """An SDK client of the in-process ``server`` (SQLite or PostgreSQL in turn)."""
    connection = await Client.connect(f"127.0.0.1:{server.port}")
    yield connection
    await connection.close()


@pytest.fixture
async def wire(server: FlowForgeServer) -> AsyncIterator[Wire]:
    """Raw gRPC stubs connected to ``server``."""
    connection = Wire(f"127.0.0.1:{server.port}")
    yield connection
    await connection.close()


@pytest.fixture
def server_process(store_url: str, tmp_path: Path) -> Iterator[ServerProcess]:
    """``flowforge server start`` in its own process on a fresh store; kill -9 and restart it at will."""
    process = ServerProcess(store_url, tmp_path)
    process.start()
    yield process
    process.stop()


@pytest.fixture
def auth_server_process(store_url: str, tmp_path: Path) -> Iterator[ServerProcess]:
    """``server_process`` with authentication on; its admin key is in ``tmp_path / ADMIN_KEY_FILE``."""
    process = auth_server(store_url, tmp_path)
    process.start()
    yield process
    process.stop()


@pytest.fixture
async def client(server_process: ServerProcess) -> AsyncIterator[Client]:
    """An SDK client of ``server_process``."""
    connection = await Client.connect(server_process.address)
    yield connection
    await connection.close()


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    """The file worker processes' activities append their side effects to."""
    return tmp_path / "ledger.jsonl"
