"""The frontend: the gRPC WorkflowService. It validates every request, calls the
history engine, matching, the event router or the scheduler, and maps errors to gRPC
status codes (rule 8: bad input gets a clear error and changes nothing; the server
keeps serving).

One module per concern holds its RPC handlers (namespaces, workflows, signals and
queries, tasks, task queues, visibility, schedules, triggers); they stay thin: request checks live in
:mod:`.validation` (and :mod:`.schedule_requests`), responses are built in
:mod:`.protos`, :mod:`.describe` and :mod:`.schedule_protos`, and the error mapping in
:mod:`._base`. :class:`WorkflowService` combines the handlers into the one servicer.
"""

from flowforge.server.frontend.service import WorkflowService

__all__ = ["WorkflowService"]
