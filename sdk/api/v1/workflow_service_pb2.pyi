import datetime

from flowforge.api.v1 import command_pb2 as _command_pb2
from flowforge.api.v1 import common_pb2 as _common_pb2
from flowforge.api.v1 import dag_pb2 as _dag_pb2
from flowforge.api.v1 import dead_letters_pb2 as _dead_letters_pb2
from flowforge.api.v1 import event_pb2 as _event_pb2
from flowforge.api.v1 import flow_control_pb2 as _flow_control_pb2
from flowforge.api.v1 import remediation_pb2 as _remediation_pb2
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

class WorkflowIdReusePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WORKFLOW_ID_REUSE_POLICY_UNSPECIFIED: _ClassVar[WorkflowIdReusePolicy]
    WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE: _ClassVar[WorkflowIdReusePolicy]
    WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY: _ClassVar[WorkflowIdReusePolicy]
    WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE: _ClassVar[WorkflowIdReusePolicy]
    WORKFLOW_ID_REUSE_POLICY_TERMINATE_IF_RUNNING: _ClassVar[WorkflowIdReusePolicy]

class WorkflowIdConflictPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WORKFLOW_ID_CONFLICT_POLICY_UNSPECIFIED: _ClassVar[WorkflowIdConflictPolicy]
    WORKFLOW_ID_CONFLICT_POLICY_FAIL: _ClassVar[WorkflowIdConflictPolicy]
    WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING: _ClassVar[WorkflowIdConflictPolicy]
    WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING: _ClassVar[WorkflowIdConflictPolicy]

class ScheduleOverlapPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEDULE_OVERLAP_POLICY_UNSPECIFIED: _ClassVar[ScheduleOverlapPolicy]
    SCHEDULE_OVERLAP_POLICY_SKIP: _ClassVar[ScheduleOverlapPolicy]
    SCHEDULE_OVERLAP_POLICY_BUFFER_ONE: _ClassVar[ScheduleOverlapPolicy]
    SCHEDULE_OVERLAP_POLICY_ALLOW_ALL: _ClassVar[ScheduleOverlapPolicy]
    SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER: _ClassVar[ScheduleOverlapPolicy]
    SCHEDULE_OVERLAP_POLICY_TERMINATE_OTHER: _ClassVar[ScheduleOverlapPolicy]

class ScheduleMisfirePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEDULE_MISFIRE_POLICY_UNSPECIFIED: _ClassVar[ScheduleMisfirePolicy]
    SCHEDULE_MISFIRE_POLICY_SKIP: _ClassVar[ScheduleMisfirePolicy]
    SCHEDULE_MISFIRE_POLICY_RUN_ONCE: _ClassVar[ScheduleMisfirePolicy]
    SCHEDULE_MISFIRE_POLICY_CATCH_UP: _ClassVar[ScheduleMisfirePolicy]

class QueryResultType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    QUERY_RESULT_TYPE_UNSPECIFIED: _ClassVar[QueryResultType]
    QUERY_RESULT_TYPE_ANSWERED: _ClassVar[QueryResultType]
    QUERY_RESULT_TYPE_FAILED: _ClassVar[QueryResultType]

class TaskQueueType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_QUEUE_TYPE_UNSPECIFIED: _ClassVar[TaskQueueType]
    TASK_QUEUE_TYPE_WORKFLOW: _ClassVar[TaskQueueType]
    TASK_QUEUE_TYPE_ACTIVITY: _ClassVar[TaskQueueType]
WORKFLOW_TASK_FAILED_CAUSE_UNSPECIFIED: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_UNKNOWN_WORKFLOW_TYPE: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_BAD_COMMAND: WorkflowTaskFailedCause
WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND: WorkflowTaskFailedCause
WORKFLOW_ID_REUSE_POLICY_UNSPECIFIED: WorkflowIdReusePolicy
WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE: WorkflowIdReusePolicy
WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY: WorkflowIdReusePolicy
WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE: WorkflowIdReusePolicy
WORKFLOW_ID_REUSE_POLICY_TERMINATE_IF_RUNNING: WorkflowIdReusePolicy
WORKFLOW_ID_CONFLICT_POLICY_UNSPECIFIED: WorkflowIdConflictPolicy
WORKFLOW_ID_CONFLICT_POLICY_FAIL: WorkflowIdConflictPolicy
WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING: WorkflowIdConflictPolicy
WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING: WorkflowIdConflictPolicy
SCHEDULE_OVERLAP_POLICY_UNSPECIFIED: ScheduleOverlapPolicy
SCHEDULE_OVERLAP_POLICY_SKIP: ScheduleOverlapPolicy
SCHEDULE_OVERLAP_POLICY_BUFFER_ONE: ScheduleOverlapPolicy
SCHEDULE_OVERLAP_POLICY_ALLOW_ALL: ScheduleOverlapPolicy
SCHEDULE_OVERLAP_POLICY_CANCEL_OTHER: ScheduleOverlapPolicy
SCHEDULE_OVERLAP_POLICY_TERMINATE_OTHER: ScheduleOverlapPolicy
SCHEDULE_MISFIRE_POLICY_UNSPECIFIED: ScheduleMisfirePolicy
SCHEDULE_MISFIRE_POLICY_SKIP: ScheduleMisfirePolicy
SCHEDULE_MISFIRE_POLICY_RUN_ONCE: ScheduleMisfirePolicy
SCHEDULE_MISFIRE_POLICY_CATCH_UP: ScheduleMisfirePolicy
QUERY_RESULT_TYPE_UNSPECIFIED: QueryResultType
QUERY_RESULT_TYPE_ANSWERED: QueryResultType
QUERY_RESULT_TYPE_FAILED: QueryResultType
TASK_QUEUE_TYPE_UNSPECIFIED: TaskQueueType
TASK_QUEUE_TYPE_WORKFLOW: TaskQueueType
TASK_QUEUE_TYPE_ACTIVITY: TaskQueueType

