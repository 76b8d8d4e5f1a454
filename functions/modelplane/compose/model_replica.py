"""ModelReplica: one serving instance, composed onto its workload cluster.

The steps: read the replica; require its InferenceCluster (for the provider config
that reaches the cluster, and its gateway) and its ModelCache, if it has one; wait
while the cluster or its provider config is missing, composing again, unchanged,
whatever already runs (never nothing: Crossplane would delete it); plan the
workload (see ``modelplane.domain.workload``); compose every Object; and judge from the
Objects' conditions whether the replica is applied (``ModelAccepted``) and serves
(``ModelReady``). The replica is Ready only when it serves and its route is accepted.

While it does not serve because kube-scheduler cannot place an engine pod (observed
through :mod:`modelplane.compose.replica_pods`), ``ModelReady`` is False with reason
``Unschedulable`` and the scheduler's own message; its deployment moves it once that has
held for the deployment's grace (:mod:`modelplane.domain.scheduling.stuck`). A cache
not Ready yet takes precedence: its pods wait for the weights (an unbound claim is
unschedulable too), not for room.

The ModelCache's PVC on the cluster is named by ``workload.cache_claim(<cache>)``, in
the namespace named like the cache's, so the replica composes its engines without
waiting for the cache: Kubernetes holds the pods until the PVC exists. While the cache
is missing or not Ready on the cluster, ``ModelReady`` says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.compose import replica_pods
from modelplane.domain import api, objects, workload
from modelplane.domain.scheduling import stuck
from modelplane.models.modelreplica import Member as MemberModel
from modelplane.models.modelreplica import ModelReplica
from modelplane.models.modelreplica import Spec as ReplicaSpec

CLUSTER = "cluster"
CACHE = "model-cache"
ACCEPTED = "ModelAccepted"
READY = "ModelReady"


@dataclass(frozen=True)
class Notice:
    """A condition's reason and message: why the replica waits, or what holds it back."""

    reason: str
    message: str


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    """Compose the replica's workload on its cluster and report how far along it is."""
    xr = kit.composite(req)
    identity = kit.meta(xr)
    try:
        replica = ModelReplica.model_validate(xr).spec
    except pydantic.ValidationError as err:
        _hold(
            req,
            rsp,
            Notice("InvalidSpec", f"the ModelReplica is invalid: {kit.summarize(err)}"),
            warn=True,
        )
        return kit.Released.NOTHING
    if replica is None:
        _hold(req, rsp, Notice("InvalidSpec", "the ModelReplica has no spec"), warn=True)
        return kit.Released.NOTHING
    namespace = identity.namespace
    _require(rsp, replica, namespace)
    replica_pods.require(rsp, identity.name, namespace)
    cluster = _cluster(req, replica)
    if isinstance(cluster, Notice):
        _hold(req, rsp, cluster, warn=bool(req.observed.resources))
        return kit.Released.NOTHING
    claim, cache_note = _cache(req, replica, cluster.name)
    try:
        composed = workload.plan(_replica(identity, replica, claim), cluster)
    except workload.SpecError as err:
        _hold(req, rsp, Notice("InvalidSpec", str(err)), warn=True)
        return kit.Released.NOTHING
    for item in composed:
        kit.compose(rsp, item.key, item.resource)
    replica_pods.compose_collection(rsp, identity.name, namespace, cluster)
    verdict = workload.judge(composed, _observed(req, composed))
    _report(rsp, verdict, cluster.name, cache_note, replica_pods.unschedulable(req))
    _publish_ready_template(rsp, identity, verdict)
    return kit.left_out(req, rsp, "what the workload plan no longer has")


def _require(rsp: fnv1.RunFunctionResponse, replica: ReplicaSpec, namespace: str) -> None:
    kit.require(
        rsp, CLUSTER, api.MODELPLANE, "InferenceCluster",
        match_name=replica.cluster_name,
    )  # fmt: skip
    if replica.model_cache_ref:
        kit.require(
            rsp, CACHE, api.MODELPLANE, "ModelCache",
            match_name=replica.model_cache_ref.name, namespace=namespace,
        )  # fmt: skip


def _cluster(
    req: fnv1.RunFunctionRequest, replica: ReplicaSpec
) -> workload.WorkloadCluster | Notice:
    name = replica.cluster_name
    found = kit.required(req, CLUSTER)
    if not found:
        return Notice("ClusterNotFound", f"waiting for InferenceCluster {name}")
    ref = kit.mapping(found[0], "status", "providerConfigRef")
    kinds = {k.value for k in workload.ProviderConfigKind}
    kind = kit.text(ref, "kind") or workload.ProviderConfigKind.CLUSTER.value
    if not kit.text(ref, "name") or kind not in kinds:
        message = (
            f"waiting for InferenceCluster {name} to publish the provider config that "
            "reaches it (status.providerConfigRef.name)"
        )
        return Notice("ProviderConfigPending", message)
    gateway = kit.mapping(found[0], "status", "gateway")
    return workload.WorkloadCluster(
        name=name,
        provider_config=kit.text(ref, "name"),
        provider_config_kind=workload.ProviderConfigKind(kind),
        gateway_name=kit.text(gateway, "name") or workload.GATEWAY_NAME,
        gateway_namespace=kit.text(gateway, "namespace") or workload.GATEWAY_NAMESPACE,
    )


