"""Find the fleet objects a call has read before without reading them one by one.

A steady call brings the whole fleet again, every object unchanged but encoded anew (Go's
protobuf writes map entries in a new order each time). Keying each object by its
``(uid, resourceVersion)`` (:func:`.fields.object_key`) costs a Python-level decode of its
``metadata`` and a dozen steps on the decoded messages: ~4 us per object, 45 ms at
11,000. Here the keys of a whole requirement are read by one chain of C-level ``map``
calls (no Python frame per object): each object is decoded as :data:`lazy.Identity`
(``metadata``'s values left as their encoded ``Value``), and its key is its ``uid`` and
``resourceVersion`` Values exactly as encoded, a pair of bytes.

Those raw pairs are not the memo's keys; each is an *alias* of one. An alias is made from
a key the memo was given the exact way (:func:`.fields.object_key`, or a replica's deep
decode): the key's uid and resourceVersion, each encoded as protobuf encodes a string
Value (``0x1a``, the length, the text: the one encoding Go writes). A raw pair equal to an
alias therefore decodes, by protobuf's rules, to that key's uid and resourceVersion, and
names the same memo entry the exact way would; any other encoding, or an object without
them, is simply not found, and read the exact way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter, itemgetter
from typing import Any, Generic

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2
from google.protobuf.message import DecodeError

from modelplane.planning import lazy
from modelplane.planning.fields import _MISSING, Item, T, object_key
from modelplane.planning.memo import Memo
from modelplane.planning.wire import EncodedItems, encoded_items

RawIdentity = tuple[bytes, bytes]
"""An object's ``metadata.uid`` and ``metadata.resourceVersion`` Values, as encoded."""

PROBE = 32
"""How many items :meth:`KnownObjects.mostly_known` looks up."""
_STRING_TAG = 0x1A  # google.protobuf.Value.string_value: field 3, length-delimited
_SHORT = 0x80  # a length below this is one byte of varint

# The C-level steps from an encoded object to its raw identity, outermost last.
_FIELDS = attrgetter("fields")
_METADATA = itemgetter("metadata")  # an absent one reads as empty (a map inserts it)
_META_FIELDS = attrgetter("struct_value.fields")
_PAIR = itemgetter("uid", "resourceVersion")


def raw_identities(items: Sequence[Item]) -> list[RawIdentity] | None:
    """Every item's raw identity, in order; None when an item is not encoded, or one does
    not decode (the caller then keys each the exact way)."""
    encodings = _encodings(items)
    if encodings is None:
        return None
    decoded = map(lazy.Identity.FromString, encodings)
    try:
        return list(map(_PAIR, map(_META_FIELDS, map(_METADATA, map(_FIELDS, decoded)))))
    except (DecodeError, TypeError):  # TypeError: an EncodedItems item held decoded (None)
        return None


def _encodings(items: Sequence[Item]) -> Iterable[bytes | None] | None:
    if isinstance(items, EncodedItems):
        return items.encodings()
    if all(isinstance(item, bytes) for item in items):
        return items  # every item checked: bytes
    return None


def alias_of(key: object) -> RawIdentity | None:
    """The raw identity that is the one encoding of the memo key ``key``
    (:func:`.fields.identity`'s text ``"<uid length>:<uid><resourceVersion>"``), if any:
    None for a key by content, or texts of 128 bytes or more (a longer length varint)."""
    if not isinstance(key, str):
        return None
    size, _, rest = key.partition(":")
    if not size.isdigit():
        return None
    uid, version = rest[: int(size)].encode(), rest[int(size) :].encode()
    if not (0 < len(uid) < _SHORT and 0 < len(version) < _SHORT):
        return None
    return _string_value(uid), _string_value(version)


def _string_value(text: bytes) -> bytes:
    return bytes((_STRING_TAG, len(text))) + text


