"""Fake providers and controllers: what the API server shows about composed resources.

Crossplane composes resources; providers and controllers report on them. Between
reconciles the harness (:mod:`modelplane.dev.loop.harness`) asks :class:`Providers` to observe
every composed resource that something other than Crossplane reports on, as the real
ones would on their next poll:

- **Cloud managed resources** (``*.upbound.io`` groups): ``Synced`` and ``Ready`` True,
  ``status.atProvider`` with the fields the providers fill that our functions read (an
  EFS file system's ``id``, a GCP service account's ``email`` and ``project``, a VKE
  cluster's ``id``, ...) plus realistic others, and the connection Secret a
  ``writeConnectionSecretToRef`` asks for (an EKS ClusterAuth's ``kubeconfig``, ...).
  Like crossplane-runtime, a resource whose provider config (or its credentials Secret)
  is missing, or whose ``*Selector``/``*Ref`` references match nothing, reports
  ``Synced=False`` and keeps whatever ``Ready`` it had.
- **provider-helm Releases**: through their provider config's kubeconfig Secret, the
  release is deployed: ``Ready``/``Synced`` True, ``atProvider.state: deployed``. A
  release that was once Ready counts as installed on its cluster (its CRDs and
  controller exist there) for as long as the Release exists.
- **provider-kubernetes Objects** (``kubernetes.m.crossplane.io/v1alpha1``): the
  manifest is applied on the cluster the provider config's kubeconfig Secret reaches.
  ``status.atProvider.manifest`` is the manifest with the status its kind would have
  there: a Deployment or LeaderWorkerSet ``Available`` with every replica ready (once
  the PVCs, ResourceClaimTemplates and ServiceAccount its pods need exist on that
  cluster), a Gateway ``Programmed`` with an address (once its GatewayClass exists and
  Envoy Gateway is installed), an HTTPRoute accepted by its parent Gateway, a Namespace
  ``Active``, a PVC ``Bound``, a Job ``Complete``... A namespaced manifest whose
  namespace does not exist there yet, or whose kind's CRDs are not installed there,
  does not apply (``Synced=False``). ``Ready`` follows ``spec.readiness`` as
  provider-kubernetes evaluates it (``SuccessfulCreate``, ``DeriveFromCelQuery`` for
  the queries our functions write, ``DeriveFromObject``, ``AllTrue``).
- **Gateway API objects on the control plane** (the InferenceGateway's GatewayClass and
  Gateway, each ModelService's HTTPRoute): what Traefik reports once its Release is
  installed; the Gateway's address is the first of the MetalLB pool when one exists.
- Crossplane ``Usage``/``ClusterUsage``, ProviderConfigs and ClusterProviderConfigs,
  Services, EndpointSlices and the like: no status; they just exist.

What an API server refuses (:func:`admission_problems`: invalid names, label keys and
values) is refused here too: the harness does not store such a composed resource, and
a workload cluster's API server does not apply such a manifest (``Synced=False``).

Modelplane's own composites (ServingStack, EKSCluster, ModelReplica, ...) are not faked:
the harness reconciles them like any composite.

A :class:`Flap` makes one resource misreport for some passes: ``Ready=False``, or a
status field missing.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from modelplane.dev.loop.nodes import (
    MEMBERSHIP_LABEL,
    NodeState,
    cluster_nodes,
    collection_status,
    matches,
    members,
)
from modelplane.domain import objects
from modelplane.domain.api import POOL_LABEL

Obj = dict[str, Any]
Key = tuple[str, str, str, str]
"""(group, kind, namespace, name): how the store names an object (the version aside)."""

TIME = "2025-01-01T00:00:00Z"
"""Every condition's lastTransitionTime: the fakes are deterministic."""
CONTROL_PLANE = "control-plane"
"""The cluster identity of objects Crossplane composes directly on the control plane."""
MODELPLANE_GROUPS = ("modelplane.ai", "infrastructure.modelplane.ai")
PROVIDER_CONFIG_KINDS = frozenset(
    {"ProviderConfig", "ClusterProviderConfig", "ProviderConfigUsage", "ClusterProviderConfigUsage"}
)
HELM_GROUP = "helm.m.crossplane.io"
KUBERNETES_GROUP = "kubernetes.m.crossplane.io"
GATEWAY_GROUP = "gateway.networking.k8s.io"
BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "StorageClass",
        "GatewayClass",
        "CustomResourceDefinition",
        "DeviceClass",
        "PriorityClass",
        "PersistentVolume",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "IngressClass",
        "RuntimeClass",
    }
)
CRD_SOURCES: Mapping[str, tuple[str, str]] = {
    # manifest group -> (how its CRDs get installed, by what): a Helm chart, or a Job.
    GATEWAY_GROUP: ("chart", "gateway-crds-helm"),
    "gateway.envoyproxy.io": ("chart", "gateway-helm"),
    "leaderworkerset.x-k8s.io": ("chart", "lws"),
    "monitoring.coreos.com": ("chart", "kube-prometheus-stack"),
    "cert-manager.io": ("chart", "cert-manager"),
    "inference.networking.k8s.io": ("job", "inference-extension-crds"),
    "inference.networking.x-k8s.io": ("job", "inference-extension-crds"),
}
"""Kinds a bare cluster does not serve until something installs their CRDs."""
WORKLOAD_GATEWAY_CONTROLLER = "gateway-helm"  # Envoy Gateway's chart
CONTROL_PLANE_GATEWAY_CONTROLLER = "traefik"
ENVOY_CONTROLLER_NAME = "gateway.envoyproxy.io/gatewayclass-controller"
TRAEFIK_CONTROLLER_NAME = "traefik.io/gateway-controller"
CLOUD_LB_ADDRESS = "198.51.100.10"
"""The control-plane gateway's address when there is no MetalLB pool (a cloud LB)."""


# --- keys and plain helpers ------------------------------------------------------------------


def group_of(obj: Mapping[str, Any]) -> str:
    """Return an object's API group ("" for the core group)."""
    return str(obj.get("apiVersion", "")).rpartition("/")[0]


def key_of(obj: Mapping[str, Any]) -> Key:
    """Return the store key of an object."""
    meta = obj.get("metadata") or {}
    return (
        group_of(obj),
        str(obj.get("kind", "")),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
    )


AMBIGUOUS_KINDS = frozenset({"ProviderConfig", "ClusterProviderConfig", "Cluster", "NodePool"})
"""Kinds several API groups define: messages name their group too."""


def describe(key: Key) -> str:
    """Name an object for a message: ``Kind namespace/name`` (or ``Kind name``)."""
    group, kind, namespace, name = key
    if kind in AMBIGUOUS_KINDS and group:
        kind = f"{kind}.{group}"
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def is_composite(obj: Mapping[str, Any]) -> bool:
    """Tell whether an object is one of Modelplane's composites (by API group)."""
    return group_of(obj) in MODELPLANE_GROUPS


