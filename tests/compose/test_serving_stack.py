"""ServingStack: install the components in order, then publish the gateway's address."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit, registry, runtime
from modelplane.dev import render, schemas
from modelplane.domain import stack

from tests.requests import conditions, request

Doc = dict[str, Any]
STACK: Doc = {
    "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
    "kind": "ServingStack",
    "metadata": {"name": "eks-us-east", "namespace": "modelplane-system"},
    "spec": {
        "cloud": "EKS",
        "providerConfigRef": {"kind": "ClusterProviderConfig", "name": "eks-us-east"},
    },
}
ADDRESS = "203.0.113.10"


def _xr(**components: Doc) -> Doc:
    xr = copy.deepcopy(STACK)
    if components:
        xr["spec"]["components"] = components
    return xr


def _ready(*, address: str | None = None) -> Doc:
    status: Doc = {"conditions": [{"type": "Ready", "status": "True"}]}
    if address:
        status["atProvider"] = {"manifest": {"status": {"addresses": [{"value": address}]}}}
    return {"apiVersion": "x", "kind": "Object", "metadata": {"name": "x"}, "status": status}


def _run(xr: Doc = STACK, observed: dict[str, Doc] | None = None) -> fnv1.RunFunctionResponse:
    return runtime.run(request(xr, observed=observed), registry.COMPOSERS)


def _everything(xr: Doc = STACK, *, address: str | None = ADDRESS) -> dict[str, Doc]:
    """Return every step of the stack observed ready, the Gateway with ``address``."""
    observed: dict[str, Doc] = {}
    for _ in range(8):  # each call composes the next steps
        rsp = _run(xr, observed)
        observed = {key: _ready() for key in rsp.desired.resources}
    observed[stack.GATEWAY_KEY] = _ready(address=address)
    return observed


def _resource(rsp: fnv1.RunFunctionResponse, key: str) -> Doc:
    return kit.struct_to_dict(rsp.desired.resources[key].resource)


def test_first_call_installs_what_needs_nothing() -> None:
    rsp = _run()
    assert sorted(rsp.desired.resources) == [
        "ai-gateway-crds",
        "aws-dranet",
        "cert-manager",
        "dra-driver-namespace",
        "gateway-api-crds",
        "lws",
        "namespace",
        "node-feature-discovery",
        "prometheus",
    ]
    status, reason, message = conditions(rsp)["ComponentsReady"]
    assert (status, reason) == ("False", "Installing")
    assert message.startswith("waiting for namespace modelplane-system to become ready")
    assert conditions(rsp)["GatewayReady"][:2] == ("False", "WaitingForGateway")
    assert rsp.desired.composite.ready == fnv1.READY_FALSE


def test_envoy_gateway_waits_for_both_crds() -> None:
    observed = {k: _ready() for k in ("namespace", "gateway-api-crds")}
    rsp = _run(observed=observed)
    assert "envoy-gateway" not in rsp.desired.resources
    assert "crd-installer-serviceaccount" in rsp.desired.resources
    message = conditions(rsp)["ComponentsReady"][2]
    assert "cert-manager" in message


def test_installed_stack_publishes_the_gateway_address() -> None:
    rsp = _run(observed=_everything())
    assert kit.struct_to_dict(rsp.desired.composite.resource)["status"] == {
        "gateway": {"address": ADDRESS}
    }
    assert conditions(rsp)["ComponentsReady"][:2] == ("True", "Installed")
    assert conditions(rsp)["GatewayReady"] == (
        "True",
        "Programmed",
        f"Gateway modelplane-system/modelplane at {ADDRESS}",
    )
    assert rsp.desired.composite.ready == fnv1.READY_UNSPECIFIED  # Crossplane derives Ready
    gateway = _resource(rsp, "gateway")
    assert gateway["spec"]["providerConfigRef"] == STACK["spec"]["providerConfigRef"]


def test_programmed_gateway_without_an_address_waits_for_one() -> None:
    rsp = _run(observed=_everything(address=None))
    assert conditions(rsp)["GatewayReady"][:2] == ("False", "WaitingForAddress")
    assert rsp.desired.composite.ready == fnv1.READY_FALSE
    assert "gateway" not in kit.struct_to_dict(rsp.desired.composite.resource).get("status", {})


def test_components_follow_the_spec() -> None:
    xr = _xr(
        prometheus={"enabled": False},
        leaderWorkerSet={"version": "0.9.0"},
        certManager={},
    )
    rsp = _run(xr)
    assert "prometheus" not in rsp.desired.resources
    chart = _resource(rsp, "lws")["spec"]["forProvider"]["chart"]
    assert chart["version"] == "0.9.0"
    assert "cert-manager" in rsp.desired.resources, "an empty component is on"


def test_user_gateway_controller_gets_the_gateway_after_the_crds() -> None:
    xr = _xr(envoyGateway={"enabled": False})
    observed = {k: _ready() for k in ("namespace", "gateway-api-crds")}
    rsp = _run(xr, observed)
    assert "envoy-gateway" not in rsp.desired.resources
    assert "gateway" in rsp.desired.resources


@pytest.mark.parametrize(
    ("cloud", "extra"),
    [
        pytest.param("AKS", "storage-class", id="aks"),
        pytest.param("EKS", "aws-dranet", id="eks"),
        pytest.param("Nebius", "csi-mounted-fs-path", id="nebius"),
    ],
)
def test_cloud_specific_steps(cloud: str, extra: str) -> None:
    xr = copy.deepcopy(STACK)
    xr["spec"]["cloud"] = cloud
    assert extra in _run(xr).desired.resources
    xr["spec"]["cloud"] = "GKE"
    assert extra not in _run(xr).desired.resources


def test_nebius_csi_driver_is_a_component_the_spec_turns_off() -> None:
    xr = copy.deepcopy(STACK)
    xr["spec"]["cloud"] = "Nebius"
    xr["spec"]["components"] = {"csiMountedFsPath": {"enabled": False}}
    assert "csi-mounted-fs-path" not in _run(xr).desired.resources
    xr["spec"]["components"] = {"csiMountedFsPath": {"version": "0.1.4"}}
    release = _resource(_run(xr), "csi-mounted-fs-path")
    assert release["spec"]["forProvider"]["chart"]["version"] == "0.1.4"


def test_invalid_spec_is_a_condition() -> None:
    xr = copy.deepcopy(STACK)
    xr["spec"]["cloud"] = "Mars"
    rsp = _run(xr)
    assert conditions(rsp)["ComponentsReady"][:2] == ("False", "InvalidSpec")
    assert len(rsp.desired.resources) == 0


def test_same_request_same_response() -> None:
    observed = _everything()
    first = _run(observed=observed).SerializeToString(deterministic=True)
    assert _run(observed=observed).SerializeToString(deterministic=True) == first


@pytest.mark.crank
def test_renders_with_crank(functions: render.Functions) -> None:
    out = render.render(STACK, functions)
    xr, composed = out[0], out[1:]
    kinds = sorted({(d["apiVersion"], d["kind"]) for d in composed})
    assert kinds == [
        ("helm.m.crossplane.io/v1beta1", "Release"),
        ("kubernetes.m.crossplane.io/v1alpha1", "Object"),
    ]
    for doc in composed:
        assert doc["metadata"]["namespace"] == "modelplane-system"
        assert doc["spec"]["providerConfigRef"]["name"] == "eks-us-east"
    ready = {c["type"]: c for c in xr["status"]["conditions"]}
    assert ready["ComponentsReady"]["reason"] == "Installing"


REFERENCE = render.ROOT.parent / "shared" / "docs" / "reference" / "servingstacks.yaml"
SHARED_HELM_CRDS = render.ROOT.parent / "shared" / "crds" / "helm"


def _reference() -> Doc:
    if not REFERENCE.exists():
        pytest.skip(f"{REFERENCE} is not here")
    doc: Doc = yaml.safe_load(REFERENCE.read_text())
    return doc


def test_reference_stack_builds_its_provider_configs_from_its_secrets() -> None:
    xr = _reference()
    rsp = _run(xr)
    helm, kubernetes = (
        _resource(rsp, k) for k in ("provider-config-helm", "provider-config-kubernetes")
    )
    assert (helm["apiVersion"], kubernetes["apiVersion"]) == (
        "helm.m.crossplane.io/v1beta1",
        "kubernetes.m.crossplane.io/v1alpha1",
    )
    for config in (helm, kubernetes):
        assert config["kind"] == "ProviderConfig"
        assert config["metadata"]["namespace"] == "platform"
        assert config["spec"]["credentials"]["secretRef"] == {
            "key": "kubeconfig",
            "name": "west-gke-kubeconfig",
            "namespace": "platform",
        }
        assert config["spec"]["identity"] == {
            "secretRef": {"key": "private_key", "name": "west-gke-sa-key", "namespace": "platform"},
            "source": "Secret",
            "type": "GoogleApplicationCredentials",
        }
    ref = {"kind": "ProviderConfig", "name": "west-gke-stack"}
    releases = [k for k in rsp.desired.resources if _resource(rsp, k)["kind"] == "Release"]
    assert releases
    for key in releases:
        assert _resource(rsp, key)["spec"]["providerConfigRef"] == ref, key
    charts = {k: _resource(rsp, k)["spec"]["forProvider"]["chart"]["version"] for k in releases}
    assert charts["cert-manager"] == "v1.17.1", "spec.versions.certManager"
    assert charts["gateway-api-crds"] == "v1.8.1", "the CRD chart follows envoyGateway"
    assert not [r for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING], (
        "gatewayApi v1.5.1 is the bundle Envoy Gateway's CRD chart installs"
    )


def test_reference_stack_installs_everything_with_its_listeners() -> None:
    xr = _reference()
    observed = _everything(xr)
    rsp = _run(xr, observed)
    assert conditions(rsp)["ComponentsReady"][:2] == ("True", "Installed")
    envoy = _resource(rsp, "envoy-gateway")["spec"]["forProvider"]["chart"]
    assert envoy["version"] == "v1.8.1", "spec.versions.envoyGateway"
    gateway = _resource(rsp, "gateway")["spec"]["forProvider"]["manifest"]
    assert [
        (lst["name"], lst["port"], lst["protocol"]) for lst in gateway["spec"]["listeners"]
    ] == [("http", 80, "HTTP")]


@pytest.mark.crank
def test_reference_stack_renders_with_crossplane(functions: render.Functions) -> None:
    out = render.render(_reference(), functions)
    composed = out[1:]
    assert {(d["apiVersion"], d["kind"]) for d in composed} == {
        ("helm.m.crossplane.io/v1beta1", "ProviderConfig"),
        ("helm.m.crossplane.io/v1beta1", "Release"),
        ("kubernetes.m.crossplane.io/v1alpha1", "Object"),
        ("kubernetes.m.crossplane.io/v1alpha1", "ProviderConfig"),
    }
    assert all(d["metadata"]["namespace"] == "platform" for d in composed)


def test_without_a_provider_config_or_secrets_the_stack_uses_its_namesake() -> None:
    xr = copy.deepcopy(STACK)
    del xr["spec"]["providerConfigRef"]
    del xr["spec"]["cloud"]
    rsp = _run(xr)
    assert "provider-config-helm" not in rsp.desired.resources
    assert _resource(rsp, "cert-manager")["spec"]["providerConfigRef"] == {
        "kind": "ClusterProviderConfig",
        "name": "eks-us-east",
    }
    assert "aws-dranet" not in rsp.desired.resources, "no cloud: Existing"


def test_versions_name_components_and_warn_about_what_they_cannot_do() -> None:
    xr = copy.deepcopy(STACK)
    xr["spec"]["versions"] = {"gatewayApi": "v1.4.0", "lws": "0.7.0", "nothing": "v1"}
    xr["spec"]["components"] = {"leaderWorkerSet": {"version": "0.9.0"}}
    rsp = _run(xr)
    assert _resource(rsp, "lws")["spec"]["forProvider"]["chart"]["version"] == "0.9.0", (
        "components.<name>.version wins over versions.<name>"
    )
    crds = _resource(rsp, "gateway-api-crds")["spec"]["forProvider"]["chart"]["version"]
    assert crds == stack.CHARTS["gateway-api-crds"].version
    warnings = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING]
    assert any("spec.versions.gatewayApi is v1.4.0" in w for w in warnings)
    assert any("spec.versions.nothing names no component" in w for w in warnings)


def _validation_root(tmp: Path) -> Path:
    """Return a schema root of the pinned schemas plus provider-helm's CRDs."""
    if not SHARED_HELM_CRDS.is_dir():
        pytest.skip(f"{SHARED_HELM_CRDS} is not here")
    shutil.copytree(schemas.SCHEMAS / "openapi", tmp / "openapi")
    shutil.copytree(schemas.SCHEMAS / "crds", tmp / "crds")
    for crd in SHARED_HELM_CRDS.glob("*.yaml"):
        shutil.copy(crd, tmp / "crds" / crd.name)
    shutil.copy(schemas.SCHEMAS / "modules.txt", tmp / "modules.txt")
    return tmp


