"""A template edit rolls out a few replicas at a time (compose/model_deployment/rolling.py)."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane.domain import rollout
from modelplane.domain.api import CLUSTER_LABEL, INDEX_LABEL, READY_TEMPLATE_FIELD
from modelplane.planning import rolling

from tests.compose.deployments import (
    as_fleet,
    events,
    inference_cluster,
    model_deployment,
    of_kind,
    ready_status,
    status,
)
from tests.compose.deployments import call as call_function
from tests.requests import conditions

OLD, NEW, BAD = "vllm/vllm-openai:v0.23.0", "vllm/vllm-openai:v0.24.0", "vllm/vllm-openai:broken"


def routed_endpoints(fleet: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The world once the ModelServices caught up: each Ready replica's ModelEndpoint,
    composed for the template it runs, reports Routed."""
    out = {}
    for replica in fleet:
        if not rolling_ready(replica):
            continue
        labels = replica["metadata"]["labels"]
        key = f"endpoint-{labels[CLUSTER_LABEL]}-{labels[INDEX_LABEL]}"
        out[key] = {
            "apiVersion": "modelplane.ai/v1alpha1",
            "kind": "ModelEndpoint",
            "metadata": {
                "name": replica["metadata"]["name"],
                "labels": {k: v for k, v in labels.items() if k == rolling.HASH_LABEL},
            },
            "status": {"conditions": [{"type": "Routed", "status": "True", "reason": "Routed"}]},
        }
    return out


def rolling_ready(replica: dict[str, Any]) -> bool:
    found = (replica.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in found)


def call(
    xr: dict[str, Any],
    clusters: Sequence[dict[str, Any]] = (),
    fleet: Sequence[dict[str, Any]] = (),
    *,
    observed: dict[str, dict[str, Any]] | None = None,
) -> fnv1.RunFunctionResponse:
    """The function, with every Ready replica of ``fleet`` routed to unless ``observed``
    says what exists."""
    seen = routed_endpoints(fleet) if observed is None else observed
    return call_function(xr, clusters, fleet, observed=seen)


def _three_clusters(nodes: int = 1) -> list[dict[str, Any]]:
    return [inference_cluster(n, (("gpu-l4", nodes, ()),)) for n in ("a", "b", "c")]


def _deployment(
    replicas: int = 3, image: str = OLD, strategy: dict[str, Any] | None = None
) -> dict[str, Any]:
    xr = model_deployment(replicas=replicas)
    _set_image(xr, image)
    if strategy is not None:
        xr["spec"]["strategy"] = {"rollingUpdate": strategy}
    return xr


def _set_image(xr: dict[str, Any], image: str) -> None:
    for engine in xr["spec"]["template"]["spec"]["engines"]:
        for m in engine["members"]:
            m["template"]["spec"]["containers"][0]["image"] = image


def _images(rsp: fnv1.RunFunctionResponse) -> dict[str, str]:
    return {
        key: r["spec"]["engines"][0]["members"][0]["template"]["spec"]["containers"][0]["image"]
        for key, r in of_kind(rsp, "ModelReplica").items()
    }


