"""The ``flowforge`` command line: run a server, start and inspect workflows.

    flowforge server start-dev [--db FILE | --in-memory] [--port 7233]
    flowforge server start --store postgresql://user@host:5432/db [--port 7233]
    flowforge workflow start --type T --task-queue Q --workflow-id ID [--input JSON]
    flowforge workflow list [--output json]
    flowforge workflow show --workflow-id ID [--run-id R] [--output json]
    flowforge workflow cancel|terminate --workflow-id ID [--reason TEXT]
    flowforge namespace create NAME | list
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from typing import Any, Optional, Sequence

__all__ = ["main"]

_DEFAULT_ADDRESS = "localhost:7233"


def _server_parser(commands: Any) -> None:
    server = commands.add_parser("server", help="run a FlowForge server").add_subparsers(dest="action", required=True)
    dev = server.add_parser("start-dev", help="one process, embedded SQLite: for a laptop")
    where = dev.add_mutually_exclusive_group()
    where.add_argument("--db", default=".flowforge/dev.db", help="SQLite file (default: .flowforge/dev.db)")
    where.add_argument("--in-memory", action="store_true", help="keep nothing after exit")
    start = server.add_parser("start", help="a server replica on a shared store (PostgreSQL)")
    start.add_argument("--store", required=True, help="postgresql://user@host:port/db (or a SQLite file)")
    for parser in (dev, start):
        parser.add_argument("--ip", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
        parser.add_argument("--port", type=int, default=7233, help="gRPC port (default 7233; 0 = any free port)")
        parser.add_argument("--max-payload-bytes", type=int, default=2 * 1024 * 1024)
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
    listing = workflow.add_parser("list", help="executions, newest first")
    listing.add_argument("--limit", type=int, default=50)
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
    for parser in (start, listing, show, *(workflow.choices[n] for n in ("cancel", "terminate"))):
        _client_options(parser)


def _namespace_parser(commands: Any) -> None:
    namespace = commands.add_parser("namespace", help="manage namespaces").add_subparsers(dest="action", required=True)
    create = namespace.add_parser("create")
    create.add_argument("name")
    create.add_argument("--description", default="")
    listing = namespace.add_parser("list")
    for parser in (create, listing):
        parser.add_argument("--address", default=_DEFAULT_ADDRESS)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flowforge", description="FlowForge: durable workflows for Python")
    commands = parser.add_subparsers(dest="command", required=True)
    _server_parser(commands)
    _workflow_parser(commands)
    _namespace_parser(commands)
    return parser


async def _run_server(args: argparse.Namespace) -> None:
    from flowforge.server import EngineConfig, FlowForgeServer, ServerConfig

    if args.action == "start-dev":
        store = ":memory:" if args.in_memory else args.db
    else:
        store = args.store
    server = FlowForgeServer(
        ServerConfig(
            store=store, host=args.ip, port=args.port, engine=EngineConfig(max_payload_bytes=args.max_payload_bytes)
        )
    )
    await server.serve(ready_file=args.ready_file)


def _print_table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())


def _stamp(value: Any) -> str:
    return value.isoformat(timespec="seconds") if value else ""


async def _run_workflow(args: argparse.Namespace) -> None:
    from flowforge.client import Client

    client = await Client.connect(args.address, namespace=args.namespace)
    try:
        if args.action == "start":
            handle = await client.start_workflow(
                args.type, args=[json.loads(value) for value in args.input], id=args.workflow_id,
                task_queue=args.task_queue,
            )
            print(handle.run_id)
        elif args.action == "list":
            executions = []
            async for execution in client.list_workflows():
                executions.append(execution)
                if len(executions) >= args.limit:
                    break
            if args.output == "json":
                print(json.dumps([
                    {"workflow_id": e.workflow_id, "run_id": e.run_id, "workflow_type": e.workflow_type,
                     "status": e.status.name, "start_time": _stamp(e.start_time), "close_time": _stamp(e.close_time)}
                    for e in executions
                ], indent=2))
            else:
                _print_table([("WORKFLOW ID", "RUN ID", "TYPE", "STATUS", "STARTED", "CLOSED")] + [
                    (e.workflow_id, e.run_id, e.workflow_type, e.status.name, _stamp(e.start_time),
                     _stamp(e.close_time)) for e in executions
                ])
        elif args.action == "show":
            handle = client.get_workflow_handle(args.workflow_id, run_id=args.run_id)
            history = await handle.fetch_history()
            if args.output == "json":
                print(history.to_json())
                return
            description = await handle.describe()
            print(f"{description.workflow_id}  run {description.run_id}  {description.workflow_type}"
                  f"  {description.status.name}")
            print("\nHistory:")
            for event in history.events:
                print(f"  {event.event_id:>4}  {_stamp(event.event_time)}  {event.event_type}")
            if description.dag:
                print("\nDAG:")
                for node in description.dag:
                    after = ", ".join(node.depends_on) or "-"
                    print(f"  [{node.activity_id}] {node.activity_type}  after: {after}  {node.state}"
                          f" (attempt {node.attempt})")
            if description.pending_workflow_task and description.pending_workflow_task.last_failure:
                print(f"\nWorkflow task failing: {description.pending_workflow_task.last_failure}")
        elif args.action in ("cancel", "terminate"):
            handle = client.get_workflow_handle(args.workflow_id, run_id=args.run_id)
            await (handle.cancel(args.reason) if args.action == "cancel" else handle.terminate(reason=args.reason))
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


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line; returns the process exit code."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=getattr(args, "log_level", "WARNING").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from flowforge.exceptions import RPCError

    runners = {"server": _run_server, "workflow": _run_workflow, "namespace": _run_namespace}
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
