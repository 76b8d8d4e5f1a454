"""InferenceGateway: the control plane's front door, Traefik behind one Gateway API Gateway.

The singleton ``default`` installs, step by step, through the ServingStack's gate
(:func:`modelplane.domain.stack.gate`): each step is composed only once the steps it
needs are ready in the observed state, and kept from then on, so a flapping condition
never tears a working install down:

1. **Gateway API CRDs**: a provider-helm Release of Envoy Gateway's
   ``gateway-crds-helm`` chart with only the standard-channel Gateway API CRDs enabled
   (no Envoy Gateway CRDs). A dedicated CRD chart keeps the CRDs in its templates, so
   Helm upgrades them, and makes them one Release's job: the Traefik chart stopped
   bundling them (and ``traefik-crds`` is deprecated), and Helm never upgrades CRDs it
   installed from a chart's ``crds/`` folder. The chart version is the ServingStack's
   pin (:data:`GATEWAY_API_CRDS`), as the API has no field for it. A Release
   references a chart by name and version; nothing is downloaded when rendering.
2. **Traefik** (with ``loadBalancer: MetalLB``, also **MetalLB**, in parallel): Release
   ``traefik`` of chart ``traefik`` at ``spec.traefik.version`` into
   ``traefik-system`` (so its Service is ``traefik-system/traefik``), with the
   Kubernetes Gateway provider on, the CRD and Ingress providers off, no chart-made
   Gateway or GatewayClass (this function makes its own), and ``skipCRDs``: step 1
   owns the Gateway API CRDs, and the Traefik CRDs are not used. Traefik copies its
   Service's load-balancer address to the Gateway's status.
3. **MetalLB's address pool**, once MetalLB is ready: an IPAddressPool from
   ``spec.traefik.metallb.addressPool`` and an L2Advertisement of it.
4. **GatewayClass and Gateway**, once Traefik is ready: GatewayClass ``modelplane``
   (controller ``traefik.io/gateway-controller``) and Gateway ``modelplane`` in
   ``modelplane-system`` with one HTTP listener, ``http``, that admits HTTPRoutes from
   every namespace (each ModelService's route lives in its own namespace). The
   listener's port is 8000, Traefik's ``web`` entry point, because Traefik's Gateway
   provider binds listeners to entry points by port; its Service exposes that entry
   point on port 80, so clients use ``http://<address>/``.

``status.address`` is the Gateway's ``status.addresses[0].value``; ``ControllerReady``
is True once the Gateway is programmed and has an address. Any name but ``default``
composes nothing and says so.

Teardown runs the steps backwards: each step's Usage keeps what it needs (the CRDs,
Traefik, MetalLB) until it is gone (:mod:`modelplane.domain.teardown`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.domain import api, routing, stack, teardown
from modelplane.domain.conditions import Condition
from modelplane.models.inferencegateway import InferenceGateway

SINGLETON = "default"
READY = "ControllerReady"

HELM_API = api.HELM
GATEWAY_API = api.GATEWAY_API
METALLB_API = "metallb.io/v1beta1"
PROVIDER_CONFIG = {"kind": "ClusterProviderConfig", "name": "default"}

GATEWAY_API_CRDS = stack.CHARTS[stack.GATEWAY_API_CRDS]
"""Envoy Gateway's CRD chart, pinned once (in :data:`modelplane.domain.stack.CHARTS`) for
the control plane and every workload cluster: Gateway API v1.5.1, whose standard
channel still serves the v1 GatewayClass, Gateway and HTTPRoute Traefik v3.6 reads."""

TRAEFIK_REPOSITORY = "https://traefik.github.io/charts"
DEFAULT_TRAEFIK_VERSION = "40.2.0"
"""The XRD's default for spec.traefik.version, for a composite that reaches us without it."""
TRAEFIK_NAMESPACE = "traefik-system"
TRAEFIK_WEB_PORT = 8000
GATEWAY_CONTROLLER = "traefik.io/gateway-controller"

METALLB_REPOSITORY = "https://metallb.github.io/metallb"
METALLB_VERSION = "0.15.2"
"""The MetalLB chart, pinned: the API has no field for it."""
METALLB_NAMESPACE = "metallb-system"
POOL_NAME = "modelplane"

CRDS = "gateway-api-crds"
TRAEFIK = "traefik"
METALLB = "metallb"
POOL = "metallb-pool"
ADVERTISEMENT = "metallb-l2advertisement"
GATEWAY_CLASS = "gatewayclass"
GATEWAY = "gateway"
METALLB_KEYS = (METALLB, POOL, ADVERTISEMENT)


