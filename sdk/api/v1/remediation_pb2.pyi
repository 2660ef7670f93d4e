import datetime

from flowforge.api.v1 import common_pb2 as _common_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResetWorkflowExecutionRequest(_message.Message):
    __slots__ = ("namespace", "execution", "event_id", "reset_type", "reason", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    RESET_TYPE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: _common_pb2.WorkflowExecution
    event_id: int
    reset_type: str
    reason: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., event_id: _Optional[int] = ..., reset_type: _Optional[str] = ..., reason: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class ResetWorkflowExecutionResponse(_message.Message):
    __slots__ = ("run_id",)
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    def __init__(self, run_id: _Optional[str] = ...) -> None: ...

class PauseWorkflowExecutionRequest(_message.Message):
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

class PauseWorkflowExecutionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UnpauseWorkflowExecutionRequest(_message.Message):
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

class UnpauseWorkflowExecutionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PauseInfo(_message.Message):
    __slots__ = ("identity", "reason", "pause_time")
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PAUSE_TIME_FIELD_NUMBER: _ClassVar[int]
    identity: str
    reason: str
    pause_time: _timestamp_pb2.Timestamp
    def __init__(self, identity: _Optional[str] = ..., reason: _Optional[str] = ..., pause_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class BatchOperation(_message.Message):
    __slots__ = ("job_id", "operation", "query", "reason", "identity", "state", "total", "done", "failed", "rps", "create_time", "update_time")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    RPS_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    operation: str
    query: str
    reason: str
    identity: str
    state: str
    total: int
    done: int
    failed: int
    rps: float
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, job_id: _Optional[str] = ..., operation: _Optional[str] = ..., query: _Optional[str] = ..., reason: _Optional[str] = ..., identity: _Optional[str] = ..., state: _Optional[str] = ..., total: _Optional[int] = ..., done: _Optional[int] = ..., failed: _Optional[int] = ..., rps: _Optional[float] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class StartBatchOperationRequest(_message.Message):
    __slots__ = ("namespace", "operation", "query", "reason", "identity", "signal_name", "signal_input", "reset_type", "rps")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_NAME_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_INPUT_FIELD_NUMBER: _ClassVar[int]
    RESET_TYPE_FIELD_NUMBER: _ClassVar[int]
    RPS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    operation: str
    query: str
    reason: str
    identity: str
    signal_name: str
    signal_input: _common_pb2.Payloads
    reset_type: str
    rps: float
    def __init__(self, namespace: _Optional[str] = ..., operation: _Optional[str] = ..., query: _Optional[str] = ..., reason: _Optional[str] = ..., identity: _Optional[str] = ..., signal_name: _Optional[str] = ..., signal_input: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., reset_type: _Optional[str] = ..., rps: _Optional[float] = ...) -> None: ...

class StartBatchOperationResponse(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class DescribeBatchOperationRequest(_message.Message):
    __slots__ = ("namespace", "job_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    job_id: str
    def __init__(self, namespace: _Optional[str] = ..., job_id: _Optional[str] = ...) -> None: ...

class DescribeBatchOperationResponse(_message.Message):
    __slots__ = ("operation",)
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    operation: BatchOperation
    def __init__(self, operation: _Optional[_Union[BatchOperation, _Mapping]] = ...) -> None: ...

class ListBatchOperationsRequest(_message.Message):
    __slots__ = ("namespace", "limit")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    limit: int
    def __init__(self, namespace: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ListBatchOperationsResponse(_message.Message):
    __slots__ = ("operations",)
    OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    operations: _containers.RepeatedCompositeFieldContainer[BatchOperation]
    def __init__(self, operations: _Optional[_Iterable[_Union[BatchOperation, _Mapping]]] = ...) -> None: ...

class PauseActivityRequest(_message.Message):
    __slots__ = ("namespace", "execution", "activity_id", "reason", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: _common_pb2.WorkflowExecution
    activity_id: str
    reason: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., activity_id: _Optional[str] = ..., reason: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class PauseActivityResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UnpauseActivityRequest(_message.Message):
    __slots__ = ("namespace", "execution", "activity_id", "reason", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    execution: _common_pb2.WorkflowExecution
    activity_id: str
    reason: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., execution: _Optional[_Union[_common_pb2.WorkflowExecution, _Mapping]] = ..., activity_id: _Optional[str] = ..., reason: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class UnpauseActivityResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
