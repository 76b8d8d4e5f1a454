"""InferenceCluster: observe its workload cluster's Nodes and ResourceSlices.

Once the cluster's provider-kubernetes ClusterProviderConfig exists, the InferenceCluster
composes two ObservedObjectCollections (provider-kubernetes v1.x,
``kubernetes.m.crossplane.io``) in ``modelplane-system``: one of the Nodes labelled
``modelplane.ai/pool``, one of every ResourceSlice. For each match the provider creates
an observe-only Object (``managementPolicies: [Observe]``) labelled
``kubernetes.crossplane.io/owned-by-collection=<collection>``, whose
``status.atProvider.manifest`` is the object as the cluster shows it. The function asks
Crossplane for those Objects and counts each pool's usable nodes and devices
(:mod:`modelplane.domain.observed_capacity`).

The observation is used only when it is whole: both collections Synced and Ready, and
every member observed at least once. Otherwise (nothing observed yet, the cluster out of
reach, a member not observed yet) the pools publish their declared size only and the
condition ``CapacityObserved`` is False with reason ``Declared`` and why.

When an empty collection means "none" (provider-kubernetes v1.3.1, read from its
ObservedObjectCollection reconciler): the provider lists the matching objects on the
workload cluster, server-side applies a member Object for each, deletes the members of
what no longer matches, and only then writes, in one status update, ``Synced`` and
``Ready`` True (``ReconcileSuccess``, ``Available``) with ``status.membershipLabel``. A
failed list or member write sets ``Synced`` False and leaves ``Ready`` as it was, so
``Ready`` alone proves nothing now; and the status carries no member count, so a
collection with no member Object reads the same whether the provider listed nothing or
the function's read of the members (Crossplane's required resources, a separate watch
from the composed collection's) has not caught up with them yet. Hence:

- a collection counts only when ``Synced``, ``Ready`` and its ``membershipLabel`` (the
  label its members carry) are all there: the provider has listed and synced it;
- a Node collection with no member means "no node" only once the cluster has been
  observed with its Nodes before (a pool of ``status.gpuPools`` carries ``observed``):
  the read of the members may lag behind what the provider created, but a read that
  held members loses them only when they are deleted, and the provider deletes a
  member only when its list no longer matches the Node. Before that first observation
  an empty read is "not observed yet" (the declared sizes stand): zeroing every pool
  of a cluster on a read that may lag would move its replicas for nothing;
- a ResourceSlice collection with no member leaves the devices unknown (the declared
  devices stand) while the Nodes still count. Once any slice is observed, a usable node
  with no slice of a driver publishes none of it: that is what DRA allocates from.

The collections are marked ready whatever they report: observation informs the
scheduler, it never gates the cluster (a cluster whose observation fails serves as
before, on its declared capacity).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.domain import api, naming
from modelplane.domain import observed_capacity as capacity

NAMESPACE = "modelplane-system"
MEMBERSHIP_LABEL = "kubernetes.crossplane.io/owned-by-collection"
"""The label provider-kubernetes puts on each member Object of a collection."""
OBSERVES_LABEL = "modelplane.ai/observes-cluster"
"""On each member Object: the InferenceCluster it observes (for kubectl get -l)."""
NODES, SLICES = "observe-nodes", "observe-resource-slices"
_WATCHED: Mapping[str, tuple[str, str, dict[str, Any]]] = {
    # key: (apiVersion, kind, selector) of what the collection observes
    NODES: ("v1", "Node", {"matchExpressions": [{"key": api.POOL_LABEL, "operator": "Exists"}]}),
    SLICES: ("resource.k8s.io/v1", "ResourceSlice", {}),
}
KEYS = tuple(_WATCHED)
EMPTY_NODES = (
    f"the Node collection has no member Object yet (no Node labelled {api.POOL_LABEL} "
    "was observed before, and the members may not be read yet)"
)
GONE_MESSAGE = "does not exist"
"""What crossplane-runtime says of an observe-only resource that is not there (any more)."""


def collection_name(cluster: str, key: str) -> str:
    """Name the collection (at most 63 characters, as its CRD requires): ``<cluster>-nodes``."""
    return naming.label_value(f"{cluster}-{key.removeprefix('observe-')}")


def require(rsp: fnv1.RunFunctionResponse, cluster: str) -> tuple[str, ...]:
    """Ask for both collections' member Objects; return the requirement names."""
    for key in _WATCHED:
        kit.require(
            rsp,
            key,
            api.KUBERNETES_OBJECT,
            "Object",
            match_labels={MEMBERSHIP_LABEL: collection_name(cluster, key)},
            namespace=NAMESPACE,
        )
    return KEYS


def compose_collections(rsp: fnv1.RunFunctionResponse, cluster: str) -> None:
    """Compose the two collections, reaching the cluster through its provider config."""
    for key, (api_version, kind, selector) in _WATCHED.items():
        manifest = {
            "apiVersion": api.KUBERNETES_OBJECT,
            "kind": "ObservedObjectCollection",
            "metadata": {"name": collection_name(cluster, key), "namespace": NAMESPACE},
            "spec": {
                "providerConfigRef": {"kind": "ClusterProviderConfig", "name": cluster},
                "observeObjects": {"apiVersion": api_version, "kind": kind, "selector": selector},
                "objectTemplate": {
                    "metadata": {"labels": {OBSERVES_LABEL: naming.label_value(cluster)}}
                },
            },
        }
        kit.compose(rsp, key, manifest, ready=True)  # informs, never gates: see above


