import datetime

from flowforge.api.v1 import common_pb2 as _common_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ActivityAttempt(_message.Message):
    __slots__ = ("attempt", "identity", "started_time", "ended_time", "outcome", "failure", "activity_id", "activity_type", "scheduled_event_id")
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    STARTED_TIME_FIELD_NUMBER: _ClassVar[int]
    ENDED_TIME_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    identity: str
    started_time: _timestamp_pb2.Timestamp
    ended_time: _timestamp_pb2.Timestamp
    outcome: str
    failure: _common_pb2.Failure
    activity_id: str
    activity_type: str
    scheduled_event_id: int
    def __init__(self, attempt: _Optional[int] = ..., identity: _Optional[str] = ..., started_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., outcome: _Optional[str] = ..., failure: _Optional[_Union[_common_pb2.Failure, _Mapping]] = ..., activity_id: _Optional[str] = ..., activity_type: _Optional[str] = ..., scheduled_event_id: _Optional[int] = ...) -> None: ...

class DeadLetter(_message.Message):
    __slots__ = ("id", "workflow_id", "run_id", "workflow_type", "activity_id", "activity_type", "task_queue", "attempt", "failure", "dead_lettered_time", "scheduled_event_id", "attempts", "input")
    ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_TIME_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    id: str
    workflow_id: str
    run_id: str
    workflow_type: str
    activity_id: str
    activity_type: str
    task_queue: str
    attempt: int
    failure: _common_pb2.Failure
    dead_lettered_time: _timestamp_pb2.Timestamp
    scheduled_event_id: int
    attempts: _containers.RepeatedCompositeFieldContainer[ActivityAttempt]
    input: _common_pb2.Payloads
    def __init__(self, id: _Optional[str] = ..., workflow_id: _Optional[str] = ..., run_id: _Optional[str] = ..., workflow_type: _Optional[str] = ..., activity_id: _Optional[str] = ..., activity_type: _Optional[str] = ..., task_queue: _Optional[str] = ..., attempt: _Optional[int] = ..., failure: _Optional[_Union[_common_pb2.Failure, _Mapping]] = ..., dead_lettered_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., scheduled_event_id: _Optional[int] = ..., attempts: _Optional[_Iterable[_Union[ActivityAttempt, _Mapping]]] = ..., input: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ...) -> None: ...

class DeadLetterFilter(_message.Message):
    __slots__ = ("workflow_type", "activity_type", "error_type", "older_than", "workflow_id")
    WORKFLOW_TYPE_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    ERROR_TYPE_FIELD_NUMBER: _ClassVar[int]
    OLDER_THAN_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    workflow_type: str
    activity_type: str
    error_type: str
    older_than: _duration_pb2.Duration
    workflow_id: str
    def __init__(self, workflow_type: _Optional[str] = ..., activity_type: _Optional[str] = ..., error_type: _Optional[str] = ..., older_than: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., workflow_id: _Optional[str] = ...) -> None: ...

class DeadLetterDepth(_message.Message):
    __slots__ = ("activity_type", "count")
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    activity_type: str
    count: int
    def __init__(self, activity_type: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class ListDeadLettersRequest(_message.Message):
    __slots__ = ("namespace", "filter", "limit")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    filter: DeadLetterFilter
    limit: int
    def __init__(self, namespace: _Optional[str] = ..., filter: _Optional[_Union[DeadLetterFilter, _Mapping]] = ..., limit: _Optional[int] = ...) -> None: ...

class ListDeadLettersResponse(_message.Message):
    __slots__ = ("dead_letters", "depths")
    DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    DEPTHS_FIELD_NUMBER: _ClassVar[int]
    dead_letters: _containers.RepeatedCompositeFieldContainer[DeadLetter]
    depths: _containers.RepeatedCompositeFieldContainer[DeadLetterDepth]
    def __init__(self, dead_letters: _Optional[_Iterable[_Union[DeadLetter, _Mapping]]] = ..., depths: _Optional[_Iterable[_Union[DeadLetterDepth, _Mapping]]] = ...) -> None: ...

class DescribeDeadLetterRequest(_message.Message):
    __slots__ = ("namespace", "id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class DescribeDeadLetterResponse(_message.Message):
    __slots__ = ("dead_letter",)
    DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    dead_letter: DeadLetter
    def __init__(self, dead_letter: _Optional[_Union[DeadLetter, _Mapping]] = ...) -> None: ...

class RetryDeadLettersRequest(_message.Message):
    __slots__ = ("namespace", "id", "filter", "reason", "identity", "fresh_budget")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    FRESH_BUDGET_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    filter: DeadLetterFilter
    reason: str
    identity: str
    fresh_budget: bool
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., filter: _Optional[_Union[DeadLetterFilter, _Mapping]] = ..., reason: _Optional[str] = ..., identity: _Optional[str] = ..., fresh_budget: _Optional[bool] = ...) -> None: ...

class RetryDeadLettersResponse(_message.Message):
    __slots__ = ("ids",)
    IDS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ids: _Optional[_Iterable[str]] = ...) -> None: ...

class DiscardDeadLettersRequest(_message.Message):
    __slots__ = ("namespace", "id", "filter", "reason", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    filter: DeadLetterFilter
    reason: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., filter: _Optional[_Union[DeadLetterFilter, _Mapping]] = ..., reason: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class DiscardDeadLettersResponse(_message.Message):
    __slots__ = ("ids",)
    IDS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ids: _Optional[_Iterable[str]] = ...) -> None: ...
