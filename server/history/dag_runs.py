"""Declarative DAGs: published versions, aliases, and runs the server drives itself.

A version is a definition's canonical form stored under its SHA-256 (immutable; the
same content is one version). A run is started pinned to one version: the alias is
resolved once, the digest is recorded in ``WorkflowExecutionStarted`` and on the
execution row (``dag_digest``), and the run gets no workflow task. Instead, every save
of a DAG run's mutation passes through :func:`advance_dag_run` (called by
``_Mutation.save_all``), in the same transaction:

- a new run gets one ``dag_run_tasks`` row per task with its join counter (how many
  dependencies are not complete) and its root tasks scheduled;
- an ``ActivityTaskCompleted`` of a task decrements its dependents' counters, and each
  that reaches 0 is scheduled with its input expression evaluated over the run's input
  and the outputs in history; when every task has completed, the output expression
  makes the run's result;
- a final ``ActivityTaskFailed``/``TimedOut`` (retries per the task's policy are the
  activity machinery's, as for code workflows) fails the run; a cancel request cancels it;
- a closed run's counters are deleted.

So a DAG activity costs one poll and one completion, with no replay.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from google.protobuf import duration_pb2

from flowforge.api.schema import (
    ActivityTaskScheduledAttributes,
    DagJSON,
    EventType,
    ExecutionStatus,
    WorkflowExecutionCanceledAttributes,
    WorkflowExecutionCompletedAttributes,
    WorkflowExecutionFailedAttributes,
    payloads_from_json,
    payloads_json,
)
from flowforge.api.v1 import common_pb2
from flowforge.dag import (
    DagSpec,
    DagTask,
    DagValidationError,
    ExpressionError,
    Reference,
    evaluate,
    parse_dag,
    references,
)
from flowforge.server import audit
from flowforge.server.errors import FailedPrecondition, InvalidArgument, NotFound
from flowforge.server.history.commands import schedule_activity
from flowforge.server.history.executions import Executions
from flowforge.server.history.mutation import _Mutation
from flowforge.server.retries import StoredRetryPolicy
from flowforge.server.stores.base import Transaction
from flowforge.server.stores.rows import DagAliasRow, DagRunTaskRow, DagVersionRow

__all__ = ["DagRuns", "DagVersionInfo", "advance_dag_run"]

_JSON_ENCODING = b"json/plain"
_NULL_ENCODING = b"binary/null"
_MAX_CACHED_SPECS = 512


@dataclasses.dataclass(frozen=True)
class _Loaded:
    """A version's spec with its dependents per task (versions never change: cached)."""

    spec: DagSpec
    dependents: Mapping[str, tuple[str, ...]]


_specs: dict[tuple[str, str], _Loaded] = {}


@dataclasses.dataclass(frozen=True)
class DagVersionInfo:
    """A stored version and the aliases of its DAG that point at it."""

    row: DagVersionRow
    aliases: tuple[str, ...]


async def _load(tx: Transaction, namespace: str, digest: str) -> _Loaded:
    loaded = _specs.get((namespace, digest))
    if loaded is None:
        row = await tx.get_dag_version(namespace, digest)
        if row is None:
            raise NotFound(f"DAG version {digest} does not exist in namespace {namespace!r}; see `flowforge dag list`")
        spec = DagSpec.from_document(json.loads(row.definition))
        dependents: dict[str, list[str]] = {task.id: [] for task in spec.tasks}
        for task in spec.tasks:
            for dependency in task.depends_on:
                dependents[dependency].append(task.id)
        loaded = _Loaded(spec, {task_id: tuple(ids) for task_id, ids in dependents.items()})
        if len(_specs) >= _MAX_CACHED_SPECS:
            _specs.clear()
        _specs[(namespace, digest)] = loaded
    return loaded


# ---------------------------------------------------------------------------- values and payloads


