"""ModelCache: model weights staged once on every matching cluster's shared storage.

For each cluster the cache matches, :func:`stage` decides how far along the cache is
there and which provider-kubernetes Objects to compose, each step once the one before
it is ready in the observed state (and kept from then on):

1. the namespace named like the cache's (never deleted: replicas share it);
2. a ReadWriteMany PVC named :func:`claim_name` on the cluster's RWX StorageClass, of
   ``sizeGiB``; with ``authSecret``, a Secret that provider-kubernetes fills from the
   control-plane Secret (``spec.references[].patchesFrom``) under ``HF_TOKEN``;
3. once the PVC (and Secret) exist, a Job that downloads the repository at its revision
   into the PVC with the Hugging Face CLI, once: it leaves a marker file per source and
   exits at once when the marker is there. The Job's name carries a digest of the
   source, so a new repo or revision is a new Job (a Job's template is immutable).

The cache is Pending on a cluster until the Job is composed, Hydrating until it
completes, then Ready; Failed when the Job failed or when the cluster has no RWX
storage (Vultr, or an Existing cluster without ``cache.storageClassName``), in which
case nothing is composed there.

Once the copy on a cluster is staged, the download Job and the copied token Secret are
no longer composed, so Crossplane removes them from that cluster (the weights stay, in
the PVC). What is staged is remembered on the PVC's Object: the annotation
:data:`STAGED_ANNOTATION` holds the digest of the source it holds, so the cache stays
Ready there with no Job left to say so, and a new repo or revision (a new digest)
stages again, with a new Job and the Secret back. A failed Job is kept, for its logs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from modelplane.domain.objects import job_query
from modelplane.domain.stack import ProviderConfig, wrap
from modelplane.domain.workload import names

MOUNT_PATH = "/mnt/models"
MARKER_DIR = f"{MOUNT_PATH}/.modelplane"
TOKEN_KEY = "HF_TOKEN"
HYDRATE_IMAGE = "python:3.12-slim"
HF_HUB = "huggingface_hub==1.33.0"
"""The Hugging Face client (and its ``hf`` CLI) the hydration Job installs, pinned."""
BACKOFF_LIMIT = 4
LABEL_CACHE = "modelplane.ai/cache"
STAGED_ANNOTATION = "modelplane.ai/staged"
"""On the PVC's Object: the digest of the source the PVC holds, once it is staged."""
NO_RWX_CLOUDS = ("Vultr",)
JOB_PREFIX_LENGTH = 40
"""Room for ``-hydrate-`` and an 8-digit digest within a Job name's 63 characters."""

HYDRATE_SCRIPT = f"""\
set -eu
marker="{MARKER_DIR}/hydrated-$MODELPLANE_SOURCE_DIGEST"
if [ -f "$marker" ]; then
  echo "$MODELPLANE_REPO is already staged; nothing to do"
  exit 0
fi
pip install --no-cache-dir --quiet --disable-pip-version-check "$MODELPLANE_HF_HUB"
if [ -n "${{MODELPLANE_REVISION:-}}" ]; then set -- --revision "$MODELPLANE_REVISION"; fi
hf download "$MODELPLANE_REPO" "$@" --local-dir {MOUNT_PATH}
mkdir -p {MARKER_DIR}
touch "$marker"
"""
"""Idempotent: the marker is written only after a complete download, so a Job that is
run again (its pod rescheduled, the Job recreated) resumes or skips, never re-stages."""


class CacheStatus(StrEnum):
    """What a ModelDeployment knows of the ModelCache it references (its CacheState's
    status): a StrEnum, so the text on the wire and in messages stays the same."""

    NONE = "none"
    """The deployment references no cache."""
    UNKNOWN = "unknown"
    """Not read yet, or found but unreadable: nothing new is placed, nothing placed moves."""
    MISSING = "missing"
    """Crossplane answered, and no such cache exists."""
    FOUND = "found"
    """Found and read."""


class Phase(StrEnum):
    """How far along the cache is on one cluster."""

    PENDING = "Pending"
    HYDRATING = "Hydrating"
    READY = "Ready"
    FAILED = "Failed"


class Reason(StrEnum):
    """Why a cluster's cache is where it is."""

    CLUSTER_PENDING = "ClusterPending"
    STORAGE_PENDING = "StoragePending"
    NO_RWX_STORAGE = "NoRWXStorage"
    CREATING_STORAGE = "CreatingStorage"
    HYDRATING = "Hydrating"
    HYDRATION_FAILED = "HydrationFailed"
    STAGED = "Staged"


