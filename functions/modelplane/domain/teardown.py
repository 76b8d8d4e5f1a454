"""Teardown in order: Crossplane Usages between the resources one composite composes.

Deleting a composite deletes everything it composed at once (Kubernetes' garbage
collector). A Helm Release or provider-kubernetes Object is deleted through its provider
config, which reaches the workload cluster with the cluster's kubeconfig: if the cluster
(or the kubeconfig, or the provider config) goes first, the Release hangs on its
finalizer against an API server that is gone. Likewise a node group must go before its
cluster, and the cluster before the network it runs in.

Crossplane v2.4's mechanism for this order is a composed ``Usage`` with ``spec.by`` (the
user) and ``spec.of`` (what it uses), and ``replayDeletion``: while the Usage exists,
Crossplane's webhook refuses to delete ``of`` (and records the attempt); once ``by`` is
gone, Crossplane lets the Usage go and replays the refused deletion. An :class:`Edge` is
one such pair; :func:`usage` builds its Usage.

Nothing is blocked in normal operation: when a composite stops composing a resource
(a removed pool's node group, a component the spec no longer enables), it stops
composing that resource's Usages first and keeps the resource one more pass; Crossplane
garbage-collects the Usages, first stripping their composite label, so its Usage
controller lets them go at once without waiting for their user; then the resource goes
(never refused by the webhook). Only when the composite itself is deleted (Kubernetes'
garbage collector, labels intact) does a Usage wait for its user.

A Usage names both ends by name, so an edge is composed only once both ends exist;
until then nothing orders them, and nothing is blocked. A Usage has no readiness of its
own (:mod:`modelplane.kit.readiness`): it never holds its composite's Ready back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.domain import api
from modelplane.domain.clouds.common import CLUSTER_KEY
from modelplane.domain.gating import Step
from modelplane.domain.workload import names

KEY_PREFIX = "order-"
"""Composed-resource keys of the ordering Usages start with this."""

WORKLOAD_GROUPS = frozenset({"kubernetes.m.crossplane.io", "helm.m.crossplane.io"})
"""Groups of what reaches the workload cluster through a provider config."""
PROVIDER_CONFIG_KINDS = frozenset({"ProviderConfig", "ClusterProviderConfig"})
WORKLOAD_KINDS = frozenset({"Object", "Release"})
KUBECONFIG_KINDS = frozenset({("eks.aws.m.upbound.io", "ClusterAuth")})
"""Resources that write the kubeconfig Secret a provider config reads (besides the
cluster itself, whose connection Secret is the kubeconfig on the other clouds)."""
NODE_KINDS = frozenset(
    {
        ("eks.aws.m.upbound.io", "NodeGroup"),
        ("container.gcp.m.upbound.io", "NodePool"),
        ("containerservice.azure.m.upbound.io", "KubernetesClusterNodePool"),
        ("mk8s.nebius.m.upbound.io", "NodeGroup"),
        ("vke.vultr.m.upbound.io", "KubernetesNodePool"),
    }
)
NETWORK_KINDS = frozenset(
    {
        ("ec2.aws.m.upbound.io", "VPC"),
        ("ec2.aws.m.upbound.io", "Subnet"),
        ("compute.gcp.m.upbound.io", "Network"),
        ("compute.gcp.m.upbound.io", "Subnetwork"),
        ("azure.m.upbound.io", "ResourceGroup"),
        ("network.azure.m.upbound.io", "VirtualNetwork"),
        ("network.azure.m.upbound.io", "Subnet"),
        ("vpc.nebius.m.upbound.io", "Network"),
        ("vpc.nebius.m.upbound.io", "Subnet"),
        ("vpc.nebius.m.upbound.io", "Pool"),
    }
)
"""The network a cluster runs in: kept until the cluster is gone."""


@dataclass(frozen=True, order=True)
class Ref:
    """A composed resource: its key in the composite and who it is in the API."""

    key: str
    api_version: str
    kind: str
    name: str
    namespace: str = ""  # "" for a cluster-scoped resource

    @property
    def group(self) -> str:
        """The API group ("" for the core group)."""
        return self.api_version.rpartition("/")[0]


@dataclass(frozen=True, order=True)
class Edge:
    """``user`` runs on ``used``: ``used`` is deleted only once ``user`` is gone."""

    user: Ref
    used: Ref

    def __str__(self) -> str:
        return f"{self.user.kind} {self.user.name} before {self.used.kind} {self.used.name}"


def ref(key: str, manifest: Mapping[str, Any]) -> Ref | None:
    """Return the composed resource ``key`` as a :class:`Ref` (None if it has no name)."""
    meta = manifest.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    api_version, kind, name = manifest.get("apiVersion"), manifest.get("kind"), meta.get("name")
    if not all(isinstance(v, str) and v for v in (api_version, kind, name)):
        return None
    namespace = meta.get("namespace")
    return Ref(
        key, str(api_version), str(kind), str(name), namespace if isinstance(namespace, str) else ""
    )


def refs(manifests: Mapping[str, Mapping[str, Any]]) -> dict[str, Ref]:
    """Return every named manifest of ``manifests`` (by key) as a :class:`Ref`."""
    found = {key: ref(key, m) for key, m in manifests.items()}
    return {key: r for key, r in found.items() if r is not None}


def usage_key(edge: Edge) -> str:
    """The composed-resource key of ``edge``'s Usage: stable, and unique in its composite."""
    return f"{KEY_PREFIX}{edge.user.key}-uses-{edge.used.key}"


def usage_name(owner: str, edge: Edge) -> str:
    """Name ``edge``'s Usage after its composite ``owner`` and both keys, fit to 63."""
    return names.fit(f"{owner}-{edge.user.key}-uses-{edge.used.key}")


