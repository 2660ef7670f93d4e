"""Authentication and authorization end to end, on real server processes and both stores.

The server runs ``flowforge server start`` with auth on and a bootstrap admin key;
every other key is created through AccessService with that key.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor

from flowforge import Client
from flowforge.api.v1 import access_pb2, workflow_service_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.exceptions import RPCError
from flowforge.server.auth.roles import RPC_RULES, NamespaceSource, Role
from flowforge.server.tokens import TaskToken, TokenKey, TokenSigner
from tests.integration._processes import ADMIN_KEY_FILE, ServerProcess, auth_server
from tests.integration._protocol import complete_workflow, seconds
from testsupport.waiting import wait_until

ALPHA, BETA = "alpha", "beta"
_METHODS: dict[str, MethodDescriptor] = {
    f"/{service.full_name}/{method.name}": method
    for module in (workflow_service_pb2, access_pb2)
    for service in module.DESCRIPTOR.services_by_name.values()
    for method in service.methods
}


@pytest.fixture
def auth_server_process(store_url: str, tmp_path: Path) -> Iterator[ServerProcess]:
    """conftest.py's, with a short key cache (revocations take effect within 0.5 s)."""
    process = auth_server(store_url, tmp_path, api_key_cache_s=0.5)
    process.start()
    yield process
    process.stop()


@pytest.fixture
async def admin(auth_server_process: ServerProcess, tmp_path: Path) -> AsyncIterator[Client]:
    client = await Client.connect(auth_server_process.address, api_key=(tmp_path / ADMIN_KEY_FILE).read_text().strip())
    for namespace in (ALPHA, BETA):
        await client.workflow_service.call("RegisterNamespace", pb.RegisterNamespaceRequest(name=namespace))
    yield client
    await client.close()


async def create_key(admin: Client, namespace: str, role: str) -> tuple[str, str]:
    """A new key's id and secret."""
    response = await admin.workflow_service.call(
        "CreateApiKey", access_pb2.CreateApiKeyRequest(namespace=namespace, role=role, name=f"{namespace}-{role}")
    )
    return response.api_key.id, response.key


async def status_of(client: Client, rpc: str, request: Any) -> grpc.StatusCode:
    if _METHODS[_method_name(rpc)].client_streaming:
        return await _stream_status(client, rpc, request)
    try:
        await client.workflow_service.call(rpc, request, retry=False)
    except RPCError as error:
        return error.status
    return grpc.StatusCode.OK


def _method_name(rpc: str) -> str:
    return next(m for m in _METHODS if m.rpartition("/")[2] == rpc)


async def _stream_status(client: Client, rpc: str, request: Any) -> grpc.StatusCode:
    """How a stream opened with ``client``'s key ends when ``request`` is its only message."""
    key = client.api_key
    channel = client.workflow_service._channel  # the client's own connection, to the same server
    call: Any = channel.stream_stream(
        _method_name(rpc), request_serializer=type(request).SerializeToString, response_deserializer=None
    )(metadata=(("authorization", f"Bearer {key}"),) if key else None)
    try:
        await call.write(request)
        await call.done_writing()
    except (asyncio.InvalidStateError, grpc.aio.AioRpcError):
        pass  # refused before the message went: the status says why
    return await asyncio.wait_for(call.code(), 10)


def request_for(method: str, namespace: str) -> Any:
    """A request aimed at ``namespace``, valid enough to get past authorization."""
    descriptor = _METHODS[method]
    request = message_factory.GetMessageClass(descriptor.input_type)()
    rule = RPC_RULES[method]
    fields = descriptor.input_type.fields_by_name
    if rule.source is NamespaceSource.FIELD:
        *path, field = rule.field.split(".")  # a stream's rule reads its first message's hello
        owner = request
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, field, namespace)
    if rule.source is NamespaceSource.TASK_TOKEN:
        # Signed with another secret: authorization reads its namespace, the engine then refuses it.
        signer = TokenSigner([TokenKey("0", os.urandom(32), 0)], now_us=lambda: 0)
        request.task_token = signer.sign(TaskToken(namespace, 1, 1, "ACTIVITY", "r"))
    if "poll_timeout" in fields:
        request.poll_timeout.CopyFrom(seconds(0.05))
    if "execution" in fields:
        request.execution.workflow_id = "no-such-workflow"
    return request


async def test_bootstrap_key_file_is_private_and_made_once(
    auth_server_process: ServerProcess, admin: Client, tmp_path: Path
) -> None:
    key_file = tmp_path / ADMIN_KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    first = key_file.read_text()
    auth_server_process.stop()
    auth_server_process.start()
    assert key_file.read_text() == first  # an admin key exists: nothing new
    keys = await admin.workflow_service.call("ListApiKeys", access_pb2.ListApiKeysRequest())
    assert [(k.namespace, k.role) for k in keys.api_keys] == [("*", "admin")]


