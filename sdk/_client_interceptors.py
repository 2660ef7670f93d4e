"""Client interceptors (``flowforge.client.Interceptor``), shaped like Temporal's
``temporalio.client`` interceptors: each wraps the next :class:`OutboundInterceptor`
and may add headers to, or do something around, the calls that start or signal a
workflow or query it. Headers travel in the request and are recorded in history, so
the workflow's interceptors read them (e.g. a trace context) on any worker, after a
crash and on replay.

Kept minimal: the inputs carry the call's names, its ``headers`` (name → Payload, an
interceptor adds to them) and send themselves; the result is the server's response.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from flowforge.api.v1 import common_pb2, workflow_service_pb2

__all__ = [
    "Interceptor",
    "OutboundInterceptor",
    "QueryWorkflowInput",
    "SignalWorkflowInput",
    "StartWorkflowInput",
]


@dataclasses.dataclass
class StartWorkflowInput:
    """A workflow start about to be sent.

    Attributes:
        workflow: The workflow type name.
        id: The workflow id.
        task_queue: The task queue of its workflow tasks.
        headers: Sent with the start and recorded in ``WorkflowExecutionStarted``.
    """

    workflow: str
    id: str
    task_queue: str
    headers: dict[str, common_pb2.Payload]
    _send: Callable[[common_pb2.Header], Awaitable[workflow_service_pb2.StartWorkflowExecutionResponse]] = (
        dataclasses.field(repr=False)
    )


@dataclasses.dataclass
class SignalWorkflowInput:
    """A signal about to be sent.

    Attributes:
        id: The workflow id.
        run_id: The run, or ``None`` for the latest.
        signal: The signal name.
        headers: Sent with the signal and recorded in ``WorkflowExecutionSignaled``.
    """

    id: str
    run_id: str | None
    signal: str
    headers: dict[str, common_pb2.Payload]
    _send: Callable[[common_pb2.Header], Awaitable[Any]] = dataclasses.field(repr=False)


@dataclasses.dataclass
class QueryWorkflowInput:
    """A query about to be sent.

    Attributes:
        id: The workflow id.
        run_id: The run, or ``None`` for the latest.
        query: The query name.
    """

    id: str
    run_id: str | None
    query: str
    _send: Callable[[], Awaitable[workflow_service_pb2.QueryWorkflowResponse]] = dataclasses.field(repr=False)


class OutboundInterceptor:
    """Sends a client's workflow calls; subclass and call ``self.next`` to wrap them."""

    def __init__(self, next: OutboundInterceptor | None) -> None:
        self.next = next

    async def start_workflow(self, input: StartWorkflowInput) -> workflow_service_pb2.StartWorkflowExecutionResponse:
        """Starts the workflow; returns the server's answer."""
        assert self.next is not None
        return await self.next.start_workflow(input)

    async def signal_workflow(self, input: SignalWorkflowInput) -> None:
        """Sends the signal."""
        assert self.next is not None
        await self.next.signal_workflow(input)

    async def query_workflow(self, input: QueryWorkflowInput) -> workflow_service_pb2.QueryWorkflowResponse:
        """Sends the query; returns the server's answer."""
        assert self.next is not None
        return await self.next.query_workflow(input)


class Interceptor:
    """A client interceptor (Temporal's ``temporalio.client.Interceptor``):
    ``Client.connect(..., interceptors=[...])``. One that is also a
    :class:`flowforge.worker.Interceptor` is used by every worker built on the client."""

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        """The outbound chain with this interceptor in front of ``next``."""
        return next


def _header(headers: dict[str, common_pb2.Payload]) -> common_pb2.Header:
    header = common_pb2.Header()
    for name, value in headers.items():
        header.fields[name].CopyFrom(value)
    return header


class _RootOutbound(OutboundInterceptor):
    """The end of the chain: the RPCs themselves, with the headers the chain set."""

    def __init__(self) -> None:
        super().__init__(None)

    async def start_workflow(self, input: StartWorkflowInput) -> workflow_service_pb2.StartWorkflowExecutionResponse:
        return await input._send(_header(input.headers))

    async def signal_workflow(self, input: SignalWorkflowInput) -> None:
        await input._send(_header(input.headers))

    async def query_workflow(self, input: QueryWorkflowInput) -> workflow_service_pb2.QueryWorkflowResponse:
        return await input._send()


def outbound_chain(interceptors: list[Any]) -> OutboundInterceptor:
    """The root wrapped by each client interceptor, the first outermost."""
    chain: OutboundInterceptor = _RootOutbound()
    for interceptor in reversed(interceptors):
        if isinstance(interceptor, Interceptor):
            chain = interceptor.intercept_client(chain)
    return chain
