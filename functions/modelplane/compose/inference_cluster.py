"""InferenceCluster: a GPU cluster of the fleet.

Steps, each waiting for what it needs:

1. Publish ``status.gpuPools`` from the pools' InferenceClasses, for the scheduler, and
   ``status.ledger``: what the ModelReplicas on it charge, which a deployment that must
   place reads instead of every replica of the fleet (none where a pool's pods share
   nodes: :mod:`modelplane.planning.tally`).
2. Provisioned sources: compose the ``<Cloud>Cluster`` (in ``modelplane-system``) that
   creates the cluster, its GPU pools and a system pool; it reports the kubeconfig
   Secret once the cluster exists. Existing: the kubeconfig Secret is the user's.
3. Once the kubeconfig Secret is known: a provider-kubernetes and a provider-helm
   ClusterProviderConfig named after the cluster, which every workload-cluster object
   (ModelReplica, ModelCache, ServingStack) names. Where the kubeconfig holds no
   credentials (GKE, Nebius, or an Existing cluster with an identity Secret), they pair
   it with the identity the cloud cluster publishes (``status.identitySecretRef``).
4. A ServingStack on the cluster, which reports the cluster gateway's address.
5. A pool removed, renamed or replaced (a class change that would replace its nodes)
   while ModelReplicas pin it is kept, its node group as observed, and published with
   ``draining: true`` so the replicas move off it first (:mod:`.pool_draining`);
   condition ``PoolsDraining`` names them.
6. While ModelReplicas (labelled ``modelplane.ai/cluster=<name>``) or ModelCaches (whose
   ``status.clusters`` lists it) use the cluster: a ClusterUsage of the cluster itself, so
   the API server refuses to delete it (:mod:`modelplane.domain.usage`); condition
   ``InUse`` names them. Once none does, the ClusterUsage goes and a deletion refused
   meanwhile is replayed.
6. Teardown in order: Usages that keep the cloud cluster until the provider configs and
   the serving stack that reach it are gone (:mod:`modelplane.domain.teardown`).

A pool whose class is missing is not published; a provisioned cluster whose classes
can't provision it keeps whatever cloud cluster it already has and composes no new one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.compose import cluster_capacity, pool_draining
from modelplane.domain import api, draining, naming, teardown, usage
from modelplane.domain import cluster as domain
from modelplane.domain.draining import Drain
from modelplane.models.inferenceclass import InferenceClass
from modelplane.models.inferencecluster import InferenceCluster
from modelplane.planning import published_ledger

GROUP = api.MODELPLANE
INFRA = api.INFRASTRUCTURE
SYSTEM_NAMESPACE = "modelplane-system"
# The namespace an Existing cluster's kubeconfig (and identity) Secret lives in.
SECRETS_NAMESPACE = "modelplane-system"
CLOUD_KEY = "cluster"
STACK_KEY = "serving-stack"
USAGE_KEY = "cluster-usage"
IDENTITY_FIELDS = ("name", "namespace", "key")
PROVIDER_CONFIGS = {
    "provider-config-kubernetes": api.KUBERNETES_OBJECT,
    "provider-config-helm": api.HELM,
}


@kit.composer
def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    """Publish the pools, provision or adopt the cluster, and install the serving stack."""
    xr = kit.composite(req)
    name = kit.meta(xr).name
    kit.require(rsp, "classes", GROUP, "InferenceClass", match_labels={})  # every class
    # What runs on the cluster, in every namespace: it holds the cluster. The label holds
    # the name as a label value (a name over 63 characters is shortened, as replicas are).
    on_it = {api.CLUSTER_LABEL: naming.label_value(name)}
    kit.require(rsp, "replicas", GROUP, "ModelReplica", match_labels=on_it)
    kit.require(rsp, "caches", GROUP, "ModelCache", match_labels={})
    observing = cluster_capacity.require(rsp, name)  # what the workload cluster shows
    if not all(kit.was_required(req, r) for r in ("classes", "replicas", "caches", *observing)):
        kit.asking(req, rsp)  # Crossplane calls again with the classes and the users
        return kit.Released.NOTHING
    InferenceCluster.model_validate(xr)  # a malformed spec stops here, with what is wrong
    spec = xr["spec"]
    pools = [_pool(p) for p in spec["nodePools"]]
    classes = _classes(req, rsp)
    status: dict[str, Any] = {}
    published, problems = domain.gpu_pools(pools, classes)
    source = spec["cluster"]["source"]
    if source in domain.PROVISIONED:
        problems += domain.provisioning_problems(source, pools, classes)
        problems += domain.location_problems(source, spec["cluster"].get(source.lower()))
    drains = pool_draining.plan(req, source, pools, classes, problems)
    shown = (xr.get("status") or {}).get("gpuPools") or []
    status["gpuPools"] = draining.published(
        domain.keep_flapping_pools(pools, published, shown), shown, drains
    )
    # A removed pool still draining is observed too: its nodes still take its replicas.
    watched = [p.name for p in pools] + pool_draining.removed(drains)
    observation = cluster_capacity.autoscaled(cluster_capacity.observe(req, watched), pools)
    status["gpuPools"] = cluster_capacity.publish(status["gpuPools"], observation)
    _publish_ledger(req, rsp, name, status)
    for problem in problems:
        kit.warn(rsp, str(problem))
    kubeconfig = _cloud_cluster(req, rsp, name, spec, pools, classes, problems, drains)
    if kubeconfig is not None:
        _provider_configs(rsp, name, kubeconfig, _identity(req, spec))
        status["providerConfigRef"] = {"name": name}
        _serving_stack(rsp, name, source)
        cluster_capacity.compose_collections(rsp, name)
    else:
        # The kubeconfig is gone for a moment (the cloud cluster flaps): what reaches
        # the cluster stays, and so does what the fleet reads from this cluster.
        kit.hold(req, rsp, [*PROVIDER_CONFIGS, STACK_KEY, *cluster_capacity.KEYS])
    status.update(_observed_status(req, spec))
    kit.set_status(rsp, status)
    kit.keep_status(req, rsp, "providerConfigRef", "gateway", "cache")
    _conditions(req, rsp, source, kubeconfig, problems)
    cluster_capacity.set_condition(rsp, observation)
    pool_draining.report(rsp, drains)
    released = [] if _hold_while_used(req, rsp, name) else [USAGE_KEY]
    if source not in domain.PROVISIONED:
        released.append(CLOUD_KEY)  # the spec adopts a cluster: it provisions none
    released += kit.order_teardown(req, rsp, _teardown_order)
    return kit.Released.of(
        released,
        "the usage once nothing uses the cluster; an adopted cluster's cloud composite; "
        "ordering usages of what is no longer composed",
    )


def _publish_ledger(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, name: str, status: dict[str, Any]
) -> None:
    """Publish ``status.ledger`` from the replicas on the cluster, and name those it cannot
    read: placing deployments read the ledger instead of them."""
    on_it = kit.required_structs(req, "replicas")
    ledger, unreadable = published_ledger(name, status["gpuPools"], on_it)
    if ledger is not None:
        status["ledger"] = ledger
    if unreadable is not None:
        kit.warn(rsp, unreadable)


def _teardown_order(manifests: Mapping[str, Mapping[str, Any]]) -> list[teardown.Edge]:
    """The provider configs and the serving stack go before the cloud cluster: they reach
    it through its kubeconfig (:mod:`modelplane.domain.teardown`)."""
    return teardown.uses([*PROVIDER_CONFIGS, STACK_KEY], CLOUD_KEY, manifests)


def _hold_while_used(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, name: str
) -> bool:
    """Compose the ClusterUsage that blocks deleting the cluster while anything uses it;
    tell whether anything does."""
    users = usage.users(name, kit.required(req, "replicas"), kit.required(req, "caches"))
    if users:
        kit.compose(rsp, USAGE_KEY, usage.cluster_usage(name))
        listed = kit.listed([str(u) for u in users])
        kit.set_condition(rsp, "InUse", True, "InUse", f"deletion is blocked: used by {listed}")
        return True
    kit.set_condition(rsp, "InUse", False, "Unused", "nothing uses the cluster")
    return False


def _classes(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    """Return every readable InferenceClass's spec by name; warn of the unreadable ones.

    A class that can't be read is as good as missing: its pools report ClassNotFound.
    """
    readable: dict[str, Any] = {}
    for found in kit.required(req, "classes"):
        try:
            name = kit.meta(found).name
            InferenceClass.model_validate(found)
        except (kit.InvalidInputError, pydantic.ValidationError) as err:
            what = kit.summarize(err) if isinstance(err, pydantic.ValidationError) else str(err)
            kit.warn(
                rsp,
                f"skipped an unreadable InferenceClass {kit.text(found, 'metadata', 'name')}: {what}",
            )
            continue
        readable[name] = found.get("spec") or {}
    return readable


def _pool(raw: dict[str, Any]) -> domain.Pool:
    return domain.Pool(
        name=raw["name"],
        class_name=raw["className"],
        node_count=raw.get("nodeCount", 1),  # the XRD's default, should a request lack it
        min_node_count=raw.get("minNodeCount"),
        max_node_count=raw.get("maxNodeCount"),
        zones=tuple(raw.get("zones") or ()),
        extra={k: raw[k] for k in ("fabric", "capacityBlock") if k in raw},
        capacity=raw.get("capacity") or "Nodes",  # the XRD's default
    )


def _cloud_cluster(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    name: str,
    spec: dict[str, Any],
    pools: list[domain.Pool],
    classes: dict[str, Any],
    problems: list[domain.Problem],
    drains: list[Drain],
) -> dict[str, Any] | None:
    """Compose the cloud cluster if provisioned; return the kubeconfig Secret ref once known.

    A pool still draining keeps its node group as observed (:mod:`.pool_draining`)."""
    source = spec["cluster"]["source"]
    if source == "Existing":
        ref = spec["cluster"]["existing"]["secretRef"]
        key = ref.get("key") or "kubeconfig"  # the XRD's default
        return {"namespace": SECRETS_NAMESPACE, "name": ref["name"], "key": key}
    observed = kit.observed(req, CLOUD_KEY)
    if problems:
        kit.hold(req, rsp, [CLOUD_KEY])  # never drop a running cluster over a bad edit
    else:
        location = spec["cluster"].get(source.lower(), {})
        manifest = {
            "apiVersion": INFRA,
            "kind": domain.CLUSTER_KINDS[source],
            "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE},
            "spec": pool_draining.hold_node_pools(
                req, domain.cloud_cluster_spec(source, location, pools, classes), drains
            ),
        }
        kit.compose(rsp, CLOUD_KEY, manifest)
    ref = kit.mapping(observed, "status", "kubeconfigSecretRef")
    fields = ("name", "namespace", "key")
    return (
        {f: kit.text(ref, f) for f in fields if kit.text(ref, f)} if kit.text(ref, "name") else None
    )


def _identity(req: fnv1.RunFunctionRequest, spec: dict[str, Any]) -> dict[str, str] | None:
    """Return the cloud identity to pair with the kubeconfig, ``{type, name, namespace, key}``:
    an Existing cluster's ``identitySecretRef``, or what the cloud cluster publishes."""
    existing = kit.mapping(spec, "cluster", "existing", "identitySecretRef")
    if existing:
        return {
            "type": kit.text(existing, "type") or "GoogleApplicationCredentials",
            "name": kit.text(existing, "name"),
            "namespace": SECRETS_NAMESPACE,
            "key": kit.text(existing, "key"),
        }
    published = kit.mapping(kit.observed(req, CLOUD_KEY), "status", "identitySecretRef")
    if not all(kit.text(published, f) for f in (*IDENTITY_FIELDS, "type")):
        return None
    return {f: kit.text(published, f) for f in ("type", *IDENTITY_FIELDS)}


