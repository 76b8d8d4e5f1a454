"""InferenceGateway: the singleton installs CRDs, Traefik (and MetalLB), then the Gateway."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit, registry, runtime
from modelplane.dev import render
from modelplane.domain import stack, teardown

from tests.compose import routing_cases
from tests.requests import conditions, request

POOL = "172.18.255.200-172.18.255.250"


def inference_gateway(name: str = "default", *, metallb: bool = False) -> dict[str, Any]:
    """The docs' InferenceGateway, with or without MetalLB."""
    traefik: dict[str, Any] = {"version": "40.2.0"}
    if metallb:
        traefik |= {"loadBalancer": "MetalLB", "metallb": {"addressPool": POOL}}
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceGateway",
        "metadata": {"name": name},
        "spec": {"backend": "Traefik", "traefik": traefik},
    }


def ready(kind_condition: str = "Ready") -> dict[str, Any]:
    """An observed resource whose ``kind_condition`` is True."""
    return {"status": {"conditions": [{"type": kind_condition, "status": "True"}]}}


def programmed(address: str | None = "172.18.255.200") -> dict[str, Any]:
    """The observed Gateway, programmed by Traefik, with its address."""
    out = ready("Programmed")
    if address:
        out["status"]["addresses"] = [{"type": "IPAddress", "value": address}]
    return out


def run(xr: dict[str, Any], **observed: dict[str, Any]) -> fnv1.RunFunctionResponse:
    keyed = {k.replace("_", "-"): v for k, v in observed.items()}
    return runtime.run(request(xr, observed=keyed), registry.COMPOSERS)


def desired(rsp: fnv1.RunFunctionResponse) -> dict[str, dict[str, Any]]:
    return {k: kit.struct_to_dict(v.resource) for k, v in rsp.desired.resources.items()}


def address(rsp: fnv1.RunFunctionResponse) -> str | None:
    found = kit.struct_to_dict(rsp.desired.composite.resource).get("status", {}).get("address")
    return None if found is None else str(found)


ALL_READY = {
    "gateway_api_crds": ready(),
    "traefik": ready(),
    "gatewayclass": ready("Accepted"),
    "gateway": programmed(),
}


@pytest.mark.parametrize(
    ("metallb", "observed", "want_keys", "reason"),
    [
        pytest.param(False, {}, {"gateway-api-crds"}, "InstallingGatewayAPI", id="crds-first"),
        pytest.param(
            True,
            {},
            {"gateway-api-crds", "metallb"},
            "InstallingGatewayAPI",
            id="crds-and-metallb-first",
        ),
        pytest.param(
            False,
            {"gateway_api_crds": ready()},
            {"gateway-api-crds", "traefik"},
            "InstallingTraefik",
            id="traefik-after-crds",
        ),
        pytest.param(
            True,
            {"gateway_api_crds": ready(), "metallb": ready()},
            {"gateway-api-crds", "traefik", "metallb", "metallb-pool", "metallb-l2advertisement"},
            "InstallingTraefik",
            id="pool-after-metallb",
        ),
        pytest.param(
            False,
            {"gateway_api_crds": ready(), "traefik": ready()},
            {"gateway-api-crds", "traefik", "gatewayclass", "gateway"},
            "GatewayPending",
            id="gateway-after-traefik",
        ),
        pytest.param(
            False,
            {"gateway_api_crds": {"status": {}}, "traefik": ready()},
            {"gateway-api-crds", "traefik", "gatewayclass", "gateway"},
            "InstallingGatewayAPI",
            id="started-steps-are-kept",
        ),
        pytest.param(
            False,
            {**ALL_READY, "gateway": programmed(None)},
            {"gateway-api-crds", "traefik", "gatewayclass", "gateway"},
            "WaitingForAddress",
            id="waiting-for-address",
        ),
    ],
)
def test_each_step_waits_for_the_one_before(
    metallb: bool, observed: dict[str, Any], want_keys: set[str], reason: str
) -> None:
    rsp = run(inference_gateway(metallb=metallb), **observed)
    assert _steps(rsp.desired.resources) == want_keys
    assert conditions(rsp)["ControllerReady"][:2] == ("False", reason)
    assert rsp.desired.composite.ready == fnv1.READY_FALSE


