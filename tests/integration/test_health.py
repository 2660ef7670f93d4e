"""gRPC health and reflection on the gRPC port, ``/healthz`` and ``/readyz`` on the
HTTP listener (docs/architecture.md, "Operations contract"). Health during a store outage is
in test_store_outage.py, beside the outage it needs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from flowforge.server import FlowForgeServer, ServerConfig
from scripts.generate_api_docs import descriptors

WORKFLOW_SERVICE = "flowforge.api.v1.WorkflowService"


@pytest.fixture
async def server(store_url: str) -> AsyncIterator[FlowForgeServer]:
    """A server with its HTTP listener on a free port."""
    instance = FlowForgeServer(ServerConfig(store=store_url, port=0, http_port=0))
    await instance.start()
    yield instance
    await instance.stop()


async def test_health_is_serving_for_the_server_and_the_workflow_service(server: FlowForgeServer) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", WORKFLOW_SERVICE):
            answer = await stub.Check(health_pb2.HealthCheckRequest(service=service))
            assert answer.status == health_pb2.HealthCheckResponse.SERVING, service
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"))
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND


async def test_stopping_turns_health_to_not_serving_before_the_port_closes(store_url: str) -> None:
    instance = FlowForgeServer(ServerConfig(store=store_url, port=0, shutdown_grace_s=0))
    await instance.start()
    await instance.health.stop()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{instance.port}") as channel:
        answer = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""))
    await instance.stop()
    assert answer.status == health_pb2.HealthCheckResponse.NOT_SERVING


async def test_reflection_lists_the_services_and_describes_the_workflow_service(server: FlowForgeServer) -> None:
    def reflect() -> tuple[list[str], descriptor_pb2.FileDescriptorProto]:
        # grpcurl's way: the reflection service alone, no generated code on this side.
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            database = ProtoReflectionDescriptorDatabase(channel)
            return list(database.get_services()), database.FindFileContainingSymbol(WORKFLOW_SERVICE)

    services, file = await asyncio.to_thread(reflect)
    # Every service of the API (proto/), so a new one cannot be left out of reflection.
    declared = {f"{f.package}.{s.name}" for f in descriptors().file for s in f.service}
    assert WORKFLOW_SERVICE in declared and declared <= set(services)
    assert "grpc.health.v1.Health" in services
    assert "grpc.reflection.v1alpha.ServerReflection" in services
    (service,) = (s for s in file.service if s.name == "WorkflowService")
    methods = {method.name: method for method in service.method}
    assert methods["StartWorkflowExecution"].input_type == ".flowforge.api.v1.StartWorkflowExecutionRequest"
    assert "PollActivityTaskQueue" in methods


async def test_healthz_and_readyz_answer_on_the_http_port(server: FlowForgeServer) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{server.http_port}/healthz") as live:
            assert live.status == 200
            assert await live.json() == {"status": "ok"}
        async with session.get(f"http://127.0.0.1:{server.http_port}/readyz") as ready:
            assert ready.status == 200
            assert await ready.json() == {"status": "ready"}