class Step(StrEnum):
    """The Objects a cache composes on each cluster, by the key suffix they go under."""

    NAMESPACE = "namespace"
    SECRET = "secret"
    CLAIM = "claim"
    HYDRATE = "hydrate"


@dataclass(frozen=True)
class Source:
    """A Hugging Face repository, and what the cache needs to stage it.

    Attributes:
        repo: ``<owner>/<name>``.
        revision: A branch, tag or commit; None for the default branch.
        size_gib: The PVC's size.
        auth_secret: A Secret in the cache's namespace holding the token, if any.
        auth_key: The key of the token in that Secret.
    """

    repo: str
    size_gib: int
    revision: str | None = None
    auth_secret: str | None = None
    auth_key: str = TOKEN_KEY

    def digest(self) -> str:
        """Return 8 hex digits that change whenever the staged content would."""
        text = f"{self.repo}@{self.revision or ''}"
        return hashlib.sha256(text.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class Cache:
    """The ModelCache: its name, namespace and source."""

    name: str
    namespace: str
    source: Source


@dataclass(frozen=True)
class CacheCluster:
    """A matched InferenceCluster as the cache needs it.

    Attributes:
        name: The InferenceCluster's name.
        source: ``spec.cluster.source`` (GKE, EKS, ..., Existing).
        provider_config: The provider config that reaches it, once it has one.
        storage_class: Its RWX StorageClass, once known.
    """

    name: str
    source: str
    provider_config: str | None = None
    storage_class: str | None = None


@dataclass(frozen=True)
class Observed:
    """What one composed Object reports.

    Attributes:
        ready: Its ``Ready`` condition is True.
        failed: The object it applies says it failed (a Job's ``Failed`` condition).
        message: Why, when it failed.
        applies: The name of the object it applies ("" when unknown).
        staged: Its :data:`STAGED_ANNOTATION` ("" when it has none).
    """

    ready: bool = False
    failed: bool = False
    message: str = ""
    applies: str = ""
    staged: str = ""


@dataclass(frozen=True)
class Composed:
    """One Object to compose under ``key``."""

    key: str
    resource: Mapping[str, Any]


@dataclass(frozen=True)
class Staging:
    """The cache on one cluster: its phase, why, and what to compose there.

    Attributes:
        cluster: The cluster's name.
        phase: How far along the cache is there.
        reason: Why.
        detail: What a platform team reads in a condition.
        composed: The Objects to compose there.
        released: The steps deliberately no longer composed there (staged: the Job and
            the Secret), which must not be held.
    """

    cluster: str
    phase: Phase
    reason: Reason
    detail: str = ""
    composed: tuple[Composed, ...] = ()
    released: tuple[Step, ...] = ()

    def __str__(self) -> str:
        """Say where the cache stands on the cluster, in a platform team's words."""
        return f"{self.cluster}: {self.detail}" if self.detail else self.cluster


def key(cluster: str, step: Step) -> str:
    """Return the composed-resource key of ``step`` on ``cluster`` (stable, unique)."""
    return f"{cluster}-{step.value}"


def claim_name(cache: str) -> str:
    """Name the cache's PVC on every cluster (the name ModelReplicas mount)."""
    return names.cache_claim(cache)


def secret_name(cache: str) -> str:
    """Name the token Secret the cache propagates to every cluster."""
    return names.fit(f"{cache}-hf-token")


def job_name(cache: Cache) -> str:
    """Name the hydration Job: the cache, and a digest of what it stages."""
    prefix = names.fit(cache.name, JOB_PREFIX_LENGTH)
    return f"{prefix}-hydrate-{cache.source.digest()}"


def object_name(cache: Cache, cluster: str, step: Step) -> str:
    """Name the Object of ``step`` on ``cluster``, unique in the cache's namespace."""
    return names.fit(f"{cache.name}-{cluster}-cache-{step.value}")


def stage(cache: Cache, cluster: CacheCluster, observed: Mapping[str, Observed]) -> Staging:
    """Decide the cache's phase on ``cluster`` and the Objects to compose there.

    Args:
        cache: The ModelCache.
        cluster: A cluster its selector matches.
        observed: What each of the cache's composed Objects reports, by key; a missing
            key is an Object not created yet.
    """
    reach = _reach(cluster)
    if isinstance(reach, Staging):
        return reach
    provider, storage_class = reach
    composed = [_namespace(cache, cluster, provider)]
    if _staged(cache, cluster, observed):
        composed.append(_claim(cache, cluster, provider, storage_class, staged=True))
        detail = f"{cache.source.repo} is staged"
        return Staging(
            cluster.name, Phase.READY, Reason.STAGED, detail, tuple(composed),
            released=(Step.SECRET, Step.HYDRATE),
        )  # fmt: skip
    if not _ready_or_kept(observed, cluster, Step.NAMESPACE, Step.CLAIM):
        detail = f"creating namespace {cache.namespace}"
        return Staging(
            cluster.name, Phase.PENDING, Reason.CREATING_STORAGE, detail, tuple(composed)
        )
    storage = [
        (
            f"PVC {claim_name(cache.name)} ({storage_class})",
            _claim(cache, cluster, provider, storage_class),
        )
    ]
    if cache.source.auth_secret:
        storage.append(
            (
                f"Secret {secret_name(cache.name)} (from {cache.source.auth_secret})",
                _secret(cache, cluster, provider, cache.source.auth_secret),
            )
        )
    composed.extend(item for _, item in storage)
    waiting = [
        _waiting_for(what, observed.get(item.key))
        for what, item in storage
        if not observed.get(item.key, Observed()).ready
    ]
    if waiting and key(cluster.name, Step.HYDRATE) not in observed:
        detail = "creating " + ", ".join(waiting)
        return Staging(
            cluster.name, Phase.PENDING, Reason.CREATING_STORAGE, detail, tuple(composed)
        )
    composed.append(_job(cache, cluster, provider))
    job = observed.get(key(cluster.name, Step.HYDRATE))
    if job is not None and job.applies not in ("", job_name(cache)):
        job = None  # an earlier source's Job: this source's is not even created yet
    return _hydration(cache, cluster, job, composed)


def summary(stagings: Iterable[Staging]) -> str:
    """Return ``status.summary.ready``: ``"<ready>/<matched>"``."""
    phases = [s.phase for s in stagings]
    return f"{phases.count(Phase.READY)}/{len(phases)}"


def _reach(cluster: CacheCluster) -> Staging | tuple[ProviderConfig, str]:
    """Return how to reach the cluster's storage, or the staging of one the cache can't."""
    if cluster.source in NO_RWX_CLOUDS:
        detail = (
            f"{cluster.source} clusters have no ReadWriteMany storage usable by GPU nodes; "
            "narrow the clusterSelector to leave this cluster out"
        )
        return Staging(cluster.name, Phase.FAILED, Reason.NO_RWX_STORAGE, detail)
    if cluster.source == "Existing" and not cluster.storage_class:
        detail = (
            "the cluster names no RWX StorageClass; "
            "set spec.cluster.existing.cache.storageClassName on its InferenceCluster"
        )
        return Staging(cluster.name, Phase.FAILED, Reason.NO_RWX_STORAGE, detail)
    if not cluster.provider_config:
        detail = "waiting for the cluster to publish its provider config"
        return Staging(cluster.name, Phase.PENDING, Reason.CLUSTER_PENDING, detail)
    if not cluster.storage_class:
        detail = "waiting for the cluster to publish its RWX StorageClass"
        return Staging(cluster.name, Phase.PENDING, Reason.STORAGE_PENDING, detail)
    return ProviderConfig(cluster.provider_config), cluster.storage_class


def _staged(cache: Cache, cluster: CacheCluster, observed: Mapping[str, Observed]) -> bool:
    """Tell whether the cluster's PVC holds the cache's source: its Object says so, or the
    Job that stages this source (not an earlier one) has just completed."""
    digest = cache.source.digest()
    claim = observed.get(key(cluster.name, Step.CLAIM))
    if claim is not None and claim.staged == digest:
        return True
    job = observed.get(key(cluster.name, Step.HYDRATE))
    return job is not None and job.ready and job.applies in ("", job_name(cache))


def _ready_or_kept(
    observed: Mapping[str, Observed], cluster: CacheCluster, needed: Step, step: Step
) -> bool:
    """Tell whether ``step`` may be composed: what it needs is ready, or it already exists."""
    return observed.get(key(cluster.name, needed), Observed()).ready or (
        key(cluster.name, step) in observed
    )


def _waiting_for(what: str, seen: Observed | None) -> str:
    return f"{what}: {seen.message}" if seen is not None and seen.message else what


def _hydration(
    cache: Cache, cluster: CacheCluster, job: Observed | None, composed: list[Composed]
) -> Staging:
    name = job_name(cache)
    if job is not None and job.ready:
        detail = f"{cache.source.repo} is staged"
        return Staging(cluster.name, Phase.READY, Reason.STAGED, detail, tuple(composed))
    if job is not None and job.failed:
        why = f": {job.message}" if job.message else ""
        detail = f"Job {cache.namespace}/{name} failed{why}; delete the Job to retry"
        return Staging(cluster.name, Phase.FAILED, Reason.HYDRATION_FAILED, detail, tuple(composed))
    detail = f"downloading {cache.source.repo} (Job {cache.namespace}/{name})"
    return Staging(cluster.name, Phase.HYDRATING, Reason.HYDRATING, detail, tuple(composed))


def _labels(cache: Cache) -> dict[str, str]:
    return {names.LABEL_MANAGED_BY: names.MANAGED_BY, LABEL_CACHE: names.fit(cache.name)}


def _composed(
    cache: Cache,
    cluster: CacheCluster,
    provider: ProviderConfig,
    step: Step,
    manifest: Mapping[str, Any],
    *,
    annotations: Mapping[str, str] | None = None,
    **options: Any,
) -> Composed:
    name = object_name(cache, cluster.name, step)
    resource = wrap(name, cache.namespace, provider, manifest, **options)
    resource["metadata"]["labels"] = _labels(cache)
    if annotations:
        resource["metadata"]["annotations"] = dict(annotations)
    return Composed(key(cluster.name, step), resource)


def _namespace(cache: Cache, cluster: CacheCluster, provider: ProviderConfig) -> Composed:
    manifest = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "labels": {names.LABEL_MANAGED_BY: names.MANAGED_BY},
            "name": cache.namespace,
        },
    }
    return _composed(cache, cluster, provider, Step.NAMESPACE, manifest, keep=True)


