"""The Helm values a ServingStack installs its larger charts with.

:mod:`modelplane.domain.stack` pins the charts and orders the Releases; these are the
values of the charts whose configuration is more than a line (Envoy Gateway's extension
manager, Prometheus' selectors, the NVIDIA DRA driver's node affinity).
"""

from __future__ import annotations

from typing import Any

from modelplane.domain.workload import names, pods

POOL_LABEL = names.LABEL_POOL
AI_GATEWAY_EXTENSION = "ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local"
AI_GATEWAY_EXTENSION_PORT = 1063
"""Where Envoy Gateway's extension manager reaches the AI Gateway controller (the AI
Gateway chart's fixed service name, in its namespace)."""

TOLERATE_TAINTED = {"effect": "NoSchedule", "operator": "Exists"}
"""A toleration of every NoSchedule taint: GPU nodes are tainted."""


def envoy_gateway_values(ai_gateway: bool) -> dict[str, Any]:
    """Return Envoy Gateway's values, with the AI Gateway's extension hooks when it is on."""
    envoy_gateway: dict[str, Any] = {
        "extensionApis": {"enableBackend": True, "enableEnvoyPatchPolicy": True},
    }
    if ai_gateway:
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


def prometheus_values() -> dict[str, Any]:
    """Return kube-prometheus-stack's values: select every monitor in every namespace."""
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


def dra_driver_values(driver_root: str) -> dict[str, Any]:
    """Return the NVIDIA DRA driver's values: its kubelet plugin on GPU nodes only."""

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
            "tolerations": [dict(pods.GPU_TOLERATION)],
        },
        "nvidiaDriverRoot": driver_root,
        # ComputeDomains (multi-node NVLink) need a controller on control-plane nodes,
        # which managed clusters do not have.
        "resources": {"computeDomains": {"enabled": False}, "gpus": {"enabled": True}},
    }  # fmt: skip
