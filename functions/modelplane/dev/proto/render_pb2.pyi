import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RenderRequest(_message.Message):
    __slots__ = ("meta", "composite", "operation", "cron_operation", "watch_operation")
    META_FIELD_NUMBER: _ClassVar[int]
    COMPOSITE_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    CRON_OPERATION_FIELD_NUMBER: _ClassVar[int]
    WATCH_OPERATION_FIELD_NUMBER: _ClassVar[int]
    meta: RequestMeta
    composite: CompositeInput
    operation: OperationInput
    cron_operation: CronOperationInput
    watch_operation: WatchOperationInput
    def __init__(self, meta: _Optional[_Union[RequestMeta, _Mapping]] = ..., composite: _Optional[_Union[CompositeInput, _Mapping]] = ..., operation: _Optional[_Union[OperationInput, _Mapping]] = ..., cron_operation: _Optional[_Union[CronOperationInput, _Mapping]] = ..., watch_operation: _Optional[_Union[WatchOperationInput, _Mapping]] = ...) -> None: ...

class RenderResponse(_message.Message):
    __slots__ = ("meta", "composite", "operation", "cron_operation", "watch_operation")
    META_FIELD_NUMBER: _ClassVar[int]
    COMPOSITE_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    CRON_OPERATION_FIELD_NUMBER: _ClassVar[int]
    WATCH_OPERATION_FIELD_NUMBER: _ClassVar[int]
    meta: ResponseMeta
    composite: CompositeOutput
    operation: OperationOutput
    cron_operation: CronOperationOutput
    watch_operation: WatchOperationOutput
    def __init__(self, meta: _Optional[_Union[ResponseMeta, _Mapping]] = ..., composite: _Optional[_Union[CompositeOutput, _Mapping]] = ..., operation: _Optional[_Union[OperationOutput, _Mapping]] = ..., cron_operation: _Optional[_Union[CronOperationOutput, _Mapping]] = ..., watch_operation: _Optional[_Union[WatchOperationOutput, _Mapping]] = ...) -> None: ...

class RequestMeta(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ResponseMeta(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FunctionInput(_message.Message):
    __slots__ = ("name", "address")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    name: str
    address: str
    def __init__(self, name: _Optional[str] = ..., address: _Optional[str] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("type", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class CompositeInput(_message.Message):
    __slots__ = ("composite_resource", "composition", "functions", "observed_resources", "required_resources", "credentials", "required_schemas", "composite_resource_definition")
    COMPOSITE_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    COMPOSITION_FIELD_NUMBER: _ClassVar[int]
    FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_SCHEMAS_FIELD_NUMBER: _ClassVar[int]
    COMPOSITE_RESOURCE_DEFINITION_FIELD_NUMBER: _ClassVar[int]
    composite_resource: _struct_pb2.Struct
    composition: _struct_pb2.Struct
    functions: _containers.RepeatedCompositeFieldContainer[FunctionInput]
    observed_resources: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    required_resources: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    credentials: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    required_schemas: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    composite_resource_definition: _struct_pb2.Struct
    def __init__(self, composite_resource: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., composition: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., functions: _Optional[_Iterable[_Union[FunctionInput, _Mapping]]] = ..., observed_resources: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., required_resources: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., credentials: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., required_schemas: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., composite_resource_definition: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class CompositeOutput(_message.Message):
    __slots__ = ("composite_resource", "composed_resources", "deleted_resources", "events", "required_resources", "required_schemas")
    COMPOSITE_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    COMPOSED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    DELETED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_SCHEMAS_FIELD_NUMBER: _ClassVar[int]
    composite_resource: _struct_pb2.Struct
    composed_resources: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    deleted_resources: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    required_resources: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    required_schemas: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    def __init__(self, composite_resource: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., composed_resources: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., deleted_resources: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ..., required_resources: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., required_schemas: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ...) -> None: ...

class OperationInput(_message.Message):
    __slots__ = ("operation", "functions", "required_resources", "credentials", "required_schemas")
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_SCHEMAS_FIELD_NUMBER: _ClassVar[int]
    operation: _struct_pb2.Struct
    functions: _containers.RepeatedCompositeFieldContainer[FunctionInput]
    required_resources: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    credentials: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    required_schemas: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    def __init__(self, operation: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., functions: _Optional[_Iterable[_Union[FunctionInput, _Mapping]]] = ..., required_resources: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., credentials: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., required_schemas: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ...) -> None: ...

class OperationOutput(_message.Message):
    __slots__ = ("operation", "applied_resources", "events", "required_resources", "required_schemas")
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    APPLIED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_SCHEMAS_FIELD_NUMBER: _ClassVar[int]
    operation: _struct_pb2.Struct
    applied_resources: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    events: _containers.RepeatedCompositeFieldContainer[Event]
    required_resources: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    required_schemas: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    def __init__(self, operation: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., applied_resources: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., events: _Optional[_Iterable[_Union[Event, _Mapping]]] = ..., required_resources: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., required_schemas: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ...) -> None: ...

class CronOperationInput(_message.Message):
    __slots__ = ("cron_operation", "scheduled_time")
    CRON_OPERATION_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_TIME_FIELD_NUMBER: _ClassVar[int]
    cron_operation: _struct_pb2.Struct
    scheduled_time: _timestamp_pb2.Timestamp
    def __init__(self, cron_operation: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., scheduled_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CronOperationOutput(_message.Message):
    __slots__ = ("operation",)
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    operation: _struct_pb2.Struct
    def __init__(self, operation: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class WatchOperationInput(_message.Message):
    __slots__ = ("watch_operation", "watched_resource")
    WATCH_OPERATION_FIELD_NUMBER: _ClassVar[int]
    WATCHED_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    watch_operation: _struct_pb2.Struct
    watched_resource: _struct_pb2.Struct
    def __init__(self, watch_operation: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., watched_resource: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class WatchOperationOutput(_message.Message):
    __slots__ = ("operation",)
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    operation: _struct_pb2.Struct
    def __init__(self, operation: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...
