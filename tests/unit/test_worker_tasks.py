"""Worker running workflow and activity tasks, against an in-memory task server over
real gRPC, with the real WorkflowInstance replaying workflow code."""

import asyncio
import dataclasses
import logging
import os
import signal
import threading
import time
from datetime import UTC, datetime, timedelta

import grpc
import pytest

from flowforge import activity, workflow
from flowforge.api.v1 import common_pb2, workflow_service_pb2, workflow_service_pb2_grpc
from flowforge.client import Client, HistoryEvent
from flowforge.converter import default_converter, failure_to_error, message_to_json_dict
from flowforge.exceptions import ApplicationError, CancelledError
from flowforge.worker import Worker

pb = workflow_service_pb2
T0 = datetime(2024, 5, 1, 12, tzinfo=UTC)
TASK_QUEUE = "onboarding"

# How long the fake holds a poll open when it has no task.
_FAKE_POLL_WAIT = 1.0


class FakeTaskService(workflow_service_pb2_grpc.WorkflowServiceServicer):
    """Hands out queued tasks and records every report, like the server's task RPCs.

    Tokens in ``lease_lost`` are answered FAILED_PRECONDITION (a stale lease);
    heartbeats for tokens in ``cancel_on_heartbeat`` answer ``cancel_requested``;
    completions of workflow tasks in ``refused_completions`` are answered
    INVALID_ARGUMENT with the message given. ``RespondWorkflowTaskCompleted`` hands
    back up to ``eager_activity_slots`` of the tasks queued in ``eager_activity_tasks``.
    """

    def __init__(self) -> None:
        self.activity_tasks: asyncio.Queue = asyncio.Queue()
        self.workflow_tasks: asyncio.Queue = asyncio.Queue()
        self.eager_activity_tasks: list = []
        self.lease_lost: set[bytes] = set()
        self.cancel_on_heartbeat: set[bytes] = set()
        self.refused_completions: dict[bytes, str] = {}
        self.calls: list[tuple[str, object]] = []
        self.call_times: dict[str, list[float]] = {}
        self._changed = asyncio.Condition()

    def requests(self, rpc: str) -> list:
        return [request for name, request in self.calls if name == rpc]

    def reports(self) -> list[tuple[str, object]]:
        return [(name, request) for name, request in self.calls if name.startswith("Respond")]

    async def wait_for(self, predicate, timeout: float = 5.0) -> None:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(predicate), timeout)

    async def _record(self, rpc, request, context) -> None:
        async with self._changed:
            self.calls.append((rpc, request))
            self.call_times.setdefault(rpc, []).append(time.monotonic())
            self._changed.notify_all()
        if getattr(request, "task_token", b"") in self.lease_lost:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "task lease expired")

    async def _next_task(self, queue, empty):
        try:
            return await asyncio.wait_for(queue.get(), _FAKE_POLL_WAIT)
        except TimeoutError:
            return empty

    async def PollActivityTaskQueue(self, request, context):
        await self._record("PollActivityTaskQueue", request, context)
        return await self._next_task(self.activity_tasks, pb.PollActivityTaskQueueResponse())

    async def PollWorkflowTaskQueue(self, request, context):
        await self._record("PollWorkflowTaskQueue", request, context)
        return await self._next_task(self.workflow_tasks, pb.PollWorkflowTaskQueueResponse())

    async def RecordActivityTaskHeartbeat(self, request, context):
        await self._record("RecordActivityTaskHeartbeat", request, context)
        cancel = request.task_token in self.cancel_on_heartbeat
        return pb.RecordActivityTaskHeartbeatResponse(cancel_requested=cancel)

    async def RespondActivityTaskCompleted(self, request, context):
        await self._record("RespondActivityTaskCompleted", request, context)
        return pb.RespondActivityTaskCompletedResponse()

    async def RespondActivityTaskFailed(self, request, context):
        await self._record("RespondActivityTaskFailed", request, context)
        return pb.RespondActivityTaskFailedResponse()

    async def RespondActivityTaskCanceled(self, request, context):
        await self._record("RespondActivityTaskCanceled", request, context)
        return pb.RespondActivityTaskCanceledResponse()

    async def RespondWorkflowTaskCompleted(self, request, context):
        await self._record("RespondWorkflowTaskCompleted", request, context)
        if request.task_token in self.refused_completions:
            message = self.refused_completions[request.task_token]
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)
        handed_back = self.eager_activity_tasks[: request.eager_activity_slots]
        del self.eager_activity_tasks[: len(handed_back)]
        return pb.RespondWorkflowTaskCompletedResponse(activity_tasks=handed_back)

    async def RespondWorkflowTaskFailed(self, request, context):
        await self._record("RespondWorkflowTaskFailed", request, context)
        return pb.RespondWorkflowTaskFailedResponse()


