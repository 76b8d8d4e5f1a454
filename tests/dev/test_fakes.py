"""The fake-provider library (modelplane.dev.fakes): what each kind reports, per provider.

The loop tests run it through the harness; these pin the facts the e2e's real API server
holds it to (field shapes its CRDs declare, conditions Gateway API requires) and the
rules it applies on its own.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest
from modelplane.dev.fakes import admission, cloud, gateway, helm, kubernetes
from modelplane.dev.fakes.base import Obj, condition_is, conditions_of


def managed(api_version: str, kind: str, name: str = "c1", **for_provider: Any) -> Obj:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": "team", "uid": "u1"},
        "spec": {"forProvider": {"region": "us-west-2", **for_provider}},
    }


class Cluster:
    """A workload cluster for the library: what is missing, and what is there."""

    def __init__(self, blocked: list[str] | None = None, objects: Mapping[str, Obj] | None = None):
        self.name = "team/kubeconfig"
        self.blocked = blocked or []
        self.objects = dict(objects or {})

    def pods_blocked(self, manifest: Mapping[str, Any]) -> list[str]:
        return list(self.blocked)

    def installs(self, how: str, what: str) -> bool:
        return True

    def lookup(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.objects.get(f"{kind} {namespace}/{name}")


# --- cloud ------------------------------------------------------------------------------


def test_an_eks_cluster_reports_its_endpoint_and_security_group_as_the_crd_shapes_them() -> None:
    at, details = cloud.observe(managed("eks.aws.m.upbound.io/v1beta1", "Cluster"))
    assert at["status"] == "ACTIVE"
    assert at["endpoint"].startswith("https://")
    assert at["endpoint"].endswith(".eks.amazonaws.com")
    assert at["vpcConfig"]["clusterSecurityGroupId"].startswith("sg-")  # an object, not a list
    assert isinstance(at["certificateAuthority"], list)
    assert details == {}


def test_an_aks_cluster_reports_its_kubelet_identity_as_an_object() -> None:
    at, details = cloud.observe(
        managed("containerservice.azure.m.upbound.io/v1beta1", "KubernetesCluster")
    )
    assert isinstance(at["kubeletIdentity"], dict)  # the CRD's type: a list there is refused
    assert details["kubeconfig"] == details["attribute.kube_config_raw"]


@pytest.mark.parametrize(
    ("api_version", "kind", "keys"),
    [
        ("eks.aws.m.upbound.io/v1beta1", "ClusterAuth", {"kubeconfig", "server", "clusterCA", "token"}),
        ("container.gcp.m.upbound.io/v1beta2", "Cluster", {"kubeconfig"}),
        ("vke.vultr.m.upbound.io/v1beta1", "Kubernetes", {"kubeconfig", "attribute.kube_config"}),
        ("cloudplatform.gcp.m.upbound.io/v1beta1", "ServiceAccountKey",
         {"private_key", "attribute.private_key"}),
    ],
)  # fmt: skip
def test_connection_details_carry_the_keys_each_provider_publishes(
    api_version: str, kind: str, keys: set[str]
) -> None:
    _, details = cloud.observe(managed(api_version, kind))
    assert set(details) == keys


def test_vke_publishes_its_kubeconfig_base64_encoded_as_well() -> None:
    _, details = cloud.observe(managed("vke.vultr.m.upbound.io/v1beta1", "Kubernetes"))
    assert base64.b64decode(details["attribute.kube_config"]).decode() == details["kubeconfig"]


def test_aws_ids_carry_the_prefix_of_their_kind() -> None:
    for kind, prefix in (("VPC", "vpc-"), ("AccessPoint", "fsap-"), ("FileSystem", "fs-")):
        group = "efs" if kind != "VPC" else "ec2"
        at, _ = cloud.observe(managed(f"{group}.aws.m.upbound.io/v1beta1", kind))
        assert at["id"].startswith(prefix), kind
        assert at["arn"].endswith("/" + at["id"])


def test_a_gcp_resource_takes_its_project_from_its_provider_config() -> None:
    config = {"spec": {"projectID": "acme"}}
    obj = managed("cloudplatform.gcp.m.upbound.io/v1beta1", "ServiceAccount", name="sa")
    at, _ = cloud.observe(obj, config)
    assert at["email"] == "sa@acme.iam.gserviceaccount.com"
    own = managed("cloudplatform.gcp.m.upbound.io/v1beta1", "ServiceAccount", project="own")
    assert cloud.observe(own, config)[0]["project"] == "own"


def test_the_connection_secret_is_controlled_by_its_resource() -> None:
    owner = managed("eks.aws.m.upbound.io/v1beta1", "ClusterAuth")
    secret = cloud.connection_secret(owner, "conn", {"kubeconfig": "x"})
    assert secret["metadata"]["namespace"] == "team"
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert secret["data"] == {"kubeconfig": base64.b64encode(b"x").decode()}


def test_the_same_resource_is_reported_the_same_byte_for_byte() -> None:
    obj = managed("eks.aws.m.upbound.io/v1beta1", "Cluster")
    assert cloud.observe(obj) == cloud.observe(obj)


# --- helm -------------------------------------------------------------------------------


def test_a_release_reports_the_chart_version_deployed_without_its_v() -> None:
    release = {"spec": {"forProvider": {"chart": {"name": "lws", "version": "v0.7.0"}}}}
    assert helm.observe(release) == {
        "releaseDescription": "Install complete",
        "revision": 1,
        "state": "deployed",
        "version": "0.7.0",
    }
    assert "version" not in helm.observe({"spec": {"forProvider": {"chart": {"name": "x"}}}})


# --- kubernetes -------------------------------------------------------------------------


def deployment(replicas: int = 2, max_unavailable: int = 0) -> Obj:
    strategy = {"rollingUpdate": {"maxUnavailable": max_unavailable}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "n"},
        "spec": {"replicas": replicas, "strategy": strategy, "template": {"spec": {}}},
    }


def test_a_deployment_whose_pods_run_is_available_with_every_replica() -> None:
    status = kubernetes.workload_status(Cluster(), deployment())
    assert status is not None
    assert status["readyReplicas"] == status["availableReplicas"] == 2
    assert condition_is({"status": status}, "Available")


def test_a_deployment_whose_pods_wait_says_for_what() -> None:
    status = kubernetes.workload_status(Cluster(["ServiceAccount n/sa"]), deployment())
    assert status is not None
    available = conditions_of({"status": status})["Available"]
    assert available["status"] == "False"
    assert available["message"] == "pods wait for ServiceAccount n/sa"


def test_one_pending_pod_within_max_unavailable_leaves_a_deployment_available() -> None:
    status = kubernetes.workload_status(Cluster(["x"]), deployment(1, max_unavailable=1))
    assert condition_is({"status": status}, "Available")
    assert status is not None
    assert status["readyReplicas"] == 0


@pytest.mark.parametrize(
    ("readiness", "applied", "ready"),
    [
        ({}, {}, True),
        ({"policy": "DeriveFromObject"}, {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, False),
        ({"policy": "AllTrue"}, {"status": {"conditions": [{"type": "A", "status": "True"}]}}, True),
        ({"policy": "AllTrue"}, {"status": {}}, False),
    ],
)  # fmt: skip
def test_readiness_follows_the_policy(readiness: Obj, applied: Obj, ready: bool) -> None:
    assert kubernetes.readiness({"spec": {"readiness": readiness}}, applied)[0] is ready


def test_a_readiness_query_the_library_cannot_read_is_an_error_not_a_guess() -> None:
    obj = {"spec": {"readiness": {"policy": "DeriveFromCelQuery", "celQuery": "true"}}}
    with pytest.raises(ValueError, match="cannot evaluate"):
        kubernetes.readiness(obj, {})


# --- gateway ----------------------------------------------------------------------------


def route(*backends: str) -> Obj:
    return {
        "kind": "HTTPRoute",
        "metadata": {"name": "r", "namespace": "n"},
        "spec": {
            "parentRefs": [{"name": "gw"}],
            "rules": [{"backendRefs": [{"name": b} for b in backends]}],
        },
    }


def test_no_controller_no_status() -> None:
    assert gateway.status(route("svc"), False, "c", "1.2.3.4", Cluster().lookup) == {}


def test_a_route_to_a_missing_backend_is_accepted_but_not_resolved() -> None:
    programmed = {"status": {"conditions": [{"type": "Programmed", "status": "True"}]}}
    there = Cluster(objects={"Gateway n/gw": programmed, "Service n/svc": {}})
    status = gateway.status(route("svc", "gone"), True, "c", "", there.lookup)
    assert status is not None
    (parent,) = status["parents"]
    resolved = conditions_of({"status": parent})["ResolvedRefs"]
    assert (resolved["status"], resolved["reason"]) == ("False", "BackendNotFound")
    assert "Service n/gone" in resolved["message"]


def test_a_gateway_counts_the_routes_attached_to_each_listener() -> None:
    gw = {"kind": "Gateway", "metadata": {"name": "gw", "namespace": "n"},
          "spec": {"gatewayClassName": "k", "listeners": [{"name": "http"}, {"name": "tls"}]}}  # fmt: skip
    there = Cluster(objects={"GatewayClass /k": {}})
    status = gateway.status(gw, True, "c", "1.2.3.4", there.lookup, {"http": 3})
    assert status is not None
    assert [li["attachedRoutes"] for li in status["listeners"]] == [3, 0]
    assert status["addresses"] == [{"type": "IPAddress", "value": "1.2.3.4"}]


def test_the_first_metallb_pool_address_else_a_cloud_load_balancer() -> None:
    pools: list[Obj] = [
        {"spec": {"addresses": []}},
        {"spec": {"addresses": ["172.18.255.200-172.18.255.250"]}},
    ]
    assert gateway.first_pool_address(pools) == "172.18.255.200"
    assert gateway.first_pool_address([]) == gateway.CLOUD_LB_ADDRESS


# --- admission --------------------------------------------------------------------------


def test_an_api_server_refuses_a_service_name_that_starts_with_a_digit() -> None:
    service = {"kind": "Service", "metadata": {"name": "1abc", "labels": {"ok": "x" * 64}}}
    problems = admission.admission_problems(service)
    assert any("DNS-1035" in p for p in problems)
    assert any("63 characters" in p for p in problems)
