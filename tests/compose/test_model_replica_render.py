"""Every recipe's deployment, as the ModelReplica it composes, rendered by Crossplane.

``examples/replicas/<recipe>/`` holds the replica and, under ``fleet/``, the observed
InferenceCluster (and ModelCache) it requires.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from modelplane.dev import render

REPLICAS = render.ROOT / "examples" / "replicas"
RECIPES = render.ROOT / "examples" / "recipes"

Doc = dict[str, Any]


@dataclass(frozen=True)
class Recipe:
    """What a recipe's replica must compose.

    Attributes:
        folder: The folder under examples/replicas/.
        deployment: The recipe's ModelDeployment file it mirrors.
        workloads: The kind of each engine's workload, by engine name.
        claims: Each ResourceClaimTemplate's device requests as (name, count) pairs.
        cache: The ModelCache PVC every engine pod mounts, if any.
        injected_model: The engines that get ``--model=/mnt/models`` added.
    """

    folder: str
    deployment: str
    workloads: dict[str, str]
    claims: tuple[tuple[tuple[str, int], ...], ...]
    cache: str | None = None
    injected_model: tuple[str, ...] = ()


GPU1 = (("gpu", 1),)
GPU8 = (("gpu", 8),)
GPU_EFA = (("gpu", 8), ("efa", 16))
CASES = [
    Recipe("qwen3-8b", "qwen3-8b/model-deployment.yaml", {"qwen3-8b": "Deployment"}, (GPU1,)),
    Recipe("qwen2.5-7b", "qwen2.5-7b/model-deployment.yaml", {"qwen-7b": "Deployment"}, (GPU1,)),
    Recipe("llama-3.1-8b", "llama-3.1-8b/model-deployment.yaml", {"llama": "Deployment"}, (GPU1,)),
    Recipe("glm-4.5-air", "glm-4.5-air/model-deployment.yaml", {"glm": "Deployment"}, (GPU1,)),
    Recipe(
        "nemotron-3.5-lightning",
        "nemotron-3.5-lightning/model-deployment.yaml",
        {"nemotron-lightning": "Deployment"},
        (GPU1,),
        cache="nemotron-lightning-model-cache",
    ),
    Recipe(
        "laguna",
        "laguna/model-deployment.yaml",
        {"laguna": "Deployment"},
        (GPU8,),
        cache="laguna-model-cache",
    ),
    Recipe(
        "laguna-sglang",
        "laguna/model-deployment-sglang.yaml",
        {"laguna": "Deployment"},
        (GPU8,),
        cache="laguna-model-cache",
    ),
    Recipe(
        "qwen3-coder",
        "qwen3-coder/model-deployment.yaml",
        {"qwen3-coder": "LeaderWorkerSet"},
        (GPU_EFA, GPU_EFA),
        cache="qwen3-coder-model-cache",
    ),
    Recipe(
        "kimi-k2",
        "kimi-k2/model-deployment.yaml",
        {"kimi-prefill": "Deployment", "kimi-decode": "Deployment"},
        (GPU_EFA, GPU_EFA),
        cache="kimi-k2-model-cache",
    ),
]
IDS = [c.folder for c in CASES]


def _load(path: Path) -> list[Doc]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def inputs(folder: str) -> tuple[Doc, list[Doc]]:
    """Return a recipe's ModelReplica and the observed documents it requires."""
    where = REPLICAS / folder
    (replica,) = _load(where / "model-replica.yaml")
    fleet = [d for p in sorted((where / "fleet").glob("*.yaml")) for d in _load(p)]
    return replica, fleet


_RENDERED: dict[str, tuple[Doc, list[Doc]]] = {}


def rendered(functions: render.Functions, folder: str, **kwargs: Any) -> tuple[Doc, list[Doc]]:
    """Render a recipe's replica; return the rendered replica and its composed Objects.

    A plain render is done once per session (the schema tests reuse it); a copy is
    returned, so a test may change what it gets.
    """
    if kwargs or folder not in _RENDERED:
        replica, fleet = inputs(folder)
        out = render.render(replica, functions, required=fleet, **kwargs)
        result = (out[0], [d for d in out[1:] if d.get("kind") == "Object"])
        if kwargs:
            return result
        _RENDERED[folder] = result
    return copy.deepcopy(_RENDERED[folder])


def inner(objects: list[Doc]) -> Iterator[Doc]:
    for obj in objects:
        yield obj["spec"]["forProvider"]["manifest"]


def pod_templates(workload: Doc) -> list[Doc]:
    if workload["kind"] == "Deployment":
        return [workload["spec"]["template"]]
    lwt = workload["spec"]["leaderWorkerTemplate"]
    return [lwt["leaderTemplate"], lwt["workerTemplate"]]


def condition(xr: Doc, typ: str) -> Doc:
    return next(c for c in xr["status"]["conditions"] if c["type"] == typ)


