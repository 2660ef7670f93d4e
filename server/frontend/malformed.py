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

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from flowforge.server.errors import InvalidArgument
from flowforge.server.unary_handlers import (
    StreamBehavior,
    UnaryBehavior,
    WrappedHandlers,
    with_behavior,
    with_stream_behavior,
)

__all__ = ["MAX_DURATION_S", "MAX_STRING_CHARS", "MalformedRequests", "ill_formed"]

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


def _timestamp_problem(seconds: int, nanos: int) -> str | None:
    if not 0 <= nanos <= 999_999_999 or not _MIN_TIMESTAMP_S <= seconds <= _MAX_TIMESTAMP_S:
        return "is not a valid timestamp (years 1 to 9999, nanos 0 to 999999999)"
    return None


def _value_problem(field: FieldDescriptor, value: Any, path: str) -> str | None:
    if field.message_type is not None:
        return ill_formed(value, path)
    if field.type in _FLOATS and not math.isfinite(value):
        return f"{path} must be a finite number"
    if field.type == FieldDescriptor.TYPE_STRING and len(value) > MAX_STRING_CHARS:
        return f"{path} is {len(value)} characters long; no field may exceed {MAX_STRING_CHARS}"
    return None


def ill_formed(message: Message, path: str = "") -> str | None:
    """What is wrong with a value of ``message`` that no field may hold, or None."""
    name = message.DESCRIPTOR.full_name
    if name == "google.protobuf.Duration":
        problem = _duration_problem(message.seconds, message.nanos)  # type: ignore[attr-defined]
        return f"{path} {problem}" if problem else None
    if name == "google.protobuf.Timestamp":
        problem = _timestamp_problem(message.seconds, message.nanos)  # type: ignore[attr-defined]
        return f"{path} {problem}" if problem else None
    for field, value in message.ListFields():
        where = f"{path}.{field.name}" if path else field.name
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            for key, item in value.items():
                if isinstance(key, str) and len(key) > MAX_STRING_CHARS:
                    return f"{where} has a key of {len(key)} characters; no field may exceed {MAX_STRING_CHARS}"
                problem = _value_problem(value_field, item, f"{where}[{key!r:.40}]")
                if problem:
                    return problem
        elif field.is_repeated:
            for index, item in enumerate(value):
                problem = _value_problem(field, item, f"{where}[{index}]")
                if problem:
                    return problem
        else:
            problem = _value_problem(field, value, where)
            if problem:
                return problem
    return None


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
        problem = ill_formed(request) if isinstance(request, Message) else None
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
