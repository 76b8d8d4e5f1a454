"""Protobuf Structs as plain Python values: what every reader of a request starts from."""

from __future__ import annotations

from typing import Any

from google.protobuf import struct_pb2 as structpb


def struct_to_dict(struct: structpb.Struct) -> dict[str, Any]:
    """Convert a protobuf Struct to plain Python values, with whole floats as ints.

    protobuf carries every number as a double; Kubernetes integers must stay integers.
    Iterative, not recursive: an object may nest as deep as Kubernetes allows (10,000
    levels), far beyond Python's recursion limit. (The SDK's ``resource.struct_to_dict``
    keeps floats and recurses, so it serves neither need.)
    """
    root: dict[str, Any] = {}
    stack: list[tuple[Any, Any]] = [(struct, root)]
    while stack:
        source, target = stack.pop()
        pairs = (
            source.fields.items()
            if isinstance(source, structpb.Struct)
            else enumerate(source.values)
        )
        for key, value in pairs:
            target[key] = plain(value, stack)
    return root


def plain(value: structpb.Value, stack: list[tuple[Any, Any]]) -> Any:
    """Return a Value's plain form; a map or list comes back empty and is queued to fill."""
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        child: dict[str, Any] = {}
        stack.append((value.struct_value, child))
        return child
    if kind == "list_value":
        items: list[Any] = [None] * len(value.list_value.values)
        stack.append((value.list_value, items))
        return items
    if kind == "number_value":
        number = value.number_value
        return int(number) if number.is_integer() else number
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    return None


def text_field(struct: structpb.Struct, name: str) -> str:
    """Return a top-level string field of a Struct ("" when missing)."""
    value = struct.fields.get(name)
    return value.string_value if value is not None else ""


def conditions_of(struct: structpb.Struct) -> list[dict[str, Any]]:
    """Return an object's ``status.conditions`` as maps of type and status (``[]`` if none),
    read from the Struct without converting the whole object."""
    status = struct.fields.get("status")
    if status is None or status.WhichOneof("kind") != "struct_value":
        return []
    found = status.struct_value.fields.get("conditions")
    if found is None or found.WhichOneof("kind") != "list_value":
        return []
    return [
        {k: plain(v, []) for k, v in item.struct_value.fields.items() if k in ("type", "status")}
        for item in found.list_value.values
        if item.WhichOneof("kind") == "struct_value"
    ]
