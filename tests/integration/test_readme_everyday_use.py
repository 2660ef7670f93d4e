"""The README's "Everyday use" block, run line by line against a real server, so it stays true.

Each line runs as written (through bash, in a scratch directory, with the installed
``flowforge`` and ``python`` first on PATH), with three rules a laptop does not need:

- ``flowforge server ...`` lines also get ``--port 0 --http-port 0 --ready-file F``, so they take
  free ports; the first server keeps running and every later line reaches it through
  ``FLOWFORGE_ADDRESS``; the others are stopped once they serve. A ``postgresql://`` store is
  replaced by a SQLite file (the line shows the PostgreSQL form; test_replicas.py runs that).
- Lines ending in ``&`` keep running in the background until the block is done.
- Every other line must exit 0.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from flowforge.client import WorkflowHistory
from tests.integration._processes import ROOT, _env

README = ROOT / "README.md"


def everyday_use_lines() -> list[str]:
    """The commands of the block, continuation lines joined."""
    text = README.read_text()
    section = text[text.index("## Everyday use") :]
    block = section[section.index("```sh\n") + len("```sh\n") :]
    block = block[: block.index("```")]
    return [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def _start_server(
    words: list[str], workdir: Path, env: dict[str, str], log: IO[bytes], number: int
) -> tuple[subprocess.Popen, str]:
    store = words.index("--store") + 1 if "--store" in words else None
    if store is not None and words[store].startswith("postgresql://"):
        words[store] = str(workdir / f"replica-{number}.db")
    ready = workdir / f"server-{number}.ready"
    process = subprocess.Popen(
        [*words, "--port", "0", "--http-port", "0", "--ready-file", str(ready), "--log-level", "WARNING"],
        cwd=workdir,
        env=env,
        stdout=log,
        stderr=log,
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert process.poll() is None, f"{shlex.join(words)} exited with {process.returncode}"
        assert time.monotonic() < deadline, f"{shlex.join(words)} did not serve within 60 s"
        time.sleep(0.05)
    return process, f"127.0.0.1:{ready.read_text().strip()}"


def test_every_line_of_everyday_use_runs(tmp_path: Path) -> None:
    lines = everyday_use_lines()
    assert len(lines) > 20 and all(line.split()[0] in ("flowforge", "python") for line in lines)
    bin_dir = str(Path(sys.executable).parent)
    env = _env(PATH=os.pathsep.join([bin_dir, os.environ.get("PATH", "")]), FLOWFORGE_CONFIG_FILE=str(tmp_path / "cfg"))
    env.pop("FLOWFORGE_ADDRESS", None)
    running: list[subprocess.Popen] = []
    with contextlib.ExitStack() as logs:
        try:
            _run_lines(lines, tmp_path, env, running, logs)
        finally:
            for process in running:
                process.terminate()
            for process in running:
                process.wait(timeout=30)
    history = WorkflowHistory.from_json((tmp_path / "history.json").read_text())
    assert history.workflow_id == "onboarding-demo" and history.events[-1].event_type == "WorkflowExecutionCompleted"
    assert "[profile.prod]" in (tmp_path / "cfg").read_text()


def _run_lines(
    lines: list[str], tmp_path: Path, env: dict[str, str], running: list[subprocess.Popen], logs: contextlib.ExitStack
) -> None:
    for number, line in enumerate(lines):
        words = shlex.split(line, comments=True)
        command = line.split("#")[0].rstrip()
        log = logs.enter_context(open(tmp_path / f"line-{number}.log", "ab"))
        if words[:2] == ["flowforge", "server"]:
            process, address = _start_server(words, tmp_path, env, log, number)
            if "FLOWFORGE_ADDRESS" in env:
                process.terminate()
                process.wait(timeout=30)
            else:
                running.append(process)
                env["FLOWFORGE_ADDRESS"] = address
        elif command.endswith("&"):
            background = "exec " + command.removesuffix("&")
            running.append(subprocess.Popen(["bash", "-c", background], cwd=tmp_path, env=env, stdout=log, stderr=log))
        else:
            done = subprocess.run(
                ["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
            )
            assert done.returncode == 0, f"{line}\n-> exit {done.returncode}\n{done.stdout}{done.stderr}"
    assert all(process.poll() is None for process in running), "a server or worker of the block died"