@dataclass(frozen=True)
class Observation:
    """The pools as observed, or None and why the declared sizes stand."""

    pools: dict[str, capacity.ObservedPool] | None
    why_declared: str = ""


def observe(req: fnv1.RunFunctionRequest, pool_names: Sequence[str]) -> Observation:
    """Read the collections and their members; count every declared pool if all is known."""
    for key in _WATCHED:
        why = _collection_problem(kit.observed(req, key), key)
        if why:
            return Observation(None, why)
    members = kit.required(req, NODES)
    if not members and not _observed_before(req):
        return Observation(None, EMPTY_NODES)
    nodes, why = _manifests(members, "Node")
    if why:
        return Observation(None, why)
    slice_members = kit.required(req, SLICES)
    slices, why = _manifests(slice_members, "ResourceSlice")
    if why:
        return Observation(None, why)
    pools = capacity.observe_pools(nodes, slices)
    if not slice_members:
        pools = capacity.devices_unknown(pools)
    return Observation(capacity.for_pools(pools, pool_names))


def autoscaled(observation: Observation, pools: Sequence[Any]) -> Observation:
    """The observation with autoscaled pools (min below max) counted up to their max
    (:func:`capacity.with_autoscaling`): a pool scaled to zero still takes a pod."""
    if observation.pools is None:
        return observation
    ceilings = {
        p.name: p.max_node_count
        for p in pools
        if p.max_node_count is not None and p.max_node_count > p.node_count
    }
    return Observation(capacity.with_autoscaling(observation.pools, ceilings))


def _observed_before(req: fnv1.RunFunctionRequest) -> bool:
    """Tell whether the cluster published an observation before (its Nodes were read)."""
    pools = kit.field(kit.composite(req), "status", "gpuPools")
    return any(isinstance(p, dict) and "observed" in p for p in pools or ())


def _collection_problem(found: Mapping[str, Any] | None, key: str) -> str:
    kind = _WATCHED[key][1]
    if found is None:
        return f"the {kind}s are not observed yet"
    for typ in ("Synced", "Ready"):
        if not kit.condition_true(found, typ):
            message = _condition_message(found, typ)
            return (
                f"observing the {kind}s failed: {message}"
                if message
                else (f"the {kind}s are not observed yet")
            )
    label = kit.mapping(found, "status", "membershipLabel")
    name = kit.text(found, "metadata", "name")
    if label.get(MEMBERSHIP_LABEL) != name or not name:
        return f"the {kind}s are not observed yet (the collection names no membership label)"
    return ""


def _manifests(
    members: Sequence[Mapping[str, Any]], kind: str
) -> tuple[list[Mapping[str, Any]], str]:
    """Return the observed objects of a collection's members, or why they are not known.

    A member whose object is gone (deleted from the cluster, not pruned from the
    collection yet) is left out; one never observed yet makes the whole unknown.
    """
    out: list[Mapping[str, Any]] = []
    waiting = []
    for member in sorted(members, key=lambda m: kit.text(m, "metadata", "name")):
        if GONE_MESSAGE in _condition_message(member, "Synced"):
            continue
        manifest = kit.mapping(member, "status", "atProvider", "manifest")
        if not manifest:
            waiting.append(kit.text(member, "metadata", "name"))
            continue
        out.append(manifest)
    if waiting:
        return [], f"{len(waiting)} of {len(members)} observed {kind}s not read yet"
    return out, ""


def _condition_message(resource: Mapping[str, Any], typ: str) -> str:
    for cond in kit.maps(resource, "status", "conditions"):
        if cond.get("type") == typ and cond.get("status") != "True":
            return str(cond.get("message") or cond.get("reason") or "")
    return ""


def publish(gpu_pools: list[Any], observation: Observation) -> list[Any]:
    """Return ``status.gpuPools`` with each pool's ``observed`` entry when the cluster is
    observed, and without one (even one a kept pool carried before) when it is not."""
    out = []
    for entry in gpu_pools:
        if not isinstance(entry, dict):
            out.append(entry)
            continue
        declared = {k: v for k, v in entry.items() if k != "observed"}
        seen = (observation.pools or {}).get(str(entry.get("name")))
        out.append({**declared, "observed": seen.status()} if seen is not None else declared)
    return out


def set_condition(rsp: fnv1.RunFunctionResponse, observation: Observation) -> None:
    """Say where the pools' capacity comes from: observed, or declared and why."""
    if observation.pools is None:
        kit.set_condition(
            rsp,
            "CapacityObserved",
            False,
            "Declared",
            f"capacity is declared, not observed: {observation.why_declared}",
        )
        return
    parts = []
    for pool in observation.pools.values():
        line = f"{pool.name}: {pool.nodes} usable node{'s' if pool.nodes != 1 else ''}"
        if pool.left_out:
            line += " (" + kit.listed([str(v) for v in pool.left_out], sep=", ") + ")"
        parts.append(line)
    kit.set_condition(rsp, "CapacityObserved", True, "Observed", "; ".join(parts))
