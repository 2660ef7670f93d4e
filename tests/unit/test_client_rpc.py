"""Client against a real in-process gRPC server that answers with scripted statuses."""

import collections
import dataclasses
import socket
from datetime import UTC, datetime, timedelta

import grpc
import pytest

from flowforge import workflow
from flowforge.api.v1 import common_pb2, workflow_service_pb2, workflow_service_pb2_grpc
from flowforge.client import (
    Client,
    DagNode,
    HistoryEvent,
    PendingActivity,
    PendingWorkflowTask,
    RPCRetryConfig,
    WorkflowExecutionDescription,
)
from flowforge.common import WorkflowExecutionStatus
from flowforge.converter import default_converter, error_to_failure, message_to_json_dict
from flowforge.exceptions import (
    ApplicationError,
    CancelledError,
    RPCError,
    TerminatedError,
    TimeoutError,
    WorkflowAlreadyStartedError,
    WorkflowFailureError,
)

pb = workflow_service_pb2
MiB = 1024 * 1024
T0 = datetime(2024, 5, 1, 12, tzinfo=UTC)

FAST_RETRY = RPCRetryConfig(
    initial_interval=timedelta(milliseconds=5),
    maximum_interval=timedelta(milliseconds=20),
    maximum_elapsed=timedelta(seconds=2),
)


@dataclasses.dataclass
class Receipt:
    customer: str
    total: int


@workflow.defn
class Onboarding:
    @workflow.run
    async def run(self, req: dict) -> Receipt:
        raise NotImplementedError

    @workflow.signal
    async def approve(self, who: str) -> None:
        raise NotImplementedError


class ScriptedService(workflow_service_pb2_grpc.WorkflowServiceServicer):
    """Records every request; answers with queued errors first, then queued responses.

    RPCs not defined here answer UNIMPLEMENTED (the generated base class does).
    """

    def __init__(self) -> None:
        self.requests: dict[str, list] = collections.defaultdict(list)
        self.metadata: list[dict] = []
        self.errors: dict[str, list[tuple[grpc.StatusCode, str]]] = collections.defaultdict(list)
        self.responses: dict[str, list] = collections.defaultdict(list)

    async def _answer(self, rpc, request, context, default):
        self.requests[rpc].append(request)
        self.metadata.append(dict(context.invocation_metadata()))
        if self.errors[rpc]:
            code, message = self.errors[rpc].pop(0)
            await context.abort(code, message)
        return self.responses[rpc].pop(0) if self.responses[rpc] else default

    async def StartWorkflowExecution(self, request, context):
        default = pb.StartWorkflowExecutionResponse(run_id="run-1", started=True)
        return await self._answer("StartWorkflowExecution", request, context, default)

    async def DescribeWorkflowExecution(self, request, context):
        default = pb.DescribeWorkflowExecutionResponse()
        return await self._answer("DescribeWorkflowExecution", request, context, default)

    async def GetWorkflowExecutionHistory(self, request, context):
        default = pb.GetWorkflowExecutionHistoryResponse()
        return await self._answer("GetWorkflowExecutionHistory", request, context, default)

    async def ListWorkflowExecutions(self, request, context):
        default = pb.ListWorkflowExecutionsResponse()
        return await self._answer("ListWorkflowExecutions", request, context, default)

    async def RegisterNamespace(self, request, context):
        default = pb.RegisterNamespaceResponse()
        return await self._answer("RegisterNamespace", request, context, default)

    async def SignalWorkflowExecution(self, request, context):
        default = pb.SignalWorkflowExecutionResponse()
        return await self._answer("SignalWorkflowExecution", request, context, default)

    async def RequestCancelWorkflowExecution(self, request, context):
        default = pb.RequestCancelWorkflowExecutionResponse()
        return await self._answer("RequestCancelWorkflowExecution", request, context, default)


