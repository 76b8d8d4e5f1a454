"""Offline rendering through the real Crossplane CLI, talking to our functions over gRPC."""

from __future__ import annotations

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


@pytest.mark.crank
@pytest.mark.parametrize(("where", "xr"), CLASSES, ids=[w for w, _ in CLASSES])
def test_every_inference_class_example_renders_accepted(
    functions: render.Functions, where: str, xr: dict[str, Any]
) -> None:
    out = render.render(xr, functions)
    rendered = out[0]
    assert rendered["kind"] == "InferenceClass", where
    assert _condition(rendered, "Accepted")["status"] == "True", where
    assert _condition(rendered, "Ready")["status"] == "True", where
    assert [d for d in out[1:] if d.get("kind") != "Result"] == [], "a class composes nothing"


@pytest.mark.crank
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


@pytest.mark.crank
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
        composed = {d["kind"] for d in out[1:] if d.get("kind") != "Result"}
        assert composed == {f"{source}Cluster"}
        assert _condition(out[0], "ClusterReady")["reason"] == "Provisioning"


@pytest.mark.crank
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
    assert len(deployments) == 1
    pod = deployments[0]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"modelplane.ai/pool": "gpu-l4"}
    assert pod["containers"][0]["name"] == "engine"