def test_every_case_has_an_example() -> None:
    assert sorted(p.name for p in REPLICAS.iterdir() if p.is_dir()) == sorted(IDS)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_example_mirrors_its_recipe_deployment(case: Recipe) -> None:
    replica, _ = inputs(case.folder)
    (deployment,) = _load(RECIPES / case.deployment)
    template = deployment["spec"]["template"]["spec"]
    assert (
        replica["metadata"]["labels"]["modelplane.ai/deployment"]
        == (deployment["metadata"]["name"])
    )
    assert replica["spec"].get("modelCacheRef") == template.get("modelCacheRef")
    assert replica["spec"].get("serving") == template.get("serving")
    for ours, theirs in zip(replica["spec"]["engines"], template["engines"], strict=True):
        assert (ours["name"], ours.get("phase")) == (theirs["name"], theirs.get("phase"))
        for mine, member in zip(ours["members"], theirs["members"], strict=True):
            assert mine["template"] == member["template"], "the pod template passes verbatim"
            assert (mine["role"], mine.get("worker")) == (member["role"], member.get("worker"))
            asked = [
                (d["name"], d["count"], d["selectors"]) for d in member["nodeSelector"]["devices"]
            ]
            got = [(r["name"], r["count"], r["selectors"]) for r in mine["deviceRequests"]]
            assert got == asked


@pytest.mark.crank
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_recipe_replica_renders(functions: render.Functions, case: Recipe) -> None:
    xr, objects = rendered(functions, case.folder)
    assert condition(xr, "ModelAccepted")["reason"] == "Applying"
    assert condition(xr, "Ready")["status"] == "False", "nothing serves before it is applied"
    manifests = list(inner(objects))
    workloads = {
        m["metadata"]["labels"]["modelplane.ai/engine"]: m["kind"]
        for m in manifests
        if m["kind"] in {"Deployment", "LeaderWorkerSet"}
        and "modelplane.ai/engine" in m["metadata"]["labels"]
    }
    assert workloads == case.workloads
    claims = [
        tuple((r["name"], r["exactly"]["count"]) for r in m["spec"]["spec"]["devices"]["requests"])
        for m in manifests
        if m["kind"] == "ResourceClaimTemplate"
    ]
    assert sorted(claims) == sorted(case.claims)
    route = next(m for m in manifests if m["kind"] == "HTTPRoute")
    prefix = f"/{xr['metadata']['namespace']}/{xr['metadata']['name']}/"
    assert route["spec"]["rules"][0]["matches"][0]["path"]["value"] == prefix
    replica, _ = inputs(case.folder)
    for obj in objects:
        assert obj["spec"]["providerConfigRef"]["name"] == replica["spec"]["clusterName"]
    for m in manifests:
        if m["kind"] not in {"Deployment", "LeaderWorkerSet"} or m["metadata"]["name"].endswith(
            "-epp"
        ):
            continue
        _check_engine_pods(case, m)


def _check_engine_pods(case: Recipe, workload: Doc) -> None:
    engine_name = workload["metadata"]["labels"]["modelplane.ai/engine"]
    for template in pod_templates(workload):
        spec = template["spec"]
        engine = next(c for c in spec["containers"] if c["name"] == "engine")
        assert spec["nodeSelector"]["modelplane.ai/pool"]
        mounts = {m["mountPath"] for m in engine["volumeMounts"]}
        claims = {
            v["persistentVolumeClaim"]["claimName"]
            for v in spec["volumes"]
            if "persistentVolumeClaim" in v
        }
        if case.cache:
            assert "/mnt/models" in mounts
            assert claims == {case.cache}
        else:
            assert "/mnt/models" not in mounts
        injected = "--model=/mnt/models" in (engine.get("args") or [])
        assert injected == (engine_name in case.injected_model)


@pytest.mark.crank
def test_gang_recipe_wires_rank_and_leader_address(functions: render.Functions) -> None:
    _, objects = rendered(functions, "qwen3-coder")
    lws = next(m for m in inner(objects) if m["kind"] == "LeaderWorkerSet")
    for template in pod_templates(lws):
        env = next(c for c in template["spec"]["containers"] if c["name"] == "engine")["env"]
        assert [e["name"] for e in env] == [
            "MODELPLANE_LEADER_ADDRESS",
            "MODELPLANE_RANK",
            "NCCL_DEBUG",
            "FI_PROVIDER",
        ]


@pytest.mark.crank
def test_prefill_decode_recipe_serves_once_its_objects_are_ready(
    functions: render.Functions,
) -> None:
    _, objects = rendered(functions, "kimi-k2")
    kinds = sorted(m["kind"] for m in inner(objects))
    assert kinds.count("Deployment") == 3, "prefill, decode and the endpoint picker"
    assert "InferencePool" in kinds
    ready = [
        {
            **obj,
            "status": {
                "conditions": [
                    {"reason": "ReconcileSuccess", "status": "True", "type": "Synced"},
                    {"reason": "Available", "status": "True", "type": "Ready"},
                ]
            },
        }
        for obj in objects
    ]
    xr, _ = rendered(functions, "kimi-k2", observed=ready)
    assert condition(xr, "ModelAccepted")["status"] == "True"
    assert condition(xr, "ModelReady")["status"] == "True"
    assert condition(xr, "Ready")["status"] == "True"
