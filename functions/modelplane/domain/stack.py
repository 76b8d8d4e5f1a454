"""ServingStack: the software an inference cluster needs to serve models, as ordered steps.

:func:`plan` turns a stack (its cloud, the provider config that reaches the cluster,
and which components are on) into steps, each a composed resource and the steps it
waits for. :func:`gate` takes what the observed state says is ready and returns what
to compose now: a step is composed once everything it needs is ready, and kept from
then on (so a flapping condition never uninstalls a working component).

Every chart and the version pinned for it is in one table, :data:`CHARTS` (a
component's ``version`` overrides its charts' pins). The components, installed with
provider-helm Releases through the cluster's provider config:

- cert-manager (``cert-manager``, with its CRDs), for the other components' webhooks;
- the Gateway API CRDs (standard channel) and Envoy Gateway's own CRDs, from Envoy
  Gateway's CRD-only chart, so Helm upgrades them and they are one Release's job;
- the Gateway API Inference Extension CRDs (InferencePool, InferenceObjective), which
  have no chart: a Job applies the release's manifests with ``kubectl apply
  --server-side`` (a provider-kubernetes Object each for it and its RBAC);
- Envoy Gateway (``envoy-gateway-system``), after both sets of CRDs, so it watches every
  kind from its start, with its extension manager pointed at the Envoy AI Gateway for
  InferencePool backends (Envoy Gateway cannot route to an InferencePool alone);
- the Envoy AI Gateway (``envoy-ai-gateway-system``: its CRDs, then its controller, after
  Envoy Gateway and the Inference Extension CRDs), which serves InferencePool backends
  and OpenAI-style routes by model;
- LeaderWorkerSet (``lws-system``), for multi-node engines;
- kube-prometheus-stack as ``prometheus`` in ``monitoring`` (so its service is
  ``prometheus-prometheus``), selecting every PodMonitor and ServiceMonitor in every
  namespace;
- node-feature-discovery (``node-feature-discovery``), whose PCI labels tell the DRA
  driver which nodes have NVIDIA GPUs;
- the DRA driver for NVIDIA GPUs from its home in Kubernetes SIGs
  (``dra-driver-nvidia-gpu``), whose kubelet plugin runs on GPU nodes; its pods run at
  ``system-node-critical`` priority, which clusters (GKE among them) admit outside
  ``kube-system`` only under a ResourceQuota for that priority class, so its namespace
  and that quota come first;
- on EKS only, DRANET for EFA (AWS's ``aws-dranet`` chart, in ``kube-system``);
- on Nebius only, Nebius' ``csi-mounted-fs-path`` CSI driver (in ``kube-system``), which
  serves the ``modelplane-rwx-fs`` StorageClass the NebiusCluster composes: it keeps each
  volume as a directory under its data directory on the shared filesystem every node
  group mounts (:data:`modelplane.domain.clouds.nebius.CSI_DATA_DIR`).

Then, through provider-kubernetes Objects once Envoy Gateway (and the AI Gateway) is
ready: an EnvoyProxy (a LoadBalancer Service), the GatewayClass ``modelplane-envoy``
and the Gateway ``modelplane`` in ``modelplane-system`` with the stack's listeners (one
HTTP listener on port 80 unless the spec says otherwise; an HTTPS one terminates TLS
with the Secret :data:`GATEWAY_TLS_SECRET`), each admitting routes from every
namespace: the Gateway every ModelReplica's HTTPRoute attaches to.

A stack given Secrets instead of a provider config composes that provider config itself:
a provider-helm and a provider-kubernetes ProviderConfig in its namespace, named after
it, from the kubeconfig Secret (and the identity Secret paired with it).

RWX storage for ModelCaches, per cloud:

- AKS: the StorageClass ``modelplane-rwx-fs`` (Azure Files Premium over NFS; the CSI
  driver creates the storage account on demand), composed here.
- EKS: ``modelplane-rwx-efs`` is pinned to the cluster's EFS file system, whose id only
  the EKSCluster knows, so the EKSCluster composes it with the file system.
- GKE: GKE's own Filestore classes (the Filestore CSI driver is a cluster add-on).
- Nebius: ``modelplane-rwx-fs`` rides the shared filesystem the NebiusCluster mounts on
  every node group, so the NebiusCluster composes it.
- Vultr: none (VKE's file storage cannot attach to GPU nodes). Existing: the admin's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from modelplane.domain import api, objects
from modelplane.domain.clouds import nebius
from modelplane.domain.workload import GATEWAY_NAME, GATEWAY_NAMESPACE, names

HELM_API = api.HELM
EXTERNAL_NAME = "crossplane.io/external-name"
"""provider-helm names the Helm release on the cluster after this annotation."""
SYSTEM_NAMESPACE = GATEWAY_NAMESPACE
GATEWAY_CLASS = "modelplane-envoy"
ENVOY_PROXY = "modelplane"
GATEWAY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
LISTENER_PORT = 80
AKS_STORAGE_CLASS = "modelplane-rwx-fs"
GPU_TAINT = "nvidia.com/gpu"
POOL_LABEL = names.LABEL_POOL

INFERENCE_EXTENSION_VERSION = "v1.5.0"
"""The Gateway API Inference Extension release whose CRDs llm-d's endpoint picker (router
v0.9.0) serves."""
INFERENCE_EXTENSION_MANIFESTS = (
    "https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download/"
    "{version}/manifests.yaml"
)
KUBECTL_IMAGE = "registry.k8s.io/kubectl:v1.35.6"
CRD_INSTALLER = "modelplane-crd-installer"


class Component(StrEnum):
    """The components of ``spec.components``, by their field names."""

    CERT_MANAGER = "certManager"
    GATEWAY_API = "gatewayAPI"
    INFERENCE_EXTENSION = "inferenceExtension"
    ENVOY_GATEWAY = "envoyGateway"
    AI_GATEWAY = "aiGateway"
    LEADER_WORKER_SET = "leaderWorkerSet"
    PROMETHEUS = "prometheus"
    NODE_FEATURE_DISCOVERY = "nodeFeatureDiscovery"
    NVIDIA_DRA_DRIVER = "nvidiaDRADriver"
    DRANET = "dranet"
    CSI_MOUNTED_FS_PATH = "csiMountedFsPath"


class Cloud(StrEnum):
    """Where the cluster runs (``spec.cloud``)."""

    GKE = "GKE"
    EKS = "EKS"
    AKS = "AKS"
    NEBIUS = "Nebius"
    VULTR = "Vultr"
    EXISTING = "Existing"


@dataclass(frozen=True)
class Chart:
    """A Helm chart, and the release it becomes on the cluster.

    Attributes:
        component: The component it installs (its ``version`` overrides ``version``), or
            None for a chart a cloud cluster installs itself (the EKS cluster autoscaler).
        release: The Helm release's name on the cluster (and the step's key).
        name: The chart's name.
        repository: The chart repository (``https://`` or ``oci://``).
        version: The version Modelplane pins.
        namespace: The namespace the release installs into.
        label: What to call it in a condition message.
    """

    component: Component | None
    release: str
    name: str
    repository: str
    version: str
    namespace: str
    label: str


_ENVOY = "oci://docker.io/envoyproxy"
CERT_MANAGER = "cert-manager"
GATEWAY_API_CRDS = "gateway-api-crds"
ENVOY_GATEWAY = "envoy-gateway"
AI_GATEWAY_CRDS = "ai-gateway-crds"
AI_GATEWAY = "ai-gateway"
LWS = "lws"
PROMETHEUS = "prometheus"
NFD = "node-feature-discovery"
DRA_DRIVER = "dra-driver-nvidia-gpu"
DRANET = "aws-dranet"
CSI_MOUNTED_FS_PATH = "csi-mounted-fs-path"
CLUSTER_AUTOSCALER = "cluster-autoscaler"

CHARTS: Mapping[str, Chart] = {c.release: c for c in (
    Chart(Component.CERT_MANAGER, CERT_MANAGER, "cert-manager", "https://charts.jetstack.io",
          "v1.19.4", "cert-manager", "cert-manager"),
    Chart(Component.GATEWAY_API, GATEWAY_API_CRDS, "gateway-crds-helm", _ENVOY,
          "v1.8.3", SYSTEM_NAMESPACE, "the Gateway API and Envoy Gateway CRDs"),
    Chart(Component.ENVOY_GATEWAY, ENVOY_GATEWAY, "gateway-helm", _ENVOY,
          "v1.8.3", "envoy-gateway-system", "Envoy Gateway"),
    Chart(Component.AI_GATEWAY, AI_GATEWAY_CRDS, "ai-gateway-crds-helm", _ENVOY,
          "v1.0.0", "envoy-ai-gateway-system", "the Envoy AI Gateway CRDs"),
    Chart(Component.AI_GATEWAY, AI_GATEWAY, "ai-gateway-helm", _ENVOY,
          "v1.0.0", "envoy-ai-gateway-system", "the Envoy AI Gateway"),
    Chart(Component.LEADER_WORKER_SET, LWS, "lws", "oci://registry.k8s.io/lws/charts",
          "0.8.0", "lws-system", "LeaderWorkerSet"),
    Chart(Component.PROMETHEUS, PROMETHEUS, "kube-prometheus-stack",
          "https://prometheus-community.github.io/helm-charts", "79.12.0", "monitoring",
          "Prometheus"),
    Chart(Component.NODE_FEATURE_DISCOVERY, NFD, "node-feature-discovery",
          "oci://registry.k8s.io/nfd/charts", "0.19.0", "node-feature-discovery",
          "node-feature-discovery"),
    Chart(Component.NVIDIA_DRA_DRIVER, DRA_DRIVER, "dra-driver-nvidia-gpu",
          "oci://registry.k8s.io/dra-driver-nvidia/charts", "0.4.1", "dra-driver-nvidia-gpu",
          "the NVIDIA DRA driver"),
    Chart(Component.DRANET, DRANET, "aws-dranet", "https://aws.github.io/eks-charts", "1.0.0",
          "kube-system", "DRANET"),
    Chart(Component.CSI_MOUNTED_FS_PATH, CSI_MOUNTED_FS_PATH, "csi-mounted-fs-path",
          "oci://cr.eu-north1.nebius.cloud/mk8s/helm", "0.1.5", "kube-system",
          "the csi-mounted-fs-path CSI driver"),
    Chart(None, CLUSTER_AUTOSCALER, "cluster-autoscaler", "https://kubernetes.github.io/autoscaler",
          "9.57.0", "kube-system", "the cluster autoscaler"),
)}  # fmt: skip
"""Every chart the stack installs and the version pinned for it, by release: the one
place a chart version is written. The Gateway API CRD chart is Envoy Gateway's and
moves with it (Envoy Gateway v1.8.3 bundles Gateway API v1.5.1); the AI Gateway's two
charts move together. ``cluster-autoscaler`` is no stack component: the EKSCluster installs
it where a pool autoscales (:func:`stack_charts` lists the stack's own)."""


def stack_charts() -> dict[str, Chart]:
    """Return the charts a ServingStack installs (those of a component), by release."""
    return {k: c for k, c in CHARTS.items() if c.component is not None}


GATEWAY_API_BUNDLE = "v1.5.1"
"""The Gateway API release whose CRDs the pinned Envoy Gateway CRD chart installs."""

AI_GATEWAY_EXTENSION = "ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local"
AI_GATEWAY_EXTENSION_PORT = 1063
"""Where Envoy Gateway's extension manager reaches the AI Gateway controller (the AI
Gateway chart's fixed service name, in its namespace)."""

DRA_NAMESPACE = CHARTS[DRA_DRIVER].namespace
DRA_QUOTA = "modelplane-critical-pods"
CRITICAL_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")
CRITICAL_PODS = "10000"
"""The quota only admits critical pods; its size is no limit in practice (one kubelet
plugin pod per GPU node, and a controller)."""


DRIVER_ROOTS: Mapping[Cloud, str] = {Cloud.GKE: "/home/kubernetes/bin/nvidia"}
"""Where the NVIDIA driver lives on the host, where it is not ``/``."""


@dataclass(frozen=True)
class Setting:
    """One component's switch and version override."""

    enabled: bool = True
    version: str | None = None


@dataclass(frozen=True)
class ProviderConfig:
    """The provider config (provider-helm's and provider-kubernetes', one name) to use."""

    name: str
    kind: str = "ClusterProviderConfig"

    def ref(self) -> dict[str, str]:
        """Return it as a managed resource's ``spec.providerConfigRef``."""
        return {"kind": self.kind, "name": self.name}


@dataclass(frozen=True)
class SecretKey:
    """One key of a control-plane Secret in the stack's namespace."""

    name: str
    key: str


@dataclass(frozen=True)
class Credentials:
    """The Secrets the stack builds its own provider configs from.

    Attributes:
        kubeconfig: The cluster's kubeconfig.
        identity_type: The provider configs' identity type, where the kubeconfig holds no
            credentials of its own (``GoogleApplicationCredentials``, ...).
        identity: The Secret key holding that identity.
    """

    kubeconfig: SecretKey
    identity_type: str | None = None
    identity: SecretKey | None = None


@dataclass(frozen=True)
class Listener:
    """One listener of the workload cluster's Gateway."""

    name: str
    port: int
    protocol: str = "HTTP"


DEFAULT_LISTENERS = (Listener("http", LISTENER_PORT),)
GATEWAY_TLS_SECRET = "modelplane-gateway-tls"
"""The certificate an HTTPS listener terminates TLS with: a Secret in modelplane-system
the platform team (or cert-manager) provides."""


@dataclass(frozen=True)
class Stack:
    """What the ServingStack asks for.

    Attributes:
        name: The ServingStack's name (its InferenceCluster's).
        namespace: Its namespace on the control plane, where its Releases and Objects live.
        cloud: Where the cluster runs.
        provider_config: The provider config that reaches the cluster.
        components: Each component's setting; a missing one is on at its pinned version.
        credentials: When set, the stack composes ``provider_config`` itself (a
            provider-helm and a provider-kubernetes ProviderConfig in its namespace) from
            these Secrets.
        listeners: The Gateway's listeners.
    """

    name: str
    namespace: str
    cloud: Cloud
    provider_config: ProviderConfig
    components: Mapping[Component, Setting] = field(default_factory=dict)
    credentials: Credentials | None = None
    listeners: tuple[Listener, ...] = DEFAULT_LISTENERS

    def setting(self, component: Component) -> Setting:
        """Return a component's setting (on, at the pinned version, unless said otherwise)."""
        return self.components.get(component, Setting())

    def enabled(self, component: Component) -> bool:
        """Tell whether the stack installs ``component`` on this cloud."""
        if component is Component.DRANET and self.cloud is not Cloud.EKS:
            return False  # EFA exists only on AWS
        if component is Component.CSI_MOUNTED_FS_PATH and self.cloud is not Cloud.NEBIUS:
            return False  # it serves the shared filesystem only a NebiusCluster mounts
        if component is Component.AI_GATEWAY and not self.enabled(Component.ENVOY_GATEWAY):
            return False  # it extends the Envoy Gateway this stack installs and configures
        return self.setting(component).enabled

    def version(self, chart: Chart) -> str:
        """Return the version to install ``chart`` at: its component's override, or the pin.

        The CRD chart ships Envoy Gateway's CRDs too, so an Envoy Gateway version moves
        it along unless the Gateway API component names its own.
        """
        if chart.component is None:
            return chart.version
        own = self.setting(chart.component).version
        if own:
            return own
        if chart.release == GATEWAY_API_CRDS:
            return self.setting(Component.ENVOY_GATEWAY).version or chart.version
        return chart.version


@dataclass(frozen=True)
class Step:
    """One composed resource of the stack.

    Attributes:
        key: Its composed-resource name, stable across reconciles.
        label: What it is, for condition messages.
        resource: Its manifest (a Release or an Object).
        needs: The keys of the steps that must be ready before it is composed.
    """

    key: str
    label: str
    resource: Mapping[str, Any]
    needs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Progress:
    """What to compose now, and what the stack still waits for.

    Attributes:
        composed: The steps to compose, in plan order.
        installing: The composed steps that are not ready yet.
        blocked: Each step not composed yet, with the labels of what it waits for.
    """

    composed: tuple[Step, ...]
    installing: tuple[Step, ...]
    blocked: tuple[tuple[Step, tuple[str, ...]], ...]

    @property
    def ready(self) -> bool:
        """Tell whether every step is composed and ready."""
        return not self.installing and not self.blocked

    def waiting(self) -> list[str]:
        """Say what the stack waits for, one phrase per step, in plan order."""
        phrases = [f"{step.label} to become ready" for step in self.installing]
        phrases += [f"{step.label} (after {', '.join(after)})" for step, after in self.blocked]
        return phrases


def wrap(
    name: str,
    namespace: str,
    provider_config: ProviderConfig,
    manifest: Mapping[str, Any],
    *,
    ready_when: str | None = None,
    keep: bool = False,
    references: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Return a provider-kubernetes Object that applies ``manifest`` through ``provider_config``."""
    return objects.wrap(
        name,
        namespace,
        provider_config.ref(),
        manifest,
        ready_when=ready_when,
        keep=keep,
        references=references,
    )


def plan(stack: Stack) -> tuple[Step, ...]:
    """Return every step the stack composes, each after the steps it needs.

    Args:
        stack: The stack as its spec asks for it.
    """
    steps = [*_provider_configs(stack), _namespace(stack)]
    if stack.enabled(Component.CERT_MANAGER):
        steps.append(_release(stack, CERT_MANAGER))
    if stack.enabled(Component.GATEWAY_API) or stack.enabled(Component.ENVOY_GATEWAY):
        steps.append(_release(stack, GATEWAY_API_CRDS))
    if stack.enabled(Component.INFERENCE_EXTENSION):
        steps.extend(_inference_extension(stack))
    planned = {s.key for s in steps}
    crds = tuple(k for k in (GATEWAY_API_CRDS, _INFERENCE_EXTENSION_KEY) if k in planned)
    if stack.enabled(Component.ENVOY_GATEWAY):
        steps.append(_release(stack, ENVOY_GATEWAY, needs=crds))
    if stack.enabled(Component.AI_GATEWAY):
        steps.append(_release(stack, AI_GATEWAY_CRDS))
        after = (AI_GATEWAY_CRDS, ENVOY_GATEWAY, *(k for k in crds if k != GATEWAY_API_CRDS))
        steps.append(_release(stack, AI_GATEWAY, needs=after))
    for release, component in (
        (LWS, Component.LEADER_WORKER_SET),
        (PROMETHEUS, Component.PROMETHEUS),
        (NFD, Component.NODE_FEATURE_DISCOVERY),
    ):
        if stack.enabled(component):
            steps.append(_release(stack, release))
    if stack.enabled(Component.NVIDIA_DRA_DRIVER):
        steps.extend(_dra_driver(stack))
    if stack.enabled(Component.DRANET):
        steps.append(_release(stack, DRANET))
    if stack.enabled(Component.CSI_MOUNTED_FS_PATH):
        steps.append(_release(stack, CSI_MOUNTED_FS_PATH))
    steps.extend(_gateway(stack, {s.key for s in steps}))
    if stack.cloud is Cloud.AKS:
        steps.append(_aks_storage_class(stack))
    return tuple(steps)


def gate(steps: Sequence[Step], observed: Mapping[str, bool]) -> Progress:
    """Decide which steps to compose from what the observed state says.

    Args:
        steps: The plan, in order.
        observed: Whether each composed step that exists is ready, by key; a missing key
            is a step not created yet.
    """
    labels = {s.key: s.label for s in steps}
    composed: list[Step] = []
    installing: list[Step] = []
    blocked: list[tuple[Step, tuple[str, ...]]] = []
    for step in steps:
        unmet = tuple(need for need in step.needs if not observed.get(need, False))
        if unmet and step.key not in observed:
            blocked.append((step, tuple(labels[n] for n in unmet)))
            continue
        composed.append(step)
        if not observed.get(step.key, False):
            installing.append(step)
    return Progress(tuple(composed), tuple(installing), tuple(blocked))


def gateway_address(observed_gateway: Mapping[str, Any] | None) -> str:
    """Return the Gateway's first address from its Object's observed manifest ("" if none)."""
    address, _ = read_gateway_address(observed_gateway)
    return address


_ADDRESS_PATH = ("status", "atProvider", "manifest", "status", "addresses")


def read_gateway_address(observed_gateway: Mapping[str, Any] | None) -> tuple[str, str | None]:
    """The Gateway's first address ("" if none), and the field that could not be read.

    The Object's status is the provider's and the Gateway controller's to write; a field
    of the wrong type there reads as no address yet, and is named (``status.atProvider
    is a list, not an object``) so the composite can say why it waits.
    """
    value: Any = observed_gateway or {}
    walked: list[str] = []
    for key in _ADDRESS_PATH:
        if not isinstance(value, Mapping):
            return "", f"{'.'.join(walked)} is {_kind_of(value)}, not an object"
        walked.append(key)
        value = value.get(key)
        if value is None:
            return "", None
    if not isinstance(value, list):
        return "", f"{'.'.join(walked)} is {_kind_of(value)}, not a list"
    first = value[0] if value else {}
    if not isinstance(first, Mapping):
        return "", f"{'.'.join(walked)}[0] is {_kind_of(first)}, not an object"
    found = first.get("value")
    if found is not None and not isinstance(found, str):
        return "", f"{'.'.join(walked)}[0].value is {_kind_of(found)}, not text"
    return found or "", None


def _kind_of(value: Any) -> str:
    """A JSON value's type, as a message says it."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, Mapping) else "null"


GATEWAY_KEY = "gateway"
_NAMESPACE_KEY = "namespace"
_INFERENCE_EXTENSION_KEY = "inference-extension-crds"
_DRA_NAMESPACE_KEY = "dra-driver-namespace"
_DRA_QUOTA_KEY = "dra-driver-quota"


PROVIDER_CONFIG_KEYS: Mapping[str, str] = {
    "provider-config-helm": api.HELM,
    "provider-config-kubernetes": api.KUBERNETES_OBJECT,
}


def _provider_configs(stack: Stack) -> list[Step]:
    """Return the provider configs the stack builds from its Secrets (none without them).

    They exist to be named: every other step may be composed alongside them (the
    providers retry until the config exists), so nothing waits for them.
    """
    credentials = stack.credentials
    if credentials is None:
        return []

    def secret(ref: SecretKey) -> dict[str, str]:
        return {"key": ref.key, "name": ref.name, "namespace": stack.namespace}

    spec: dict[str, Any] = {
        "credentials": {"secretRef": secret(credentials.kubeconfig), "source": "Secret"}
    }
    if credentials.identity is not None and credentials.identity_type:
        spec["identity"] = {
            "secretRef": secret(credentials.identity),
            "source": "Secret",
            "type": credentials.identity_type,
        }
    return [
        Step(
            key,
            f"{stack.provider_config.kind} {stack.provider_config.name}",
            {
                "apiVersion": api_version,
                "kind": stack.provider_config.kind,
                "metadata": {
                    "labels": _labels(),
                    "name": stack.provider_config.name,
                    "namespace": stack.namespace,
                },
                "spec": spec,
            },
        )
        for key, api_version in PROVIDER_CONFIG_KEYS.items()
    ]


def _object_name(stack: Stack, key: str) -> str:
    return names.fit(f"{stack.name}-{key}")


def _labels() -> dict[str, str]:
    return {names.LABEL_MANAGED_BY: names.MANAGED_BY}


def _namespace(stack: Stack) -> Step:
    manifest = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"labels": _labels(), "name": SYSTEM_NAMESPACE},
    }
    resource = wrap(
        _object_name(stack, _NAMESPACE_KEY), stack.namespace, stack.provider_config, manifest,
        keep=True,
    )  # fmt: skip
    return Step(_NAMESPACE_KEY, f"namespace {SYSTEM_NAMESPACE}", resource)


def _release(stack: Stack, release: str, needs: tuple[str, ...] = ()) -> Step:
    chart = CHARTS[release]
    version = stack.version(chart)
    for_provider: dict[str, Any] = {
        "chart": {"name": chart.name, "repository": chart.repository, "version": version},
        "namespace": chart.namespace,
    }
    values = _values(stack, release)
    if values:
        for_provider["values"] = values
    if release == GATEWAY_API_CRDS:
        # Envoy Gateway's CRDs move here from its own chart, which created them outside
        # any release (Helm's crds/ folder); this Release adopts them once, then owns them.
        for_provider["takeOwnership"] = True
    resource = {
        "apiVersion": HELM_API,
        "kind": "Release",
        "metadata": {
            "annotations": {EXTERNAL_NAME: chart.release},
            "name": _object_name(stack, chart.release),
            "namespace": stack.namespace,
        },
        "spec": {"forProvider": for_provider, "providerConfigRef": stack.provider_config.ref()},
    }
    return Step(chart.release, f"{chart.label} {version}", resource, needs)


def _values(stack: Stack, release: str) -> dict[str, Any]:
    match release:
        case "cert-manager":
            return {"crds": {"enabled": True}}
        case "gateway-api-crds":
            return {
                "crds": {
                    "envoyGateway": {"enabled": stack.enabled(Component.ENVOY_GATEWAY)},
                    "gatewayAPI": {
                        "channel": "standard",
                        "enabled": stack.enabled(Component.GATEWAY_API),
                    },
                }
            }
        case "envoy-gateway":
            return _envoy_gateway_values(stack)
        case "prometheus":
            return _prometheus_values()
        case "node-feature-discovery":
            # GPU nodes are tainted; NFD must label them to be found.
            return {"worker": {"tolerations": [{"effect": "NoSchedule", "operator": "Exists"}]}}
        case "dra-driver-nvidia-gpu":
            return _dra_driver_values(stack.cloud)
        case "aws-dranet":
            # EFA nodes are GPU nodes, tainted; the chart picks EFA instance types itself.
            return {"tolerations": [{"effect": "NoSchedule", "operator": "Exists"}]}
        case "csi-mounted-fs-path":
            # Each volume is a directory under dataDir: it must be on the shared
            # filesystem every node group mounts, so all nodes see the same volumes.
            # dataDir is the one value Nebius documents for this chart (its
            # nebius-solution-library k8s-training filesystem.tf sets only it, at 0.1.5);
            # no tolerations key is documented, so none is guessed (README, "Serving
            # stack versions").
            return {"dataDir": nebius.CSI_DATA_DIR}
        case _:
            return {}


def _envoy_gateway_values(stack: Stack) -> dict[str, Any]:
    envoy_gateway: dict[str, Any] = {
        "extensionApis": {"enableBackend": True, "enableEnvoyPatchPolicy": True},
    }
    if stack.enabled(Component.AI_GATEWAY):
        # The AI Gateway translates InferencePool backends (and AI routes) into Envoy
        # config through these hooks; Envoy Gateway has no InferencePool support of its own.
        everything = {"includeAll": True}
        envoy_gateway["extensionManager"] = {
            "backendResources": [
                {"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"}
            ],
            "hooks": {
                "xdsTranslator": {
                    "post": ["Translation", "Cluster", "Route"],
                    "translation": {
                        "cluster": everything,
                        "listener": everything,
                        "route": everything,
                        "secret": everything,
                    },
                }
            },
            "service": {
                "fqdn": {"hostname": AI_GATEWAY_EXTENSION, "port": AI_GATEWAY_EXTENSION_PORT}
            },
        }
    # The CRD Release owns every CRD; the chart's own copy (and its Gateway API upgrade
    # policy, which the CRD chart renders too) would collide with it.
    return {"config": {"envoyGateway": envoy_gateway}, "crds": {"enabled": False}}


def _prometheus_values() -> dict[str, Any]:
    everywhere = {
        "podMonitorNamespaceSelector": {},
        "podMonitorSelector": {},
        "podMonitorSelectorNilUsesHelmValues": False,
        "serviceMonitorNamespaceSelector": {},
        "serviceMonitorSelector": {},
        "serviceMonitorSelectorNilUsesHelmValues": False,
    }
    # fullnameOverride names the Prometheus service prometheus-prometheus, as the docs say.
    return {"fullnameOverride": "prometheus", "prometheus": {"prometheusSpec": everywhere}}


def _dra_driver_values(cloud: Cloud) -> dict[str, Any]:
    def present(key: str) -> dict[str, Any]:
        return {"matchExpressions": [{"key": key, "operator": "In", "values": ["true"]}]}

    on_gpu_nodes = {
        "nodeSelectorTerms": [
            # node-feature-discovery's NVIDIA PCI vendor label, the GPU operator's label,
            # or a Modelplane GPU pool.
            present("feature.node.kubernetes.io/pci-10de.present"),
            present("nvidia.com/gpu.present"),
            {"matchExpressions": [{"key": POOL_LABEL, "operator": "Exists"}]},
        ]
    }
    return {
        "gpuResourcesEnabledOverride": True,
        "kubeletPlugin": {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": (
                on_gpu_nodes
            )}},
            "tolerations": [{"effect": "NoSchedule", "key": GPU_TAINT, "operator": "Exists"}],
        },
        "nvidiaDriverRoot": DRIVER_ROOTS.get(cloud, "/"),
        # ComputeDomains (multi-node NVLink) need a controller on control-plane nodes,
        # which managed clusters do not have.
        "resources": {"computeDomains": {"enabled": False}, "gpus": {"enabled": True}},
    }  # fmt: skip


