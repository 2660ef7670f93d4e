"""Child workflows from workflow code: :func:`start_child_workflow` and :func:`execute_child_workflow`."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Concatenate, Generic, TypedDict, Unpack, overload

from flowforge._workflow_definition import _signal_name, _workflow_type_and_result_hint
from flowforge._workflow_runtime import _Runtime, _uuid4
from flowforge.api.v1 import common_pb2
from flowforge.common import _NO_ARGUMENT, Priority, RetryPolicy, SearchAttributeValue
from flowforge.types import (
    MethodAsyncNoParam,
    MethodAsyncSingleParam,
    MethodSyncOrAsyncNoParam,
    MethodSyncOrAsyncSingleParam,
    MultiParamSpec,
    ParamType,
    ReturnType,
    SelfType,
)

__all__ = ["ChildWorkflowHandle", "ParentClosePolicy", "execute_child_workflow", "start_child_workflow"]


class ParentClosePolicy(enum.IntEnum):
    """What happens to a child workflow when its parent run closes (for any reason,
    continue-as-new included)."""

    TERMINATE = common_pb2.PARENT_CLOSE_POLICY_TERMINATE
    """Terminate the child (the default, as in Temporal)."""

    ABANDON = common_pb2.PARENT_CLOSE_POLICY_ABANDON
    """Leave the child running on its own."""

    REQUEST_CANCEL = common_pb2.PARENT_CLOSE_POLICY_REQUEST_CANCEL
    """Ask the child to cancel; its code decides how."""


class ChildWorkflowHandle(asyncio.Task[ReturnType], Generic[SelfType, ReturnType]):
    """A started child workflow, returned by :func:`start_child_workflow`.

    It is an ``asyncio.Task``: await it for the child's result (or its
    :class:`~flowforge.exceptions.ChildWorkflowError`), or call ``cancel()`` to
    ask the child to cancel; the await then ends with ``asyncio.CancelledError``
    once the child has closed as cancelled (or with its result if it completed first).
    ``ChildWorkflowHandle[SelfType, ReturnType]``: the child's workflow class and what
    awaiting the handle gives.
    """

    def __init__(
        self,
        coro: typing.Coroutine[Any, Any, ReturnType],
        *,
        loop: asyncio.AbstractEventLoop,
        id: str,
        workflow_type: str,
        started: asyncio.Future[str],
    ) -> None:
        super().__init__(coro, loop=loop, name=f"child workflow {workflow_type} (id {id})")
        self._id = id
        self._workflow_type = workflow_type
        self._started = started

    @property
    def id(self) -> str:
        """The child's workflow id."""
        return self._id

    @property
    def workflow_type(self) -> str:
        """The child's workflow type name."""
        return self._workflow_type

    @property
    def first_execution_run_id(self) -> str | None:
        """The child's first run id, once it has started (``None`` before)."""
        started = self._started
        if not started.done() or started.cancelled() or started.exception() is not None:
            return None
        return started.result()

    @overload
    async def signal(self, signal: MethodSyncOrAsyncNoParam[SelfType, None]) -> None: ...

    @overload
    async def signal(self, signal: MethodSyncOrAsyncSingleParam[SelfType, ParamType, None], arg: ParamType) -> None: ...

    @overload
    async def signal(
        self,
        signal: Callable[Concatenate[SelfType, MultiParamSpec], Awaitable[None] | None],
        *,
        args: Sequence[Any],
    ) -> None: ...

    @overload
    async def signal(self, signal: str, arg: Any = _NO_ARGUMENT, *, args: Sequence[Any] = ()) -> None: ...

    async def signal(
        self, signal: Callable[..., Any] | str, arg: Any = _NO_ARGUMENT, *, args: Sequence[Any] = ()
    ) -> None:
        """Sends a signal to the child; returns once the server has delivered it.

        The server delivers it to the child (its current run, if it continued as
        new) in the transaction that records this workflow's command.

        Args:
            signal: The child's ``@workflow.signal`` method or the signal's name.
            arg: The signal's single argument, if it takes one.
            args: All arguments, for a signal taking several; not with ``arg``.

        Raises:
            ApplicationError: Of type ``ExternalWorkflowExecutionNotFound`` when the
                child had already closed.
        """
        if arg is not _NO_ARGUMENT and args:
            raise TypeError("pass the signal's argument as arg or its arguments as args, not both")
        await _Runtime.current().workflow_signal_child(
            self.id, _signal_name(signal), [arg] if arg is not _NO_ARGUMENT else list(args)
        )


