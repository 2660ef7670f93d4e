"""The ``flowforge`` command line: run a server, start and inspect workflows.

flowforge server start-dev [--db FILE | --in-memory] [--port 7233]
flowforge server start --store postgresql://user@host:5432/db [--port 7233]
flowforge workflow start --type T --task-queue Q --workflow-id ID [--input JSON]
    [--search-attribute NAME=VALUE ...] [--memo NAME=JSON ...]
flowforge workflow list [--query "WorkflowType = 'X' AND ExecutionStatus = 'Running'"] [--output json]
flowforge workflow count [--query QUERY]
flowforge workflow show --workflow-id ID [--run-id R] [--output json]
flowforge workflow cancel|terminate --workflow-id ID [--reason TEXT]
flowforge workflow signal --workflow-id ID --name SIGNAL [--input JSON ...]
flowforge workflow query --workflow-id ID --name QUERY [--input JSON ...] [--timeout SECONDS]
flowforge namespace create NAME | list
flowforge trigger create --trigger-id ID --event-type T --workflow-type W --task-queue Q
                         [--filter COND ...] [--input PATH ...] [--id-prefix P]
flowforge trigger list | describe --trigger-id ID | delete --trigger-id ID
flowforge event publish --id ID --source S --type T [--data JSON] [--subject S]
flowforge search-attribute create --name NAME --type Keyword|Int|Double|Bool|Datetime | list
flowforge schedule create --schedule-id ID --workflow-type T --task-queue Q --workflow-id PREFIX
                          [--cron EXPR ...] [--interval SECONDS ...] [--time-zone ZONE] [--input JSON ...]
                          [--overlap POLICY] [--misfire POLICY] [--catchup-window SECONDS] [--paused --note N]
flowforge schedule list | describe | delete --schedule-id ID
flowforge schedule pause|unpause --schedule-id ID [--note TEXT]
flowforge schedule trigger --schedule-id ID [--overlap POLICY]
flowforge schedule backfill --schedule-id ID --start ISO --end ISO [--overlap POLICY]
flowforge schedule status            (which server replica leads the scheduler)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

__all__ = ["main"]

_DEFAULT_ADDRESS = "localhost:7233"
# 8233 is the console's (DESIGN.md); the event webhook of the dev server is next to it.
_DEV_HTTP_PORT = 8234


def _server_parser(commands: Any) -> None:
    server = commands.add_parser("server", help="run a FlowForge server").add_subparsers(dest="action", required=True)
    dev = server.add_parser("start-dev", help="one process, embedded SQLite: for a laptop")
    where = dev.add_mutually_exclusive_group()
    where.add_argument("--db", default=".flowforge/dev.db", help="SQLite file (default: .flowforge/dev.db)")
    where.add_argument("--in-memory", action="store_true", help="keep nothing after exit")
    start = server.add_parser("start", help="a server replica on a shared store (PostgreSQL)")
    start.add_argument("--store", required=True, help="postgresql://user@host:port/db (or a SQLite file)")
    dev.add_argument(
        "--http-port",
        type=int,
        default=_DEV_HTTP_PORT,
        help=f"port of the POST /events webhook (default {_DEV_HTTP_PORT}; 0 = any free port)",
    )
    start.add_argument(
        "--http-port",
        type=int,
        default=None,
        help="port of the POST /events webhook (default: none; 0 = any free port)",
    )
    for parser in (dev, start):
        parser.add_argument("--ip", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
        parser.add_argument("--port", type=int, default=7233, help="gRPC port (default 7233; 0 = any free port)")
        parser.add_argument("--max-payload-bytes", type=int, default=2 * 1024 * 1024)
        parser.add_argument(
            "--webhook-secrets-file",
            help="file of NAMESPACE=SECRET lines ('*' for all other namespaces): POST /events then needs"
            " an X-FlowForge-Signature (docs/events.md)",
        )
        parser.add_argument(
            "--event-dedupe-window",
            type=float,
            default=24 * 3600.0,
            help="seconds a published event's (source, id) is remembered (default 86400)",
        )
        parser.add_argument(
            "--scheduler-lease-ttl",
            type=float,
            default=15.0,
            help="seconds a scheduler leader's lease lasts unrenewed (default 15)",
        )
        parser.add_argument(
            "--scheduler-renew-interval",
            type=float,
            default=5.0,
            help="seconds between the leader's lease renewals (default 5)",
        )
        parser.add_argument("--scheduler-max-sleep", type=float, default=1.0, help=argparse.SUPPRESS)
        parser.add_argument("--log-level", default="INFO")
        parser.add_argument("--ready-file", help=argparse.SUPPRESS)  # tests: the bound port is written here


def _client_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--address", default=_DEFAULT_ADDRESS, help=f"server address (default {_DEFAULT_ADDRESS})")
    parser.add_argument("--namespace", default="default")


def _workflow_parser(commands: Any) -> None:
    workflow = commands.add_parser("workflow", help="start and inspect executions").add_subparsers(
        dest="action", required=True
    )
    start = workflow.add_parser("start", help="start an execution; prints its run id")
    start.add_argument("--type", required=True, help="workflow type name")
    start.add_argument("--task-queue", required=True)
    start.add_argument("--workflow-id", required=True)
    start.add_argument("--input", action="append", default=[], help="a JSON argument (repeat for several)")
    start.add_argument(
        "--search-attribute",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a registered search attribute (repeat); VALUE is JSON (42, true) or text,"
        " an RFC 3339 time for a Datetime attribute",
    )
    start.add_argument("--memo", action="append", default=[], metavar="NAME=JSON", help="a memo entry (repeat)")
    listing = workflow.add_parser("list", help="executions, newest first")
    listing.add_argument("--limit", type=int, default=50)
    counting = workflow.add_parser("count", help="the number of executions a query matches")
    for parser in (listing, counting):
        parser.add_argument("--query", "-q", default="", help="a visibility query (docs/visibility.md)")
    show = workflow.add_parser("show", help="an execution's history and DAG")
    for parser in (show,):
        parser.add_argument("--workflow-id", required=True)
        parser.add_argument("--run-id", default=None)
    for parser in (listing, show):
        parser.add_argument("--output", choices=("text", "json"), default="text")
    for name in ("cancel", "terminate"):
        parser = workflow.add_parser(name, help=f"{name} an execution")
        parser.add_argument("--workflow-id", required=True)
        parser.add_argument("--run-id", default=None)
        parser.add_argument("--reason", default="")
    # Signals and queries.
    signal = workflow.add_parser("signal", help="send a signal to an execution")
    signal.add_argument("--name", required=True, help="signal name")
    query = workflow.add_parser("query", help="ask an execution a query; prints the answer as JSON")
    query.add_argument("--name", required=True, help="query name")
    query.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for a worker's answer")
    for parser in (signal, query):
        parser.add_argument("--workflow-id", required=True)
        parser.add_argument("--run-id", default=None)
        parser.add_argument("--input", action="append", default=[], help="a JSON argument (repeat for several)")
    steering = (workflow.choices[n] for n in ("cancel", "terminate", "signal", "query"))
    for parser in (start, listing, counting, show, *steering):
        _client_options(parser)


def _namespace_parser(commands: Any) -> None:
    namespace = commands.add_parser("namespace", help="manage namespaces").add_subparsers(dest="action", required=True)
    create = namespace.add_parser("create")
    create.add_argument("name")
    create.add_argument("--description", default="")
    listing = namespace.add_parser("list")
    for parser in (create, listing):
        parser.add_argument("--address", default=_DEFAULT_ADDRESS)


def _trigger_parser(commands: Any) -> None:
    trigger = commands.add_parser("trigger", help="event triggers: events that start workflows").add_subparsers(
        dest="action", required=True
    )
    create = trigger.add_parser("create", help="subscribe a workflow to an event type")
    create.add_argument("--trigger-id", required=True)
    create.add_argument("--event-type", required=True)
    create.add_argument("--workflow-type", required=True)
    create.add_argument("--task-queue", required=True)
    create.add_argument(
        "--filter",
        action="append",
        default=[],
        help="condition PATH OP JSON, OP one of ==, !=, in, not in (repeat: all must hold)",
    )
    create.add_argument(
        "--input",
        action="append",
        default=[],
        help="event path of a workflow argument, e.g. data.order_id (repeat for several)",
    )
    create.add_argument("--id-prefix", default=None, help="workflow id prefix (default TRIGGER_ID-)")
    listing = trigger.add_parser("list", help="triggers by id")
    listing.add_argument("--output", choices=("text", "json"), default="text")
    describe = trigger.add_parser("describe", help="one trigger")
    delete = trigger.add_parser("delete", help="delete a trigger (its workflows go on)")
    for parser in (describe, delete):
        parser.add_argument("--trigger-id", required=True)
    for parser in (create, listing, describe, delete):
        _client_options(parser)


def _event_parser(commands: Any) -> None:
    event = commands.add_parser("event", help="publish events").add_subparsers(dest="action", required=True)
    publish = event.add_parser("publish", help="publish a CloudEvents-shaped event; prints what it started")
    publish.add_argument("--id", required=True, help="event id, unique within the source")
    publish.add_argument("--source", required=True)
    publish.add_argument("--type", required=True)
    publish.add_argument("--subject", default=None)
    publish.add_argument("--data", default=None, help="the payload as JSON")
    _client_options(publish)


_VALUE_TYPES = ("Keyword", "Int", "Double", "Bool", "Datetime")


def _search_attribute_parser(commands: Any) -> None:
    attribute = commands.add_parser("search-attribute", help="custom search attributes of a namespace").add_subparsers(
        dest="action", required=True
    )
    create = attribute.add_parser("create", help="register an attribute and its type (idempotent)")
    create.add_argument("--name", required=True)
    create.add_argument("--type", required=True, choices=_VALUE_TYPES, type=lambda t: t.capitalize())
    listing = attribute.add_parser("list", help="the registered attributes and their types")
    for parser in (create, listing):
        _client_options(parser)


# schedules (docs/schedules.md)

_OVERLAP_CHOICES = ("SKIP", "BUFFER_ONE", "ALLOW_ALL", "CANCEL_OTHER", "TERMINATE_OTHER")


def _schedule_parser(commands: Any) -> None:
    schedule = commands.add_parser("schedule", help="cron and interval schedules").add_subparsers(
        dest="action", required=True
    )
    create = schedule.add_parser("create", help="create a schedule that starts a workflow")
    create.add_argument("--workflow-type", required=True)
    create.add_argument("--task-queue", required=True)
    create.add_argument("--workflow-id", required=True, help="prefix of the started workflow ids")
    create.add_argument("--cron", action="append", default=[], help="five-field cron expression (repeatable)")
    create.add_argument("--interval", action="append", type=float, default=[], help="fire every N seconds (repeatable)")
    create.add_argument("--time-zone", default="UTC", help="IANA zone of the cron expressions (default UTC)")
    create.add_argument("--input", action="append", default=[], help="a JSON argument (repeat for several)")
    create.add_argument("--misfire", choices=("SKIP", "RUN_ONCE", "CATCH_UP"), default="CATCH_UP")
    create.add_argument("--catchup-window", type=float, default=365 * 24 * 3600.0, help="seconds (default 1 year)")
    create.add_argument("--paused", action="store_true")
    listing = schedule.add_parser("list", help="schedules by id")
    describe = schedule.add_parser("describe", help="a schedule, its recent and next fires")
    for parser in (listing, describe):
        parser.add_argument("--output", choices=("text", "json"), default="text")
    pause = schedule.add_parser("pause", help="stop firing (trigger and backfill still work)")
    unpause = schedule.add_parser("unpause", help="fire again from now on")
    for parser in (create, pause, unpause):
        parser.add_argument("--note", default="", help="why, for people")
    trigger = schedule.add_parser("trigger", help="fire now")
    backfill = schedule.add_parser("backfill", help="fire every nominal time in a range")
    backfill.add_argument("--start", required=True, help="ISO 8601 with an offset, e.g. 2026-03-01T00:00:00+00:00")
    backfill.add_argument("--end", required=True)
    for parser in (create, trigger, backfill):
        parser.add_argument("--overlap", choices=_OVERLAP_CHOICES, default=None)
    delete = schedule.add_parser("delete", help="delete a schedule (its workflows go on)")
    status = schedule.add_parser("status", help="which server replica leads the scheduler")
    for parser in (create, describe, pause, unpause, trigger, backfill, delete):
        parser.add_argument("--schedule-id", required=True)
    for parser in (create, listing, describe, pause, unpause, trigger, backfill, delete, status):
        _client_options(parser)


def _schedule_dict(description: Any) -> dict[str, Any]:
    schedule, info = description.schedule, description.info
    return {
        "schedule_id": description.id,
        "workflow_type": schedule.action.workflow,
        "task_queue": schedule.action.task_queue,
        "workflow_id_prefix": schedule.action.id,
        "args": schedule.action.args,
        "cron_expressions": list(schedule.spec.cron_expressions),
        "intervals_s": [i.every.total_seconds() for i in schedule.spec.intervals],
        "time_zone": schedule.spec.time_zone_name,
        "overlap": schedule.policy.overlap.name,
        "misfire": schedule.policy.misfire.name,
        "catchup_window_s": schedule.policy.catchup_window.total_seconds(),
        "paused": schedule.state.paused,
        "note": schedule.state.note,
        "actions": info.num_actions,
        "skipped_overlap": info.num_actions_skipped_overlap,
        "missed": info.num_actions_missed_catchup_window,
        "buffered": info.buffered_actions,
        "running": info.running_workflow_ids,
        "recent_actions": [
            {
                "nominal_time": _stamp(a.scheduled_at),
                "started_at": _stamp(a.started_at),
                "workflow_id": a.workflow_id,
                "run_id": a.run_id,
                "trigger": a.trigger,
            }
            for a in info.recent_actions
        ],
        "next_action_times": [_stamp(t) for t in info.next_action_times],
    }


def _moment(text: str, flag: str) -> Any:
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise SystemExit(f"error: {flag} {text!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise SystemExit(f"error: {flag} needs an offset, e.g. {text}+00:00")
    return moment


async def _run_schedule(args: argparse.Namespace) -> None:
    from datetime import timedelta

    from flowforge import client as api

    overlap = api.ScheduleOverlapPolicy[args.overlap] if getattr(args, "overlap", None) else None
    client = await api.Client.connect(args.address, namespace=args.namespace)
    try:
        handle = client.get_schedule_handle(args.schedule_id) if hasattr(args, "schedule_id") else None
        if args.action == "create":
            try:
                inputs = [json.loads(value) for value in args.input]
            except ValueError:
                raise SystemExit("error: --input is not JSON (strings need double quotes)") from None
            await client.create_schedule(
                args.schedule_id,
                api.Schedule(
                    action=api.ScheduleActionStartWorkflow(
                        args.workflow_type,
                        args=inputs,
                        id=args.workflow_id,
                        task_queue=args.task_queue,
                    ),
                    spec=api.ScheduleSpec(
                        cron_expressions=args.cron,
                        time_zone_name=args.time_zone,
                        intervals=[api.ScheduleIntervalSpec(every=timedelta(seconds=s)) for s in args.interval],
                    ),
                    policy=api.SchedulePolicy(
                        overlap=overlap or api.ScheduleOverlapPolicy.SKIP,
                        misfire=api.ScheduleMisfirePolicy[args.misfire],
                        catchup_window=timedelta(seconds=args.catchup_window),
                    ),
                    state=api.ScheduleState(paused=args.paused, note=args.note),
                ),
            )
            print(f"schedule {args.schedule_id} created")
        elif args.action == "list":
            schedules = [_schedule_dict(d) async for d in client.list_schedules()]
            if args.output == "json":
                print(json.dumps(schedules, indent=2))
            elif schedules:
                _print_table(
                    [("SCHEDULE ID", "WORKFLOW TYPE", "SPEC", "ZONE", "PAUSED", "ACTIONS")]
                    + [
                        (
                            d["schedule_id"],
                            d["workflow_type"],
                            " | ".join(d["cron_expressions"] + [f"every {s:g}s" for s in d["intervals_s"]]),
                            d["time_zone"],
                            "yes" if d["paused"] else "no",
                            str(d["actions"]),
                        )
                        for d in schedules
                    ]
                )
        elif args.action == "describe":
            described = _schedule_dict(await handle.describe())
            if args.output == "json":
                print(json.dumps(described, indent=2))
            else:
                for key, value in described.items():
                    print(f"{key}: {value}")
        elif args.action in ("pause", "unpause"):
            await (handle.pause(note=args.note) if args.action == "pause" else handle.unpause(note=args.note))
            print(f"schedule {args.schedule_id} {args.action}d")
        elif args.action == "trigger":
            await handle.trigger(overlap=overlap)
            print(f"schedule {args.schedule_id} triggered")
        elif args.action == "backfill":
            await handle.backfill(_moment(args.start, "--start"), _moment(args.end, "--end"), overlap=overlap)
            print(f"schedule {args.schedule_id} backfill queued")
        elif args.action == "delete":
            await handle.delete()
            print(f"schedule {args.schedule_id} deleted")
        else:
            status = await client.get_scheduler_status()
            print(
                f"leader: {status.leader_identity or '-'}  fencing token {status.fencing_token}"
                f"  since {_stamp(status.leader_since)}  lease until {_stamp(status.lease_expires_at)}"
            )
            print(
                f"this replica: {status.replica_identity}  leader: {'yes' if status.replica_is_leader else 'no'}"
                f"  refused writes: {status.replica_rejected_writes}"
            )
            for change in status.replica_leader_changes:
                print(f"  {_stamp(change.time)}  {change.event}  token {change.fencing_token}")
    finally:
        await client.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flowforge", description="FlowForge: durable workflows for Python")
    commands = parser.add_subparsers(dest="command", required=True)
    _server_parser(commands)
    _workflow_parser(commands)
    _namespace_parser(commands)
    _trigger_parser(commands)
    _event_parser(commands)
    _search_attribute_parser(commands)
    _schedule_parser(commands)
    return parser


async def _run_server(args: argparse.Namespace) -> None:
    from flowforge.server import EngineConfig, FlowForgeServer, SchedulerConfig, ServerConfig

    if args.action == "start-dev":
        store = ":memory:" if args.in_memory else args.db
    else:
        store = args.store
    server = FlowForgeServer(
        ServerConfig(
            store=store,
            host=args.ip,
            port=args.port,
            engine=EngineConfig(max_payload_bytes=args.max_payload_bytes),
            http_port=args.http_port,
            event_dedupe_window_s=args.event_dedupe_window,
            webhook_secrets=_read_webhook_secrets(args.webhook_secrets_file) if args.webhook_secrets_file else {},
            scheduler=SchedulerConfig(
                lease_ttl_s=args.scheduler_lease_ttl,
                renew_interval_s=args.scheduler_renew_interval,
                max_sleep_s=args.scheduler_max_sleep,
            ),
        )
    )
    await server.serve(ready_file=args.ready_file)


def _read_webhook_secrets(path: str) -> dict[str, str]:
    """NAMESPACE=SECRET lines; blank lines and # comments are skipped."""
    secrets = {}
    with open(path) as lines:
        for number, line in enumerate(lines, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            namespace, separator, secret = line.partition("=")
            if not separator or not namespace.strip() or not secret.strip():
                raise SystemExit(f"{path}:{number}: expected NAMESPACE=SECRET")  # the line holds a secret: not shown
            secrets[namespace.strip()] = secret.strip()
    return secrets


def _print_table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=False)).rstrip())


