"""The render engine: Crossplane v2.4.0's composite reconciler (``crossplane internal render``).

The ``crossplane``-marked tests run the real binary (``make crossplane``) against one real
``modelplane-function all --insecure`` server (the session's ``functions`` fixture).
"""

from __future__ import annotations

import copy
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from modelplane.dev import engine, render
from modelplane.dev.proto import GENERATED, PROTO, SOURCE_ROOT, generate, render_pb2

EXAMPLES = render.ROOT / "examples"
GETTING_STARTED = EXAMPLES / "getting-started"

Doc = dict[str, Any]


def _load(path: Path) -> list[Doc]:
    return render.load_documents(path)


def _api(kind: str) -> tuple[Doc, Doc]:
    composition = yaml.safe_load(render.composition_for(kind).read_text())
    xrd = yaml.safe_load(render.definition_for(kind).read_text())
    return composition, xrd


def _condition(xr: Doc, typ: str) -> Doc:
    return next(c for c in xr["status"]["conditions"] if c["type"] == typ)


def _inference_class() -> Doc:
    docs = _load(GETTING_STARTED / "platform.yaml")
    return next(d for d in docs if d["kind"] == "InferenceClass")


def _render(functions: render.Functions, xr: Doc, **kwargs: Any) -> engine.RenderOutput:
    composition, xrd = _api(xr["kind"])
    return engine.render_composite(
        xr, composition, functions.for_composition(composition), xrd=xrd, **kwargs
    )


# --- the generated protocol ---------------------------------------------------------------


def test_render_pb2_is_what_render_proto_generates(tmp_path: Path) -> None:
    generated = generate(tmp_path)
    for path, name in zip(generated, GENERATED, strict=True):
        committed = PROTO.with_name(name)
        assert path.read_bytes() == committed.read_bytes(), (
            f"{committed.relative_to(SOURCE_ROOT)} is stale: run python -m modelplane.dev.proto"
        )


def test_render_proto_is_crossplane_v2_4_0s_with_its_license() -> None:
    text = PROTO.read_text()
    assert "Licensed under the Apache License, Version 2.0" in text
    assert "package crossplane.render.v1alpha1;" in text
    assert render_pb2.RenderRequest.DESCRIPTOR.full_name == (
        "crossplane.render.v1alpha1.RenderRequest"
    )


# --- inputs and outputs, without the binary ----------------------------------------------


def test_request_carries_every_input_and_leaves_out_the_xr_as_a_required_resource() -> None:
    xr = _inference_class()
    composition, xrd = _api("InferenceClass")
    other = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"}}
    observed = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    req = engine.build_request(
        xr,
        composition,
        {"modelplane-function-inferenceclass": "127.0.0.1:1"},
        observed=[observed],
        required=[xr, other],
        xrd=xrd,
    )
    got = req.composite
    assert req.WhichOneof("input") == "composite"
    assert [(f.name, f.address) for f in got.functions] == [
        ("modelplane-function-inferenceclass", "127.0.0.1:1")
    ]
    assert got.composite_resource["metadata"]["name"] == xr["metadata"]["name"]
    assert got.composition["metadata"]["name"] == "inferenceclasses.modelplane.ai"
    assert got.composite_resource_definition["spec"]["scope"] == "Cluster"
    assert [r["kind"] for r in got.observed_resources] == ["ConfigMap"]
    assert [r["kind"] for r in got.required_resources] == ["Secret"]


def test_no_xrd_sends_none() -> None:
    xr = _inference_class()
    composition, _ = _api("InferenceClass")
    req = engine.build_request(xr, composition, {})
    assert not req.composite.HasField("composite_resource_definition")


