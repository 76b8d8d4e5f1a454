"""InferenceCluster: publish pools, provision or adopt, install the serving stack, step by step."""

from __future__ import annotations

from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit, registry, runtime
from modelplane.domain import naming

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
    xr: dict[str, Any],
    observed: dict[str, Any] | None = None,
    classes: list[Any] | None = None,
    replicas: list[Any] | None = None,
    caches: list[Any] | None = None,
) -> fnv1.RunFunctionResponse:
    required = {
        "classes": [CLASS] if classes is None else classes,
        "replicas": replicas or [],
        "caches": caches or [],
        "observe-nodes": [],
        "observe-resource-slices": [],
    }
    return runtime.run(request(xr, observed=observed, required=required), registry.COMPOSERS)


def _status(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    return dict(kit.struct_to_dict(rsp.desired.composite.resource).get("status", {}))


def test_first_call_only_asks_for_the_classes_and_what_uses_the_cluster() -> None:
    rsp = runtime.run(request(_cluster()), registry.COMPOSERS)
    wanted = rsp.requirements.resources
    assert sorted(wanted) == [
        "caches",
        "classes",
        "observe-nodes",
        "observe-resource-slices",
        "replicas",
    ]
    # Every namespace's replicas labelled with this cluster, and every cache.
    assert dict(wanted["replicas"].match_labels.labels) == {"modelplane.ai/cluster": "eks-us-east"}
    assert not wanted["replicas"].HasField("namespace")
    assert (wanted["caches"].kind, dict(wanted["caches"].match_labels.labels)) == ("ModelCache", {})
    assert len(rsp.desired.resources) == 0


def test_a_long_named_cluster_asks_for_its_replicas_by_the_label_value_they_carry() -> None:
    xr = _cluster()
    xr["metadata"]["name"] = long = "eks-" + "us-east-" * 9  # 76 characters
    rsp = runtime.run(request(xr), registry.COMPOSERS)
    labels = dict(rsp.requirements.resources["replicas"].match_labels.labels)
    # What a ModelDeployment writes on a replica it places there (planning.managed_labels).
    assert labels == {"modelplane.ai/cluster": naming.label_value(long)}
    assert len(labels["modelplane.ai/cluster"]) == 63


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
        "observe-nodes",
        "observe-resource-slices",
        "order-serving-stack-uses-cluster",  # the stack exists: it holds the cloud cluster
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
        "observe-nodes",
        "observe-resource-slices",
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


def _ready_cloud(status: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "x",
        "kind": "GKECluster",
        "metadata": {"name": "eks-us-east"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], **status},
    }


KUBECONFIG = {"name": "c-kubeconfig", "namespace": "modelplane-system", "key": "kubeconfig"}


def test_provider_configs_pair_the_kubeconfig_with_the_identity_the_cloud_publishes() -> None:
    identity = {
        "name": "c-identity",
        "namespace": "modelplane-system",
        "key": "private_key",
        "type": "GoogleApplicationCredentials",
    }
    cloud = _ready_cloud({"kubeconfigSecretRef": KUBECONFIG, "identitySecretRef": identity})
    rsp = _run(_cluster(), observed={"cluster": cloud})
    for key in ("provider-config-kubernetes", "provider-config-helm"):
        spec = kit.struct_to_dict(rsp.desired.resources[key].resource)["spec"]
        assert spec["credentials"]["secretRef"] == KUBECONFIG
        assert spec["identity"] == {
            "type": "GoogleApplicationCredentials",
            "source": "Secret",
            "secretRef": {
                "name": "c-identity",
                "namespace": "modelplane-system",
                "key": "private_key",
            },
        }
    bare = _run(_cluster(), observed={"cluster": _ready_cloud({"kubeconfigSecretRef": KUBECONFIG})})
    spec = kit.struct_to_dict(bare.desired.resources["provider-config-helm"].resource)["spec"]
    assert "identity" not in spec  # EKS, AKS, Vultr: the kubeconfig alone reaches the cluster


def test_an_existing_cluster_may_reach_its_cluster_through_aws_web_identity() -> None:
    xr = _cluster("Existing")
    xr["spec"]["cluster"]["existing"] = {
        "secretRef": {"name": "byo-kubeconfig"},  # key defaults to kubeconfig
        "identitySecretRef": {
            "name": "byo-token",
            "key": "token",
            "type": "AWSWebIdentityCredentials",
        },
    }
    rsp = _run(xr)
    spec = kit.struct_to_dict(rsp.desired.resources["provider-config-kubernetes"].resource)["spec"]
    assert spec["credentials"]["secretRef"]["key"] == "kubeconfig"
    assert spec["identity"]["type"] == "AWSWebIdentityCredentials"
    assert spec["identity"]["secretRef"] == {
        "name": "byo-token",
        "namespace": "modelplane-system",
        "key": "token",
    }


def test_the_cloud_block_passes_its_version_and_credentials_to_the_cloud_cluster() -> None:
    xr = _cluster()
    xr["spec"]["cluster"]["eks"] |= {
        "kubernetesVersion": "1.36",
        "credentials": {"kind": "ProviderConfig", "name": "team-a"},
    }
    eks = kit.struct_to_dict(_run(xr).desired.resources["cluster"].resource)["spec"]
    assert eks["kubernetesVersion"] == "1.36"
    assert eks["credentials"] == {"kind": "ProviderConfig", "name": "team-a"}


