import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ApiKey(_message.Message):
    __slots__ = ("id", "name", "namespace", "role", "create_time", "created_by", "expire_time", "revoke_time")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    REVOKE_TIME_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    namespace: str
    role: str
    create_time: _timestamp_pb2.Timestamp
    created_by: str
    expire_time: _timestamp_pb2.Timestamp
    revoke_time: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., namespace: _Optional[str] = ..., role: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_by: _Optional[str] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., revoke_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateApiKeyRequest(_message.Message):
    __slots__ = ("namespace", "role", "name", "expires_in", "reason")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_IN_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    role: str
    name: str
    expires_in: _duration_pb2.Duration
    reason: str
    def __init__(self, namespace: _Optional[str] = ..., role: _Optional[str] = ..., name: _Optional[str] = ..., expires_in: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class CreateApiKeyResponse(_message.Message):
    __slots__ = ("api_key", "key")
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    api_key: ApiKey
    key: str
    def __init__(self, api_key: _Optional[_Union[ApiKey, _Mapping]] = ..., key: _Optional[str] = ...) -> None: ...

class ListApiKeysRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListApiKeysResponse(_message.Message):
    __slots__ = ("api_keys",)
    API_KEYS_FIELD_NUMBER: _ClassVar[int]
    api_keys: _containers.RepeatedCompositeFieldContainer[ApiKey]
    def __init__(self, api_keys: _Optional[_Iterable[_Union[ApiKey, _Mapping]]] = ...) -> None: ...

class RevokeApiKeyRequest(_message.Message):
    __slots__ = ("id", "reason")
    ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    id: str
    reason: str
    def __init__(self, id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RevokeApiKeyResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AuditRecord(_message.Message):
    __slots__ = ("seq", "time", "principal", "action", "namespace", "target", "reason", "details_json", "row_hash")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DETAILS_JSON_FIELD_NUMBER: _ClassVar[int]
    ROW_HASH_FIELD_NUMBER: _ClassVar[int]
    seq: int
    time: _timestamp_pb2.Timestamp
    principal: str
    action: str
    namespace: str
    target: str
    reason: str
    details_json: str
    row_hash: bytes
    def __init__(self, seq: _Optional[int] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., principal: _Optional[str] = ..., action: _Optional[str] = ..., namespace: _Optional[str] = ..., target: _Optional[str] = ..., reason: _Optional[str] = ..., details_json: _Optional[str] = ..., row_hash: _Optional[bytes] = ...) -> None: ...

class ListAuditLogRequest(_message.Message):
    __slots__ = ("page_size", "next_page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    next_page_token: bytes
    def __init__(self, page_size: _Optional[int] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class ListAuditLogResponse(_message.Message):
    __slots__ = ("records", "next_page_token")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[AuditRecord]
    next_page_token: bytes
    def __init__(self, records: _Optional[_Iterable[_Union[AuditRecord, _Mapping]]] = ..., next_page_token: _Optional[bytes] = ...) -> None: ...

class VerifyAuditLogRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class VerifyAuditLogResponse(_message.Message):
    __slots__ = ("intact", "rows_checked", "first_bad_seq", "problem", "head_hash")
    INTACT_FIELD_NUMBER: _ClassVar[int]
    ROWS_CHECKED_FIELD_NUMBER: _ClassVar[int]
    FIRST_BAD_SEQ_FIELD_NUMBER: _ClassVar[int]
    PROBLEM_FIELD_NUMBER: _ClassVar[int]
    HEAD_HASH_FIELD_NUMBER: _ClassVar[int]
    intact: bool
    rows_checked: int
    first_bad_seq: int
    problem: str
    head_hash: bytes
    def __init__(self, intact: _Optional[bool] = ..., rows_checked: _Optional[int] = ..., first_bad_seq: _Optional[int] = ..., problem: _Optional[str] = ..., head_hash: _Optional[bytes] = ...) -> None: ...

class RotateTaskTokenKeyRequest(_message.Message):
    __slots__ = ("previous_key_grace", "reason")
    PREVIOUS_KEY_GRACE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    previous_key_grace: _duration_pb2.Duration
    reason: str
    def __init__(self, previous_key_grace: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class RotateTaskTokenKeyResponse(_message.Message):
    __slots__ = ("key_id", "active_time", "previous_key_expire_time")
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_TIME_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_KEY_EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    key_id: str
    active_time: _timestamp_pb2.Timestamp
    previous_key_expire_time: _timestamp_pb2.Timestamp
    def __init__(self, key_id: _Optional[str] = ..., active_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., previous_key_expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
