"""Helpers every compose function shares: read the request, write the response.

Shaped like the SDK: free functions with verb names, called module-qualified
(``kit.set_condition(rsp, ...)``). Readers are total: they return empty values rather
than ``None`` where that saves the caller a branch.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

import pydantic
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
        ready: True or False to state readiness; None applies the rule for its kind
            (:func:`composed_ready`) once the function returns (see :func:`composer`).
    """
    desired = rsp.desired.resources[key]
    desired.Clear()
    desired.resource.update(dict(manifest))
    desired.ready = _READY[ready]


# Readiness of composed resources. Crossplane counts a composed resource as ready only
# when the pipeline says READY_TRUE (unset is not ready), so every resource gets a rule.

# Kinds that exist to be named, not to become ready: they never report Ready.
_NO_READINESS = frozenset(
    {"ProviderConfig", "ClusterProviderConfig", "ProviderConfigUsage", "Usage", "ClusterUsage"}
)
# API groups whose objects report a Ready condition: managed resources of the cloud
# providers, provider-kubernetes Objects, provider-helm Releases, and our composites.
_READY_GROUPS = frozenset(
    {
        "kubernetes.crossplane.io",
        "kubernetes.m.crossplane.io",
        "helm.crossplane.io",
        "helm.m.crossplane.io",
        "modelplane.ai",
        "infrastructure.modelplane.ai",
    }
)
# Gateway API objects on this control plane report their own condition.
_READY_CONDITION = {
    ("gateway.networking.k8s.io", "GatewayClass"): "Accepted",
    ("gateway.networking.k8s.io", "Gateway"): "Programmed",
}


def readiness_condition(api_version: str, kind: str) -> str | None:
    """Return the condition that says a composed resource of this kind is ready.

    None means the kind has no readiness of its own (a Service, a Secret, a provider
    config, a Usage): it is ready once it exists.
    """
    group = api_version.rpartition("/")[0]
    if kind in _NO_READINESS:
        return None
    if (group, kind) in _READY_CONDITION:
        return _READY_CONDITION[(group, kind)]
    if group in _READY_GROUPS or group.endswith(".upbound.io"):
        return "Ready"
    return None


def composed_ready(manifest: Mapping[str, Any], observed: Mapping[str, Any] | None) -> bool:
    """Apply the rule for the manifest's kind to what the API server shows of it."""
    if observed is None:
        return False  # not created yet
    typ = readiness_condition(str(manifest.get("apiVersion", "")), str(manifest.get("kind", "")))
    return True if typ is None else condition_true(observed, typ)


# Holding: what a function composes again, unchanged, while it cannot compose anew.

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
    not desired yet, so that Crossplane deletes none of them; return the keys held.

    Crossplane garbage-collects every composed resource missing from the desired state,
    so a function that cannot compose something right now holds it instead.
    """
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


def keep_status(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, *fields: str) -> None:
    """Publish again each top-level status field the composite already shows and this
    call did not set: others read it (a kubeconfig, a provider config, a gateway), and a
    dependency that flaps for a moment must not withdraw it from them."""
    shown = composite(req).get("status") or {}
    desired = struct_to_dict(rsp.desired.composite.resource).get("status") or {}
    kept = {f: shown[f] for f in fields if f in shown and f not in desired}
    if kept:
        set_status(rsp, kept)


def waiting(
    rsp: fnv1.RunFunctionResponse, typ: str, reason: str, message: str, *, event: bool = True
) -> None:
    """Say why the composite cannot be composed anew: condition ``typ`` False, and a
    Warning event (Crossplane records a warning result as one)."""
    set_condition(rsp, typ, False, reason, message)
    if event:
        warn(rsp, message)


# A function says so when it means to compose nothing although something exists (the
# user scaled to zero, removed the last pool); otherwise an empty answer is held.
_RELEASING: contextvars.ContextVar[bool] = contextvars.ContextVar("releasing", default=False)


def release_all() -> None:
    """Declare that this call deliberately composes nothing of what exists."""
    _RELEASING.set(True)


def composer(fn: Compose) -> Compose:
    """Wrap a kind's compose function with the rules every function keeps.

    After it returns (without a Fatal result, which makes Crossplane apply nothing):

    - an empty desired state while resources exist is never the answer: unless the
      function called :func:`release_all`, every observed resource is held;
    - every composed resource whose readiness the function left unset gets the rule
      for its kind (:func:`composed_ready`).
    """

    @functools.wraps(fn)
    def run(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
        context = contextvars.copy_context()
        context.run(_run, fn, req, rsp)

    return run


def _run(fn: Compose, req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    _RELEASING.set(False)
    try:
        fn(req, rsp)
    except (InvalidInputError, pydantic.ValidationError) as err:
        _refuse(req, rsp, err)
        return
    if is_fatal(rsp):
        return
    if req.observed.resources and not rsp.desired.resources and not _RELEASING.get():
        held = hold(req, rsp)
        warn(rsp, f"composed nothing while {len(held)} resources exist; kept them unchanged")
    mark_readiness(req, rsp)


def _refuse(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    err: InvalidInputError | pydantic.ValidationError,
) -> None:
    """Answer input the function cannot read with a Fatal result naming object and field.

    Crossplane applies nothing after a Fatal result, so nothing that runs is lost.
    """
    xr = composite(req)
    kind = str(xr.get("kind") or "composite")
    what = summarize(err) if isinstance(err, pydantic.ValidationError) else str(err)
    rsp.desired.Clear()
    del rsp.results[:]
    del rsp.conditions[:]
    response.fatal(rsp, f"invalid {kind} {_ref(xr)}: {what}")


def _ref(obj: Mapping[str, Any]) -> str:
    """Name an object as ``namespace/name`` (``name`` alone when cluster-scoped), at best."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else ""
    namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
    ref = name or "(unnamed)"
    return f"{namespace}/{ref}" if namespace else ref


