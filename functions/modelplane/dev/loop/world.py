"""The loop's world: what the fake providers read of the control plane's store, and of
the workload clusters it reaches.

A workload cluster is the provider configs' kubeconfig Secret: what exists there is
every Release and Object (``Synced``) that reaches it. :class:`ClusterView` answers for
one cluster what :class:`modelplane.dev.fakes.kubernetes.Cluster` asks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from modelplane.dev.fakes.base import (
    HELM_GROUP,
    KUBERNETES_GROUP,
    MODELPLANE_GROUP,
    Key,
    Obj,
    condition_is,
    controller_uid,
    group_of,
    labels_match,
    name_of,
    uid_of,
)
from modelplane.dev.fakes.helm import chart_of
from modelplane.dev.fakes.kubernetes import NEVER_READY, manifest_of, pod_templates
from modelplane.dev.loop.applies import Generations
from modelplane.dev.loop.nodes import NodeState, cluster_nodes
from modelplane.domain.api import POOL_LABEL

CONTROL_PLANE = "control-plane"
"""The cluster identity of objects Crossplane composes directly on the control plane."""


class Family:
    """One provider family's resources in one namespace: what references to them resolve to."""

    def __init__(self, members: list[Obj]) -> None:
        self.members = members
        self.names = frozenset(name_of(obj) for obj in members)
        self._selected: dict[tuple[Any, str | None], bool] = {}
        self._by_label: dict[tuple[str, Any], list[Obj]] | None = None

    def named(self, name: Any) -> bool:
        """Tell whether a resource of the family has this name."""
        return isinstance(name, str) and name in self.names

    def selects(self, labels: Mapping[str, Any], owner: str | None) -> bool:
        """Tell whether a resource carries every label of ``labels`` and, unless ``owner``
        is None, has that controller (a selector's ``matchControllerRef``).

        Remembered per selector: the resources of one composite share their selectors.
        """
        try:
            key = (tuple(sorted(labels.items())), owner)
            hash(key)
        except TypeError:  # a label value no YAML scalar has: not worth remembering
            return self._select(labels, owner)
        found = self._selected.get(key)
        if found is None:
            found = self._selected[key] = self._select(labels, owner)
        return found

    def _select(self, labels: Mapping[str, Any], owner: str | None) -> bool:
        return any(
            labels_match(obj, labels) and (owner is None or controller_uid(obj) == owner)
            for obj in self._candidates(labels)
        )

    def _candidates(self, labels: Mapping[str, Any]) -> list[Obj]:
        """The members that carry the selector's rarest label (each still checked whole):
        a scan of every member per selector made observing a cloud fleet quadratic."""
        if not labels:
            return self.members
        if self._by_label is None:
            self._by_label = {}
            for obj in self.members:
                for pair in ((obj.get("metadata") or {}).get("labels") or {}).items():
                    try:
                        self._by_label.setdefault(pair, []).append(obj)
                    except TypeError:  # an unhashable label value: never a selector's
                        continue
        try:
            return min((self._by_label.get(pair, []) for pair in labels.items()), key=len)
        except TypeError:
            return self.members