def test_ready_when_the_gateway_has_an_address() -> None:
    rsp = run(inference_gateway(), **ALL_READY)
    assert address(rsp) == "172.18.255.200"
    assert conditions(rsp)["ControllerReady"] == ("True", "Ready", "Traefik serves 172.18.255.200")
    assert rsp.desired.composite.ready == fnv1.READY_UNSPECIFIED  # Crossplane derives Ready
    steps = {k: r.ready for k, r in rsp.desired.resources.items() if k in _steps([k])}
    assert steps == dict.fromkeys(
        ["gateway-api-crds", "traefik", "gatewayclass", "gateway"], fnv1.READY_TRUE
    )


def test_metallb_must_be_ready_too() -> None:
    observed = {**ALL_READY, "metallb": ready()}
    rsp = run(inference_gateway(metallb=True), **observed)
    assert conditions(rsp)["ControllerReady"][:2] == ("False", "InstallingMetalLB")
    rsp = run(
        inference_gateway(metallb=True),
        **observed,
        metallb_pool={"kind": "IPAddressPool"},
        metallb_l2advertisement={"kind": "L2Advertisement"},
    )
    assert conditions(rsp)["ControllerReady"][:2] == ("True", "Ready")


def test_the_releases_and_gateway_objects() -> None:
    observed = {**ALL_READY, "metallb": ready()}
    got = desired(run(inference_gateway(metallb=True), **observed))
    helm = {"kind": "ClusterProviderConfig", "name": "default"}
    assert got["gateway-api-crds"]["spec"] == {
        "providerConfigRef": helm,
        "forProvider": {
            "chart": {
                "name": "gateway-crds-helm",
                "repository": "oci://docker.io/envoyproxy",
                "version": "v1.8.3",
            },
            "namespace": "modelplane-system",
            "values": {
                "crds": {
                    "gatewayAPI": {"enabled": True, "channel": "standard"},
                    "envoyGateway": {"enabled": False},
                }
            },
        },
    }
    traefik = got["traefik"]
    assert traefik["apiVersion"] == "helm.m.crossplane.io/v1beta1"
    assert traefik["metadata"] == {"name": "traefik", "namespace": "modelplane-system"}
    params = traefik["spec"]["forProvider"]
    assert params["chart"]["version"] == "40.2.0"
    assert params["namespace"] == "traefik-system"
    assert params["skipCRDs"] is True
    assert params["values"]["providers"]["kubernetesGateway"] == {"enabled": True}
    assert got["metallb-pool"]["spec"] == {"addresses": [POOL]}
    assert got["metallb-l2advertisement"]["spec"] == {"ipAddressPools": ["modelplane"]}
    assert got["gatewayclass"]["spec"] == {"controllerName": "traefik.io/gateway-controller"}
    assert got["gateway"]["metadata"] == {"name": "modelplane", "namespace": "modelplane-system"}
    listener = got["gateway"]["spec"]["listeners"][0]
    assert listener["allowedRoutes"]["namespaces"] == {"from": "All"}
    assert (listener["name"], listener["protocol"], listener["port"]) == ("http", "HTTP", 8000)


def test_without_metallb_no_metallb_objects() -> None:
    got = desired(run(inference_gateway(), **ALL_READY))
    assert not any(k.startswith("metallb") for k in got)


@pytest.mark.parametrize("name", ["gateway", "Default", "default-2"])
def test_any_other_name_composes_nothing_and_says_so(name: str) -> None:
    rsp = run(inference_gateway(name))
    status_, reason, message = conditions(rsp)["ControllerReady"]
    assert (status_, reason) == ("False", "NotSingleton")
    assert f'named "{name}"' in message
    assert len(rsp.desired.resources) == 0
    assert address(rsp) is None
    assert rsp.desired.composite.ready == fnv1.READY_FALSE


