"""ModelService: one OpenAI-compatible URL in front of every ModelEndpoint it selects.

The service composes one Gateway API HTTPRoute in its own namespace, attached to the
control-plane Gateway (``modelplane`` in ``modelplane-system``, composed by the
InferenceGateway; its listener admits routes from every namespace). The route matches
``/<namespace>/<name>/`` and sends each request to one of the selected endpoints'
Services, rewriting the prefix to that endpoint's ``rewritePath``.

How it is built:

- **Requirements.** Every call asks for the InferenceGateway ``default`` and, per
  ``spec.endpoints[i]``, the ModelEndpoints its ``matchLabels`` select in the service's
  own namespace (requirement ``endpoints-<i>``). They depend on the spec alone, so
  Crossplane sees the same requirements on every call. Until Crossplane has answered
  them all, the function only asks. An endpoint of another namespace is never routed
  to, even if it were offered: a team's service cannot reach into another team's
  namespace, and the backend Service stays in the route's namespace, so no
  ReferenceGrant is needed.
- **Backends.** An endpoint is routable once its ``status.routing.backendName`` says
  its Service exists. Each backend gets its own URLRewrite filter
  (``HTTPBackendRef.filters``): the path prefix becomes the endpoint's ``rewritePath``,
  and for a DNS upstream the Host header becomes its name. One rule per distinct
  ``rewritePath`` would not work: rules with the same match do not share traffic, the
  first one takes it all. Traefik, the control-plane gateway, applies filters per
  backendRef; Envoy Gateway, for one, does not apply a path rewrite there, which is
  why the control plane runs Traefik.
- **Weights.** :func:`modelplane.domain.routing.split`: each entry gets
  ``weight / sum(weights)`` of the traffic, evenly over its endpoints, in the smallest
  exact integers within Gateway API's bound. An endpoint several entries select is one
  backend carrying the sum of their shares. A rule holds at most 16 backends; beyond
  that, endpoints are kept in turns per entry and the condition says which were left
  out.
- **Conditions.** ``EndpointsResolved`` (False ``NoEndpoints``, with a warning event,
  when nothing matches) and ``RoutingReady`` (from the HTTPRoute's ``Accepted`` and
  ``ResolvedRefs`` status for the control-plane Gateway). ``status.address`` is
  ``http://<gateway address>/<namespace>/<name>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from pydantic import ValidationError

from modelplane import kit
from modelplane.domain import api, routing
from modelplane.domain.conditions import Condition
from modelplane.models.modelendpoint import ModelEndpoint
from modelplane.models.modelservice import ModelService

API_VERSION = api.MODELPLANE
GATEWAY = "gateway"
GATEWAY_XR_NAME = "default"
ROUTE = "httproute"
ROUTING_READY = "RoutingReady"
ENDPOINTS_RESOLVED = "EndpointsResolved"


def endpoints_requirement(index: int) -> str:
    """Return the requirement name under which entry ``index``'s endpoints arrive."""
    return f"endpoints-{index}"


@dataclass(frozen=True)
class Selection:
    """One ``spec.endpoints`` entry as written."""

    weight: int
    match_labels: dict[str, str]

    def describe(self, index: int) -> str:
        """Return ``spec.endpoints[i] (k=v, ...)`` for messages."""
        labels = ", ".join(f"{k}={v}" for k, v in sorted(self.match_labels.items()))
        return f"spec.endpoints[{index}] ({labels or 'every endpoint'})"


@dataclass(frozen=True)
class Backend:
    """A routable endpoint: where its Service is and how to rewrite requests for it."""

    endpoint: str
    service: str
    port: int
    rewrite_path: str
    hostname: str | None


@dataclass(frozen=True)
class Resolved:
    """What the entries select: routable backends, and what matched but is not routable."""

    entries: list[routing.Entry]
    backends: dict[str, Backend]
    waiting: list[str]


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    """Require the gateway and endpoints, then compose the HTTPRoute and report."""
    xr = kit.composite(req)
    identity = kit.meta(xr)
    service = ModelService.model_validate(xr)
    name, namespace = identity.name, identity.namespace
    selections = read_selections(service)
    _require(rsp, namespace, selections)
    wanted = [GATEWAY] + [endpoints_requirement(i) for i in range(len(selections))]
    if not all(kit.was_required(req, w) for w in wanted):
        kit.asking(req, rsp)  # Crossplane fetches what we asked for and calls again
        return kit.Released.NOTHING
    gateway = _gateway(req)
    gateway_address = kit.text(gateway, "status", "address")
    resolved = resolve(req, namespace, selections)
    result = routing.split(resolved.entries)
    endpoints_ok = _report_endpoints(rsp, selections, resolved, result)
    routed = _compose_route(req, rsp, name, namespace, resolved, result, gateway)
    if gateway_address:
        address = routing.service_address(gateway_address, namespace, name)
        kit.set_status(rsp, {"address": address})
    kit.keep_status(req, rsp, "address")  # clients hold it; a gateway flap must not take it
    kit.set_ready(rsp, endpoints_ok and routed)
    # The route is the whole answer: anything else observed is an old pipeline's leftover.
    return kit.left_out(req, rsp, "not the service's HTTPRoute")