def controller_uid(obj: Mapping[str, Any]) -> str:
    """Return the UID of an object's controller ("" when nothing controls it)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("uid", ""))
    return ""


def uid_of(obj: Mapping[str, Any]) -> str:
    """Return an object's UID ("" when it has none)."""
    return str((obj.get("metadata") or {}).get("uid") or "")


def conditions_of(obj: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Return an object's status conditions by type."""
    raw = ((obj or {}).get("status") or {}).get("conditions") or []
    return {str(c.get("type")): c for c in raw if isinstance(c, dict)}


def condition_is(obj: Mapping[str, Any] | None, typ: str, status: str = "True") -> bool:
    """Tell whether an object reports condition ``typ`` with ``status``."""
    return conditions_of(obj).get(typ, {}).get("status") == status


def condition(typ: str, status: bool, reason: str, message: str = "") -> dict[str, Any]:
    """Return one status condition as Kubernetes and crossplane-runtime write it."""
    out: dict[str, Any] = {
        "type": typ,
        "status": "True" if status else "False",
        "reason": reason,
        "lastTransitionTime": TIME,
    }
    if message:
        out["message"] = message
    return out


def _digest(*parts: str, length: int = 17) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:length]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _octet(*parts: str) -> int:
    return 10 + int(_digest(*parts, length=8), 16) % 200


def path_steps(path: str) -> list[str]:
    """Split ``a.b[c.d].e`` into ``["a", "b", "c.d", "e"]`` (brackets hold keys with dots)."""
    steps: list[str] = []
    for dotted, bracketed in re.findall(r"([^.\[\]]+)|\[['\"]?([^\]'\"]+)['\"]?\]", path):
        steps.append(dotted or bracketed)
    return steps


def get_path(obj: Mapping[str, Any], path: str) -> Any:
    """Return the value at a field path (None when any step is missing)."""
    current: Any = obj
    for step in path_steps(path):
        if not isinstance(current, Mapping) or step not in current:
            return None
        current = current[step]
    return current


def drop_path(obj: dict[str, Any], path: str) -> bool:
    """Remove the value at a field path; tell whether there was one."""
    *parents, last = path_steps(path)
    current: Any = obj
    for step in parents:
        if not isinstance(current, dict) or step not in current:
            return False
        current = current[step]
    if isinstance(current, dict) and last in current:
        del current[last]
        return True
    return False


def set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    """Set the value at a field path, creating the objects on the way."""
    *parents, last = path_steps(path)
    current = obj
    for step in parents:
        found = current.get(step)
        if not isinstance(found, dict):
            found = current[step] = {}
        current = found
    current[last] = value


# --- what an API server admits ----------------------------------------------------------

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_NAMED = frozenset({"Namespace"})
"""Kinds whose names must be DNS-1123 labels (63 characters)."""
DNS_1035_NAMED = frozenset({"Service"})
"""Kinds whose names must be DNS-1035 labels (63 characters, starting with a letter)."""


def admission_problems(obj: Mapping[str, Any]) -> list[str]:
    """Say why an API server would refuse ``obj``'s name or labels (empty: it admits them).

    The checks apiserver's ObjectMeta validation makes on every kind: the name (a DNS-1123
    subdomain, a label for Namespaces, a DNS-1035 label for Services) and every label key
    and value (qualified names; values at most 63 characters).
    """
    meta = obj.get("metadata") or {}
    kind = str(obj.get("kind", ""))
    name = str(meta.get("name") or "")
    problems = []
    if not name:
        problems.append("metadata.name: Required value")
    elif kind in LABEL_NAMED and not (len(name) <= 63 and _DNS_LABEL.match(name)):
        problems.append(f"metadata.name: Invalid value: {name!r}: must be a DNS-1123 label")
    elif kind in DNS_1035_NAMED and not (len(name) <= 63 and _DNS_1035.match(name)):
        problems.append(f"metadata.name: Invalid value: {name!r}: must be a DNS-1035 label")
    elif not (len(name) <= 253 and _DNS_SUBDOMAIN.match(name)):
        problems.append(f"metadata.name: Invalid value: {name!r}: must be a DNS-1123 subdomain")
    problems += label_problems(meta.get("labels") or {}, "metadata.labels")
    return problems


def label_problems(labels: Mapping[str, Any], where: str) -> list[str]:
    """Say which keys and values of a label map (or a selector's) an API server refuses."""
    problems = []
    for key, value in labels.items():
        prefix, _, label = str(key).rpartition("/")
        if not (len(label) <= 63 and _QUALIFIED.match(label)) or (
            prefix and not (len(prefix) <= 253 and _DNS_SUBDOMAIN.match(prefix))
        ):
            problems.append(f"{where}: Invalid value: {key!r}: not a qualified name")
        text = str(value)
        if text and not (len(text) <= 63 and _QUALIFIED.match(text)):
            problems.append(
                f"{where}: Invalid value: {text!r}: a label value must be 63 characters "
                "or fewer, alphanumeric at both ends"
            )
    return problems


# --- flaps ---------------------------------------------------------------------------------


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


Reporter = Callable[["_World", Obj], Report]


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

    def clone(self) -> Providers:
        """Return a copy that remembers the same."""
        out = Providers()
        out.installed = set(self.installed)
        out.nodes = dict(self.nodes)
        return out

    def observe(self, store: dict[Key, Obj], flaps: Mapping[Key, Flap]) -> None:
        """Report on every composed resource of the store, in place, until nothing changes.

        Args:
            store: Every object of the control plane, by key.
            flaps: The resources that misreport right now.
        """
        for _ in range(4):  # what one reports can depend on what another reported
            changed = False
            world = _World(store, self.installed, self.nodes)
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
                    changed |= _sync_members(store, obj, report.members)
                for secret in report.secrets:
                    secret_key = key_of(secret)
                    if store.get(secret_key, {}).get("data") != secret["data"]:
                        previous = store.get(secret_key, {})
                        meta = secret["metadata"]
                        meta["uid"] = uid_of(previous) or "secret-" + _digest(*secret_key)
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


