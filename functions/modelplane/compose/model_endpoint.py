"""ModelEndpoint: one reachable backend, made something the control-plane gateway routes to.

A ModelService's HTTPRoute can only name Kubernetes Services as backends, so each
endpoint composes, in its own namespace, a selectorless Service plus an EndpointSlice
that holds the endpoint's address. The Service is named after the endpoint (see
:func:`modelplane.domain.routing.backend_name`); ``status.routing.backendName`` carries
that name once both objects exist, and a ModelService routes to it from then on.

**IP addresses** (a workload cluster's gateway, e.g. ``http://172.18.0.5/ml-team/r/v1``)
go in an EndpointSlice of ``addressType`` IPv4 or IPv6.

**DNS names** (an external provider, e.g. ``https://api.together.xyz/``) go in an
EndpointSlice of ``addressType`` FQDN. The control-plane gateway is Traefik through its
Kubernetes Gateway provider, and that provider refuses Services of type ExternalName as
HTTPRoute backends ("type ExternalName is not supported for Kubernetes Service
reference"; traefik/traefik#12950 asks for it and is still open), so ExternalName is
not an option. The provider does read the backend's EndpointSlices and dials each
address as given, resolving a host name itself, so an FQDN slice reaches the provider.
Kubernetes' own proxies ignore FQDN slices, which is harmless: only the gateway uses
this Service.

**https upstreams**: the Service port is named ``https`` and carries ``appProtocol:
https``, which is how Traefik's Gateway provider decides to dial TLS. Traefik then
verifies the upstream's certificate against the system roots, with the URL's host as
SNI, which is what a public provider needs. A private CA or a certificate that does
not name the address would need a Gateway API BackendTLSPolicy (Traefik supports it),
which the API has no field for and the control plane's RBAC does not grant, so none is
composed. The ModelService sets the Host header to a DNS upstream's name (URLRewrite's
``hostname``), since providers behind a CDN route on it.

**Routed**: the endpoint requires the ModelServices of its namespace and their HTTPRoutes
(each named like its service) and reports ``Routed``
(:func:`modelplane.domain.routed.routed`): True once every service that selects it routes
to its Service. A ModelDeployment's rolling update waits for it before it takes the next
replica down, as a Deployment waits on a pod's readiness gate.

An invalid ``spec.url`` composes nothing new and says what is wrong in ``RoutingReady``;
what an earlier valid URL composed stays as it is until the URL is fixed.
"""

from __future__ import annotations

from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from pydantic import ValidationError

from modelplane import kit
from modelplane.domain import api, routing
from modelplane.domain.routed import Service, routed
from modelplane.models.modelendpoint import ModelEndpoint

SERVICE = "service"
ENDPOINT_SLICE = "endpointslice"
MANAGED_BY = "modelplane.ai"
SERVICES = "services"
ROUTES = "routes"


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    """Compose the endpoint's Service and EndpointSlice, and report whether they exist."""
    raw = kit.composite(req)
    identity = kit.meta(raw)
    name, namespace = identity.name, identity.namespace
    url = str((raw.get("spec") or {}).get("url", ""))
    try:
        upstream = routing.parse_url(url)
        ModelEndpoint.model_validate(raw)
    except routing.InvalidURLError as err:
        shown = routing.redact_url(url)
        _refuse(req, rsp, "InvalidURL", f"spec.url {shown!r} cannot be routed to: {err}")
        return kit.Released.NOTHING
    except ValidationError as err:
        _refuse(req, rsp, "InvalidSpec", kit.summarize(err))
        return kit.Released.NOTHING
    backend = routing.backend_name(name)
    built = {
        SERVICE: service(backend, namespace, upstream),
        ENDPOINT_SLICE: endpoint_slice(backend, namespace, upstream),
    }
    exists = {key: kit.observed(req, key) is not None for key in built}
    for key, manifest in built.items():
        kit.compose(rsp, key, manifest, ready=exists[key])
    _report(rsp, backend, namespace, upstream, ready=all(exists.values()))
    _report_routed(req, rsp, identity, backend)
    # The Service and EndpointSlice are the whole answer: anything else is a leftover.
    return kit.left_out(req, rsp, "not the endpoint's Service or EndpointSlice")