def read_selections(service: ModelService) -> list[Selection]:
    """Return the service's ``spec.endpoints`` entries (weight 1 when unset)."""
    entries = service.spec.endpoints if service.spec else []
    return [
        Selection(
            weight=1 if e.weight is None else e.weight,
            match_labels=dict(e.selector.match_labels),
        )
        for e in entries
    ]


def _require(
    rsp: fnv1.RunFunctionResponse, namespace: str, selections: Sequence[Selection]
) -> None:
    kit.require(rsp, GATEWAY, API_VERSION, "InferenceGateway", match_name=GATEWAY_XR_NAME)
    for index, selection in enumerate(selections):
        name = endpoints_requirement(index)
        kit.require(
            rsp,
            name,
            API_VERSION,
            "ModelEndpoint",
            match_labels=selection.match_labels,
            namespace=namespace,
        )


def _gateway(req: fnv1.RunFunctionRequest) -> dict[str, Any] | None:
    """Return the InferenceGateway ``default``, or None if it does not exist."""
    found = kit.required(req, GATEWAY)
    return next((g for g in found if kit.text(g, "metadata", "name") == GATEWAY_XR_NAME), None)


def resolve(
    req: fnv1.RunFunctionRequest, namespace: str, selections: Sequence[Selection]
) -> Resolved:
    """Match each entry's endpoints in ``namespace`` and keep the routable ones."""
    entries: list[routing.Entry] = []
    backends: dict[str, Backend] = {}
    waiting: set[str] = set()
    for index, selection in enumerate(selections):
        found = [
            endpoint
            for endpoint in kit.required(req, endpoints_requirement(index))
            if _selected(endpoint, namespace, selection)
        ]
        names = []
        for endpoint in found:
            backend = backend_of(endpoint)
            endpoint_name = kit.text(endpoint, "metadata", "name")
            if backend is None:
                waiting.add(endpoint_name)
                continue
            backends[backend.endpoint] = backend
            names.append(backend.endpoint)
        entries.append(routing.Entry(selection.weight, tuple(sorted(set(names)))))
    return Resolved(entries, backends, sorted(waiting))


def _selected(endpoint: Mapping[str, Any], namespace: str, selection: Selection) -> bool:
    labels = {str(k): str(v) for k, v in kit.mapping(endpoint, "metadata", "labels").items()}
    return (
        kit.text(endpoint, "metadata", "namespace") == namespace
        and bool(kit.text(endpoint, "metadata", "name"))
        and routing.matches(selection.match_labels, labels)
    )


def backend_of(raw: Mapping[str, Any]) -> Backend | None:
    """Return the endpoint's backend, or None until its Service exists (or if it is invalid)."""
    try:
        endpoint = ModelEndpoint.model_validate(raw)
    except ValidationError:
        return None
    routed = endpoint.status.routing if endpoint.status else None
    if endpoint.spec is None or routed is None or not routed.backend_name:
        return None
    try:
        upstream = routing.parse_url(endpoint.spec.url)
    except routing.InvalidURLError:
        return None
    return Backend(
        endpoint=str((endpoint.metadata or {})["name"]),
        service=routed.backend_name,
        port=upstream.port,
        rewrite_path=endpoint.spec.rewrite_path or "/",
        hostname=upstream.host if upstream.kind is routing.HostKind.DNS else None,
    )


def _report_endpoints(
    rsp: fnv1.RunFunctionResponse,
    selections: Sequence[Selection],
    resolved: Resolved,
    result: routing.Split,
) -> bool:
    if not result.weights:
        unresolved = _no_endpoints(selections, resolved)
        kit.set_condition(rsp, unresolved)
        if unresolved.reason == "NoEndpoints":
            kit.warn(rsp, unresolved.message)
        return False
    shares = routing.entry_shares(resolved.entries, result.as_dict())
    parts = [
        _entry_summary(i, s, e, share)
        for i, (s, e, share) in enumerate(zip(selections, resolved.entries, shares, strict=True))
    ]
    notes = []
    if resolved.waiting:
        notes.append(f"not ready yet: {', '.join(resolved.waiting)}")
    if result.dropped:
        notes.append(
            f"left out, as a route holds at most {routing.MAX_BACKENDS} backends: "
            + ", ".join(result.dropped)
        )
    if not result.exact:
        notes.append(f"weights rounded to stay within {routing.MAX_WEIGHT}")
    count = len(result.weights)
    message = f"routes to {count} endpoint{'s' if count != 1 else ''}: " + "; ".join(parts)
    message += "".join(f" ({note})" for note in notes)
    kit.set_condition(rsp, ENDPOINTS_RESOLVED, True, "EndpointsResolved", message)
    if result.dropped:
        kit.warn(rsp, message)
    return True


