"""The ModelReplicas a placement asks for, as manifests: pure, so the function composes
them and the simulator applies them alike (decisions.md, "Composed resources, labels,
names").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.domain import api, naming
from modelplane.domain.api import CLUSTER_LABEL, DEPLOYMENT_LABEL, INDEX_LABEL
from modelplane.domain.scheduling.fleet import Deployment
from modelplane.domain.scheduling.placement import ClaimedRequest, PlacedReplica, Placement
from modelplane.kit import struct_to_dict
from modelplane.planning.fleet import FleetState

API_VERSION = api.MODELPLANE


@dataclass(frozen=True)
class ComposedReplica:
    """A ModelReplica a placement asks for: its name, where, and its composed-resource key."""

    name: str
    cluster: str
    index: int

    @property
    def key(self) -> str:
        """The composed-resource key the composite holds it under."""
        return f"replica-{self.cluster}-{self.index}"


@dataclass(frozen=True)
class ReplicaManifest:
    """One ModelReplica to compose: which (:class:`ComposedReplica`) and its manifest."""

    replica: ComposedReplica
    manifest: dict[str, Any]


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


def replica_manifests(
    xr: Mapping[str, Any],
    deployment: Deployment,
    placement: Placement,
    state: FleetState,
    extra_labels: Mapping[tuple[str, int], Mapping[str, str]] | None = None,
) -> list[ReplicaManifest]:
    """One ModelReplica per placed replica, and each moving replica as it is, in
    (cluster, index) order.

    A replica kept as is (and every moving one) keeps its spec. ``extra_labels`` adds
    labels by (cluster, index): the template hash of a rolling update.
    """
    manifests: list[ReplicaManifest] = []
    moving = [PlacedReplica(m.cluster, m.index, None) for m in placement.moving]
    for placed in sorted([*placement.replicas, *moving], key=lambda p: (p.cluster, p.index)):
        name = naming.replica_name(deployment.name, placed.cluster, placed.index)
        if placed.engines is None:
            existing = state.own.get((placed.cluster, placed.index))
            spec = struct_to_dict(existing).get("spec", {}) if existing is not None else {}
        else:
            spec = replica_spec(xr, placed)
        manifest = {
            "apiVersion": API_VERSION,
            "kind": "ModelReplica",
            "metadata": {
                "name": name,
                "namespace": deployment.namespace,
                "labels": with_labels(
                    managed_labels(xr, deployment.name, placed.cluster, placed.index),
                    (extra_labels or {}).get((placed.cluster, placed.index)),
                ),
            },
            "spec": spec,
        }
        replica = ComposedReplica(name, placed.cluster, placed.index)
        manifests.append(ReplicaManifest(replica, manifest))
    return manifests


def with_labels(labels: dict[str, str], extra: Mapping[str, str] | None) -> dict[str, str]:
    """``labels`` with ``extra`` added (sorted), or ``labels`` itself when there is none."""
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
