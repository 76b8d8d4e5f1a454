"""EKSCluster: compose the AWS resources, then report the kubeconfig and the cache class."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit, registry, runtime
from modelplane.dev import render

from tests.requests import conditions, request

READY = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]}}
XR: dict[str, Any] = {
    "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
    "kind": "EKSCluster",
    "metadata": {"name": "eks-us-east", "namespace": "modelplane-system"},
    "spec": {
        "region": "us-east-1",
        "nodePools": [
            {
                "name": "gpu-l4",
                "nodeCount": 1,
                "minNodeCount": 1,
                "maxNodeCount": 3,
                "zones": ["us-east-1b"],
                "instanceType": "g6.xlarge",
                "diskSizeGb": 50,
                "accelerator": {"type": "nvidia-l4", "count": 1},
            }
        ],
    },
}


def _run(
    observed: dict[str, Any] | None = None, xr: dict[str, Any] | None = None
) -> fnv1.RunFunctionResponse:
    return runtime.run(request(xr or XR, observed=observed), registry.COMPOSERS)


def _status(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    return dict(kit.struct_to_dict(rsp.desired.composite.resource).get("status", {}))


@dataclass(frozen=True)
class Case:
    reason: str
    observed: dict[str, Any]
    want_kubeconfig: dict[str, str] | None
    want_condition: tuple[str, str]
    want_extra: list[str] = field(default_factory=list)


KUBECONFIG = {
    "name": "eks-us-east-kubeconfig",
    "namespace": "modelplane-system",
    "key": "kubeconfig",
}
CASES = [
    Case("nothing observed yet", {}, None, ("False", "WaitingForCluster")),
    Case(
        "cluster ready, auth not yet",
        {"cluster": READY, "cluster-auth": {}},
        None,
        ("False", "WaitingForClusterAuth"),
    ),
    Case(
        "auth ready, file system unknown",
        {"cluster": READY, "cluster-auth": READY},
        KUBECONFIG,
        ("True", "Available"),
        ["kubernetes-provider-config"],
    ),
    Case(
        "auth ready, file system created",
        {
            "cluster": READY,
            "cluster-auth": READY,
            "efs": {"status": {"atProvider": {"id": "fs-1"}}},
        },
        KUBECONFIG,
        ("True", "Available"),
        ["kubernetes-provider-config", "storage-class"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.reason for c in CASES])
def test_kubeconfig_is_reported_only_once_the_cluster_auth_is_ready(case: Case) -> None:
    rsp = _run(case.observed)
    status = _status(rsp)
    assert status.get("kubeconfigSecretRef") == case.want_kubeconfig
    assert status["cache"] == {"storageClassName": "modelplane-rwx-efs"}
    assert conditions(rsp)["KubeconfigReady"][:2] == case.want_condition
    extra = sorted(
        k for k in rsp.desired.resources if k in ("kubernetes-provider-config", "storage-class")
    )
    assert extra == case.want_extra
    assert "nodegroup-gpu-l4" in rsp.desired.resources
    assert not rsp.results or all(r.severity != fnv1.SEVERITY_FATAL for r in rsp.results)


def test_defaults_fill_credentials_version_and_system_pool() -> None:
    rsp = _run()
    cluster = kit.struct_to_dict(rsp.desired.resources["cluster"].resource)
    assert cluster["spec"]["providerConfigRef"] == {
        "kind": "ClusterProviderConfig",
        "name": "default",
    }
    assert cluster["spec"]["forProvider"]["version"] == "1.35"
    system = kit.struct_to_dict(rsp.desired.resources["nodegroup-system"].resource)
    assert system["spec"]["forProvider"]["instanceTypes"] == ["m6i.xlarge"]


def test_the_same_request_gives_the_same_response() -> None:
    observed = {"cluster-auth": READY, "efs": {"status": {"atProvider": {"id": "fs-1"}}}}
    assert _run(observed).SerializeToString(deterministic=True) == _run(observed).SerializeToString(
        deterministic=True
    )


def test_too_many_zones_is_fatal_and_composes_nothing() -> None:
    pool = {**XR["spec"]["nodePools"][0], "zones": [f"us-east-1{c}" for c in "abcdefghi"]}
    rsp = _run(xr={**XR, "spec": {**XR["spec"], "nodePools": [pool]}})
    assert [r.severity for r in rsp.results] == [fnv1.SEVERITY_FATAL]
    assert "9 zones" in rsp.results[0].message
    assert len(rsp.desired.resources) == 0


GETTING_STARTED = render.ROOT / "examples" / "getting-started" / "build-the-platform"


def _cloud_cluster(functions: render.Functions, platform: Path, kind: str) -> dict[str, Any]:
    """Render the platform tab's InferenceCluster and return the cloud cluster it composes."""
    docs = [d for d in yaml.safe_load_all(platform.read_text()) if d]
    cluster = next(d for d in docs if d["kind"] == "InferenceCluster")
    classes = [d for d in docs if d["kind"] == "InferenceClass"]
    out = render.render(cluster, functions, required=classes)
    return next(d for d in out if d["kind"] == kind)


