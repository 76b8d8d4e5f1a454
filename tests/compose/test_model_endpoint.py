"""ModelEndpoint: a Service plus an EndpointSlice the gateway routes to, or a clear InvalidURL."""

from __future__ import annotations

from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit, registry, runtime
from modelplane.dev import render
from modelplane.domain import routing

from tests.compose import routing_cases
from tests.requests import conditions, request


def endpoint(
    name: str = "qwen3-8b-7323a",
    url: str = "http://172.18.0.5/ml-team/qwen3-8b-7323a/v1",
    *,
    namespace: str = "ml-team",
) -> dict[str, Any]:
    """A ModelEndpoint as a ModelDeployment composes it."""
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"url": url, "rewritePath": f"/{namespace}/{name}/"},
    }


def _run(xr: dict[str, Any], observed: dict[str, Any] | None = None) -> fnv1.RunFunctionResponse:
    return runtime.run(request(xr, observed=observed), registry.COMPOSERS)


def _desired(rsp: fnv1.RunFunctionResponse) -> dict[str, dict[str, Any]]:
    return {k: kit.struct_to_dict(v.resource) for k, v in rsp.desired.resources.items()}


def _status(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    return dict(kit.struct_to_dict(rsp.desired.composite.resource).get("status", {}))


@pytest.mark.parametrize(
    ("url", "address_type", "address", "port", "scheme"),
    [
        pytest.param("http://172.18.0.5/ml-team/r/v1", "IPv4", "172.18.0.5", 80, "http", id="ipv4"),
        pytest.param(
            "http://[2001:db8::5]:8080/ml-team/r/v1", "IPv6", "2001:db8::5", 8080, "http", id="ipv6"
        ),
        pytest.param(
            "https://api.together.xyz/", "FQDN", "api.together.xyz", 443, "https", id="dns-https"
        ),
    ],
)
def test_composes_a_service_and_slice_for_the_url(
    url: str, address_type: str, address: str, port: int, scheme: str
) -> None:
    desired = _desired(_run(endpoint("kimi-k2-together", url)))
    want_port = {"name": scheme, "port": port, "protocol": "TCP", "appProtocol": scheme}
    assert desired == {
        "service": {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kimi-k2-together", "namespace": "ml-team"},
            "spec": {"type": "ClusterIP", "ports": [{**want_port, "targetPort": port}]},
        },
        "endpointslice": {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": "kimi-k2-together",
                "namespace": "ml-team",
                "labels": {
                    "kubernetes.io/service-name": "kimi-k2-together",
                    "endpointslice.kubernetes.io/managed-by": "modelplane.ai",
                },
            },
            "addressType": address_type,
            "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
            "ports": [want_port],
        },
    }


def test_backend_name_waits_until_both_objects_exist() -> None:
    rsp = _run(endpoint())
    assert "routing" not in _status(rsp)
    assert conditions(rsp)["RoutingReady"][:2] == ("False", "BackendPending")
    assert rsp.desired.composite.ready == fnv1.READY_FALSE
    assert [r.ready for r in rsp.desired.resources.values()] == [fnv1.READY_FALSE] * 2


def test_backend_name_is_published_once_the_backend_exists() -> None:
    first = _desired(_run(endpoint()))
    rsp = _run(endpoint(), observed=first)
    assert _status(rsp) == {"routing": {"backendName": "qwen3-8b-7323a"}}
    assert conditions(rsp)["RoutingReady"] == (
        "True",
        "BackendReady",
        "Service ml-team/qwen3-8b-7323a routes to http://172.18.0.5:80",
    )
    assert rsp.desired.composite.ready == fnv1.READY_UNSPECIFIED  # Crossplane derives Ready


def test_service_only_is_still_pending() -> None:
    first = _desired(_run(endpoint()))
    rsp = _run(endpoint(), observed={"service": first["service"]})
    assert "routing" not in _status(rsp)
    assert rsp.desired.resources["service"].ready == fnv1.READY_TRUE
    assert rsp.desired.resources["endpointslice"].ready == fnv1.READY_FALSE


def test_an_endpoint_name_that_is_no_service_name_gets_a_valid_one() -> None:
    desired = _desired(_run(endpoint("kimi.together")))
    name = desired["service"]["metadata"]["name"]
    assert name.startswith("kimi-together-")
    assert desired["endpointslice"]["metadata"]["labels"]["kubernetes.io/service-name"] == name


@pytest.mark.parametrize(
    ("url", "says"),
    [
        pytest.param("ftp://api.together.xyz/", "http or https", id="scheme"),
        pytest.param("https://key@api.together.xyz/", "credentials", id="userinfo"),
        pytest.param("https://u:key/9z@api.together.xyz/", "credentials", id="slash-password"),
        pytest.param("https://u:99/key@api.together.xyz/", "credentials", id="numeric-port"),
        pytest.param("http://10.0.0.1:99999/", "65535", id="port"),
        pytest.param("http://[::1]/", "loopback", id="loopback"),
        pytest.param("", "empty", id="missing"),
    ],
)
def test_an_invalid_url_composes_nothing_and_says_why(url: str, says: str) -> None:
    rsp = _run(endpoint(url=url))
    status, reason, message = conditions(rsp)["RoutingReady"]
    assert (status, reason) == ("False", "InvalidURL")
    assert says in message
    assert f"spec.url {routing.redact_url(url)!r}" in message
    assert "key" not in message.replace("api.together.xyz", ""), "credentials never echoed"
    assert "9z" not in message
    assert len(rsp.desired.resources) == 0
    assert [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING] == [message]
    assert rsp.desired.composite.ready == fnv1.READY_FALSE