# Reading input: one reader for identity, one error for unreadable input, one summary.

DEFAULT_NAMESPACE = "default"
"""Where a namespaced object without ``metadata.namespace`` lives, as in Kubernetes."""


class InvalidInputError(ValueError):
    """An object the function reads is not what its schema says; the message names the
    field. Raised by readers; a function that lets it escape answers with a Fatal result."""


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


def summarize(exc: pydantic.ValidationError, limit: int = 5) -> str:
    """Return a validation error as one line: each bad field's path and what is wrong.

    Paths read as in Kubernetes: ``spec.engines[0].members[1].role``.
    """
    parts = [f"{field_path(e['loc'])}: {e['msg']}" for e in exc.errors()[:limit]]
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def field_path(loc: Sequence[int | str]) -> str:
    """Return a pydantic error location as a field path, list indexes in brackets."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "(the object)"


def mark_readiness(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """Set each desired resource's readiness the function left unset, by its kind's rule."""
    for key, desired in rsp.desired.resources.items():
        if desired.ready != fnv1.READY_UNSPECIFIED:
            continue
        # Only the kind and the conditions matter: read them, not the whole object.
        manifest = {k: _text_field(desired.resource, k) for k in ("apiVersion", "kind")}
        found = req.observed.resources.get(key)
        shown = None if found is None else {"status": {"conditions": _conditions(found.resource)}}
        desired.ready = _READY[composed_ready(manifest, shown)]


def _text_field(struct: structpb.Struct, name: str) -> str:
    value = struct.fields.get(name)
    return value.string_value if value is not None else ""


def _conditions(struct: structpb.Struct) -> list[dict[str, Any]]:
    """Return an object's ``status.conditions`` as plain maps (``[]`` if it has none)."""
    status = struct.fields.get("status")
    if status is None or status.WhichOneof("kind") != "struct_value":
        return []
    found = status.struct_value.fields.get("conditions")
    if found is None or found.WhichOneof("kind") != "list_value":
        return []
    return [
        {k: _plain(v, []) for k, v in item.struct_value.fields.items() if k in ("type", "status")}
        for item in found.list_value.values
        if item.WhichOneof("kind") == "struct_value"
    ]


def is_fatal(rsp: fnv1.RunFunctionResponse) -> bool:
    """Tell whether the response carries a Fatal result (Crossplane then applies nothing)."""
    return any(r.severity == fnv1.SEVERITY_FATAL for r in rsp.results)


def condition_true(resource: Mapping[str, Any] | None, typ: str) -> bool:
    """Tell whether an observed resource reports condition ``typ`` True.

    False when it doesn't exist, or its status is not what Kubernetes writes there.
    """
    conditions = field(resource, "status", "conditions")
    return isinstance(conditions, list) and any(
        isinstance(c, dict) and c.get("type") == typ and c.get("status") == "True"
        for c in conditions
    )


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


def is_ready(resource: Mapping[str, Any] | None) -> bool:
    """Tell whether an observed resource reports ``Ready=True``."""
    return condition_true(resource, "Ready")


def set_status(rsp: fnv1.RunFunctionResponse, status: Mapping[str, Any]) -> None:
    """Merge ``status`` into the desired composite's status, field by top-level field."""
    fields = rsp.desired.composite.resource.fields
    if "status" not in fields:
        resource.update(rsp.desired.composite, {"status": dict(status)})
        return
    fields["status"].struct_value.update(dict(status))


def set_ready(rsp: fnv1.RunFunctionResponse, ready: bool | None) -> None:
    """Veto the composite's readiness when its own conditions say it is not ready.

    False makes the composite not Ready whatever its resources say. True and None let
    Crossplane's own rule decide (Ready once every composed resource is ready), so a
    function can never declare Ready over an unready resource.
    """
    rsp.desired.composite.ready = fnv1.READY_FALSE if ready is False else fnv1.READY_UNSPECIFIED


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
    Iterative, not recursive: an object may nest as deep as Kubernetes allows (10,000
    levels), far beyond Python's recursion limit.
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
            target[key] = _plain(value, stack)
    return root


def _plain(value: structpb.Value, stack: list[tuple[Any, Any]]) -> Any:
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