@pytest.mark.crank
@pytest.mark.parametrize(
    ("name", "address", "kinds"),
    [
        pytest.param(
            "inference-gateway-metallb",
            "172.18.255.200",
            ["Gateway", "GatewayClass", "IPAddressPool", "L2Advertisement"]
            + ["Release"] * 3
            + ["Usage"] * 5,  # each step's Usage of what it needs: teardown in order
            id="metallb",
        ),
        pytest.param(
            "inference-gateway-cloud",
            "a1b2c3d4e5f6-1234567890.us-east-1.elb.amazonaws.com",
            ["Gateway", "GatewayClass"] + ["Release"] * 2 + ["Usage"] * 3,
            id="cloud",
        ),
    ],
)
def test_docs_gateways_render_ready_once_installed(
    functions: render.Functions, name: str, address: str, kinds: list[str]
) -> None:
    got = routing_cases.render_case(functions, name, "InferenceGateway")
    assert sorted(d["kind"] for d in got.composed) == kinds
    assert got.composite["status"]["address"] == address
    assert got.condition("ControllerReady")["status"] == "True"
    assert got.condition("Ready")["status"] == "True"


@pytest.mark.crank
@pytest.mark.parametrize(
    ("name", "releases"),
    [
        pytest.param("inference-gateway-metallb", ["gateway-api-crds", "metallb"], id="metallb"),
        pytest.param("inference-gateway-cloud", ["gateway-api-crds"], id="cloud"),
    ],
)
def test_docs_gateways_start_with_the_crds(
    functions: render.Functions, name: str, releases: list[str]
) -> None:
    got = routing_cases.render_case(functions, name, "InferenceGateway", observed=False)
    assert sorted(d["metadata"]["name"] for d in got.composed) == releases
    assert got.condition("ControllerReady")["reason"] == "InstallingGatewayAPI"


@pytest.mark.crank
@pytest.mark.parametrize("name", ["inference-gateway-metallb", "inference-gateway-cloud"])
def test_gateway_objects_match_their_schemas(functions: render.Functions, name: str) -> None:
    composed = routing_cases.render_case(functions, name, "InferenceGateway").composed
    # provider-helm's Release CRD cannot be fetched (tools/schemas/routing.txt says why).
    routing_cases.check_schemas([d for d in composed if d["kind"] != "Release"])


def test_the_gateway_api_crd_chart_is_pinned_once_with_the_serving_stack() -> None:
    """One pin per chart: the control plane's Gateway API CRDs are the workload clusters'."""
    got = desired(run(inference_gateway()))["gateway-api-crds"]["spec"]["forProvider"]["chart"]
    pinned = stack.CHARTS[stack.GATEWAY_API_CRDS]
    assert got == {"name": pinned.name, "repository": pinned.repository, "version": pinned.version}


def _steps(keys: Iterable[str]) -> set[str]:
    """The install steps among composed-resource keys: not the ordering Usages."""
    return {k for k in keys if not k.startswith(teardown.KEY_PREFIX)}


def _warnings(rsp: fnv1.RunFunctionResponse) -> list[str]:
    return [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING]


def test_dropping_metallb_releases_its_three_resources_and_nothing_else() -> None:
    observed = {
        **ALL_READY,
        "metallb": ready(),
        "metallb_pool": {"kind": "IPAddressPool"},
        "metallb_l2advertisement": {"kind": "L2Advertisement"},
    }
    rsp = run(inference_gateway(metallb=False), **observed)
    assert _steps(desired(rsp)) == {"gateway-api-crds", "traefik", "gatewayclass", "gateway"}
    assert _warnings(rsp) == []


def test_a_step_the_plan_no_longer_has_is_held_and_named() -> None:
    """Something observed that the gateway neither composes nor releases is a partial
    answer: the kit holds it and says so, rather than letting Crossplane delete it."""
    observed = {**ALL_READY, "stray": ready()}
    rsp = run(inference_gateway(), **observed)
    assert "stray" in desired(rsp)
    assert _warnings(rsp) == ["neither composed nor released stray; kept it unchanged"]


