"""A PayloadCodec is applied to every payload of a message, wherever it is nested."""

from __future__ import annotations

import json
from collections.abc import Sequence

from flowforge._codec import decode_message, encode_message
from flowforge.api.v1 import command_pb2, common_pb2, workflow_service_pb2
from flowforge.converter import PayloadCodec, default_converter, message_to_json_dict

MARK = b"test/reversed"


class ReversingCodec(PayloadCodec):
    async def encode(self, payloads: Sequence[common_pb2.Payload]) -> list[common_pb2.Payload]:
        return [common_pb2.Payload(metadata={"encoding": MARK}, data=p.SerializeToString()[::-1]) for p in payloads]

    async def decode(self, payloads: Sequence[common_pb2.Payload]) -> list[common_pb2.Payload]:
        return [common_pb2.Payload.FromString(p.data[::-1]) for p in payloads]


def _payloads(*values: object) -> common_pb2.Payloads:
    return default_converter.to_payloads(values)


def _completion() -> workflow_service_pb2.RespondWorkflowTaskCompletedRequest:
    failure = common_pb2.Failure(message="plain message", details=_payloads("failure detail"))
    return workflow_service_pb2.RespondWorkflowTaskCompletedRequest(
        commands=[
            command_pb2.Command(
                schedule_activity_task=command_pb2.ScheduleActivityTaskCommandAttributes(
                    activity_id="1", activity_type="a", input=_payloads({"card": "4111"}, 2)
                )
            ),
            command_pb2.Command(
                record_marker=command_pb2.RecordMarkerCommandAttributes(
                    marker_name="patch", details={"patch_id": _payloads("p1")}
                )
            ),
            command_pb2.Command(
                fail_workflow_execution=command_pb2.FailWorkflowExecutionCommandAttributes(failure=failure)
            ),
        ]
    )


def _all_payloads(message: object) -> list[common_pb2.Payload]:
    found: list[common_pb2.Payload] = []

    def visit(value: object) -> None:
        if isinstance(value, common_pb2.Payload):
            found.append(value)
            return
        for field, item in getattr(value, "ListFields", list)():
            items = item.values() if hasattr(item, "values") else item if field.is_repeated else [item]
            for sub in items:
                visit(sub)

    visit(message)
    return found


async def test_every_payload_of_a_request_is_encoded_and_the_original_is_left_alone() -> None:
    original = _completion()
    encoded = await encode_message(original, ReversingCodec())

    payloads = _all_payloads(encoded)
    assert len(payloads) == 4  # two activity arguments, the marker detail, the failure detail
    assert {p.metadata["encoding"] for p in payloads} == {MARK}
    assert encoded.commands[2].fail_workflow_execution.failure.message == "plain message"
    assert original == _completion()
    assert await decode_message(encoded, ReversingCodec()) == original


async def test_payloads_inside_history_event_attributes_are_decoded_memo_too_but_search_attributes_not() -> None:
    sealed = await encode_message(_payloads("result"), ReversingCodec())
    searchable = message_to_json_dict(_payloads("Gold"))
    sealed_memo = await encode_message(
        common_pb2.Memo(fields={"note": default_converter.to_payload("hi")}), ReversingCodec()
    )
    attributes = {
        "result": message_to_json_dict(sealed),
        "memo": message_to_json_dict(sealed_memo),
        "search_attributes": {"Tier": searchable},
        "n": 3,
    }
    event = common_pb2.HistoryEvent(event_id=7, event_type="X", attributes_json=json.dumps(attributes))
    response = workflow_service_pb2.GetWorkflowExecutionHistoryResponse(events=[event])

    decoded = await decode_message(response, ReversingCodec())

    decoded_attributes = json.loads(decoded.events[0].attributes_json)
    assert decoded_attributes["result"] == message_to_json_dict(_payloads("result"))
    assert decoded_attributes["memo"] == {"fields": {"note": message_to_json_dict(default_converter.to_payload("hi"))}}
    assert decoded_attributes["search_attributes"] == {"Tier": searchable}
    assert decoded_attributes["n"] == 3


def _failure_chain() -> common_pb2.Failure:
    return common_pb2.Failure(
        message="card 4111 declined",
        stack_trace="Traceback: ...",
        type="Declined",
        cause=common_pb2.Failure(message="issuer said no", stack_trace="Traceback: inner"),
    )


async def test_failure_attributes_are_encoded_only_when_asked_and_always_restored() -> None:
    request = workflow_service_pb2.RespondWorkflowTaskFailedRequest(failure=_failure_chain())

    plain = await encode_message(request, ReversingCodec())
    hidden = await encode_message(request, ReversingCodec(), encode_failure_attributes=True)

    assert plain.failure.message == "card 4111 declined" and not plain.failure.HasField("encoded_attributes")
    for failure in (hidden.failure, hidden.failure.cause):
        assert (failure.message, failure.stack_trace) == ("Encoded failure", "")
        assert failure.encoded_attributes.metadata["encoding"] == MARK
    assert hidden.failure.type == "Declined"  # the type stays readable
    assert await decode_message(hidden, ReversingCodec()) == request


async def test_encoded_failure_attributes_in_history_are_restored_keeping_what_the_server_added() -> None:
    hidden = await encode_message(
        workflow_service_pb2.RespondWorkflowTaskFailedRequest(failure=_failure_chain()),
        ReversingCodec(),
        encode_failure_attributes=True,
    )
    stored = message_to_json_dict(hidden.failure)
    stored["message"] = f"[NON_DETERMINISTIC_ERROR] {stored['message']}"
    event = common_pb2.HistoryEvent(
        event_id=9, event_type="WorkflowTaskFailed", attributes_json=json.dumps({"failure": stored})
    )

    decoded = await decode_message(event, ReversingCodec())

    failure = json.loads(decoded.attributes_json)["failure"]
    assert failure["message"] == "[NON_DETERMINISTIC_ERROR] card 4111 declined"
    assert failure["stack_trace"] == "Traceback: ..."
    assert failure["cause"]["message"] == "issuer said no" and "encoded_attributes" not in failure["cause"]
