"""Schedules: their API operations and the leader-elected scheduler that fires them.

The scheduler runs on every replica but acts only on the one holding the
``scheduler`` lease (table ``leases``). Taking the lease over increments its
fencing token; every schedule write the scheduler makes carries the token and the
store refuses it if a higher one exists (:class:`FencingTokenRejected`), so a leader
that was paused past its TTL and wakes up cannot overwrite its successor's work; it
demotes itself instead. A fire is one transaction: the fencing check, the admission
of the execution through :meth:`HistoryEngine.start_workflow` (the same path as a
client's start) and the schedule's new state commit together. The execution's id is
the action's workflow id plus the nominal fire time, and its request id is derived
from it, so a second fire of the same nominal time is refused as a duplicate.

Semantics of the policies: docs/schedules.md.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import functools
import json
import logging
import os
import secrets
import socket
from collections.abc import Callable
from datetime import UTC, datetime
from itertools import islice
from typing import Any

from flowforge.api.schema import ExecutionStatus
from flowforge.api.v1 import common_pb2
from flowforge.server._schedule_spec import ScheduleSpecError, SpecRule, parse_spec
from flowforge.server._tasks import cancel_and_wait, wait_event
from flowforge.server.errors import AlreadyExists, InvalidArgument, NotFound
from flowforge.server.history import HistoryEngine
from flowforge.server.observations import ScheduleFired, observe
from flowforge.server.quarantine import Quarantine
from flowforge.server.stores.base import FencingTokenRejected, LeaseRow, ScheduleRow, Transaction

__all__ = [
    "MISFIRE_POLICIES",
    "OVERLAP_POLICIES",
    "Scheduler",
    "SchedulerConfig",
    "SchedulerStatus",
    "Schedules",
    "action_input",
    "action_visibility",
    "nominal_workflow_id",
]

log = logging.getLogger("flowforge.server.scheduler")

LEASE_NAME = "scheduler"
OVERLAP_POLICIES = ("SKIP", "BUFFER_ONE", "ALLOW_ALL", "CANCEL_OTHER", "TERMINATE_OTHER")
MISFIRE_POLICIES = ("SKIP", "RUN_ONCE", "CATCH_UP")
_SECOND_US = 1_000_000
_RECENT_ACTIONS = 10
# Runs a schedule keeps track of (each pass checks them): only ALLOW_ALL overlaps runs,
# and a schedule that piles up never-ending runs must not slow every pass down.
_MAX_TRACKED_RUNS = 100
_MAX_FIRES_PER_PASS = 1000
_MAX_BACKFILL_FIRES = 1000
_BATCH = 100
_IDENTITY = "flowforge-scheduler"


@dataclasses.dataclass
class SchedulerConfig:
    """How the scheduler elects its leader and how late a fire may be."""

    enabled: bool = True
    """False: this replica never runs schedules (another one must)."""
    lease_ttl_s: float = 15.0
    """How long a leader's lease lasts without renewal; a replica takes over after it."""
    renew_interval_s: float = 5.0
    """How often the leader renews its lease (well under ``lease_ttl_s``)."""
    max_sleep_s: float = 1.0
    """Longest pause between passes (also how often a buffered fire re-checks its blockers)."""
    misfire_grace_s: float = 60.0
    """A fire found later than this after its nominal time counts as missed (server down)."""


@dataclasses.dataclass
class SchedulerStatus:
    """Who leads the scheduler, as the store says and as this replica sees it."""

    identity: str
    is_leader: bool
    lease: LeaseRow | None
    rejected_writes: int
    leader_changes: list[dict[str, Any]]


