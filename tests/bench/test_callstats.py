"""The function server's opt-in call counts (modelplane.runtime.callstats), which the loop
benchmark reads: off unless asked, exact per kind when on, summed over processes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from modelplane import planning, registry
from modelplane.domain import dra as cel
from modelplane.runtime import callstats, worker

from tests.compose.deployments import inference_cluster, model_deployment, other_replica
from tests.requests import request


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test decides anew whether this process counts."""
    monkeypatch.setattr(callstats, "_stats", {})


def test_off_unless_the_environment_names_a_folder(
    fresh: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(callstats.ENV, raising=False)
    with callstats.counted(10) as named:
        named("ModelDeployment")
    assert callstats.current() is None
    monkeypatch.setattr(callstats, "_stats", {})
    monkeypatch.setenv(callstats.ENV, str(tmp_path / "missing"))
    assert callstats.current() is None, "a folder that does not exist switches nothing on"


def test_counts_per_kind_written_at_most_once_a_second(tmp_path: Path) -> None:
    now = [100.0]
    stats = callstats.CallStats(tmp_path, clock=lambda: now[0], background=False)
    stats.record("ModelDeployment", 1000, 0.5)
    first = json.loads(stats.path.read_text())
    assert first["ModelDeployment"] == {"calls": 1, "request_bytes": 1000, "cpu_seconds": 0.5}
    now[0] += 0.2
    stats.record("ModelDeployment", 500, 0.25)
    stats.record("ModelReplica", 10, 0.0)
    assert json.loads(stats.path.read_text()) == first, "within the second: not written yet"
    stats.flush()  # what the background thread does a second later
    got = json.loads(stats.path.read_text())
    assert got["ModelDeployment"] == {"calls": 2, "request_bytes": 1500, "cpu_seconds": 0.75}
    assert got["ModelReplica"]["calls"] == 1
    assert not list(tmp_path.glob("*.tmp")), "the temporary file is renamed into place"


def test_totals_sum_every_process_file(tmp_path: Path) -> None:
    for pid, calls in ((11, 2), (12, 3)):
        counts = {
            "ModelDeployment": {"calls": calls, "request_bytes": 100 * calls, "cpu_seconds": 1}
        }
        (tmp_path / f"calls-{pid}.json").write_text(json.dumps(counts))
    (tmp_path / "calls-13.json").write_text("{not json")  # a torn file is skipped, not fatal
    totals = callstats.read_totals(tmp_path)
    assert totals == {"ModelDeployment": {"calls": 5, "request_bytes": 500, "cpu_seconds": 2}}


class _Pipe:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, message: Any) -> None:
        self.sent.append(message)

    def send_bytes(self, data: bytes) -> None:
        """The payload that follows a message (``protocol.INLINE``), put back in it."""
        call_id, kind, _ = self.sent[-1]
        self.sent[-1] = (call_id, kind, bytes(data))


def test_a_worker_counts_the_request_bytes_it_composed(
    fresh: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The worker's count is the call's bytes off the wire, under the composite's kind."""
    monkeypatch.setenv(callstats.ENV, str(tmp_path))
    clusters = [inference_cluster(f"c{i}", [("gpu-l4", 40, ())]) for i in range(2)]
    fleet = [other_replica(f"team-{i}", f"c{i % 2}", "gpu-l4") for i in range(6)]
    for i, doc in enumerate(fleet):
        doc["metadata"]["name"] = f"r-{i}"
    data = request(
        model_deployment(replicas=2),
        required={planning.CLUSTERS: clusters, planning.REPLICAS: fleet},
    ).SerializeToString()
    pipe = _Pipe()
    composing = worker.Worker(pipe, registry.COMPOSERS)  # type: ignore[arg-type]
    composing.answer(1, cel.CallBudget(float("inf")), data, None)
    composing.answer(2, cel.CallBudget(float("inf")), b"\xff\xff not a request", None)
    assert pipe.sent[-2][1] == "ok"
    assert pipe.sent[-1][1] == "unreadable"
    stats = callstats.current()
    assert stats is not None
    assert stats.path.name == f"calls-{os.getpid()}.json"
    stats.flush()
    totals = callstats.read_totals(tmp_path)
    assert totals["ModelDeployment"]["calls"] == 1
    assert totals["ModelDeployment"]["request_bytes"] == len(data)
    assert totals["ModelDeployment"]["cpu_seconds"] > 0
    assert totals["(unreadable)"]["calls"] == 1
