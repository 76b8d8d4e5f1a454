"""The resources a ModelDeployment composes: a ModelReplica per placed replica, and a
ModelEndpoint per Ready replica on a cluster with a gateway address (decisions.md,
"Composed resources, labels, names").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.compose import _kit as kit
from modelplane.compose.model_deployment.fleet import (
    CLUSTER_LABEL,
    DEPLOYMENT_LABEL,
    INDEX_LABEL,
    FleetState,
)
from modelplane.domain import api, naming, workload
from modelplane.domain.scheduling.fleet import Deployment
from modelplane.domain.scheduling.placement import ClaimedRequest, PlacedReplica, Placement

API_VERSION = api.MODELPLANE


@dataclass(frozen=True)
class ComposedReplica:
    """A ModelReplica this call composed."""

    name: str
    cluster: str
    index: int


def managed_labels(
    xr: Mapping[str, Any], deployment: str, cluster: str, index: int
) -> dict[str, str]:
    """The template's labels plus Modelplane's; Modelplane's win on a conflict.

    The deployment's and cluster's names become label values through
    :func:`naming.label_value` (a name past 63 characters is cut and hash-suffixed);
    the fleet read selects the deployment's replicas by the same value.
    """
    template = ((xr.get("spec") or {}).get("template") or {}).get("metadata") or {}
    merged = {str(k): str(v) for k, v in (template.get("labels") or {}).items()}
    merged.update(
        {
            DEPLOYMENT_LABEL: naming.label_value(deployment),
            CLUSTER_LABEL: naming.label_value(cluster),
            INDEX_LABEL: str(index),
        }
    )
    return dict(sorted(merged.items()))


def compose_replicas(
    rsp: fnv1.RunFunctionResponse,
    xr: Mapping[str, Any],
    deployment: Deployment,
    placement: Placement,
    state: FleetState,
    extra_labels: Mapping[tuple[str, int], Mapping[str, str]] | None = None,
) -> list[ComposedReplica]:
    """Compose one ModelReplica per placed replica, and each moving replica as it is.

    A replica kept as is (and every moving one) keeps its spec. ``extra_labels`` adds
    labels by (cluster, index): the template hash of a rolling update.
    """
    composed: list[ComposedReplica] = []
    moving = [PlacedReplica(m.cluster, m.index, None) for m in placement.moving]
    for placed in sorted([*placement.replicas, *moving], key=lambda p: (p.cluster, p.index)):
        name = naming.replica_name(deployment.name, placed.cluster, placed.index)
        if placed.engines is None:
            existing = state.own.get((placed.cluster, placed.index))
            spec = kit.struct_to_dict(existing).get("spec", {}) if existing is not None else {}
        else:
            spec = replica_spec(xr, placed)
        manifest = {
            "apiVersion": API_VERSION,
            "kind": "ModelReplica",
            "metadata": {
                "name": name,
                "namespace": deployment.namespace,
                "labels": _with(
                    managed_labels(xr, deployment.name, placed.cluster, placed.index),
                    (extra_labels or {}).get((placed.cluster, placed.index)),
                ),
            },
            "spec": spec,
        }
        kit.compose(rsp, f"replica-{placed.cluster}-{placed.index}", manifest)
        composed.append(ComposedReplica(name, placed.cluster, placed.index))
    return composed


def _with(labels: dict[str, str], extra: Mapping[str, str] | None) -> dict[str, str]:
    return labels if not extra else dict(sorted({**labels, **extra}.items()))


def replica_spec(xr: Mapping[str, Any], placed: PlacedReplica) -> dict[str, Any]:
    """The ModelReplica spec: the deployment's engines, each member pinned with its claims."""
    template = ((xr.get("spec") or {}).get("template") or {}).get("spec") or {}
    raw_engines = {e.get("name"): e for e in template.get("engines") or ()}
    engines = []
    for engine in placed.engines or ():
        raw = raw_engines.get(engine.engine) or {}
        out: dict[str, Any] = {"name": engine.engine}
        out.update({k: raw[k] for k in ("phase", "copies") if k in raw})
        out["members"] = [
            _member(raw_member, engine.pool, member.claims)
            for raw_member, member in zip(raw.get("members") or (), engine.members, strict=False)
        ]
        engines.append(out)
    spec: dict[str, Any] = {"clusterName": placed.cluster}
    spec.update({k: template[k] for k in ("modelCacheRef", "serving") if k in template})
    spec["engines"] = engines
    return spec


def _member(raw: Mapping[str, Any], pool: str, claims: Iterable[ClaimedRequest]) -> dict[str, Any]:
    """A member as the replica carries it: ``nodePoolName`` and ``deviceRequests``."""
    out: dict[str, Any] = {"role": raw.get("role")}
    if "worker" in raw:
        out["worker"] = raw["worker"]
    out["nodePoolName"] = pool
    requests = [
        {
            "name": c.name,
            "deviceClassName": c.device_class_name,
            "count": c.count,
            **({"selectors": [{"cel": s} for s in c.selectors]} if c.selectors else {}),
        }
        for c in claims
    ]
    if requests:
        out["deviceRequests"] = requests
    out["template"] = raw.get("template") or {}
    return out


def endpoint_key(replica: ComposedReplica) -> str:
    """Return the composed-resource key of a replica's ModelEndpoint."""
    return f"endpoint-{replica.cluster}-{replica.index}"


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
                "labels": _with(
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


def observed_replicas(req: fnv1.RunFunctionRequest) -> ObservedReplicas:
    """Read the ModelReplicas the composite composed once: which are Ready, which unreachable."""
    ready, unreachable = set(), set()
    for observed in req.observed.resources.values():
        obj = kit.struct_to_dict(observed.resource)
        if obj.get("kind") != "ModelReplica":
            continue
        name = str((obj.get("metadata") or {}).get("name", ""))
        if kit.is_ready(obj):
            ready.add(name)
        if any(
            c.get("type") == "ModelReady" and c.get("reason") == workload.UNREACHABLE
            for c in kit.maps(obj, "status", "conditions")
        ):
            unreachable.add(name)
    return ObservedReplicas(ready, unreachable)
