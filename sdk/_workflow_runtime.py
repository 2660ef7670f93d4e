"""What workflow code asks of the instance running it, and the facts it can read about its run."""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from flowforge.common import SearchAttributeValue

if TYPE_CHECKING:
    from flowforge._activity_calls import ActivityHandle, _ActivityCall
    from flowforge._child_workflow_calls import ChildWorkflowHandle, _ChildWorkflowCall
    from flowforge._local_activity_calls import _LocalActivityCall

__all__ = ["Info", "ParentInfo"]


@dataclasses.dataclass(frozen=True)
class Info:
    """Facts about the running workflow execution."""

    workflow_id: str
    """The workflow id the execution was started with."""

    run_id: str
    """The id of this run of the workflow id."""

    workflow_type: str
    """The workflow type name (``@workflow.defn(name=...)``)."""

    task_queue: str
    """The task queue the workflow's tasks are dispatched on."""

    namespace: str
    """The namespace of the execution."""

    attempt: int
    """The run's attempt, starting at 1; a child workflow retried by its retry policy counts up."""

    start_time: datetime
    """When the execution started (UTC)."""

    search_attributes: dict[str, SearchAttributeValue] = dataclasses.field(default_factory=dict)
    """The run's search attributes as the workflow code sees them now: those given
    at start, updated by each :func:`upsert_search_attributes`."""
    parent: ParentInfo | None = None
    """The parent run, when this execution is a child workflow."""

    continued_run_id: str | None = None
    """The run this one continued as new from, if any."""

    cron_schedule: str = ""
    """The execution's cron schedule (``start_workflow(cron_schedule=...)``), empty if none."""


@dataclasses.dataclass(frozen=True)
class ParentInfo:
    """The parent of a child workflow (``workflow.info().parent``)."""

    namespace: str
    """The parent's namespace."""

    workflow_id: str
    """The parent's workflow id."""

    run_id: str
    """The parent run that started the child."""


class _Runtime(abc.ABC):
    """What workflow code needs from the instance running it (see ``flowforge._workflow_instance``).

    The instance's event loop carries it as ``_flowforge_runtime``, so "in
    workflow code" means "the running loop is a workflow loop".
    """

    @staticmethod
    def current_or_none() -> _Runtime | None:
        runtime = getattr(asyncio.events._get_running_loop(), "_flowforge_runtime", None)
        # Not isinstance(): on an ABC that is a Python call (ABCMeta.__instancecheck__),
        # which the determinism guard's hook sees on every workflow.* call. No class
        # registers as a virtual _Runtime, so the MRO says the same.
        return runtime if _Runtime in type(runtime).__mro__ else None

    @staticmethod
    def current() -> _Runtime:
        runtime = _Runtime.current_or_none()
        if runtime is None:
            raise RuntimeError(
                "not in workflow code: this function may only be called from a workflow's "
                "@workflow.run method and the tasks it starts"
            )
        return runtime

    @abc.abstractmethod
    def workflow_info(self) -> Info: ...

    @abc.abstractmethod
    def workflow_now(self) -> datetime: ...

    @abc.abstractmethod
    def workflow_is_replaying(self) -> bool: ...

    @abc.abstractmethod
    def workflow_random(self) -> random.Random: ...

    @abc.abstractmethod
    def workflow_start_activity(self, call: _ActivityCall) -> ActivityHandle[Any]: ...

    @abc.abstractmethod
    def workflow_start_local_activity(self, call: _LocalActivityCall) -> ActivityHandle[Any]: ...

    @abc.abstractmethod
    def workflow_all_handlers_finished(self) -> bool: ...

    @abc.abstractmethod
    def workflow_instance(self) -> Any: ...

    @abc.abstractmethod
    def workflow_last_completion_result(self, type_hint: Any) -> Any: ...

    @abc.abstractmethod
    def workflow_last_failure(self) -> BaseException | None: ...

    @abc.abstractmethod
    def workflow_wait_condition(self, fn: Callable[[], bool]) -> asyncio.Future[None]: ...

    @abc.abstractmethod
    def workflow_patch(self, patch_id: str, *, deprecated: bool) -> bool: ...

    @abc.abstractmethod
    def workflow_upsert_search_attributes(self, attributes: Mapping[str, SearchAttributeValue | None]) -> None: ...

    @abc.abstractmethod
    def workflow_memo_value(self, key: str, type_hint: Any) -> Any:
        """The decoded memo value; raises KeyError if the memo has no ``key``."""

    @abc.abstractmethod
    def workflow_memo_keys(self) -> list[str]: ...

    @abc.abstractmethod
    def workflow_start_child_workflow(self, call: _ChildWorkflowCall) -> ChildWorkflowHandle[Any, Any]: ...

    @abc.abstractmethod
    def workflow_signal_child(
        self, workflow_id: str, signal_name: str, args: Sequence[Any]
    ) -> asyncio.Future[None]: ...


def _uuid4(runtime: _Runtime) -> uuid.UUID:
    """A version 4 UUID drawn from the run's seeded random generator: the same on every replay."""
    return uuid.UUID(int=runtime.workflow_random().getrandbits(128), version=4)
