"""A ModelDeployment's own ModelReplica whose replica-index label is not a number is kept
(composed again as observed, with a Warning naming it), never dropped."""

from __future__ import annotations

import copy

from modelplane.domain import api

from tests.compose.deployments import (
    as_fleet,
    call,
    events,
    inference_cluster,
    model_deployment,
    of_kind,
)


def test_a_replica_with_an_unreadable_index_is_kept_and_named() -> None:
    xr = model_deployment("qwen", 1)
    clusters = [inference_cluster("a"), inference_cluster("b")]
    first = call(xr, clusters[1:])  # placed on b while a does not exist yet
    ((key, placed),) = of_kind(first, "ModelReplica").items()
    assert placed["spec"]["clusterName"] == "b"
    (running,) = as_fleet(first, ready=True)
    running["metadata"]["labels"][api.INDEX_LABEL] = "zero"  # someone edited the label
    observed = {key: running}
    rsp = call(xr, clusters, [running], observed=observed)
    replicas = of_kind(rsp, "ModelReplica")
    kept = replicas[key]
    assert kept["metadata"] == running["metadata"], "composed again exactly as observed"
    assert kept["spec"] == running["spec"]
    assert sorted(r["spec"]["clusterName"] for r in replicas.values()) == ["a", "b"]
    assert (
        f"ModelReplica {running['metadata']['name']}: label {api.INDEX_LABEL} is 'zero', not a "
        "number; kept as it is and not counted as a replica until the label is a number again"
    ) in events(rsp)


def test_a_replica_whose_key_is_composed_again_gets_its_index_back() -> None:
    xr = model_deployment("qwen", 1)
    clusters = [inference_cluster("a", [("gpu-l4", 2, ())])]  # room for a second one
    first = call(xr, clusters)
    ((key, placed),) = of_kind(first, "ModelReplica").items()
    (running,) = as_fleet(first, ready=True)
    garbled = copy.deepcopy(running)
    garbled["metadata"]["labels"][api.INDEX_LABEL] = "-"
    rsp = call(xr, clusters, [garbled], observed={key: garbled})
    assert of_kind(rsp, "ModelReplica") == {key: placed}, "the same object, its label repaired"
    assert any("label modelplane.ai/replica-index is '-'" in e for e in events(rsp))
