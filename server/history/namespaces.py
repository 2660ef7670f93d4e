"""Namespaces and their quotas: create, update, describe, list, and admission.

The quotas hold across replicas because they are checked against the namespace's
row inside the transaction that admits the work: the row is locked ``FOR UPDATE``
(PostgreSQL; SQLite serializes writers), so two replicas admitting at once queue
on it and the second one counts what the first one admitted.

- ``max_running_executions``: a start is refused while that many runs are running.
- ``start_rate``: a token bucket kept in the row (``start_tokens`` refilled at
  ``start_rate`` per second since ``start_tokens_us``, holding at most
  ``max(1, start_rate)``); a start takes one token or is refused.
- ``max_concurrent_activities``: a poll leases no activity task while the namespace
  has that many leased; the tasks wait in their queue (accepted work is delayed,
  never dropped, rule 7).

Over a quota a start gets ``RESOURCE_EXHAUSTED`` naming the quota and when to retry.
Closed runs past the namespace's retention are purged by the retention sweeper
(server/retention.py) through :meth:`Namespaces.purge_expired_runs`.

Only new work is refused: continue-as-new, retries, cron runs and child workflows
of admitted runs are part of the work already accepted.
"""

from __future__ import annotations

import dataclasses
import time

from flowforge.api.schema import TaskKind
from flowforge.server.errors import AlreadyExists, NotFound, ResourceExhausted
from flowforge.server.history.core import EngineCore
from flowforge.server.stores.base import NamespaceRow, Transaction

__all__ = ["QUOTA_CACHE_S", "NamespaceChanges", "Namespaces"]

#: How long a replica trusts the quotas it read (a change reaches every replica within this).
QUOTA_CACHE_S = 2.0


@dataclasses.dataclass(frozen=True)
class NamespaceChanges:
    """The settings of a namespace to create or change; ``None`` keeps the current value."""

    description: str | None = None
    retention_s: int | None = None
    max_running_executions: int | None = None
    start_rate: float | None = None
    max_concurrent_activities: int | None = None

    def apply(self, row: NamespaceRow) -> NamespaceRow:
        """``row`` with these changes; a new or raised start rate starts with a full bucket."""
        changed = dataclasses.replace(
            row,
            **{f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None},
        )
        if changed.start_rate != row.start_rate:
            changed.start_tokens = _burst(changed.start_rate)
        return changed


def _burst(rate: float) -> float:
    return max(1.0, rate)


def take_start_token(row: NamespaceRow, now_us: int) -> float | None:
    """Refills the row's bucket to ``now_us`` and takes one token; returns None when it
    took one, else the seconds until a token is there (the row is refilled either way)."""
    elapsed_s = max(0, now_us - row.start_tokens_us) / 1e6
    tokens = min(_burst(row.start_rate), row.start_tokens + elapsed_s * row.start_rate)
    row.start_tokens_us = now_us
    if tokens >= 1.0:
        row.start_tokens = tokens - 1.0
        return None
    row.start_tokens = tokens
    return (1.0 - tokens) / row.start_rate