@pytest.fixture
async def service(serve_fake):
    fake = FakeTaskService()
    fake.target = await serve_fake(fake)
    return fake


@pytest.fixture
async def client(service):
    client = await Client.connect(service.target, namespace="payments", identity="worker-1")
    yield client
    await client.close()


def activity_task(
    token: bytes,
    activity_type: str,
    *args,
    attempt: int = 1,
    heartbeat_timeout: timedelta | None = None,
    heartbeat_details: tuple = (),
) -> pb.PollActivityTaskQueueResponse:
    task = pb.PollActivityTaskQueueResponse(
        task_token=token,
        workflow_execution=common_pb2.WorkflowExecution(workflow_id="onb-1", run_id="run-1"),
        workflow_type="Onboarding",
        activity_id=token.decode(),
        activity_type=activity_type,
        input=default_converter.to_payloads(args),
        attempt=attempt,
        idempotency_key=f"idem-{token.decode()}",
        task_queue=TASK_QUEUE,
    )
    task.scheduled_time.FromDatetime(T0)
    task.started_time.FromDatetime(T0 + timedelta(seconds=1))
    task.start_to_close_timeout.FromTimedelta(timedelta(seconds=30))
    if heartbeat_timeout is not None:
        task.heartbeat_timeout.FromTimedelta(heartbeat_timeout)
    if heartbeat_details:
        task.heartbeat_details.CopyFrom(default_converter.to_payloads(heartbeat_details))
    return task


@dataclasses.dataclass
class Customer:
    id: str
    email: str


@activity.defn
async def create_customer(req: dict) -> Customer:
    return Customer(id="c-1", email=req["email"])


@activity.defn(name="greet")
def greet(customer: Customer) -> str:
    # Runs in a pool thread: the dataclass was rebuilt from its type hint.
    return f"hello {customer.email} from {threading.current_thread().name}"


@activity.defn
async def decline(amount: int) -> None:
    raise ApplicationError("card declined", amount, type="CardDeclined", non_retryable=True)


# -- running activities --------------------------------------------------------------


async def test_async_and_sync_activities_complete_with_decoded_arguments(service, client):
    async with Worker(client, task_queue=TASK_QUEUE, activities=[create_customer, greet]):
        service.activity_tasks.put_nowait(activity_task(b"a-1", "create_customer", {"email": "ada@example.com"}))
        service.activity_tasks.put_nowait(activity_task(b"a-2", "greet", {"id": "c-1", "email": "ada@example.com"}))
        await service.wait_for(lambda: len(service.reports()) == 2)

    results = {
        request.task_token: default_converter.from_payloads(request.result)
        for request in service.requests("RespondActivityTaskCompleted")
    }
    assert results[b"a-1"] == [{"id": "c-1", "email": "ada@example.com"}]
    (greeting,) = results[b"a-2"]
    assert greeting.startswith("hello ada@example.com from flowforge-activity")
    for request in service.requests("RespondActivityTaskCompleted"):
        assert (request.namespace, request.identity) == ("payments", "worker-1")
    polls = service.requests("PollActivityTaskQueue")
    assert polls[0].task_queue == TASK_QUEUE
    assert polls[0].poll_timeout.ToTimedelta() > timedelta(0)


async def test_activity_info_is_available_in_async_and_sync_activities(service, client):
    seen: dict[str, activity.Info] = {}

    @activity.defn
    async def async_probe() -> None:
        seen["async"] = activity.info()

    @activity.defn
    def sync_probe() -> None:
        seen["sync"] = activity.info()
        assert not activity.is_cancelled()

    async with Worker(client, task_queue=TASK_QUEUE, activities=[async_probe, sync_probe]):
        service.activity_tasks.put_nowait(
            activity_task(
                b"a-1",
                "async_probe",
                attempt=3,
                heartbeat_timeout=timedelta(seconds=20),
                heartbeat_details=("page", 7),
            )
        )
        service.activity_tasks.put_nowait(activity_task(b"a-2", "sync_probe"))
        await service.wait_for(lambda: len(service.reports()) == 2)

    assert seen["async"] == activity.Info(
        activity_id="a-1",
        activity_type="async_probe",
        attempt=3,
        idempotency_key="idem-a-1",
        heartbeat_details=("page", 7),
        workflow_id="onb-1",
        run_id="run-1",
        workflow_type="Onboarding",
        namespace="payments",
        task_queue=TASK_QUEUE,
        scheduled_time=T0,
        started_time=T0 + timedelta(seconds=1),
        start_to_close_timeout=timedelta(seconds=30),
        heartbeat_timeout=timedelta(seconds=20),
    )
    assert seen["sync"].activity_type == "sync_probe"
    assert seen["sync"].heartbeat_details == ()
    assert seen["sync"].heartbeat_timeout is None
    assert {name for name, _ in service.reports()} == {"RespondActivityTaskCompleted"}


