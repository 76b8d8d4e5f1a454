"""ModelCache staging: phases, step gating, names, and the hydration script itself."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from modelplane.domain import cache
from modelplane.domain.cache import Observed, Phase, Reason, Step
from modelplane.domain.workload import cache_claim

OPEN = cache.Cache("qwen", "ml-team", cache.Source("Qwen/Qwen3-8B", 40))
GATED = cache.Cache(
    "coder",
    "ml-team",
    cache.Source("Qwen/Qwen3-Coder-480B-A35B-Instruct", 1100, "main", "hf-token", "token.txt"),
)
EKS = cache.CacheCluster("eks", "EKS", "eks", "modelplane-rwx-efs")
READY = Observed(ready=True)
CREATED = Observed(ready=False)


def _seen(cluster: str, **steps: Observed) -> dict[str, Observed]:
    return {cache.key(cluster, Step(step)): seen for step, seen in steps.items()}


@dataclass(frozen=True)
class Case:
    """One cluster's staging: what it reports, and what the cache does there."""

    id: str
    cluster: cache.CacheCluster
    observed: Mapping[str, Observed] = field(default_factory=dict)
    cache: cache.Cache = OPEN
    phase: Phase = Phase.PENDING
    reason: Reason = Reason.CREATING_STORAGE
    steps: tuple[Step, ...] = ()
    detail: str = ""


