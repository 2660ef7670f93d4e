"""Roles and the declared table of RPC → minimal role (docs/architecture.md, "Operations contract").

Roles, each including the ones before it: ``reader``, ``writer``, ``operator``;
``worker`` is ``reader`` plus polling and reporting tasks; ``admin`` is everything.
Every RPC the server answers is in :data:`RPC_RULES`; a test enumerates the service
descriptors and fails when one is missing, so a new RPC cannot ship unguarded.
"""

from __future__ import annotations

import dataclasses
import enum

__all__ = [
    "PUBLIC_SERVICES",
    "RPC_RULES",
    "NamespaceSource",
    "Role",
    "RpcRule",
    "parse_role",
    "rule_for",
]


class Role(enum.Enum):
    """What a principal may do in a namespace."""

    READER = "reader"
    WRITER = "writer"
    WORKER = "worker"
    OPERATOR = "operator"
    ADMIN = "admin"

    def includes(self, required: Role) -> bool:
        """True when this role may do what ``required`` may do."""
        return required in _INCLUDED[self]


_INCLUDED: dict[Role, frozenset[Role]] = {
    Role.READER: frozenset({Role.READER}),
    Role.WRITER: frozenset({Role.READER, Role.WRITER}),
    Role.WORKER: frozenset({Role.READER, Role.WORKER}),
    Role.OPERATOR: frozenset({Role.READER, Role.WRITER, Role.OPERATOR}),
    Role.ADMIN: frozenset(Role),
}


def parse_role(text: str) -> Role:
    """The role named ``text`` (case-insensitive).

    Raises:
        ValueError: naming the roles there are.
    """
    try:
        return Role(text.strip().lower())
    except ValueError:
        raise ValueError(f"unknown role {text!r}; one of {', '.join(r.value for r in Role)}") from None


class NamespaceSource(enum.Enum):
    """Where an RPC names the namespace it acts in."""

    FIELD = "field"
    """The request's ``namespace`` field (or the field :attr:`RpcRule.field` names, a
    dotted path into a message field; a stream's first message is its request)."""
    TASK_TOKEN = "task_token"
    """The namespace signed into ``task_token`` (and ``namespace``, when set, must match)."""
    GLOBAL = "global"
    """No namespace: any principal holding the role somewhere; the answer shows only
    what it may see (the handler filters by :meth:`Principal.allows`)."""
    SERVER = "server"
    """The whole server: the role must be held for every namespace (``'*'``)."""


@dataclasses.dataclass(frozen=True)
class RpcRule:
    """The minimal role for one RPC and where its namespace comes from."""

    role: Role
    source: NamespaceSource = NamespaceSource.FIELD
    field: str = "namespace"
    audited: bool = False
    """Appended to the audit log when it succeeds (admin and operator actions, config changes)."""


def _rule(role: Role, *, audited: bool = False, field: str = "namespace") -> RpcRule:
    return RpcRule(role, NamespaceSource.FIELD, field, audited)


_TOKEN = RpcRule(Role.WORKER, NamespaceSource.TASK_TOKEN)
_WORKFLOW_SERVICE = "/flowforge.api.v1.WorkflowService/"
_ACCESS_SERVICE = "/flowforge.api.v1.AccessService/"