async def test_failures_are_reported_with_their_type(service, client):
    async with Worker(client, task_queue=TASK_QUEUE, activities=[decline, create_customer]):
        service.activity_tasks.put_nowait(activity_task(b"a-1", "decline", 1250))
        service.activity_tasks.put_nowait(activity_task(b"a-2", "create_customer", "not a dict"))
        await service.wait_for(lambda: len(service.reports()) == 2)

    failures = {r.task_token: r.failure for r in service.requests("RespondActivityTaskFailed")}
    declined = failure_to_error(failures[b"a-1"])
    assert isinstance(declined, ApplicationError)
    assert (declined.message, declined.type, declined.non_retryable) == (
        "card declined",
        "CardDeclined",
        True,
    )
    assert list(declined.details) == [1250]
    assert failures[b"a-1"].source == "worker"
    assert failures[b"a-2"].type == "TypeError"


async def test_an_unregistered_activity_type_fails_with_the_registered_names(service, client):
    async with Worker(client, task_queue=TASK_QUEUE, activities=[greet, create_customer]):
        service.activity_tasks.put_nowait(activity_task(b"a-1", "charge_card"))
        await service.wait_for(lambda: len(service.reports()) == 1)

    (failed,) = service.requests("RespondActivityTaskFailed")
    assert failed.failure.message == (
        "activity type 'charge_card' is not registered on this worker "
        "(task queue 'onboarding'; registered: create_customer, greet)"
    )
    assert not failed.failure.non_retryable  # another worker may have it


async def test_a_lost_lease_on_report_is_logged_and_the_worker_goes_on(service, client, caplog):
    service.lease_lost.add(b"a-1")

    with caplog.at_level(logging.WARNING):
        async with Worker(client, task_queue=TASK_QUEUE, activities=[create_customer]):
            service.activity_tasks.put_nowait(activity_task(b"a-1", "create_customer", {"email": "secret@example.com"}))
            service.activity_tasks.put_nowait(activity_task(b"a-2", "create_customer", {"email": "b@example.com"}))
            await service.wait_for(lambda: len(service.reports()) == 2)

    (warning,) = [r for r in caplog.records if "lease lost" in r.getMessage()]
    assert warning.levelno == logging.WARNING
    assert "FAILED_PRECONDITION" in warning.getMessage()
    assert all("secret@example.com" not in r.getMessage() for r in caplog.records)


async def test_no_more_activities_are_leased_than_may_run(service, client):
    release = asyncio.Event()
    running = 0
    most_running = 0

    @activity.defn
    async def slow() -> None:
        nonlocal running, most_running
        running += 1
        most_running = max(most_running, running)
        activity.heartbeat()
        await release.wait()
        running -= 1

    async with Worker(
        client,
        task_queue=TASK_QUEUE,
        activities=[slow],
        max_concurrent_activities=2,
        max_concurrent_activity_polls=4,
    ):
        for index in range(5):
            service.activity_tasks.put_nowait(activity_task(f"a-{index}".encode(), "slow"))
        # Both running activities made a heartbeat round trip: time enough for any
        # poller to lease another task if it could.
        await service.wait_for(lambda: len(service.requests("RecordActivityTaskHeartbeat")) == 2)
        assert service.activity_tasks.qsize() == 3  # left on the server for other workers
        release.set()
        await service.wait_for(lambda: len(service.reports()) == 5)

    assert most_running == 2


# -- heartbeats and cancellation -----------------------------------------------------