class _DagFailure(Exception):
    """A run that cannot go on: a task failed for good, or an expression selects nothing."""

    def __init__(self, failure: dict[str, Any]) -> None:
        super().__init__(failure.get("message", ""))
        self.failure = failure


def _value(payloads: common_pb2.Payloads, what: str) -> Any:
    """The JSON value of a one-payload list (the server reads only JSON payloads)."""
    if not payloads.payloads:
        return None
    payload = payloads.payloads[0]
    encoding = payload.metadata.get("encoding", _JSON_ENCODING)
    if encoding == _NULL_ENCODING:
        return None
    if encoding != _JSON_ENCODING:
        raise _DagFailure(
            _server_failure(
                f"{what} is encoded as {encoding.decode(errors='replace')!r}; a DAG's expressions can select"
                " inside JSON payloads only (pass the whole value with $.tasks.ID.output instead)"
            )
        )
    return json.loads(payload.data)


def _payloads(value: Any) -> common_pb2.Payloads:
    data = json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
    return common_pb2.Payloads(payloads=[common_pb2.Payload(metadata={"encoding": _JSON_ENCODING}, data=data)])


def _server_failure(message: str, cause: Mapping[str, Any] | None = None) -> dict[str, Any]:
    failure: dict[str, Any] = {"message": message, "type": "DagError", "source": "server", "nonRetryable": True}
    if cause:
        failure["cause"] = dict(cause)
    return failure


class _RunState:
    """What advancing a run reads: its input and its tasks' outputs, each read at most once."""

    def __init__(self, m: _Mutation, loaded: _Loaded, rows: list[DagRunTaskRow]) -> None:
        self.m = m
        self.loaded = loaded
        self.rows = {row.task_id: row for row in rows}
        self.results: dict[str, common_pb2.Payloads] = {}
        self.input: common_pb2.Payloads | None = None

    async def run_input(self) -> common_pb2.Payloads:
        if self.input is None:
            started = self.m.started_attributes
            if started is None:
                first = self.m.events[0] if self.m.new else (await self._events(1))
                started = json.loads(first.attributes)
                self.m.started_attributes = started
            self.input = payloads_from_json(started.get("input"))
        return self.input

    async def _events(self, event_id: int) -> Any:
        for event in self.m.events:
            if event.event_id == event_id:
                return event
        events = await self.m.tx.read_events(self.m.row.namespace, self.m.row.run_id, event_id - 1, 1)
        return events[0]

    async def result(self, task_id: str) -> common_pb2.Payloads:
        if task_id not in self.results:
            event = await self._events(self.rows[task_id].completed_event_id)
            self.results[task_id] = payloads_from_json(json.loads(event.attributes).get("result"))
        return self.results[task_id]

    async def evaluate(self, expression: Any, what: str) -> common_pb2.Payloads:
        """The expression's value as payloads; a whole output or input passes through unchanged."""
        found = list(references(expression))
        whole = found[0][1] if len(found) == 1 and found[0][0] == "" else None
        if isinstance(whole, Reference) and not whole.path:
            return await self.run_input() if whole.task_id is None else await self.result(whole.task_id)
        run_input = _value(await self.run_input(), "the run's input")
        outputs = {}
        for _, reference in found:
            if isinstance(reference, Reference) and reference.task_id is not None:
                outputs[reference.task_id] = _value(
                    await self.result(reference.task_id), f"the output of {reference.task_id!r}"
                )
        try:
            return _payloads(evaluate(expression, run_input, outputs))
        except ExpressionError as error:
            raise _DagFailure(_server_failure(f"{what}: {error}")) from None


# ---------------------------------------------------------------------------- advancing a run


def _duration(seconds: float) -> duration_pb2.Duration:
    value = duration_pb2.Duration()
    value.FromNanoseconds(round(seconds * 1e9))
    return value