#: Full gRPC method name → its rule. Keep in the order of the service definitions.
RPC_RULES: dict[str, RpcRule] = {
    _WORKFLOW_SERVICE + name: rule
    for name, rule in {
        "RegisterNamespace": _rule(Role.ADMIN, audited=True, field="name"),
        "DescribeNamespace": _rule(Role.READER, field="name"),
        "ListNamespaces": RpcRule(Role.READER, NamespaceSource.GLOBAL),
        "UpdateNamespace": _rule(Role.ADMIN, audited=True, field="name"),
        "StartWorkflowExecution": _rule(Role.WRITER),
        "DescribeWorkflowExecution": _rule(Role.READER),
        "GetWorkflowExecutionHistory": _rule(Role.READER),
        "ListWorkflowExecutions": _rule(Role.READER),
        "SignalWorkflowExecution": _rule(Role.WRITER),
        "RequestCancelWorkflowExecution": _rule(Role.WRITER),
        "TerminateWorkflowExecution": _rule(Role.OPERATOR, audited=True),
        "ResetWorkflowExecution": _rule(Role.OPERATOR, audited=True),
        "PauseWorkflowExecution": _rule(Role.OPERATOR, audited=True),
        "UnpauseWorkflowExecution": _rule(Role.OPERATOR, audited=True),
        "PauseActivity": _rule(Role.OPERATOR, audited=True),
        "UnpauseActivity": _rule(Role.OPERATOR, audited=True),
        "StartBatchOperation": _rule(Role.OPERATOR, audited=True),
        "DescribeBatchOperation": _rule(Role.READER),
        "ListBatchOperations": _rule(Role.READER),
        "PollWorkflowTaskQueue": _rule(Role.WORKER),
        "RespondWorkflowTaskCompleted": _TOKEN,
        "RespondWorkflowTaskFailed": _TOKEN,
        "PollActivityTaskQueue": _rule(Role.WORKER),
        "RecordActivityTaskHeartbeat": _TOKEN,
        "RespondActivityTaskCompleted": _TOKEN,
        "RespondActivityTaskFailed": _TOKEN,
        "RespondActivityTaskCanceled": _TOKEN,
        "GetActivityTaskToken": _rule(Role.WORKER),
        # The worker stream: its first message's hello names the namespace; each
        # report on it is then authorized by its own RPC's rule (_TOKEN).
        "StreamWorkerTasks": _rule(Role.WORKER, field="hello.namespace"),
        "CreateEventTrigger": _rule(Role.OPERATOR, audited=True),
        "DescribeEventTrigger": _rule(Role.READER),
        "ListEventTriggers": _rule(Role.READER),
        "DeleteEventTrigger": _rule(Role.OPERATOR, audited=True),
        "PublishEvent": _rule(Role.WRITER),
        "PublishDag": _rule(Role.OPERATOR, audited=True),
        "SetDagAlias": _rule(Role.OPERATOR, audited=True),
        "ListDags": _rule(Role.READER),
        "GetDag": _rule(Role.READER),
        "DeleteDagVersion": _rule(Role.OPERATOR, audited=True),
        "StartDagExecution": _rule(Role.WRITER),
        "CreateSchedule": _rule(Role.OPERATOR, audited=True),
        "DescribeSchedule": _rule(Role.READER),
        "ListSchedules": _rule(Role.READER),
        "PatchSchedule": _rule(Role.OPERATOR, audited=True),
        "DeleteSchedule": _rule(Role.OPERATOR, audited=True),
        "GetSchedulerStatus": RpcRule(Role.READER, NamespaceSource.GLOBAL),
        "QueryWorkflow": _rule(Role.READER),
        "RespondQueryTaskCompleted": _TOKEN,
        "AddSearchAttributes": _rule(Role.ADMIN, audited=True),
        "ListSearchAttributes": _rule(Role.READER),
        "CountWorkflowExecutions": _rule(Role.READER),
        "DescribeTaskQueue": _rule(Role.READER),
        "ListDeadLetters": _rule(Role.READER),
        "DescribeDeadLetter": _rule(Role.READER),
        "RetryDeadLetters": _rule(Role.OPERATOR, audited=True),
        "DiscardDeadLetters": _rule(Role.OPERATOR, audited=True),
        "SetConcurrencyLimit": _rule(Role.OPERATOR, audited=True),
        "ListConcurrencyLimits": _rule(Role.READER),
        "SetRateLimit": _rule(Role.OPERATOR, audited=True),
        "ListRateLimits": _rule(Role.READER),
        "SetBreaker": _rule(Role.OPERATOR, audited=True),
        "OpenBreaker": _rule(Role.OPERATOR, audited=True),
        "CloseBreaker": _rule(Role.OPERATOR, audited=True),
        "ListBreakers": _rule(Role.READER),
    }.items()
} | {
    _ACCESS_SERVICE + name: rule
    for name, rule in {
        # Keys and the audit log are the server's, not a namespace's: ``namespace``
        # here is the key's namespace, and only an admin of '*' may see all of them.
        "CreateApiKey": _rule(Role.ADMIN),
        "ListApiKeys": RpcRule(Role.ADMIN, NamespaceSource.GLOBAL),
        "RevokeApiKey": RpcRule(Role.ADMIN, NamespaceSource.GLOBAL),
        "ListAuditLog": RpcRule(Role.ADMIN, NamespaceSource.GLOBAL),
        "VerifyAuditLog": RpcRule(Role.ADMIN, NamespaceSource.SERVER),
        "RotateTaskTokenKey": RpcRule(Role.ADMIN, NamespaceSource.SERVER),
    }.items()
}

#: Services anyone may call: health checks and reflection (the schema is public).
PUBLIC_SERVICES = frozenset({"grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"})


def rule_for(method: str) -> RpcRule | None:
    """The rule of a full method name (``/package.Service/Method``); None if undeclared."""
    return RPC_RULES.get(method)
