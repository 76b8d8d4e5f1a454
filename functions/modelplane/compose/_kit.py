"""Helpers every compose function shares: read the request, write the response.

Shaped like the SDK: free functions with verb names, called module-qualified
(``kit.set_condition(rsp, ...)``). Readers are total: they return empty values rather
than ``None`` where that saves the caller a branch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

Compose = Callable[[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse], None]

_READY = {True: fnv1.READY_TRUE, False: fnv1.READY_FALSE, None: fnv1.READY_UNSPECIFIED}
_STATUS = {True: "True", False: "False", None: "Unknown"}


def composite(req: fnv1.RunFunctionRequest) -> dict[str, Any]:
    """Return the observed composite resource as a plain dict."""
    return struct_to_dict(req.observed.composite.resource)


def observed(req: fnv1.RunFunctionRequest, key: str) -> dict[str, Any] | None:
    """Return the observed composed resource named ``key``, or None if it doesn't exist yet."""
    if key not in req.observed.resources:
        return None
    return struct_to_dict(req.observed.resources[key].resource)


def required(req: fnv1.RunFunctionRequest, name: str) -> list[dict[str, Any]]:
    """Return the resources Crossplane fetched for requirement ``name`` (``[]`` if none)."""
    found = req.required_resources.get(name) or req.extra_resources.get(name)
    if found is None:
        return []
    return [struct_to_dict(item.resource) for item in found.items]


def was_required(req: fnv1.RunFunctionRequest, name: str) -> bool:
    """Tell whether Crossplane has answered requirement ``name`` (even with nothing)."""
    return name in req.required_resources or name in req.extra_resources


def require(
    rsp: fnv1.RunFunctionResponse,
    name: str,
    api_version: str,
    kind: str,
    *,
    match_name: str | None = None,
    match_labels: Mapping[str, str] | None = None,
    namespace: str | None = None,
) -> None:
    """Ask Crossplane to fetch resources; they arrive on the next call under ``name``."""
    response.require_resources(
        rsp,
        name,
        api_version,
        kind,
        match_name=match_name,
        match_labels=dict(match_labels) if match_labels is not None else None,
        namespace=namespace,
    )
    if match_labels is not None and not match_labels:
        # An empty label map leaves the selector's oneof unset, which Crossplane rejects;
        # setting it explicitly asks for every resource of the kind.
        rsp.requirements.resources[name].match_labels.SetInParent()


def compose(
    rsp: fnv1.RunFunctionResponse,
    key: str,
    manifest: Mapping[str, Any],
    *,
    ready: bool | None = None,
) -> None:
    """Add (or replace) the desired composed resource ``key``.

    Args:
        rsp: The response to write to.
        key: The composed resource's stable name within the composite.
        manifest: The resource's full manifest.
        ready: True or False to state readiness; None lets Crossplane derive it.
    """
    desired = rsp.desired.resources[key]
    desired.Clear()
    desired.resource.update(dict(manifest))
    desired.ready = _READY[ready]


def condition_true(resource: Mapping[str, Any] | None, typ: str) -> bool:
    """Tell whether an observed resource reports condition ``typ`` True (False if it doesn't exist)."""
    conditions = ((resource or {}).get("status") or {}).get("conditions") or []
    return any(
        isinstance(c, dict) and c.get("type") == typ and c.get("status") == "True"
        for c in conditions
    )


def is_ready(resource: Mapping[str, Any] | None) -> bool:
    """Tell whether an observed resource reports ``Ready=True``."""
    return condition_true(resource, "Ready")


def set_status(rsp: fnv1.RunFunctionResponse, status: Mapping[str, Any]) -> None:
    """Merge ``status`` into the desired composite's status."""
    resource.update(rsp.desired.composite, {"status": dict(status)})


def set_ready(rsp: fnv1.RunFunctionResponse, ready: bool | None) -> None:
    """State the composite's readiness (None: let Crossplane derive it from its resources)."""
    rsp.desired.composite.ready = _READY[ready]


def set_condition(
    rsp: fnv1.RunFunctionResponse,
    typ: str,
    status: bool | None,
    reason: str,
    message: str = "",
) -> None:
    """Set one status condition on the composite (Crossplane stamps the transition time)."""
    response.set_conditions(
        rsp,
        resource.Condition(typ=typ, status=_STATUS[status], reason=reason, message=message or None),
    )


def warn(rsp: fnv1.RunFunctionResponse, message: str) -> None:
    """Emit a warning result; Crossplane records it as a Warning event on the composite."""
    response.warning(rsp, message)


def inform(rsp: fnv1.RunFunctionResponse, message: str) -> None:
    """Emit a normal result; Crossplane records it as a Normal event on the composite."""
    response.normal(rsp, message)


def listed(items: Sequence[str], *, limit: int = 3, sep: str = "; ") -> str:
    """Name the first ``limit`` items and count the rest, so a condition message stays short."""
    if len(items) <= limit:
        return sep.join(items)
    return f"{sep.join(items[:limit])} and {len(items) - limit} more"


def struct_to_dict(struct: structpb.Struct) -> dict[str, Any]:
    """Convert a protobuf Struct to plain Python values, with whole floats as ints.

    protobuf carries every number as a double; Kubernetes integers must stay integers.
    """
    return {key: _plain(value) for key, value in struct.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, structpb.Struct):
        return struct_to_dict(value)
    if isinstance(value, structpb.ListValue):
        return [_plain(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
