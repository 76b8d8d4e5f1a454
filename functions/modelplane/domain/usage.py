"""Crossplane Usages: an ML resource holds its InferenceCluster while it runs there.

Deleting a cluster first would leave replicas and caches reconciling against
infrastructure that no longer exists, and orphan their workload objects (the docs'
clean-up order: ML resources first, then the cluster). A Usage in the user's namespace
blocks deleting the cluster-scoped InferenceCluster until the resource using it is gone;
``replayDeletion`` then lets a deletion that was refused meanwhile go through.
"""

from __future__ import annotations

from typing import Any

from modelplane.domain import api
from modelplane.domain.workload import names

API_VERSION = api.USAGE
GROUP_VERSION = api.MODELPLANE


def name(user: str, cluster: str) -> str:
    """Name the Usage ``<user>-uses-<cluster>``, cut to a valid name with a stable hash."""
    return names.fit(f"{user}-uses-{cluster}")


def of_cluster(kind: str, user: str, namespace: str, cluster: str) -> dict[str, Any]:
    """Return the Usage by which ``kind`` ``namespace/user`` holds InferenceCluster ``cluster``."""
    return {
        "apiVersion": API_VERSION,
        "kind": "Usage",
        "metadata": {"name": name(user, cluster), "namespace": namespace},
        "spec": {
            "of": {
                "apiVersion": GROUP_VERSION,
                "kind": "InferenceCluster",
                "resourceRef": {"name": cluster},
            },
            "by": {"apiVersion": GROUP_VERSION, "kind": kind, "resourceRef": {"name": user}},
            "replayDeletion": True,
        },
    }