def _claim(
    cache: Cache,
    cluster: CacheCluster,
    provider: ProviderConfig,
    storage: str,
    *,
    staged: bool = False,
) -> Composed:
    manifest = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "labels": _labels(cache),
            "name": claim_name(cache.name),
            "namespace": cache.namespace,
        },
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "resources": {"requests": {"storage": f"{cache.source.size_gib}Gi"}},
            "storageClassName": storage,
        },
    }
    annotations = {STAGED_ANNOTATION: cache.source.digest()} if staged else None
    return _composed(cache, cluster, provider, Step.CLAIM, manifest, annotations=annotations)


def _secret(cache: Cache, cluster: CacheCluster, provider: ProviderConfig, source: str) -> Composed:
    manifest = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "labels": _labels(cache),
            "name": secret_name(cache.name),
            "namespace": cache.namespace,
        },
        "type": "Opaque",
    }
    reference = {
        "patchesFrom": {
            "apiVersion": "v1",
            "fieldPath": _data_path(cache.source.auth_key),
            "kind": "Secret",
            "name": source,
            "namespace": cache.namespace,
        },
        "toFieldPath": _data_path(TOKEN_KEY),
    }
    return _composed(cache, cluster, provider, Step.SECRET, manifest, references=[reference])


def _data_path(secret_key: str) -> str:
    """Return the field path of a Secret's ``data`` key (bracketed when it has dots)."""
    return f"data[{secret_key}]" if "." in secret_key else f"data.{secret_key}"


