"""The trace-style tree of rendered composites (``render --tree``, what ``make demo`` shows)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from modelplane.dev import render, tree

GETTING_STARTED = render.ROOT / "examples" / "getting-started"

Doc = dict[str, Any]


def _xr(kind: str, name: str, namespace: str = "", **conditions: tuple[str, str, str]) -> Doc:
    """A rendered composite; ``conditions`` maps type to (status, reason, message)."""
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": kind,
        "metadata": meta,
        "status": {
            "conditions": [
                {"type": t, "status": s, "reason": r, **({"message": m} if m else {})}
                for t, (s, r, m) in conditions.items()
            ]
        },
    }


def _composed(doc: Doc, resource_name: str) -> Doc:
    out = {k: v for k, v in doc.items() if k != "status"}
    out["metadata"] = {
        **doc["metadata"],
        "annotations": {"crossplane.io/composition-resource-name": resource_name},
    }
    return out


def _object(name: str, cluster: str, manifest_kind: str, manifest_name: str) -> Doc:
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {
            "name": name,
            "namespace": "ml-team",
            "annotations": {"crossplane.io/composition-resource-name": name},
        },
        "spec": {
            "forProvider": {
                "manifest": {
                    "apiVersion": "v1",
                    "kind": manifest_kind,
                    "metadata": {"name": manifest_name, "namespace": "serving"},
                }
            },
            "providerConfigRef": {"kind": "ClusterProviderConfig", "name": cluster},
        },
    }


def _unready(resource_name: str) -> Doc:
    message = f'Composed resource "{resource_name}" is not yet ready'
    return {"apiVersion": "v1", "kind": "Event", "type": "Normal", "message": message}


def _warning(message: str) -> Doc:
    return {"apiVersion": "v1", "kind": "Event", "type": "Warning", "message": message}


OK = ("True", "ReconcileSuccess", "")
CREATING = ("False", "Creating", "")
REPLICA = _xr(
    "ModelReplica",
    "qwen-0",
    "ml-team",
    Synced=OK,
    Ready=CREATING,
    ModelReady=("False", "ModelStarting", "waiting for Deployment qwen-0"),
    ModelAccepted=("True", "Applied", "applied 2 objects"),
)
DEPLOYMENT = _xr(
    "ModelDeployment",
    "qwen",
    "ml-team",
    Synced=OK,
    Ready=CREATING,
    ReplicasReady=("False", "ModelStarting", "0 of 1 replica ready"),
)
SERVICE = _object("qwen-0-service", "gke-a", "Service", "qwen-0")
WORKLOAD = _object("qwen-0-workload", "gke-a", "Deployment", "qwen-0")
RENDERS = [
    [DEPLOYMENT, _composed(REPLICA, "replica-0"), _unready("replica-0")],
    [REPLICA, SERVICE, WORKLOAD, _unready("qwen-0-workload")],
]


def test_a_composed_composite_that_was_rendered_too_nests_its_own_render() -> None:
    (root,) = tree.build(RENDERS)
    assert root.name == "ModelDeployment/qwen (ml-team)"
    (replica,) = root.children
    assert replica.name == "ModelReplica/qwen-0", "same namespace as its parent: not repeated"
    assert (replica.synced, replica.ready, replica.status) == ("True", "False", "Creating")
    assert [c.name for c in replica.children] == ["Object/qwen-0-service", "Object/qwen-0-workload"]


def test_an_object_shows_the_cluster_it_lands_on_and_what_it_wraps() -> None:
    service, workload = tree.build(RENDERS)[0].children[0].children
    assert service.status == "Service/qwen-0 (serving) on gke-a"
    assert workload.status == "Deployment/qwen-0 (serving) on gke-a"


def test_readiness_of_a_composed_resource_follows_the_reconcilers_not_ready_events() -> None:
    service, workload = tree.build(RENDERS)[0].children[0].children
    assert (service.synced, service.ready) == (tree.UNKNOWN, "True")
    assert (workload.synced, workload.ready) == (tree.UNKNOWN, "False")


def test_every_condition_that_is_not_true_is_noted_with_reason_and_message() -> None:
    root = tree.build(RENDERS)[0]
    assert root.notes == ["ReplicasReady=False  ModelStarting: 0 of 1 replica ready"]
    replica = root.children[0]
    assert replica.notes == ["ModelReady=False  ModelStarting: waiting for Deployment qwen-0"]


def test_a_composite_that_is_not_synced_says_why_in_status() -> None:
    broken = _xr(
        "ModelService",
        "svc",
        "ml-team",
        Synced=("False", "ReconcileError", "cannot compose resources: boom"),
        Ready=CREATING,
    )
    (row,) = tree.build([[broken]])
    assert (row.synced, row.status) == ("False", "ReconcileError: cannot compose resources: boom")


def test_warnings_are_noted_unless_they_repeat_a_condition() -> None:
    svc = _xr(
        "ModelService",
        "svc",
        "ml-team",
        Ready=CREATING,
        EndpointsResolved=("False", "NoEndpoints", "no ModelEndpoint matches"),
    )
    events = [
        _warning('Pipeline step "compose": no ModelEndpoint matches'),
        _warning('Pipeline step "compose": spec.port is ignored'),
    ]
    (row,) = tree.build([[svc, *events]])
    assert row.notes == [
        "EndpointsResolved=False  NoEndpoints: no ModelEndpoint matches",
        'Warning: Pipeline step "compose": spec.port is ignored',
    ]


def _subnet(i: int) -> Doc:
    return {
        "apiVersion": "ec2.aws.m.upbound.io/v1beta1",
        "kind": "Subnet",
        "metadata": {"name": f"subnet-{i}", "annotations": {}},
    }


def test_a_large_composite_folds_plain_same_kind_siblings_but_lists_objects() -> None:
    subnets = [_subnet(i) for i in range(tree.COLLAPSE_OVER)]
    objects = [_object(f"o-{i}", "gke-a", "ConfigMap", f"c-{i}") for i in range(3)]
    eks = _xr("EKSCluster", "eks", "ml-team", Ready=CREATING)
    (row,) = tree.build([[eks, *subnets, *objects]])
    names = [c.name for c in row.children]
    assert names == [f"Subnet x{tree.COLLAPSE_OVER}", "Object/o-0", "Object/o-1", "Object/o-2"]
    small = tree.build([[_xr("EKSCluster", "eks"), *subnets[:3]]])[0]
    assert [c.name for c in small.children] == [
        "Subnet/subnet-0",
        "Subnet/subnet-1",
        "Subnet/subnet-2",
    ]


def test_a_composite_composing_itself_does_not_recurse() -> None:
    loop = _xr("ModelReplica", "r", "ml-team", Ready=CREATING)
    (alone,) = tree.build([[loop, _composed(loop, "self")]])
    assert alone.name == "ModelReplica/r (ml-team)"
    assert [(c.name, c.children) for c in alone.children] == [("ModelReplica/r", [])]
    (root,) = tree.build([[DEPLOYMENT, _composed(loop, "r")], [loop, _composed(loop, "self")]])
    (nested,) = root.children
    assert [(c.name, c.children) for c in nested.children] == [("ModelReplica/r", [])]


def test_the_text_is_one_table_with_trace_columns_and_tree_branches() -> None:
    lines = tree.format_tree(RENDERS).splitlines()
    header = lines[0]
    assert header.split() == ["NAME", "SYNCED", "READY", "STATUS"]
    ready_at = header.index("READY")
    assert lines[1].startswith("ModelDeployment/qwen (ml-team) ")
    assert lines[2].startswith("│    ReplicasReady=False  ModelStarting: 0 of 1 replica ready")
    assert lines[3].startswith("└─ ModelReplica/qwen-0 ")
    assert lines[5].startswith("   ├─ Object/qwen-0-service ")
    assert lines[6].startswith("   └─ Object/qwen-0-workload ")
    assert lines[5][ready_at:].split()[0] == "True", "READY lines up under its header"
    assert lines[6][ready_at:].split()[0] == "False"
    assert lines[6].endswith("Deployment/qwen-0 (serving) on gke-a")


def test_each_composite_of_the_example_is_its_own_block() -> None:
    cls = _xr("InferenceClass", "l4", Synced=OK, Ready=("True", "Available", ""))
    text = tree.format_tree([*RENDERS, [cls]])
    blocks = text.split("\n\n")
    assert len(blocks) == 2
    assert blocks[1].startswith("InferenceClass/l4 ")
    assert blocks[1].split()[1:] == ["True", "True", "Available"]


@pytest.mark.crossplane
def test_the_getting_started_tree_nests_the_replica_under_its_deployment() -> None:
    rendered = render.render_path(GETTING_STARTED, depth=1)
    roots = {row.name: row for row in tree.build([one.docs for one in rendered])}
    assert "ModelReplica" not in " ".join(roots), "replicas are nested, not roots"
    deployment = roots["ModelDeployment/qwen-demo (ml-team)"]
    (replica,) = deployment.children
    assert replica.name.startswith("ModelReplica/qwen-demo-")
    assert "ReplicasReady=False  ModelStarting: 0 of 1 replica ready" in deployment.notes
    workloads = [c.status for c in replica.children if c.name.startswith("Object/")]
    assert f"Deployment/{replica.name.split('/')[1]}-qwen on eks-us-east" in workloads
    assert roots["InferenceClass/l4-1x-g6"].ready == "True"
    (eks,) = roots["InferenceCluster/eks-us-east"].children
    assert eks.name == "EKSCluster/eks-us-east (modelplane-system)"


@pytest.mark.crossplane
def test_render_tree_prints_the_tree_and_writes_the_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "demo" / "rendered.yaml"
    example = GETTING_STARTED / "model-deployment.yaml"
    assert render.main(["--tree", "--yaml-file", str(out_file), str(example)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["NAME", "SYNCED", "READY", "STATUS"]
    assert "ModelDeployment/qwen-demo (ml-team)" in out
    assert out.rstrip().endswith(f"Every rendered document, as YAML: {out_file}")
    kinds = [d["kind"] for d in yaml.safe_load_all(out_file.read_text()) if d]
    assert kinds[0] == "ModelDeployment"
    assert "ModelReplica" in kinds


def test_render_refuses_tree_and_yaml_together(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        render.main(["--tree", "--yaml", str(GETTING_STARTED)])
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
