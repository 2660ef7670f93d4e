"""Asynchronous activity completion from the client (Temporal's ``AsyncActivityHandle``).

An activity that called ``activity.raise_complete_async()`` is finished by whoever holds its
task token, or knows its workflow and activity ids. The handle reports with the ordinary token
RPCs (``RespondActivityTask*``, ``RecordActivityTaskHeartbeat``), so the server fences, times out
and retries it exactly as a worker's own report: a report for an attempt whose lease is gone is
``FAILED_PRECONDITION`` and changes nothing, and a second report of the same attempt too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from flowforge.api.v1 import common_pb2, workflow_service_pb2
from flowforge.converter import error_to_failure
from flowforge.exceptions import AsyncActivityCancelledError

if TYPE_CHECKING:
    from flowforge.client import Client

__all__ = ["AsyncActivityHandle"]


class AsyncActivityHandle:
    """Completes, fails, heartbeats or cancels an activity running asynchronously.

    Get one with ``client.get_async_activity_handle(task_token=...)`` or
    ``client.get_async_activity_handle(workflow_id=..., run_id=..., activity_id=...)``; by id,
    each call reports for the attempt running at that moment.
    """

    def __init__(
        self,
        client: Client,
        *,
        task_token: bytes | None = None,
        workflow_id: str | None = None,
        run_id: str | None = None,
        activity_id: str | None = None,
    ) -> None:
        if (task_token is None) == (workflow_id is None or activity_id is None):
            raise ValueError("give the task_token, or the workflow_id and activity_id (and optionally run_id)")
        self._client = client
        self._task_token = task_token
        self._workflow_id = workflow_id or ""
        self._run_id = run_id or ""
        self._activity_id = activity_id or ""

    async def _token(self) -> bytes:
        if self._task_token is not None:
            return self._task_token
        response = await self._client.workflow_service.call(
            "GetActivityTaskToken",
            workflow_service_pb2.GetActivityTaskTokenRequest(
                namespace=self._client.namespace,
                execution=common_pb2.WorkflowExecution(workflow_id=self._workflow_id, run_id=self._run_id),
                activity_id=self._activity_id,
            ),
        )
        token: bytes = response.task_token
        return token

    async def complete(self, result: Any = None) -> None:
        """Completes the activity with ``result``.

        Raises:
            RPCError: ``FAILED_PRECONDITION`` when the attempt no longer holds its lease (it timed
                out, or was reported already), ``INVALID_ARGUMENT`` for a forged token.
        """
        await self._client.workflow_service.call(
            "RespondActivityTaskCompleted",
            workflow_service_pb2.RespondActivityTaskCompletedRequest(
                namespace=self._client.namespace,
                task_token=await self._token(),
                result=self._client.data_converter.to_payloads([result]),
                identity=self._client.identity,
            ),
        )

    async def fail(self, error: Exception, *, last_heartbeat_details: Sequence[Any] = ()) -> None:
        """Fails the attempt with ``error``; the server retries the activity by its policy.

        Args:
            error: The failure (an ``ApplicationError`` to set its type or ``non_retryable``).
            last_heartbeat_details: Recorded as a heartbeat first, for the next attempt to resume from.
        """
        if last_heartbeat_details:
            await self.heartbeat(*last_heartbeat_details)
        await self._client.workflow_service.call(
            "RespondActivityTaskFailed",
            workflow_service_pb2.RespondActivityTaskFailedRequest(
                namespace=self._client.namespace,
                task_token=await self._token(),
                failure=error_to_failure(error, self._client.data_converter),
                identity=self._client.identity,
            ),
        )

    async def heartbeat(self, *details: Any) -> None:
        """Records progress and extends the lease (the heartbeat timeout).

        Raises:
            AsyncActivityCancelledError: The workflow asked for the activity to be cancelled;
                finish with :meth:`report_cancellation`.
        """
        response = await self._client.workflow_service.call(
            "RecordActivityTaskHeartbeat",
            workflow_service_pb2.RecordActivityTaskHeartbeatRequest(
                namespace=self._client.namespace,
                task_token=await self._token(),
                details=self._client.data_converter.to_payloads(list(details)),
                identity=self._client.identity,
            ),
        )
        if response.cancel_requested:
            raise AsyncActivityCancelledError()

    async def report_cancellation(self, *details: Any) -> None:
        """Acknowledges a cancellation request: the activity ends cancelled."""
        await self._client.workflow_service.call(
            "RespondActivityTaskCanceled",
            workflow_service_pb2.RespondActivityTaskCanceledRequest(
                namespace=self._client.namespace,
                task_token=await self._token(),
                details=self._client.data_converter.to_payloads(list(details)),
                identity=self._client.identity,
            ),
        )


class _AsyncActivityCalls:
    """``get_async_activity_handle``, on :class:`flowforge.client.Client` (a base class of it)."""

    def get_async_activity_handle(
        self,
        *,
        task_token: bytes | None = None,
        workflow_id: str | None = None,
        run_id: str | None = None,
        activity_id: str | None = None,
    ) -> AsyncActivityHandle:
        """A handle to finish an activity that called ``activity.raise_complete_async()``; no call is made.

        Args:
            task_token: The attempt's ``activity.info().task_token``.
            workflow_id: Instead of the token: the workflow that scheduled the activity ...
            run_id: ... its run (default: the latest) ...
            activity_id: ... and the activity's id.

        Raises:
            ValueError: Neither the token nor both ids were given, or both ways were.
        """
        from flowforge.client import Client

        assert isinstance(self, Client)
        return AsyncActivityHandle(
            self, task_token=task_token, workflow_id=workflow_id, run_id=run_id, activity_id=activity_id
        )
