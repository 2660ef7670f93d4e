"""Task queue RPCs: describe (pollers, backlog, oldest task age, dispatch rate)."""

from __future__ import annotations

from google.protobuf import duration_pb2, timestamp_pb2

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.validation import name

__all__ = ["TaskQueueHandlers"]

_TYPES = {"workflow": pb.TASK_QUEUE_TYPE_WORKFLOW, "activity": pb.TASK_QUEUE_TYPE_ACTIVITY}


class TaskQueueHandlers(ServiceBase):
    @rpc
    async def DescribeTaskQueue(
        self, request: pb.DescribeTaskQueueRequest, context: Context
    ) -> pb.DescribeTaskQueueResponse:
        namespace = name(request.namespace, "namespace")
        task_queue = name(request.task_queue, "task_queue")
        await self._engine.ensure_namespace(namespace)
        now, rows = await self._engine.task_queue_backlogs(namespace, task_queue)
        ready = {row.kind.lower(): row for row in rows}
        response = pb.DescribeTaskQueueResponse()
        for poller in self._matching.activity.pollers(namespace, task_queue):
            seen = timestamp_pb2.Timestamp()
            seen.FromMicroseconds(poller.last_access_us)
            response.pollers.add(identity=poller.identity, task_queue_type=_TYPES[poller.kind], last_access_time=seen)
        for kind, queue_type in _TYPES.items():
            row = ready.get(kind)
            age = duration_pb2.Duration()
            age.FromMicroseconds(max(0, now - row.oldest_visible_us) if row else 0)
            response.backlogs.add(
                task_queue_type=queue_type,
                ready_tasks=row.ready if row else 0,
                oldest_task_age=age,
                dispatch_rate=self._matching.activity.dispatch_rate(namespace, task_queue, kind),
            )
        return response
