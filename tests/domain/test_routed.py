"""A ModelEndpoint's Routed condition (modelplane.domain.routed): the rollout's readiness gate."""

from __future__ import annotations

from modelplane.domain import routed
from modelplane.domain.routed import Service

LABELS = {"modelplane.ai/deployment": "qwen-demo", "team": "ml"}


def test_routed_once_every_selecting_service_routes_to_its_backend() -> None:
    services = [
        Service("qwen", ({"modelplane.ai/deployment": "qwen-demo"},), frozenset({"ep-a", "ep-b"})),
        Service("all", ({},), frozenset({"ep-a"})),
        Service("other", ({"modelplane.ai/deployment": "llama"},), frozenset()),
    ]
    got = routed.routed(LABELS, "ep-a", services)
    assert (got.type, got.status, got.reason) == ("Routed", True, routed.ROUTED)
    assert got.message == "ModelService all, qwen routes to Service ep-a"


def test_pending_while_a_selecting_service_routes_elsewhere() -> None:
    services = [
        Service("qwen", ({"team": "ml"},), frozenset({"ep-b"})),
        Service("all", ({},), frozenset({"ep-a"})),
    ]
    got = routed.routed(LABELS, "ep-a", services)
    assert (got.status, got.reason) == (False, routed.PENDING)
    assert got.message == "ModelService qwen does not route to Service ep-a yet"


def test_nothing_to_wait_for_when_no_service_selects_it_or_none_has_a_route() -> None:
    other = Service("other", ({"team": "web"},), frozenset())
    got = routed.routed(LABELS, "ep-a", [other])
    assert (got.status, got.reason) == (True, routed.NOT_SELECTED)
    assert routed.routed(LABELS, "ep-a", []).reason == routed.NOT_SELECTED
    routeless = Service("qwen", ({"team": "ml"},), None)
    got = routed.routed(LABELS, "ep-a", [routeless, other])
    assert (got.status, got.reason) == (True, routed.NO_ROUTE)
    # A routeless one does not excuse one that has a route without the endpoint.
    waiting = Service("q2", ({},), frozenset({"ep-z"}))
    assert routed.routed(LABELS, "ep-a", [routeless, waiting]).status is False


def test_an_entry_matches_when_any_of_a_services_selectors_does() -> None:
    service = Service("mix", ({"team": "web"}, {"team": "ml"}), frozenset())
    assert routed.routed(LABELS, "ep-a", [service]).reason == routed.PENDING
