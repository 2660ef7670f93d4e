"""Fuzzing every RPC: random and malformed bytes and field values each get a clear status.

Every method of every service in ``flowforge.api.v1`` (enumerated from the service
descriptors, so a new RPC is fuzzed without touching this file) is called with
bytes that do not parse and with requests whose fields hold hostile values
(testsupport/fuzz_messages.py). No call may end ``INTERNAL`` or ``UNKNOWN`` (a
crash behind the status), and afterwards the server still answers a cheap RPC
and runs a workflow. The seed is fixed and the count bounded, so a failure repeats.
"""

from __future__ import annotations

import importlib
import pkgutil
import random
import time
from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf import message_factory

import flowforge.api.v1
from flowforge.api.v1 import workflow_service_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server import FlowForgeServer, ServerConfig
from testsupport.fuzz_messages import random_bytes, random_message

SEED = 20261201
BYTES_PER_RPC = 6
# Requests per RPC whose every field is hostile, and whose fields are mostly plausible
# with a few hostile ones (these get past the first checks to deeper code).
HOSTILE_PER_RPC = 16
MOSTLY_PLAUSIBLE_PER_RPC = 16
PLAUSIBLE_HOSTILITY = 0.15
# Reports on real leased tasks (a real token, random commands, results and failures).
TASK_REPORTS = 120
REPORT_HOSTILITY = 0.03
# A long poll the fuzzer asked for may still be waiting: the caller's deadline ends it.
CALL_DEADLINE_S = 1.5
UNCLEAR = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}

# Every service of every module of the package: a new service is fuzzed without a change here.
METHODS = [
    (service.full_name, method)
    for module in pkgutil.iter_modules(flowforge.api.v1.__path__)
    if module.name.endswith("_pb2")
    for service in importlib.import_module(f"flowforge.api.v1.{module.name}").DESCRIPTOR.services_by_name.values()
    for method in service.methods
]


@pytest.fixture
async def fuzzed_server(store_url: str) -> AsyncIterator[FlowForgeServer]:
    server = FlowForgeServer(ServerConfig(store=store_url, port=0, poll_recheck_interval_s=0.2))
    await server.start()
    yield server
    await server.stop()


async def _call(channel: grpc.aio.Channel, path: str, body: bytes) -> grpc.StatusCode:
    call = channel.unary_unary(path, request_serializer=None, response_deserializer=None)
    try:
        await call(body, timeout=CALL_DEADLINE_S)
    except grpc.aio.AioRpcError as error:
        if error.code() in UNCLEAR:
            raise AssertionError(f"{path} answered {error.code().name}: {error.details()}") from None
        return error.code()
    return grpc.StatusCode.OK


