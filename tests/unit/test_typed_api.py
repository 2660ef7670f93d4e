"""The SDK's typed overloads, as a type checker (and so an editor) sees them.

mypy checks a small program using the public API; each ``reveal_type`` line says
what the checker must infer (``# reveals: ...``), and a call with a mistyped
argument must be an error. This is what lets an editor know what
``await handle.result()`` returns when the handle came from ``MyWorkflow.run``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
from datetime import timedelta

from flowforge import Client, activity, workflow
from flowforge.testing import ActivityEnvironment

TIMEOUT = timedelta(seconds=10)


@activity.defn
async def fetch(n: int) -> str:
    return str(n)


@activity.defn
def compute(n: int) -> float:
    return n / 2


@workflow.defn
class Child:
    @workflow.run
    async def run(self, name: str) -> list[int]:
        return []

    @workflow.signal
    def rename(self, name: str) -> None: ...


@workflow.defn
class Parent:
    @workflow.run
    async def run(self, n: int) -> dict[str, int]:
        reveal_type(await workflow.execute_activity(fetch, n, start_to_close_timeout=TIMEOUT))  # reveals: str
        reveal_type(await workflow.execute_activity(compute, n, start_to_close_timeout=TIMEOUT))  # reveals: float
        reveal_type(workflow.start_activity(fetch, n, start_to_close_timeout=TIMEOUT))  # reveals: flowforge._activity_calls.ActivityHandle[str]
        reveal_type(await workflow.execute_activity("fetch", n, start_to_close_timeout=TIMEOUT))  # reveals: Any
        reveal_type(await workflow.execute_child_workflow(Child.run, "x"))  # reveals: list[int]
        child = await workflow.start_child_workflow(Child.run, "x", id="c")
        reveal_type(child)  # reveals: flowforge._child_workflow_calls.ChildWorkflowHandle[program.Child, list[int]]
        await child.signal(Child.rename, "y")
        await child.signal(Child.rename, 3)  # error: arg-type
        return {}

    @workflow.signal
    async def approve(self, who: str) -> None: ...

    @workflow.query
    def status(self) -> str:
        return ""


async def main(client: Client) -> None:
    handle = await client.start_workflow(Parent.run, 1, id="p", task_queue="q")
    reveal_type(handle)  # reveals: flowforge._workflow_handle.WorkflowHandle[program.Parent, dict[str, int]]
    reveal_type(await handle.result())  # reveals: dict[str, int]
    reveal_type(await client.execute_workflow(Parent.run, 1, id="p", task_queue="q"))  # reveals: dict[str, int]
    reveal_type(await handle.query(Parent.status))  # reveals: str
    await handle.signal(Parent.approve, "ops")
    reveal_type(client.get_workflow_handle("p"))  # reveals: flowforge._workflow_handle.WorkflowHandle[Any, Any]
    reveal_type(client.get_workflow_handle_for(Parent.run, "p"))  # reveals: flowforge._workflow_handle.WorkflowHandle[program.Parent, dict[str, int]]
    await client.start_workflow(Parent.run, "not an int", id="p", task_queue="q")  # error: arg-type
    await handle.signal(Parent.approve, 42)  # error: arg-type
    await workflow.execute_activity(fetch, "not an int", start_to_close_timeout=TIMEOUT)  # error: arg-type


async def test_activities() -> None:
    env = ActivityEnvironment()
    reveal_type(await env.run(fetch, 1))  # reveals: str
    reveal_type(env.run(compute, 1))  # reveals: float
    env.run(compute, "not an int")  # error: arg-type
"""


def _expectations(source: str) -> dict[int, str]:
    """Line number -> what mypy must say there: ``Revealed type is "..."`` or ``[code]``."""
    expected = {}
    for number, line in enumerate(source.splitlines(), start=1):
        if (match := re.search(r"# reveals: (.+)$", line)) is not None:
            expected[number] = f'note: Revealed type is "{match.group(1)}"'
        elif (match := re.search(r"# error: (.+)$", line)) is not None:
            expected[number] = f"[{match.group(1)}]"
    return expected


def test_the_overloads_give_editors_the_workflow_and_activity_types(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    monkeypatch.chdir(ROOT)  # where the `flowforge` package resolves for static tools
    stdout, stderr, _ = api.run(
        [str(program), "--strict", "--no-error-summary", "--cache-dir", str(tmp_path / "mypy-cache")]
    )
    said: dict[int, list[str]] = {}
    for line in stdout.splitlines():
        location, _, message = line.partition(": ")
        path, _, number = location.rpartition(":")
        if path == str(program):
            said.setdefault(int(number), []).append(message)
    expected = _expectations(PROGRAM)
    assert len(expected) == 19, stderr
    for number, wanted in expected.items():
        assert any(wanted in message for message in said.get(number, [])), (number, wanted, said.get(number))
    # Nothing else: every other line of the program type-checks.
    assert set(said) == set(expected), {number: said[number] for number in set(said) - set(expected)}
