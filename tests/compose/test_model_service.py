"""ModelService: requirements, same-namespace selection, weights, the HTTPRoute and its status."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format
from modelplane import kit, registry, runtime
from modelplane.compose import model_service
from modelplane.compose.model_service import Backend
from modelplane.dev import render, schemas
from modelplane.domain import routing

from tests.compose import routing_cases
from tests.requests import conditions, request

NS = "ml-team"
DEPLOYMENT = "modelplane.ai/deployment"
CLUSTER = "modelplane.ai/cluster"


def service(*entries: dict[str, Any], name: str = "qwen") -> dict[str, Any]:
    """A ModelService with the given ``spec.endpoints`` entries."""
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelService",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"endpoints": list(entries)},
    }


def entry(
    weight: int | None = None,
    *,
    d: str | None = None,
    c: str | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A spec.endpoints entry selecting deployment ``d``, cluster ``c`` and/or ``labels``."""
    selected = dict(labels or {})
    selected |= {DEPLOYMENT: d} if d else {}
    selected |= {CLUSTER: c} if c else {}
    out: dict[str, Any] = {"selector": {"matchLabels": selected}}
    if weight is not None:
        out["weight"] = weight
    return out


def endpoint(
    name: str,
    *,
    deployment: str = "qwen",
    cluster: str = "eks-us-east",
    namespace: str = NS,
    url: str | None = None,
    rewrite: str | None = None,
    backend: bool = True,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A ModelEndpoint as Crossplane would return it, with status once its backend exists."""
    out: dict[str, Any] = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels or {DEPLOYMENT: deployment, CLUSTER: cluster},
        },
        "spec": {
            "url": url or f"http://172.18.0.5/{namespace}/{name}/v1",
            "rewritePath": rewrite or f"/{namespace}/{name}/",
        },
    }
    if backend:
        out["status"] = {"routing": {"backendName": routing.backend_name(name)}}
    return out


def gateway(address: str | None = "172.18.255.200") -> dict[str, Any]:
    """The InferenceGateway singleton, with its address once it has one."""
    out: dict[str, Any] = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceGateway",
        "metadata": {"name": "default"},
        "spec": {"backend": "Traefik", "traefik": {"version": "40.2.0"}},
    }
    if address:
        out["status"] = {"address": address}
    return out


def fetched(
    xr: dict[str, Any], fleet: Sequence[dict[str, Any]], gateways: Sequence[dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """What Crossplane returns for the service's requirements: label and namespace matches."""
    out: dict[str, list[dict[str, Any]]] = {"gateway": list(gateways)}
    for i, e in enumerate(xr["spec"]["endpoints"]):
        want = e["selector"]["matchLabels"]
        out[f"endpoints-{i}"] = [
            m
            for m in fleet
            if m["metadata"]["namespace"] == NS and routing.matches(want, m["metadata"]["labels"])
        ]
    return out


def accepted_route(status: str = "True", reason: str = "Accepted", **extra: Any) -> dict[str, Any]:
    """The observed HTTPRoute with the Gateway's verdict."""
    parent = {
        "parentRef": {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "namespace": "modelplane-system",
            "name": "modelplane",
            "sectionName": "http",
        },
        "controllerName": "traefik.io/gateway-controller",
        "conditions": [{"type": "Accepted", "status": status, "reason": reason, "message": "m"}],
    }
    parent["conditions"] += extra.get("more", [])
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "status": {"parents": [parent]},
    }


def run(
    xr: dict[str, Any],
    fleet: Sequence[dict[str, Any]] = (),
    *,
    gateways: Sequence[dict[str, Any]] | None = None,
    route: dict[str, Any] | None = None,
    first_call: bool = False,
) -> fnv1.RunFunctionResponse:
    required = (
        None if first_call else fetched(xr, fleet, [gateway()] if gateways is None else gateways)
    )
    observed = {"httproute": route} if route else None
    return runtime.run(request(xr, required=required, observed=observed), registry.COMPOSERS)


