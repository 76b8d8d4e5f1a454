"""Building a response: composed resources, the composite's status and conditions, events.

Free functions with verb names, called module-qualified through the door
(``kit.set_condition(rsp, ...)``), as the SDK's ``response`` module does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, overload

from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.domain.conditions import Condition
from modelplane.kit.request import composite
from modelplane.kit.structs import struct_to_dict

READY = {True: fnv1.READY_TRUE, False: fnv1.READY_FALSE, None: fnv1.READY_UNSPECIFIED}


def compose(
    rsp: fnv1.RunFunctionResponse,
    key: str,
    manifest: Mapping[str, Any],
    *,
    ready: bool | None = None,
) -> None:
    """Add (or replace) the desired composed resource ``key``.

    Args:
        rsp: The response to write to.
        key: The composed resource's stable name within the composite.
        manifest: The resource's full manifest.
        ready: True or False to state readiness; None applies the rule for its kind
            (:func:`modelplane.kit.readiness.composed_ready`) once the function returns.
    """
    desired = rsp.desired.resources[key]
    desired.Clear()
    desired.resource.update(dict(manifest))
    desired.ready = READY[ready]


def set_status(rsp: fnv1.RunFunctionResponse, status: Mapping[str, Any]) -> None:
    """Merge ``status`` into the desired composite's status, field by top-level field."""
    fields = rsp.desired.composite.resource.fields
    if "status" not in fields:
        resource.update(rsp.desired.composite, {"status": dict(status)})
        return
    fields["status"].struct_value.update(dict(status))


def keep_status(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, *fields: str) -> None:
    """Publish again each top-level status field the composite already shows and this
    call did not set: others read it (a kubeconfig, a provider config, a gateway), and a
    dependency that flaps for a moment must not withdraw it from them."""
    shown = composite(req).get("status") or {}
    desired = struct_to_dict(rsp.desired.composite.resource).get("status") or {}
    kept = {f: shown[f] for f in fields if f in shown and f not in desired}
    if kept:
        set_status(rsp, kept)


def set_ready(rsp: fnv1.RunFunctionResponse, ready: bool | None) -> None:
    """Veto the composite's readiness when its own conditions say it is not ready.

    False makes the composite not Ready whatever its resources say. True and None let
    Crossplane's own rule decide (Ready once every composed resource is ready), so a
    function can never declare Ready over an unready resource.
    """
    rsp.desired.composite.ready = fnv1.READY_FALSE if ready is False else fnv1.READY_UNSPECIFIED


@overload
def set_condition(rsp: fnv1.RunFunctionResponse, condition: Condition, /) -> None: ...


@overload
def set_condition(
    rsp: fnv1.RunFunctionResponse,
    typ: str,
    status: bool | None,
    reason: str,
    message: str = "",
) -> None: ...


def set_condition(
    rsp: fnv1.RunFunctionResponse,
    typ: Condition | str,
    status: bool | None = None,
    reason: str = "",
    message: str = "",
) -> None:
    """Set one status condition on the composite (Crossplane stamps the transition time).

    Takes a :class:`~modelplane.domain.conditions.Condition`, or its four fields.
    """
    condition = typ if isinstance(typ, Condition) else Condition(typ, status, reason, message)
    response.set_conditions(
        rsp,
        resource.Condition(
            typ=condition.type,
            status=condition.word,
            reason=condition.reason,
            message=condition.message or None,
        ),
    )


def warn(rsp: fnv1.RunFunctionResponse, message: str) -> None:
    """Emit a warning result; Crossplane records it as a Warning event on the composite."""
    response.warning(rsp, message)


def inform(rsp: fnv1.RunFunctionResponse, message: str) -> None:
    """Emit a normal result; Crossplane records it as a Normal event on the composite."""
    response.normal(rsp, message)


def is_fatal(rsp: fnv1.RunFunctionResponse) -> bool:
    """Tell whether the response carries a Fatal result (Crossplane then applies nothing)."""
    return any(r.severity == fnv1.SEVERITY_FATAL for r in rsp.results)


def listed(items: Sequence[str], *, limit: int = 3, sep: str = "; ") -> str:
    """Name the first ``limit`` items and count the rest, so a condition message stays short."""
    if len(items) <= limit:
        return sep.join(items)
    return f"{sep.join(items[:limit])} and {len(items) - limit} more"