@pytest.fixture
async def server(serve_fake):
    service = ScriptedService()
    # The real server accepts 64 MiB messages too, so that it can refuse oversize
    # payloads itself with INVALID_ARGUMENT.
    return service, await serve_fake(service, **{"grpc.max_receive_message_length": 64 * MiB})


@pytest.fixture
async def client(server):
    _, target = server
    client = await Client.connect(
        target, namespace="payments", api_key="s3cret", identity="tester", rpc_retry=FAST_RETRY
    )
    yield client
    await client.close()


def _event(event_id, event_type, **attributes):
    proto = common_pb2.HistoryEvent(
        event_id=event_id,
        event_type=event_type,
        attributes_json=HistoryEvent(event_id, event_type, T0, attributes).to_proto().attributes_json,
    )
    proto.event_time.FromDatetime(T0)
    return proto


def _payloads_json(*values):
    return message_to_json_dict(default_converter.to_payloads(values))


# -- start_workflow ------------------------------------------------------------------


async def test_start_sends_the_request_and_returns_a_handle(server, client):
    service, _ = server

    handle = await client.start_workflow(
        Onboarding.run,
        {"email": "ada@example.com"},
        id="onb-1",
        task_queue="onboarding",
        execution_timeout=timedelta(hours=1),
        task_timeout=timedelta(seconds=5),
    )

    (request,) = service.requests["StartWorkflowExecution"]
    assert (request.namespace, request.workflow_id, request.workflow_type, request.task_queue) == (
        "payments",
        "onb-1",
        "Onboarding",
        "onboarding",
    )
    assert default_converter.from_payloads(request.input) == [{"email": "ada@example.com"}]
    assert request.identity == "tester"
    assert request.request_id  # a fresh UUID by default
    assert request.workflow_execution_timeout.ToTimedelta() == timedelta(hours=1)
    assert request.workflow_task_timeout.ToTimedelta() == timedelta(seconds=5)
    assert not request.HasField("workflow_run_timeout")
    assert (handle.id, handle.run_id) == ("onb-1", "run-1")
    assert service.metadata[0]["authorization"] == "Bearer s3cret"


@pytest.mark.parametrize(
    ("workflow", "arguments", "expected_input"),
    [
        (Onboarding, {}, []),
        ("Onboarding", {"arg": None}, [None]),
        ("Onboarding", {"args": [1, "two"]}, [1, "two"]),
    ],
)
async def test_start_accepts_a_class_or_a_name_and_any_arguments(server, client, workflow, arguments, expected_input):
    service, _ = server

    await client.start_workflow(workflow, id="w", task_queue="q", **arguments)

    (request,) = service.requests["StartWorkflowExecution"]
    assert request.workflow_type == "Onboarding"
    assert default_converter.from_payloads(request.input) == expected_input


async def test_start_rejects_undecorated_workflows_and_mixed_arguments(client):
    async def not_a_workflow() -> None: ...

    with pytest.raises(TypeError, match="is not a workflow"):
        await client.start_workflow(not_a_workflow, id="w", task_queue="q")
    with pytest.raises(ValueError, match="either arg or args"):
        await client.start_workflow("W", 1, args=[2], id="w", task_queue="q")


async def test_already_exists_becomes_workflow_already_started_error(server, client):
    service, _ = server
    service.errors["StartWorkflowExecution"].append(
        (grpc.StatusCode.ALREADY_EXISTS, "workflow 'onb-1' is already running")
    )

    with pytest.raises(WorkflowAlreadyStartedError) as caught:
        await client.start_workflow("Onboarding", id="onb-1", task_queue="q")

    assert caught.value.status == grpc.StatusCode.ALREADY_EXISTS
    assert caught.value.message == "workflow 'onb-1' is already running"
    assert len(service.requests["StartWorkflowExecution"]) == 1


