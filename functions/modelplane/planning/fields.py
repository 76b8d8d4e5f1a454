"""Typed reads of a fleet object, decoded or still encoded: absent reads as empty, a field of
the wrong type raises :class:`UnreadableError` naming it; and each object's identity.

The readers of :mod:`.clusters`, :mod:`.replicas` and :mod:`.cache` are built on these.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from crossplane.function import resource
from google.protobuf import json_format
from google.protobuf import struct_pb2 as structpb
from google.protobuf.message import DecodeError

from modelplane.domain.scheduling.fleet import (
    ExistingReplica,
)
from modelplane.planning import lazy

_MISSING = object()
T = TypeVar("T")
_TYPES = {
    "null_value": "null",
    "number_value": "a number",
    "string_value": "a string",
    "bool_value": "a boolean",
    "struct_value": "an object",
    "list_value": "a list",
    None: "empty",
}
Fields = Any  # a Struct's ``fields`` map (protobuf's MessageMap of str -> Value)
_EMPTY = structpb.Value()
_NO_FIELDS: Any = structpb.Struct().fields  # read only: never written to


class UnreadableError(ValueError):
    """A field of a fleet object that is not of the type its schema gives it.

    Attributes:
        path: The field, e.g. ``status.gpuPools[0].nodes``.
        problem: What is wrong with it, e.g. ``is a string, not a number``.
    """

    def __init__(self, path: str, problem: str) -> None:
        """Name the field and what is wrong with it."""
        super().__init__(f"{path} {problem}")
        self.path = path
        self.problem = problem

    def within(self, parent: str) -> UnreadableError:
        """The same problem, with the path of the object or list holding the field."""
        joined = f"{parent}{self.path}" if self.path.startswith("[") else f"{parent}.{self.path}"
        return UnreadableError(joined, self.problem)


def as_item(obj: Item | Mapping[str, Any]) -> Item:
    """Return a fleet object as it is when decoded or encoded, else as a Struct."""
    return obj if isinstance(obj, bytes) else as_struct(obj)


def as_struct(obj: structpb.Struct | Mapping[str, Any]) -> structpb.Struct:
    """Return a Struct for a Struct or a plain dict.

    A dict that is no JSON (a YAML timestamp, say) converts with such values as text; one
    that cannot convert at all reads as an empty object (which every reader skips).
    """
    if isinstance(obj, structpb.Struct):
        return obj
    try:
        return resource.dict_to_struct(dict(obj))
    except (json_format.ParseError, TypeError, ValueError, RecursionError):
        pass
    try:
        return resource.dict_to_struct(json.loads(json.dumps(obj, default=str)))
    except (json_format.ParseError, TypeError, ValueError, RecursionError):
        return structpb.Struct()


# --- typed reads: absent reads as empty, the wrong type raises UnreadableError ------------------


def _value(fields: Fields, key: str, kind: str) -> Any:
    """The Value at ``key`` if it holds ``kind``; None if absent or null."""
    value = fields.get(key)
    if value is None:
        return None
    got = value.WhichOneof("kind")
    if got == kind:
        return value
    if got is None or got == "null_value":
        return None
    error = UnreadableError(key, f"is {_TYPES[got]}, not {_TYPES[kind]}")
    raise error


def _fields_of(value: Any) -> Fields:
    """The fields of a Value holding an object: decoded, or still encoded (.lazy).

    Anything else reads as an empty object (callers check the kind first when it
    matters).
    """
    inner = value.struct_value
    return _decode_struct(inner).fields if isinstance(inner, bytes) else inner.fields


def _values_of(value: Any) -> Any:
    """The values of a Value holding a list: decoded, or still encoded (.lazy)."""
    inner = value.list_value
    return _decode_list(inner).values if isinstance(inner, bytes) else inner.values


def _lenient(value: Any) -> Fields:
    """:func:`_fields_of` for what only names an object: what does not decode is empty."""
    try:
        return _fields_of(value)
    except DecodeError:
        return _NO_FIELDS


def _encoded(item: Item) -> Any:
    """A fleet object decoded for reading, however it came.

    It is decoded in one call down to every field the readers read (:data:`lazy.Tree`).
    When that fails, its first levels are decoded (:data:`lazy.Object`), and failing that
    it is read one level at a time, so what does read is read and the rest is named as
    before; bytes that are no Struct read as an empty object, which every reader skips.
    """
    encoded = item if isinstance(item, bytes) else item.SerializeToString()
    for decode in (_decode_tree, _decode_object, _decode_struct):
        try:
            return decode(encoded)
        except DecodeError:
            continue
    return lazy.Struct()


_decode_struct, _decode_list = lazy.Struct.FromString, lazy.ListValue.FromString
_decode_object = lazy.Object.FromString
_decode_tree, _decode_head = lazy.Tree.FromString, lazy.Head.FromString
_decode_replica = lazy.Replica.FromString


def _sub(fields: Fields, key: str) -> Fields:
    """The fields of a nested object (empty when absent)."""
    value = _value(fields, key, "struct_value")
    return _NO_FIELDS if value is None else _fields_of(value)


def _at(fields: Fields, key: str, read: Callable[[Fields], T]) -> T:
    """Read the object at ``key``; a problem inside it is named with ``key`` in its path."""
    inner = _sub(fields, key)
    try:
        return read(inner)
    except UnreadableError as exc:
        error = exc.within(key)
        raise error from None


def _text(fields: Fields, key: str) -> str:
    value = _value(fields, key, "string_value")
    return "" if value is None else str(value.string_value)


def _objects(fields: Fields, key: str) -> list[Fields]:
    """The objects of a nested list (empty when absent)."""
    value = _value(fields, key, "list_value")
    if value is None:
        return []
    return [_object(item, _same, key + "[{}]", i) for i, item in enumerate(_values_of(value))]


def _same(fields: Fields) -> Fields:
    return fields


def _object(value: Any, read: Callable[[Fields], T], path: str, at: object) -> T:
    """Read the object ``value`` holds; a problem is named with ``path.format(at)``.

    The path is formatted only for a problem: this runs for every item of every list read.

    Raises:
        UnreadableError: ``value`` holds no object, or ``read`` found a problem in it.
    """
    got = value.WhichOneof("kind")
    if got != "struct_value":
        error = UnreadableError(path.format(at), f"is {_TYPES[got]}, not an object")
        raise error
    try:
        return read(_fields_of(value))
    except UnreadableError as exc:
        error = exc.within(path.format(at))
        raise error from None


def _whole(fields: Fields, key: str, default: int) -> int:
    """A count: a whole number of at least 0."""
    value = _value(fields, key, "number_value")
    if value is None:
        return default
    number = float(value.number_value)
    if not number.is_integer() or number < 0:
        error = UnreadableError(key, f"is {number:g}, not a whole number of at least 0")
        raise error
    return int(number)


def _label(labels_: Fields, key: str) -> str:
    value = labels_.get(key)
    if value is None:
        return ""
    got = value.WhichOneof("kind")
    if got != "string_value":
        error = UnreadableError(f'labels["{key}"]', f"is {_TYPES[got]}, not a string")
        raise error
    return str(value.string_value)


def _string_map(fields: Fields, key: str) -> dict[str, str]:
    """A map of strings (labels, matchLabels): every value must be a string."""
    found = _sub(fields, key)
    out = {}
    for name, value in found.items():
        got = value.WhichOneof("kind")
        if got != "string_value":
            error = UnreadableError(f'{key}["{name}"]', f"is {_TYPES[got]}, not a string")
            raise error
        out[str(name)] = str(value.string_value)
    return out


def is_ready(fields: Fields) -> bool:
    """Tell whether an object's status carries the condition Ready=True.

    Lenient: a status or conditions of the wrong type read as not Ready.
    """
    status = _lenient(fields.get("status", _EMPTY))
    for value in _values_of(status.get("conditions", _EMPTY)):
        condition = _lenient(value)
        kind, state = condition.get("type", _EMPTY), condition.get("status", _EMPTY)
        if kind.string_value == "Ready" and state.string_value == "True":
            return True
    return False


def _ready(status: Fields) -> bool:
    """Ready=True among the conditions, which must be objects with string fields."""
    for i, condition in enumerate(_objects(status, "conditions")):
        try:
            if _text(condition, "type") == "Ready" and _text(condition, "status") == "True":
                return True
        except UnreadableError as exc:
            error = exc.within(f"conditions[{i}]")
            raise error from None
    return False


# --- reading each distinct object once ------------------------------------------------------


def content_key(message: Any) -> bytes:
    """A message's identity by content: a digest of its deterministic encoding.

    Deterministic, so that the same content read from encodings whose map entries came
    in different orders (Go's protobuf writes a new order every time) has one key.
    """
    return hashlib.blake2b(message.SerializeToString(deterministic=True), digest_size=16).digest()


Item: TypeAlias = structpb.Struct | bytes  # a fleet object, decoded or still encoded (see .wire)


def decoded(item: Item) -> structpb.Struct:
    """A fleet object as a Struct; an encoding that does not decode reads as empty."""
    if not isinstance(item, bytes):
        return item
    try:
        return structpb.Struct.FromString(item)
    except DecodeError:
        return structpb.Struct()


def object_key(message: Item) -> str | bytes:
    """An object's identity: its ``(uid, resourceVersion)``, else a digest of its content.

    The API server gives every object a uid and changes its resourceVersion on every
    write, status included, so the pair names one content exactly. It is read from the
    object's ``metadata`` alone, decoded or encoded: Crossplane encodes each request anew
    and Go's protobuf writes map entries in a different order every time, so the same
    object never arrives as the same bytes twice and a digest of them would never match.
    Objects without them (YAML read by ``modelplane plan``, tests) are keyed by their
    content (bytes, never equal to an identity's text).
    """
    key = identity(_head(message)) if isinstance(message, bytes) else identity(message)
    if key is not None:
        return key
    return hashlib.sha256(message).digest() if isinstance(message, bytes) else content_key(message)


def _head(encoded: bytes) -> Any:
    """An encoded object's first two levels (:data:`lazy.Head`); empty if they do not decode."""
    try:
        return _decode_head(encoded)
    except DecodeError:
        return lazy.Struct()


def identity(obj: Any) -> str | None:
    """``uid`` and ``resourceVersion`` of an object (a Struct, or one read with .lazy), if
    both, as one text (the uid's length first, so no two pairs share it): one string per
    remembered object rather than a tuple of two, on fleets of 50,000."""
    found = _metadata(obj)
    if found is None:
        return None
    uid, version = found.get("uid"), found.get("resourceVersion")
    if uid is None or version is None:
        return None
    uid_text, version_text = uid.string_value, version.string_value  # "" unless strings
    if not uid_text or not version_text:
        return None
    return f"{len(uid_text)}:{uid_text}{version_text}"


def _metadata(obj: Any) -> Fields | None:
    """The fields of an object's ``metadata`` (a Struct, or one read with .lazy, whose
    ``metadata`` may still be encoded); None when it has none or it does not decode."""
    meta = obj.fields.get("metadata")
    if meta is None or meta.WhichOneof("kind") != "struct_value":
        return None
    inner = meta.struct_value
    try:
        return _decode_struct(inner).fields if isinstance(inner, bytes) else inner.fields
    except DecodeError:
        return None


def object_name(message: Item) -> tuple[str, str] | None:
    """An object's ``(namespace, name)``, read from its ``metadata`` alone; None without
    a name. One object fetched for two requirements is encoded anew for each, so its
    bytes differ: its name is what says it is the same."""
    found = _metadata(_head(message) if isinstance(message, bytes) else message)
    if found is None:
        return None
    name, namespace = found.get("name"), found.get("namespace")
    if name is None or not name.string_value:
        return None
    return (namespace.string_value if namespace is not None else "", name.string_value)


# --- reading each object once, and what cannot be read -------------------------------------


@dataclass(frozen=True)
class Skipped:
    """A fleet object that cannot be read: who it is, as far as that reads, and why.

    Attributes:
        what: ``Kind namespace/name`` (or ``Kind name``).
        problem: The field and what is wrong with it.
        replica: For a ModelReplica, what of it reads (no engines): whose it is and where.
    """

    what: str
    problem: str
    replica: ExistingReplica | None = None


UNNAMED = "(unnamed)"
"""How :attr:`Skipped.what` names an object without a name."""


def _describe(kind: str, fields: Fields) -> str:
    meta = _lenient(fields.get("metadata", _EMPTY))
    name = str(meta.get("name", _EMPTY).string_value) or UNNAMED
    namespace = str(meta.get("namespace", _EMPTY).string_value)
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
