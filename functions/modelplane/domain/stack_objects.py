"""The Kubernetes objects a ServingStack applies through provider-kubernetes.

:mod:`modelplane.domain.stack` decides which steps a stack takes and in what order; this
module writes the manifests those steps apply (namespaces, the DRA driver's quota, the
Inference Extension CRD installer, the Gateway and its class, the AKS StorageClass, the
provider configs built from Secrets), each from plain values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.domain import api
from modelplane.domain.workload import GATEWAY_NAME, GATEWAY_NAMESPACE, names

SYSTEM_NAMESPACE = GATEWAY_NAMESPACE
GATEWAY_CLASS = "modelplane-envoy"
ENVOY_PROXY = "modelplane"
GATEWAY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
AKS_STORAGE_CLASS = "modelplane-rwx-fs"
INFERENCE_EXTENSION_MANIFESTS = (
    "https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download/"
    "{version}/manifests.yaml"
)
KUBECTL_IMAGE = "registry.k8s.io/kubectl:v1.35.6"
CRD_INSTALLER = "modelplane-crd-installer"
GATEWAY_TLS_SECRET = "modelplane-gateway-tls"
"""The certificate an HTTPS listener terminates TLS with: a Secret in modelplane-system
the platform team (or cert-manager) provides."""


@dataclass(frozen=True)
class Listener:
    """One listener of the workload cluster's Gateway."""

    name: str
    port: int
    protocol: str = "HTTP"


def labels() -> dict[str, str]:
    """Return the labels every object the stack applies carries."""
    return {names.LABEL_MANAGED_BY: names.MANAGED_BY}


def namespace(name: str) -> dict[str, Any]:
    """Return a Namespace."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"labels": labels(), "name": name}}


def provider_config(
    api_version: str, kind: str, name: str, namespace: str, spec: Mapping[str, Any]
) -> dict[str, Any]:
    """Return a provider config the stack builds from its Secrets."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"labels": labels(), "name": name, "namespace": namespace},
        "spec": spec,
    }


def critical_pods_quota(
    name: str, namespace: str, pods: str, priority_classes: Iterable[str]
) -> dict[str, Any]:
    """Return the ResourceQuota that admits pods of ``priority_classes`` in ``namespace``."""
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"labels": labels(), "name": name, "namespace": namespace},
        "spec": {
            "hard": {"pods": pods},
            "scopeSelector": {
                "matchExpressions": [
                    {
                        "operator": "In",
                        "scopeName": "PriorityClass",
                        "values": list(priority_classes),
                    }
                ]
            },
        },
    }


def crd_installer_rbac() -> list[tuple[str, dict[str, Any]]]:
    """Return the CRD installer Job's ServiceAccount and its cluster role, by step key."""
    meta = {"labels": labels(), "name": CRD_INSTALLER}
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


def crd_job(version: str) -> dict[str, Any]:
    """Return the Job that applies the Inference Extension's CRDs at ``version``.

    A Job's pod template is immutable, so the name carries the version: a new version
    is a new Job (the old one goes with its Object).
    """
    url = INFERENCE_EXTENSION_MANIFESTS.format(version=version)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "labels": labels(),
            "name": names.fit(f"inference-extension-crds-{_dns(version)}"),
            "namespace": SYSTEM_NAMESPACE,
        },
        "spec": {
            "backoffLimit": 6,
            "template": {
                "metadata": {"labels": labels()},
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


def envoy_proxy() -> dict[str, Any]:
    """Return the EnvoyProxy that makes the Gateway's proxy a LoadBalancer Service."""
    return {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "EnvoyProxy",
        "metadata": {"labels": labels(), "name": ENVOY_PROXY, "namespace": SYSTEM_NAMESPACE},
        "spec": {"provider": {"kubernetes": {"envoyService": {
            "externalTrafficPolicy": "Cluster", "type": "LoadBalancer",
        }}, "type": "Kubernetes"}},
    }  # fmt: skip


def gateway_class() -> dict[str, Any]:
    """Return the GatewayClass Envoy Gateway serves, parameterised by the EnvoyProxy."""
    return {
        "apiVersion": api.GATEWAY_API,
        "kind": "GatewayClass",
        "metadata": {"labels": labels(), "name": GATEWAY_CLASS},
        "spec": {
            "controllerName": GATEWAY_CONTROLLER,
            "parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy",
                              "name": ENVOY_PROXY, "namespace": SYSTEM_NAMESPACE},
        },
    }  # fmt: skip


def gateway(listeners: Iterable[Listener]) -> dict[str, Any]:
    """Return the Gateway every ModelReplica's HTTPRoute attaches to."""
    return {
        "apiVersion": api.GATEWAY_API,
        "kind": "Gateway",
        "metadata": {"labels": labels(), "name": GATEWAY_NAME, "namespace": SYSTEM_NAMESPACE},
        "spec": {
            "gatewayClassName": GATEWAY_CLASS,
            "listeners": [_listener(listener) for listener in listeners],
        },
    }


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


def aks_storage_class() -> dict[str, Any]:
    """Return the AKS RWX StorageClass (Azure Files Premium over NFS)."""
    return {
        "allowVolumeExpansion": True,
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"labels": labels(), "name": AKS_STORAGE_CLASS},
        "mountOptions": ["nconnect=4", "noresvport", "actimeo=30"],
        "parameters": {"protocol": "nfs", "skuName": "Premium_LRS"},
        "provisioner": "file.csi.azure.com",
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }
