"""Every command of ``flowforge``, generated from click's command tree, against a real server.

For each leaf command of :data:`flowforge.cli.cli` there must be a :class:`Case` in
:data:`CASES` (``test_every_command_has_a_case``: a new command without one fails). Each case
runs its command in text form and, when the command has ``--output``, in JSON form, against a
``flowforge server start`` process with a worker process (tests/integration/_cli_app.py), and
runs its bad input, which must end with exit code 2 and one line on stderr naming the flag.

The commands run in this process (``main(argv)``, output captured) so the ~40 commands take
seconds; test_cli.py and test_schedule_cli.py run the installed command in child processes.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest

from flowforge.cli import cli, main
from samples._dev_server import start_server
from tests.integration._processes import ServerProcess, _env

_ids = itertools.count(1)


def _eventually(check: Callable[[], Any], what: str, timeout_s: float = 30.0) -> Any:
    """Runs the CLI check (synchronous: each is a subprocess) until it gives something
    truthy, and returns that; fails naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out after {timeout_s:.0f} s waiting for {what}"
        time.sleep(0.05)
    return found


def _walk(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[str]:
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _walk(command, (*prefix, name))
        else:
            yield " ".join((*prefix, name))


def _command(path: str) -> click.Command:
    command: click.Command = cli
    for name in path.split():
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


COMMANDS = sorted(_walk(cli))


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


def flowforge(*args: str) -> Result:
    """Runs the command line in this process; returns its exit code and output."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return Result(code, out.getvalue(), err.getvalue())


def ok(*args: str) -> Result:
    result = flowforge(*args)
    assert result.code == 0, f"flowforge {' '.join(args)} -> {result.code}: {result.err}"
    return result


class Session:
    """The server and worker every case talks to, and fresh objects for a case to act on."""

    def __init__(self, address: str) -> None:
        self.address = address

    def fresh(self, prefix: str) -> str:
        return f"{prefix}-{next(_ids)}"

    def waiter(self) -> str:
        """A running ``Waiter`` execution (it waits for its ``finish`` signal)."""
        workflow_id = self.fresh("waiter")
        ok("workflow", "start", "--type", "Waiter", "--task-queue", "cli", "--workflow-id", workflow_id)
        return workflow_id

    def polled_queue(self) -> str:
        """The worker's queue "cli", once the worker has run a workflow from it (so it is a poller)."""
        ok("workflow", "execute", *_workflow_args(self))
        return "cli"

    def finished_waiter(self) -> str:
        """A ``Waiter`` execution that was signalled to finish (by "cli")."""
        workflow_id = self.waiter()
        ok("workflow", "signal", "--workflow-id", workflow_id, "--name", "finish", "--input", '"cli"')
        return workflow_id

    def schedule(self) -> str:
        schedule_id = self.fresh("sched")
        ok(
            "schedule",
            "create",
            "--schedule-id",
            schedule_id,
            "--workflow-type",
            "Echo",
            "--task-queue",
            "cli",
            "--workflow-id",
            schedule_id,
            "--cron",
            "0 3 * * *",
            "--paused",
        )
        return schedule_id

    def trigger(self) -> str:
        trigger_id = self.fresh("trig")
        ok(
            "trigger",
            "create",
            "--trigger-id",
            trigger_id,
            "--event-type",
            f"{trigger_id}.happened",
            "--workflow-type",
            "Echo",
            "--task-queue",
            "cli",
        )
        return trigger_id

    def api_key(self) -> str:
        """A new reader key of ``default``; returns its id."""
        created = ok("apikey", "create", "--namespace", "default", "--role", "reader", "--output", "json")
        key_id: str = json.loads(created.out)["id"]
        return key_id

    def namespace_with_quotas(self) -> str:
        """A fresh namespace with a start-rate quota (so an update changes a quota)."""
        name = self.fresh("quota-ns")
        ok("namespace", "create", name, "--start-rate", "1")
        return name

    def paused_waiter(self) -> str:
        """A running ``Waiter`` execution, paused."""
        workflow_id = self.waiter()
        ok("workflow", "pause", "--workflow-id", workflow_id, "--reason", "to unpause")
        return workflow_id

    def batch_job(self) -> str:
        """A batch terminate job (over nothing: it completes at once); returns its id."""
        query = f"WorkflowId = '{self.fresh('nobody')}'"
        started = ok("batch", "terminate", "--query", query, "--reason", "cli test", "--output", "json")
        job_id: str = json.loads(started.out)["job_id"]
        return job_id

    def pending_activity(self) -> str:
        """An ``Unserved`` execution once its activity "1" is pending; returns the workflow id."""
        workflow_id = self.fresh("unserved")
        ok("workflow", "start", "--type", "Unserved", "--task-queue", "cli", "--workflow-id", workflow_id)
        _eventually(
            lambda: json.loads(ok("workflow", "describe", "--workflow-id", workflow_id, "--output", "json").out)[
                "pending_activities"
            ],
            f"{workflow_id}'s activity to be scheduled",
        )
        return workflow_id

    def paused_activity(self) -> str:
        """An ``Unserved`` execution whose activity "1" is paused; returns the workflow id."""
        workflow_id = self.pending_activity()
        ok("activity", "pause", "--workflow-id", workflow_id, "--activity-id", "1", "--reason", "to unpause")
        return workflow_id

    def completed_echo(self) -> str:
        """An ``Echo`` execution that completed (``workflow execute`` waits for it)."""
        args = _workflow_args(self)
        ok("workflow", "execute", *args)
        return args[args.index("--workflow-id") + 1]

    def concurrency_limit(self) -> str:
        """A limit of 3 on the key ``cli-limited``."""
        ok("limit", "set", "--key", "cli-limited", "--max-running", "3")
        return "cli-limited"

    def rate_limit(self) -> str:
        """A rate limit of 7.5 per second on the key ``cli-rated``."""
        ok("limit", "rate", "--key", "cli-rated", "--per-second", "7.5")
        return "cli-rated"

    def breaker(self) -> str:
        """A breaker on the activity type ``CliGuarded``."""
        ok("breaker", "set", "--activity-type", "CliGuarded", "--failure-rate", "0.5", "--min-calls", "4",
           "--window", "60", "--open-seconds", "30")  # fmt: skip
        return "CliGuarded"

    def parked(self) -> str:
        """A ``Parks`` execution's activity, once parked in the dead-letter store; returns its id."""
        workflow_id = self.fresh("parks")
        ok("workflow", "start", "--type", "Parks", "--task-queue", "cli", "--workflow-id", workflow_id)
        listed = _eventually(
            lambda: json.loads(ok("dlq", "list", "--workflow-id", workflow_id, "--output", "json").out),
            f"{workflow_id}'s activity to be parked",
        )
        dead_letter_id: str = listed[0]["id"]
        return dead_letter_id

    def dag_file(self) -> str:
        """A fresh valid DAG definition (its own name, so its own version) in a temporary file."""
        name = self.fresh("dag")
        path = Path(tempfile.mkdtemp()) / f"{name}.yaml"
        path.write_text(f"name: {name}\ntasks:\n- {{id: only, activity: Echo, start_to_close_timeout: 10s}}\n")
        return str(path)

    def dag_version(self) -> str:
        """The version of a fresh DAG, published without an alias (so it can be deleted)."""
        return ok("dag", "publish", self.dag_file()).out.strip()

    def sample_dag_version(self) -> str:
        """The version of samples/dag_onboarding's DAG ("onboarding"), published."""
        return ok("dag", "publish", str(_DAG_SAMPLE)).out.strip()

    def profile(self) -> str:
        name = self.fresh("prof")
        ok("config", "set", "--profile", name, "address", f"{name}.example.com:7233")
        return name


@dataclass(frozen=True)
class Case:
    """How one command is exercised.

    ``args`` builds the command line (given the session; called again for the JSON run, so each
    run acts on fresh objects); ``text`` checks the text output; ``json`` checks the parsed JSON
    output (required exactly when the command has ``--output``); ``bad`` is a command line that
    must be refused with exit code 2 and one line naming ``names``.
    """

    args: Callable[[Session], list[str]]
    text: Callable[[str, list[str]], bool]
    bad: list[str]
    names: str
    json: Callable[[Any, list[str]], bool] | None = None
    prepare: Callable[[Session], object] | None = None  # makes what the command lists
    run: Callable[[Session, Path], None] | None = None  # instead of args/text: a server command


def _contains(*needles: str) -> Callable[[str, list[str]], bool]:
    return lambda out, args: all(needle.format(*args) in out for needle in needles)


def _serve(arguments: list[str]) -> Callable[[Session, Path], None]:
    """Runs a server command in a child process until it serves, then stops it."""

    def run(session: Session, tmp_path: Path) -> None:
        process, _ = start_server(arguments, str(tmp_path / "ready"), timeout_s=60, env=_env(), cwd=tmp_path)
        process.terminate()
        process.wait(timeout=30)

    return run


_DAG_SAMPLE = Path(__file__).parents[2] / "samples" / "dag_onboarding" / "onboarding.dag.yaml"


def _workflow_args(session: Session) -> list[str]:
    return ["--type", "Echo", "--task-queue", "cli", "--workflow-id", session.fresh("echo"), "--input", '{"x": 1}']


CASES: dict[str, Case] = {
    "apikey create": Case(
        args=lambda s: ["apikey", "create", "--namespace", "default", "--role", "worker", "--name", s.fresh("key")],
        text=lambda out, args: out.splitlines()[-1].startswith("ffk_") and "worker in default" in out,
        json=lambda value, args: value["key"].startswith(f"ffk_{value['id']}_") and value["role"] == "worker",
        bad=["apikey", "create", "--namespace", "default", "--role", "root"],
        names="--role",
    ),
    "apikey list": Case(
        prepare=Session.api_key,
        args=lambda s: ["apikey", "list"],
        text=_contains("ID", "NAMESPACE", "ROLE", "reader"),
        json=lambda value, args: (
            bool(value) and all({"id", "name", "namespace", "role"} <= row.keys() and "key" not in row for row in value)
        ),
        bad=["apikey", "list", "--output", "yaml"],
        names="--output",
    ),
    "apikey revoke": Case(
        args=lambda s: ["apikey", "revoke", "--id", s.api_key(), "--reason", "rotated"],
        text=_contains("API key {3} revoked"),
        bad=["apikey", "revoke", "--reason", "no id"],
        names="--id",
    ),
    "audit list": Case(
        prepare=Session.api_key,
        args=lambda s: ["audit", "list", "--limit", "5"],
        text=_contains("SEQ", "PRINCIPAL", "CreateApiKey"),
        json=lambda value, args: (
            0 < len(value) <= 5 and value[0]["seq"] > value[-1]["seq"] and len(value[0]["hash"]) == 64
        ),
        bad=["audit", "list", "--limit", "0"],
        names="--limit",
    ),
    "audit verify": Case(
        prepare=Session.api_key,
        args=lambda s: ["audit", "verify"],
        text=_contains("audit log intact"),
        bad=["audit", "verify", "--rows", "3"],
        names="--rows",
    ),
    "completion": Case(
        args=lambda s: ["completion", "bash"],
        text=_contains("_FLOWFORGE_COMPLETE", "complete"),
        bad=["completion", "tcsh"],
        names="tcsh",
    ),
    "config set": Case(
        args=lambda s: ["config", "set", "--profile", s.fresh("prof"), "tls.server_ca_cert_path", "/etc/ca.pem"],
        text=_contains("tls.server_ca_cert_path set in profile {3}"),
        bad=["config", "set", "--profile", "x", "adress", "h:1"],
        names="adress",
    ),
    "config get": Case(
        args=lambda s: ["config", "get", "--profile", s.profile()],
        text=_contains("address", "{3}.example.com:7233"),
        json=lambda value, args: value == {"address": f"{args[3]}.example.com:7233"},
        bad=["config", "get", "--profile", "nobody-has-this"],
        names="--profile",
    ),
    "config list": Case(
        prepare=Session.profile,
        args=lambda s: ["config", "list"],
        text=_contains("PROFILE", "ADDRESS"),
        json=lambda value, args: isinstance(value, list) and all("profile" in row for row in value),
        bad=["config", "list", "--output", "yaml"],
        names="--output",
    ),
    "config delete": Case(
        args=lambda s: ["config", "delete", "--profile", s.profile()],
        text=_contains("profile {3} deleted"),
        bad=["config", "delete", "--profile", "nobody-has-this"],
        names="--profile",
    ),
    "dag publish": Case(
        args=lambda s: ["dag", "publish", s.dag_file(), "--alias", "latest"],
        text=lambda out, args: re.fullmatch(r"[0-9a-f]{64}\n", out) is not None,
        json=lambda value, args: len(value["digest"]) == 64 and value["alias"] == "latest",
        bad=["dag", "publish", "/nonexistent/dag.yaml"],
        names="FILE",
    ),
    "dag alias": Case(
        args=lambda s: ["dag", "alias", "--name", "onboarding", "--alias", "prod", "--version", s.sample_dag_version()],
        text=_contains("onboarding@prod -> {7}"),
        bad=["dag", "alias", "--name", "onboarding", "--alias", "prod", "--version", "not-a-digest"],
        names="--version",
    ),
    "dag list": Case(
        prepare=Session.sample_dag_version,
        args=lambda s: ["dag", "list"],
        text=_contains("NAME", "VERSION", "TASKS", "onboarding"),
        json=lambda value, args: any(v["name"] == "onboarding" and v["task_count"] == 6 for v in value),
        bad=["dag", "list", "--limit", "0"],
        names="--limit",
    ),
    "dag show": Case(
        args=lambda s: ["dag", "show", "--version", s.sample_dag_version()],
        text=_contains('"name": "onboarding"', '"depends_on"'),
        bad=["dag", "show", "--version", "zz"],
        names="--version",
    ),
    "dag delete": Case(
        args=lambda s: ["dag", "delete", "--version", s.dag_version(), "--reason", "cleanup"],
        text=_contains("version {3} deleted"),
        bad=["dag", "delete", "--version", "0" * 64],
        names="--reason",
    ),
    "dag run": Case(
        args=lambda s: [
            "dag",
            "run",
            "--name",
            "onboarding",
            "--version",
            s.sample_dag_version(),
            "--workflow-id",
            s.fresh("dagrun"),
            "--task-queue",
            "dag-cli",  # nobody polls it: the run just starts
            "--input",
            '{"name": "Ada", "email": "ada@example.com"}',
        ],
        text=lambda out, args: len(out.strip()) == 36,
        json=lambda value, args: value["workflow_id"] == args[7] and len(value["run_id"]) == 36,
        bad=["dag", "run", "--name", "onboarding", "--workflow-id", "w", "--task-queue", "q", "--input", "{oops"],
        names="--input",
    ),
    "dag validate": Case(
        args=lambda s: ["dag", "validate", str(_DAG_SAMPLE)],
        text=_contains("valid DAG 'onboarding', 6 tasks, version "),
        bad=["dag", "validate"],
        names="FILE",
    ),
    "workflow reset": Case(
        args=lambda s: [
            "workflow",
            "reset",
            "--workflow-id",
            s.completed_echo(),
            "--type",
            "first",
            "--reason",
            "cli test",
        ],
        text=_contains("workflow {3} reset: new run "),
        json=lambda value, args: value["workflow_id"] == args[3] and len(value["run_id"]) == 36,
        bad=["workflow", "reset", "--workflow-id", "w", "--reason", "no point"],
        names="--event-id",
    ),
    "workflow pause": Case(
        args=lambda s: ["workflow", "pause", "--workflow-id", s.waiter(), "--reason", "cli test"],
        text=_contains("workflow {3} paused"),
        bad=["workflow", "pause", "--workflow-id", "w"],
        names="--reason",
    ),
    "workflow unpause": Case(
        args=lambda s: ["workflow", "unpause", "--workflow-id", s.paused_waiter(), "--reason", "cli test"],
        text=_contains("workflow {3} unpaused"),
        bad=["workflow", "unpause", "--reason", "no id"],
        names="--workflow-id",
    ),
    "batch describe": Case(
        args=lambda s: ["batch", "describe", "--job-id", s.batch_job()],
        text=_contains("JOB ID", "{3}", "terminate"),
        json=lambda value, args: value["job_id"] == args[3] and value["operation"] == "terminate",
        bad=["batch", "describe"],
        names="--job-id",
    ),
    "batch list": Case(
        prepare=Session.batch_job,
        args=lambda s: ["batch", "list"],
        text=_contains("JOB ID", "OPERATION", "terminate"),
        json=lambda value, args: (
            bool(value) and all({"job_id", "operation", "state", "done"} <= j.keys() for j in value)
        ),
        bad=["batch", "list", "--output", "yaml"],
        names="--output",
    ),
    "batch cancel": Case(
        args=lambda s: ["batch", "cancel", "--query", f"WorkflowId = '{s.fresh('nobody')}'", "--reason", "cli test"],
        text=_contains("batch cancel started: job "),
        json=lambda value, args: len(value["job_id"]) == 32,
        bad=["batch", "cancel", "--query", "WorkflowType = 'x'"],
        names="--reason",
    ),
    "batch terminate": Case(
        args=lambda s: ["batch", "terminate", "--query", f"WorkflowId = '{s.fresh('nobody')}'", "--reason", "cli test"],
        text=_contains("batch terminate started: job "),
        json=lambda value, args: len(value["job_id"]) == 32,
        bad=["batch", "terminate", "--query", "WorkflowType = 'x'"],
        names="--reason",
    ),
    "batch signal": Case(
        args=lambda s: [
            "batch",
            "signal",
            "--query",
            f"WorkflowId = '{s.fresh('nobody')}'",
            "--reason",
            "cli test",
            "--name",
            "nudge",
            "--input",
            "1",
        ],
        text=_contains("batch signal started: job "),
        json=lambda value, args: len(value["job_id"]) == 32,
        bad=["batch", "signal", "--query", "WorkflowType = 'x'", "--name", "nudge", "--input", "1"],
        names="--reason",
    ),
    "batch reset": Case(
        args=lambda s: [
            "batch",
            "reset",
            "--query",
            f"WorkflowId = '{s.fresh('nobody')}'",
            "--reason",
            "cli test",
            "--type",
            "last",
        ],
        text=_contains("batch reset started: job "),
        json=lambda value, args: len(value["job_id"]) == 32,
        bad=["batch", "reset", "--query", "WorkflowType = 'x'", "--type", "last"],
        names="--reason",
    ),
    "batch pause": Case(
        args=lambda s: ["batch", "pause", "--query", f"WorkflowId = '{s.fresh('nobody')}'", "--reason", "cli test"],
        text=_contains("batch pause started: job "),
        json=lambda value, args: len(value["job_id"]) == 32,
        bad=["batch", "pause", "--query", "WorkflowType = 'x'"],
        names="--reason",
    ),
    "activity pause": Case(
        args=lambda s: [
            "activity",
            "pause",
            "--workflow-id",
            s.pending_activity(),
            "--activity-id",
            "1",
            "--reason",
            "cli test",
        ],
        text=_contains("activity 1 of workflow {3} paused"),
        bad=["activity", "pause", "--workflow-id", "w", "--reason", "no activity"],
        names="--activity-id",
    ),
    "activity unpause": Case(
        args=lambda s: [
            "activity",
            "unpause",
            "--workflow-id",
            s.paused_activity(),
            "--activity-id",
            "1",
            "--reason",
            "cli test",
        ],
        text=_contains("activity 1 of workflow {3} unpaused"),
        bad=["activity", "unpause", "--workflow-id", "w", "--activity-id", "1"],
        names="--reason",
    ),
    "dlq list": Case(
        prepare=Session.parked,
        args=lambda s: ["dlq", "list", "--activity-type", "call_partner"],
        text=_contains("ID", "WORKFLOW ID", "call_partner", "PartnerDown: partner API unreachable", "DEPTH"),
        json=lambda value, args: (
            bool(value)
            and all(
                {"id", "workflow_id", "run_id", "activity_id", "activity_type", "attempt", "failure"} <= row.keys()
                and row["activity_type"] == "call_partner"
                and row["failure"]["type"] == "PartnerDown"
                for row in value
            )
        ),
        bad=["dlq", "list", "--limit", "0"],
        names="--limit",
    ),
    "dlq show": Case(
        args=lambda s: ["dlq", "show", "--id", s.parked()],
        text=_contains("id:       {3}", "call_partner", "ATTEMPT", "WORKER", "failed"),
        json=lambda value, args: value["id"] == args[3] and [a["outcome"] for a in value["attempts"]] == ["failed"],
        bad=["dlq", "show"],
        names="--id",
    ),
    "dlq retry": Case(
        args=lambda s: ["dlq", "retry", "--id", s.parked(), "--reason", "partner is back"],
        text=_contains("{3}", "1 dead letter retried"),
        json=lambda value, args: value == {"ids": [args[3]], "count": 1},
        bad=["dlq", "retry", "--id", "x"],
        names="--reason",
    ),
    "dlq discard": Case(
        args=lambda s: ["dlq", "discard", "--id", s.parked(), "--reason", "order cancelled"],
        text=_contains("{3}", "1 dead letter discarded"),
        json=lambda value, args: value == {"ids": [args[3]], "count": 1},
        bad=["dlq", "discard", "--reason", "no target"],
        names="--id",
    ),
    "limit set": Case(
        args=lambda s: ["limit", "set", "--key", s.fresh("key"), "--max-running", "2", "--reason", "partner allows 2"],
        text=_contains("at most 2 activities of key {3} run at once"),
        bad=["limit", "set", "--key", "k", "--max-running", "-1"],
        names="--max-running",
    ),
    "limit list": Case(
        prepare=Session.concurrency_limit,
        args=lambda s: ["limit", "list"],
        text=_contains("KEY", "MAX RUNNING", "cli-limited", "3"),
        json=lambda value, args: any(
            row["concurrency_key"] == "cli-limited" and row["max_running"] == 3 and row["running"] == 0 for row in value
        ),
        bad=["limit", "list", "--output", "xml"],
        names="--output",
    ),
    "limit rate": Case(
        args=lambda s: ["limit", "rate", "--task-queue", s.fresh("q"), "--per-second", "20", "--reason", "partner"],
        text=_contains("task queue {3}: at most 20 dispatches per second"),
        bad=["limit", "rate", "--key", "k", "--per-second", "-1"],
        names="--per-second",
    ),
    "limit rates": Case(
        prepare=Session.rate_limit,
        args=lambda s: ["limit", "rates"],
        text=_contains("TASK QUEUE", "PER SECOND", "cli-rated", "7.5"),
        json=lambda value, args: any(
            row["concurrency_key"] == "cli-rated" and row["per_second"] == 7.5 and row["task_queue"] == ""
            for row in value
        ),
        bad=["limit", "rates", "--output", "xml"],
        names="--output",
    ),
    "breaker set": Case(
        args=lambda s: [
            "breaker",
            "set",
            "--activity-type",
            s.fresh("T"),
            "--failure-rate",
            "0.5",
            "--min-calls",
            "10",
            "--window",
            "60",
            "--open-seconds",
            "30",
            "--reason",
            "partner flaky",
        ],
        text=_contains("breaker of {3}: opens at 0.5 failures over 10+ calls in 60s"),
        bad=[
            "breaker",
            "set",
            "--activity-type",
            "T",
            "--failure-rate",
            "1.5",
            "--min-calls",
            "1",
            "--window",
            "1",
            "--open-seconds",
            "1",
        ],
        names="--failure-rate",
    ),
    "breaker list": Case(
        prepare=Session.breaker,
        args=lambda s: ["breaker", "list"],
        text=_contains("ACTIVITY TYPE", "STATE", "CliGuarded"),
        json=lambda value, args: any(
            row["activity_type"] == "CliGuarded"
            and row["state"] in ("closed", "open", "half_open")
            and row["min_calls"] == 4
            for row in value
        ),
        bad=["breaker", "list", "--output", "xml"],
        names="--output",
    ),
    "breaker open": Case(
        prepare=Session.breaker,
        args=lambda s: ["breaker", "open", "--activity-type", "CliGuarded", "--reason", "downstream down"],
        text=_contains("breaker of CliGuarded: open"),
        bad=["breaker", "open", "--activity-type", "CliGuarded"],
        names="--reason",
    ),
    "breaker close": Case(
        prepare=Session.breaker,
        args=lambda s: ["breaker", "close", "--activity-type", "CliGuarded", "--reason", "downstream back"],
        text=_contains("breaker of CliGuarded: closed"),
        bad=["breaker", "close", "--reason", "r"],
        names="--activity-type",
    ),
    "event publish": Case(
        args=lambda s: ["event", "publish", "--id", s.fresh("evt"), "--source", "cli", "--type", "t", "--data", "{}"],
        text=_contains("no trigger matched"),
        json=lambda value, args: value == {"duplicate": False, "workflows": []},
        bad=["event", "publish", "--id", "e", "--source", "s", "--type", "t", "--data", "{oops"],
        names="--data",
    ),
    "namespace create": Case(
        args=lambda s: ["namespace", "create", s.fresh("ns"), "--retention", "3600", "--description", "for tests"],
        text=_contains("namespace {2} created"),
        bad=["namespace", "create", "ns-bad", "--retention", "0"],
        names="--retention",
    ),
    "namespace update": Case(
        args=lambda s: [
            "namespace",
            "update",
            s.namespace_with_quotas(),
            "--max-running-executions",
            "5",
            "--start-rate",
            "2.5",
            "--max-concurrent-activities",
            "3",
        ],
        text=_contains("namespace {2} updated"),
        bad=["namespace", "update", "ns-bad", "--start-rate", "-1"],
        names="--start-rate",
    ),
    "namespace describe": Case(
        args=lambda s: ["namespace", "describe", "default"],
        text=_contains(
            "name:        default", "retention:   30d", "max running executions unlimited", "purged:      0"
        ),
        json=lambda value, args: value["name"] == "default" and value["retention_s"] == 30 * 86400,
        bad=["namespace", "describe"],
        names="NAME",
    ),
    "namespace list": Case(
        args=lambda s: ["namespace", "list"],
        text=_contains("NAME", "default"),
        json=lambda value, args: "default" in [n["name"] for n in value],
        bad=["namespace", "list", "--output", "yaml"],
        names="--output",
    ),
    "task-queue describe": Case(
        prepare=Session.polled_queue,
        args=lambda s: ["task-queue", "describe", "--task-queue", "cli"],
        text=_contains("KIND", "BACKLOG", "workflow", "activity", "POLLER IDENTITY"),
        json=lambda value, args: (
            set(value["backlogs"]) == {"workflow", "activity"}
            and all(b["ready_tasks"] >= 0 and b["oldest_task_age_s"] >= 0 for b in value["backlogs"].values())
            and any(p["kind"] == "workflow" and p["identity"] for p in value["pollers"])
        ),
        bad=["task-queue", "describe"],
        names="--task-queue",
    ),
    "schedule create": Case(
        args=lambda s: [
            "schedule",
            "create",
            "--schedule-id",
            s.fresh("sched"),
            "--workflow-type",
            "Echo",
            "--task-queue",
            "cli",
            "--workflow-id",
            "nightly",
            "--cron",
            "30 2 * * *",
            "--time-zone",
            "Europe/Stockholm",
            "--paused",
        ],
        text=_contains("schedule {3} created"),
        bad=[
            "schedule",
            "create",
            "--schedule-id",
            "x",
            "--workflow-type",
            "W",
            "--task-queue",
            "q",
            "--workflow-id",
            "x",
            "--interval",
            "-5",
        ],
        names="--interval",
    ),
    "schedule list": Case(
        prepare=Session.schedule,
        args=lambda s: ["schedule", "list"],
        text=_contains("SCHEDULE ID", "0 3 * * *"),
        json=lambda value, args: any(d["cron_expressions"] == ["0 3 * * *"] for d in value),
        bad=["schedule", "list", "--output", "yaml"],
        names="--output",
    ),
    "schedule describe": Case(
        args=lambda s: ["schedule", "describe", "--schedule-id", s.schedule()],
        text=_contains("schedule_id: {3}", "paused: True"),
        json=lambda value, args: value["schedule_id"] == args[3] and value["paused"] is True,
        bad=["schedule", "describe"],
        names="--schedule-id",
    ),
    "schedule pause": Case(
        args=lambda s: ["schedule", "pause", "--schedule-id", s.schedule(), "--note", "quarter close"],
        text=_contains("schedule {3} paused"),
        bad=["schedule", "pause", "--schedule-id"],
        names="--schedule-id",
    ),
    "schedule unpause": Case(
        args=lambda s: ["schedule", "unpause", "--schedule-id", s.schedule()],
        text=_contains("schedule {3} unpaused"),
        bad=["schedule", "unpause", "--schedule-id", "x", "--note"],
        names="--note",
    ),
    "schedule trigger": Case(
        args=lambda s: ["schedule", "trigger", "--schedule-id", s.schedule(), "--overlap", "allow_all"],
        text=_contains("schedule {3} triggered"),
        bad=["schedule", "trigger", "--schedule-id", "x", "--overlap", "SOMETIMES"],
        names="--overlap",
    ),
    "schedule backfill": Case(
        args=lambda s: [
            "schedule",
            "backfill",
            "--schedule-id",
            s.schedule(),
            "--start",
            "2026-03-07T00:00:00+00:00",
            "--end",
            "2026-03-09T00:00:00Z",
        ],
        text=_contains("backfill {3}: ", "(100%)", "schedule {3} backfill queued"),
        bad=["schedule", "backfill", "--schedule-id", "x", "--start", "2026-03-07", "--end", "2026-03-09T00:00:00Z"],
        names="--start",
    ),
    "schedule delete": Case(
        args=lambda s: ["schedule", "delete", "--schedule-id", s.schedule()],
        text=_contains("schedule {3} deleted"),
        bad=["schedule", "delete", "--schedule-id", "x", "--force"],
        names="--force",
    ),
    "schedule status": Case(
        args=lambda s: ["schedule", "status"],
        text=_contains("fencing token", "leader: yes"),
        json=lambda value, args: value["replica_is_leader"] is True and value["fencing_token"] >= 1,
        bad=["schedule", "status", "-o", "xml"],
        names="--output",
    ),
    "search-attribute create": Case(
        args=lambda s: ["search-attribute", "create", "--name", s.fresh("Attr").replace("-", ""), "--type", "keyword"],
        text=_contains("search attribute {3} (Keyword) registered in namespace default"),
        bad=["search-attribute", "create", "--name", "Amount", "--type", "Float"],
        names="--type",
    ),
    "search-attribute list": Case(
        prepare=lambda s: ok("search-attribute", "create", "--name", "CustomerId", "--type", "Keyword"),
        args=lambda s: ["search-attribute", "list"],
        text=_contains("NAME", "CustomerId", "Keyword"),
        json=lambda value, args: {"name": "CustomerId", "type": "Keyword"} in value,
        bad=["search-attribute", "list", "--output"],
        names="--output",
    ),
    "server start": Case(
        args=lambda s: [],
        text=_contains(),
        run=lambda s, tmp: _serve(["start", "--store", str(tmp / "replica.db"), "--http-port", "0"])(s, tmp),
        bad=["server", "start", "--store", "x.db", "--port", "70000"],
        names="--port",
    ),
    "server start-dev": Case(
        args=lambda s: [],
        text=_contains(),
        run=_serve(["start-dev", "--in-memory", "--http-port", "0"]),
        bad=["server", "start-dev", "--in-memory", "--db", "x.db"],
        names="--in-memory",
    ),
    "token-key rotate": Case(
        args=lambda s: ["token-key", "rotate", "--grace", "3600", "--reason", "yearly"],
        text=_contains("task token key", "signs from", "the old keys are refused from"),
        bad=["token-key", "rotate", "--grace", "60"],
        names="--grace",
    ),
    "trigger create": Case(
        args=lambda s: [
            "trigger",
            "create",
            "--trigger-id",
            s.fresh("trig"),
            "--event-type",
            "order.paid",
            "--workflow-type",
            "Echo",
            "--task-queue",
            "cli",
            "--filter",
            'data.currency == "EUR"',
            "--input",
            "data.order_id",
        ],
        text=_contains("trigger {3} created"),
        bad=["trigger", "create", "--event-type", "e", "--workflow-type", "W", "--task-queue", "q"],
        names="--trigger-id",
    ),
    "trigger list": Case(
        prepare=Session.trigger,
        args=lambda s: ["trigger", "list"],
        text=_contains("TRIGGER ID", "Echo"),
        json=lambda value, args: any(t["workflow_type"] == "Echo" for t in value),
        bad=["trigger", "list", "--output", "csv"],
        names="--output",
    ),
    "trigger describe": Case(
        args=lambda s: ["trigger", "describe", "--trigger-id", s.trigger()],
        text=_contains("trigger_id: {3}", "event_type: {3}.happened"),
        json=lambda value, args: value["trigger_id"] == args[3] and value["task_queue"] == "cli",
        bad=["trigger", "describe"],
        names="--trigger-id",
    ),
    "trigger delete": Case(
        args=lambda s: ["trigger", "delete", "--trigger-id", s.trigger()],
        text=_contains("trigger {3} deleted"),
        bad=["trigger", "delete", "--trigger-id"],
        names="--trigger-id",
    ),
    "workflow start": Case(
        args=lambda s: ["workflow", "start", *_workflow_args(s), "--memo", 'owner="cli"'],
        text=lambda out, args: len(out.strip()) == 36 and out.count("-") == 4,
        json=lambda value, args: value["workflow_id"] == args[7] and len(value["run_id"]) == 36,
        bad=["workflow", "start", "--type", "Echo", "--task-queue", "q", "--workflow-id", "x", "--input", "notjson"],
        names="--input",
    ),
    "workflow execute": Case(
        args=lambda s: ["workflow", "execute", *_workflow_args(s)],
        text=_contains(
            "WorkflowExecutionStarted  workflow_type=Echo workflow_id={7}",
            "TimerStarted  timer_id=1 start_to_fire_timeout=0.1",
            "WorkflowExecutionCompleted",
            'result: {{"x": 1}}',
        ),
        json=lambda lines, args: (
            lines[0]["event_type"] == "WorkflowExecutionStarted"
            and lines[-1] == {"workflow_id": args[7], "status": "COMPLETED", "result": {"x": 1}}
        ),
        bad=["workflow", "execute", "--task-queue", "q", "--workflow-id", "x"],
        names="--type",
    ),
    "workflow signal-with-start": Case(
        args=lambda s: [
            "workflow",
            "signal-with-start",
            "--type",
            "Waiter",
            "--task-queue",
            "cli",
            "--workflow-id",
            s.fresh("sws"),
            "--signal",
            "finish",
            "--signal-input",
            '"first"',
            "--execution-timeout",
            "60",
        ],
        text=lambda out, args: (
            len(out.strip()) == 36 and ok("workflow", "result", "-w", args[7]).out == '"finished by first"\n'
        ),
        json=lambda value, args: value["workflow_id"] == args[7] and len(value["run_id"]) == 36,
        bad=[
            "workflow",
            "signal-with-start",
            "--type",
            "W",
            "--task-queue",
            "q",
            "--workflow-id",
            "x",
            "--signal-input",
            "1",
        ],
        names="--signal",
    ),
    "workflow result": Case(
        args=lambda s: ["workflow", "result", "--workflow-id", s.finished_waiter()],
        text=lambda out, args: out == '"finished by cli"\n',
        json=lambda value, args: value == {"workflow_id": args[3], "result": "finished by cli"},
        bad=["workflow", "result", "--workflow-id", "w", "--run-id"],
        names="--run-id",
    ),
    "workflow list": Case(
        args=lambda s: ["workflow", "list", "--query", f"WorkflowId = '{s.waiter()}'"],
        text=lambda out, args: "RUNNING" in out and args[3].split("'")[1] in out,
        json=lambda value, args: (
            [r["workflow_id"] for r in value] == [args[3].split("'")[1]] and value[0]["status"] == "RUNNING"
        ),
        bad=["workflow", "list", "--limit", "0"],
        names="--limit",
    ),
    "workflow count": Case(
        args=lambda s: ["workflow", "count", "--query", f"WorkflowId = '{s.waiter()}'"],
        text=lambda out, args: out.strip() == "1",
        json=lambda value, args: value == {"count": 1},
        bad=["workflow", "count", "--output", "table"],
        names="--output",
    ),
    "workflow describe": Case(
        args=lambda s: ["workflow", "describe", "--workflow-id", s.waiter()],
        text=_contains("{3}  run ", "Waiter  RUNNING", "Task queue:     cli"),
        json=lambda value, args: value["workflow_id"] == args[3] and value["status"] == "RUNNING",
        bad=["workflow", "describe"],
        names="--workflow-id",
    ),
    "workflow show": Case(
        args=lambda s: ["workflow", "show", "--workflow-id", s.waiter()],
        text=_contains("History:", "WorkflowExecutionStarted"),
        json=lambda value, args: (
            value["workflow_id"] == args[3] and value["events"][0]["event_type"] == "WorkflowExecutionStarted"
        ),
        bad=["workflow", "show", "--workflow-id"],
        names="--workflow-id",
    ),
    "workflow signal": Case(
        args=lambda s: ["workflow", "signal", "--workflow-id", s.waiter(), "--name", "finish", "--input", '"cli"'],
        text=_contains("signal finish sent to {3}"),
        bad=["workflow", "signal", "--workflow-id", "w", "--name", "finish", "--input", "cli"],
        names="--input",
    ),
    "workflow update": Case(
        args=lambda s: ["workflow", "update", "--workflow-id", s.waiter(), "--name", "echo", "--input", '"cli"'],
        text=_contains('"echo cli"'),
        json=lambda value, args: value == {"update_id": value["update_id"], "result": "echo cli"},
        bad=["workflow", "update", "--workflow-id", "w", "--name", "echo", "--input", "cli"],
        names="--input",
    ),
    "workflow query": Case(
        args=lambda s: ["workflow", "query", "--workflow-id", s.waiter(), "--name", "status"],
        text=_contains('"finished_by": null'),
        json=lambda value, args: value == {"finished_by": None},
        bad=["workflow", "query", "--workflow-id", "w", "--name", "status", "--timeout", "0"],
        names="--timeout",
    ),
    "workflow stack": Case(
        args=lambda s: ["workflow", "stack", "--workflow-id", s.waiter()],
        text=_contains("Waiter.run", "wait_condition"),
        json=lambda value, args: value["workflow_id"] == args[3] and "Waiter.run" in value["stack_trace"],
        bad=["workflow", "stack", "--workflow-id", "w", "--timeout", "soon"],
        names="--timeout",
    ),
    "workflow cancel": Case(
        args=lambda s: ["workflow", "cancel", "--workflow-id", s.waiter(), "--reason", "not needed"],
        text=_contains("cancellation of {3} requested"),
        bad=["workflow", "cancel", "--reason", "x"],
        names="--workflow-id",
    ),
    "workflow terminate": Case(
        args=lambda s: ["workflow", "terminate", "--workflow-id", s.waiter(), "--reason", "stuck"],
        text=_contains("{3} terminated"),
        bad=["workflow", "terminate", "--workflow-id", "w", "--run-id"],
        names="--run-id",
    ),
}


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """A server process on a SQLite file and a worker process of tests/integration/_cli_app.py."""
    workdir = tmp_path_factory.mktemp("cli")
    server = ServerProcess(str(workdir / "flowforge.db"), workdir)
    server.start()
    log = open(workdir / "worker.log", "ab")
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.integration._cli_app", server.address], env=_env(), stdout=log, stderr=log
    )
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("FLOWFORGE_ADDRESS", server.address)
            patch.setenv("FLOWFORGE_CONFIG_FILE", str(workdir / "config.toml"))
            yield Session(server.address)
    finally:
        worker.kill()
        worker.wait(timeout=30)
        log.close()
        server.stop()


