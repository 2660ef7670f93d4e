"""The console's JSON API: ``POST /api/v1/{Service}/{Method}`` calls the same gRPC
handler in-process, through the same authentication, authorization table, identity
stamping, audit and answer filtering as a gRPC call (the interceptor's
:meth:`~flowforge.server.auth.interceptor.AuthInterceptor.admit` and ``run``).

Bodies are the protobuf JSON form of the request and answer (``bytes`` in base64,
enums by name). Worker RPCs (polls, task reports) are not served here: a browser
has no business holding a task.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from flowforge.api.v1 import access_pb2, workflow_service_pb2
from flowforge.server.auth.interceptor import AuthInterceptor
from flowforge.server.auth.principal import Principal
from flowforge.server.auth.roles import NamespaceSource, Role, RpcRule, rule_for
from flowforge.server.errors import ServiceError

__all__ = ["ConsoleError", "RpcBridge"]

#: gRPC status → HTTP status of the JSON answer.
_HTTP_STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.FAILED_PRECONDITION: 409,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
}
# A long-poll from a browser waits at most this long (history: new events).
_MAX_WAIT_S = 30.0


class ConsoleError(Exception):
    """A refused or failed console call, with its gRPC status and message."""

    def __init__(self, status: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    @property
    def http_status(self) -> int:
        return _HTTP_STATUS.get(self.status, 500)

    def to_json(self) -> dict[str, str]:
        return {"code": self.status.name, "message": self.message}


class _Context:
    """What the handlers read of a gRPC servicer context, for an in-process call."""

    def __init__(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self._metadata = metadata

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def time_remaining(self) -> float:
        return _MAX_WAIT_S

    def cancelled(self) -> bool:
        return False

    def done(self) -> bool:
        return False

    async def abort(self, code: grpc.StatusCode, details: str = "", trailing_metadata: Any = ()) -> None:
        raise ConsoleError(code, details)


_SERVICES: dict[str, Any] = {
    "WorkflowService": workflow_service_pb2.DESCRIPTOR.services_by_name["WorkflowService"],
    "AccessService": access_pb2.DESCRIPTOR.services_by_name["AccessService"],
}


class RpcBridge:
    """Calls gRPC handlers from JSON on behalf of a browser.

    Args:
        interceptor: The server's authentication interceptor.
        servicers: Service name (``WorkflowService``, ``AccessService``) → its servicer.
    """

    def __init__(self, interceptor: AuthInterceptor, servicers: dict[str, object]) -> None:
        self._interceptor = interceptor
        self._servicers = servicers

    async def principal(self, authorization: str | None) -> Principal:
        """The caller behind an ``Authorization`` header (ANONYMOUS without authentication)."""
        try:
            return await self._interceptor.authenticate(_metadata(authorization))
        except ServiceError as error:
            raise ConsoleError(error.status, error.message) from None

    def rules(self) -> dict[str, str]:
        """Method name → the role it needs, for every RPC the console may call (the page
        shows an action only to a caller whose roles allow it)."""
        return {
            method: rule.role.value
            for service, descriptor in _SERVICES.items()
            for method in descriptor.methods_by_name
            if (rule := _console_rule(service, descriptor, method, self._servicers)) is not None
        }

    async def call(
        self, service: str, method: str, body: bytes, authorization: str | None, *, reason: str = ""
    ) -> dict[str, Any]:
        """Runs ``service/method`` with the JSON ``body``; the answer as JSON. Every change
        made from the console is audited, with ``reason`` when the request has none.

        Raises:
            ConsoleError: refused (by the table or the handler) or malformed.
        """
        descriptor = _SERVICES.get(service)
        rpc = descriptor.methods_by_name.get(method) if descriptor is not None else None
        if descriptor is None or rpc is None or getattr(self._servicers.get(service), method, None) is None:
            raise ConsoleError(grpc.StatusCode.NOT_FOUND, f"no RPC {service}/{method}")
        rule = _console_rule(service, descriptor, method, self._servicers)
        if rule is None:
            raise ConsoleError(grpc.StatusCode.PERMISSION_DENIED, f"{method} is for workers, not the console")
        full_name = f"/{descriptor.full_name}/{method}"
        request = GetMessageClass(rpc.input_type)()
        try:
            json_format.Parse(body.decode() or "{}", request, ignore_unknown_fields=False, max_recursion_depth=32)
        except (json_format.ParseError, UnicodeDecodeError, RecursionError) as error:
            raise ConsoleError(
                grpc.StatusCode.INVALID_ARGUMENT, f"the body is not a {rpc.input_type.name}: {error}"
            ) from None
        context = _Context(_metadata(authorization))
        handler: Callable[[Message, _Context], Awaitable[Message]] = getattr(self._servicers[service], method)
        try:
            principal = await self._interceptor.admit(full_name, rule, request, context.invocation_metadata())
            response: Message = await self._interceptor.run(
                full_name, rule, principal, request, lambda: handler(request, context), reason=reason
            )
        except ServiceError as error:
            raise ConsoleError(error.status, error.message) from None
        answer: dict[str, Any] = json.loads(
            json_format.MessageToJson(response, preserving_proto_field_name=True, indent=None)
        )
        return answer


def _console_rule(service: str, descriptor: Any, method: str, servicers: dict[str, object]) -> RpcRule | None:
    """The table's rule for a method the console serves, audited when it changes
    anything; None for worker RPCs and methods this server does not have."""
    rule = rule_for(f"/{descriptor.full_name}/{method}")
    if rule is None or getattr(servicers.get(service), method, None) is None:
        return None
    if rule.source is NamespaceSource.TASK_TOKEN or rule.role is Role.WORKER:
        return None
    return rule if rule.role is Role.READER else dataclasses.replace(rule, audited=True)


def _metadata(authorization: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", authorization),) if authorization is not None else ()
