"""Event triggers: published CloudEvents-shaped events start workflows.

A trigger subscribes to one event type, narrows it with a filter (conditions on
event fields, all of which must hold) and maps event fields to workflow
arguments. :meth:`EventRouter.publish` runs one transaction that

1. claims the event's dedupe row ``(namespace, source, id)`` (its primary key is
   the guard: a second publish within the window finds the row and starts nothing;
   concurrent publishes of one event serialize on it), then
2. starts one workflow per matching trigger through
   :meth:`HistoryEngine.start_workflow` (the one admission path) with a workflow id
   derived from trigger, source and event id, and
3. records what it started on the dedupe row, so a duplicate is answered with the
   same workflows.

Either all of it commits or none of it: an event is never half-processed. The
filter language and the webhook are described in docs/events.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import json
import logging
import re
import uuid
from typing import Any

from flowforge._json_depth import JSONTooDeep, loads_bounded
from flowforge.api.schema import ExecutionStatus
from flowforge.api.v1 import common_pb2
from flowforge.server._tasks import cancel_and_wait
from flowforge.server.errors import AlreadyExists, InvalidArgument, NotFound
from flowforge.server.history import HistoryEngine
from flowforge.server.stores.base import EventTriggerRow, Transaction

__all__ = [
    "Condition",
    "EventRouter",
    "PublishedEvent",
    "TriggeredWorkflow",
    "event_workflow_id",
    "parse_condition",
    "parse_path",
    "trigger_row",
]

log = logging.getLogger("flowforge.server.events")

#: The event fields a path may start with (CloudEvents attribute names).
EVENT_FIELDS = ("id", "source", "type", "subject", "time", "data")
MAX_CONDITIONS = 32
MAX_CONDITION_LENGTH = 4096
MAX_INPUT_PATHS = 32
_MAX_PATH = 256
_MAX_WORKFLOW_ID_PREFIX = 200
_TRIGGER_PAGE = 500
_SWEEP_BATCH = 1000

_PATH = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_\-]+)*"
# Linear-time: the value is the rest of the text (stripped in code); a lazy ``.+?``
# followed by ``\s*$`` would backtrack quadratically on a value with long runs of spaces.
_CONDITION = re.compile(
    rf"\s*(?P<path>{_PATH})(?:\s*(?P<cmp>==|!=)\s*|\s+(?P<member>not\s+in|in)\s+)(?P<value>.*)", re.DOTALL
)


# ------------------------------------------------------------------ the filter language


def parse_path(text: str, what: str) -> tuple[str, ...]:
    """Splits a dotted event path (``data.order.id``), checking its first segment.

    Raises:
        InvalidArgument: The path is malformed or does not start with an event field.
    """
    if len(text) > _MAX_PATH or not re.fullmatch(_PATH, text):
        raise InvalidArgument(
            f"{what} {text!r} is not a path: use dot-separated keys such as 'data.order.id'"
            " (letters, digits, '_' and '-'; a number indexes a list)"
        )
    segments = tuple(text.split("."))
    if segments[0] not in EVENT_FIELDS:
        raise InvalidArgument(f"{what} {text!r} must start with one of {', '.join(EVENT_FIELDS)}")
    if segments[0] != "data" and len(segments) > 1:
        raise InvalidArgument(f"{what} {text!r}: only 'data' has fields below it")
    return segments


@dataclasses.dataclass(frozen=True)
class Condition:
    """One filter condition: ``path op value``."""

    path: tuple[str, ...]
    op: str
    """``==``, ``!=``, ``in`` or ``not in``."""
    value: Any
    """A JSON value; a list for ``in`` / ``not in``."""

    def canonical(self) -> str:
        """The condition as stored and shown: ``data.amount != 0``."""
        return f"{'.'.join(self.path)} {self.op} {json.dumps(self.value, sort_keys=True, separators=(', ', ': '))}"

    def holds(self, event: dict[str, Any]) -> bool:
        """Whether the event satisfies the condition (a missing path equals nothing)."""
        found, actual = _resolve(event, self.path)
        if self.op in ("==", "!="):
            equal = found and _json_equal(actual, self.value)
            return equal if self.op == "==" else not equal
        member = found and any(_json_equal(actual, candidate) for candidate in self.value)
        return member if self.op == "in" else not member


def parse_condition(text: str) -> Condition:
    """Parses ``path == JSON``, ``path != JSON``, ``path in [JSON, ...]`` or
    ``path not in [JSON, ...]``.

    Raises:
        InvalidArgument: With what is wrong and an example of a valid condition.
    """
    if len(text) > MAX_CONDITION_LENGTH:
        raise InvalidArgument(
            f"filter condition {text[:80]!r}... is {len(text)} characters long; the limit is {MAX_CONDITION_LENGTH}"
        )
    match = _CONDITION.fullmatch(text)
    if match is None or not match["value"].strip():
        raise InvalidArgument(
            f"filter condition {text!r} is not 'PATH OP VALUE' with OP one of ==, !=, in, not in"
            ' (e.g. \'data.currency == "EUR"\' or \'data.region in ["eu", "us"]\')'
        )
    path = parse_path(match["path"], "filter path")
    op = match["cmp"] or " ".join(match["member"].split())
    try:
        value = loads_bounded(match["value"])
    except JSONTooDeep as error:
        raise InvalidArgument(f"filter condition {text[:200]!r}: {error}") from None
    except ValueError:
        raise InvalidArgument(
            f"filter condition {text!r}: {match['value']!r} is not a JSON value (strings need double quotes)"
        ) from None
    if op in ("in", "not in") and not isinstance(value, list):
        raise InvalidArgument(f'filter condition {text!r}: \'{op}\' needs a JSON list, e.g. ["a", "b"]')
    return Condition(path, op, value)


def _resolve(value: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    for segment in path:
        if isinstance(value, dict) and segment in value:
            value = value[segment]
        elif isinstance(value, list) and segment.isdigit() and int(segment) < len(value):
            value = value[int(segment)]
        else:
            return False, None
    return True, value


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: true and 1 differ (Python says they are equal), 1 and 1.0 do not."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=False))
    return bool(a == b)


# ------------------------------------------------------------------ publishing


@dataclasses.dataclass
class PublishedEvent:
    """A validated event: what filters and input paths see."""

    id: str
    source: str
    type: str
    subject: str
    time: str | None
    """RFC 3339, if the publisher gave a time."""
    data: Any
    """The decoded JSON payload (``None`` when absent)."""

    def fields(self) -> dict[str, Any]:
        fields = {"id": self.id, "source": self.source, "type": self.type, "data": self.data}
        if self.subject:
            fields["subject"] = self.subject
        if self.time is not None:
            fields["time"] = self.time
        return fields


@dataclasses.dataclass
class TriggeredWorkflow:
    """One workflow an event led to: started by it, or already running under its id."""

    trigger_id: str
    workflow_id: str
    run_id: str
    started: bool


def event_workflow_id(trigger: EventTriggerRow, source: str, event_id: str) -> str:
    """The same trigger and event always give the same workflow id: a second guard
    (a running workflow id is unique) behind the dedupe row."""
    digest = hashlib.sha256(f"{trigger.trigger_id}\n{source}\n{event_id}".encode()).hexdigest()[:32]
    return f"{trigger.workflow_id_prefix}{digest}"


def _json_payloads(values: list[Any]) -> common_pb2.Payloads:
    """Values taken from an event, as workflow arguments: encoded as the SDK's default
    converter encodes JSON values (``json/plain``, ``binary/null`` for null), so the
    workflow reads them like arguments from any client."""
    return common_pb2.Payloads(
        payloads=[
            common_pb2.Payload(metadata={"encoding": b"binary/null"})
            if value is None
            else common_pb2.Payload(
                metadata={"encoding": b"json/plain"},
                data=json.dumps(value, separators=(",", ":"), sort_keys=True).encode(),
            )
            for value in values
        ]
    )


async def _delete_expired_dedupe(tx: Transaction, *, now_us: int, limit: int) -> int:
    return await tx.delete_expired_event_dedupe(now_us, limit)


class EventRouter:
    """Triggers and event publishing on top of a :class:`HistoryEngine`.

    Args:
        engine: Starts the workflows (in the publishing transaction).
        dedupe_window_s: How long a published ``(source, id)`` is remembered.
        sweep_interval_s: How often expired dedupe rows are deleted.
    """

    def __init__(self, engine: HistoryEngine, *, dedupe_window_s: float, sweep_interval_s: float = 60.0) -> None:
        if dedupe_window_s <= 0:
            raise ValueError("the event dedupe window must be positive")
        self._engine = engine
        self._dedupe_window_us = int(dedupe_window_s * 1_000_000)
        self._sweep_interval_s = sweep_interval_s
        self._sweeper: asyncio.Task[None] | None = None

    # triggers

    async def create_trigger(self, row: EventTriggerRow) -> EventTriggerRow:
        """Stores a validated trigger; ALREADY_EXISTS if the id is taken."""
        await self._engine.ensure_namespace(row.namespace)
        row.create_us = self._engine.clock.now_us()

        async def body(tx: Transaction) -> EventTriggerRow:
            if not await tx.insert_event_trigger(row):
                raise AlreadyExists(
                    f"trigger {row.trigger_id!r} already exists in namespace {row.namespace!r};"
                    " delete it first or choose another id"
                )
            return row

        return await self._engine.transaction(body)

    async def describe_trigger(self, namespace: str, trigger_id: str) -> EventTriggerRow:
        await self._engine.ensure_namespace(namespace)
        row = await self._engine.read(lambda tx: tx.get_event_trigger(namespace, trigger_id))
        if row is None:
            raise NotFound(f"trigger {trigger_id!r} not found in namespace {namespace!r}")
        return row

    async def list_triggers(self, namespace: str, *, page_size: int, after_trigger_id: str) -> list[EventTriggerRow]:
        await self._engine.ensure_namespace(namespace)
        return await self._engine.read(
            lambda tx: tx.list_event_triggers(namespace, limit=page_size, after_trigger_id=after_trigger_id)
        )

    async def delete_trigger(self, namespace: str, trigger_id: str) -> None:
        """Deletes a trigger; the workflows it started are not touched."""
        await self._engine.ensure_namespace(namespace)

        async def body(tx: Transaction) -> None:
            if not await tx.delete_event_trigger(namespace, trigger_id):
                raise NotFound(f"trigger {trigger_id!r} not found in namespace {namespace!r}")

        await self._engine.transaction(body)

    # events

    async def publish(
        self, namespace: str, event: PublishedEvent, identity: str
    ) -> tuple[bool, list[TriggeredWorkflow]]:
        """Starts one workflow per matching trigger, once per ``(source, id)`` within
        the dedupe window. Returns (duplicate, workflows): for a duplicate, the
        workflows the first publish led to, and nothing new is started."""
        await self._engine.ensure_namespace(namespace)
        fields = event.fields()

        async def body(tx: Transaction) -> tuple[bool, list[TriggeredWorkflow]]:
            now = self._engine.clock.now_us()
            if not await tx.claim_event(namespace, event.source, event.id, now, now + self._dedupe_window_us):
                earlier = await tx.get_event_dedupe(namespace, event.source, event.id)
                assert earlier is not None, "claim_event refused without a live row"
                return True, [TriggeredWorkflow(**w) for w in json.loads(earlier.outcome)]
            workflows = [
                await self._start(tx, namespace, trigger, event, fields, identity)
                for trigger in await self._triggers_of_type(tx, namespace, event.type)
                if all(parse_condition(c).holds(fields) for c in json.loads(trigger.filter))
            ]
            await tx.set_event_outcome(
                namespace, event.source, event.id, json.dumps([dataclasses.asdict(w) for w in workflows])
            )
            return False, workflows

        return await self._engine.transaction(body)

    @staticmethod
    async def _triggers_of_type(tx: Transaction, namespace: str, event_type: str) -> list[EventTriggerRow]:
        triggers: list[EventTriggerRow] = []
        while True:
            page = await tx.list_event_triggers(
                namespace,
                limit=_TRIGGER_PAGE,
                after_trigger_id=triggers[-1].trigger_id if triggers else "",
                event_type=event_type,
            )
            triggers.extend(page)
            if len(page) < _TRIGGER_PAGE:
                return triggers

    async def _start(
        self,
        tx: Transaction,
        namespace: str,
        trigger: EventTriggerRow,
        event: PublishedEvent,
        fields: dict[str, Any],
        identity: str,
    ) -> TriggeredWorkflow:
        workflow_id = event_workflow_id(trigger, event.source, event.id)
        # Only possible once this event's dedupe row has expired while its workflow
        # still runs (or someone started that id by hand): report it, start nothing.
        running = await tx.get_latest_execution(namespace, workflow_id)
        if running is not None and running.status == ExecutionStatus.RUNNING:
            return TriggeredWorkflow(trigger.trigger_id, workflow_id, running.run_id, started=False)
        arguments = [_resolve(fields, parse_path(p, "input path"))[1] for p in json.loads(trigger.input_paths)]
        run_id, _ = await self._engine.start_workflow(
            namespace=namespace,
            workflow_id=workflow_id,
            workflow_type=trigger.workflow_type,
            task_queue=trigger.task_queue,
            input=_json_payloads(arguments),
            request_id=str(uuid.uuid4()),
            identity=identity,
            execution_timeout_s=trigger.execution_timeout_s,
            run_timeout_s=trigger.run_timeout_s,
            task_timeout_s=trigger.task_timeout_s,
            origin={"kind": "event", "trigger": trigger.trigger_id, "event_source": event.source, "event_id": event.id},
            tx=tx,
        )
        return TriggeredWorkflow(trigger.trigger_id, workflow_id, run_id, started=True)

    # dedupe rows past their window

    async def sweep_expired(self) -> int:
        """Deletes every dedupe row whose window has ended; returns how many."""
        deleted = 0
        while True:
            now = self._engine.clock.now_us()
            batch = await self._engine.transaction(
                functools.partial(_delete_expired_dedupe, now_us=now, limit=_SWEEP_BATCH)
            )
            deleted += batch
            if batch < _SWEEP_BATCH:
                return deleted

    def start(self) -> None:
        """Starts the sweeper (expired rows are also ignored by :meth:`publish`, so
        the sweeper only bounds the table's size)."""
        self._sweeper = asyncio.create_task(self._sweep_forever(), name="flowforge-event-dedupe-sweeper")

    async def stop(self) -> None:
        await cancel_and_wait(self._sweeper)
        self._sweeper = None

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self._sweep_interval_s)
            try:
                deleted = await self.sweep_expired()
                if deleted:
                    log.info("deleted %d expired event dedupe rows", deleted)
            except Exception as error:  # the store may be down for a while; try again later
                log.warning("event dedupe sweep failed: %s", error)