def _no_endpoints(selections: Sequence[Selection], resolved: Resolved) -> Condition:
    """The ``EndpointsResolved`` condition when nothing can be routed to."""
    if not selections:
        message = "spec.endpoints is empty: the service selects nothing"
        return Condition(ENDPOINTS_RESOLVED, False, "NoEndpoints", message)
    if resolved.waiting:
        message = "the selected endpoints have no backend yet: " + ", ".join(resolved.waiting)
        return Condition(ENDPOINTS_RESOLVED, False, "EndpointsNotReady", message)
    described = "; ".join(s.describe(i) for i, s in enumerate(selections))
    message = f"no ModelEndpoint in this namespace matches {described}"
    return Condition(ENDPOINTS_RESOLVED, False, "NoEndpoints", message)


def _entry_summary(index: int, selection: Selection, entry: routing.Entry, share: Fraction) -> str:
    count = len(entry.endpoints)
    if not count:
        return f"{selection.describe(index)} matches no ready endpoint"
    percent = f"{float(share) * 100:.4g}%"
    return f"{selection.describe(index)} {percent} over {count}"


def _compose_route(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    name: str,
    namespace: str,
    resolved: Resolved,
    result: routing.Split,
    gateway: Mapping[str, Any] | None,
) -> bool:
    observed = kit.observed(req, ROUTE)
    if observed is None and not ((gateway or {}).get("status") or {}).get("address"):
        # Without a ready gateway the route has nothing to attach to (and, on a fresh
        # control plane, no CRD to be stored in). Once it exists it stays.
        if gateway is not None:
            reason, message = "GatewayNotReady", 'the InferenceGateway "default" has no address yet'
        else:
            reason = "GatewayNotFound"
            message = 'no InferenceGateway named "default": create it to expose services'
        kit.set_condition(rsp, ROUTING_READY, False, reason, message)
        return False
    backends = [(resolved.backends[n], w) for n, w in result.weights]
    routing_ready = route_status(observed)
    accepted = routing_ready.status is True
    kit.compose(rsp, ROUTE, http_route(name, namespace, backends), ready=accepted)
    kit.set_condition(rsp, routing_ready)
    return accepted


def http_route(
    name: str, namespace: str, backends: Sequence[tuple[Backend, int]]
) -> dict[str, Any]:
    """Return the HTTPRoute: one rule, one weighted backendRef per endpoint."""
    prefix = routing.route_prefix(namespace, name)
    return {
        "apiVersion": api.GATEWAY_API,
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "parentRefs": [
                {
                    "group": api.GATEWAY_GROUP,
                    "kind": "Gateway",
                    "namespace": routing.GATEWAY_NAMESPACE,
                    "name": routing.GATEWAY_NAME,
                    "sectionName": routing.GATEWAY_LISTENER,
                }
            ],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": prefix}}],
                    "backendRefs": [_backend_ref(b, w) for b, w in backends],
                }
            ],
        },
    }


def _backend_ref(backend: Backend, weight: int) -> dict[str, Any]:
    rewrite: dict[str, Any] = {
        "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": backend.rewrite_path}
    }
    if backend.hostname:
        rewrite["hostname"] = backend.hostname
    return {
        "group": "",
        "kind": "Service",
        "name": backend.service,
        "port": backend.port,
        "weight": weight,
        "filters": [{"type": "URLRewrite", "urlRewrite": rewrite}],
    }


def route_status(route: Mapping[str, Any] | None) -> Condition:
    """Read whether the control-plane Gateway accepted the route, and why not: the
    ``RoutingReady`` condition."""
    if route is None:
        return _routing(False, "RoutePending", "creating the HTTPRoute")
    parents = kit.maps(route, "status", "parents")
    ours = next((p for p in parents if _is_our_gateway(kit.mapping(p, "parentRef"))), None)
    if ours is None:
        return _routing(False, "RoutePending", "waiting for the gateway to accept the HTTPRoute")
    conditions = {c.get("type"): c for c in kit.maps(ours, "conditions")}
    accepted = conditions.get("Accepted") or {}
    if accepted.get("status") != "True":
        reason = str(accepted.get("reason") or "NotAccepted")
        message = str(accepted.get("message") or "the gateway did not accept the route")
        return _routing(False, reason, message)
    refs = conditions.get("ResolvedRefs") or {}
    if refs.get("status") == "False":
        reason = str(refs.get("reason") or "UnresolvedRefs")
        return _routing(
            False, reason, str(refs.get("message") or "the gateway cannot resolve a backend")
        )
    return _routing(True, "Accepted", "the control-plane gateway accepted the HTTPRoute")


def _routing(accepted: bool, reason: str, message: str) -> Condition:
    return Condition(ROUTING_READY, accepted, reason, message)


def _is_our_gateway(ref: Mapping[str, Any]) -> bool:
    return (
        ref.get("name") == routing.GATEWAY_NAME
        and ref.get("namespace", routing.GATEWAY_NAMESPACE) == routing.GATEWAY_NAMESPACE
        and ref.get("kind", "Gateway") == "Gateway"
    )
