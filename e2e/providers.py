"""Fake providers: what provider-kubernetes, provider-helm, the cloud providers and the
control plane's Traefik would report, with nothing real behind them.

For every managed resource (a CRD in ``*.m.upbound.io``, ``helm.m.crossplane.io`` or
``kubernetes[.m].crossplane.io`` with a ``spec.forProvider``) it writes what the real
provider writes once the external resource exists:

- ``Synced`` and ``Ready`` conditions (``ReconcileSuccess``, ``Available``);
- ``status.atProvider``: a cloud resource's ``id`` (and ``arn`` on AWS); a Release's
  ``state: deployed``, revision and chart version; an Object's ``manifest``, the wrapped
  object as the workload cluster would return it, with a realistic status (a Deployment
  or LeaderWorkerSet Available, a Service with a cluster IP, a Gateway with an address,
  an HTTPRoute Accepted by its parent, a PVC Bound, a Job Complete);
- the connection Secret named by ``spec.writeConnectionSecretToRef`` (a kubeconfig for
  the clusters, a key for a GCP service account key).

A Release installed on the control plane itself (through a ClusterProviderConfig with
``InjectedIdentity``) has the effect there that the chart would: ``gateway-crds-helm``
installs the Gateway API CRDs, ``metallb`` MetalLB's CRDs, and ``traefik`` starts the
gateway controller below.

The control plane's Traefik: GatewayClasses of ``traefik.io/gateway-controller`` are
Accepted, their Gateways Programmed with an address (the first of the MetalLB pool),
HTTPRoutes attached to them Accepted (``ResolvedRefs`` only when the backend Services
exist).

Writes are paced (``--writes-per-second`` in all, and per root composite: see
``PER_COMPOSITE_RATE``) with Crossplane's per-composite watch circuit breaker (burst
100, refill 1/s) in mind, and a status is written only when it changes (a status the API
server pruned counts as unchanged), so no write ever loops.

A resource can be made to flap: the ConfigMap ``crossplane-system/e2e-fake-providers``
lists under ``notReady`` patterns (fnmatch) of ``<kind>.<group> <namespace>/<name>``;
matching resources report ``Ready=False`` (``Unavailable``) until removed from it.

    python -m e2e.providers
"""

from __future__ import annotations

import argparse
import base64
import copy
import datetime
import fnmatch
import hashlib
import ipaddress
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from e2e import modules
from e2e.kube import Kube, KubeError, Obj, dig

log = logging.getLogger("e2e.providers")

CRD_API = "apiextensions.k8s.io/v1"
GATEWAY_GROUP = "gateway.networking.k8s.io"
GATEWAY_KINDS = ("GatewayClass", "Gateway", "HTTPRoute")
TRAEFIK_CONTROLLER = "traefik.io/gateway-controller"
WORKLOAD_GATEWAY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
CONTROL_NAMESPACE = "crossplane-system"
FLAPS = "e2e-fake-providers"
CLOUD_LB_ADDRESS = "198.51.100.10"
PROVISION_SECONDS = 1.5
# Crossplane opens a composite's watch circuit breaker when the events that map to it
# exceed a bucket of 100 that refills by 1 a second; then it drops them for 5 minutes
# but for a probe every 30 s (and the --poll-interval, 10 s here). Measured here, most of
# a composite's budget is Crossplane's own: the creates, and two updates of the
# composite's status per reconcile (conditions, then managed fields), each of which
# wakes the composite above it: ~110 events for a ServingStack of 15 resources, ~7 per
# composed resource. A trickle of writes costs more than a burst (each write is its own
# reconcile), so the writes are paced to what a fast provider would do, not below the
# breaker: 10 a second in all, and under one root composite (label
# crossplane.io/composite) 40 at once, then 2 a second. A composite of more than ~14
# resources made Ready within a minute trips the breaker whatever the pace; the 10 s
# poll bounds what that costs.
COMPOSITE_LABEL = "crossplane.io/composite"
PER_COMPOSITE_BURST = 40
PER_COMPOSITE_RATE = 2.0