def _provider_configs(
    rsp: fnv1.RunFunctionResponse,
    name: str,
    kubeconfig: dict[str, Any],
    identity: dict[str, str] | None,
) -> None:
    credentials = {
        "source": "Secret",
        "secretRef": {
            "namespace": kubeconfig.get("namespace", SECRETS_NAMESPACE),
            "name": kubeconfig["name"],
            "key": kubeconfig.get("key", "kubeconfig"),
        },
    }
    pc_spec: dict[str, Any] = {"credentials": credentials}
    if identity:
        pc_spec["identity"] = {
            "type": identity["type"],
            "source": "Secret",
            "secretRef": {f: identity[f] for f in IDENTITY_FIELDS},
        }
    for key, api_version in PROVIDER_CONFIGS.items():
        manifest = {
            "apiVersion": api_version,
            "kind": "ClusterProviderConfig",
            "metadata": {"name": name},
            "spec": pc_spec,
        }
        kit.compose(rsp, key, manifest)


def _serving_stack(rsp: fnv1.RunFunctionResponse, name: str, source: str) -> None:
    manifest = {
        "apiVersion": INFRA,
        "kind": "ServingStack",
        "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE},
        "spec": {
            "cloud": source,
            "providerConfigRef": {"kind": "ClusterProviderConfig", "name": name},
        },
    }
    kit.compose(rsp, STACK_KEY, manifest)