class World:
    """Read-only views of the store the reporters share."""

    def __init__(
        self,
        store: Mapping[Key, Obj],
        installed: set[str],
        nodes: Mapping[tuple[str, str], NodeState] | None = None,
        generations: Generations | None = None,
    ) -> None:
        self.store = store
        self.installed = installed
        self.nodes = nodes or {}
        self.generations = generations
        self._clusters: dict[str, list[Obj]] | None = None
        self._groups: dict[str, dict[str, list[Key]]] | None = None
        self._families: dict[tuple[str, str], Family] = {}
        self._applied: dict[str, dict[tuple[str, str, str], Obj]] = {}

    def get(self, group: str, kind: str, namespace: str, name: str) -> Obj | None:
        return self.store.get((group, kind, namespace, name))

    def all(self) -> Iterator[Obj]:
        return iter(list(self.store.values()))

    def family(self, namespace: str, family: str) -> Family:
        """Return one provider family's resources in ``namespace`` (those whose API group
        ends with ``family``), as the reference checks of its resources ask for them.

        Listed once per World from an index of the store by namespace and group: a
        reporter asks this for every reference it checks, and a scan of the store each
        time made observing a fleet quadratic in its size. Observing adds and removes
        Secrets and provider-kubernetes Objects only, and writes statuses, never a cloud
        family's resources or their metadata, so the listing holds for the World's life.
        """
        found = self._families.get((namespace, family))
        if found is None:
            if self._groups is None:
                self._groups = {}
                for key in self.store:
                    self._groups.setdefault(key[2], {}).setdefault(key[0], []).append(key)
            members = [
                self.store[key]
                for group, keys in self._groups.get(namespace, {}).items()
                if group.endswith(family)
                for key in keys
                if key in self.store  # removed since the index was made
            ]
            found = self._families[(namespace, family)] = Family(members)
        return found

    def cluster(self, name: str) -> ClusterView:
        """Return one workload cluster as the library's reporters read it."""
        return ClusterView(self, name)

    # -- provider configs -------------------------------------------------------------------

    def connect(self, obj: Mapping[str, Any], family: str) -> tuple[Obj | None, str]:
        """Return the provider config ``obj`` names and, when it can't connect, why."""
        ref = (obj.get("spec") or {}).get("providerConfigRef") or {}
        kind = str(ref.get("kind") or "ClusterProviderConfig")
        name = str(ref.get("name") or "default")
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        config = self.get(family, kind, namespace if kind == "ProviderConfig" else "", name)
        where = f"{namespace}/{name}" if kind == "ProviderConfig" else name
        if config is None:
            return None, f"connect failed: cannot get {kind} {where} ({family}): not found"
        credentials = (config.get("spec") or {}).get("credentials") or {}
        if credentials.get("source") != "Secret":
            return config, ""
        secret_ref = credentials.get("secretRef") or {}
        secret_ns = str(secret_ref.get("namespace") or namespace)
        secret = self.get("", "Secret", secret_ns, str(secret_ref.get("name", "")))
        data_key = str(secret_ref.get("key", ""))
        if secret is None or data_key not in (secret.get("data") or {}):
            what = f"Secret {secret_ns}/{secret_ref.get('name')} key {data_key}"
            return config, f"connect failed: cannot read the credentials of {kind} {where}: {what}"
        return config, ""

    def cluster_of(self, obj: Mapping[str, Any], family: str) -> str | None:
        """Return which workload cluster ``obj`` reaches: its kubeconfig Secret, or None."""
        config, problem = self.connect(obj, family)
        if config is None or problem:
            return None
        credentials = (config.get("spec") or {}).get("credentials") or {}
        if credentials.get("source") != "Secret":
            return CONTROL_PLANE
        secret_ref = credentials.get("secretRef") or {}
        namespace = str(
            secret_ref.get("namespace") or (config.get("metadata") or {}).get("namespace") or ""
        )
        return f"{namespace}/{secret_ref.get('name')}"

    # -- what exists on each workload cluster -----------------------------------------------

    def on_cluster(self, cluster: str) -> list[Obj]:
        """Return the Releases and Objects that reach ``cluster`` and apply there."""
        if self._clusters is None:
            self._clusters = {}
            for obj in self.all():
                family = group_of(obj)
                if family not in (HELM_GROUP, KUBERNETES_GROUP) or obj.get("kind") not in (
                    "Release",
                    "Object",
                ):
                    continue
                where = self.cluster_of(obj, family)
                if where is not None and condition_is(obj, "Synced"):
                    self._clusters.setdefault(where, []).append(obj)
        return self._clusters.get(cluster, [])

    def applied(self, cluster: str, kind: str, namespace: str, name: str) -> Obj | None:
        """Return the manifest of ``kind namespace/name`` as it is on ``cluster`` (None: absent).

        The first Object of :meth:`on_cluster` that applies it, found in an index of them
        by what they apply, made once per cluster per World (reporters ask this for every
        namespace and workload they check).
        """
        by_manifest = self._applied.get(cluster)
        if by_manifest is None:
            by_manifest = self._applied[cluster] = {}
            for obj in self.on_cluster(cluster):
                if obj.get("kind") != "Object":
                    continue
                manifest = manifest_of(obj)
                applies = manifest.get("kind")
                if not isinstance(applies, str):
                    continue  # no kind: nothing asks for it
                meta = manifest.get("metadata") or {}
                what = (applies, str(meta.get("namespace") or ""), str(meta.get("name", "")))
                by_manifest.setdefault(what, obj)
        found = by_manifest.get((kind, namespace, name))
        if found is None:
            return None
        at_provider = ((found.get("status") or {}).get("atProvider") or {}).get("manifest")
        return dict(at_provider or manifest_of(found))

    def pool_runs(self, cluster: str, pool: str) -> bool:
        """Tell whether a node of ``pool`` on ``cluster`` exists and is Ready (pods run)."""
        for ic in self.all():
            if ic.get("kind") != "InferenceCluster" or group_of(ic) != MODELPLANE_GROUP:
                continue
            name = str((ic.get("metadata") or {}).get("name", ""))
            config = self.get(KUBERNETES_GROUP, "ClusterProviderConfig", "", name)
            if (
                config is None
                or self.cluster_of(
                    {
                        "spec": {
                            "providerConfigRef": {"kind": "ClusterProviderConfig", "name": name}
                        }
                    },
                    KUBERNETES_GROUP,
                )
                != cluster
            ):
                continue  # fmt: skip
            nodes, _ = cluster_nodes(ic, {}, self.nodes)
            return any(
                n["metadata"]["labels"].get(POOL_LABEL) == pool
                and n["status"]["conditions"][0]["status"] == "True"
                for n in nodes
            )
        return True  # a cluster no InferenceCluster declares: nothing known against it

    def installs(self, cluster: str, how: str, what: str) -> bool:
        """Tell whether a chart (``how="chart"``) or a Job's CRDs are installed on ``cluster``."""
        for obj in self.on_cluster(cluster):
            if uid_of(obj) not in self.installed:
                continue
            if (
                how == "chart"
                and obj.get("kind") == "Release"
                and chart_of(obj).get("name") == what
            ):
                return True
            if how == "job" and obj.get("kind") == "Object":
                manifest = manifest_of(obj)
                name = str((manifest.get("metadata") or {}).get("name", ""))
                if manifest.get("kind") == "Job" and name.startswith(what):
                    return True
        return False


