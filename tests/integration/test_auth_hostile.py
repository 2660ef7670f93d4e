"""Hostile callers of the identity layer: a flood of made-up keys, forged JWTs and task
tokens of another tenant is refused, while a tenant with a valid key keeps working on
time (its timer fires, its activity is delivered, a cheap RPC stays fast)."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from datetime import timedelta
from pathlib import Path

import grpc

from flowforge import Client, workflow
from flowforge.api.v1 import access_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.exceptions import RPCError
from flowforge.server.tokens import TaskToken, TokenKey, TokenSigner
from flowforge.worker import Worker
from tests.integration._processes import ADMIN_KEY_FILE, ServerProcess
from testsupport.credentials import JwtIssuer
from testsupport.workloads import SingleActivity, noop

FLOOD_CALLERS = 20
TIMER_S = 1.0


@workflow.defn
class Sleeper:
    @workflow.run
    async def run(self) -> float:
        began = workflow.now()
        await workflow.sleep(timedelta(seconds=TIMER_S))
        return (workflow.now() - began).total_seconds()


async def _flood(address: str, stop: asyncio.Event, refused: list[grpc.StatusCode]) -> None:
    """Made-up keys, forged JWTs and forged task tokens, as fast as one caller can."""
    forged = TokenSigner([TokenKey("0", os.urandom(32), 0)], now_us=lambda: 0)
    forged_jwt = JwtIssuer(kid="forged").token(permissions=["*:admin"])
    while not stop.is_set():
        credential = secrets.choice([f"ffk_{secrets.token_hex(8)}_{secrets.token_urlsafe(32)}", forged_jwt])
        client = await Client.connect(address, api_key=credential)
        try:
            token = forged.sign(TaskToken("tenant", 1, 1, "ACTIVITY", "r"))
            for rpc, request in (
                ("ListWorkflowExecutions", pb.ListWorkflowExecutionsRequest(namespace="tenant")),
                ("RespondActivityTaskCompleted", pb.RespondActivityTaskCompletedRequest(task_token=token)),
            ):
                try:
                    await client.workflow_service.call(rpc, request, retry=False)
                except RPCError as error:
                    refused.append(error.status)
        finally:
            await client.close()


async def test_a_flood_of_bad_credentials_is_refused_while_a_tenant_keeps_working(
    auth_server_process: ServerProcess, tmp_path: Path
) -> None:
    admin = await Client.connect(auth_server_process.address, api_key=(tmp_path / ADMIN_KEY_FILE).read_text().strip())
    await admin.workflow_service.call("RegisterNamespace", pb.RegisterNamespaceRequest(name="tenant"))
    keys = {}
    for role in ("writer", "worker"):
        created = await admin.workflow_service.call(
            "CreateApiKey", access_pb2.CreateApiKeyRequest(namespace="tenant", role=role)
        )
        keys[role] = created.key
    tenant = await Client.connect(auth_server_process.address, namespace="tenant", api_key=keys["writer"])
    worker_client = await Client.connect(auth_server_process.address, namespace="tenant", api_key=keys["worker"])
    stop, refused = asyncio.Event(), []
    flooders = [asyncio.create_task(_flood(auth_server_process.address, stop, refused)) for _ in range(FLOOD_CALLERS)]
    try:
        async with Worker(worker_client, task_queue="q", workflows=[Sleeper, SingleActivity], activities=[noop]):
            while len(refused) < 200:  # the flood is on
                await asyncio.sleep(0.05)
            began = time.monotonic()
            slept = await tenant.execute_workflow(Sleeper.run, id="sleeper", task_queue="q")
            assert slept >= TIMER_S and time.monotonic() - began < TIMER_S + 4.0
            assert await tenant.execute_workflow(SingleActivity.run, 7, id="single", task_queue="q") == 7
            latencies = []
            for _ in range(20):
                began = time.monotonic()
                await tenant.workflow_service.call("DescribeNamespace", pb.DescribeNamespaceRequest(name="tenant"))
                latencies.append(time.monotonic() - began)
            assert sorted(latencies)[len(latencies) // 2] < 0.25, latencies
    finally:
        stop.set()
        await asyncio.gather(*flooders)
        for client in (admin, tenant, worker_client):
            await client.close()
    assert len(refused) >= 200 and set(refused) == {grpc.StatusCode.UNAUTHENTICATED}