class _World:
    """Read-only views of the store the reporters share."""

    def __init__(
        self,
        store: Mapping[Key, Obj],
        installed: set[str],
        nodes: Mapping[tuple[str, str], NodeState] | None = None,
    ) -> None:
        self.store = store
        self.installed = installed
        self.nodes = nodes or {}
        self._clusters: dict[str, list[Obj]] | None = None

    def get(self, group: str, kind: str, namespace: str, name: str) -> Obj | None:
        return self.store.get((group, kind, namespace, name))

    def all(self) -> Iterator[Obj]:
        return iter(list(self.store.values()))

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
        """Return the manifest of ``kind namespace/name`` as it is on ``cluster`` (None: absent)."""
        for obj in self.on_cluster(cluster):
            if obj.get("kind") != "Object":
                continue
            manifest = _manifest(obj)
            meta = manifest.get("metadata") or {}
            if (
                manifest.get("kind") == kind
                and str(meta.get("name", "")) == name
                and str(meta.get("namespace") or "") == namespace
            ):
                at_provider = ((obj.get("status") or {}).get("atProvider") or {}).get("manifest")
                return dict(at_provider or manifest)
        return None

    def pool_runs(self, cluster: str, pool: str) -> bool:
        """Tell whether a node of ``pool`` on ``cluster`` exists and is Ready (pods run)."""
        for ic in self.all():
            if ic.get("kind") != "InferenceCluster" or group_of(ic) != "modelplane.ai":
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
            if how == "chart" and obj.get("kind") == "Release":
                chart = ((obj.get("spec") or {}).get("forProvider") or {}).get("chart") or {}
                if chart.get("name") == what:
                    return True
            if how == "job" and obj.get("kind") == "Object":
                manifest = _manifest(obj)
                name = str((manifest.get("metadata") or {}).get("name", ""))
                if manifest.get("kind") == "Job" and name.startswith(what):
                    return True
        return False


def _manifest(obj: Mapping[str, Any]) -> Obj:
    return dict(((obj.get("spec") or {}).get("forProvider") or {}).get("manifest") or {})


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


def _family(group: str) -> str:
    """Return the provider family's group: ``ec2.aws.m.upbound.io`` -> ``aws.m.upbound.io``."""
    return ".".join(group.split(".")[-4:])


def _cloud(world: _World, obj: Obj) -> Report:
    family = _family(group_of(obj))
    _, problem = world.connect(obj, family)
    if problem:
        return _unsynced(obj, problem)
    unresolved = list(_unresolved_references(world, obj))
    if unresolved:
        message = "cannot resolve references: " + "; ".join(unresolved)
        return _unsynced(obj, message)
    at_provider, secret_data = _cloud_observation(world, obj)
    report = Report(_synced(at_provider))
    target = (obj.get("spec") or {}).get("writeConnectionSecretToRef") or {}
    if target.get("name"):
        report.secrets.append(_connection_secret(obj, str(target["name"]), secret_data))
    return report


def _unresolved_references(world: _World, obj: Mapping[str, Any]) -> Iterator[str]:
    """Say which ``*Selector``/``*Ref(s)`` fields of ``spec.forProvider`` match nothing."""
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    owner = controller_uid(obj)
    family = _family(group_of(obj))
    siblings = [
        other
        for other in world.all()
        if str((other.get("metadata") or {}).get("namespace") or "") == namespace
        and group_of(other).endswith(family)
    ]

    def walk(value: Any, path: str) -> Iterator[str]:
        if isinstance(value, list):
            for index, item in enumerate(value):
                yield from walk(item, f"{path}[{index}]")
            return
        if not isinstance(value, Mapping):
            return
        for name, item in value.items():
            where = f"{path}.{name}"
            if name.endswith("Selector") and isinstance(item, Mapping) and "matchLabels" in item:
                labels = dict(item.get("matchLabels") or {})
                by_controller = bool(item.get("matchControllerRef"))
                if not any(
                    _labels_match(other, labels)
                    and (not by_controller or controller_uid(other) == owner)
                    for other in siblings
                ):
                    yield f"{where} matches no resource"
            elif name.endswith("SecretRef") and isinstance(item, Mapping):
                # A Secret key selector, not a reference to another managed resource.
                if not any(
                    other.get("kind") == "Secret"
                    and _name(other) == item.get("name")
                    and str((other.get("metadata") or {}).get("namespace") or "")
                    == str(item.get("namespace") or namespace)
                    for other in world.all()
                ):
                    yield f"{where} names Secret {item.get('name')}, which does not exist"
            elif name.endswith("Ref") and isinstance(item, Mapping) and "name" in item:
                if not any(_name(other) == item["name"] for other in siblings):
                    yield f"{where} names {item['name']}, which does not exist"
            elif name.endswith("Refs") and isinstance(item, list):
                for ref in item:
                    if isinstance(ref, Mapping) and not any(
                        _name(other) == ref.get("name") for other in siblings
                    ):
                        yield f"{where} names {ref.get('name')}, which does not exist"
            else:
                yield from walk(item, where)

    yield from walk(((obj.get("spec") or {}).get("forProvider")) or {}, "spec.forProvider")


def _labels_match(obj: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in wanted.items())


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _connection_secret(owner: Mapping[str, Any], name: str, data: Mapping[str, str]) -> Obj:
    """The Secret a provider writes connection details to, controlled by the resource."""
    meta = owner.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": str(meta.get("namespace") or ""),
            "ownerReferences": [
                {
                    "apiVersion": owner.get("apiVersion"),
                    "kind": owner.get("kind"),
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                    "controller": True,
                }
            ],
        },
        "type": "connection.crossplane.io/v1alpha1",
        "data": {k: _b64(v) for k, v in sorted(data.items())},
    }


def _kubeconfig(server: str, cluster: str) -> str:
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: {cluster}\n  cluster:\n    server: {server}\n"
        f"contexts:\n- name: {cluster}\n  context: {{cluster: {cluster}, user: {cluster}}}\n"
        f"current-context: {cluster}\n"
        f"users:\n- name: {cluster}\n  user: {{token: fake-{_digest(cluster, length=12)}}}\n"
    )


def _gcp_project(world: _World, obj: Mapping[str, Any]) -> str:
    given = ((obj.get("spec") or {}).get("forProvider") or {}).get("project")
    if given:
        return str(given)
    ref = (obj.get("spec") or {}).get("providerConfigRef") or {}
    config = world.get(
        "gcp.m.upbound.io", "ClusterProviderConfig", "", str(ref.get("name") or "default")
    )
    return str(((config or {}).get("spec") or {}).get("projectID") or "example-project")


@dataclass(frozen=True)
class _Managed:
    """What every cloud's fake reads of a managed resource."""

    group: str
    kind: str
    name: str
    spec: Mapping[str, Any]
    region: str
    ident: str

    @property
    def service(self) -> str:
        return self.group.split(".")[0]


Observation = tuple[Obj, dict[str, str]]
"""``status.atProvider`` and the connection details a provider writes."""