def _cache(
    req: fnv1.RunFunctionRequest, replica: ReplicaSpec, cluster: str
) -> tuple[str | None, Notice | None]:
    """Return the cache's PVC name, and why the cache is not ready on ``cluster`` yet."""
    ref = replica.model_cache_ref
    if ref is None:
        return None, None
    claim = workload.cache_claim(ref.name)
    found = kit.required(req, CACHE)
    if not found:
        return claim, Notice("ModelCacheNotFound", f"ModelCache {ref.name} does not exist")
    clusters = kit.maps(found[0], "status", "clusters")
    phase = (
        next((kit.text(c, "phase") for c in clusters if c.get("name") == cluster), "") or "Pending"
    )
    if phase != "Ready":
        message = f"ModelCache {ref.name} is {phase} on {cluster}"
        return claim, Notice("ModelCacheNotReady", message)
    return claim, None


def _replica(identity: kit.Meta, replica: ReplicaSpec, claim: str | None) -> workload.Replica:
    serving = replica.serving
    return workload.Replica(
        name=identity.name,
        namespace=identity.namespace,
        engines=tuple(
            workload.Engine(
                name=engine.name,
                members=tuple(_member(m) for m in engine.members),
                copies=engine.copies or 1,
                phase=workload.Phase(engine.phase) if engine.phase else None,
            )
            for engine in replica.engines
        ),
        serving_mode=workload.ServingMode(serving.mode if serving and serving.mode else "Unified"),
        deployment=identity.labels.get(api.DEPLOYMENT_LABEL),
        cache_claim=claim,
    )


def _member(member: MemberModel) -> workload.Member:
    return workload.Member(
        role=workload.Role(member.role),
        template=member.template.model_dump(by_alias=True, exclude_none=True, mode="json"),
        node_pool=member.node_pool_name,
        device_requests=tuple(
            workload.DeviceRequest(
                name=r.name,
                device_class_name=r.device_class_name,
                count=r.count,
                selectors=tuple(s.cel for s in r.selectors or ()),
            )
            for r in member.device_requests or ()
        ),
        worker_nodes=member.worker.nodes if member.worker else 0,
    )


def _observed(
    req: fnv1.RunFunctionRequest, composed: Sequence[workload.Composed]
) -> dict[str, workload.Observed]:
    seen = {}
    for item in composed:
        found = kit.observed(req, item.key)
        if found is None:
            continue
        conditions = {c.get("type"): c for c in kit.maps(found, "status", "conditions")}
        synced = conditions.get("Synced") or {}
        ready = conditions.get("Ready") or {}
        is_ready = _truth(ready.get("status"))
        if is_ready and item.workload and not _judged_current(found, item.resource, ready):
            is_ready = False
        seen[item.key] = workload.Observed(
            synced=_truth(synced.get("status")),
            ready=is_ready,
            message=str(synced.get("message") or ""),
        )
    return seen


def _judged_current(
    found: Mapping[str, Any], desired: Mapping[str, Any], ready: Mapping[str, Any]
) -> bool:
    """Tell whether an engine workload's Ready speaks of the pod template composed now.

    Its Ready is the provider's verdict on what it last applied: in the reconcile that
    changes the template (a rollout's update) it still speaks of the old pods, and until
    the provider observes the change it stays stamped with the Object's old generation.
    Counted then, a replica on a new template reads Ready before its pods restart, and a
    rollout moves on while they do (fewer Ready than maxUnavailable allows). An Object
    observed without its manifest (none does on a real cluster) is judged by Ready alone.
    """
    path = ("spec", "forProvider", "manifest", "spec", "template")
    applied = kit.field(found, *path)
    if applied is not None and applied != kit.field(desired, *path):
        return False
    if not _observed_runs(found, desired):
        return False
    seen, generation = ready.get("observedGeneration"), kit.field(found, "metadata", "generation")
    return (
        not isinstance(seen, (int, float))
        or not isinstance(generation, (int, float))
        or (seen >= generation)
    )


