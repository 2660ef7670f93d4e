"""The gRPC ``flowforge.api.v1.WorkflowService``: the handlers of every concern in one servicer."""

from __future__ import annotations

from flowforge.api.v1 import workflow_service_pb2_grpc as pb_grpc
from flowforge.server.frontend.breakers import BreakerHandlers
from flowforge.server.frontend.dags import DagHandlers
from flowforge.server.frontend.dead_letters import DeadLetterHandlers
from flowforge.server.frontend.flow_control import FlowControlHandlers
from flowforge.server.frontend.namespaces import NamespaceHandlers
from flowforge.server.frontend.remediation import RemediationHandlers
from flowforge.server.frontend.schedules import ScheduleHandlers
from flowforge.server.frontend.signals_queries import SignalQueryHandlers
from flowforge.server.frontend.task_queues import TaskQueueHandlers
from flowforge.server.frontend.tasks import TaskHandlers
from flowforge.server.frontend.triggers import TriggerHandlers
from flowforge.server.frontend.visibility import VisibilityHandlers
from flowforge.server.frontend.worker_stream import WorkerStreamHandlers
from flowforge.server.frontend.workflows import WorkflowHandlers

__all__ = ["WorkflowService"]


class WorkflowService(
    NamespaceHandlers,
    WorkflowHandlers,
    SignalQueryHandlers,
    TaskHandlers,
    WorkerStreamHandlers,
    TaskQueueHandlers,
    VisibilityHandlers,
    ScheduleHandlers,
    TriggerHandlers,
    DeadLetterHandlers,
    RemediationHandlers,
    DagHandlers,
    FlowControlHandlers,
    BreakerHandlers,
    pb_grpc.WorkflowServiceServicer,
):
    """gRPC ``flowforge.api.v1.WorkflowService`` over one history engine (constructed
    with the engine, matching, the event router, the schedules and the scheduler)."""