def test_every_command_has_a_case() -> None:
    assert sorted(CASES) == COMMANDS, "add a Case to CASES for each new command (and remove those of removed ones)"


@pytest.mark.parametrize("path", COMMANDS)
def test_command_prints_text_and_json(path: str, session: Session, tmp_path: Path) -> None:
    case = CASES[path]
    if case.run is not None:
        case.run(session, tmp_path)
        return
    if case.prepare is not None:
        case.prepare(session)
    args = case.args(session)
    assert args[: len(path.split())] == path.split()
    text = ok(*args)
    assert case.text(text.out, args), f"{' '.join(args)} printed:\n{text.out}"
    has_output = any(param.name == "output" for param in _command(path).params)
    assert has_output == (case.json is not None), "a command that prints data takes --output, and its case checks JSON"
    if case.json is not None:
        args = case.args(session)
        printed = ok(*args, "--output", "json").out
        value = (
            [json.loads(line) for line in printed.splitlines()] if path == "workflow execute" else json.loads(printed)
        )
        assert case.json(value, args), f"{' '.join(args)} --output json printed:\n{printed}"


@pytest.mark.parametrize("path", COMMANDS)
def test_bad_input_is_one_line_naming_the_flag_and_exit_code_2(path: str, session: Session) -> None:
    case = CASES[path]
    assert case.bad[: len(path.split())] == path.split()
    result = flowforge(*case.bad)
    assert result.code == 2, result
    assert result.out == "" and result.err.endswith("\n") and result.err.count("\n") == 1, result.err
    assert result.err.startswith("error: ") and case.names in result.err and "Traceback" not in result.err


