"""The console's codec endpoint (both stores): a payload a client's codec encoded is
shown decoded on the execution page, by a codec server the browser calls (Temporal's
``POST {url}/decode``), while the server only ever holds the encoded bytes; the CSP
allows that one origin."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Sequence

import aiohttp
import pytest
from aiohttp import web
from google.protobuf import json_format
from playwright.async_api import Page, expect

from flowforge import Client
from flowforge.api.v1 import common_pb2
from flowforge.converter import DataConverter, PayloadCodec
from flowforge.server import FlowForgeServer, ServerConfig
from tests.console._app import QUEUE, Pipeline

REVERSED = b"binary/reversed"
_CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Headers": "content-type, x-namespace",
    "Access-Control-Allow-Methods": "POST",
}


class ReversingCodec(PayloadCodec):
    """Stands in for encryption: the serialized payload, reversed."""

    async def encode(self, payloads: Sequence[common_pb2.Payload]) -> list[common_pb2.Payload]:
        return [common_pb2.Payload(metadata={"encoding": REVERSED}, data=p.SerializeToString()[::-1]) for p in payloads]

    async def decode(self, payloads: Sequence[common_pb2.Payload]) -> list[common_pb2.Payload]:
        return [
            common_pb2.Payload.FromString(p.data[::-1]) if p.metadata.get("encoding") == REVERSED else p
            for p in payloads
        ]


@pytest.fixture
async def codec_server() -> AsyncIterator[str]:
    async def decode(request: web.Request) -> web.Response:
        if request.method == "OPTIONS":
            return web.Response(headers=_CORS)
        payloads = json_format.ParseDict(await request.json(), common_pb2.Payloads())
        decoded = common_pb2.Payloads(payloads=await ReversingCodec().decode(payloads.payloads))
        return web.json_response(json_format.MessageToDict(decoded), headers=_CORS)

    app = web.Application()
    app.router.add_route("*", "/decode", decode)
    runner = web.AppRunner(app)
    await runner.setup()
    sock = socket.create_server(("127.0.0.1", 0))
    await web.SockSite(runner, sock).start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    await runner.cleanup()


async def test_encoded_payloads_are_decoded_in_the_browser(store_url: str, codec_server: str, page: Page) -> None:
    server = FlowForgeServer(ServerConfig(store=store_url, port=0, http_port=0, console_codec_endpoint=codec_server))
    await server.start()
    try:
        client = await Client.connect(
            f"127.0.0.1:{server.port}", data_converter=DataConverter(payload_codec=ReversingCodec())
        )
        await client.start_workflow(Pipeline.run, "plaintext-secret", id="sealed", task_queue=QUEUE)
        async with aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{server.http_port}/api/v1/WorkflowService/GetWorkflowExecutionHistory"
            body = json.dumps({"namespace": "default", "execution": {"workflow_id": "sealed"}})
            async with http.post(url, data=body, headers={"Content-Type": "application/json"}) as answer:
                assert "plaintext-secret" not in await answer.text()  # the server holds it encoded
                assert codec_server in answer.headers["Content-Security-Policy"]
        await page.goto(f"http://127.0.0.1:{server.http_port}/namespaces/default/workflows/sealed")
        await expect(page.locator("pre.json.decoded").first).to_contain_text('"plaintext-secret"')
        await client.close()
    finally:
        await server.stop()
