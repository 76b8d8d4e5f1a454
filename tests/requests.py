"""Build RunFunctionRequests the way Crossplane sends them, for in-process tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format


def request(
    xr: Mapping[str, Any],
    *,
    observed: Mapping[str, Mapping[str, Any]] | None = None,
    required: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    tag: str = "test",
) -> fnv1.RunFunctionRequest:
    """Return a request for ``xr`` with observed composed resources and required resources."""
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag=tag))
    req.observed.composite.resource.CopyFrom(resource.dict_to_struct(dict(xr)))
    for key, manifest in (observed or {}).items():
        req.observed.resources[key].resource.CopyFrom(resource.dict_to_struct(dict(manifest)))
    for name, items in (required or {}).items():
        bucket = req.required_resources[name]
        for item in items:
            bucket.items.add().resource.CopyFrom(resource.dict_to_struct(dict(item)))
    return req


def as_dict(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    """Return a response as a plain dict, for whole-response comparison."""
    out: dict[str, Any] = json_format.MessageToDict(rsp, preserving_proto_field_name=True)
    return out


def conditions(rsp: fnv1.RunFunctionResponse) -> dict[str, tuple[str, str, str]]:
    """Return the response's conditions as {type: (status, reason, message)}."""
    names = {fnv1.STATUS_CONDITION_TRUE: "True", fnv1.STATUS_CONDITION_FALSE: "False"}
    return {c.type: (names.get(c.status, "Unknown"), c.reason, c.message) for c in rsp.conditions}