def _replica(name: str, cluster: str, namespace: str = "ml-team") -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"modelplane.ai/cluster": cluster},
        },
    }


def _cache(name: str, *clusters: str) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelCache",
        "metadata": {"name": name, "namespace": "ml-team"},
        "status": {"clusters": [{"name": c, "phase": "Ready"} for c in clusters]},
    }


def test_nothing_uses_the_cluster_no_cluster_usage() -> None:
    rsp = _run(_cluster(), caches=[_cache("other", "gke-us-central")])
    assert "cluster-usage" not in rsp.desired.resources
    assert conditions(rsp)["InUse"][:2] == ("False", "Unused")


def test_replicas_and_caches_hold_the_cluster_with_a_cluster_usage() -> None:
    rsp = _run(
        _cluster(),
        replicas=[_replica("qwen-92535", "eks-us-east"), _replica("b", "eks-us-east", "team-b")],
        caches=[_cache("qwen", "eks-us-east", "gke-us-central"), _cache("other", "gke-us-central")],
    )
    usage = kit.struct_to_dict(rsp.desired.resources["cluster-usage"].resource)
    assert usage["apiVersion"] == "protection.crossplane.io/v1beta1"
    assert usage["kind"] == "ClusterUsage"
    assert usage["metadata"] == {"name": "eks-us-east-in-use"}  # cluster-scoped, like its cluster
    assert usage["spec"]["of"] == {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "resourceRef": {"name": "eks-us-east"},
    }
    assert usage["spec"]["replayDeletion"] is True
    assert usage["spec"]["reason"]
    # Ready once it exists: a Usage has no readiness of its own.
    again = _run(
        _cluster(), observed={"cluster-usage": usage}, replicas=[_replica("a", "eks-us-east")]
    )
    assert again.desired.resources["cluster-usage"].ready == fnv1.READY_TRUE
    status, reason, message = conditions(rsp)["InUse"]
    assert (status, reason) == ("True", "InUse")
    assert message == (
        "deletion is blocked: used by ModelCache ml-team/qwen; ModelReplica ml-team/qwen-92535; "
        "ModelReplica team-b/b"
    )


def test_the_last_user_gone_the_cluster_usage_goes() -> None:
    held = _run(_cluster(), replicas=[_replica("qwen-92535", "eks-us-east")])
    usage = kit.struct_to_dict(held.desired.resources["cluster-usage"].resource)
    rsp = _run(_cluster(), observed={"cluster-usage": usage})
    assert "cluster-usage" not in rsp.desired.resources  # Crossplane deletes it: delete works


def _provisioned_observed() -> dict[str, Any]:
    """The cloud cluster (with its kubeconfig), provider configs and stack, all made."""
    cloud = {
        "kind": "EKSCluster",
        "status": {
            "kubeconfigSecretRef": {
                "name": "eks-us-east-kubeconfig",
                "namespace": "modelplane-system",
                "key": "kubeconfig",
            },
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    made = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    return {
        "cluster": cloud,
        "serving-stack": made,
        "provider-config-helm": {"kind": "ClusterProviderConfig"},
        "provider-config-kubernetes": {"kind": "ClusterProviderConfig"},
    }


def test_teardown_keeps_the_cloud_cluster_until_what_reaches_it_is_gone() -> None:
    """The provider configs and the serving stack each hold the cloud cluster with a Usage
    (``by`` them, ``of`` the EKSCluster, ``replayDeletion``): deleting the InferenceCluster
    removes the Releases and Objects through a live kubeconfig, then the cluster."""
    rsp = _run(_cluster(), observed=_provisioned_observed())
    usages = {
        k: kit.struct_to_dict(r.resource)
        for k, r in rsp.desired.resources.items()
        if k.startswith("order-")
    }
    assert sorted(usages) == [
        "order-provider-config-helm-uses-cluster",
        "order-provider-config-kubernetes-uses-cluster",
        "order-serving-stack-uses-cluster",
    ]
    helm = usages["order-provider-config-helm-uses-cluster"]
    assert helm == {
        "apiVersion": "protection.crossplane.io/v1beta1",
        "kind": "Usage",  # in the cloud cluster's namespace: a ClusterUsage can't name it
        "metadata": {
            "name": "eks-us-east-provider-config-helm-uses-cluster",
            "namespace": "modelplane-system",
        },
        "spec": {
            "of": {
                "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
                "kind": "EKSCluster",
                "resourceRef": {"name": "eks-us-east"},
            },
            "by": {
                "apiVersion": "helm.m.crossplane.io/v1beta1",
                "kind": "ClusterProviderConfig",
                "resourceRef": {"name": "eks-us-east"},
            },
            "replayDeletion": True,
        },
    }
    for key in usages:
        assert rsp.desired.resources[key].ready == fnv1.READY_TRUE  # never gates Ready


def test_an_adopted_cluster_releases_the_cloud_cluster_and_its_usages() -> None:
    observed = _provisioned_observed()
    observed["order-serving-stack-uses-cluster"] = {"kind": "Usage"}
    existing = _cluster("Existing")
    rsp = _run(existing, observed=observed)
    assert "cluster" not in rsp.desired.resources
    assert not [k for k in rsp.desired.resources if k.startswith("order-")]
    warnings = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING]
    assert not [w for w in warnings if "order-" in w], warnings  # released, not held
