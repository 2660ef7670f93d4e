"""The one server interceptor that authenticates every RPC, checks it against the
declared table (:data:`flowforge.server.auth.roles.RPC_RULES`) and the request's
namespace, stamps the authenticated principal as the request's ``identity``, and
appends audited RPCs to the audit log once they succeed.

``UNAUTHENTICATED``: credentials missing, malformed, unknown, expired or revoked.
``PERMISSION_DENIED``: valid credentials without the role the RPC needs in its
namespace (another namespace included), or an RPC that is not in the table.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from google.protobuf.message import Message

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.audit import PendingAudit, entry_for_rpc, pending
from flowforge.server.auth.api_keys import ApiKeyAuthenticator, looks_like_api_key
from flowforge.server.auth.jwt import JwtVerifier
from flowforge.server.auth.principal import ALL_NAMESPACES, ANONYMOUS, Principal, acting_as, current_principal
from flowforge.server.auth.roles import PUBLIC_SERVICES, NamespaceSource, Role, RpcRule, rule_for
from flowforge.server.errors import InvalidArgument, PermissionDenied, ServiceError, Unauthenticated
from flowforge.server.tokens import token_namespace
from flowforge.server.unary_handlers import (
    StreamBehavior,
    UnaryBehavior,
    WrappedHandlers,
    with_behavior,
    with_stream_behavior,
)

__all__ = ["AuditRecorder", "AuthInterceptor", "Authenticator", "authorize"]

log = logging.getLogger("flowforge.server.auth")

#: Appends the entry of an audited RPC that succeeded without a write transaction of the engine.
AuditRecorder = Callable[[PendingAudit], Awaitable[None]]
# The claimed identity kept after the principal in ``identity`` fields.
_MAX_CLAIMED_IDENTITY = 200


class Authenticator:
    """Reads ``authorization: Bearer <credential>`` and returns its principal.

    Args:
        api_keys: Checks ``ffk_`` keys; None refuses them.
        jwt: Checks other bearer tokens as JWTs; None refuses them.
    """

    def __init__(self, api_keys: ApiKeyAuthenticator | None, jwt: JwtVerifier | None) -> None:
        self.api_keys = api_keys
        self.jwt = jwt

    async def authenticate(self, metadata: Any) -> Principal:
        """The principal of a call's metadata.

        Raises:
            Unauthenticated: naming what was wrong, never echoing the credential.
        """
        values = [v for k, v in metadata or () if k == "authorization"]
        if not values:
            raise Unauthenticated(
                "this server requires credentials: pass an API key (Client.connect(api_key=...),"
                " --api-key or FLOWFORGE_API_KEY) or a bearer JWT"
            )
        scheme, _, credential = str(values[0]).partition(" ")
        if len(values) > 1 or scheme.lower() != "bearer" or not credential.strip():
            raise Unauthenticated('the authorization header must be exactly one "Bearer <credential>"')
        credential = credential.strip()
        if looks_like_api_key(credential):
            principal = await self.api_keys.authenticate(credential) if self.api_keys is not None else None
            if principal is None:
                raise Unauthenticated("the API key is not valid: unknown, wrong, expired or revoked")
            return principal
        if self.jwt is None:
            raise Unauthenticated("the credential is not an API key (ffk_...) and this server accepts no JWTs")
        try:
            return await self.jwt.authenticate(credential)
        except ValueError as error:
            raise Unauthenticated(str(error)) from None


class AuthInterceptor(grpc.aio.ServerInterceptor):
    """Guards every RPC by the declared table; see the module docstring.

    Args:
        authenticator: None serves without authentication (every caller is
            :data:`ANONYMOUS`, and claimed identities are kept), while audited RPCs
            are still appended to the audit log.
        record_audit: Appends an audited RPC that succeeded.
    """

    def __init__(self, authenticator: Authenticator | None, record_audit: AuditRecorder) -> None:
        self._authenticator = authenticator
        self._record_audit = record_audit
        self._handlers = WrappedHandlers()

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        method: str = handler_call_details.method
        if handler is None or method.split("/")[1] in PUBLIC_SERVICES:
            return handler
        rule = rule_for(method)
        if rule is None:
            return _refuse(grpc.StatusCode.PERMISSION_DENIED, f"{method} is not in the authorization table")
        if handler.unary_unary is None:
            if handler.stream_stream is None:
                return _refuse(grpc.StatusCode.UNIMPLEMENTED, f"{method} streams one way, which cannot be authorized")
            if self._authenticator is None:
                return handler
            stream_rule = rule
            return self._handlers.get(
                method,
                handler,
                lambda: with_stream_behavior(handler, lambda inner: self._guard_stream(method, stream_rule, inner)),
            )
        if self._authenticator is None and not rule.audited:
            return handler  # nothing to do: keep the hot path as it was
        guarded_rule = rule
        return self._handlers.get(
            method, handler, lambda: with_behavior(handler, lambda inner: self._guard(method, guarded_rule, inner))
        )

    def _guard(self, method: str, rule: RpcRule, inner: UnaryBehavior) -> UnaryBehavior:
        async def guarded(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            try:
                principal = await self.admit(method, rule, request, context.invocation_metadata())
            except ServiceError as error:
                await context.abort(error.status, error.message)
                raise  # unreachable: abort raises
            return await self.run(method, rule, principal, request, lambda: inner(request, context))

        return guarded

    def _guard_stream(self, method: str, rule: RpcRule, inner: StreamBehavior) -> StreamBehavior:
        """A bidirectional stream: authenticated when it opens, its first message
        authorized by the stream's rule, the handler run as the principal (it
        authorizes each later message by that message's own RPC: :func:`authorize`)."""

        async def guarded(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext[Any, Any]) -> None:
            try:
                principal = await self.authenticate(context.invocation_metadata())
            except ServiceError as error:
                await context.abort(error.status, error.message)
                raise  # unreachable: abort raises
            with acting_as(principal):
                await inner(_first_admitted(principal, method, rule, requests), context)

        return guarded

    async def authenticate(self, metadata: Any) -> Principal:
        """The principal of a call's metadata (:data:`ANONYMOUS` without authentication).

        Raises:
            Unauthenticated: naming what was wrong.
        """
        if self._authenticator is None:
            return ANONYMOUS
        return await self._authenticator.authenticate(metadata)

    async def admit(self, method: str, rule: RpcRule, request: Any, metadata: Any) -> Principal:
        """Authenticates ``metadata`` and authorizes ``request`` for ``method``; stamps the
        principal as the request's identity. The console's JSON API calls this too, so
        both doors apply the same table.

        Raises:
            ServiceError: UNAUTHENTICATED, PERMISSION_DENIED or INVALID_ARGUMENT.
        """
        principal = await self.authenticate(metadata)
        if principal is not ANONYMOUS:
            _authorize(principal, method, rule, request)
            _stamp_identity(_field_owner(request, rule)[0], principal)
        return principal

    async def run(
        self,
        method: str,
        rule: RpcRule,
        principal: Principal,
        request: Any,
        call: Callable[[], Awaitable[Any]],
        *,
        reason: str = "",
    ) -> Any:
        """Runs an admitted call as ``principal``, appends it to the audit log when audited
        and it succeeded, and filters a global answer to what the principal may see.
        ``reason`` is recorded when the request has none of its own (the console's)."""
        if not rule.audited:
            with acting_as(principal):
                response = await call()
        else:
            with (
                acting_as(principal),
                pending(_audit_name(principal, request), entry_for_rpc(method, request, reason)) as record,
            ):
                response = await call()
            if not record.appended:
                try:
                    await self._record_audit(record)
                except Exception:
                    log.exception("could not append %s by %s to the audit log", method, principal.name)
        _filter_response(principal, method, response)
        return response


