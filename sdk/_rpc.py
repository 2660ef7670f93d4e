"""Calls to the WorkflowService: one channel, error mapping and retries.

Every failed call surfaces as :class:`flowforge.exceptions.RPCError`. Calls that fail
with a status meaning "try again" (``UNAVAILABLE``, ``DEADLINE_EXCEEDED``) are retried
with exponential backoff for a bounded time; answers about the request itself
(``INVALID_ARGUMENT``, ``NOT_FOUND``, ``ALREADY_EXISTS``, ``FAILED_PRECONDITION``, ...)
are final. Retrying is safe because the mutating RPCs are idempotent: starts and
signals carry a request id, and completing a task twice is a no-op on the server.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import grpc
from google.protobuf.message import Message
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from flowforge._codec import UndecodableResponse, decode_message, encode_message
from flowforge.api.v1 import access_pb2_grpc, workflow_service_pb2_grpc
from flowforge.converter import PayloadCodec
from flowforge.exceptions import RPCError

__all__ = ["MAX_MESSAGE_BYTES", "RPCRetryConfig", "WorkflowServiceClient"]

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The gRPC message size limit in both directions. It is far above the server's
payload limit on purpose: an oversize payload must reach the server, which refuses it
with an INVALID_ARGUMENT message naming the limit, instead of failing in the client
with a transport error. A request even larger than this is refused by the client
before it is sent, with the same advice (configure payload storage). With payload
storage every large payload travels as a reference of about a hundred bytes."""

_RETRYABLE_STATUSES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})

# Spread retries of many clients hitting the same outage over +/-20 % of the delay.
_JITTER = 0.2


@dataclasses.dataclass(frozen=True)
class RPCRetryConfig:
    """How the client retries calls that failed with a transient status.

    Attributes:
        initial_interval: The delay before the first retry.
        maximum_interval: The cap on the delay between retries.
        backoff_coefficient: The factor by which the delay grows after each retry.
        maximum_elapsed: Give up (raise the last error) once another retry would
            start later than this after the first attempt.
        rpc_timeout: The deadline of one attempt of an ordinary call. Long polls
            use their poll timeout plus a margin instead.
    """

    initial_interval: timedelta = timedelta(milliseconds=100)
    maximum_interval: timedelta = timedelta(seconds=5)
    backoff_coefficient: float = 2.0
    maximum_elapsed: timedelta = timedelta(seconds=60)
    rpc_timeout: timedelta = timedelta(seconds=10)

    def __post_init__(self) -> None:
        if self.initial_interval <= timedelta(0):
            raise ValueError("RPCRetryConfig.initial_interval must be positive")
        if self.maximum_interval < self.initial_interval:
            raise ValueError("RPCRetryConfig.maximum_interval must be >= initial_interval")
        if self.backoff_coefficient < 1.0:
            raise ValueError("RPCRetryConfig.backoff_coefficient must be >= 1.0")
        if self.maximum_elapsed < timedelta(0):
            raise ValueError("RPCRetryConfig.maximum_elapsed must not be negative")
        if self.rpc_timeout <= timedelta(0):
            raise ValueError("RPCRetryConfig.rpc_timeout must be positive")


def rpc_error(error: grpc.aio.AioRpcError) -> RPCError:
    """The :class:`RPCError` for a failed gRPC call, keeping the server's message."""
    code = error.code()
    return RPCError(error.details() or code.name, code)


def _check_size(rpc: str, request: Message) -> None:
    """Refuses a request over the gRPC message limit with advice, not a transport error."""
    size = request.ByteSize()
    if size > MAX_MESSAGE_BYTES:
        raise RPCError(
            f"the {rpc} request is {size} bytes, over the message limit of {MAX_MESSAGE_BYTES} bytes; configure "
            "payload storage (DataConverter(payload_storage=...), see docs/payloads.md) so large payloads "
            "travel as references",
            grpc.StatusCode.INVALID_ARGUMENT,
        )