_AWS_PREFIXES = {
    "VPC": "vpc",
    "Subnet": "subnet",
    "SecurityGroup": "sg",
    "InternetGateway": "igw",
    "NATGateway": "nat",
    "EIP": "eipalloc",
    "RouteTable": "rtb",
    "LaunchTemplate": "lt",
    "FileSystem": "fs",
    "MountTarget": "fsmt",
    "Route": "r",
    "RouteTableAssociation": "rtbassoc",
    "SecurityGroupIngressRule": "sgr",
    "SecurityGroupEgressRule": "sgr",
}


def _cloud_observation(world: _World, obj: Obj) -> Observation:
    """Return ``status.atProvider`` and the connection details of a cloud managed resource."""
    group, kind = group_of(obj), str(obj.get("kind", ""))
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    spec = (obj.get("spec") or {}).get("forProvider") or {}
    region = str(spec.get("region") or spec.get("location") or "us-east-1")
    ident = _digest(group, kind, str(meta.get("namespace")), name)
    managed = _Managed(group, kind, name, spec, region, ident)
    if group.endswith("aws.m.upbound.io"):
        return _aws(managed)
    if group.endswith("gcp.m.upbound.io"):
        return _gcp(managed, _gcp_project(world, obj))
    if group.endswith("azure.m.upbound.io"):
        return _azure(managed)
    if group.endswith("vultr.m.upbound.io"):
        return _vultr(managed)
    if group.endswith("nebius.m.upbound.io"):
        return _nebius(managed)
    return {"id": f"{kind.lower()}-{ident}"}, {}


def _nebius(mr: _Managed) -> Observation:
    """An mk8s cluster reports its control plane's endpoint and CA under ``status``."""
    at: Obj = {"id": f"{mr.kind.lower()}-{mr.ident}"}
    if mr.kind == "Cluster" and mr.service == "mk8s":
        at["status"] = {
            "controlPlane": {
                "endpoints": {"publicEndpoint": f"https://pub.{mr.ident}.mk8s.nebius.example"},
                "auth": {"clusterCaCertificate": "fake CA for " + mr.name},
            }
        }
    return at, {}


def _aws(mr: _Managed) -> Observation:
    kind, name, region = mr.kind, mr.name, mr.region
    ident = f"{_AWS_PREFIXES[kind]}-{mr.ident}" if kind in _AWS_PREFIXES else name
    at: Obj = {
        "id": ident,
        "arn": f"arn:aws:{mr.service}:{region}:123456789012:{kind.lower()}/{ident}",
    }
    at.update({k: mr.spec[k] for k in ("cidrBlock", "availabilityZone") if k in mr.spec})
    server = f"https://{_digest(name, length=32).upper()}.gr7.{region}.eks.amazonaws.com"
    match kind:
        case "EIP":
            at["publicIp"] = f"198.51.100.{_octet(name)}"
        case "FileSystem":
            at["dnsName"] = f"{ident}.efs.{region}.amazonaws.com"
        case "Role":
            at["arn"] = f"arn:aws:iam::123456789012:role/{name}"
        case "Cluster" if mr.service == "eks":
            at.update(
                {
                    "endpoint": server,
                    "status": "ACTIVE",
                    "version": str(mr.spec.get("version") or "1.34"),
                    "certificateAuthority": [{"data": _b64("fake CA for " + name)}],
                    "identity": [{"oidc": [{"issuer": server.replace("eks", "oidc.eks")}]}],
                    # EKS makes the cluster security group itself.
                    "vpcConfig": {"clusterSecurityGroupId": f"sg-{_digest(name, 'eks')}"},
                }
            )
        case "NodeGroup":
            at["status"] = "ACTIVE"
        case "ClusterAuth":
            return {}, {
                "kubeconfig": _kubeconfig(server, name),
                "server": server,
                "clusterCA": "fake CA for " + name,
                "token": "k8s-aws-v1." + _digest(name, length=40),
            }
    return at, {}


def _gcp(mr: _Managed, project: str) -> Observation:
    kind, name, region = mr.kind, mr.name, mr.region
    at: Obj = {"id": f"projects/{project}/{kind.lower()}s/{name}", "project": project}
    secret: dict[str, str] = {}
    match kind:
        case "ServiceAccount":
            email = f"{name}@{project}.iam.gserviceaccount.com"
            at.update(
                {
                    "email": email,
                    "id": f"projects/{project}/serviceAccounts/{email}",
                    "member": f"serviceAccount:{email}",
                    "name": f"projects/{project}/serviceAccounts/{email}",
                    "uniqueId": str(int(mr.ident, 16) % 10**21),
                }
            )
        case "ServiceAccountKey":
            at["publicKey"] = _b64("fake public key of " + name)
            key_id = _digest(name, length=40)
            secret = {
                "private_key": f'{{"type": "service_account", "private_key_id": "{key_id}"}}',
                "attribute.private_key": _b64("fake private key of " + name),
            }
        case "Cluster":
            endpoint = f"203.0.113.{_octet(name, 'gke')}"
            at.update(
                {
                    "id": f"projects/{project}/locations/{region}/clusters/{name}",
                    "endpoint": endpoint,
                    "masterVersion": "1.34.1-gke.1000",
                    "selfLink": f"gcp/projects/{project}/locations/{region}/clusters/{name}",
                }
            )
            secret = {"kubeconfig": _kubeconfig(f"https://{endpoint}", name)}
        case "NodePool":
            at["instanceGroupUrls"] = [f"gcp/projects/{project}/instanceGroups/{name}-grp"]
    return at, secret


def _azure(mr: _Managed) -> Observation:
    group_name = str(mr.spec.get("resourceGroupName") or mr.name)
    at: Obj = {
        "id": f"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/{group_name}"
        f"/providers/{mr.service}/{mr.kind}/{mr.name}"
    }
    if mr.kind != "KubernetesCluster":
        return at, {}
    fqdn = f"{mr.name}-{_digest(mr.name, length=8)}.hcp.{mr.region}.azmk8s.io"
    at.update({"fqdn": fqdn, "kubeletIdentity": [{"objectId": _digest(mr.name, "kubelet")}]})
    kubeconfig = _kubeconfig(f"https://{fqdn}:443", mr.name)
    return at, {"kubeconfig": kubeconfig, "attribute.kube_config_raw": kubeconfig}


def _vultr(mr: _Managed) -> Observation:
    ident = mr.ident
    uuid = (
        f"{ident[:8]}-{ident[8:12]}-4{ident[12:15]}-8{ident[15:17]}0-{_digest(mr.name, length=12)}"
    )
    at: Obj = {"id": uuid}
    if mr.kind in ("NodePools", "KubernetesNodePool"):
        at["status"] = "active"
    if mr.kind != "Kubernetes":
        return at, {}
    endpoint = f"{uuid}.vultr-k8s.com"
    at.update({"endpoint": endpoint, "status": "active", "ip": f"203.0.113.{_octet(mr.name)}"})
    kubeconfig = _kubeconfig(f"https://{endpoint}:6443", mr.name)
    # VKE returns kube_config base64-encoded: upjet publishes the attribute as is, and the
    # provider adds it decoded under ``kubeconfig``, as the other clouds' providers do.
    return at, {"kubeconfig": kubeconfig, "attribute.kube_config": _b64(kubeconfig)}


