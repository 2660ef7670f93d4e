"""The history engine façade: one class whose rooms are the modules of this package.

Read it as the table of contents of the engine; each base class is one concern,
and every public method of each is one operation in one store transaction.
"""

from __future__ import annotations

from flowforge.server.history.activities import ActivityTasks
from flowforge.server.history.async_completion import AsyncCompletion
from flowforge.server.history.batches import Batches
from flowforge.server.history.child_commands import ChildCommands
from flowforge.server.history.commands import Commands
from flowforge.server.history.core import EngineCore
from flowforge.server.history.dag_runs import DagRuns
from flowforge.server.history.dead_letters import DeadLetters
from flowforge.server.history.executions import Executions
from flowforge.server.history.flow_control import FlowControl
from flowforge.server.history.namespaces import Namespaces
from flowforge.server.history.pauses import Pauses
from flowforge.server.history.queries import Queries
from flowforge.server.history.resets import Resets
from flowforge.server.history.run_close import RunClose
from flowforge.server.history.timeouts import Timeouts
from flowforge.server.history.visibility_writes import VisibilityWrites
from flowforge.server.history.workflow_tasks import WorkflowTasks
from flowforge.server.stores.base import TaskQueueBacklogRow

__all__ = ["HistoryEngine"]


class HistoryEngine(
    Timeouts,  # timeouts.py: due timers, expired leases and pending tasks, run timeouts
    ActivityTasks,  # activities.py: lease, heartbeat, complete, fail, cancel, retry
    AsyncCompletion,  # async_completion.py: an activity's task token by id (async completion)
    WorkflowTasks,  # workflow_tasks.py: lease, hand-out, complete (eager dispatch), fail
    Commands,  # commands.py: load -> apply (the command table) -> save (validation: command_validation.py)
    ChildCommands,  # child_commands.py: start, signal and cancel children
    Queries,  # queries.py: ask, lease to a poll, answer
    Batches,  # batches.py: one operation over the executions a query matched, tracked as a job
    Resets,  # resets.py: a new run keeping history up to a workflow task
    DagRuns,  # dag_runs.py: declarative DAGs: versions, aliases, runs driven by the server
    Pauses,  # pauses.py: hold a run's dispatch, release it
    Executions,  # executions.py: start, describe, history, cancel, terminate, signal
    RunClose,  # run_close.py: retry, continue-as-new, parent close policy, child outcomes
    VisibilityWrites,  # visibility_writes.py: search attributes, memos, list and count
    FlowControl,  # flow_control.py: dispatch order, concurrency and rate limits
    Namespaces,  # namespaces.py: create, update, describe, list; quotas at admission
    DeadLetters,  # dead_letters.py: parked activities listed, retried, discarded
    EngineCore,  # core.py: transactions, reads, limits, the namespace check, fencing
):
    """Executions, their history and their tasks, on top of a :class:`Store`.

    Every change goes through a :class:`~flowforge.server.history.mutation._Mutation`
    saved in one transaction (mutation.py).
    """

    # ------------------------------------------------------------------ a poll's look (matching.py)

    async def visible_tasks(self, namespace: str, kind: str, task_queue: str, limit: int) -> int:
        """How many tasks a poll of the queue could lease now, at most ``limit`` (a read, no lock)."""
        return await self.read(
            lambda tx: tx.count_visible_tasks(namespace, kind, task_queue, self.clock.now_us(), limit),
            one_statement=True,
        )

    async def task_queue_backlogs(
        self, namespace: str | None = None, task_queue: str | None = None
    ) -> tuple[int, list[TaskQueueBacklogRow]]:
        """Now (µs) and the ready tasks per (namespace, queue, kind), optionally of one
        namespace or queue: a read, for the metrics gauges and DescribeTaskQueue."""
        now = self.clock.now_us()
        return now, await self.read(lambda tx: tx.task_queue_backlogs(now, namespace=namespace, task_queue=task_queue))

    async def visible_workflow_work(self, namespace: str, task_queue: str, limit: int) -> tuple[bool, int]:
        """Whether a query waits on the queue, and how many workflow tasks a poll could
        lease now (at most ``limit``): one statement, no lock, for a poll's look."""

        return await self.read(
            lambda tx: tx.visible_workflow_work(namespace, task_queue, self.clock.now_us(), limit), one_statement=True
        )