@pytest.mark.parametrize(
    "status",
    [
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    ],
)
async def test_final_statuses_are_not_retried(server, client, status):
    service, _ = server
    service.errors["StartWorkflowExecution"].append((status, "no, and here is why"))

    with pytest.raises(RPCError) as caught:
        await client.start_workflow("Onboarding", id="w", task_queue="q")

    assert type(caught.value) is RPCError
    assert (caught.value.status, caught.value.message) == (status, "no, and here is why")
    assert len(service.requests["StartWorkflowExecution"]) == 1


@pytest.mark.parametrize("status", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED])
async def test_transient_statuses_are_retried_with_the_same_request_id(server, client, status):
    service, _ = server
    service.errors["StartWorkflowExecution"] += [(status, "store down")] * 2

    handle = await client.start_workflow("Onboarding", id="w", task_queue="q")

    attempts = service.requests["StartWorkflowExecution"]
    assert len(attempts) == 3
    assert len({request.request_id for request in attempts}) == 1
    assert handle.run_id == "run-1"


async def test_retries_stop_after_the_maximum_elapsed_time(server):
    service, target = server
    service.errors["StartWorkflowExecution"] += [(grpc.StatusCode.UNAVAILABLE, "store down")] * 1000
    retry = dataclasses.replace(FAST_RETRY, maximum_elapsed=timedelta(milliseconds=200))

    async with await Client.connect(target, rpc_retry=retry) as client:
        with pytest.raises(RPCError) as caught:
            await client.start_workflow("Onboarding", id="w", task_queue="q")

    assert caught.value.status == grpc.StatusCode.UNAVAILABLE
    assert 2 <= len(service.requests["StartWorkflowExecution"]) < 1000


async def test_payloads_above_grpc_default_limit_reach_the_server(server, client):
    service, _ = server
    service.errors["StartWorkflowExecution"].append(
        (grpc.StatusCode.INVALID_ARGUMENT, "input is 5.0 MiB; the payload limit is 2 MiB")
    )

    with pytest.raises(RPCError) as caught:
        await client.start_workflow("Onboarding", "x" * (5 * MiB), id="w", task_queue="q")

    assert caught.value.status == grpc.StatusCode.INVALID_ARGUMENT
    assert "payload limit" in caught.value.message


async def test_connect_fails_fast_when_nothing_listens():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        unused_port = probe.getsockname()[1]

    with pytest.raises(RPCError) as caught:
        await Client.connect(f"127.0.0.1:{unused_port}", connect_timeout=timedelta(milliseconds=200))

    assert caught.value.status == grpc.StatusCode.UNAVAILABLE


async def test_no_authorization_header_without_api_key(server):
    service, target = server

    async with await Client.connect(target) as client:
        await client.register_namespace("payments", description="money", retention=timedelta(days=3))

    assert "authorization" not in service.metadata[0]
    (request,) = service.requests["RegisterNamespace"]
    assert (request.name, request.description) == ("payments", "money")
    assert request.retention.ToTimedelta() == timedelta(days=3)


# -- result() ------------------------------------------------------------------------


async def test_result_long_polls_until_the_close_event_and_decodes_with_the_return_hint(server, client):
    service, _ = server
    service.responses["GetWorkflowExecutionHistory"] += [
        pb.GetWorkflowExecutionHistoryResponse(run_id="run-1"),  # the wait timed out
        pb.GetWorkflowExecutionHistoryResponse(
            run_id="run-1",
            events=[
                _event(
                    9,
                    "WorkflowExecutionCompleted",
                    result=_payloads_json({"customer": "c-1", "total": 42}),
                )
            ],
        ),
    ]

    handle = await client.start_workflow(Onboarding.run, {}, id="onb-1", task_queue="q")

    assert await handle.result() == Receipt(customer="c-1", total=42)
    requests = service.requests["GetWorkflowExecutionHistory"]
    assert len(requests) == 2
    for request in requests:
        assert request.close_event_only and request.wait_new_event
        assert request.execution.workflow_id == "onb-1"
        assert request.execution.run_id == "run-1"
        assert request.wait_timeout.ToTimedelta() > timedelta(0)