CASES = [
    Case("vultr-has-no-rwx", cache.CacheCluster("vke", "Vultr", "vke"), phase=Phase.FAILED,
         reason=Reason.NO_RWX_STORAGE, detail="Vultr clusters have no ReadWriteMany storage"),
    Case("existing-without-class", cache.CacheCluster("byo", "Existing", "byo"), phase=Phase.FAILED,
         reason=Reason.NO_RWX_STORAGE, detail="existing.cache.storageClassName"),
    Case("no-provider-config-yet", cache.CacheCluster("eks", "EKS", None, "modelplane-rwx-efs"),
         reason=Reason.CLUSTER_PENDING),
    Case("class-not-published-yet", cache.CacheCluster("eks", "EKS", "eks", None),
         reason=Reason.STORAGE_PENDING),
    Case("existing-with-class", cache.CacheCluster("byo", "Existing", "byo", "weka-rwx"),
         steps=(Step.NAMESPACE,)),
    Case("first-the-namespace", EKS, steps=(Step.NAMESPACE,), detail="creating namespace ml-team"),
    Case("namespace-created-then-the-claim", EKS, _seen("eks", namespace=CREATED),
         steps=(Step.NAMESPACE,)),
    Case("namespace-ready-claim", EKS, _seen("eks", namespace=READY),
         steps=(Step.NAMESPACE, Step.CLAIM), detail="creating PVC qwen-model-cache"),
    Case("gated-claim-and-secret", EKS, _seen("eks", namespace=READY), GATED,
         steps=(Step.NAMESPACE, Step.CLAIM, Step.SECRET)),
    Case("claim-ready-then-the-job", EKS, _seen("eks", namespace=READY, claim=READY),
         phase=Phase.HYDRATING, reason=Reason.HYDRATING,
         steps=(Step.NAMESPACE, Step.CLAIM, Step.HYDRATE), detail="downloading Qwen/Qwen3-8B"),
    Case("gated-waits-for-the-secret",
         EKS,
         _seen("eks", namespace=READY, claim=READY,
               secret=Observed(message='cannot get referenced resource: secrets "hf-token"')),
         GATED, steps=(Step.NAMESPACE, Step.CLAIM, Step.SECRET),
         detail='Secret coder-hf-token (from hf-token): cannot get referenced resource'),
    Case("gated-job-once-both-ready", EKS,
         _seen("eks", namespace=READY, claim=READY, secret=READY), GATED,
         phase=Phase.HYDRATING, reason=Reason.HYDRATING,
         steps=(Step.NAMESPACE, Step.CLAIM, Step.SECRET, Step.HYDRATE)),
    Case("job-complete-is-ready-and-released", EKS,
         _seen("eks", namespace=READY, claim=READY, hydrate=READY), phase=Phase.READY,
         reason=Reason.STAGED, steps=(Step.NAMESPACE, Step.CLAIM)),
    Case("gated-staged-releases-the-secret-too", EKS,
         _seen("eks", namespace=READY, claim=READY, secret=READY, hydrate=READY), GATED,
         phase=Phase.READY, reason=Reason.STAGED, steps=(Step.NAMESPACE, Step.CLAIM)),
    Case("staged-claim-stays-ready-with-no-job", EKS,
         _seen("eks", namespace=READY, claim=Observed(ready=True, staged=OPEN.source.digest())),
         phase=Phase.READY, reason=Reason.STAGED, steps=(Step.NAMESPACE, Step.CLAIM),
         detail="Qwen/Qwen3-8B is staged"),
    Case("new-source-stages-again", EKS,
         _seen("eks", namespace=READY, claim=Observed(ready=True, staged="0123abcd")),
         phase=Phase.HYDRATING, reason=Reason.HYDRATING,
         steps=(Step.NAMESPACE, Step.CLAIM, Step.HYDRATE)),
    Case("new-gated-source-needs-its-secret-again", EKS,
         _seen("eks", namespace=READY, claim=Observed(ready=True, staged="0123abcd")), GATED,
         steps=(Step.NAMESPACE, Step.CLAIM, Step.SECRET)),
    Case("an-earlier-sources-job-does-not-count", EKS,
         _seen("eks", namespace=READY, claim=READY,
               hydrate=Observed(ready=True, applies="qwen-hydrate-0123abcd")),
         phase=Phase.HYDRATING, reason=Reason.HYDRATING,
         steps=(Step.NAMESPACE, Step.CLAIM, Step.HYDRATE)),
    Case("job-failed", EKS,
         _seen("eks", namespace=READY, claim=READY,
               hydrate=Observed(failed=True, message="backoff limit reached")),
         phase=Phase.FAILED, reason=Reason.HYDRATION_FAILED,
         steps=(Step.NAMESPACE, Step.CLAIM, Step.HYDRATE), detail="failed: backoff limit reached"),
    Case("kept-claim-while-namespace-flaps", EKS, _seen("eks", namespace=CREATED, claim=READY),
         phase=Phase.HYDRATING, reason=Reason.HYDRATING,
         steps=(Step.NAMESPACE, Step.CLAIM, Step.HYDRATE)),
    Case("completed-job-while-claim-flaps", EKS,
         _seen("eks", namespace=READY, claim=CREATED, hydrate=READY), phase=Phase.READY,
         reason=Reason.STAGED, steps=(Step.NAMESPACE, Step.CLAIM)),
    Case("another-clusters-objects-do-not-count", EKS, _seen("gke", namespace=READY, claim=READY),
         steps=(Step.NAMESPACE,)),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_stage(case: Case) -> None:
    staging = cache.stage(case.cache, case.cluster, case.observed)
    assert (staging.phase, staging.reason) == (case.phase, case.reason)
    want_keys = sorted(cache.key(case.cluster.name, s) for s in case.steps)
    assert sorted(c.key for c in staging.composed) == want_keys
    assert case.detail in staging.detail
    released = (Step.SECRET, Step.HYDRATE) if case.phase is Phase.READY else ()
    assert staging.released == released
    for item in staging.composed:
        assert item.resource["spec"]["providerConfigRef"] == {
            "kind": "ClusterProviderConfig",
            "name": case.cluster.provider_config,
        }


def test_staged_claim_remembers_what_it_holds() -> None:
    staged = cache.stage(OPEN, EKS, _seen("eks", namespace=READY, claim=READY, hydrate=READY))
    claim = next(c for c in staged.composed if c.key == "eks-claim").resource
    assert claim["metadata"]["annotations"] == {"modelplane.ai/staged": OPEN.source.digest()}
    again = cache.stage(OPEN, EKS, _seen("eks", namespace=READY, claim=Observed(
        ready=True, staged=OPEN.source.digest())))  # fmt: skip
    assert again == staged, "the next reconcile, with the Job gone, composes the same"
    hydrating = cache.stage(OPEN, EKS, _seen("eks", namespace=READY, claim=READY))
    hydrating_claim = next(c for c in hydrating.composed if c.key == "eks-claim").resource
    assert "annotations" not in hydrating_claim["metadata"], "not staged until the Job is done"
    assert claim["spec"] == hydrating_claim["spec"], "the PVC itself does not change"


def test_a_failed_job_is_kept_for_its_logs() -> None:
    failed = Observed(failed=True, message="backoff limit reached")
    staging = cache.stage(OPEN, EKS, _seen("eks", namespace=READY, claim=READY, hydrate=failed))
    assert staging.released == ()
    assert "eks-hydrate" in {c.key for c in staging.composed}


def _manifest(staging: cache.Staging, step: Step) -> dict[str, Any]:
    found = next(c for c in staging.composed if c.key.endswith(f"-{step.value}"))
    return dict(found.resource["spec"]["forProvider"]["manifest"])


def _everything(source: cache.Cache) -> cache.Staging:
    return cache.stage(source, EKS, _seen("eks", namespace=READY, claim=READY, secret=READY))


def test_claim_is_rwx_of_the_size_on_the_clusters_class() -> None:
    claim = _manifest(_everything(GATED), Step.CLAIM)
    assert claim["metadata"]["name"] == cache_claim("coder"), "the name replicas mount"
    assert claim["metadata"]["namespace"] == "ml-team"
    assert claim["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": "1100Gi"}},
        "storageClassName": "modelplane-rwx-efs",
    }