async def _first_admitted(
    principal: Principal, method: str, rule: RpcRule, requests: AsyncIterator[Any]
) -> AsyncIterator[Any]:
    """``requests``, the first authorized by ``rule`` (its identity stamped) before it
    is handed on; a refusal raises out of the iteration and ends the stream."""
    first = True
    async for request in requests:
        if first and principal is not ANONYMOUS:
            _authorize(principal, method, rule, request)
            _stamp_identity(_field_owner(request, rule)[0], principal)
        first = False
        yield request


def authorize(method: str, request: Any) -> None:
    """Authorizes ``request`` as a request of ``method`` (a full method name) for the
    principal of the RPC being served, and stamps it as the request's identity: for
    what a stream carries, e.g. each report on the worker stream, checked as its
    unary RPC would be. Nothing to check without authentication.

    Raises:
        PermissionDenied: the principal may not, or ``method`` is not in the table.
        InvalidArgument: the request names no namespace.
    """
    principal = current_principal()
    if principal is ANONYMOUS:
        return
    rule = rule_for(method)
    if rule is None:
        raise PermissionDenied(f"{method} is not in the authorization table")
    _authorize(principal, method, rule, request)
    _stamp_identity(_field_owner(request, rule)[0], principal)


def _field_owner(request: Any, rule: RpcRule) -> tuple[Any, str]:
    """The message holding a FIELD rule's namespace field (``hello.namespace``: the hello), and the field's name."""
    if rule.source is not NamespaceSource.FIELD:
        return request, rule.field
    *path, field = rule.field.split(".")
    for part in path:
        request = getattr(request, part)
    return request, field