def test_each_step_holds_what_it_needs_until_it_is_gone() -> None:
    """Teardown in order: a Usage per step and need, ``by`` the step and ``of`` the need,
    with ``replayDeletion``; a cluster-scoped GatewayClass's Usage lives with the
    Release it uses, MetalLB's objects' Usages in their own namespace."""
    observed = {
        **ALL_READY,
        "metallb": ready(),
        "metallb_pool": {"kind": "IPAddressPool"},
        "metallb_l2advertisement": {"kind": "L2Advertisement"},
    }
    got = desired(run(inference_gateway(metallb=True), **observed))
    usages = {k: v for k, v in got.items() if k.startswith(teardown.KEY_PREFIX)}
    pairs = {
        (
            u["spec"]["by"]["kind"],
            u["spec"]["by"]["resourceRef"]["name"],
            u["spec"]["of"]["resourceRef"]["name"],
        )
        for u in usages.values()
    }
    assert pairs == {
        ("Release", "traefik", "gateway-api-crds"),
        ("GatewayClass", "modelplane", "traefik"),
        ("Gateway", "modelplane", "traefik"),
        ("IPAddressPool", "modelplane", "metallb"),
        ("L2Advertisement", "modelplane", "metallb"),
    }
    for usage in usages.values():
        assert usage["kind"] == "Usage"
        assert usage["spec"]["replayDeletion"] is True
    pool = usages["order-metallb-pool-uses-metallb"]
    assert pool["metadata"]["namespace"] == "metallb-system"
    assert pool["spec"]["of"]["resourceRef"] == {
        "name": "metallb",
        "namespace": "modelplane-system",
    }
    gatewayclass = usages["order-gatewayclass-uses-traefik"]
    assert gatewayclass["metadata"]["namespace"] == "modelplane-system"
    assert gatewayclass["spec"]["of"]["resourceRef"] == {"name": "traefik"}


def test_a_step_not_made_yet_has_no_usage() -> None:
    """A Usage names what exists: Traefik composed but not observed has none yet."""
    got = desired(run(inference_gateway(), gateway_api_crds=ready()))
    assert "traefik" in got
    assert not [k for k in got if k.startswith(teardown.KEY_PREFIX)]


def test_dropping_metallb_releases_its_usages_too() -> None:
    observed = {
        **ALL_READY,
        "metallb": ready(),
        "metallb_pool": {"kind": "IPAddressPool"},
        "order-metallb-pool-uses-metallb": {"kind": "Usage"},
    }
    rsp = run(inference_gateway(metallb=False), **observed)
    assert "order-metallb-pool-uses-metallb" not in rsp.desired.resources
    assert _warnings(rsp) == []  # released, not held


def test_a_resource_let_go_waits_one_pass_for_its_usage_to_go_first() -> None:
    """MetalLB dropped: its pool and the pool's Usage of MetalLB go now, MetalLB itself
    the pass after, once the Usage is gone: Crossplane's webhook never refuses the
    garbage collection, and nothing waits in normal operation."""
    metallb = {**desired(run(inference_gateway(metallb=True)))["metallb"], **ready()}
    pool = {**desired(run(inference_gateway(metallb=True), metallb=ready()))["metallb-pool"]}
    with_metallb = {**ALL_READY, "metallb": metallb, "metallb_pool": pool}
    usage = desired(run(inference_gateway(metallb=True), **with_metallb))
    key = "order-metallb-pool-uses-metallb"
    first = run(inference_gateway(metallb=False), **with_metallb, **{key: usage[key]})
    assert "metallb" in first.desired.resources  # held: the Usage of it goes first
    assert key not in first.desired.resources
    assert "metallb-pool" not in first.desired.resources  # the user goes at once
    assert _warnings(first) == []
    second = run(inference_gateway(metallb=False), **{**ALL_READY, "metallb": metallb})
    assert "metallb" not in second.desired.resources  # the Usage gone: MetalLB goes
    assert _warnings(second) == []
