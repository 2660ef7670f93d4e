"""Turning values into payloads and errors into failures, and back.

The default converter writes JSON (``json/plain``): dataclasses are written as
objects and rebuilt from the parameter's type hint, ``None`` is ``binary/null``
and ``bytes`` are ``binary/plain``.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import traceback
import typing
from typing import Any, Iterable, Optional, Sequence

from google.protobuf import json_format

from flowforge import exceptions
from flowforge.api.v1 import common_pb2

__all__ = [
    "DataConverter",
    "default_converter",
    "failure_to_error",
    "error_to_failure",
    "message_to_json_dict",
    "json_dict_to_message",
]

_ENCODING = "encoding"
_JSON = b"json/plain"
_NULL = b"binary/null"
_BINARY = b"binary/plain"


def _json_default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"value of type {type(value).__name__} is not JSON serializable")


def _from_json_value(value: Any, hint: Any) -> Any:
    """Rebuilds dataclasses (also nested, and in lists) from decoded JSON."""
    if hint is None or hint is Any or value is None:
        return value
    if dataclasses.is_dataclass(hint) and isinstance(value, dict):
        hints = typing.get_type_hints(hint)
        fields = {f.name for f in dataclasses.fields(hint)}
        return hint(**{k: _from_json_value(v, hints.get(k)) for k, v in value.items() if k in fields})
    origin = typing.get_origin(hint)
    if origin in (list, Sequence) and isinstance(value, list):
        (item_hint,) = typing.get_args(hint) or (None,)
        return [_from_json_value(v, item_hint) for v in value]
    if hint is datetime.datetime and isinstance(value, str):
        return datetime.datetime.fromisoformat(value)
    return value


class DataConverter:
    """Converts values to :class:`Payload` messages and back (JSON by default)."""

    def to_payload(self, value: Any) -> common_pb2.Payload:
        """Serializes one value."""
        if value is None:
            return common_pb2.Payload(metadata={_ENCODING: _NULL})
        if isinstance(value, bytes):
            return common_pb2.Payload(metadata={_ENCODING: _BINARY}, data=value)
        data = json.dumps(value, default=_json_default, separators=(",", ":"), sort_keys=True)
        return common_pb2.Payload(metadata={_ENCODING: _JSON}, data=data.encode())

    def from_payload(self, payload: common_pb2.Payload, type_hint: Any = None) -> Any:
        """Deserializes one value, rebuilding dataclasses named by ``type_hint``."""
        encoding = payload.metadata.get(_ENCODING, _JSON)
        if encoding == _NULL:
            return None
        if encoding == _BINARY:
            return payload.data
        if encoding != _JSON:
            raise ValueError(f"unknown payload encoding {encoding!r}")
        return _from_json_value(json.loads(payload.data), type_hint)

    def to_payloads(self, values: Iterable[Any]) -> common_pb2.Payloads:
        """Serializes a list of values (e.g. call arguments)."""
        return common_pb2.Payloads(payloads=[self.to_payload(v) for v in values])

    def from_payloads(
        self, payloads: Optional[common_pb2.Payloads], type_hints: Optional[Sequence[Any]] = None
    ) -> list[Any]:
        """Deserializes a list of values; missing hints mean plain JSON values."""
        if payloads is None:
            return []
        hints = list(type_hints or [])
        return [
            self.from_payload(p, hints[i] if i < len(hints) else None)
            for i, p in enumerate(payloads.payloads)
        ]


default_converter = DataConverter()


def message_to_json_dict(message: Any) -> dict:
    """Protobuf message -> JSON-ready dict with snake_case keys (history attributes)."""
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def json_dict_to_message(value: Optional[dict], message_type: type) -> Any:
    """Inverse of :func:`message_to_json_dict`; ``None`` gives an empty message."""
    return json_format.ParseDict(value or {}, message_type(), ignore_unknown_fields=True)


def error_to_failure(
    error: BaseException, converter: DataConverter = default_converter, source: str = "worker"
) -> common_pb2.Failure:
    """Serializes an exception (and its cause chain) into a Failure."""
    failure = common_pb2.Failure(
        message=str(error) if not isinstance(error, exceptions.FlowForgeError) else error.message,
        source=source,
        stack_trace="".join(traceback.format_exception(error.__class__, error, error.__traceback__)),
    )
    if isinstance(error, exceptions.ApplicationError):
        failure.type = error.type
        failure.non_retryable = error.non_retryable
        if error.details:
            failure.details.CopyFrom(converter.to_payloads(error.details))
    elif isinstance(error, exceptions.TimeoutError):
        failure.type = "TimeoutError"
        if error.type is not None:
            failure.timeout_type = error.type.value
        if error.last_heartbeat_details:
            failure.details.CopyFrom(converter.to_payloads(error.last_heartbeat_details))
    elif isinstance(error, exceptions.CancelledError):
        failure.type = "CancelledError"
        if error.details:
            failure.details.CopyFrom(converter.to_payloads(error.details))
    elif isinstance(error, exceptions.ActivityError):
        failure.type = "ActivityError"
        failure.activity_failure_info.CopyFrom(
            common_pb2.ActivityFailureInfo(
                activity_type=error.activity_type, activity_id=error.activity_id,
                scheduled_event_id=error.scheduled_event_id, retry_state=error.retry_state.name,
            )
        )
    else:
        failure.type = type(error).__name__
    cause = error.__cause__
    if cause is not None:
        failure.cause.CopyFrom(error_to_failure(cause, converter, source))
    return failure


def failure_to_error(
    failure: common_pb2.Failure, converter: DataConverter = default_converter
) -> exceptions.FailureError:
    """Rebuilds the exception a Failure describes (its cause chain too)."""
    details = converter.from_payloads(failure.details) if failure.HasField("details") else []
    error: exceptions.FailureError
    if failure.type == "TimeoutError":
        timeout_type = (
            exceptions.TimeoutType(failure.timeout_type) if failure.timeout_type else None
        )
        error = exceptions.TimeoutError(
            failure.message, type=timeout_type, last_heartbeat_details=details
        )
    elif failure.type == "CancelledError":
        error = exceptions.CancelledError(failure.message, *details)
    elif failure.type == "TerminatedError":
        error = exceptions.TerminatedError(failure.message)
    elif failure.type == "ActivityError":
        info = failure.activity_failure_info
        error = exceptions.ActivityError(
            failure.message, activity_type=info.activity_type, activity_id=info.activity_id,
            scheduled_event_id=info.scheduled_event_id,
            retry_state=exceptions.RetryState.__members__.get(info.retry_state, exceptions.RetryState.UNSPECIFIED),
        )
    else:
        error = exceptions.ApplicationError(
            failure.message, *details, type=failure.type or None, non_retryable=failure.non_retryable
        )
    if failure.HasField("cause"):
        error.__cause__ = failure_to_error(failure.cause, converter)
    return error