def _report_routed(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, identity: kit.Meta, backend: str
) -> None:
    """Require the namespace's ModelServices and HTTPRoutes; say whether they route here."""
    kit.require(rsp, SERVICES, api.MODELPLANE, "ModelService", match_labels={},
                namespace=identity.namespace)  # fmt: skip
    kit.require(rsp, ROUTES, api.GATEWAY_API, "HTTPRoute", match_labels={},
                namespace=identity.namespace)  # fmt: skip
    if not (kit.was_required(req, SERVICES) and kit.was_required(req, ROUTES)):
        return  # Crossplane fetches them and calls again; Routed is unknown until then
    routes = {
        kit.text(r, "metadata", "name"): frozenset(
            str(ref.get("name", ""))
            for rule in kit.maps(r, "spec", "rules")
            for ref in kit.maps(rule, "backendRefs")
        )
        for r in kit.required(req, ROUTES)
    }
    services = [
        Service(
            name,
            tuple(
                {str(k): str(v) for k, v in kit.mapping(e, "selector", "matchLabels").items()}
                for e in kit.maps(s, "spec", "endpoints")
            ),
            routes.get(name),
        )
        for s in kit.required(req, SERVICES)
        if (name := kit.text(s, "metadata", "name"))
    ]
    kit.set_condition(rsp, routed(identity.labels, backend, services))


def _refuse(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, reason: str, message: str
) -> None:
    """Route nowhere new; a backend that already exists stays as it is until the spec is fixed."""
    if kit.hold_and_wait(req, rsp, "RoutingReady", reason, message):
        kit.keep_status(req, rsp, "routing")  # backendName stands while what it names is held


def _report(
    rsp: fnv1.RunFunctionResponse,
    backend: str,
    namespace: str,
    upstream: routing.Upstream,
    *,
    ready: bool,
) -> None:
    target = f"{upstream.scheme}://{_host_port(upstream)}"
    if ready:
        kit.set_status(rsp, {"routing": {"backendName": backend}})
        message = f"Service {namespace}/{backend} routes to {target}"
        kit.set_condition(rsp, "RoutingReady", True, "BackendReady", message)
    else:
        message = f"creating Service and EndpointSlice {namespace}/{backend} for {target}"
        kit.set_condition(rsp, "RoutingReady", False, "BackendPending", message)
    kit.set_ready(rsp, ready)


def _host_port(upstream: routing.Upstream) -> str:
    host = f"[{upstream.host}]" if upstream.kind is routing.HostKind.IPV6 else upstream.host
    return f"{host}:{upstream.port}"


def _port(upstream: routing.Upstream) -> dict[str, Any]:
    return {
        "name": upstream.scheme,
        "port": upstream.port,
        "protocol": "TCP",
        "appProtocol": upstream.scheme,
    }


def service(name: str, namespace: str, upstream: routing.Upstream) -> dict[str, Any]:
    """Return the selectorless Service a route names as its backend."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "type": "ClusterIP",
            "ports": [{**_port(upstream), "targetPort": upstream.port}],
        },
    }


def endpoint_slice(name: str, namespace: str, upstream: routing.Upstream) -> dict[str, Any]:
    """Return the EndpointSlice that gives the Service its one address."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "kubernetes.io/service-name": name,
                "endpointslice.kubernetes.io/managed-by": MANAGED_BY,
            },
        },
        "addressType": upstream.kind.value,
        "endpoints": [{"addresses": [upstream.host], "conditions": {"ready": True}}],
        "ports": [_port(upstream)],
    }