# --- provider-helm -------------------------------------------------------------------------


def _release(world: _World, obj: Obj) -> Report:
    _, problem = world.connect(obj, HELM_GROUP)
    if problem:
        return _unsynced(obj, problem)
    return Report(
        _synced({"releaseDescription": "Install complete", "revision": 1, "state": "deployed"})
    )


# --- provider-kubernetes -------------------------------------------------------------------


def _collection(world: _World, obj: Obj) -> Report:
    """An ObservedObjectCollection: its members, over the cluster its InferenceCluster declares."""
    _, problem = world.connect(obj, KUBERNETES_GROUP)
    if problem:
        return _unsynced(obj, problem)
    if ((obj.get("spec") or {}).get("observeObjects") or {}).get("kind") == "Pod":
        return Report(collection_status(), members=members(obj, _pods(world, obj)))
    name = str(((obj.get("spec") or {}).get("providerConfigRef") or {}).get("name", ""))
    cluster = world.get("modelplane.ai", "InferenceCluster", "", name)
    if cluster is None:
        return _unsynced(obj, f"cannot find the cluster of provider config {name}")
    classes = {
        str((c.get("metadata") or {}).get("name")): c.get("spec") or {}
        for c in world.all()
        if c.get("kind") == "InferenceClass"
    }
    nodes, slices = cluster_nodes(cluster, classes, world.nodes)
    return Report(collection_status(), members=members(obj, matches(obj, nodes, slices)))


def _pods(world: _World, collection: Obj) -> list[Obj]:
    """The pods a collection selects: one per replica of each Deployment or LeaderWorkerSet
    applied on its cluster whose (leader) pod template it selects, Pending with
    kube-scheduler's ``PodScheduled=False``/``Unschedulable`` where GPUs are short
    (:func:`_gpu_blocked`), else Running."""
    cluster = world.cluster_of(collection, KUBERNETES_GROUP) or CONTROL_PLANE
    watched = (collection.get("spec") or {}).get("observeObjects") or {}
    out: list[Obj] = []
    for other in world.on_cluster(cluster):
        manifest = _manifest(other)
        meta = manifest.get("metadata") or {}
        templates = _pod_templates(manifest)
        if (
            other.get("kind") != "Object"
            or manifest.get("kind") not in ("Deployment", "LeaderWorkerSet")
            or not templates
            or watched.get("namespace") not in (None, meta.get("namespace"))
        ):
            continue
        labels = (templates[0].get("metadata") or {}).get("labels") or {}
        if not _selects(watched.get("selector") or {}, labels):
            continue
        blocked = _gpu_blocked(world, other, cluster, manifest)
        for index in range(int((manifest.get("spec") or {}).get("replicas", 1))):
            out.append(_pod(f"{meta.get('name')}-{_digest(str(meta.get('name')), length=5)}-{index}",
                            str(meta.get("namespace") or ""), labels, blocked))  # fmt: skip
    return out


def _selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """A label selector's ``matchLabels`` and ``Exists``/``In`` expressions (what we use)."""
    if not _labels_match({"metadata": {"labels": labels}}, selector.get("matchLabels") or {}):
        return False
    for expression in selector.get("matchExpressions") or ():
        key, operator = expression.get("key"), expression.get("operator")
        if operator == "Exists" and key not in labels:
            return False
        if operator == "In" and labels.get(key) not in (expression.get("values") or ()):
            return False
    return True


def _pod(name: str, namespace: str, labels: Mapping[str, Any], blocked: str) -> Obj:
    if blocked:  # what kube-scheduler writes on a pod it cannot place
        message = blocked.removeprefix("pods wait for a node: ")
        scheduled = condition("PodScheduled", False, "Unschedulable", message)
        phase = "Pending"
    else:
        scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": TIME}
        phase = "Running"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "status": {"phase": phase, "conditions": [scheduled]},
    }


def _sync_members(store: dict[Key, Obj], collection: Obj, wanted: list[Obj]) -> bool:
    """Create or update the collection's members and prune the others; tell if any changed."""
    meta = collection.get("metadata") or {}
    label = {MEMBERSHIP_LABEL: str(meta.get("name", ""))}
    namespace = str(meta.get("namespace") or "")
    fresh = {key_of(m): m for m in wanted}
    changed = False
    for key, obj in list(store.items()):
        mine = key[2] == namespace and key[1] == "Object" and _labels_match(obj, label)
        if mine and key not in fresh:
            del store[key]
            changed = True
    for key, member in fresh.items():
        if store.get(key) != member:
            store[key] = member
            changed = True
    return changed


def _object(world: _World, obj: Obj) -> Report:
    _, problem = world.connect(obj, KUBERNETES_GROUP)
    if problem:
        return _unsynced(obj, problem)
    cluster = world.cluster_of(obj, KUBERNETES_GROUP) or CONTROL_PLANE
    manifest = _manifest(obj)
    if (obj.get("spec") or {}).get("managementPolicies") == ["Observe"]:
        return _observe_only(world, obj, cluster, manifest)
    problem = _apply_problem(world, obj, cluster, manifest)
    if problem:
        return _unsynced(obj, problem)
    applied = copy.deepcopy(manifest)
    status = workload_status(world, cluster, applied)
    if status is not None:
        no_gpu = _gpu_blocked(world, obj, cluster, manifest)
        if no_gpu:
            status = _replicated_status(
                str(manifest.get("kind")),
                int((manifest.get("spec") or {}).get("replicas", 1)),
                [no_gpu],
                _max_unavailable(manifest.get("spec") or {}),
            )
        applied["status"] = status
    ready, reason = _object_readiness(obj, applied)
    out = _synced({"manifest": applied}, ready=ready, reason=reason)
    return Report(out)


# --- GPU capacity: what kube-scheduler does on a pool that is full ---------------------------------


def _gpu_blocked(world: _World, obj: Obj, cluster: str, manifest: Mapping[str, Any]) -> str:
    """Say why a GPU workload's pods wait for a node ("" when they all run).

    A pod that claims devices takes a node of its pool (the docs' whole-node rule). The
    pool has the nodes its InferenceCluster publishes (observed, where it observes
    fewer). Workloads bind first come, first served: those already running keep their
    nodes, then the oldest Objects; one whose pods do not all fit waits, Pending.
    """
    pool = _gpu_pool(manifest)
    nodes = None if pool is None else _pool_nodes(world, obj, pool)
    if pool is None or nodes is None:
        return ""
    me = _bound_first(obj)
    rivals = [
        o
        for o in world.on_cluster(cluster)
        if o.get("kind") == "Object"
        and _gpu_pool(_manifest(o)) == pool
        and _bound_first(o)[1:] != me[1:]
    ]
    used = 0
    for other in sorted([*rivals, obj], key=_bound_first):
        pods = _gpu_pods(_manifest(other))
        if used + pods <= nodes:
            used += pods
        elif other is obj:
            return f"pods wait for a node: 0/{nodes} nodes of pool {pool} are available: Insufficient GPUs"
    return ""


