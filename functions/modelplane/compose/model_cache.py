"""ModelCache: stage a model's weights once on every cluster the cache matches.

The steps: read the cache; require the InferenceClusters its ``clusterSelector`` matches
(every cluster when it has none); for each, in name order, stage the cache there (see
``modelplane.domain.cache``) and compose its Objects; then publish ``status.clusters``
(each cluster's phase), ``status.summary.ready`` and the conditions ``ClustersMatched``
and ``ArtifactReady``. A cluster that leaves the selector (or is deleted) is no longer
staged to: its Objects are not composed, so Crossplane deletes its PVC and Job (not its
namespace). A cluster still matched keeps what is staged on it while it waits. Once a
cluster's copy is staged, its download Job and copied token Secret are released: no
longer composed (nor held), so Crossplane removes them there; ``status.clusters`` keeps
the cluster Ready, as its PVC's Object remembers what it holds.

A cluster that lost its provider config for a moment keeps what it has: the provider
config its Objects already name is used until the cluster publishes one again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pydantic
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.domain import api
from modelplane.domain import cache as domain
from modelplane.models.modelcache import ModelCache

CLUSTERS = "clusters"
MATCHED = "ClustersMatched"
ARTIFACT = "ArtifactReady"


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    """Stage the cache on every matched cluster and report where it is Ready."""
    xr = kit.composite(req)
    cache = _cache(xr)
    if isinstance(cache, str):
        # Stage nothing new; what is staged stays, as it is, until the spec is fixed.
        kit.set_condition(rsp, MATCHED, False, "InvalidSpec", cache)
        kit.hold_and_wait(req, rsp, ARTIFACT, "InvalidSpec", cache, keep=("clusters", "summary"))
        return kit.Released.NOTHING
    selector = _selector(xr)
    kit.require(rsp, CLUSTERS, api.MODELPLANE, "InferenceCluster", match_labels=selector)
    if not kit.was_required(req, CLUSTERS):
        kit.asking(req, rsp)  # Crossplane calls again with the clusters
        return kit.Released.NOTHING
    clusters = sorted(
        (_cluster(req, found) for found in kit.required(req, CLUSTERS)),
        key=lambda c: c.name,
    )
    if any(not c.name for c in clusters):
        # Which cluster it is can't be told: stage on the others, and keep everything.
        kit.warn(rsp, "skipped an InferenceCluster with no metadata.name; kept what is staged")
        kit.hold(req, rsp)
        clusters = [c for c in clusters if c.name]
    observed = _observed(req)
    stagings = [domain.stage(cache, cluster, observed) for cluster in clusters]
    for staging in stagings:
        for item in staging.composed:
            kit.compose(rsp, item.key, item.resource)
        # A cluster still matched keeps what is staged there while it waits (its provider
        # config or storage class flaps); only a cluster that leaves the selector loses it,
        # and a staged cluster its download Job and token Secret.
        released = {domain.key(staging.cluster, step) for step in staging.released}
        kit.hold(req, rsp, [k for k in _keys_on(staging.cluster) if k not in released])
    kit.set_status(
        rsp,
        {
            "clusters": [{"name": s.cluster, "phase": s.phase.value} for s in stagings],
            "summary": {"ready": domain.summary(stagings)},
        },
    )
    _report(rsp, cache, selector, stagings)
    return kit.left_out(req, rsp, "clusters that left the selector; staging steps done")


def _cache(xr: Mapping[str, Any]) -> domain.Cache | str:
    """Return the cache, or what is wrong with it."""
    try:
        spec = ModelCache.model_validate(xr).spec
    except pydantic.ValidationError as err:
        return f"the ModelCache is invalid: {kit.summarize(err)}"
    if spec is None or spec.hugging_face is None:
        return "the ModelCache has no spec.huggingFace, the only source there is"
    hf = spec.hugging_face
    auth = hf.auth_secret
    meta = xr.get("metadata") or {}
    return domain.Cache(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace") or "default"),
        source=domain.Source(
            repo=hf.repo,
            size_gib=hf.size_gi_b,
            revision=hf.revision,
            auth_secret=auth.name if auth else None,
            auth_key=(auth.key if auth and auth.key else domain.TOKEN_KEY),
        ),
    )


def _keys_on(cluster: str) -> list[str]:
    """Return the keys of everything the cache may compose on ``cluster``."""
    return [domain.key(cluster, step) for step in domain.Step]


def _selector(xr: Mapping[str, Any]) -> dict[str, str]:
    selector = ((xr.get("spec") or {}).get("clusterSelector") or {}).get("matchLabels") or {}
    return {str(k): str(v) for k, v in sorted(selector.items())}


def _cluster(req: fnv1.RunFunctionRequest, found: Mapping[str, Any]) -> domain.CacheCluster:
    name = kit.text(found, "metadata", "name")
    spec = kit.mapping(found, "spec", "cluster")
    provider = kit.text(found, "status", "providerConfigRef", "name")
    storage = kit.text(found, "status", "cache", "storageClassName")
    if not storage and spec.get("source") == "Existing":
        storage = kit.text(spec, "existing", "cache", "storageClassName")
    return domain.CacheCluster(
        name=name,
        source=kit.text(spec, "source"),
        provider_config=provider or _provider_in_use(req, name) or None,
        storage_class=storage or None,
    )


def _provider_in_use(req: fnv1.RunFunctionRequest, cluster: str) -> str:
    """Return the provider config the cluster's namespace Object already names ("" if none)."""
    found = kit.observed(req, domain.key(cluster, domain.Step.NAMESPACE))
    return kit.text(found, "spec", "providerConfigRef", "name")