def _stamp(value: Any) -> str:
    return value.isoformat(timespec="seconds") if value else ""


async def _run_workflow(args: argparse.Namespace) -> None:
    from flowforge.client import Client

    client = await Client.connect(args.address, namespace=args.namespace)
    try:
        if args.action == "start":
            handle = await client.start_workflow(
                args.type,
                args=[json.loads(value) for value in args.input],
                id=args.workflow_id,
                task_queue=args.task_queue,
                search_attributes=await _search_attribute_values(client, args.search_attribute),
                memo={name: _json(text, f"--memo {name}") for name, text in _pairs(args.memo, "--memo")},
            )
            print(handle.run_id)
        elif args.action == "list":
            executions = []
            async for execution in client.list_workflows(args.query, page_size=min(max(args.limit, 1), 1000)):
                executions.append(execution)
                if len(executions) >= args.limit:
                    break
            if args.output == "json":
                print(
                    json.dumps(
                        [
                            {
                                "workflow_id": e.workflow_id,
                                "run_id": e.run_id,
                                "workflow_type": e.workflow_type,
                                "status": e.status.name,
                                "start_time": _stamp(e.start_time),
                                "close_time": _stamp(e.close_time),
                                "search_attributes": e.search_attributes,
                                "memo": e.memo,
                            }
                            for e in executions
                        ],
                        indent=2,
                        default=lambda value: value.isoformat(),
                    )
                )
            else:
                _print_table(
                    [("WORKFLOW ID", "RUN ID", "TYPE", "STATUS", "STARTED", "CLOSED")]
                    + [
                        (
                            e.workflow_id,
                            e.run_id,
                            e.workflow_type,
                            e.status.name,
                            _stamp(e.start_time),
                            _stamp(e.close_time),
                        )
                        for e in executions
                    ]
                )
        elif args.action == "count":
            print((await client.count_workflows(args.query)).count)
        elif args.action == "show":
            handle = client.get_workflow_handle(args.workflow_id, run_id=args.run_id)
            history = await handle.fetch_history()
            if args.output == "json":
                print(history.to_json())
                return
            description = await handle.describe()
            build = f"  build {description.first_worker_build_id}" if description.first_worker_build_id else ""
            print(
                f"{description.workflow_id}  run {description.run_id}  {description.workflow_type}"
                f"  {description.status.name}{build}"
            )
            for title, values in (("Search attributes", description.search_attributes), ("Memo", description.memo)):
                if values:
                    print(f"\n{title}:")
                    for name, value in values.items():
                        print(f"  {name} = {value.isoformat() if isinstance(value, datetime) else json.dumps(value)}")
            print("\nHistory:")
            for event in history.events:
                print(f"  {event.event_id:>4}  {_stamp(event.event_time)}  {event.event_type}")
            if description.dag:
                print("\nDAG:")
                for node in description.dag:
                    after = ", ".join(node.depends_on) or "-"
                    print(
                        f"  [{node.activity_id}] {node.activity_type}  after: {after}  {node.state}"
                        f" (attempt {node.attempt})"
                    )
            if description.pending_workflow_task and description.pending_workflow_task.last_failure:
                print(f"\nWorkflow task failing: {description.pending_workflow_task.last_failure}")
        elif args.action in ("cancel", "terminate"):
            handle = client.get_workflow_handle(args.workflow_id, run_id=args.run_id)
            await (handle.cancel(args.reason) if args.action == "cancel" else handle.terminate(reason=args.reason))
        elif args.action == "signal":
            handle = client.get_workflow_handle(args.workflow_id, run_id=args.run_id)
            await handle.signal(args.name, args=[json.loads(value) for value in args.input])
        elif args.action == "query":
            handle = client.get_workflow_handle(args.workflow_id, run_id=args.run_id)
            answer = await handle.query(
                args.name, args=[json.loads(value) for value in args.input], timeout=timedelta(seconds=args.timeout)
            )
            print(json.dumps(answer, indent=2))
    finally:
        await client.close()


