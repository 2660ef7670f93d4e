"""A raw gRPC client of the worker stream (``StreamWorkerTasks``), for tests that
speak the stream's protocol directly: it sends what it is told and keeps what arrives."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.api.v1 import workflow_service_pb2_grpc

WORKFLOW, ACTIVITY = pb.TASK_QUEUE_TYPE_WORKFLOW, pb.TASK_QUEUE_TYPE_ACTIVITY


def credit(task_queue: str, kind: int, count: int = 1) -> pb.TaskCredit:
    return pb.TaskCredit(task_queue=task_queue, task_queue_type=kind, count=count)  # type: ignore[arg-type]


class RawWorkerStream:
    """One open stream: ``send`` messages, ``receive`` them as they come, ``status`` at the end.

    Counts the messages each way (``sent``, ``received``).
    """

    def __init__(self, channel: grpc.aio.Channel, metadata: tuple[tuple[str, str], ...] = ()) -> None:
        stub = workflow_service_pb2_grpc.WorkflowServiceStub(channel)
        self.call: Any = stub.StreamWorkerTasks(metadata=metadata or None)
        self.sent = 0
        self.received = 0
        self._next_id = 0
        # One reader for the stream's life: cancelling a read would cancel the call.
        self._inbox: asyncio.Queue[pb.WorkerStreamResponse | None] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            while (message := await self.call.read()) is not grpc.aio.EOF:
                self.received += 1
                self._inbox.put_nowait(message)
        except grpc.aio.AioRpcError:
            pass  # the status says why
        finally:
            self._inbox.put_nowait(None)

    async def send(self, **fields: Any) -> None:
        """Sends one WorkerStreamRequest with ``fields``."""
        await self.call.write(pb.WorkerStreamRequest(**fields))
        self.sent += 1

    async def hello(self, namespace: str = "default", *credits: pb.TaskCredit, identity: str = "raw-test") -> None:
        await self.send(hello=pb.WorkerStreamHello(namespace=namespace, identity=identity), credits=list(credits))

    def report(self, **request: Any) -> pb.WorkerReport:
        """A report with a fresh id, e.g. ``report(activity_task_completed=...)``."""
        self._next_id += 1
        return pb.WorkerReport(id=self._next_id, **request)

    async def receive(self, timeout: float = 10.0) -> pb.WorkerStreamResponse | None:
        """The next message; None when the stream has ended."""
        message = await asyncio.wait_for(self._inbox.get(), timeout)
        if message is None:
            self._inbox.put_nowait(None)  # it stays ended
        return message

    async def tasks(self, count: int, timeout: float = 10.0) -> list[pb.PushedTask]:
        """The next ``count`` pushed tasks (failing if an answer or a stop comes between)."""
        tasks: list[pb.PushedTask] = []
        while len(tasks) < count:
            message = await self.receive(timeout)
            assert message is not None, f"the stream ended after {len(tasks)} of {count} tasks"
            assert not message.results and not message.tasks_stopped, message
            tasks.extend(message.tasks)
        return tasks

    async def results(self, count: int, timeout: float = 10.0) -> dict[int, pb.WorkerReportResult]:
        """The next ``count`` report answers, by id (failing if a task arrives between)."""
        results: dict[int, pb.WorkerReportResult] = {}
        while len(results) < count:
            message = await self.receive(timeout)
            assert message is not None, f"the stream ended after {len(results)} of {count} answers"
            assert not message.tasks, message
            for result in message.results:
                assert result.id not in results, f"report {result.id} answered twice"
                results[result.id] = result
        return results

    async def status(self, timeout: float = 10.0) -> tuple[grpc.StatusCode, str]:
        """How the stream ended: its code and details."""
        code = await asyncio.wait_for(self.call.code(), timeout)
        return code, await self.call.details()

    def cancel(self) -> None:
        """Breaks the stream from the worker's side (as a worker process dying would)."""
        self.call.cancel()
