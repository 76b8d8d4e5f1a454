"""API versions and label keys, defined once: what our objects are and how they're found.

Every module names these constants instead of spelling the strings, so an API version
bump or a label rename is one edit.
"""

from __future__ import annotations

# Our composites.
MODELPLANE = "modelplane.ai/v1alpha1"
INFRASTRUCTURE = "infrastructure.modelplane.ai/v1alpha1"

# What we compose through the providers.
KUBERNETES_OBJECT = "kubernetes.m.crossplane.io/v1alpha1"
"""provider-kubernetes' namespaced Object (and its ProviderConfigs)."""
HELM = "helm.m.crossplane.io/v1beta1"
"""provider-helm's namespaced Release (and its ProviderConfigs)."""
USAGE = "protection.crossplane.io/v1beta1"
GATEWAY_GROUP = "gateway.networking.k8s.io"
GATEWAY_API = f"{GATEWAY_GROUP}/v1"
"""Kubernetes' Gateway API: the GatewayClass, Gateway and HTTPRoutes the stack and the
replicas compose, and the routes a ModelService reads."""

# Labels a ModelDeployment puts on its ModelReplicas and ModelEndpoints; the fleet is
# read, and a ModelService selects, by them.
DEPLOYMENT_LABEL = "modelplane.ai/deployment"
CLUSTER_LABEL = "modelplane.ai/cluster"
INDEX_LABEL = "modelplane.ai/replica-index"
POOL_LABEL = "modelplane.ai/pool"
"""On every GPU node of a pool, and in every pod's nodeSelector pinning it there."""

TEMPLATE_HASH_LABEL = "modelplane.ai/template-hash"
"""On a ModelReplica: the hash of the deployment template it runs (a rolling update
replaces the replicas whose hash is not the current one)."""

GPU_TAINT = "nvidia.com/gpu"
"""The taint on every GPU node of a pool (``NoSchedule``); workload pods tolerate its key."""
GPU_TAINT_VALUE = "present"
"""Workload pods tolerate the GPU taint's key with Exists, so its value only informs."""
READY_TEMPLATE_FIELD = "readyTemplateHash"
"""In a ModelReplica's status: the template hash of the spec it was last judged Ready on,
written with that verdict (absent while not Ready). A rolling update counts a replica as
Ready on its template only when this names it."""
