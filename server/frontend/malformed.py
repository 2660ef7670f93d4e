"""Requests that do not parse, or hold values no field may hold, are refused up front.

gRPC deserializes a request before any handler runs, and a ``DecodeError`` there
ends the call ``UNKNOWN`` with a stack trace in the log. This interceptor swaps
each unary or bidirectional streaming handler's deserializer for one that hands a
:class:`_Malformed` marker on instead of raising, then walks the parsed request once (:func:`ill_formed`) for
what no field of any request may hold: a non-finite number, a negative or over-long
duration, a timestamp outside protobuf's range, a string over
:data:`MAX_STRING_CHARS`. Either is answered ``INVALID_ARGUMENT`` naming the field,
before authorization or the service sees it; the handlers then check what each
field means (:mod:`.validation`, the engine's input checks).
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NamedTuple, cast

import grpc
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from flowforge.server.errors import InvalidArgument
from flowforge.server.unary_handlers import (
    StreamBehavior,
    UnaryBehavior,
    WrappedHandlers,
    with_behavior,
    with_stream_behavior,
)

__all__ = ["MAX_DURATION_S", "MAX_STRING_CHARS", "MalformedRequests", "ill_formed", "timestamp_problem"]

#: The longest duration any field may hold (timeouts, intervals, retention): ten years.
MAX_DURATION_S = 10 * 365 * 24 * 3600
#: The longest string any field may hold; names, reasons and filters have lower limits.
MAX_STRING_CHARS = 64 * 1024
# google.protobuf.Timestamp's range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
_MIN_TIMESTAMP_S = -62_135_596_800
_MAX_TIMESTAMP_S = 253_402_300_799
_FLOATS = (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT)


def _duration_problem(seconds: int, nanos: int) -> str | None:
    if not -999_999_999 <= nanos <= 999_999_999 or (seconds and nanos and (seconds < 0) != (nanos < 0)):
        return "is not a valid duration (nanos out of range or of another sign)"
    if seconds < 0 or nanos < 0:
        return "must not be negative"
    if seconds + nanos / 1e9 > MAX_DURATION_S:
        return f"is longer than the limit of {MAX_DURATION_S}s (ten years)"
    return None


def timestamp_problem(seconds: int, nanos: int) -> str | None:
    """What makes (seconds, nanos) no google.protobuf.Timestamp, or None."""
    if not 0 <= nanos <= 999_999_999 or not _MIN_TIMESTAMP_S <= seconds <= _MAX_TIMESTAMP_S:
        return "is not a valid timestamp (years 1 to 9999, nanos 0 to 999999999)"
    return None


def ill_formed(message: Message, path: str = "", *, strings: bool = True) -> str | None:
    """What is wrong with a value of ``message`` that no field may hold, or None.

    Args:
        message: The request, or a message inside it.
        path: Where ``message`` is in the request (for the answer).
        strings: Whether to check string lengths; False when the request's encoding
            is too short to hold a string over :data:`MAX_STRING_CHARS`.
    """
    found = _problem(message, _WELL_KNOWN.get(message.DESCRIPTOR.full_name, _MESSAGE), strings)
    if found is None:
        return None
    where, problem = found
    where = f"{path}{where}" if path else where.removeprefix(".")
    return f"{where} {problem}"


# The kinds of value a check looks at.
_MESSAGE, _DURATION, _TIMESTAMP, _FLOAT, _STRING, _OTHER = range(6)
_WELL_KNOWN = {"google.protobuf.Duration": _DURATION, "google.protobuf.Timestamp": _TIMESTAMP}


class _Check(NamedTuple):
    """One field of a message type that can hold something refused."""

    name: str
    kind: int
    repeated: bool
    presence: bool
    """A singular message field: looked at only when set."""
    map_value: int | None
    """For a map: the kind of its values (its keys are strings or scalars)."""
    string_keys: bool


def _problem(value: Any, kind: int, strings: bool) -> tuple[str, str] | None:
    """(where in ``value``, what is wrong) for a value of ``kind``, or None. The path
    is built only for a problem: walking a request must cost little."""
    if kind == _MESSAGE:
        return _message_problem(value, strings)
    if kind == _DURATION:
        problem = _duration_problem(value.seconds, value.nanos)
    elif kind == _TIMESTAMP:
        problem = timestamp_problem(value.seconds, value.nanos)
    elif kind == _FLOAT:
        problem = None if math.isfinite(value) else "must be a finite number"
    elif kind == _STRING:
        too_long = strings and len(value) > MAX_STRING_CHARS
        problem = f"is {len(value)} characters long; no field may exceed {MAX_STRING_CHARS}" if too_long else None
    else:
        problem = None
    return ("", problem) if problem else None


def _message_problem(message: Message, strings: bool) -> tuple[str, str] | None:
    for check in _checks(message.DESCRIPTOR, strings):
        if check.presence and not message.HasField(check.name):
            continue
        value = getattr(message, check.name)
        if check.map_value is not None:
            for key, item in value.items():
                if strings and check.string_keys and len(key) > MAX_STRING_CHARS:
                    return (
                        f".{check.name}",
                        f"has a key of {len(key)} characters; no field may exceed {MAX_STRING_CHARS}",
                    )
                found = _problem(item, check.map_value, strings)
                if found:
                    return f".{check.name}[{key!r:.40}]{found[0]}", found[1]
        elif check.repeated:
            for index, item in enumerate(value):
                found = _problem(item, check.kind, strings)
                if found:
                    return f".{check.name}[{index}]{found[0]}", found[1]
        else:
            found = _problem(value, check.kind, strings)
            if found:
                return f".{check.name}{found[0]}", found[1]
    return None


# What a request's type allows is worked out once per message type, not per request:
# walking every field of every request in Python cost more than parsing it.


@functools.cache
def _checks(descriptor: Descriptor, strings: bool) -> tuple[_Check, ...]:
    """The fields of ``descriptor`` that can hold something refused (string lengths
    only if ``strings``), by field number (the order the answer names the first)."""
    checks = []
    for field in sorted(descriptor.fields, key=lambda f: f.number):
        if not _may_be_ill_formed(field, strings, frozenset({descriptor})):
            continue
        value_field = _map_value_field(field)
        repeated = field.is_repeated
        key_field = field.message_type.fields_by_name["key"] if value_field is not None and field.message_type else None
        checks.append(
            _Check(
                name=field.name,
                kind=_kind(field),
                repeated=repeated,
                presence=field.message_type is not None and not repeated,
                map_value=_kind(value_field) if value_field is not None else None,
                string_keys=key_field is not None and key_field.type == FieldDescriptor.TYPE_STRING,
            )
        )
    return tuple(checks)


def _kind(field: FieldDescriptor) -> int:
    if field.message_type is not None:
        return _WELL_KNOWN.get(field.message_type.full_name, _MESSAGE)
    if field.type in _FLOATS:
        return _FLOAT
    return _STRING if field.type == FieldDescriptor.TYPE_STRING else _OTHER


def _map_value_field(field: FieldDescriptor) -> FieldDescriptor | None:
    """The value field of a map field's entries; None if ``field`` is not a map."""
    entry = field.message_type
    if entry is None or not entry.GetOptions().map_entry:
        return None
    value: FieldDescriptor = entry.fields_by_name["value"]
    return value