def nominal_time_text(us: int) -> str:
    """ISO 8601 UTC, with a fraction only when there is one (cron and interval
    fires are on whole seconds; a manual trigger is at the moment it was asked)."""
    moment = datetime.fromtimestamp(us // _SECOND_US, UTC).replace(microsecond=us % _SECOND_US)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return text + (f".{us % _SECOND_US:06d}Z" if us % _SECOND_US else "Z")


def nominal_workflow_id(prefix: str, nominal_us: int) -> str:
    """The id of the execution a schedule starts for one nominal time."""
    return f"{prefix}-{nominal_time_text(nominal_us)}"


def _spec_rule(spec: dict[str, Any]) -> SpecRule:
    try:
        return parse_spec(spec)
    except ScheduleSpecError as error:
        raise InvalidArgument(str(error)) from None


def _new_state() -> dict[str, Any]:
    return {
        "running": [],
        "buffered": [],
        "queued": [],
        "recent_actions": [],
        "action_count": 0,
        "skipped_count": 0,
        "missed_count": 0,
    }


class Schedules:
    """The schedule API: create, describe, list, pause, trigger, backfill, delete.

    These writes check the row's version (not a fencing token: they are requests,
    not the scheduler's decisions); fires are left to the leader, which is woken.
    """

    def __init__(self, engine: HistoryEngine, wake: Callable[[], None] = lambda: None) -> None:
        self._engine = engine
        self._wake = wake

    async def create(
        self,
        namespace: str,
        schedule_id: str,
        spec: dict[str, Any],
        action: dict[str, Any],
        policy: dict[str, Any],
        paused: bool,
        note: str,
    ) -> None:
        rule = _spec_rule(spec)
        _check_policy(policy)
        await self._engine.ensure_namespace(namespace)
        now = self._engine.clock.now_us()
        row = ScheduleRow(
            namespace=namespace,
            schedule_id=schedule_id,
            spec=json.dumps(spec),
            action=json.dumps(action),
            policy=json.dumps(policy),
            paused=int(paused),
            note=note,
            state=json.dumps(_new_state()),
            cursor_us=now,
            next_action_us=rule.next_after(now),
            create_us=now,
            update_us=now,
            version=1,
            fencing_token=0,
        )

        async def body(tx: Transaction) -> None:
            if not await tx.insert_schedule(row):
                raise AlreadyExists(
                    f"schedule {schedule_id!r} already exists in namespace {namespace!r};"
                    " delete it first or pick another id"
                )

        await self._engine.transaction(body)
        self._wake()

    async def _get(self, tx: Transaction, namespace: str, schedule_id: str) -> ScheduleRow:
        row = await tx.get_schedule(namespace, schedule_id)
        if row is None:
            raise NotFound(f"schedule {schedule_id!r} not found in namespace {namespace!r}")
        return row

    async def describe(self, namespace: str, schedule_id: str) -> tuple[ScheduleRow, list[int]]:
        """The row and its next five nominal fire times (none while paused)."""
        await self._engine.ensure_namespace(namespace)
        row = await self._engine.read(lambda tx: self._get(tx, namespace, schedule_id))
        upcoming: list[int] = []
        if not row.paused:
            rule = parse_spec(json.loads(row.spec))
            upcoming = list(islice(rule.times(max(row.cursor_us, self._engine.clock.now_us()), 2**62), 5))
        return row, upcoming

    async def list(self, namespace: str, *, after: str, limit: int) -> list[ScheduleRow]:
        await self._engine.ensure_namespace(namespace)
        return await self._engine.read(lambda tx: tx.list_schedules(namespace, after=after, limit=limit))

    async def delete(self, namespace: str, schedule_id: str) -> None:
        """Deletes the schedule; executions it started keep running."""
        await self._engine.ensure_namespace(namespace)

        async def body(tx: Transaction) -> None:
            if not await tx.delete_schedule(namespace, schedule_id):
                raise NotFound(f"schedule {schedule_id!r} not found in namespace {namespace!r}")

        await self._engine.transaction(body)

    async def update(
        self,
        namespace: str,
        schedule_id: str,
        *,
        pause: bool = False,
        unpause: bool = False,
        note: str = "",
        trigger: str | None = None,
        backfills: tuple[tuple[int, int, str], ...] = (),
        replacement: tuple[dict[str, Any], dict[str, Any], dict[str, Any], bool, str] | None = None,
    ) -> None:
        """Pauses or unpauses (with a note), queues a manual trigger (its overlap
        policy, "" for the schedule's) and backfills ((start_us, end_us, overlap)), or
        replaces the definition ((spec, action, policy, paused, note)): the new spec fires
        from now on."""
        if pause and unpause:
            raise InvalidArgument("pause and unpause cannot be asked together")
        if replacement is not None:
            _spec_rule(replacement[0])
            _check_policy(replacement[2])
        for overlap in (trigger, *(b[2] for b in backfills)):
            if overlap and overlap not in OVERLAP_POLICIES:
                raise InvalidArgument(f"unknown overlap policy {overlap!r}; one of {', '.join(OVERLAP_POLICIES)}")
        await self._engine.ensure_namespace(namespace)

        async def body(tx: Transaction) -> None:
            row = await self._get(tx, namespace, schedule_id)
            now = self._engine.clock.now_us()
            state = json.loads(row.state)
            if replacement is not None:
                spec, action, policy, paused, replaced_note = replacement
                row.spec, row.action, row.policy = json.dumps(spec), json.dumps(action), json.dumps(policy)
                row.paused, row.note = int(paused), replaced_note
                row.cursor_us = max(row.cursor_us, now)  # the new spec does not fire the past
            if pause or unpause:
                row.paused = int(pause)
                row.note = note
                if unpause:
                    # Fires that fell while paused are not run (docs/schedules.md).
                    row.cursor_us = max(row.cursor_us, now)
            if trigger is not None:
                state["queued"].append({"nominal_us": now, "kind": "trigger", "overlap": trigger})
            if backfills:
                rule = parse_spec(json.loads(row.spec))
                for start_us, end_us, overlap in backfills:
                    if end_us < start_us:
                        raise InvalidArgument("a backfill's end is before its start")
                    times = list(islice(rule.times(start_us - 1, end_us), _MAX_BACKFILL_FIRES + 1))
                    if len(times) > _MAX_BACKFILL_FIRES:
                        raise InvalidArgument(
                            f"a backfill may cover at most {_MAX_BACKFILL_FIRES} fire times; split the range"
                        )
                    state["queued"] += [{"nominal_us": t, "kind": "backfill", "overlap": overlap} for t in times]
            row.state = json.dumps(state)
            row.next_action_us = now
            row.update_us = now
            await tx.update_schedule(row, row.version, None)

        await self._engine.transaction(body)
        self._wake()


def _check_policy(policy: dict[str, Any]) -> None:
    """INVALID_ARGUMENT for an unknown overlap or misfire policy."""
    if policy["overlap"] not in OVERLAP_POLICIES:
        raise InvalidArgument(f"unknown overlap policy {policy['overlap']!r}; one of {', '.join(OVERLAP_POLICIES)}")
    if policy["misfire"] not in MISFIRE_POLICIES:
        raise InvalidArgument(f"unknown misfire policy {policy['misfire']!r}; one of {', '.join(MISFIRE_POLICIES)}")


class _Pass:
    """One scheduler pass over one schedule, inside one fenced transaction."""

    def __init__(
        self, engine: HistoryEngine, tx: Transaction, row: ScheduleRow, now: int, config: SchedulerConfig
    ) -> None:
        self.engine = engine
        self.tx = tx
        self.row = row
        self.now = now
        self.config = config
        self.state = json.loads(row.state)
        self.action = json.loads(row.action)
        self.policy = json.loads(row.policy)
        self.rule = parse_spec(json.loads(row.spec))

    async def run(self) -> None:
        state = self.state
        state["running"] = [r for r in state["running"] if await self._is_running(r["run_id"])]
        fires = state["buffered"] + state["queued"] + self._scheduled_fires()
        state["buffered"], state["queued"] = [], []
        for fire in fires:
            await self._fire(fire)
        self.row.state = json.dumps(state)
        self.row.update_us = self.now
        self.row.next_action_us = self._next_action_us()

    async def _is_running(self, run_id: str) -> bool:
        execution = await self.tx.get_execution(self.row.namespace, run_id)
        return execution is not None and execution.status == ExecutionStatus.RUNNING

    def _scheduled_fires(self) -> list[dict[str, Any]]:
        """The nominal times since the cursor, after the misfire policy."""
        row = self.row
        if row.paused:
            row.cursor_us = max(row.cursor_us, self.now)
            return []
        times = list(islice(self.rule.times(row.cursor_us, self.now), _MAX_FIRES_PER_PASS))
        if not times:
            return []
        # All found when fewer than the cap; else resume after the last next pass.
        row.cursor_us = times[-1] if len(times) == _MAX_FIRES_PER_PASS else self.now
        grace_us = int(self.config.misfire_grace_s * _SECOND_US)
        missed = [t for t in times if self.now - t > grace_us]
        on_time = times[len(missed) :]
        misfire = self.policy["misfire"]
        if misfire == "SKIP":
            kept = []
        elif misfire == "RUN_ONCE":
            kept = missed[-1:]
        else:
            window_us = int(self.policy["catchup_window_s"] * _SECOND_US)
            kept = [t for t in missed if self.now - t <= window_us]
        self.state["missed_count"] += len(missed) - len(kept)
        return [{"nominal_us": t, "kind": "catchup", "overlap": ""} for t in kept] + [
            {"nominal_us": t, "kind": "scheduled", "overlap": ""} for t in on_time
        ]

    async def _fire(self, fire: dict[str, Any]) -> None:
        state = self.state
        if not state["running"]:
            await self._start(fire)
            return
        overlap = fire["overlap"] or self.policy["overlap"]
        if overlap == "ALLOW_ALL":
            await self._start(fire)
        elif overlap == "TERMINATE_OTHER":
            for run in state["running"]:
                await self.engine.terminate(
                    self.row.namespace,
                    run["workflow_id"],
                    run["run_id"],
                    f"schedule {self.row.schedule_id!r} overlap policy TERMINATE_OTHER",
                    _IDENTITY,
                    tx=self.tx,
                )
            state["running"] = []
            await self._start(fire)
        elif overlap == "CANCEL_OTHER":
            for run in state["running"]:
                await self.engine.request_cancel(
                    self.row.namespace,
                    run["workflow_id"],
                    run["run_id"],
                    f"schedule {self.row.schedule_id!r} overlap policy CANCEL_OTHER",
                    _IDENTITY,
                    tx=self.tx,
                )
            # The newest fire waits for the cancelled runs to close; an older waiting one is dropped.
            state["skipped_count"] += len(state["buffered"])
            state["buffered"] = [fire]
        elif overlap == "BUFFER_ONE" and not state["buffered"]:
            state["buffered"] = [fire]
        else:  # SKIP, or BUFFER_ONE with its one slot taken
            state["skipped_count"] += 1

    async def _start(self, fire: dict[str, Any]) -> None:
        row, action, state = self.row, self.action, self.state
        nominal_text = nominal_time_text(fire["nominal_us"])
        workflow_id = nominal_workflow_id(action["workflow_id"], fire["nominal_us"])
        existing = await self.tx.get_latest_execution(row.namespace, workflow_id)
        if existing is not None and existing.status == ExecutionStatus.RUNNING:
            # Started by someone else under this id, or fired already: never twice.
            state["skipped_count"] += 1
            return
        run_id, started = await self.engine.start_workflow(
            namespace=row.namespace,
            workflow_id=workflow_id,
            workflow_type=action["workflow_type"],
            task_queue=action["task_queue"],
            input=action_input(action),
            request_id=f"schedule/{row.schedule_id}/{workflow_id}",
            identity=_IDENTITY,
            execution_timeout_s=action.get("execution_timeout_s", 0.0),
            run_timeout_s=action.get("run_timeout_s", 0.0),
            task_timeout_s=action.get("task_timeout_s", 0.0),
            search_attributes=action_visibility(action)[0],
            memo=action_visibility(action)[1],
            origin={
                "kind": "schedule",
                "schedule_id": row.schedule_id,
                "nominal_time": nominal_text,
                "trigger": fire["kind"],
            },
            tx=self.tx,
        )
        if not started:  # this nominal time fired before (e.g. a backfill over past fires)
            state["skipped_count"] += 1
            return
        state["running"] = (
            state["running"] + [{"workflow_id": workflow_id, "run_id": run_id, "nominal_us": fire["nominal_us"]}]
        )[-_MAX_TRACKED_RUNS:]
        state["action_count"] += 1
        if fire["kind"] == "scheduled":  # catch-up and backfill runs are late on purpose
            observe(ScheduleFired(row.namespace, max(0, self.now - fire["nominal_us"]) / 1e6))
        state["recent_actions"] = (
            state["recent_actions"]
            + [
                {
                    "nominal_us": fire["nominal_us"],
                    "actual_us": self.now,
                    "workflow_id": workflow_id,
                    "run_id": run_id,
                    "trigger": fire["kind"],
                }
            ]
        )[-_RECENT_ACTIONS:]

    def _next_action_us(self) -> int | None:
        candidates = []
        if not self.row.paused:
            candidates.append(self.rule.next_after(self.row.cursor_us))
        if self.state["buffered"]:
            candidates.append(self.now + int(self.config.max_sleep_s * _SECOND_US))
        found = [c for c in candidates if c is not None]
        return min(found) if found else None


def action_visibility(action: dict[str, Any]) -> tuple[common_pb2.SearchAttributes, common_pb2.Memo]:
    """The search attributes and memo an action document gives each started run (none in
    documents written before schedules had them)."""
    return (
        common_pb2.SearchAttributes.FromString(base64.b64decode(action.get("search_attributes", ""))),
        common_pb2.Memo.FromString(base64.b64decode(action.get("memo", ""))),
    )


def action_input(action: dict[str, Any]) -> common_pb2.Payloads:
    """The workflow arguments an action document gives each started run."""
    return common_pb2.Payloads.FromString(base64.b64decode(action["input"]))


class Scheduler:
    """The leader-elected loop that fires schedules (one per replica, one acting)."""

    def __init__(self, engine: HistoryEngine, config: SchedulerConfig) -> None:
        self._engine = engine
        self.config = config
        self.identity = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        self._token: int | None = None
        self._next_renew_us = 0
        self._lease_expires_us = 0
        self._rejected_writes = 0
        self._leader_changes: list[dict[str, Any]] = []
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: Schedules whose processing failed, held aside with the reason (server/quarantine.py).
        self.held = Quarantine("scheduler: schedule", engine.metrics)
        # A virtual clock that jumps ahead (time skipping) may pass fire times we sleep towards.
        engine.clock.add_jump_listener(self.wake)

    @property
    def is_leader(self) -> bool:
        return self._token is not None

    def wake(self) -> None:
        """Runs a pass now (a schedule was created, triggered or unpaused)."""
        self._wake.set()

    def start(self) -> None:
        if self.config.enabled:
            self._task = asyncio.create_task(self._run(), name="flowforge-scheduler")

    async def stop(self) -> None:
        """Stops the loop and hands the lease back so another replica takes over at once."""
        await cancel_and_wait(self._task)
        self._task = None
        if self._token is not None:
            token, now = self._token, self._engine.clock.now_us()
            with contextlib.suppress(Exception):
                await self._engine.transaction(lambda tx: tx.renew_lease(LEASE_NAME, self.identity, token, now))
            self._change("released", token)
            self._token = None

    async def status(self) -> SchedulerStatus:
        lease = await self._engine.read(lambda tx: tx.get_lease(LEASE_NAME))
        return SchedulerStatus(
            identity=self.identity,
            is_leader=self.is_leader,
            lease=lease,
            rejected_writes=self._rejected_writes,
            leader_changes=list(self._leader_changes),
        )

    def _change(self, event: str, token: int, holder: str | None = None) -> None:
        holder = holder or self.identity
        self._leader_changes = (
            [
                *self._leader_changes,
                {"time_us": self._engine.clock.now_us(), "event": event, "fencing_token": token, "holder": holder},
            ]
        )[-20:]

    def _demote(self, why: str, lease: LeaseRow | None = None, *, refused: bool = True) -> None:
        token = self._token
        assert token is not None
        self._token = None
        self._rejected_writes += refused
        successor = f"; {lease.holder} holds it with fencing token {lease.fencing_token}" if lease else ""
        log.warning("scheduler %s is no longer leader (fencing token %d): %s%s", self.identity, token, why, successor)
        self._change("lost", token)

    async def _elect(self) -> None:
        engine, config = self._engine, self.config
        now = engine.clock.now_us()
        ttl_us = int(config.lease_ttl_s * _SECOND_US)
        if self._token is None:
            lease = await engine.transaction(lambda tx: tx.acquire_lease(LEASE_NAME, self.identity, now, ttl_us))
            if lease is None:
                return
            self._token = lease.fencing_token
            self._lease_expires_us = lease.expires_us
            self._next_renew_us = now + int(config.renew_interval_s * _SECOND_US)
            log.info("scheduler %s is leader with fencing token %d", self.identity, lease.fencing_token)
            self._change("acquired", lease.fencing_token)
            return
        if now < self._next_renew_us:
            return
        token = self._token
        try:
            renewed = await engine.transaction(
                lambda tx: tx.renew_lease(LEASE_NAME, self.identity, token, now + ttl_us)
            )
        except Exception:
            if now >= self._lease_expires_us:
                self._demote("the lease expired while the store could not be reached", refused=False)
            raise
        if renewed:
            self._lease_expires_us = now + ttl_us
            self._next_renew_us = now + int(config.renew_interval_s * _SECOND_US)
        else:
            self._demote("the lease renewal was refused", await engine.read(lambda tx: tx.get_lease(LEASE_NAME)))

    async def tick(self) -> None:
        """One election round, then (as leader) one pass over every schedule due now."""
        async with self._lock:
            await self._elect()
            if self._token is None:
                return
            token = self._token
            now = self._engine.clock.now_us()
            held = self.held
            due = await self._engine.read(lambda tx: tx.due_schedules(now, _BATCH + len(held)))
            for namespace, schedule_id in due:
                if held.is_held((namespace, schedule_id)):
                    continue
                try:
                    await self._engine.transaction(
                        functools.partial(self._process, namespace=namespace, schedule_id=schedule_id, token=token)
                    )
                except FencingTokenRejected as error:
                    self._demote(
                        f"a schedule write was refused ({error})",
                        await self._engine.read(lambda tx: tx.get_lease(LEASE_NAME)),
                    )
                    return
                except Exception as error:
                    # Held aside with its reason (logged once), retried after a backoff:
                    # one schedule that cannot be processed never stalls the others.
                    held.hold((namespace, schedule_id), error)
                else:
                    held.release((namespace, schedule_id))

    async def _process(self, tx: Transaction, namespace: str, schedule_id: str, token: int) -> None:
        lease = await tx.get_lease(LEASE_NAME)
        if lease is None or lease.fencing_token != token:
            raise FencingTokenRejected(f"fencing token {token} is stale")
        row = await tx.get_schedule(namespace, schedule_id)
        if row is None:
            return
        expected_version = row.version
        now = self._engine.clock.now_us()
        if row.next_action_us is None or row.next_action_us > now:
            return  # another pass got here first
        await _Pass(self._engine, tx, row, now, self.config).run()
        await tx.update_schedule(row, expected_version, token)

    async def _run(self) -> None:
        failures = 0
        while True:
            self._wake.clear()
            try:
                await self.tick()
                failures = 0
                sleep_s = self.config.max_sleep_s
                if self._token is not None:
                    next_us = await self._engine.read(lambda tx: tx.next_schedule_action_us())
                    until_us = min(x for x in (next_us, self._next_renew_us) if x is not None)
                    sleep_s = max(0.0, min(sleep_s, (until_us - self._engine.clock.now_us()) / 1e6 + 0.001))
                    if sleep_s <= 0.001 and self.held:
                        sleep_s = self.config.max_sleep_s  # what is due may be only held schedules: do not spin
            except asyncio.CancelledError:
                raise
            except Exception:
                failures += 1
                log.exception("scheduler pass failed (%d in a row); retrying", failures)
                sleep_s = min(0.1 * 2**failures, self.config.max_sleep_s)
            await wait_event(self._wake, sleep_s)
