"""Fixtures for integration tests: real servers on free ports."""

from __future__ import annotations

from typing import AsyncIterator

import pytest

from flowforge.server import FlowForgeServer, ServerConfig
from tests.integration._protocol import Wire


@pytest.fixture
async def server(store_url: str) -> AsyncIterator[FlowForgeServer]:
    """An in-process server on a fresh store (each store kind in turn)."""
    instance = FlowForgeServer(ServerConfig(store=store_url, port=0, poll_recheck_interval_s=0.2))
    await instance.start()
    yield instance
    await instance.stop()


@pytest.fixture
async def wire(server: FlowForgeServer) -> AsyncIterator[Wire]:
    """Raw gRPC stubs connected to ``server``."""
    connection = Wire(f"127.0.0.1:{server.port}")
    yield connection
    await connection.close()
