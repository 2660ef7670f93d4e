"""The limits on what a caller sends, checked without a server (docs/security.md, "Limits and quotas").

- JSON a caller sends nests at most MAX_JSON_DEPTH levels; deeper is a clear ValueError,
  never a RecursionError from inside the parser.
- Event filter conditions parse in linear time (no regex backtracking on long runs of spaces).
- A visibility query over its cost budget is refused before it reaches a store.
- The well-formedness walk of every request refuses non-finite numbers, negative or
  over-long durations, out-of-range timestamps and over-long strings, naming the field.
"""

from __future__ import annotations

import time
from typing import Any

import grpc
import pytest

from flowforge._json_depth import MAX_JSON_DEPTH, JSONTooDeep, loads_bounded
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.errors import InvalidArgument
from flowforge.server.events import parse_condition
from flowforge.server.frontend.malformed import MAX_DURATION_S, MAX_STRING_CHARS, MalformedRequests, ill_formed
from flowforge.server.visibility import QUERY_COST_BUDGET, compile_query


def test_json_nesting_is_bounded_with_a_clear_error() -> None:
    assert loads_bounded("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None
    assert loads_bounded('["' + "[" * 10_000 + '"]') == ["[" * 10_000]  # brackets inside a string do not nest
    for deep in ("[" * 100_000 + "]" * 100_000, '{"a":' * 1000 + "1" + "}" * 1000):
        with pytest.raises(JSONTooDeep, match=f"deeper than {MAX_JSON_DEPTH} levels"):
            loads_bounded(deep)


def test_filter_conditions_parse_in_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from flowforge.server import events

    with pytest.raises(InvalidArgument, match="the limit is 4096"):
        parse_condition("data.x == " + "1" * 5000)
    monkeypatch.setattr(events, "MAX_CONDITION_LENGTH", 10**6)  # the parser itself, on long input
    assert parse_condition('data.currency == "EUR"  ').value == "EUR"
    assert parse_condition('data.region in ["eu", "us"]').op == "in"
    began = time.monotonic()
    for hostile in ("data.x == 1" + " " * 60_000 + "x", "data.x ==" + " " * 60_000, "data.x == " + "[" * 60_000):
        with pytest.raises(InvalidArgument):
            parse_condition(hostile)
    assert time.monotonic() - began < 2.0


def test_visibility_queries_have_a_cost_budget() -> None:
    cheap = " OR ".join(["WorkflowType = 'x'"] * QUERY_COST_BUDGET)
    compile_query(cheap, "default", {})
    with pytest.raises(InvalidArgument, match="too expensive"):
        compile_query(cheap + " OR WorkflowType = 'y'", "default", {})
    with pytest.raises(InvalidArgument, match="too expensive"):
        compile_query(" OR ".join(["Region = 'eu'"] * (QUERY_COST_BUDGET // 4 + 1)), "default", {"Region": "KEYWORD"})


def test_ill_formed_requests_name_the_field() -> None:
    good = pb.StartWorkflowExecutionRequest(namespace="default", workflow_id="w", workflow_type="t", task_queue="q")
    good.workflow_execution_timeout.FromSeconds(3600)
    assert ill_formed(good) is None
    negative = pb.StartWorkflowExecutionRequest()
    negative.workflow_run_timeout.FromSeconds(-1)
    assert ill_formed(negative) == "workflow_run_timeout must not be negative"
    too_long = pb.StartWorkflowExecutionRequest()
    too_long.workflow_task_timeout.FromSeconds(MAX_DURATION_S + 1)
    assert "longer than the limit" in (ill_formed(too_long) or "")
    assert "characters long" in (
        ill_formed(pb.TerminateWorkflowExecutionRequest(reason="r" * (MAX_STRING_CHARS + 1))) or ""
    )
    completion = pb.RespondWorkflowTaskCompletedRequest(
        commands=[
            command_pb2.Command(
                schedule_activity_task=command_pb2.ScheduleActivityTaskCommandAttributes(
                    retry_policy=common_pb2.RetryPolicy(backoff_coefficient=float("nan"))
                )
            )
        ]
    )
    assert (
        ill_formed(completion)
        == "commands[0].schedule_activity_task.retry_policy.backoff_coefficient must be a finite number"
    )
    stamp = pb.PatchScheduleRequest()
    stamp.backfills.add().start_time.nanos = 2**31 - 1
    assert "not a valid timestamp" in (ill_formed(stamp) or "")


def test_commands_retry_policies_reasons_and_metadata_are_bounded() -> None:
    from flowforge.server.frontend.validation import MAX_TEXT, text
    from flowforge.server.history.command_validation import MAX_COMMANDS_PER_COMPLETION, CommandValidator
    from flowforge.server.history.input_checks import check_payloads

    validator = CommandValidator(max_payload_bytes=1024)

    def activity(retry: common_pb2.RetryPolicy) -> command_pb2.Command:
        attributes = command_pb2.ScheduleActivityTaskCommandAttributes(activity_id="a", activity_type="t")
        attributes.start_to_close_timeout.FromSeconds(5)
        attributes.retry_policy.CopyFrom(retry)
        return command_pb2.Command(schedule_activity_task=attributes)

    validator.validate([activity(common_pb2.RetryPolicy(backoff_coefficient=1.0))])
    for bad, words in (
        (common_pb2.RetryPolicy(backoff_coefficient=0.5), "at least 1"),
        (common_pb2.RetryPolicy(maximum_attempts=-1), "must not be negative"),
        (common_pb2.RetryPolicy(non_retryable_error_types=["E"] * 101), "the limit is 100"),
    ):
        with pytest.raises(InvalidArgument, match=words):
            validator.validate([activity(bad)])
    shrinking = common_pb2.RetryPolicy()
    shrinking.initial_interval.FromSeconds(10)
    shrinking.maximum_interval.FromSeconds(1)
    with pytest.raises(InvalidArgument, match="maximum_interval"):
        validator.validate([activity(shrinking)])
    timer = command_pb2.Command(start_timer=command_pb2.StartTimerCommandAttributes(timer_id="t"))
    timer.start_timer.start_to_fire_timeout.FromSeconds(1)
    with pytest.raises(InvalidArgument, match=f"the limit is {MAX_COMMANDS_PER_COMPLETION}"):
        validator.validate([timer] * (MAX_COMMANDS_PER_COMPLETION + 1))
    with pytest.raises(InvalidArgument, match=f"the limit is {MAX_TEXT}"):
        text("r" * (MAX_TEXT + 1), "reason")
    # Metadata counts, keys included: a tiny value with a 2 KiB metadata key is over 1 KiB.
    heavy = common_pb2.Payloads(payloads=[common_pb2.Payload(data=b"1", metadata={"k" * 2048: b""})])
    with pytest.raises(InvalidArgument, match="payload limit"):
        check_payloads(heavy, "the input", 1024)


async def test_the_interceptor_checks_requests_from_their_bytes_strings_only_when_long_enough() -> None:
    """The deserializer the interceptor installs refuses what no field may hold, from
    the bytes on the wire: a short encoding cannot hold an over-long string (so none
    is looked for), yet its non-finite numbers and bad durations are still refused,
    deep in a command; a long one is checked for strings too, map keys included."""

    async def behavior(request: Any, context: Any) -> None:
        return None

    handler = grpc.unary_unary_rpc_method_handler(
        behavior,
        request_deserializer=pb.RespondWorkflowTaskCompletedRequest.FromString,
        response_serializer=pb.RespondWorkflowTaskCompletedResponse.SerializeToString,
    )

    class Details(grpc.HandlerCallDetails):
        method = "/flowforge.api.v1.WorkflowService/RespondWorkflowTaskCompleted"
        invocation_metadata = ()

    async def continuation(details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[Any, Any]:
        return handler

    wrapped = await MalformedRequests().intercept_service(continuation, Details())
    assert wrapped is not None and wrapped.request_deserializer is not None
    deserialize = wrapped.request_deserializer

    def refusal(request: pb.RespondWorkflowTaskCompletedRequest) -> str | None:
        decoded = deserialize(request.SerializeToString())
        return getattr(decoded, "reason", None)

    def schedule(**changes: Any) -> command_pb2.Command:
        return command_pb2.Command(
            schedule_activity_task=command_pb2.ScheduleActivityTaskCommandAttributes(activity_id="a", **changes)
        )

    fine = pb.RespondWorkflowTaskCompletedRequest(namespace="default", commands=[schedule(), schedule()])
    assert refusal(fine) is None
    nan = pb.RespondWorkflowTaskCompletedRequest(
        commands=[schedule(), schedule(retry_policy=common_pb2.RetryPolicy(backoff_coefficient=float("inf")))]
    )
    assert refusal(nan) == "commands[1].schedule_activity_task.retry_policy.backoff_coefficient must be a finite number"
    negative = pb.RespondWorkflowTaskCompletedRequest(commands=[schedule()])
    negative.commands[0].schedule_activity_task.start_to_close_timeout.FromSeconds(-5)
    assert refusal(negative) == "commands[0].schedule_activity_task.start_to_close_timeout must not be negative"
    long_key = pb.RespondWorkflowTaskCompletedRequest(commands=[schedule()])
    payload = long_key.commands[0].schedule_activity_task.input.payloads.add()
    payload.metadata["k" * (MAX_STRING_CHARS + 1)] = b"v"
    assert "has a key of" in (refusal(long_key) or "")
    long_string = pb.RespondWorkflowTaskCompletedRequest(identity="i" * (MAX_STRING_CHARS + 1))
    assert refusal(long_string) == (
        f"identity is {MAX_STRING_CHARS + 1} characters long; no field may exceed {MAX_STRING_CHARS}"
    )