def _gpu_pool(manifest: Mapping[str, Any]) -> str | None:
    """The pool a workload's device-claiming pods are pinned to (None: it claims none)."""
    if manifest.get("kind") not in ("Deployment", "LeaderWorkerSet"):
        return None
    for template in _pod_templates(manifest):
        spec = template.get("spec") or {}
        if spec.get("resourceClaims"):
            found = (spec.get("nodeSelector") or {}).get(POOL_LABEL)
            return str(found) if found else None
    return None


def _gpu_pods(manifest: Mapping[str, Any]) -> int:
    """The workload's pods that claim devices (each takes a node)."""
    spec = manifest.get("spec") or {}
    copies = int(spec.get("replicas", 1))
    if manifest.get("kind") != "LeaderWorkerSet":
        return copies
    lwt = spec.get("leaderWorkerTemplate") or {}
    workers = int(lwt.get("size", 1)) - 1
    per_group = sum(
        n
        for template, n in ((lwt.get("leaderTemplate"), 1), (lwt.get("workerTemplate"), workers))
        if ((template or {}).get("spec") or {}).get("resourceClaims")
    )
    return copies * per_group


def _pool_nodes(world: _World, obj: Obj, pool: str) -> int | None:
    """The nodes of ``pool`` on the InferenceCluster whose provider config ``obj`` names."""
    config = str(((obj.get("spec") or {}).get("providerConfigRef") or {}).get("name") or "")
    for cluster in world.all():
        if cluster.get("kind") != "InferenceCluster":
            continue
        status = cluster.get("status") or {}
        if str((status.get("providerConfigRef") or {}).get("name") or "") != config:
            continue
        for entry in status.get("gpuPools") or ():
            if entry.get("name") == pool:
                if entry.get("capacity") == "Devices":
                    return None  # pods share nodes: not modelled here
                observed = (entry.get("observed") or {}).get("nodes")
                return int(observed if observed is not None else entry.get("nodes", 0))
    return None


def _bound_first(obj: Obj) -> tuple[int, str, str, str]:
    meta = obj.get("metadata") or {}
    bound = condition_is(obj, "Ready")
    created = str(meta.get("creationTimestamp") or "")
    return (0 if bound else 1, created, str(meta.get("namespace")), str(meta.get("name")))


def _observe_only(world: _World, obj: Obj, cluster: str, manifest: Mapping[str, Any]) -> Report:
    """An Object that only observes: it reports what is there, and is unsynced when absent."""
    meta = manifest.get("metadata") or {}
    kind, namespace, name = (
        str(manifest.get("kind", "")),
        str(meta.get("namespace") or ""),
        str(meta.get("name", "")),
    )
    found = _cloud_installed(world, cluster, kind, namespace, name)
    if found is None:
        found = world.applied(cluster, kind, namespace, name)
    if found is None:
        where = f"{namespace}/{name}" if namespace else name
        return _unsynced(obj, f"cannot observe object: {kind} {where} not found")
    ready, reason = _object_readiness(obj, found)
    return Report(_synced({"manifest": found}, ready=ready, reason=reason))


VKE_GPU_OPERATOR = ("DaemonSet", "gpu-operator", "nvidia-operator-validator")
"""What VKE installs on a cluster with GPU pools: NVIDIA's GPU operator, whose validator
DaemonSet runs a pod on every GPU node."""


def _cloud_installed(
    world: _World, cluster: str, kind: str, namespace: str, name: str
) -> Obj | None:
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


def _apply_problem(world: _World, obj: Obj, cluster: str, manifest: Mapping[str, Any]) -> str:
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
    for template in _pod_templates(manifest):
        labels = (template.get("metadata") or {}).get("labels") or {}
        refused += label_problems(labels, "pod template metadata.labels")
    if refused:
        return f"cannot create object: {kind} is invalid: " + "; ".join(refused)
    group = group_of(manifest)
    if group in CRD_SOURCES:
        how, what = CRD_SOURCES[group]
        if not world.installs(cluster, how, what):
            version = manifest.get("apiVersion")
            return f'cannot create object: no matches for kind "{kind}" in version "{version}"'
    namespace = str((manifest.get("metadata") or {}).get("namespace") or "")
    if (
        kind not in CLUSTER_SCOPED
        and namespace
        and namespace not in BUILTIN_NAMESPACES
        and world.applied(cluster, "Namespace", "", namespace) is None
    ):
        return f'cannot create object: namespaces "{namespace}" not found'
    return ""


def _object_readiness(obj: Mapping[str, Any], applied: Mapping[str, Any]) -> tuple[bool, str]:
    readiness = (obj.get("spec") or {}).get("readiness") or {}
    policy = readiness.get("policy") or "SuccessfulCreate"
    if policy == "SuccessfulCreate":
        return True, "Available"
    if policy == "DeriveFromObject":
        return condition_is(applied, "Ready"), "Available"
    if policy == "AllTrue":
        conditions = conditions_of(applied)
        return bool(conditions) and all(
            c.get("status") == "True" for c in conditions.values()
        ), "Available"
    if policy == "DeriveFromCelQuery":
        return evaluate_query(str(readiness.get("celQuery", "")), applied), "Available"
    msg = f"the fake provider-kubernetes knows no readiness policy {policy!r}"
    raise ValueError(msg)


_CONDITION_QUERY = re.compile(
    r"^has\(object\.status\) && has\(object\.status\.conditions\) && "
    r'object\.status\.conditions\.exists\(c, c\.type == "(?P<type>\w+)" && c\.status == "True"\)$'
)
_PARENTS_QUERY = re.compile(
    r"^has\(object\.status\) && has\(object\.status\.parents\) && object\.status\.parents"
    r'\.exists\(p, has\(p\.conditions\) && p\.conditions\.exists\(c, c\.type == "(?P<type>\w+)"'
    r' && c\.status == "True"\)\)$'
)


def _number(obj: Mapping[str, Any], *path: str, default: int = 0) -> int:
    for part in path[:-1]:
        obj = obj.get(part) or {}
    value = obj.get(path[-1])
    return default if value is None else int(value)