@dataclasses.dataclass(frozen=True)
class _ChildWorkflowCall:
    """One ``start_child_workflow`` call, validated, for the runtime to start."""

    workflow_type: str
    args: Sequence[Any]
    result_type: Any
    id: str
    task_queue: str
    execution_timeout: timedelta | None
    run_timeout: timedelta | None
    task_timeout: timedelta | None
    parent_close_policy: ParentClosePolicy
    search_attributes: Mapping[str, SearchAttributeValue] | None = None
    memo: Mapping[str, Any] | None = None
    retry_policy: RetryPolicy | None = None
    priority: Priority | None = None
    headers: dict[str, common_pb2.Payload] = dataclasses.field(default_factory=dict)
    """Set by workflow outbound interceptors (e.g. the trace context); sent as the command's header."""


class _ChildWorkflowOptions(TypedDict, total=False):
    """The keyword options of :func:`start_child_workflow` and :func:`execute_child_workflow`, for their overloads."""

    id: str | None
    task_queue: str | None
    execution_timeout: timedelta | None
    run_timeout: timedelta | None
    task_timeout: timedelta | None
    parent_close_policy: ParentClosePolicy
    search_attributes: Mapping[str, SearchAttributeValue] | None
    memo: Mapping[str, Any] | None
    retry_policy: RetryPolicy | None
    priority: Priority | None


# Overloads (as Temporal's): the child's run method gives the handle its result type
# and checks a single argument against its parameter; a class or a name gives Any.
@overload
async def start_child_workflow(
    workflow: MethodAsyncNoParam[SelfType, ReturnType], **options: Unpack[_ChildWorkflowOptions]
) -> ChildWorkflowHandle[SelfType, ReturnType]: ...


@overload
async def start_child_workflow(
    workflow: MethodAsyncSingleParam[SelfType, ParamType, ReturnType],
    arg: ParamType,
    **options: Unpack[_ChildWorkflowOptions],
) -> ChildWorkflowHandle[SelfType, ReturnType]: ...


@overload
async def start_child_workflow(
    workflow: Callable[Concatenate[SelfType, MultiParamSpec], Awaitable[ReturnType]],
    *,
    args: Sequence[Any],
    **options: Unpack[_ChildWorkflowOptions],
) -> ChildWorkflowHandle[SelfType, ReturnType]: ...


@overload
async def start_child_workflow(
    workflow: type | str,
    arg: Any = _NO_ARGUMENT,
    *,
    args: Sequence[Any] = (),
    **options: Unpack[_ChildWorkflowOptions],
) -> ChildWorkflowHandle[Any, Any]: ...


async def start_child_workflow(
    workflow: Callable[..., Any] | type | str,
    arg: Any = _NO_ARGUMENT,
    *,
    args: Sequence[Any] = (),
    id: str | None = None,
    task_queue: str | None = None,
    execution_timeout: timedelta | None = None,
    run_timeout: timedelta | None = None,
    task_timeout: timedelta | None = None,
    parent_close_policy: ParentClosePolicy = ParentClosePolicy.TERMINATE,
    search_attributes: Mapping[str, SearchAttributeValue] | None = None,
    memo: Mapping[str, Any] | None = None,
    retry_policy: RetryPolicy | None = None,
    priority: Priority | None = None,
) -> ChildWorkflowHandle[Any, Any]:
    """Starts a child workflow and returns its handle once it has started.

    Takes the same arguments as :func:`execute_child_workflow`. The server creates
    the child's run in the same transaction that records the start in this
    workflow's history, so a start is never lost or repeated.

    Raises:
        ChildWorkflowError: The child could not start: its workflow id already has
            a running execution (the cause is an ``ApplicationError`` of type
            ``WorkflowAlreadyStartedError``).
    """
    runtime = _Runtime.current()
    workflow_type, result_type = _workflow_type_and_result_hint(workflow)
    if arg is not _NO_ARGUMENT and args:
        raise TypeError("pass the child workflow's argument as arg or its arguments as args, not both")
    timeouts = {"execution_timeout": execution_timeout, "run_timeout": run_timeout, "task_timeout": task_timeout}
    for timeout_name, timeout in timeouts.items():
        if timeout is not None and timeout <= timedelta(0):
            raise ValueError(f"{timeout_name} of child workflow {workflow_type!r} must be positive, not {timeout}")
    if id is not None and not id:
        raise ValueError("the child workflow id must not be empty (leave it out to get a deterministic uuid)")
    handle = runtime.workflow_start_child_workflow(
        _ChildWorkflowCall(
            workflow_type=workflow_type,
            args=[arg] if arg is not _NO_ARGUMENT else list(args),
            result_type=result_type,
            id=id if id is not None else str(_uuid4(runtime)),
            task_queue=task_queue or "",
            parent_close_policy=ParentClosePolicy(parent_close_policy),
            search_attributes=search_attributes,
            memo=memo,
            retry_policy=retry_policy,
            priority=priority,
            execution_timeout=execution_timeout,
            run_timeout=run_timeout,
            task_timeout=task_timeout,
        )
    )
    try:
        await asyncio.shield(handle._started)
    except asyncio.CancelledError:
        handle.cancel()
        raise
    except BaseException:
        # The handle fails with the same error; it has been reported here.
        handle.add_done_callback(lambda failed: failed.cancelled() or failed.exception())
        raise
    return handle