def test_response_numbers_come_back_as_ints_where_whole() -> None:
    rsp = render_pb2.RenderResponse()
    rsp.composite.composite_resource.update(
        {"apiVersion": "x/v1", "kind": "X", "spec": {"replicas": 3, "weight": 0.5}}
    )
    rsp.composite.events.add(type="Warning", reason="ComposeResources", message="m")
    out = engine.parse_response(rsp.SerializeToString())
    assert out.composite["spec"] == {"replicas": 3, "weight": 0.5}
    assert isinstance(out.composite["spec"]["replicas"], int)
    assert out.events == [engine.Event("Warning", "ComposeResources", "m")]
    assert (out.composed, out.deleted, out.required, out.fatal) == ([], [], [], False)


def test_a_response_without_a_composite_is_an_error() -> None:
    rsp = render_pb2.RenderResponse(meta=render_pb2.ResponseMeta())
    with pytest.raises(engine.EngineError, match="no composite output"):
        engine.parse_response(rsp.SerializeToString())


def test_controlled_by_sets_the_xr_as_controller_once() -> None:
    xr: Doc = {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelService",
          "metadata": {"name": "s", "namespace": "ml"}}  # fmt: skip
    owned = engine.controlled_by(xr, {"kind": "HTTPRoute", "metadata": {"name": "r"}})
    (ref,) = owned["metadata"]["ownerReferences"]
    assert ref == {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelService",
        "name": "s",
        "uid": engine.composite_uid(xr),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert engine.controlled_by(xr, owned) == owned
    with_uid = copy.deepcopy(xr)
    with_uid["metadata"]["uid"] = "u-1"
    assert engine.composite_uid(with_uid) == "u-1"


def test_find_crossplane_names_the_make_target_when_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MODELPLANE_CROSSPLANE", str(tmp_path / "nope"))
    with pytest.raises(engine.EngineError, match="make crossplane"):
        engine.find_crossplane()


def test_any_other_exit_code_is_an_engine_error_with_stderr(tmp_path: Path) -> None:
    fake = tmp_path / "crossplane"
    fake.write_text("#!/bin/sh\necho 'crossplane: error: boom' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    composition, _ = _api("InferenceClass")
    with pytest.raises(engine.EngineError, match="boom") as caught:
        engine.render_composite(_inference_class(), composition, {}, crossplane=fake)
    assert caught.value.returncode == 1
    assert caught.value.stderr == "crossplane: error: boom"


# --- the real engine ----------------------------------------------------------------------


@pytest.mark.crossplane
def test_inference_class_is_accepted_and_ready(functions: render.Functions) -> None:
    xr = _inference_class()
    out = _render(functions, xr)
    assert not out.fatal
    assert out.composite["kind"] == "InferenceClass"
    assert _condition(out.composite, "Accepted")["status"] == "True"
    # The reconciler, not the function, sets these: a class composes nothing, so it's Ready.
    assert _condition(out.composite, "Synced")["status"] == "True"
    assert _condition(out.composite, "Ready")["status"] == "True"
    assert out.composed == []
    assert out.deleted == []
    assert out.composite["spec"]["crossplane"]["resourceRefs"] == []
    assert (
        engine.Event(
            "Normal",
            "SelectComposition",
            "Successfully selected composition: inferenceclasses.modelplane.ai",
        )
        in out.events
    )


@pytest.mark.crossplane
def test_model_deployment_places_its_replica_on_the_fleet(functions: render.Functions) -> None:
    xr = _load(GETTING_STARTED / "model-deployment.yaml")[0]
    required = render.overlay(
        _load(GETTING_STARTED), render.load_documents(GETTING_STARTED / "fleet")
    )
    out = _render(functions, xr, required=required)
    assert not out.fatal, out.error
    (replica,) = [d for d in out.composed if d["kind"] == "ModelReplica"]
    assert replica["metadata"]["namespace"] == "ml-team"
    assert replica["spec"]["clusterName"] == "eks-us-east"
    (owner,) = replica["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        "ModelDeployment",
        engine.composite_uid(xr),
        True,
    )
    assert replica["metadata"]["labels"]["crossplane.io/composite"] == "qwen-demo"
    assert isinstance(replica["spec"]["engines"][0]["members"][0].get("size", 1), int)
    scheduled = _condition(out.composite, "ReplicasScheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("True", "ReplicasCreated")
    # The replica is not Ready yet, so neither is the deployment.
    assert _condition(out.composite, "Ready")["status"] == "False"
    # What the pipeline asked for, recorded by the engine.
    assert "InferenceCluster" in {r.get("kind") for r in out.required}


@pytest.mark.crossplane
def test_an_observed_resource_no_longer_desired_is_garbage_collected(
    functions: render.Functions,
) -> None:
    xr = _load(GETTING_STARTED / "model-deployment.yaml")[0]
    required = render.overlay(
        _load(GETTING_STARTED), render.load_documents(GETTING_STARTED / "fleet")
    )
    first = _render(functions, xr, required=required)
    (replica,) = [d for d in first.composed if d["kind"] == "ModelReplica"]
    stale = copy.deepcopy(replica)
    stale["metadata"]["name"] = "qwen-demo-stale"
    stale["metadata"]["annotations"]["crossplane.io/composition-resource-name"] = "stale"
    unowned = copy.deepcopy(stale)
    unowned["metadata"]["name"] = "qwen-demo-unowned"
    unowned["metadata"]["annotations"]["crossplane.io/composition-resource-name"] = "unowned"
    del unowned["metadata"]["ownerReferences"]
    out = _render(functions, xr, required=required, observed=[replica, stale, unowned])
    assert not out.fatal, out.error
    # Only what the XR controls is collected; an unowned leftover is left alone.
    assert [d["metadata"]["name"] for d in out.deleted] == ["qwen-demo-stale"]
    assert [d["metadata"]["name"] for d in out.composed if d["kind"] == "ModelReplica"] == [
        replica["metadata"]["name"]
    ]


@pytest.mark.crossplane
def test_observed_resources_controlled_by_another_xr_are_refused(
    functions: render.Functions,
) -> None:
    xr = _inference_class()
    foreign = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "c",
            "annotations": {"crossplane.io/composition-resource-name": "c"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "X", "name": "x", "uid": "other", "controller": True}
            ],
        },
    }
    with pytest.raises(engine.EngineError, match="not controlled by the XR") as caught:
        _render(functions, xr, observed=[foreign])
    assert caught.value.returncode not in (0, engine.EXIT_PIPELINE_FATAL)


