"""Which server runs open: ``server start`` only with ``--insecure-no-auth``, ``start-dev``
unless ``--require-auth`` (and then only on loopback); odd credentials are refused plainly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from flowforge import Client
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.api.v1 import workflow_service_pb2_grpc
from flowforge.exceptions import RPCError
from samples._dev_server import start_server
from tests.integration._processes import _env


def _serve(tmp_path: Path, *arguments: str) -> tuple[subprocess.Popen[bytes], str]:
    process, address = start_server(list(arguments), str(tmp_path / "ready"), timeout_s=60)
    return process, address


_JWT = ("--jwt-issuer", "https://login.example.com", "--jwt-audience", "flowforge")
_OIDC = ("--console-oidc-issuer", "https://login.example.com", "--console-oidc-client-id", "console")


def _refused(*arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "flowforge.cli", "server", *arguments, "--port", "0"]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=_env())


async def _status(address: str, api_key: str | None = None) -> grpc.StatusCode:
    client = await Client.connect(address, api_key=api_key)
    try:
        await client.workflow_service.call("ListNamespaces", pb.ListNamespacesRequest(), retry=False)
    except RPCError as error:
        return error.status
    finally:
        await client.close()
    return grpc.StatusCode.OK


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (("start", "--store", "{db}"), grpc.StatusCode.UNAUTHENTICATED),
        (("start", "--store", "{db}", "--insecure-no-auth"), grpc.StatusCode.OK),
        (("start-dev", "--db", "{db}", "--http-port", "0"), grpc.StatusCode.OK),
        (("start-dev", "--db", "{db}", "--http-port", "0", "--require-auth"), grpc.StatusCode.UNAUTHENTICATED),
    ],
)
async def test_who_needs_credentials(tmp_path: Path, arguments: tuple[str, ...], expected: grpc.StatusCode) -> None:
    process, address = _serve(tmp_path, *(a.format(db=tmp_path / "f.db") for a in arguments))
    try:
        assert await _status(address) == expected
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("start-dev", "--in-memory", "--ip", "0.0.0.0"), "listens only on 127.0.0.1"),
        (("start", "--store", "x.db", "--insecure-no-auth", "--require-auth"), "contradict"),
        (("start", "--store", "x.db", "--insecure-no-auth", "--bootstrap-admin-key-file", "k"), "need authentication"),
        (("start", "--store", "x.db", "--jwks-file", "jwks.json"), "--jwt-issuer and --jwt-audience"),
        (("start", "--store", "x.db", *_JWT, "--jwks-file", "http://keys.example.com/jwks"), "must be https://"),
        (("start", "--store", "x.db", *_OIDC), "needs --jwks-file"),
        (("start", "--store", "x.db", "--console-oidc-issuer", "https://login.example.com"), "go together"),
        (
            (
                "start",
                "--store",
                "x.db",
                *_JWT,
                "--jwks-file",
                "jwks.json",
                "--console-oidc-issuer",
                "http://login.example.com",
                *_OIDC[2:],
            ),
            "must be https://",
        ),
        (
            ("start", "--store", "x.db", *_JWT, "--jwks-file", "jwks.json", *_OIDC, "--console-oidc-scopes", "email"),
            "must include openid",
        ),
    ],
)
def test_contradictory_or_unsafe_flags_are_refused(arguments: tuple[str, ...], message: str) -> None:
    refused = _refused(*arguments)
    assert refused.returncode == 2 and message in refused.stderr and "Traceback" not in refused.stderr


async def test_odd_authorization_headers_are_unauthenticated(tmp_path: Path) -> None:
    process, address = _serve(tmp_path, "start", "--store", str(tmp_path / "f.db"))
    channel = grpc.aio.insecure_channel(address)
    stub = workflow_service_pb2_grpc.WorkflowServiceStub(channel)  # type: ignore[no-untyped-call]
    try:
        for metadata in (
            [("authorization", "Basic dXNlcjpwYXNz")],
            [("authorization", "Bearer ")],
            [("authorization", "Bearer ffk_" + "a" * 8000)],
            [("authorization", "Bearer a"), ("authorization", "Bearer b")],
        ):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.ListNamespaces(pb.ListNamespacesRequest(), metadata=metadata)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED, metadata[0][1][:20]
    finally:
        await channel.close()
        process.terminate()
        process.wait(timeout=30)
