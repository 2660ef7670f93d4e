"""FlowForge workers: poll task queues, replay workflows, run activities."""

from flowforge.worker._worker import Worker

__all__ = ["Worker"]