async def test_result_of_latest_run_pins_the_resolved_run(server, client):
    service, _ = server
    service.responses["GetWorkflowExecutionHistory"] += [
        pb.GetWorkflowExecutionHistoryResponse(run_id="run-7"),
        pb.GetWorkflowExecutionHistoryResponse(
            run_id="run-7",
            events=[_event(5, "WorkflowExecutionCompleted", result=_payloads_json(None))],
        ),
    ]

    result = await client.get_workflow_handle("onb-1").result()

    assert result is None
    first, second = service.requests["GetWorkflowExecutionHistory"]
    assert (first.execution.run_id, second.execution.run_id) == ("", "run-7")


async def test_result_follows_continue_as_new(server, client):
    service, _ = server
    service.responses["GetWorkflowExecutionHistory"] += [
        pb.GetWorkflowExecutionHistoryResponse(
            run_id="run-1",
            events=[_event(9, "WorkflowExecutionContinuedAsNew", new_execution_run_id="run-2")],
        ),
        pb.GetWorkflowExecutionHistoryResponse(
            run_id="run-2",
            events=[_event(5, "WorkflowExecutionCompleted", result=_payloads_json(3))],
        ),
    ]

    assert await client.get_workflow_handle("w", run_id="run-1").result() == 3
    assert service.requests["GetWorkflowExecutionHistory"][1].execution.run_id == "run-2"


def _failure_json(error):
    return message_to_json_dict(error_to_failure(error))


@pytest.mark.parametrize(
    ("close_event", "cause_type", "cause_message"),
    [
        (
            _event(
                9,
                "WorkflowExecutionFailed",
                failure=_failure_json(ApplicationError("card declined", type="CardDeclined")),
            ),
            ApplicationError,
            "card declined",
        ),
        (
            _event(9, "WorkflowExecutionCanceled", details=_payloads_json("by ops")),
            CancelledError,
            "workflow execution canceled",
        ),
        (
            _event(9, "WorkflowExecutionTerminated", reason="bad deploy", identity="ops"),
            TerminatedError,
            "bad deploy",
        ),
        (
            _event(9, "WorkflowExecutionTimedOut", timeout_type="RUN"),
            TimeoutError,
            "timed out (RUN)",
        ),
    ],
)
async def test_result_raises_workflow_failure_error_with_the_cause(
    server, client, close_event, cause_type, cause_message
):
    service, _ = server
    service.responses["GetWorkflowExecutionHistory"].append(
        pb.GetWorkflowExecutionHistoryResponse(run_id="run-1", events=[close_event])
    )

    with pytest.raises(WorkflowFailureError) as caught:
        await client.get_workflow_handle("w").result()

    cause = caught.value.cause
    assert type(cause) is cause_type
    assert cause_message in cause.message
    if isinstance(cause, ApplicationError):
        assert cause.type == "CardDeclined"
    if isinstance(cause, CancelledError):
        assert list(cause.details) == ["by ops"]


async def test_result_surfaces_rpc_errors(server, client):
    service, _ = server
    service.errors["GetWorkflowExecutionHistory"].append((grpc.StatusCode.NOT_FOUND, "no such workflow"))

    with pytest.raises(RPCError) as caught:
        await client.get_workflow_handle("missing").result()

    assert caught.value.status == grpc.StatusCode.NOT_FOUND


# -- describe / history / list -------------------------------------------------------