def managed_group(group: str) -> bool:
    return group.endswith(".m.upbound.io") or group in {
        "helm.m.crossplane.io",
        "kubernetes.m.crossplane.io",
        "kubernetes.crossplane.io",
    }


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def digest(*parts: str, length: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:length]


def condition(kind: str, status: bool, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
    }


def merge_conditions(
    current: list[Mapping[str, Any]], wanted: list[dict[str, Any]], generation: int | None = None
) -> list[dict[str, Any]]:
    """``wanted`` with lastTransitionTime kept from ``current`` where the status is the same."""
    old = {c.get("type"): c for c in current}
    out = []
    for want in wanted:
        c = dict(want)
        prev = old.get(c["type"])
        same = prev is not None and prev.get("status") == c["status"]
        c["lastTransitionTime"] = prev["lastTransitionTime"] if same and prev else now()
        if generation is not None:
            c["observedGeneration"] = generation
        out.append(c)
    kept = [dict(c) for t, c in old.items() if t not in {w["type"] for w in wanted}]
    return kept + out


def strip_times(conds: Any) -> list[tuple[Any, ...]]:
    return sorted(
        (
            c.get("type"),
            c.get("status"),
            c.get("reason"),
            c.get("message"),
            c.get("observedGeneration"),
        )
        for c in conds or []
    )


class Deferred(Exception):  # noqa: N818 - not an error: come back later
    """A write that must wait for its composite's pacer."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"deferred {seconds:.1f}s")
        self.seconds = seconds


class Pacer:
    """A token bucket: at most ``rate`` writes a second, bursts of ``burst``."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.tokens = float(burst)
        self.stamp = time.monotonic()
        self.lock = threading.Lock()

    def try_take(self) -> float:
        """Take a token if there is one (0); else how long until there is."""
        with self.lock:
            t = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (t - self.stamp) * self.rate)
            self.stamp = t
            if self.tokens >= 1:
                self.tokens -= 1
                return 0.0
            return (1 - self.tokens) / self.rate

    def take(self) -> None:
        while True:
            with self.lock:
                t = time.monotonic()
                self.tokens = min(self.burst, self.tokens + (t - self.stamp) * self.rate)
                self.stamp = t
                if self.tokens >= 1:
                    self.tokens -= 1
                    return
                wait = (1 - self.tokens) / self.rate
            time.sleep(wait)


# -- the workload cluster's view of a wrapped object -------------------------------------


def cluster_ip(*parts: str) -> str:
    n = int(digest(*parts, length=8), 16) % (256 * 256 - 2) + 1
    return str(ipaddress.IPv4Address("10.96.0.0") + n)


def gateway_ip(cluster: str) -> str:
    """A documentation-range address per workload cluster (its load balancer)."""
    n = int(digest(cluster, length=4), 16) % 250 + 2
    return f"203.0.113.{n}"


def ok(kind: str, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": "1970-01-01T00:00:00Z",
    }


