"""NebiusCluster: the mk8s resources, then the kubeconfig it writes and the identity it pairs."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import yaml
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit, registry, runtime
from modelplane.dev import render

from tests.requests import conditions, request

REFERENCE = render.ROOT / "examples" / "reference" / "nebiusclusters.yaml"
XR: dict[str, Any] = {
    "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
    "kind": "NebiusCluster",
    "metadata": {"name": "nebius-eu-north", "namespace": "modelplane-system"},
    "spec": {
        "nodePools": [
            {
                "name": "gpu-h100",
                "nodeCount": 1,
                "platform": "gpu-h100-sxm",
                "preset": "1gpu-16vcpu-200gb",
                "gpu": {"driversPreset": "cuda13.0"},
            }
        ],
    },
}
CONFIG = {
    "apiVersion": "nebius.m.upbound.io/v1beta1",
    "kind": "ClusterProviderConfig",
    "metadata": {"name": "default"},
    "spec": {
        "credentials": {
            "source": "Secret",
            "secretRef": {
                "name": "nebius-credentials",
                "namespace": "crossplane-system",
                "key": "credentials.json",
            },
        },
        "identity": {"type": "ServiceAccount"},
        "projectID": "project-e00abc",
    },
}
CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
READY_CLUSTER = {
    "status": {
        "conditions": [{"type": "Ready", "status": "True"}],
        "atProvider": {
            "status": {
                "controlPlane": {
                    "endpoints": {"publicEndpoint": "https://pu.mk8scluster-e00abc.nebius.cloud"},
                    "auth": {"clusterCaCertificate": CA},
                }
            }
        },
    }
}
READY = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
ACCESS = ("kubeconfig", "kubernetes-provider-config", "storage-class")


def _run(
    observed: dict[str, Any] | None = None,
    configs: list[dict[str, Any]] | None = None,
    xr: dict[str, Any] = XR,
) -> fnv1.RunFunctionResponse:
    required = {"credentials": [CONFIG] if configs is None else configs}
    return runtime.run(request(xr, observed=observed, required=required), registry.COMPOSERS)


def _status(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    return dict(kit.struct_to_dict(rsp.desired.composite.resource).get("status", {}))


def test_nebius_cluster_has_a_function() -> None:
    assert registry.kind_for("nebiuscluster") == "NebiusCluster"


def test_first_call_only_asks_for_the_provider_config() -> None:
    rsp = runtime.run(request(XR), registry.COMPOSERS)
    wanted = rsp.requirements.resources["credentials"]
    assert (wanted.api_version, wanted.kind, wanted.match_name) == (
        "nebius.m.upbound.io/v1beta1",
        "ClusterProviderConfig",
        "default",
    )
    assert len(rsp.desired.resources) == 0


def test_a_namespaced_provider_config_is_asked_for_in_the_cluster_s_namespace() -> None:
    xr = {**XR, "spec": {**XR["spec"], "credentials": {"kind": "ProviderConfig", "name": "eu"}}}
    wanted = runtime.run(request(xr), registry.COMPOSERS).requirements.resources["credentials"]
    assert (wanted.kind, wanted.match_name, wanted.namespace) == (
        "ProviderConfig",
        "eu",
        "modelplane-system",
    )


def test_before_the_cluster_exists_everything_but_access_is_composed() -> None:
    rsp = _run()
    assert sorted(rsp.desired.resources) == [
        "cluster",
        "filesystem",
        "network",
        "node-init",
        "nodegroup-gpu-h100",
        "nodegroup-system",
        "pool",
        "subnet",
    ]
    status = _status(rsp)
    assert status["cache"] == {"storageClassName": "modelplane-rwx-fs"}
    assert status["identitySecretRef"] == {
        "name": "nebius-credentials",
        "namespace": "crossplane-system",
        "key": "credentials.json",
        "type": "NebiusServiceAccountCredentials",
    }
    assert "kubeconfigSecretRef" not in status
    got = conditions(rsp)
    assert got["KubeconfigReady"][:2] == ("False", "WaitingForCluster")
    assert got["IdentityReady"][0] == "True"
    filesystem = kit.struct_to_dict(rsp.desired.resources["filesystem"].resource)
    assert filesystem["spec"]["forProvider"]["sizeGibibytes"] == 2048  # the XRD's default


def test_a_ready_cluster_brings_its_kubeconfig_and_the_storage_class() -> None:
    rsp = _run({"cluster": READY_CLUSTER})
    assert all(key in rsp.desired.resources for key in ACCESS)
    secret = kit.struct_to_dict(rsp.desired.resources["kubeconfig"].resource)
    assert (secret["apiVersion"], secret["kind"]) == ("v1", "Secret")
    config = json.loads(base64.b64decode(secret["data"]["kubeconfig"]))
    assert (
        config["clusters"][0]["cluster"]["server"] == "https://pu.mk8scluster-e00abc.nebius.cloud"
    )
    assert "kubeconfigSecretRef" not in _status(rsp)  # not until the Secret exists
    written = {"cluster": READY_CLUSTER, "kubeconfig": {**secret, **READY}}
    status = _status(_run(written))
    assert status["kubeconfigSecretRef"] == {
        "name": "nebius-eu-north-kubeconfig",
        "namespace": "modelplane-system",
        "key": "kubeconfig",
    }


def test_a_ready_cluster_without_its_endpoint_says_so() -> None:
    rsp = _run({"cluster": READY})
    assert not any(key in rsp.desired.resources for key in ACCESS)
    assert conditions(rsp)["KubeconfigReady"][:2] == ("False", "WaitingForEndpoint")


def test_without_credentials_the_kubeconfig_is_written_but_nothing_reaches_the_cluster() -> None:
    rsp = _run({"cluster": READY_CLUSTER}, configs=[])
    assert "kubeconfig" in rsp.desired.resources
    assert "kubernetes-provider-config" not in rsp.desired.resources
    assert "identitySecretRef" not in _status(rsp)
    assert conditions(rsp)["IdentityReady"][:2] == ("False", "WaitingForCredentials")
    warnings = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING]
    assert warnings == [
        "Nebius ClusterProviderConfig default is missing or reads no credentials Secret"
    ]


def test_access_stays_while_the_cluster_flaps() -> None:
    settled = _run({"cluster": READY_CLUSTER})
    observed: dict[str, Any] = {
        key: {**kit.struct_to_dict(settled.desired.resources[key].resource), **READY}
        for key in ACCESS
    }
    observed["cluster"] = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    rsp = _run(observed)
    assert all(key in rsp.desired.resources for key in ACCESS)
    assert _status(rsp)["kubeconfigSecretRef"]["name"] == "nebius-eu-north-kubeconfig"


def test_malformed_spec_is_a_fatal_result_not_a_crash() -> None:
    rsp = _run(xr={**XR, "spec": {"nodePools": [{"name": "gpu"}]}})
    assert [r.severity for r in rsp.results] == [fnv1.SEVERITY_FATAL]


@pytest.mark.crank
def test_the_reference_nebius_cluster_renders(functions: render.Functions) -> None:
    (xr,) = [d for d in yaml.safe_load_all(REFERENCE.read_text()) if d]
    out = render.render(xr, functions)
    groups = {
        d["metadata"]["name"]: d["spec"]["forProvider"] for d in out if d["kind"] == "NodeGroup"
    }
    system = groups["inference-eu-north-nodegroup-system"]
    assert system["template"]["resources"] == {"platform": "cpu-d3", "preset": "8vcpu-32gb"}
    assert system["fixedNodeCount"] == 2
    gpu = groups["inference-eu-north-nodegroup-gpu-h100"]
    assert gpu["autoscaling"] == {"maxNodeCount": 8, "minNodeCount": 0}
    assert gpu["template"]["gpuSettings"] == {"driversPreset": "cuda13.0"}
    (fabric,) = [d for d in out if d["kind"] == "GpuCluster"]
    assert fabric["spec"]["forProvider"]["infinibandFabric"] == "fabric-2"
    (cluster,) = [d for d in out if d["kind"] == "Cluster"]
    assert cluster["spec"]["forProvider"]["controlPlane"]["version"] == "1.34"
