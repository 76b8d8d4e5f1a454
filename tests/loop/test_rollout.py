"""Rolling updates on the mini control plane: an image edit reaches three replicas a few
at a time, and a bad image stops at maxUnavailable while the others keep serving.

Every reconcile of the rollout is watched: at least ``spec.replicas - maxUnavailable``
replicas must be Ready, where a replica counts as Ready only when its Ready condition
speaks of its current spec (Crossplane stamps the generation it observed), and the
ModelService must route to at least as many: backends of its HTTPRoute whose
ModelEndpoint exists.
"""

from __future__ import annotations

from typing import Any

import pytest
from modelplane.dev.fakes.base import Key, Obj, describe, get_path
from modelplane.dev.fakes.kubernetes import NEVER_READY
from modelplane.dev.loop.fakes import Flap
from modelplane.dev.loop.harness import ControlPlane
from modelplane.dev.loop.records import Reconciled, history_text
from modelplane.planning import rolling

from tests.loop.conftest import Converged, Fleets
from tests.loop.contract import DEPLOYMENT, _admissible, _kind, _located, _own_replicas

FLEET = "getting-started"
CLUSTER = _kind("InferenceCluster", name="eks-us-east")
REPLICAS = 3
STRATEGY = {"maxSurge": 0, "maxUnavailable": 1}
PASSES = 12
NEW_IMAGE = "vllm/vllm-openai:v0.24.0"
BAD_IMAGE = f"vllm/vllm-openai:{NEVER_READY}"


def _fresh_ready(plane: ControlPlane, key: Key) -> bool:
    obj = plane.get(key)
    generation = get_path(obj, "metadata.generation")
    for cond in get_path(obj, "status.conditions") or ():
        if cond.get("type") == "Ready":
            stale = "observedGeneration" in cond and cond["observedGeneration"] != generation
            return cond.get("status") == "True" and not stale
    return False


def _routed(plane: ControlPlane) -> int:
    """The ModelServices' live backends: route backendRefs whose ModelEndpoint exists."""
    live = {
        get_path(plane.get(k), "status.routing.backendName") for k in plane.find("ModelEndpoint")
    }
    services = {(k[2], k[3]) for k in plane.find("ModelService")}
    return sum(
        1
        for k in plane.find("HTTPRoute")
        if (k[2], k[3]) in services
        for rule in get_path(plane.get(k), "spec.rules") or ()
        for ref in rule.get("backendRefs") or ()
        if ref.get("name") in live
    )


def _image(plane: ControlPlane, key: Key) -> str:
    member = plane.get(key)["spec"]["engines"][0]["members"][0]
    return str(member["template"]["spec"]["containers"][0]["image"])


def _set_image(image: str) -> Any:
    def edit(obj: Obj) -> None:
        for engine in obj["spec"]["template"]["spec"]["engines"]:
            for member in engine["members"]:
                member["template"]["spec"]["containers"][0]["image"] = image

    return edit


@pytest.fixture(scope="module")
def three_replicas(converged: Fleets) -> tuple[ControlPlane, Key]:
    """The getting-started fleet with room for three replicas on eks-us-east, running three."""
    done: Converged = converged.get(FLEET)
    plane = done.plane.clone()
    cluster = _located(plane, CLUSTER, "the getting-started cluster")

    def grow(obj: Obj) -> None:
        for pool in obj["spec"]["nodePools"]:
            pool["nodeCount"] = pool["maxNodeCount"] = REPLICAS

    _admissible(plane.edit(cluster, grow))
    deployment = _located(plane, DEPLOYMENT, "the getting-started ModelDeployment")

    def scale(obj: Obj) -> None:
        obj["spec"]["replicas"] = REPLICAS
        obj["spec"]["strategy"] = {"rollingUpdate": dict(STRATEGY)}

    _admissible(plane.edit(deployment, scale))
    records = plane.converge(PASSES)
    mine = _own_replicas(plane, deployment)
    if len(mine) != REPLICAS or not all(_fresh_ready(plane, k) for k in mine):
        pytest.fail(
            f"precondition: {describe(deployment)} should run {REPLICAS} Ready replicas:\n"
            f"{plane.report()}\nhistory:\n{history_text(records)}",
            pytrace=False,
        )
    return plane, deployment


