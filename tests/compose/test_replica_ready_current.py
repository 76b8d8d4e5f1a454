"""A replica's engine workload counts as Ready only for the pod template composed now.

On the fleet a rollout's update read Ready before the replica's pods restarted: the
Object's Ready still spoke of the old template (the provider had not applied the new
one yet), so the ModelDeployment updated the next replica at once (e2e-fleet rollout).
"""

from __future__ import annotations

import copy
from typing import Any

from tests.compose.test_model_replica import KEYS, desired, object_state, run, xr
from tests.requests import conditions

WORKLOAD = "engine-llm-workload"


def observed_as_composed(generation: int = 1, seen: int | None = 1) -> dict[str, Any]:
    """Every Object observed as this replica composes it now, Synced and Ready."""
    composed = desired(run(xr()))
    observed = {}
    for key in KEYS:
        got = object_state()
        got["spec"] = copy.deepcopy(composed[key]["spec"])
        got["metadata"] = {"generation": generation}
        if seen is not None:
            for cond in got["status"]["conditions"]:
                cond["observedGeneration"] = seen
        observed[key] = got
    return observed


def test_ready_when_the_applied_template_is_the_composed_one() -> None:
    rsp = run(xr(), observed=observed_as_composed())
    assert conditions(rsp)["ModelReady"][:2] == ("True", "Available")


def test_not_ready_while_the_template_changes() -> None:
    observed = observed_as_composed()
    template = observed[WORKLOAD]["spec"]["forProvider"]["manifest"]["spec"]["template"]
    template["spec"]["containers"][0]["image"] = "vllm/vllm-openai:old"
    status, reason, message = conditions(run(xr(), observed=observed))["ModelReady"]
    assert (status, reason) == ("False", "ModelStarting")
    assert "waiting for Deployment" in message


def test_not_ready_until_the_provider_observed_the_objects_generation() -> None:
    stale = conditions(run(xr(), observed=observed_as_composed(generation=2, seen=1)))
    assert stale["ModelReady"][:2] == ("False", "ModelStarting")
    fresh = conditions(run(xr(), observed=observed_as_composed(generation=2, seen=2)))
    assert fresh["ModelReady"][:2] == ("True", "Available")


def test_a_route_object_judged_by_its_ready_alone() -> None:
    """Only engine workloads: the route's template-less manifest is never compared."""
    observed = observed_as_composed()
    observed["route"]["spec"]["forProvider"]["manifest"]["spec"] = {"changed": True}
    assert conditions(run(xr(), observed=observed))["ModelReady"][:2] == ("True", "Available")


def _observed_workload(image: str, generation: int = 4, seen: int = 4) -> dict[str, Any]:
    """The observed Objects, the workload's ``atProvider.manifest`` running ``image``."""
    observed = observed_as_composed()
    workload = observed[WORKLOAD]
    manifest = copy.deepcopy(workload["spec"]["forProvider"]["manifest"])
    manifest["metadata"]["generation"] = generation
    containers = manifest["spec"]["template"]["spec"]["containers"]
    containers[0]["image"] = image
    containers[0]["terminationMessagePath"] = "/dev/termination-log"  # an API default
    manifest["status"] = {"observedGeneration": seen, "availableReplicas": 1}
    workload["status"]["atProvider"] = {"manifest": manifest}
    return observed


def _desired_image() -> str:
    composed = desired(run(xr()))[WORKLOAD]["spec"]["forProvider"]["manifest"]
    return str(composed["spec"]["template"]["spec"]["containers"][0]["image"])


def test_ready_when_the_observed_workload_runs_the_desired_containers() -> None:
    observed = _observed_workload(_desired_image())
    assert conditions(run(xr(), observed=observed))["ModelReady"][:2] == ("True", "Available")


def test_not_ready_on_a_ready_judged_before_the_new_template_was_applied() -> None:
    """The provider's Ready (no observedGeneration) spoke of the workload it observed
    before applying the new template: that workload still runs the old image."""
    observed = _observed_workload("vllm/vllm-openai:old")
    status, reason, _ = conditions(run(xr(), observed=observed))["ModelReady"]
    assert (status, reason) == ("False", "ModelStarting")


def test_not_ready_until_the_workloads_controller_saw_its_generation() -> None:
    observed = _observed_workload(_desired_image(), generation=5, seen=4)
    assert conditions(run(xr(), observed=observed))["ModelReady"][:2] == (
        "False",
        "ModelStarting",
    )