def _authorize(principal: Principal, method: str, rule: RpcRule, request: Any) -> None:
    rpc = method.rpartition("/")[2]
    if rule.source is NamespaceSource.GLOBAL:
        if not principal.holds_anywhere(rule.role):
            raise PermissionDenied(f"{principal.name} may not call {rpc}: it needs the {rule.role.value} role")
        return
    if rule.source is NamespaceSource.SERVER:
        namespaces = [ALL_NAMESPACES]
    elif rule.source is NamespaceSource.TASK_TOKEN:
        named = token_namespace(request.task_token)
        if named is None:
            # A malformed token: the handler refuses it with INVALID_ARGUMENT, but
            # only to a principal that may report tasks at all.
            if not principal.holds_anywhere(rule.role):
                raise PermissionDenied(f"{principal.name} may not call {rpc}: it needs the {rule.role.value} role")
            return
        namespaces = [named, *([request.namespace] if request.namespace else [])]
    else:
        owner, field = _field_owner(request, rule)
        namespace = getattr(owner, field)
        if not namespace:
            raise InvalidArgument(f"{rule.field} is required")
        namespaces = [namespace]
    for namespace in namespaces:
        if not principal.allows(rule.role, namespace):
            where = "every namespace ('*')" if namespace == ALL_NAMESPACES else f"namespace {namespace!r}"
            raise PermissionDenied(
                f"{principal.name} may not call {rpc} in {where}: it needs the {rule.role.value} role there"
            )


def _audit_name(principal: Principal, request: Message) -> str:
    """Who the audit log names: the principal; without authentication, what the caller claims, marked so."""
    claimed = request.identity if "identity" in request.DESCRIPTOR.fields_by_name else ""  # type: ignore[attr-defined]
    if principal is ANONYMOUS and claimed:
        return f"anonymous ({claimed[:_MAX_CLAIMED_IDENTITY]})"
    return principal.name


def _stamp_identity(request: Message, principal: Principal) -> None:
    """Records the principal, not the caller's claim, as who did it (the claim follows in parentheses)."""
    if "identity" not in request.DESCRIPTOR.fields_by_name:
        return
    claimed: str = request.identity  # type: ignore[attr-defined]
    identity = f"{principal.name} ({claimed[:_MAX_CLAIMED_IDENTITY]})" if claimed else principal.name
    request.identity = identity  # type: ignore[attr-defined]


def _filter_response(principal: Principal, method: str, response: Any) -> None:
    """Global RPCs answer only with what the principal may see."""
    if principal is ANONYMOUS:
        return
    if method.endswith("/ListNamespaces"):
        visible = [n for n in response.namespaces if principal.allows(Role.READER, n.name)]
        del response.namespaces[:]
        response.namespaces.extend(visible)
    elif method.endswith("/GetSchedulerStatus") and not principal.allows(Role.READER, ALL_NAMESPACES):
        # Which host leads is the operators' business; others see that one does, and until when.
        status: pb.GetSchedulerStatusResponse = response
        status.leader_identity = status.replica_identity = ""
        for change in status.replica_leader_changes:
            change.holder = ""


def _refuse(code: grpc.StatusCode, message: str) -> grpc.RpcMethodHandler[Any, Any]:
    async def refuse(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await context.abort(code, message)

    return grpc.unary_unary_rpc_method_handler(refuse)