@dataclass(frozen=True)
class Settings:
    """What the spec asks for."""

    traefik_version: str
    metallb_pool: str | None


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    """Compose the next install steps and report how far the gateway has come."""
    gateway = InferenceGateway.model_validate(kit.composite(req))
    name = str((gateway.metadata or {}).get("name", ""))
    if name != SINGLETON:
        message = (
            f'the InferenceGateway is a singleton named "{SINGLETON}"; '
            f'this one is named "{name}" and installs nothing'
        )
        kit.set_condition(rsp, _not_ready("NotSingleton", message))
        kit.warn(rsp, message)
        kit.set_ready(rsp, False)
        return kit.Released.NOTHING
    settings = read_settings(gateway)
    waiting = _compose_steps(req, rsp, settings)
    # Teardown in order: a step goes before the steps it needs.
    unordered = kit.order_teardown(
        req, rsp, lambda found: teardown.step_edges(plan(settings), found)
    )
    released = kit.Released.of(unordered, "ordering usages of what is no longer composed")
    if settings.metallb_pool is None:
        released = kit.Released.of(
            [*METALLB_KEYS, *unordered],
            "spec.traefik.loadBalancer is not MetalLB; ordering usages of what is not composed",
        )
    address = gateway_address(kit.observed(req, GATEWAY))
    if address:
        kit.set_status(rsp, {"address": address})
    if waiting is None and not address:
        waiting = _not_ready("WaitingForAddress", "the Gateway has no address yet")
    kit.set_condition(rsp, waiting or Condition(READY, True, "Ready", f"Traefik serves {address}"))
    kit.set_ready(rsp, waiting is None)
    return released


def read_settings(gateway: InferenceGateway) -> Settings:
    """Return the chart version and, with MetalLB, its address pool."""
    traefik = gateway.spec.traefik if gateway.spec else None
    if traefik is None:
        return Settings(traefik_version=DEFAULT_TRAEFIK_VERSION, metallb_pool=None)
    metallb = traefik.load_balancer == "MetalLB" and traefik.metallb is not None
    return Settings(
        traefik_version=traefik.version or DEFAULT_TRAEFIK_VERSION,
        metallb_pool=traefik.metallb.address_pool if metallb and traefik.metallb else None,
    )


def plan(settings: Settings) -> tuple[stack.Step, ...]:
    """Return the install steps in order, each after the steps it needs."""
    steps = [
        stack.Step(CRDS, "the Gateway API CRDs", crds_release()),
        stack.Step(
            TRAEFIK, f"Traefik {settings.traefik_version}", traefik_release(settings), (CRDS,)
        ),
    ]
    if settings.metallb_pool is not None:
        pool = f"MetalLB with the pool {settings.metallb_pool}"
        steps += [
            stack.Step(METALLB, pool, metallb_release()),
            stack.Step(POOL, pool, address_pool(settings.metallb_pool), (METALLB,)),
            stack.Step(ADVERTISEMENT, pool, l2_advertisement(), (METALLB,)),
        ]
    steps += [
        stack.Step(GATEWAY_CLASS, "the Gateway", gateway_class(), (TRAEFIK,)),
        stack.Step(GATEWAY, "the Gateway", gateway(), (TRAEFIK,)),
    ]
    return tuple(steps)


# Why the gateway is not ready, by the first step (in plan order) that is not.
_WAITING = {
    CRDS: ("InstallingGatewayAPI", "installing {label}"),
    TRAEFIK: ("InstallingTraefik", "installing {label}"),
    METALLB: ("InstallingMetalLB", "installing {label}"),
    POOL: ("InstallingMetalLB", "installing {label}"),
    ADVERTISEMENT: ("InstallingMetalLB", "installing {label}"),
    GATEWAY_CLASS: ("GatewayPending", "waiting for Traefik to program the Gateway"),
    GATEWAY: ("GatewayPending", "waiting for Traefik to program the Gateway"),
}


def _compose_steps(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, settings: Settings
) -> Condition | None:
    """Compose every step the stack's gate lets through; return the ``ControllerReady``
    condition that says what is still awaited, if anything is."""
    steps = plan(settings)
    ready = {
        step.key: kit.composed_ready(step.resource, found)
        for step in steps
        if (found := kit.observed(req, step.key)) is not None
    }
    progress = stack.gate(steps, ready)
    for step in progress.composed:
        kit.compose(rsp, step.key, step.resource, ready=ready.get(step.key, False))
    pending = {s.key for s in progress.installing} | {s.key for s, _ in progress.blocked}
    first = next((s for s in steps if s.key in pending), None)
    if first is None:
        return None
    reason, message = _WAITING[first.key]
    return _not_ready(reason, message.format(label=first.label))


