"""Readiness of composed resources: one rule per kind.

Crossplane counts a composed resource as ready only when the pipeline says READY_TRUE
(unset is not ready), so every resource gets a rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.domain import api
from modelplane.kit.request import condition_true
from modelplane.kit.respond import READY
from modelplane.kit.structs import conditions_of, text_field

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
    (api.GATEWAY_GROUP, "GatewayClass"): "Accepted",
    (api.GATEWAY_GROUP, "Gateway"): "Programmed",
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


def mark_readiness(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """Set each desired resource's readiness the function left unset, by its kind's rule."""
    for key, desired in rsp.desired.resources.items():
        if desired.ready != fnv1.READY_UNSPECIFIED:
            continue
        # Only the kind and the conditions matter: read them, not the whole object.
        manifest = {k: text_field(desired.resource, k) for k in ("apiVersion", "kind")}
        found = req.observed.resources.get(key)
        shown = None if found is None else {"status": {"conditions": conditions_of(found.resource)}}
        desired.ready = READY[composed_ready(manifest, shown)]