def route_of(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    return kit.struct_to_dict(rsp.desired.resources["httproute"].resource)


def weights(rsp: fnv1.RunFunctionResponse) -> dict[str, int]:
    refs = route_of(rsp)["spec"]["rules"][0]["backendRefs"]
    return {r["name"]: r["weight"] for r in refs}


def status(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    return dict(kit.struct_to_dict(rsp.desired.composite.resource).get("status", {}))


def requirements(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    return dict(json_format.MessageToDict(rsp.requirements))


def test_first_call_only_asks_for_the_gateway_and_each_entrys_endpoints() -> None:
    xr = service(entry(d="qwen-demo"), entry(d="qwen-west"))
    rsp = run(xr, first_call=True)
    assert requirements(rsp) == {
        "resources": {
            "gateway": {
                "apiVersion": "modelplane.ai/v1alpha1",
                "kind": "InferenceGateway",
                "matchName": "default",
            },
            "endpoints-0": {
                "apiVersion": "modelplane.ai/v1alpha1",
                "kind": "ModelEndpoint",
                "matchLabels": {"labels": {DEPLOYMENT: "qwen-demo"}},
                "namespace": NS,
            },
            "endpoints-1": {
                "apiVersion": "modelplane.ai/v1alpha1",
                "kind": "ModelEndpoint",
                "matchLabels": {"labels": {DEPLOYMENT: "qwen-west"}},
                "namespace": NS,
            },
        }
    }
    assert len(rsp.desired.resources) == 0
    assert list(rsp.conditions) == []


def test_requirements_are_identical_on_every_call() -> None:
    xr = service(entry(95, d="qwen"), entry(5, d="qwen-v2"))
    fleet = [endpoint("a"), endpoint("b", deployment="qwen-v2")]
    first = requirements(run(xr, fleet, first_call=True))
    assert requirements(run(xr, fleet)) == first
    assert requirements(run(xr, fleet, route=accepted_route())) == first


@pytest.mark.parametrize(
    ("entries", "fleet", "want"),
    [
        pytest.param(
            [entry(95, d="qwen3-8b"), entry(5, d="qwen3-8b-v2")],
            [
                endpoint("s1", deployment="qwen3-8b"),
                endpoint("s2", deployment="qwen3-8b"),
                endpoint("s3", deployment="qwen3-8b"),
                endpoint("c1", deployment="qwen3-8b-v2"),
            ],
            {"s1": 19, "s2": 19, "s3": 19, "c1": 3},
            id="canary-95-5",
        ),
        pytest.param(
            [entry(80, d="a"), entry(20, d="b")],
            [endpoint("a1", deployment="a"), endpoint("a2", deployment="a")]
            + [endpoint(f"b{i}", deployment="b") for i in range(3)],
            {"a1": 6, "a2": 6, "b0": 1, "b1": 1, "b2": 1},
            id="80-20",
        ),
        pytest.param(
            [entry(d="qwen-demo"), entry(d="qwen-west")],
            [
                endpoint("demo-1", deployment="qwen-demo"),
                endpoint("west-1", deployment="qwen-west", cluster="eks-us-west"),
                endpoint("west-2", deployment="qwen-west", cluster="eks-us-west"),
            ],
            {"demo-1": 2, "west-1": 1, "west-2": 1},
            id="equal-entries-uneven-counts",
        ),
        pytest.param(
            [entry(50, d="qwen-72b", c="aks"), entry(50, d="qwen-72b", c="nebius")],
            [
                endpoint("on-aks", deployment="qwen-72b", cluster="aks"),
                endpoint("on-nebius", deployment="qwen-72b", cluster="nebius"),
            ],
            {"on-aks": 1, "on-nebius": 1},
            id="split-by-cluster",
        ),
    ],
)
def test_each_entry_gets_its_weight(
    entries: list[dict[str, Any]], fleet: list[dict[str, Any]], want: dict[str, int]
) -> None:
    rsp = run(service(*entries), fleet)
    assert weights(rsp) == want
    assert conditions(rsp)["EndpointsResolved"][:2] == ("True", "EndpointsResolved")


@pytest.mark.parametrize("replicas", [1, 2, 3, 4, 6])
def test_scaling_up_keeps_the_entry_share(replicas: int) -> None:
    fleet = [endpoint(f"s{i}", deployment="stable") for i in range(replicas)]
    fleet.append(endpoint("canary", deployment="canary"))
    got = weights(run(service(entry(95, d="stable"), entry(5, d="canary")), fleet))
    assert Fraction(got["canary"], sum(got.values())) == Fraction(5, 100)


def test_a_service_never_routes_into_another_namespace() -> None:
    xr = service(entry(d="qwen"))
    mine, theirs = endpoint("mine"), endpoint("theirs", namespace="other-team")
    required = fetched(xr, [mine], [gateway()])
    required["endpoints-0"].append(theirs)  # even if it were offered
    rsp = runtime.run(request(xr, required=required), registry.COMPOSERS)
    assert weights(rsp) == {"mine": 1}
    sent = rsp.requirements.resources["endpoints-0"]
    assert sent.namespace == NS


def test_an_endpoint_that_goes_away_is_withdrawn() -> None:
    xr = service(entry(d="qwen"))
    both = [endpoint("r1"), endpoint("r2")]
    assert weights(run(xr, both, route=accepted_route())) == {"r1": 1, "r2": 1}
    assert weights(run(xr, both[:1], route=accepted_route())) == {"r1": 1}


def test_an_endpoint_without_backend_is_not_routed_yet() -> None:
    xr = service(entry(d="qwen"))
    rsp = run(xr, [endpoint("ready"), endpoint("starting", backend=False)])
    assert weights(rsp) == {"ready": 1}
    assert "not ready yet: starting" in conditions(rsp)["EndpointsResolved"][2]


def test_only_unready_endpoints_are_not_resolved() -> None:
    rsp = run(service(entry(d="qwen")), [endpoint("starting", backend=False)])
    assert conditions(rsp)["EndpointsResolved"][:2] == ("False", "EndpointsNotReady")
    assert [r for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING] == []


def test_no_endpoints_is_a_false_condition_and_a_warning() -> None:
    rsp = run(service(entry(d="nothing-here")), [endpoint("r1")])
    status_, reason, message = conditions(rsp)["EndpointsResolved"]
    assert (status_, reason) == ("False", "NoEndpoints")
    assert f"{DEPLOYMENT}=nothing-here" in message
    assert [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING] == [message]
    assert route_of(rsp)["spec"]["rules"][0]["backendRefs"] == []
    assert rsp.desired.composite.ready == fnv1.READY_FALSE


def test_an_endpoint_matched_by_two_entries_is_one_backend() -> None:
    fleet = [endpoint("shared", cluster="east"), endpoint("other", cluster="west")]
    rsp = run(service(entry(d="qwen"), entry(c="east")), fleet)
    assert weights(rsp) == {"other": 1, "shared": 3}


def test_the_route_matches_the_prefix_and_rewrites_per_backend() -> None:
    fleet = [
        endpoint("kimi-k2-abcde", deployment="kimi-k2"),
        endpoint(
            "kimi-k2-together",
            url="https://api.together.xyz/",
            rewrite="/",
            labels={"modelplane.ai/external-provider": "together"},
        ),
    ]
    xr = service(
        entry(d="kimi-k2"),
        entry(labels={"modelplane.ai/external-provider": "together"}),
        name="kimi-k2",
    )
    assert route_of(run(xr, fleet)) == {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "kimi-k2", "namespace": NS},
        "spec": {
            "parentRefs": [
                {
                    "group": "gateway.networking.k8s.io",
                    "kind": "Gateway",
                    "namespace": "modelplane-system",
                    "name": "modelplane",
                    "sectionName": "http",
                }
            ],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/ml-team/kimi-k2/"}}],
                    "backendRefs": [
                        {
                            "group": "",
                            "kind": "Service",
                            "name": "kimi-k2-abcde",
                            "port": 80,
                            "weight": 1,
                            "filters": [
                                {
                                    "type": "URLRewrite",
                                    "urlRewrite": {
                                        "path": {
                                            "type": "ReplacePrefixMatch",
                                            "replacePrefixMatch": "/ml-team/kimi-k2-abcde/",
                                        }
                                    },
                                }
                            ],
                        },
                        {
                            "group": "",
                            "kind": "Service",
                            "name": "kimi-k2-together",
                            "port": 443,
                            "weight": 1,
                            "filters": [
                                {
                                    "type": "URLRewrite",
                                    "urlRewrite": {
                                        "hostname": "api.together.xyz",
                                        "path": {
                                            "type": "ReplacePrefixMatch",
                                            "replacePrefixMatch": "/",
                                        },
                                    },
                                }
                            ],
                        },
                    ],
                }
            ],
        },
    }


