"""FlowForge: durable workflows for Python.

The public surface is small and named after Temporal's: decorate workflow
classes with :func:`workflow.defn` and activities with :func:`activity.defn`,
connect a :class:`Client`, run a :class:`flowforge.worker.Worker`.
"""

from flowforge import activity, workflow
from flowforge.client import Client, WorkflowHandle
from flowforge.common import Priority, RetryPolicy, WorkflowExecutionStatus

__all__ = [
    "Client",
    "Priority",
    "RetryPolicy",
    "WorkflowExecutionStatus",
    "WorkflowHandle",
    "activity",
    "workflow",
]
