"""provider-kubernetes and the workload cluster behind it: how a manifest an Object wraps
shows once applied, and whether the Object is Ready.

``status.atProvider.manifest`` is the manifest with the status its kind has on the
cluster (:func:`workload_status`): a Deployment or LeaderWorkerSet ``Available`` with
every replica ready unless something keeps its pods from running, a Gateway
``Programmed`` with an address once its controller runs, an HTTPRoute accepted by its
parent Gateway, a Namespace ``Active``, a PVC ``Bound``, a Job ``Complete``... ``Ready``
follows ``spec.readiness`` as provider-kubernetes evaluates it (:func:`readiness`:
``SuccessfulCreate``, ``DeriveFromCelQuery`` for the queries our functions write,
``DeriveFromObject``, ``AllTrue``).

What the cluster holds is the caller's: a :class:`Cluster` answers for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from modelplane.dev.fakes import gateway
from modelplane.dev.fakes.base import (
    GATEWAY_GROUP,
    TIME,
    Obj,
    condition,
    condition_is,
    conditions_of,
    group_of,
    labels_match,
    octet,
)
from modelplane.domain import objects

BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "StorageClass",
        "GatewayClass",
        "CustomResourceDefinition",
        "DeviceClass",
        "PriorityClass",
        "PersistentVolume",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "IngressClass",
        "RuntimeClass",
    }
)
CRD_SOURCES: Mapping[str, tuple[str, str]] = {
    # manifest group -> (how its CRDs get installed, by what): a Helm chart, or a Job.
    GATEWAY_GROUP: ("chart", "gateway-crds-helm"),
    "gateway.envoyproxy.io": ("chart", "gateway-helm"),
    "leaderworkerset.x-k8s.io": ("chart", "lws"),
    "monitoring.coreos.com": ("chart", "kube-prometheus-stack"),
    "cert-manager.io": ("chart", "cert-manager"),
    "inference.networking.k8s.io": ("job", "inference-extension-crds"),
    "inference.networking.x-k8s.io": ("job", "inference-extension-crds"),
}
"""Kinds a bare cluster does not serve until something installs their CRDs."""


class Cluster(Protocol):
    """What a workload cluster holds, as far as an applied manifest's status depends on it."""

    @property
    def name(self) -> str:
        """The cluster's identity (addresses derive from it)."""
        ...

    def pods_blocked(self, manifest: Mapping[str, Any]) -> list[str]:
        """Say what keeps the manifest's pods from running (empty: they run)."""
        ...

    def installs(self, how: str, what: str) -> bool:
        """Tell whether a chart (``how="chart"``) or a Job's CRDs are installed."""
        ...

    def lookup(self, kind: str, namespace: str, name: str) -> Obj | None:
        """Return an object as it is on the cluster (None: absent)."""
        ...


def manifest_of(obj: Mapping[str, Any]) -> Obj:
    """The manifest an Object wraps (``spec.forProvider.manifest``)."""
    return dict(((obj.get("spec") or {}).get("forProvider") or {}).get("manifest") or {})


NEVER_READY = "never-ready"
"""An image whose name holds this never turns Ready (a bad image, for rollout tests)."""


def pod_templates(manifest: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = manifest.get("spec") or {}
    kind = manifest.get("kind")
    if kind in ("Deployment", "StatefulSet", "Job", "DaemonSet", "ReplicaSet"):
        return [spec.get("template") or {}]
    if kind == "LeaderWorkerSet":
        lwt = spec.get("leaderWorkerTemplate") or {}
        return [t for t in (lwt.get("leaderTemplate"), lwt.get("workerTemplate")) if t]
    return []


def resource_slices(node: str, by_driver: Mapping[str, list[Obj]]) -> list[Obj]:
    """The ResourceSlices DRA drivers publish on ``node``: one per driver, its devices."""
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{driver.replace('.', '-')}"},
            "spec": {
                "driver": driver,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": devs,
            },
        }
        for driver, devs in sorted(by_driver.items())
    ]