@pytest.mark.parametrize(
    ("route", "want"),
    [
        pytest.param(None, ("False", "RoutePending"), id="not-created-yet"),
        pytest.param(
            {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute"},
            ("False", "RoutePending"),
            id="no-status",
        ),
        pytest.param(accepted_route(), ("True", "Accepted"), id="accepted"),
        pytest.param(
            accepted_route("False", "NotAllowedByListeners"),
            ("False", "NotAllowedByListeners"),
            id="refused",
        ),
        pytest.param(
            accepted_route(
                more=[
                    {
                        "type": "ResolvedRefs",
                        "status": "False",
                        "reason": "BackendNotFound",
                        "message": "x",
                    }
                ]
            ),
            ("False", "BackendNotFound"),
            id="unresolved-backend",
        ),
    ],
)
def test_routing_ready_follows_the_route_status(
    route: dict[str, Any] | None, want: tuple[str, str]
) -> None:
    rsp = run(service(entry(d="qwen")), [endpoint("r1")], route=route)
    assert conditions(rsp)["RoutingReady"][:2] == want
    ready = fnv1.READY_TRUE if want[0] == "True" else fnv1.READY_FALSE
    assert rsp.desired.resources["httproute"].ready == ready
    # Not Ready is the service's veto; Ready is left to Crossplane's rule.
    vetoed = fnv1.READY_UNSPECIFIED if want[0] == "True" else fnv1.READY_FALSE
    assert rsp.desired.composite.ready == vetoed


def test_address_is_the_gateway_address_and_the_service_path() -> None:
    rsp = run(service(entry(d="qwen")), [endpoint("r1")], route=accepted_route())
    assert status(rsp) == {"address": "http://172.18.255.200/ml-team/qwen"}
    v6 = run(service(entry(d="qwen")), [endpoint("r1")], gateways=[gateway("2001:db8::7")])
    assert status(v6) == {"address": "http://[2001:db8::7]/ml-team/qwen"}


@pytest.mark.parametrize(
    ("gateways", "reason"),
    [
        pytest.param([], "GatewayNotFound", id="missing"),
        pytest.param([gateway(None)], "GatewayNotReady", id="no-address"),
    ],
)
def test_no_route_before_the_gateway_is_ready(gateways: list[dict[str, Any]], reason: str) -> None:
    rsp = run(service(entry(d="qwen")), [endpoint("r1")], gateways=gateways)
    assert "httproute" not in rsp.desired.resources
    assert conditions(rsp)["RoutingReady"][:2] == ("False", reason)
    assert "address" not in status(rsp)


def test_an_existing_route_survives_a_gateway_without_address() -> None:
    rsp = run(
        service(entry(d="qwen")), [endpoint("r1")], gateways=[gateway(None)], route=accepted_route()
    )
    assert weights(rsp) == {"r1": 1}
    assert conditions(rsp)["RoutingReady"][:2] == ("True", "Accepted")


def test_too_many_endpoints_are_trimmed_with_a_warning() -> None:
    fleet = [endpoint(f"r{i:02}") for i in range(20)]
    rsp = run(service(entry(d="qwen")), fleet)
    assert len(weights(rsp)) == routing.MAX_BACKENDS
    message = conditions(rsp)["EndpointsResolved"][2]
    assert "left out" in message
    assert "r19" in message
    assert any(r.severity == fnv1.SEVERITY_WARNING for r in rsp.results)


def test_the_same_request_gives_the_same_response() -> None:
    xr = service(entry(95, d="a"), entry(5, d="b"))
    fleet = [endpoint("a1", deployment="a"), endpoint("b1", deployment="b")]
    req = request(xr, required=fetched(xr, fleet, [gateway()]))
    first = runtime.run(req, registry.COMPOSERS).SerializeToString(deterministic=True)
    assert runtime.run(req, registry.COMPOSERS).SerializeToString(deterministic=True) == first


RENDER_CASES = [
    pytest.param(
        "model-service",
        {"qwen3-8b-a02c0": 1, "qwen3-8b-fd54a": 1},
        "http://172.18.255.200/ml-team/qwen3-8b",
        id="model-service",
    ),
    pytest.param(
        "model-service-multi",
        {"qwen-demo-92535": 1, "qwen-west-1e7af": 1},
        "http://172.18.255.200/ml-team/qwen",
        id="model-service-multi",
    ),
    pytest.param(
        "canary",
        {"qwen3-8b-4920a": 19, "qwen3-8b-a02c0": 19, "qwen3-8b-fd54a": 19, "qwen3-8b-v2-89193": 3},
        "http://172.18.255.200/ml-team/qwen3-8b",
        id="weighted-canary",
    ),
    pytest.param(
        "split-by-cluster",
        {"qwen-72b-cafe4": 1, "qwen-72b-cc835": 1},
        "http://172.18.255.200/ml-team/qwen-72b",
        id="split-by-cluster",
    ),
    pytest.param(
        "external-provider",
        {"kimi-k2-80b8b": 1, "kimi-k2-f7d01": 1, "kimi-k2-together": 2},
        "http://172.18.255.200/ml-team/kimi-k2",
        id="external-provider",
    ),
]


@pytest.mark.crank
@pytest.mark.parametrize(("name", "want_weights", "address"), RENDER_CASES)
def test_docs_examples_render_with_their_weights(
    functions: render.Functions, name: str, want_weights: dict[str, int], address: str
) -> None:
    got = routing_cases.render_case(functions, name, "ModelService")
    route = got.one("HTTPRoute")
    refs = route["spec"]["rules"][0]["backendRefs"]
    assert {r["name"]: r["weight"] for r in refs} == want_weights
    assert got.composite["status"]["address"] == address
    assert got.condition("EndpointsResolved")["status"] == "True"
    assert got.condition("RoutingReady")["status"] == "True"
    assert got.condition("Ready")["status"] == "True"
    assert [d["kind"] for d in got.composed] == ["HTTPRoute"]


@pytest.mark.crank
@pytest.mark.parametrize(("name", "want_weights", "address"), RENDER_CASES)
def test_before_the_route_exists_the_service_is_not_ready(
    functions: render.Functions, name: str, want_weights: dict[str, int], address: str
) -> None:
    got = routing_cases.render_case(functions, name, "ModelService", observed=False)
    assert len(got.one("HTTPRoute")["spec"]["rules"][0]["backendRefs"]) == len(want_weights)
    assert got.condition("RoutingReady")["reason"] == "RoutePending"
    assert got.condition("Ready")["status"] == "False"


@pytest.mark.crank
def test_the_external_provider_gets_its_host_and_tls_port(functions: render.Functions) -> None:
    got = routing_cases.render_case(functions, "external-provider", "ModelService")
    refs = {r["name"]: r for r in got.one("HTTPRoute")["spec"]["rules"][0]["backendRefs"]}
    together = refs["kimi-k2-together"]
    assert together["port"] == 443
    assert together["filters"][0]["urlRewrite"] == {
        "hostname": "api.together.xyz",
        "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"},
    }