def _dra_driver(stack: Stack) -> list[Step]:
    """Return the DRA driver's namespace, the quota its critical pods need, and its Release."""
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"labels": _labels(), "name": DRA_NAMESPACE},
    }
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"labels": _labels(), "name": DRA_QUOTA, "namespace": DRA_NAMESPACE},
        "spec": {
            "hard": {"pods": CRITICAL_PODS},
            "scopeSelector": {
                "matchExpressions": [
                    {
                        "operator": "In",
                        "scopeName": "PriorityClass",
                        "values": list(CRITICAL_PRIORITY_CLASSES),
                    }
                ]
            },
        },
    }

    def step(
        key: str, label: str, manifest: Mapping[str, Any], needs: tuple[str, ...] = (), **kw: Any
    ) -> Step:
        name = _object_name(stack, key)
        resource = wrap(name, stack.namespace, stack.provider_config, manifest, **kw)
        return Step(key, label, resource, needs)

    quota_label = f"ResourceQuota {DRA_NAMESPACE}/{DRA_QUOTA}"
    return [
        step(_DRA_NAMESPACE_KEY, f"namespace {DRA_NAMESPACE}", namespace, keep=True),
        step(_DRA_QUOTA_KEY, quota_label, quota, (_DRA_NAMESPACE_KEY,)),
        _release(stack, DRA_DRIVER, needs=(_DRA_QUOTA_KEY,)),
    ]