def _roll(
    plane: ControlPlane, deployment: Key, image: str, at_least: int = 0
) -> tuple[list[str], list[int], Any]:
    """Edit the image and converge (``at_least`` passes, say while a flap lasts); return
    the drops below the floor and Ready per pass."""
    floor = REPLICAS - STRATEGY["maxUnavailable"]
    drops: list[str] = []
    timeline: list[int] = []

    def watch(cp: ControlPlane, result: Reconciled) -> None:
        mine = _own_replicas(cp, deployment)
        ready = [k for k in mine if _fresh_ready(cp, k)]
        where = f"pass {len(cp.history) + 1}, reconciling {describe(result.key)}"
        if len(ready) < floor:
            listed = ", ".join(f"{describe(k)} ({_image(cp, k)})" for k in ready)
            drops.append(f"{where}: {len(ready)} Ready: {listed or 'none'}")
        if _routed(cp) < floor:
            drops.append(f"{where}: the ModelService routes to {_routed(cp)}")

    plane.watchers.append(watch)
    _admissible(plane.edit(deployment, _set_image(image)))
    records = []
    for _ in range(PASSES + at_least):
        record = plane.run_pass()
        records.append(record)
        mine = _own_replicas(plane, deployment)
        timeline.append(sum(1 for k in mine if _fresh_ready(plane, k)))
        if record.quiet and len(records) >= at_least:
            break
    return drops, timeline, records


def test_an_image_edit_rolls_out_keeping_replicas_minus_max_unavailable_ready(
    three_replicas: tuple[ControlPlane, Key],
) -> None:
    plane, deployment = three_replicas
    plane = plane.clone()
    drops, timeline, records = _roll(plane, deployment, NEW_IMAGE)
    mine = _own_replicas(plane, deployment)
    outcome = (
        f"Ready per pass {timeline}; "
        + ", ".join(f"{describe(k)} {_image(plane, k)}" for k in mine)
        + f"\n{plane.state(deployment)}\nhistory:\n{history_text(records)}"
    )
    assert not drops, "\n".join(drops[:10]) + "\n" + outcome
    assert len(mine) == REPLICAS, outcome
    assert all(_image(plane, k) == NEW_IMAGE and _fresh_ready(plane, k) for k in mine), outcome
    hashes = {get_path(plane.get(k), f"metadata.labels.{rolling.HASH_LABEL}") for k in mine}
    assert len(hashes) == 1, outcome
    progressing = plane.conditions(deployment)["Progressing"]
    assert progressing["reason"] == "RolloutComplete", outcome
    assert get_path(plane.get(deployment), "status.replicas.updated") == REPLICAS, outcome


def test_a_bad_image_stops_at_max_unavailable_and_the_others_keep_serving(
    three_replicas: tuple[ControlPlane, Key],
) -> None:
    plane, deployment = three_replicas
    plane = plane.clone()
    drops, timeline, records = _roll(plane, deployment, BAD_IMAGE)
    mine = _own_replicas(plane, deployment)
    images = sorted(_image(plane, k) for k in mine)
    outcome = (
        f"Ready per pass {timeline}; images {images}\n{plane.state(deployment)}\n"
        f"history:\n{history_text(records)}"
    )
    assert not drops, "\n".join(drops[:10]) + "\n" + outcome
    assert records[-1].quiet, f"the stopped rollout should settle: {outcome}"
    assert images.count(BAD_IMAGE) == STRATEGY["maxUnavailable"], outcome
    serving = [k for k in mine if _image(plane, k) != BAD_IMAGE]
    assert len(serving) == REPLICAS - 1, outcome
    assert all(_fresh_ready(plane, k) for k in serving), outcome
    progressing = plane.conditions(deployment)["Progressing"]
    assert progressing["reason"] == "ReplicasUpdating", outcome
    assert "1 of 3 replicas updated, 0 of them Ready" in progressing["message"], outcome
    endpoints = [k for k in plane.composed_by(deployment) if k[1] == "ModelEndpoint"]
    assert len(endpoints) == REPLICAS - 1, outcome


def _roll_with_edits(
    plane: ControlPlane, deployment: Key, edits: dict[int, Any]
) -> tuple[list[str], list[int], Any]:
    """Apply each edit before the pass it is keyed by (0: before the first), converge, and
    watch the floor of the deployment's spec at that moment (it moves when replicas do)."""
    drops: list[str] = []
    timeline: list[int] = []

    def floor(cp: ControlPlane) -> int:
        return int(cp.get(deployment)["spec"]["replicas"]) - STRATEGY["maxUnavailable"]

    def watch(cp: ControlPlane, result: Reconciled) -> None:
        ready = [k for k in _own_replicas(cp, deployment) if _fresh_ready(cp, k)]
        where = f"pass {len(cp.history) + 1}, reconciling {describe(result.key)}"
        if len(ready) < floor(cp):
            drops.append(f"{where}: {len(ready)} Ready, floor {floor(cp)}")
        if _routed(cp) < floor(cp):
            drops.append(f"{where}: the ModelService routes to {_routed(cp)}")

    plane.watchers.append(watch)
    records = []
    for index in range(PASSES + len(edits)):
        if index in edits:
            _admissible(plane.edit(deployment, edits[index]))
        record = plane.run_pass()
        records.append(record)
        timeline.append(sum(1 for k in _own_replicas(plane, deployment) if _fresh_ready(plane, k)))
        if record.quiet and index > max(edits):
            break
    return drops, timeline, records


