"""The loop's fake providers and controllers: what the API server shows about composed resources.

Crossplane composes resources; providers and controllers report on them. Between
reconciles the harness (:mod:`modelplane.dev.loop.harness`) asks :class:`Providers` to
observe every composed resource that something other than Crossplane reports on, as the
real ones would on their next poll. What each provider reports about one resource is
the shared library's (:mod:`modelplane.dev.fakes`, also behind ``e2e/providers.py``);
this module reads the loop's store for it (:mod:`modelplane.dev.loop.world`) and adds
what crossplane-runtime does around a reconcile:

- **Cloud managed resources** (``*.upbound.io``): ``Synced``/``Ready`` True and
  :func:`modelplane.dev.fakes.cloud.observe`'s ``atProvider`` and connection Secret. A
  resource whose provider config (or its credentials Secret) is missing, or whose
  ``*Selector``/``*Ref`` references match nothing, reports ``Synced=False`` and keeps
  whatever ``Ready`` it had.
- **provider-helm Releases**: through their provider config, the release is deployed. A
  release that was once Ready counts as installed on its cluster (its CRDs and
  controller exist there) for as long as the Release exists.
- **provider-kubernetes Objects**: the manifest is applied on the cluster the provider
  config's kubeconfig Secret reaches, with the status
  :func:`modelplane.dev.fakes.kubernetes.workload_status` gives it there, pods held
  back where GPUs are short (:mod:`modelplane.dev.loop.capacity`). A namespaced manifest
  whose namespace does not exist there yet, whose kind's CRDs are not installed there,
  or that the API server refuses (:mod:`modelplane.dev.fakes.admission`) does not apply
  (``Synced=False``). ObservedObjectCollections list nodes, slices or pods
  (:mod:`modelplane.dev.loop.nodes`).
- **Gateway API objects on the control plane**: what Traefik reports once its Release is
  installed (:mod:`modelplane.dev.fakes.gateway`).
- Crossplane ``Usage``/``ClusterUsage``, ProviderConfigs and ClusterProviderConfigs,
  Services, EndpointSlices and the like: no status; they just exist.

Modelplane's own composites (ServingStack, EKSCluster, ModelReplica, ...) are not faked:
the harness reconciles them like any composite.

A :class:`Flap` makes one resource misreport for some passes: ``Ready=False``, or a
status field missing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from modelplane.dev.fakes import cloud, gateway, helm, kubernetes
from modelplane.dev.fakes.admission import admission_problems, label_problems
from modelplane.dev.fakes.base import (
    GATEWAY_GROUP,
    HELM_GROUP,
    KUBERNETES_GROUP,
    MODELPLANE_GROUP,
    Key,
    Obj,
    b64,
    condition,
    condition_is,
    conditions_of,
    controller_uid,
    copy_tree,
    digest,
    drop_path,
    get_path,
    group_of,
    is_composite,
    key_of,
    set_path,
    uid_of,
)
from modelplane.dev.fakes.kubernetes import manifest_of, pod_templates
from modelplane.dev.loop import references
from modelplane.dev.loop.applies import Generations
from modelplane.dev.loop.capacity import collection_pods, gpu_blocked
from modelplane.dev.loop.nodes import (
    MEMBERSHIP_LABEL,
    NodeState,
    cluster_nodes,
    collection_status,
    matches,
    members,
)
from modelplane.dev.loop.world import CONTROL_PLANE, World, cloud_installed
from modelplane.domain import api

PROVIDER_CONFIG_KINDS = frozenset(
    {"ProviderConfig", "ClusterProviderConfig", "ProviderConfigUsage", "ClusterProviderConfigUsage"}
)


@dataclass(frozen=True)
class Flap:
    """How one resource misreports, for ``passes`` passes.

    Attributes:
        ready: False: it reports ``Ready=False`` (reason ``Unavailable``).
        drop: Field paths it does not report, e.g. ``status.atProvider.id``.
        put: (field path, value) pairs it reports instead of the truth: nonsense, say.
        passes: For how many passes.
    """

    ready: bool = True
    drop: tuple[str, ...] = ()
    put: tuple[tuple[str, Any], ...] = ()
    passes: int = 1

    def describe(self) -> str:
        """Say what the flap does, for messages."""
        parts = [] if self.ready else ["Ready=False"]
        parts += [f"without {path}" for path in self.drop]
        parts += [f"with {path}={value!r}" for path, value in self.put]
        return " and ".join(parts) or "no change"

    def apply(self, obj: Mapping[str, Any]) -> Obj:
        """Return ``obj`` as it reports itself while flapping."""
        out = copy.deepcopy(dict(obj))
        if not self.ready:
            status = out.setdefault("status", {})
            kept = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
            message = "the test makes it report Ready=False for a moment"
            status["conditions"] = [*kept, condition("Ready", False, "Unavailable", message)]
        for path in self.drop:
            drop_path(out, path)
        for path, value in self.put:
            set_path(out, path, copy.deepcopy(value))
        return out


# --- the fake providers --------------------------------------------------------------------


@dataclass
class Report:
    """What a provider reports about one resource: its status and the Secrets it writes."""

    status: Obj
    secrets: list[Obj] = field(default_factory=list)
    members: list[Obj] | None = None  # an ObservedObjectCollection's members (None: not one)


Reporter = Callable[["World", Obj], Report]


class Providers:
    """Every fake provider and controller, with what they remember between polls.

    Attributes:
        installed: UIDs of the Releases and Objects that have been Ready once: their
            CRDs and controllers exist on their cluster while they exist.
    """

    def __init__(self) -> None:
        self.installed: set[str] = set()
        # What happened to workload-cluster nodes, by (InferenceCluster, node) (modelplane.dev.loop.nodes).
        self.nodes: dict[tuple[str, str], NodeState] = {}
        self.generations = Generations()  # workloads' generations, as provider-kubernetes applies

    def clone(self) -> Providers:
        """Return a copy that remembers the same."""
        out = Providers()
        out.installed = set(self.installed)
        out.nodes = dict(self.nodes)
        out.generations = self.generations.clone()
        return out

    def observe(self, store: dict[Key, Obj], flaps: Mapping[Key, Flap]) -> None:
        """Report on every composed resource of the store, in place, until nothing changes.

        Args:
            store: Every object of the control plane, by key.
            flaps: The resources that misreport right now.
        """
        self.generations.next_observe()
        for _ in range(4):  # what one reports can depend on what another reported
            changed = False
            world = World(store, self.installed, self.nodes, self.generations)
            members = _members_by_collection(store)
            for key in sorted(store):
                obj = store.get(key)
                if obj is None or is_composite(obj) or not controller_uid(obj):
                    continue
                reporter = reporter_for(obj)
                if reporter is None:
                    continue
                report = reporter(world, obj)
                updated = dict(obj)
                updated["status"] = report.status
                if key in flaps:
                    updated = flaps[key].apply(updated)
                elif condition_is(updated, "Ready") and kind_installs(obj):
                    self.installed.add(uid_of(obj))
                if updated != obj:
                    store[key] = updated
                    changed = True
                if report.members is not None:
                    changed |= _sync_members(store, members, obj, report.members)
                for secret in report.secrets:
                    secret_key = key_of(secret)
                    if store.get(secret_key, {}).get("data") != secret["data"]:
                        previous = store.get(secret_key, {})
                        meta = secret["metadata"]
                        meta["uid"] = uid_of(previous) or "secret-" + digest(*secret_key)
                        store[secret_key] = secret
                        changed = True
            if not changed:
                return


def kind_installs(obj: Mapping[str, Any]) -> bool:
    """Tell whether a resource installs something others need once Ready (a Release, a Job)."""
    if group_of(obj) == HELM_GROUP:
        return True
    manifest = (((obj.get("spec") or {}).get("forProvider")) or {}).get("manifest") or {}
    return group_of(obj) == KUBERNETES_GROUP and manifest.get("kind") == "Job"


def reporter_for(obj: Mapping[str, Any]) -> Reporter | None:
    """Return what reports on ``obj``, or None when nothing does."""
    group, kind = group_of(obj), str(obj.get("kind", ""))
    if kind in PROVIDER_CONFIG_KINDS:
        return None
    if group.endswith(".upbound.io"):
        return _cloud
    if group == HELM_GROUP and kind == "Release":
        return _release
    if group == KUBERNETES_GROUP and kind == "Object":
        return _object
    if group == KUBERNETES_GROUP and kind == "ObservedObjectCollection":
        return _collection
    if group == GATEWAY_GROUP:
        return _control_plane_gateway_api
    return None


def reports_ready(obj: Mapping[str, Any]) -> bool:
    """Tell whether an object has a ``Ready`` condition of its own (a composite or a resource
    a provider reports on; Gateway API objects report ``Accepted``/``Programmed`` instead)."""
    if is_composite(obj):
        return True
    return reporter_for(obj) is not None and group_of(obj) != GATEWAY_GROUP


def _unsynced(obj: Mapping[str, Any], problem: str, at_provider: Obj | None = None) -> Report:
    """What crossplane-runtime leaves when a reconcile fails: Synced False, Ready as it was."""
    status: Obj = {"conditions": [condition("Synced", False, "ReconcileError", problem)]}
    ready = conditions_of(obj).get("Ready")
    if ready is not None:
        status["conditions"].insert(0, ready)
    previous = (obj.get("status") or {}).get("atProvider")
    if at_provider is not None or previous is not None:
        status["atProvider"] = at_provider if at_provider is not None else previous
    return Report(status)


def _synced(at_provider: Obj, *, ready: bool = True, reason: str = "Available") -> Obj:
    return {
        "atProvider": at_provider,
        "conditions": [
            condition("Ready", ready, reason if ready else "Creating"),
            condition("Synced", True, "ReconcileSuccess"),
        ],
    }


# --- cloud managed resources ---------------------------------------------------------------


def _cloud(world: World, obj: Obj) -> Report:
    family = cloud.family(group_of(obj))
    _, problem = world.connect(obj, family)
    if problem:
        return _unsynced(obj, problem)
    unresolved = references.unresolved(world, obj)
    if unresolved:
        message = "cannot resolve references: " + "; ".join(unresolved)
        return _unsynced(obj, message)
    ref = (obj.get("spec") or {}).get("providerConfigRef") or {}
    config = world.get(family, "ClusterProviderConfig", "", str(ref.get("name") or "default"))
    at_provider, secret_data = cloud.observe(obj, config)
    report = Report(_synced(at_provider))
    target = (obj.get("spec") or {}).get("writeConnectionSecretToRef") or {}
    if target.get("name"):
        report.secrets.append(cloud.connection_secret(obj, str(target["name"]), secret_data))
    return report


def _release(world: World, obj: Obj) -> Report:
    _, problem = world.connect(obj, HELM_GROUP)
    if problem:
        return _unsynced(obj, problem)
    return Report(_synced(helm.observe(obj)))


# --- provider-kubernetes -------------------------------------------------------------------


def _collection(world: World, obj: Obj) -> Report:
    """An ObservedObjectCollection: its members, over the cluster its InferenceCluster declares."""
    _, problem = world.connect(obj, KUBERNETES_GROUP)
    if problem:
        return _unsynced(obj, problem)
    if ((obj.get("spec") or {}).get("observeObjects") or {}).get("kind") == "Pod":
        return Report(collection_status(obj), members=members(obj, collection_pods(world, obj)))
    name = str(((obj.get("spec") or {}).get("providerConfigRef") or {}).get("name", ""))
    cluster = world.get(MODELPLANE_GROUP, "InferenceCluster", "", name)
    if cluster is None:
        return _unsynced(obj, f"cannot find the cluster of provider config {name}")
    classes = {
        str((c.get("metadata") or {}).get("name")): c.get("spec") or {}
        for c in world.all()
        if c.get("kind") == "InferenceClass"
    }
    nodes, slices = cluster_nodes(cluster, classes, world.nodes)
    return Report(collection_status(obj), members=members(obj, matches(obj, nodes, slices)))


Members = dict[tuple[str, str], set[Key]]
"""The member Objects in the store, by (namespace, the collection their label names)."""


def _collection_of(key: Key, obj: Obj) -> tuple[str, str] | None:
    """(namespace, collection) of a collection's member Object, None for anything else."""
    if key[1] != "Object":
        return None
    owner = ((obj.get("metadata") or {}).get("labels") or {}).get(MEMBERSHIP_LABEL)
    return (key[2], owner) if isinstance(owner, str) else None


