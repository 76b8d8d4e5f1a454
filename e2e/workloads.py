"""The workload cluster's view of a manifest a provider-kubernetes Object wraps, in
``make e2e`` (no workload cluster behind it): what its API server adds, then the status
the fake-provider library (:mod:`modelplane.dev.fakes`) says its kind's controller
writes, everything the manifest needs taken to be there (:class:`AssumedCluster`)."""

from __future__ import annotations

import copy
import ipaddress
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

from modelplane.dev.fakes import base, gateway, kubernetes

from e2e.kube import Obj
from e2e.writes import for_api_server

WORKLOAD_GATEWAY_CONTROLLER = gateway.ENVOY_CONTROLLER_NAME


class AssumedCluster:
    """A workload cluster in ``make e2e``: nothing real behind it, so everything a manifest
    needs is taken to be there (its pods run, its controllers and CRDs are installed, the
    objects it names exist and are Programmed). :mod:`modelplane.dev.fakes.kubernetes`
    reads it; the loop tests model what is missing."""

    THERE: ClassVar[Obj] = {
        "status": {"conditions": [base.condition("Programmed", True, "Programmed")]}
    }

    def __init__(self, name: str) -> None:
        self.name = name

    def pods_blocked(self, manifest: Mapping[str, Any]) -> list[str]:
        return []

    def installs(self, how: str, what: str) -> bool:
        return True

    def lookup(self, kind: str, namespace: str, name: str) -> Obj | None:
        return copy.deepcopy(self.THERE)


def cluster_ip(*parts: str) -> str:
    n = int(base.digest(*parts, length=8), 16) % (256 * 256 - 2) + 1
    return str(ipaddress.IPv4Address("10.96.0.0") + n)


def gateway_ip(cluster: str) -> str:
    """A documentation-range address per workload cluster (its load balancer)."""
    n = int(base.digest(cluster, length=4), 16) % 250 + 2
    return f"203.0.113.{n}"


def observed_manifest(obj: Mapping[str, Any], cluster: str) -> dict[str, Any]:
    """The wrapped manifest as the workload cluster would return it, with its status: what
    the API server adds (uid, creation time, a Service's cluster IP, a PVC's volume), then
    the status the library says its kind's controller writes."""
    manifest = copy.deepcopy(kubernetes.manifest_of(obj))
    meta = manifest.setdefault("metadata", {})
    kind = str(manifest.get("kind", ""))
    name = str(meta.get("name", ""))
    ns = str(meta.get("namespace", ""))
    meta.setdefault("uid", str(uuid.UUID(base.digest(cluster, kind, ns, name, length=32))))
    meta.setdefault("creationTimestamp", str(obj["metadata"].get("creationTimestamp", "")))
    meta.setdefault("resourceVersion", "1")
    meta.setdefault("generation", 1)
    spec = manifest.get("spec")
    if kind == "Service" and spec is not None and spec.get("clusterIP") != "None":
        spec.setdefault("clusterIP", cluster_ip(cluster, ns, name))
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
    elif kind == "PersistentVolumeClaim" and spec is not None:
        spec.setdefault("volumeName", f"pvc-{meta['uid']}")
    status = kubernetes.workload_status(AssumedCluster(cluster), manifest)
    if status is not None:
        manifest["status"] = status
    return manifest


def gateway_status(
    spec: Mapping[str, Any], addresses: list[dict[str, str]], attached: Mapping[str, int]
) -> dict[str, Any]:
    """What Envoy Gateway reports on a Gateway of its class (for ``e2e/fleet/faker.py``)."""
    manifest = {"kind": "Gateway", "spec": spec}
    address = addresses[0]["value"] if addresses else ""
    found = gateway.status(
        manifest, True, gateway.ENVOY_CONTROLLER_NAME, address, AssumedCluster("").lookup, attached
    )
    return dict(for_api_server({**(found or {}), "addresses": addresses}))
