"""Bad scenarios: a clear message naming the step, the event and the field; no traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.simulate.conftest import cluster, deployment, gpu_class, simulate, write_scenario

FLEET = [gpu_class(), cluster("c1", {"p": 1}), deployment("a", 1)]


def _event(event: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "name": "ok",
            "events": [{"taint": {"cluster": "c1", "key": "k", "effect": "NoSchedule"}}],
        },
        {"name": "bad", "events": [{"untaint": {"cluster": "c1", "key": "k"}}, event]},
    ]


@pytest.mark.parametrize(
    ("event", "message"),
    [
        pytest.param(
            {"explode": {}}, "timeline[1].events[1]: unknown event 'explode'", id="unknown-event"
        ),
        pytest.param(
            {"taint": {"cluster": "c1", "key": "k", "effect": "NoRun"}},
            "timeline[1].events[1].taint.effect: must be NoSchedule or NoExecute, got 'NoRun'",
            id="bad-effect",
        ),
        pytest.param(
            {"taint": {"cluster": "c9", "key": "k", "effect": "NoExecute"}},
            "timeline[1].events[1]: no InferenceCluster c9 (the fleet has: c1)",
            id="unknown-cluster",
        ),
        pytest.param(
            {"editDeployment": {"deployment": "ml/a", "replicas": -1}},
            "timeline[1].events[1].editDeployment.replicas: must be a whole number of at least 0, got -1",
            id="negative-replicas",
        ),
        pytest.param(
            {"editDeployment": {"deployment": "ml/a", "replica": 2}},
            "timeline[1].events[1].editDeployment.replica: unknown field",
            id="typo-field",
        ),
        pytest.param(
            {"editDeployment": {"deployment": "a", "replicas": 2}},
            "timeline[1].events[1].editDeployment.deployment: must be namespace/name, got 'a'",
            id="deployment-ref",
        ),
        pytest.param(
            {"editDeployment": {"deployment": "ml/a", "starts": False}},
            "timeline[1].events[1].editDeployment.starts: true or false, with an image",
            id="starts-without-image",
        ),
        pytest.param(
            {"editDeployment": {"deployment": "ml/zz", "replicas": 2}},
            "timeline[1].events[1]: no ModelDeployment ml/zz to edit (the fleet has: ml/a)",
            id="unknown-deployment",
        ),
        pytest.param(
            {"editDeployment": {"deployment": "ml/a", "copies": {"nope": 2}}},
            "timeline[1].events[1]: the deployment has no engine nope (it has: qwen)",
            id="unknown-engine",
        ),
        pytest.param(
            {"setPoolNodes": {"cluster": "c1", "pool": "zz", "nodes": 3}},
            "timeline[1].events[1]: InferenceCluster c1 has no pool zz (it has: p)",
            id="unknown-pool",
        ),
        pytest.param(
            {"setPoolNodes": {"cluster": "c1", "pool": "p", "nodes": "three"}},
            "timeline[1].events[1].setPoolNodes.nodes: must be a whole number of at least 0, got 'three'",
            id="nodes-not-a-number",
        ),
        pytest.param(
            {"addPool": {"cluster": "c1", "pool": {"name": "q", "className": "h100"}}},
            "timeline[1].events[1]: no InferenceClass h100 to publish pool q from (the fleet has: a100)",
            id="unknown-class",
        ),
        pytest.param(
            {
                "addPool": {
                    "cluster": "c1",
                    "pool": {"name": "q", "className": "a100", "capacity": "GPUs"},
                }
            },
            "timeline[1].events[1]: InferenceCluster c1: spec.nodePools[1].capacity: "
            "must be Nodes or Devices, got 'GPUs'",
            id="bad-capacity",
        ),
        pytest.param(
            {"untaint": {"cluster": "c1", "key": "k"}},
            "timeline[1].events[1]: InferenceCluster c1 has no taint k",
            id="untaint-absent",
        ),
        pytest.param(
            {"setClusterReady": {"cluster": "c1", "ready": "no"}},
            "timeline[1].events[1].setClusterReady.ready: must be true or false, got 'no'",
            id="ready-not-bool",
        ),
        pytest.param(
            {"taint": {"cluster": "c1", "key": "k", "effect": "NoSchedule"}, "untaint": {}},
            "timeline[1].events[1]: an event is one of",
            id="two-events-in-one",
        ),
        pytest.param(
            {"delete": {"kind": "ModelDeployment", "name": "a"}},
            "timeline[1].events[1].delete.namespace: a ModelDeployment needs a namespace",
            id="delete-without-namespace",
        ),
        pytest.param(
            {
                "apply": {
                    "apiVersion": "modelplane.ai/v1alpha1",
                    "kind": "ModelDeployment",
                    "metadata": {"name": "b", "namespace": "ml"},
                    "spec": {"replicas": 1},
                }
            },
            "timeline[1].events[1]: ModelDeployment ml/b: spec.template: Field required",
            id="invalid-deployment",
        ),
        pytest.param(
            {
                "editDeployment": {
                    "deployment": "ml/a",
                    "tolerations": [{"key": "k", "operator": "Maybe"}],
                }
            },
            "timeline[1].events[1]: ModelDeployment ml/a: spec.template.spec.tolerations[0].operator",
            id="invalid-edit",
        ),
        pytest.param(
            {"loseNodes": {"cluster": "c1", "pool": "q", "nodes": 1}},
            "timeline[1].events[1]: InferenceCluster c1 has no pool q (it has: p)",
            id="lose-nodes-of-an-unknown-pool",
        ),
        pytest.param(
            {"cordonNodes": {"cluster": "c1", "pool": "p", "nodes": -1}},
            "timeline[1].events[1].cordonNodes.nodes: must be a whole number of at least 0",
            id="cordon-a-negative-count",
        ),
        pytest.param(
            {"restoreNodes": {"cluster": "c9", "pool": "p"}},
            "timeline[1].events[1]: no InferenceCluster c9 (the fleet has: c1)",
            id="restore-an-unknown-cluster",
        ),
        pytest.param(
            {"race": {"deployments": ["ml/a"]}},
            "timeline[1].events[1].race.deployments: unknown field",
            id="race-takes-no-fields",
        ),
    ],
)
def test_bad_event(tmp_path: Path, event: dict[str, Any], message: str) -> None:
    result = simulate(str(write_scenario(tmp_path, FLEET, _event(event))))
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize(
    ("fleet", "message"),
    [
        pytest.param(
            [{"kind": "Pod", "metadata": {"name": "x"}}],
            "fleet[0].kind: must be one of",
            id="bad-kind",
        ),
        pytest.param(
            [{"kind": "ModelDeployment", "metadata": {"name": "x"}}],
            "fleet[0].metadata.namespace: a ModelDeployment needs a namespace",
            id="no-namespace",
        ),
        pytest.param(
            [
                gpu_class(),
                {  # status only: no spec.nodePools to publish from
                    **cluster("c1", {}),
                    "status": {"gpuPools": [{"name": "p", "nodes": "two"}]},
                },
            ],
            "fleet[1]: InferenceCluster c1: status.gpuPools[0].nodes is a string, not a number",
            id="pool-nodes-string",
        ),
        pytest.param(
            [
                {
                    **cluster("c1", {"p": 1}),
                    "spec": {"nodePools": [{"name": "p", "className": "a100", "nodeCount": -2}]},
                }
            ],
            "fleet[0]: InferenceCluster c1: spec.nodePools[0].nodeCount: must be a whole number of at least 0, got -2",
            id="node-count-negative",
        ),
        pytest.param(
            [
                {
                    "apiVersion": "modelplane.ai/v1alpha1",
                    "kind": "ModelReplica",
                    "metadata": {"name": "r", "namespace": "ml"},
                    "spec": {"clusterName": "c1", "engines": "x"},
                }
            ],
            "fleet[0]: ModelReplica ml/r: spec.engines is a string, not a list",
            id="replica-engines",
        ),
        pytest.param(
            [
                gpu_class(),
                {
                    **deployment("a", 1),
                    "spec": {
                        **deployment("a", 1)["spec"],
                        "strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}},
                    },
                },
            ],
            "fleet[1]: ModelDeployment ml/a: spec.strategy.rollingUpdate.maxSurge and "
            "spec.strategy.rollingUpdate.maxUnavailable may not both be 0",
            id="rolling-update-both-zero",
        ),
    ],
)
def test_bad_fleet(tmp_path: Path, fleet: list[dict[str, Any]], message: str) -> None:
    result = simulate(str(write_scenario(tmp_path, fleet, [])))
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("kind: [unclosed\n", "not valid YAML", id="not-yaml"),
        pytest.param(
            "- a\n- b\n", "(the scenario): must be a mapping, got a list", id="not-a-mapping"
        ),
        pytest.param("name: x\n", "kind: must be Scenario, got None", id="no-kind"),
        pytest.param(
            "kind: Scenario\ntimeline: {}\n",
            "timeline: must be a list, got a mapping",
            id="timeline-map",
        ),
        pytest.param(
            "kind: Scenario\ntimeline: [{events: []}]\n",
            "timeline[0].events: a step needs at least one event",
            id="empty-step",
        ),
        pytest.param(
            "kind: Scenario\ninclude: [nowhere.yaml]\n", "include[0]:", id="missing-include"
        ),
        pytest.param(
            "kind: Scenario\nfleets: []\n", "fleets: unknown field", id="unknown-top-field"
        ),
        pytest.param(
            "kind: Scenario\ntimeline: [{events: [{apply: {file: gone.yaml}}]}]\n",
            "timeline[0].events[0].apply.file:",
            id="missing-apply-file",
        ),
    ],
)
def test_bad_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    result = simulate(str(path))
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert str(path) in result.output
    assert "Traceback" not in result.output


def test_a_bad_event_stops_before_anything_is_printed(tmp_path: Path) -> None:
    timeline = _event({"taint": {"cluster": "c9", "key": "k", "effect": "NoExecute"}})
    result = simulate(str(write_scenario(tmp_path, FLEET, timeline)))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "timeline[1].events[1]: no InferenceCluster c9" in result.stderr