def _members_by_collection(store: Mapping[Key, Obj]) -> Members:
    """Index every collection member once a pass: a scan of the store per collection made
    a pass quadratic in the replicas (each composes a collection of its pods)."""
    members: Members = {}
    for key, obj in store.items():
        collection = _collection_of(key, obj)
        if collection is not None:
            members.setdefault(collection, set()).add(key)
    return members


def _sync_members(
    store: dict[Key, Obj], members: Members, collection: Obj, wanted: list[Obj]
) -> bool:
    """Create or update the collection's members and prune the others; tell if any changed.

    ``members`` is the pass's index; it is kept true for this collection's own members
    (the only ones this changes)."""
    meta = collection.get("metadata") or {}
    mine = (str(meta.get("namespace") or ""), str(meta.get("name", "")))
    fresh = {key_of(m): m for m in wanted}
    changed = False
    for key in sorted(members.get(mine, set()) - fresh.keys()):
        if store.pop(key, None) is not None:
            changed = True
    for key, member in fresh.items():
        if store.get(key) != member:
            store[key] = member
            changed = True
    members[mine] = {k for k, m in fresh.items() if _collection_of(k, m) == mine}
    return changed


def _object(world: World, obj: Obj) -> Report:
    _, problem = world.connect(obj, KUBERNETES_GROUP)
    if problem:
        return _unsynced(obj, problem)
    cluster = world.cluster_of(obj, KUBERNETES_GROUP) or CONTROL_PLANE
    manifest = manifest_of(obj)
    if (obj.get("spec") or {}).get("managementPolicies") == ["Observe"]:
        return _observe_only(world, obj, cluster, manifest)
    problem = _apply_problem(world, obj, cluster, manifest)
    if problem:
        return _unsynced(obj, problem)
    applied = copy_tree(manifest)
    status = kubernetes.workload_status(world.cluster(cluster), applied)
    if status is not None:
        no_gpu = gpu_blocked(world, obj, cluster, manifest)
        if no_gpu:
            status = kubernetes.replicated_status(
                str(manifest.get("kind")),
                int((manifest.get("spec") or {}).get("replicas", 1)),
                [no_gpu],
                kubernetes.max_unavailable(manifest.get("spec") or {}),
            )
        applied["status"] = status
    ready, reason = kubernetes.readiness(obj, applied)
    if world.generations is not None:  # what the real provider reports on the way there
        answered = world.generations.report(obj, applied, lambda m: kubernetes.readiness(obj, m)[0])
        ready = ready if answered is None else answered
    out = _synced({"manifest": applied}, ready=ready, reason=reason)
    return Report(out)


