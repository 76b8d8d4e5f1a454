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
with the Secret
:data:`modelplane.domain.stack_objects.GATEWAY_TLS_SECRET`), each admitting routes from every
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
from modelplane.domain import stack_objects as manifests
from modelplane.domain.clouds import nebius
from modelplane.domain.gateway_address import gateway_address, read_gateway_address
from modelplane.domain.gating import Progress, Step, gate
from modelplane.domain.stack_objects import (
    AKS_STORAGE_CLASS,
    CRD_INSTALLER,
    ENVOY_PROXY,
    GATEWAY_CLASS,
    SYSTEM_NAMESPACE,
    Listener,
)
from modelplane.domain.stack_values import (
    TOLERATE_TAINTED,
    dra_driver_values,
    envoy_gateway_values,
    prometheus_values,
)
from modelplane.domain.workload import GATEWAY_NAME, names

# Read through this module by the ServingStack adapter and its tests.
__all__ = [
    "SYSTEM_NAMESPACE",
    "Listener",
    "Progress",
    "Step",
    "gate",
    "gateway_address",
    "read_gateway_address",
]

HELM_API = api.HELM
EXTERNAL_NAME = "crossplane.io/external-name"
"""provider-helm names the Helm release on the cluster after this annotation."""
LISTENER_PORT = 80

INFERENCE_EXTENSION_VERSION = "v1.5.0"
"""The Gateway API Inference Extension release whose CRDs llm-d's endpoint picker (router
v0.9.0) serves."""


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


DEFAULT_LISTENERS = (Listener("http", LISTENER_PORT),)


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
    config = stack.provider_config
    return [
        Step(
            key,
            f"{config.kind} {config.name}",
            manifests.provider_config(api_version, config.kind, config.name, stack.namespace, spec),
        )
        for key, api_version in PROVIDER_CONFIG_KEYS.items()
    ]


def _object(
    stack: Stack,
    key: str,
    label: str,
    manifest: Mapping[str, Any],
    needs: tuple[str, ...] = (),
    **kw: Any,
) -> Step:
    """Return the step that applies ``manifest`` through a provider-kubernetes Object."""
    name = names.fit(f"{stack.name}-{key}")
    return Step(
        key, label, wrap(name, stack.namespace, stack.provider_config, manifest, **kw), needs
    )


def _namespace(stack: Stack) -> Step:
    manifest = manifests.namespace(SYSTEM_NAMESPACE)
    return _object(stack, _NAMESPACE_KEY, f"namespace {SYSTEM_NAMESPACE}", manifest, keep=True)


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
            "name": names.fit(f"{stack.name}-{chart.release}"),
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
            return envoy_gateway_values(stack.enabled(Component.AI_GATEWAY))
        case "prometheus":
            return prometheus_values()
        case "node-feature-discovery":
            # GPU nodes are tainted; NFD must label them to be found.
            return {"worker": {"tolerations": [dict(TOLERATE_TAINTED)]}}
        case "dra-driver-nvidia-gpu":
            return dra_driver_values(DRIVER_ROOTS.get(stack.cloud, "/"))
        case "aws-dranet":
            # EFA nodes are GPU nodes, tainted; the chart picks EFA instance types itself.
            return {"tolerations": [dict(TOLERATE_TAINTED)]}
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


def _dra_driver(stack: Stack) -> list[Step]:
    """Return the DRA driver's namespace, the quota its critical pods need, and its Release."""
    quota = manifests.critical_pods_quota(
        DRA_QUOTA, DRA_NAMESPACE, CRITICAL_PODS, CRITICAL_PRIORITY_CLASSES
    )
    namespace = manifests.namespace(DRA_NAMESPACE)
    quota_label = f"ResourceQuota {DRA_NAMESPACE}/{DRA_QUOTA}"
    return [
        _object(stack, _DRA_NAMESPACE_KEY, f"namespace {DRA_NAMESPACE}", namespace, keep=True),
        _object(stack, _DRA_QUOTA_KEY, quota_label, quota, (_DRA_NAMESPACE_KEY,)),
        _release(stack, DRA_DRIVER, needs=(_DRA_QUOTA_KEY,)),
    ]


def _inference_extension(stack: Stack) -> list[Step]:
    version = stack.setting(Component.INFERENCE_EXTENSION).version or INFERENCE_EXTENSION_VERSION
    rbac = manifests.crd_installer_rbac()
    steps = [
        _object(stack, key, f"{manifest['kind']} {CRD_INSTALLER}", manifest, (_NAMESPACE_KEY,))
        for key, manifest in rbac
    ]
    steps.append(
        _object(
            stack, _INFERENCE_EXTENSION_KEY, f"the Inference Extension CRDs {version}",
            manifests.crd_job(version), (_NAMESPACE_KEY, *(key for key, _ in rbac)),
            ready_when=objects.job_query(),
        )
    )  # fmt: skip
    return steps


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
    gateway = f"Gateway {SYSTEM_NAMESPACE}/{GATEWAY_NAME}"
    return [
        _object(stack, "envoy-proxy", f"EnvoyProxy {ENVOY_PROXY}", manifests.envoy_proxy(), needs,
                ready_when=None),
        _object(stack, "gateway-class", f"GatewayClass {GATEWAY_CLASS}", manifests.gateway_class(),
                needs, ready_when=objects.condition_query("Accepted")),
        _object(stack, GATEWAY_KEY, gateway, manifests.gateway(stack.listeners), needs,
                ready_when=objects.condition_query("Programmed")),
    ]  # fmt: skip


def _aks_storage_class(stack: Stack) -> Step:
    label = f"StorageClass {AKS_STORAGE_CLASS}"
    return _object(stack, "storage-class", label, manifests.aks_storage_class())