@pytest.mark.crank
def test_every_rendered_route_matches_the_gateway_api_schema(functions: render.Functions) -> None:
    routes = [
        routing_cases.render_case(functions, str(p.values[0]), "ModelService").one("HTTPRoute")
        for p in RENDER_CASES
    ]
    routing_cases.check_schemas(routes)


@pytest.mark.crank
def test_the_schema_catches_what_the_function_must_avoid() -> None:
    """The limits the function keeps (16 backends, the weight bound) are the schema's."""
    if not schemas.available():
        pytest.skip("the schemas are not fetched: run tools/schemas/fetch.sh")
    too_many = [(Backend(f"e{i}", f"e{i}", 80, "/", None), 1) for i in range(17)]
    too_heavy = [(Backend("e", "e", 80, "/", None), routing.MAX_WEIGHT + 1)]
    bad = [model_service.http_route(f"svc{i}", NS, b) for i, b in enumerate((too_many, too_heavy))]
    failures = schemas.validate(bad).failures
    assert len(failures) == 2, failures
    assert "at most 16 items" in failures[0] + failures[1]


def test_route_status_is_the_typed_routing_ready_condition() -> None:
    assert model_service.route_status(accepted_route()) == kit.Condition(
        "RoutingReady", True, "Accepted", "the control-plane gateway accepted the HTTPRoute"
    )
    refused = model_service.route_status(accepted_route("False", "NotAllowedByListeners"))
    assert (refused.type, refused.status, refused.reason) == (
        "RoutingReady",
        False,
        "NotAllowedByListeners",
    )
