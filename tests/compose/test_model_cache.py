"""ModelCache: stage to every matched cluster, step by step, and report per cluster.

The in-process tests build requests the way Crossplane sends them; the rendering tests
render the docs' ModelCaches with Crossplane's reconciler (``bin/crossplane``) against
the fleets under ``examples/caches/`` and validate the composed Objects against their
real schemas.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit, registry, runtime
from modelplane.dev import render, schemas

from tests.requests import conditions, request

Doc = dict[str, Any]
CACHE: Doc = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "ModelCache",
    "metadata": {"name": "qwen3-coder", "namespace": "ml-team"},
    "spec": {
        "source": "HuggingFace",
        "huggingFace": {
            "repo": "Qwen/Qwen3-Coder-480B-A35B-Instruct",
            "sizeGiB": 1100,
            "authSecret": {"name": "hf-token", "key": "HF_TOKEN"},
        },
    },
}
CASES = render.ROOT / "examples" / "caches"


def _cluster(name: str, source: str, storage: str | None = None, *, pc: bool = True) -> Doc:
    status: Doc = {"providerConfigRef": {"name": name}} if pc else {}
    if storage:
        status["cache"] = {"storageClassName": storage}
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": name, "labels": {"modelplane.ai/region": "us"}},
        "spec": {"cluster": {"source": source}},
        "status": status,
    }


EKS = _cluster("eks-us", "EKS", "modelplane-rwx-efs")
GKE = _cluster("gke-us", "GKE", "enterprise-rwx")
VULTR = _cluster("vke-us", "Vultr")


def _ready(key: str, *, job: Doc | None = None) -> Doc:
    status: Doc = {"conditions": [{"type": "Ready", "status": "True"}]}
    if job is not None:
        status["atProvider"] = {"manifest": {"status": job}}
    return {"apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "Object",
            "metadata": {"name": key}, "status": status}  # fmt: skip


def _run(
    xr: Doc = CACHE,
    clusters: list[Doc] | None = None,
    observed: Mapping[str, Doc] | None = None,
) -> fnv1.RunFunctionResponse:
    req = request(xr, observed=observed, required={"clusters": clusters or []})
    return runtime.run(req, registry.COMPOSERS)


def _status(rsp: fnv1.RunFunctionResponse) -> Doc:
    return dict(kit.struct_to_dict(rsp.desired.composite.resource).get("status", {}))


def _phases(rsp: fnv1.RunFunctionResponse) -> dict[str, str]:
    return {c["name"]: c["phase"] for c in _status(rsp)["clusters"]}


def _resource(rsp: fnv1.RunFunctionResponse, key: str) -> Doc:
    return kit.struct_to_dict(rsp.desired.resources[key].resource)


def test_first_call_asks_for_the_selected_clusters() -> None:
    xr = copy.deepcopy(CACHE)
    xr["spec"]["clusterSelector"] = {"matchLabels": {"modelplane.ai/region": "us"}}
    rsp = runtime.run(request(xr), registry.COMPOSERS)
    selector = rsp.requirements.resources["clusters"]
    assert (selector.kind, dict(selector.match_labels.labels)) == (
        "InferenceCluster",
        {"modelplane.ai/region": "us"},
    )
    assert len(rsp.desired.resources) == 0


def test_no_selector_asks_for_every_cluster() -> None:
    rsp = runtime.run(request(CACHE), registry.COMPOSERS)
    selector = rsp.requirements.resources["clusters"]
    assert selector.HasField("match_labels")
    assert dict(selector.match_labels.labels) == {}


def test_nothing_matched_is_a_condition_and_a_warning() -> None:
    rsp = _run(clusters=[])
    assert conditions(rsp)["ClustersMatched"][:2] == ("False", "NoClustersMatched")
    assert conditions(rsp)["ArtifactReady"][0] == "False"
    assert _status(rsp) == {"clusters": [], "summary": {"ready": "0/0"}}
    assert [r.severity for r in rsp.results] == [fnv1.SEVERITY_WARNING]
    assert rsp.desired.composite.ready == fnv1.READY_FALSE


def test_staging_goes_step_by_step_until_ready() -> None:
    rsp = _run(clusters=[EKS])
    assert sorted(rsp.desired.resources) == ["eks-us-namespace"]
    assert _phases(rsp) == {"eks-us": "Pending"}

    observed = {"eks-us-namespace": _ready("ns")}
    rsp = _run(clusters=[EKS], observed=observed)
    assert sorted(rsp.desired.resources) == [
        "eks-us-claim",
        "eks-us-namespace",
        "eks-us-secret",
    ]
    assert _phases(rsp) == {"eks-us": "Pending"}

    observed |= {"eks-us-claim": _ready("pvc"), "eks-us-secret": _ready("secret")}
    rsp = _run(clusters=[EKS], observed=observed)
    assert "eks-us-hydrate" in rsp.desired.resources
    assert _phases(rsp) == {"eks-us": "Hydrating"}
    assert conditions(rsp)["ArtifactReady"][:2] == ("False", "Hydrating")

    observed["eks-us-hydrate"] = _ready("job")
    rsp = _run(clusters=[EKS], observed=observed)
    assert _phases(rsp) == {"eks-us": "Ready"}
    assert _status(rsp)["summary"] == {"ready": "1/1"}
    assert conditions(rsp)["ArtifactReady"][:2] == ("True", "Staged")
    assert rsp.desired.composite.ready == fnv1.READY_UNSPECIFIED  # Crossplane derives Ready


def _staged_claim(xr: Doc = CACHE) -> tuple[dict[str, Doc], Doc]:
    """Return a cluster's Objects the moment its Job completes, and the claim composed then."""
    observed = {
        "eks-us-namespace": _ready("ns"),
        "eks-us-claim": _ready("pvc"),
        "eks-us-secret": _ready("secret"),
        "eks-us-hydrate": _ready("job"),
    }
    rsp = _run(xr, clusters=[EKS], observed=observed)
    return observed, _resource(rsp, "eks-us-claim")


