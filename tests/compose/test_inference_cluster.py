"""InferenceCluster: publish pools, provision or adopt, install the serving stack, step by step."""

from __future__ import annotations

from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import registry, server
from modelplane.compose import _kit as kit

from tests.requests import conditions, request

CLASS: dict[str, Any] = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "InferenceClass",
    "metadata": {"name": "l4-1x-g6"},
    "spec": {
        "devices": [
            {
                "name": "gpu",
                "driver": "gpu.nvidia.com",
                "deviceClassName": "gpu.nvidia.com",
                "count": 1,
            }
        ],
        "provisioning": {"provider": "EKS", "eks": {"instanceType": "g6.xlarge"}},
    },
}


def _cluster(source: str = "EKS", class_name: str = "l4-1x-g6") -> dict[str, Any]:
    blocks: dict[str, dict[str, Any]] = {
        "EKS": {"eks": {"region": "us-east-1"}},
        "Existing": {"existing": {"secretRef": {"name": "byo-kubeconfig", "key": "kubeconfig"}}},
    }
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": "eks-us-east"},
        "spec": {
            "cluster": {"source": source, **blocks[source]},
            "nodePools": [{"name": "gpu-l4", "className": class_name, "nodeCount": 1}],
        },
    }


def _run(
    xr: dict[str, Any], observed: dict[str, Any] | None = None, classes: list[Any] | None = None
) -> fnv1.RunFunctionResponse:
    req = request(
        xr, observed=observed, required={"classes": [CLASS] if classes is None else classes}
    )
    return server.run(req, registry.COMPOSERS)


def _status(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    return dict(kit.struct_to_dict(rsp.desired.composite.resource).get("status", {}))


def test_first_call_only_asks_for_the_classes() -> None:
    rsp = server.run(request(_cluster()), registry.COMPOSERS)
    assert "classes" in rsp.requirements.resources
    assert len(rsp.desired.resources) == 0


def test_provisioned_cluster_composes_its_cloud_cluster_and_waits_for_the_kubeconfig() -> None:
    rsp = _run(_cluster())
    assert sorted(rsp.desired.resources) == ["cluster"]
    eks = kit.struct_to_dict(rsp.desired.resources["cluster"].resource)
    assert (eks["kind"], eks["metadata"]) == (
        "EKSCluster",
        {"name": "eks-us-east", "namespace": "modelplane-system"},
    )
    assert eks["spec"]["nodePools"][0]["instanceType"] == "g6.xlarge"
    assert _status(rsp)["gpuPools"] == [
        {"name": "gpu-l4", "nodes": 1, "devices": CLASS["spec"]["devices"]}
    ]
    assert conditions(rsp)["BackendReady"][1] == "WaitingForCluster"


def test_kubeconfig_brings_provider_configs_and_the_serving_stack_then_the_gateway() -> None:
    cloud = {
        "apiVersion": "x",
        "kind": "EKSCluster",
        "metadata": {"name": "eks-us-east"},
        "status": {
            "kubeconfigSecretRef": {
                "name": "eks-us-east-kubeconfig",
                "namespace": "modelplane-system",
                "key": "kubeconfig",
            },
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    stack = {
        "apiVersion": "x",
        "kind": "ServingStack",
        "metadata": {"name": "eks-us-east"},
        "status": {
            "gateway": {"address": "203.0.113.10"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    rsp = _run(_cluster(), observed={"cluster": cloud, "serving-stack": stack})
    assert sorted(rsp.desired.resources) == [
        "cluster",
        "provider-config-helm",
        "provider-config-kubernetes",
        "serving-stack",
    ]
    pc = kit.struct_to_dict(rsp.desired.resources["provider-config-kubernetes"].resource)
    assert pc["spec"]["credentials"]["secretRef"] == {
        "namespace": "modelplane-system",
        "name": "eks-us-east-kubeconfig",
        "key": "kubeconfig",
    }
    status = _status(rsp)
    assert status["gateway"] == {"address": "203.0.113.10"}
    assert status["providerConfigRef"] == {"name": "eks-us-east"}
    assert conditions(rsp)["ClusterReady"][0] == "True"
    assert conditions(rsp)["BackendReady"][0] == "True"


def test_existing_cluster_uses_its_secret_at_once() -> None:
    rsp = _run(_cluster("Existing"))
    assert sorted(rsp.desired.resources) == [
        "provider-config-helm",
        "provider-config-kubernetes",
        "serving-stack",
    ]
    assert conditions(rsp)["ClusterReady"] == (
        "True",
        "Existing",
        "reached through its kubeconfig Secret",
    )


def test_missing_class_is_reported_and_keeps_the_running_cluster() -> None:
    running = {
        "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
        "kind": "EKSCluster",
        "metadata": {"name": "eks-us-east", "namespace": "modelplane-system", "uid": "u"},
        "spec": {"region": "us-east-1", "nodePools": []},
        "status": {"conditions": []},
    }
    rsp = _run(_cluster(class_name="gone"), observed={"cluster": running}, classes=[])
    kept = kit.struct_to_dict(rsp.desired.resources["cluster"].resource)
    assert kept == {
        "apiVersion": running["apiVersion"],
        "kind": "EKSCluster",
        "metadata": {"name": "eks-us-east", "namespace": "modelplane-system"},
        "spec": {"region": "us-east-1", "nodePools": []},
    }
    assert _status(rsp)["gpuPools"] == []
    assert conditions(rsp)["ClusterReady"][:2] == ("False", "ClassNotFound")
    warnings = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING]
    assert warnings == ["pool gpu-l4: InferenceClass gone not found"]