def test_an_invalid_url_keeps_the_backend_an_earlier_url_composed() -> None:
    first = _desired(_run(endpoint()))
    observed = {key: {**manifest, "status": {}} for key, manifest in first.items()}
    xr = endpoint(url="ftp://api.together.xyz/")
    xr["status"] = {"routing": {"backendName": first["service"]["metadata"]["name"]}}
    rsp = _run(xr, observed=observed)
    assert _desired(rsp) == first
    assert conditions(rsp)["RoutingReady"][:2] == ("False", "InvalidURL")
    shown = kit.struct_to_dict(rsp.desired.composite.resource)
    assert shown["status"]["routing"] == xr["status"]["routing"]


def test_an_invalid_rewrite_path_composes_nothing_and_says_why() -> None:
    xr = endpoint()
    xr["spec"]["rewritePath"] = "no-leading-slash"
    rsp = _run(xr)
    status, reason, message = conditions(rsp)["RoutingReady"]
    assert (status, reason) == ("False", "InvalidSpec")
    assert "spec.rewritePath" in message
    assert len(rsp.desired.resources) == 0


def test_the_same_request_gives_the_same_response() -> None:
    req = request(endpoint())
    first = runtime.run(req, registry.COMPOSERS).SerializeToString(deterministic=True)
    assert runtime.run(req, registry.COMPOSERS).SerializeToString(deterministic=True) == first


@pytest.mark.crank
def test_the_docs_external_endpoint_renders_an_fqdn_backend(functions: render.Functions) -> None:
    got = routing_cases.render_case(functions, "external-provider", "ModelEndpoint", observed=False)
    assert sorted(d["kind"] for d in got.composed) == ["EndpointSlice", "Service"]
    assert got.one("EndpointSlice")["addressType"] == "FQDN"
    assert got.one("EndpointSlice")["endpoints"][0]["addresses"] == ["api.together.xyz"]
    assert got.one("Service")["spec"]["ports"][0]["appProtocol"] == "https"
    assert got.condition("RoutingReady")["reason"] == "BackendPending"
    assert "routing" not in got.composite.get("status", {})


@pytest.mark.crank
def test_the_docs_external_endpoint_publishes_its_backend(functions: render.Functions) -> None:
    got = routing_cases.render_case(functions, "external-provider", "ModelEndpoint")
    assert got.composite["status"]["routing"] == {"backendName": "kimi-k2-together"}
    assert got.condition("RoutingReady")["status"] == "True"
    assert got.condition("Ready")["status"] == "True"


@pytest.mark.crank
def test_composed_backends_match_their_schemas() -> None:
    urls = ["http://172.18.0.5/v1", "http://[2001:db8::5]:8080/v1", "https://api.together.xyz/"]
    docs = [
        d for i, url in enumerate(urls) for d in _desired(_run(endpoint(f"e{i}", url))).values()
    ]
    routing_cases.check_schemas(docs)


# --- Routed: whether the ModelServices that select it route to it ------------------------------


def _service(name: str, match_labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelService",
        "metadata": {"name": name, "namespace": "ml-team"},
        "spec": {"endpoints": [{"selector": {"matchLabels": match_labels}}]},
    }


def _route(name: str, backends: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": "ml-team"},
        "spec": {"rules": [{"backendRefs": [{"name": b, "port": 80} for b in backends]}]},
    }


def _routed_run(
    services: list[dict[str, Any]], routes: list[dict[str, Any]]
) -> fnv1.RunFunctionResponse:
    xr = endpoint()
    xr["metadata"]["labels"] = {"modelplane.ai/deployment": "qwen3-8b"}
    req = request(xr, required={"services": services, "routes": routes})
    for name in ("services", "routes"):
        req.required_resources[name].SetInParent()  # answered, even when empty
    return runtime.run(req, registry.COMPOSERS)


def test_requires_the_namespaces_services_and_routes_and_says_nothing_until_answered() -> None:
    rsp = _run(endpoint())
    asked = {
        name: (sel.api_version, sel.kind, sel.namespace)
        for name, sel in rsp.requirements.resources.items()
    }
    assert asked == {
        "services": ("modelplane.ai/v1alpha1", "ModelService", "ml-team"),
        "routes": ("gateway.networking.k8s.io/v1", "HTTPRoute", "ml-team"),
    }
    assert "Routed" not in conditions(rsp)
    assert _desired(rsp)  # the Service and EndpointSlice do not wait for it


def test_routed_follows_the_selecting_services_route() -> None:
    selecting = _service("qwen", {"modelplane.ai/deployment": "qwen3-8b"})
    other = _service("llama", {"modelplane.ai/deployment": "llama"})
    pending = _routed_run([selecting, other], [_route("qwen", ["other-backend"])])
    assert conditions(pending)["Routed"] == (
        "False",
        "RoutePending",
        "ModelService qwen does not route to Service qwen3-8b-7323a yet",
    )
    done = _routed_run([selecting, other], [_route("qwen", ["qwen3-8b-7323a"])])
    assert conditions(done)["Routed"][:2] == ("True", "Routed")
    alone = _routed_run([other], [_route("llama", [])])
    assert conditions(alone)["Routed"][:2] == ("True", "NotSelected")
