"""Batch operations: one operation (cancel, terminate, signal, reset, pause) applied to
every execution a visibility query matched, as a job tracked in the store
(docs/operations.md).

A job lists its executions newest first with a keyset cursor, so executions started
after it began are not in it and none is met twice. Each execution is handled in one
transaction together with the job's progress (done or failed, and the cursor), and that
transaction also appends the execution's audit row naming the batch: a server restarted
halfway goes on from exactly where it stopped, and the counts are exact. The pacing
(``rps``) and the runner's loop are in :mod:`flowforge.server.batches`.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

from flowforge.api.v1 import common_pb2
from flowforge.server import audit
from flowforge.server.errors import InvalidArgument, NotFound, ServiceError
from flowforge.server.history.data import StartSignal
from flowforge.server.history.pauses import Pauses
from flowforge.server.history.resets import Resets
from flowforge.server.stores.base import ExecutionRow, Transaction
from flowforge.server.stores.rows import BatchJobRow, ListOrder
from flowforge.server.visibility import list_order, page_token

__all__ = ["BATCH_OPERATIONS", "Batches"]

#: The operations a batch applies.
BATCH_OPERATIONS = ("cancel", "terminate", "signal", "reset", "pause")
_RUNNING, _COMPLETED = "RUNNING", "COMPLETED"


class Batches(Resets, Pauses):
    """Batch jobs: started, described, listed, and advanced one execution at a time."""

    async def start_batch(
        self,
        namespace: str,
        operation: str,
        query: str,
        *,
        reason: str,
        identity: str,
        arguments: dict[str, Any],
        rps: float,
    ) -> str:
        """Records a job over the executions ``query`` matches now; returns its id
        (INVALID_ARGUMENT for a query that does not parse or has an ORDER BY)."""
        if list_order(query) != ListOrder():
            raise InvalidArgument(
                "a batch goes through its executions newest first (that is how it resumes after a"
                " restart); remove the ORDER BY from its query"
            )
        total = await self.count_executions(namespace, query)
        now = self.clock.now_us()
        row = BatchJobRow(
            id=uuid.uuid4().hex,
            namespace=namespace,
            operation=operation,
            query=query,
            reason=reason,
            identity=identity,
            arguments=json.dumps(arguments, sort_keys=True),
            rps=rps,
            state=_RUNNING,
            total=total,
            done=0,
            failed=0,
            cursor_start_us=None,
            cursor_run_id=None,
            create_us=now,
            update_us=now,
        )
        await self._transaction(lambda tx: tx.insert_batch_job(row))
        return row.id

    async def describe_batch(self, namespace: str, job_id: str) -> BatchJobRow:
        """The job; NOT_FOUND if the namespace has none of that id."""
        await self.ensure_namespace(namespace)
        row = await self.read(lambda tx: tx.get_batch_job(namespace, job_id))
        if row is None:
            raise NotFound(f"no batch job {job_id!r} in namespace {namespace!r}; `flowforge batch list` shows them")
        return row

    async def list_batches(self, namespace: str, limit: int) -> list[BatchJobRow]:
        """The namespace's jobs, newest first."""
        await self.ensure_namespace(namespace)
        return await self.read(lambda tx: tx.list_batch_jobs(namespace, limit))

    async def running_batches(self, limit: int = 100) -> list[BatchJobRow]:
        """Jobs still running, oldest first (for the runner)."""
        return await self.read(lambda tx: tx.running_batch_jobs(limit))

    async def next_batch_page(self, job: BatchJobRow, page_size: int) -> list[ExecutionRow]:
        """The next executions of the job, after its cursor (newest first)."""
        token = b""
        if job.cursor_start_us is not None:
            token = page_token(ListOrder(), (job.cursor_start_us, job.cursor_run_id or ""))
        rows, _, _ = await self.list_executions(
            job.namespace, job.query, page_size=page_size, page_token=token, equal={}
        )
        return rows

    async def apply_batch_item(self, job: BatchJobRow, execution: ExecutionRow) -> bool:
        """Applies the job's operation to one execution, with the job's progress, in one
        transaction; if the operation is refused (e.g. the run closed meanwhile) it counts
        as failed in a transaction of its own. Returns whether it was applied."""
        try:
            return await self._transaction(lambda tx: self._advance_batch(tx, job, execution, apply=True))
        except ServiceError:
            await self._transaction(lambda tx: self._advance_batch(tx, job, execution, apply=False))
            return False

    async def complete_batch(self, job: BatchJobRow) -> None:
        """Marks the job completed: its query has nothing after the cursor."""

        async def body(tx: Transaction) -> None:
            row = await tx.get_batch_job(job.namespace, job.id, for_update=True)
            if row is not None and row.state == _RUNNING:
                row.state, row.update_us = _COMPLETED, self.clock.now_us()
                await tx.update_batch_job(row)

        await self._transaction(body)

    async def _advance_batch(self, tx: Transaction, job: BatchJobRow, execution: ExecutionRow, *, apply: bool) -> bool:
        row = await tx.get_batch_job(job.namespace, job.id, for_update=True)
        key = (execution.start_us, execution.run_id)
        if row is None or row.state != _RUNNING:
            return False
        if row.cursor_start_us is not None and key >= (row.cursor_start_us, row.cursor_run_id or ""):
            return False  # handled already (a runner that went on after a restart)
        if apply:
            await self._apply_operation(tx, row, execution)
            row.done += 1
        else:
            row.failed += 1
        row.cursor_start_us, row.cursor_run_id = key
        row.update_us = self.clock.now_us()
        await tx.update_batch_job(row)
        job.done, job.failed, job.cursor_start_us, job.cursor_run_id = row.done, row.failed, *key
        return apply

    async def _apply_operation(self, tx: Transaction, job: BatchJobRow, execution: ExecutionRow) -> None:
        """The operation on one execution, and its audit row naming the batch."""
        namespace, workflow_id, run_id = job.namespace, execution.workflow_id, execution.run_id
        reason = f"batch {job.id}: {job.reason}"
        arguments = json.loads(job.arguments)
        if job.operation == "cancel":
            await self.request_cancel(namespace, workflow_id, run_id, reason, job.identity, tx=tx)
        elif job.operation == "terminate":
            await self.terminate(namespace, workflow_id, run_id, reason, job.identity, tx=tx)
        elif job.operation == "signal":
            signal = StartSignal(
                arguments["signal_name"], common_pb2.Payloads.FromString(base64.b64decode(arguments["input"]))
            )
            await self._signal(
                tx, await self._running_execution(tx, namespace, workflow_id, run_id), signal, job.identity
            )
        elif job.operation == "reset":
            await self.reset(
                namespace,
                workflow_id,
                run_id,
                event_id=0,
                reset_type=arguments["reset_type"],
                reason=reason,
                identity=job.identity,
                tx=tx,
            )
        else:
            await self.pause(namespace, workflow_id, run_id, reason=reason, identity=job.identity, tx=tx)
        entry = audit.AuditEntry(
            f"Batch{job.operation.capitalize()}",
            namespace,
            f"workflow:{workflow_id}/{run_id}",
            job.reason,
            {"batch_id": job.id},
        )
        await audit.append(tx, job.identity, entry, self.clock.now_us())
