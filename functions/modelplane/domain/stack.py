"""ServingStack: the software an inference cluster needs to serve models, as ordered steps.

:func:`plan` turns a stack (its cloud, the provider config that reaches the cluster,
and which components are on) into steps, each a composed resource and the steps it
waits for. :func:`gate` takes what the observed state says is ready and returns what
to compose now: a step is composed once everything it needs is ready, and kept from
then on (so a flapping condition never uninstalls a working component).

The components, each pinned to a default version (a component's ``version`` overrides
it), installed with provider-helm Releases through the cluster's provider config:

- cert-manager (``cert-manager``, with its CRDs), for the other components' webhooks;
- the Gateway API CRDs (standard channel), from Envoy Gateway's CRD-only chart, so Helm
  upgrades them and they are one Release's job;
- the Gateway API Inference Extension CRDs (InferencePool, InferenceObjective), which
  have no chart: a Job applies the release's manifests with ``kubectl apply
  --server-side`` (a provider-kubernetes Object each for it and its RBAC);
- Envoy Gateway (``envoy-gateway-system``), after the Gateway API and Inference
  Extension CRDs, so it watches both kinds from its start;
- LeaderWorkerSet (``lws-system``), for multi-node engines;
- kube-prometheus-stack as ``prometheus`` in ``monitoring`` (so its service is
  ``prometheus-prometheus``), selecting every PodMonitor and ServiceMonitor in every
  namespace;
- NVIDIA's DRA driver for GPUs (``nvidia-dra-driver-gpu``), whose kubelet plugin runs on
  GPU nodes (the pool-labelled ones, tolerating ``nvidia.com/gpu``);
- on EKS only, DRANET for EFA (AWS's ``aws-dranet`` chart, in ``kube-system``).

Then, through provider-kubernetes Objects once Envoy Gateway is ready: an EnvoyProxy
(a LoadBalancer Service), the GatewayClass ``modelplane-envoy`` and the Gateway
``modelplane`` in ``modelplane-system`` with one HTTP listener on port 80 that admits
routes from every namespace: the Gateway every ModelReplica's HTTPRoute attaches to.

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

INFERENCE_EXTENSION_VERSION = "v1.4.0"
"""The Gateway API Inference Extension release whose CRDs llm-d's endpoint picker serves."""
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
    LEADER_WORKER_SET = "leaderWorkerSet"
    PROMETHEUS = "prometheus"
    NVIDIA_DRA_DRIVER = "nvidiaDRADriver"
    DRANET = "dranet"


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
        release: The Helm release's name on the cluster (and the step's key).
        name: The chart's name.
        repository: The chart repository (``https://`` or ``oci://``).
        version: The version Modelplane pins.
        namespace: The namespace the release installs into.
        label: What to call it in a condition message.
    """

    release: str
    name: str
    repository: str
    version: str
    namespace: str
    label: str


CHARTS: Mapping[Component, Chart] = {
    Component.CERT_MANAGER: Chart(
        "cert-manager", "cert-manager", "https://charts.jetstack.io", "v1.19.4",
        "cert-manager", "cert-manager",
    ),
    Component.GATEWAY_API: Chart(
        "gateway-api-crds", "gateway-crds-helm", "oci://docker.io/envoyproxy", "v1.7.0",
        SYSTEM_NAMESPACE, "the Gateway API CRDs",
    ),
    Component.ENVOY_GATEWAY: Chart(
        "envoy-gateway", "gateway-helm", "oci://docker.io/envoyproxy", "v1.7.0",
        "envoy-gateway-system", "Envoy Gateway",
    ),
    Component.LEADER_WORKER_SET: Chart(
        "lws", "lws", "oci://registry.k8s.io/lws/charts", "0.8.0", "lws-system", "LeaderWorkerSet",
    ),
    Component.PROMETHEUS: Chart(
        "prometheus", "kube-prometheus-stack",
        "https://prometheus-community.github.io/helm-charts", "79.12.0", "monitoring",
        "Prometheus",
    ),
    Component.NVIDIA_DRA_DRIVER: Chart(
        "nvidia-dra-driver-gpu", "nvidia-dra-driver-gpu", "https://helm.ngc.nvidia.com/nvidia",
        "25.12.0", "nvidia-dra-driver-gpu", "the NVIDIA DRA driver",
    ),
    Component.DRANET: Chart(
        "aws-dranet", "aws-dranet", "https://aws.github.io/eks-charts", "1.0.0", "kube-system",
        "DRANET",
    ),
}  # fmt: skip
"""Every component but the Inference Extension, which has no chart."""

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
class Stack:
    """What the ServingStack asks for.

    Attributes:
        name: The ServingStack's name (its InferenceCluster's).
        namespace: Its namespace on the control plane, where its Releases and Objects live.
        cloud: Where the cluster runs.
        provider_config: The provider config that reaches the cluster.
        components: Each component's setting; a missing one is on at its pinned version.
    """

    name: str
    namespace: str
    cloud: Cloud
    provider_config: ProviderConfig
    components: Mapping[Component, Setting] = field(default_factory=dict)

    def setting(self, component: Component) -> Setting:
        """Return a component's setting (on, at the pinned version, unless said otherwise)."""
        return self.components.get(component, Setting())

    def enabled(self, component: Component) -> bool:
        """Tell whether the stack installs ``component`` on this cloud."""
        if component is Component.DRANET and self.cloud is not Cloud.EKS:
            return False  # EFA exists only on AWS
        return self.setting(component).enabled


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
    steps = [_namespace(stack)]
    for component in (Component.CERT_MANAGER, Component.GATEWAY_API):
        if stack.enabled(component):
            steps.append(_release(stack, component))
    if stack.enabled(Component.INFERENCE_EXTENSION):
        steps.extend(_inference_extension(stack))
    if stack.enabled(Component.ENVOY_GATEWAY):
        crds = [s.key for s in steps if s.key in (_GATEWAY_API_KEY, _INFERENCE_EXTENSION_KEY)]
        steps.append(_release(stack, Component.ENVOY_GATEWAY, needs=tuple(crds)))
    for component in _INDEPENDENT:
        if stack.enabled(component):
            steps.append(_release(stack, component))
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
    at_provider = ((observed_gateway or {}).get("status") or {}).get("atProvider") or {}
    status = (at_provider.get("manifest") or {}).get("status") or {}
    addresses = status.get("addresses") or []
    first = addresses[0] if addresses and isinstance(addresses[0], Mapping) else {}
    return str(first.get("value") or "")


