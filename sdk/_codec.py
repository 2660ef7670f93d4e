"""Applies a :class:`~flowforge.converter.PayloadCodec` to every payload of a message.

The client's RPC layer runs each request through :func:`encode_message` before
it leaves the process and each response through :func:`decode_message`, so
everything the client and its workers send or receive over the wire — present
RPCs and ones added later — is covered by one place. History events carry their
payloads inside ``attributes_json`` in their protobuf JSON form (a
``{"payloads": [...]}`` object); those are decoded there.

Search attributes are left as they are: the server indexes them, so they are
never encoded (as in Temporal). Failure messages and stack traces are encoded
only when the converter asks for it (``encode_failure_attributes``): they move
into the failure's ``encoded_attributes`` payload, and decoding puts them back.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message

from flowforge.api.v1 import common_pb2
from flowforge.converter import PayloadCodec, default_converter
from flowforge.storage import PayloadStorageError

__all__ = ["ENCODED_FAILURE_MESSAGE", "UndecodableResponse", "decode_message", "encode_message"]

_MessageType = TypeVar("_MessageType", bound=Message)
_Transform = Callable[[Sequence[common_pb2.Payload]], Awaitable[list[common_pb2.Payload]]]

# Fields (proto) and keys (history JSON) whose payloads the server must read.
_NOT_ENCODED = frozenset({"search_attributes"})

ENCODED_FAILURE_MESSAGE = "Encoded failure"
"""What the server sees as the message of a failure whose attributes are encoded."""


class UndecodableResponse(Exception):
    """The codec failed to decode a response (e.g. a worker without the right key),
    or payload storage could not give back a referenced payload.

    Attributes:
        response: The response as the server sent it; a poll response still
            carries its task token, so the worker can fail the task visibly.
        failure_type: The type a worker reports the task's failure with:
            ``PayloadStorageError`` or ``PayloadCodecError``.
    """

    def __init__(self, rpc: str, response: Message, cause: BaseException) -> None:
        if isinstance(cause, PayloadStorageError):
            # Its message names the reference and never quotes payload data.
            message = f"payload storage could not resolve the {rpc} response: {cause}"
            self.failure_type = "PayloadStorageError"
        else:
            # Only the error's type: its message may quote the bytes it could not decode.
            message = f"the payload codec could not decode the {rpc} response ({type(cause).__name__})"
            self.failure_type = "PayloadCodecError"
        super().__init__(message)
        self.response = response


async def encode_message(
    message: _MessageType, codec: PayloadCodec, *, encode_failure_attributes: bool = False
) -> _MessageType:
    """A copy of ``message`` with every payload encoded (the message is left as it is).

    With ``encode_failure_attributes``, each failure's message and stack trace are
    moved into its ``encoded_attributes`` payload first.
    """
    encoded = type(message)()
    encoded.CopyFrom(message)
    await _visit(encoded, _checked(codec.encode, "encode"), hide_failure_attributes=encode_failure_attributes)
    return encoded


async def decode_message(message: _MessageType, codec: PayloadCodec) -> _MessageType:
    """Decodes every payload of ``message`` in place, history event attributes and
    encoded failure attributes included."""
    await _visit(message, _checked(codec.decode, "decode"), hide_failure_attributes=False)
    return message


def _checked(transform: _Transform, name: str) -> _Transform:
    async def apply(payloads: Sequence[common_pb2.Payload]) -> list[common_pb2.Payload]:
        result = list(await transform(payloads))
        if len(result) != len(payloads):
            raise ValueError(f"PayloadCodec.{name} returned {len(result)} payloads for {len(payloads)}")
        return result

    return apply


async def _visit(message: Message, transform: _Transform, *, hide_failure_attributes: bool) -> None:
    if isinstance(message, common_pb2.Payloads):
        if message.payloads:
            transformed = await transform(list(message.payloads))
            del message.payloads[:]
            message.payloads.extend(transformed)
        return
    if isinstance(message, common_pb2.Payload):
        (single,) = await transform([message])
        message.CopyFrom(single)
        return
    if isinstance(message, common_pb2.HistoryEvent):
        await _visit_event(message, transform)
        return
    failure = message if isinstance(message, common_pb2.Failure) else None
    if failure is not None and hide_failure_attributes and not failure.HasField("encoded_attributes"):
        failure.encoded_attributes.CopyFrom(
            default_converter.to_payload({"message": failure.message, "stack_trace": failure.stack_trace})
        )
        failure.message, failure.stack_trace = ENCODED_FAILURE_MESSAGE, ""
    for field, value in message.ListFields():
        if field.message_type is None or field.name in _NOT_ENCODED:
            continue
        if field.message_type.GetOptions().map_entry:
            if field.message_type.fields_by_name["value"].message_type is not None:
                for item in value.values():
                    await _visit(item, transform, hide_failure_attributes=hide_failure_attributes)
        elif field.is_repeated:
            for item in value:
                await _visit(item, transform, hide_failure_attributes=hide_failure_attributes)
        else:
            await _visit(value, transform, hide_failure_attributes=hide_failure_attributes)
    if failure is not None and not hide_failure_attributes and failure.HasField("encoded_attributes"):
        attributes = default_converter.from_payload(failure.encoded_attributes)
        failure.message = _restored_message(failure.message, attributes)
        failure.stack_trace = attributes.get("stack_trace", "")
        failure.ClearField("encoded_attributes")


async def _visit_event(event: common_pb2.HistoryEvent, transform: _Transform) -> None:
    if not event.attributes_json:
        return
    attributes = json.loads(event.attributes_json)
    transformed = await _visit_json(attributes, transform)
    if transformed != attributes:
        event.attributes_json = json.dumps(transformed, separators=(",", ":"), sort_keys=True)


async def _visit_json(value: Any, transform: _Transform) -> Any:
    if isinstance(value, dict):
        if _is_payloads_json(value):
            payloads = [json_format.ParseDict(item, common_pb2.Payload()) for item in value["payloads"]]
            return {
                "payloads": [
                    json_format.MessageToDict(item, preserving_proto_field_name=True)
                    for item in await transform(payloads)
                ]
            }
        if _is_payload_json(value):  # a single Payload, e.g. a memo field
            (transformed,) = await transform([json_format.ParseDict(value, common_pb2.Payload())])
            return json_format.MessageToDict(transformed, preserving_proto_field_name=True)
        visited = {
            key: item if key in _NOT_ENCODED else await _visit_json(item, transform) for key, item in value.items()
        }
        if _is_payload_json(visited.get("encoded_attributes") or {}):  # a failure, decoded just now
            attributes = default_converter.from_payload(
                json_format.ParseDict(visited.pop("encoded_attributes"), common_pb2.Payload())
            )
            visited["message"] = _restored_message(visited.get("message", ""), attributes)
            visited["stack_trace"] = attributes.get("stack_trace", "")
        return visited
    if isinstance(value, list):
        return [await _visit_json(item, transform) for item in value]
    return value


def _restored_message(shown: str, attributes: dict[str, Any]) -> str:
    """The original message, keeping what the server added around the placeholder
    (e.g. describe()'s "[NON_DETERMINISTIC_ERROR] " prefix)."""
    return shown.replace(ENCODED_FAILURE_MESSAGE, str(attributes.get("message", "")), 1)


def _is_payloads_json(value: dict[str, Any]) -> bool:
    """Whether ``value`` is a ``Payloads`` message in protobuf JSON form."""
    payloads = value.get("payloads")
    return (
        len(value) == 1
        and isinstance(payloads, list)
        and bool(payloads)
        and all(isinstance(item, dict) and _is_payload_json(item) for item in payloads)
    )


def _is_payload_json(value: dict[str, Any]) -> bool:
    """Whether ``value`` is a ``Payload`` message in protobuf JSON form (it has an encoding)."""
    metadata = value.get("metadata")
    return set(value) <= {"metadata", "data"} and isinstance(metadata, dict) and "encoding" in metadata