def test_workflow_execute_exits_1_when_the_run_fails(session: Session) -> None:
    failed = flowforge("workflow", "execute", "--type", "Fails", "--task-queue", "cli", "--workflow-id", "fails-1")
    assert failed.code == 1 and "WorkflowExecutionFailed" in failed.out
    assert 'WorkflowExecutionFailed  failure="refused on purpose"' in failed.out
    assert failed.out.endswith('FAILED: failure="refused on purpose"\n')


def test_server_errors_are_one_line_with_the_status_and_exit_code_1(session: Session) -> None:
    missing = flowforge("workflow", "describe", "--workflow-id", "nobody")
    assert (missing.code, missing.err.count("\n")) == (1, 1) and missing.err.startswith("error: NOT_FOUND: ")
    unreachable = flowforge("namespace", "list", "--address", "127.0.0.1:1")
    assert (unreachable.code, unreachable.err.count("\n")) == (1, 1) and "UNAVAILABLE" in unreachable.err


def test_an_unexpected_error_is_one_line_and_debug_shows_the_traceback(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any) -> None:
        raise RuntimeError("something inside broke")

    monkeypatch.setattr("flowforge.cli.namespace.run", broken)
    plain = flowforge("namespace", "list")
    assert (plain.code, plain.err) == (1, "error: RuntimeError: something inside broke (--debug shows the traceback)\n")
    debug = flowforge("--debug", "namespace", "list")
    assert (
        debug.code == 1 and "Traceback (most recent call last)" in debug.err and "something inside broke" in debug.err
    )


