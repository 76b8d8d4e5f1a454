"""Builders for the ModelDeployment function's tests: the objects of a fleet (clusters,
deployments, caches, replicas), one call of the function, and readers of its response.

Many test modules build fleets the same way; they import these from here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit, planning, registry, runtime
from modelplane.domain import api, naming

from tests.requests import request

API = "modelplane.ai/v1alpha1"
NS = "ml-team"
GATEWAY = "203.0.113.10"


# --- builders ----------------------------------------------------------------------------


def gpu_device(memory: str = "23034Mi", count: int = 1, claim: str = "DRA") -> dict[str, Any]:
    """An NVIDIA GPU entry as a class declares it (and a cluster's status copies it)."""
    device: dict[str, Any] = {
        "name": "gpu",
        "claim": claim,
        "driver": "gpu.nvidia.com",
        "count": count,
        "attributes": {"architecture": {"string": "Ada Lovelace"}},
        "capacity": {"memory": {"value": memory}},
    }
    if claim == "DRA":
        device["deviceClassName"] = "gpu.nvidia.com"
    return device


def efa_device(count: int = 16) -> dict[str, Any]:
    """The docs' EFA entry."""
    return {
        "name": "efa",
        "claim": "DRA",
        "driver": "dra.net",
        "deviceClassName": "efa.networking.k8s.aws",
        "count": count,
    }


def inference_cluster(
    name: str,
    pools: Sequence[tuple[str, int, Sequence[Mapping[str, Any]]]] = (("gpu-l4", 1, ()),),
    *,
    labels: Mapping[str, str] | None = None,
    ready: bool = True,
    gateway: str = GATEWAY,
    taints: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """An InferenceCluster with the status the scheduler reads (an L4 pool by default)."""
    status: dict[str, Any] = {
        "gpuPools": [
            {"name": p, "nodes": n, "devices": [dict(d) for d in devices] or [gpu_device()]}
            for p, n, devices in pools
        ],
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if gateway:
        status["gateway"] = {"address": gateway}
    spec: dict[str, Any] = {"cluster": {"source": "EKS", "eks": {"region": "us-east-1"}}}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    return {
        "apiVersion": API,
        "kind": "InferenceCluster",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
        "status": status,
    }


def member(
    role: str = "Standalone", *, memory: str = "20Gi", count: int = 1, **extra: Any
) -> dict[str, Any]:
    """A member asking for ``count`` GPUs of at least ``memory`` (no request when memory is '')."""
    out: dict[str, Any] = {
        "role": role,
        "template": {
            "spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.23.0"}]}
        },
        **extra,
    }
    if memory:
        cel = f'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("{memory}")) >= 0\n'
        out["nodeSelector"] = {
            "devices": [{"name": "gpu", "count": count, "selectors": [{"cel": cel}]}]
        }
    return out