async def test_heartbeats_are_throttled_and_carry_the_latest_details(service, client):
    heartbeat_timeout = timedelta(milliseconds=250)
    interval = heartbeat_timeout.total_seconds() * 0.8

    @activity.defn
    async def download() -> None:
        activity.heartbeat("started")
        await service.wait_for(lambda: len(service.requests("RecordActivityTaskHeartbeat")) == 1)
        for percent in range(10, 101, 10):
            activity.heartbeat(percent)
        await service.wait_for(lambda: len(service.requests("RecordActivityTaskHeartbeat")) == 2)

    async with Worker(client, task_queue=TASK_QUEUE, activities=[download]):
        service.activity_tasks.put_nowait(activity_task(b"a-1", "download", heartbeat_timeout=heartbeat_timeout))
        await service.wait_for(lambda: len(service.reports()) == 1)

    first, second = service.requests("RecordActivityTaskHeartbeat")
    assert default_converter.from_payloads(first.details) == ["started"]
    assert default_converter.from_payloads(second.details) == [100]
    assert (first.task_token, first.namespace, first.identity) == (b"a-1", "payments", "worker-1")
    first_at, second_at = service.call_times["RecordActivityTaskHeartbeat"]
    assert second_at - first_at >= interval * 0.9


async def test_a_cancel_request_cancels_an_async_activity(service, client):
    service.cancel_on_heartbeat.add(b"a-1")
    observed = {}

    @activity.defn
    async def wait_forever() -> None:
        activity.heartbeat("waiting")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            observed["is_cancelled"] = activity.is_cancelled()
            raise

    async with Worker(client, task_queue=TASK_QUEUE, activities=[wait_forever]):
        service.activity_tasks.put_nowait(activity_task(b"a-1", "wait_forever"))
        await service.wait_for(lambda: len(service.reports()) == 1)

    ((rpc, request),) = service.reports()
    assert rpc == "RespondActivityTaskCanceled"
    assert request.task_token == b"a-1"
    assert observed == {"is_cancelled": True}


async def test_a_sync_activity_sees_cancellation_and_acknowledges_it(service, client):
    service.cancel_on_heartbeat.add(b"a-1")

    @activity.defn
    def poll_until_cancelled() -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            activity.heartbeat()
            if activity.is_cancelled():
                raise CancelledError("stopped cleanly", "rolled back")
            time.sleep(0.005)  # the activity's "work"
        raise AssertionError("cancellation never arrived")

    async with Worker(client, task_queue=TASK_QUEUE, activities=[poll_until_cancelled]):
        service.activity_tasks.put_nowait(activity_task(b"a-1", "poll_until_cancelled"))
        await service.wait_for(lambda: len(service.reports()) == 1)

    ((rpc, request),) = service.reports()
    assert rpc == "RespondActivityTaskCanceled"
    assert default_converter.from_payloads(request.details) == ["rolled back"]


async def test_a_lease_lost_on_heartbeat_cancels_without_reporting(service, client, caplog):
    service.lease_lost.add(b"a-1")
    cancelled = asyncio.Event()

    @activity.defn
    async def orphan() -> None:
        activity.heartbeat()
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    with caplog.at_level(logging.WARNING):
        async with Worker(client, task_queue=TASK_QUEUE, activities=[orphan]):
            service.activity_tasks.put_nowait(activity_task(b"a-1", "orphan"))
            await asyncio.wait_for(cancelled.wait(), timeout=5)

    # The worker has drained: had it reported, the report would be recorded.
    assert service.reports() == []
    assert any("not reporting" in r.getMessage() for r in caplog.records)


async def test_an_activity_past_its_start_to_close_timeout_is_cancelled_unreported_and_frees_its_slot(
    service, client, caplog
):
    observed = {}

    @activity.defn
    async def hangs() -> None:
        began = time.monotonic()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            observed.update(after=time.monotonic() - began, is_cancelled=activity.is_cancelled())
            raise

    @activity.defn
    async def quick() -> str:
        return "done"

    hung = activity_task(b"a-1", "hangs")
    hung.start_to_close_timeout.FromTimedelta(timedelta(seconds=0.3))
    with caplog.at_level(logging.WARNING):
        async with Worker(client, task_queue=TASK_QUEUE, activities=[hangs, quick], max_concurrent_activities=1):
            service.activity_tasks.put_nowait(hung)
            # The only slot is taken until the hung attempt is given up.
            service.activity_tasks.put_nowait(activity_task(b"a-2", "quick"))
            await service.wait_for(lambda: len(service.reports()) == 1)

    assert 0.3 <= observed["after"] < 3 and observed["is_cancelled"] is True
    # The server times the attempt out and decides what follows: the worker reports nothing for it.
    assert [(rpc, request.task_token) for rpc, request in service.reports()] == [
        ("RespondActivityTaskCompleted", b"a-2")
    ]
    assert any("start-to-close timeout" in r.getMessage() for r in caplog.records)