def _not_ready(reason: str, message: str) -> Condition:
    return Condition(READY, False, reason, message)


def gateway_address(observed: Mapping[str, Any] | None) -> str:
    """Return the Gateway's first status address ("" until it has one)."""
    addresses = kit.maps(observed, "status", "addresses")
    return kit.text(addresses[0], "value") if addresses else ""


def _release(name: str, namespace: str, chart: Mapping[str, str], **params: Any) -> dict[str, Any]:
    return {
        "apiVersion": HELM_API,
        "kind": "Release",
        "metadata": {"name": name, "namespace": routing.GATEWAY_NAMESPACE},
        "spec": {
            "providerConfigRef": dict(PROVIDER_CONFIG),
            "forProvider": {"chart": dict(chart), "namespace": namespace, **params},
        },
    }


def crds_release() -> dict[str, Any]:
    """Return the Release that installs the standard-channel Gateway API CRDs."""
    chart = {
        "name": GATEWAY_API_CRDS.name,
        "repository": GATEWAY_API_CRDS.repository,
        "version": GATEWAY_API_CRDS.version,
    }
    values = {
        "crds": {
            "gatewayAPI": {"enabled": True, "channel": "standard"},
            "envoyGateway": {"enabled": False},
        }
    }
    return _release(CRDS, routing.GATEWAY_NAMESPACE, chart, values=values)


def traefik_release(settings: Settings) -> dict[str, Any]:
    """Return the Release that installs Traefik with its Gateway API provider."""
    chart = {
        "name": "traefik",
        "repository": TRAEFIK_REPOSITORY,
        "version": settings.traefik_version,
    }
    values = {
        "providers": {
            "kubernetesGateway": {"enabled": True},
            "kubernetesCRD": {"enabled": False},
            "kubernetesIngress": {"enabled": False},
        },
        "gateway": {"enabled": False},
        "gatewayClass": {"enabled": False},
        "ingressClass": {"enabled": False},
    }
    return _release(TRAEFIK, TRAEFIK_NAMESPACE, chart, skipCRDs=True, values=values)


def metallb_release() -> dict[str, Any]:
    """Return the Release that installs MetalLB."""
    chart = {"name": "metallb", "repository": METALLB_REPOSITORY, "version": METALLB_VERSION}
    return _release(METALLB, METALLB_NAMESPACE, chart)


def address_pool(addresses: str) -> dict[str, Any]:
    """Return the MetalLB IPAddressPool the gateway's Service takes its address from."""
    return _metallb("IPAddressPool", {"addresses": [addresses]})


def l2_advertisement() -> dict[str, Any]:
    """Return the L2Advertisement that announces the pool on the local network."""
    return _metallb("L2Advertisement", {"ipAddressPools": [POOL_NAME]})


def _metallb(kind: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": METALLB_API,
        "kind": kind,
        "metadata": {"name": POOL_NAME, "namespace": METALLB_NAMESPACE},
        "spec": dict(spec),
    }


def gateway_class() -> dict[str, Any]:
    """Return the GatewayClass Traefik's Gateway provider serves."""
    return {
        "apiVersion": GATEWAY_API,
        "kind": "GatewayClass",
        "metadata": {"name": routing.GATEWAY_NAME},
        "spec": {"controllerName": GATEWAY_CONTROLLER},
    }


def gateway() -> dict[str, Any]:
    """Return the control-plane Gateway every ModelService's HTTPRoute attaches to."""
    return {
        "apiVersion": GATEWAY_API,
        "kind": "Gateway",
        "metadata": {"name": routing.GATEWAY_NAME, "namespace": routing.GATEWAY_NAMESPACE},
        "spec": {
            "gatewayClassName": routing.GATEWAY_NAME,
            "listeners": [
                {
                    "name": routing.GATEWAY_LISTENER,
                    "protocol": "HTTP",
                    "port": TRAEFIK_WEB_PORT,
                    "allowedRoutes": {
                        "namespaces": {"from": "All"},
                        "kinds": [{"group": api.GATEWAY_GROUP, "kind": "HTTPRoute"}],
                    },
                }
            ],
        },
    }
