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

import pytest

from flowforge._json_depth import MAX_JSON_DEPTH, JSONTooDeep, loads_bounded
from flowforge.api.v1 import command_pb2, common_pb2
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.errors import InvalidArgument
from flowforge.server.events import parse_condition
from flowforge.server.frontend.malformed import MAX_DURATION_S, MAX_STRING_CHARS, ill_formed
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