def _retry_policy(task: DagTask) -> StoredRetryPolicy:
    if task.retry_policy is None:
        return StoredRetryPolicy.from_proto(None)
    policy = dict(task.retry_policy)
    proto = common_pb2.RetryPolicy(
        backoff_coefficient=policy.get("backoff_coefficient", 0.0),
        maximum_attempts=policy.get("maximum_attempts", 0),
        non_retryable_error_types=policy.get("non_retryable_error_types", ()),
    )
    if "initial_interval" in policy:
        proto.initial_interval.CopyFrom(_duration(policy["initial_interval"]))
    if "maximum_interval" in policy:
        proto.maximum_interval.CopyFrom(_duration(policy["maximum_interval"]))
    return StoredRetryPolicy.from_proto(proto)


async def _schedule(state: _RunState, task: DagTask, spec: DagSpec) -> None:
    m = state.m
    task_input = (
        await state.evaluate(task.input, f"the input of task {task.id!r}") if task.has_input else common_pb2.Payloads()
    )
    schedule_to_close = task.timeouts.get("schedule_to_close_timeout", 0.0)
    scheduled: ActivityTaskScheduledAttributes = {
        "activity_id": task.id,
        "activity_type": task.activity,
        "task_queue": task.task_queue or m.row.task_queue,
        "input": payloads_json(task_input),
        "schedule_to_close_timeout": schedule_to_close,
        "schedule_to_start_timeout": task.timeouts.get("schedule_to_start_timeout", 0.0),
        "start_to_close_timeout": task.timeouts.get("start_to_close_timeout", schedule_to_close),
        "heartbeat_timeout": task.timeouts.get("heartbeat_timeout", 0.0),
        "retry_policy": _retry_policy(task).to_json(),
        "cancellation_type": 0,
        "depends_on_activity_ids": list(task.depends_on),
        "workflow_task_completed_event_id": 0,
    }
    row = state.rows[task.id]
    row.scheduled_event_id = schedule_activity(m, scheduled, task_input)
    if not m.new:  # a new run's rows are inserted once its roots are scheduled
        await m.tx.update_dag_run_task(row)


async def _start(state: _RunState) -> None:
    spec = state.loaded.spec
    for task in spec.tasks:
        if not task.depends_on:
            await _schedule(state, task, spec)
    await state.m.tx.insert_dag_run_tasks(list(state.rows.values()))


async def _task_completed(state: _RunState, scheduled_event_id: int, completed_event_id: int) -> None:
    spec = state.loaded.spec
    done = next(row for row in state.rows.values() if row.scheduled_event_id == scheduled_event_id)
    done.completed_event_id = completed_event_id
    await state.m.tx.update_dag_run_task(done)
    for dependent_id in state.loaded.dependents[done.task_id]:
        dependent = state.rows[dependent_id]
        dependent.waiting -= 1
        if dependent.waiting == 0:
            await _schedule(state, spec.task(dependent_id), spec)
        else:
            await state.m.tx.update_dag_run_task(dependent)


def _close(m: _Mutation, event_type: EventType, attributes: Mapping[str, Any], status: ExecutionStatus) -> None:
    m.append(event_type, attributes)
    m.close(status)


async def _apply(state: _RunState, outcomes: list[tuple[str, dict[str, Any], int]]) -> None:
    """Applies the run's new events in order; raises :class:`_DagFailure` when the run must fail."""
    m = state.m
    for event_type, attributes, event_id in outcomes:
        if event_type == EventType.ACTIVITY_TASK_COMPLETED:
            await _task_completed(state, attributes["scheduled_event_id"], event_id)
        elif event_type in (EventType.ACTIVITY_TASK_FAILED, EventType.ACTIVITY_TASK_TIMED_OUT):
            scheduled_id = attributes["scheduled_event_id"]
            task_id = next(r.task_id for r in state.rows.values() if r.scheduled_event_id == scheduled_id)
            failure = attributes.get("failure") or {}
            raise _DagFailure(_server_failure(f"task {task_id!r} failed: {failure.get('message', '')}", failure))
        elif event_type == EventType.WORKFLOW_EXECUTION_CANCEL_REQUESTED:
            canceled: WorkflowExecutionCanceledAttributes = {
                "details": payloads_json(common_pb2.Payloads()),
                "workflow_task_completed_event_id": 0,
            }
            _close(m, EventType.WORKFLOW_EXECUTION_CANCELED, canceled, ExecutionStatus.CANCELED)
            return
    if all(row.completed_event_id for row in state.rows.values()):
        completed: WorkflowExecutionCompletedAttributes = {
            "result": payloads_json(await state.evaluate(state.loaded.spec.output, "the output")),
            "workflow_task_completed_event_id": 0,
        }
        _close(m, EventType.WORKFLOW_EXECUTION_COMPLETED, completed, ExecutionStatus.COMPLETED)