async def _run_namespace(args: argparse.Namespace) -> None:
    from flowforge.client import Client

    client = await Client.connect(args.address)
    try:
        if args.action == "create":
            await client.register_namespace(args.name, description=args.description)
            print(f"namespace {args.name} created")
        else:
            for name in await client.list_namespaces():
                print(name)
    finally:
        await client.close()


def _trigger_dict(trigger: Any) -> dict[str, Any]:
    return {
        "trigger_id": trigger.trigger_id,
        "event_type": trigger.event_type,
        "filter": trigger.filter,
        "input_paths": trigger.input_paths,
        "workflow_type": trigger.workflow_type,
        "task_queue": trigger.task_queue,
        "workflow_id_prefix": trigger.workflow_id_prefix,
        "create_time": _stamp(trigger.create_time),
    }


async def _run_trigger(args: argparse.Namespace) -> None:
    from flowforge.client import Client

    client = await Client.connect(args.address, namespace=args.namespace)
    try:
        if args.action == "create":
            trigger = await client.create_trigger(
                args.trigger_id,
                event_type=args.event_type,
                workflow=args.workflow_type,
                task_queue=args.task_queue,
                filter=args.filter,
                input_paths=args.input,
                id_prefix=args.id_prefix,
            )
            print(f"trigger {trigger.trigger_id} created")
        elif args.action == "list":
            triggers = [t async for t in client.list_triggers()]
            if args.output == "json":
                print(json.dumps([_trigger_dict(t) for t in triggers], indent=2))
            else:
                _print_table(
                    [("TRIGGER ID", "EVENT TYPE", "WORKFLOW TYPE", "TASK QUEUE", "FILTER")]
                    + [
                        (t.trigger_id, t.event_type, t.workflow_type, t.task_queue, " AND ".join(t.filter) or "-")
                        for t in triggers
                    ]
                )
        elif args.action == "describe":
            print(json.dumps(_trigger_dict(await client.describe_trigger(args.trigger_id)), indent=2))
        else:
            await client.delete_trigger(args.trigger_id)
            print(f"trigger {args.trigger_id} deleted")
    finally:
        await client.close()