def test_namespace_is_never_deleted() -> None:
    staging = _everything(OPEN)
    namespace = next(c for c in staging.composed if c.key == "eks-namespace").resource
    assert "Delete" not in namespace["spec"]["managementPolicies"]
    claim = next(c for c in staging.composed if c.key == "eks-claim").resource
    assert "managementPolicies" not in claim["spec"], "the PVC goes with the cache"


@pytest.mark.parametrize(
    ("key", "path"),
    [
        pytest.param("HF_TOKEN", "data.HF_TOKEN", id="plain-key"),
        pytest.param("token.txt", "data[token.txt]", id="dotted-key"),
    ],
)
def test_secret_is_patched_from_the_control_plane_secret(key: str, path: str) -> None:
    source = cache.Cache("coder", "ml-team", cache.Source("a/b", 1, auth_secret="hf", auth_key=key))
    staging = _everything(source)
    secret = next(c for c in staging.composed if c.key == "eks-secret").resource
    assert secret["spec"]["references"] == [
        {
            "patchesFrom": {
                "apiVersion": "v1",
                "fieldPath": path,
                "kind": "Secret",
                "name": "hf",
                "namespace": "ml-team",
            },
            "toFieldPath": "data.HF_TOKEN",
        }
    ]
    assert "data" not in secret["spec"]["forProvider"]["manifest"], "the value never passes here"