async def advance_dag_run(m: _Mutation) -> None:
    """Takes a DAG run's next steps for what ``m`` recorded, in ``m``'s transaction (see above)."""
    if m.row.status != ExecutionStatus.RUNNING:
        if not m.new:
            await m.tx.delete_dag_run_tasks(m.row.run_id)
        return
    if not m.new and not m.events:
        return
    assert m.row.dag_digest is not None
    loaded = await _load(m.tx, m.row.namespace, m.row.dag_digest)
    try:
        if m.new:
            rows = [DagRunTaskRow(m.row.namespace, m.row.run_id, t.id, len(t.depends_on)) for t in loaded.spec.tasks]
            await _start(_RunState(m, loaded, rows))
        else:
            state = _RunState(m, loaded, await m.tx.get_dag_run_tasks(m.row.run_id))
            await _apply(state, [(e.event_type, json.loads(e.attributes), e.event_id) for e in m.events])
    except _DagFailure as error:
        failed: WorkflowExecutionFailedAttributes = {"failure": error.failure, "workflow_task_completed_event_id": 0}
        _close(m, EventType.WORKFLOW_EXECUTION_FAILED, failed, ExecutionStatus.FAILED)
    if m.row.status != ExecutionStatus.RUNNING and not m.new:
        await m.tx.delete_dag_run_tasks(m.row.run_id)


# ---------------------------------------------------------------------------- versions, aliases, starts


