import datetime

from flowforge.api.v1 import common_pb2 as _common_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
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
