"""The history engine: every state change of an execution, each in one transaction.

Invariants kept here (the numbered rules of docs/architecture.md):

1. The execution row, its new events and the task/timer rows they imply are
   written by one :meth:`_Mutation.save` inside one store transaction
   (mutation.py); closing a run sets off its consequences (next run, parent's
   outcome, children's close policy) in that same transaction (run_close.py).
2. Event ids come only from ``executions.next_event_id``, which every save checks
   against the version it read (optimistic concurrency), so two writers can never
   both append event N; history rows are only ever inserted.
3. A report on a task must present the lease's fencing token
   (``EngineCore._leased_task`` in core.py); otherwise it is refused and changes nothing.
4. An outcome deletes the task row in the same transaction that records the
   outcome, so a second report of the same task finds no lease: never a second event.
5. Workers only report; retries, timeouts and failures are decided here from the
   policy recorded when the activity was scheduled (activities.py, timeouts.py).
8. Bad input is refused before anything is written (input_checks.py,
   command_validation.py), or raised inside the transaction, which then rolls back.

While a workflow task is started, new events are buffered on the execution row
and appended when the task closes (docs/history-events.md), so the batch a worker
saw is exactly what history says it saw.

The rooms: engine.py is the façade (:class:`HistoryEngine`), composed of one
class per concern; data.py holds the value types callers see.
"""

from flowforge.server.history.data import (
    ActivityCompletion,
    EngineConfig,
    FoldedWorkflowTask,
    LeasedActivityTask,
    LeasedQuery,
    LeasedWorkflowTask,
    StartSignal,
    WorkflowTaskCompletion,
    WorkflowTaskReport,
)
from flowforge.server.history.engine import HistoryEngine
from flowforge.server.history.mutation import EagerStart, StartedWorkflowTask, queue_channel

__all__ = [
    "ActivityCompletion",
    "EagerStart",
    "EngineConfig",
    "FoldedWorkflowTask",
    "HistoryEngine",
    "LeasedActivityTask",
    "LeasedQuery",
    "LeasedWorkflowTask",
    "StartSignal",
    "StartedWorkflowTask",
    "WorkflowTaskCompletion",
    "WorkflowTaskReport",
    "queue_channel",
]