def model_deployment(
    name: str = "qwen-demo",
    replicas: int = 1,
    *,
    engines: Sequence[Mapping[str, Any]] | None = None,
    selector: Mapping[str, str] | None = None,
    cache: str | None = None,
    tolerations: Sequence[Mapping[str, str]] | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A ModelDeployment (the getting-started one by default)."""
    spec: dict[str, Any] = {
        "engines": [dict(e) for e in engines or [{"name": "qwen", "members": [member()]}]]
    }
    if selector:
        spec["clusterSelector"] = {"matchLabels": dict(selector)}
    if cache:
        spec["modelCacheRef"] = {"name": cache}
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    template: dict[str, Any] = {"spec": spec}
    if labels:
        template["metadata"] = {"labels": dict(labels)}
    return {
        "apiVersion": API,
        "kind": "ModelDeployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": replicas, "template": template},
    }


def model_cache(name: str, selector: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A ModelCache, staged where its selector says."""
    spec: dict[str, Any] = {
        "source": "HuggingFace",
        "huggingFace": {"repo": "Qwen/Qwen3", "sizeGiB": 100},
    }
    if selector:
        spec["clusterSelector"] = {"matchLabels": dict(selector)}
    return {
        "apiVersion": API,
        "kind": "ModelCache",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }


def other_replica(
    deployment: str, cluster: str, pool: str, *, namespace: str = "other-team"
) -> dict[str, Any]:
    """Another deployment's one-GPU replica, charging one node of ``pool``."""
    return {
        "apiVersion": API,
        "kind": "ModelReplica",
        "metadata": {
            "name": naming.replica_name(deployment, cluster, 0),
            "namespace": namespace,
            "labels": {
                api.DEPLOYMENT_LABEL: deployment,
                api.CLUSTER_LABEL: cluster,
                api.INDEX_LABEL: "0",
            },
        },
        "spec": {
            "clusterName": cluster,
            "engines": [
                {
                    "name": "e",
                    "members": [
                        {
                            "role": "Standalone",
                            "nodePoolName": pool,
                            "deviceRequests": [
                                {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 1}
                            ],
                            "template": {"spec": {"containers": [{"name": "engine"}]}},
                        }
                    ],
                }
            ],
        },
    }


def call(
    xr: Mapping[str, Any],
    clusters: Sequence[Mapping[str, Any]] = (),
    replicas: Sequence[Mapping[str, Any]] = (),
    *,
    caches: Sequence[Mapping[str, Any]] | None = None,
    observed: Mapping[str, Mapping[str, Any]] | None = None,
    answered: bool = True,
) -> fnv1.RunFunctionResponse:
    """Run the function as Crossplane's second call does, with the fleet answered."""
    required: dict[str, Sequence[Mapping[str, Any]]] = {}
    if answered:
        required = {planning.CLUSTERS: clusters, planning.REPLICAS: replicas}
        if caches is not None:
            required[planning.CACHE] = caches
    req = request(xr, observed=observed, required=required)
    for name in required:
        req.required_resources[name].SetInParent()  # answered, even when empty
    return runtime.run(req, registry.COMPOSERS)


def call_answered(
    xr: Mapping[str, Any],
    required: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    observed: Mapping[str, Mapping[str, Any]] | None = None,
) -> fnv1.RunFunctionResponse:
    """Run the function with exactly these requirements answered (each even when empty)."""
    req = request(xr, observed=observed, required=required)
    for name in required:
        req.required_resources[name].SetInParent()
    return runtime.run(req, registry.COMPOSERS)


def desired(rsp: fnv1.RunFunctionResponse) -> dict[str, dict[str, Any]]:
    return {k: kit.struct_to_dict(v.resource) for k, v in rsp.desired.resources.items()}


def of_kind(rsp: fnv1.RunFunctionResponse, kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in desired(rsp).items() if v["kind"] == kind}


def status(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    return dict(kit.struct_to_dict(rsp.desired.composite.resource).get("status", {}))


def events(rsp: fnv1.RunFunctionResponse, severity: int = fnv1.SEVERITY_WARNING) -> list[str]:
    return [r.message for r in rsp.results if r.severity == severity]


def as_fleet(rsp: fnv1.RunFunctionResponse, *, ready: bool = False) -> list[dict[str, Any]]:
    """The composed ModelReplicas as they then exist in the fleet (optionally Ready)."""
    out = []
    for composed in of_kind(rsp, "ModelReplica").values():
        replica = copy.deepcopy(composed)
        if ready:
            replica["status"] = ready_status(replica)
        out.append(replica)
    return out


def ready_status(replica: Mapping[str, Any]) -> dict[str, Any]:
    """The status of a Ready replica as its function writes it: Ready, and the template
    hash it was judged Ready on (its label's), when it carries one."""
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True"}]}
    template = ((replica.get("metadata") or {}).get("labels") or {}).get(api.TEMPLATE_HASH_LABEL)
    if template:
        status[api.READY_TEMPLATE_FIELD] = template
    return status