def _deployment_ready(applied: Mapping[str, Any]) -> bool:
    """As ``kubectl rollout status`` judges a Deployment: current, updated, available."""
    if "status" not in applied:
        return False
    generation = (applied.get("metadata") or {}).get("generation")
    if generation is not None and _number(applied, "status", "observedGeneration") < generation:
        return False
    desired = _number(applied, "spec", "replicas", default=1)
    updated = _number(applied, "status", "updatedReplicas")
    return (
        updated >= desired
        and _number(applied, "status", "availableReplicas") >= desired
        and _number(applied, "status", "replicas") <= updated
    )


def _groups_ready(applied: Mapping[str, Any]) -> bool:
    """A LeaderWorkerSet serves when every desired group is ready and updated."""
    desired = _number(applied, "spec", "replicas", default=1)
    return (
        "status" in applied
        and _number(applied, "status", "readyReplicas") >= desired
        and _number(applied, "status", "updatedReplicas") >= desired
    )


def _job_done(applied: Mapping[str, Any]) -> bool:
    completions = _number(applied, "spec", "completions", default=1)
    return "status" in applied and _number(applied, "status", "succeeded") >= completions


_WORKLOAD_QUERIES: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    " ".join(objects.workload_query(kind).split()): judge
    for kind, judge in (
        ("Deployment", _deployment_ready),
        ("LeaderWorkerSet", _groups_ready),
        ("Job", _job_done),
    )
}
"""The workload queries our functions write (``objects.workload_query``), by what they mean."""


_DAEMONSET_QUERY = re.compile(
    r"^has\(object\.status\) && has\(object\.status\.desiredNumberScheduled\) && "
    r"has\(object\.status\.numberReady\) && "
    r"object\.status\.numberReady == object\.status\.desiredNumberScheduled"
    r"(?P<some> && object\.status\.desiredNumberScheduled > 0)?$"
)


def evaluate_query(query: str, applied: Mapping[str, Any]) -> bool:
    """Evaluate the readiness CEL queries our functions write, as provider-kubernetes would.

    Raises:
        ValueError: a query of another shape (teach the fake about it).
    """
    text = " ".join(query.split())
    judge = _WORKLOAD_QUERIES.get(text)
    if judge is not None:
        return judge(applied)
    found = _CONDITION_QUERY.match(text)
    if found:
        return condition_is(applied, found["type"])
    found = _DAEMONSET_QUERY.match(text)
    if found:
        status = applied.get("status") or {}
        if "desiredNumberScheduled" not in status or "numberReady" not in status:
            return False
        desired = int(status["desiredNumberScheduled"])
        return int(status["numberReady"]) == desired and (desired > 0 or not found["some"])
    found = _PARENTS_QUERY.match(text)
    if found:
        parents = (applied.get("status") or {}).get("parents") or []
        return any(
            any(
                c.get("type") == found["type"] and c.get("status") == "True"
                for c in p.get("conditions") or []
            )
            for p in parents
        )
    msg = f"the fake provider-kubernetes cannot evaluate the readiness query {query!r}"
    raise ValueError(msg)


# --- what each kind's controller reports on a cluster ----------------------------------------


NEVER_READY = "never-ready"
"""An image whose name holds this never turns Ready (a bad image, for rollout tests)."""


