"""Turning values into payloads and errors into failures, and back.

The default converter writes JSON (``json/plain``): dataclasses and ``pydantic``
models (when pydantic is installed) are written as objects, datetimes, dates
and UUIDs as strings, enums as their values; ``None`` is ``binary/null`` and
``bytes`` are ``binary/plain``. Reading a payload back, the type hint of the
parameter or return value it is for rebuilds the value: a dataclass in gives a
dataclass out, also nested and inside ``list[...]``, ``dict[str, ...]``,
``Optional[...]`` and unions.

A :class:`PayloadCodec` (compression, encryption, ...) set on the client's
converter transforms every payload on its way to the server and back, in the
client and the worker only: ``Client.connect(..., data_converter=
DataConverter(payload_codec=MyCodec()))``. With ``payload_storage`` (see
:mod:`flowforge.storage`), payloads over ``payload_storage_threshold`` bytes
after the codec are kept in a blob store and travel as references.
See docs/payloads.md.
"""

from __future__ import annotations

import abc
import dataclasses
import datetime
import enum
import json
import sys
import traceback
import types
import typing
import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from flowforge import exceptions
from flowforge.api.schema import json_dict_to_message, message_to_json_dict
from flowforge.api.v1 import common_pb2

if TYPE_CHECKING:
    from flowforge.storage import PayloadStorage

__all__ = [
    "DataConverter",
    "PayloadCodec",
    "default_converter",
    "error_to_failure",
    "failure_to_error",
    "json_dict_to_message",
    "message_to_json_dict",
]

_ENCODING = "encoding"
_JSON = b"json/plain"
_NULL = b"binary/null"
_BINARY = b"binary/plain"
_STORAGE_REFERENCE = b"binary/storage-ref"  # flowforge._claim_check.REFERENCE_ENCODING


def _pydantic_model_class() -> type | None:
    """``pydantic.BaseModel`` if pydantic is loaded, else ``None``.

    pydantic is optional: a program whose payloads contain models has imported it
    already, so the converter never imports it itself.
    """
    pydantic = sys.modules.get("pydantic")
    return getattr(pydantic, "BaseModel", None)


def _json_default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    model_class = _pydantic_model_class()
    if model_class is not None and isinstance(value, model_class):
        return value.model_dump(mode="json")  # type: ignore[attr-defined]
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"value of type {type(value).__name__} is not JSON serializable")


def _payload(encoding: bytes, data: bytes) -> common_pb2.Payload:
    payload = common_pb2.Payload(data=data)
    # Set, not passed as metadata={...}: a map field given to the constructor goes
    # through MutableMapping.update and an ABC isinstance check in Python, three
    # times the cost (and more under the determinism guard, which sees each call).
    payload.metadata[_ENCODING] = encoding
    return payload


# Made once: json.dumps with these arguments builds an encoder on every call.
_JSON_ENCODER = json.JSONEncoder(default=_json_default, separators=(",", ":"), sort_keys=True)

_JSON_DECODER = json.JSONDecoder()


def _json_loads(data: bytes) -> Any:
    """``json.loads(data)``, in fewer calls for the usual UTF-8 text.

    json.loads guesses a bytes text's encoding in Python (a BOM, or zero bytes for
    UTF-16/32); by its rule, text that opens with a nonzero ASCII byte not followed by
    a zero byte is UTF-8, decoded here at once (payloads are decoded in workflow code,
    under the determinism guard, whose hook sees every call: the test makes none).
    """
    if data and 0 < data[0] < 0x80 and data[1:2] != b"\x00":
        return _JSON_DECODER.decode(data.decode("utf-8", "surrogatepass"))
    return json.loads(data)


_UNION_TYPES = (typing.Union, types.UnionType)
_SEQUENCE_ORIGINS = (list, tuple, set, frozenset, Sequence, typing.MutableSequence, typing.AbstractSet)


