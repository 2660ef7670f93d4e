"""Queries, answered by a worker through the store (docs/signals-and-queries.md#queries).

The replica that took the call and the one the worker polls need not be the
same: the call writes a workflow_queries row and wakes the task queue's pollers;
a poll leases the row (before workflow tasks: queries are short and someone is
waiting) and returns it with the run's history; the worker's answer is written to
the row and wakes the caller, who reads it and deletes the row. Nothing touches
the execution row or its history, so a query works on closed runs too.
"""

from __future__ import annotations

import asyncio
import time

from flowforge.api.schema import QueryState, TaskKind
from flowforge.api.v1 import common_pb2
from flowforge.server.errors import DeadlineExceeded, FailedPrecondition, InvalidArgument
from flowforge.server.history.data import LeasedQuery
from flowforge.server.history.executions import Executions
from flowforge.server.history.mutation import query_answer_channel, queue_channel, us
from flowforge.server.stores.base import QueryRow, Transaction
from flowforge.server.tokens import TaskToken

__all__ = ["Queries"]

# How long a query row outlives its caller's deadline before the sweep may delete it.
_QUERY_ROW_GRACE_S = 60.0


class Queries(Executions):
    """A query's round trip: asked, leased to a poll, answered."""

    async def query_workflow(
        self,
        namespace: str,
        workflow_id: str,
        run_id: str,
        query_type: str,
        args: common_pb2.Payloads,
        timeout_s: float,
    ) -> common_pb2.Payloads:
        """Asks a worker of the run's task queue to answer a query; waits up to ``timeout_s``.

        Raises INVALID_ARGUMENT when the worker reports the query failed (no such
        handler, the handler raised, the replay failed), DEADLINE_EXCEEDED when no
        worker answered in time.
        """
        self.check_payloads(args, "the query arguments")
        await self.ensure_namespace(namespace)
        deadline = time.monotonic() + timeout_s

        async def body(tx: Transaction) -> QueryRow:
            row = await self.resolve_execution(tx, namespace, workflow_id, run_id)
            if row.dag_digest is not None:
                raise FailedPrecondition(f"{workflow_id!r} is a declarative DAG run: no workflow code answers queries")
            now = self.clock.now_us()
            await tx.delete_expired_queries(now)
            query = QueryRow(
                query_id=None,
                namespace=namespace,
                run_id=row.run_id,
                workflow_id=row.workflow_id,
                workflow_type=row.workflow_type,
                task_queue=row.task_queue,
                query_type=query_type,
                args=args.SerializeToString(),
                state=QueryState.PENDING,
                visible_us=now,
                fencing_token=0,
                answer=None,
                error=None,
                create_us=now,
                expires_us=now + us(timeout_s + _QUERY_ROW_GRACE_S),
            )
            await tx.insert_query(query)
            tx.notify_after_commit(queue_channel(namespace, TaskKind.WORKFLOW, row.task_queue))
            return query

        query = await self._transaction(body)
        assert query.query_id is not None
        query_id = query.query_id
        try:
            while True:
                wake = self.store.notifier.listen(query_answer_channel(query_id))
                current = await self.read(lambda tx: tx.get_query(namespace, query_id))
                if current is not None and current.state == QueryState.ANSWERED:
                    if current.error is not None:
                        raise InvalidArgument(f"query {query_type!r} failed: {current.error}")
                    answer = common_pb2.Payloads()
                    answer.ParseFromString(current.answer or b"")
                    return answer
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise DeadlineExceeded(
                        f"no worker answered query {query_type!r} of workflow {query.workflow_id!r} within"
                        f" {timeout_s:g}s; is a worker for workflow type {query.workflow_type!r} polling task"
                        f" queue {query.task_queue!r}?"
                    )
                # Re-check now and then: with several replicas a notification may be lost.
                await self.store.wait_for_notification(wake, min(remaining, 1.0))
        finally:
            await self._transaction(lambda tx: tx.delete_query(namespace, query_id))

    async def try_lease_query(self, namespace: str, task_queue: str) -> LeasedQuery | None:
        """Leases the oldest visible query of the queue, with its run's history, or returns None."""

        async def body(tx: Transaction) -> QueryRow | None:
            now = self.clock.now_us()
            query = await tx.lease_next_query(namespace, task_queue, now)
            if query is None:
                return None
            query.fencing_token += 1
            query.visible_us = now + us(self.config.query_lease_s)
            await tx.update_query(query)
            return query

        query = await self._transaction(body, shielded=False)
        if query is None:
            return None
        assert query.query_id is not None
        token = TaskToken(query.namespace, query.query_id, query.fencing_token, TaskKind.QUERY, query.run_id)
        signed = self.signer.sign(token)
        try:
            history = await self.read(lambda tx: tx.read_events(namespace, query.run_id))
        except asyncio.CancelledError:
            # The poll went away after the lease committed: offer the query again now
            # rather than when its lease runs out (its caller is waiting).
            await asyncio.shield(self.release_query(signed))
            raise
        return LeasedQuery(signed, query, history)

    async def release_query(self, raw_token: bytes) -> None:
        """Offers a query leased to a poll whose caller went away to the next poll at once."""
        token = self.signer.verify(raw_token, TaskKind.QUERY)

        async def body(tx: Transaction) -> None:
            query = await tx.get_query(token.namespace, token.task_id, for_update=True)
            if query is not None and query.state == QueryState.PENDING and query.fencing_token == token.fencing_token:
                query.visible_us = self.clock.now_us()
                await tx.update_query(query)
                tx.notify_after_commit(queue_channel(query.namespace, TaskKind.WORKFLOW, query.task_queue))

        await self._transaction(body)

    async def answer_query(
        self, raw_token: bytes, namespace: str, answer: common_pb2.Payloads | None, error: str | None
    ) -> None:
        """Records a worker's answer (or the query's failure) and wakes the caller.
        FAILED_PRECONDITION if the lease is gone (answered already, or the caller gave up)."""
        token = self._token(raw_token, namespace, TaskKind.QUERY)
        if answer is not None:
            self.check_payloads(answer, "the query result")

        async def body(tx: Transaction) -> None:
            query = await tx.get_query(token.namespace, token.task_id, for_update=True)
            if query is None or query.state != QueryState.PENDING or query.fencing_token != token.fencing_token:
                raise FailedPrecondition(
                    "this query is no longer leased with this token (answered already, its lease expired,"
                    " or its caller gave up); the answer changes nothing"
                )
            query.state = QueryState.ANSWERED
            query.answer = answer.SerializeToString() if answer is not None else None
            query.error = error if answer is None else None
            await tx.update_query(query)
            tx.notify_after_commit(query_answer_channel(query.query_id or 0))

        await self._transaction(body)