@overload
async def execute_child_workflow(
    workflow: MethodAsyncNoParam[SelfType, ReturnType], **options: Unpack[_ChildWorkflowOptions]
) -> ReturnType: ...


@overload
async def execute_child_workflow(
    workflow: MethodAsyncSingleParam[SelfType, ParamType, ReturnType],
    arg: ParamType,
    **options: Unpack[_ChildWorkflowOptions],
) -> ReturnType: ...


@overload
async def execute_child_workflow(
    workflow: Callable[Concatenate[SelfType, MultiParamSpec], Awaitable[ReturnType]],
    *,
    args: Sequence[Any],
    **options: Unpack[_ChildWorkflowOptions],
) -> ReturnType: ...


@overload
async def execute_child_workflow(
    workflow: type | str,
    arg: Any = _NO_ARGUMENT,
    *,
    args: Sequence[Any] = (),
    **options: Unpack[_ChildWorkflowOptions],
) -> Any: ...


async def execute_child_workflow(
    workflow: Callable[..., Any] | type | str,
    arg: Any = _NO_ARGUMENT,
    *,
    args: Sequence[Any] = (),
    id: str | None = None,
    task_queue: str | None = None,
    execution_timeout: timedelta | None = None,
    run_timeout: timedelta | None = None,
    task_timeout: timedelta | None = None,
    parent_close_policy: ParentClosePolicy = ParentClosePolicy.TERMINATE,
    search_attributes: Mapping[str, SearchAttributeValue] | None = None,
    memo: Mapping[str, Any] | None = None,
    retry_policy: RetryPolicy | None = None,
    priority: Priority | None = None,
) -> Any:
    """Runs a child workflow and returns its result.

    Cancelling the awaiting task asks the child to cancel and waits until it has
    closed.

    Args:
        workflow: The child's ``@workflow.run`` method (its return hint decodes the
            result), its ``@workflow.defn`` class, or its workflow type name.
        arg: The child's single argument.
        args: The child's arguments, when it takes several.
        id: The child's workflow id; defaults to :func:`uuid4` (deterministic).
        task_queue: Where the child runs; defaults to this workflow's task queue.
        execution_timeout: Limit on the child's whole execution (continue-as-new included).
        run_timeout: Limit on one run of the child.
        task_timeout: Limit on one workflow task of the child.
        parent_close_policy: What happens to the child if this run closes first.
        search_attributes: The child's search attributes, as on
            ``Client.start_workflow`` (each registered in the namespace; otherwise
            this workflow task fails with ``BAD_SEARCH_ATTRIBUTES`` until it is).
        memo: The child's memo.
        retry_policy: Retries of the child: a run that fails (or reaches its run
            timeout) is followed by a new run after the policy's backoff, until one
            succeeds, the attempts run out or the execution timeout passes; this
            workflow hears only of the last run. ``None``: no retries.
        priority: The child's dispatch order; unset fields are this workflow's.

    Returns:
        The child's result.

    Raises:
        ChildWorkflowError: The child failed, timed out, was terminated or
            cancelled, or could not start; its failure is the ``cause``.
        ValueError: A timeout is not positive or the id is empty.
    """
    # The overloads typed the caller's call; this one passes whatever shape it was.
    any_workflow: Any = workflow
    handle = await start_child_workflow(
        any_workflow,
        arg,
        args=args,
        id=id,
        task_queue=task_queue,
        execution_timeout=execution_timeout,
        run_timeout=run_timeout,
        task_timeout=task_timeout,
        parent_close_policy=parent_close_policy,
        search_attributes=search_attributes,
        memo=memo,
        retry_policy=retry_policy,
        priority=priority,
    )
    return await handle