def _from_json_value(value: Any, hint: Any) -> Any:
    """Rebuilds the value ``hint`` describes from decoded JSON (dataclasses, models, ...).

    Raises:
        TypeError, ValueError: The value does not fit the hint.
    """
    # type(value) is hint: the hint is the JSON value's own type (dict, list, str, ...),
    # which every test below passes through; the common case, decided in one step.
    if type(value) is hint or hint is None or hint is Any or value is None or isinstance(hint, (str, typing.TypeVar)):
        return value
    origin = typing.get_origin(hint)
    if origin in _UNION_TYPES:
        return _from_json_union(value, typing.get_args(hint))
    if origin is typing.Annotated:
        return _from_json_value(value, typing.get_args(hint)[0])
    if dataclasses.is_dataclass(hint) and isinstance(hint, type) and isinstance(value, dict):
        hints = typing.get_type_hints(hint)
        fields = {f.name for f in dataclasses.fields(hint)}
        return hint(**{k: _from_json_value(v, hints.get(k)) for k, v in value.items() if k in fields})
    model_class = _pydantic_model_class()
    if model_class is not None and isinstance(hint, type) and issubclass(hint, model_class):
        return hint.model_validate(value)  # type: ignore[attr-defined]
    if origin in _SEQUENCE_ORIGINS and isinstance(value, list):
        arguments = typing.get_args(hint)
        if origin is tuple and arguments and arguments[-1] is not Ellipsis:
            return tuple(_from_json_value(v, h) for v, h in zip(value, arguments, strict=False))
        items = [_from_json_value(v, arguments[0] if arguments else None) for v in value]
        return items if origin in (list, Sequence, typing.MutableSequence) else origin(items)
    if origin in (dict, typing.Mapping, typing.MutableMapping) and isinstance(value, dict):
        _, value_hint = typing.get_args(hint) or (None, None)
        return {k: _from_json_value(v, value_hint) for k, v in value.items()}
    if isinstance(hint, type) and isinstance(value, str):
        if issubclass(hint, datetime.date):  # datetime.datetime too
            return hint.fromisoformat(value)
        if issubclass(hint, uuid.UUID):
            return hint(value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    return value


def _from_json_union(value: Any, members: Sequence[Any]) -> Any:
    """The first member of a union (``Optional[X]`` is ``X | None``) the value fits."""
    for member in members:
        if member is type(None):
            continue
        try:
            result = _from_json_value(value, member)
        except (TypeError, ValueError):
            continue
        runtime_class = typing.get_origin(member) or member
        if not isinstance(runtime_class, type) or isinstance(result, runtime_class):
            return result
    return value


class PayloadCodec(abc.ABC):
    """Transforms encoded payloads on their way to the server and back, e.g. to
    compress or encrypt them (Temporal's ``PayloadCodec``).

    Set it on the client's converter; the client and the workers using that
    client then encode every payload they send (workflow and activity arguments
    and results, signal arguments, heartbeat details, failure details, markers)
    and decode every payload they receive, so the server only ever stores and
    forwards what :meth:`encode` made. ``decode(encode(p)) == p`` must hold, and
    both must work for payloads of any process using the codec (e.g. every
    worker needs the key).
    """

    @abc.abstractmethod
    async def encode(self, payloads: Sequence[common_pb2.Payload]) -> list[common_pb2.Payload]:
        """Encodes payloads for the server; returns as many as it was given, in order."""

    @abc.abstractmethod
    async def decode(self, payloads: Sequence[common_pb2.Payload]) -> list[common_pb2.Payload]:
        """Reverses :meth:`encode`; returns as many as it was given, in order."""


class DataConverter:
    """Converts values to :class:`Payload` messages and back (JSON by default).

    Args:
        payload_codec: Applied by the client and its workers to every payload
            sent to and received from the server; ``None`` sends payloads as
            the converter wrote them.
        encode_failure_attributes: Also hide failure messages and stack traces
            from the server: each failure's message and stack trace travel in
            one payload encoded with ``payload_codec`` (Temporal's
            ``encode_common_attributes``), and the server sees the message
            "Encoded failure". Clients and workers with the codec see the
            original; the CLI and clients without it see the placeholder.
        payload_storage: Where payloads larger than ``payload_storage_threshold``
            (after the codec) are kept, e.g.
            ``flowforge.storage.FileSystemPayloadStorage(path)``; the history
            then holds a reference (claim-check). Every process reading those
            payloads (clients, workers, the ``Replayer``) needs the same storage.
        payload_storage_threshold: The size in bytes above which a payload is
            stored rather than sent inline.

    Raises:
        ValueError: ``encode_failure_attributes`` without a ``payload_codec``,
            or a threshold that is not positive.
    """

    def __init__(
        self,
        *,
        payload_codec: PayloadCodec | None = None,
        encode_failure_attributes: bool = False,
        payload_storage: PayloadStorage | None = None,
        payload_storage_threshold: int = 64 * 1024,
    ) -> None:
        if encode_failure_attributes and payload_codec is None:
            raise ValueError("encode_failure_attributes needs a payload_codec to encode them with")
        if payload_storage_threshold <= 0:
            raise ValueError(f"payload_storage_threshold must be positive, not {payload_storage_threshold}")
        self._payload_codec = payload_codec
        self._encode_failure_attributes = encode_failure_attributes
        self._payload_storage = payload_storage
        self._payload_storage_threshold = payload_storage_threshold

    @property
    def payload_codec(self) -> PayloadCodec | None:
        """The codec applied between this process and the server, if any."""
        return self._payload_codec

    @property
    def encode_failure_attributes(self) -> bool:
        """Whether failure messages and stack traces are encoded with the codec too."""
        return self._encode_failure_attributes

    @property
    def payload_storage(self) -> PayloadStorage | None:
        """Where payloads over the threshold are kept, if anywhere."""
        return self._payload_storage

    @property
    def payload_storage_threshold(self) -> int:
        """The size in bytes above which a payload goes to :attr:`payload_storage`."""
        return self._payload_storage_threshold

    def to_payload(self, value: Any) -> common_pb2.Payload:
        """Serializes one value."""
        if value is None:
            return _payload(_NULL, b"")
        if isinstance(value, bytes):
            return _payload(_BINARY, value)
        return _payload(_JSON, _JSON_ENCODER.encode(value).encode())

    def from_payload(self, payload: common_pb2.Payload, type_hint: Any = None) -> Any:
        """Deserializes one value, rebuilding dataclasses named by ``type_hint``."""
        encoding = payload.metadata.get(_ENCODING, _JSON)
        if encoding == _NULL:
            return None
        if encoding == _BINARY:
            return payload.data
        if encoding == _STORAGE_REFERENCE:
            raise ValueError(
                "the payload is a payload storage reference: configure the same payload storage in this "
                "process's DataConverter(payload_storage=...) to resolve it"
            )
        if encoding != _JSON:
            raise ValueError(f"unknown payload encoding {encoding!r}")
        return _from_json_value(_json_loads(payload.data), type_hint)

    def to_payloads(self, values: Iterable[Any]) -> common_pb2.Payloads:
        """Serializes a list of values (e.g. call arguments)."""
        # map(), not a comprehension: its frame would be one more call for the determinism
        # guard's hook when workflow code encodes arguments.
        return common_pb2.Payloads(payloads=list(map(self.to_payload, values)))

    def from_payloads(self, payloads: common_pb2.Payloads | None, type_hints: Sequence[Any] | None = None) -> list[Any]:
        """Deserializes a list of values; missing hints mean plain JSON values."""
        if payloads is None:
            return []
        hints = list(type_hints or [])
        return [self.from_payload(p, hints[i] if i < len(hints) else None) for i, p in enumerate(payloads.payloads)]


default_converter = DataConverter()


def error_to_failure(
    error: BaseException, converter: DataConverter = default_converter, source: str = "worker"
) -> common_pb2.Failure:
    """Serializes an exception (and its cause chain) into a Failure."""
    failure = common_pb2.Failure(
        message=str(error) if not isinstance(error, exceptions.FlowForgeError) else error.message,
        source=source,
        stack_trace="".join(traceback.format_exception(error.__class__, error, error.__traceback__)),
    )
    recorded = error.failure if isinstance(error, exceptions.FailureError) else None
    if recorded is not None:
        # Rebuilt from history (e.g. an activity's failure now failing the workflow): keep where
        # it was really raised, on the worker that ran it, not where the SDK re-raised it.
        failure.stack_trace, failure.source = recorded.stack_trace, recorded.source
    if isinstance(error, exceptions.ApplicationError):
        failure.type = error.type
        failure.non_retryable = error.non_retryable
        if error.next_retry_delay is not None:
            failure.next_retry_delay.FromTimedelta(error.next_retry_delay)
        failure.category = typing.cast("common_pb2.ApplicationErrorCategory", error.category.value)
        if error.details:
            failure.details.CopyFrom(converter.to_payloads(error.details))
    elif isinstance(error, exceptions.TimeoutError):
        failure.type = "TimeoutError"
        if error.type is not None:
            # The proto enum's values are the Python enum's (TimeoutType mirrors it).
            failure.timeout_type = typing.cast("common_pb2.TimeoutType", error.type.value)
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
                activity_type=error.activity_type,
                activity_id=error.activity_id,
                scheduled_event_id=error.scheduled_event_id,
                retry_state=error.retry_state.name,
            )
        )
    elif isinstance(error, exceptions.ChildWorkflowError):
        failure.type = "ChildWorkflowError"
        failure.child_workflow_execution_failure_info.CopyFrom(
            common_pb2.ChildWorkflowExecutionFailureInfo(
                namespace=error.namespace,
                workflow_execution=common_pb2.WorkflowExecution(workflow_id=error.workflow_id, run_id=error.run_id),
                workflow_type=error.workflow_type,
                initiated_event_id=error.initiated_event_id,
                started_event_id=error.started_event_id,
                retry_state=error.retry_state.name,
            )
        )
    else:
        failure.type = type(error).__name__
    cause = error.__cause__
    if cause is not None:
        failure.cause.CopyFrom(error_to_failure(cause, converter, source))
    return failure


