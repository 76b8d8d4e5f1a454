"""ServingStack: install what an inference cluster needs to serve models, in order.

The steps: read the stack; plan its components (see ``modelplane.domain.stack``: Helm
Releases and provider-kubernetes Objects through the provider config that reaches the
cluster: ``spec.providerConfigRef``; without it, provider configs the stack builds from
``spec.secrets``, or without those, the ClusterProviderConfig named after the stack);
compose every step whose prerequisites are ready in the observed state, and every step
already composed; publish ``status.gateway.address`` from the Gateway's observed status;
and say what the stack still waits for:

- ``ComponentsReady``: every component is installed and ready (False ``Installing``,
  naming what is not and what each blocked step waits for);
- ``GatewayReady``: the Gateway ``modelplane-system/modelplane`` is programmed and has
  an address (False ``WaitingForGateway`` or ``WaitingForAddress``).

The stack is Ready when both are True: its InferenceCluster then reports the gateway.

Versions: ``spec.components.<name>.version`` wins, then ``spec.versions.<name>`` (names
matched without regard to case: ``gatewayApi`` is ``gatewayAPI``), then the pin. The
Gateway API CRDs ship in Envoy Gateway's CRD chart, so ``spec.versions.gatewayApi`` names
the Gateway API release it bundles, not a chart: it is checked against the pinned chart's
bundle, and a different one is reported in a warning (choose ``envoyGateway`` instead).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pydantic
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.domain import stack as domain
from modelplane.domain import teardown, workload
from modelplane.models.servingstack import Components, Secret, ServingStack

COMPONENTS = "ComponentsReady"
GATEWAY = "GatewayReady"


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    """Compose the stack's next steps and report what it waits for."""
    xr = kit.composite(req)
    found = _stack(xr)
    if isinstance(found, str):
        # What is installed stays installed, as it is, until the spec is fixed.
        kit.hold_and_wait(req, rsp, COMPONENTS, "InvalidSpec", found, keep=("gateway",))
        kit.set_condition(rsp, GATEWAY, False, "InvalidSpec", "nothing new is installed")
        return kit.Released.NOTHING
    stack, warnings = found
    for warning in warnings:
        kit.warn(rsp, warning)
    steps = domain.plan(stack)
    progress = domain.gate(steps, _observed(req))
    for step in progress.composed:
        kit.compose(rsp, step.key, step.resource)
    # Teardown in order: a step goes before the steps it needs (released by left_out).
    kit.order_teardown(req, rsp, lambda found: teardown.step_edges(steps, found))
    address, unreadable = domain.read_gateway_address(kit.observed(req, domain.GATEWAY_KEY))
    if unreadable is not None:
        kit.warn(rsp, f"Object {domain.GATEWAY_KEY}: {unreadable}; read as no address yet")
    if address:
        kit.set_status(rsp, {"gateway": {"address": address}})
    kit.keep_status(req, rsp, "gateway")  # a Gateway that flaps keeps its published address
    _report(rsp, progress, address)
    return kit.left_out(req, rsp, "components the spec no longer enables")


def _stack(xr: Mapping[str, Any]) -> tuple[domain.Stack, list[str]] | str:
    """Return the stack and what to warn about, or what is wrong with it."""
    try:
        spec = ServingStack.model_validate(xr).spec
    except pydantic.ValidationError as err:
        return f"the ServingStack is invalid: {kit.summarize(err)}"
    if spec is None:
        return "the ServingStack has no spec"
    meta = xr.get("metadata") or {}
    name = str(meta.get("name", ""))
    settings, warnings = _settings(spec.components, spec.versions or {})
    credentials = _credentials(spec.secrets or [])
    ref = spec.provider_config_ref
    if ref is not None:
        provider_config = domain.ProviderConfig(ref.name, ref.kind or "ProviderConfig")
        credentials = None  # the named config reaches the cluster; the Secrets are unused
    elif credentials is not None:
        provider_config = domain.ProviderConfig(name, "ProviderConfig")
    else:
        provider_config = domain.ProviderConfig(name, "ClusterProviderConfig")
    listeners = tuple(
        domain.Listener(listener.name, listener.port, listener.protocol)
        for listener in (spec.gateway.listeners if spec.gateway else None) or ()
    )
    stack = domain.Stack(
        name=name,
        namespace=str(meta.get("namespace") or domain.SYSTEM_NAMESPACE),
        cloud=domain.Cloud(spec.cloud or domain.Cloud.EXISTING.value),
        provider_config=provider_config,
        components=settings,
        credentials=credentials,
        listeners=listeners or domain.DEFAULT_LISTENERS,
    )
    return stack, warnings


