"""The loop benchmark's own parts (benches/loop*.py): the fleet it applies is valid and the
size it says, and what it reads from /proc and Crossplane's metrics is read right.
The benchmark itself runs on the control plane (make bench-loop), not here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from modelplane.models.inferencecluster import InferenceCluster
from modelplane.models.modeldeployment import ModelDeployment

from benches import loop, loop_measure, loop_report


def test_the_fleet_is_the_size_asked_and_valid() -> None:
    size = loop.Size("T", clusters=3, deployments=4, replicas=2)
    docs = loop.fleet(size)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc)
    assert len(by_kind["Secret"]) == 3
    assert len(by_kind["InferenceCluster"]) == 3
    assert len(by_kind["ModelDeployment"]) == 4
    for doc in by_kind["InferenceCluster"]:
        InferenceCluster.model_validate(doc)
        # A pod takes a whole node: room for every replica of the fleet, twice.
        assert doc["spec"]["nodePools"][0]["nodeCount"] * 3 >= 2 * size.total_replicas
        ref = doc["spec"]["cluster"]["existing"]["secretRef"]["name"]
        assert ref in {s["metadata"]["name"] for s in by_kind["Secret"]}
    for doc in by_kind["ModelDeployment"]:
        ModelDeployment.model_validate(doc)
        assert doc["spec"]["replicas"] == 2
    names = [d["metadata"]["name"] for d in docs]
    assert len(names) == len(set(names))


def test_cpu_of_a_process_tree_sums_threads_and_reaped_children(tmp_path: Path) -> None:
    ticks = os.sysconf("SC_CLK_TCK")

    def stat(pid: int, ppid: int, utime: int, stime: int, cutime: int, cstime: int) -> None:
        (tmp_path / str(pid)).mkdir()
        fields = ["S", str(ppid), *["0"] * 9, str(utime), str(stime), str(cutime), str(cstime)]
        # A command name with a space and a parenthesis, as Python's forkserver may show.
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (py (fork) x) " + " ".join(fields))

    stat(10, 1, ticks, ticks, 2 * ticks, 0)  # the server: 2 s, and 2 s of reaped workers
    stat(11, 10, ticks, 0, 0, 0)  # the forkserver
    stat(12, 11, 3 * ticks, ticks, 0, 0)  # a worker
    stat(20, 1, 50 * ticks, 0, 0, 0)  # someone else
    kids = loop_measure._children(tmp_path)
    assert loop_measure.tree_cpu_seconds(10, kids, tmp_path) == 9.0
    assert loop_measure.tree_cpu_seconds(12, kids, tmp_path) == 4.0


METRICS = """\
# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
controller_runtime_reconcile_total{controller="composite/modeldeployments.modelplane.ai",result="success"} 40
controller_runtime_reconcile_total{controller="composite/modeldeployments.modelplane.ai",result="requeue"} 2
controller_runtime_reconcile_total{controller="packages/function.pkg.crossplane.io",result="success"} 9
function_run_function_request_total{function_name="modelplane-function-modeldeployment",function_package="x",grpc_method="RunFunction",grpc_target="127.0.0.1:9443"} 42
"""


def test_metrics_read_per_composite_kind_and_function() -> None:
    got = loop_measure.parse_metrics(METRICS)
    assert got["reconciles"] == {"modeldeployments.modelplane.ai": 42.0}
    assert got["function_requests"] == {"modelplane-function-modeldeployment": 42.0}


def test_converged_only_when_every_replica_is_ready() -> None:
    size = loop.Size("T", clusters=1, deployments=1, replicas=2)
    conditions = [{"type": "Ready", "status": "True"}]
    ready: dict[str, Any] = {"status": {"conditions": conditions}}
    deployment: dict[str, Any] = {"status": {"conditions": conditions, "replicas": {"ready": 1}}}
    assert "0/1 deployments" in loop.converged([ready], [deployment], size)
    deployment["status"]["replicas"]["ready"] = 2
    assert loop.converged([ready], [deployment], size) == ""


def _result(
    name: str, deployments: int, md_calls: int, md_bytes: int, cpu: float
) -> dict[str, Any]:
    steady = {
        "seconds": 120.0,
        "cpu_seconds": dict.fromkeys(loop_measure.COMPONENTS, cpu),
        "reconciles": {"modeldeployments.modelplane.ai": md_calls},
        "function_requests": {},
        "calls": {
            "ModelDeployment": {"calls": md_calls, "request_bytes": md_bytes, "cpu_seconds": 1.0}
        },
        "uptime_start": "load 1",
        "uptime_end": "load 2",
    }
    return {
        "size": {"name": name, "clusters": 1, "deployments": deployments, "replicas": 2},
        "converge": steady,
        "steady": steady,
        "objects": {"ModelReplica": 2 * deployments},
    }


def test_the_report_says_per_minute_and_how_the_steady_cost_grew() -> None:
    small, big = _result("S", 10, 120, 120 * 1024, 6.0), _result("M", 50, 600, 600 * 5 * 1024, 30.0)
    text = loop_report.table(small)
    assert "| reconciles, ModelDeployment | 120 | 60.0 |" in text
    assert "| bytes per ModelDeployment request (KiB, mean) | 1.0 | 1.0 |" in text
    assert "| CPU s, the four together | 24.0 | 12.00 |" in text
    growth = loop_report.growth([small, big])
    # deployments x fleet replicas: 50*100 / (10*20) = 25; calls 5x, bytes 25x, CPU 5x
    assert "| S -> M | 25.0x | 5.0x | 5.0x | 25.0x | 1.0x |" in growth


def test_api_requests_read_per_verb_and_resource() -> None:
    text = (
        'apiserver_request_total{code="200",group="modelplane.ai",resource="modelreplicas",'
        'subresource="status",verb="PUT",version="v1alpha1"} 12\n'
        'apiserver_request_total{code="409",group="modelplane.ai",resource="modelreplicas",'
        'subresource="status",verb="PUT",version="v1alpha1"} 3\n'
        'apiserver_request_total{code="200",group="",resource="secrets",subresource="",'
        'verb="GET",version="v1"} 4\n'
        'apiserver_request_duration_seconds_count{verb="GET"} 99\n'
    )
    assert loop_measure.parse_api_requests(text) == {
        "PUT modelreplicas/status": 15.0,
        "GET secrets": 4.0,
    }


def test_the_cost_model_recovers_a_known_per_composite_and_per_object_cost() -> None:
    """Steady CPU made exactly 0.2 s per composite + 0.5 ms per fan-in object a minute:
    the fit gives them back, and the 10xL line follows from them."""

    def sized(name: str, clusters: int, deployments: int) -> dict[str, Any]:
        result = _result(name, deployments, 2 * deployments, 2 * deployments * 1024, 0.0)
        result["size"]["clusters"] = clusters
        x = loop_report.composites(clusters, deployments, 2)
        f = loop_report.fan_in(clusters, deployments, 2)
        per_minute = 0.2 * x + 0.0005 * f
        result["steady"]["cpu_seconds"] = {"crossplane": per_minute * 2}  # a 2 minute window
        return result

    text = loop_report.cost_model([sized("S", 5, 10), sized("M", 15, 30)])
    assert "200.0 ms x composites + 500 us x D x (R + C)" in text
    x, f = loop_report.composites(10_000, 10_000, 10), loop_report.fan_in(10_000, 10_000, 10)
    assert f"| {(0.2 * x + 0.0005 * f) / 60:,.2f} |" in text
