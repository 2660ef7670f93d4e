"""Runs a workflow task's local activities in the worker, with their timeouts and retries.

The retry decision is the server's own (:func:`flowforge.api.retries.decide_retry`): the same
policy defaults, non-retryable errors, ``next_retry_delay`` and schedule-to-close limit; only the
waiting happens here. Worker interceptors do not see local activities.
"""

from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
import contextvars
import logging
import random
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from flowforge import activity
from flowforge._local_activity_calls import LocalActivityOutcome, LocalActivityRequest
from flowforge.api.retries import StoredRetryPolicy, decide_retry
from flowforge.api.schema import RetryState
from flowforge.api.v1 import workflow_service_pb2
from flowforge.converter import DataConverter, error_to_failure
from flowforge.exceptions import ApplicationError, ApplicationErrorCategory, TimeoutError, TimeoutType

__all__ = ["LocalActivityRunner"]

logger = logging.getLogger(__name__)


class LocalActivityRunner:
    """Runs local activities for the workflow tasks of one worker.

    Args:
        activities: The worker's registered activities by name.
        executor: Where synchronous activities run.
        converter: Decodes arguments, encodes results and failures.
        namespace: The worker's namespace (for ``activity.info()``).
    """

    def __init__(
        self,
        activities: Mapping[str, activity._Definition],
        executor: concurrent.futures.Executor | None,
        converter: DataConverter,
        namespace: str,
    ) -> None:
        self._activities = activities
        self._executor = executor
        self._converter = converter
        self._namespace = namespace
        self._rng = random.Random()

    async def run_all(
        self, requests: Sequence[LocalActivityRequest], task: workflow_service_pb2.PollWorkflowTaskQueueResponse
    ) -> list[LocalActivityOutcome]:
        """Runs the requests concurrently; one outcome each, never an exception."""
        return list(await asyncio.gather(*(self._run(request, task) for request in requests)))

    async def _run(
        self, request: LocalActivityRequest, task: workflow_service_pb2.PollWorkflowTaskQueueResponse
    ) -> LocalActivityOutcome:
        definition = self._activities.get(request.activity_type)
        if definition is None:
            error = ApplicationError(
                f"local activity {request.activity_type!r} is not registered on this worker "
                f"(registered: {', '.join(sorted(self._activities)) or 'none'})",
                type="ActivityTypeNotRegistered",
                non_retryable=True,
            )
            return self._failed(request, 1, error, RetryState.NON_RETRYABLE_FAILURE)
        policy = StoredRetryPolicy.from_proto(request.retry_policy.to_proto() if request.retry_policy else None)
        scheduled = datetime.now(UTC)
        deadline = None
        if request.schedule_to_close_timeout is not None:
            deadline = time.time() + request.schedule_to_close_timeout.total_seconds()
        attempt = 0
        while True:
            attempt += 1
            info = _info(request, task, attempt, scheduled, self._namespace)
            try:
                result = await self._attempt(definition, request, info, deadline)
                return LocalActivityOutcome(request.seq, attempt, result=self._converter.to_payloads([result]))
            except Exception as error:
                failure = error_to_failure(error, self._converter)
                decision = decide_retry(
                    policy,
                    attempt=attempt,
                    failure=failure,
                    now_us=time.time_ns() // 1000,
                    schedule_to_close_deadline_us=int(deadline * 1e6) if deadline is not None else None,
                    rng=self._rng,
                )
                benign = isinstance(error, ApplicationError) and error.category == ApplicationErrorCategory.BENIGN
                logger.log(
                    logging.DEBUG if benign else logging.WARNING,
                    "local activity %r (seq %d, attempt %d) of workflow %r failed",
                    request.activity_type,
                    request.seq,
                    attempt,
                    task.workflow_execution.workflow_id,
                    exc_info=error,
                )
                if decision.delay_s is None:
                    return LocalActivityOutcome(request.seq, attempt, failure=failure, retry_state=decision.retry_state)
                await asyncio.sleep(decision.delay_s)

    async def _attempt(
        self,
        definition: activity._Definition,
        request: LocalActivityRequest,
        info: activity.Info,
        deadline: float | None,
    ) -> Any:
        """One attempt, within start-to-close and what is left of schedule-to-close."""
        limits: list[tuple[float, TimeoutType]] = []
        if request.start_to_close_timeout is not None:
            limits.append((request.start_to_close_timeout.total_seconds(), TimeoutType.START_TO_CLOSE))
        if deadline is not None:
            limits.append((deadline - time.time(), TimeoutType.SCHEDULE_TO_CLOSE))
        limit, timeout_type = min(limits, key=lambda pair: pair[0])
        args = self._converter.from_payloads(request.input, definition.arg_type_hints)
        context = contextvars.copy_context()
        context.run(activity._current_context.set, activity._Context(info, lambda details: None))
        if definition.is_async:
            execution: asyncio.Future[Any] = asyncio.create_task(definition.fn(*args), context=context)
        else:
            execution = asyncio.get_running_loop().run_in_executor(self._executor, context.run, definition.fn, *args)
        try:
            return await asyncio.wait_for(execution, max(limit, 0.0))
        except activity._CompleteAsyncError:
            raise ApplicationError(
                f"local activity {request.activity_type!r} called raise_complete_async(): only a regular"
                " activity can complete asynchronously",
                type="CompleteAsyncNotSupported",
                non_retryable=True,
            ) from None
        except builtins.TimeoutError:
            raise TimeoutError(
                f"local activity {request.activity_type!r} timed out ({timeout_type.name})", type=timeout_type
            ) from None

    def _failed(
        self, request: LocalActivityRequest, attempts: int, error: Exception, retry_state: str
    ) -> LocalActivityOutcome:
        return LocalActivityOutcome(
            request.seq, attempts, failure=error_to_failure(error, self._converter), retry_state=retry_state
        )


def _info(
    request: LocalActivityRequest,
    task: workflow_service_pb2.PollWorkflowTaskQueueResponse,
    attempt: int,
    scheduled: datetime,
    namespace: str,
) -> activity.Info:
    execution = task.workflow_execution
    return activity.Info(
        activity_id=f"local-{request.seq}",
        activity_type=request.activity_type,
        attempt=attempt,
        idempotency_key=f"{execution.run_id}/local-{request.seq}",
        heartbeat_details=(),
        workflow_id=execution.workflow_id,
        run_id=execution.run_id,
        workflow_type=task.workflow_type,
        namespace=namespace,
        task_queue=task.task_queue,
        scheduled_time=scheduled,
        started_time=datetime.now(UTC),
        start_to_close_timeout=request.start_to_close_timeout,
        heartbeat_timeout=None,
        is_local=True,
    )