def workload_status(cluster: Cluster, manifest: Mapping[str, Any]) -> Obj | None:
    """Return the status ``manifest`` has on ``cluster`` once applied (None: kinds without one)."""
    kind = str(manifest.get("kind", ""))
    group = group_of(manifest)
    spec = manifest.get("spec") or {}
    meta = manifest.get("metadata") or {}
    if kind == "Namespace":
        return {"phase": "Active"}
    if kind == "PersistentVolumeClaim":
        storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
        return {
            "phase": "Bound",
            "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
            "capacity": {"storage": storage},
        }
    if kind in ("Deployment", "StatefulSet", "LeaderWorkerSet"):
        blocked = cluster.pods_blocked(manifest)
        return replicated_status(kind, int(spec.get("replicas", 1)), blocked, max_unavailable(spec))
    if kind == "Job":
        blocked = cluster.pods_blocked(manifest)
        if blocked:
            return {"active": 1, "ready": 0, "startTime": TIME}
        return {
            "conditions": [
                condition("SuccessCriteriaMet", True, "CompletionsReached"),
                condition("Complete", True, "CompletionsReached"),
            ],
            "succeeded": 1,
            "startTime": TIME,
            "completionTime": TIME,
        }
    if kind == "Service":
        if spec.get("type") == "LoadBalancer":
            address = f"203.0.113.{octet(cluster.name, str(meta.get('name')))}"
            return {"loadBalancer": {"ingress": [{"ip": address}]}}
        return {"loadBalancer": {}}
    if group == GATEWAY_GROUP:
        installed = cluster.installs("chart", gateway.WORKLOAD_GATEWAY_CONTROLLER)
        address = f"203.0.113.{octet(cluster.name, 'gateway')}"
        return gateway.status(
            manifest, installed, gateway.ENVOY_CONTROLLER_NAME, address, cluster.lookup
        )
    if group.startswith("inference.networking") and kind == "InferencePool":
        return {
            "parents": [
                {
                    "parentRef": {"group": GATEWAY_GROUP, "kind": "Gateway", "name": "modelplane"},
                    "conditions": [
                        condition("Accepted", True, "Accepted"),
                        condition("ResolvedRefs", True, "ResolvedRefs"),
                    ],
                }
            ]
        }
    return None


def max_unavailable(spec: Mapping[str, Any]) -> int:
    """A Deployment's ``rollingUpdate.maxUnavailable`` (an integer; the default is 25%)."""
    rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
    value = rolling.get("maxUnavailable", 0)
    return value if isinstance(value, int) else 0


def replicated_status(kind: str, replicas: int, blocked: list[str], max_unavailable: int) -> Obj:
    """What the controllers report: counts of what runs, and conditions as Kubernetes sets them.

    A Deployment is ``Available`` once ``replicas - maxUnavailable`` pods are: with one
    replica and ``maxUnavailable: 1`` that holds while its only pod is Pending, as the
    real deployment controller reports it.
    """
    ready = 0 if blocked else replicas
    minimum = ready >= replicas - max_unavailable if kind == "Deployment" else not blocked
    available = condition(
        "Available",
        minimum,
        "MinimumReplicasAvailable" if minimum else "MinimumReplicasUnavailable",
        "" if not blocked else "pods wait for " + ", ".join(blocked),
    )
    if kind == "LeaderWorkerSet":
        available["reason"] = "AllGroupsReady" if not blocked else "GroupsNotReady"
        return {
            "conditions": [available, condition("Progressing", bool(blocked), "GroupsProgressing")],
            "readyReplicas": ready,
            "replicas": replicas,
            "updatedReplicas": replicas,
        }
    status: Obj = {
        "observedGeneration": 1,
        "replicas": replicas,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "updatedReplicas": replicas,
    }
    if kind == "Deployment":
        status["conditions"] = [
            available,
            condition("Progressing", True, "NewReplicaSetAvailable"),
        ]
    return status


def selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """A label selector's ``matchLabels`` and ``Exists``/``In`` expressions (what we use)."""
    if not labels_match({"metadata": {"labels": labels}}, selector.get("matchLabels") or {}):
        return False
    for expression in selector.get("matchExpressions") or ():
        key, operator = expression.get("key"), expression.get("operator")
        if operator == "Exists" and key not in labels:
            return False
        if operator == "In" and labels.get(key) not in (expression.get("values") or ()):
            return False
    return True


def pod(name: str, namespace: str, labels: Mapping[str, Any], blocked: str) -> Obj:
    if blocked:  # what kube-scheduler writes on a pod it cannot place
        message = blocked.removeprefix("pods wait for a node: ")
        scheduled = condition("PodScheduled", False, "Unschedulable", message)
        phase = "Pending"
    else:
        scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": TIME}
        phase = "Running"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "status": {"phase": phase, "conditions": [scheduled]},
    }