def _inference_extension(stack: Stack) -> list[Step]:
    version = stack.setting(Component.INFERENCE_EXTENSION).version or INFERENCE_EXTENSION_VERSION
    rbac = _crd_installer_rbac()
    steps = [
        Step(
            key,
            f"{manifest['kind']} {CRD_INSTALLER}",
            wrap(_object_name(stack, key), stack.namespace, stack.provider_config, manifest),
            (_NAMESPACE_KEY,),
        )
        for key, manifest in rbac
    ]
    job = _crd_job(version)
    steps.append(
        Step(
            _INFERENCE_EXTENSION_KEY,
            f"the Inference Extension CRDs {version}",
            wrap(
                _object_name(stack, _INFERENCE_EXTENSION_KEY), stack.namespace,
                stack.provider_config, job, ready_when=objects.job_query(),
            ),
            (_NAMESPACE_KEY, *(key for key, _ in rbac)),
        )
    )  # fmt: skip
    return steps


def _crd_installer_rbac() -> list[tuple[str, dict[str, Any]]]:
    meta = {"labels": _labels(), "name": CRD_INSTALLER}
    return [
        (
            "crd-installer-serviceaccount",
            {"apiVersion": "v1", "kind": "ServiceAccount",
             "metadata": {**meta, "namespace": SYSTEM_NAMESPACE}},
        ),
        (
            "crd-installer-clusterrole",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": meta,
                "rules": [{
                    "apiGroups": ["apiextensions.k8s.io"],
                    "resources": ["customresourcedefinitions"],
                    "verbs": ["create", "get", "list", "patch", "update"],
                }],
            },
        ),
        (
            "crd-installer-clusterrolebinding",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": meta,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": CRD_INSTALLER},
                "subjects": [{"kind": "ServiceAccount", "name": CRD_INSTALLER,
                              "namespace": SYSTEM_NAMESPACE}],
            },
        ),
    ]  # fmt: skip


