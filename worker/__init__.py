"""FlowForge workers: poll task queues, replay workflows, run activities."""

from flowforge._worker_interceptors import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    HandleSignalInput,
    Interceptor,
    StartActivityInput,
    StartChildWorkflowInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)
from flowforge.worker._shared_state import SharedStateManager
from flowforge.worker._worker import Worker

__all__ = [
    "ActivityInboundInterceptor",
    "ExecuteActivityInput",
    "ExecuteWorkflowInput",
    "HandleSignalInput",
    "Interceptor",
    "SharedStateManager",
    "StartActivityInput",
    "StartChildWorkflowInput",
    "Worker",
    "WorkflowInboundInterceptor",
    "WorkflowInterceptorClassInput",
    "WorkflowOutboundInterceptor",
]
