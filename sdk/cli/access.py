"""``flowforge apikey ...``, ``flowforge audit ...`` and ``flowforge token-key rotate``: API keys,
the audit log and the task token signing key (docs/security.md).

Both need an admin key (``--api-key`` / ``FLOWFORGE_API_KEY``) on a server with auth on.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click
from google.protobuf import duration_pb2, timestamp_pb2

from flowforge.cli._connection import Connection, client_command, run
from flowforge.cli._output import emit_json, emit_table, output_option, stamp

if TYPE_CHECKING:
    from flowforge.api.v1 import access_pb2
    from flowforge.client import Client

__all__ = ["apikey", "audit", "token_key"]

_ROLES = ("reader", "writer", "worker", "operator", "admin")


def _time(value: timestamp_pb2.Timestamp, present: bool) -> datetime | None:
    return value.ToDatetime(tzinfo=UTC) if present else None


def _key_dict(key: access_pb2.ApiKey) -> dict[str, Any]:
    return {
        "id": key.id,
        "name": key.name,
        "namespace": key.namespace,
        "role": key.role,
        "created": _time(key.create_time, key.HasField("create_time")),
        "created_by": key.created_by,
        "expires": _time(key.expire_time, key.HasField("expire_time")),
        "revoked": _time(key.revoke_time, key.HasField("revoke_time")),
    }


@click.group()
def apikey() -> None:
    """Create, list and revoke API keys (admin)."""


@apikey.command()
@click.option("--role", required=True, type=click.Choice(_ROLES), help="what the key may do")
@click.option("--name", default="", help="what the key is for, for people")
@click.option(
    "--expires-in",
    type=click.IntRange(min=1),
    default=None,
    help="seconds until the key stops working (default: never)",
)
@click.option("--reason", default="", help="why, for the audit log")
@output_option
@client_command
def create(connection: Connection, role: str, name: str, expires_in: int | None, reason: str, output: str) -> None:
    """Create a key for --namespace NS (or '*': all namespaces); prints the key once, on the last line."""
    if connection.namespace is None:
        raise click.BadParameter("give the key's namespace, or '*' for all of them", param_hint="'--namespace'")
    namespace = connection.namespace

    async def act(client: Client) -> access_pb2.CreateApiKeyResponse:
        from flowforge.api.v1 import access_pb2

        request = access_pb2.CreateApiKeyRequest(namespace=namespace, role=role, name=name, reason=reason)
        if expires_in is not None:
            request.expires_in.CopyFrom(duration_pb2.Duration(seconds=expires_in))
        response: access_pb2.CreateApiKeyResponse = await client.workflow_service.call("CreateApiKey", request)
        return response

    created = run(connection, act)
    if output == "json":
        emit_json({**_key_dict(created.api_key), "key": created.key})
        return
    details = _key_dict(created.api_key)
    click.echo(f"API key {details['id']} ({details['role']} in {details['namespace']}), shown this once:")
    click.echo(created.key)


@apikey.command(name="list")
@output_option
@client_command
def list_(connection: Connection, output: str) -> None:
    """Every key you administer (never their secrets)."""

    async def act(client: Client) -> list[dict[str, Any]]:
        from flowforge.api.v1 import access_pb2

        response = await client.workflow_service.call("ListApiKeys", access_pb2.ListApiKeysRequest())
        return [_key_dict(k) for k in response.api_keys]

    keys = run(connection, act)
    if output == "json":
        emit_json(keys)
        return
    emit_table(
        ("ID", "NAME", "NAMESPACE", "ROLE", "CREATED", "EXPIRES", "REVOKED"),
        (
            (
                k["id"],
                k["name"],
                k["namespace"],
                k["role"],
                stamp(k["created"]),
                stamp(k["expires"]),
                stamp(k["revoked"]),
            )
            for k in keys
        ),
        empty="no API keys",
    )


@apikey.command()
@click.option("--id", "key_id", required=True, help="the key's id (apikey list)")
@click.option("--reason", default="", help="why, for the audit log")
@client_command
def revoke(connection: Connection, key_id: str, reason: str) -> None:
    """Revoke a key: every server replica refuses it within seconds."""

    async def act(client: Client) -> None:
        from flowforge.api.v1 import access_pb2

        await client.workflow_service.call("RevokeApiKey", access_pb2.RevokeApiKeyRequest(id=key_id, reason=reason))

    run(connection, act)
    click.echo(f"API key {key_id} revoked")


@click.group()
def audit() -> None:
    """Read and verify the audit log (admin)."""


def _record_dict(record: access_pb2.AuditRecord) -> dict[str, Any]:
    return {
        "seq": record.seq,
        "time": _time(record.time, record.HasField("time")),
        "principal": record.principal,
        "action": record.action,
        "namespace": record.namespace,
        "target": record.target,
        "reason": record.reason,
        "details": record.details_json,
        "hash": record.row_hash.hex(),
    }


@audit.command(name="list")
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True, help="newest rows to show")
@output_option
@client_command
def audit_list(connection: Connection, limit: int, output: str) -> None:
    """The newest rows of the audit log, newest first."""

    async def act(client: Client) -> list[dict[str, Any]]:
        from flowforge.api.v1 import access_pb2

        rows: list[dict[str, Any]] = []
        token = b""
        while len(rows) < limit:
            request = access_pb2.ListAuditLogRequest(page_size=min(1000, limit - len(rows)), next_page_token=token)
            response = await client.workflow_service.call("ListAuditLog", request)
            rows += [_record_dict(r) for r in response.records]
            token = response.next_page_token
            if not token:
                break
        return rows[:limit]

    rows = run(connection, act)
    if output == "json":
        emit_json(rows)
        return
    emit_table(
        ("SEQ", "TIME", "PRINCIPAL", "ACTION", "NAMESPACE", "TARGET", "REASON"),
        (
            (r["seq"], stamp(r["time"]), r["principal"], r["action"], r["namespace"], r["target"], r["reason"])
            for r in rows
        ),
        empty="the audit log is empty",
    )


@audit.command()
@client_command
def verify(connection: Connection) -> None:
    """Check the whole hash chain; exit 1 naming the first row edited or deleted."""

    async def act(client: Client) -> access_pb2.VerifyAuditLogResponse:
        from flowforge.api.v1 import access_pb2

        response: access_pb2.VerifyAuditLogResponse = await client.workflow_service.call(
            "VerifyAuditLog", access_pb2.VerifyAuditLogRequest()
        )
        return response

    result = run(connection, act)
    if not result.intact:
        raise click.ClickException(f"audit log broken at row {result.first_bad_seq}: {result.problem}")
    click.echo(f"audit log intact: {result.rows_checked} rows, head {result.head_hash.hex() or '(empty)'}")


@click.group(name="token-key")
def token_key() -> None:
    """Rotate the key that signs task tokens (admin of every namespace)."""


@token_key.command()
@click.option(
    "--grace",
    type=click.IntRange(min=61),
    default=24 * 3600,
    show_default=True,
    help="seconds tokens of the old key stay valid: longer than the longest lease in flight",
)
@click.option("--reason", default="", help="why, for the audit log")
@client_command
def rotate(connection: Connection, grace: int, reason: str) -> None:
    """Add a new signing key; the old one keeps working for --grace seconds."""

    async def act(client: Client) -> access_pb2.RotateTaskTokenKeyResponse:
        from flowforge.api.v1 import access_pb2

        request = access_pb2.RotateTaskTokenKeyRequest(
            previous_key_grace=duration_pb2.Duration(seconds=grace), reason=reason
        )
        response: access_pb2.RotateTaskTokenKeyResponse = await client.workflow_service.call(
            "RotateTaskTokenKey", request
        )
        return response

    rotated = run(connection, act)
    active = stamp(rotated.active_time.ToDatetime(tzinfo=UTC))
    until = stamp(rotated.previous_key_expire_time.ToDatetime(tzinfo=UTC))
    click.echo(f"task token key {rotated.key_id} signs from {active}; the old keys are refused from {until}")
