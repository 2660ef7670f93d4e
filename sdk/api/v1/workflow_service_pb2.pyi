import datetime

from flowforge.api.v1 import command_pb2 as _command_pb2
from flowforge.api.v1 import common_pb2 as _common_pb2
from flowforge.api.v1 import event_pb2 as _event_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WorkflowTaskFailedCause(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WORKFLOW_TASK_FAILED_CAUSE_UNSPECIFIED: _ClassVar[WorkflowTaskFailedCause]
    WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE: _ClassVar[WorkflowTaskFailedCause]
    WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR: _ClassVar[WorkflowTaskFailedCause]
    WORKFLOW_TASK_FAILED_CAUSE_UNKNOWN_WORKFLOW_TYPE: _ClassVar[WorkflowTaskFailedCause]
    WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND: _ClassVar[WorkflowTaskFailedCause]
    WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND: _ClassVar[WorkflowTaskFailedCause]
WORKFLOW_TASK_FAILED_CAUSE_UNSPECIFIED: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_UNKNOWN_WORKFLOW_TYPE: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND: WorkflowTaskFailedCause

class Namespace(_message.Message):
    __slots__ = ("name", "description", "retention", "create_time")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    retention: _duration_pb2.Duration
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., retention: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RegisterNamespaceRequest(_message.Message):
    __slots__ = ("name", "description", "retention")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    retention: _duration_pb2.Duration
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., retention: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class RegisterNamespaceResponse(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: Namespace
    def __init__(self, namespace: _Optional[_Union[Namespace, _Mapping]] = ...) -> None: ...

class DescribeNamespaceRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DescribeNamespaceResponse(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: Namespace
    def __init__(self, namespace: _Optional[_Union[Namespace, _Mapping]] = ...) -> None: ...

class ListNamespacesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListNamespacesResponse(_message.Message):
    __slots__ = ("namespaces",)
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    namespaces: _containers.RepeatedCompositeFieldContainer[Namespace]
    def __init__(self, namespaces: _Optional[_Iterable[_Union[Namespace, _Mapping]]] = ...) -> None: ...

class StartWorkflowExecutionRequest(_message.Message):
    __slots__ = ("namespace", "workflow_id", "workflow_type", "task_queue", "input", "request_id", "identity", "workflow_execution_timeout", "workflow_run_timeout", "workflow_task_timeout")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_RUN_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_id: str
    workflow_type: str
    task_queue: str
    input: _common_pb2.Payloads
    request_id: str
    identity: str
    workflow_execution_timeout: _duration_pb2.Duration
    workflow_run_timeout: _duration_pb2.Duration
    workflow_task_timeout: _duration_pb2.Duration
    def __init__(self, namespace: _Optional[str] = ..., workflow_id: _Optional[str] = ..., workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., request_id: _Optional[str] = ..., identity: _Optional[str] = ..., workflow_execution_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., workflow_run_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., workflow_task_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class StartWorkflowExecutionResponse(_message.Message):
    __slots__ = ("run_id", "started")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    started: bool
    def __init__(self, run_id: _Optional[str] = ..., started: _Optional[bool] = ...) -> None: ...

class DagNode(_message.Message):
    __slots__ = ("activity_id", "activity_type", "scheduled_event_id", "depends_on_activity_ids", "state", "attempt")
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    DEPENDS_ON_ACTIVITY_IDS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    activity_id: str
    activity_type: str
    scheduled_event_id: int
    depends_on_activity_ids: _containers.RepeatedScalarFieldContainer[str]
    state: str
    attempt: int
    def __init__(self, activity_id: _Optional[str] = ..., activity_type: _Optional[str] = ..., scheduled_event_id: _Optional[int] = ..., depends_on_activity_ids: _Optional[_Iterable[str]] = ..., state: _Optional[str] = ..., attempt: _Optional[int] = ...) -> None: ...

class PendingActivity(_message.Message):
    __slots__ = ("activity_id", "activity_type", "state", "attempt", "last_heartbeat_time", "next_attempt_schedule_time", "last_failure", "last_worker_identity")
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_TIME_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_SCHEDULE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_FAILURE_FIELD_NUMBER: _ClassVar[int]
    LAST_WORKER_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    activity_id: str
    activity_type: str
    state: str
    attempt: int
    last_heartbeat_time: _timestamp_pb2.Timestamp
    next_attempt_schedule_time: _timestamp_pb2.Timestamp
    last_failure: _common_pb2.Failure
    last_worker_identity: str
    def __init__(self, activity_id: _Optional[str] = ..., activity_type: _Optional[str] = ..., state: _Optional[str] = ..., attempt: _Optional[int] = ..., last_heartbeat_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., next_attempt_schedule_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_failure: _Optional[_Union[_common_pb2.Failure, _Mapping]] = ..., last_worker_identity: _Optional[str] = ...) -> None: ...

class PendingWorkflowTask(_message.Message):
    __slots__ = ("state", "attempt", "last_failure")
    STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    LAST_FAILURE_FIELD_NUMBER: _ClassVar[int]
    state: str
    attempt: int
    last_failure: _common_pb2.Failure
    def __init__(self, state: _Optional[str] = ..., attempt: _Optional[int] = ..., last_failure: _Optional[_Union[_common_pb2.Failure, _Mapping]] = ...) -> None: ...

class DescribeWorkflowExecutionRequest(_message.Message):
    __slots__ = ("namespace", "execution")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: _common_pb2.WorkflowExecution
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ...) -> None: ...

class DescribeWorkflowExecutionResponse(_message.Message):
    __slots__ = ("execution", "workflow_type", "task_queue", "status", "start_time", "close_time", "history_length", "pending_activities", "pending_workflow_task", "dag", "origin_json", "first_worker_build_id")
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    CLOSE_TIME_FIELD_NUMBER: _ClassVar[int]
    HISTORY_LENGTH_FIELD_NUMBER: _ClassVar[int]
    PENDING_ACTIVITIES_FIELD_NUMBER: _ClassVar[int]
    PENDING_WORKFLOW_TASK_FIELD_NUMBER: _ClassVar[int]
    DAG_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_JSON_FIELD_NUMBER: _ClassVar[int]
    FIRST_WORKER_BUILD_ID_FIELD_NUMBER: _ClassVar[int]
    execution: _common_pb2.WorkflowExecution
    workflow_type: str
    task_queue: str
    status: _common_pb2.WorkflowExecutionStatus
    start_time: _timestamp_pb2.Timestamp
    close_time: _timestamp_pb2.Timestamp
    history_length: int
    pending_activities: _containers.RepeatedCompositeFieldContainer[PendingActivity]
    pending_workflow_task: PendingWorkflowTask
    dag: _containers.RepeatedCompositeFieldContainer[DagNode]
    origin_json: str
    first_worker_build_id: str
    def __init__(self, execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.WorkflowExecutionStatus, str]] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., close_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., history_length: _Optional[int] = ..., pending_activities: _Optional[_Iterable[_Union[PendingActivity, _Mapping]]] = ..., pending_workflow_task: _Optional[_Union[PendingWorkflowTask, _Mapping]] = ..., dag: _Optional[_Iterable[_Union[DagNode, _Mapping]]] = ..., origin_json: _Optional[str] = ..., first_worker_build_id: _Optional[str] = ...) -> None: ...

class GetWorkflowExecutionHistoryRequest(_message.Message):
    __slots__ = ("namespace", "execution", "after_event_id", "maximum_page_size", "wait_new_event", "close_event_only", "wait_timeout")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    AFTER_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    WAIT_NEW_EVENT_FIELD_NUMBER: _ClassVar[int]
    CLOSE_EVENT_ONLY_FIELD_NUMBER: _ClassVar[int]
    WAIT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: _common_pb2.WorkflowExecution
    after_event_id: int
    maximum_page_size: int
    wait_new_event: bool
    close_event_only: bool
    wait_timeout: _duration_pb2.Duration
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., after_event_id: _Optional[int] = ..., maximum_page_size: _Optional[int] = ..., wait_new_event: _Optional[bool] = ..., close_event_only: _Optional[bool] = ..., wait_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class GetWorkflowExecutionHistoryResponse(_message.Message):
    __slots__ = ("events", "run_id", "has_more")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[_common_pb2.HistoryEvent]
    run_id: str
    has_more: bool
    def __init__(self, events: _Optional[_Iterable[_Union[_common_pb2.HistoryEvent, _Mapping]]] = ..., run_id: _Optional[str] = ..., has_more: _Optional[bool] = ...) -> None: ...

class WorkflowExecutionInfo(_message.Message):
    __slots__ = ("execution", "workflow_type", "task_queue", "status", "start_time", "close_time", "history_length")
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    CLOSE_TIME_FIELD_NUMBER: _ClassVar[int]
    HISTORY_LENGTH_FIELD_NUMBER: _ClassVar[int]
    execution: _common_pb2.WorkflowExecution
    workflow_type: str
    task_queue: str
    status: _common_pb2.WorkflowExecutionStatus
    start_time: _timestamp_pb2.Timestamp
    close_time: _timestamp_pb2.Timestamp
    history_length: int
    def __init__(self, execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.WorkflowExecutionStatus, str]] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., close_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., history_length: _Optional[int] = ...) -> None: ...

