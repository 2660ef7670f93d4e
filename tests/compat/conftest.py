"""Fixtures of the compatibility suite: what Temporal's own sample tests expect.

The code under ``temporal/`` is written against Temporal's Python SDK and is never imported as
it is (``temporalio`` is not installed); ``test_ported.py`` rewrites it with
``scripts/port_from_temporal.py`` and runs the rewritten tests. They take ``client`` (a client of
a server on a fresh store, each store kind in turn) and ``target_host`` (that server's address),
the fixtures Temporal's samples' conftest gives.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from flowforge import Client
from flowforge.server import FlowForgeServer, ServerConfig

collect_ignore_glob = ["temporal/*"]


@pytest.fixture
async def compat_server(store_url: str) -> AsyncIterator[FlowForgeServer]:
    """An in-process server on a fresh store (each store kind in turn)."""
    instance = FlowForgeServer(ServerConfig(store=store_url, port=0, poll_recheck_interval_s=0.2))
    await instance.start()
    yield instance
    await instance.stop()


@pytest.fixture
def target_host(compat_server: FlowForgeServer) -> str:
    """``host:port`` of the server."""
    return f"127.0.0.1:{compat_server.port}"


@pytest.fixture
async def client(target_host: str) -> AsyncIterator[Client]:
    """A client of the server, as Temporal's samples' ``client`` fixture."""
    connection = await Client.connect(target_host)
    yield connection
    await connection.close()
