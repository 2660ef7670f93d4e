"""TLS, mutual TLS and bearer JWTs end to end, on real server processes."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import grpc
import pytest

from flowforge import Client
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.client import TLSConfig
from flowforge.exceptions import RPCError
from tests.integration._processes import ServerProcess
from testsupport.credentials import CertificateAuthority, JwtIssuer

_REFUSED_WITHIN = timedelta(seconds=3)


async def _list_namespaces(client: Client) -> list[str]:
    response = await client.workflow_service.call("ListNamespaces", pb.ListNamespacesRequest(), retry=False)
    return [n.name for n in response.namespaces]


def _tls_server(store_url: str, tmp_path: Path, *, mutual: bool) -> tuple[ServerProcess, CertificateAuthority]:
    ca = CertificateAuthority()
    cert, key = ca.write(tmp_path, "server", ca.issue("server", dns_names=("flowforge.test",), ip="127.0.0.1"))
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    extra = ("--tls-cert", str(cert), "--tls-key", str(key))
    if mutual:
        extra += ("--tls-client-ca", str(tmp_path / "ca.crt"))
    return ServerProcess(store_url, tmp_path, extra_args=extra), ca


async def test_a_tls_server_speaks_only_tls_and_checks_the_name(store_url: str, tmp_path: Path) -> None:
    server, ca = _tls_server(store_url, tmp_path, mutual=False)
    server.start()
    try:
        client = await Client.connect(server.address, tls=TLSConfig(server_root_ca_cert=ca.cert_pem))
        assert "default" in await _list_namespaces(client)
        await client.close()
        host = f"localhost:{server.port}"  # a name the certificate does not carry: domain= says which it does
        with pytest.raises(RPCError) as misnamed:
            await Client.connect(host, tls=TLSConfig(server_root_ca_cert=ca.cert_pem), connect_timeout=_REFUSED_WITHIN)
        assert misnamed.value.status == grpc.StatusCode.UNAVAILABLE
        named = await Client.connect(host, tls=TLSConfig(server_root_ca_cert=ca.cert_pem, domain="flowforge.test"))
        assert "default" in await _list_namespaces(named)
        await named.close()
        with pytest.raises(RPCError) as plaintext:
            await Client.connect(server.address, connect_timeout=_REFUSED_WITHIN)
        assert plaintext.value.status == grpc.StatusCode.UNAVAILABLE
        with pytest.raises(RPCError) as untrusted:
            await Client.connect(
                server.address,
                tls=TLSConfig(server_root_ca_cert=CertificateAuthority("other").cert_pem),
                connect_timeout=_REFUSED_WITHIN,
            )
        assert untrusted.value.status == grpc.StatusCode.UNAVAILABLE
    finally:
        server.stop()


async def test_an_mtls_server_refuses_a_client_without_a_certificate_it_trusts(store_url: str, tmp_path: Path) -> None:
    server, ca = _tls_server(store_url, tmp_path, mutual=True)
    server.start()
    try:
        for who, tls in (
            ("no certificate", TLSConfig(server_root_ca_cert=ca.cert_pem)),
            ("another CA's", _client_tls(ca, CertificateAuthority("other"))),
        ):
            with pytest.raises(RPCError) as refused:
                await Client.connect(server.address, tls=tls, connect_timeout=_REFUSED_WITHIN)
            assert refused.value.status == grpc.StatusCode.UNAVAILABLE, who
        client = await Client.connect(server.address, tls=_client_tls(ca, ca))
        assert "default" in await _list_namespaces(client)
        await client.close()
    finally:
        server.stop()


def _client_tls(server_ca: CertificateAuthority, client_ca: CertificateAuthority) -> TLSConfig:
    cert, key = client_ca.issue("worker-1")
    return TLSConfig(server_root_ca_cert=server_ca.cert_pem, client_cert=cert, client_private_key=key)


async def test_jwts_are_verified_against_the_jwks_issuer_and_audience(store_url: str, tmp_path: Path) -> None:
    issuer = JwtIssuer()
    (tmp_path / "jwks.json").write_text(json.dumps(issuer.jwks()))
    server = ServerProcess(
        store_url,
        tmp_path,
        insecure_no_auth=False,
        extra_args=(
            "--jwks-file",
            str(tmp_path / "jwks.json"),
            "--jwt-issuer",
            issuer.issuer,
            "--jwt-audience",
            "flowforge",
        ),
    )
    server.start()
    clients: list[Client] = []

    async def connect(token: str) -> Client:
        clients.append(await Client.connect(server.address, api_key=token))
        return clients[-1]

    async def status(client: Client, rpc: str, request: object) -> grpc.StatusCode:
        try:
            await client.workflow_service.call(rpc, request, retry=False)
        except RPCError as error:
            return error.status
        return grpc.StatusCode.OK

    try:
        admin = await connect(issuer.token(sub="ops", permissions=["*:admin"]))
        await admin.workflow_service.call("RegisterNamespace", pb.RegisterNamespaceRequest(name="alpha"))
        writer = await connect(issuer.token(sub="alice", permissions=["alpha:writer"]))
        started = await writer.workflow_service.call(
            "StartWorkflowExecution",
            pb.StartWorkflowExecutionRequest(
                namespace="alpha", workflow_id="j1", workflow_type="wf", task_queue="q", identity="bob"
            ),
        )
        history = await writer.workflow_service.call(
            "GetWorkflowExecutionHistory",
            pb.GetWorkflowExecutionHistoryRequest(namespace="alpha", execution={"run_id": started.run_id}),
        )
        assert json.loads(history.events[0].attributes_json)["identity"] == "jwt:alice (bob)"
        listing = pb.ListWorkflowExecutionsRequest(namespace="default")
        assert await status(writer, "ListWorkflowExecutions", listing) == grpc.StatusCode.PERMISSION_DENIED
        terminate = pb.TerminateWorkflowExecutionRequest(namespace="alpha", execution={"workflow_id": "j1"})
        assert await status(writer, "TerminateWorkflowExecution", terminate) == grpc.StatusCode.PERMISSION_DENIED
        refused = {
            "unknown key": JwtIssuer(kid="key-2").token(permissions=["*:admin"]),
            "another key with a known id": JwtIssuer(kid=issuer.kid).token(permissions=["*:admin"]),
            "expired": issuer.token(permissions=["*:admin"], expires_in=-120),
            "another audience": issuer.token(permissions=["*:admin"], audience="someone-else"),
            "another issuer": JwtIssuer(issuer="https://evil.test").token(permissions=["*:admin"]),
            "no permissions": issuer.token(permissions=[]),
            "an unknown role": issuer.token(permissions=["alpha:root"]),
            "not a JWT": "eyJhbGciOi.garbage.x",
        }
        for why, token in refused.items():
            client = await connect(token)
            code = await status(client, "ListNamespaces", pb.ListNamespacesRequest())
            assert code == grpc.StatusCode.UNAUTHENTICATED, why
    finally:
        for client in clients:
            await client.close()
        server.stop()
