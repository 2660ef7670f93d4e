"""``flowforge server start --processes N``: N server processes share one gRPC port.

With N=2 on PostgreSQL, two processes listen on the port (SO_REUSEPORT), clients'
connections reach both, and a workload completes although one of them is killed
with SIGKILL mid-run (the parent starts it again). On SQLite it is refused: a
SQLite file admits one server process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from flowforge import Client
from flowforge.worker import Worker
from tests.integration._processes import ServerProcess, _env
from tests.integration._worker_app import ACTIVITIES, WORKFLOWS, ManySteps
from testsupport.waiting import wait_until

_CLI = (sys.executable, "-m", "flowforge.cli")
RUNS = 12
STEPS = 5


def _children(parent: int) -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rpartition(")")[2].split()[1]) == parent:
                        children.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return children


def _inodes(port: int, state: str) -> set[str]:
    """Sockets whose local port is ``port`` in ``state`` (0A: listening, 01: established)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.readlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == state:
                inodes.add(fields[9])
    return inodes


def _listeners(pids: list[int], port: int, state: str = "0A") -> list[int]:
    """The processes of ``pids`` that hold a socket listening on ``port`` (or in ``state``)."""
    inodes = _inodes(port, state)
    holding = []
    for pid in pids:
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        if any(link.startswith("socket:[") and link[8:-1] in inodes for link in links):
            holding.append(pid)
    return holding


@pytest.mark.postgres
async def test_two_processes_serve_one_port_and_a_killed_one_loses_nothing(
    postgres_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWFORGE_TEST_LEDGER", str(tmp_path / "ledger.jsonl"))  # the activities' side effects
    server = ServerProcess(postgres_dsn, tmp_path, extra_args=("--processes", "2"))
    server.start()
    assert server.process is not None
    try:
        serving = await wait_until(
            lambda: (lambda pids: pids if len(pids) == 2 else None)(
                _listeners(_children(server.process.pid), server.port)  # type: ignore[union-attr]
            ),
            timeout=30,
            what="two server processes listening on the port",
        )
        # Each client is its own connection; the kernel spreads them over the processes.
        clients = [await Client.connect(server.address) for _ in range(4)]
        try:
            async with (
                Worker(clients[0], task_queue="processes", workflows=WORKFLOWS, activities=ACTIVITIES),
                Worker(clients[1], task_queue="processes", workflows=WORKFLOWS, activities=ACTIVITIES),
            ):
                handles = [
                    await clients[2 + i % 2].start_workflow(
                        ManySteps.run,
                        {"key": f"r{i}", "steps": STEPS, "seconds": 0.05, "start_to_close": 2},
                        id=f"processes-{i}",
                        task_queue="processes",
                    )
                    for i in range(RUNS)
                ]

                async def both_processes_hold_clients() -> bool:
                    # The kernel hashes each connection to a process: 4 all land on one
                    # process one time in 8, so another client connects until both have one.
                    if sorted(_listeners(serving, server.port, "01")) == sorted(serving):
                        return True
                    if len(clients) < 40:
                        clients.append(await Client.connect(server.address))
                    return False

                await wait_until(
                    both_processes_hold_clients,
                    timeout=60,
                    what="both processes to hold connections of the clients",
                    interval=0.2,
                )
                victim = serving[0]
                os.kill(victim, 9)
                # The parent starts a new process in its place, on the same port.
                await wait_until(
                    lambda: (lambda pids: len(pids) == 2 and victim not in pids)(
                        _listeners(_children(server.process.pid), server.port)  # type: ignore[union-attr]
                    ),
                    timeout=60,
                    what="the killed process to be replaced",
                )
                for i, handle in enumerate(handles):
                    result = await handle.result()
                    assert [r["key"] for r in result] == [f"r{i}/{s}" for s in range(STEPS)]
            for handle in handles:
                events = (await handle.fetch_history()).events
                assert [e.event_id for e in events] == list(range(1, len(events) + 1))
                types = [e.event_type for e in events]
                assert types.count("ActivityTaskCompleted") == STEPS
                assert types.count("WorkflowExecutionCompleted") == 1
        finally:
            for client in clients:
                await client.close()
    finally:
        server.stop()
    assert _children(server.process.pid) == []


def test_on_sqlite_several_processes_are_refused(tmp_path: Path) -> None:
    refused = subprocess.run(
        [*_CLI, "server", "start", "--store", str(tmp_path / "x.db"), "--insecure-no-auth", "--processes", "2"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert refused.returncode == 2
    assert "several processes need PostgreSQL" in refused.stderr
