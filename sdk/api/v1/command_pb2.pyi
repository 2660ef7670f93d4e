import datetime

from flowforge.api.v1 import common_pb2 as _common_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Command(_message.Message):
    __slots__ = ("schedule_activity_task", "start_timer", "cancel_timer", "request_cancel_activity_task", "complete_workflow_execution", "fail_workflow_execution", "cancel_workflow_execution", "record_marker", "upsert_workflow_search_attributes", "start_child_workflow_execution", "request_cancel_external_workflow_execution", "continue_as_new_workflow_execution", "signal_external_workflow_execution")
    SCHEDULE_ACTIVITY_TASK_FIELD_NUMBER: _ClassVar[int]
    START_TIMER_FIELD_NUMBER: _ClassVar[int]
    CANCEL_TIMER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_CANCEL_ACTIVITY_TASK_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    FAIL_WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    CANCEL_WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    RECORD_MARKER_FIELD_NUMBER: _ClassVar[int]
    UPSERT_WORKFLOW_SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    START_CHILD_WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    CONTINUE_AS_NEW_WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    schedule_activity_task: ScheduleActivityTaskCommandAttributes
    start_timer: StartTimerCommandAttributes
    cancel_timer: CancelTimerCommandAttributes
    request_cancel_activity_task: RequestCancelActivityTaskCommandAttributes
    complete_workflow_execution: CompleteWorkflowExecutionCommandAttributes
    fail_workflow_execution: FailWorkflowExecutionCommandAttributes
    cancel_workflow_execution: CancelWorkflowExecutionCommandAttributes
    record_marker: RecordMarkerCommandAttributes
    upsert_workflow_search_attributes: UpsertWorkflowSearchAttributesCommandAttributes
    start_child_workflow_execution: StartChildWorkflowExecutionCommandAttributes
    request_cancel_external_workflow_execution: RequestCancelExternalWorkflowExecutionCommandAttributes
    continue_as_new_workflow_execution: ContinueAsNewWorkflowExecutionCommandAttributes
    signal_external_workflow_execution: SignalExternalWorkflowExecutionCommandAttributes
    def __init__(self, schedule_activity_task: _Optional[_Union[ScheduleActivityTaskCommandAttributes, _Mapping]] = ..., start_timer: _Optional[_Union[StartTimerCommandAttributes, _Mapping]] = ..., cancel_timer: _Optional[_Union[CancelTimerCommandAttributes, _Mapping]] = ..., request_cancel_activity_task: _Optional[_Union[RequestCancelActivityTaskCommandAttributes, _Mapping]] = ..., complete_workflow_execution: _Optional[_Union[CompleteWorkflowExecutionCommandAttributes, _Mapping]] = ..., fail_workflow_execution: _Optional[_Union[FailWorkflowExecutionCommandAttributes, _Mapping]] = ..., cancel_workflow_execution: _Optional[_Union[CancelWorkflowExecutionCommandAttributes, _Mapping]] = ..., record_marker: _Optional[_Union[RecordMarkerCommandAttributes, _Mapping]] = ..., upsert_workflow_search_attributes: _Optional[_Union[UpsertWorkflowSearchAttributesCommandAttributes, _Mapping]] = ..., start_child_workflow_execution: _Optional[_Union[StartChildWorkflowExecutionCommandAttributes, _Mapping]] = ..., request_cancel_external_workflow_execution: _Optional[_Union[RequestCancelExternalWorkflowExecutionCommandAttributes, _Mapping]] = ..., continue_as_new_workflow_execution: _Optional[_Union[ContinueAsNewWorkflowExecutionCommandAttributes, _Mapping]] = ..., signal_external_workflow_execution: _Optional[_Union[SignalExternalWorkflowExecutionCommandAttributes, _Mapping]] = ...) -> None: ...