async def test_a_key_for_a_namespace_that_does_not_exist_is_refused(admin: Client) -> None:
    request = access_pb2.CreateApiKeyRequest(namespace="paymnets", role="writer")
    assert await status_of(admin, "CreateApiKey", request) == grpc.StatusCode.NOT_FOUND
    request.role = "superuser"
    assert await status_of(admin, "CreateApiKey", request) == grpc.StatusCode.INVALID_ARGUMENT


async def test_no_key_a_wrong_key_and_a_garbage_token_are_unauthenticated(
    auth_server_process: ServerProcess, admin: Client
) -> None:
    _, key = await create_key(admin, ALPHA, "admin")
    wrong_secret = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
    request = pb.ListWorkflowExecutionsRequest(namespace=ALPHA)
    for credential in (None, wrong_secret, "ffk_0123456789abcdef_" + "x" * 43, "ffk_short", "not.a.jwt"):
        client = await Client.connect(auth_server_process.address, api_key=credential)
        try:
            assert await status_of(client, "ListWorkflowExecutions", request) == grpc.StatusCode.UNAUTHENTICATED
            assert (
                await status_of(
                    client,
                    "PollActivityTaskQueue",
                    request_for("/flowforge.api.v1.WorkflowService/PollActivityTaskQueue", ALPHA),
                )
                == grpc.StatusCode.UNAUTHENTICATED
            )
        finally:
            await client.close()


@pytest.mark.parametrize("role", [r.value for r in Role])
async def test_each_role_can_do_exactly_its_row_of_the_table(
    auth_server_process: ServerProcess, admin: Client, role: str
) -> None:
    _, key = await create_key(admin, ALPHA, role)
    granted = Role(role)
    client = await Client.connect(auth_server_process.address, api_key=key)
    try:
        wrong = []
        for method, rule in RPC_RULES.items():
            status = await status_of(client, method.rpartition("/")[2], request_for(method, ALPHA))
            allowed = granted.includes(rule.role) and rule.source is not NamespaceSource.SERVER
            if allowed == (status in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED)):
                wrong.append(f"{method}: {status.name} (allowed: {allowed})")
        assert not wrong, f"{role}: {wrong}"
    finally:
        await client.close()


async def test_a_key_of_one_namespace_is_denied_in_another_for_every_rpc(
    auth_server_process: ServerProcess, admin: Client
) -> None:
    _, key = await create_key(admin, ALPHA, "admin")
    client = await Client.connect(auth_server_process.address, api_key=key)
    try:
        denied = {
            method: await status_of(client, method.rpartition("/")[2], request_for(method, BETA))
            for method, rule in RPC_RULES.items()
            if rule.source in (NamespaceSource.FIELD, NamespaceSource.TASK_TOKEN)
        }
        assert {m: s for m, s in denied.items() if s != grpc.StatusCode.PERMISSION_DENIED} == {}
    finally:
        await client.close()


async def test_polling_and_completing_a_task_of_another_namespace_is_denied(
    auth_server_process: ServerProcess, admin: Client
) -> None:
    """With a real task token of beta: a worker key of alpha can neither poll beta nor report its task."""
    writer_id, beta_writer = await create_key(admin, BETA, "writer")
    _, beta_worker = await create_key(admin, BETA, "worker")
    _, alpha_worker = await create_key(admin, ALPHA, "worker")
    clients = [
        await Client.connect(auth_server_process.address, api_key=k) for k in (beta_writer, beta_worker, alpha_worker)
    ]
    writer, worker, intruder = clients
    try:
        start = pb.StartWorkflowExecutionRequest(
            namespace=BETA, workflow_id="w1", workflow_type="wf", task_queue="q", identity="claims-to-be-root"
        )
        run_id = (await writer.workflow_service.call("StartWorkflowExecution", start)).run_id
        poll = pb.PollWorkflowTaskQueueRequest(namespace=BETA, task_queue="q", poll_timeout=seconds(0.05))
        assert await status_of(intruder, "PollWorkflowTaskQueue", poll) == grpc.StatusCode.PERMISSION_DENIED
        poll.poll_timeout.CopyFrom(seconds(10))
        task = await worker.workflow_service.call("PollWorkflowTaskQueue", poll, retry=False)
        assert task.task_token
        for namespace in (BETA, ALPHA, ""):
            steal = pb.RespondWorkflowTaskCompletedRequest(
                namespace=namespace, task_token=task.task_token, commands=[complete_workflow("stolen")]
            )
            assert await status_of(intruder, "RespondWorkflowTaskCompleted", steal) == grpc.StatusCode.PERMISSION_DENIED
        done = pb.RespondWorkflowTaskCompletedRequest(
            namespace=BETA, task_token=task.task_token, commands=[complete_workflow("ok")]
        )
        await worker.workflow_service.call("RespondWorkflowTaskCompleted", done)
        history = await writer.workflow_service.call(
            "GetWorkflowExecutionHistory",
            pb.GetWorkflowExecutionHistoryRequest(namespace=BETA, execution={"workflow_id": "w1", "run_id": run_id}),
        )
        started = json.loads(history.events[0].attributes_json)
        # Who started it is the key, not what the caller claimed (kept after it, in parentheses).
        assert started["identity"] == f"apikey:{writer_id} (claims-to-be-root)"
        assert history.events[-1].event_type == "WorkflowExecutionCompleted"
    finally:
        for client in clients:
            await client.close()


