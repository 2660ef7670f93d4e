"""The batch runner: advances every running batch job (server/history/batches.py), each
at its own pace (``rps`` executions a second), so a batch over many executions does not
starve live traffic: every execution is one short transaction like a client's call.

Jobs are resumed from their cursor whenever the server starts. A job that fails to
advance (the store is down) is retried on the next pass.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time

from flowforge.server._tasks import cancel_and_wait
from flowforge.server.history import HistoryEngine
from flowforge.server.stores.rows import BatchJobRow

__all__ = ["BatchRunner"]

log = logging.getLogger("flowforge.server.batches")

_PAGE = 100


class BatchRunner:
    """Background loop running the batch jobs.

    Args:
        engine: The history engine the jobs act through.
        interval_s: Seconds between looks for running jobs.
    """

    def __init__(self, engine: HistoryEngine, *, interval_s: float = 0.5) -> None:
        self._engine = engine
        self._interval_s = interval_s
        self._task: asyncio.Task[None] | None = None
        self._jobs: dict[str, asyncio.Task[None]] = {}

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="flowforge-batch-runner")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None
        for job in list(self._jobs.values()):
            await cancel_and_wait(job)
        self._jobs.clear()

    async def _run(self) -> None:
        while True:
            try:
                for job in await self._engine.running_batches():
                    if job.id not in self._jobs:
                        task = asyncio.create_task(self._advance(job), name=f"flowforge-batch-{job.id}")
                        self._jobs[job.id] = task
                        task.add_done_callback(functools.partial(self._forget, job.id))
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the store may be down for a while; try again next pass
                log.warning("batch runner pass failed: %s", error)
            await asyncio.sleep(self._interval_s)

    def _forget(self, job_id: str, _task: asyncio.Task[None]) -> None:
        self._jobs.pop(job_id, None)

    async def _advance(self, job: BatchJobRow) -> None:
        """Handles the job's executions, page by page, at most ``job.rps`` a second."""
        interval = 1.0 / job.rps
        next_at = time.monotonic()
        try:
            while True:
                page = await self._engine.next_batch_page(job, _PAGE)
                for execution in page:
                    await asyncio.sleep(max(0.0, next_at - time.monotonic()))
                    next_at = max(next_at + interval, time.monotonic() - 1.0)
                    await self._engine.apply_batch_item(job, execution)
                if len(page) < _PAGE:
                    await self._engine.complete_batch(job)
                    log.info("batch %s (%s) completed: %d done, %d failed", job.id, job.operation, job.done, job.failed)
                    return
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log.warning("batch %s stopped (%s); it goes on from its cursor on the next pass", job.id, error)