async def test_failing_after_a_heartbeat_flushes_the_latest_details_first(service, client):
    @activity.defn
    async def crash_after_progress() -> None:
        activity.heartbeat(1)
        await service.wait_for(lambda: len(service.requests("RecordActivityTaskHeartbeat")) == 1)
        activity.heartbeat(2)  # throttled: still pending when the activity fails
        raise RuntimeError("disk full")

    async with Worker(client, task_queue=TASK_QUEUE, activities=[crash_after_progress]):
        service.activity_tasks.put_nowait(
            activity_task(b"a-1", "crash_after_progress", heartbeat_timeout=timedelta(minutes=1))
        )
        await service.wait_for(lambda: len(service.reports()) == 1)

    rpcs = [name for name, _ in service.calls if not name.startswith("Poll")]
    assert rpcs == [
        "RecordActivityTaskHeartbeat",
        "RecordActivityTaskHeartbeat",
        "RespondActivityTaskFailed",
    ]
    last_heartbeat = service.requests("RecordActivityTaskHeartbeat")[-1]
    assert default_converter.from_payloads(last_heartbeat.details) == [2]
    (failed,) = service.requests("RespondActivityTaskFailed")
    assert (failed.failure.type, failed.failure.message) == ("RuntimeError", "disk full")


# -- workflow tasks ------------------------------------------------------------------


@workflow.defn
class Onboarding:
    constructed = 0

    def __init__(self) -> None:
        # Counts replays from scratch: a cached instance is not constructed again.
        Onboarding.constructed += 1

    @workflow.run
    async def run(self, req: dict) -> dict:
        customer = await workflow.execute_activity(create_customer, req, start_to_close_timeout=timedelta(seconds=10))
        if "crash" in req:
            raise KeyError("a bug in the workflow")
        return {"customer": customer}


CUSTOMER = {"id": "c-1", "email": "ada@example.com"}


class History:
    """Builds a run's history the way the server writes it."""

    def __init__(self) -> None:
        self.events: list[common_pb2.HistoryEvent] = []

    def add(self, event_type: str, **attributes) -> int:
        event = HistoryEvent(len(self.events) + 1, event_type, T0 + timedelta(seconds=len(self.events)), attributes)
        self.events.append(event.to_proto())
        return event.event_id

    def start(self, req: dict) -> "History":
        input_payloads = message_to_json_dict(default_converter.to_payloads([req]))
        self.add(
            "WorkflowExecutionStarted",
            workflow_type="Onboarding",
            task_queue=TASK_QUEUE,
            input=input_payloads,
        )
        return self.next_task()

    def next_task(self) -> "History":
        scheduled = self.add("WorkflowTaskScheduled", task_queue=TASK_QUEUE, attempt=1)
        self.add("WorkflowTaskStarted", scheduled_event_id=scheduled)
        return self

    def last_task_completed(self) -> None:
        self.add("WorkflowTaskCompleted", started_event_id=len(self.events))

    def activity_scheduled(self, activity_type: str = "create_customer") -> int:
        return self.add("ActivityTaskScheduled", activity_id="1", activity_type=activity_type)

    def activity_completed(self, scheduled: int, result) -> None:
        started = self.add("ActivityTaskStarted", scheduled_event_id=scheduled, attempt=1)
        result_payloads = message_to_json_dict(default_converter.to_payloads([result]))
        self.add(
            "ActivityTaskCompleted",
            scheduled_event_id=scheduled,
            started_event_id=started,
            result=result_payloads,
        )

    def task(self, token: bytes, workflow_type: str = "Onboarding"):
        return pb.PollWorkflowTaskQueueResponse(
            task_token=token,
            workflow_execution=common_pb2.WorkflowExecution(workflow_id="onb-1", run_id="run-1"),
            workflow_type=workflow_type,
            history=self.events,
            attempt=1,
            task_queue=TASK_QUEUE,
        )


def _command_kinds(request) -> list[str]:
    return [command.WhichOneof("attributes") for command in request.commands]


@pytest.fixture
def constructed():
    Onboarding.constructed = 0
    return lambda: Onboarding.constructed