def usage(owner: str, edge: Edge) -> dict[str, Any] | None:
    """Return the Usage that deletes ``edge.used`` only after ``edge.user``, or None if
    Crossplane's Usages cannot express the pair.

    A namespaced Usage lives with its user (``by`` is looked up in the Usage's namespace
    or cluster-wide) and may name ``of`` in another namespace; a cluster-scoped user of a
    namespaced resource gets a Usage in that resource's namespace; two cluster-scoped
    ends, a ClusterUsage. A namespaced user of a cluster-scoped resource has no Usage
    that the webhook would find (it looks the resource up under the Usage's namespace).

    Args:
        owner: The composing composite's name (Usage names are unique per composite).
        edge: The pair to order.
    """
    user, used = edge.user, edge.used
    of_ref: dict[str, str] = {"name": used.name}
    if user.namespace:
        if not used.namespace:
            return None
        namespace = user.namespace
        if used.namespace != namespace:
            of_ref["namespace"] = used.namespace
    else:
        namespace = used.namespace
    metadata: dict[str, str] = {"name": usage_name(owner, edge)}
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": api.USAGE,
        "kind": "Usage" if namespace else "ClusterUsage",
        "metadata": metadata,
        "spec": {
            "of": {"apiVersion": used.api_version, "kind": used.kind, "resourceRef": of_ref},
            "by": {
                "apiVersion": user.api_version,
                "kind": user.kind,
                "resourceRef": {"name": user.name},
            },
            "replayDeletion": True,
        },
    }


def used_by(usage: Mapping[str, Any]) -> tuple[str, str, str, str] | None:
    """Return what a Usage (as observed) keeps: ``(apiVersion, kind, namespace, name)``,
    its namespace "" when cluster-scoped or the Usage's own (None if it names none)."""
    spec = usage.get("spec")
    of = spec.get("of") if isinstance(spec, Mapping) else None
    ref = of.get("resourceRef") if isinstance(of, Mapping) else None
    if not isinstance(of, Mapping) or not isinstance(ref, Mapping):
        return None
    meta = usage.get("metadata")
    own = meta.get("namespace") if isinstance(meta, Mapping) else None
    return (
        str(of.get("apiVersion", "")),
        str(of.get("kind", "")),
        str(ref.get("namespace") or own or ""),
        str(ref.get("name", "")),
    )


def is_used(r: Ref, of: tuple[str, str, str, str]) -> bool:
    """Tell whether a Usage's ``of`` (:func:`used_by`) is the resource ``r``."""
    api_version, kind, namespace, name = of
    return (r.api_version, r.kind, r.name) == (api_version, kind, name) and r.namespace in (
        namespace,
        "",
    )


def cloud_edges(manifests: Mapping[str, Mapping[str, Any]]) -> list[Edge]:
    """Return the order a cloud cluster composite's resources are deleted in.

    Workload-cluster objects (Objects, Releases) before the provider config they go
    through; provider configs before what writes the kubeconfig (EKS' ClusterAuth, else
    the cluster) and before the node groups (what a Release installs runs there); the
    ClusterAuth and every node group before the cluster; the cluster before its network.
    """
    found = refs(manifests)
    cluster = found.get(CLUSTER_KEY)
    if cluster is None:
        return []
    configs = [r for r in found.values() if _is_provider_config(r)]
    auths = [r for r in found.values() if (r.group, r.kind) in KUBECONFIG_KINDS]
    edges = [
        Edge(r, config)
        for r in found.values()
        if r.group in WORKLOAD_GROUPS and r.kind in WORKLOAD_KINDS
        for config in configs
        if _goes_through(manifests[r.key], config)
    ]
    edges += [Edge(config, kubeconfig) for config in configs for kubeconfig in auths or [cluster]]
    nodes = [r for r in found.values() if (r.group, r.kind) in NODE_KINDS]
    edges += [Edge(config, node) for config in configs for node in nodes]
    edges += [Edge(auth, cluster) for auth in auths]
    edges += [Edge(node, cluster) for node in nodes]
    edges += [Edge(cluster, r) for r in found.values() if (r.group, r.kind) in NETWORK_KINDS]
    return sorted(edges)


def step_edges(steps: Iterable[Step], manifests: Mapping[str, Mapping[str, Any]]) -> list[Edge]:
    """Return the order of install steps, reversed: each step goes before the steps it
    needs (a Gateway before the controller and the CRDs it was installed after).

    Args:
        steps: The install steps (:class:`modelplane.domain.gating.Step`).
        manifests: The composed manifests by key (a step not composed has no edge).
    """
    found = refs(manifests)
    return sorted(
        Edge(found[step.key], found[need])
        for step in steps
        if step.key in found
        for need in step.needs
        if need in found
    )


def uses(users: Iterable[str], used: str, manifests: Mapping[str, Mapping[str, Any]]) -> list[Edge]:
    """Return the edges from each of ``users`` (keys) to ``used``, among ``manifests``."""
    found = refs(manifests)
    if used not in found:
        return []
    return sorted(Edge(found[u], found[used]) for u in users if u in found and u != used)


def _is_provider_config(r: Ref) -> bool:
    return r.group in WORKLOAD_GROUPS and r.kind in PROVIDER_CONFIG_KINDS


def _goes_through(manifest: Mapping[str, Any], config: Ref) -> bool:
    """Tell whether the workload object ``manifest`` names provider config ``config``."""
    spec = manifest.get("spec")
    named = spec.get("providerConfigRef") if isinstance(spec, Mapping) else None
    if not isinstance(named, Mapping) or named.get("name") != config.name:
        return False
    group = str(manifest.get("apiVersion", "")).rpartition("/")[0]
    return group == config.group and named.get("kind", "ClusterProviderConfig") == config.kind
