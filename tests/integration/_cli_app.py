"""The worker the CLI command tests talk to: ``python -m tests.integration._cli_app ADDRESS``.

- ``Echo`` returns its argument after a short durable timer (``workflow execute`` follows it).
- ``Waiter`` waits for its ``finish`` signal, answers ``status`` (``workflow signal|query|stack``).
- ``Fanout`` waits in two branches of an ``asyncio.gather`` (``workflow stack`` shows each).
- ``Fails`` fails (``workflow execute`` exits 1).
- ``Parks`` parks its activity in the dead-letter store (``dlq list|show|retry|discard``).
- ``Unserved`` waits on an activity of a queue nobody polls (``activity pause|unpause``).
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta
from typing import Any

from flowforge import Client, RetryPolicy, activity, workflow
from flowforge.exceptions import ActivityError, ApplicationError
from flowforge.worker import Worker

TASK_QUEUE = "cli"


@workflow.defn
class Echo:
    @workflow.run
    async def run(self, value: Any) -> Any:
        await workflow.sleep(timedelta(milliseconds=100))
        return value


@workflow.defn
class Waiter:
    def __init__(self) -> None:
        self._finished_by: str | None = None

    @workflow.run
    async def run(self) -> str:
        await workflow.wait_condition(lambda: self._finished_by is not None)
        return f"finished by {self._finished_by}"

    @workflow.signal
    def finish(self, who: str) -> None:
        self._finished_by = who

    @workflow.query
    def status(self) -> dict[str, Any]:
        return {"finished_by": self._finished_by}

    @workflow.update
    def echo(self, text: str) -> str:
        return f"echo {text}"


@workflow.defn
class Fanout:
    def __init__(self) -> None:
        self._done: set[str] = set()

    @workflow.run
    async def run(self) -> None:
        await asyncio.gather(self._branch("left"), self._branch("right"))

    async def _branch(self, name: str) -> None:
        await workflow.wait_condition(lambda: name in self._done)

    @workflow.signal
    def done(self, name: str) -> None:
        self._done.add(name)


@workflow.defn
class Fails:
    @workflow.run
    async def run(self) -> None:
        raise ApplicationError("refused on purpose", non_retryable=True)


@activity.defn
async def call_partner() -> None:
    raise ApplicationError("partner API unreachable", type="PartnerDown", non_retryable=True)


@workflow.defn
class Parks:
    @workflow.run
    async def run(self) -> str:
        try:
            await workflow.execute_activity(
                call_partner,
                start_to_close_timeout=timedelta(seconds=10),
                retry_policy=RetryPolicy(maximum_attempts=1),
                dead_letter=True,
            )
        except ActivityError:
            return "discarded"
        return "done"


@workflow.defn
class Unserved:
    @workflow.run
    async def run(self) -> None:
        await workflow.execute_activity(
            "unserved", task_queue="cli-unserved", start_to_close_timeout=timedelta(seconds=60)
        )


async def main(address: str) -> None:
    client = await Client.connect(address)
    await Worker(
        client,
        task_queue=TASK_QUEUE,
        workflows=[Echo, Waiter, Fanout, Fails, Parks, Unserved],
        activities=[call_partner],
    ).run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