@pytest.mark.crank
@pytest.mark.skipif(not schemas.available(), reason="schemas not fetched: tools/schemas/fetch.sh")
def test_composed_resources_validate_against_real_schemas(tmp_path: Path) -> None:
    credentials = stack.Credentials(
        stack.SecretKey("kubeconfig", "kubeconfig"),
        "GoogleApplicationCredentials",
        stack.SecretKey("sa", "key"),
    )
    listeners = (stack.Listener("http", 80), stack.Listener("https", 443, "HTTPS"))
    stacks = [
        stack.Stack("aks", "modelplane-system", stack.Cloud.AKS, stack.ProviderConfig("aks")),
        stack.Stack("eks", "modelplane-system", stack.Cloud.EKS, stack.ProviderConfig("eks")),
        stack.Stack(
            "west", "platform", stack.Cloud.GKE, stack.ProviderConfig("west", "ProviderConfig"),
            credentials=credentials, listeners=listeners,
        ),
    ]  # fmt: skip
    resources = [s.resource for one in stacks for s in stack.plan(one)]
    assert {r["kind"] for r in resources} == {"Object", "ProviderConfig", "Release"}
    docs = schemas.unwrap(resources)
    assert {"Job", "StorageClass", "EnvoyProxy", "ResourceQuota", "Gateway"} <= {
        d["kind"] for d in docs
    }
    report = schemas.validate(docs, _validation_root(tmp_path))
    assert report.ok, "\n".join(report.failures + report.missing) or report.output
