"""ModelReplica: observe its engine pods, to tell when the cluster cannot schedule them.

A Deployment's or LeaderWorkerSet's status counts pods but never says why one is
Pending, and pod names are random, so the replica composes one ObservedObjectCollection
(provider-kubernetes v1.x, ``kubernetes.m.crossplane.io``) in its own namespace,
selecting its engine pods by label (``modelplane.ai/replica`` and
``modelplane.ai/engine``, which only engine pods carry) in its namespace on its cluster.
The provider makes one observe-only Object per pod, labelled
``kubernetes.crossplane.io/owned-by-collection=<collection>``; the function asks
Crossplane for them and reads each pod's ``PodScheduled`` condition
(:func:`modelplane.domain.scheduling.stuck.unschedulable`).

The collection is marked ready whatever it reports: it informs the replica's
``ModelReady`` reason, it never gates the replica.
"""

from __future__ import annotations

from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.compose.cluster_capacity import MEMBERSHIP_LABEL
from modelplane.domain import api, naming, workload
from modelplane.domain.scheduling import stuck
from modelplane.domain.workload import names

KEY = "engine-pods"
"""The composed collection's key, and the requirement of its members."""


def collection_name(replica: str) -> str:
    """Name the collection (a label value: the provider labels its members with it)."""
    return naming.label_value(f"{replica}-pods")


def require(rsp: fnv1.RunFunctionResponse, replica: str, namespace: str) -> None:
    """Ask for the collection's member Objects (one per engine pod)."""
    kit.require(
        rsp,
        KEY,
        api.KUBERNETES_OBJECT,
        "Object",
        match_labels={MEMBERSHIP_LABEL: collection_name(replica)},
        namespace=namespace,
    )


def compose_collection(
    rsp: fnv1.RunFunctionResponse, replica: str, namespace: str, cluster: workload.WorkloadCluster
) -> None:
    """Compose the collection of the replica's engine pods on ``cluster``."""
    selector: dict[str, Any] = {
        "matchLabels": {names.LABEL_REPLICA: names.fit(replica)},
        "matchExpressions": [{"key": names.LABEL_ENGINE, "operator": "Exists"}],
    }
    manifest = {
        "apiVersion": api.KUBERNETES_OBJECT,
        "kind": "ObservedObjectCollection",
        "metadata": {"name": collection_name(replica), "namespace": namespace},
        "spec": {
            "providerConfigRef": {
                "kind": cluster.provider_config_kind.value,
                "name": cluster.provider_config,
            },
            "observeObjects": {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": namespace,
                "selector": selector,
            },
        },
    }
    kit.compose(rsp, KEY, manifest, ready=True)  # informs, never gates: see above


def unschedulable(req: fnv1.RunFunctionRequest) -> str:
    """kube-scheduler's message for an engine pod it cannot place, or "" (none, or unknown)."""
    pods = []
    for member in kit.required(req, KEY):
        pod = kit.mapping(member, "status", "atProvider", "manifest")
        if pod:
            pods.append(pod)
    return stuck.unschedulable(pods)