def _settings(
    components: Components | None, versions: Mapping[str, str]
) -> tuple[dict[domain.Component, domain.Setting], list[str]]:
    raw = components.model_dump(by_alias=True) if components else {}
    by_name = {c.value.lower(): c for c in domain.Component}
    pinned: dict[domain.Component, str] = {}
    warnings = []
    for key, version in sorted(versions.items()):
        component = by_name.get(key.lower())
        if component is None:
            warnings.append(f"spec.versions.{key} names no component; ignored")
        elif component is domain.Component.GATEWAY_API:
            bundle = domain.GATEWAY_API_BUNDLE
            if version != bundle:
                warnings.append(
                    f"spec.versions.{key} is {version}, but the Gateway API CRDs come from "
                    f"Envoy Gateway's CRD chart, which installs Gateway API {bundle}; choose "
                    "the Envoy Gateway version instead"
                )
        else:
            pinned[component] = version
    settings = {}
    for component in domain.Component:
        given = raw.get(component.value) or {}
        enabled = given.get("enabled")
        settings[component] = domain.Setting(
            enabled=True if enabled is None else bool(enabled),
            version=given.get("version") or pinned.get(component),
        )
    return settings, warnings


def _credentials(secrets: Sequence[Secret]) -> domain.Credentials | None:
    """Return the Secrets to build provider configs from (None without a kubeconfig)."""
    kubeconfig = next((s for s in secrets if s.type == "Kubeconfig"), None)
    if kubeconfig is None:
        return None
    identity = next((s for s in secrets if s.type != "Kubeconfig"), None)
    return domain.Credentials(
        kubeconfig=domain.SecretKey(kubeconfig.name, kubeconfig.key),
        identity_type=identity.type if identity else None,
        identity=domain.SecretKey(identity.name, identity.key) if identity else None,
    )


def _observed(req: fnv1.RunFunctionRequest) -> dict[str, bool]:
    """Return whether each observed composed resource is ready, by key."""
    # Each by its kind's rule: a Release or an Object by its Ready condition, a provider
    # config once it exists.
    ready = {}
    for key in req.observed.resources:
        found = kit.observed(req, key) or {}
        ready[key] = kit.composed_ready(found, found)
    return ready


def _report(rsp: fnv1.RunFunctionResponse, progress: domain.Progress, address: str) -> None:
    installing = tuple(s for s in progress.installing if s.key != domain.GATEWAY_KEY)
    blocked = tuple((s, why) for s, why in progress.blocked if s.key != domain.GATEWAY_KEY)
    waiting = domain.Progress(progress.composed, installing, blocked).waiting()
    if waiting:
        kit.set_condition(
            rsp, COMPONENTS, False, "Installing", f"waiting for {kit.listed(waiting)}"
        )
    else:
        kit.set_condition(rsp, COMPONENTS, True, "Installed", "every component is ready")
    where = f"{domain.SYSTEM_NAMESPACE}/{workload.GATEWAY_NAME}"
    programmed = any(s.key == domain.GATEWAY_KEY for s in progress.composed) and not any(
        s.key == domain.GATEWAY_KEY for s in progress.installing
    )
    if not programmed:
        message = f"waiting for Envoy Gateway to program Gateway {where}"
        kit.set_condition(rsp, GATEWAY, False, "WaitingForGateway", message)
    elif not address:
        message = f"Gateway {where} has no address yet"
        kit.set_condition(rsp, GATEWAY, False, "WaitingForAddress", message)
    else:
        kit.set_condition(rsp, GATEWAY, True, "Programmed", f"Gateway {where} at {address}")
    kit.set_ready(rsp, progress.ready and bool(address))
