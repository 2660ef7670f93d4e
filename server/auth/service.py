"""gRPC ``flowforge.api.v1.AccessService``: API keys, the audit log, task token keys.

The interceptor has already checked that the caller is an admin somewhere; each
handler checks the namespace it acts in, and list handlers show only what the
caller administers. Key changes append their audit row in their own transaction.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import grpc
from google.protobuf import timestamp_pb2

from flowforge.api.v1 import access_pb2 as pb
from flowforge.api.v1 import access_pb2_grpc as pb_grpc
from flowforge.server import audit
from flowforge.server.auth.api_keys import new_api_key
from flowforge.server.auth.principal import ALL_NAMESPACES, Principal, current_principal
from flowforge.server.auth.roles import Role, parse_role
from flowforge.server.clock import Clock
from flowforge.server.errors import InvalidArgument, NotFound, PermissionDenied, ServiceError
from flowforge.server.stores.base import Store
from flowforge.server.stores.rows import ApiKeyRow, AuditRow
from flowforge.server.tokens import add_token_key

__all__ = ["AccessService", "create_api_key"]

log = logging.getLogger("flowforge.server.auth")

_MAX_TEXT = 1000
_MAX_EXPIRY_S = 10 * 365 * 24 * 3600
_VERIFY_PAGE = 1000
_DEFAULT_TOKEN_KEY_GRACE_US = 24 * 3600 * 1_000_000
_MIN_TOKEN_KEY_OVERLAP_US = 60 * 1_000_000
_Response = TypeVar("_Response")


def _text(value: str, field: str, *, required: bool = False) -> str:
    if required and not value:
        raise InvalidArgument(f"{field} is required")
    if len(value) > _MAX_TEXT or any(ord(ch) < 32 for ch in value):
        raise InvalidArgument(f"{field} must be at most {_MAX_TEXT} characters, without control characters")
    return value


def _timestamp(us: int | None) -> timestamp_pb2.Timestamp | None:
    if us is None:
        return None
    stamp = timestamp_pb2.Timestamp()
    stamp.FromMicroseconds(us)
    return stamp


def _key_proto(row: ApiKeyRow) -> pb.ApiKey:
    return pb.ApiKey(
        id=row.key_id,
        name=row.name,
        namespace=row.namespace,
        role=row.role,
        create_time=_timestamp(row.created_us),
        created_by=row.created_by,
        expire_time=_timestamp(row.expires_us),
        revoke_time=_timestamp(row.revoked_us),
    )


def _record_proto(row: AuditRow) -> pb.AuditRecord:
    return pb.AuditRecord(
        seq=row.seq,
        time=_timestamp(row.time_us),
        principal=row.principal,
        action=row.action,
        namespace=row.namespace,
        target=row.target,
        reason=row.reason,
        details_json=row.details,
        row_hash=row.row_hash,
    )


def _administers(principal: Principal, namespace: str) -> bool:
    return principal.allows(Role.ADMIN, namespace)


async def create_api_key(
    store: Store,
    clock: Clock,
    *,
    principal: str,
    namespace: str,
    role: Role,
    name: str,
    expires_in_s: float | None,
    reason: str,
    only_if_no_admin: bool = False,
) -> tuple[ApiKeyRow, str] | None:
    """Creates a key and its audit row in one transaction; returns the row and the key.

    Raises:
        NotFound: ``namespace`` is neither ``'*'`` nor an existing namespace (a typo
            would make a key that works nowhere).

    With ``only_if_no_admin`` (the bootstrap), creates nothing and returns None
    when a live admin key for ``'*'`` exists; the audit head's lock makes
    replicas starting together create one key between them.
    """
    async with store.transaction() as tx:
        now_us = clock.now_us()
        await tx.lock_audit_head()
        if only_if_no_admin and await tx.has_active_admin_key(now_us):
            return None
        if namespace != ALL_NAMESPACES and await tx.get_namespace(namespace) is None:
            raise NotFound(f"there is no namespace {namespace!r}: create it first, or use '*' for all namespaces")
        issued = new_api_key(
            name=name, namespace=namespace, role=role, created_by=principal, now_us=now_us, expires_in_s=expires_in_s
        )
        await tx.insert_api_key(issued.row)
        details = {"id": issued.row.key_id, "name": name, "role": role.value, "expires_us": issued.row.expires_us}
        entry = audit.AuditEntry("CreateApiKey", namespace, f"apikey:{issued.row.key_id}", reason, details)
        await audit.append(tx, principal, entry, now_us)
    return issued.row, issued.key


class AccessService(pb_grpc.AccessServiceServicer):
    """API keys, the audit log and task token keys over one store.

    Args:
        store: Where keys and the audit log are.
        clock: The server's clock.
        token_key_activation_us: How long a new task token key waits before it
            signs (every replica reloads the keys within it).
    """

    def __init__(self, store: Store, clock: Clock, *, token_key_activation_us: int) -> None:
        self._store = store
        self._clock = clock
        self._token_key_activation_us = token_key_activation_us

    async def _answer(self, context: grpc.aio.ServicerContext[Any, Any], work: Awaitable[_Response]) -> _Response:
        try:
            return await work
        except ServiceError as error:
            await context.abort(error.status, error.message)
        except grpc.aio.AbortError:
            raise
        except Exception:
            log.exception("access RPC failed")
            await context.abort(grpc.StatusCode.INTERNAL, "internal error; see the server log")
        raise AssertionError("unreachable: abort raises")

    async def CreateApiKey(self, request: pb.CreateApiKeyRequest, context: Any) -> pb.CreateApiKeyResponse:
        return await self._answer(context, self._create(request))

    async def _create(self, request: pb.CreateApiKeyRequest) -> pb.CreateApiKeyResponse:
        namespace = _text(request.namespace, "namespace", required=True)
        try:
            role = parse_role(request.role)
        except ValueError as error:
            raise InvalidArgument(str(error)) from None
        expires_in_s = None
        if request.HasField("expires_in"):
            expires_in_s = request.expires_in.ToMicroseconds() / 1_000_000
            if not 0 < expires_in_s <= _MAX_EXPIRY_S:
                raise InvalidArgument(f"expires_in must be between 1 microsecond and {_MAX_EXPIRY_S} seconds")
        created = await create_api_key(
            self._store,
            self._clock,
            principal=current_principal().name,
            namespace=namespace,
            role=role,
            name=_text(request.name, "name"),
            expires_in_s=expires_in_s,
            reason=_text(request.reason, "reason"),
        )
        assert created is not None
        row, key = created
        return pb.CreateApiKeyResponse(api_key=_key_proto(row), key=key)

    async def ListApiKeys(self, request: pb.ListApiKeysRequest, context: Any) -> pb.ListApiKeysResponse:
        return await self._answer(context, self._list_keys())

    async def _list_keys(self) -> pb.ListApiKeysResponse:
        principal = current_principal()
        async with self._store.read() as tx:
            rows = await tx.list_api_keys()
        return pb.ListApiKeysResponse(api_keys=[_key_proto(r) for r in rows if _administers(principal, r.namespace)])

    async def RevokeApiKey(self, request: pb.RevokeApiKeyRequest, context: Any) -> pb.RevokeApiKeyResponse:
        return await self._answer(context, self._revoke(request))

    async def _revoke(self, request: pb.RevokeApiKeyRequest) -> pb.RevokeApiKeyResponse:
        key_id = _text(request.id, "id", required=True)
        principal = current_principal()
        async with self._store.transaction() as tx:
            row = await tx.get_api_key(key_id)
            if row is None:
                raise NotFound(f"there is no API key {key_id!r} (apikey list shows the ids)")
            if not _administers(principal, row.namespace):
                raise PermissionDenied(f"{principal.name} may not revoke a key of namespace {row.namespace!r}")
            now_us = self._clock.now_us()
            if await tx.revoke_api_key(key_id, now_us):
                entry = audit.AuditEntry(
                    "RevokeApiKey", row.namespace, f"apikey:{key_id}", _text(request.reason, "reason")
                )
                await audit.append(tx, principal.name, entry, now_us)
        return pb.RevokeApiKeyResponse()

    async def ListAuditLog(self, request: pb.ListAuditLogRequest, context: Any) -> pb.ListAuditLogResponse:
        return await self._answer(context, self._list_audit(request))

    async def _list_audit(self, request: pb.ListAuditLogRequest) -> pb.ListAuditLogResponse:
        page_size = request.page_size or 100
        if not 0 < page_size <= 1000:
            raise InvalidArgument("page_size must be between 1 and 1000")
        before = 0
        if request.next_page_token:
            try:
                before = int(request.next_page_token.decode())
            except (UnicodeDecodeError, ValueError):
                raise InvalidArgument(
                    "next_page_token is malformed; pass back the one the last page returned"
                ) from None
        principal = current_principal()
        async with self._store.read() as tx:
            rows = await tx.list_audit_rows(after_seq=before, limit=page_size, newest_first=True)
        visible = [r for r in rows if _administers(principal, r.namespace or ALL_NAMESPACES)]
        token = str(rows[-1].seq).encode() if len(rows) == page_size and rows[-1].seq > 1 else b""
        return pb.ListAuditLogResponse(records=[_record_proto(r) for r in visible], next_page_token=token)

    async def VerifyAuditLog(self, request: pb.VerifyAuditLogRequest, context: Any) -> pb.VerifyAuditLogResponse:
        return await self._answer(context, self._verify())

    async def _verify(self) -> pb.VerifyAuditLogResponse:
        async with self._store.read() as tx:
            head = await tx.audit_head()
        checked = 0

        def count(_seq: int) -> None:
            nonlocal checked
            checked += 1

        broken = await audit.verify(self._rows(until_seq=head[0]), head, count)
        response = pb.VerifyAuditLogResponse(intact=broken is None, rows_checked=checked, head_hash=head[1])
        if broken is not None:
            response.first_bad_seq, response.problem = broken.seq, broken.problem
        return response

    async def RotateTaskTokenKey(
        self, request: pb.RotateTaskTokenKeyRequest, context: Any
    ) -> pb.RotateTaskTokenKeyResponse:
        return await self._answer(context, self._rotate(request))

    async def _rotate(self, request: pb.RotateTaskTokenKeyRequest) -> pb.RotateTaskTokenKeyResponse:
        grace_us = _DEFAULT_TOKEN_KEY_GRACE_US
        if request.HasField("previous_key_grace"):
            grace_us = request.previous_key_grace.ToMicroseconds()
        # The old key must outlive the new one's activation, or tokens signed meanwhile would fail.
        shortest = self._token_key_activation_us + _MIN_TOKEN_KEY_OVERLAP_US
        if not shortest <= grace_us <= _MAX_EXPIRY_S * 1_000_000:
            raise InvalidArgument(
                f"previous_key_grace must be between {shortest / 1e6:g} seconds (the new key's activation"
                f" and a minute) and {_MAX_EXPIRY_S} seconds"
            )
        principal = current_principal().name
        async with self._store.transaction() as tx:
            now_us = self._clock.now_us()
            key = await add_token_key(tx, now_us, grace_us)
            details = {"previous_accepted_until_us": key.previous_accepted_until_us}
            entry = audit.AuditEntry(
                "RotateTaskTokenKey", "", f"token_key:{key.kid}", _text(request.reason, "reason"), details
            )
            await audit.append(tx, principal, entry, now_us)
        return pb.RotateTaskTokenKeyResponse(
            key_id=key.kid,
            active_time=_timestamp(now_us + self._token_key_activation_us),
            previous_key_expire_time=_timestamp(key.previous_accepted_until_us),
        )

    async def _rows(self, *, until_seq: int) -> AsyncIterator[AuditRow]:
        """The rows up to the head read before (rows appended meanwhile are left for next time)."""
        after = 0
        while True:
            async with self._store.read() as tx:
                rows = await tx.list_audit_rows(after_seq=after, limit=_VERIFY_PAGE)
            for row in rows:
                if row.seq > until_seq:
                    return
                yield row
            if len(rows) < _VERIFY_PAGE:
                return
            after = rows[-1].seq