def _may_be_ill_formed(field: FieldDescriptor, strings: bool, enclosing: frozenset[Descriptor]) -> bool:
    if field.type in _FLOATS:
        return True
    if field.type == FieldDescriptor.TYPE_STRING:
        return strings
    message = field.message_type
    if message is None:
        return False
    value_field = _map_value_field(field)
    if value_field is not None:
        key_is_string = message.fields_by_name["key"].type == FieldDescriptor.TYPE_STRING
        return (strings and key_is_string) or _may_be_ill_formed(value_field, strings, enclosing)
    if message.full_name in _WELL_KNOWN or message in enclosing:
        return True  # a recursive type (Failure.cause) is taken to be suspect
    return any(_may_be_ill_formed(f, strings, enclosing | {message}) for f in message.fields)


class _Malformed:
    """What the deserializer hands on for a request that is refused before any handler."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _tolerant(deserializer: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def deserialize(body: bytes) -> Any:
        try:
            request = deserializer(body)
        except Exception as error:  # DecodeError, RecursionError (nesting), ValueError
            return _Malformed(f"it is not a valid protobuf message ({type(error).__name__}: {str(error)[:200]})")
        # A string over the limit needs at least as many bytes in the encoding.
        problem = ill_formed(request, strings=len(body) > MAX_STRING_CHARS) if isinstance(request, Message) else None
        return _Malformed(problem) if problem else request

    return deserialize


def _refusing(behavior: UnaryBehavior, method: str) -> UnaryBehavior:
    async def handle(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        if isinstance(request, _Malformed):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{method}: {request.reason}")
        return await behavior(request, context)

    return handle


def _refusing_stream(behavior: StreamBehavior, method: str) -> StreamBehavior:
    async def checked(requests: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for request in requests:
            if isinstance(request, _Malformed):
                raise InvalidArgument(f"{method}: a message on the stream was refused: {request.reason}")
            yield request

    if inspect.isasyncgenfunction(behavior):
        # A servicer written as an async generator (gRPC reflection's) yields its
        # answers rather than writing them: the wrapper must yield them on.
        generator = cast(Callable[[AsyncIterator[Any], Any], AsyncIterator[Any]], behavior)

        async def handle_yielding(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            async for response in generator(checked(requests), context):
                yield response

        return cast(StreamBehavior, handle_yielding)

    async def handle(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext[Any, Any]) -> None:
        await behavior(checked(requests), context)

    return handle


class MalformedRequests(grpc.aio.ServerInterceptor):
    """Refuses, with INVALID_ARGUMENT, a request that does not parse or is ill-formed."""

    def __init__(self) -> None:
        self._handlers = WrappedHandlers()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_deserializer is None:
            return handler
        full_method: str = handler_call_details.method
        method = full_method.rpartition("/")[2]
        tolerant = _tolerant(handler.request_deserializer)
        if handler.unary_unary is not None:
            return self._handlers.get(
                full_method, handler, lambda: with_behavior(handler, lambda inner: _refusing(inner, method), tolerant)
            )
        if handler.stream_stream is not None:
            return self._handlers.get(
                full_method,
                handler,
                lambda: with_stream_behavior(handler, lambda inner: _refusing_stream(inner, method), tolerant),
            )
        return handler