@pytest.mark.crossplane
def test_an_xrd_of_another_kind_is_refused(functions: render.Functions) -> None:
    xr = _inference_class()
    composition, _ = _api("InferenceClass")
    _, wrong = _api("ModelService")
    with pytest.raises(engine.EngineError, match="does not match the input XR"):
        engine.render_composite(xr, composition, functions.for_composition(composition), xrd=wrong)


@pytest.mark.crossplane
def test_a_fatal_result_is_exit_code_3_with_the_partial_output(
    functions: render.Functions,
) -> None:
    xr = _inference_class()
    xr["spec"] = {"devices": "not a list"}
    out = _render(functions, xr)
    assert out.fatal
    assert "returned a fatal result" in out.error
    assert f"invalid InferenceClass {xr['metadata']['name']}" in out.error
    synced = _condition(out.composite, "Synced")
    assert (synced["status"], synced["reason"]) == ("False", "ReconcileError")
    assert out.composed == []


@pytest.mark.crossplane
def test_an_unreachable_function_times_out_as_an_engine_error() -> None:
    xr = _inference_class()
    composition, xrd = _api("InferenceClass")
    dead = {"modelplane-function-inferenceclass": f"127.0.0.1:{render.free_port()}"}
    with pytest.raises(engine.EngineError) as caught:
        engine.render_composite(xr, composition, dead, xrd=xrd, timeout=3)
    assert caught.value.returncode not in (None, 0, engine.EXIT_PIPELINE_FATAL)
    assert "deadline" in caught.value.stderr.lower() or "context" in caught.value.stderr


@pytest.mark.crossplane
def test_the_binary_is_the_pinned_version() -> None:
    binary = engine.find_crossplane()
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "v2.4.0"
    assert os.path.realpath(binary).endswith("/crossplane-v2.4.0/crossplane")