def _env(job: Mapping[str, Any]) -> dict[str, Any]:
    container = job["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_gated_job_reads_the_propagated_token_and_revision() -> None:
    job = _manifest(_everything(GATED), Step.HYDRATE)
    env = _env(job)
    assert env["HF_TOKEN"] == {"secretKeyRef": {"key": "HF_TOKEN", "name": "coder-hf-token"}}
    assert env["MODELPLANE_REVISION"] == "main"
    assert env["MODELPLANE_REPO"] == "Qwen/Qwen3-Coder-480B-A35B-Instruct"
    volumes = job["spec"]["template"]["spec"]["volumes"]
    assert volumes == [
        {"name": "models", "persistentVolumeClaim": {"claimName": "coder-model-cache"}}
    ]


def test_open_job_has_no_token_and_no_revision() -> None:
    env = _env(_manifest(_everything(OPEN), Step.HYDRATE))
    assert "HF_TOKEN" not in env
    assert "MODELPLANE_REVISION" not in env


def test_job_name_follows_the_source() -> None:
    other = cache.Cache("qwen", "ml-team", cache.Source("Qwen/Qwen3-8B", 80, revision="v2"))
    resized = cache.Cache("qwen", "ml-team", cache.Source("Qwen/Qwen3-8B", 80))
    assert cache.job_name(OPEN) != cache.job_name(other), "a new revision is a new Job"
    assert cache.job_name(OPEN) == cache.job_name(resized), "a resize re-stages nothing"


LONG = "a" * 63
NAME_CASES = [
    pytest.param(LONG, LONG, id="longest-names"),
    pytest.param("qwen", "eks", id="short-names"),
]


@pytest.mark.parametrize(("cache_name", "cluster"), NAME_CASES)
def test_names_are_valid_and_stable(cache_name: str, cluster: str) -> None:
    source = cache.Cache(cache_name, LONG, cache.Source("a/b", 1, auth_secret="s"))
    where = cache.CacheCluster(cluster, "EKS", cluster, "rwx")
    seen = _seen(cluster, namespace=READY, claim=READY, secret=READY)
    first = cache.stage(source, where, seen)
    assert first == cache.stage(source, where, seen)
    for item in first.composed:
        names = [item.resource["metadata"]["name"], item.resource["spec"]["forProvider"]
                 ["manifest"]["metadata"]["name"]]  # fmt: skip
        assert all(len(n) <= 63 and n[0].isalnum() and n[-1].isalnum() for n in names), names
    objects = [c.resource["metadata"]["name"] for c in first.composed]
    assert len(set(objects)) == len(objects)


@pytest.mark.parametrize(
    ("phases", "want"),
    [
        pytest.param([], "0/0", id="none"),
        pytest.param([Phase.READY, Phase.FAILED, Phase.HYDRATING], "1/3", id="mixed"),
        pytest.param([Phase.READY, Phase.READY], "2/2", id="all"),
    ],
)
def test_summary(phases: list[Phase], want: str) -> None:
    stagings = [cache.Staging(f"c{i}", p, Reason.STAGED) for i, p in enumerate(phases)]
    assert cache.summary(stagings) == want


@pytest.fixture
def sandbox(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A fake ``pip`` and ``hf`` on PATH that log their arguments, and a models folder."""
    bin_dir, models, log = tmp_path / "bin", tmp_path / "models", tmp_path / "calls.log"
    bin_dir.mkdir()
    models.mkdir()
    for tool in ("pip", "hf"):
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{log}"\n')
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return bin_dir, models, log


def _hydrate(sandbox: tuple[Path, Path, Path], source: cache.Cache) -> list[str]:
    bin_dir, models, log = sandbox
    job = _manifest(_everything(source), Step.HYDRATE)
    container = job["spec"]["template"]["spec"]["containers"][0]
    script = container["command"][2].replace(cache.MOUNT_PATH, str(models))
    env = {k: str(v) for k, v in _env(job).items() if isinstance(v, str)}
    env["PATH"] = f"{bin_dir}:{os.environ['PATH']}"
    sh = shutil.which("sh") or "/bin/sh"
    subprocess.run([sh, "-c", script], env=env, check=True, capture_output=True)
    return log.read_text().splitlines() if log.exists() else []


def test_hydration_downloads_once(sandbox: tuple[Path, Path, Path]) -> None:
    first = _hydrate(sandbox, GATED)
    assert first == [
        f"pip install --no-cache-dir --quiet --disable-pip-version-check {cache.HF_HUB}",
        f"hf download Qwen/Qwen3-Coder-480B-A35B-Instruct --revision main --local-dir {sandbox[1]}",
    ]
    assert _hydrate(sandbox, GATED) == first, "the second run finds the marker and stops"
    changed = cache.Cache("coder", "ml-team", cache.Source("Qwen/Qwen3-8B", 1, auth_secret="s"))
    calls = _hydrate(sandbox, changed)
    assert calls[-1] == f"hf download Qwen/Qwen3-8B --local-dir {sandbox[1]}", "a new source"
