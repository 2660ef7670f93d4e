"""Workflow id reuse and conflict policies of a start (Temporal's), checked in the start's transaction.

Without a policy a start reads nothing extra: the store's one-running-execution-per-id rule
answers ALREADY_EXISTS. With one, the id's latest execution is read first and the policy applied.
"""

from __future__ import annotations

from typing import Any

from flowforge.api.schema import ExecutionStatus
from flowforge.api.v1 import workflow_service_pb2 as pb
from flowforge.server.errors import AlreadyExists, InvalidArgument
from flowforge.server.history.mutation import _Mutation
from flowforge.server.history.run_close import RunClose
from flowforge.server.stores.base import Transaction

__all__ = ["apply_id_policies", "known_enum"]

_TERMINATING = (pb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING,)


def known_enum(value: int, enum: Any, field: str) -> int:
    """``value`` if it is one of the proto enum's values; INVALID_ARGUMENT naming them otherwise."""
    if value not in enum.values():
        raise InvalidArgument(f"{field} {value} is not one of {', '.join(enum.keys())}")
    return value


async def apply_id_policies(
    engine: RunClose,
    tx: Transaction,
    *,
    namespace: str,
    workflow_id: str,
    reuse_policy: int,
    conflict_policy: int,
    now: int,
) -> str | None:
    """Applies the policies before a new run of ``workflow_id`` is created.

    Returns:
        The running execution's run id when the start must use it instead (USE_EXISTING), else None.

    Raises:
        AlreadyExists: The reuse policy forbids the id of the closed execution.
    """
    if not reuse_policy and not conflict_policy:
        return None
    latest = await tx.get_latest_execution(namespace, workflow_id)
    if latest is None:
        return None
    if latest.status == ExecutionStatus.RUNNING:
        if conflict_policy == pb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING:
            return latest.run_id
        if conflict_policy in _TERMINATING or reuse_policy == pb.WORKFLOW_ID_REUSE_POLICY_TERMINATE_IF_RUNNING:
            m = _Mutation(tx, latest, now)
            m.terminate("terminated by a new start (workflow id conflict policy TERMINATE_EXISTING)", "server")
            await m.save()
            await engine._after_run_closed(m)
        return None  # FAIL: the store refuses the second running execution (ALREADY_EXISTS)
    if reuse_policy == pb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE or (
        reuse_policy == pb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY
        and latest.status == ExecutionStatus.COMPLETED
    ):
        raise AlreadyExists(
            f"workflow id {workflow_id!r} was used by run {latest.run_id} ({latest.status}) and the reuse policy"
            " forbids using it again; choose another id or another id_reuse_policy"
        )
    return None
