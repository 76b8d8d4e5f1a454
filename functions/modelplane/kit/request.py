"""Reading a request: the composite, its composed resources, what Crossplane fetched.

Readers are total: they return empty values rather than ``None`` where that saves the
caller a branch, and what another controller writes is read, never trusted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane.kit.errors import InvalidInputError
from modelplane.kit.structs import struct_to_dict

DEFAULT_NAMESPACE = "default"
"""Where a namespaced object without ``metadata.namespace`` lives, as in Kubernetes."""


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
    return [struct_to_dict(found) for found in required_structs(req, name)]


def required_structs(req: fnv1.RunFunctionRequest, name: str) -> list[structpb.Struct]:
    """:func:`required`'s resources as the Structs they came as, for a reader of many."""
    found = req.required_resources.get(name) or req.extra_resources.get(name)
    return [] if found is None else [item.resource for item in found.items]


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


@dataclass(frozen=True)
class Meta:
    """An object's identity: name, namespace (:data:`DEFAULT_NAMESPACE` when unset) and
    labels."""

    name: str
    namespace: str = DEFAULT_NAMESPACE
    labels: Mapping[str, str] = dataclass_field(default_factory=dict)


def meta(obj: Mapping[str, Any]) -> Meta:
    """Read an object's identity.

    Raises:
        InvalidInputError: metadata is not a map, the name is missing, or labels are not
            a map of strings.
    """
    raw = obj.get("metadata")
    if not isinstance(raw, Mapping):
        raise InvalidInputError("metadata is missing or not a map")  # noqa: EM101
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidInputError("metadata.name is missing")  # noqa: EM101
    namespace = raw.get("namespace") or DEFAULT_NAMESPACE
    if not isinstance(namespace, str):
        raise InvalidInputError("metadata.namespace is not a string")  # noqa: EM101
    labels = raw.get("labels") or {}
    if not isinstance(labels, Mapping):
        raise InvalidInputError("metadata.labels is not a map")  # noqa: EM101
    for key, value in labels.items():
        if not isinstance(value, str):
            msg = f"metadata.labels.{key} is not a string"
            raise InvalidInputError(msg)
    return Meta(name, namespace, dict(labels))


def ref(obj: Mapping[str, Any]) -> str:
    """Name an object as ``namespace/name`` (``name`` alone when cluster-scoped), at best."""
    raw = obj.get("metadata")
    raw = raw if isinstance(raw, Mapping) else {}
    name = raw.get("name")
    namespace = raw.get("namespace")
    return ref_of(
        namespace if isinstance(namespace, str) else "",
        name if isinstance(name, str) and name else "(unnamed)",
    )


def ref_of(namespace: str, name: str) -> str:
    """Name an object known by its namespace and name as :func:`ref` does."""
    return f"{namespace}/{name}" if namespace else name


def field(resource: Mapping[str, Any] | None, *path: str) -> Any:
    """Return the value at ``path`` in an object, or None where any step is missing or is
    not a map: what another controller writes is read, never trusted."""
    node: Any = resource
    for part in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def mapping(resource: Mapping[str, Any] | None, *path: str) -> Mapping[str, Any]:
    """Return the map at ``path`` (``{}`` when missing or not a map)."""
    found = field(resource, *path)
    return found if isinstance(found, Mapping) else {}


def text(resource: Mapping[str, Any] | None, *path: str) -> str:
    """Return the string at ``path`` (``""`` when missing or not a string)."""
    found = field(resource, *path)
    return found if isinstance(found, str) else ""


def maps(resource: Mapping[str, Any] | None, *path: str) -> list[Mapping[str, Any]]:
    """Return the maps in the list at ``path``, skipping what is not a map."""
    found = field(resource, *path)
    return [item for item in found if isinstance(item, Mapping)] if isinstance(found, list) else []


def condition_true(resource: Mapping[str, Any] | None, typ: str) -> bool:
    """Tell whether an observed resource reports condition ``typ`` True.

    False when it doesn't exist, or its status is not what Kubernetes writes there.
    """
    return any(
        c.get("type") == typ and c.get("status") == "True"
        for c in maps(resource, "status", "conditions")
    )


def is_ready(resource: Mapping[str, Any] | None) -> bool:
    """Tell whether an observed resource reports ``Ready=True``."""
    return condition_true(resource, "Ready")