async def test_a_workflow_task_reports_commands_and_runs_eager_activities_at_once(service, client, constructed):
    history = History().start({"email": "ada@example.com"})
    service.eager_activity_tasks.append(activity_task(b"a-1", "create_customer", {"email": "ada@example.com"}))

    async with Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding], activities=[create_customer]):
        service.workflow_tasks.put_nowait(history.task(b"wf-1"))
        await service.wait_for(lambda: service.requests("RespondActivityTaskCompleted"))

    (completed,) = service.requests("RespondWorkflowTaskCompleted")
    assert (completed.task_token, completed.namespace, completed.identity) == (
        b"wf-1",
        "payments",
        "worker-1",
    )
    (command,) = completed.commands
    assert command.schedule_activity_task.activity_type == "create_customer"
    assert default_converter.from_payloads(command.schedule_activity_task.input) == [{"email": "ada@example.com"}]
    assert completed.eager_activity_slots == 1
    (activity_completed,) = service.requests("RespondActivityTaskCompleted")
    assert activity_completed.task_token == b"a-1"
    assert constructed() == 1


async def test_no_eager_slots_without_activities_of_that_type(service, client):
    service.workflow_tasks.put_nowait(History().start({}).task(b"wf-1"))

    async with Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding], activities=[greet]):
        await service.wait_for(lambda: service.requests("RespondWorkflowTaskCompleted"))

    (completed,) = service.requests("RespondWorkflowTaskCompleted")
    assert completed.eager_activity_slots == 0


async def test_the_next_task_of_a_run_reuses_the_cached_instance(service, client, constructed):
    history = History().start({"email": "ada@example.com"})

    async with Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding]):
        service.workflow_tasks.put_nowait(history.task(b"wf-1"))
        await service.wait_for(lambda: len(service.requests("RespondWorkflowTaskCompleted")) == 1)
        history.last_task_completed()
        history.activity_completed(history.activity_scheduled(), CUSTOMER)
        history.next_task()
        service.workflow_tasks.put_nowait(history.task(b"wf-2"))
        await service.wait_for(lambda: len(service.requests("RespondWorkflowTaskCompleted")) == 2)

    second = service.requests("RespondWorkflowTaskCompleted")[1]
    (command,) = second.commands
    result = command.complete_workflow_execution.result
    assert default_converter.from_payloads(result) == [{"customer": CUSTOMER}]
    assert constructed() == 1


async def test_without_a_cache_every_task_replays_the_history(service, client, constructed):
    history = History().start({"email": "ada@example.com"})

    async with Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding], max_cached_workflows=0):
        service.workflow_tasks.put_nowait(history.task(b"wf-1"))
        await service.wait_for(lambda: len(service.requests("RespondWorkflowTaskCompleted")) == 1)
        history.last_task_completed()
        history.activity_completed(history.activity_scheduled(), CUSTOMER)
        history.next_task()
        service.workflow_tasks.put_nowait(history.task(b"wf-2"))
        await service.wait_for(lambda: len(service.requests("RespondWorkflowTaskCompleted")) == 2)

    (command,) = service.requests("RespondWorkflowTaskCompleted")[1].commands
    assert default_converter.from_payloads(command.complete_workflow_execution.result) == [{"customer": CUSTOMER}]
    assert constructed() == 2


async def test_a_history_that_does_not_continue_the_cached_instance_is_replayed(service, client, constructed):
    history = History().start({"email": "ada@example.com"})

    async with Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding]):
        service.workflow_tasks.put_nowait(history.task(b"wf-1"))
        await service.wait_for(lambda: len(service.requests("RespondWorkflowTaskCompleted")) == 1)
        # The completion came too late: the server timed the task out and retried it.
        history.add("WorkflowTaskTimedOut", timeout_type="START_TO_CLOSE")
        history.next_task()
        service.workflow_tasks.put_nowait(history.task(b"wf-2"))
        await service.wait_for(lambda: len(service.requests("RespondWorkflowTaskCompleted")) == 2)

    assert _command_kinds(service.requests("RespondWorkflowTaskCompleted")[1]) == ["schedule_activity_task"]
    assert service.requests("RespondWorkflowTaskFailed") == []
    assert constructed() == 2