class ClusterView:
    """One workload cluster of the world: what is applied there, and what its pods lack."""

    def __init__(self, world: World, name: str) -> None:
        self.world = world
        self.name = name

    def installs(self, how: str, what: str) -> bool:
        return self.world.installs(self.name, how, what)

    def lookup(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.world.applied(self.name, kind, namespace, name)

    def pods_blocked(self, manifest: Mapping[str, Any]) -> list[str]:
        """Say what keeps the manifest's pods from running on ``cluster``."""
        namespace = str((manifest.get("metadata") or {}).get("namespace") or "default")
        missing: list[str] = []
        for template in pod_templates(manifest):
            pod = template.get("spec") or {}
            account = pod.get("serviceAccountName")
            if (
                account
                and account != "default"
                and self.lookup("ServiceAccount", namespace, str(account)) is None
            ):
                missing.append(f"ServiceAccount {namespace}/{account}")
            for container in pod.get("containers") or ():
                image = str(container.get("image") or "")
                if NEVER_READY in image:
                    missing.append(f"image {image} to start (it never does)")
            for volume in pod.get("volumes") or ():
                claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
                if not claim:
                    continue
                found = self.lookup("PersistentVolumeClaim", namespace, str(claim))
                if found is None or (found.get("status") or {}).get("phase") != "Bound":
                    missing.append(f"PersistentVolumeClaim {namespace}/{claim}")
            pool = (pod.get("nodeSelector") or {}).get(POOL_LABEL)
            if pool and self.world.nodes and not self.world.pool_runs(self.name, str(pool)):
                missing.append(f"a Ready node of pool {pool}")
            for claim in pod.get("resourceClaims") or ():
                template_name = claim.get("resourceClaimTemplateName")
                if (
                    template_name
                    and self.lookup("ResourceClaimTemplate", namespace, str(template_name)) is None
                ):
                    missing.append(f"ResourceClaimTemplate {namespace}/{template_name}")
        return sorted(set(missing))


VKE_GPU_OPERATOR = ("DaemonSet", "gpu-operator", "nvidia-operator-validator")
"""What VKE installs on a cluster with GPU pools: NVIDIA's GPU operator, whose validator
DaemonSet runs a pod on every GPU node."""


def cloud_installed(world: World, cluster: str, kind: str, namespace: str, name: str) -> Obj | None:
    """Return an object the cloud itself runs on ``cluster`` (None: it runs no such object)."""
    if (kind, namespace, name) != VKE_GPU_OPERATOR:
        return None
    vke = next(
        (
            o
            for o in world.all()
            if group_of(o).startswith("vke.vultr")
            and o.get("kind") == "Kubernetes"
            and cluster == _connection_secret_key(o)
        ),
        None,
    )
    if vke is None:
        return None
    gpus = sum(_vke_pool_nodes(p) for p in world.all() if _pool_of(p, vke))
    status = {
        "currentNumberScheduled": gpus,
        "desiredNumberScheduled": gpus,
        "numberAvailable": gpus,
        "numberMisscheduled": 0,
        "numberReady": gpus,
        "observedGeneration": 1,
        "updatedNumberScheduled": gpus,
    }
    metadata = {"name": name, "namespace": namespace, "generation": 1}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": metadata, "status": status}


def _connection_secret_key(obj: Mapping[str, Any]) -> str:
    target = (obj.get("spec") or {}).get("writeConnectionSecretToRef") or {}
    namespace = (obj.get("metadata") or {}).get("namespace") or ""
    return f"{namespace}/{target.get('name')}"


def _pool_of(pool: Mapping[str, Any], vke: Mapping[str, Any]) -> bool:
    if pool.get("kind") != "KubernetesNodePool" or not group_of(pool).startswith("vke.vultr"):
        return False
    ref = ((pool.get("spec") or {}).get("forProvider") or {}).get("clusterIdRef") or {}
    return ref.get("name") == (vke.get("metadata") or {}).get("name") and (
        (pool.get("metadata") or {}).get("namespace")
        == (vke.get("metadata") or {}).get("namespace")
    )


def _vke_pool_nodes(pool: Mapping[str, Any]) -> int:
    spec = pool.get("spec") or {}
    count = (spec.get("forProvider") or {}).get("nodeQuantity")
    if count is None:
        count = (spec.get("initProvider") or {}).get("nodeQuantity", 0)
    return int(count)
