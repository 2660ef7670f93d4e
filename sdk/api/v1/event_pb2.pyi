import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CloudEvent(_message.Message):
    __slots__ = ("id", "source", "type", "subject", "time", "data")
    ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    id: str
    source: str
    type: str
    subject: str
    time: _timestamp_pb2.Timestamp
    data: bytes
    def __init__(self, id: _Optional[str] = ..., source: _Optional[str] = ..., type: _Optional[str] = ..., subject: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., data: _Optional[bytes] = ...) -> None: ...

class EventTrigger(_message.Message):
    __slots__ = ("trigger_id", "event_type", "filter", "input_paths", "workflow_type", "task_queue", "workflow_id_prefix", "workflow_execution_timeout", "workflow_run_timeout", "workflow_task_timeout", "create_time")
    TRIGGER_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    INPUT_PATHS_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_PREFIX_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_RUN_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TASK_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    trigger_id: str
    event_type: str
    filter: _containers.RepeatedScalarFieldContainer[str]
    input_paths: _containers.RepeatedScalarFieldContainer[str]
    workflow_type: str
    task_queue: str
    workflow_id_prefix: str
    workflow_execution_timeout: _duration_pb2.Duration
    workflow_run_timeout: _duration_pb2.Duration
    workflow_task_timeout: _duration_pb2.Duration
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, trigger_id: _Optional[str] = ..., event_type: _Optional[str] = ..., filter: _Optional[_Iterable[str]] = ..., input_paths: _Optional[_Iterable[str]] = ..., workflow_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., workflow_id_prefix: _Optional[str] = ..., workflow_execution_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., workflow_run_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., workflow_task_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateEventTriggerRequest(_message.Message):
    __slots__ = ("namespace", "trigger")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    trigger: EventTrigger
    def __init__(self, namespace: _Optional[str] = ..., trigger: _Optional[_Union[EventTrigger, _Mapping]] = ...) -> None: ...

class CreateEventTriggerResponse(_message.Message):
    __slots__ = ("trigger",)
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    trigger: EventTrigger
    def __init__(self, trigger: _Optional[_Union[EventTrigger, _Mapping]] = ...) -> None: ...

class DescribeEventTriggerRequest(_message.Message):
    __slots__ = ("namespace", "trigger_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    trigger_id: str
    def __init__(self, namespace: _Optional[str] = ..., trigger_id: _Optional[str] = ...) -> None: ...

class DescribeEventTriggerResponse(_message.Message):
    __slots__ = ("trigger",)
    TRIGGER_FIELD_NUMBER: _ClassVar[int]
    trigger: EventTrigger
    def __init__(self, trigger: _Optional[_Union[EventTrigger, _Mapping]] = ...) -> None: ...

class ListEventTriggersRequest(_message.Message):
    __slots__ = ("namespace", "page_size", "next_page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    page_size: int
    next_page_token: bytes
    def __init__(self, namespace: _Optional[str] = ..., page_size: _Optional[int] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class ListEventTriggersResponse(_message.Message):
    __slots__ = ("triggers", "next_page_token")
    TRIGGERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    triggers: _containers.RepeatedCompositeFieldContainer[EventTrigger]
    next_page_token: bytes
    def __init__(self, triggers: _Optional[_Iterable[_Union[EventTrigger, _Mapping]]] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class DeleteEventTriggerRequest(_message.Message):
    __slots__ = ("namespace", "trigger_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    trigger_id: str
    def __init__(self, namespace: _Optional[str] = ..., trigger_id: _Optional[str] = ...) -> None: ...

class DeleteEventTriggerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PublishEventRequest(_message.Message):
    __slots__ = ("namespace", "event", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    event: CloudEvent
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., event: _Optional[_Union[CloudEvent, _Mapping]] = ..., identity: _Optional[str] = ...) -> None: ...

class TriggeredWorkflow(_message.Message):
    __slots__ = ("trigger_id", "workflow_id", "run_id", "started")
    TRIGGER_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    trigger_id: str
    workflow_id: str
    run_id: str
    started: bool
    def __init__(self, trigger_id: _Optional[str] = ..., workflow_id: _Optional[str] = ..., run_id: _Optional[str] = ..., started: _Optional[bool] = ...) -> None: ...

class PublishEventResponse(_message.Message):
    __slots__ = ("duplicate", "workflows")
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    WORKFLOWS_FIELD_NUMBER: _ClassVar[int]
    duplicate: bool
    workflows: _containers.RepeatedCompositeFieldContainer[TriggeredWorkflow]
    def __init__(self, duplicate: _Optional[bool] = ..., workflows: _Optional[_Iterable[_Union[TriggeredWorkflow, _Mapping]]] = ...) -> None: ...
