"""Whether the ModelServices that select an endpoint route to it: its ``Routed`` condition.

A ModelEndpoint is a backend; the ModelServices whose ``spec.endpoints`` select it put
its Service in their HTTPRoute (named like the service, in its namespace) on their next
reconcile. Until they have, the endpoint serves nothing, even though it is Ready.
``Routed`` says so, the way a load balancer controller's pod readiness gate says a new
pod is registered with the balancer: a ModelDeployment's rolling update counts a
replica as available only once its endpoint is ``Routed`` (see
:mod:`modelplane.domain.rollout`), so it never takes the next replica down before the
service sends traffic to the one just updated.

- True, ``Routed``: every selecting service's route names the endpoint's backend.
- True, ``NotSelected``: no service selects it, so there is nothing to wait for.
- True, ``NoRoute``: the services that select it have no route yet (no gateway).
- False, ``RoutePending``: a selecting service's route exists and does not name it yet.

A selecting service without a route routes nothing at all, so it is not waited for: the
rollout would otherwise stall on something no replica can change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from modelplane.domain.conditions import Condition
from modelplane.domain.routing import matches

CONDITION = "Routed"
ROUTED = "Routed"
NOT_SELECTED = "NotSelected"
NO_ROUTE = "NoRoute"
PENDING = "RoutePending"


@dataclass(frozen=True)
class Service:
    """A ModelService as an endpoint sees it.

    Attributes:
        name: Its name (its HTTPRoute's too).
        selectors: Each ``spec.endpoints[].selector.matchLabels``.
        backends: The Services its HTTPRoute sends to; None when it has no route.
    """

    name: str
    selectors: tuple[Mapping[str, str], ...]
    backends: frozenset[str] | None


def routed(labels: Mapping[str, str], backend: str, services: Sequence[Service]) -> Condition:
    """Return the endpoint's ``Routed`` condition, given its labels and backend Service."""
    selecting = sorted(
        (s for s in services if any(matches(sel, labels) for sel in s.selectors)),
        key=lambda s: s.name,
    )
    if not selecting:
        return Condition(CONDITION, True, NOT_SELECTED, "no ModelService selects this endpoint")
    pending = [s.name for s in selecting if s.backends is not None and backend not in s.backends]
    if pending:
        message = f"ModelService {', '.join(pending)} does not route to Service {backend} yet"
        return Condition(CONDITION, False, PENDING, message)
    names = ", ".join(s.name for s in selecting if s.backends is not None)
    if not names:
        message = f"ModelService {', '.join(s.name for s in selecting)} has no route yet"
        return Condition(CONDITION, True, NO_ROUTE, message)
    return Condition(CONDITION, True, ROUTED, f"ModelService {names} routes to Service {backend}")