class ScheduleActivityTaskCommandAttributes(_message.Message):
    __slots__ = ("activity_id", "activity_type", "task_queue", "input", "schedule_to_close_timeout", "schedule_to_start_timeout", "start_to_close_timeout", "heartbeat_timeout", "retry_policy", "depends_on_activity_ids", "cancellation_type", "header", "dead_letter", "priority", "concurrency_key")
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_TO_CLOSE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_TO_START_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    START_TO_CLOSE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    DEPENDS_ON_ACTIVITY_IDS_FIELD_NUMBER: _ClassVar[int]
    CANCELLATION_TYPE_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    activity_id: str
    activity_type: str
    task_queue: str
    input: _common_pb2.Payloads
    schedule_to_close_timeout: _duration_pb2.Duration
    schedule_to_start_timeout: _duration_pb2.Duration
    start_to_close_timeout: _duration_pb2.Duration
    heartbeat_timeout: _duration_pb2.Duration
    retry_policy: _common_pb2.RetryPolicy
    depends_on_activity_ids: _containers.RepeatedScalarFieldContainer[str]
    cancellation_type: _common_pb2.ActivityCancellationType
    header: _common_pb2.Header
    dead_letter: bool
    priority: _common_pb2.Priority
    concurrency_key: str
    def __init__(self, activity_id: _Optional[str] = ..., activity_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., schedule_to_close_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., schedule_to_start_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., start_to_close_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., heartbeat_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., retry_policy: _Optional[_Union[_common_pb2.RetryPolicy, _Mapping]] = ..., depends_on_activity_ids: _Optional[_Iterable[str]] = ..., cancellation_type: _Optional[_Union[_common_pb2.ActivityCancellationType, str]] = ..., header: _Optional[_Union[_common_pb2.Header, _Mapping]] = ..., dead_letter: _Optional[bool] = ..., priority: _Optional[_Union[_common_pb2.Priority, _Mapping]] = ..., concurrency_key: _Optional[str] = ...) -> None: ...

