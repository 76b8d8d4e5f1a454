"""Offline rendering through Crossplane's reconciler (`crossplane internal render`) and our functions."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml
from modelplane.dev import render

EXAMPLES = render.ROOT / "examples"


def _documents_of_kind(kind: str) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == kind:
                found.append((f"{path.relative_to(EXAMPLES)}:{doc['metadata']['name']}", doc))
    return found


def _condition(xr: dict[str, Any], typ: str) -> dict[str, Any]:
    return next(c for c in xr.get("status", {}).get("conditions", []) if c["type"] == typ)


CLASSES = _documents_of_kind("InferenceClass")


def test_examples_hold_inference_classes() -> None:
    assert len(CLASSES) >= 20, "the docs have over twenty InferenceClass manifests"


@pytest.mark.crossplane
@pytest.mark.parametrize(("where", "xr"), CLASSES, ids=[w for w, _ in CLASSES])
def test_every_inference_class_example_renders_accepted(
    functions: render.Functions, where: str, xr: dict[str, Any]
) -> None:
    out = render.render(xr, functions)
    rendered = out[0]
    assert rendered["kind"] == "InferenceClass", where
    assert _condition(rendered, "Accepted")["status"] == "True", where
    assert _condition(rendered, "Ready")["status"] == "True", where
    assert [d for d in out[1:] if d.get("kind") != "Event"] == [], "a class composes nothing"


@pytest.mark.crossplane
def test_render_cli_prints_what_it_composes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where, xr = CLASSES[0]
    example = tmp_path / "class.yaml"
    example.write_text(yaml.safe_dump(xr))
    assert render.main([str(example)]) == 0
    out = capsys.readouterr().out
    assert f"# ---- InferenceClass {xr['metadata']['name']}" in out, where
    printed = [d for d in yaml.safe_load_all(out) if d]
    assert _condition(printed[0], "Accepted")["status"] == "True"


def test_render_cli_reports_a_missing_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert render.main(["does/not/exist.yaml"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_fleet_documents_replace_their_inputs() -> None:
    declared = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": "a"},
    }
    observed = {**declared, "status": {"gateway": {"address": "203.0.113.1"}}}
    other = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"}}
    assert render.overlay([declared], [observed, other]) == [observed, other]


PLATFORMS = sorted((EXAMPLES / "getting-started").rglob("platform*.yaml"))


@pytest.mark.crossplane
@pytest.mark.parametrize("path", PLATFORMS, ids=[str(p.relative_to(EXAMPLES)) for p in PLATFORMS])
def test_every_platform_example_publishes_its_pools_and_provisions_its_cloud(
    functions: render.Functions, path: Path
) -> None:
    docs = render.load_documents(path)
    clusters = [d for d in docs if d["kind"] == "InferenceCluster"]
    assert clusters, f"{path} holds no InferenceCluster"
    for ic in clusters:
        out = render.render(ic, functions, required=docs)
        status = out[0]["status"]
        pools = [p["name"] for p in ic["spec"]["nodePools"]]
        assert [p["name"] for p in status["gpuPools"]] == pools
        assert all(p["devices"] for p in status["gpuPools"]), (
            "each pool publishes its class's devices"
        )
        source = ic["spec"]["cluster"]["source"]
        composed = {d["kind"] for d in out[1:] if d.get("kind") != "Event"}
        assert composed == {f"{source}Cluster"}
        assert _condition(out[0], "ClusterReady")["reason"] == "Provisioning"


@pytest.mark.crossplane
def test_the_main_job_renders_the_getting_started_fleet_down_to_the_workload(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`make demo`: every composite of the tour renders, and the replica it places too."""
    assert render.main([str(EXAMPLES / "getting-started")]) == 0
    out = capsys.readouterr().out
    headers = [line for line in out.splitlines() if line.startswith("# ---- ")]
    for kind in (
        "InferenceGateway default",
        "InferenceClass l4-1x-g6",
        "InferenceCluster eks-us-east",
    ):
        assert any(f"# ---- {kind} " in h for h in headers), kind
    assert any(
        h.startswith("# ---- ModelReplica ml-team/qwen-demo-")
        and "(composed by ModelDeployment ml-team/qwen-demo)" in h
        for h in headers
    )
    docs = [d for d in yaml.safe_load_all(out) if d]
    workload = [d["spec"]["forProvider"]["manifest"] for d in docs if d.get("kind") == "Object"]
    deployments = [m for m in workload if m["kind"] == "Deployment"]
    engines = [m for m in deployments if "modelplane.ai/engine" in m["metadata"]["labels"]]
    assert len(engines) == 1
    assert len(deployments) == 2, "the engine, and the endpoint picker in front of it"
    deployments = engines
    pod = deployments[0]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"modelplane.ai/pool": "gpu-l4"}
    assert pod["containers"][0]["name"] == "engine"


