"""A Gateway API controller (Envoy Gateway on a workload cluster, Traefik on the control
plane): what it reports on a GatewayClass, Gateway or HTTPRoute it handles."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from modelplane.dev.fakes.base import GATEWAY_GROUP, Obj, condition, condition_is

WORKLOAD_GATEWAY_CONTROLLER = "gateway-helm"  # Envoy Gateway's chart
CONTROL_PLANE_GATEWAY_CONTROLLER = "traefik"  # the control plane's chart
ENVOY_CONTROLLER_NAME = "gateway.envoyproxy.io/gatewayclass-controller"
TRAEFIK_CONTROLLER_NAME = "traefik.io/gateway-controller"
CLOUD_LB_ADDRESS = "198.51.100.10"
"""The control-plane gateway's address when there is no MetalLB pool (a cloud LB)."""
KINDS = ("GatewayClass", "Gateway", "HTTPRoute")

Lookup = Callable[[str, str, str], Obj | None]
"""(kind, namespace, name) -> the object as it is on one cluster, or None."""


def status(
    manifest: Mapping[str, Any],
    installed: bool,
    controller: str,
    address: str,
    lookup: Lookup,
    attached: Mapping[str, int] | None = None,
) -> Obj | None:
    """What a Gateway API controller reports on a GatewayClass, Gateway or HTTPRoute.

    Args:
        manifest: The object, as applied.
        installed: Whether the controller runs yet (no controller: nobody writes a status).
        controller: Its ``controllerName``: it handles the GatewayClasses that name it.
        address: The address it gives a Gateway (its load balancer's).
        lookup: The objects beside it (a Gateway's class, a route's parents and backends).
        attached: Routes attached to each of a Gateway's listeners, by listener name.

    Returns:
        The status, ``{}`` when the controller does not report on the object, None for
        kinds it knows nothing of.
    """
    kind = manifest.get("kind")
    spec = manifest.get("spec") or {}
    meta = manifest.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    if not installed:
        return {}  # no controller yet: nobody writes a status
    if kind == "GatewayClass":
        if spec.get("controllerName") != controller:
            return {}
        return {"conditions": [condition("Accepted", True, "Accepted")]}
    if kind == "Gateway":
        found = lookup("GatewayClass", "", str(spec.get("gatewayClassName", "")))
        if found is None:
            return {"conditions": [condition("Accepted", False, "NoSuchGatewayClass")]}
        listeners = [
            {
                "name": listener.get("name"),
                "attachedRoutes": (attached or {}).get(str(listener.get("name")), 0),
                "supportedKinds": [{"group": GATEWAY_GROUP, "kind": "HTTPRoute"}],
                "conditions": [
                    condition("Accepted", True, "Accepted"),
                    condition("Programmed", True, "Programmed"),
                    condition("ResolvedRefs", True, "ResolvedRefs"),
                ],
            }
            for listener in spec.get("listeners") or ()
        ]
        return {
            "addresses": [{"type": "IPAddress", "value": address}],
            "conditions": [
                condition("Accepted", True, "Accepted"),
                condition("Programmed", True, "Programmed"),
            ],
            "listeners": listeners,
        }
    if kind == "HTTPRoute":
        parents = []
        for ref in spec.get("parentRefs") or ():
            gateway = lookup(
                "Gateway", str(ref.get("namespace") or namespace), str(ref.get("name", ""))
            )
            if gateway is None or not condition_is(gateway, "Programmed"):
                continue
            missing = [
                f"{b.get('kind', 'Service')} {namespace}/{b.get('name')}"
                for rule in spec.get("rules") or ()
                for b in rule.get("backendRefs") or ()
                if lookup(str(b.get("kind") or "Service"), namespace, str(b.get("name", "")))
                is None
            ]
            resolved = condition(
                "ResolvedRefs",
                not missing,
                "ResolvedRefs" if not missing else "BackendNotFound",
                "" if not missing else "backends not found: " + ", ".join(missing),
            )
            parents.append(
                {
                    "parentRef": dict(ref),
                    "controllerName": controller,
                    "conditions": [condition("Accepted", True, "Accepted"), resolved],
                }
            )
        return {"parents": parents}
    return None


def first_pool_address(pools: Iterable[Mapping[str, Any]]) -> str:
    """The first address of MetalLB's IPAddressPools (a LoadBalancer Service's), else a cloud's."""
    for pool in pools:
        addresses = (pool.get("spec") or {}).get("addresses") or []
        if addresses:
            return str(addresses[0]).split("-")[0].split("/")[0].strip()
    return CLOUD_LB_ADDRESS
