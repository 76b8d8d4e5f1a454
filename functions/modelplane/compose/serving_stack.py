"""ServingStack: install what an inference cluster needs to serve models, in order.

The steps: read the stack; plan its components (see ``modelplane.domain.stack``: Helm
Releases and provider-kubernetes Objects through the provider config the spec names);
compose every step whose prerequisites are ready in the observed state, and every step
already composed; publish ``status.gateway.address`` from the Gateway's observed status;
and say what the stack still waits for:

- ``ComponentsReady``: every component is installed and ready (False ``Installing``,
  naming what is not and what each blocked step waits for);
- ``GatewayReady``: the Gateway ``modelplane-system/modelplane`` is programmed and has
  an address (False ``WaitingForGateway`` or ``WaitingForAddress``).

The stack is Ready when both are True: its InferenceCluster then reports the gateway.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.compose import _kit as kit
from modelplane.domain import stack as domain
from modelplane.domain import workload
from modelplane.models.servingstack import Components, ServingStack

COMPONENTS = "ComponentsReady"
GATEWAY = "GatewayReady"


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """Compose the stack's next steps and report what it waits for."""
    xr = kit.composite(req)
    stack = _stack(xr)
    if isinstance(stack, str):
        # What is installed stays installed, as it is, until the spec is fixed.
        kit.hold(req, rsp)
        kit.waiting(rsp, COMPONENTS, "InvalidSpec", stack)
        kit.set_condition(rsp, GATEWAY, False, "InvalidSpec", "nothing new is installed")
        kit.keep_status(req, rsp, "gateway")
        kit.set_ready(rsp, False)
        return
    steps = domain.plan(stack)
    progress = domain.gate(steps, _observed(req))
    for step in progress.composed:
        kit.compose(rsp, step.key, step.resource)
    address = domain.gateway_address(kit.observed(req, domain.GATEWAY_KEY))
    if address:
        kit.set_status(rsp, {"gateway": {"address": address}})
    kit.keep_status(req, rsp, "gateway")  # a Gateway that flaps keeps its published address
    _report(rsp, progress, address)


def _stack(xr: Mapping[str, Any]) -> domain.Stack | str:
    """Return the stack, or what is wrong with it."""
    try:
        spec = ServingStack.model_validate(xr).spec
    except pydantic.ValidationError as err:
        return f"the ServingStack is invalid: {kit.summarize(err)}"
    if spec is None:
        return "the ServingStack has no spec"
    meta = xr.get("metadata") or {}
    ref = spec.provider_config_ref
    return domain.Stack(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace") or domain.SYSTEM_NAMESPACE),
        cloud=domain.Cloud(spec.cloud),
        provider_config=domain.ProviderConfig(ref.name, ref.kind or "ProviderConfig"),
        components=_settings(spec.components),
    )


def _settings(components: Components | None) -> dict[domain.Component, domain.Setting]:
    raw = components.model_dump(by_alias=True) if components else {}
    settings = {}
    for component in domain.Component:
        given = raw.get(component.value) or {}
        enabled = given.get("enabled")
        settings[component] = domain.Setting(
            enabled=True if enabled is None else bool(enabled), version=given.get("version")
        )
    return settings


def _observed(req: fnv1.RunFunctionRequest) -> dict[str, bool]:
    """Return whether each observed composed resource is ready, by key."""
    return {key: kit.is_ready(kit.observed(req, key)) for key in req.observed.resources}


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
