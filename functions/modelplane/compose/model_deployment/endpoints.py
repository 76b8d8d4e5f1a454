"""What the ModelDeployment adapter writes and reads of its own composed resources: the
ModelReplicas a placement asks for (:func:`modelplane.planning.replica_manifests`), a
ModelEndpoint per Ready replica on a cluster with a gateway address, and what the
composite's observed replicas report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.domain import api, naming, routed, workload
from modelplane.domain.api import TEMPLATE_HASH_LABEL
from modelplane.domain.scheduling.fleet import Deployment
from modelplane.domain.scheduling.placement import Placement
from modelplane.planning import (
    ComposedReplica,
    FleetState,
    ReplicaManifest,
    Routes,
    managed_labels,
    with_labels,
)

API_VERSION = api.MODELPLANE


def compose_replicas(
    rsp: fnv1.RunFunctionResponse, manifests: Iterable[ReplicaManifest]
) -> list[ComposedReplica]:
    """Compose the ModelReplicas a placement asks for; return them in the order composed."""
    composed = []
    for found in manifests:
        kit.compose(rsp, found.replica.key, found.manifest)
        composed.append(found.replica)
    return composed


def endpoint_key(replica: ComposedReplica) -> str:
    """Return the composed-resource key of a replica's ModelEndpoint."""
    return _endpoint_key(replica.cluster, replica.index)


def _endpoint_key(cluster: str, index: int) -> str:
    return f"endpoint-{cluster}-{index}"


def observed_routes(
    req: fnv1.RunFunctionRequest, deployment: Deployment, placement: Placement, state: FleetState
) -> Routes:
    """Which placed replicas the ModelServices route to, as their endpoints report it.

    A replica on a cluster with a gateway address gets an endpoint once Ready; it counts
    as available for a rolling update only once that endpoint says ``Routed`` (the
    template hash it carries says which template it was composed for). A replica on a
    cluster without one gets no endpoint: nothing routes to it, and nothing is waited for.
    """
    gated, found = set(), {}
    keys = [(p.cluster, p.index) for p in placement.replicas]
    keys += [(m.cluster, m.index) for m in placement.moving]
    for where, index in keys:
        cluster = state.clusters.get(where)
        if cluster is None or not cluster.gateway_address:
            continue
        name = naming.replica_name(deployment.name, where, index)
        gated.add(name)
        endpoint = kit.observed(req, _endpoint_key(where, index))
        if kit.condition_true(endpoint, routed.CONDITION):
            labels = kit.mapping(endpoint, "metadata", "labels")
            hashed = labels.get(TEMPLATE_HASH_LABEL)
            found[name] = None if hashed is None else str(hashed)
    return Routes(frozenset(gated), found)


def compose_endpoints(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    xr: Mapping[str, Any],
    deployment: Deployment,
    composed: Iterable[ComposedReplica],
    state: FleetState,
    ready: set[str],
    unreachable: set[str],
    extra_labels: Mapping[tuple[str, int], Mapping[str, str]] | None = None,
) -> list[str]:
    """Compose a ModelEndpoint for each Ready replica on a cluster with a gateway address.

    An endpoint already composed for a replica that is still composed stays, unchanged,
    while the replica or its cluster's gateway flaps: only a replica that goes takes its
    endpoint with it, and so does one whose cluster is out of reach (``unreachable``:
    none of its Objects syncs), as an unreachable node's pods leave a Service, and one
    whose replica took another template (``extra_labels``, the rollout's hash: it is
    restarting, as a pod being replaced leaves its Service).
    """
    names = []
    for replica in composed:
        if replica.name in unreachable:
            continue
        cluster = state.clusters.get(replica.cluster)
        labels = (extra_labels or {}).get((replica.cluster, replica.index))
        if replica.name not in ready or cluster is None or not cluster.gateway_address:
            if _same_template(kit.observed(req, endpoint_key(replica)), labels):
                kit.hold(req, rsp, [endpoint_key(replica)])
            continue
        name = naming.endpoint_name(replica.name)
        url = naming.endpoint_url(cluster.gateway_address, deployment.namespace, replica.name)
        manifest = {
            "apiVersion": API_VERSION,
            "kind": "ModelEndpoint",
            "metadata": {
                "name": name,
                "namespace": deployment.namespace,
                "labels": with_labels(
                    managed_labels(xr, deployment.name, replica.cluster, replica.index), labels
                ),
            },
            "spec": {
                "url": url,
                "rewritePath": naming.rewrite_path(deployment.namespace, replica.name),
            },
        }
        kit.compose(rsp, endpoint_key(replica), manifest)
        names.append(name)
    return names


def _same_template(endpoint: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """Tell whether an observed endpoint was composed for the template its replica runs."""
    if endpoint is None or not labels:
        return True
    have = (endpoint.get("metadata") or {}).get("labels") or {}
    return all(have.get(k, v) == v for k, v in labels.items())


@dataclass(frozen=True)
class ObservedReplicas:
    """What the composite's own ModelReplicas report, by name."""

    ready: set[str]
    unreachable: set[str]  # ModelReady says their cluster is out of reach
    clusters: frozenset[str] = frozenset()  # where they run (spec.clusterName)
    count: int = 0  # how many there are
    templates: frozenset[str] = frozenset()  # their template hashes (labelled ones)


def observed_replicas(req: fnv1.RunFunctionRequest) -> ObservedReplicas:
    """Read the ModelReplicas the composite composed once: which are Ready, which
    unreachable, the clusters they run on, how many, and their template hashes."""
    ready, unreachable, clusters, templates, count = set(), set(), set(), set(), 0
    for observed in req.observed.resources.values():
        obj = kit.struct_to_dict(observed.resource)
        if obj.get("kind") != "ModelReplica":
            continue
        count += 1
        if cluster := kit.text(obj, "spec", "clusterName"):
            clusters.add(cluster)
        if template := kit.text(obj, "metadata", "labels", TEMPLATE_HASH_LABEL):
            templates.add(template)
        name = str((obj.get("metadata") or {}).get("name", ""))
        if kit.is_ready(obj):
            ready.add(name)
        if any(
            c.get("type") == "ModelReady" and c.get("reason") == workload.UNREACHABLE
            for c in kit.maps(obj, "status", "conditions")
        ):
            unreachable.add(name)
    return ObservedReplicas(ready, unreachable, frozenset(clusters), count, frozenset(templates))
