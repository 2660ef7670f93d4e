"""The frontend's request validation (server/frontend/validation.py), without a server:
each check returns the typed value or raises INVALID_ARGUMENT naming the field."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import grpc
import pytest
from google.protobuf import duration_pb2

from flowforge.api.schema import ExecutionStatus, WorkflowTaskFailedCause
from flowforge.api.v1 import common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.errors import InvalidArgument
from flowforge.server.frontend import validation
from flowforge.server.stores.rows import ListOrder
from flowforge.server.visibility import page_after


class _Context:
    """The part of a gRPC servicer context the validation reads."""

    def __init__(self, remaining: float | None) -> None:
        self._remaining = remaining

    def time_remaining(self) -> float | None:
        return self._remaining


def _message(call: Callable[..., object], *args: object) -> str:
    with pytest.raises(InvalidArgument) as raised:
        call(*args)
    assert raised.value.status == grpc.StatusCode.INVALID_ARGUMENT
    return raised.value.message


def test_names_are_required_bounded_and_free_of_control_characters() -> None:
    assert validation.name("orders", "task_queue") == "orders"
    assert validation.name("", "identity", required=False) == ""
    assert _message(validation.name, "", "task_queue") == "task_queue is required"
    assert _message(validation.name, "x" * 1001, "workflow_id") == (
        "workflow_id is 1001 characters long; the limit is 1000"
    )
    assert _message(validation.name, "a\nb", "signal_name") == "signal_name must not contain control characters"


def test_an_execution_needs_a_workflow_id_or_a_run_id() -> None:
    request = pb.DescribeWorkflowExecutionRequest(namespace="default")
    assert _message(validation.execution_key, request) == "execution.workflow_id (or execution.run_id) is required"
    request.execution.run_id = "r1"
    assert validation.execution_key(request) == ("default", "", "r1")


def test_a_poll_waits_at_most_600_s_and_ends_before_the_callers_deadline() -> None:
    request = pb.PollActivityTaskQueueRequest(namespace="default", task_queue="q")
    assert validation.poll(request, _Context(None)) == ("default", "q", "", 60.0)
    assert validation.poll(request, _Context(10.0))[3] == 9.0
    request.poll_timeout.CopyFrom(duration_pb2.Duration(seconds=601))
    assert _message(validation.poll, request, _Context(None)) == "poll_timeout may be at most 600s"
    request.poll_timeout.CopyFrom(duration_pb2.Duration(seconds=-1))
    assert _message(validation.poll, request, _Context(None)) == "poll_timeout must not be negative"


def test_a_query_waits_30_s_without_a_deadline_and_until_just_before_one() -> None:
    assert validation.query_timeout(_Context(None)) == 30.0
    assert validation.query_timeout(_Context(5.0)) == 4.0
    assert validation.query_timeout(_Context(0.5)) == 0.0


def test_page_tokens_are_the_ones_a_page_returned() -> None:
    token = base64.urlsafe_b64encode(json.dumps([123, "run"]).encode())
    assert page_after(ListOrder(), token) == (123, "run")
    assert page_after(ListOrder(), b"") is None
    malformed = "next_page_token is malformed; pass back the one the last page returned"
    for bad in (
        b"!!",
        base64.urlsafe_b64encode(b'["x", 1]'),
        base64.urlsafe_b64encode(json.dumps([2**63, "r"]).encode()),
    ):
        assert _message(page_after, ListOrder(), bad) == malformed
    assert _message(validation.text_page_token, b"\xff") == malformed
    assert _message(validation.page_size, 1001) == "page_size must be between 1 and 1000"
    assert validation.page_size(0) == 100


def test_a_list_filters_by_status_name_and_refuses_an_unknown_status() -> None:
    request = pb.ListWorkflowExecutionsRequest(namespace="default", workflow_type="Onboarding")
    request.status = ExecutionStatus.TIMED_OUT.proto
    assert validation.list_filters(request) == {"status": "TIMED_OUT", "workflow_type": "Onboarding"}
    request.status = 99
    assert _message(validation.list_filters, request) == "unknown status 99"


def test_a_workflow_task_failure_cause_is_an_api_cause() -> None:
    number = pb.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR
    assert validation.workflow_task_failed_cause(number) is WorkflowTaskFailedCause.NON_DETERMINISTIC_ERROR
    assert validation.workflow_task_failed_cause(0) is WorkflowTaskFailedCause.UNSPECIFIED
    assert _message(validation.workflow_task_failed_cause, 77) == "cause has an unknown value 77"


def test_a_query_answer_is_a_result_or_an_error() -> None:
    answered = pb.RespondQueryTaskCompletedRequest(completed_type=pb.QUERY_RESULT_TYPE_ANSWERED)
    assert validation.query_answer(answered) == (answered.query_result, None)
    failed = pb.RespondQueryTaskCompletedRequest(completed_type=pb.QUERY_RESULT_TYPE_FAILED, error_message="x" * 5000)
    assert validation.query_answer(failed) == (None, "x" * 4000)
    failed.query_result.payloads.add(data=b"1")
    assert _message(validation.query_answer, failed) == (
        "a FAILED query answer carries an error_message, not a query_result"
    )
    assert _message(validation.query_answer, pb.RespondQueryTaskCompletedRequest()) == (
        "completed_type must be QUERY_RESULT_TYPE_ANSWERED or QUERY_RESULT_TYPE_FAILED"
    )


def test_signal_with_start_needs_the_signal_name_when_it_has_input() -> None:
    request = pb.StartWorkflowExecutionRequest(start_signal_input=common_pb2.Payloads(payloads=[common_pb2.Payload()]))
    assert _message(validation.start_signal, request) == (
        "start_signal_input is set but start_signal (the signal name) is empty"
    )
    assert validation.start_signal(pb.StartWorkflowExecutionRequest()) is None