async def test_describe_maps_every_field(server, client):
    service, _ = server
    response = pb.DescribeWorkflowExecutionResponse(
        execution=common_pb2.WorkflowExecution(workflow_id="onb-1", run_id="run-1"),
        workflow_type="Onboarding",
        task_queue="onboarding",
        status=common_pb2.WORKFLOW_EXECUTION_STATUS_RUNNING,
        history_length=12,
        pending_activities=[
            pb.PendingActivity(
                activity_id="3",
                activity_type="verify_identity",
                state="STARTED",
                attempt=2,
                last_failure=common_pb2.Failure(message="timeout talking to KYC"),
                last_worker_identity="w-1",
            )
        ],
        pending_workflow_task=pb.PendingWorkflowTask(
            state="SCHEDULED",
            attempt=4,
            last_failure=common_pb2.Failure(message="NonDeterminismError: ..."),
        ),
        dag=[
            pb.DagNode(
                activity_id="1",
                activity_type="create_customer",
                scheduled_event_id=5,
                state="COMPLETED",
                attempt=1,
            ),
            pb.DagNode(
                activity_id="3",
                activity_type="verify_identity",
                scheduled_event_id=11,
                depends_on_activity_ids=["1"],
                state="STARTED",
                attempt=2,
            ),
        ],
    )
    response.start_time.FromDatetime(T0)
    response.pending_activities[0].last_heartbeat_time.FromDatetime(T0 + timedelta(seconds=3))
    service.responses["DescribeWorkflowExecution"].append(response)

    description = await client.get_workflow_handle("onb-1").describe()

    assert isinstance(description, WorkflowExecutionDescription)
    assert description.status is WorkflowExecutionStatus.RUNNING
    assert (description.workflow_id, description.run_id) == ("onb-1", "run-1")
    assert (description.workflow_type, description.task_queue) == ("Onboarding", "onboarding")
    assert description.start_time == T0 and description.close_time is None
    assert description.history_length == 12
    assert description.pending_activities == [
        PendingActivity(
            activity_id="3",
            activity_type="verify_identity",
            state="STARTED",
            attempt=2,
            last_heartbeat_time=T0 + timedelta(seconds=3),
            next_attempt_schedule_time=None,
            last_failure="timeout talking to KYC",
            last_worker_identity="w-1",
        )
    ]
    assert description.pending_workflow_task == PendingWorkflowTask(
        state="SCHEDULED", attempt=4, last_failure="NonDeterminismError: ..."
    )
    assert description.dag == [
        DagNode("1", "create_customer", 5, [], "COMPLETED", 1),
        DagNode("3", "verify_identity", 11, ["1"], "STARTED", 2),
    ]
    assert description.raw == response
    (request,) = service.requests["DescribeWorkflowExecution"]
    assert (request.namespace, request.execution.workflow_id, request.execution.run_id) == (
        "payments",
        "onb-1",
        "",
    )


async def test_describe_without_pending_task(server, client):
    service, _ = server
    service.responses["DescribeWorkflowExecution"].append(
        pb.DescribeWorkflowExecutionResponse(status=common_pb2.WORKFLOW_EXECUTION_STATUS_COMPLETED)
    )

    description = await client.get_workflow_handle("w").describe()

    assert description.status is WorkflowExecutionStatus.COMPLETED
    assert description.pending_workflow_task is None


async def test_fetch_history_pages_through_one_run(server, client):
    service, _ = server
    service.responses["GetWorkflowExecutionHistory"] += [
        pb.GetWorkflowExecutionHistoryResponse(
            run_id="run-3",
            has_more=True,
            events=[_event(1, "WorkflowExecutionStarted"), _event(2, "WorkflowTaskScheduled")],
        ),
        pb.GetWorkflowExecutionHistoryResponse(run_id="run-3", events=[_event(3, "WorkflowTaskStarted")]),
    ]

    history = await client.get_workflow_handle("onb-1").fetch_history()

    assert history.workflow_id == "onb-1"
    assert [(e.event_id, e.event_type) for e in history.events] == [
        (1, "WorkflowExecutionStarted"),
        (2, "WorkflowTaskScheduled"),
        (3, "WorkflowTaskStarted"),
    ]
    first, second = service.requests["GetWorkflowExecutionHistory"]
    assert (first.after_event_id, first.execution.run_id) == (0, "")
    assert (second.after_event_id, second.execution.run_id) == (2, "run-3")
    assert not first.wait_new_event and not first.close_event_only