@pytest.mark.crank
def test_the_getting_started_eks_cluster_renders(functions: render.Functions) -> None:
    xr = _cloud_cluster(functions, GETTING_STARTED / "eks" / "platform.yaml", "EKSCluster")
    xr["metadata"].pop("labels", None)
    xr["metadata"].pop("ownerReferences", None)
    out = render.render(xr, functions)
    kinds = {(d["apiVersion"], d["kind"]) for d in out[1:]}
    assert ("eks.aws.m.upbound.io/v1beta1", "NodeGroup") in kinds
    assert ("eks.aws.m.upbound.io/v1beta1", "ClusterAuth") in kinds
    groups = {d["metadata"]["name"]: d for d in out if d["kind"] == "NodeGroup"}
    gpu = groups["eks-us-east-nodegroup-gpu-l4"]["spec"]["forProvider"]
    assert gpu["instanceTypes"] == ["g6.xlarge"]
    assert gpu["scalingConfig"] == {"desiredSize": 1, "maxSize": 1, "minSize": 1}
    assert gpu["diskSize"] == 50
    assert out[0]["status"]["cache"] == {"storageClassName": "modelplane-rwx-efs"}
    assert "kubeconfigSecretRef" not in out[0]["status"]


EFA_XR: dict[str, Any] = {
    **XR,
    "spec": {
        "region": "us-east-1",
        "nodePools": [
            {
                "name": "gpu-h200",
                "nodeCount": 2,
                "instanceType": "p5en.48xlarge",
                "fabric": {"type": "EFA"},
            }
        ],
    },
}


def _efa_observed(cluster_group: str | None, efa_group: str | None) -> dict[str, Any]:
    at: dict[str, Any] = {}
    if cluster_group:
        at["vpcConfig"] = {"clusterSecurityGroupId": cluster_group}
    observed: dict[str, Any] = {
        "cluster": {**READY, "status": {**READY["status"], "atProvider": at}}
    }
    if efa_group:
        observed["efa-security-group"] = {"status": {"atProvider": {"id": efa_group}}}
    return observed


def test_an_efa_pool_waits_for_the_security_groups_and_the_cluster_is_not_ready() -> None:
    rsp = _run(_efa_observed("sg-cluster", None), EFA_XR)
    assert "nodegroup-gpu-h200" not in rsp.desired.resources
    assert {"efa-security-group", "efa-ingress-self", "efa-egress-self"} <= set(
        rsp.desired.resources
    )
    assert conditions(rsp)["EFAReady"][:2] == ("False", "WaitingForSecurityGroups")
    assert rsp.desired.composite.ready == fnv1.READY_FALSE


def test_an_efa_pool_joins_both_groups_once_reported() -> None:
    rsp = _run(_efa_observed("sg-cluster", "sg-efa"), EFA_XR)
    template = kit.struct_to_dict(rsp.desired.resources["launch-template-gpu-h200"].resource)
    assert template["spec"]["forProvider"]["vpcSecurityGroupIds"] == ["sg-cluster", "sg-efa"]
    group = kit.struct_to_dict(rsp.desired.resources["nodegroup-gpu-h200"].resource)
    assert (
        group["spec"]["forProvider"]["launchTemplate"]["name"]
        == "eks-us-east-launch-template-gpu-h200"
    )
    assert conditions(rsp)["EFAReady"][0] == "True"


def test_an_efa_node_group_stays_while_the_group_ids_flap() -> None:
    made = _run(_efa_observed("sg-cluster", "sg-efa"), EFA_XR)
    observed = _efa_observed(None, None)
    for key in ("nodegroup-gpu-h200", "launch-template-gpu-h200"):
        observed[key] = kit.struct_to_dict(made.desired.resources[key].resource)
    rsp = _run(observed, EFA_XR)
    for key in ("nodegroup-gpu-h200", "launch-template-gpu-h200"):
        assert kit.struct_to_dict(rsp.desired.resources[key].resource) == observed[key]
