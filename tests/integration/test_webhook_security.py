"""``POST /events`` as a way in: signatures bind the namespace and the time, only JSON
is accepted, a server with authentication takes no unsigned event, and the dev server
serves the webhook only when asked."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from flowforge import Client
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.auth.setup import AuthConfig
from flowforge.server.webhook import MAX_CLOCK_SKEW_S, SIGNATURE_HEADER, TIMESTAMP_HEADER, sign
from tests.integration._processes import _env
from testsupport.waiting import wait_until

SECRET = "another-webhook-secret"
BODY = json.dumps({"specversion": "1.0", "id": "e1", "source": "s", "type": "t"}).encode()


@pytest.fixture
async def server(store_url: str) -> AsyncIterator[FlowForgeServer]:
    """Authentication on; only namespace 'default' has a webhook secret."""
    instance = FlowForgeServer(
        ServerConfig(
            store=store_url, port=0, http_port=0, webhook_secrets={"default": SECRET}, auth=AuthConfig(required=True)
        )
    )
    await instance.start()
    yield instance
    await instance.stop()


async def _post(port: int, headers: dict[str, str], namespace: str = "default") -> tuple[int, str]:
    async with aiohttp.ClientSession() as http:
        url = f"http://127.0.0.1:{port}/events?namespace={namespace}"
        async with http.post(url, data=BODY, headers=headers) as response:
            return response.status, await response.text()


def _signed(
    namespace: str = "default", *, at: int | None = None, content_type: str = "application/json"
) -> dict[str, str]:
    stamp = int(time.time()) if at is None else at
    return {
        "Content-Type": content_type,
        TIMESTAMP_HEADER: str(stamp),
        SIGNATURE_HEADER: sign(SECRET, BODY, namespace=namespace, timestamp=stamp),
    }


async def test_a_signature_is_good_only_for_its_namespace_and_five_minutes(server: FlowForgeServer) -> None:
    assert server.http_port is not None
    status, _ = await _post(server.http_port, _signed())
    assert status == 202
    for why, headers in {
        "stale": _signed(at=int(time.time()) - MAX_CLOCK_SKEW_S - 60),
        "from the future": _signed(at=int(time.time()) + MAX_CLOCK_SKEW_S + 60),
        "no timestamp": {k: v for k, v in _signed().items() if k != TIMESTAMP_HEADER},
        "another namespace's": _signed("payments"),
    }.items():
        status, text = await _post(server.http_port, headers)
        assert status == 401 and SECRET not in text, why
    # Signed for "default", sent to a namespace without a secret: this server takes no unsigned events either.
    status, text = await _post(server.http_port, _signed(), namespace="payments")
    assert status == 401 and "no webhook secret" in text


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
async def test_only_json_bodies_are_accepted(server: FlowForgeServer, content_type: str) -> None:
    assert server.http_port is not None
    status, text = await _post(server.http_port, _signed(content_type=content_type))
    assert status == 415 and "not JSON" in text
    status, _ = await _post(server.http_port, _signed(content_type="application/cloudevents+json; charset=utf-8"))
    assert status == 202  # the same event again: a duplicate, and JSON with parameters is JSON


@pytest.mark.parametrize("asked", [False, True])
async def test_the_dev_server_serves_the_webhook_only_when_asked(tmp_path: Path, asked: bool) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        http_port = probe.getsockname()[1]
    ready = tmp_path / "ready"
    command = [sys.executable, "-m", "flowforge.cli", "server", "start-dev", "--in-memory", "--port", "0"]
    command += ["--http-port", str(http_port), "--ready-file", str(ready), *(["--webhook"] if asked else [])]
    process = subprocess.Popen(command, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await wait_until(lambda: ready.exists() or process.poll() is not None, timeout=60, what="the dev server")
        async with await Client.connect(f"127.0.0.1:{ready.read_text()}"):
            status, _ = await _post(http_port, {"Content-Type": "application/json"})
        assert status == (202 if asked else 404)
    finally:
        process.terminate()
        process.wait(timeout=30)
