"""Errors raised by FlowForge, in Temporal's shape.

Failure errors (subclasses of :class:`FailureError`) travel through history: an
activity that raises :class:`ApplicationError` is recorded as a failure and the
workflow sees it as an :class:`ActivityError` whose ``cause`` is the original
error. A workflow fails only when its code raises a :class:`FailureError`; any
other exception fails the *workflow task*, which is retried (Temporal's rule), so
a bug can be fixed and redeployed without losing the execution.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import grpc

if TYPE_CHECKING:
    from flowforge.api.v1 import common_pb2

__all__ = [
    "ActivityError",
    "ApplicationError",
    "ApplicationErrorCategory",
    "AsyncActivityCancelledError",
    "CancelledError",
    "ChildWorkflowError",
    "FailureError",
    "FlowForgeError",
    "NonDeterminismError",
    "RPCError",
    "RetryState",
    "TerminatedError",
    "TimeoutError",
    "TimeoutType",
    "WorkflowAlreadyStartedError",
    "WorkflowFailureError",
    "WorkflowUpdateFailedError",
]


class FlowForgeError(Exception):
    """Base class of every error FlowForge raises."""

    @property
    def message(self) -> str:
        """The error's message."""
        return str(self.args[0]) if self.args else ""


class FailureError(FlowForgeError):
    """Base class of errors that are recorded in history as a failure."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self._failure: common_pb2.Failure | None = None

    @property
    def failure(self) -> common_pb2.Failure | None:
        """The recorded failure this error was rebuilt from (``None`` for one raised locally).

        Its ``stack_trace`` is the remote one: where the error was raised in the activity or
        workflow that failed, on whichever worker ran it; ``source`` says "worker" or "server".
        """
        return self._failure


class ApplicationErrorCategory(enum.IntEnum):
    """How severe an :class:`ApplicationError` is (Temporal's enum; values as in the proto)."""

    UNSPECIFIED = 0
    BENIGN = 1
    """Expected (e.g. "not ready yet, retry"): the worker logs it at DEBUG, not WARNING, and
    the server counts it apart from other failures."""


class ApplicationError(FailureError):
    """An error raised on purpose by workflow or activity code.

    Args:
        message: What went wrong, for people.
        *details: Extra values serialized with the failure.
        type: A name for the kind of error; ``RetryPolicy.non_retryable_error_types``
            matches on it. Defaults to the class name of the error.
        non_retryable: When raised from an activity, the server does not retry it
            whatever the retry policy says.
        next_retry_delay: When raised from an activity that is retried, the server waits
            this long before the next attempt instead of the retry policy's backoff.
        category: :attr:`ApplicationErrorCategory.BENIGN` for an expected failure,
            logged quietly.
    """

    def __init__(
        self,
        message: str,
        *details: Any,
        type: str | None = None,
        non_retryable: bool = False,
        next_retry_delay: timedelta | None = None,
        category: ApplicationErrorCategory = ApplicationErrorCategory.UNSPECIFIED,
    ) -> None:
        super().__init__(message)
        self.details: Sequence[Any] = details
        self.type = type or "ApplicationError"
        self.non_retryable = non_retryable
        self.next_retry_delay = next_retry_delay
        self.category = category

    def __str__(self) -> str:
        return self.message


class TimeoutType(enum.Enum):
    """Which timeout expired."""

    START_TO_CLOSE = 1
    SCHEDULE_TO_START = 2
    SCHEDULE_TO_CLOSE = 3
    HEARTBEAT = 4


class TimeoutError(FailureError):
    """A timeout expired; ``type`` says which one."""

    def __init__(
        self,
        message: str,
        *,
        type: TimeoutType | None,
        last_heartbeat_details: Sequence[Any] = (),
    ) -> None:
        super().__init__(message)
        self.type = type
        self.last_heartbeat_details = last_heartbeat_details


class CancelledError(FailureError):
    """The work was cancelled on request."""

    def __init__(self, message: str = "cancelled", *details: Any) -> None:
        super().__init__(message)
        self.details: Sequence[Any] = details


class TerminatedError(FailureError):
    """The execution was terminated by an operator."""


class RetryState(enum.Enum):
    """Why the server stopped retrying an activity."""

    UNSPECIFIED = 0
    IN_PROGRESS = 1
    NON_RETRYABLE_FAILURE = 2
    MAXIMUM_ATTEMPTS_REACHED = 3
    TIMEOUT = 4
    CANCEL_REQUESTED = 5


class ActivityError(FailureError):
    """Raised in workflow code when an activity finally failed.

    The underlying error (an :class:`ApplicationError`, :class:`TimeoutError` or
    :class:`CancelledError`) is ``cause`` (also ``__cause__``).
    """

    def __init__(
        self,
        message: str,
        *,
        activity_type: str,
        activity_id: str,
        scheduled_event_id: int,
        retry_state: RetryState = RetryState.UNSPECIFIED,
    ) -> None:
        super().__init__(message)
        self.activity_type = activity_type
        self.activity_id = activity_id
        self.scheduled_event_id = scheduled_event_id
        self.retry_state = retry_state

    @property
    def cause(self) -> BaseException | None:
        """The error that failed the activity's last attempt."""
        return self.__cause__


class ChildWorkflowError(FailureError):
    """Raised in workflow code when a child workflow did not complete.

    The child's own failure (an :class:`ApplicationError`, :class:`CancelledError`,
    :class:`TerminatedError`, :class:`TimeoutError`, ...) is ``cause`` (also
    ``__cause__``), with its whole cause chain.
    """

    def __init__(
        self,
        message: str,
        *,
        namespace: str = "",
        workflow_id: str = "",
        run_id: str = "",
        workflow_type: str = "",
        initiated_event_id: int = 0,
        started_event_id: int = 0,
        retry_state: RetryState = RetryState.UNSPECIFIED,
    ) -> None:
        super().__init__(message)
        self.namespace = namespace
        self.workflow_id = workflow_id
        self.run_id = run_id
        self.workflow_type = workflow_type
        self.initiated_event_id = initiated_event_id
        self.started_event_id = started_event_id
        self.retry_state = retry_state

    @property
    def cause(self) -> BaseException | None:
        """The error that failed the child workflow."""
        return self.__cause__


class WorkflowFailureError(FlowForgeError):
    """Raised by ``WorkflowHandle.result()`` when the execution did not complete.

    ``cause`` is the workflow's failure: an :class:`ApplicationError`,
    :class:`ActivityError`, :class:`CancelledError`, :class:`TerminatedError` or
    :class:`TimeoutError`.
    """

    def __init__(self, message: str, cause: BaseException) -> None:
        super().__init__(message)
        self.__cause__ = cause

    @property
    def cause(self) -> BaseException:
        """Why the execution did not complete."""
        assert self.__cause__ is not None
        return self.__cause__


class NonDeterminismError(FlowForgeError):
    """Workflow code did not do on replay what its history says it did.

    The message names the first mismatching command and event. It fails the
    workflow *task*, which is retried, never the execution.
    """


class RPCError(FlowForgeError):
    """A call to the server failed.

    Attributes:
        status: The gRPC status code the server answered with.
    """

    def __init__(self, message: str, status: grpc.StatusCode) -> None:
        super().__init__(message)
        self.status = status

    def __str__(self) -> str:
        return f"{self.status.name}: {self.message}"


class WorkflowAlreadyStartedError(RPCError):
    """A start named a workflow id that already has a running execution."""

    def __init__(self, message: str) -> None:
        super().__init__(message, grpc.StatusCode.ALREADY_EXISTS)


class WorkflowUpdateFailedError(FlowForgeError):
    """Raised by an update's result when it did not complete successfully (Temporal's name).

    ``cause`` is why: the validator's error (the update was rejected), the ``FailureError``
    the handler raised, or an ``ApplicationError`` of type ``WorkflowClosed`` when the run
    closed before the update completed.
    """

    def __init__(self, update_id: str, cause: BaseException) -> None:
        super().__init__(f"workflow update {update_id!r} failed")
        self.update_id = update_id
        self.__cause__ = cause

    @property
    def cause(self) -> BaseException:
        """Why the update failed."""
        assert self.__cause__ is not None
        return self.__cause__


class AsyncActivityCancelledError(FlowForgeError):
    """Raised by ``AsyncActivityHandle.heartbeat`` when the workflow asked for the activity to be
    cancelled (Temporal's name); acknowledge with ``report_cancellation()``."""

    def __init__(self) -> None:
        super().__init__("the activity was asked to cancel")
