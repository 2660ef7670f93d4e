"""Asynchronous activity completion by id: the task token of an activity's running attempt.

An activity that called ``activity.raise_complete_async()`` keeps its lease; whoever finishes
it reports with the attempt's task token. A caller that knows only the workflow and activity ids
gets that token here, then uses the ordinary token RPCs (heartbeat, completed, failed, canceled),
so fencing, timeouts and retries are exactly those of a worker's own report.
"""

from __future__ import annotations

from flowforge.api.schema import TaskKind, TaskState
from flowforge.server.errors import FailedPrecondition, NotFound
from flowforge.server.history.executions import Executions
from flowforge.server.stores.base import Transaction

__all__ = ["AsyncCompletion"]


class AsyncCompletion(Executions):
    """The token lookup behind ``client.get_async_activity_handle(workflow_id=, activity_id=)``."""

    async def activity_task_token(self, namespace: str, workflow_id: str, run_id: str, activity_id: str) -> bytes:
        """The signed task token of the activity's leased attempt.

        Raises:
            NotFound: No such run, or the run has no activity of that id.
            FailedPrecondition: The activity has no running attempt (finished, or waiting to retry).
        """
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> bytes:
            row = await self.resolve_execution(tx, namespace, workflow_id, run_id)
            tasks = [t for t in await tx.get_activity_tasks(row.run_id, [activity_id]) if t.kind == TaskKind.ACTIVITY]
            if not tasks:
                raise NotFound(
                    f"workflow {row.workflow_id!r} run {row.run_id} has no pending activity {activity_id!r}"
                    " (it finished, or the id is wrong)"
                )
            if tasks[0].state != TaskState.LEASED:
                raise FailedPrecondition(
                    f"activity {activity_id!r} of workflow {row.workflow_id!r} has no running attempt"
                    " (it waits for a worker or for its next retry); report once an attempt runs"
                )
            return self._sign(tasks[0])

        return await self._transaction(body)
