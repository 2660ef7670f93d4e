"""Rotating the task token key: leases in flight keep working with the old key until
its grace ends, every replica signs with the new key once it is active."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf import duration_pb2

from flowforge import Client
from flowforge.api.v1 import access_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.exceptions import RPCError
from flowforge.server import FlowForgeServer, ServerConfig
from flowforge.server.auth.setup import AuthConfig
from flowforge.server.clock import ManualClock
from tests.integration._protocol import complete_workflow, seconds
from testsupport.waiting import wait_until

RELOAD_S = 0.1
GRACE_S = 120


async def _replica(store_url: str, clock: ManualClock) -> FlowForgeServer:
    server = FlowForgeServer(
        ServerConfig(store=store_url, port=0, clock=clock, auth=AuthConfig(token_key_reload_s=RELOAD_S))
    )
    await server.start()
    return server


@pytest.fixture
async def replicas(store_url: str, store_kind: str) -> AsyncIterator[tuple[list[FlowForgeServer], ManualClock]]:
    clock = ManualClock()
    servers = [await _replica(store_url, clock)]
    if store_kind == "postgresql":
        servers.append(await _replica(store_url, clock))
    yield servers, clock
    for server in servers:
        await server.stop()


async def _workflow_task(client: Client, workflow_id: str) -> bytes:
    start = pb.StartWorkflowExecutionRequest(
        namespace="default", workflow_id=workflow_id, workflow_type="wf", task_queue="q"
    )
    await client.workflow_service.call("StartWorkflowExecution", start)
    poll = pb.PollWorkflowTaskQueueRequest(namespace="default", task_queue="q", poll_timeout=seconds(10))
    task = await client.workflow_service.call("PollWorkflowTaskQueue", poll, retry=False)
    assert task.task_token
    return bytes(task.task_token)


async def _complete(client: Client, token: bytes) -> None:
    done = pb.RespondWorkflowTaskCompletedRequest(
        namespace="default", task_token=token, commands=[complete_workflow(1)]
    )
    await client.workflow_service.call("RespondWorkflowTaskCompleted", done, retry=False)


async def test_a_rotated_key_keeps_leases_in_flight_working_until_its_grace_ends(
    replicas: tuple[list[FlowForgeServer], ManualClock],
) -> None:
    servers, clock = replicas
    clients = [await Client.connect(f"127.0.0.1:{s.port}") for s in servers]
    first, last = clients[0], clients[-1]
    try:
        in_flight = await _workflow_task(first, "before")
        late = await _workflow_task(first, "late")
        assert in_flight.startswith(b"ff2.0.")
        rotated = await first.workflow_service.call(
            "RotateTaskTokenKey",
            access_pb2.RotateTaskTokenKeyRequest(
                previous_key_grace=duration_pb2.Duration(seconds=GRACE_S), reason="yearly"
            ),
        )
        assert rotated.key_id == "1"
        # Not active yet: every replica keeps signing with key 0 until all have loaded key 1.
        assert all(s.engine.signer.signing_key_id == "0" for s in servers)
        clock.advance(int(AuthConfig(token_key_reload_s=RELOAD_S).token_key_activation_s * 1_000_000) + 1)
        for server in servers:
            await wait_until(lambda s=server: s.engine.signer.signing_key_id == "1", timeout=10, what="key 1 to sign")
        after = await _workflow_task(last, "after")
        assert after.startswith(b"ff2.1.")
        await _complete(last, in_flight)  # signed by key 0 on another replica, within the grace
        await _complete(first, after)
        clock.advance(GRACE_S * 1_000_000)
        with pytest.raises(RPCError) as refused:
            await _complete(last, late)
        assert refused.value.status == grpc.StatusCode.INVALID_ARGUMENT and "no longer accepts" in refused.value.message
        audit = await first.workflow_service.call("ListAuditLog", access_pb2.ListAuditLogRequest())
        assert [(r.action, r.target, r.reason) for r in audit.records] == [
            ("RotateTaskTokenKey", "token_key:1", "yearly")
        ]
    finally:
        for client in clients:
            await client.close()


async def test_a_grace_shorter_than_the_activation_is_refused(
    replicas: tuple[list[FlowForgeServer], ManualClock],
) -> None:
    servers, _ = replicas
    client = await Client.connect(f"127.0.0.1:{servers[0].port}")
    try:
        with pytest.raises(RPCError) as refused:
            await client.workflow_service.call(
                "RotateTaskTokenKey",
                access_pb2.RotateTaskTokenKeyRequest(previous_key_grace=duration_pb2.Duration(seconds=1)),
            )
        assert (
            refused.value.status == grpc.StatusCode.INVALID_ARGUMENT and "previous_key_grace" in refused.value.message
        )
    finally:
        await client.close()