def _observed_status(req: fnv1.RunFunctionRequest, spec: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = {}
    address = kit.text(kit.observed(req, STACK_KEY), "status", "gateway", "address")
    if address:
        status["gateway"] = {"address": address}
    existing = spec["cluster"].get("existing") or {}
    storage = (existing.get("cache") or {}).get("storageClassName")
    if storage is None:
        storage = kit.text(kit.observed(req, CLOUD_KEY), "status", "cache", "storageClassName")
    if storage:
        status["cache"] = {"storageClassName": storage}
    return status


def _conditions(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    source: str,
    kubeconfig: dict[str, Any] | None,
    problems: list[domain.Problem],
) -> None:
    blocking = [p for p in problems if source in domain.PROVISIONED or p.reason == "ClassNotFound"]
    if blocking:
        reason = blocking[0].reason
        kit.set_condition(rsp, "ClusterReady", False, reason, "; ".join(map(str, blocking)))
        kit.set_ready(rsp, False)  # its resources may all be ready; its pools are not
    elif source == "Existing":
        kit.set_condition(
            rsp, "ClusterReady", True, "Existing", "reached through its kubeconfig Secret"
        )
    elif kit.is_ready(kit.observed(req, CLOUD_KEY)):
        kit.set_condition(rsp, "ClusterReady", True, "Provisioned", f"{source} cluster is ready")
    else:
        kit.set_condition(
            rsp, "ClusterReady", False, "Provisioning", f"waiting for the {source} cluster"
        )
    stack = kit.observed(req, STACK_KEY)
    address = kit.text(stack, "status", "gateway", "address")
    if kubeconfig is None:
        kit.set_condition(rsp, "BackendReady", False, "WaitingForCluster", "no kubeconfig yet")
    elif kit.is_ready(stack) and address:
        kit.set_condition(rsp, "BackendReady", True, "Installed", f"gateway at {address}")
    else:
        kit.set_condition(rsp, "BackendReady", False, "Installing", "waiting for the serving stack")
