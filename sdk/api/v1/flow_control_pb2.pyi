import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SetConcurrencyLimitRequest(_message.Message):
    __slots__ = ("namespace", "concurrency_key", "max_running", "reason", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    concurrency_key: str
    max_running: int
    reason: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., concurrency_key: _Optional[str] = ..., max_running: _Optional[int] = ..., reason: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class SetConcurrencyLimitResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListConcurrencyLimitsRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class ConcurrencyLimit(_message.Message):
    __slots__ = ("concurrency_key", "max_running", "running", "waiting", "update_time")
    CONCURRENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    concurrency_key: str
    max_running: int
    running: int
    waiting: int
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, concurrency_key: _Optional[str] = ..., max_running: _Optional[int] = ..., running: _Optional[int] = ..., waiting: _Optional[int] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListConcurrencyLimitsResponse(_message.Message):
    __slots__ = ("limits",)
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    limits: _containers.RepeatedCompositeFieldContainer[ConcurrencyLimit]
    def __init__(self, limits: _Optional[_Iterable[_Union[ConcurrencyLimit, _Mapping]]] = ...) -> None: ...

class SetRateLimitRequest(_message.Message):
    __slots__ = ("namespace", "task_queue", "concurrency_key", "per_second", "reason", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    task_queue: str
    concurrency_key: str
    per_second: float
    reason: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., task_queue: _Optional[str] = ..., concurrency_key: _Optional[str] = ..., per_second: _Optional[float] = ..., reason: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class SetRateLimitResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListRateLimitsRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class RateLimit(_message.Message):
    __slots__ = ("task_queue", "concurrency_key", "per_second", "update_time")
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    task_queue: str
    concurrency_key: str
    per_second: float
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, task_queue: _Optional[str] = ..., concurrency_key: _Optional[str] = ..., per_second: _Optional[float] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListRateLimitsResponse(_message.Message):
    __slots__ = ("limits",)
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    limits: _containers.RepeatedCompositeFieldContainer[RateLimit]
    def __init__(self, limits: _Optional[_Iterable[_Union[RateLimit, _Mapping]]] = ...) -> None: ...

class SetBreakerRequest(_message.Message):
    __slots__ = ("namespace", "activity_type", "failure_rate", "min_calls", "window_seconds", "open_seconds", "reason", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_RATE_FIELD_NUMBER: _ClassVar[int]
    MIN_CALLS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_SECONDS_FIELD_NUMBER: _ClassVar[int]
    OPEN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    activity_type: str
    failure_rate: float
    min_calls: int
    window_seconds: float
    open_seconds: float
    reason: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., activity_type: _Optional[str] = ..., failure_rate: _Optional[float] = ..., min_calls: _Optional[int] = ..., window_seconds: _Optional[float] = ..., open_seconds: _Optional[float] = ..., reason: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class SetBreakerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class OpenBreakerRequest(_message.Message):
    __slots__ = ("namespace", "activity_type", "reason", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    activity_type: str
    reason: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., activity_type: _Optional[str] = ..., reason: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class OpenBreakerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CloseBreakerRequest(_message.Message):
    __slots__ = ("namespace", "activity_type", "reason", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    activity_type: str
    reason: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., activity_type: _Optional[str] = ..., reason: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class CloseBreakerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListBreakersRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class Breaker(_message.Message):
    __slots__ = ("activity_type", "state", "since", "failure_rate", "min_calls", "window_seconds", "open_seconds", "successes", "failures", "probe_in_flight", "reason")
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_RATE_FIELD_NUMBER: _ClassVar[int]
    MIN_CALLS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_SECONDS_FIELD_NUMBER: _ClassVar[int]
    OPEN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SUCCESSES_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    PROBE_IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    activity_type: str
    state: str
    since: _timestamp_pb2.Timestamp
    failure_rate: float
    min_calls: int
    window_seconds: float
    open_seconds: float
    successes: int
    failures: int
    probe_in_flight: bool
    reason: str
    def __init__(self, activity_type: _Optional[str] = ..., state: _Optional[str] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., failure_rate: _Optional[float] = ..., min_calls: _Optional[int] = ..., window_seconds: _Optional[float] = ..., open_seconds: _Optional[float] = ..., successes: _Optional[int] = ..., failures: _Optional[int] = ..., probe_in_flight: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class ListBreakersResponse(_message.Message):
    __slots__ = ("breakers",)
    BREAKERS_FIELD_NUMBER: _ClassVar[int]
    breakers: _containers.RepeatedCompositeFieldContainer[Breaker]
    def __init__(self, breakers: _Optional[_Iterable[_Union[Breaker, _Mapping]]] = ...) -> None: ...