def test_staged_cluster_loses_its_job_and_token_secret_but_keeps_its_weights() -> None:
    observed, _ = _staged_claim()
    rsp = _run(clusters=[EKS], observed=observed)
    assert sorted(rsp.desired.resources) == ["eks-us-claim", "eks-us-namespace"]
    assert _phases(rsp) == {"eks-us": "Ready"}
    claim = _resource(rsp, "eks-us-claim")
    assert "modelplane.ai/staged" in claim["metadata"]["annotations"]
    assert claim["spec"]["forProvider"]["manifest"]["kind"] == "PersistentVolumeClaim"


def test_staged_cluster_stays_ready_once_the_job_is_gone() -> None:
    _, claim = _staged_claim()
    observed = {"eks-us-namespace": _ready("ns"), "eks-us-claim": {**claim, **_ready("pvc")}}
    observed["eks-us-claim"]["metadata"] = claim["metadata"]
    rsp = _run(clusters=[EKS], observed=observed)
    assert _phases(rsp) == {"eks-us": "Ready"}
    assert sorted(rsp.desired.resources) == ["eks-us-claim", "eks-us-namespace"]
    assert conditions(rsp)["ArtifactReady"][:2] == ("True", "Staged")

    revised = copy.deepcopy(CACHE)
    revised["spec"]["huggingFace"]["revision"] = "v2"
    again = _run(revised, clusters=[EKS], observed=observed)
    assert _phases(again) == {"eks-us": "Pending"}, "a new revision stages again"
    assert "eks-us-secret" in again.desired.resources, "with the token copied back"
    annotations = _resource(again, "eks-us-claim")["metadata"].get("annotations", {})
    assert "modelplane.ai/staged" not in annotations