def _category(value: int) -> exceptions.ApplicationErrorCategory:
    """The category of a recorded failure; one this SDK does not know is UNSPECIFIED."""
    known = {category.value: category for category in exceptions.ApplicationErrorCategory}
    return known.get(value, exceptions.ApplicationErrorCategory.UNSPECIFIED)


def failure_to_error(
    failure: common_pb2.Failure, converter: DataConverter = default_converter
) -> exceptions.FailureError:
    """Rebuilds the exception a Failure describes (its cause chain too)."""
    details = converter.from_payloads(failure.details) if failure.HasField("details") else []
    error: exceptions.FailureError
    if failure.type == "TimeoutError":
        timeout_type = exceptions.TimeoutType(failure.timeout_type) if failure.timeout_type else None
        error = exceptions.TimeoutError(failure.message, type=timeout_type, last_heartbeat_details=details)
    elif failure.type == "CancelledError":
        error = exceptions.CancelledError(failure.message, *details)
    elif failure.type == "TerminatedError":
        error = exceptions.TerminatedError(failure.message)
    elif failure.type == "ActivityError":
        info = failure.activity_failure_info
        error = exceptions.ActivityError(
            failure.message,
            activity_type=info.activity_type,
            activity_id=info.activity_id,
            scheduled_event_id=info.scheduled_event_id,
            retry_state=exceptions.RetryState.__members__.get(info.retry_state, exceptions.RetryState.UNSPECIFIED),
        )
    elif failure.type == "ChildWorkflowError":
        child = failure.child_workflow_execution_failure_info
        error = exceptions.ChildWorkflowError(
            failure.message,
            namespace=child.namespace,
            workflow_id=child.workflow_execution.workflow_id,
            run_id=child.workflow_execution.run_id,
            workflow_type=child.workflow_type,
            initiated_event_id=child.initiated_event_id,
            started_event_id=child.started_event_id,
            retry_state=exceptions.RetryState.__members__.get(child.retry_state, exceptions.RetryState.UNSPECIFIED),
        )
    else:
        error = exceptions.ApplicationError(
            failure.message,
            *details,
            type=failure.type or None,
            non_retryable=failure.non_retryable,
            next_retry_delay=failure.next_retry_delay.ToTimedelta() if failure.HasField("next_retry_delay") else None,
            category=_category(failure.category),
        )
    error._failure = failure
    if failure.HasField("cause"):
        error.__cause__ = failure_to_error(failure.cause, converter)
    return error
