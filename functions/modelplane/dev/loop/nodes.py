"""What provider-kubernetes' ObservedObjectCollection controller reports, over fake nodes.

Each workload cluster has the nodes its InferenceCluster declares (``nodeCount`` per
pool, named ``<cluster>-<pool>-<i>``; a draining pool keeps the nodes it publishes): Ready, labelled ``modelplane.ai/pool``, tainted
``nvidia.com/gpu=present:NoSchedule`` like Modelplane's cloud pools, each publishing one
ResourceSlice per driver of its class's DRA devices. A test changes a node
(:class:`NodeState`: lost, cordoned, NotReady, tainted, publishing no device) through
:attr:`Providers.nodes`.

A collection, once it can connect, is ``Synced``/``Ready`` and has one member Object per
match (``kubernetes.crossplane.io/owned-by-collection=<collection>``, owned by the
collection, ``managementPolicies: [Observe]``) whose ``status.atProvider.manifest`` is the
node or slice as the cluster shows it; members of what no longer matches are pruned.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from enum import Enum
from typing import Any

from modelplane.dev.fakes.kubernetes import resource_slices
from modelplane.domain import api
from modelplane.domain.api import POOL_LABEL

Obj = dict[str, Any]
MEMBERSHIP_LABEL = "kubernetes.crossplane.io/owned-by-collection"
GPU_TAINT = {"key": api.GPU_TAINT, "value": api.GPU_TAINT_VALUE, "effect": "NoSchedule"}
MAINTENANCE_TAINT = {"key": "maintenance", "value": "planned", "effect": "NoExecute"}


class NodeState(Enum):
    """What happened to a node."""

    LOST = "lost"  # deleted from the cluster
    CORDONED = "cordoned"
    NOT_READY = "not-ready"
    TAINTED = "tainted"  # an operator's NoExecute taint the engine pods don't tolerate
    NO_DEVICES = "no-devices"  # Ready, but its DRA driver publishes no ResourceSlice


def node_name(cluster: str, pool: str, index: int) -> str:
    return f"{cluster}-{pool}-{index}"


def cluster_nodes(
    cluster: Mapping[str, Any],
    classes: Mapping[str, Mapping[str, Any]],
    states: Mapping[tuple[str, str], NodeState],
) -> tuple[list[Obj], list[Obj]]:
    """Return the Nodes and ResourceSlices of an InferenceCluster's workload cluster."""
    name = str((cluster.get("metadata") or {}).get("name", ""))
    nodes: list[Obj] = []
    slices: list[Obj] = []
    for pool, devices in _pools(cluster, classes):
        for i in range(int(pool.get("nodeCount", 1))):
            node = node_name(name, str(pool["name"]), i)
            state = states.get((name, node))
            if state is NodeState.LOST:
                continue
            nodes.append(_node(node, str(pool["name"]), state))
            if state is not NodeState.NO_DEVICES:
                slices += _slices(node, devices)
    return nodes, slices


def _pools(
    cluster: Mapping[str, Any], classes: Mapping[str, Mapping[str, Any]]
) -> list[tuple[Mapping[str, Any], Any]]:
    """Each pool with nodes, and its devices: the declared pools, then the draining ones
    (removed from the spec, their node groups kept while replicas run there), which keep
    the nodes and devices they publish."""
    pools: list[tuple[Mapping[str, Any], Any]] = []
    declared = (cluster.get("spec") or {}).get("nodePools") or ()
    for pool in declared:
        devices = ((classes.get(str(pool.get("className"))) or {}).get("devices")) or ()
        pools.append((pool, devices))
    names = {p.get("name") for p in declared}
    for shown in (cluster.get("status") or {}).get("gpuPools") or ():
        if shown.get("draining") and shown.get("name") not in names:
            pools.append(
                (
                    {"name": shown["name"], "nodeCount": shown.get("nodes", 0)},
                    shown.get("devices") or (),
                )
            )
    return pools


def _node(name: str, pool: str, state: NodeState | None) -> Obj:
    taints = [dict(GPU_TAINT)]
    spec: Obj = {"taints": taints}
    if state is NodeState.CORDONED:
        spec["unschedulable"] = True
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    if state is NodeState.TAINTED:
        taints.append(dict(MAINTENANCE_TAINT))
    ready = "False" if state is NodeState.NOT_READY else "True"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {POOL_LABEL: pool, "kubernetes.io/hostname": name}},
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "KubeletReady"}]},
    }


def _slices(node: str, devices: Any) -> list[Obj]:
    by_driver: dict[str, list[Obj]] = {}
    for dev in devices:
        if dev.get("claim", "DRA") != "DRA":
            continue  # a Synthetic device no driver publishes
        for i in range(int(dev.get("count", 0))):
            by_driver.setdefault(str(dev["driver"]), []).append({"name": f"{dev['name']}-{i}"})
    return resource_slices(node, by_driver)


def members(collection: Mapping[str, Any], matched: list[Obj]) -> list[Obj]:
    """Return the collection's member Objects for what it matches, each as observed."""
    meta = collection.get("metadata") or {}
    spec = collection.get("spec") or {}
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
    template = ((spec.get("objectTemplate") or {}).get("metadata") or {}).get("labels") or {}
    out = []
    for obj in matched:
        ident = f"{obj['apiVersion']}/{obj['kind']}//{obj['metadata']['name']}"
        digest = hashlib.sha256(ident.encode()).hexdigest()[:7]
        out.append(
            {
                "apiVersion": api.KUBERNETES_OBJECT,
                "kind": "Object",
                "metadata": {
                    "name": f"{name}-{digest}",
                    "namespace": namespace,
                    "uid": f"member-{name}-{digest}",
                    "labels": {**template, MEMBERSHIP_LABEL: name},
                    "ownerReferences": [
                        {
                            "apiVersion": collection.get("apiVersion"),
                            "kind": "ObservedObjectCollection",
                            "name": name,
                            "uid": meta.get("uid", ""),
                        }
                    ],
                },
                "spec": {
                    "managementPolicies": ["Observe"],
                    "providerConfigRef": spec.get("providerConfigRef"),
                    "forProvider": {
                        "manifest": {
                            "apiVersion": obj["apiVersion"],
                            "kind": obj["kind"],
                            "metadata": {"name": obj["metadata"]["name"]},
                        }
                    },
                },
                "status": {
                    "atProvider": {"manifest": obj},
                    "conditions": [
                        _condition("Ready", "Available"),
                        _condition("Synced", "ReconcileSuccess"),
                    ],
                },
            }
        )
    return out


def matches(collection: Mapping[str, Any], nodes: list[Obj], slices: list[Obj]) -> list[Obj]:
    """Return what the collection's ``observeObjects`` selects (the two kinds we observe)."""
    watched = (collection.get("spec") or {}).get("observeObjects") or {}
    if watched.get("kind") == "ResourceSlice":
        return slices
    if watched.get("kind") == "Node":
        return nodes  # every fake node carries the pool label the collection selects on
    return []


def collection_status(collection: Mapping[str, Any]) -> Obj:
    """What the provider writes once it has listed and synced the members: both conditions
    and the label its members carry, in one update."""
    name = str((collection.get("metadata") or {}).get("name", ""))
    return {
        "conditions": [_condition("Ready", "Available"), _condition("Synced", "ReconcileSuccess")],
        "membershipLabel": {MEMBERSHIP_LABEL: name},
    }


def _condition(typ: str, reason: str) -> Obj:
    return {
        "type": typ,
        "status": "True",
        "reason": reason,
        "lastTransitionTime": "2025-01-01T00:00:00Z",
    }