def observed_manifest(obj: Mapping[str, Any], cluster: str) -> dict[str, Any]:
    """The wrapped manifest as the workload cluster would return it, with its status."""
    manifest: dict[str, Any] = copy.deepcopy(dig(obj, "spec", "forProvider", "manifest") or {})
    meta = manifest.setdefault("metadata", {})
    kind = str(manifest.get("kind", ""))
    name = str(meta.get("name", ""))
    ns = str(meta.get("namespace", ""))
    created = str(obj["metadata"].get("creationTimestamp", ""))
    meta.setdefault("uid", str(uuid.UUID(digest(cluster, kind, ns, name, length=32))))
    meta.setdefault("creationTimestamp", created)
    meta.setdefault("resourceVersion", "1")
    meta.setdefault("generation", 1)
    spec = manifest.get("spec") or {}
    status: dict[str, Any] | None = None
    if kind == "Namespace":
        status = {"phase": "Active"}
    elif kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        n = int(spec.get("replicas", 1))
        status = {"observedGeneration": 1, "replicas": n, "updatedReplicas": n}
        if n:
            status.update(readyReplicas=n, availableReplicas=n)
        if kind == "Deployment":
            status["conditions"] = [
                ok("Available", "MinimumReplicasAvailable", "Deployment has minimum availability."),
                ok(
                    "Progressing",
                    "NewReplicaSetAvailable",
                    f'ReplicaSet "{name}-{digest(name, length=10)}" has successfully progressed.',
                ),
            ]
    elif kind == "LeaderWorkerSet":
        n = int(spec.get("replicas", 1))
        status = {
            "replicas": n,
            "readyReplicas": n,
            "updatedReplicas": n,
            "hpaPodSelector": f"leaderworkerset.sigs.k8s.io/name={name}",
            "conditions": [ok("Available", "AllGroupsReady", "All replicas are ready")],
        }
    elif kind == "Service":
        if spec.get("clusterIP") != "None":
            spec.setdefault("clusterIP", cluster_ip(cluster, ns, name))
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
        status = {"loadBalancer": {}}
        if spec.get("type") == "LoadBalancer":
            status = {"loadBalancer": {"ingress": [{"ip": gateway_ip(cluster), "ipMode": "VIP"}]}}
    elif kind == "PersistentVolumeClaim":
        status = {
            "phase": "Bound",
            "accessModes": spec.get("accessModes", []),
            "capacity": {"storage": dig(spec, "resources", "requests", "storage") or "1Gi"},
        }
        spec.setdefault("volumeName", f"pvc-{meta['uid']}")
    elif kind == "Job":
        status = {
            "succeeded": 1,
            "ready": 0,
            "startTime": created,
            "completionTime": created,
            "conditions": [
                ok(
                    "SuccessCriteriaMet",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                ),
                ok("Complete", "CompletionsReached", "Reached expected number of succeeded pods"),
            ],
        }
    elif kind == "GatewayClass":
        status = {"conditions": [ok("Accepted", "Accepted", "Handled by Envoy Gateway")]}
    elif kind == "Gateway":
        status = gateway_status(spec, [{"type": "IPAddress", "value": gateway_ip(cluster)}], {})
    elif kind in ("HTTPRoute", "GRPCRoute"):
        status = {
            "parents": [
                {
                    "parentRef": ref,
                    "controllerName": WORKLOAD_GATEWAY_CONTROLLER,
                    "conditions": [
                        ok("Accepted", "Accepted", "Route is accepted"),
                        ok(
                            "ResolvedRefs",
                            "ResolvedRefs",
                            "Resolved all the Object references for the Route",
                        ),
                    ],
                }
                for ref in spec.get("parentRefs") or []
            ]
        }
    elif kind == "Certificate":
        status = {
            "conditions": [ok("Ready", "Ready", "Certificate is up to date and has not expired")]
        }
    if spec:
        manifest["spec"] = spec
    if status is not None:
        manifest["status"] = _stamp(status, created)
    return manifest


def _stamp(value: Any, when: str) -> Any:
    """Condition times of a fresh manifest: the Object's creation."""
    if isinstance(value, dict):
        return {
            k: (when if k == "lastTransitionTime" else _stamp(v, when)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_stamp(v, when) for v in value]
    return value


def gateway_status(
    spec: Mapping[str, Any], addresses: list[dict[str, str]], attached: Mapping[str, int]
) -> dict[str, Any]:
    listeners = [
        {
            "name": listener["name"],
            "supportedKinds": [
                {"group": GATEWAY_GROUP, "kind": "HTTPRoute"},
                {"group": GATEWAY_GROUP, "kind": "GRPCRoute"},
            ],
            "attachedRoutes": attached.get(listener["name"], 0),
            "conditions": [
                ok("Programmed", "Programmed", "Listener is programmed"),
                ok("Accepted", "Accepted", "Listener is accepted"),
                ok("ResolvedRefs", "ResolvedRefs", "Resolved all references"),
                {**ok("Conflicted", "NoConflicts", "No conflicts"), "status": "False"},
            ],
        }
        for listener in spec.get("listeners") or []
    ]
    return {
        "addresses": addresses,
        "conditions": [
            ok("Accepted", "Accepted", "Gateway is accepted"),
            ok("Programmed", "Programmed", "Gateway is programmed"),
        ],
        "listeners": listeners,
    }


def kubeconfig(cluster: str) -> str:
    server = f"https://{cluster}.e2e.invalid"
    ca = base64.b64encode(f"fake CA of {cluster}".encode()).decode()
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": cluster, "cluster": {"server": server, "certificate-authority-data": ca}}
            ],
            "users": [{"name": cluster, "user": {"token": digest("token", cluster, length=32)}}],
            "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}],
            "current-context": cluster,
        }
    )