def readiness(obj: Mapping[str, Any], applied: Mapping[str, Any]) -> tuple[bool, str]:
    readiness = (obj.get("spec") or {}).get("readiness") or {}
    policy = readiness.get("policy") or "SuccessfulCreate"
    if policy == "SuccessfulCreate":
        return True, "Available"
    if policy == "DeriveFromObject":
        return condition_is(applied, "Ready"), "Available"
    if policy == "AllTrue":
        conditions = conditions_of(applied)
        return bool(conditions) and all(
            c.get("status") == "True" for c in conditions.values()
        ), "Available"
    if policy == "DeriveFromCelQuery":
        return evaluate_query(str(readiness.get("celQuery", "")), applied), "Available"
    msg = f"the fake provider-kubernetes knows no readiness policy {policy!r}"
    raise ValueError(msg)


_CONDITION_QUERY = re.compile(
    r"^has\(object\.status\) && has\(object\.status\.conditions\) && "
    r'object\.status\.conditions\.exists\(c, c\.type == "(?P<type>\w+)" && c\.status == "True"\)$'
)
_PARENTS_QUERY = re.compile(
    r"^has\(object\.status\) && has\(object\.status\.parents\) && object\.status\.parents"
    r'\.exists\(p, has\(p\.conditions\) && p\.conditions\.exists\(c, c\.type == "(?P<type>\w+)"'
    r' && c\.status == "True"\)\)$'
)


def _number(obj: Mapping[str, Any], *path: str, default: int = 0) -> int:
    for part in path[:-1]:
        obj = obj.get(part) or {}
    value = obj.get(path[-1])
    return default if value is None else int(value)


def _deployment_ready(applied: Mapping[str, Any]) -> bool:
    """As ``kubectl rollout status`` judges a Deployment: current, updated, available."""
    if "status" not in applied:
        return False
    generation = (applied.get("metadata") or {}).get("generation")
    if generation is not None and _number(applied, "status", "observedGeneration") < generation:
        return False
    desired = _number(applied, "spec", "replicas", default=1)
    updated = _number(applied, "status", "updatedReplicas")
    return (
        updated >= desired
        and _number(applied, "status", "availableReplicas") >= desired
        and _number(applied, "status", "replicas") <= updated
    )


def _groups_ready(applied: Mapping[str, Any]) -> bool:
    """A LeaderWorkerSet serves when every desired group is ready and updated."""
    desired = _number(applied, "spec", "replicas", default=1)
    return (
        "status" in applied
        and _number(applied, "status", "readyReplicas") >= desired
        and _number(applied, "status", "updatedReplicas") >= desired
    )


def _job_done(applied: Mapping[str, Any]) -> bool:
    completions = _number(applied, "spec", "completions", default=1)
    return "status" in applied and _number(applied, "status", "succeeded") >= completions


_WORKLOAD_QUERIES: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    " ".join(objects.workload_query(kind).split()): judge
    for kind, judge in (
        ("Deployment", _deployment_ready),
        ("LeaderWorkerSet", _groups_ready),
        ("Job", _job_done),
    )
}
"""The workload queries our functions write (``objects.workload_query``), by what they mean."""


_DAEMONSET_QUERY = re.compile(
    r"^has\(object\.status\) && has\(object\.status\.desiredNumberScheduled\) && "
    r"has\(object\.status\.numberReady\) && "
    r"object\.status\.numberReady == object\.status\.desiredNumberScheduled"
    r"(?P<some> && object\.status\.desiredNumberScheduled > 0)?$"
)


def evaluate_query(query: str, applied: Mapping[str, Any]) -> bool:
    """Evaluate the readiness CEL queries our functions write, as provider-kubernetes would.

    Raises:
        ValueError: a query of another shape (teach the fake about it).
    """
    text = " ".join(query.split())
    judge = _WORKLOAD_QUERIES.get(text)
    if judge is not None:
        return judge(applied)
    found = _CONDITION_QUERY.match(text)
    if found:
        return condition_is(applied, found["type"])
    found = _DAEMONSET_QUERY.match(text)
    if found:
        status = applied.get("status") or {}
        if "desiredNumberScheduled" not in status or "numberReady" not in status:
            return False
        desired = int(status["desiredNumberScheduled"])
        return int(status["numberReady"]) == desired and (desired > 0 or not found["some"])
    found = _PARENTS_QUERY.match(text)
    if found:
        parents = (applied.get("status") or {}).get("parents") or []
        return any(
            any(
                c.get("type") == found["type"] and c.get("status") == "True"
                for c in p.get("conditions") or []
            )
            for p in parents
        )
    msg = f"the fake provider-kubernetes cannot evaluate the readiness query {query!r}"
    raise ValueError(msg)


# --- what each kind's controller reports on a cluster ----------------------------------------