async def test_global_rpcs_show_only_what_the_caller_may_see(auth_server_process: ServerProcess, admin: Client) -> None:
    _, reader = await create_key(admin, ALPHA, "reader")
    client = await Client.connect(auth_server_process.address, api_key=reader)
    try:
        listed = await client.workflow_service.call("ListNamespaces", pb.ListNamespacesRequest())
        assert [n.name for n in listed.namespaces] == [ALPHA]
        everything = await admin.workflow_service.call("ListNamespaces", pb.ListNamespacesRequest())
        assert {n.name for n in everything.namespaces} >= {ALPHA, BETA, "default"}
        status = await client.workflow_service.call("GetSchedulerStatus", pb.GetSchedulerStatusRequest())
        assert status.replica_identity == "" and status.leader_identity == ""
    finally:
        await client.close()


async def test_a_revoked_or_expired_key_stops_working(auth_server_process: ServerProcess, admin: Client) -> None:
    key_id, key = await create_key(admin, ALPHA, "reader")
    client = await Client.connect(auth_server_process.address, api_key=key)
    request = pb.ListWorkflowExecutionsRequest(namespace=ALPHA)
    try:
        assert await status_of(client, "ListWorkflowExecutions", request) == grpc.StatusCode.OK
        await admin.workflow_service.call("RevokeApiKey", access_pb2.RevokeApiKeyRequest(id=key_id, reason="leaked"))
        revoked_at = time.monotonic()
        await wait_until(lambda: _unauthenticated(client, request), timeout=5, what="the revoked key to be refused")
        assert time.monotonic() - revoked_at < 3.0
    finally:
        await client.close()
    short = await admin.workflow_service.call(
        "CreateApiKey",
        access_pb2.CreateApiKeyRequest(namespace=ALPHA, role="reader", expires_in=seconds(1)),
    )
    client = await Client.connect(auth_server_process.address, api_key=short.key)
    try:
        await wait_until(lambda: _unauthenticated(client, request), timeout=10, what="the key to expire")
    finally:
        await client.close()


async def test_a_client_switches_to_a_new_key_without_reconnecting(
    auth_server_process: ServerProcess, admin: Client
) -> None:
    old_id, old_key = await create_key(admin, ALPHA, "reader")
    _, new_key = await create_key(admin, ALPHA, "reader")
    client = await Client.connect(auth_server_process.address, namespace=ALPHA, api_key=old_key)
    request = pb.ListWorkflowExecutionsRequest(namespace=ALPHA)
    try:
        client.api_key = new_key
        assert client.api_key == new_key
        await admin.workflow_service.call("RevokeApiKey", access_pb2.RevokeApiKeyRequest(id=old_id, reason="rotated"))
        assert await status_of(client, "ListWorkflowExecutions", request) == grpc.StatusCode.OK
        client.api_key = None
        assert await _unauthenticated(client, request)
    finally:
        await client.close()


async def _unauthenticated(client: Client, request: Any) -> bool:
    return await status_of(client, "ListWorkflowExecutions", request) == grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.postgres
async def test_a_revoked_key_stops_working_on_every_replica(postgres_dsn: str, tmp_path: Path) -> None:
    replicas = [auth_server(postgres_dsn, tmp_path / name, name=name, api_key_cache_s=1.0) for name in ("a", "b")]
    for replica in replicas:
        replica.start()
    try:
        admin_key = next(
            (tmp_path / n / ADMIN_KEY_FILE).read_text().strip()
            for n in "ab"
            if (tmp_path / n / ADMIN_KEY_FILE).exists()
        )
        admin = await Client.connect(replicas[0].address, api_key=admin_key)
        key_id, key = await create_key(admin, "default", "reader")
        clients = [await Client.connect(r.address, api_key=key) for r in replicas]
        request = pb.ListWorkflowExecutionsRequest(namespace="default")
        for client in clients:
            assert await status_of(client, "ListWorkflowExecutions", request) == grpc.StatusCode.OK
        await admin.workflow_service.call("RevokeApiKey", access_pb2.RevokeApiKeyRequest(id=key_id))
        revoked_at = time.monotonic()
        for client in clients:
            await wait_until(lambda c=client: _unauthenticated(c, request), timeout=10, what="a replica to refuse")
        assert time.monotonic() - revoked_at < 5.0
        for client in [*clients, admin]:
            await client.close()
    finally:
        for replica in replicas:
            replica.stop()
