"""Declarative DAG RPCs (docs/dags.md): publish, alias, list, get, delete a version, start a run."""

from __future__ import annotations

import re
import uuid

from flowforge.api.v1 import dag_pb2
from flowforge.server.errors import InvalidArgument
from flowforge.server.frontend._base import Context, ServiceBase, rpc
from flowforge.server.frontend.protos import timestamp
from flowforge.server.frontend.validation import name, page_size, seconds, text
from flowforge.server.history.dag_runs import DagVersionInfo

__all__ = ["DagHandlers"]

_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_ALIAS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


def _digest(value: str, *, required: bool = True) -> str:
    if not value and not required:
        return value
    if not _DIGEST.match(value):
        raise InvalidArgument(f"digest {value[:80]!r} is not a DAG version: 64 lowercase hex digits (SHA-256)")
    return value


def _alias(value: str, *, required: bool = True) -> str:
    if not value and not required:
        return value
    if not _ALIAS.match(value):
        raise InvalidArgument(f"alias {value[:80]!r} must be 1-100 letters, digits, '_', '.' or '-', starting alnum")
    return value


def _version(info: DagVersionInfo) -> dag_pb2.DagVersion:
    row = info.row
    return dag_pb2.DagVersion(
        name=row.name,
        digest=row.digest,
        task_count=row.task_count,
        create_time=timestamp(row.create_us),
        aliases=sorted(info.aliases),
    )


def _version_ref(name_value: str, digest: str, alias: str) -> tuple[str, str, str]:
    """(name, digest, alias) of a request naming a version by digest, or by name and alias."""
    if bool(digest) == bool(alias):
        raise InvalidArgument("give either digest (a version) or alias (with name), not both or neither")
    if alias and not name_value:
        raise InvalidArgument("name is required with alias")
    return name(name_value, "name", required=False), _digest(digest, required=False), _alias(alias, required=False)


class DagHandlers(ServiceBase):
    @rpc
    async def PublishDag(self, request: dag_pb2.PublishDagRequest, context: Context) -> dag_pb2.PublishDagResponse:
        row, created = await self._engine.publish_dag(
            name(request.namespace, "namespace"),
            request.definition,
            _alias(request.alias, required=False),
        )
        aliases = (request.alias,) if request.alias else ()
        return dag_pb2.PublishDagResponse(version=_version(DagVersionInfo(row, aliases)), created=created)

    @rpc
    async def SetDagAlias(self, request: dag_pb2.SetDagAliasRequest, context: Context) -> dag_pb2.SetDagAliasResponse:
        text(request.reason, "reason")
        previous = await self._engine.set_dag_alias(
            name(request.namespace, "namespace"),
            name(request.name, "name"),
            _alias(request.alias),
            _digest(request.digest),
        )
        return dag_pb2.SetDagAliasResponse(previous_digest=previous or "")

    @rpc
    async def ListDags(self, request: dag_pb2.ListDagsRequest, context: Context) -> dag_pb2.ListDagsResponse:
        infos = await self._engine.list_dags(
            name(request.namespace, "namespace"),
            name(request.name, "name", required=False) or None,
            page_size(request.page_size),
        )
        return dag_pb2.ListDagsResponse(versions=[_version(info) for info in infos])

    @rpc
    async def GetDag(self, request: dag_pb2.GetDagRequest, context: Context) -> dag_pb2.GetDagResponse:
        info = await self._engine.get_dag(
            name(request.namespace, "namespace"), *_version_ref(request.name, request.digest, request.alias)
        )
        return dag_pb2.GetDagResponse(version=_version(info), definition=info.row.definition)

    @rpc
    async def DeleteDagVersion(
        self, request: dag_pb2.DeleteDagVersionRequest, context: Context
    ) -> dag_pb2.DeleteDagVersionResponse:
        text(request.reason, "reason")
        await self._engine.delete_dag_version(name(request.namespace, "namespace"), _digest(request.digest))
        return dag_pb2.DeleteDagVersionResponse()

    @rpc
    async def StartDagExecution(
        self, request: dag_pb2.StartDagExecutionRequest, context: Context
    ) -> dag_pb2.StartDagExecutionResponse:
        dag_name, digest, alias = _version_ref(request.name, request.digest, request.alias)
        run_id, started, digest = await self._engine.start_dag(
            namespace=name(request.namespace, "namespace"),
            name=dag_name,
            digest=digest,
            alias=alias,
            workflow_id=name(request.workflow_id, "workflow_id"),
            task_queue=name(request.task_queue, "task_queue", required=False),
            input=request.input,
            request_id=name(request.request_id, "request_id", required=False) or str(uuid.uuid4()),
            identity=name(request.identity, "identity", required=False),
            execution_timeout_s=seconds(request.workflow_execution_timeout, "workflow_execution_timeout"),
        )
        return dag_pb2.StartDagExecutionResponse(run_id=run_id, started=started, digest=digest)