class StartTimerCommandAttributes(_message.Message):
    __slots__ = ("timer_id", "start_to_fire_timeout")
    TIMER_ID_FIELD_NUMBER: _ClassVar[int]
    START_TO_FIRE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    timer_id: str
    start_to_fire_timeout: _duration_pb2.Duration
    def __init__(self, timer_id: _Optional[str] = ..., start_to_fire_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class CancelTimerCommandAttributes(_message.Message):
    __slots__ = ("timer_id",)
    TIMER_ID_FIELD_NUMBER: _ClassVar[int]
    timer_id: str
    def __init__(self, timer_id: _Optional[str] = ...) -> None: ...

class RequestCancelActivityTaskCommandAttributes(_message.Message):
    __slots__ = ("activity_id",)
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    activity_id: str
    def __init__(self, activity_id: _Optional[str] = ...) -> None: ...

class CompleteWorkflowExecutionCommandAttributes(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _common_pb2.Payloads
    def __init__(self, result: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ...) -> None: ...

class FailWorkflowExecutionCommandAttributes(_message.Message):
    __slots__ = ("failure",)
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    failure: _common_pb2.Failure
    def __init__(self, failure: _Optional[_Union[_common_pb2.Failure, _Mapping]] = ...) -> None: ...

class CancelWorkflowExecutionCommandAttributes(_message.Message):
    __slots__ = ("details",)
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    details: _common_pb2.Payloads
    def __init__(self, details: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ...) -> None: ...

class RecordMarkerCommandAttributes(_message.Message):
    __slots__ = ("marker_name", "details")
    class DetailsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _common_pb2.Payloads
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ...) -> None: ...
    MARKER_NAME_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    marker_name: str
    details: _containers.MessageMap[str, _common_pb2.Payloads]
    def __init__(self, marker_name: _Optional[str] = ..., details: _Optional[_Mapping[str, _common_pb2.Payloads]] = ...) -> None: ...

class UpsertWorkflowSearchAttributesCommandAttributes(_message.Message):
    __slots__ = ("search_attributes",)
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    search_attributes: _common_pb2.SearchAttributes
    def __init__(self, search_attributes: _Optional[_Union[_common_pb2.SearchAttributes, _Mapping]] = ...) -> None: ...

class StartChildWorkflowExecutionCommandAttributes(_message.Message):
    __slots__ = ("workflow_id", "workflow_type", "task_queue", "input", "workflow_execution_timeout", "workflow_run_timeout", "workflow_task_timeout", "parent_close_policy", "retry_policy", "search_attributes", "memo", "header", "priority")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_RUN_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    PARENT_CLOSE_POLICY_FIELD_NUMBER: _ClassVar[int]
    RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    MEMO_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    workflow_type: str
    task_queue: str
    input: _common_pb2.Payloads
    workflow_execution_timeout: _duration_pb2.Duration
    workflow_run_timeout: _duration_pb2.Duration
    workflow_task_timeout: _duration_pb2.Duration
    parent_close_policy: _common_pb2.ParentClosePolicy
    retry_policy: _common_pb2.RetryPolicy
    search_attributes: _common_pb2.SearchAttributes
    memo: _common_pb2.Memo
    header: _common_pb2.Header
    priority: _common_pb2.Priority
    def __init__(self, workflow_id: _Optional[str] = ..., workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., workflow_execution_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., workflow_run_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., workflow_task_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., parent_close_policy: _Optional[_Union[_common_pb2.ParentClosePolicy, str]] = ..., retry_policy: _Optional[_Union[_common_pb2.RetryPolicy, _Mapping]] = ..., search_attributes: _Optional[_Union[_common_pb2.SearchAttributes, _Mapping]] = ..., memo: _Optional[_Union[_common_pb2.Memo, _Mapping]] = ..., header: _Optional[_Union[_common_pb2.Header, _Mapping]] = ..., priority: _Optional[_Union[_common_pb2.Priority, _Mapping]] = ...) -> None: ...

class RequestCancelExternalWorkflowExecutionCommandAttributes(_message.Message):
    __slots__ = ("workflow_id", "run_id", "child_workflow_only")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    CHILD_WORKFLOW_ONLY_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    run_id: str
    child_workflow_only: bool
    def __init__(self, workflow_id: _Optional[str] = ..., run_id: _Optional[str] = ..., child_workflow_only: _Optional[bool] = ...) -> None: ...

class SignalExternalWorkflowExecutionCommandAttributes(_message.Message):
    __slots__ = ("workflow_id", "run_id", "signal_name", "input", "child_workflow_only")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    CHILD_WORKFLOW_ONLY_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    run_id: str
    signal_name: str
    input: _common_pb2.Payloads
    child_workflow_only: bool
    def __init__(self, workflow_id: _Optional[str] = ..., run_id: _Optional[str] = ..., signal_name: _Optional[str] = ..., input: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., child_workflow_only: _Optional[bool] = ...) -> None: ...

class ContinueAsNewWorkflowExecutionCommandAttributes(_message.Message):
    __slots__ = ("workflow_type", "task_queue", "input", "workflow_run_timeout", "workflow_task_timeout", "last_completion_result", "last_failure")
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_RUN_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    LAST_COMPLETION_RESULT_FIELD_NUMBER: _ClassVar[int]
    LAST_FAILURE_FIELD_NUMBER: _ClassVar[int]
    workflow_type: str
    task_queue: str
    input: _common_pb2.Payloads
    workflow_run_timeout: _duration_pb2.Duration
    workflow_task_timeout: _duration_pb2.Duration
    last_completion_result: _common_pb2.Payloads
    last_failure: _common_pb2.Failure
    def __init__(self, workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., workflow_run_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., workflow_task_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., last_completion_result: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., last_failure: _Optional[_Union[_common_pb2.Failure, _Mapping]] = ...) -> None: ...