class DagRuns(Executions):
    """Publishing, aliasing, listing and starting declarative DAGs."""

    async def publish_dag(self, namespace: str, definition: str, alias: str) -> tuple[DagVersionRow, bool]:
        """Validates and stores a version (and moves ``alias`` to it); returns it and whether it is new.

        Raises:
            InvalidArgument: listing every violation with its path.
        """
        try:
            spec = parse_dag(definition)
        except DagValidationError as error:
            raise InvalidArgument(str(error)) from None
        await self.ensure_namespace(namespace)
        audit.name_pending_target(f"dag:{spec.name}" + (f"@{alias}" if alias else "") + f"={spec.digest}")

        async def body(tx: Transaction) -> tuple[DagVersionRow, bool]:
            now = self.clock.now_us()
            row = DagVersionRow(namespace, spec.digest, spec.name, spec.canonical_json().decode(), len(spec.tasks), now)
            created = await tx.insert_dag_version(row)
            if not created:
                stored = await tx.get_dag_version(namespace, spec.digest)
                assert stored is not None
                row = stored
            if alias:
                await tx.set_dag_alias(DagAliasRow(namespace, spec.name, alias, spec.digest, now))
            return row, created

        return await self._transaction(body)

    async def set_dag_alias(self, namespace: str, name: str, alias: str, digest: str) -> str | None:
        """Points the alias at a version of that DAG; returns the digest it pointed at before."""
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> str | None:
            version = await tx.get_dag_version(namespace, digest)
            if version is None or version.name != name:
                raise NotFound(f"DAG {name!r} has no version {digest}; publish it first (`flowforge dag publish`)")
            return await tx.set_dag_alias(DagAliasRow(namespace, name, alias, digest, self.clock.now_us()))

        return await self._transaction(body)

    async def list_dags(self, namespace: str, name: str | None, limit: int) -> list[DagVersionInfo]:
        """Versions newest first, each with the aliases pointing at it."""
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> list[DagVersionInfo]:
            rows = await tx.list_dag_versions(namespace, name, limit)
            aliases: dict[str, list[str]] = {}
            for alias in await tx.list_dag_aliases(namespace, name):
                aliases.setdefault(alias.digest, []).append(alias.alias)
            return [DagVersionInfo(row, tuple(aliases.get(row.digest, ()))) for row in rows]

        return await self.read(body)

    async def _resolve(self, tx: Transaction, namespace: str, name: str, digest: str, alias: str) -> DagVersionRow:
        if alias:
            resolved = await tx.get_dag_alias(namespace, name, alias)
            if resolved is None:
                raise NotFound(f"DAG {name!r} has no alias {alias!r}; set it with `flowforge dag alias`")
            digest = resolved
        version = await tx.get_dag_version(namespace, digest)
        if version is None or (name and version.name != name):
            raise NotFound(f"DAG {name or '?'!r} has no version {digest}; see `flowforge dag list`")
        return version

    async def get_dag(self, namespace: str, name: str, digest: str, alias: str) -> DagVersionInfo:
        """One version (by digest, or by name and alias) with its aliases."""
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> DagVersionInfo:
            version = await self._resolve(tx, namespace, name, digest, alias)
            aliases = [
                a.alias for a in await tx.list_dag_aliases(namespace, version.name) if a.digest == version.digest
            ]
            return DagVersionInfo(version, tuple(aliases))

        return await self.read(body)

    async def delete_dag_version(self, namespace: str, digest: str) -> None:
        """Deletes a version no running execution and no alias uses."""
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> None:
            version = await tx.get_dag_version(namespace, digest)
            if version is None:
                raise NotFound(f"there is no DAG version {digest} in namespace {namespace!r}")
            if await tx.dag_version_running(namespace, digest):
                raise FailedPrecondition(
                    f"DAG version {digest} is executed by a running execution; delete it once its runs have closed"
                )
            aliases = [a.alias for a in await tx.list_dag_aliases(namespace, version.name) if a.digest == digest]
            if aliases:
                raise FailedPrecondition(
                    f"aliases {', '.join(aliases)} of DAG {version.name!r} point at version {digest}; move them first"
                )
            await tx.delete_dag_version(namespace, digest)

        await self._transaction(body)

    async def start_dag(
        self,
        *,
        namespace: str,
        name: str,
        digest: str,
        alias: str,
        workflow_id: str,
        task_queue: str,
        input: common_pb2.Payloads,
        request_id: str,
        identity: str,
        execution_timeout_s: float,
    ) -> tuple[str, bool, str]:
        """Starts a run of the version (an alias is resolved here, once); returns (run_id, started, digest).

        The activities run on ``task_queue``, or when it is empty on the definition's; a task's own wins.
        """
        await self.ensure_namespace(namespace)

        async def body(tx: Transaction) -> tuple[str, bool, str]:
            version = await self._resolve(tx, namespace, name, digest, alias)
            spec = (await _load(tx, namespace, version.digest)).spec
            if not (task_queue or spec.task_queue):
                raise InvalidArgument(f"task_queue is required: DAG {version.name!r} names no task_queue")
            dag: DagJSON = {"name": version.name, "digest": version.digest}
            run_id, started = await self.start_workflow(
                namespace=namespace,
                workflow_id=workflow_id,
                workflow_type=version.name,
                task_queue=task_queue or spec.task_queue or "",
                input=input,
                request_id=request_id,
                identity=identity,
                execution_timeout_s=execution_timeout_s,
                run_timeout_s=0.0,
                task_timeout_s=0.0,
                tx=tx,
                dag=dag,
            )
            return run_id, started, version.digest

        return await self._transaction(body)
