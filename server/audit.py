"""The audit log: every admin and operator action and every configuration change,
appended with who, what, where, why and when, each row hashed with the previous
row's hash so an edited or deleted row is found by :func:`verify`.

Every row is appended in the transaction of the change it records: API key changes
append their own; for an audited RPC (terminate, schedules, triggers, namespaces,
...) the interceptor makes its entry :func:`pending` and the engine appends it in
the first write transaction of that RPC that commits (:func:`append_pending`). An
RPC that changed nothing through the engine gets its row in a transaction of its
own once it succeeded.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import json
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

from flowforge.server.stores.contract import AccessOperations
from flowforge.server.stores.rows import AuditRow

__all__ = [
    "AuditEntry",
    "ChainBreak",
    "PendingAudit",
    "append",
    "append_pending",
    "entry_for_rpc",
    "name_pending_target",
    "pending",
    "row_hash",
    "verify",
]

# Bounds on what one row holds, so a caller cannot bloat the log with one request.
_MAX_FIELD = 2000


@dataclasses.dataclass(frozen=True)
class AuditEntry:
    """What happened, before it is numbered and chained."""

    action: str
    namespace: str = ""
    target: str = ""
    reason: str = ""
    details: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def row_hash(previous_hash: bytes, row: AuditRow) -> bytes:
    """SHA-256 of the previous row's hash and this row's fields (not its own hash)."""
    body = json.dumps(
        [row.seq, row.time_us, row.principal, row.action, row.namespace, row.target, row.reason, row.details],
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()
    return hashlib.sha256(previous_hash + body).digest()


async def append(tx: AccessOperations, principal: str, entry: AuditEntry, now_us: int) -> AuditRow:
    """Appends ``entry`` in ``tx`` (the transaction of the change it records)."""
    last_seq, last_hash = await tx.lock_audit_head()
    row = AuditRow(
        seq=last_seq + 1,
        time_us=now_us,
        principal=principal[:_MAX_FIELD],
        action=entry.action[:_MAX_FIELD],
        namespace=entry.namespace[:_MAX_FIELD],
        target=entry.target[:_MAX_FIELD],
        reason=entry.reason[:_MAX_FIELD],
        details=json.dumps(dict(entry.details), sort_keys=True, separators=(",", ":"))[: _MAX_FIELD * 4],
        row_hash=b"",
    )
    row.row_hash = row_hash(last_hash, row)
    await tx.append_audit_row(row)
    return row


@dataclasses.dataclass
class PendingAudit:
    """The audit entry of the RPC being served, until a transaction that appended it commits."""

    principal: str
    entry: AuditEntry
    appended: bool = False


_PENDING: contextvars.ContextVar[PendingAudit | None] = contextvars.ContextVar("flowforge_audit", default=None)


@contextlib.contextmanager
def pending(principal: str, entry: AuditEntry) -> Iterator[PendingAudit]:
    """Makes ``entry`` the audit entry of the RPC served inside the block."""
    record = PendingAudit(principal, entry)
    token = _PENDING.set(record)
    try:
        yield record
    finally:
        _PENDING.reset(token)


async def append_pending(tx: AccessOperations, now_us: int) -> PendingAudit | None:
    """Appends the pending entry of the RPC being served, if not appended yet, in ``tx``;
    returns it so the caller marks it appended once ``tx`` has committed."""
    record = _PENDING.get()
    if record is None or record.appended:
        return None
    await append(tx, record.principal, record.entry, now_us)
    return record


@dataclasses.dataclass(frozen=True)
class ChainBreak:
    """The first row where the chain does not hold, and why."""

    seq: int
    problem: str


async def verify(
    rows: AsyncIterator[AuditRow], head: tuple[int, bytes], progress: Callable[[int], None] | None = None
) -> ChainBreak | None:
    """Walks the log from its first row; None when every row is intact.

    Args:
        rows: Every row in ``seq`` order, up to the head's.
        head: The head (last number and hash) the store recorded: a deleted last
            row shows as a log that ends early.
        progress: Called with each row number checked.
    """
    expected_seq, previous_hash = 1, b""
    async for row in rows:
        if row.seq != expected_seq:
            return ChainBreak(
                expected_seq, f"row {expected_seq} is missing (deleted): the log goes on at row {row.seq}"
            )
        if row_hash(previous_hash, row) != row.row_hash:
            return ChainBreak(row.seq, f"row {row.seq} was edited: its hash does not match its contents")
        if progress is not None:
            progress(row.seq)
        expected_seq, previous_hash = row.seq + 1, row.row_hash
    last_seq, last_hash = head
    if expected_seq - 1 < last_seq:
        return ChainBreak(
            expected_seq, f"row {expected_seq} is missing (deleted): the log should end at row {last_seq}"
        )
    if last_seq and previous_hash != last_hash:
        return ChainBreak(last_seq, f"row {last_seq} does not match the recorded head of the chain")
    return None


def name_pending_target(target: str) -> None:
    """Names what the audited RPC being served acts on when only its handler can tell
    (a published DAG's name and version are inside its definition); before its write."""
    pending = _PENDING.get()
    if pending is not None:
        pending.entry = dataclasses.replace(pending.entry, target=target[:_MAX_FIELD])


def entry_for_rpc(method: str, request: Any, reason: str = "") -> AuditEntry:
    """The audit entry of an audited RPC: its name, namespace, what it acted on and why
    (the request's reason, else ``reason``)."""
    fields = request.DESCRIPTOR.fields_by_name
    namespace = request.namespace if "namespace" in fields else request.name if "name" in fields else ""
    target = ""
    if "execution" in fields:
        target = f"workflow:{request.execution.workflow_id}"
        if request.execution.run_id:
            target += f"/{request.execution.run_id}"
    elif "schedule_id" in fields:
        target = f"schedule:{request.schedule_id}"
    elif "trigger_id" in fields:
        target = f"trigger:{request.trigger_id}"
    elif "trigger" in fields and "trigger_id" in request.trigger.DESCRIPTOR.fields_by_name:
        target = f"trigger:{request.trigger.trigger_id}"
    elif request.DESCRIPTOR.name in ("RetryDeadLettersRequest", "DiscardDeadLettersRequest"):
        target = f"dead_letter:{request.id}" if request.id else "dead_letters:" + _filter_text(request.filter)
    elif "definition" in fields or "digest" in fields:  # DAG versions and aliases (docs/dags.md)
        target = f"dag:{getattr(request, 'name', '')}"
        target += f"@{request.alias}" if getattr(request, "alias", "") else ""
        target += f"={request.digest}" if getattr(request, "digest", "") else ""
    elif "per_second" in fields:  # a rate limit (docs/flow-control.md)
        target = (
            f"task_queue:{request.task_queue}" if request.task_queue else f"concurrency_key:{request.concurrency_key}"
        )
    elif "concurrency_key" in fields:
        target = f"concurrency_key:{request.concurrency_key}"
    elif "activity_type" in fields:  # a circuit breaker (docs/flow-control.md)
        target = f"breaker:{request.activity_type}"
    elif "search_attributes" in fields:
        target = "search_attributes:" + ",".join(sorted(request.search_attributes))
    own = request.reason if "reason" in fields else request.note if "note" in fields else ""
    details = {
        name: getattr(request, name)
        for name in ("max_running", "per_second", "failure_rate", "min_calls", "window_seconds", "open_seconds")
        if name in fields
    }
    return AuditEntry(method.rpartition("/")[2], namespace, target, own or reason, details)


def _filter_text(selection: Any) -> str:
    """A dead-letter filter as ``field=value`` pairs (the fields set)."""
    return ",".join(f"{f.name}={str(v).strip()}".replace("\n", " ") for f, v in selection.ListFields()) or "all"
