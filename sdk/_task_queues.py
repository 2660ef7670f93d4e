"""What :meth:`flowforge.client.Client.describe_task_queue` returns."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

from flowforge._rpc import WorkflowServiceClient
from flowforge._workflow_executions import _timestamp_to_datetime
from flowforge.api.v1 import workflow_service_pb2 as pb

__all__ = ["TaskQueueBacklog", "TaskQueueDescription", "TaskQueuePoller"]

_KINDS = {pb.TASK_QUEUE_TYPE_WORKFLOW: "workflow", pb.TASK_QUEUE_TYPE_ACTIVITY: "activity"}


@dataclasses.dataclass(frozen=True)
class TaskQueuePoller:
    """A worker that polled the queue recently.

    Attributes:
        identity: The identity it polls with (``pid@host`` by default).
        kind: ``"workflow"`` or ``"activity"``: what it polls for.
        last_access_time: When its last poll began or ended (UTC).
    """

    identity: str
    kind: str
    last_access_time: datetime | None


@dataclasses.dataclass(frozen=True)
class TaskQueueBacklog:
    """What waits on the queue for one kind of task.

    Attributes:
        kind: ``"workflow"`` or ``"activity"``.
        ready_tasks: Tasks ready for a worker and not yet taken.
        oldest_task_age: How long the oldest of them has waited (zero without any).
        dispatch_rate: Tasks handed to polls per second over the last minute.
    """

    kind: str
    ready_tasks: int
    oldest_task_age: timedelta
    dispatch_rate: float


@dataclasses.dataclass(frozen=True)
class TaskQueueDescription:
    """A task queue as :meth:`Client.describe_task_queue` sees it.

    Attributes:
        pollers: Workers seen polling in the last five minutes, most recent first
            (as the server replica that answered saw them).
        backlogs: One entry per kind: ``backlogs["workflow"]``, ``backlogs["activity"]``.
    """

    pollers: list[TaskQueuePoller]
    backlogs: dict[str, TaskQueueBacklog]

    @classmethod
    def _from_proto(cls, proto: pb.DescribeTaskQueueResponse) -> TaskQueueDescription:
        return cls(
            pollers=[
                TaskQueuePoller(
                    identity=p.identity,
                    kind=_KINDS.get(p.task_queue_type, "unspecified"),
                    last_access_time=_timestamp_to_datetime(p.last_access_time, p.HasField("last_access_time")),
                )
                for p in proto.pollers
            ],
            backlogs={
                _KINDS.get(b.task_queue_type, "unspecified"): TaskQueueBacklog(
                    kind=_KINDS.get(b.task_queue_type, "unspecified"),
                    ready_tasks=b.ready_tasks,
                    oldest_task_age=b.oldest_task_age.ToTimedelta(),
                    dispatch_rate=b.dispatch_rate,
                )
                for b in proto.backlogs
            },
        )


class _TaskQueueCalls:
    """The task-queue calls of :class:`flowforge.client.Client` (a base class of it)."""

    _workflow_service: WorkflowServiceClient
    _namespace: str

    async def describe_task_queue(self, task_queue: str) -> TaskQueueDescription:
        """Who polls ``task_queue`` and what waits on it: pollers with their identity and
        last poll, and per kind the ready backlog, its oldest task's age and the dispatch rate.

        Raises:
            RPCError: ``INVALID_ARGUMENT`` for an empty name; ``NOT_FOUND`` for an unknown namespace.
        """
        request = pb.DescribeTaskQueueRequest(namespace=self._namespace, task_queue=task_queue)
        return TaskQueueDescription._from_proto(await self._workflow_service.call("DescribeTaskQueue", request))