def _all_run(plane: ControlPlane, deployment: Key, image: str, replicas: int, outcome: str) -> None:
    mine = _own_replicas(plane, deployment)
    assert len(mine) == replicas, outcome
    assert all(_image(plane, k) == image and _fresh_ready(plane, k) for k in mine), outcome
    progressing = plane.conditions(deployment)["Progressing"]
    assert progressing["reason"] == "RolloutComplete", outcome
    assert get_path(plane.get(deployment), "status.replicas.updated") == replicas, outcome


def test_an_edit_during_a_rollout_rolls_on_to_the_newest_template(
    three_replicas: tuple[ControlPlane, Key],
) -> None:
    """A second image edit lands while the first rollout is half done: the rollout goes
    on to the newest template (replicas on the first edit's template count as old), and
    the floor holds throughout, as a Deployment rolls over a superseded ReplicaSet."""
    plane, deployment = three_replicas
    plane = plane.clone()
    newest = "vllm/vllm-openai:v0.25.0"
    drops, timeline, records = _roll_with_edits(
        plane, deployment, {0: _set_image(NEW_IMAGE), 2: _set_image(newest)}
    )
    outcome = f"Ready per pass {timeline}\n{plane.state(deployment)}\nhistory:\n" + (
        history_text(records)
    )
    assert not drops, "\n".join(drops[:10]) + "\n" + outcome
    _all_run(plane, deployment, newest, REPLICAS, outcome)


def test_scaling_down_during_a_rollout_finishes_with_the_new_count(
    three_replicas: tuple[ControlPlane, Key],
) -> None:
    """spec.replicas lowered from 3 to 2 mid-rollout: the floor follows the new count
    (2 - maxUnavailable), and the rollout ends with two replicas, both on the new image."""
    plane, deployment = three_replicas
    plane = plane.clone()

    def scale_down(obj: Obj) -> None:
        obj["spec"]["replicas"] = REPLICAS - 1

    drops, timeline, records = _roll_with_edits(
        plane, deployment, {0: _set_image(NEW_IMAGE), 2: scale_down}
    )
    outcome = f"Ready per pass {timeline}\n{plane.state(deployment)}\nhistory:\n" + (
        history_text(records)
    )
    assert not drops, "\n".join(drops[:10]) + "\n" + outcome
    _all_run(plane, deployment, NEW_IMAGE, REPLICAS - 1, outcome)


@pytest.mark.parametrize("image", [NEW_IMAGE, BAD_IMAGE])
def test_a_ready_judged_on_the_old_template_does_not_let_the_next_replica_go(
    three_replicas: tuple[ControlPlane, Key], image: str
) -> None:
    """The fleet's flap (issue 23), in its order: every replica's reconcile of its old
    spec is under way when the deployment gives one of them the new template, and ends
    after: Crossplane stamps that old Ready with the new generation, so the replica
    reads Ready on the new template before its pods restart. The deployment then reads
    it so for a few passes (its own reconcile of the new spec is slow to come round, or
    its write not seen yet). Counted, its endpoint is composed and routed, and the next
    replica goes down while it still does not run: with a bad image, one Ready of three.
    """
    plane, deployment = three_replicas
    plane = plane.clone()
    mine = _own_replicas(plane, deployment)
    _admissible(plane.edit(deployment, _set_image(image)))
    plane.race(mine, lambda: plane.reconcile(deployment))
    first = [k for k in mine if _image(plane, k) == image]
    assert len(first) == 1, [f"{describe(k)} {_image(plane, k)}" for k in mine]
    assert _fresh_ready(plane, first[0]), "the race should leave an old Ready that reads current"
    stale = plane.get(first[0])["status"]
    lag = 4
    plane.flap(first[0], Flap(put=(("status", stale),), passes=lag))
    drops, timeline, records = _roll(plane, deployment, image, at_least=lag + 1)
    outcome = f"Ready per pass {timeline}\n{plane.state(deployment)}\nhistory:\n" + (
        history_text(records)
    )
    assert not drops, "\n".join(drops[:10]) + "\n" + outcome
    if image == BAD_IMAGE:
        images = sorted(_image(plane, k) for k in _own_replicas(plane, deployment))
        assert images.count(BAD_IMAGE) == STRATEGY["maxUnavailable"], outcome
    else:
        _all_run(plane, deployment, image, REPLICAS, outcome)