def _pod_templates(manifest: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = manifest.get("spec") or {}
    kind = manifest.get("kind")
    if kind in ("Deployment", "StatefulSet", "Job", "DaemonSet", "ReplicaSet"):
        return [spec.get("template") or {}]
    if kind == "LeaderWorkerSet":
        lwt = spec.get("leaderWorkerTemplate") or {}
        return [t for t in (lwt.get("leaderTemplate"), lwt.get("workerTemplate")) if t]
    return []


def _pods_blocked(world: _World, cluster: str, manifest: Mapping[str, Any]) -> list[str]:
    """Say what keeps the manifest's pods from running on ``cluster``."""
    namespace = str((manifest.get("metadata") or {}).get("namespace") or "default")
    missing: list[str] = []
    for template in _pod_templates(manifest):
        pod = template.get("spec") or {}
        account = pod.get("serviceAccountName")
        if (
            account
            and account != "default"
            and world.applied(cluster, "ServiceAccount", namespace, str(account)) is None
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
            found = world.applied(cluster, "PersistentVolumeClaim", namespace, str(claim))
            if found is None or (found.get("status") or {}).get("phase") != "Bound":
                missing.append(f"PersistentVolumeClaim {namespace}/{claim}")
        pool = (pod.get("nodeSelector") or {}).get(POOL_LABEL)
        if pool and world.nodes and not world.pool_runs(cluster, str(pool)):
            missing.append(f"a Ready node of pool {pool}")
        for claim in pod.get("resourceClaims") or ():
            template_name = claim.get("resourceClaimTemplateName")
            if (
                template_name
                and world.applied(cluster, "ResourceClaimTemplate", namespace, str(template_name))
                is None
            ):
                missing.append(f"ResourceClaimTemplate {namespace}/{template_name}")
    return sorted(set(missing))


def workload_status(world: _World, cluster: str, manifest: Mapping[str, Any]) -> Obj | None:
    """Return the status ``manifest`` has on ``cluster`` once applied (None: kinds without one)."""
    kind = str(manifest.get("kind", ""))
    group = group_of(manifest)
    spec = manifest.get("spec") or {}
    meta = manifest.get("metadata") or {}
    if kind == "Namespace":
        return {"phase": "Active"}
    if kind == "PersistentVolumeClaim":
        storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
        return {
            "phase": "Bound",
            "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
            "capacity": {"storage": storage},
        }
    if kind in ("Deployment", "StatefulSet", "LeaderWorkerSet"):
        blocked = _pods_blocked(world, cluster, manifest)
        return _replicated_status(
            kind, int(spec.get("replicas", 1)), blocked, _max_unavailable(spec)
        )
    if kind == "Job":
        blocked = _pods_blocked(world, cluster, manifest)
        if blocked:
            return {"active": 1, "ready": 0, "startTime": TIME}
        return {
            "conditions": [
                condition("SuccessCriteriaMet", True, "CompletionsReached"),
                condition("Complete", True, "CompletionsReached"),
            ],
            "succeeded": 1,
            "startTime": TIME,
            "completionTime": TIME,
        }
    if kind == "Service":
        if spec.get("type") == "LoadBalancer":
            address = f"203.0.113.{_octet(cluster, str(meta.get('name')))}"
            return {"loadBalancer": {"ingress": [{"ip": address}]}}
        return {"loadBalancer": {}}
    if group == GATEWAY_GROUP:
        installed = world.installs(cluster, "chart", WORKLOAD_GATEWAY_CONTROLLER)
        address = f"203.0.113.{_octet(cluster, 'gateway')}"
        return _gateway_api_status(
            manifest, installed, ENVOY_CONTROLLER_NAME, address, _cluster_lookup(world, cluster)
        )
    if group.startswith("inference.networking") and kind == "InferencePool":
        return {
            "parents": [
                {
                    "parentRef": {"group": GATEWAY_GROUP, "kind": "Gateway", "name": "modelplane"},
                    "conditions": [
                        condition("Accepted", True, "Accepted"),
                        condition("ResolvedRefs", True, "ResolvedRefs"),
                    ],
                }
            ]
        }
    return None


def _max_unavailable(spec: Mapping[str, Any]) -> int:
    """A Deployment's ``rollingUpdate.maxUnavailable`` (an integer; the default is 25%)."""
    rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
    value = rolling.get("maxUnavailable", 0)
    return value if isinstance(value, int) else 0


def _replicated_status(kind: str, replicas: int, blocked: list[str], max_unavailable: int) -> Obj:
    """What the controllers report: counts of what runs, and conditions as Kubernetes sets them.

    A Deployment is ``Available`` once ``replicas - maxUnavailable`` pods are: with one
    replica and ``maxUnavailable: 1`` that holds while its only pod is Pending, as the
    real deployment controller reports it.
    """
    ready = 0 if blocked else replicas
    minimum = ready >= replicas - max_unavailable if kind == "Deployment" else not blocked
    available = condition(
        "Available",
        minimum,
        "MinimumReplicasAvailable" if minimum else "MinimumReplicasUnavailable",
        "" if not blocked else "pods wait for " + ", ".join(blocked),
    )
    if kind == "LeaderWorkerSet":
        available["reason"] = "AllGroupsReady" if not blocked else "GroupsNotReady"
        return {
            "conditions": [available, condition("Progressing", bool(blocked), "GroupsProgressing")],
            "readyReplicas": ready,
            "replicas": replicas,
            "updatedReplicas": replicas,
        }
    status: Obj = {
        "observedGeneration": 1,
        "replicas": replicas,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "updatedReplicas": replicas,
    }
    if kind == "Deployment":
        status["conditions"] = [
            available,
            condition("Progressing", True, "NewReplicaSetAvailable"),
        ]
    return status


Lookup = Callable[[str, str, str], Obj | None]
"""(kind, namespace, name) -> the object as it is on one cluster, or None."""


def _cluster_lookup(world: _World, cluster: str) -> Lookup:
    def lookup(kind: str, namespace: str, name: str) -> Obj | None:
        return world.applied(cluster, kind, namespace, name)

    return lookup


def _gateway_api_status(
    manifest: Mapping[str, Any], installed: bool, controller: str, address: str, lookup: Lookup
) -> Obj | None:
    """What a Gateway API controller reports on a GatewayClass, Gateway or HTTPRoute."""
    kind = manifest.get("kind")
    spec = manifest.get("spec") or {}
    meta = manifest.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    if not installed:
        return {}  # no controller yet: nobody writes a status
    if kind == "GatewayClass":
        if spec.get("controllerName") != controller:
            return {}
        return {"conditions": [condition("Accepted", True, "Accepted")]}
    if kind == "Gateway":
        found = lookup("GatewayClass", "", str(spec.get("gatewayClassName", "")))
        if found is None:
            return {"conditions": [condition("Accepted", False, "NoSuchGatewayClass")]}
        listeners = [
            {
                "name": listener.get("name"),
                "attachedRoutes": 0,
                "supportedKinds": [{"group": GATEWAY_GROUP, "kind": "HTTPRoute"}],
                "conditions": [
                    condition("Accepted", True, "Accepted"),
                    condition("Programmed", True, "Programmed"),
                    condition("ResolvedRefs", True, "ResolvedRefs"),
                ],
            }
            for listener in spec.get("listeners") or ()
        ]
        return {
            "addresses": [{"type": "IPAddress", "value": address}],
            "conditions": [
                condition("Accepted", True, "Accepted"),
                condition("Programmed", True, "Programmed"),
            ],
            "listeners": listeners,
        }
    if kind == "HTTPRoute":
        parents = []
        for ref in spec.get("parentRefs") or ():
            gateway = lookup(
                "Gateway", str(ref.get("namespace") or namespace), str(ref.get("name", ""))
            )
            if gateway is None or not condition_is(gateway, "Programmed"):
                continue
            missing = [
                f"{b.get('kind', 'Service')} {namespace}/{b.get('name')}"
                for rule in spec.get("rules") or ()
                for b in rule.get("backendRefs") or ()
                if lookup(str(b.get("kind") or "Service"), namespace, str(b.get("name", "")))
                is None
            ]
            resolved = condition(
                "ResolvedRefs",
                not missing,
                "ResolvedRefs" if not missing else "BackendNotFound",
                "" if not missing else "backends not found: " + ", ".join(missing),
            )
            parents.append(
                {
                    "parentRef": dict(ref),
                    "controllerName": controller,
                    "conditions": [condition("Accepted", True, "Accepted"), resolved],
                }
            )
        return {"parents": parents}
    return None


def _control_plane_gateway_api(world: _World, obj: Obj) -> Report:
    """Traefik on the control plane, on the objects the InferenceGateway and ModelServices compose."""
    installed = any(
        uid_of(o) in world.installed
        and (((o.get("spec") or {}).get("forProvider") or {}).get("chart") or {}).get("name")
        == CONTROL_PLANE_GATEWAY_CONTROLLER
        for o in world.all()
        if group_of(o) == HELM_GROUP
    )

    def lookup(kind: str, namespace: str, name: str) -> Obj | None:
        group = GATEWAY_GROUP if kind in ("Gateway", "GatewayClass", "HTTPRoute") else ""
        return world.get(group, kind, namespace, name)

    status = _gateway_api_status(
        obj, installed, TRAEFIK_CONTROLLER_NAME, _control_plane_address(world), lookup
    )
    return Report(status if status is not None else dict(obj.get("status") or {}))


def _control_plane_address(world: _World) -> str:
    for obj in world.all():
        if obj.get("kind") == "IPAddressPool" and group_of(obj) == "metallb.io":
            addresses = (obj.get("spec") or {}).get("addresses") or []
            if addresses:
                first = str(addresses[0]).split("-")[0].split("/")[0]
                return first.strip()
    return CLOUD_LB_ADDRESS


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
            "data": {key: _b64(f"user-provided {key}") for key in sorted(keys)},
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
            "apiVersion": f"{group}/{version}",
            "kind": "ClusterProviderConfig",
            "metadata": {"name": "default"},
            "spec": {"credentials": {"source": "InjectedIdentity"}},
        }
        for group, version in ((HELM_GROUP, "v1beta1"), (KUBERNETES_GROUP, "v1alpha1"))
    ]