def trigger_row(
    *,
    namespace: str,
    trigger_id: str,
    event_type: str,
    filter: list[str],
    input_paths: list[str],
    workflow_type: str,
    task_queue: str,
    workflow_id_prefix: str,
    execution_timeout_s: float,
    run_timeout_s: float,
    task_timeout_s: float,
) -> EventTriggerRow:
    """A trigger row from validated names: parses and canonicalizes the filter and
    input paths, so a stored trigger can always be evaluated.

    Raises:
        InvalidArgument: A condition or path is malformed, or there are too many.
    """
    if len(filter) > MAX_CONDITIONS:
        raise InvalidArgument(f"a trigger takes at most {MAX_CONDITIONS} filter conditions, not {len(filter)}")
    if len(input_paths) > MAX_INPUT_PATHS:
        raise InvalidArgument(f"a trigger takes at most {MAX_INPUT_PATHS} input paths, not {len(input_paths)}")
    for path in input_paths:
        parse_path(path, "input path")
    if len(workflow_id_prefix) > _MAX_WORKFLOW_ID_PREFIX:
        raise InvalidArgument(f"workflow_id_prefix is longer than {_MAX_WORKFLOW_ID_PREFIX} characters")
    return EventTriggerRow(
        namespace=namespace,
        trigger_id=trigger_id,
        event_type=event_type,
        filter=json.dumps([parse_condition(c).canonical() for c in filter]),
        input_paths=json.dumps(list(input_paths)),
        workflow_type=workflow_type,
        task_queue=task_queue,
        workflow_id_prefix=workflow_id_prefix or f"{trigger_id}-",
        execution_timeout_s=execution_timeout_s,
        run_timeout_s=run_timeout_s,
        task_timeout_s=task_timeout_s,
        create_us=0,
    )