class KnownObjects(Generic[T]):
    """A fleet memo's entries found by raw identity (the aliases it learnt), in bulk.

    Aliases are forgotten all at once when they outnumber the memo's generation, or the
    memo is reset (an object whose alias is gone is keyed the exact way once more, and
    aliased again).
    """

    def __init__(self, memo: Memo[T]) -> None:
        """Find entries of ``memo`` (its aliases are forgotten when it is reset)."""
        self._memo = memo
        self._aliases: dict[RawIdentity, str] = {}
        memo.on_clear(self.clear)

    def find(self, items: Sequence[Item]) -> tuple[list[Any], list[RawIdentity]] | None:
        """What each item reads as when remembered (else ``_MISSING``), and the raw
        identities; None when the items cannot be keyed in bulk."""
        raws = raw_identities(items)
        if raws is None:
            return None
        alias = self._aliases.get
        return self._memo.peek([alias(raw) for raw in raws]), raws

    def mostly_known(self, items: Sequence[Item]) -> bool:
        """Whether most of the first :data:`PROBE` items are found (a call after a fleet
        mostly new reads in bulk when it was read before, else by decode)."""
        probe = items[:PROBE]
        found = self.find(probe)
        return found is not None and 2 * found[0].count(_MISSING) < len(probe)

    def read(self, item: Item, read: Callable[[Item], T] | None = None) -> T:
        """What ``item`` reads as, keyed the exact way (by the memo, or by ``read``, which
        reads through it); its key is aliased when it was remembered (an object is
        aliased once seen again, so a fleet never seen twice costs no aliases)."""
        misses = self._memo.misses
        found = (read or self._memo)(item)
        if self._memo.misses == misses:
            self.learn(self._memo.last_key)
        return found

    def learn(self, key: object) -> None:
        """Alias the memo key ``key`` (read the exact way) by its raw identity, if it has
        one; all aliases go at once when they outnumber the memo's generation."""
        raw = alias_of(key)
        if raw is None:
            return
        if len(self._aliases) >= self._memo.limit:
            self._aliases.clear()
        self._aliases[raw] = key  # type: ignore[assignment]  # alias_of: a str key

    def clear(self) -> None:
        """Forget every alias."""
        self._aliases.clear()


def request_identity(req: fnv1.RunFunctionRequest) -> bytes | None:
    """A digest that names everything a request holds, for a memo of responses; None when
    it has no ``meta.tag`` (such a client is not Crossplane), or an item will not decode.

    Every object is named by its ``(uid, resourceVersion)``, which the API server changes
    with every change of its content; an object without them (a request built by hand)
    by its deterministic encoding; everything else (the meta and its tag, the desired
    state, the input, the context, the credentials, the required schemas, the observed
    resources' connection details) by its deterministic encoding. Crossplane's tag is
    a digest of the whole request, but within a reconcile's requirement loop every later
    call keeps the first call's tag with other required resources, so the tag alone
    does not name a request. Required resources are named in the order listed (Crossplane
    lists them by namespace and name), a fleet's in bulk (:func:`raw_identities`).
    """
    if not req.meta.tag:
        return None
    digest = hashlib.sha256()
    for message in (req.meta, req.desired, req.input, req.context):
        digest.update(_framed(message.SerializeToString(deterministic=True)))
    for messages in (req.credentials, req.required_schemas):
        digest.update(_framed(b"%d" % len(messages)))
        for name in sorted(messages):
            digest.update(_framed(name.encode()))
            digest.update(_framed(messages[name].SerializeToString(deterministic=True)))
    digest.update(_resource_named(req.observed.composite))
    digest.update(_framed(b"%d" % len(req.observed.resources)))
    for name in sorted(req.observed.resources):
        digest.update(_framed(name.encode()) + _resource_named(req.observed.resources[name]))
    for answered in (req.required_resources, req.extra_resources):
        digest.update(_framed(b"%d" % len(answered)))
        for name in sorted(answered):
            named = _items_named(encoded_items(answered[name]))
            if named is None:
                return None
            digest.update(_framed(name.encode()) + _framed(b"%d" % len(named)))
            digest.update(b"".join(named))
    return digest.digest()


def _items_named(items: EncodedItems) -> list[bytes] | None:
    """Each item named by its raw identity (both Values as encoded, each after its length),
    or, when one lacks it, each as :func:`_object_named`; None: an item that will not
    decode."""
    raws = raw_identities(items)
    if raws is not None and all(uid and version for uid, version in raws):
        return [b"%d:%s%d:%s" % (len(uid), uid, len(version), version) for uid, version in raws]
    try:
        return [_object_named(item) for item in items]
    except DecodeError:
        return None


def _resource_named(found: fnv1.Resource) -> bytes:
    """An observed resource: its object, its connection details and its readiness."""
    details = found.connection_details
    named = [_object_named(found.resource), _framed(b"%d:%d" % (found.ready, len(details)))]
    named += [_framed(key.encode()) + _framed(details[key]) for key in sorted(details)]
    return b"".join(named)


def _object_named(item: Item) -> bytes:
    """An object by the fleet memo's key (:func:`.fields.object_key`): its identity, else
    its content's digest. Decoded first, so content is named the same in any map order
    (the key of an encoding without identity digests its bytes); raises DecodeError."""
    struct = item if isinstance(item, struct_pb2.Struct) else struct_pb2.Struct.FromString(item)
    key = object_key(struct)
    return b"i" + _framed(key.encode()) if isinstance(key, str) else b"c" + _framed(key)


def _framed(what: bytes) -> bytes:
    return len(what).to_bytes(8, "big") + what
