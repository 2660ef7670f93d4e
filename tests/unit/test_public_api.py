"""The public surface is pinned: changing an export list is a deliberate act."""

from __future__ import annotations

import importlib

import pytest

EXPORTS = {
    "flowforge": [
        "Client",
        "Priority",
        "RetryPolicy",
        "WorkflowExecutionStatus",
        "WorkflowHandle",
        "activity",
        "workflow",
    ],
    "flowforge.worker": [
        "ActivityInboundInterceptor",
        "ExecuteActivityInput",
        "ExecuteWorkflowInput",
        "HandleSignalInput",
        "Interceptor",
        "SharedStateManager",
        "StartActivityInput",
        "StartChildWorkflowInput",
        "Worker",
        "WorkflowInboundInterceptor",
        "WorkflowInterceptorClassInput",
        "WorkflowOutboundInterceptor",
    ],
    "flowforge.storage": ["FileSystemPayloadStorage", "PayloadStorage", "PayloadStorageError"],
    "flowforge.contrib.azure": ["AzureBlobPayloadStorage", "ServiceBusEventSource", "ServiceBusLifecyclePublisher"],
    "flowforge.converter": [
        "DataConverter",
        "PayloadCodec",
        "default_converter",
        "error_to_failure",
        "failure_to_error",
        "json_dict_to_message",
        "message_to_json_dict",
    ],
    "flowforge.workflow": [
        "ActivityCancellationType",
        "ActivityHandle",
        "ChildWorkflowHandle",
        "ContinueAsNewError",
        "Info",
        "NondeterminismError",
        "ParentClosePolicy",
        "ParentInfo",
        "all_handlers_finished",
        "as_completed",
        "continue_as_new",
        "defn",
        "deprecate_patch",
        "execute_activity",
        "execute_activity_method",
        "execute_child_workflow",
        "execute_local_activity",
        "execute_local_activity_method",
        "get_last_completion_result",
        "get_last_failure",
        "info",
        "init",
        "instance",
        "logger",
        "memo",
        "memo_value",
        "now",
        "patched",
        "query",
        "random",
        "run",
        "signal",
        "sleep",
        "start_activity",
        "start_activity_method",
        "start_child_workflow",
        "start_local_activity",
        "start_local_activity_method",
        "unsafe",
        "update",
        "upsert_search_attributes",
        "uuid4",
        "wait",
        "wait_condition",
    ],
    "flowforge.testing": [
        "ActivityEnvironment",
        "Replayer",
        "WorkflowEnvironment",
        "WorkflowReplayResult",
        "WorkflowReplayResults",
        "replay_histories_in",
    ],
    "flowforge.activity": [
        "Info",
        "defn",
        "heartbeat",
        "info",
        "is_cancelled",
        "is_worker_shutdown",
        "logger",
        "raise_complete_async",
        "wait_for_cancelled",
        "wait_for_cancelled_sync",
    ],
    "flowforge.exceptions": [
        "ActivityError",
        "ApplicationError",
        "ApplicationErrorCategory",
        "AsyncActivityCancelledError",
        "CancelledError",
        "ChildWorkflowError",
        "FailureError",
        "FlowForgeError",
        "NonDeterminismError",
        "RPCError",
        "RetryState",
        "TerminatedError",
        "TimeoutError",
        "TimeoutType",
        "WorkflowAlreadyStartedError",
        "WorkflowFailureError",
        "WorkflowUpdateFailedError",
    ],
    "flowforge.server": ["EngineConfig", "FlowForgeServer", "SchedulerConfig", "ServerConfig"],
    "flowforge.types": [
        "CallableAsyncNoParam",
        "CallableAsyncSingleParam",
        "CallableSyncNoParam",
        "CallableSyncSingleParam",
        "LocalReturnType",
        "MethodAsyncNoParam",
        "MethodAsyncSingleParam",
        "MethodSyncNoParam",
        "MethodSyncOrAsyncNoParam",
        "MethodSyncOrAsyncSingleParam",
        "MethodSyncSingleParam",
        "MultiParamSpec",
        "ParamType",
        "ReturnType",
        "SelfType",
    ],
}


@pytest.mark.parametrize("module_name", sorted(EXPORTS))
def test_export_lists_are_pinned(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert sorted(module.__all__) == sorted(EXPORTS[module_name])
    for name in module.__all__:
        assert hasattr(module, name), f"{module_name}.__all__ names {name!r}, which it does not define"


def test_the_design_contract_imports() -> None:
    from flowforge import Client, RetryPolicy, activity, workflow  # noqa: F401
    from flowforge.client import WorkflowHistory  # noqa: F401
    from flowforge.contrib.azure import AzureBlobPayloadStorage  # noqa: F401
    from flowforge.converter import DataConverter
    from flowforge.exceptions import (  # noqa: F401
        ActivityError,
        ApplicationError,
        ChildWorkflowError,
        NonDeterminismError,
        RPCError,
        WorkflowFailureError,
    )
    from flowforge.storage import FileSystemPayloadStorage
    from flowforge.testing import Replayer  # noqa: F401
    from flowforge.worker import Worker  # noqa: F401

    DataConverter(payload_storage=FileSystemPayloadStorage("unused"), payload_storage_threshold=64 * 1024)


@pytest.mark.parametrize(
    "module_name",
    [
        "flowforge.client",
        "flowforge.contrib.azure",
        "flowforge.converter",
        "flowforge.storage",
        "flowforge.testing",
        "flowforge.workflow",
    ],
)
def test_every_public_name_has_a_docstring(module_name: str) -> None:
    module = importlib.import_module(module_name)
    missing = [name for name in module.__all__ if not (getattr(module, name).__doc__ or "").strip()]
    assert not missing
