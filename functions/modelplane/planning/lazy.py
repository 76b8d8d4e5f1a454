"""Struct, Value and ListValue decoded one level at a time.

A fleet object's encoding is a ``google.protobuf.Struct``. Decoding it whole builds a
message for every value, the ModelReplica's pod template included, which the fleet
reader never looks at. These types share the wire format of Struct, Value and
ListValue, except that a nested object or list stays encoded (``bytes``) until it is
read, so reading a replica decodes only the path to the fields it needs: a third of
the cost of decoding it whole. :data:`Object` decodes the first levels, which every
reader reads, at once.

Values keep Struct's names: ``WhichOneof("kind")`` gives ``struct_value`` or
``list_value`` for nested ones, whose bytes :data:`Struct` and :data:`ListValue` decode.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_PACKAGE = "modelplane.lazy"
_F = descriptor_pb2.FieldDescriptorProto


_BYTES = ""
"""A nested object or list kept encoded: the field is ``bytes``."""


def _add_shape(
    proto: descriptor_pb2.FileDescriptorProto,
    name: str,
    struct: str | None,
    items: str | None,
    *,
    with_list: bool = True,
) -> None:
    """Add ``{prefix}Value{suffix}``, ``{prefix}Struct{suffix}`` and (``with_list``)
    ``{prefix}List{suffix}``, with ``name`` as ``{prefix}{{}}{suffix}``.

    A Value's ``struct_value`` and ``list_value`` are the message ``struct``/``items``
    name, encoded (:data:`_BYTES`), or absent (None: a deeper one is unknown fields).
    """
    value = proto.message_type.add(name=name.format("Value"))
    value.oneof_decl.add(name="kind")
    nested = (("struct_value", 5, struct), ("list_value", 6, items))
    for field_name, number, kind in (
        ("null_value", 1, _F.TYPE_INT32),  # google.protobuf.NullValue, an enum: a varint
        ("number_value", 2, _F.TYPE_DOUBLE),
        ("string_value", 3, _F.TYPE_STRING),
        ("bool_value", 4, _F.TYPE_BOOL),
    ):
        value.field.add(
            name=field_name, number=number, type=kind, label=_F.LABEL_OPTIONAL, oneof_index=0
        )
    for field_name, number, type_name in nested:
        if type_name is None:
            continue
        field = value.field.add(
            name=field_name,
            number=number,
            type=_F.TYPE_MESSAGE if type_name else _F.TYPE_BYTES,
            label=_F.LABEL_OPTIONAL,
            oneof_index=0,
        )
        if type_name:
            field.type_name = f".{_PACKAGE}.{type_name}"
    struct_message = proto.message_type.add(name=name.format("Struct"))
    entry = struct_message.nested_type.add(name="FieldsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    _message_field(entry, "value", 2, name.format("Value"))
    _message_field(struct_message, "fields", 1, f"{name.format('Struct')}.FieldsEntry", many=True)
    if with_list:
        _add_list(proto, name.format("List"), name.format("Value"))


def _add_list(proto: descriptor_pb2.FileDescriptorProto, name: str, value: str) -> None:
    _message_field(proto.message_type.add(name=name), "values", 1, value, many=True)


def _message_field(
    message: descriptor_pb2.DescriptorProto,
    name: str,
    number: int,
    type_name: str,
    *,
    many: bool = False,
) -> None:
    """Add a field holding this package's message ``type_name`` (``many``: repeated)."""
    message.field.add(
        name=name,
        number=number,
        type=_F.TYPE_MESSAGE,
        type_name=f".{_PACKAGE}.{type_name}",
        label=_F.LABEL_REPEATED if many else _F.LABEL_OPTIONAL,
    )


def _classes(proto: descriptor_pb2.FileDescriptorProto, *names: str) -> tuple[Any, ...]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return tuple(
        message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
        for name in names
    )


def _schema() -> tuple[Any, ...]:
    proto = descriptor_pb2.FileDescriptorProto(
        name="modelplane/lazy/struct.proto", package=_PACKAGE, syntax="proto3"
    )
    # Level 0 is Value/Struct, whose nested objects stay encoded; level k > 0 decodes
    # its nested objects as level k - 1. Lists stay encoded at every level.
    for level in range(OBJECT_LEVELS):
        suffix = str(level) if level else ""
        nested = f"Struct{level - 1 or ''}" if level else _BYTES
        _add_shape(proto, "{}" + suffix, nested, _BYTES, with_list=False)
    _add_list(proto, "ListValue", "Value")
    deepest = f"Struct{OBJECT_LEVELS - 1}"
    return _classes(proto, "Struct", "ListValue", deepest)


