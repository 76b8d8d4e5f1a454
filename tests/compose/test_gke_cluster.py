"""GKECluster: compose the GCP resources, then report the kubeconfig and identity Secrets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit, registry, runtime
from modelplane.dev import render

from tests.requests import conditions, request

READY = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]}}
ACCOUNT = {"status": {"atProvider": {"email": "n@proj.iam.gserviceaccount.com", "project": "proj"}}}
XR: dict[str, Any] = {
    "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
    "kind": "GKECluster",
    "metadata": {"name": "starter", "namespace": "modelplane-system"},
    "spec": {
        "region": "us-central1",
        "nodePools": [
            {
                "name": "gpu-l4",
                "nodeCount": 1,
                "zones": ["us-central1-a"],
                "machineType": "g2-standard-8",
                "gpu": {"acceleratorType": "nvidia-l4", "acceleratorCount": 1},
            }
        ],
    },
}
KUBECONFIG = {"name": "starter-kubeconfig", "namespace": "modelplane-system", "key": "kubeconfig"}
IDENTITY = {
    "name": "starter-identity",
    "namespace": "modelplane-system",
    "key": "private_key",
    "type": "GoogleApplicationCredentials",
}


GCP_CONFIG = {
    "apiVersion": "gcp.m.upbound.io/v1beta1",
    "kind": "ClusterProviderConfig",
    "metadata": {"name": "default"},
    "spec": {"projectID": "my-project", "credentials": {"source": "Secret"}},
}


def _run(
    observed: dict[str, Any], configs: list[dict[str, Any]] | None = None
) -> fnv1.RunFunctionResponse:
    required = {"credentials": [GCP_CONFIG] if configs is None else configs}
    return runtime.run(request(XR, observed=observed, required=required), registry.COMPOSERS)


@dataclass(frozen=True)
class Case:
    reason: str
    observed: dict[str, Any]
    want_kubeconfig: dict[str, str] | None
    want_identity: dict[str, str] | None
    want_grant: bool


CASES = [
    Case("nothing observed yet", {}, None, None, False),
    Case("account known: the grant", {"service-account": ACCOUNT}, None, None, True),
    Case("cluster ready only", {"cluster": READY}, KUBECONFIG, None, False),
    Case("key ready only", {"service-account-key": READY}, None, IDENTITY, False),
    Case(
        "everything ready",
        {"cluster": READY, "service-account-key": READY, "service-account": ACCOUNT},
        KUBECONFIG,
        IDENTITY,
        True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.reason for c in CASES])
def test_secrets_are_reported_only_once_their_sources_are_ready(case: Case) -> None:
    rsp = _run(case.observed)
    status = kit.struct_to_dict(rsp.desired.composite.resource)["status"]
    assert status.get("kubeconfigSecretRef") == case.want_kubeconfig
    assert status.get("identitySecretRef") == case.want_identity
    assert status["cache"] == {"storageClassName": "modelplane-rwx-filestore"}
    assert ("iam-container-admin" in rsp.desired.resources) is case.want_grant
    # What goes on the cluster needs both its kubeconfig and the key to reach it with.
    both = case.want_kubeconfig is not None and case.want_identity is not None
    assert ("storage-class" in rsp.desired.resources) is both
    assert ("kubernetes-provider-config" in rsp.desired.resources) is both
    got = conditions(rsp)
    assert (got["KubeconfigReady"][0] == "True") is (case.want_kubeconfig is not None)
    assert (got["IdentityReady"][0] == "True") is (case.want_identity is not None)


def test_first_call_only_asks_for_the_provider_config() -> None:
    rsp = runtime.run(request(XR), registry.COMPOSERS)
    wanted = rsp.requirements.resources["credentials"]
    assert (wanted.api_version, wanted.kind, wanted.match_name) == (
        "gcp.m.upbound.io/v1beta1",
        "ClusterProviderConfig",
        "default",
    )
    assert len(rsp.desired.resources) == 0


@pytest.mark.parametrize(
    ("configs", "observed", "want"),
    [
        pytest.param([GCP_CONFIG], {}, "my-project.svc.id.goog", id="from-the-provider-config"),
        pytest.param([], {"service-account": ACCOUNT}, "proj.svc.id.goog", id="from-the-account"),
        pytest.param([], {}, None, id="unknown-yet"),
    ],
)
def test_workload_identity_follows_the_project(
    configs: list[dict[str, Any]], observed: dict[str, Any], want: str | None
) -> None:
    rsp = _run(observed, configs)
    cluster = kit.struct_to_dict(rsp.desired.resources["cluster"].resource)["spec"]["forProvider"]
    assert cluster.get("workloadIdentityConfig", {}).get("workloadPool") == want


def test_what_is_on_the_cluster_stays_while_the_key_flaps() -> None:
    ready = {"cluster": READY, "service-account-key": READY, "service-account": ACCOUNT}
    first = _run(ready)
    observed = {
        **ready,
        **{
            k: {**kit.struct_to_dict(first.desired.resources[k].resource), **READY}
            for k in ("storage-class", "kubernetes-provider-config")
        },
    }
    observed["service-account-key"] = {"status": {"conditions": []}}
    rsp = _run(observed)
    assert "storage-class" in rsp.desired.resources
    assert "kubernetes-provider-config" in rsp.desired.resources


def test_defaults_fill_the_system_pool_and_version() -> None:
    rsp = _run({})
    system = kit.struct_to_dict(rsp.desired.resources["nodepool-system"].resource)
    assert system["spec"]["forProvider"]["nodeConfig"]["machineType"] == "e2-standard-4"
    cluster = kit.struct_to_dict(rsp.desired.resources["cluster"].resource)
    assert cluster["spec"]["forProvider"]["minMasterVersion"] == "1.35"


@pytest.mark.crank
def test_the_getting_started_gke_cluster_renders(functions: render.Functions) -> None:
    platform = (
        render.ROOT
        / "examples"
        / "getting-started"
        / "build-the-platform"
        / "gke"
        / "platform.yaml"
    )
    docs = [d for d in yaml.safe_load_all(platform.read_text()) if d]
    cluster = next(d for d in docs if d["kind"] == "InferenceCluster")
    classes = [d for d in docs if d["kind"] == "InferenceClass"]
    xr = next(
        d for d in render.render(cluster, functions, required=classes) if d["kind"] == "GKECluster"
    )
    out = render.render(xr, functions)
    pools = {
        d["metadata"]["name"]: d["spec"]["forProvider"] for d in out if d["kind"] == "NodePool"
    }
    gpu = pools[f"{xr['metadata']['name']}-nodepool-gpu-l4"]
    assert gpu["nodeConfig"]["labels"]["modelplane.ai/pool"] == "gpu-l4"
    assert (
        gpu["nodeConfig"]["guestAccelerator"][0]["type"]
        == xr["spec"]["nodePools"][0]["gpu"]["acceleratorType"]
    )
    kinds = sorted({d["kind"] for d in out[1:]})
    assert kinds == [
        "Cluster",
        "Network",
        "NodePool",
        "ProjectService",
        "ServiceAccount",
        "ServiceAccountKey",
        "Subnetwork",
    ]
    assert "kubeconfigSecretRef" not in out[0]["status"]