async def _run_event(args: argparse.Namespace) -> None:
    from flowforge.client import Client

    try:
        data = json.loads(args.data) if args.data is not None else None
    except ValueError:
        raise SystemExit("error: --data is not JSON (strings need double quotes)") from None
    client = await Client.connect(args.address, namespace=args.namespace)
    try:
        result = await client.publish_event(
            id=args.id, source=args.source, type=args.type, data=data, subject=args.subject
        )
        print(
            json.dumps(
                {
                    "duplicate": result.duplicate,
                    "workflows": [
                        {
                            "trigger_id": w.trigger_id,
                            "workflow_id": w.workflow_id,
                            "run_id": w.run_id,
                            "started": w.started,
                        }
                        for w in result.workflows
                    ],
                },
                indent=2,
            )
        )
    finally:
        await client.close()


def _pairs(items: Sequence[str], flag: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        name, equals, value = item.partition("=")
        if not equals or not name:
            raise SystemExit(f"error: {flag} takes NAME=VALUE, not {item!r}")
        pairs.append((name, value))
    return pairs


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise SystemExit(f"error: {where} is not JSON (strings need double quotes)") from None


async def _search_attribute_values(client: Any, items: Sequence[str]) -> dict[str, Any]:
    """NAME=VALUE pairs as typed values: JSON where it parses, else text; a time for a Datetime attribute."""
    from flowforge.common import SearchAttributeIndexedValueType

    types = await client.list_search_attributes() if items else {}
    values: dict[str, Any] = {}
    for name, text in _pairs(items, "--search-attribute"):
        try:
            value = json.loads(text)
        except ValueError:
            value = text
        if types.get(name) == SearchAttributeIndexedValueType.DATETIME and isinstance(value, str):
            value = _moment(value, f"--search-attribute {name}")
        values[name] = value
    return values


async def _run_search_attribute(args: argparse.Namespace) -> None:
    from flowforge.client import Client
    from flowforge.common import SearchAttributeIndexedValueType

    client = await Client.connect(args.address, namespace=args.namespace)
    try:
        if args.action == "create":
            await client.add_search_attributes({args.name: SearchAttributeIndexedValueType[args.type.upper()]})
            print(f"search attribute {args.name} ({args.type}) registered in namespace {args.namespace}")
        else:
            attributes = await client.list_search_attributes()
            _print_table([("NAME", "TYPE")] + [(name, t.name.capitalize()) for name, t in attributes.items()])
    finally:
        await client.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the process exit code."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=getattr(args, "log_level", "WARNING").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from flowforge.exceptions import RPCError

    runners = {
        "server": _run_server,
        "workflow": _run_workflow,
        "namespace": _run_namespace,
        "trigger": _run_trigger,
        "event": _run_event,
        "search-attribute": _run_search_attribute,
        "schedule": _run_schedule,
    }
    try:
        asyncio.run(runners[args.command](args))
    except RPCError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
