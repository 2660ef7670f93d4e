"""The declarative DAG calls of :class:`flowforge.client.Client` (docs/dags.md)."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from flowforge._rpc import WorkflowServiceClient
from flowforge._workflow_executions import _timestamp_to_datetime
from flowforge._workflow_handle import WorkflowHandle
from flowforge.api.v1 import dag_pb2
from flowforge.converter import DataConverter
from flowforge.dag import DagSpec

if TYPE_CHECKING:
    from flowforge.client import Client

__all__ = ["DagVersion"]


@dataclasses.dataclass(frozen=True)
class DagVersion:
    """A published version of a DAG.

    Attributes:
        name: The DAG's name.
        digest: SHA-256 of its canonical form (64 hex digits): the version.
        task_count: How many tasks it has.
        create_time: When it was first published (UTC).
        aliases: The aliases of the DAG pointing at this version.
    """

    name: str
    digest: str
    task_count: int
    create_time: datetime | None
    aliases: tuple[str, ...]

    @classmethod
    def _from_proto(cls, proto: dag_pb2.DagVersion) -> DagVersion:
        return cls(
            name=proto.name,
            digest=proto.digest,
            task_count=proto.task_count,
            create_time=_timestamp_to_datetime(proto.create_time, proto.HasField("create_time")),
            aliases=tuple(proto.aliases),
        )


def _definition_text(spec: DagSpec | Mapping[str, Any] | str | Path) -> str:
    if isinstance(spec, DagSpec):
        return spec.canonical_json().decode()
    if isinstance(spec, Path):
        return spec.read_text()
    if isinstance(spec, str):
        return spec
    return json.dumps(spec)


class _DagCalls:
    """Publish, alias, list and start declarative DAGs (a base class of the client)."""

    _workflow_service: WorkflowServiceClient
    _namespace: str
    _identity: str
    _data_converter: DataConverter

    async def publish_dag(self, spec: DagSpec | Mapping[str, Any] | str | Path, *, alias: str | None = None) -> str:
        """Publishes a definition; returns its version (the digest). The same content gives the same digest.

        Args:
            spec: A :class:`~flowforge.dag.DagSpec`, a loaded document, JSON or YAML text, or a file.
            alias: Moves this alias of the DAG to the version.

        Raises:
            RPCError: ``INVALID_ARGUMENT`` listing every violation with its path.
        """
        request = dag_pb2.PublishDagRequest(
            namespace=self._namespace, definition=_definition_text(spec), alias=alias or "", identity=self._identity
        )
        response: dag_pb2.PublishDagResponse = await self._workflow_service.call("PublishDag", request)
        return response.version.digest

    async def set_dag_alias(self, name: str, alias: str, version: str, *, reason: str = "") -> str | None:
        """Points ``alias`` of DAG ``name`` at ``version``; returns the version it pointed at before.

        Runs already started keep the version they were started with.
        """
        request = dag_pb2.SetDagAliasRequest(
            namespace=self._namespace, name=name, alias=alias, digest=version, reason=reason
        )
        response: dag_pb2.SetDagAliasResponse = await self._workflow_service.call("SetDagAlias", request)
        return response.previous_digest or None

    async def list_dags(self, name: str | None = None, *, limit: int = 100) -> list[DagVersion]:
        """Published versions newest first (of one DAG, or all), with their aliases."""
        request = dag_pb2.ListDagsRequest(namespace=self._namespace, name=name or "", page_size=limit)
        response: dag_pb2.ListDagsResponse = await self._workflow_service.call("ListDags", request)
        return [DagVersion._from_proto(v) for v in response.versions]

    async def get_dag(
        self, *, version: str | None = None, name: str | None = None, alias: str | None = None
    ) -> tuple[DagVersion, DagSpec]:
        """One version (by digest, or by name and alias) and its definition."""
        request = dag_pb2.GetDagRequest(
            namespace=self._namespace, digest=version or "", name=name or "", alias=alias or ""
        )
        response: dag_pb2.GetDagResponse = await self._workflow_service.call("GetDag", request)
        return DagVersion._from_proto(response.version), DagSpec.from_document(json.loads(response.definition))

    async def delete_dag_version(self, version: str, *, reason: str = "") -> None:
        """Deletes a version; ``FAILED_PRECONDITION`` while a running execution or an alias uses it."""
        request = dag_pb2.DeleteDagVersionRequest(namespace=self._namespace, digest=version, reason=reason)
        await self._workflow_service.call("DeleteDagVersion", request)

    async def start_dag(
        self,
        name: str,
        input: Any = None,
        *,
        id: str,
        task_queue: str | None = None,
        version: str | None = None,
        alias: str | None = None,
        execution_timeout: timedelta | None = None,
        request_id: str | None = None,
    ) -> WorkflowHandle[Any, Any]:
        """Starts a run of DAG ``name``, executed by the server (activities on ordinary workers).

        Args:
            name: The DAG's name.
            input: The run's input (``$.input``).
            id: The workflow id.
            task_queue: Where the activities run unless a task names its own queue
                (default: the definition's ``task_queue``).
            version: The digest to run; or ``alias``, resolved once now (default ``"latest"``).
            execution_timeout: How long the run may take.

        Returns:
            An ordinary workflow handle: ``result()``, ``describe()``, ``cancel()``, ... work on it.
        """
        if version and alias:
            raise ValueError("give version or alias, not both")
        request = dag_pb2.StartDagExecutionRequest(
            namespace=self._namespace,
            name=name,
            digest=version or "",
            alias="" if version else alias or "latest",
            workflow_id=id,
            task_queue=task_queue or "",
            input=self._data_converter.to_payloads([input]),
            request_id=request_id or str(uuid.uuid4()),
            identity=self._identity,
        )
        if execution_timeout is not None:
            request.workflow_execution_timeout.FromTimedelta(execution_timeout)
        response: dag_pb2.StartDagExecutionResponse = await self._workflow_service.call("StartDagExecution", request)
        return WorkflowHandle(cast("Client", self), id, run_id=response.run_id)