class ListWorkflowExecutionsRequest(_message.Message):
    __slots__ = ("namespace", "page_size", "next_page_token", "status", "workflow_type", "workflow_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    page_size: int
    next_page_token: bytes
    status: _common_pb2.WorkflowExecutionStatus
    workflow_type: str
    workflow_id: str
    def __init__(self, namespace: _Optional[str] = ..., page_size: _Optional[int] = ..., next_page_token: _Optional[bytes] = ..., status: _Optional[_Union[_common_pb2.WorkflowExecutionStatus, str]] = ..., workflow_type: _Optional[str] = ..., workflow_id: _Optional[str] = ...) -> None: ...

class ListWorkflowExecutionsResponse(_message.Message):
    __slots__ = ("executions", "next_page_token")
    EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    executions: _containers.RepeatedCompositeFieldContainer[WorkflowExecutionInfo]
    next_page_token: bytes
    def __init__(self, executions: _Optional[_Iterable[_Union[WorkflowExecutionInfo, _Mapping]]] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class SignalWorkflowExecutionRequest(_message.Message):
    __slots__ = ("namespace", "execution", "signal_name", "input", "identity", "request_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: _common_pb2.WorkflowExecution
    signal_name: str
    input: _common_pb2.Payloads
    identity: str
    request_id: str
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., signal_name: _Optional[str] = ..., input: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., identity: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class SignalWorkflowExecutionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RequestCancelWorkflowExecutionRequest(_message.Message):
    __slots__ = ("namespace", "execution", "reason", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: _common_pb2.WorkflowExecution
    reason: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., reason: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class RequestCancelWorkflowExecutionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TerminateWorkflowExecutionRequest(_message.Message):
    __slots__ = ("namespace", "execution", "reason", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: _common_pb2.WorkflowExecution
    reason: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., reason: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class TerminateWorkflowExecutionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PollWorkflowTaskQueueRequest(_message.Message):
    __slots__ = ("namespace", "task_queue", "identity", "poll_timeout")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    POLL_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_queue: str
    identity: str
    poll_timeout: _duration_pb2.Duration
    def __init__(self, namespace: _Optional[str] = ..., task_queue: _Optional[str] = ..., identity: _Optional[str] = ..., poll_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class PollWorkflowTaskQueueResponse(_message.Message):
    __slots__ = ("task_token", "workflow_execution", "workflow_type", "history", "attempt", "task_queue")
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    task_token: bytes
    workflow_execution: _common_pb2.WorkflowExecution
    workflow_type: str
    history: _containers.RepeatedCompositeFieldContainer[_common_pb2.HistoryEvent]
    attempt: int
    task_queue: str
    def __init__(self, task_token: _Optional[bytes] = ..., workflow_execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., history: _Optional[_Iterable[_Union[_common_pb2.HistoryEvent, _Mapping]]] = ..., attempt: _Optional[int] = ..., task_queue: _Optional[str] = ...) -> None: ...

class RespondWorkflowTaskCompletedRequest(_message.Message):
    __slots__ = ("namespace", "task_token", "commands", "identity", "eager_activity_slots", "worker_build_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    EAGER_ACTIVITY_SLOTS_FIELD_NUMBER: _ClassVar[int]
    WORKER_BUILD_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_token: bytes
    commands: _containers.RepeatedCompositeFieldContainer[_command_pb2.Command]
    identity: str
    eager_activity_slots: int
    worker_build_id: str
    def __init__(self, namespace: _Optional[str] = ..., task_token: _Optional[bytes] = ..., commands: _Optional[_Iterable[_Union[_command_pb2.Command, _Mapping]]] = ..., identity: _Optional[str] = ..., eager_activity_slots: _Optional[int] = ..., worker_build_id: _Optional[str] = ...) -> None: ...

class RespondWorkflowTaskCompletedResponse(_message.Message):
    __slots__ = ("activity_tasks",)
    ACTIVITY_TASKS_FIELD_NUMBER: _ClassVar[int]
    activity_tasks: _containers.RepeatedCompositeFieldContainer[PollActivityTaskQueueResponse]
    def __init__(self, activity_tasks: _Optional[_Iterable[_Union[PollActivityTaskQueueResponse, _Mapping]]] = ...) -> None: ...

class RespondWorkflowTaskFailedRequest(_message.Message):
    __slots__ = ("namespace", "task_token", "cause", "failure", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_token: bytes
    cause: WorkflowTaskFailedCause
    failure: _common_pb2.Failure
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., task_token: _Optional[bytes] = ..., cause: _Optional[_Union[WorkflowTaskFailedCause, str]] = ..., failure: _Optional[_Union[_common_pb2.Failure, _Mapping]] = ..., identity: _Optional[str] = ...) -> None: ...

class RespondWorkflowTaskFailedResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PollActivityTaskQueueRequest(_message.Message):
    __slots__ = ("namespace", "task_queue", "identity", "poll_timeout")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    POLL_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_queue: str
    identity: str
    poll_timeout: _duration_pb2.Duration
    def __init__(self, namespace: _Optional[str] = ..., task_queue: _Optional[str] = ..., identity: _Optional[str] = ..., poll_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class PollActivityTaskQueueResponse(_message.Message):
    __slots__ = ("task_token", "workflow_execution", "workflow_type", "activity_id", "activity_type", "input", "attempt", "idempotency_key", "heartbeat_details", "scheduled_time", "started_time", "start_to_close_timeout", "heartbeat_timeout", "schedule_to_close_timeout", "task_queue")
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_DETAILS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_TIME_FIELD_NUMBER: _ClassVar[int]
    STARTED_TIME_FIELD_NUMBER: _ClassVar[int]
    START_TO_CLOSE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_TO_CLOSE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    task_token: bytes
    workflow_execution: _common_pb2.WorkflowExecution
    workflow_type: str
    activity_id: str
    activity_type: str
    input: _common_pb2.Payloads
    attempt: int
    idempotency_key: str
    heartbeat_details: _common_pb2.Payloads
    scheduled_time: _timestamp_pb2.Timestamp
    started_time: _timestamp_pb2.Timestamp
    start_to_close_timeout: _duration_pb2.Duration
    heartbeat_timeout: _duration_pb2.Duration
    schedule_to_close_timeout: _duration_pb2.Duration
    task_queue: str
    def __init__(self, task_token: _Optional[bytes] = ..., workflow_execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., activity_id: _Optional[str] = ..., activity_type: _Optional[str] = ..., input: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., attempt: _Optional[int] = ..., idempotency_key: _Optional[str] = ..., heartbeat_details: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., scheduled_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., started_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., start_to_close_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., heartbeat_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., schedule_to_close_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., task_queue: _Optional[str] = ...) -> None: ...

class RecordActivityTaskHeartbeatRequest(_message.Message):
    __slots__ = ("namespace", "task_token", "details", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_token: bytes
    details: _common_pb2.Payloads
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., task_token: _Optional[bytes] = ..., details: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., identity: _Optional[str] = ...) -> None: ...

class RecordActivityTaskHeartbeatResponse(_message.Message):
    __slots__ = ("cancel_requested",)
    CANCEL_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    cancel_requested: bool
    def __init__(self, cancel_requested: _Optional[bool] = ...) -> None: ...

class RespondActivityTaskCompletedRequest(_message.Message):
    __slots__ = ("namespace", "task_token", "result", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_token: bytes
    result: _common_pb2.Payloads
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., task_token: _Optional[bytes] = ..., result: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., identity: _Optional[str] = ...) -> None: ...

class RespondActivityTaskCompletedResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RespondActivityTaskFailedRequest(_message.Message):
    __slots__ = ("namespace", "task_token", "failure", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_token: bytes
    failure: _common_pb2.Failure
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., task_token: _Optional[bytes] = ..., failure: _Optional[_Union[_common_pb2.Failure, _Mapping]] = ..., identity: _Optional[str] = ...) -> None: ...

class RespondActivityTaskFailedResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RespondActivityTaskCanceledRequest(_message.Message):
    __slots__ = ("namespace", "task_token", "details", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_token: bytes
    details: _common_pb2.Payloads
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., task_token: _Optional[bytes] = ..., details: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., identity: _Optional[str] = ...) -> None: ...

class RespondActivityTaskCanceledResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