async def test_a_task_re_leased_after_a_rejected_completion_is_replayed(service, client, constructed):
    history = History().start({"email": "ada@example.com"})
    service.lease_lost.add(b"wf-1")

    async with Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding]):
        service.workflow_tasks.put_nowait(history.task(b"wf-1"))
        await service.wait_for(lambda: len(service.requests("RespondWorkflowTaskCompleted")) == 1)
        service.workflow_tasks.put_nowait(history.task(b"wf-2"))  # the same task, re-leased
        await service.wait_for(lambda: len(service.requests("RespondWorkflowTaskCompleted")) == 2)

    assert constructed() == 2


async def test_an_unknown_workflow_type_fails_the_task_and_names_what_is_registered(service, client):
    service.workflow_tasks.put_nowait(History().start({}).task(b"wf-1", workflow_type="Billing"))

    async with Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding]):
        await service.wait_for(lambda: service.requests("RespondWorkflowTaskFailed"))

    (failed,) = service.requests("RespondWorkflowTaskFailed")
    assert failed.cause == pb.WORKFLOW_TASK_FAILED_CAUSE_UNKNOWN_WORKFLOW_TYPE
    assert failed.failure.message == (
        "workflow type 'Billing' is not registered on this worker (task queue 'onboarding'; registered: Onboarding)"
    )


async def test_non_determinism_fails_the_task_with_its_cause(service, client):
    history = History().start({})
    history.last_task_completed()
    history.activity_completed(history.activity_scheduled("send_mail"), None)
    history.next_task()
    service.workflow_tasks.put_nowait(history.task(b"wf-1"))

    async with Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding]):
        await service.wait_for(lambda: service.requests("RespondWorkflowTaskFailed"))

    (failed,) = service.requests("RespondWorkflowTaskFailed")
    assert failed.cause == pb.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR
    assert failed.failure.type == "NonDeterminismError"
    assert "send_mail" in failed.failure.message


async def test_reading_the_clock_in_workflow_code_is_caught_on_the_worker(service, client):
    @workflow.defn(name="Onboarding")
    class ReadsTheClock:
        @workflow.run
        async def run(self, req: dict) -> float:
            return time.time()

    service.workflow_tasks.put_nowait(History().start({}).task(b"wf-1"))

    async with Worker(client, task_queue=TASK_QUEUE, workflows=[ReadsTheClock]):
        await service.wait_for(lambda: service.requests("RespondWorkflowTaskFailed"))

    (failed,) = service.requests("RespondWorkflowTaskFailed")
    assert failed.cause == pb.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR
    assert "time.time()" in failed.failure.message


async def test_a_bug_in_workflow_code_fails_the_task_not_the_workflow(service, client):
    history = History().start({"crash": True})
    history.last_task_completed()
    history.activity_completed(history.activity_scheduled(), CUSTOMER)
    history.next_task()
    service.workflow_tasks.put_nowait(history.task(b"wf-1"))

    async with Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding]):
        await service.wait_for(lambda: service.requests("RespondWorkflowTaskFailed"))

    (failed,) = service.requests("RespondWorkflowTaskFailed")
    assert failed.cause == pb.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE
    assert (failed.failure.type, failed.failure.message) == ("KeyError", "'a bug in the workflow'")
    assert service.requests("RespondWorkflowTaskCompleted") == []


async def test_commands_the_server_refuses_fail_the_task_with_its_reason(service, client):
    service.refused_completions[b"wf-1"] = "input of activity 1 is 3.0 MiB; the limit is 2 MiB"
    service.workflow_tasks.put_nowait(History().start({}).task(b"wf-1"))

    async with Worker(client, task_queue=TASK_QUEUE, workflows=[Onboarding]):
        await service.wait_for(lambda: service.requests("RespondWorkflowTaskFailed"))

    (failed,) = service.requests("RespondWorkflowTaskFailed")
    assert failed.cause == pb.WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND
    assert "3.0 MiB; the limit is 2 MiB" in failed.failure.message


# -- shutdown ------------------------------------------------------------------------


async def test_shutdown_lets_running_activities_finish_within_the_timeout(service, client):
    started = asyncio.Event()
    finish = asyncio.Event()

    @activity.defn
    async def short_job() -> str:
        started.set()
        await finish.wait()
        return "done"

    worker = Worker(
        client,
        task_queue=TASK_QUEUE,
        activities=[short_job],
        graceful_shutdown_timeout=timedelta(seconds=5),
    )
    async with worker:
        service.activity_tasks.put_nowait(activity_task(b"a-1", "short_job"))
        await asyncio.wait_for(started.wait(), timeout=5)
        shutdown = asyncio.create_task(worker.shutdown())
        for _ in range(20):
            await asyncio.sleep(0)  # let the shutdown run as far as it can
        assert not shutdown.done()  # it waits for the activity
        finish.set()
        await shutdown

    ((rpc, request),) = service.reports()
    assert rpc == "RespondActivityTaskCompleted"
    assert default_converter.from_payloads(request.result) == ["done"]


