"""Helpers every compose function shares: read the request, write the response.

Shaped like the SDK: free functions with verb names, called module-qualified
(``kit.set_condition(rsp, ...)``). Readers are total: they return empty values rather
than ``None`` where that saves the caller a branch.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
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
    owner references, finalizers)."""
    meta = observed.get("metadata") or {}
    kept = {k: meta[k] for k in _KEPT_METADATA if k in meta}
    return {**{k: v for k, v in observed.items() if k != "status"}, "metadata": kept}


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
        found = observed(req, key)
        if found is None or key in rsp.desired.resources:
            continue
        compose(rsp, key, unchanged(found))
        held.append(key)
    return held


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
    fn(req, rsp)
    if is_fatal(rsp):
        return
    if req.observed.resources and not rsp.desired.resources and not _RELEASING.get():
        held = hold(req, rsp)
        warn(rsp, f"composed nothing while {len(held)} resources exist; kept them unchanged")
    mark_readiness(req, rsp)


def mark_readiness(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """Set each desired resource's readiness the function left unset, by its kind's rule."""
    for key, desired in rsp.desired.resources.items():
        if desired.ready == fnv1.READY_UNSPECIFIED:
            manifest = struct_to_dict(desired.resource)
            desired.ready = _READY[composed_ready(manifest, observed(req, key))]


def is_fatal(rsp: fnv1.RunFunctionResponse) -> bool:
    """Tell whether the response carries a Fatal result (Crossplane then applies nothing)."""
    return any(r.severity == fnv1.SEVERITY_FATAL for r in rsp.results)


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