def _fleet(rsp: fnv1.RunFunctionResponse, ready: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The composed replicas as they then exist; those in ``ready`` (keys) report Ready."""
    out = []
    for key, composed in of_kind(rsp, "ModelReplica").items():
        replica = copy.deepcopy(composed)
        if key in ready:
            replica["status"] = ready_status(replica)
        out.append(replica)
    return out


def _running(strategy: dict[str, Any] | None, nodes: int = 1) -> tuple[Any, list[dict[str, Any]]]:
    """Three Ready replicas on OLD, on three clusters of ``nodes`` nodes each."""
    clusters = _three_clusters(nodes)
    first = call(_deployment(strategy=strategy), clusters)
    return clusters, as_fleet(first, ready=True)


def test_an_image_edit_updates_max_unavailable_replicas_and_holds_the_rest_exactly() -> None:
    clusters, fleet = _running({"maxSurge": 0, "maxUnavailable": 1})
    edited = _deployment(image=NEW, strategy={"maxSurge": 0, "maxUnavailable": 1})
    rsp = call(edited, clusters, fleet)
    assert _images(rsp) == {
        "replica-a-0": NEW,
        "replica-b-0": OLD,
        "replica-c-0": OLD,
    }
    old = {r["metadata"]["name"]: r for r in fleet}
    for key in ("replica-b-0", "replica-c-0"):
        held = of_kind(rsp, "ModelReplica")[key]
        was = old[held["metadata"]["name"]]
        assert held["spec"] == was["spec"]
        assert held["metadata"]["labels"] == was["metadata"]["labels"]
    assert of_kind(rsp, "ModelReplica")["replica-a-0"]["metadata"]["labels"][
        rolling.HASH_LABEL
    ] == rolling.template_hash(edited)
    # The updated replica restarts: its Ready (of its old spec) no longer counts.
    assert status(rsp)["replicas"] == {"total": 3, "ready": 2, "updated": 1, "updatedReady": 0}
    ok, reason, message = conditions(rsp)["Progressing"]
    assert (ok, reason) == ("True", "ReplicasUpdating")
    assert message.startswith("1 of 3 replicas updated, 0 of them Ready")
    assert (
        "2 old held: 2 available (Ready and routed to), and maxUnavailable 1 keeps at least 2 of 3 available"
        in message
    )


def _roll(
    xr: dict[str, Any], clusters: list[dict[str, Any]], fleet: list[dict[str, Any]], bad: bool
) -> Iterator[tuple[fnv1.RunFunctionResponse, list[dict[str, Any]]]]:
    """Pass after pass: replicas composed on a good image turn Ready by the next pass."""
    for _ in range(8):
        rsp = call(xr, clusters, fleet)
        image_ok = {k for k, v in _images(rsp).items() if not (bad and v == BAD)}
        fleet = _fleet(rsp, ready=sorted(image_ok))
        yield rsp, fleet


@pytest.mark.parametrize(
    ("strategy", "nodes"),
    [
        ({"maxSurge": 0, "maxUnavailable": 1}, 1),
        (None, 2),
        ({"maxSurge": 1, "maxUnavailable": 1}, 2),
    ],
)
def test_the_rollout_completes_keeping_two_of_three_ready(
    strategy: dict[str, Any] | None, nodes: int
) -> None:
    clusters, fleet = _running(strategy, nodes)
    edited = _deployment(image=NEW, strategy=strategy)
    ready_seen = []
    for rsp, after in _roll(edited, clusters, fleet, bad=False):
        # What serves during this pass: the replicas Ready before it, still composed as they were.
        before = {r["metadata"]["name"]: r for r in fleet if r.get("status")}
        kept = [
            r
            for r in of_kind(rsp, "ModelReplica").values()
            if r["metadata"]["name"] in before
            and r["spec"] == before[r["metadata"]["name"]]["spec"]
        ]
        ready_seen.append(len(kept))
        fleet = after
    assert min(ready_seen) >= 2
    assert set(_images(rsp).values()) == {NEW}
    assert len(_images(rsp)) == 3
    assert conditions(rsp)["Progressing"][:2] == ("True", "RolloutComplete")


def test_surge_replicas_need_room_and_without_it_the_rollout_says_so() -> None:
    clusters, fleet = _running(None)  # 25%/25% of 3: maxSurge 1, maxUnavailable 0
    rsp = call(_deployment(image=NEW), clusters, fleet)
    assert _images(rsp) == {"replica-a-0": OLD, "replica-b-0": OLD, "replica-c-0": OLD}
    message = conditions(rsp)["Progressing"][2]
    assert "no room for 1 surge replica, updating within maxUnavailable" in message
    assert "maxUnavailable 0 keeps at least 3 of 3 available" in message

    clusters, fleet = _running(None, nodes=2)
    rsp = call(_deployment(image=NEW), clusters, fleet)
    assert sorted(_images(rsp).values()) == [OLD, OLD, OLD, NEW]
    assert conditions(rsp)["ReplicasScheduled"][:2] == ("True", "ReplicasCreated")


def test_a_bad_image_stops_after_max_unavailable_and_reports_past_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    strategy = {"maxSurge": 0, "maxUnavailable": 1}
    clusters, fleet = _running(strategy)
    edited = _deployment(image=BAD, strategy=strategy)
    edited["spec"]["progressDeadlineSeconds"] = 60
    passes = list(_roll(edited, clusters, fleet, bad=True))
    for rsp, _ in passes:
        assert sorted(_images(rsp).values()) == [BAD, OLD, OLD]
    rsp, fleet = passes[-1]
    ok, reason, message = conditions(rsp)["Progressing"]
    assert (ok, reason) == ("True", "ReplicasUpdating")
    # The condition as Crossplane stamped it, 61 s ago: past the deadline.
    edited["status"] = {
        "conditions": [
            {
                "type": "Progressing",
                "status": ok,
                "reason": reason,
                "message": message,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }
    monkeypatch.setattr(rolling, "clock", lambda: 1767225661.0)  # 2026-01-01T00:01:01Z
    late = call(edited, clusters, fleet)
    ok, reason, stopped = conditions(late)["Progressing"]
    assert (ok, reason) == ("False", rollout.DEADLINE_EXCEEDED)
    assert stopped.startswith(message + "; no progress for 60s")
    assert any("rollout of 3 replicas stopped" in e for e in events(late))
    assert sorted(_images(late).values()) == [BAD, OLD, OLD]  # the others keep serving


@pytest.mark.parametrize(
    ("strategy", "field"),
    [
        ({"maxSurge": 0, "maxUnavailable": "0%"}, "may not both be 0"),
        ({"maxSurge": "ten"}, "spec.strategy.rollingUpdate.maxSurge"),
        ({"maxUnavailable": -2}, "spec.strategy.rollingUpdate.maxUnavailable"),
    ],
)
def test_a_bad_strategy_keeps_what_runs_and_names_the_field(
    strategy: dict[str, Any], field: str
) -> None:
    clusters, fleet = _running(None)
    xr = _deployment(image=NEW, strategy=strategy)
    observed = {f"replica-{r['spec']['clusterName']}-0": r for r in fleet}
    rsp = call(xr, clusters, fleet, observed=observed)
    assert _images(rsp) == dict.fromkeys(observed, OLD)
    ok, _reason, message = conditions(rsp)["ReplicasScheduled"]
    assert ok == "False"
    assert field in message
    assert any(field in e for e in events(rsp))


def test_replicas_from_before_rolling_updates_are_current_when_their_spec_is() -> None:
    clusters, fleet = _running(None)
    for r in fleet:
        del r["metadata"]["labels"][rolling.HASH_LABEL]
    rsp = call(_deployment(), clusters, fleet)
    assert status(rsp)["replicas"]["updated"] == 3
    assert conditions(rsp)["Progressing"][:2] == ("True", "RolloutComplete")
    edited = call(
        _deployment(image=NEW, strategy={"maxSurge": 0, "maxUnavailable": 1}), clusters, fleet
    )
    assert sorted(_images(edited).values()) == [OLD, OLD, NEW]


def test_a_ready_condition_older_than_the_replicas_generation_counts_for_nothing() -> None:
    strategy = {"maxSurge": 0, "maxUnavailable": 1}
    clusters, fleet = _running(strategy)
    edited = _deployment(image=NEW, strategy=strategy)
    first = call(edited, clusters, fleet)
    # The API server bumped the updated replica's generation; its Ready is the old one's.
    after = []
    for replica in _fleet(first, ready=["replica-a-0", "replica-b-0", "replica-c-0"]):
        replica["metadata"]["generation"] = 2 if _image_of(replica) == NEW else 1
        replica["status"]["conditions"][0]["observedGeneration"] = 1
        after.append(replica)
    rsp = call(edited, clusters, after)
    assert sorted(_images(rsp).values()) == [OLD, OLD, NEW]
    assert status(rsp)["replicas"]["updatedReady"] == 0
    for replica in after:  # its own reconcile saw generation 2: Ready counts now
        replica["status"]["conditions"][0]["observedGeneration"] = replica["metadata"]["generation"]
    rsp = call(edited, clusters, after)
    assert sorted(_images(rsp).values()) == [OLD, NEW, NEW]


def test_a_ready_judged_on_the_old_template_counts_for_nothing_on_the_new_one() -> None:
    """The fleet's race: the replica's reconcile of its old spec ends after the deployment
    wrote the new one, and Crossplane stamps that Ready with the new generation (it takes
    the generation from its status write's answer). Only ``readyTemplateHash``, written
    with the verdict, tells which template the Ready was judged on."""
    strategy = {"maxSurge": 0, "maxUnavailable": 1}
    clusters, fleet = _running(strategy)
    edited = _deployment(image=NEW, strategy=strategy)
    first = call(edited, clusters, fleet)
    was = {r["metadata"]["name"]: r["metadata"]["labels"][rolling.HASH_LABEL] for r in fleet}
    after = []
    for replica in _fleet(first, ready=["replica-a-0", "replica-b-0", "replica-c-0"]):
        replica["metadata"]["generation"] = 2
        replica["status"]["conditions"][0]["observedGeneration"] = 2  # looks current
        replica["status"][READY_TEMPLATE_FIELD] = was[replica["metadata"]["name"]]
        after.append(replica)
    rsp = call(edited, clusters, after)
    assert sorted(_images(rsp).values()) == [OLD, OLD, NEW]
    assert status(rsp)["replicas"]["updatedReady"] == 0
    # Its own reconcile of the new template found the workload running and available.
    for replica in after:
        replica["status"][READY_TEMPLATE_FIELD] = replica["metadata"]["labels"][rolling.HASH_LABEL]
    rsp = call(edited, clusters, after)
    assert status(rsp)["replicas"]["updatedReady"] == 1
    assert sorted(_images(rsp).values()) == [OLD, NEW, NEW]


def _image_of(replica: dict[str, Any]) -> str:
    member = replica["spec"]["engines"][0]["members"][0]
    return str(member["template"]["spec"]["containers"][0]["image"])


def _mid_rollout(strategy: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One replica on NEW and Ready, two on OLD and Ready; a fourth cluster with room."""
    clusters, fleet = _running(strategy)
    clusters.append(inference_cluster("d"))
    first = call(_deployment(image=NEW, strategy=strategy), clusters, fleet)
    return clusters, _fleet(first, ready=["replica-a-0", "replica-b-0", "replica-c-0"])


def test_scaling_up_during_a_rollout_places_replicas_on_the_new_template() -> None:
    strategy = {"maxSurge": 0, "maxUnavailable": 1}
    clusters, fleet = _mid_rollout(strategy)
    scaled = _deployment(replicas=4, image=NEW, strategy=strategy)
    rsp = call(scaled, clusters, fleet)
    assert _images(rsp) == {
        "replica-a-0": NEW,
        "replica-b-0": OLD,  # 4 wanted, 3 Ready (d is starting): at the floor, held
        "replica-c-0": OLD,
        "replica-d-0": NEW,  # the scale-up's replica, on the new template
    }


def test_scaling_down_during_a_rollout_keeps_the_floor() -> None:
    strategy = {"maxSurge": 0, "maxUnavailable": 1}
    clusters, fleet = _mid_rollout(strategy)
    rsp = call(_deployment(replicas=2, image=NEW, strategy=strategy), clusters, fleet)
    images = _images(rsp)
    assert len(images) == 2
    assert sorted(images.values()).count(NEW) >= 1
    assert status(rsp)["replicas"]["ready"] >= 1  # 2 wanted - maxUnavailable 1


def test_an_edit_during_a_rollout_rolls_the_newest_template_within_the_same_budget() -> None:
    strategy = {"maxSurge": 0, "maxUnavailable": 1}
    clusters, fleet = _mid_rollout(strategy)
    newest = "vllm/vllm-openai:v0.25.0"
    rsp = call(_deployment(image=newest, strategy=strategy), clusters, fleet)
    images = _images(rsp)
    assert sorted(images.values()).count(newest) == 1  # every replica is old to it
    assert len(images) == 3
    message = conditions(rsp)["Progressing"][2]
    assert message.startswith("1 of 3 replicas updated")


def test_a_replica_taking_a_new_template_leaves_the_service_and_a_flapping_one_does_not() -> None:
    strategy = {"maxSurge": 0, "maxUnavailable": 1}
    clusters, fleet = _running(strategy)
    steady = call(_deployment(strategy=strategy), clusters, fleet)
    endpoints = of_kind(steady, "ModelEndpoint")
    assert len(endpoints) == 3
    routed = {"conditions": [{"type": "Routed", "status": "True", "reason": "Routed"}]}
    observed = {**of_kind(steady, "ModelReplica")}
    observed.update({k: dict(e, status=routed) for k, e in endpoints.items()})
    # A flap: replica a not Ready on the same template keeps its endpoint.
    flapping = [dict(r, status={}) if r["spec"]["clusterName"] == "a" else r for r in fleet]
    rsp = call(_deployment(strategy=strategy), clusters, flapping, observed=observed)
    assert sorted(of_kind(rsp, "ModelEndpoint")) == sorted(endpoints)
    # An image edit: the replica updated in place leaves the service at once.
    rsp = call(_deployment(image=NEW, strategy=strategy), clusters, fleet, observed=observed)
    assert _images(rsp)["replica-a-0"] == NEW
    assert sorted(of_kind(rsp, "ModelEndpoint")) == ["endpoint-b-0", "endpoint-c-0"]


def test_the_next_replica_waits_until_the_service_routes_to_the_updated_one() -> None:
    strategy = {"maxSurge": 0, "maxUnavailable": 1}
    clusters, fleet = _running(strategy)
    edited = _deployment(image=NEW, strategy=strategy)
    first = call(edited, clusters, fleet)
    ready = _fleet(first, ready=["replica-a-0", "replica-b-0", "replica-c-0"])
    # Replica a runs NEW and is Ready; its endpoint, composed for OLD, still says Routed.
    stale = routed_endpoints(fleet)
    rsp = call(edited, clusters, ready, observed=stale)
    assert sorted(_images(rsp).values()) == [OLD, OLD, NEW]
    assert "endpoint-a-0" in of_kind(rsp, "ModelEndpoint")  # composed anew, for NEW
    assert "2 available (Ready and routed to)" in conditions(rsp)["Progressing"][2]
    # Composed for NEW but the ModelService does not route to it yet: still held.
    pending = routed_endpoints(ready)
    pending["endpoint-a-0"]["status"]["conditions"][0].update(status="False", reason="RoutePending")
    rsp = call(edited, clusters, ready, observed=pending)
    assert sorted(_images(rsp).values()) == [OLD, OLD, NEW]
    # Routed: the next replica takes the template.
    rsp = call(edited, clusters, ready, observed=routed_endpoints(ready))
    assert sorted(_images(rsp).values()) == [OLD, NEW, NEW]


def test_a_cluster_without_a_gateway_has_no_endpoint_to_wait_for() -> None:
    strategy = {"maxSurge": 0, "maxUnavailable": 1}
    placed = call(_deployment(strategy=strategy), _three_clusters())
    fleet = as_fleet(placed, ready=True)
    # The clusters lose their gateway address (degraded): placed replicas stay.
    clusters = [inference_cluster(n, gateway="") for n in ("a", "b", "c")]
    edited = _deployment(image=NEW, strategy=strategy)
    first = call(edited, clusters, fleet, observed={})
    ready = _fleet(first, ready=["replica-a-0", "replica-b-0", "replica-c-0"])
    rsp = call(edited, clusters, ready, observed={})
    assert of_kind(rsp, "ModelEndpoint") == {}
    assert sorted(_images(rsp).values()) == [OLD, NEW, NEW]