def _job(cache: Cache, cluster: CacheCluster, provider: ProviderConfig) -> Composed:
    source = cache.source
    env: list[dict[str, Any]] = [
        {"name": "MODELPLANE_REPO", "value": source.repo},
        {"name": "MODELPLANE_SOURCE_DIGEST", "value": source.digest()},
        {"name": "MODELPLANE_HF_HUB", "value": HF_HUB},
    ]
    if source.revision:
        env.append({"name": "MODELPLANE_REVISION", "value": source.revision})
    if source.auth_secret:
        ref = {"key": TOKEN_KEY, "name": secret_name(cache.name)}
        env.append({"name": TOKEN_KEY, "valueFrom": {"secretKeyRef": ref}})
    container = {
        "command": ["sh", "-c", HYDRATE_SCRIPT],
        "env": env,
        "image": HYDRATE_IMAGE,
        "name": "hydrate",
        "volumeMounts": [{"mountPath": MOUNT_PATH, "name": "models"}],
    }
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"labels": _labels(cache), "name": job_name(cache), "namespace": cache.namespace},
        "spec": {
            "backoffLimit": BACKOFF_LIMIT,
            "template": {
                "metadata": {"labels": _labels(cache)},
                "spec": {
                    "containers": [container],
                    "restartPolicy": "Never",
                    "volumes": [
                        {"name": "models",
                         "persistentVolumeClaim": {"claimName": claim_name(cache.name)}},
                    ],
                },
            },
        },
    }  # fmt: skip
    return _composed(cache, cluster, provider, Step.HYDRATE, manifest, ready_when=job_query())
