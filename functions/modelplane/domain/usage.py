"""Crossplane Usages: nothing deletes an InferenceCluster while ML resources run on it.

Deleting a cluster first would leave replicas and caches reconciling against
infrastructure that no longer exists, and orphan their workload objects (the docs'
clean-up order: ML resources first, then the cluster).

The InferenceCluster is cluster-scoped, and Crossplane's deletion guard matches a
namespaced ``Usage`` only to objects of its own namespace, so a Usage in a user's
namespace cannot hold it. The InferenceCluster itself therefore composes one
cluster-scoped ``ClusterUsage`` of itself (:func:`cluster_usage`) while any ModelReplica
(labelled ``modelplane.ai/cluster=<cluster>``) or ModelCache (listing the cluster in
``status.clusters``) uses it, and stops composing it once none does. While it exists the
API server refuses to delete the cluster; ``replayDeletion`` then replays a deletion that
was refused meanwhile, once the Usage goes.

A replica or cache composes no Usage of its own: the InferenceCluster reads who uses
it, and the ClusterUsage names them in its ``InUse`` condition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.domain import api
from modelplane.domain.workload import names

API_VERSION = api.USAGE
GROUP_VERSION = api.MODELPLANE
REASON = (
    "ModelReplicas or ModelCaches use this InferenceCluster: delete them first, then the cluster"
)
"""The ClusterUsage's reason: stable, so it is not rewritten as users come and go (the
InferenceCluster's ``InUse`` condition names them)."""


@dataclass(frozen=True, order=True)
class User:
    """An ML resource that uses a cluster: its kind, namespace and name."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        """Name it as ``kubectl`` would: ``ModelReplica ml-team/qwen-92535``."""
        return f"{self.kind} {self.namespace}/{self.name}"


def cluster_usage_name(cluster: str) -> str:
    """Name the ClusterUsage that holds ``cluster``: ``<cluster>-in-use``."""
    return names.fit(f"{cluster}-in-use")


def cluster_usage(cluster: str) -> dict[str, Any]:
    """Return the ClusterUsage that blocks deleting InferenceCluster ``cluster``."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterUsage",
        "metadata": {"name": cluster_usage_name(cluster)},
        "spec": {
            "of": {
                "apiVersion": GROUP_VERSION,
                "kind": "InferenceCluster",
                "resourceRef": {"name": cluster},
            },
            "reason": REASON,
            "replayDeletion": True,
        },
    }


def users(
    cluster: str,
    replicas: Iterable[Mapping[str, Any]],
    caches: Iterable[Mapping[str, Any]],
) -> list[User]:
    """Return the ML resources that use ``cluster``, sorted.

    Args:
        cluster: The InferenceCluster's name.
        replicas: ModelReplicas (those labelled with the cluster are its users).
        caches: ModelCaches (those whose ``status.clusters`` lists it are its users).
    """
    found = {
        _user("ModelReplica", r)
        for r in replicas
        if _labels(r).get(api.CLUSTER_LABEL) == cluster and _user("ModelReplica", r).name
    }
    for cache in caches:
        status = cache.get("status")
        listed = status.get("clusters") if isinstance(status, Mapping) else None
        if isinstance(listed, Sequence) and any(
            isinstance(c, Mapping) and c.get("name") == cluster for c in listed
        ):
            user = _user("ModelCache", cache)
            if user.name:
                found.add(user)
    return sorted(found)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = _meta(obj).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _user(kind: str, obj: Mapping[str, Any]) -> User:
    meta = _meta(obj)
    namespace, user = meta.get("namespace"), meta.get("name")
    return User(
        kind,
        namespace if isinstance(namespace, str) and namespace else "default",
        user if isinstance(user, str) else "",
    )
