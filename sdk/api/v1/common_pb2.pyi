import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TimeoutType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TIMEOUT_TYPE_UNSPECIFIED: _ClassVar[TimeoutType]
    TIMEOUT_TYPE_START_TO_CLOSE: _ClassVar[TimeoutType]
    TIMEOUT_TYPE_SCHEDULE_TO_START: _ClassVar[TimeoutType]
    TIMEOUT_TYPE_SCHEDULE_TO_CLOSE: _ClassVar[TimeoutType]
    TIMEOUT_TYPE_HEARTBEAT: _ClassVar[TimeoutType]

class ApplicationErrorCategory(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPLICATION_ERROR_CATEGORY_UNSPECIFIED: _ClassVar[ApplicationErrorCategory]
    APPLICATION_ERROR_CATEGORY_BENIGN: _ClassVar[ApplicationErrorCategory]

class WorkflowExecutionStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WORKFLOW_EXECUTION_STATUS_UNSPECIFIED: _ClassVar[WorkflowExecutionStatus]
    WORKFLOW_EXECUTION_STATUS_RUNNING: _ClassVar[WorkflowExecutionStatus]
    WORKFLOW_EXECUTION_STATUS_COMPLETED: _ClassVar[WorkflowExecutionStatus]
    WORKFLOW_EXECUTION_STATUS_FAILED: _ClassVar[WorkflowExecutionStatus]
    WORKFLOW_EXECUTION_STATUS_CANCELED: _ClassVar[WorkflowExecutionStatus]
    WORKFLOW_EXECUTION_STATUS_TERMINATED: _ClassVar[WorkflowExecutionStatus]
    WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW: _ClassVar[WorkflowExecutionStatus]
    WORKFLOW_EXECUTION_STATUS_TIMED_OUT: _ClassVar[WorkflowExecutionStatus]

class ActivityCancellationType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACTIVITY_CANCELLATION_TYPE_UNSPECIFIED: _ClassVar[ActivityCancellationType]
    ACTIVITY_CANCELLATION_TYPE_TRY_CANCEL: _ClassVar[ActivityCancellationType]
    ACTIVITY_CANCELLATION_TYPE_WAIT_CANCELLATION_COMPLETED: _ClassVar[ActivityCancellationType]
    ACTIVITY_CANCELLATION_TYPE_ABANDON: _ClassVar[ActivityCancellationType]

class IndexedValueType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INDEXED_VALUE_TYPE_UNSPECIFIED: _ClassVar[IndexedValueType]
    INDEXED_VALUE_TYPE_KEYWORD: _ClassVar[IndexedValueType]
    INDEXED_VALUE_TYPE_INT: _ClassVar[IndexedValueType]
    INDEXED_VALUE_TYPE_DOUBLE: _ClassVar[IndexedValueType]
    INDEXED_VALUE_TYPE_BOOL: _ClassVar[IndexedValueType]
    INDEXED_VALUE_TYPE_DATETIME: _ClassVar[IndexedValueType]

class ParentClosePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PARENT_CLOSE_POLICY_UNSPECIFIED: _ClassVar[ParentClosePolicy]
    PARENT_CLOSE_POLICY_TERMINATE: _ClassVar[ParentClosePolicy]
    PARENT_CLOSE_POLICY_ABANDON: _ClassVar[ParentClosePolicy]
    PARENT_CLOSE_POLICY_REQUEST_CANCEL: _ClassVar[ParentClosePolicy]
TIMEOUT_TYPE_UNSPECIFIED: TimeoutType
TIMEOUT_TYPE_START_TO_CLOSE: TimeoutType
TIMEOUT_TYPE_SCHEDULE_TO_START: TimeoutType
TIMEOUT_TYPE_SCHEDULE_TO_CLOSE: TimeoutType
TIMEOUT_TYPE_HEARTBEAT: TimeoutType
APPLICATION_ERROR_CATEGORY_UNSPECIFIED: ApplicationErrorCategory
APPLICATION_ERROR_CATEGORY_BENIGN: ApplicationErrorCategory
WORKFLOW_EXECUTION_STATUS_UNSPECIFIED: WorkflowExecutionStatus
WORKFLOW_EXECUTION_STATUS_RUNNING: WorkflowExecutionStatus
WORKFLOW_EXECUTION_STATUS_COMPLETED: WorkflowExecutionStatus
WORKFLOW_EXECUTION_STATUS_FAILED: WorkflowExecutionStatus
WORKFLOW_EXECUTION_STATUS_CANCELED: WorkflowExecutionStatus
WORKFLOW_EXECUTION_STATUS_TERMINATED: WorkflowExecutionStatus
WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW: WorkflowExecutionStatus
WORKFLOW_EXECUTION_STATUS_TIMED_OUT: WorkflowExecutionStatus
ACTIVITY_CANCELLATION_TYPE_UNSPECIFIED: ActivityCancellationType
ACTIVITY_CANCELLATION_TYPE_TRY_CANCEL: ActivityCancellationType
ACTIVITY_CANCELLATION_TYPE_WAIT_CANCELLATION_COMPLETED: ActivityCancellationType
ACTIVITY_CANCELLATION_TYPE_ABANDON: ActivityCancellationType
INDEXED_VALUE_TYPE_UNSPECIFIED: IndexedValueType
INDEXED_VALUE_TYPE_KEYWORD: IndexedValueType
INDEXED_VALUE_TYPE_INT: IndexedValueType
INDEXED_VALUE_TYPE_DOUBLE: IndexedValueType
INDEXED_VALUE_TYPE_BOOL: IndexedValueType
INDEXED_VALUE_TYPE_DATETIME: IndexedValueType
PARENT_CLOSE_POLICY_UNSPECIFIED: ParentClosePolicy
PARENT_CLOSE_POLICY_TERMINATE: ParentClosePolicy
PARENT_CLOSE_POLICY_ABANDON: ParentClosePolicy
PARENT_CLOSE_POLICY_REQUEST_CANCEL: ParentClosePolicy

class Payload(_message.Message):
    __slots__ = ("metadata", "data")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    METADATA_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    metadata: _containers.ScalarMap[str, bytes]
    data: bytes
    def __init__(self, metadata: _Optional[_Mapping[str, bytes]] = ..., data: _Optional[bytes] = ...) -> None: ...

class Payloads(_message.Message):
    __slots__ = ("payloads",)
    PAYLOADS_FIELD_NUMBER: _ClassVar[int]
    payloads: _containers.RepeatedCompositeFieldContainer[Payload]
    def __init__(self, payloads: _Optional[_Iterable[_Union[Payload, _Mapping]]] = ...) -> None: ...

class WorkflowExecution(_message.Message):
    __slots__ = ("workflow_id", "run_id")
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    workflow_id: str
    run_id: str
    def __init__(self, workflow_id: _Optional[str] = ..., run_id: _Optional[str] = ...) -> None: ...

class Priority(_message.Message):
    __slots__ = ("priority_key", "fairness_key", "fairness_weight")
    PRIORITY_KEY_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_KEY_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    priority_key: int
    fairness_key: str
    fairness_weight: float
    def __init__(self, priority_key: _Optional[int] = ..., fairness_key: _Optional[str] = ..., fairness_weight: _Optional[float] = ...) -> None: ...

class RetryPolicy(_message.Message):
    __slots__ = ("initial_interval", "backoff_coefficient", "maximum_interval", "maximum_attempts", "non_retryable_error_types", "full_jitter")
    INITIAL_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_COEFFICIENT_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    MAXIMUM_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    NON_RETRYABLE_ERROR_TYPES_FIELD_NUMBER: _ClassVar[int]
    FULL_JITTER_FIELD_NUMBER: _ClassVar[int]
    initial_interval: _duration_pb2.Duration
    backoff_coefficient: float
    maximum_interval: _duration_pb2.Duration
    maximum_attempts: int
    non_retryable_error_types: _containers.RepeatedScalarFieldContainer[str]
    full_jitter: bool
    def __init__(self, initial_interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., backoff_coefficient: _Optional[float] = ..., maximum_interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., maximum_attempts: _Optional[int] = ..., non_retryable_error_types: _Optional[_Iterable[str]] = ..., full_jitter: _Optional[bool] = ...) -> None: ...

class Failure(_message.Message):
    __slots__ = ("message", "type", "non_retryable", "stack_trace", "details", "cause", "timeout_type", "source", "activity_failure_info", "child_workflow_execution_failure_info", "next_retry_delay", "category", "encoded_attributes")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NON_RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    STACK_TRACE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_TYPE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_FAILURE_INFO_FIELD_NUMBER: _ClassVar[int]
    CHILD_WORKFLOW_EXECUTION_FAILURE_INFO_FIELD_NUMBER: _ClassVar[int]
    NEXT_RETRY_DELAY_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    ENCODED_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    message: str
    type: str
    non_retryable: bool
    stack_trace: str
    details: Payloads
    cause: Failure
    timeout_type: TimeoutType
    source: str
    activity_failure_info: ActivityFailureInfo
    child_workflow_execution_failure_info: ChildWorkflowExecutionFailureInfo
    next_retry_delay: _duration_pb2.Duration
    category: ApplicationErrorCategory
    encoded_attributes: Payload
    def __init__(self, message: _Optional[str] = ..., type: _Optional[str] = ..., non_retryable: _Optional[bool] = ..., stack_trace: _Optional[str] = ..., details: _Optional[_Union[Payloads, _Mapping]] = ..., cause: _Optional[_Union[Failure, _Mapping]] = ..., timeout_type: _Optional[_Union[TimeoutType, str]] = ..., source: _Optional[str] = ..., activity_failure_info: _Optional[_Union[ActivityFailureInfo, _Mapping]] = ..., child_workflow_execution_failure_info: _Optional[_Union[ChildWorkflowExecutionFailureInfo, _Mapping]] = ..., next_retry_delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., category: _Optional[_Union[ApplicationErrorCategory, str]] = ..., encoded_attributes: _Optional[_Union[Payload, _Mapping]] = ...) -> None: ...

class ActivityFailureInfo(_message.Message):
    __slots__ = ("activity_type", "activity_id", "scheduled_event_id", "retry_state")
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    RETRY_STATE_FIELD_NUMBER: _ClassVar[int]
    activity_type: str
    activity_id: str
    scheduled_event_id: int
    retry_state: str
    def __init__(self, activity_type: _Optional[str] = ..., activity_id: _Optional[str] = ..., scheduled_event_id: _Optional[int] = ..., retry_state: _Optional[str] = ...) -> None: ...

class HistoryEvent(_message.Message):
    __slots__ = ("event_id", "event_type", "event_time", "attributes_json")
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    EVENT_TIME_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_JSON_FIELD_NUMBER: _ClassVar[int]
    event_id: int
    event_type: str
    event_time: _timestamp_pb2.Timestamp
    attributes_json: str
    def __init__(self, event_id: _Optional[int] = ..., event_type: _Optional[str] = ..., event_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., attributes_json: _Optional[str] = ...) -> None: ...

class SearchAttributeValue(_message.Message):
    __slots__ = ("keyword_value", "int_value", "double_value", "bool_value", "datetime_value")
    KEYWORD_VALUE_FIELD_NUMBER: _ClassVar[int]
    INT_VALUE_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    DATETIME_VALUE_FIELD_NUMBER: _ClassVar[int]
    keyword_value: str
    int_value: int
    double_value: float
    bool_value: bool
    datetime_value: _timestamp_pb2.Timestamp
    def __init__(self, keyword_value: _Optional[str] = ..., int_value: _Optional[int] = ..., double_value: _Optional[float] = ..., bool_value: _Optional[bool] = ..., datetime_value: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class SearchAttributes(_message.Message):
    __slots__ = ("indexed_fields",)
    class IndexedFieldsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: SearchAttributeValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[SearchAttributeValue, _Mapping]] = ...) -> None: ...
    INDEXED_FIELDS_FIELD_NUMBER: _ClassVar[int]
    indexed_fields: _containers.MessageMap[str, SearchAttributeValue]
    def __init__(self, indexed_fields: _Optional[_Mapping[str, SearchAttributeValue]] = ...) -> None: ...

class Header(_message.Message):
    __slots__ = ("fields",)
    class FieldsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Payload
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Payload, _Mapping]] = ...) -> None: ...
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.MessageMap[str, Payload]
    def __init__(self, fields: _Optional[_Mapping[str, Payload]] = ...) -> None: ...

class Memo(_message.Message):
    __slots__ = ("fields",)
    class FieldsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Payload
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Payload, _Mapping]] = ...) -> None: ...
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.MessageMap[str, Payload]
    def __init__(self, fields: _Optional[_Mapping[str, Payload]] = ...) -> None: ...

class ChildWorkflowExecutionFailureInfo(_message.Message):
    __slots__ = ("namespace", "workflow_execution", "workflow_type", "initiated_event_id", "started_event_id", "retry_state")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    INITIATED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    RETRY_STATE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    workflow_execution: WorkflowExecution
    workflow_type: str
    initiated_event_id: int
    started_event_id: int
    retry_state: str
    def __init__(self, namespace: _Optional[str] = ..., workflow_execution: _Optional[_Union[WorkflowExecution, _Mapping]] = ..., workflow_type: _Optional[str] = ..., initiated_event_id: _Optional[int] = ..., started_event_id: _Optional[int] = ..., retry_state: _Optional[str] = ...) -> None: ...