OBJECT_LEVELS = 3
"""How deep :data:`Object` decodes objects: an object, its ``metadata``/``spec``/``status``
and their objects (``labels``), in one C-level decode where reading them one level at a
time took one Python-level decode each."""

Struct, ListValue, Object = _schema()
"""The message classes: ``Struct.FromString(encoded).fields``, ``ListValue...values``;
``Object`` reads like ``Struct`` but holds its objects decoded :data:`OBJECT_LEVELS`
deep (``struct_value`` a message, not bytes; lists still bytes). Decoding raises
protobuf's DecodeError on bytes that are neither."""


TREE_LEVELS = 8
"""How deep :data:`Tree` decodes, counting each object and each list as a level: deep
enough for every field the fleet reader reads (a replica's
``spec.engines[].members[].deviceRequests[].count`` is at level 7, a cluster's
``status.gpuPools[].devices[].attributes.<name>.string`` too), so a fleet object is
decoded by one C-level call; what lies deeper (a pod template's containers) stays
encoded."""


def _tree_schema(prefix: str, levels: int) -> Any:
    """``{prefix}Struct0``: Struct, Value and ListValue decoded ``levels`` deep, lists too."""
    proto = descriptor_pb2.FileDescriptorProto(
        name=f"modelplane/lazy/{prefix.lower()}.proto", package=_PACKAGE, syntax="proto3"
    )
    for level in range(levels):
        deeper = level + 1 < levels
        struct = f"{prefix}Struct{level + 1}" if deeper else _BYTES
        items = f"{prefix}List{level + 1}" if deeper else _BYTES
        _add_shape(proto, prefix + "{}" + str(level), struct, items)
    return _classes(proto, f"{prefix}Struct0")[0]


Tree = _tree_schema("Tree", TREE_LEVELS)
"""A fleet object decoded :data:`TREE_LEVELS` deep in one call (lists too), read like a
Struct: ``Tree.FromString(encoded).fields``. A Value's ``struct_value``/``list_value``
is a message above the last level and bytes at it, so the readers take both."""

Head = _tree_schema("Head", 2)
"""An object's first two levels (``metadata`` and its fields; what lies deeper stays
encoded): the least decode that reads an object's ``uid`` and ``resourceVersion``."""


REPLICA_OBJECTS, REPLICA_LISTS = 4, 3
"""How deep :data:`Replica` decodes a ModelReplica: objects within objects, and lists
within lists, counted apart. A replica's engines are read down to
``spec.engines[].members[].deviceRequests[].count`` (the 4th object, the 3rd list) and
``...members[].worker.nodes``; a member's ``template`` is decoded only as far as its
own fields (the 4th object), what lies deeper is kept as unknown fields."""


def _replica_schema() -> tuple[Any, ...]:
    """``Replica``: a Struct whose nested objects and lists decode to the depths above;
    a deeper one is a field the schema lacks, so protobuf keeps it as unknown fields and
    ``DiscardUnknownFields`` drops it."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="modelplane/lazy/replica.proto", package=_PACKAGE, syntax="proto3"
    )
    for objects in range(REPLICA_OBJECTS + 1):
        for lists in range(REPLICA_LISTS + 1):
            struct = f"RStruct{objects + 1}_{lists}" if objects < REPLICA_OBJECTS else None
            items = f"RList{objects}_{lists + 1}" if lists < REPLICA_LISTS else None
            _add_shape(proto, "R{}" + f"{objects}_{lists}", struct, items)
    return _classes(proto, "RStruct0_0", "RValue1_0")


Replica, ReplicaSpecValue = _replica_schema()
"""A ModelReplica decoded as :data:`REPLICA_OBJECTS` and :data:`REPLICA_LISTS` say: every
field the fleet reader reads, and a member's template only down to its own fields.
``ReplicaSpecValue`` is the type of a field of its ``spec`` (``engines``)."""


def _identity_schema() -> Any:
    """``IdStruct``: an object whose values are Values (their oneof kept, so the last kind
    encoded wins as in a Struct), whose objects hold each value still encoded."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="modelplane/lazy/identity.proto", package=_PACKAGE, syntax="proto3"
    )
    _add_shape(proto, "Id{}", "IdEncodedStruct", _BYTES, with_list=False)
    inner = proto.message_type.add(name="IdEncodedStruct")
    entry = inner.nested_type.add(name="FieldsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=_F.TYPE_BYTES, label=_F.LABEL_OPTIONAL)
    _message_field(inner, "fields", 1, "IdEncodedStruct.FieldsEntry", many=True)
    return _classes(proto, "IdStruct")[0]


Identity = _identity_schema()
"""An object's first level, and each value of its objects (``metadata``) as its encoded
``Value``: the least decode that gives ``metadata.uid`` and ``metadata.resourceVersion``
as bytes, with no message per field (:mod:`.identities` keys a fleet by them)."""