async def test_shutdown_cancels_activities_still_running_after_the_timeout(service, client):
    loop = asyncio.get_running_loop()
    both_started = threading.Barrier(3)  # the two activities and the test
    sync_returned = threading.Event()
    observed = {}

    @activity.defn
    async def stubborn_async() -> None:
        await loop.run_in_executor(None, both_started.wait, 5)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            observed["async"] = activity.is_cancelled()
            raise

    @activity.defn
    def stubborn_sync() -> None:
        both_started.wait(5)
        deadline = time.monotonic() + 5
        while not activity.is_cancelled() and time.monotonic() < deadline:
            time.sleep(0.005)  # the activity's "work"
        observed["sync"] = activity.is_cancelled()
        sync_returned.set()

    worker = Worker(
        client,
        task_queue=TASK_QUEUE,
        activities=[stubborn_async, stubborn_sync],
        graceful_shutdown_timeout=timedelta(milliseconds=100),
    )
    async with worker:
        service.activity_tasks.put_nowait(activity_task(b"a-1", "stubborn_async"))
        service.activity_tasks.put_nowait(activity_task(b"a-2", "stubborn_sync"))
        await loop.run_in_executor(None, both_started.wait, 5)

    failures = {r.task_token: r.failure for r in service.requests("RespondActivityTaskFailed")}
    assert set(failures) == {b"a-1", b"a-2"}
    for failure in failures.values():
        assert failure.type == "CancelledError"
        assert "shutting down" in failure.message
    assert await loop.run_in_executor(None, sync_returned.wait, 5)
    assert observed == {"async": True, "sync": True}


async def test_shutdown_abandons_workflow_tasks_still_running_after_the_timeout(service, client):
    entered = threading.Event()
    release = threading.Event()

    @workflow.defn(name="Onboarding")
    class Stuck:
        @workflow.run
        async def run(self, req: dict) -> None:
            entered.set()
            release.wait(5)  # blocks the activation thread, like a CPU-bound bug

    loop = asyncio.get_running_loop()
    worker = Worker(
        client,
        task_queue=TASK_QUEUE,
        workflows=[Stuck],
        graceful_shutdown_timeout=timedelta(milliseconds=100),
    )
    try:
        async with worker:
            service.workflow_tasks.put_nowait(History().start({}).task(b"wf-1"))
            assert await loop.run_in_executor(None, entered.wait, 5)
    finally:
        release.set()

    # Not reported: the server's workflow task timeout hands it to another worker.
    assert service.reports() == []


# -- lifecycle -----------------------------------------------------------------------


@pytest.mark.parametrize("shutdown_signal", [signal.SIGTERM, signal.SIGINT])
async def test_run_drains_on_a_signal_and_restores_the_previous_handler(service, client, shutdown_signal):
    # Signal handlers can only be installed in the main thread; without one the
    # signal below would end the test session.
    assert threading.current_thread() is threading.main_thread()
    handler_before = signal.getsignal(shutdown_signal)
    worker = Worker(client, task_queue=TASK_QUEUE, activities=[create_customer])

    running = asyncio.create_task(worker.run())
    await service.wait_for(lambda: service.requests("PollActivityTaskQueue"))
    os.kill(os.getpid(), shutdown_signal)

    await asyncio.wait_for(running, timeout=5)
    assert signal.getsignal(shutdown_signal) == handler_before


async def test_shutdown_ends_run_and_is_idempotent(service, client):
    worker = Worker(client, task_queue=TASK_QUEUE, activities=[create_customer])
    running = asyncio.create_task(worker.run())
    await service.wait_for(lambda: service.requests("PollActivityTaskQueue"))

    await asyncio.gather(worker.shutdown(), worker.shutdown())
    await asyncio.wait_for(running, timeout=5)
    await worker.shutdown()

    with pytest.raises(RuntimeError, match="only be started once"):
        await worker.run()


async def test_shutdown_before_start_does_nothing(client):
    await Worker(client, task_queue=TASK_QUEUE, activities=[create_customer]).shutdown()