async def test_list_workflows_pages_and_filters(server, client):
    service, _ = server

    def info(workflow_id):
        return pb.WorkflowExecutionInfo(
            execution=common_pb2.WorkflowExecution(workflow_id=workflow_id, run_id=f"{workflow_id}-run"),
            workflow_type="Onboarding",
            status=common_pb2.WORKFLOW_EXECUTION_STATUS_FAILED,
        )

    service.responses["ListWorkflowExecutions"] += [
        pb.ListWorkflowExecutionsResponse(executions=[info("a"), info("b")], next_page_token=b"page-2"),
        pb.ListWorkflowExecutionsResponse(executions=[info("c")]),
    ]

    listed = [
        execution
        async for execution in client.list_workflows(
            status=WorkflowExecutionStatus.FAILED, workflow_type="Onboarding", page_size=2
        )
    ]

    assert [(e.workflow_id, e.run_id) for e in listed] == [
        ("a", "a-run"),
        ("b", "b-run"),
        ("c", "c-run"),
    ]
    assert all(e.status is WorkflowExecutionStatus.FAILED for e in listed)
    first, second = service.requests["ListWorkflowExecutions"]
    assert (first.status, first.workflow_type, first.page_size) == (3, "Onboarding", 2)
    assert (first.next_page_token, second.next_page_token) == (b"", b"page-2")


async def test_list_workflows_sends_the_query_and_decodes_search_attributes_and_memo(server, client):
    service, _ = server
    info = pb.WorkflowExecutionInfo(
        execution=common_pb2.WorkflowExecution(workflow_id="a", run_id="a-run"),
        status=common_pb2.WORKFLOW_EXECUTION_STATUS_RUNNING,
    )
    info.search_attributes.indexed_fields["Region"].keyword_value = "eu"
    info.search_attributes.indexed_fields["Amount"].int_value = 7
    info.search_attributes.indexed_fields["DueAt"].datetime_value.FromSeconds(1714564800)
    info.memo.fields["note"].CopyFrom(client.data_converter.to_payload({"gift": True}))
    service.responses["ListWorkflowExecutions"].append(pb.ListWorkflowExecutionsResponse(executions=[info]))

    [listed] = [e async for e in client.list_workflows("WorkflowType = 'Onboarding'", page_size=5)]

    assert listed.search_attributes == {
        "Amount": 7,
        "DueAt": datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
        "Region": "eu",
    }
    assert listed.memo == {"note": {"gift": True}}
    [request] = service.requests["ListWorkflowExecutions"]
    assert (request.query, request.page_size) == ("WorkflowType = 'Onboarding'", 5)


# -- signal / cancel / terminate -----------------------------------------------------


async def test_signal_and_cancel_send_what_the_server_needs(server, client):
    service, _ = server
    handle = client.get_workflow_handle("onb-1", run_id="run-1")

    await handle.signal(Onboarding.approve, "ops")
    await handle.signal("note", args=["a", 2])
    await handle.cancel(reason="customer left")

    by_method, by_name = service.requests["SignalWorkflowExecution"]
    assert (by_method.signal_name, by_method.execution.run_id) == ("approve", "run-1")
    assert default_converter.from_payloads(by_method.input) == ["ops"]
    assert default_converter.from_payloads(by_name.input) == ["a", 2]
    assert by_method.request_id and by_method.request_id != by_name.request_id
    (cancel,) = service.requests["RequestCancelWorkflowExecution"]
    assert (cancel.reason, cancel.identity) == ("customer left", "tester")


async def test_unimplemented_rpcs_surface_as_rpc_error(client):
    with pytest.raises(RPCError) as caught:
        await client.get_workflow_handle("w").terminate(reason="stuck")

    assert caught.value.status == grpc.StatusCode.UNIMPLEMENTED