class Namespace(_message.Message):
    __slots__ = ("name", "description", "retention", "create_time", "max_running_executions", "start_rate", "max_concurrent_activities", "last_purge_time", "purged_executions")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    START_RATE_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_ACTIVITIES_FIELD_NUMBER: _ClassVar[int]
    LAST_PURGE_TIME_FIELD_NUMBER: _ClassVar[int]
    PURGED_EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    retention: _duration_pb2.Duration
    create_time: _timestamp_pb2.Timestamp
    max_running_executions: int
    start_rate: float
    max_concurrent_activities: int
    last_purge_time: _timestamp_pb2.Timestamp
    purged_executions: int
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., retention: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., max_running_executions: _Optional[int] = ..., start_rate: _Optional[float] = ..., max_concurrent_activities: _Optional[int] = ..., last_purge_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., purged_executions: _Optional[int] = ...) -> None: ...

class RegisterNamespaceRequest(_message.Message):
    __slots__ = ("name", "description", "retention", "max_running_executions", "start_rate", "max_concurrent_activities")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    START_RATE_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_ACTIVITIES_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    retention: _duration_pb2.Duration
    max_running_executions: int
    start_rate: float
    max_concurrent_activities: int
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., retention: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., max_running_executions: _Optional[int] = ..., start_rate: _Optional[float] = ..., max_concurrent_activities: _Optional[int] = ...) -> None: ...

class UpdateNamespaceRequest(_message.Message):
    __slots__ = ("name", "description", "retention", "max_running_executions", "start_rate", "max_concurrent_activities")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    START_RATE_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_ACTIVITIES_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    retention: _duration_pb2.Duration
    max_running_executions: int
    start_rate: float
    max_concurrent_activities: int
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., retention: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., max_running_executions: _Optional[int] = ..., start_rate: _Optional[float] = ..., max_concurrent_activities: _Optional[int] = ...) -> None: ...

