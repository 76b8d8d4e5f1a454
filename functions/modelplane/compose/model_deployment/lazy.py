"""Struct, Value and ListValue decoded one level at a time.

A fleet object's encoding is a ``google.protobuf.Struct``. Decoding it whole builds a
message for every value, the ModelReplica's pod template included, which the fleet
reader never looks at. These types share the wire format of Struct, Value and
ListValue, except that a nested object or list stays encoded (``bytes``) until it is
read, so reading a replica decodes only the path to the fields it needs: a third of
the cost of decoding it whole.

Values keep Struct's names: ``WhichOneof("kind")`` gives ``struct_value`` or
``list_value`` for nested ones, whose bytes :data:`Struct` and :data:`ListValue` decode.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_PACKAGE = "modelplane.lazy"
_F = descriptor_pb2.FieldDescriptorProto


def _schema() -> tuple[Any, Any]:
    proto = descriptor_pb2.FileDescriptorProto(
        name="modelplane/lazy/struct.proto", package=_PACKAGE, syntax="proto3"
    )
    value = proto.message_type.add(name="Value")
    value.oneof_decl.add(name="kind")
    for name, number, kind in (
        ("null_value", 1, _F.TYPE_INT32),  # google.protobuf.NullValue, an enum: a varint
        ("number_value", 2, _F.TYPE_DOUBLE),
        ("string_value", 3, _F.TYPE_STRING),
        ("bool_value", 4, _F.TYPE_BOOL),
        ("struct_value", 5, _F.TYPE_BYTES),
        ("list_value", 6, _F.TYPE_BYTES),
    ):
        value.field.add(name=name, number=number, type=kind, label=_F.LABEL_OPTIONAL, oneof_index=0)
    struct = proto.message_type.add(name="Struct")
    entry = struct.nested_type.add(name="FieldsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    entry.field.add(
        name="value",
        number=2,
        type=_F.TYPE_MESSAGE,
        type_name=f".{_PACKAGE}.Value",
        label=_F.LABEL_OPTIONAL,
    )
    struct.field.add(
        name="fields",
        number=1,
        type=_F.TYPE_MESSAGE,
        type_name=f".{_PACKAGE}.Struct.FieldsEntry",
        label=_F.LABEL_REPEATED,
    )
    items = proto.message_type.add(name="ListValue")
    items.field.add(
        name="values",
        number=1,
        type=_F.TYPE_MESSAGE,
        type_name=f".{_PACKAGE}.Value",
        label=_F.LABEL_REPEATED,
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return (
        message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.Struct")),
        message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.ListValue")),
    )


Struct, ListValue = _schema()
"""The message classes: ``Struct.FromString(encoded).fields``, ``ListValue...values``;
decoding raises protobuf's DecodeError on bytes that are neither."""