def test_vultr_fails_with_the_reason_and_gets_no_pvc() -> None:
    rsp = _run(clusters=[VULTR, EKS])
    assert _phases(rsp) == {"eks-us": "Pending", "vke-us": "Failed"}
    assert not [k for k in rsp.desired.resources if k.startswith("vke-us")]
    status, reason, message = conditions(rsp)["ArtifactReady"]
    assert (status, reason) == ("False", "NoRWXStorage")
    assert "vke-us: Vultr clusters have no ReadWriteMany storage" in message
    assert conditions(rsp)["ClustersMatched"][0] == "True"
    assert _status(rsp)["summary"] == {"ready": "0/2"}


def test_failed_job_fails_the_cluster_with_its_message() -> None:
    job = {"conditions": [{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]}
    failed = _ready("job", job=job)
    failed["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    observed = {
        "eks-us-namespace": _ready("ns"),
        "eks-us-claim": _ready("pvc"),
        "eks-us-secret": _ready("secret"),
        "eks-us-hydrate": failed,
    }
    rsp = _run(clusters=[EKS], observed=observed)
    assert _phases(rsp) == {"eks-us": "Failed"}
    assert "BackoffLimitExceeded" in conditions(rsp)["ArtifactReady"][2]


def test_a_cluster_that_leaves_the_selector_is_no_longer_staged_to() -> None:
    observed = {f"{c}-{s}": _ready(s) for c in ("eks-us", "gke-us") for s in ("namespace", "claim")}
    both = _run(clusters=[EKS, GKE], observed=observed)
    assert {k.split("-claim")[0] for k in both.desired.resources if k.endswith("-claim")} == {
        "eks-us",
        "gke-us",
    }
    one = _run(clusters=[EKS], observed=observed)
    assert not [k for k in one.desired.resources if k.startswith("gke-us")]
    assert sorted(one.desired.resources) == [
        "eks-us-claim",
        "eks-us-namespace",
        "eks-us-secret",
    ]
    assert _phases(one) == {"eks-us": "Pending"}, "its Secret is not propagated yet"


def test_cluster_without_a_provider_config_keeps_the_one_in_use() -> None:
    namespace = _ready("ns")
    namespace["spec"] = {"providerConfigRef": {"kind": "ClusterProviderConfig", "name": "eks-us"}}
    lost = _cluster("eks-us", "EKS", "modelplane-rwx-efs", pc=False)
    rsp = _run(clusters=[lost], observed={"eks-us-namespace": namespace})
    assert _resource(rsp, "eks-us-claim")["spec"]["providerConfigRef"]["name"] == "eks-us"
    fresh = _run(clusters=[lost])
    assert _phases(fresh) == {"eks-us": "Pending"}
    assert len(fresh.desired.resources) == 0


def test_existing_cluster_uses_its_declared_class() -> None:
    byo = _cluster("byo", "Existing")
    byo["spec"]["cluster"]["existing"] = {"cache": {"storageClassName": "weka-rwx"}}
    rsp = _run(clusters=[byo], observed={"byo-namespace": _ready("ns")})
    claim = _resource(rsp, "byo-claim")["spec"]["forProvider"]["manifest"]
    assert claim["spec"]["storageClassName"] == "weka-rwx"


def test_invalid_spec_is_a_condition_not_a_crash() -> None:
    xr = copy.deepcopy(CACHE)
    del xr["spec"]["huggingFace"]
    rsp = _run(xr, clusters=[EKS])
    assert conditions(rsp)["ArtifactReady"][:2] == ("False", "InvalidSpec")
    assert len(rsp.desired.resources) == 0


def test_same_request_same_response_whatever_the_cluster_order() -> None:
    clusters = [EKS, GKE, VULTR, _cluster("aks-eu", "AKS", "modelplane-rwx-fs")]
    observed = {"eks-us-namespace": _ready("ns"), "gke-us-namespace": _ready("ns")}
    first = _run(clusters=clusters, observed=observed).SerializeToString(deterministic=True)
    shuffled = clusters[:]
    random.Random(7).shuffle(shuffled)
    again = _run(clusters=shuffled, observed=observed).SerializeToString(deterministic=True)
    assert first == again
    assert list(_phases(_run(clusters=shuffled))) == ["aks-eu", "eks-us", "gke-us", "vke-us"]


# Real renders of the docs' caches against examples/caches/ with bin/crossplane.


def _load(path: Path) -> list[Doc]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def _inputs(case: str) -> tuple[Doc, list[Doc], list[Doc]]:
    where = CASES / case
    (xr,) = _load(where / "model-cache.yaml")
    fleet = [d for p in sorted((where / "fleet").glob("*.yaml")) for d in _load(p)]
    observed = [d for p in sorted((where / "observed").glob("*.yaml")) for d in _load(p)]
    return xr, fleet, observed


RENDERS = [
    # case, phases without observed/, phases with it
    ("model-cache",
     {"byo-cluster": "Failed", "eks-us-east": "Pending", "gke-us-central": "Pending",
      "vke-ewr": "Failed"},
     {"byo-cluster": "Failed", "eks-us-east": "Hydrating", "gke-us-central": "Pending",
      "vke-ewr": "Failed"}),
    ("kimi-k2", {"eks-kimi": "Pending"}, None),
    ("laguna", {"nebius-eu-north": "Pending"}, {"nebius-eu-north": "Ready"}),
    ("nemotron-3.5-lightning", {"nebius-eu-north": "Pending"}, None),
    ("qwen2.5-72b", {"aks-a100-single": "Pending", "nebius-h100-single": "Pending"},
     {"aks-a100-single": "Ready", "nebius-h100-single": "Failed"}),
    ("qwen3-coder", {"eks-coder": "Pending"}, {"eks-coder": "Ready"}),
]  # fmt: skip
IDS = [case for case, _, _ in RENDERS]


def test_every_render_case_is_listed() -> None:
    assert sorted(p.name for p in CASES.iterdir() if p.is_dir()) == sorted(IDS)


@pytest.mark.crank
@pytest.mark.parametrize(("case", "fresh", "later"), RENDERS, ids=IDS)
def test_docs_cache_renders(
    functions: render.Functions,
    case: str,
    fresh: dict[str, str],
    later: dict[str, str] | None,
) -> None:
    xr, fleet, observed = _inputs(case)
    for seen, phases in ((), fresh), (observed, later):
        if phases is None:
            continue
        out = render.render(xr, functions, required=fleet, observed=list(seen))
        rendered, objects = out[0], [d for d in out[1:] if d.get("kind") == "Object"]
        assert {c["name"]: c["phase"] for c in rendered["status"]["clusters"]} == phases
        ready = sum(1 for p in phases.values() if p == "Ready")
        assert rendered["status"]["summary"]["ready"] == f"{ready}/{len(phases)}"
        for obj in objects:
            assert obj["metadata"]["namespace"] == xr["metadata"]["namespace"]
            cluster = obj["spec"]["providerConfigRef"]["name"]
            assert phases[cluster] != "Failed" or seen, "a cluster without RWX gets nothing"
            assert len(obj["metadata"]["name"]) <= 63


@pytest.mark.crank
@pytest.mark.skipif(not schemas.available(), reason="schemas not fetched: tools/schemas/fetch.sh")
def test_rendered_objects_validate_against_real_schemas(functions: render.Functions) -> None:
    xr, fleet, observed = _inputs("model-cache")
    out = render.render(xr, functions, required=fleet, observed=observed)
    objects = [d for d in out[1:] if d.get("kind") == "Object"]
    assert {o["spec"]["forProvider"]["manifest"]["kind"] for o in objects} == {
        "Namespace", "PersistentVolumeClaim", "Secret", "Job",
    }  # fmt: skip
    docs = schemas.unwrap(objects)
    report = schemas.validate(docs)
    assert report.ok, "\n".join(report.failures + report.missing) or report.output