class UpdateNamespaceResponse(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: Namespace
    def __init__(self, namespace: _Optional[_Union[Namespace, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("namespace", "workflow_id", "workflow_type", "task_queue", "input", "request_id", "identity", "workflow_execution_timeout", "workflow_run_timeout", "workflow_task_timeout", "start_signal", "start_signal_input", "search_attributes", "memo", "header", "cron_schedule", "workflow_id_reuse_policy", "workflow_id_conflict_policy", "priority")
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
    START_SIGNAL_FIELD_NUMBER: _ClassVar[int]
    START_SIGNAL_INPUT_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    MEMO_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    CRON_SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_REUSE_POLICY_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_CONFLICT_POLICY_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
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
    start_signal: str
    start_signal_input: _common_pb2.Payloads
    search_attributes: _common_pb2.SearchAttributes
    memo: _common_pb2.Memo
    header: _common_pb2.Header
    cron_schedule: str
    workflow_id_reuse_policy: WorkflowIdReusePolicy
    workflow_id_conflict_policy: WorkflowIdConflictPolicy
    priority: _common_pb2.Priority
    def __init__(self, namespace: _Optional[str] = ..., workflow_id: _Optional[str] = ..., workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., request_id: _Optional[str] = ..., identity: _Optional[str] = ..., workflow_execution_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., workflow_run_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., workflow_task_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., start_signal: _Optional[str] = ..., start_signal_input: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., search_attributes: _Optional[_Union[_common_pb2.SearchAttributes, _Mapping]] = ..., memo: _Optional[_Union[_common_pb2.Memo, _Mapping]] = ..., header: _Optional[_Union[_common_pb2.Header, _Mapping]] = ..., cron_schedule: _Optional[str] = ..., workflow_id_reuse_policy: _Optional[_Union[WorkflowIdReusePolicy, str]] = ..., workflow_id_conflict_policy: _Optional[_Union[WorkflowIdConflictPolicy, str]] = ..., priority: _Optional[_Union[_common_pb2.Priority, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("activity_id", "activity_type", "state", "attempt", "last_heartbeat_time", "next_attempt_schedule_time", "last_failure", "last_worker_identity", "waiting_reason")
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_TIME_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_SCHEDULE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_FAILURE_FIELD_NUMBER: _ClassVar[int]
    LAST_WORKER_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    WAITING_REASON_FIELD_NUMBER: _ClassVar[int]
    activity_id: str
    activity_type: str
    state: str
    attempt: int
    last_heartbeat_time: _timestamp_pb2.Timestamp
    next_attempt_schedule_time: _timestamp_pb2.Timestamp
    last_failure: _common_pb2.Failure
    last_worker_identity: str
    waiting_reason: str
    def __init__(self, activity_id: _Optional[str] = ..., activity_type: _Optional[str] = ..., state: _Optional[str] = ..., attempt: _Optional[int] = ..., last_heartbeat_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., next_attempt_schedule_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_failure: _Optional[_Union[_common_pb2.Failure, _Mapping]] = ..., last_worker_identity: _Optional[str] = ..., waiting_reason: _Optional[str] = ...) -> None: ...

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
    __slots__ = ("execution", "workflow_type", "task_queue", "status", "start_time", "close_time", "history_length", "pending_activities", "pending_workflow_task", "dag", "origin_json", "first_worker_build_id", "search_attributes", "memo", "pending_children", "parent_execution", "continued_execution_run_id", "activity_attempts", "pause")
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
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    MEMO_FIELD_NUMBER: _ClassVar[int]
    PENDING_CHILDREN_FIELD_NUMBER: _ClassVar[int]
    PARENT_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    CONTINUED_EXECUTION_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    PAUSE_FIELD_NUMBER: _ClassVar[int]
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
    search_attributes: _common_pb2.SearchAttributes
    memo: _common_pb2.Memo
    pending_children: _containers.RepeatedCompositeFieldContainer[PendingChildExecution]
    parent_execution: _common_pb2.WorkflowExecution
    continued_execution_run_id: str
    activity_attempts: _containers.RepeatedCompositeFieldContainer[_dead_letters_pb2.ActivityAttempt]
    pause: _remediation_pb2.PauseInfo
    def __init__(self, execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.WorkflowExecutionStatus, str]] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., close_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., history_length: _Optional[int] = ..., pending_activities: _Optional[_Iterable[_Union[PendingActivity, _Mapping]]] = ..., pending_workflow_task: _Optional[_Union[PendingWorkflowTask, _Mapping]] = ..., dag: _Optional[_Iterable[_Union[DagNode, _Mapping]]] = ..., origin_json: _Optional[str] = ..., first_worker_build_id: _Optional[str] = ..., search_attributes: _Optional[_Union[_common_pb2.SearchAttributes, _Mapping]] = ..., memo: _Optional[_Union[_common_pb2.Memo, _Mapping]] = ..., pending_children: _Optional[_Iterable[_Union[PendingChildExecution, _Mapping]]] = ..., parent_execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., continued_execution_run_id: _Optional[str] = ..., activity_attempts: _Optional[_Iterable[_Union[_dead_letters_pb2.ActivityAttempt, _Mapping]]] = ..., pause: _Optional[_Union[_remediation_pb2.PauseInfo, _Mapping]] = ...) -> None: ...

class PendingChildExecution(_message.Message):
    __slots__ = ("workflow_id", "run_id", "workflow_type", "initiated_event_id", "parent_close_policy")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_CLOSE_POLICY_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    run_id: str
    workflow_type: str
    initiated_event_id: int
    parent_close_policy: _common_pb2.ParentClosePolicy
    def __init__(self, workflow_id: _Optional[str] = ..., run_id: _Optional[str] = ..., workflow_type: _Optional[str] = ..., initiated_event_id: _Optional[int] = ..., parent_close_policy: _Optional[_Union[_common_pb2.ParentClosePolicy, str]] = ...) -> None: ...

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
    __slots__ = ("execution", "workflow_type", "task_queue", "status", "start_time", "close_time", "history_length", "search_attributes", "memo")
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    CLOSE_TIME_FIELD_NUMBER: _ClassVar[int]
    HISTORY_LENGTH_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    MEMO_FIELD_NUMBER: _ClassVar[int]
    execution: _common_pb2.WorkflowExecution
    workflow_type: str
    task_queue: str
    status: _common_pb2.WorkflowExecutionStatus
    start_time: _timestamp_pb2.Timestamp
    close_time: _timestamp_pb2.Timestamp
    history_length: int
    search_attributes: _common_pb2.SearchAttributes
    memo: _common_pb2.Memo
    def __init__(self, execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.WorkflowExecutionStatus, str]] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., close_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., history_length: _Optional[int] = ..., search_attributes: _Optional[_Union[_common_pb2.SearchAttributes, _Mapping]] = ..., memo: _Optional[_Union[_common_pb2.Memo, _Mapping]] = ...) -> None: ...

class ListWorkflowExecutionsRequest(_message.Message):
    __slots__ = ("namespace", "page_size", "next_page_token", "status", "workflow_type", "workflow_id", "query")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    page_size: int
    next_page_token: bytes
    status: _common_pb2.WorkflowExecutionStatus
    workflow_type: str
    workflow_id: str
    query: str
    def __init__(self, namespace: _Optional[str] = ..., page_size: _Optional[int] = ..., next_page_token: _Optional[bytes] = ..., status: _Optional[_Union[_common_pb2.WorkflowExecutionStatus, str]] = ..., workflow_type: _Optional[str] = ..., workflow_id: _Optional[str] = ..., query: _Optional[str] = ...) -> None: ...

class ListWorkflowExecutionsResponse(_message.Message):
    __slots__ = ("executions", "next_page_token")
    EXECUTIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    executions: _containers.RepeatedCompositeFieldContainer[WorkflowExecutionInfo]
    next_page_token: bytes
    def __init__(self, executions: _Optional[_Iterable[_Union[WorkflowExecutionInfo, _Mapping]]] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class SignalWorkflowExecutionRequest(_message.Message):
    __slots__ = ("namespace", "execution", "signal_name", "input", "identity", "request_id", "header")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: _common_pb2.WorkflowExecution
    signal_name: str
    input: _common_pb2.Payloads
    identity: str
    request_id: str
    header: _common_pb2.Header
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., signal_name: _Optional[str] = ..., input: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., identity: _Optional[str] = ..., request_id: _Optional[str] = ..., header: _Optional[_Union[_common_pb2.Header, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("task_token", "workflow_execution", "workflow_type", "history", "attempt", "task_queue", "query")
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    task_token: bytes
    workflow_execution: _common_pb2.WorkflowExecution
    workflow_type: str
    history: _containers.RepeatedCompositeFieldContainer[_common_pb2.HistoryEvent]
    attempt: int
    task_queue: str
    query: WorkflowQuery
    def __init__(self, task_token: _Optional[bytes] = ..., workflow_execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., history: _Optional[_Iterable[_Union[_common_pb2.HistoryEvent, _Mapping]]] = ..., attempt: _Optional[int] = ..., task_queue: _Optional[str] = ..., query: _Optional[_Union[WorkflowQuery, _Mapping]] = ...) -> None: ...

class RespondWorkflowTaskCompletedRequest(_message.Message):
    __slots__ = ("namespace", "task_token", "commands", "identity", "eager_activity_slots", "worker_build_id", "return_new_workflow_task", "cached_event_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    EAGER_ACTIVITY_SLOTS_FIELD_NUMBER: _ClassVar[int]
    WORKER_BUILD_ID_FIELD_NUMBER: _ClassVar[int]
    RETURN_NEW_WORKFLOW_TASK_FIELD_NUMBER: _ClassVar[int]
    CACHED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_token: bytes
    commands: _containers.RepeatedCompositeFieldContainer[_command_pb2.Command]
    identity: str
    eager_activity_slots: int
    worker_build_id: str
    return_new_workflow_task: bool
    cached_event_id: int
    def __init__(self, namespace: _Optional[str] = ..., task_token: _Optional[bytes] = ..., commands: _Optional[_Iterable[_Union[_command_pb2.Command, _Mapping]]] = ..., identity: _Optional[str] = ..., eager_activity_slots: _Optional[int] = ..., worker_build_id: _Optional[str] = ..., return_new_workflow_task: _Optional[bool] = ..., cached_event_id: _Optional[int] = ...) -> None: ...

class RespondWorkflowTaskCompletedResponse(_message.Message):
    __slots__ = ("activity_tasks", "workflow_task", "appended_events")
    ACTIVITY_TASKS_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_FIELD_NUMBER: _ClassVar[int]
    APPENDED_EVENTS_FIELD_NUMBER: _ClassVar[int]
    activity_tasks: _containers.RepeatedCompositeFieldContainer[PollActivityTaskQueueResponse]
    workflow_task: PollWorkflowTaskQueueResponse
    appended_events: _containers.RepeatedCompositeFieldContainer[_common_pb2.HistoryEvent]
    def __init__(self, activity_tasks: _Optional[_Iterable[_Union[PollActivityTaskQueueResponse, _Mapping]]] = ..., workflow_task: _Optional[_Union[PollWorkflowTaskQueueResponse, _Mapping]] = ..., appended_events: _Optional[_Iterable[_Union[_common_pb2.HistoryEvent, _Mapping]]] = ...) -> None: ...

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
    __slots__ = ("task_token", "workflow_execution", "workflow_type", "activity_id", "activity_type", "input", "attempt", "idempotency_key", "heartbeat_details", "scheduled_time", "started_time", "start_to_close_timeout", "heartbeat_timeout", "schedule_to_close_timeout", "task_queue", "header")
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
    HEADER_FIELD_NUMBER: _ClassVar[int]
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
    header: _common_pb2.Header
    def __init__(self, task_token: _Optional[bytes] = ..., workflow_execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., activity_id: _Optional[str] = ..., activity_type: _Optional[str] = ..., input: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., attempt: _Optional[int] = ..., idempotency_key: _Optional[str] = ..., heartbeat_details: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., scheduled_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., started_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., start_to_close_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., heartbeat_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., schedule_to_close_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., task_queue: _Optional[str] = ..., header: _Optional[_Union[_common_pb2.Header, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("namespace", "task_token", "result", "identity", "eager_workflow_task_queue", "eager_workflow_task_cached_event_id", "folded_workflow_task")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    EAGER_WORKFLOW_TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    EAGER_WORKFLOW_TASK_CACHED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    FOLDED_WORKFLOW_TASK_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_token: bytes
    result: _common_pb2.Payloads
    identity: str
    eager_workflow_task_queue: str
    eager_workflow_task_cached_event_id: int
    folded_workflow_task: FoldedWorkflowTask
    def __init__(self, namespace: _Optional[str] = ..., task_token: _Optional[bytes] = ..., result: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., identity: _Optional[str] = ..., eager_workflow_task_queue: _Optional[str] = ..., eager_workflow_task_cached_event_id: _Optional[int] = ..., folded_workflow_task: _Optional[_Union[FoldedWorkflowTask, _Mapping]] = ...) -> None: ...

class FoldedWorkflowTask(_message.Message):
    __slots__ = ("last_event_id", "started_time", "completion")
    LAST_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_TIME_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_FIELD_NUMBER: _ClassVar[int]
    last_event_id: int
    started_time: _timestamp_pb2.Timestamp
    completion: RespondWorkflowTaskCompletedRequest
    def __init__(self, last_event_id: _Optional[int] = ..., started_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., completion: _Optional[_Union[RespondWorkflowTaskCompletedRequest, _Mapping]] = ...) -> None: ...

class RespondActivityTaskCompletedResponse(_message.Message):
    __slots__ = ("workflow_task", "workflow_task_folded", "folded_workflow_task_completed")
    WORKFLOW_TASK_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_FOLDED_FIELD_NUMBER: _ClassVar[int]
    FOLDED_WORKFLOW_TASK_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    workflow_task: PollWorkflowTaskQueueResponse
    workflow_task_folded: bool
    folded_workflow_task_completed: RespondWorkflowTaskCompletedResponse
    def __init__(self, workflow_task: _Optional[_Union[PollWorkflowTaskQueueResponse, _Mapping]] = ..., workflow_task_folded: _Optional[bool] = ..., folded_workflow_task_completed: _Optional[_Union[RespondWorkflowTaskCompletedResponse, _Mapping]] = ...) -> None: ...

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

class GetActivityTaskTokenRequest(_message.Message):
    __slots__ = ("namespace", "execution", "activity_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: _common_pb2.WorkflowExecution
    activity_id: str
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., activity_id: _Optional[str] = ...) -> None: ...

class GetActivityTaskTokenResponse(_message.Message):
    __slots__ = ("task_token",)
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    task_token: bytes
    def __init__(self, task_token: _Optional[bytes] = ...) -> None: ...

class ScheduleIntervalSpec(_message.Message):
    __slots__ = ("every", "offset")
    EVERY_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    every: _duration_pb2.Duration
    offset: _duration_pb2.Duration
    def __init__(self, every: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., offset: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ScheduleSpec(_message.Message):
    __slots__ = ("cron_expressions", "intervals", "time_zone_name")
    CRON_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    INTERVALS_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_NAME_FIELD_NUMBER: _ClassVar[int]
    cron_expressions: _containers.RepeatedScalarFieldContainer[str]
    intervals: _containers.RepeatedCompositeFieldContainer[ScheduleIntervalSpec]
    time_zone_name: str
    def __init__(self, cron_expressions: _Optional[_Iterable[str]] = ..., intervals: _Optional[_Iterable[_Union[ScheduleIntervalSpec, _Mapping]]] = ..., time_zone_name: _Optional[str] = ...) -> None: ...

class ScheduleActionStartWorkflow(_message.Message):
    __slots__ = ("workflow_id", "workflow_type", "task_queue", "input", "workflow_execution_timeout", "workflow_run_timeout", "workflow_task_timeout", "search_attributes", "memo")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_RUN_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    MEMO_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    workflow_type: str
    task_queue: str
    input: _common_pb2.Payloads
    workflow_execution_timeout: _duration_pb2.Duration
    workflow_run_timeout: _duration_pb2.Duration
    workflow_task_timeout: _duration_pb2.Duration
    search_attributes: _common_pb2.SearchAttributes
    memo: _common_pb2.Memo
    def __init__(self, workflow_id: _Optional[str] = ..., workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., workflow_execution_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., workflow_run_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., workflow_task_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., search_attributes: _Optional[_Union[_common_pb2.SearchAttributes, _Mapping]] = ..., memo: _Optional[_Union[_common_pb2.Memo, _Mapping]] = ...) -> None: ...

class SchedulePolicy(_message.Message):
    __slots__ = ("overlap", "catchup_window", "misfire")
    OVERLAP_FIELD_NUMBER: _ClassVar[int]
    CATCHUP_WINDOW_FIELD_NUMBER: _ClassVar[int]
    MISFIRE_FIELD_NUMBER: _ClassVar[int]
    overlap: ScheduleOverlapPolicy
    catchup_window: _duration_pb2.Duration
    misfire: ScheduleMisfirePolicy
    def __init__(self, overlap: _Optional[_Union[ScheduleOverlapPolicy, str]] = ..., catchup_window: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., misfire: _Optional[_Union[ScheduleMisfirePolicy, str]] = ...) -> None: ...

class ScheduleState(_message.Message):
    __slots__ = ("paused", "note")
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    paused: bool
    note: str
    def __init__(self, paused: _Optional[bool] = ..., note: _Optional[str] = ...) -> None: ...

class Schedule(_message.Message):
    __slots__ = ("spec", "action", "policy", "state")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    spec: ScheduleSpec
    action: ScheduleActionStartWorkflow
    policy: SchedulePolicy
    state: ScheduleState
    def __init__(self, spec: _Optional[_Union[ScheduleSpec, _Mapping]] = ..., action: _Optional[_Union[ScheduleActionStartWorkflow, _Mapping]] = ..., policy: _Optional[_Union[SchedulePolicy, _Mapping]] = ..., state: _Optional[_Union[ScheduleState, _Mapping]] = ...) -> None: ...

class ScheduleActionResult(_message.Message):
    __slots__ = ("nominal_time", "actual_time", "execution", "trigger")
    NOMINAL_TIME_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_TIME_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    nominal_time: _timestamp_pb2.Timestamp
    actual_time: _timestamp_pb2.Timestamp
    execution: _common_pb2.WorkflowExecution
    trigger: str
    def __init__(self, nominal_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., actual_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., trigger: _Optional[str] = ...) -> None: ...

class ScheduleInfo(_message.Message):
    __slots__ = ("action_count", "skipped_count", "missed_count", "running_workflows", "recent_actions", "next_action_times", "buffered_count", "create_time", "update_time")
    ACTION_COUNT_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_COUNT_FIELD_NUMBER: _ClassVar[int]
    MISSED_COUNT_FIELD_NUMBER: _ClassVar[int]
    RUNNING_WORKFLOWS_FIELD_NUMBER: _ClassVar[int]
    RECENT_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_ACTION_TIMES_FIELD_NUMBER: _ClassVar[int]
    BUFFERED_COUNT_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    action_count: int
    skipped_count: int
    missed_count: int
    running_workflows: _containers.RepeatedCompositeFieldContainer[_common_pb2.WorkflowExecution]
    recent_actions: _containers.RepeatedCompositeFieldContainer[ScheduleActionResult]
    next_action_times: _containers.RepeatedCompositeFieldContainer[_timestamp_pb2.Timestamp]
    buffered_count: int
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, action_count: _Optional[int] = ..., skipped_count: _Optional[int] = ..., missed_count: _Optional[int] = ..., running_workflows: _Optional[_Iterable[_Union[_common_pb2.WorkflowExecution, _Mapping]]] = ..., recent_actions: _Optional[_Iterable[_Union[ScheduleActionResult, _Mapping]]] = ..., next_action_times: _Optional[_Iterable[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]]] = ..., buffered_count: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateScheduleRequest(_message.Message):
    __slots__ = ("namespace", "schedule_id", "schedule", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    schedule_id: str
    schedule: Schedule
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., schedule_id: _Optional[str] = ..., schedule: _Optional[_Union[Schedule, _Mapping]] = ..., identity: _Optional[str] = ...) -> None: ...

class CreateScheduleResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DescribeScheduleRequest(_message.Message):
    __slots__ = ("namespace", "schedule_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    schedule_id: str
    def __init__(self, namespace: _Optional[str] = ..., schedule_id: _Optional[str] = ...) -> None: ...

class DescribeScheduleResponse(_message.Message):
    __slots__ = ("schedule", "info")
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    info: ScheduleInfo
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ..., info: _Optional[_Union[ScheduleInfo, _Mapping]] = ...) -> None: ...

class ListSchedulesRequest(_message.Message):
    __slots__ = ("namespace", "page_size", "next_page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    page_size: int
    next_page_token: bytes
    def __init__(self, namespace: _Optional[str] = ..., page_size: _Optional[int] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class ScheduleListEntry(_message.Message):
    __slots__ = ("schedule_id", "schedule", "info")
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    schedule_id: str
    schedule: Schedule
    info: ScheduleInfo
    def __init__(self, schedule_id: _Optional[str] = ..., schedule: _Optional[_Union[Schedule, _Mapping]] = ..., info: _Optional[_Union[ScheduleInfo, _Mapping]] = ...) -> None: ...

class ListSchedulesResponse(_message.Message):
    __slots__ = ("schedules", "next_page_token")
    SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    schedules: _containers.RepeatedCompositeFieldContainer[ScheduleListEntry]
    next_page_token: bytes
    def __init__(self, schedules: _Optional[_Iterable[_Union[ScheduleListEntry, _Mapping]]] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class ScheduleTrigger(_message.Message):
    __slots__ = ("overlap",)
    OVERLAP_FIELD_NUMBER: _ClassVar[int]
    overlap: ScheduleOverlapPolicy
    def __init__(self, overlap: _Optional[_Union[ScheduleOverlapPolicy, str]] = ...) -> None: ...

class ScheduleBackfill(_message.Message):
    __slots__ = ("start_time", "end_time", "overlap")
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_FIELD_NUMBER: _ClassVar[int]
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    overlap: ScheduleOverlapPolicy
    def __init__(self, start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., overlap: _Optional[_Union[ScheduleOverlapPolicy, str]] = ...) -> None: ...

class PatchScheduleRequest(_message.Message):
    __slots__ = ("namespace", "schedule_id", "pause", "unpause", "note", "trigger", "backfills", "identity", "schedule")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    PAUSE_FIELD_NUMBER: _ClassVar[int]
    UNPAUSE_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    BACKFILLS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    schedule_id: str
    pause: bool
    unpause: bool
    note: str
    trigger: ScheduleTrigger
    backfills: _containers.RepeatedCompositeFieldContainer[ScheduleBackfill]
    identity: str
    schedule: Schedule
    def __init__(self, namespace: _Optional[str] = ..., schedule_id: _Optional[str] = ..., pause: _Optional[bool] = ..., unpause: _Optional[bool] = ..., note: _Optional[str] = ..., trigger: _Optional[_Union[ScheduleTrigger, _Mapping]] = ..., backfills: _Optional[_Iterable[_Union[ScheduleBackfill, _Mapping]]] = ..., identity: _Optional[str] = ..., schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class PatchScheduleResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeleteScheduleRequest(_message.Message):
    __slots__ = ("namespace", "schedule_id", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    schedule_id: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., schedule_id: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class DeleteScheduleResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetSchedulerStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SchedulerLeaderChange(_message.Message):
    __slots__ = ("time", "event", "fencing_token", "holder")
    TIME_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    time: _timestamp_pb2.Timestamp
    event: str
    fencing_token: int
    holder: str
    def __init__(self, time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., event: _Optional[str] = ..., fencing_token: _Optional[int] = ..., holder: _Optional[str] = ...) -> None: ...

class GetSchedulerStatusResponse(_message.Message):
    __slots__ = ("leader_identity", "fencing_token", "leader_since", "lease_expire_time", "replica_identity", "replica_is_leader", "replica_rejected_writes", "replica_leader_changes")
    LEADER_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LEADER_SINCE_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    REPLICA_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REPLICA_IS_LEADER_FIELD_NUMBER: _ClassVar[int]
    REPLICA_REJECTED_WRITES_FIELD_NUMBER: _ClassVar[int]
    REPLICA_LEADER_CHANGES_FIELD_NUMBER: _ClassVar[int]
    leader_identity: str
    fencing_token: int
    leader_since: _timestamp_pb2.Timestamp
    lease_expire_time: _timestamp_pb2.Timestamp
    replica_identity: str
    replica_is_leader: bool
    replica_rejected_writes: int
    replica_leader_changes: _containers.RepeatedCompositeFieldContainer[SchedulerLeaderChange]
    def __init__(self, leader_identity: _Optional[str] = ..., fencing_token: _Optional[int] = ..., leader_since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., lease_expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., replica_identity: _Optional[str] = ..., replica_is_leader: _Optional[bool] = ..., replica_rejected_writes: _Optional[int] = ..., replica_leader_changes: _Optional[_Iterable[_Union[SchedulerLeaderChange, _Mapping]]] = ...) -> None: ...

class WorkflowQuery(_message.Message):
    __slots__ = ("query_type", "query_args")
    QUERY_TYPE_FIELD_NUMBER: _ClassVar[int]
    QUERY_ARGS_FIELD_NUMBER: _ClassVar[int]
    query_type: str
    query_args: _common_pb2.Payloads
    def __init__(self, query_type: _Optional[str] = ..., query_args: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ...) -> None: ...

class QueryWorkflowRequest(_message.Message):
    __slots__ = ("namespace", "execution", "query")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: _common_pb2.WorkflowExecution
    query: WorkflowQuery
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., query: _Optional[_Union[WorkflowQuery, _Mapping]] = ...) -> None: ...

class QueryWorkflowResponse(_message.Message):
    __slots__ = ("query_result",)
    QUERY_RESULT_FIELD_NUMBER: _ClassVar[int]
    query_result: _common_pb2.Payloads
    def __init__(self, query_result: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ...) -> None: ...

class RespondQueryTaskCompletedRequest(_message.Message):
    __slots__ = ("namespace", "task_token", "completed_type", "query_result", "error_message", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_TOKEN_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_TYPE_FIELD_NUMBER: _ClassVar[int]
    QUERY_RESULT_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_token: bytes
    completed_type: QueryResultType
    query_result: _common_pb2.Payloads
    error_message: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., task_token: _Optional[bytes] = ..., completed_type: _Optional[_Union[QueryResultType, str]] = ..., query_result: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., error_message: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class RespondQueryTaskCompletedResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AddSearchAttributesRequest(_message.Message):
    __slots__ = ("namespace", "search_attributes")
    class SearchAttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _common_pb2.IndexedValueType
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_common_pb2.IndexedValueType, str]] = ...) -> None: ...
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    search_attributes: _containers.ScalarMap[str, _common_pb2.IndexedValueType]
    def __init__(self, namespace: _Optional[str] = ..., search_attributes: _Optional[_Mapping[str, _common_pb2.IndexedValueType]] = ...) -> None: ...

class AddSearchAttributesResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSearchAttributesRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class ListSearchAttributesResponse(_message.Message):
    __slots__ = ("custom_attributes", "system_attributes")
    class CustomAttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _common_pb2.IndexedValueType
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_common_pb2.IndexedValueType, str]] = ...) -> None: ...
    class SystemAttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _common_pb2.IndexedValueType
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_common_pb2.IndexedValueType, str]] = ...) -> None: ...
    CUSTOM_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    custom_attributes: _containers.ScalarMap[str, _common_pb2.IndexedValueType]
    system_attributes: _containers.ScalarMap[str, _common_pb2.IndexedValueType]
    def __init__(self, custom_attributes: _Optional[_Mapping[str, _common_pb2.IndexedValueType]] = ..., system_attributes: _Optional[_Mapping[str, _common_pb2.IndexedValueType]] = ...) -> None: ...

class CountWorkflowExecutionsRequest(_message.Message):
    __slots__ = ("namespace", "query")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    query: str
    def __init__(self, namespace: _Optional[str] = ..., query: _Optional[str] = ...) -> None: ...

class CountWorkflowExecutionsResponse(_message.Message):
    __slots__ = ("count",)
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...

class DescribeTaskQueueRequest(_message.Message):
    __slots__ = ("namespace", "task_queue")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_queue: str
    def __init__(self, namespace: _Optional[str] = ..., task_queue: _Optional[str] = ...) -> None: ...

class TaskQueuePoller(_message.Message):
    __slots__ = ("identity", "task_queue_type", "last_access_time")
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_TYPE_FIELD_NUMBER: _ClassVar[int]
    LAST_ACCESS_TIME_FIELD_NUMBER: _ClassVar[int]
    identity: str
    task_queue_type: TaskQueueType
    last_access_time: _timestamp_pb2.Timestamp
    def __init__(self, identity: _Optional[str] = ..., task_queue_type: _Optional[_Union[TaskQueueType, str]] = ..., last_access_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TaskQueueBacklog(_message.Message):
    __slots__ = ("task_queue_type", "ready_tasks", "oldest_task_age", "dispatch_rate")
    TASK_QUEUE_TYPE_FIELD_NUMBER: _ClassVar[int]
    READY_TASKS_FIELD_NUMBER: _ClassVar[int]
    OLDEST_TASK_AGE_FIELD_NUMBER: _ClassVar[int]
    DISPATCH_RATE_FIELD_NUMBER: _ClassVar[int]
    task_queue_type: TaskQueueType
    ready_tasks: int
    oldest_task_age: _duration_pb2.Duration
    dispatch_rate: float
    def __init__(self, task_queue_type: _Optional[_Union[TaskQueueType, str]] = ..., ready_tasks: _Optional[int] = ..., oldest_task_age: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., dispatch_rate: _Optional[float] = ...) -> None: ...

class DescribeTaskQueueResponse(_message.Message):
    __slots__ = ("pollers", "backlogs")
    POLLERS_FIELD_NUMBER: _ClassVar[int]
    BACKLOGS_FIELD_NUMBER: _ClassVar[int]
    pollers: _containers.RepeatedCompositeFieldContainer[TaskQueuePoller]
    backlogs: _containers.RepeatedCompositeFieldContainer[TaskQueueBacklog]
    def __init__(self, pollers: _Optional[_Iterable[_Union[TaskQueuePoller, _Mapping]]] = ..., backlogs: _Optional[_Iterable[_Union[TaskQueueBacklog, _Mapping]]] = ...) -> None: ...

class WorkerStreamRequest(_message.Message):
    __slots__ = ("hello", "returned_task_tokens", "credits", "stop_tasks", "reports")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    RETURNED_TASK_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CREDITS_FIELD_NUMBER: _ClassVar[int]
    STOP_TASKS_FIELD_NUMBER: _ClassVar[int]
    REPORTS_FIELD_NUMBER: _ClassVar[int]
    hello: WorkerStreamHello
    returned_task_tokens: _containers.RepeatedScalarFieldContainer[bytes]
    credits: _containers.RepeatedCompositeFieldContainer[TaskCredit]
    stop_tasks: bool
    reports: _containers.RepeatedCompositeFieldContainer[WorkerReport]
    def __init__(self, hello: _Optional[_Union[WorkerStreamHello, _Mapping]] = ..., returned_task_tokens: _Optional[_Iterable[bytes]] = ..., credits: _Optional[_Iterable[_Union[TaskCredit, _Mapping]]] = ..., stop_tasks: _Optional[bool] = ..., reports: _Optional[_Iterable[_Union[WorkerReport, _Mapping]]] = ...) -> None: ...

class WorkerStreamHello(_message.Message):
    __slots__ = ("namespace", "identity", "worker_build_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    WORKER_BUILD_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    identity: str
    worker_build_id: str
    def __init__(self, namespace: _Optional[str] = ..., identity: _Optional[str] = ..., worker_build_id: _Optional[str] = ...) -> None: ...

class TaskCredit(_message.Message):
    __slots__ = ("task_queue", "task_queue_type", "count")
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_TYPE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    task_queue: str
    task_queue_type: TaskQueueType
    count: int
    def __init__(self, task_queue: _Optional[str] = ..., task_queue_type: _Optional[_Union[TaskQueueType, str]] = ..., count: _Optional[int] = ...) -> None: ...

class WorkerReport(_message.Message):
    __slots__ = ("id", "workflow_task_completed", "workflow_task_failed", "query_task_completed", "activity_task_heartbeat", "activity_task_completed", "activity_task_failed", "activity_task_canceled")
    ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_FAILED_FIELD_NUMBER: _ClassVar[int]
    QUERY_TASK_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_FAILED_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_CANCELED_FIELD_NUMBER: _ClassVar[int]
    id: int
    workflow_task_completed: RespondWorkflowTaskCompletedRequest
    workflow_task_failed: RespondWorkflowTaskFailedRequest
    query_task_completed: RespondQueryTaskCompletedRequest
    activity_task_heartbeat: RecordActivityTaskHeartbeatRequest
    activity_task_completed: RespondActivityTaskCompletedRequest
    activity_task_failed: RespondActivityTaskFailedRequest
    activity_task_canceled: RespondActivityTaskCanceledRequest
    def __init__(self, id: _Optional[int] = ..., workflow_task_completed: _Optional[_Union[RespondWorkflowTaskCompletedRequest, _Mapping]] = ..., workflow_task_failed: _Optional[_Union[RespondWorkflowTaskFailedRequest, _Mapping]] = ..., query_task_completed: _Optional[_Union[RespondQueryTaskCompletedRequest, _Mapping]] = ..., activity_task_heartbeat: _Optional[_Union[RecordActivityTaskHeartbeatRequest, _Mapping]] = ..., activity_task_completed: _Optional[_Union[RespondActivityTaskCompletedRequest, _Mapping]] = ..., activity_task_failed: _Optional[_Union[RespondActivityTaskFailedRequest, _Mapping]] = ..., activity_task_canceled: _Optional[_Union[RespondActivityTaskCanceledRequest, _Mapping]] = ...) -> None: ...

class WorkerStreamResponse(_message.Message):
    __slots__ = ("tasks", "results", "tasks_stopped")
    TASKS_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    TASKS_STOPPED_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[PushedTask]
    results: _containers.RepeatedCompositeFieldContainer[WorkerReportResult]
    tasks_stopped: bool
    def __init__(self, tasks: _Optional[_Iterable[_Union[PushedTask, _Mapping]]] = ..., results: _Optional[_Iterable[_Union[WorkerReportResult, _Mapping]]] = ..., tasks_stopped: _Optional[bool] = ...) -> None: ...

class PushedTask(_message.Message):
    __slots__ = ("task_queue", "workflow_task", "activity_task")
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_FIELD_NUMBER: _ClassVar[int]
    task_queue: str
    workflow_task: PollWorkflowTaskQueueResponse
    activity_task: PollActivityTaskQueueResponse
    def __init__(self, task_queue: _Optional[str] = ..., workflow_task: _Optional[_Union[PollWorkflowTaskQueueResponse, _Mapping]] = ..., activity_task: _Optional[_Union[PollActivityTaskQueueResponse, _Mapping]] = ...) -> None: ...

class WorkerReportResult(_message.Message):
    __slots__ = ("id", "status_code", "status_message", "workflow_task_completed", "workflow_task_failed", "query_task_completed", "activity_task_heartbeat", "activity_task_completed", "activity_task_failed", "activity_task_canceled")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_CODE_FIELD_NUMBER: _ClassVar[int]
    STATUS_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_FAILED_FIELD_NUMBER: _ClassVar[int]
    QUERY_TASK_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_FAILED_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TASK_CANCELED_FIELD_NUMBER: _ClassVar[int]
    id: int
    status_code: int
    status_message: str
    workflow_task_completed: RespondWorkflowTaskCompletedResponse
    workflow_task_failed: RespondWorkflowTaskFailedResponse
    query_task_completed: RespondQueryTaskCompletedResponse
    activity_task_heartbeat: RecordActivityTaskHeartbeatResponse
    activity_task_completed: RespondActivityTaskCompletedResponse
    activity_task_failed: RespondActivityTaskFailedResponse
    activity_task_canceled: RespondActivityTaskCanceledResponse
    def __init__(self, id: _Optional[int] = ..., status_code: _Optional[int] = ..., status_message: _Optional[str] = ..., workflow_task_completed: _Optional[_Union[RespondWorkflowTaskCompletedResponse, _Mapping]] = ..., workflow_task_failed: _Optional[_Union[RespondWorkflowTaskFailedResponse, _Mapping]] = ..., query_task_completed: _Optional[_Union[RespondQueryTaskCompletedResponse, _Mapping]] = ..., activity_task_heartbeat: _Optional[_Union[RecordActivityTaskHeartbeatResponse, _Mapping]] = ..., activity_task_completed: _Optional[_Union[RespondActivityTaskCompletedResponse, _Mapping]] = ..., activity_task_failed: _Optional[_Union[RespondActivityTaskFailedResponse, _Mapping]] = ..., activity_task_canceled: _Optional[_Union[RespondActivityTaskCanceledResponse, _Mapping]] = ...) -> None: ...