def _observed_runs(found: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Tell whether the workload the provider last observed runs the desired containers.

    provider-kubernetes' Ready carries no ``observedGeneration``, and in the reconcile that
    applies a new template it is judged on the workload observed *before* the apply: on
    the fleet a replica given a new image read Ready for a moment, long enough for its
    ModelDeployment to count it. The object the provider observed
    (``status.atProvider.manifest``) tells: its controller must have seen its current
    generation (where its status says), and its containers must be the desired ones (name, image, command, args,
    env: written verbatim, so compared as written; the API server only adds defaults).
    Without an observed object (none recorded yet) this says nothing.
    """
    seen = kit.field(found, "status", "atProvider", "manifest")
    if not isinstance(seen, Mapping):
        return True
    generation = kit.field(seen, "metadata", "generation")
    observed_generation = kit.field(seen, "status", "observedGeneration")
    numbers = (int, float)
    if (  # a kind whose status has no observedGeneration (LeaderWorkerSet) is not judged by it
        isinstance(generation, numbers)
        and isinstance(observed_generation, numbers)
        and observed_generation < generation
    ):
        return False
    want = _containers(kit.field(desired, "spec", "forProvider", "manifest", "spec"))
    have = _containers(seen.get("spec"))
    return all(name in have and objects.covers(have[name], c) for name, c in want.items())


_CONTAINER_FIELDS = ("image", "command", "args", "env")


def _containers(spec: Any, path: str = "") -> dict[str, dict[str, Any]]:
    """Every container under a workload's spec, by its path and name: the fields compared."""
    found: dict[str, dict[str, Any]] = {}
    if isinstance(spec, Mapping):
        for key, value in spec.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                for c in value:
                    if isinstance(c, Mapping):
                        kept = {f: c[f] for f in _CONTAINER_FIELDS if f in c}
                        found[f"{path}/{key}/{c.get('name')}"] = kept
            else:
                found.update(_containers(value, f"{path}/{key}"))
    return found


def _publish_ready_template(
    rsp: fnv1.RunFunctionResponse, identity: kit.Meta, verdict: workload.Verdict
) -> None:
    """Say which template this verdict of Ready was judged on: ``status.readyTemplateHash``.

    Crossplane stamps the Ready condition with the ``metadata.generation`` of the replica
    as its status write returns it, not as the function read it: when the deployment
    gives the replica a new template while a reconcile of the old one is under way, the
    old template's Ready is stamped with the new generation and reads as current. This
    field is written in the same status write as what the function judged, from the
    same copy of the replica (its template-hash label), and left out while the replica
    is not Ready, so a rolling update counts a replica on a template only once a
    reconcile of that template found its workload running and available.
    """
    template = identity.labels.get(api.TEMPLATE_HASH_LABEL)
    if verdict.ready and template:
        kit.set_status(rsp, {api.READY_TEMPLATE_FIELD: template})


def _truth(status: object) -> bool | None:
    return {"True": True, "False": False}.get(str(status))


def _report(
    rsp: fnv1.RunFunctionResponse,
    verdict: workload.Verdict,
    cluster: str,
    cache: Notice | None,
    unschedulable: str = "",
) -> None:
    if verdict.accepted:
        kit.set_condition(rsp, ACCEPTED, True, "Applied", f"every object is applied on {cluster}")
    elif all(why == workload.NOT_CREATED for _, why in verdict.unapplied):
        message = f"creating {len(verdict.unapplied)} objects on {cluster}"
        kit.set_condition(rsp, ACCEPTED, False, "Applying", message)
    else:
        unapplied = [f"{what} ({why})" for what, why in verdict.unapplied]
        message = f"applying on {cluster}: {kit.listed(unapplied, sep=', ')}"
        kit.set_condition(rsp, ACCEPTED, False, "Applying", message)
    if verdict.unreachable:
        message = (
            f"no Object on {cluster} syncs, so whether it serves is unknown: {verdict.unreachable}"
        )
        kit.set_condition(rsp, READY, False, workload.UNREACHABLE, message)
    elif verdict.serving:
        kit.set_condition(rsp, READY, True, "Available", "every engine workload is available")
    else:
        message = f"waiting for {kit.listed(list(verdict.starting), sep=', ')} to become available"
        if cache is None and unschedulable:  # kube-scheduler's word, as it gives it
            message = f"an engine pod cannot be scheduled on {cluster}: {unschedulable}"
            kit.set_condition(rsp, READY, False, stuck.REASON, message)
        elif cache is None:
            kit.set_condition(rsp, READY, False, "ModelStarting", message)
        else:  # the engines can't load weights that aren't there yet
            kit.set_condition(rsp, READY, False, cache.reason, f"{cache.message}; {message}")
    kit.set_ready(rsp, verdict.ready)


def _hold(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, hold: Notice, *, warn: bool = False
) -> None:
    """Compose again what already runs, unchanged, and say why nothing is composed anew."""
    running = kit.hold_and_wait(req, rsp, ACCEPTED, hold.reason, hold.message, event=warn)
    if running:
        message = f"{len(running)} objects kept as they are until the replica is accepted"
        kit.set_condition(rsp, READY, False, hold.reason, message)
    else:
        kit.set_condition(
            rsp, READY, False, hold.reason, "nothing runs until the replica is accepted"
        )