def _crd_job(version: str) -> dict[str, Any]:
    """Return the Job that applies the Inference Extension's CRDs at ``version``.

    A Job's pod template is immutable, so the name carries the version: a new version
    is a new Job (the old one goes with its Object).
    """
    url = INFERENCE_EXTENSION_MANIFESTS.format(version=version)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "labels": _labels(),
            "name": names.fit(f"inference-extension-crds-{_dns(version)}"),
            "namespace": SYSTEM_NAMESPACE,
        },
        "spec": {
            "backoffLimit": 6,
            "template": {
                "metadata": {"labels": _labels()},
                "spec": {
                    "containers": [{
                        "args": ["apply", "--server-side", "--force-conflicts", "-f", url],
                        "command": ["kubectl"],
                        "image": KUBECTL_IMAGE,
                        "name": "apply",
                    }],
                    "restartPolicy": "Never",
                    "serviceAccountName": CRD_INSTALLER,
                },
            },
        },
    }  # fmt: skip


def _dns(text: str) -> str:
    """Return ``text`` with every character a DNS label can't hold turned into ``-``."""
    cleaned = "".join(c if c.isascii() and c.isalnum() else "-" for c in text.lower())
    return cleaned.strip("-") or "x"


def _gateway(stack: Stack, planned: Iterable[str]) -> list[Step]:
    present = set(planned)
    # Envoy Gateway came after the CRDs; the AI Gateway's webhook mutates the proxy pods
    # the Gateway makes, and its extension programs the Gateway, so it comes first too.
    wanted = (
        (_NAMESPACE_KEY, ENVOY_GATEWAY, AI_GATEWAY)
        if ENVOY_GATEWAY in present
        else (_NAMESPACE_KEY, GATEWAY_API_CRDS)
    )
    needs = tuple(key for key in wanted if key in present)
    ns = SYSTEM_NAMESPACE
    proxy = {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "EnvoyProxy",
        "metadata": {"labels": _labels(), "name": ENVOY_PROXY, "namespace": ns},
        "spec": {"provider": {"kubernetes": {"envoyService": {
            "externalTrafficPolicy": "Cluster", "type": "LoadBalancer",
        }}, "type": "Kubernetes"}},
    }  # fmt: skip
    gateway_class = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"labels": _labels(), "name": GATEWAY_CLASS},
        "spec": {
            "controllerName": GATEWAY_CONTROLLER,
            "parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy",
                              "name": ENVOY_PROXY, "namespace": ns},
        },
    }  # fmt: skip
    gateway = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"labels": _labels(), "name": GATEWAY_NAME, "namespace": ns},
        "spec": {
            "gatewayClassName": GATEWAY_CLASS,
            "listeners": [_listener(listener) for listener in stack.listeners],
        },
    }

    def step(key: str, label: str, manifest: dict[str, Any], ready: str | None) -> Step:
        name = _object_name(stack, key)
        resource = wrap(name, stack.namespace, stack.provider_config, manifest, ready_when=ready)
        return Step(key, label, resource, needs)

    return [
        step("envoy-proxy", f"EnvoyProxy {ENVOY_PROXY}", proxy, None),
        step("gateway-class", f"GatewayClass {GATEWAY_CLASS}", gateway_class,
             objects.condition_query("Accepted")),
        step(GATEWAY_KEY, f"Gateway {ns}/{GATEWAY_NAME}", gateway, objects.condition_query("Programmed")),
    ]  # fmt: skip


def _listener(listener: Listener) -> dict[str, Any]:
    found: dict[str, Any] = {
        "allowedRoutes": {"namespaces": {"from": "All"}},
        "name": listener.name,
        "port": listener.port,
        "protocol": listener.protocol,
    }
    if listener.protocol == "HTTPS":
        found["tls"] = {
            "certificateRefs": [{"group": "", "kind": "Secret", "name": GATEWAY_TLS_SECRET}],
            "mode": "Terminate",
        }
    return found


def _aks_storage_class(stack: Stack) -> Step:
    manifest = {
        "allowVolumeExpansion": True,
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"labels": _labels(), "name": AKS_STORAGE_CLASS},
        "mountOptions": ["nconnect=4", "noresvport", "actimeo=30"],
        "parameters": {"protocol": "nfs", "skuName": "Premium_LRS"},
        "provisioner": "file.csi.azure.com",
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }
    resource = wrap(
        _object_name(stack, "storage-class"), stack.namespace, stack.provider_config, manifest
    )
    return Step("storage-class", f"StorageClass {AKS_STORAGE_CLASS}", resource)
