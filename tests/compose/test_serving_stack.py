"""ServingStack: install the components in order, then publish the gateway's address."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import registry, server
from modelplane.compose import _kit as kit
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
    return server.run(request(xr, observed=observed), registry.COMPOSERS)


def _everything(xr: Doc = STACK, *, address: str | None = ADDRESS) -> dict[str, Doc]:
    """Return every step of the stack observed ready, the Gateway with ``address``."""
    observed: dict[str, Doc] = {}
    for _ in range(5):  # each call composes the next steps
        rsp = _run(xr, observed)
        observed = {key: _ready() for key in rsp.desired.resources}
    observed[stack.GATEWAY_KEY] = _ready(address=address)
    return observed


def _resource(rsp: fnv1.RunFunctionResponse, key: str) -> Doc:
    return kit.struct_to_dict(rsp.desired.resources[key].resource)


def test_first_call_installs_what_needs_nothing() -> None:
    rsp = _run()
    assert sorted(rsp.desired.resources) == [
        "aws-dranet",
        "cert-manager",
        "gateway-api-crds",
        "lws",
        "namespace",
        "nvidia-dra-driver-gpu",
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
    ],
)
def test_cloud_specific_steps(cloud: str, extra: str) -> None:
    xr = copy.deepcopy(STACK)
    xr["spec"]["cloud"] = cloud
    assert extra in _run(xr).desired.resources
    xr["spec"]["cloud"] = "GKE"
    assert extra not in _run(xr).desired.resources


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


@pytest.mark.crank
@pytest.mark.skipif(not schemas.available(), reason="schemas not fetched: tools/schemas/fetch.sh")
def test_composed_objects_validate_against_real_schemas() -> None:
    plan = stack.plan(
        stack.Stack("aks", "modelplane-system", stack.Cloud.AKS, stack.ProviderConfig("aks"))
    )
    objects = [s.resource for s in plan if s.resource["kind"] == "Object"]
    # batch/v1, storage.k8s.io/v1 and Envoy Gateway's CRDs are not among the pinned schemas.
    docs = [
        d for d in schemas.unwrap(objects) if d["kind"] not in {"Job", "StorageClass", "EnvoyProxy"}
    ]
    report = schemas.validate(docs)
    assert report.ok, "\n".join(report.failures + report.missing) or report.output