GATEWAY_KEY = "gateway"
_NAMESPACE_KEY = "namespace"
_GATEWAY_API_KEY = CHARTS[Component.GATEWAY_API].release
_ENVOY_GATEWAY_KEY = CHARTS[Component.ENVOY_GATEWAY].release
_INFERENCE_EXTENSION_KEY = "inference-extension-crds"
_INDEPENDENT = (
    Component.LEADER_WORKER_SET,
    Component.PROMETHEUS,
    Component.NVIDIA_DRA_DRIVER,
    Component.DRANET,
)


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


def _release(stack: Stack, component: Component, needs: tuple[str, ...] = ()) -> Step:
    chart = CHARTS[component]
    version = stack.setting(component).version or chart.version
    for_provider: dict[str, Any] = {
        "chart": {"name": chart.name, "repository": chart.repository, "version": version},
        "namespace": chart.namespace,
    }
    values = _values(stack, component)
    if values:
        for_provider["values"] = values
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


def _values(stack: Stack, component: Component) -> dict[str, Any]:
    match component:
        case Component.CERT_MANAGER:
            return {"crds": {"enabled": True}}
        case Component.GATEWAY_API:
            return {
                "crds": {
                    "envoyGateway": {"enabled": False},
                    "gatewayAPI": {"channel": "standard", "enabled": True},
                }
            }
        case Component.PROMETHEUS:
            return _prometheus_values()
        case Component.NVIDIA_DRA_DRIVER:
            return _dra_driver_values(stack.cloud)
        case Component.DRANET:
            # EFA nodes are GPU nodes, tainted; the chart picks EFA instance types itself.
            return {"tolerations": [{"effect": "NoSchedule", "operator": "Exists"}]}
        case _:
            return {}


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
    on_gpu_pools = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": POOL_LABEL, "operator": "Exists"}]},
            {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In",
                                   "values": ["true"]}]},
        ]
    }  # fmt: skip
    return {
        "gpuResourcesEnabledOverride": True,
        "kubeletPlugin": {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": (
                on_gpu_pools
            )}},
            "tolerations": [{"effect": "NoSchedule", "key": GPU_TAINT, "operator": "Exists"}],
        },
        "nvidiaDriverRoot": DRIVER_ROOTS.get(cloud, "/"),
        # ComputeDomains (multi-node NVLink) need a controller on control-plane nodes,
        # which managed clusters do not have.
        "resources": {"computeDomains": {"enabled": False}, "gpus": {"enabled": True}},
    }  # fmt: skip


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
                stack.provider_config, job, ready_when=objects.condition_query("Complete"),
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
    needs = tuple(
        key for key in (_NAMESPACE_KEY, _ENVOY_GATEWAY_KEY, _GATEWAY_API_KEY) if key in present
    )
    if _ENVOY_GATEWAY_KEY in needs:
        needs = tuple(n for n in needs if n != _GATEWAY_API_KEY)  # Envoy Gateway came after it
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
            "listeners": [{"allowedRoutes": {"namespaces": {"from": "All"}}, "name": "http",
                           "port": LISTENER_PORT, "protocol": "HTTP"}],
        },
    }  # fmt: skip

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
