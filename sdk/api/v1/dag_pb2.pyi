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

class DagVersion(_message.Message):
    __slots__ = ("name", "digest", "task_count", "create_time", "aliases")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    TASK_COUNT_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    name: str
    digest: str
    task_count: int
    create_time: _timestamp_pb2.Timestamp
    aliases: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., digest: _Optional[str] = ..., task_count: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., aliases: _Optional[_Iterable[str]] = ...) -> None: ...

class PublishDagRequest(_message.Message):
    __slots__ = ("namespace", "definition", "alias", "identity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    definition: str
    alias: str
    identity: str
    def __init__(self, namespace: _Optional[str] = ..., definition: _Optional[str] = ..., alias: _Optional[str] = ..., identity: _Optional[str] = ...) -> None: ...

class PublishDagResponse(_message.Message):
    __slots__ = ("version", "created")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    version: DagVersion
    created: bool
    def __init__(self, version: _Optional[_Union[DagVersion, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class SetDagAliasRequest(_message.Message):
    __slots__ = ("namespace", "name", "alias", "digest", "reason")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    alias: str
    digest: str
    reason: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., alias: _Optional[str] = ..., digest: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class SetDagAliasResponse(_message.Message):
    __slots__ = ("previous_digest",)
    PREVIOUS_DIGEST_FIELD_NUMBER: _ClassVar[int]
    previous_digest: str
    def __init__(self, previous_digest: _Optional[str] = ...) -> None: ...

class ListDagsRequest(_message.Message):
    __slots__ = ("namespace", "name", "page_size")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    page_size: int
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., page_size: _Optional[int] = ...) -> None: ...

class ListDagsResponse(_message.Message):
    __slots__ = ("versions",)
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    versions: _containers.RepeatedCompositeFieldContainer[DagVersion]
    def __init__(self, versions: _Optional[_Iterable[_Union[DagVersion, _Mapping]]] = ...) -> None: ...

class GetDagRequest(_message.Message):
    __slots__ = ("namespace", "digest", "name", "alias")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    digest: str
    name: str
    alias: str
    def __init__(self, namespace: _Optional[str] = ..., digest: _Optional[str] = ..., name: _Optional[str] = ..., alias: _Optional[str] = ...) -> None: ...

class GetDagResponse(_message.Message):
    __slots__ = ("version", "definition")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_FIELD_NUMBER: _ClassVar[int]
    version: DagVersion
    definition: str
    def __init__(self, version: _Optional[_Union[DagVersion, _Mapping]] = ..., definition: _Optional[str] = ...) -> None: ...

class DeleteDagVersionRequest(_message.Message):
    __slots__ = ("namespace", "digest", "reason")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    digest: str
    reason: str
    def __init__(self, namespace: _Optional[str] = ..., digest: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class DeleteDagVersionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StartDagExecutionRequest(_message.Message):
    __slots__ = ("namespace", "name", "digest", "alias", "workflow_id", "task_queue", "input", "request_id", "identity", "workflow_execution_timeout")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_EXECUTION_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    digest: str
    alias: str
    workflow_id: str
    task_queue: str
    input: _common_pb2.Payloads
    request_id: str
    identity: str
    workflow_execution_timeout: _duration_pb2.Duration
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., digest: _Optional[str] = ..., alias: _Optional[str] = ..., workflow_id: _Optional[str] = ..., task_queue: _Optional[str] = ..., input: _Optional[_Union[_common_pb2.Payloads, _Mapping]] = ..., request_id: _Optional[str] = ..., identity: _Optional[str] = ..., workflow_execution_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class StartDagExecutionResponse(_message.Message):
    __slots__ = ("run_id", "started", "digest")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    started: bool
    digest: str
    def __init__(self, run_id: _Optional[str] = ..., started: _Optional[bool] = ..., digest: _Optional[str] = ...) -> None: ...
