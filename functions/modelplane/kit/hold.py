"""The hold rule: what a function composes again, unchanged, while it cannot compose anew.

Crossplane garbage-collects every composed resource missing from the desired state, so
a function that cannot compose something right now holds it instead (rule 2: never drop
what runs), and says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane.kit.respond import keep_status, set_condition, set_ready, warn
from modelplane.kit.structs import struct_to_dict

# Metadata the API server or a controller owns; composing it back would fight them.
_KEPT_METADATA = ("name", "namespace", "generateName", "labels", "annotations")


def unchanged(observed: Mapping[str, Any]) -> dict[str, Any]:
    """Return an observed composed resource as a desired one: as it is, less what the
    API server and its controllers own (status, uid, resourceVersion, managedFields,
    owner references, finalizers). The same rule :func:`hold` applies to Structs."""
    struct = resource.dict_to_struct(dict(observed))
    _strip_to_desired(struct)
    return struct_to_dict(struct)


def hold(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, keys: Iterable[str] | None = None
) -> list[str]:
    """Compose again, unchanged, every observed resource (or those of ``keys``) that is
    not desired yet, so that Crossplane deletes none of them; return the keys held."""
    wanted = req.observed.resources.keys() if keys is None else keys
    held = []
    for key in sorted(wanted):
        if key not in req.observed.resources or key in rsp.desired.resources:
            continue
        _compose_unchanged(rsp, key, req.observed.resources[key].resource)
        held.append(key)
    return held


def _compose_unchanged(rsp: fnv1.RunFunctionResponse, key: str, found: structpb.Struct) -> None:
    """Compose a copy of an observed Struct, as :func:`unchanged` would, without converting
    it: an object may nest deeper than Python could walk."""
    desired = rsp.desired.resources[key]
    desired.Clear()
    desired.resource.CopyFrom(found)
    _strip_to_desired(desired.resource)


def _strip_to_desired(struct: structpb.Struct) -> None:
    """Remove, in place, the status and the metadata the server and controllers own."""
    fields = struct.fields
    if "status" in fields:
        del fields["status"]
    if "metadata" in fields and fields["metadata"].WhichOneof("kind") == "struct_value":
        meta = fields["metadata"].struct_value.fields
        for name in [k for k in meta if k not in _KEPT_METADATA]:
            del meta[name]


def asking(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """Answer a call that only asks for required resources: hold what exists, quietly.

    Crossplane fetches what was required and calls again, using the last answer; this
    one is never applied, but an empty state here would still be a lie.
    """
    hold(req, rsp)


def waiting(
    rsp: fnv1.RunFunctionResponse, typ: str, reason: str, message: str, *, event: bool = True
) -> None:
    """Say why the composite cannot be composed anew: condition ``typ`` False, and a
    Warning event (Crossplane records a warning result as one)."""
    set_condition(rsp, typ, False, reason, message)
    if event:
        warn(rsp, message)


def hold_and_wait(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    typ: str,
    reason: str,
    message: str,
    *,
    keep: Iterable[str] = (),
    event: bool = True,
) -> list[str]:
    """Compose nothing anew: hold everything observed, publish again the status fields
    ``keep`` names (others read them), say why in condition ``typ`` (see :func:`waiting`)
    and keep the composite not Ready; return the keys held.

    What an adapter does when its spec cannot be read, or what it needs is not there yet:
    rule 2 in one place, so that no adapter drops what runs while it waits.
    """
    held = hold(req, rsp)
    keep_status(req, rsp, *keep)
    waiting(rsp, typ, reason, message, event=event)
    set_ready(rsp, False)
    return held