# --- GPU capacity: what kube-scheduler does on a pool that is full ---------------------------------
def _observe_only(world: World, obj: Obj, cluster: str, manifest: Mapping[str, Any]) -> Report:
    """An Object that only observes: it reports what is there, and is unsynced when absent."""
    meta = manifest.get("metadata") or {}
    kind, namespace, name = (
        str(manifest.get("kind", "")),
        str(meta.get("namespace") or ""),
        str(meta.get("name", "")),
    )
    found = cloud_installed(world, cluster, kind, namespace, name)
    if found is None:
        found = world.applied(cluster, kind, namespace, name)
    if found is None:
        where = f"{namespace}/{name}" if namespace else name
        return _unsynced(obj, f"cannot observe object: {kind} {where} not found")
    ready, reason = kubernetes.readiness(obj, found)
    return Report(_synced({"manifest": found}, ready=ready, reason=reason))


def _apply_problem(world: World, obj: Obj, cluster: str, manifest: Mapping[str, Any]) -> str:
    """Say why the API server of ``cluster`` would refuse ``manifest`` ("" when it applies)."""
    for reference in (obj.get("spec") or {}).get("references") or ():
        source = reference.get("patchesFrom") or reference.get("dependsOn") or {}
        if not source:
            continue
        found = world.get(
            group_of(source),
            str(source.get("kind", "")),
            str(source.get("namespace") or ""),
            str(source.get("name", "")),
        )
        path = source.get("fieldPath")
        if found is None or (path and get_path(found, str(path)) is None):
            where = f"{source.get('kind')} {source.get('namespace')}/{source.get('name')}"
            return f"cannot resolve resource references: {where} {path or ''}".strip()
    kind = str(manifest.get("kind", ""))
    refused = admission_problems(manifest)
    selector = ((manifest.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    refused += label_problems(selector, "spec.selector.matchLabels")
    for template in pod_templates(manifest):
        labels = (template.get("metadata") or {}).get("labels") or {}
        refused += label_problems(labels, "pod template metadata.labels")
    if refused:
        return f"cannot create object: {kind} is invalid: " + "; ".join(refused)
    group = group_of(manifest)
    if group in kubernetes.CRD_SOURCES:
        how, what = kubernetes.CRD_SOURCES[group]
        if not world.installs(cluster, how, what):
            version = manifest.get("apiVersion")
            return f'cannot create object: no matches for kind "{kind}" in version "{version}"'
    namespace = str((manifest.get("metadata") or {}).get("namespace") or "")
    if (
        kind not in kubernetes.CLUSTER_SCOPED
        and namespace
        and namespace not in kubernetes.BUILTIN_NAMESPACES
        and world.applied(cluster, "Namespace", "", namespace) is None
    ):
        return f'cannot create object: namespaces "{namespace}" not found'
    return ""


def _control_plane_gateway_api(world: World, obj: Obj) -> Report:
    """Traefik on the control plane, on the objects the InferenceGateway and ModelServices compose."""
    installed = any(
        uid_of(o) in world.installed
        and helm.chart_of(o).get("name") == gateway.CONTROL_PLANE_GATEWAY_CONTROLLER
        for o in world.all()
        if group_of(o) == HELM_GROUP
    )

    def lookup(kind: str, namespace: str, name: str) -> Obj | None:
        group = GATEWAY_GROUP if kind in ("Gateway", "GatewayClass", "HTTPRoute") else ""
        return world.get(group, kind, namespace, name)

    pools = (
        o for o in world.all() if o.get("kind") == "IPAddressPool" and group_of(o) == "metallb.io"
    )
    status = gateway.status(
        obj, installed, gateway.TRAEFIK_CONTROLLER_NAME, gateway.first_pool_address(pools), lookup
    )
    return Report(status if status is not None else dict(obj.get("status") or {}))


def user_secrets(docs: Iterable[Mapping[str, Any]]) -> list[Obj]:
    """Return the Secrets a user creates before applying ``docs``, as the docs ask.

    The credentials Secret of each provider's ClusterProviderConfig, the kubeconfig (and
    identity) Secret of each Existing InferenceCluster, and the auth Secret of each
    ModelCache.
    """
    wanted: dict[tuple[str, str], set[str]] = {}

    def want(namespace: str, name: str, key: str) -> None:
        if name:
            wanted.setdefault((namespace, name), set()).add(key)

    for doc in docs:
        spec = doc.get("spec") or {}
        kind = doc.get("kind")
        if kind == "ClusterProviderConfig":
            ref = (spec.get("credentials") or {}).get("secretRef") or {}
            want(str(ref.get("namespace", "")), str(ref.get("name", "")), str(ref.get("key", "")))
        elif kind == "InferenceCluster" and is_composite(doc):
            existing = (spec.get("cluster") or {}).get("existing") or {}
            for field_name in ("secretRef", "identitySecretRef"):
                ref = existing.get(field_name) or {}
                want("modelplane-system", str(ref.get("name", "")), str(ref.get("key", "")))
        elif kind == "ModelCache" and is_composite(doc):
            auth = (spec.get("huggingFace") or {}).get("authSecret") or {}
            namespace = str((doc.get("metadata") or {}).get("namespace") or "default")
            want(namespace, str(auth.get("name", "")), str(auth.get("key") or "HF_TOKEN"))
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "type": "Opaque",
            "data": {key: b64(f"user-provided {key}") for key in sorted(keys)},
        }
        for (namespace, name), keys in sorted(wanted.items())
    ]


def installation() -> list[Obj]:
    """Return what installing Modelplane leaves on the control plane besides our APIs.

    provider-helm's and provider-kubernetes' ClusterProviderConfig ``default``, reaching
    the control plane itself (InjectedIdentity): the InferenceGateway's Releases use it.
    """
    return [
        {
            "apiVersion": version,
            "kind": "ClusterProviderConfig",
            "metadata": {"name": "default"},
            "spec": {"credentials": {"source": "InjectedIdentity"}},
        }
        for version in (api.HELM, api.KUBERNETES_OBJECT)
    ]
