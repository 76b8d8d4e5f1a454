"""A stuck replica through Crossplane's loop: Unschedulable at once, replaced after the grace.

The scaled EKS fleet: eks-eu-central's one L40S node looks free to Modelplane, but a
workload Modelplane does not manage (a team's own GPU Deployment, applied through
provider-kubernetes) already holds it. A new ModelDeployment is placed there; the fake
workload cluster's scheduler leaves its engine pod Pending
(:func:`modelplane.dev.loop.capacity.gpu_blocked`) and the replica's pod collection
observes kube-scheduler's ``PodScheduled=False``/``Unschedulable``. The replica reports
``ModelReady=False``, reason ``Unschedulable``, with the scheduler's message at once,
and the deployment keeps it (within ``spec.unschedulableAfterSeconds``) even once
eks-us-west has room. Once the condition has held past the grace (its
``lastTransitionTime`` moved back: the function reads the wall clock, so the test moves
the condition rather than the clock), the deployment places a replacement on eks-us-west
and the stuck replica goes once the replacement is Ready.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from modelplane.dev.fakes.base import Key, get_path
from modelplane.dev.loop.harness import ControlPlane
from modelplane.dev.loop.records import history_text
from modelplane.domain.api import POOL_LABEL

from tests.loop import racing
from tests.loop.conftest import Fleets

pytestmark = pytest.mark.loop

FLEET = "scale-eks"
PASSES = 6
TEAM = "gamma"
BUSY = "eks-eu-central"


def _rival(plane: ControlPlane) -> dict[str, Any]:
    """A GPU Deployment no ModelReplica owns, on BUSY's pool, through its provider config."""
    config = get_path(plane.get(plane.one("InferenceCluster", BUSY)), "status.providerConfigRef")
    pod = {
        "nodeSelector": {POOL_LABEL: "gpu-l40s"},
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "their-gpu"}],
        "containers": [{"name": "main", "image": "their/trainer"}],
    }
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "their-trainer", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "their-trainer"}},
            "template": {"metadata": {"labels": {"app": "their-trainer"}}, "spec": pod},
        },
    }
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {
            "name": "their-trainer",
            "namespace": "default",
            # Their own tooling's, not Modelplane's (the fake providers report on
            # controlled resources only).
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": "their-app",
                    "uid": "their-app",
                    "controller": True,
                }
            ],
        },
        "spec": {"providerConfigRef": copy.deepcopy(config), "forProvider": {"manifest": manifest}},
    }


def _model_ready(plane: ControlPlane, key: Key) -> dict[str, Any]:
    return plane.conditions(key).get("ModelReady") or {}


def _age(plane: ControlPlane, key: Key, seconds: int) -> None:
    def change(obj: dict[str, Any]) -> None:
        for cond in get_path(obj, "status.conditions"):
            if cond.get("type") == "ModelReady":
                since = datetime.fromisoformat(cond["lastTransitionTime"])
                cond["lastTransitionTime"] = (
                    (since - timedelta(seconds=seconds))
                    .astimezone(UTC)
                    .strftime("%Y-%m-%dT%H:%M:%SZ")
                )

    plane.edit(key, change)


def _grow(plane: ControlPlane, cluster: str) -> None:
    def change(obj: dict[str, Any]) -> None:
        for pool in get_path(obj, "spec.nodePools"):
            pool["nodeCount"] = pool["maxNodeCount"] = 2

    plane.edit(plane.one("InferenceCluster", cluster), change)


def test_a_stuck_replica_reports_the_scheduler_and_moves_after_the_grace(converged: Fleets) -> None:
    plane = converged.get(FLEET).plane.clone()
    rival = plane.put(_rival(plane))
    plane.converge(2)
    assert plane.ready(rival), plane.state(rival)
    deployment = racing.deployment(plane, "qwen-west")
    plane.put(racing.team(TEAM, plane.get(deployment)))
    team = racing.deployment(plane, TEAM)
    records = plane.converge(PASSES)

    def story() -> str:
        return f"\nhistory:\n{history_text(records)}\n{plane.report()}"

    (stuck,) = racing.replicas_of(plane, team)
    assert get_path(plane.get(stuck), "spec.clusterName") == BUSY, story()
    ready = _model_ready(plane, stuck)
    assert (ready.get("status"), ready.get("reason")) == ("False", "Unschedulable"), story()
    assert "0/1 nodes of pool gpu-l40s are available" in ready.get("message", ""), story()
    assert not plane.ready(stuck)

    _grow(plane, "eks-us-west")  # room elsewhere, but the grace is not over: it stays
    records = plane.converge(PASSES)
    assert racing.replicas_of(plane, team) == [stuck], story()

    _age(plane, stuck, 301)  # the default grace (300 s) is over
    records = plane.converge(PASSES)
    (moved,) = racing.replicas_of(plane, team)
    assert moved != stuck, story()
    assert get_path(plane.get(moved), "spec.clusterName") == "eks-us-west", story()
    assert plane.ready(moved), story()
    assert plane.ready(team), story()