class WorkflowServiceClient:
    """Calls WorkflowService RPCs by name with credentials, deadlines and retries.

    It is what :class:`flowforge.client.Client` and the worker use underneath, and is
    exposed as ``Client.workflow_service`` for RPCs the client has no method for.

    Args:
        channel: An open ``grpc.aio`` channel to the server.
        metadata: Sent with every call (e.g. the ``authorization`` header).
        retry_config: How transient failures are retried.
        payload_codec: Encodes every payload of each request before it is sent
            and decodes every payload of each response (see
            :class:`flowforge.converter.PayloadCodec`); with payload storage,
            the converter's ``flowforge._claim_check.wire_codec``.
        encode_failure_attributes: With ``payload_codec``, also encode failure
            messages and stack traces (``DataConverter.encode_failure_attributes``).
    """

    def __init__(
        self,
        channel: grpc.aio.Channel,
        *,
        metadata: Sequence[tuple[str, str]] = (),
        retry_config: RPCRetryConfig = RPCRetryConfig(),
        payload_codec: PayloadCodec | None = None,
        encode_failure_attributes: bool = False,
    ) -> None:
        self._channel = channel
        self._payload_codec = payload_codec
        self._encode_failure_attributes = encode_failure_attributes
        # The generated stub has no annotations.
        self._stub = workflow_service_pb2_grpc.WorkflowServiceStub(channel)  # type: ignore[no-untyped-call]
        # The generated stub has no annotations.
        self._access_stub = access_pb2_grpc.AccessServiceStub(channel)  # type: ignore[no-untyped-call]
        self._metadata = tuple(metadata)
        self.retry_config = retry_config

    @property
    def api_key(self) -> str | None:
        """The API key sent as ``authorization: Bearer <key>`` on every call (None: none)."""
        bearer = next((value for name, value in self._metadata if name == "authorization"), None)
        return bearer.removeprefix("Bearer ") if bearer is not None else None

    @api_key.setter
    def api_key(self, key: str | None) -> None:
        others = tuple((name, value) for name, value in self._metadata if name != "authorization")
        self._metadata = ((("authorization", f"Bearer {key}"),) if key else ()) + others

    async def call(
        self,
        rpc: str,
        request: Any,
        *,
        retry: bool = True,
        timeout: timedelta | None = None,
    ) -> Any:
        """Calls one RPC.

        Args:
            rpc: The RPC's name in WorkflowService (e.g. ``"StartWorkflowExecution"``)
                or AccessService (e.g. ``"CreateApiKey"``).
            request: The request message.
            retry: Whether to retry transient failures. Pollers pass ``False``: they
                run their own loop, and a retried poll could not give back a task
                the lost attempt leased anyway.
            timeout: The deadline of each attempt; defaults to
                ``retry_config.rpc_timeout``.

        Returns:
            The response message.

        Raises:
            RPCError: The call failed with a final status, or retries ran out.
            RPCError: ``INVALID_ARGUMENT`` before sending a request over
                :data:`MAX_MESSAGE_BYTES`.
            UndecodableResponse: The payload codec (or payload storage) failed on the response.
        """
        method = getattr(self._stub, rpc, None) or getattr(self._access_stub, rpc)
        request = await self.encode_request(rpc, request)
        response = await self._call(method, rpc, request, retry=retry, timeout=timeout)
        return await self.decode_response(rpc, response)

    async def encode_request(self, rpc: str, request: Message) -> Any:
        """``request`` as it goes on the wire: its payloads encoded by the payload
        codec (a copy; the request is left as it is), and checked against the size limit.

        Raises:
            RPCError: ``INVALID_ARGUMENT`` for a request over :data:`MAX_MESSAGE_BYTES`.
        """
        if self._payload_codec is not None:
            request = await encode_message(
                request, self._payload_codec, encode_failure_attributes=self._encode_failure_attributes
            )
        _check_size(rpc, request)
        return request

    async def decode_response(self, rpc: str, response: Message) -> Any:
        """``response`` with its payloads decoded by the payload codec (in place).

        Raises:
            UndecodableResponse: The payload codec (or payload storage) failed.
        """
        if self._payload_codec is None:
            return response
        try:
            return await decode_message(response, self._payload_codec)
        except Exception as error:
            raise UndecodableResponse(rpc, response, error) from error

    def open_stream(self, rpc: str) -> Any:
        """Opens a bidirectional streaming RPC (``grpc.aio.StreamStreamCall``) with the
        client's metadata, without a deadline and without retries: the caller owns
        the stream's life, reconnects included. Payloads are not encoded or decoded
        here; use :meth:`encode_request` and :meth:`decode_response` on what travels.
        """
        return getattr(self._stub, rpc)(metadata=_with_trace_context(self._metadata))

    async def _call(self, method: Any, rpc: str, request: Any, *, retry: bool, timeout: timedelta | None) -> Any:
        config = self.retry_config
        attempt_timeout = (timeout or config.rpc_timeout).total_seconds()
        loop = asyncio.get_running_loop()
        give_up_at = loop.time() + config.maximum_elapsed.total_seconds()
        delay = config.initial_interval.total_seconds()
        metadata = _with_trace_context(self._metadata)
        while True:
            try:
                return await method(request, metadata=metadata, timeout=attempt_timeout)
            except grpc.aio.AioRpcError as error:
                sleep_for = delay * random.uniform(1 - _JITTER, 1 + _JITTER)
                if not retry or error.code() not in _RETRYABLE_STATUSES or loop.time() + sleep_for > give_up_at:
                    raise rpc_error(error) from None
                logger.debug("%s failed with %s; retrying in %.2fs", rpc, error.code().name, sleep_for)
            await asyncio.sleep(sleep_for)
            delay = min(delay * config.backoff_coefficient, config.maximum_interval.total_seconds())

    async def close(self) -> None:
        """Closes the channel; calls in flight are cancelled."""
        await self._channel.close()


_PROPAGATOR = TraceContextTextMapPropagator()


def _with_trace_context(metadata: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """``metadata`` plus the W3C ``traceparent`` of the current span, if there is one,
    so a server that traces joins the caller's trace."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return (*metadata, *carrier.items()) if carrier else metadata