class Namespaces(EngineCore):
    """Namespaces, their quotas, and the admission checks against them."""

    async def register_namespace(self, name: str, changes: NamespaceChanges) -> NamespaceRow:
        """Creates a namespace; ALREADY_EXISTS if the name is taken."""
        row = changes.apply(NamespaceRow(name, "", 0, self.clock.now_us()))
        row.start_tokens_us = row.create_us

        async def body(tx: Transaction) -> NamespaceRow:
            if await tx.get_namespace(name) is not None:
                raise AlreadyExists(f"namespace {name!r} already exists")
            await tx.insert_namespace(row)
            return row

        return await self._transaction(body)

    async def update_namespace(self, name: str, changes: NamespaceChanges) -> NamespaceRow:
        """Changes the settings given; NOT_FOUND if there is no such namespace."""

        async def body(tx: Transaction) -> NamespaceRow:
            row = await tx.get_namespace(name, for_update=True)
            if row is None:
                raise NotFound(f"namespace {name!r} does not exist")
            changed = changes.apply(row)
            changed.start_tokens_us = (
                self.clock.now_us() if changed.start_rate != row.start_rate else row.start_tokens_us
            )
            await tx.update_namespace(changed)
            return changed

        row = await self._transaction(body)
        self._namespace_quotas.pop(name, None)
        return row

    async def describe_namespace(self, name: str) -> NamespaceRow:
        """The namespace; NOT_FOUND if there is none of that name."""
        row = await self.read(lambda tx: tx.get_namespace(name))
        if row is None:
            raise NotFound(f"namespace {name!r} does not exist")
        return row

    async def list_namespaces(self) -> list[NamespaceRow]:
        """Every namespace."""
        return await self.read(lambda tx: tx.list_namespaces())

    # ------------------------------------------------------------------ admission

    async def namespace_quotas(self, name: str, tx: Transaction | None = None) -> NamespaceRow | None:
        """The namespace as this replica last read it (at most :data:`QUOTA_CACHE_S` old),
        read again through ``tx`` (else a read snapshot) when older: tells the hot paths
        whether a quota needs checking at all without a statement per call."""
        cached = self._namespace_quotas.get(name)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        row = await (tx.get_namespace(name) if tx is not None else self.read(lambda tx: tx.get_namespace(name)))
        if row is not None:
            self._namespace_quotas[name] = (time.monotonic() + QUOTA_CACHE_S, row)
        return row

    async def admit_start(self, tx: Transaction, namespace: str) -> None:
        """Inside a start's transaction: RESOURCE_EXHAUSTED if the start would exceed the
        namespace's running-executions quota or start rate; otherwise takes its token."""
        cached = await self.namespace_quotas(namespace, tx)
        if cached is None or not (cached.max_running_executions or cached.start_rate):
            return
        row = await tx.get_namespace(namespace, for_update=True)
        if row is None:
            return
        if row.max_running_executions:
            running = await tx.count_running_executions(namespace, row.max_running_executions)
            if running >= row.max_running_executions:
                self.metrics.quota_refusals.labels(namespace, "max_running_executions").inc()
                raise ResourceExhausted(
                    f"namespace {namespace!r} is at its max_running_executions quota ({row.max_running_executions}"
                    " running); retry after one of its runs closes, or raise the quota with"
                    f" `flowforge namespace update {namespace} --max-running-executions N`"
                )
        if row.start_rate:
            wait_s = take_start_token(row, self.clock.now_us())
            if wait_s is not None:
                self.metrics.quota_refusals.labels(namespace, "start_rate").inc()
                raise ResourceExhausted(
                    f"namespace {namespace!r} is over its start_rate quota ({row.start_rate:g} starts per second);"
                    f" retry in {max(wait_s, 0.001):.3f}s"
                )
            await tx.update_namespace(row)

    async def activity_slot_free(self, tx: Transaction, namespace: str) -> bool:
        """Inside an activity lease's transaction: whether the namespace may lease one
        more activity task under its max_concurrent_activities quota."""
        cached = await self.namespace_quotas(namespace, tx)
        if cached is None or not cached.max_concurrent_activities:
            return True
        row = await tx.get_namespace(namespace, for_update=True)
        if row is None or not row.max_concurrent_activities:
            return True
        leased = await tx.count_leased_tasks(namespace, TaskKind.ACTIVITY, row.max_concurrent_activities)
        return leased < row.max_concurrent_activities

    # ------------------------------------------------------------------ retention

    async def purge_expired_runs(self, namespace: str, batch: int) -> int:
        """Purges up to ``batch`` runs of the namespace closed longer ago than its
        retention, in one transaction, and records the pass on the namespace (last
        purge time, purged count); returns how many runs were purged."""

        async def body(tx: Transaction) -> int:
            row = await tx.get_namespace(namespace, for_update=True)
            if row is None:
                return 0
            now = self.clock.now_us()
            run_ids = await tx.closed_runs_before(namespace, now - row.retention_s * 1_000_000, batch)
            purged = await tx.purge_runs(namespace, run_ids)
            row.last_purge_us = now
            row.purged_executions += purged
            await tx.update_namespace(row)
            return purged

        return await self._transaction(body)

    async def eager_activity_slots(self, raw_token: bytes, requested: int) -> int:
        """How many activity tasks a workflow task completion may lease eagerly: none in
        a namespace with a concurrency quota (its polls lease them, one checked slot each)."""
        if not requested:
            return 0
        token = self.signer.verify(raw_token, expected_kind=None)
        row = await self.namespace_quotas(token.namespace)
        return 0 if row is not None and row.max_concurrent_activities else requested