def test_version() -> None:
    from importlib.metadata import version

    assert ok("--version").out == f"flowforge {version('flowforge')}\n"


def test_the_installed_command_runs_outside_the_repository(session: Session, tmp_path: Path) -> None:
    """The console script, from another directory, with the address from the environment."""
    script = Path(sys.executable).parent / "flowforge"
    listed = subprocess.run(
        [str(script), "namespace", "list", "--output", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=_env(FLOWFORGE_ADDRESS=session.address),
    )
    assert listed.returncode == 0, listed.stderr
    assert "default" in [n["name"] for n in json.loads(listed.stdout)]


def test_a_profile_env_variables_and_flags_reach_the_server_in_that_order(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """flag > FLOWFORGE_* > profile > default, seen by which server and namespace a real command reaches."""
    ok("namespace", "create", "from-profile")
    ok("config", "set", "--profile", "here", "address", session.address)
    ok("config", "set", "--profile", "here", "namespace", "from-profile")
    ok("config", "set", "--profile", "nowhere", "address", "127.0.0.1:1")
    monkeypatch.delenv("FLOWFORGE_ADDRESS")
    monkeypatch.setenv("FLOWFORGE_PROFILE", "here")
    attribute = ["search-attribute", "create", "--name", "Precedence", "--type", "Int"]
    assert "registered in namespace from-profile" in ok(*attribute).out
    assert "registered in namespace default" in ok(*attribute, "--namespace", "default").out
    monkeypatch.setenv("FLOWFORGE_NAMESPACE", "default")  # the environment over the profile
    assert "registered in namespace default" in ok(*attribute).out
    monkeypatch.setenv("FLOWFORGE_PROFILE", "nowhere")  # its address is no server ...
    assert "UNAVAILABLE" in flowforge("namespace", "list").err
    monkeypatch.setenv("FLOWFORGE_ADDRESS", session.address)  # ... the environment's is
    assert "from-profile" in ok("namespace", "list").out
    monkeypatch.setenv("FLOWFORGE_ADDRESS", "127.0.0.1:1")
    assert "from-profile" in ok("namespace", "list", "--address", session.address).out  # the flag over both
    missing = flowforge("namespace", "list", "--profile", "elsewhere")
    assert missing.code == 2 and "'--profile': no profile 'elsewhere'" in missing.err


def test_shell_completion_completes_commands_and_choices() -> None:
    def complete(words: str) -> list[str]:
        env = _env(_FLOWFORGE_COMPLETE="bash_complete", COMP_WORDS=words, COMP_CWORD=str(len(words.split(" ")) - 1))
        script = Path(sys.executable).parent / "flowforge"
        return subprocess.run([str(script)], capture_output=True, text=True, env=env, timeout=60).stdout.split()

    assert complete("flowforge workflow st") == ["plain,stack", "plain,start"]
    assert complete("flowforge workflow list --output ") == ["plain,text", "plain,json"]


def test_the_config_file_is_private_to_its_owner(session: Session, tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("")
    path.chmod(0o644)
    ok("config", "set", "--config-file", str(path), "api_key", "secret")
    assert path.stat().st_mode & 0o777 == 0o600
    assert "********" in ok("config", "get", "--config-file", str(path)).out
    assert ok("config", "get", "--config-file", str(path), "api_key").out == "secret\n"


def test_workflow_stack_shows_every_coroutine_and_where_it_waits(session: Session) -> None:
    ok("workflow", "start", "--type", "Fanout", "--task-queue", "cli", "--workflow-id", "fanout-1")
    ok("workflow", "signal", "--workflow-id", "fanout-1", "--name", "done", "--input", '"left"')
    trace = ok("workflow", "stack", "--workflow-id", "fanout-1").out
    sections = trace.strip().split("\n\n")
    assert len(sections) == 2, trace  # the run method and the branch still waiting; "left" finished
    run_method = next(s for s in sections if "in Fanout.run" in s)
    assert "await asyncio.gather(" in run_method and "waiting on <_GatheringFuture pending" in run_method
    branch = next(s for s in sections if "in Fanout._branch" in s)
    assert "await workflow.wait_condition(lambda: name in self._done)" in branch and "in wait_condition" in branch
    ok("workflow", "signal", "--workflow-id", "fanout-1", "--name", "done", "--input", '"right"')
    assert ok("workflow", "result", "--workflow-id", "fanout-1").out == "null\n"
    closed = ok("workflow", "stack", "--workflow-id", "fanout-1").out
    assert closed == "no coroutine is waiting (the run has finished)\n"


def test_tls_settings_reach_an_mtls_server_from_flags_env_and_profile(
    session: Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that speaks only mutual TLS, reached by the name its certificate carries."""
    from testsupport.credentials import CertificateAuthority

    ca = CertificateAuthority()
    server_cert, server_key = ca.write(tmp_path, "server", ca.issue("server", dns_names=("flowforge.test",)))
    client_cert, client_key = ca.write(tmp_path, "client", ca.issue("cli-user"))
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    tls_args = (
        "--tls-cert",
        str(server_cert),
        "--tls-key",
        str(server_key),
        "--tls-client-ca",
        str(tmp_path / "ca.crt"),
    )
    server = ServerProcess(str(tmp_path / "tls.db"), tmp_path, name="tls", extra_args=tls_args)
    server.start()
    try:
        address = f"localhost:{server.port}"  # not a name of the certificate: --tls-server-name says which is
        flags = ["--tls-ca-path", str(tmp_path / "ca.crt"), "--tls-cert-path", str(client_cert)]
        flags += ["--tls-key-path", str(client_key), "--tls-server-name", "flowforge.test"]
        assert "default" in ok("namespace", "list", "--address", address, *flags).out
        monkeypatch.setenv("FLOWFORGE_ADDRESS", address)
        monkeypatch.setenv("FLOWFORGE_TLS_SERVER_CA_CERT_PATH", str(tmp_path / "ca.crt"))
        monkeypatch.setenv("FLOWFORGE_TLS_CLIENT_CERT_PATH", str(client_cert))
        monkeypatch.setenv("FLOWFORGE_TLS_CLIENT_KEY_DATA", client_key.read_text())
        monkeypatch.setenv("FLOWFORGE_TLS_SERVER_NAME", "flowforge.test")
        assert "default" in ok("namespace", "list").out
        for name in (
            "ADDRESS",
            "TLS_SERVER_CA_CERT_PATH",
            "TLS_CLIENT_CERT_PATH",
            "TLS_CLIENT_KEY_DATA",
            "TLS_SERVER_NAME",
        ):
            monkeypatch.delenv(f"FLOWFORGE_{name}")
        for key, value in (
            ("address", address),
            ("tls.server_ca_cert_path", str(tmp_path / "ca.crt")),
            ("tls.client_cert_path", str(client_cert)),
            ("tls.client_key_path", str(client_key)),
            ("tls.server_name", "flowforge.test"),
        ):
            ok("config", "set", "--profile", "mtls", key, value)
        assert "default" in ok("namespace", "list", "--profile", "mtls").out
        half = flowforge("namespace", "list", "--profile", "mtls", "--tls-key-path", str(tmp_path / "absent.key"))
        assert half.code == 2 and "absent.key" in half.err and half.err.count("\n") == 1
    finally:
        server.stop()


def test_a_group_without_a_command_prints_its_help() -> None:
    for group in ([], ["workflow"], ["config"]):
        shown = ok(*group)
        assert shown.out.startswith(f"Usage: flowforge {' '.join(group)}".rstrip() + " [OPTIONS] COMMAND")
        assert "Commands:" in shown.out and shown.err == ""


def test_backfill_shows_a_progress_bar_on_a_terminal(session: Session) -> None:
    """On a terminal (a pseudo-terminal here) the pieces of a backfill advance a bar; plain lines otherwise."""
    import pty

    schedule_id = session.schedule()
    args = ["schedule", "backfill", "--schedule-id", schedule_id, "--start", "2026-01-01T00:00:00Z"]
    args += ["--end", "2026-03-01T00:00:00Z", "--address", session.address]
    leader, follower = pty.openpty()
    script = Path(sys.executable).parent / "flowforge"
    done = subprocess.run([str(script), *args], stdout=follower, stderr=follower, env=_env(COLUMNS="120"), timeout=60)
    os.close(follower)
    screen = b""
    with contextlib.suppress(OSError):  # EIO once everything written has been read
        while chunk := os.read(leader, 65536):
            screen += chunk
    os.close(leader)
    text = screen.decode(errors="replace")
    assert done.returncode == 0, text
    assert "━" in text and "100%" in text and f"schedule {schedule_id} backfill queued" in text
    plain = ok(*args)  # captured: not a terminal
    assert plain.out.count(f"backfill {schedule_id}: ") >= 20 and "━" not in plain.out
