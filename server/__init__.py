"""The FlowForge history server: frontend (gRPC), history engine, matching,
timekeeper and stores. Start one with ``flowforge server start-dev``."""

from flowforge.server.app import FlowForgeServer, ServerConfig
from flowforge.server.history import EngineConfig
from flowforge.server.scheduler import SchedulerConfig

__all__ = ["EngineConfig", "FlowForgeServer", "SchedulerConfig", "ServerConfig"]