def _observed(req: fnv1.RunFunctionRequest) -> dict[str, domain.Observed]:
    seen: dict[str, domain.Observed] = {}
    for key in req.observed.resources:
        found = kit.observed(req, key)
        conditions = _conditions(kit.field(found, "status", "conditions"))
        applied = kit.mapping(found, "status", "atProvider", "manifest", "status")
        job = _conditions(applied.get("conditions"))
        failed = job.get("Failed", {}).get("status") == "True"
        synced = conditions.get("Synced", {})
        message = job["Failed"].get("message", "") if failed else ""
        if not message and synced.get("status") == "False":
            message = synced.get("message", "")
        seen[key] = domain.Observed(
            ready=conditions.get("Ready", {}).get("status") == "True",
            failed=failed,
            message=str(message),
            applies=kit.text(found, "spec", "forProvider", "manifest", "metadata", "name"),
            staged=kit.text(found, "metadata", "annotations", domain.STAGED_ANNOTATION),
        )
    return seen


def _conditions(raw: object) -> dict[str, dict[str, Any]]:
    items = raw if isinstance(raw, list) else []
    return {str(c.get("type")): c for c in items if isinstance(c, dict)}


def _report(
    rsp: fnv1.RunFunctionResponse,
    cache: domain.Cache,
    selector: Mapping[str, str],
    stagings: Sequence[domain.Staging],
) -> None:
    if not stagings:
        wanted = ", ".join(f"{k}={v}" for k, v in selector.items()) or "any labels"
        message = f"no InferenceCluster matches the clusterSelector ({wanted})"
        kit.set_condition(rsp, MATCHED, False, "NoClustersMatched", message)
        kit.set_condition(rsp, ARTIFACT, False, "NoClustersMatched", "nothing to stage to")
        kit.warn(rsp, f"ModelCache {cache.namespace}/{cache.name}: {message}")
        kit.set_ready(rsp, False)
        return
    matched = [s.cluster for s in stagings]
    kit.set_condition(rsp, MATCHED, True, "ClustersMatched", f"stages to {kit.listed(matched)}")
    failed = [s for s in stagings if s.phase is domain.Phase.FAILED]
    waiting = [s for s in stagings if s.phase in (domain.Phase.PENDING, domain.Phase.HYDRATING)]
    if failed:
        message = f"failed on {kit.listed([str(s) for s in failed])}"
        kit.set_condition(rsp, ARTIFACT, False, failed[0].reason.value, message)
    elif waiting:
        hydrating = any(s.phase is domain.Phase.HYDRATING for s in waiting)
        reason = "Hydrating" if hydrating else "Pending"
        message = f"not Ready on {kit.listed([str(s) for s in waiting])}"
        kit.set_condition(rsp, ARTIFACT, False, reason, message)
    else:
        message = f"{cache.source.repo} is staged on {kit.listed(matched)}"
        kit.set_condition(rsp, ARTIFACT, True, "Staged", message)
    kit.set_ready(rsp, not failed and not waiting)
