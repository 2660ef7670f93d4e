"""Answering a query from a workflow instance's state: the handler runs on the workflow loop,
under the determinism guard, and must neither await nor issue commands."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from flowforge import exceptions
from flowforge._determinism import DeterminismGuard
from flowforge._stack_trace import STACK_TRACE_QUERY, workflow_stack_trace
from flowforge._workflow_commands import CommandBuffer
from flowforge._workflow_definition import _Definition, _parameter_hints
from flowforge._workflow_loop import WorkflowEventLoop
from flowforge.api.v1 import common_pb2
from flowforge.converter import DataConverter

__all__ = ["QueryChangedWorkflowError", "answer_query"]


class QueryChangedWorkflowError(RuntimeError):
    """A query handler awaited or started something: what it started is half undone, so the
    instance must be replayed from scratch."""


def answer_query(
    query_type: str,
    args: common_pb2.Payloads,
    *,
    definition: _Definition,
    loop: WorkflowEventLoop,
    commands: CommandBuffer,
    converter: DataConverter,
    workflow_object: Callable[[], Any],
    guard: Callable[[Any], DeterminismGuard],
) -> common_pb2.Payloads:
    """The query's answer, encoded (see ``WorkflowInstance.query``).

    Raises:
        KeyError: The workflow has no query handler of that name; the message lists the ones it has.
        QueryChangedWorkflowError: The handler awaited, or issued a command or a task.
        NonDeterminismError: The handler called a nondeterministic function.
    """
    if query_type == STACK_TRACE_QUERY:
        return converter.to_payloads([workflow_stack_trace(loop)])
    handler = definition.queries.get(query_type)
    if handler is None:
        known = ", ".join(sorted(definition.queries)) or "none"
        raise KeyError(f"workflow {definition.name!r} has no query {query_type!r} (queries: {known})")
    values = converter.from_payloads(args, _parameter_hints(handler.fn))
    commands_before = len(commands)
    ready_before = loop.ready_count()
    outer_loop = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(loop)
    watching = guard(answer_query.__code__)
    try:
        with watching:
            result = handler.fn(workflow_object(), *values)
    finally:
        asyncio.events._set_running_loop(outer_loop)
        added = commands.truncate(commands_before)
        scheduled = loop.discard_ready_after(ready_before)
    if watching.violation is not None:
        raise exceptions.NonDeterminismError(watching.violation)
    if added or scheduled or inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()
        raise QueryChangedWorkflowError(
            f"query handler {query_type!r} tried to change the workflow (awaited, or started an activity "
            "or a timer); a query handler only reads state"
        )
    return converter.to_payloads([result])