# --- the one function server ------------------------------------------------------------


def _children() -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            found.update(int(pid) for pid in (task / "children").read_text().split())
    return found


def _listening(address: str) -> bool:
    host, _, port = address.rpartition(":")
    with contextlib.suppress(OSError), socket.create_connection((host, int(port)), 1.0):
        return True
    return False


def test_serve_runs_one_server_for_every_kind_and_stops_it_by_pid_on_failure() -> None:
    before = _children()
    seen: dict[str, Any] = {}

    def fail_while_serving() -> None:
        with render.serve() as running:
            (seen["pid"],) = _children() - before
            seen["address"] = running.address
            seen["cmdline"] = Path(f"/proc/{seen['pid']}/cmdline").read_text().split("\0")
            composition = yaml.safe_load(render.composition_for("ModelService").read_text())
            seen["targets"] = set(running.for_composition(composition).values())
            seen["listening"] = _listening(running.address)
            raise RuntimeError("the body failed")

    with pytest.raises(RuntimeError, match="the body failed"):
        fail_while_serving()
    assert seen["cmdline"][-5:-1] == ["all", "--insecure", "--address", seen["address"]]
    assert seen["targets"] == {seen["address"]}
    assert seen["listening"]
    assert not _listening(seen["address"])
    assert seen["pid"] not in _children()


def test_a_server_that_cannot_start_is_an_error_with_its_stderr() -> None:
    with pytest.raises(render.RenderError, match="unknown function 'nosuchkind'"):  # noqa: SIM117
        with render.serve(["NoSuchKind"]):
            pytest.fail("the server cannot have started")


# --- observed/: whose composed resources they are ---------------------------------------


def test_observed_files_named_after_a_composite_are_its_own() -> None:
    service = {"kind": "ModelService", "metadata": {"name": "a", "namespace": "ml"}}
    other = {"kind": "ModelService", "metadata": {"name": "b", "namespace": "ml"}}
    gateway = {"kind": "InferenceGateway", "metadata": {"name": "default"}}
    route = {"kind": "HTTPRoute", "metadata": {"name": "a", "namespace": "ml"}}
    objects = [
        {"kind": "Object", "metadata": {"name": "o1", "namespace": "ml"}},
        {"kind": "Object", "metadata": {"name": "o2", "namespace": "elsewhere"}},
    ]
    files = {"modelservice-a": [route], "objects-cluster": objects}
    assert render.observed_for(service, files) == [route]
    # Not named after it: the other files' documents in its namespace.
    assert render.observed_for(other, files) == objects[:1]
    # A cluster-scoped composite may compose in any namespace.
    assert render.observed_for(gateway, files) == objects


@pytest.mark.crossplane
def test_render_path_hands_each_composite_its_observed_resources(tmp_path: Path) -> None:
    case = EXAMPLES / "routing" / "external-provider"
    with_observed = render.render_path(case)
    shutil.copytree(case, tmp_path / "case", ignore=shutil.ignore_patterns("observed"))
    without = render.render_path(tmp_path / "case")
    assert [render.describe(r.xr) for r in with_observed] == [
        "ModelEndpoint ml-team/kimi-k2-together",
        "ModelService ml-team/kimi-k2",
    ]
    for seen, unseen in zip(with_observed, without, strict=True):
        assert seen.error is None, seen.error
        assert unseen.error is None, unseen.error
        # What exists and is accepted makes the composite Ready; a first render is not.
        assert _condition(seen.docs[0], "Ready")["status"] == "True", render.describe(seen.xr)
        assert _condition(unseen.docs[0], "Ready")["status"] == "False"


@pytest.mark.crossplane
def test_an_observed_resource_the_pipeline_dropped_is_garbage_collected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = tmp_path / "model-service"
    shutil.copytree(EXAMPLES / "routing" / "model-service", case)
    leftover = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "leftover",
            "namespace": "ml-team",
            "annotations": {"crossplane.io/composition-resource-name": "leftover"},
        },
    }
    observed = case / "observed" / "modelservice-qwen3-8b.yaml"
    observed.write_text(observed.read_text() + "---\n" + yaml.safe_dump(leftover))
    assert render.main(["--depth", "0", str(case)]) == 0
    out = capsys.readouterr().out
    assert "# deleted: ConfigMap ml-team/leftover" in out.splitlines()
    printed = [d for d in yaml.safe_load_all(out) if d]
    assert "leftover" not in {d["metadata"].get("name") for d in printed if "metadata" in d}
    events = [d for d in printed if d["kind"] == "Event"]
    assert {"SelectComposition"} <= {e["reason"] for e in events}
