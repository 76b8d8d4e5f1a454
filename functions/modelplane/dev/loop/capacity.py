"""GPU capacity: what kube-scheduler does on a pool that is full, and the pods it shows.

A pod that claims devices takes a node of its pool (the docs' whole-node rule); a
workload whose pods do not all fit waits, Pending (:func:`gpu_blocked`). An
ObservedObjectCollection of pods sees one per replica (:func:`collection_pods`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.dev.fakes.base import KUBERNETES_GROUP, Obj, condition_is, digest
from modelplane.dev.fakes.kubernetes import manifest_of, pod, pod_templates, selects
from modelplane.dev.loop.world import CONTROL_PLANE, World
from modelplane.domain.api import POOL_LABEL


def collection_pods(world: World, collection: Obj) -> list[Obj]:
    """The pods a collection selects: one per replica of each Deployment or LeaderWorkerSet
    applied on its cluster whose (leader) pod template it selects, Pending with
    kube-scheduler's ``PodScheduled=False``/``Unschedulable`` where GPUs are short
    (:func:`gpu_blocked`), else Running."""
    cluster = world.cluster_of(collection, KUBERNETES_GROUP) or CONTROL_PLANE
    watched = (collection.get("spec") or {}).get("observeObjects") or {}
    out: list[Obj] = []
    for other in world.on_cluster(cluster):
        manifest = manifest_of(other)
        meta = manifest.get("metadata") or {}
        templates = pod_templates(manifest)
        if (
            other.get("kind") != "Object"
            or manifest.get("kind") not in ("Deployment", "LeaderWorkerSet")
            or not templates
            or watched.get("namespace") not in (None, meta.get("namespace"))
        ):
            continue
        labels = (templates[0].get("metadata") or {}).get("labels") or {}
        if not selects(watched.get("selector") or {}, labels):
            continue
        blocked = gpu_blocked(world, other, cluster, manifest)
        for index in range(int((manifest.get("spec") or {}).get("replicas", 1))):
            out.append(pod(f"{meta.get('name')}-{digest(str(meta.get('name')), length=5)}-{index}",
                            str(meta.get("namespace") or ""), labels, blocked))  # fmt: skip
    return out


def gpu_blocked(world: World, obj: Obj, cluster: str, manifest: Mapping[str, Any]) -> str:
    """Say why a GPU workload's pods wait for a node ("" when they all run).

    A pod that claims devices takes a node of its pool (the docs' whole-node rule). The
    pool has the nodes its InferenceCluster publishes (observed, where it observes
    fewer). Workloads bind first come, first served: those already running keep their
    nodes, then the oldest Objects; one whose pods do not all fit waits, Pending.
    """
    pool = _gpu_pool(manifest)
    nodes = None if pool is None else _pool_nodes(world, obj, pool)
    if pool is None or nodes is None:
        return ""
    me = _bound_first(obj)
    rivals = [
        o
        for o in world.on_cluster(cluster)
        if o.get("kind") == "Object"
        and _gpu_pool(manifest_of(o)) == pool
        and _bound_first(o)[1:] != me[1:]
    ]
    used = 0
    for other in sorted([*rivals, obj], key=_bound_first):
        pods = _gpu_pods(manifest_of(other))
        if used + pods <= nodes:
            used += pods
        elif other is obj:
            return f"pods wait for a node: 0/{nodes} nodes of pool {pool} are available: Insufficient GPUs"
    return ""


def _gpu_pool(manifest: Mapping[str, Any]) -> str | None:
    """The pool a workload's device-claiming pods are pinned to (None: it claims none)."""
    if manifest.get("kind") not in ("Deployment", "LeaderWorkerSet"):
        return None
    for template in pod_templates(manifest):
        spec = template.get("spec") or {}
        if spec.get("resourceClaims"):
            found = (spec.get("nodeSelector") or {}).get(POOL_LABEL)
            return str(found) if found else None
    return None


def _gpu_pods(manifest: Mapping[str, Any]) -> int:
    """The workload's pods that claim devices (each takes a node)."""
    spec = manifest.get("spec") or {}
    copies = int(spec.get("replicas", 1))
    if manifest.get("kind") != "LeaderWorkerSet":
        return copies
    lwt = spec.get("leaderWorkerTemplate") or {}
    workers = int(lwt.get("size", 1)) - 1
    per_group = sum(
        n
        for template, n in ((lwt.get("leaderTemplate"), 1), (lwt.get("workerTemplate"), workers))
        if ((template or {}).get("spec") or {}).get("resourceClaims")
    )
    return copies * per_group


def _pool_nodes(world: World, obj: Obj, pool: str) -> int | None:
    """The nodes of ``pool`` on the InferenceCluster whose provider config ``obj`` names."""
    config = str(((obj.get("spec") or {}).get("providerConfigRef") or {}).get("name") or "")
    for cluster in world.all():
        if cluster.get("kind") != "InferenceCluster":
            continue
        status = cluster.get("status") or {}
        if str((status.get("providerConfigRef") or {}).get("name") or "") != config:
            continue
        for entry in status.get("gpuPools") or ():
            if entry.get("name") == pool:
                if entry.get("capacity") == "Devices":
                    return None  # pods share nodes: not modelled here
                observed = entry.get("observed") or {}
                if observed.get("nodes") is None:
                    return int(entry.get("nodes", 0))
                # DRA allocates a pod's claims on its node: a node publishing none takes none
                bare = sum(
                    int(g["nodes"]) for g in observed.get("nodeDevices") or () if not g["devices"]
                )
                return int(observed["nodes"]) - bare
    return None


def _bound_first(obj: Obj) -> tuple[int, str, str, str]:
    meta = obj.get("metadata") or {}
    bound = condition_is(obj, "Ready")
    created = str(meta.get("creationTimestamp") or "")
    return (0 if bound else 1, created, str(meta.get("namespace")), str(meta.get("name")))
