"""Wrap each workload-cluster manifest in a provider-kubernetes Object.

The Object (a namespaced managed resource in the replica's namespace on the control
cluster) names the cluster's provider config and carries the manifest; its ``Ready``
condition follows the wrapped object's own status, so the replica reads readiness off
its composed Objects alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.domain import objects
from modelplane.domain.workload import names
from modelplane.domain.workload.engines import Manifest, Readiness
from modelplane.domain.workload.spec import Replica, WorkloadCluster

ACCEPTED_QUERY = (
    "has(object.status) && has(object.status.parents) && object.status.parents.exists(p, "
    'has(p.conditions) && p.conditions.exists(c, c.type == "Accepted" && c.status == "True"))'
)
"""A route carries traffic once a parent Gateway has accepted it."""

# Re-exported for the replica's callers and tests.
API_VERSION, KIND, KEEP = objects.API_VERSION, objects.KIND, objects.KEEP


def wrap(
    replica: Replica, cluster: WorkloadCluster, manifest: Manifest, *, keep: bool = False
) -> dict[str, Any]:
    """Return the Object that applies ``manifest`` on the replica's cluster.

    Args:
        replica: The replica the Object belongs to (it lives in the replica's namespace).
        cluster: The cluster, whose provider config the Object names.
        manifest: The object to apply, and how its readiness is judged.
        keep: Never delete the wrapped object, even when the Object goes away.
    """
    provider_config = {"kind": cluster.provider_config_kind.value, "name": cluster.provider_config}
    return objects.wrap(
        object_name(replica, manifest.key),
        replica.namespace,
        provider_config,
        manifest.manifest,
        ready_when=_ready_when(manifest),
        keep=keep,
        labels=names.base_labels(replica),
    )


def object_name(replica: Replica, key: str) -> str:
    """Name the Object of the composed resource ``key`` (unique among the namespace's)."""
    return names.fit(f"{replica.name}-{key}")


def namespace(replica: Replica) -> Manifest:
    """Return the engine namespace, named like the replica's own."""
    manifest: Mapping[str, Any] = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "labels": {names.LABEL_MANAGED_BY: names.MANAGED_BY},
            "name": replica.namespace,
        },
    }
    return Manifest("namespace", manifest)


def _ready_when(manifest: Manifest) -> str | None:
    match manifest.readiness:
        case Readiness.AVAILABLE:
            # From the counts of what runs, never the Available condition (see the query).
            return objects.workload_query(str(manifest.manifest.get("kind", "")))
        case Readiness.ACCEPTED:
            return ACCEPTED_QUERY
        case Readiness.CREATED:
            return None