AWS_ID_PREFIX = {
    "VPC": "vpc",
    "Subnet": "subnet",
    "InternetGateway": "igw",
    "NATGateway": "nat",
    "RouteTable": "rtb",
    "EIP": "eipalloc",
    "SecurityGroup": "sg",
    "LaunchTemplate": "lt",
    "FileSystem": "fs",
    "MountTarget": "fsmt",
    "AccessPoint": "fsap",
    "Route": "r",
    "RouteTableAssociation": "rtbassoc",
    "SecurityGroupIngressRule": "sgr",
    "SecurityGroupEgressRule": "sgr",
}


# -- the providers -------------------------------------------------------------------------


class Providers:
    # API groups left to a real provider (--real-kubernetes: provider-kubernetes' Objects).
    real_groups: frozenset[str] = frozenset()

    def __init__(self, kube: Kube, rate: float, state: Path | None) -> None:
        self.kube = kube
        self.pacer = Pacer(rate, burst=int(rate * 2))
        self.state = state
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.pending: dict[tuple[str, str, str, str], float] = {}
        self.wake = threading.Condition(self.lock)
        self.watched: set[tuple[str, str]] = set()
        self.flaps: list[str] = []
        self.traefik = False
        self.installed: set[str] = set()
        self.seen: dict[tuple[str, str, str, str], float] = {}
        self.written: dict[tuple[str, str, str, str], tuple[str, str]] = {}
        self.composites: dict[str, Pacer] = {}

    # -- queue ----------------------------------------------------------------------

    def enqueue(self, api_version: str, kind: str, ns: str, name: str, delay: float = 0) -> None:
        key = (api_version, kind, ns, name)
        due = time.monotonic() + delay
        with self.wake:
            if key not in self.pending or self.pending[key] > due:
                self.pending[key] = due
            self.wake.notify()

    def next_item(self) -> tuple[str, str, str, str]:
        with self.wake:
            while True:
                t = time.monotonic()
                due = [(d, k) for k, d in self.pending.items() if d <= t]
                if due:
                    _, key = min(due)
                    del self.pending[key]
                    return key
                soonest = min(self.pending.values(), default=t + 5)
                self.wake.wait(max(0.05, soonest - t))

    def requeue_all(self, kinds: tuple[str, ...] | None = None) -> None:
        for api_version, kind, ns, name in list(self.seen):
            if kinds is None or kind in kinds:
                self.enqueue(api_version, kind, ns, name)

    # -- watches --------------------------------------------------------------------

    def watch_kind(self, api_version: str, kind: str) -> None:
        with self.lock:
            if (api_version, kind) in self.watched:
                return
            self.watched.add((api_version, kind))

        def run() -> None:
            while not self.stop.is_set():
                try:
                    for event, obj in self.kube.watch(api_version, kind, self.stop):
                        meta = obj.get("metadata", {})
                        key = (api_version, kind, meta.get("namespace", ""), meta.get("name", ""))
                        if event == "DELETED":
                            self.seen.pop(key, None)
                            if kind in ("HTTPRoute", "Service"):
                                self.requeue_all(("Gateway", "HTTPRoute"))
                            continue
                        self.seen.setdefault(key, time.monotonic())
                        self.enqueue(*key)
                        if kind == "HTTPRoute":
                            self.requeue_all(("Gateway",))
                except KubeError as exc:
                    log.warning("watch %s %s: %s", kind, api_version, exc)
                    time.sleep(2)

        threading.Thread(target=run, daemon=True, name=f"watch-{kind}").start()
        log.info("watching %s.%s", kind, api_version)

    def watch_crds(self) -> None:
        for _, crd in self.kube.watch(CRD_API, "CustomResourceDefinition", self.stop):
            spec = crd.get("spec", {})
            group = spec.get("group", "")
            kind = dig(spec, "names", "kind")
            versions = [v for v in spec.get("versions", []) if v.get("served")]
            storage = [v for v in versions if v.get("storage")] or versions
            if not storage or not kind:
                continue
            api_version = f"{group}/{storage[0]['name']}"
            if managed_group(group) and group not in self.real_groups:
                schema = (
                    dig(storage[0], "schema", "openAPIV3Schema", "properties", "spec", "properties")
                    or {}
                )
                if "forProvider" in schema:
                    self.watch_kind(api_version, kind)
            elif group == GATEWAY_GROUP and kind in GATEWAY_KINDS:
                self.watch_kind(f"{GATEWAY_GROUP}/v1", kind)

    def watch_flaps(self) -> None:
        while not self.stop.is_set():
            try:
                for event, cm in self.kube.watch("v1", "ConfigMap", self.stop):
                    meta = cm.get("metadata", {})
                    if meta.get("name") != FLAPS or meta.get("namespace") != CONTROL_NAMESPACE:
                        continue
                    text = "" if event == "DELETED" else (cm.get("data") or {}).get("notReady", "")
                    flaps = [line.strip() for line in text.splitlines() if line.strip()]
                    if flaps != self.flaps:
                        self.flaps = flaps
                        log.info("not ready on purpose: %s", flaps or "nothing")
                        self.requeue_all()
            except KubeError as exc:
                log.warning("watch flaps: %s", exc)
                time.sleep(2)

    # -- reconcile ------------------------------------------------------------------

    def flapping(self, obj: Mapping[str, Any]) -> bool:
        api_version = str(obj.get("apiVersion", ""))
        group = api_version.split("/")[0]
        meta = obj["metadata"]
        ident = f"{obj['kind']}.{group} {meta.get('namespace', '')}/{meta['name']}"
        return any(fnmatch.fnmatchcase(ident, pattern) for pattern in self.flaps)

    def reconcile(self, api_version: str, kind: str, ns: str, name: str) -> None:
        obj = self.kube.get(api_version, kind, name, ns or None)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        obj.setdefault("apiVersion", api_version)
        obj.setdefault("kind", kind)
        group = api_version.split("/")[0]
        if group == GATEWAY_GROUP:
            self.reconcile_gateway_api(obj)
            return
        first = self.seen.get((api_version, kind, ns, name), time.monotonic())
        age = time.monotonic() - first
        if not dig(obj, "status", "atProvider") and age < PROVISION_SECONDS:
            # Creating takes a moment; come back then.
            self.enqueue(api_version, kind, ns, name, PROVISION_SECONDS - age)
            return
        if kind == "Release":
            at_provider = self.release(obj)
        elif group.startswith("kubernetes."):
            cluster = str(dig(obj, "spec", "providerConfigRef", "name") or "default")
            at_provider = {"manifest": observed_manifest(obj, cluster)}
        else:
            at_provider = self.cloud(obj)
        if dig(obj, "spec", "writeConnectionSecretToRef", "name"):
            self.connection_secret(obj)
        ready = not self.flapping(obj)
        wanted = [
            condition("Synced", True, "ReconcileSuccess"),
            condition("Ready", True, "Available")
            if ready
            else condition("Ready", False, "Unavailable", "e2e: made unavailable on purpose"),
        ]
        status = obj.get("status") or {}
        key = (api_version, kind, ns, name)
        wanted_json = json.dumps(at_provider, sort_keys=True)
        seen_json = json.dumps(status.get("atProvider"), sort_keys=True)
        # The API server prunes fields a CRD's schema lacks (an arn, say): what we wrote
        # last and what it kept are as good as equal.
        same = seen_json == wanted_json or self.written.get(key) == (wanted_json, seen_json)
        if same and strip_times(status.get("conditions")) == strip_times(wanted):
            return
        new = copy.deepcopy(obj)
        new["status"] = {
            **status,
            "atProvider": at_provider,
            "conditions": merge_conditions(status.get("conditions") or [], wanted),
        }
        stored = self.write_status(new)
        self.written[key] = (
            wanted_json,
            json.dumps(dig(stored, "status", "atProvider"), sort_keys=True),
        )
        log.info("%s %s/%s: %s", kind, ns, name, "Ready" if ready else "NOT Ready (flap)")

    def write_status(self, obj: Obj) -> Obj:
        """PUT the status, paced globally and per composite; return what was stored."""
        meta = obj["metadata"]
        # The root composite, whose breaker counts every write under it.
        composite = (meta.get("labels") or {}).get(COMPOSITE_LABEL) or next(
            (o.get("uid") for o in meta.get("ownerReferences") or [] if o.get("controller")),
            None,
        )
        if composite:
            with self.lock:
                pacer = self.composites.setdefault(
                    composite, Pacer(PER_COMPOSITE_RATE, PER_COMPOSITE_BURST)
                )
            wait = pacer.try_take()
            if wait:
                raise Deferred(wait)
        self.pacer.take()
        r = self.kube.resource(obj["apiVersion"], obj["kind"])
        stored: Obj = self.kube.request(
            "PUT", r.path(meta.get("namespace"), meta["name"], "status"), body=obj
        )
        return stored

    def cloud(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        kind = str(obj["kind"])
        group = str(obj["apiVersion"]).split("/")[0]
        meta = obj["metadata"]
        name = str(meta["name"])
        annotations = meta.get("annotations") or {}
        external = annotations.get("crossplane.io/external-name") or name
        out: dict[str, Any] = {}
        if group.endswith("aws.m.upbound.io"):
            prefix = AWS_ID_PREFIX.get(kind)
            out["id"] = (
                f"{prefix}-{digest(group, kind, meta.get('namespace', ''), name)}"
                if prefix
                else external
            )
            region = dig(obj, "spec", "forProvider", "region") or "us-east-1"
            service = group.split(".")[0]
            out["arn"] = f"arn:aws:{service}:{region}:123456789012:{kind.lower()}/{out['id']}"
            if kind == "Cluster" and service == "eks":
                out["endpoint"] = (
                    f"https://{digest(name, length=32).upper()}.gr7.{region}.eks.amazonaws.com"
                )
                out["status"] = "ACTIVE"
        else:
            out["id"] = external
        return out

    def release(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        chart = dig(obj, "spec", "forProvider", "chart") or {}
        config = str(dig(obj, "spec", "providerConfigRef", "name") or "default")
        if self.on_control_plane(obj, config):
            namespace = dig(obj, "spec", "forProvider", "namespace")
            if namespace and not dig(obj, "spec", "forProvider", "skipCreateNamespace"):
                # helm install --create-namespace
                self.kube.apply(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                    manager="helm",
                )
            self.chart_effects(str(chart.get("name", "")))
        out: dict[str, Any] = {
            "releaseDescription": "Install complete",
            "revision": 1,
            "state": "deployed",
        }
        if chart.get("version"):
            out["version"] = str(chart["version"]).lstrip("v")
        return out

    def on_control_plane(self, obj: Mapping[str, Any], config: str) -> bool:
        kind = str(dig(obj, "spec", "providerConfigRef", "kind") or "ClusterProviderConfig")
        group = str(obj["apiVersion"]).split("/")[0]
        version = "v1beta1" if group.startswith("helm.") else "v1alpha1"
        ns = obj["metadata"].get("namespace") if kind == "ProviderConfig" else None
        pc = self.kube.get(f"{group}/{version}", kind, config, ns)
        return bool(dig(pc, "spec", "credentials", "source") == "InjectedIdentity")

    def chart_effects(self, chart: str) -> None:
        if chart in self.installed:
            return
        dirs = modules.load(self.state)
        files: list[Path] = []
        if chart == "gateway-crds-helm":
            files = sorted((dirs["sigs.k8s.io/gateway-api"] / "config/crd/standard").glob("*.yaml"))
        elif chart == "metallb":
            files = sorted((dirs["go.universe.tf/metallb"] / "config/crd/bases").glob("*.yaml"))
        elif chart == "traefik":
            self.traefik = True
            self.requeue_all(GATEWAY_KINDS)
        for path in files:
            for crd in yaml.safe_load_all(path.read_text()):
                if not isinstance(crd, dict) or crd.get("kind") != "CustomResourceDefinition":
                    continue
                crd["spec"]["conversion"] = {"strategy": "None"}
                crd.pop("status", None)
                self.kube.apply(crd, manager="helm")
        if files:
            log.info("chart %s: installed %d CRDs on the control plane", chart, len(files))
        self.installed.add(chart)

    def connection_secret(self, obj: Mapping[str, Any]) -> None:
        meta = obj["metadata"]
        ns = meta.get("namespace") or dig(obj, "spec", "writeConnectionSecretToRef", "namespace")
        name = dig(obj, "spec", "writeConnectionSecretToRef", "name")
        if self.kube.get("v1", "Secret", name, ns) is not None:
            return
        cluster = str(dig(obj, "spec", "forProvider", "clusterName") or meta["name"])
        config = kubeconfig(cluster)
        data = {
            "kubeconfig": config,
            "attribute.kube_config": config,
            "attribute.kube_config_raw": config,
        }
        if obj["kind"] == "ServiceAccountKey":
            key = base64.b64encode(
                f'{{"type": "service_account", "private_key_id": "{digest(cluster)}"}}'.encode()
            ).decode()
            data = {"private_key": key, "attribute.private_key": key}
        self.pacer.take()
        self.kube.apply(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "ownerReferences": [
                        {
                            "apiVersion": obj["apiVersion"],
                            "kind": obj["kind"],
                            "name": meta["name"],
                            "uid": meta["uid"],
                            "controller": True,
                        }
                    ],
                },
                "type": "connection.crossplane.io/v1alpha1",
                "stringData": data,
            },
            manager="fake-provider",
        )
        log.info("%s %s/%s: wrote connection Secret %s", obj["kind"], ns, meta["name"], name)

    # -- the control plane's Traefik --------------------------------------------------

    def ours(self, class_name: str) -> bool:
        gc = self.kube.get(f"{GATEWAY_GROUP}/v1", "GatewayClass", class_name)
        return bool(dig(gc, "spec", "controllerName") == TRAEFIK_CONTROLLER)

    def lb_address(self) -> str:
        if not self.kube.served("metallb.io/v1beta1", "IPAddressPool"):
            return CLOUD_LB_ADDRESS
        for pool in self.kube.list("metallb.io/v1beta1", "IPAddressPool"):
            for block in dig(pool, "spec", "addresses") or []:
                first = str(block).split("-")[0].split("/")[0].strip()
                if first:
                    return first
        return CLOUD_LB_ADDRESS

    def reconcile_gateway_api(self, obj: Obj) -> None:
        if not self.traefik:
            return
        kind = obj["kind"]
        meta = obj["metadata"]
        generation = int(meta.get("generation", 1))
        status = obj.get("status") or {}
        new_status: dict[str, Any]
        if kind == "GatewayClass":
            if dig(obj, "spec", "controllerName") != TRAEFIK_CONTROLLER:
                return
            wanted = [condition("Accepted", True, "Accepted", "Handled by Traefik controller")]
            if strip_times(status.get("conditions")) == strip_times(
                [{**c, "observedGeneration": generation} for c in wanted]
            ):
                return
            new_status = {
                **status,
                "conditions": merge_conditions(status.get("conditions") or [], wanted, generation),
            }
        elif kind == "Gateway":
            if not self.ours(str(dig(obj, "spec", "gatewayClassName") or "")):
                return
            attached: dict[str, int] = {}
            for route in self.kube.list(f"{GATEWAY_GROUP}/v1", "HTTPRoute"):
                for ref in dig(route, "spec", "parentRefs") or []:
                    rns = ref.get("namespace") or route["metadata"]["namespace"]
                    if ref.get("name") == meta["name"] and rns == meta["namespace"]:
                        for listener in dig(obj, "spec", "listeners") or []:
                            if ref.get("sectionName") in (None, listener["name"]):
                                attached[listener["name"]] = attached.get(listener["name"], 0) + 1
            wanted_status = gateway_status(
                obj.get("spec") or {}, [{"type": "IPAddress", "value": self.lb_address()}], attached
            )
            for c in wanted_status["conditions"]:
                c["observedGeneration"] = generation
            if (
                status.get("addresses") == wanted_status["addresses"]
                and strip_times(status.get("conditions"))
                == strip_times(wanted_status["conditions"])
                and [
                    (li.get("name"), li.get("attachedRoutes"))
                    for li in status.get("listeners") or []
                ]
                == [(li["name"], li["attachedRoutes"]) for li in wanted_status["listeners"]]
            ):
                return
            new_status = {**status, **wanted_status}
            new_status["conditions"] = merge_conditions(
                status.get("conditions") or [], wanted_status["conditions"], generation
            )
            for li in new_status["listeners"]:
                li["conditions"] = [
                    {**c, "lastTransitionTime": now(), "observedGeneration": generation}
                    for c in li["conditions"]
                ]
        else:  # HTTPRoute
            parents = []
            for ref in dig(obj, "spec", "parentRefs") or []:
                gw_ns = ref.get("namespace") or meta["namespace"]
                gw = self.kube.get(f"{GATEWAY_GROUP}/v1", "Gateway", ref.get("name", ""), gw_ns)
                if gw is None or not self.ours(str(dig(gw, "spec", "gatewayClassName") or "")):
                    continue
                missing = [
                    b.get("name")
                    for rule in dig(obj, "spec", "rules") or []
                    for b in rule.get("backendRefs") or []
                    if b.get("kind", "Service") == "Service"
                    and self.kube.get(
                        "v1", "Service", b.get("name", ""), b.get("namespace") or meta["namespace"]
                    )
                    is None
                ]
                resolved = (
                    condition(
                        "ResolvedRefs",
                        False,
                        "BackendNotFound",
                        f"backend Services not found: {', '.join(map(str, missing))}",
                    )
                    if missing
                    else condition(
                        "ResolvedRefs",
                        True,
                        "ResolvedRefs",
                        "Resolved all the Object references for the Route",
                    )
                )
                wanted = [condition("Accepted", True, "Accepted", "Route is accepted"), resolved]
                old: Mapping[str, Any] = next(
                    (p for p in status.get("parents") or [] if p.get("parentRef") == ref), {}
                )
                parents.append(
                    {
                        "parentRef": ref,
                        "controllerName": TRAEFIK_CONTROLLER,
                        "conditions": merge_conditions(
                            old.get("conditions") or [], wanted, generation
                        ),
                    }
                )
            if [(p["parentRef"], strip_times(p["conditions"])) for p in parents] == [
                (p.get("parentRef"), strip_times(p.get("conditions")))
                for p in status.get("parents") or []
            ]:
                return
            new_status = {**status, "parents": parents}
        new = copy.deepcopy(obj)
        new["status"] = new_status
        self.write_status(new)
        log.info("traefik: %s %s/%s status written", kind, meta.get("namespace", ""), meta["name"])

    # -- main loop --------------------------------------------------------------------

    def run(self) -> None:
        threading.Thread(target=self.watch_crds, daemon=True, name="watch-crds").start()
        threading.Thread(target=self.watch_flaps, daemon=True, name="watch-flaps").start()

        def resync() -> None:
            while not self.stop.wait(30):
                self.requeue_all()

        threading.Thread(target=resync, daemon=True, name="resync").start()
        while True:
            key = self.next_item()
            try:
                self.reconcile(*key)
            except Deferred as deferred:
                self.enqueue(*key, delay=deferred.seconds)
            except KubeError as exc:
                if exc.status != 409:
                    log.warning("%s %s/%s: %s", key[1], key[2], key[3], exc)
                self.enqueue(*key, delay=1)
            except Exception:
                log.exception("%s %s/%s", key[1], key[2], key[3])
                self.enqueue(*key, delay=5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--writes-per-second", type=float, default=10.0)
    parser.add_argument(
        "--real-kubernetes",
        action="store_true",
        help="leave provider-kubernetes' Objects to the real provider (make e2e-fleet)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    state = os.environ.get("E2E_STATE")
    providers = Providers(Kube(), args.writes_per_second, Path(state) if state else None)
    if args.real_kubernetes:
        providers.real_groups = frozenset(
            {"kubernetes.crossplane.io", "kubernetes.m.crossplane.io"}
        )
    providers.run()


if __name__ == "__main__":
    main()