async def _fuzz_task_reports(channel: grpc.aio.Channel, rng: random.Random, seen: dict[str, set[str]]) -> None:
    """Random reports on real leased tasks: the token is genuine, the rest is fuzz."""
    service = "/flowforge.api.v1.WorkflowService/"
    # The fuzzed UpdateNamespace calls may have set quotas on the namespace: lift them.
    unlimited = pb.UpdateNamespaceRequest(
        name="default", max_running_executions=0, start_rate=0, max_concurrent_activities=0
    )
    assert await _call(channel, service + "UpdateNamespace", unlimited.SerializeToString()) == grpc.StatusCode.OK
    for index in range(3):
        start = pb.StartWorkflowExecutionRequest(
            namespace="default", workflow_id=f"fz-task-{index}", workflow_type="wf", task_queue="fz"
        )
        await _call(channel, service + "StartWorkflowExecution", start.SerializeToString())
    poll = channel.unary_unary(
        service + "PollWorkflowTaskQueue",
        request_serializer=pb.PollWorkflowTaskQueueRequest.SerializeToString,
        response_deserializer=pb.PollWorkflowTaskQueueResponse.FromString,
    )
    poll_activity = channel.unary_unary(
        service + "PollActivityTaskQueue",
        request_serializer=pb.PollActivityTaskQueueRequest.SerializeToString,
        response_deserializer=pb.PollActivityTaskQueueResponse.FromString,
    )
    reports = {
        "workflow": [pb.RespondWorkflowTaskCompletedRequest, pb.RespondWorkflowTaskFailedRequest],
        "activity": [
            pb.RespondActivityTaskCompletedRequest,
            pb.RespondActivityTaskFailedRequest,
            pb.RespondActivityTaskCanceledRequest,
            pb.RecordActivityTaskHeartbeatRequest,
        ],
    }
    tokens: dict[str, bytes] = {}
    for _ in range(TASK_REPORTS):
        if "workflow" not in tokens:
            task = await poll(
                pb.PollWorkflowTaskQueueRequest(
                    namespace="default", task_queue="fz", poll_timeout={"nanos": 200_000_000}
                ),
                timeout=5,
            )
            if task.task_token:
                tokens["workflow"] = task.task_token
        if "activity" not in tokens:
            activity = await poll_activity(
                pb.PollActivityTaskQueueRequest(
                    namespace="default", task_queue=rng.choice(("fz", "q")), poll_timeout={"nanos": 50_000_000}
                ),
                timeout=5,
            )
            if activity.task_token:
                tokens["activity"] = activity.task_token
        if not tokens:
            continue
        kind = rng.choice(sorted(tokens))
        request = random_message(rng.choice(reports[kind])(), rng, REPORT_HOSTILITY)
        request.task_token = tokens[kind]  # type: ignore[attr-defined]
        code = await _call(
            channel, service + type(request).__name__.removesuffix("Request"), request.SerializeToString()
        )
        seen.setdefault(type(request).__name__, set()).add(code.name)
        if code in (grpc.StatusCode.OK, grpc.StatusCode.FAILED_PRECONDITION) and not isinstance(
            request, pb.RecordActivityTaskHeartbeatRequest
        ):
            del tokens[kind]  # reported (or its lease is gone): lease the next one


async def test_every_rpc_answers_hostile_input_with_a_clear_status(fuzzed_server: FlowForgeServer) -> None:
    rng = random.Random(SEED)
    seen: dict[str, set[str]] = {}
    async with grpc.aio.insecure_channel(f"127.0.0.1:{fuzzed_server.port}") as channel:
        for service_name, method in METHODS:
            path = f"/{service_name}/{method.name}"
            request_class = message_factory.GetMessageClass(method.input_type)
            for _ in range(BYTES_PER_RPC):
                code = await _call(channel, path, random_bytes(rng))
                seen.setdefault(path, set()).add(code.name)
            for index in range(HOSTILE_PER_RPC + MOSTLY_PLAUSIBLE_PER_RPC):
                hostility = 1.0 if index < HOSTILE_PER_RPC else PLAUSIBLE_HOSTILITY
                request = random_message(request_class(), rng, hostility)
                code = await _call(channel, path, request.SerializeToString())
                seen.setdefault(path, set()).add(code.name)
        await _fuzz_task_reports(channel, rng, seen)
        # Still serving: a cheap RPC answers promptly, and a start is admitted.
        stub = workflow_service_pb2.DESCRIPTOR.services_by_name["WorkflowService"]
        assert stub is not None
        began = time.monotonic()
        described = await channel.unary_unary(
            "/flowforge.api.v1.WorkflowService/DescribeNamespace",
            request_serializer=pb.DescribeNamespaceRequest.SerializeToString,
            response_deserializer=pb.DescribeNamespaceResponse.FromString,
        )(pb.DescribeNamespaceRequest(name="default"), timeout=10)
        assert described.namespace.name == "default" and time.monotonic() - began < 5
        started = await channel.unary_unary(
            "/flowforge.api.v1.WorkflowService/StartWorkflowExecution",
            request_serializer=pb.StartWorkflowExecutionRequest.SerializeToString,
            response_deserializer=pb.StartWorkflowExecutionResponse.FromString,
        )(
            pb.StartWorkflowExecutionRequest(
                namespace="default", workflow_id="after-fuzz", workflow_type="wf", task_queue="q"
            ),
            timeout=10,
        )
        assert started.run_id
    assert {f"/{s}/{m.name}" for s, m in METHODS} <= set(seen)
